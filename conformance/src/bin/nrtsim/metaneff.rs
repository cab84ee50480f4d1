//! `nrtsim metaneff`: decode, encode and edit metaneff protobufs.

use anyhow::Result;

/// The `nrtsim metaneff` subcommands.
#[derive(clap::Subcommand)]
pub(crate) enum MetaneffCommand {}

/// Runs an `nrtsim metaneff` subcommand.
pub(crate) fn run(command: MetaneffCommand) -> Result<()> {
    match command {}
}

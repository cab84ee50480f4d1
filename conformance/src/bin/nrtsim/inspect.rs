//! `nrtsim inspect`: a NEFF's header, members, variable tables and signature.

use std::path::PathBuf;

use anyhow::{Result, bail};

/// Arguments of `nrtsim inspect`.
#[derive(clap::Args)]
pub(crate) struct InspectArgs {
    /// The NEFF file to read.
    file: PathBuf,
    /// Print one JSON object instead of text for people.
    #[arg(long)]
    json: bool,
}

/// Runs `nrtsim inspect`.
pub(crate) fn run(args: InspectArgs) -> Result<()> {
    let _ = args.json;
    bail!("inspecting {} needs the NEFF reader, which is not built yet", args.file.display())
}

//! `nrtsim`: inspect, check and run Neuron models (NEFF + metaneff) without Neuron hardware.
#![forbid(unsafe_code)]

mod inspect;
mod metaneff;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "nrtsim",
    version,
    about = "Inspect, check and run Neuron models (NEFF + metaneff) without Neuron hardware",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode, encode and edit metaneff protobufs.
    #[command(subcommand)]
    Metaneff(metaneff::MetaneffCommand),
    /// Show a NEFF's header, members, variable tables and I/O signature.
    Inspect(inspect::InspectArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Metaneff(command) => metaneff::run(command),
        Command::Inspect(args) => inspect::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("nrtsim: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

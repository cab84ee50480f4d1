//! `nrtsim`: inspect, check and run Neuron models (NEFF + metaneff) without Neuron hardware.
#![forbid(unsafe_code)]

mod conformance;
mod hlo;
mod input;
mod inspect;
mod metaneff;
mod record;

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
    /// Print and encode XLA HLO modules (binary HloModuleProto or HLO text).
    #[command(subcommand)]
    Hlo(hlo::HloCommand),
    /// Show a NEFF's header, members, variable tables and I/O signature.
    Inspect(inspect::InspectArgs),
    /// Run the conformance vectors on the simulator and on libnrt backends.
    Conformance(conformance::ConformanceArgs),
    /// Refresh (--bless) or check (--check) the vectors' generated files; `promote DIR` adds a
    /// vector.
    Vectors(conformance::VectorsArgs),
    /// Run a program with the libnrt recorder preloaded, writing a trace of its calls.
    Record(record::RecordArgs),
    /// Re-issue a recording on the simulator and report the first divergence (exit 1).
    Replay(record::ReplayArgs),
    /// Run one vector on libnrt in this process (used by the capi and nrt backends).
    #[command(hide = true)]
    RunVector(conformance::RunVectorArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Metaneff(command) => metaneff::run(command).map(|()| true),
        Command::Hlo(command) => hlo::run(command).map(|()| true),
        Command::Inspect(args) => inspect::run(args).map(|()| true),
        Command::Conformance(args) => conformance::run(args),
        Command::Vectors(args) => conformance::vectors(args),
        Command::RunVector(args) => conformance::run_vector(args),
        Command::Record(args) => record::record(args),
        Command::Replay(args) => record::replay(args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("nrtsim: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

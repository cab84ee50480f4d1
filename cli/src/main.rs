//! `nrtsim`: inspect, check and run Neuron models (NEFF + metaneff) without Neuron hardware.
#![forbid(unsafe_code)]

mod check;
mod compile;
mod conformance;
mod hlo;
mod input;
mod inspect;
mod limits;
mod metaneff;
mod nki;
mod record;
mod report;
mod run;
mod run_bind;
mod safetensors;

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
    /// Decode, encode, edit and diff metaneff protobufs.
    #[command(subcommand)]
    Metaneff(metaneff::MetaneffCommand),
    /// Print and encode XLA HLO modules (binary HloModuleProto or HLO text).
    #[command(subcommand)]
    Hlo(hlo::HloCommand),
    /// Run traced NKI kernel programs (docs/nki-program.md).
    #[command(subcommand)]
    Nki(nki::NkiCommand),
    /// Check that a NEFF and its metaneff bind: names, sizes, dtypes, aliases, input order,
    /// checkpoint keys, dynamic batching and the HLO module (exit status 1 on errors).
    Check(check::CheckArgs),
    /// Show a NEFF's header, members, variable tables and I/O signature.
    Inspect(inspect::InspectArgs),
    /// Run a NEFF once on the simulator: `.npy` inputs in, one `.npy` per output out.
    Run(run::RunArgs),
    /// Run the conformance vectors on the simulator and on libnrt backends.
    Conformance(conformance::ConformanceArgs),
    /// Merge the JSON reports of shards or machines into one (`merge`), or list what changed
    /// between two (`diff`).
    #[command(subcommand)]
    Report(report::ReportCommand),
    /// Refresh (--bless) or check (--check) the vectors' generated files; `promote DIR` adds a
    /// vector.
    Vectors(conformance::VectorsArgs),
    /// Run a program with the libnrt recorder preloaded, writing a trace of its calls.
    Record(record::RecordArgs),
    /// Re-issue a recording on the simulator and report the first divergence (exit 1).
    Replay(record::ReplayArgs),
    /// Compile an XLA HLO module to a NEFF for the simulator, with neuronx-cc's command line
    /// (`nrtsim compile --help`; `nrtsim` run as `neuronx-cc` is the same compiler).
    Compile(compile::CompileArgs),
    /// Run one vector on libnrt in this process (used by the capi and nrt backends).
    #[command(hide = true)]
    RunVector(conformance::RunVectorArgs),
}

fn main() -> ExitCode {
    let mut argv = std::env::args_os();
    if argv.next().is_some_and(|argv0| compile::is_neuronx_cc(&argv0)) {
        let args: Vec<String> = argv.map(|arg| arg.to_string_lossy().into_owned()).collect();
        return compile::neuronx_cc(compile::NEURONX_CC, &args);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Compile(args) => return compile::run(args),
        Command::Metaneff(command) => metaneff::run(command),
        Command::Hlo(command) => hlo::run(command).map(|()| true),
        Command::Nki(command) => nki::run(command),
        Command::Inspect(args) => inspect::run(args).map(|()| true),
        Command::Check(args) => check::run(args),
        Command::Run(args) => {
            // With a metaneff through the binding layer, a NEFF alone straight on the simulator.
            let launched =
                if args.metaneff.is_some() { run_bind::run(&args) } else { run::run_neff(&args) };
            run::report_peak_rss(&args);
            launched
        }
        Command::Conformance(args) => conformance::run(args),
        Command::Vectors(args) => conformance::vectors(args),
        Command::Report(command) => report::run(command),
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

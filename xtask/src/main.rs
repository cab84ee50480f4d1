//! Project automation, run as `cargo xtask <command>`.
//!
//! - `codegen [--check]`: regenerate the committed prost code (and the metaneff's descriptor) of
//!   `abi/proto/metaneff.proto` and `hlo/proto/hlo.proto` with protox (a pure-Rust protobuf
//!   compiler, so no `protoc` is needed on any machine), and `docs/libnrt-functions.md` from the
//!   function table; `--check` fails when the committed files are stale. The generator is the
//!   package `nrtsim-xtask-codegen` (`xtask/codegen`), run through `cargo run`, so its
//!   dependencies are not built for the other commands.
//! - `libnrt [--dest DIR]`: build the simulator's `libnrt.so.1` and install it with `libnrt.so`
//!   and `nrt.pc` (default folder `target/debug/libnrt`), for C programs built against the
//!   working tree.
//! - `sdk --out DIR [--profile debug|release]`: the tool, the library, its headers and `nrt.pc`
//!   laid out as a Neuron SDK folder (`cmake -DNEURON_ROOT=DIR`), relocatable.
//! - `nki-suites [--sdk DIR] [--samples DIR] [--nkipy DIR]`: NKI suites nobody here wrote, on
//!   nrtsim's NKI, and the counts per test file (`docs/nki-kernels.md`).
//! - `nkipy --source DIR [--work DIR] [--workers N]`: nkipy's own tests with the simulator as
//!   the device, and the counts per test file (`docs/nkipy.md`).
//! - `wheel [--out DIR]`: the Python wheels `nrtsim` (the tool, the library, its headers) and
//!   `nrtsim-neuronx-cc` (the compiler shim), release builds, manylinux-tagged, checked by
//!   auditwheel (default folder `target/wheels`).
//! - `conformance [ARGS]`: the main job, the conformance suite (see `nrtsim conformance --help`).
//! - `report merge|diff [ARGS]`: merge the JSON reports of shards or machines, or compare two
//!   (see `nrtsim report --help`).
//! - `vectors --bless|--check`: refresh or check the vectors' generated files (`--bless --review`
//!   asks per vector);
//!   `vectors promote DIR [--name NAME]`: turn a shrunk differential failure into a vector;
//!   `vectors compile [--target trn1|trn2|inf2] [--compiler PATH]`: compile each vector's HLO
//!   into its device NEFF with neuronx-cc (see README, "Device NEFFs");
//!   `vectors settle BUNDLE [--dry-run]`: turn a device run's `--bundle` into vector changes.
//! - `bless`: accept what the code now produces, in one habit: the vectors' generated files
//!   (`vectors --bless`) and the CLI's output snapshots (`cli/tests/snapshots.rs`, run
//!   with `INSTA_UPDATE=always`); review both with `git diff`.
//! - `test [ARGS]`: the README's test command: makes `target/pyenv` from
//!   `pyref/requirements.txt` when missing or stale, runs `cargo test --workspace ARGS` with
//!   `NRTSIM_PYTHON` set, and ends with one line saying what was skipped.
//! - `bench [--runs N] [--filter S]`: the benches that have a peer (XLA, upb, memcpy, naive
//!   loops, the direct call), in one `cargo bench`, collected into one markdown table of ratios
//!   with each group's geometric mean, the CPU named on top (README, "Performance").
//! - `tidy`: module docs, `unsafe` only where allowed, no switched-off tests (also a `#[test]`).
#![forbid(unsafe_code)]

mod bench;
mod conformance;
mod libnrt;
mod modules;
mod nki_suites;
mod nkipy;
mod sdk;
mod test;
mod tidy;
mod wheel;

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Project automation for nrtsim")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate the prost code and descriptor from abi/proto/metaneff.proto.
    Codegen {
        /// Do not write: fail when the committed files differ from what would be generated.
        #[arg(long)]
        check: bool,
    },
    /// Check module docs, where `unsafe` appears, switched-off tests, citations of documents
    /// outside the repository, and ARCHITECTURE.md's crate table against the manifests.
    Tidy,
    /// List the import circles inside each crate: sets of modules that all reach each other
    /// through the paths they name (`use`, `crate::`, `super::`), re-exports and tests aside.
    Modules {
        /// Only this crate (its folder, `/` as `-`: `hlo`, `nrt-record`).
        #[arg(long = "crate")]
        krate: Option<String>,
        /// Also list, for each circle, the edges inside it and where each is first named.
        #[arg(long)]
        why: bool,
    },
    /// Run every test: make target/pyenv from pyref/requirements.txt when needed, then
    /// `cargo test --workspace ARGS` with NRTSIM_PYTHON set; says at the end what was skipped.
    #[command(disable_help_flag = true)]
    Test {
        /// Arguments for `cargo test --workspace` (e.g. `--locked`, `-- FILTER`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the benches that have a peer and print one table of ratios (peer time ÷ ours).
    Bench {
        /// Run the whole set this many times; each figure then shows every run's ratio.
        #[arg(long, default_value_t = 1)]
        runs: usize,
        /// Keep only the figures whose names or groups contain this (and run only those models).
        #[arg(long)]
        filter: Option<String>,
    },
    /// Build the simulator's libnrt.so.1 and install it with libnrt.so and nrt.pc.
    Libnrt {
        /// The folder to install into (default: target/debug/libnrt).
        #[arg(long)]
        dest: Option<PathBuf>,
    },
    /// Lay out the simulator as a Neuron SDK folder: bin/{nrtsim,neuronx-cc},
    /// include/nrt/*.h, lib/{libnrt.so.1,libnrt.so,pkgconfig/nrt.pc}.
    Sdk {
        /// The folder to make (new, or one made by this command before).
        #[arg(long)]
        out: PathBuf,
        /// The cargo profile to build.
        #[arg(long, value_enum, default_value = "debug")]
        profile: libnrt::Profile,
    },
    /// Run nkipy's tests/unit and tests/integration with the simulator as the device (SDK
    /// folder, venv, spike build, nkipy installed without its Neuron dependencies, pytest with
    /// xdist), then print the counts per test file (docs/nkipy.md).
    Nkipy {
        /// nkipy's source tree (its repository).
        #[arg(long)]
        source: PathBuf,
        /// Where the SDK folder, the source copy, the venv and the log go (default:
        /// target/nkipy).
        #[arg(long)]
        work: Option<PathBuf>,
        /// pytest-xdist workers (0: none).
        #[arg(long, default_value_t = 2)]
        workers: u32,
        /// Simulated NeuronCores (NRTSIM_CORES; default: the larger of 2 and --workers).
        #[arg(long)]
        cores: Option<u32>,
        /// Also install PyTorch, which nkipy's torch interop tests and torch references need.
        #[arg(long)]
        with_torch: bool,
        /// More pytest arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        pytest_args: Vec<String>,
    },
    /// Run NKI test suites nobody here wrote (aws-neuron-sdk's nki/test, nki-samples' unit
    /// tests and tutorials, nkipy's test_nki.py) on nrtsim's NKI from clones of their
    /// repositories, then print the counts per test file and each failure's reason
    /// (docs/nki-kernels.md).
    NkiSuites {
        /// A clone of aws-neuron/aws-neuron-sdk (its nki/test/*.py).
        #[arg(long)]
        sdk: Option<PathBuf>,
        /// A clone of aws-neuron/nki-samples at 8370e11 (pytest test/unit --simulation-only).
        #[arg(long)]
        samples: Option<PathBuf>,
        /// A clone of aws-neuron/nkipy (its tests/unit/test_nki.py, as cargo xtask nkipy runs it).
        #[arg(long)]
        nkipy: Option<PathBuf>,
        /// Where the venv and the logs go (default: target/nki-suites).
        #[arg(long)]
        work: Option<PathBuf>,
        /// Also install PyTorch, which some references need.
        #[arg(long)]
        with_torch: bool,
        /// More pytest arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        pytest_args: Vec<String>,
    },
    /// Build the Python wheels nrtsim and nrtsim-neuronx-cc (release, manylinux_2_17).
    Wheel {
        /// The folder to write them to (default: target/wheels).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run the conformance suite (default backends: sim and capi); `--help` for the options.
    #[command(disable_help_flag = true)]
    Conformance {
        /// Arguments for `nrtsim conformance`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Merge the JSON reports of shards or machines (`merge`), or compare two (`diff`);
    /// `--help` for the options.
    #[command(disable_help_flag = true)]
    Report {
        /// Arguments for `nrtsim report`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Accept what the code now produces: refresh the vectors' generated files and the CLI's
    /// output snapshots, for review with `git diff`.
    Bless,
    /// Refresh (`--bless`) or check (`--check`) the vectors' generated files,
    /// `promote DIR [--name NAME]` a shrunk differential failure to a vector, `compile` the
    /// vectors' device NEFFs, or `settle BUNDLE` a device run's guesses.
    #[command(disable_help_flag = true)]
    Vectors {
        /// Arguments for `nrtsim vectors`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Codegen { check } => codegen(&workspace_root(), check),
        Command::Tidy => tidy::run(&workspace_root()),
        Command::Modules { krate, why } => modules::run(&workspace_root(), krate.as_deref(), why),
        Command::Test { args } => test::test(&workspace_root(), &args),
        Command::Bench { runs, filter } => {
            bench::run(&workspace_root(), &bench::Options { runs, filter })
        }
        Command::Libnrt { dest } => libnrt::run(&workspace_root(), dest),
        Command::Sdk { out, profile } => sdk::run(&workspace_root(), &out, profile),
        Command::Nkipy { source, work, workers, cores, with_torch, pytest_args } => nkipy::run(
            &workspace_root(),
            &nkipy::Options {
                source,
                work: work.unwrap_or_else(|| libnrt::target_dir(&workspace_root()).join("nkipy")),
                workers,
                cores,
                with_torch,
                pytest_args,
                only: None,
            },
        ),
        Command::NkiSuites { sdk, samples, nkipy, work, with_torch, pytest_args } => {
            nki_suites::run(
                &workspace_root(),
                &nki_suites::Options {
                    sdk,
                    samples,
                    nkipy,
                    work: work.unwrap_or_else(|| {
                        libnrt::target_dir(&workspace_root()).join("nki-suites")
                    }),
                    with_torch,
                    pytest_args,
                },
            )
        }
        Command::Wheel { out } => wheel::run(&workspace_root(), out),
        Command::Conformance { args } => conformance::run(&workspace_root(), "conformance", &args),
        Command::Vectors { args } => conformance::run(&workspace_root(), "vectors", &args),
        Command::Bless => bless(&workspace_root()),
        Command::Report { args } => conformance::run(&workspace_root(), "report", &args),
    }
}

/// Runs one step of a job: prints `job: what: command` on standard error, then [`run`]s it.
pub(crate) fn run_step(job: &str, what: &str, command: &mut std::process::Command) -> Result<()> {
    eprintln!("{job}: {what}: {command:?}");
    let described = format!("{what} ({command:?})");
    run(command, &described)
}

/// Runs `command` to its end; an error names `what` when it cannot start or exits unsuccessfully.
pub(crate) fn run(command: &mut std::process::Command, what: &str) -> Result<()> {
    let status = command.status().with_context(|| format!("running {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

/// `cargo xtask bless`: `vectors --bless`, then the snapshot tests with insta told to write
/// what they see (`INSTA_UPDATE=always`, so a changed snapshot is rewritten in place, not left
/// as a `.snap.new` to accept by hand).
fn bless(root: &std::path::Path) -> Result<()> {
    conformance::run(root, "vectors", &["--bless".to_owned()])?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = std::process::Command::new(&cargo);
    command
        .current_dir(root)
        .args(["test", "--package", "nrtsim-cli", "--test", "snapshots"])
        .env("INSTA_UPDATE", "always")
        .env("INSTA_FORCE_PASS", "1");
    run(&mut command, "the snapshot tests with INSTA_UPDATE=always")?;
    println!("blessed the vectors and the snapshots: review them with `git diff`");
    Ok(())
}

/// `cargo xtask codegen [--check]`: runs the generator package, which cargo builds only now.
fn codegen(root: &std::path::Path, check: bool) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = std::process::Command::new(&cargo);
    command.current_dir(root).args(["run", "--quiet", "--package", "nrtsim-xtask-codegen", "--"]);
    if check {
        command.arg("--check");
    }
    run(&mut command, "code generation (cargo run -p nrtsim-xtask-codegen)")
}

/// The workspace root: the parent of this crate's manifest directory.
fn workspace_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().map(PathBuf::from).unwrap_or(manifest_dir)
}

//! `nrtsim conformance` and `nrtsim vectors`: run the vectors, refresh their generated files.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use conformance::backend::{self, Backend};
use conformance::report;
use conformance::suite::{self, SuiteOptions};

/// Arguments of `nrtsim conformance`.
#[derive(clap::Args)]
pub(crate) struct ConformanceArgs {
    /// Backends to run on: `sim` (the simulator), `capi` (the real-libnrt backend over the
    /// simulator's libnrt.so.1), `nrt` (the real libnrt). Repeatable; default sim and capi.
    #[arg(long = "backend", value_name = "NAME")]
    backends: Vec<String>,
    /// Run on the real libnrt of this machine (same as `--backend nrt`); fails when there is no
    /// libnrt or no NeuronCore, never skips.
    #[arg(long)]
    device: bool,
    /// Only vectors whose `backend/area/name` matches this glob (`*`, `?`; a plain word matches
    /// any name containing it).
    #[arg(long)]
    filter: Option<String>,
    /// Write a JUnit XML report here.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Write a JSON report here (per vector: backend, outcome, time, first differing line).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write the HTML review page `DIR/index.html` (matrix, filters, per failure both traces
    /// side by side with every differing line marked), linking to the vectors' files.
    #[arg(long, value_name = "DIR")]
    html: Option<PathBuf>,
    /// Parallel jobs (default: the number of CPUs).
    #[arg(short = 'j', long)]
    jobs: Option<usize>,
    /// The vectors folder (default: `vectors/` of the workspace this runs in).
    #[arg(long, value_name = "DIR")]
    vectors: Option<PathBuf>,
    /// Judge by the hand-written expectations only, without comparing golden traces (to measure
    /// what the expectations catch on their own).
    #[arg(long)]
    no_trace: bool,
    /// Run only shard K of N (`2/4`): the vectors whose name hashes to it, on every backend, so
    /// that N machines share the suite and `nrtsim report merge` joins their `--json` reports.
    #[arg(long, value_name = "K/N")]
    shard: Option<report::Shard>,
    /// Write a device result bundle here (`.tar.gz`: the JSON report, the runtime version, the
    /// instance type, the command line and the trace of every differing vector), for
    /// `nrtsim vectors settle`.
    #[arg(long, value_name = "FILE.tar.gz")]
    bundle: Option<PathBuf>,
}

/// Arguments of `nrtsim vectors`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct VectorsArgs {
    /// `promote`; without one, refresh or check the generated files.
    #[command(subcommand)]
    command: Option<VectorsCommand>,
    /// Rewrite generated files (model.neff, metaneff.pb, expected.trace) from the hand-written ones.
    #[arg(long, conflicts_with = "check")]
    bless: bool,
    /// Fail when a generated file is stale (the default).
    #[arg(long)]
    check: bool,
    /// With `--bless`: ask per vector, showing its diff (as `nrtsim vectors review`).
    #[arg(long, requires = "bless")]
    review: bool,
    /// The vectors folder (default: `vectors/` of the workspace this runs in).
    #[arg(long, value_name = "DIR")]
    vectors: Option<PathBuf>,
}

/// Subcommands of `nrtsim vectors`.
#[derive(clap::Subcommand)]
pub(crate) enum VectorsCommand {
    /// Compile each vector's HLO into `device/<target>/model.neff` with neuronx-cc (or the
    /// compiler `--compiler` names), with a manifest that tells a stale one.
    Compile {
        /// The target (trn1, trn2 or inf2).
        #[arg(long, default_value = "trn1")]
        target: String,
        /// The compiler (default: `neuronx-cc` on the PATH).
        #[arg(long, value_name = "PATH", default_value = "neuronx-cc")]
        compiler: PathBuf,
        /// Only vectors whose `area/name` matches this glob.
        #[arg(long)]
        filter: Option<String>,
        /// The vectors folder (default: `vectors/` of the workspace this runs in).
        #[arg(long, value_name = "DIR")]
        vectors: Option<PathBuf>,
    },
    /// Show each vector whose generated files would change as a diff under its description and
    /// ask accept / reject / skip (needs a terminal; `--bless` alone takes every change).
    Review {
        /// The vectors folder (default: `vectors/` of the workspace this runs in).
        #[arg(long, value_name = "DIR")]
        vectors: Option<PathBuf>,
    },
    /// Copy a vector folder's hand-written files (a shrunk differential failure) to
    /// `vectors/promoted/NAME/` and bless that one vector.
    Promote {
        /// The folder holding `case.toml` (and `metaneff.txtpb`).
        dir: PathBuf,
        /// The new vector's name (default: `differential_` and the folder's name).
        #[arg(long)]
        name: Option<String>,
        /// The vectors folder (default: `vectors/` of the workspace this runs in).
        #[arg(long, value_name = "DIR")]
        vectors: Option<PathBuf>,
    },
    /// Turn a device result bundle (`nrtsim conformance --device --bundle`) into the vector
    /// changes it implies: confirmed guesses become facts, refuted ones take the device's
    /// answer, other differences are proposed as known differences. Writes only under the
    /// vectors folder.
    ///
    /// Exit status 1 when a vector is left for a person (the runs in the bundle disagree on
    /// it, the bundle holds no trace of a refuted guess, or only a hand-written expectation
    /// failed); what could be settled is written all the same.
    Settle {
        /// The bundle (`.tar.gz`).
        bundle: PathBuf,
        /// The backend whose results settle the guesses.
        #[arg(long, value_name = "NAME", default_value = "nrt")]
        backend: String,
        /// Print the changes, write nothing.
        #[arg(long)]
        dry_run: bool,
        /// The vectors folder (default: `vectors/` of the workspace this runs in).
        #[arg(long, value_name = "DIR")]
        vectors: Option<PathBuf>,
        /// Refuse a bundle larger than this many bytes.
        #[arg(
            long,
            value_name = "BYTES",
            default_value_t = conformance::bundle::DEFAULT_MAX_BUNDLE_FILE_BYTES
        )]
        max_input_bytes: u64,
    },
}

/// The `vectors/` folder: the given one, or the first `vectors/` in this folder or a parent.
pub(crate) fn vectors_dir(given: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(dir) = given {
        return Ok(dir);
    }
    let mut dir = std::env::current_dir().context("reading the current directory")?;
    loop {
        let candidate = dir.join("vectors");
        if candidate.join("expectations").is_dir() {
            return Ok(candidate);
        }
        if !dir.pop() {
            bail!("no vectors/ folder here or above; give one with --vectors DIR");
        }
    }
}

fn open_backend(name: &str) -> Result<Box<dyn Backend>> {
    let exe = std::env::current_exe().context("locating the nrtsim executable")?;
    let profile_dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    backend::by_name(name, &exe, &profile_dir).map_err(anyhow::Error::msg)
}

/// Arguments of the hidden `nrtsim run-vector`, which the libnrt backends run per vector.
#[derive(clap::Args)]
pub(crate) struct RunVectorArgs {
    /// The vectors folder.
    #[arg(long, value_name = "DIR")]
    vectors: PathBuf,
    /// The libnrt to open (default: the normal search, as on a device).
    #[arg(long, value_name = "PATH")]
    library: Option<PathBuf>,
    /// The vector, `area/name`.
    name: String,
}

/// Runs one vector on `NrtRuntime` in this process and prints the result as JSON on stdout;
/// `Ok(false)` (a non-zero exit) when the vector failed, with the failure on stderr too. The
/// parent reads the JSON whatever the exit status.
pub(crate) fn run_vector(args: RunVectorArgs) -> Result<bool> {
    let vectors = suite::load_vectors(&args.vectors).map_err(anyhow::Error::msg)?;
    let vector = vectors
        .iter()
        .find(|v| v.name == args.name)
        .with_context(|| format!("no vector {} in {}", args.name, args.vectors.display()))?;
    // On a device (no --library), model.neff is replaced by the vector's device NEFF for the
    // instance's target; a vector without one fails naming the command that makes it.
    let target = match (&args.library, conformance::device::needs_device_neff(vector)) {
        (None, true) => Some(conformance::device::instance_target()),
        _ => None,
    };
    let runtime = backend::open_libnrt(args.library.as_deref()).map_err(|e| e.to_string());
    let target = target.transpose().map_err(|e| e.to_string());
    let output = match (runtime, target) {
        (Err(message), _) | (_, Err(message)) => {
            conformance::runner::RunOutput { trace: Vec::new(), failure: Some(message) }
        }
        (Ok(runtime), Ok(None)) if vector.recorded => {
            conformance::replay::run_recorded(vector, runtime)
        }
        (Ok(runtime), Ok(None)) => conformance::runner::run_on(vector, runtime),
        (Ok(runtime), Ok(Some(target))) => {
            conformance::runner::run_on_target(vector, runtime, Some(&target))
        }
    };
    sim::child::report(&output);
    if let Some(failure) = &output.failure {
        eprintln!("nrtsim: {}: {failure}", vector.name);
        return Ok(false);
    }
    Ok(true)
}

/// Runs `nrtsim conformance`; `Ok(false)` when a vector failed.
pub(crate) fn run(args: ConformanceArgs) -> Result<bool> {
    let vectors_dir = vectors_dir(args.vectors)?;
    let mut names = args.backends;
    if args.device && !names.iter().any(|n| n == "nrt") {
        names.push("nrt".to_owned());
    }
    if names.is_empty() {
        names = vec!["sim".to_owned(), "capi".to_owned()];
    }
    let backends = names.iter().map(|n| open_backend(n)).collect::<Result<Vec<_>>>()?;
    let jobs =
        args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let judge = conformance::judge::JudgeOptions { compare_trace: !args.no_trace };
    let mut run_info = report::RunInfo::this_process(args.shard);
    for backend in &backends {
        if let Some(version) = backend.runtime_version() {
            run_info.runtime_versions.insert(backend.name().to_owned(), version);
        }
    }
    let options = SuiteOptions {
        vectors_dir: vectors_dir.clone(),
        backends,
        filter: args.filter,
        jobs,
        progress: true,
        judge,
        shard: args.shard,
    };
    let results = suite::run(&options).map_err(anyhow::Error::msg)?;
    // Failures go to stderr, so they are seen when stdout is piped away; known differences are
    // information, on stdout with the summary.
    for line in suite::failure_lines(&results) {
        if line.is_failure {
            eprintln!("{}", line.text);
        } else {
            println!("{}", line.text);
        }
    }
    if let Some(path) = &args.junit {
        write(path, &report::to_junit(&results))?;
    }
    let summary = report::summarize(&results);
    let full = report::Report::new(run_info, results);
    if let Some(path) = &args.json {
        write(path, &full.to_json())?;
    }
    if let Some(path) = &args.bundle {
        conformance::bundle::write_bundle(path, &full)?;
    }
    if let Some(dir) = &args.html {
        let page = conformance::html::write(dir, &full, Some(&vectors_dir))?;
        println!("wrote {}", page.display());
    }
    let summary_line = report::summary_line(summary);
    println!("{summary_line}");
    if summary.failed != 0 {
        eprintln!("nrtsim: conformance failed: {summary_line}");
    }
    Ok(summary.failed == 0)
}

/// Runs `nrtsim vectors`; `Ok(false)` when `--check` found stale files.
pub(crate) fn vectors(args: VectorsArgs) -> Result<bool> {
    match args.command {
        Some(VectorsCommand::Promote { dir, name, vectors }) => {
            return promote(&dir, name, vectors);
        }
        Some(VectorsCommand::Compile { target, compiler, filter, vectors }) => {
            return compile(&target, &compiler, filter.as_deref(), vectors);
        }
        Some(VectorsCommand::Settle { bundle, backend, dry_run, vectors, max_input_bytes }) => {
            return settle(&bundle, backend, dry_run, vectors, max_input_bytes);
        }
        Some(VectorsCommand::Review { vectors }) => return review(vectors),
        None if args.review => return review(args.vectors),
        None => {}
    }
    let vectors_dir = vectors_dir(args.vectors)?;
    let changed = conformance::bless::sync(&vectors_dir, args.bless).map_err(anyhow::Error::msg)?;
    for file in &changed {
        println!("{} {file}", if args.bless { "wrote" } else { "stale" });
    }
    if args.bless {
        println!("{} generated file(s) rewritten", changed.len());
        return Ok(true);
    }
    if !changed.is_empty() {
        eprintln!(
            "{} generated file(s) are stale: run `cargo xtask vectors --bless` and review the diff",
            changed.len()
        );
        return Ok(false);
    }
    println!("every generated file is fresh");
    Ok(true)
}

/// Runs `nrtsim vectors review`: asks on the terminal; refuses without one.
fn review(vectors: Option<PathBuf>) -> Result<bool> {
    use std::io::IsTerminal;
    let vectors_dir = vectors_dir(vectors)?;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        bail!(
            "the review asks per vector and needs a terminal (stdin and stdout are not one); pass \
             --bless alone to take every change, then review the diff with git"
        );
    }
    let stdin = std::io::stdin();
    let summary =
        conformance::review::review(&vectors_dir, &mut stdin.lock(), &mut std::io::stdout())
            .map_err(anyhow::Error::msg)?;
    for failing in &summary.failing {
        eprintln!("FAIL {failing}");
    }
    println!("{}", summary.line());
    if !summary.skipped.is_empty() {
        println!("still stale: {}", summary.skipped.join(", "));
    }
    Ok(summary.failing.is_empty())
}

/// Runs `nrtsim vectors promote`.
fn promote(dir: &Path, name: Option<String>, vectors: Option<PathBuf>) -> Result<bool> {
    let vectors_dir = vectors_dir(vectors)?;
    let name = match name {
        Some(name) => name,
        None => {
            let folder = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            format!("differential_{}", folder.unwrap_or_default())
        }
    };
    let target =
        conformance::bless::promote(dir, &vectors_dir, &name).map_err(anyhow::Error::msg)?;
    println!(
        "promoted {} to {}: give it a description that states the behaviour, review and commit it",
        dir.display(),
        target.display()
    );
    Ok(true)
}

/// Runs `nrtsim vectors settle`.
fn settle(
    bundle: &Path,
    backend: String,
    dry_run: bool,
    vectors: Option<PathBuf>,
    max_input_bytes: u64,
) -> Result<bool> {
    use conformance::settle::Settled;
    let bundle = conformance::bundle::read_bundle(bundle, max_input_bytes, crate::input::FLAG)?;
    let options =
        conformance::settle::SettleOptions { vectors_dir: vectors_dir(vectors)?, backend, dry_run };
    let outcome = conformance::settle::settle(&bundle, &options)?;
    for change in &outcome.changes {
        match change {
            Settled::Confirmed { vector, provenance } => println!("fact {vector}: {provenance}"),
            Settled::Refuted { vector, provenance, steps, kept_from } => {
                println!("refuted {vector}: {provenance}");
                for step in steps {
                    let was = step.was.as_deref().unwrap_or("no status");
                    println!("  step {}: expects {} (was {was})", step.step, step.now);
                }
                println!("  expected.trace is the device's trace; the simulator must change");
                if let Some(step) = kept_from {
                    println!(
                        "  the device's run stopped before step {step}: the lines from there on are the old golden ones, for the next device run to check"
                    );
                }
            }
            Settled::Proposed { vector, entry } => {
                let file = format!("expectations/{}.toml", options.backend);
                println!("proposed for {file} ({vector}):\n{entry}");
            }
            Settled::Unsettled { vector, reason } => println!("unsettled {vector}: {reason}"),
        }
    }
    let verb = if dry_run { "would write" } else { "wrote" };
    for path in &outcome.written {
        println!("{verb} {}", path.display());
    }
    println!("{}", outcome.summary_line());
    // The changes that could be made are written; the exit status says the work is not done.
    let left = outcome.left_for_a_person();
    if left != 0 {
        eprintln!(
            "{left} vector(s) left for a person: the bundle cannot settle them (see `unsettled` \
             above); exit status 1"
        );
    }
    Ok(left == 0)
}

fn write(path: &Path, text: &str) -> Result<()> {
    conformance::output_file::write(path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// `nrtsim vectors compile`: every vector that runs on `nrt` and has HLO, compiled for `target`.
fn compile(
    target: &str,
    compiler: &Path,
    filter: Option<&str>,
    vectors: Option<PathBuf>,
) -> Result<bool> {
    let vectors_dir = vectors_dir(vectors)?;
    let all = conformance::vector::discover(&vectors_dir).map_err(anyhow::Error::msg)?;
    let mut failed = 0;
    let mut compiled = 0;
    for vector in &all {
        if filter.is_some_and(|pattern| !conformance::glob::matches(pattern, &vector.name)) {
            continue;
        }
        if !conformance::device::needs_device_neff(vector) {
            continue;
        }
        match conformance::device::compile(vector, target, compiler) {
            Ok(path) => {
                compiled += 1;
                println!("compiled {} -> {}", vector.name, path.display());
            }
            Err(message) => {
                failed += 1;
                eprintln!("FAIL {}: {message}", vector.name);
            }
        }
    }
    println!("{compiled} device NEFF(s) compiled for {target}, {failed} failed");
    Ok(failed == 0)
}

//! `nrtsim record` and `nrtsim replay`: capture what a libnrt did for an unmodified program, and
//! re-issue it on the simulator.
//!
//! `record` runs the program with the recorder (`libnrtsim_record.so`, crate `nrt/record`)
//! preloaded; the recorder forwards every call to the real library and writes the trace.
//! `replay` is a command line over `conformance::replay`, which reads a recording, re-issues
//! its calls through a `TracingRuntime` and reports the first line that differs.
//!
//! The format is described in `vectors/README.md` ("Recordings").

use std::ffi::OsString;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use abi::runtime::prelude::*;
use anyhow::{Context as _, Result, bail};
use conformance::replay;

/// Where the recorder writes its trace (read by the recorder library).
const OUT_ENV: &str = "NRTSIM_RECORD_OUT";

/// Names the recorder library explicitly (else it is looked for beside `nrtsim`).
const RECORDER_ENV: &str = "NRTSIM_RECORDER";

/// The recorder's file name.
const RECORDER_FILE: &str = "libnrtsim_record.so";

/// `nrtsim record`.
#[derive(clap::Args)]
pub(crate) struct RecordArgs {
    /// The trace file to write (inputs too long to be inline go to `FILE.blobs/`).
    #[arg(long, default_value = "nrtsim-record.trace")]
    out: PathBuf,
    /// The recorder library (default: `NRTSIM_RECORDER`, else `libnrtsim_record.so` beside
    /// `nrtsim`).
    #[arg(long)]
    recorder: Option<PathBuf>,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM ARGS")]
    command: Vec<OsString>,
}

/// The backend a recording is replayed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Backend {
    /// `SimRuntime` in this process.
    Sim,
    /// The simulator's `libnrt.so.1` through `NrtRuntime`.
    Capi,
}

/// `nrtsim replay`.
#[derive(clap::Args)]
pub(crate) struct ReplayArgs {
    /// The recording.
    file: PathBuf,
    /// Where to replay; the simulator is configured by the `NRTSIM_*` variables either way.
    #[arg(long, value_enum, default_value = "sim")]
    backend: Backend,
    /// The library of `--backend capi` (default: the simulator's, built beside `nrtsim`).
    #[arg(long)]
    library: Option<PathBuf>,
    /// Turn the recording into the vector `vectors/recorded/NAME/` (after a replay on `sim`
    /// without divergence) for review.
    #[arg(long, value_name = "NAME")]
    promote: Option<String>,
    /// The vectors folder `--promote` writes into.
    #[arg(long, default_value = "vectors", requires = "promote")]
    vectors: PathBuf,
    /// The largest recording, and the largest blob it keeps, read in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = replay::DEFAULT_MAX_BYTES)]
    max_input_bytes: u64,
}

/// The recorder library to preload.
fn recorder_path(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path.to_owned());
    }
    if let Some(path) = std::env::var_os(RECORDER_ENV).filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().context("the path of nrtsim")?;
    let dir = exe.parent().context("nrtsim has no folder")?;
    // Cargo refreshes `deps/` when the recorder is built as a dependency and the copy beside
    // `nrtsim` on `cargo build`: the newer one is the current build.
    let candidates = [dir.join(RECORDER_FILE), dir.join("deps").join(RECORDER_FILE)];
    let modified = |path: &PathBuf| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    candidates
        .iter()
        .filter_map(|p| modified(p).map(|t| (t, p)))
        .max()
        .map(|(_, p)| p.clone())
        .with_context(|| {
            format!(
                "no recorder: tried {}; build it with `cargo build -p nrtsim-record`, or name it \
             with --recorder or {RECORDER_ENV}",
                candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
        })
}

/// `nrtsim record`: true when the program succeeded.
pub(crate) fn record(args: RecordArgs) -> Result<bool> {
    let recorder = recorder_path(args.recorder.as_deref())?;
    let recorder = std::fs::canonicalize(&recorder)
        .with_context(|| format!("the recorder {}", recorder.display()))?;
    let mut preload = OsString::from(&recorder);
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|value| !value.is_empty()) {
        preload.push(":");
        preload.push(existing);
    }
    let (program, rest) = args.command.split_first().context("no program to run")?;
    let status = std::process::Command::new(program)
        .args(rest)
        .env("LD_PRELOAD", preload)
        .env(OUT_ENV, &args.out)
        .status()
        .with_context(|| format!("running {}", Path::new(program).display()))?;
    let lines = count_lines(&args.out);
    if lines == 0 {
        bail!(
            "{} wrote no trace to {}: it made no libnrt call, or the recorder was not loaded",
            Path::new(program).display(),
            args.out.display()
        );
    }
    eprintln!("nrtsim record: {lines} lines in {} ({status})", args.out.display());
    Ok(status.success())
}

/// The lines of the trace a run wrote, counted as it streams by: the trace of a long run can be
/// larger than memory, and only its length is reported.
fn count_lines(path: &Path) -> u64 {
    let Ok(file) = std::fs::File::open(path) else {
        return 0;
    };
    let mut reader = std::io::BufReader::new(file);
    let mut lines = 0;
    loop {
        match reader.fill_buf() {
            Ok([]) | Err(_) => return lines,
            Ok(buf) => {
                // A program that did not exit leaves zero padding after its last line.
                let end = buf.iter().position(|&byte| byte == 0);
                let lines_in = &buf[..end.unwrap_or(buf.len())];
                lines += lines_in.iter().filter(|&&byte| byte == b'\n').count() as u64;
                if end.is_some() {
                    return lines;
                }
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}

fn open_backend(args: &ReplayArgs) -> Result<Arc<dyn Runtime>> {
    match args.backend {
        Backend::Sim => {
            let config = sim::config::from_nrtsim_env(|name| std::env::var(name).ok())
                .map_err(anyhow::Error::msg)?;
            Ok(sim::SimRuntime::new_shared(config)?)
        }
        Backend::Capi => {
            let library = match &args.library {
                Some(path) => path.clone(),
                None => {
                    let exe = std::env::current_exe().context("the path of nrtsim")?;
                    let dir = exe.parent().context("nrtsim has no folder")?;
                    conformance::backend::stage_capi_library(dir).map_err(anyhow::Error::msg)?
                }
            };
            let options = nrt::OpenOptions {
                library: nrt::LibrarySource::Path(library),
                initialize: false,
                dtype_numbering: None,
            };
            Ok(Arc::new(nrt::NrtRuntime::open_with(&options)?))
        }
    }
}

/// `nrtsim replay`: true when the replay did not diverge.
pub(crate) fn replay(args: ReplayArgs) -> Result<bool> {
    let recording = replay::read_recording(&args.file, args.max_input_bytes)?;
    if let Some(name) = &args.promote {
        if args.backend != Backend::Sim {
            bail!("--promote replays on sim, expected no --backend or --backend sim");
        }
        replay::promoted_dir(&args.vectors, name)?;
    }
    let runtime = open_backend(&args)?;
    let outcome = replay::replay_on(&recording, runtime)?;
    for header in recording.header() {
        eprintln!("{header}");
    }
    // What the replay could not compare, so a clean replay is not read as more than it is.
    for unchecked in outcome.unchecked(&recording) {
        println!("not checked: {unchecked}");
    }
    if let Some(divergence) = outcome.divergence {
        print!("{}", divergence.report);
        return Ok(false);
    }
    println!(
        "replay of {} on {:?}: no divergence ({} calls re-issued, {} recorded by name only)",
        args.file.display(),
        args.backend,
        outcome.issued,
        outcome.skipped
    );
    if let Some(name) = &args.promote {
        let dir = replay::promote(&recording, &args.vectors, name)?;
        println!("promoted to {} for review", dir.display());
    }
    Ok(true)
}

//! A whole conformance run: every selected vector on every selected backend, in parallel where
//! the backend allows it, with progress on a terminal and the results in vector order.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::backend::Backend;
use crate::expectations::{Expectations, ExpectationsError};
use crate::judge;
use crate::report::{CaseResult, Outcome, Shard};
use crate::vector::{self, Vector, VectorError};

/// What to run.
pub struct SuiteOptions {
    /// The `vectors/` folder.
    pub vectors_dir: PathBuf,
    /// The backends.
    pub backends: Vec<Box<dyn Backend>>,
    /// Only vectors whose `backend/area/name` matches (see [`crate::glob`]).
    pub filter: Option<String>,
    /// Worker threads.
    pub jobs: usize,
    /// Show a progress line on stderr when it is a terminal.
    pub progress: bool,
    /// How each run is judged (e.g. without the golden trace).
    pub judge: judge::JudgeOptions,
    /// Only the vectors of this shard (on every backend).
    pub shard: Option<Shard>,
}

/// Why a suite cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A vector cannot be read.
    #[error(transparent)]
    Vector(#[from] VectorError),
    /// An expectations file cannot be used.
    #[error(transparent)]
    Expectations(#[from] ExpectationsError),
    /// An expectations file lists a vector that does not exist.
    #[error("vectors/expectations/{backend}.toml lists {vector}, which is not a vector")]
    NotAVector {
        /// The backend whose list it is.
        backend: String,
        /// The name listed.
        vector: String,
    },
}

/// The vectors under `dir`, or an error naming the bad one.
///
/// # Errors
/// A [`VectorError`] naming the vector folder or file that cannot be read.
pub fn load_vectors(dir: &Path) -> Result<Vec<Vector>, VectorError> {
    vector::discover(dir)
}

/// Runs the suite and returns one result per backend × vector, in that order.
///
/// # Errors
/// A [`SuiteError`] when the vectors or an expectations file cannot be read, or an
/// expectations file names a vector that does not exist.
pub fn run(options: &SuiteOptions) -> Result<Vec<CaseResult>, SuiteError> {
    let vectors = load_vectors(&options.vectors_dir)?;
    let expectations_dir = options.vectors_dir.join("expectations");
    let mut jobs = Vec::new();
    for backend in &options.backends {
        let expectations = Expectations::load(&expectations_dir, backend.name())?;
        for listed in expectations.vectors() {
            if !vectors.iter().any(|v| v.name == listed) {
                return Err(SuiteError::NotAVector {
                    backend: backend.name().to_owned(),
                    vector: listed.to_owned(),
                });
            }
        }
        for vector in &vectors {
            let id = format!("{}/{}", backend.name(), vector.name);
            let in_shard = options.shard.is_none_or(|shard| shard.contains(&vector.name));
            if in_shard && options.filter.as_deref().is_none_or(|f| crate::glob::matches(f, &id)) {
                let reason = expectations.reason(&vector.name).map(str::to_owned);
                jobs.push((backend.as_ref(), vector, reason));
            }
        }
    }
    let total = jobs.len();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<CaseResult>>> = Mutex::new(vec![None; total]);
    let show_progress = options.progress && std::io::stderr().is_terminal();
    // `jobs` workers started once per run (not per case), each pulling the next case: there is
    // no per-case thread start-up for rayon's pool to save, so the suite takes no dependency
    // for it.
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, 64) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some((backend, vector, reason)) = jobs.get(index) else {
                        break;
                    };
                    let result =
                        judge::judge_with(vector, *backend, reason.as_deref(), options.judge);
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if show_progress {
                        let mut err = std::io::stderr().lock();
                        let _ = write!(err, "\r\x1b[K[{finished}/{total}] {}", result.id());
                        let _ = err.flush();
                    }
                    results.lock().unwrap_or_else(|e| e.into_inner())[index] = Some(result);
                }
            });
        }
    });
    if show_progress {
        eprint!("\r\x1b[K");
    }
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(results.into_iter().flatten().collect())
}

/// A result worth a line of its own, and whether it fails the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotableLine {
    /// True for a failure (it goes to stderr and fails the run), false for a known difference.
    pub is_failure: bool,
    /// `FAIL id: message` or `KNOWN id: message`, with the first differing trace line.
    pub text: String,
}

/// One line per failure and per known difference, with the first differing trace line.
pub fn failure_lines(results: &[CaseResult]) -> Vec<NotableLine> {
    results
        .iter()
        .filter(|r| r.outcome.is_failure() || r.outcome == Outcome::KnownDifference)
        .map(|r| {
            let is_failure = r.outcome.is_failure();
            let tag = match r.outcome {
                Outcome::GuessRefuted => "REFUTED",
                _ if is_failure => "FAIL",
                _ => "KNOWN",
            };
            let mut text =
                format!("{tag} {}: {}", r.id(), r.message.as_deref().unwrap_or("failed"));
            if let Some(diff) = &r.first_diff {
                text.push_str(&format!("\n     {diff}"));
            }
            NotableLine { is_failure, text }
        })
        .collect()
}

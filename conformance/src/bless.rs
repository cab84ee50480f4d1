//! Refreshing and checking the generated files of the vectors.
//!
//! `--bless` rewrites what is generated (`model.neff`, `metaneff.pb`, and `expected.trace` from a
//! run on the simulator); `--check` rewrites nothing and lists what is stale. A vector listed in
//! `expectations/sim.toml` that fails on the simulator keeps its trace as it is. Hand-written files
//! (`case.toml`, `metaneff.txtpb`, the expectations lists) are never written.

use std::path::{Path, PathBuf};

use crate::backend::{Backend, SimBackend};
use crate::expectations::{Expectations, ExpectationsError};
use crate::judge;
use crate::vector::{self, TRACE_FILE, VectorError};

/// Why blessing or promoting did not complete.
#[derive(Debug, thiserror::Error)]
pub enum BlessError {
    /// A vector cannot be read, generated or written.
    #[error(transparent)]
    Vector(#[from] VectorError),
    /// The simulator's expectations file cannot be used.
    #[error(transparent)]
    Expectations(#[from] ExpectationsError),
    /// A file cannot be written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file cannot be copied.
    #[error("copying {} to {}: {source}", .from.display(), .to.display())]
    Copy {
        /// The file copied.
        from: PathBuf,
        /// Where to.
        to: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Vectors that fail on the simulator, whose traces were left as they were.
    #[error(
        "{} vector(s) fail an expectation of their case.toml on the simulator; their traces \
         were not blessed (fix the simulator or the vector):\n  {}",
        .failures.len(),
        .failures.join("\n  ")
    )]
    FailOnSim {
        /// `vector: failure`, one per vector.
        failures: Vec<String>,
    },
    /// A promoted vector's name that is not a plain name.
    #[error("vector name {name:?}: expected lowercase letters, digits and underscores")]
    BadName {
        /// The name given.
        name: String,
    },
    /// A folder to promote without a `case.toml`.
    #[error("{}: no such file; expected a vector folder", .case_path.display())]
    NoCase {
        /// The `case.toml` looked for.
        case_path: PathBuf,
    },
    /// A promoted vector's folder that exists already.
    #[error("{} already exists; choose another --name", .target.display())]
    Exists {
        /// The folder.
        target: PathBuf,
    },
    /// A promoted vector that discovery does not find.
    #[error("{} was written but is not found as {name}", .target.display())]
    NotFound {
        /// The folder written.
        target: PathBuf,
        /// The name it should have.
        name: String,
    },
    /// A promoted vector that fails on the simulator.
    #[error(
        "{name} was copied to {} but fails on the simulator, so its trace was not blessed: \
         {failure}",
        .target.display()
    )]
    PromotedFails {
        /// The vector's name.
        name: String,
        /// Its folder.
        target: PathBuf,
        /// The failure.
        failure: String,
    },
}

/// The error for an IO failure on `path`.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BlessError + use<> {
    let path = path.to_path_buf();
    move |source| BlessError::Io { path, source }
}

/// Brings every generated file up to date (`bless`) or lists the stale ones.
///
/// # Errors
/// A [`BlessError`] when a vector cannot be read, generated or written, or fails on the
/// simulator.
pub fn sync(vectors_dir: &Path, bless: bool) -> Result<Vec<String>, BlessError> {
    let vectors = vector::discover(vectors_dir)?;
    let mut changed = vector::sync_inputs(&vectors, bless)?;
    let mut failures = Vec::new();
    // A vector the simulator is known to get wrong has no trace to bless from it: its golden
    // trace is left as it is until the simulator is fixed (and the entry removed).
    let known = Expectations::load(&vectors_dir.join("expectations"), "sim")?;
    for vector in &vectors {
        // A recorded vector has no golden trace: its recording is the expectation.
        if vector.recorded || !vector.runs_on("sim") {
            continue;
        }
        let output = SimBackend.run(vector);
        if let Some(failure) = output.failure {
            if known.reason(&vector.name).is_none() {
                failures.push(format!("{}: {failure}", vector.name));
            }
            continue;
        }
        let golden = judge::golden_text(&output.trace);
        let path = vector.dir.join(TRACE_FILE);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(golden.as_str()) {
            continue;
        }
        changed.push(format!("{}/{TRACE_FILE}", vector.name));
        if bless {
            crate::output_file::write(&path, golden.as_bytes()).map_err(io(&path))?;
        }
    }
    if !failures.is_empty() {
        return Err(BlessError::FailOnSim { failures });
    }
    Ok(changed)
}

/// The area promoted vectors go to (`vectors/promoted/<name>/`).
pub const PROMOTED_AREA: &str = "promoted";

/// Copies the hand-written files of the vector folder `source` (`case.toml`, and
/// `metaneff.txtpb` and `model.hlo` when present) to `vectors_dir/promoted/<name>/`, then blesses that one
/// vector: its generated inputs and its golden trace from a run on the simulator. Returns the
/// new folder. This is how a shrunk failure of the differential test becomes a vector.
///
/// # Errors
/// A [`BlessError`] when `name` is not a plain vector name, when the folder already exists (never
/// overwritten), when `source` has no `case.toml`, or when the vector cannot be generated, fails
/// an expectation on the simulator, or cannot be written.
pub fn promote(source: &Path, vectors_dir: &Path, name: &str) -> Result<PathBuf, BlessError> {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    if name.is_empty() || !name.chars().all(plain) {
        return Err(BlessError::BadName { name: name.to_owned() });
    }
    let case_path = source.join("case.toml");
    if !case_path.is_file() {
        return Err(BlessError::NoCase { case_path });
    }
    let target = vectors_dir.join(PROMOTED_AREA).join(name);
    if target.exists() {
        return Err(BlessError::Exists { target });
    }
    std::fs::create_dir_all(&target).map_err(io(&target))?;
    for file in ["case.toml", vector::METANEFF_TEXT_FILE, vector::HLO_TEXT_FILE] {
        let from = source.join(file);
        if from.is_file() {
            let to = target.join(file);
            if let Err(source) = std::fs::copy(&from, &to) {
                return Err(BlessError::Copy { from, to, source });
            }
        }
    }
    let full_name = format!("{PROMOTED_AREA}/{name}");
    let vectors = vector::discover(vectors_dir)?;
    let promoted: Vec<_> = vectors.into_iter().filter(|v| v.name == full_name).collect();
    if promoted.is_empty() {
        return Err(BlessError::NotFound { target, name: full_name });
    }
    vector::sync_inputs(&promoted, true)?;
    for vector in &promoted {
        let output = SimBackend.run(vector);
        if let Some(failure) = output.failure {
            return Err(BlessError::PromotedFails { name: full_name, target, failure });
        }
        let path = vector.dir.join(TRACE_FILE);
        crate::output_file::write(&path, judge::golden_text(&output.trace).as_bytes())
            .map_err(io(&path))?;
    }
    Ok(target)
}

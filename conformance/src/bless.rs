//! Refreshing and checking the generated files of the vectors.
//!
//! `--bless` rewrites what is generated (`model.neff`, `metaneff.pb`, and `expected.trace` from a
//! run on the simulator); `--check` rewrites nothing and lists what is stale. Hand-written files
//! (`case.toml`, `metaneff.txtpb`, the expectations lists) are never written.

use std::path::Path;

use crate::backend::SimBackend;
use crate::runner;
use crate::vector::{self, TRACE_FILE};

/// Brings every generated file up to date (`bless`) or lists the stale ones.
///
/// # Errors
/// A message when a vector cannot be read, generated or written.
pub fn sync(vectors_dir: &Path, bless: bool) -> Result<Vec<String>, String> {
    let vectors = vector::discover(vectors_dir).map_err(|e| e.to_string())?;
    let mut changed = vector::sync_inputs(&vectors, bless).map_err(|e| e.to_string())?;
    let mut failures = Vec::new();
    for vector in &vectors {
        if !vector.runs_on("sim") {
            continue;
        }
        let output = runner::run(vector, &SimBackend);
        if let Some(failure) = output.failure {
            failures.push(format!("{}: {failure}", vector.name));
            continue;
        }
        let golden = runner::golden_text(&output.trace);
        let path = vector.dir.join(TRACE_FILE);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(golden.as_str()) {
            continue;
        }
        changed.push(format!("{}/{TRACE_FILE}", vector.name));
        if bless {
            std::fs::write(&path, golden).map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    if !failures.is_empty() {
        return Err(format!(
            "{} vector(s) fail an expectation of their case.toml on the simulator; their traces \
             were not blessed (fix the simulator or the vector):\n  {}",
            failures.len(),
            failures.join("\n  ")
        ));
    }
    Ok(changed)
}

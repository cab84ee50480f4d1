//! The reference Python that the cross-checks compare against (Google's protobuf for metaneff,
//! XLA on CPU through jax for HLO), found by one rule, with one rule for its absence.
//!
//! Finding it: `NRTSIM_PYTHON` when set, else the virtual environment `cargo xtask test` makes in
//! `target/pyenv` (from the pins in `pyref/requirements.txt`), else `python3` on the `PATH`; the first of them that imports every module the
//! check needs. Its absence: a check without its Python is reported ignored, with the reason,
//! except under CI (`CI` set), where it fails, since a cross-check that silently does not run
//! proves nothing.
//!
//! Only tests and benches use this crate (a dev-dependency); it needs nothing but std.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Python interpreters to try, in order.
pub fn candidates() -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(path) = std::env::var_os("NRTSIM_PYTHON") {
        candidates.push(PathBuf::from(path));
    }
    candidates.push(workspace_root().join("target/pyenv/bin/python"));
    candidates.push(PathBuf::from("python3"));
    candidates
}

/// The first candidate that imports every one of `modules`, or why there is none (naming the
/// modules, the candidates tried and how to get one).
pub fn find(modules: &[&str]) -> Result<PathBuf, String> {
    let candidates = candidates();
    let import = format!("import {}", modules.join(", "));
    for python in &candidates {
        let imports = Command::new(python)
            .args(["-c", &import])
            .output()
            .is_ok_and(|output| output.status.success());
        if imports {
            return Ok(python.clone());
        }
    }
    let tried: Vec<String> = candidates.iter().map(|path| path.display().to_string()).collect();
    Err(format!(
        "no Python that imports {} (tried {}); run cargo xtask test or set NRTSIM_PYTHON",
        modules.join(", "),
        tried.join(", ")
    ))
}

/// [`find`], printing the reason on standard error under `check`'s name when there is none, so
/// a test log says why its trials were ignored.
pub fn find_for(check: &str, modules: &[&str]) -> Result<PathBuf, String> {
    let found = find(modules);
    if let Err(reason) = &found {
        eprintln!("{check}: {reason}");
    }
    found
}

/// Whether a missing Python is a failure: under CI (`CI` set), a cross-check must run.
pub fn required() -> bool {
    std::env::var_os("CI").is_some()
}

/// Whether a check whose Python search gave `found` is reported ignored instead of run.
pub fn ignored<T>(found: &Result<T, String>) -> bool {
    found.is_err() && !required()
}

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_no_python_has_is_refused_with_the_modules_and_the_candidates() {
        let reason = find(&["nrtsim_no_such_module_anywhere"]).expect_err("no Python has it");
        assert!(reason.contains("imports nrtsim_no_such_module_anywhere"), "{reason}");
        assert!(reason.contains("target/pyenv/bin/python"), "{reason}");
        assert!(reason.contains("python3"), "{reason}");
        assert!(reason.contains("NRTSIM_PYTHON"), "{reason}");
    }

    #[test]
    fn the_ci_virtual_environment_comes_before_the_path_python() {
        let candidates = candidates();
        let pyenv = workspace_root().join("target/pyenv/bin/python");
        let at = |path: &Path| candidates.iter().position(|candidate| candidate == path);
        let (pyenv_at, path_at) = (at(&pyenv), at(Path::new("python3")));
        assert!(pyenv_at.is_some() && pyenv_at < path_at, "{candidates:?}");
        assert_eq!(path_at, Some(candidates.len() - 1), "python3 is the last resort");
    }

    #[test]
    fn only_a_failed_search_is_ignored_and_never_under_ci() {
        let found: Result<(), String> = Ok(());
        assert!(!ignored(&found));
        let missing: Result<(), String> = Err("none".to_owned());
        assert_eq!(ignored(&missing), !required());
    }
}

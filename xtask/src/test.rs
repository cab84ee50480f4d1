//! `cargo xtask test [ARGS]`: the README's test command. It makes sure the pinned reference
//! Python of the cross-checks exists (`target/pyenv`, from `pyref/requirements.txt`, the one
//! list of pins, which `.ci/run` uses through this command too), then runs `cargo test
//! --workspace ARGS` with `NRTSIM_PYTHON` set, and ends with one line saying what was skipped.
//!
//! A `target/pyenv` is complete when its interpreter exists and the requirements it was made
//! from (a copy kept beside it) equal the committed ones; otherwise it is (re)made with `python3
//! -m venv` and pip. When that fails (no network, no `python3`), the tests still run: the
//! cross-checks then report themselves ignored (failed under `CI`), and the last line says so
//! and why. `NRTSIM_PYTHON`, when set, is used as it is and nothing is installed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The committed pins, relative to the workspace root.
pub(crate) const REQUIREMENTS: &str = "pyref/requirements.txt";
/// The virtual environment, relative to the workspace root.
pub(crate) const PYENV: &str = "target/pyenv";
/// The copy of the requirements a pyenv was made from, inside it.
const STAMP: &str = "nrtsim-requirements.txt";

/// What a `target/pyenv` holds, compared with the committed pins.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PyenvState {
    /// No interpreter.
    Missing,
    /// An interpreter, but not made from the committed requirements (or not finished).
    Stale,
    /// Made from exactly the committed requirements.
    Complete,
}

/// The interpreter of a virtual environment.
pub(crate) fn python_of(pyenv: &Path) -> PathBuf {
    pyenv.join("bin/python")
}

/// Whether `pyenv` was completely made from `requirements` (the file's bytes).
pub(crate) fn pyenv_state(pyenv: &Path, requirements: &[u8]) -> PyenvState {
    if !python_of(pyenv).is_file() {
        return PyenvState::Missing;
    }
    match std::fs::read(pyenv.join(STAMP)) {
        Ok(stamp) if stamp == requirements => PyenvState::Complete,
        _ => PyenvState::Stale,
    }
}

/// Makes the virtual environment `venv` (relative to `root`) from the pins in `requirements`
/// (relative too) unless it is complete; returns its interpreter. `cargo xtask wheel` makes its
/// build environment with it as well.
pub(crate) fn ensure_venv(root: &Path, requirements: &str, venv: &str) -> Result<PathBuf> {
    let (requirements_name, venv_name) = (requirements, venv);
    let requirements_path = root.join(requirements_name);
    let requirements = std::fs::read(&requirements_path)
        .with_context(|| format!("reading {}", requirements_path.display()))?;
    let pyenv = root.join(venv_name);
    let python = python_of(&pyenv);
    let state = pyenv_state(&pyenv, &requirements);
    if state == PyenvState::Complete {
        return Ok(python);
    }
    eprintln!("xtask: making {venv_name} from {requirements_name} ({state:?})");
    if state == PyenvState::Missing {
        crate::run(Command::new("python3").arg("-m").arg("venv").arg(&pyenv), "python3 -m venv")?;
    }
    // The stamp goes only after pip succeeds, so an interrupted install is redone.
    let _ = std::fs::remove_file(pyenv.join(STAMP));
    crate::run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements_path),
        &format!("pip install -r {requirements_name}"),
    )?;
    std::fs::write(pyenv.join(STAMP), &requirements)
        .with_context(|| format!("writing {}", pyenv.join(STAMP).display()))?;
    Ok(python)
}

/// The number of ignored tests a `test result:` line of libtest reports, if it is one.
pub(crate) fn ignored_in(line: &str) -> Option<u64> {
    let rest = line.trim().strip_prefix("test result: ")?;
    rest.split(';').find_map(|part| part.trim().strip_suffix(" ignored")?.trim().parse().ok())
}

/// The last line of the run: what was skipped, and why.
pub(crate) fn summary(ignored: u64, python: &Result<PathBuf, String>) -> String {
    match (ignored, python) {
        (0, _) => "xtask test: skipped nothing".to_owned(),
        (n, Err(why)) => format!(
            "xtask test: skipped {n} tests (the XLA and protobuf cross-checks): no reference \
             Python, {why}; fix that and rerun cargo xtask test"
        ),
        (n, Ok(python)) => format!(
            "xtask test: skipped {n} tests although {} was given; each says why above",
            python.display()
        ),
    }
}

/// `cargo xtask test ARGS`.
pub(crate) fn test(root: &Path, args: &[String]) -> Result<()> {
    let python = match std::env::var_os("NRTSIM_PYTHON") {
        Some(path) => Ok(PathBuf::from(path)),
        None => ensure_venv(root, REQUIREMENTS, PYENV).map_err(|e| format!("{e:#}")),
    };
    if let Err(why) = &python {
        eprintln!("xtask test: no reference Python ({why}); the cross-checks will be ignored");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    command.current_dir(root).args(["test", "--workspace"]).args(args);
    if let Ok(python) = &python {
        command.env("NRTSIM_PYTHON", python);
    }
    // libtest writes its results on standard output; they pass through, counted.
    let mut child =
        command.stdout(Stdio::piped()).spawn().context("running cargo test --workspace")?;
    let mut ignored = 0;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading cargo test's output")?;
            println!("{line}");
            ignored += ignored_in(&line).unwrap_or(0);
        }
    }
    let status = child.wait().context("waiting for cargo test")?;
    println!("{}", summary(ignored, &python));
    if !status.success() {
        bail!("cargo test --workspace failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nrtsim-xtask-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_pyenv_is_complete_only_with_its_interpreter_and_the_same_requirements() {
        let dir = scratch("pyenv");
        assert_eq!(pyenv_state(&dir, b"jax==1\n"), PyenvState::Missing);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(python_of(&dir), b"").unwrap();
        assert_eq!(
            pyenv_state(&dir, b"jax==1\n"),
            PyenvState::Stale,
            "no stamp: pip never finished"
        );
        std::fs::write(dir.join(STAMP), b"jax==1\n").unwrap();
        assert_eq!(pyenv_state(&dir, b"jax==1\n"), PyenvState::Complete);
        assert_eq!(pyenv_state(&dir, b"jax==2\n"), PyenvState::Stale, "a changed pin");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ci_runs_the_readme_command_and_the_pins_live_in_one_file() {
        let root = crate::workspace_root();
        let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
        assert!(ci.lines().any(|l| l.trim() == "cargo xtask test --locked"), "{ci}");
        assert!(!ci.contains("pip install"), ".ci/run installs pins of its own");
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        assert!(readme.contains("cargo xtask test "), "the README's test command");
        let pins = std::fs::read_to_string(root.join(REQUIREMENTS)).unwrap();
        for package in ["protobuf", "grpcio-tools", "jax", "jaxlib", "numpy", "ml_dtypes"] {
            let pinned = pins.lines().any(|l| {
                l.split_once("==")
                    .is_some_and(|(name, version)| name == package && !version.is_empty())
            });
            assert!(pinned, "{package} is not pinned in {REQUIREMENTS}");
        }
    }

    #[test]
    fn ignored_tests_are_counted_from_libtest_lines() {
        let line = "test result: ok. 42 passed; 0 failed; 7 ignored; 0 measured; 0 filtered out; finished in 0.01s";
        assert_eq!(ignored_in(line), Some(7));
        assert_eq!(ignored_in("running 3 tests"), None);
        assert_eq!(summary(0, &Ok(PathBuf::from("py"))), "xtask test: skipped nothing");
        let missing = summary(7, &Err("pip install failed".into()));
        assert!(
            missing.contains("skipped 7 tests") && missing.contains("pip install failed"),
            "{missing}"
        );
    }
}

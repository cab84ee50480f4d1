//! `cargo xtask nki-suites [--sdk DIR] [--samples DIR] [--work DIR] [--with-torch] [-- PYTEST_ARGS]`:
//! NKI test suites nobody here wrote, run on nrtsim's NKI (`python/nki`) in one command, for a
//! person with clones of their repositories (CI cannot fetch them; `docs/nki.md` says what each
//! suite is and the last counts).
//!
//! - `--sdk DIR`: a clone of aws-neuron/aws-neuron-sdk; its `nki/test/*.py` (the examples of the
//!   NKI reference pages, each a unittest file).
//! - `--nkipy DIR`: a clone of aws-neuron/nkipy: its `tests/unit/test_nki.py` (kernels inside
//!   nkipy's graphs, through spike on the simulator), by `cargo xtask nkipy`'s steps.
//! - `--samples DIR`: a clone of aws-neuron/nki-samples at 8370e11 (the last commit with its
//!   reference kernels): `pytest test/unit --simulation-only` with its `src` on the path, and
//!   every tutorial kernel in `src/nki_samples/tutorials/` against NumPy ([`TUTORIALS`]).
//!
//! Steps, each a command this prints before it runs it:
//! 1. `nrtsim` in the release profile (the kernels' executor).
//! 2. A virtual environment `WORK/venv` (default `target/nki-suites`) with [`VENV_PACKAGES`]
//!    from the package registry, and a `.pth` file that puts this tree's `python/nki/src` and
//!    `python/neuronx-cc/src` on its path and installs their finders, as the wheels do: the
//!    suites' `import neuronxcc.nki` and `import nki` get nrtsim's.
//! 3. pytest over each suite (`-rA`, no cache written into the clones), the log in
//!    `WORK/<suite>.log`, then one line per test file with its counts, every failure with its
//!    reason, and the wall time.
//!
//! It exits non-zero when a step fails, not when a test does: the per-file summary is the result.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::libnrt::{self, Profile};
use crate::nkipy::{render, summarize};

/// nkipy's NKI integration tests, the ones `--nkipy` runs.
pub(crate) const NKIPY_NKI_TESTS: &str = "tests/unit/test_nki.py";

/// The driver of nki-samples' tutorials (each kernel against NumPy), relative to the root.
pub(crate) const TUTORIALS: &str = "python/nki/suites/tutorials.py";

fn path_string(path: &Path) -> Result<String> {
    path.to_str().map(str::to_owned).with_context(|| format!("{} is not UTF-8", path.display()))
}

/// What the virtual environment gets from the package registry: the frontend's needs (numpy,
/// ml_dtypes) and pytest.
pub(crate) const VENV_PACKAGES: &[&str] = &["numpy", "ml_dtypes", "pytest"];

/// The options of `cargo xtask nki-suites`.
pub(crate) struct Options {
    /// A clone of aws-neuron/aws-neuron-sdk.
    pub(crate) sdk: Option<PathBuf>,
    /// A clone of aws-neuron/nki-samples (at 8370e11).
    pub(crate) samples: Option<PathBuf>,
    /// A clone of aws-neuron/nkipy: its `tests/unit/test_nki.py` through `cargo xtask nkipy`.
    pub(crate) nkipy: Option<PathBuf>,
    /// Where the venv and the logs go.
    pub(crate) work: PathBuf,
    /// Also install PyTorch (some references are torch).
    pub(crate) with_torch: bool,
    /// More pytest arguments.
    pub(crate) pytest_args: Vec<String>,
}

fn run_step(what: &str, command: &mut Command) -> Result<()> {
    crate::run_step("nki-suites", what, command)
}

/// One suite: where it runs, what runs it (pytest, or a driver script of ours), and its extra
/// path.
struct Suite {
    name: &'static str,
    dir: PathBuf,
    args: Vec<String>,
    pythonpath: Option<PathBuf>,
    /// A driver script run instead of pytest (with `args`); it prints pytest's `-rA` lines.
    script: Option<PathBuf>,
}

/// `cargo xtask nki-suites`.
pub(crate) fn run(root: &Path, options: &Options) -> Result<()> {
    let mut suites = Vec::new();
    if let Some(sdk) = &options.sdk {
        if !sdk.join("nki/test").is_dir() {
            bail!("--sdk {}: expected aws-neuron-sdk's repository with nki/test/", sdk.display());
        }
        suites.push(Suite {
            name: "aws-neuron-sdk",
            dir: sdk.clone(),
            args: vec!["nki/test".into()],
            pythonpath: None,
            script: None,
        });
    }
    if let Some(samples) = &options.samples {
        if !samples.join("test/unit").is_dir() || !samples.join("src/nki_samples").is_dir() {
            bail!(
                "--samples {}: expected nki-samples' repository with test/unit/ and src/nki_samples/ \
                 (commit 8370e11 has its reference kernels)",
                samples.display()
            );
        }
        suites.push(Suite {
            name: "nki-samples",
            dir: samples.clone(),
            args: vec!["test/unit".into(), "--simulation-only".into()],
            pythonpath: Some(samples.join("src")),
            script: None,
        });
        suites.push(Suite {
            name: "nki-samples-tutorials",
            dir: samples.clone(),
            args: vec![path_string(samples)?],
            pythonpath: None,
            script: Some(root.join(TUTORIALS)),
        });
    }
    if suites.is_empty() && options.nkipy.is_none() {
        bail!(
            "nothing to run: give --sdk DIR, --samples DIR and/or --nkipy DIR (clones of the \
             suites' repositories)"
        );
    }
    std::fs::create_dir_all(&options.work)
        .with_context(|| format!("creating {}", options.work.display()))?;
    let work = options
        .work
        .canonicalize()
        .with_context(|| format!("resolving {}", options.work.display()))?;

    let artifacts = libnrt::cargo_build(root, &["nrtsim-cli"], Profile::Release)?;
    let tool = artifacts.join("nrtsim");

    let venv = work.join("venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        run_step("making the venv", Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    let mut packages: Vec<&str> = VENV_PACKAGES.to_vec();
    if options.with_torch {
        packages.push("torch");
    }
    run_step(
        "installing the suites' needs",
        Command::new(&python).args(["-m", "pip", "install", "-q"]).args(&packages),
    )?;
    install_dev_pth(root, &python)?;

    let mut failed_steps = 0;
    for suite in &suites {
        let log = work.join(format!("{}.log", suite.name));
        let mut pytest = Command::new(&python);
        pytest.current_dir(&suite.dir).env("NRTSIM_TOOL", &tool).env("NRTSIM_QUIET", "1");
        match &suite.script {
            Some(script) => pytest.arg(script).args(&suite.args),
            None => pytest
                .args(["-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"])
                .args(&suite.args)
                .args(&options.pytest_args),
        };
        if let Some(path) = &suite.pythonpath {
            pytest.env("PYTHONPATH", path);
        }
        let log_file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        pytest.stdout(log_file.try_clone()?).stderr(log_file);
        eprintln!("nki-suites: {}: log {}: {pytest:?}", suite.name, log.display());
        let started = Instant::now();
        let status = pytest.status().context("starting pytest")?;
        let elapsed = started.elapsed();
        let text =
            std::fs::read_to_string(&log).with_context(|| format!("reading {}", log.display()))?;
        let summary = summarize(&text);
        println!("== {} ({})", suite.name, suite.dir.display());
        if summary.is_empty() {
            println!("pytest ({status}) reported no test; see {}", log.display());
            failed_steps += 1;
            continue;
        }
        print!("{}", render(&summary));
        for line in failures(&text) {
            println!("  {line}");
        }
        println!(
            "wall time {:.1} s (pytest {status}); log {}",
            elapsed.as_secs_f64(),
            log.display()
        );
    }
    if let Some(source) = &options.nkipy {
        println!("== nkipy tests/unit/test_nki.py ({})", source.display());
        crate::nkipy::run(
            root,
            &crate::nkipy::Options {
                source: source.clone(),
                work: libnrt::target_dir(root).join("nkipy"),
                workers: 0,
                cores: None,
                with_torch: options.with_torch,
                pytest_args: Vec::new(),
                only: Some(vec![NKIPY_NKI_TESTS.to_owned()]),
            },
        )?;
    }
    if failed_steps > 0 {
        bail!("{failed_steps} suite(s) reported no test");
    }
    Ok(())
}

/// Writes [`dev_pth`] into the site-packages of the venv whose interpreter is `python`.
pub(crate) fn install_dev_pth(root: &Path, python: &Path) -> Result<()> {
    let purelib = Command::new(python)
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        .output()
        .context("asking the venv for its site-packages")?;
    let purelib = PathBuf::from(String::from_utf8_lossy(&purelib.stdout).trim());
    std::fs::write(purelib.join("nrtsim-nki-dev.pth"), dev_pth(root))
        .with_context(|| format!("writing the .pth file in {}", purelib.display()))
}

/// The `.pth` file that makes this tree's NKI and compiler shim importable in the venv, as
/// their wheels' `.pth` files do once installed.
pub(crate) fn dev_pth(root: &Path) -> String {
    format!(
        "{}\n{}\nimport nrtsim_neuronx_cc.finder as _f; _f.install()\nimport nrtsim_nki.finder as _g; _g.install()\n",
        root.join("python/nki/src").display(),
        root.join("python/neuronx-cc/src").display()
    )
}

/// The `FAILED`/`ERROR` lines of pytest's `-rA` summary, with their reasons.
pub(crate) fn failures(log: &str) -> Vec<&str> {
    log.lines().filter(|line| line.starts_with("FAILED ") || line.starts_with("ERROR ")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_keep_the_reason() {
        let log =
            "PASSED a.py::t\nFAILED a.py::u - AssertionError: x\nERROR b.py - ImportError\nok\n";
        assert_eq!(
            failures(log),
            ["FAILED a.py::u - AssertionError: x", "ERROR b.py - ImportError"]
        );
    }

    #[test]
    fn the_pth_puts_both_source_folders_first_then_installs_the_finders() {
        let pth = dev_pth(Path::new("/r"));
        let lines: Vec<&str> = pth.lines().collect();
        assert_eq!(lines[0], "/r/python/nki/src");
        assert_eq!(lines[1], "/r/python/neuronx-cc/src");
        // The shim's finder first: `neuronxcc.nki` is provided only under nrtsim's `neuronxcc`.
        assert!(
            lines[2].contains("nrtsim_neuronx_cc.finder") && lines[3].contains("nrtsim_nki.finder")
        );
    }
}

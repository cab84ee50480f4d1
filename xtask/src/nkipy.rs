//! `cargo xtask nkipy --source DIR [--work DIR] [--workers N] [--cores N] [--with-torch]
//! [-- PYTEST_ARGS]`:
//! nkipy's own `tests/unit` and `tests/integration` with the simulator as the device, in one
//! command, for a person with nkipy's source (it is on no package registry, so CI cannot run
//! this; CI runs the fixtures nkipy wrote, `conformance/tests/models/nkipy_*`).
//!
//! Steps, each a command this prints before it runs it (`docs/nkipy.md` has the why):
//! 1. `cargo xtask sdk`'s folder in `WORK/sdk` (the library, the headers, `bin/neuronx-cc`).
//! 2. A copy of the source in `WORK/src` (the spike build writes into its source tree, and the
//!    given source is never changed).
//! 3. A virtual environment `WORK/venv` with nkipy's run and build needs from the package
//!    registry ([`VENV_PACKAGES`]); nkipy itself with `pip install --no-deps
//!    --no-build-isolation` (its `neuronx-cc` and `nki` dependencies are on the Neuron index
//!    only), and spike built against the SDK folder (`-C cmake.define.NEURON_ROOT=WORK/sdk`).
//! 4. nrtsim's compiler shim (`python/neuronx-cc`) and NKI (`python/nki`) from this tree, put on
//!    the venv's path by a `.pth` file as their wheels do, running `WORK/sdk/bin/nrtsim`
//!    (`NRTSIM_TOOL`): nkipy's in-process `neuronxcc.driver.CommandDriver.main` compiles with
//!    nrtsim, and its NKI integration (`tests/unit/test_nki.py`: `@nki.jit` kernels called while
//!    tracing, `wrap_nki_kernel`) gets nrtsim's NKI, whose kernels run on the simulator.
//! 5. pytest over `tests/unit` and `tests/integration` without the nkigen file (its backend's
//!    device code the simulator cannot run), `-n N` workers (pytest-xdist; nkipy's conftest gives each
//!    worker its own core, so `NRTSIM_CORES` is at least N), the log in `WORK/pytest.log`, then
//!    one line per test file with its counts, and the wall time.
//!
//! It exits non-zero when a step fails, not when a test does: the per-file summary is the result.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::libnrt::Profile;

/// What the virtual environment gets from the package registry: nkipy's run dependencies besides
/// the Neuron ones (numpy, protobuf), its build's (grpcio-tools, setuptools, wheel), spike's
/// (ml_dtypes; cmake, nanobind, scikit-build-core to build it), its tests' (pytest, xdist,
/// pytest-order) and boto3, which `nkipy.tools.kernel_agent` imports.
pub(crate) const VENV_PACKAGES: &[&str] = &[
    "numpy",
    "protobuf>=7.35",
    "grpcio-tools",
    "ml_dtypes",
    "setuptools",
    "wheel",
    "cmake",
    "nanobind",
    "scikit-build-core",
    "pytest",
    "pytest-xdist",
    "pytest-order",
    "boto3",
];

/// The test files left out: the nkigen backend's kernels are device code.
pub(crate) const LEFT_OUT: &[&str] = &["tests/unit/test_nkigen_backend.py"];

/// The options of `cargo xtask nkipy`.
pub(crate) struct Options {
    /// nkipy's source tree (the repository: `nkipy/`, `spike/`, `tests/`).
    pub(crate) source: PathBuf,
    /// Where the SDK folder, the copy, the venv and the log go.
    pub(crate) work: PathBuf,
    /// pytest-xdist workers (0: no xdist).
    pub(crate) workers: u32,
    /// Simulated cores (`NRTSIM_CORES`); default the larger of 2 and the workers.
    pub(crate) cores: Option<u32>,
    /// Also install PyTorch (from the package registry), which 32 of nkipy's tests need.
    pub(crate) with_torch: bool,
    /// More pytest arguments.
    pub(crate) pytest_args: Vec<String>,
    /// The test paths to run instead of `tests/unit` and `tests/integration`.
    pub(crate) only: Option<Vec<String>>,
}

fn run_step(what: &str, command: &mut Command) -> Result<()> {
    crate::run_step("nkipy", what, command)
}

/// `cargo xtask nkipy`.
pub(crate) fn run(root: &Path, options: &Options) -> Result<()> {
    let source = &options.source;
    for part in ["nkipy", "spike", "tests/unit", "tests/integration"] {
        if !source.join(part).is_dir() {
            bail!(
                "--source {}: expected nkipy's repository with {part}/, which it lacks",
                source.display()
            );
        }
    }
    std::fs::create_dir_all(&options.work)
        .with_context(|| format!("creating {}", options.work.display()))?;
    let work = options
        .work
        .canonicalize()
        .with_context(|| format!("resolving {}", options.work.display()))?;
    let sdk = work.join("sdk");
    crate::sdk::run(root, &sdk, Profile::Debug)?;

    let src = work.join("src");
    if src.exists() {
        std::fs::remove_dir_all(&src).with_context(|| format!("removing {}", src.display()))?;
    }
    run_step("copying the source", Command::new("cp").arg("-a").arg(source).arg(&src))?;
    // A spike build folder made elsewhere has a CMake cache that names another source folder.
    let stale_build = src.join("spike/build");
    if stale_build.exists() {
        std::fs::remove_dir_all(&stale_build)
            .with_context(|| format!("removing {}", stale_build.display()))?;
    }

    let venv = work.join("venv");
    let python = venv.join("bin/python");
    if !python.exists() {
        run_step("making the venv", Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    let pip = |what: &str, args: &[&str]| {
        run_step(what, Command::new(&python).args(["-m", "pip", "install", "-q"]).args(args))
    };
    pip("installing nkipy's needs", VENV_PACKAGES)?;
    if options.with_torch {
        pip("installing PyTorch", &["torch"])?;
    }
    let nkipy_dir = src.join("nkipy");
    pip(
        "installing nkipy (no Neuron dependencies)",
        &["--no-deps", "--no-build-isolation", path_str(&nkipy_dir)?],
    )?;
    let define = format!("cmake.define.NEURON_ROOT={}", sdk.display());
    let spike_dir = src.join("spike");
    pip(
        "building spike against the SDK folder",
        &["--no-deps", "--no-build-isolation", "-C", &define, path_str(&spike_dir)?],
    )?;

    // nrtsim's compiler shim and NKI from this tree, as their wheels install them: nkipy's
    // in-process neuronx-cc and its NKI integration (`neuronxcc.nki`) are nrtsim's.
    crate::nki_suites::install_dev_pth(root, &python)?;

    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![sdk.join("bin")];
    paths.extend(std::env::split_paths(&path));
    let cores = options.cores.unwrap_or(options.workers.max(2));
    let log = work.join("pytest.log");
    let mut pytest = Command::new(&python);
    pytest
        .current_dir(&src)
        .env("PATH", std::env::join_paths(paths)?)
        .env("NRTSIM_TOOL", sdk.join("bin/nrtsim"))
        .env("NRTSIM_QUIET", "1")
        .env("NRTSIM_CORES", cores.to_string())
        .args(["-m", "pytest"])
        .args(
            options
                .only
                .clone()
                .unwrap_or_else(|| vec!["tests/unit".into(), "tests/integration".into()]),
        )
        .args(["-q", "-rA"])
        .args(["-p", "no:cacheprovider"]);
    for file in LEFT_OUT {
        pytest.arg(format!("--ignore={file}"));
    }
    if options.workers > 0 {
        pytest.args(["-n", &options.workers.to_string()]);
    }
    pytest.args(&options.pytest_args);
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    pytest.stdout(log_file.try_clone()?).stderr(log_file);
    eprintln!(
        "nkipy: running the tests ({cores} simulated cores), log {}: {pytest:?}",
        log.display()
    );
    let started = Instant::now();
    let status = pytest.status().context("starting pytest")?;
    let elapsed = started.elapsed();
    let text =
        std::fs::read_to_string(&log).with_context(|| format!("reading {}", log.display()))?;
    let summary = summarize(&text);
    if summary.is_empty() {
        bail!("pytest ({status}) reported no test; see {}", log.display());
    }
    print!("{}", render(&summary));
    println!("wall time {:.1} s (pytest {status}); log {}", elapsed.as_secs_f64(), log.display());
    Ok(())
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().with_context(|| format!("{} is not UTF-8", path.display()))
}

/// The outcomes pytest's `-rA` summary names, in the order the table shows them.
pub(crate) const OUTCOMES: [&str; 6] = ["PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"];

/// Per test file, the count of each outcome, from the `-rA` short summary lines:
/// `PASSED FILE::TEST`, `FAILED FILE::TEST - why`, `SKIPPED [N] FILE:LINE: why` (N tests).
pub(crate) fn summarize(log: &str) -> BTreeMap<String, [u64; 6]> {
    let mut files: BTreeMap<String, [u64; 6]> = BTreeMap::new();
    for line in log.lines() {
        let Some((word, rest)) = line.split_once(' ') else { continue };
        let Some(index) = OUTCOMES.iter().position(|outcome| *outcome == word) else { continue };
        let (count, file) = if let Some(bracketed) = rest.strip_prefix('[') {
            let Some((n, location)) = bracketed.split_once("] ") else { continue };
            let Ok(n) = n.parse::<u64>() else { continue };
            (n, location.split(':').next().unwrap_or(location))
        } else {
            (1, rest.split("::").next().unwrap_or(rest))
        };
        if !file.ends_with(".py") {
            continue;
        }
        files.entry(file.to_owned()).or_default()[index] += count;
    }
    files
}

/// The summary as a table, one line per file and a total.
pub(crate) fn render(files: &BTreeMap<String, [u64; 6]>) -> String {
    let width = files.keys().map(String::len).max().unwrap_or(4).max(5);
    let mut out = format!("{:<width$}", "file");
    for outcome in OUTCOMES {
        out.push_str(&format!(" {:>7}", outcome.to_lowercase()));
    }
    out.push('\n');
    let mut total = [0u64; 6];
    for (file, counts) in files {
        out.push_str(&format!("{file:<width$}"));
        for (i, n) in counts.iter().enumerate() {
            out.push_str(&format!(" {n:>7}"));
            total[i] += n;
        }
        out.push('\n');
    }
    out.push_str(&format!("{:<width$}", "total"));
    for n in total {
        out.push_str(&format!(" {n:>7}"));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_summary_counts_per_file() {
        let log = "\
tests/unit/test_a.py ....F                                   [ 50%]
=========================== short test summary info ============================
PASSED tests/unit/test_a.py::test_one[hlo]
PASSED tests/unit/test_a.py::test_two[hlo-float32]
FAILED tests/unit/test_a.py::test_three - AssertionError: Output output0: expected shape [], got (1,)
SKIPPED [4] tests/unit/test_b.py:1174: PyTorch not installed
SKIPPED [1] tests/unit/test_a.py:12: no
XFAIL tests/unit/test_b.py::test_f8[hlo-float8_e5m2] - backend support missing
XPASS tests/integration/test_c.py::test_x - Compiler does not support multiply
ERROR tests/integration/test_c.py::test_y - RuntimeError: boom
PASSED something else
6 failed, 796 passed, 27 skipped in 210.60s (0:03:30)
";
        let files = summarize(log);
        assert_eq!(files.len(), 3);
        assert_eq!(files["tests/unit/test_a.py"], [2, 1, 0, 1, 0, 0]);
        assert_eq!(files["tests/unit/test_b.py"], [0, 0, 0, 4, 1, 0]);
        assert_eq!(files["tests/integration/test_c.py"], [0, 0, 1, 0, 0, 1]);
        let table = render(&files);
        assert!(table.lines().last().is_some_and(|l| l.starts_with("total")), "{table}");
        let row: Vec<&str> = table
            .lines()
            .find(|line| line.starts_with("tests/unit/test_b.py"))
            .map(|line| line.split_whitespace().collect())
            .unwrap_or_default();
        assert_eq!(row, ["tests/unit/test_b.py", "0", "0", "0", "4", "1", "0"], "{table}");
        assert!(table.starts_with("file "), "{table}");
    }
}

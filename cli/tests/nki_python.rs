//! nrtsim's NKI frontend (`python/nki`) end to end: its Python tests run against this build's
//! `nrtsim` (`NRTSIM_TOOL`), one named trial per test file.
//!
//! - `test_trace.py`: what the frontend records for small kernels (access patterns, masks,
//!   instructions), expectations worked out by hand from the indexing;
//! - `test_run.py`: kernels run on the executor against NumPy, and the findings (unwritten
//!   output, strict mode, an access past a tensor as `IndexError`, SBUF over capacity);
//! - `test_properties.py`: every elementwise function and operator, and the free-axis
//!   reductions, on random tiles against NumPy's formulas;
//! - `test_graph.py`: a kernel inside a graph, the `AwsNeuronCustomNativeKernel` custom call a
//!   framework emits from the kernel's configuration, run by `nrtsim hlo run`.
//!
//! It needs a Python with numpy and ml_dtypes (`pyref`'s rule: `NRTSIM_PYTHON`, `target/pyenv`,
//! `python3`); without one the trials are ignored with the reason, and under CI they fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};

mod support;

/// The test files, each a unittest module in `python/nki/tests`.
const FILES: [&str; 4] = ["test_trace", "test_run", "test_graph", "test_properties"];

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/nki/tests")
}

fn run_module(python: &Path, module: &str) -> Result<(), Failed> {
    let output = Command::new(python)
        .current_dir(tests_dir())
        .env("NRTSIM_TOOL", support::nrtsim_exe())
        .env("NRTSIM_QUIET", "1")
        .env_remove("NRTSIM_NKI_STRICT")
        .args(["-m", "unittest", "-v", module])
        .output()
        .map_err(|e| format!("running {}: {e}", python.display()))?;
    let log = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("python -m unittest {module} failed:\n{log}").into());
    }
    // unittest's last lines: "Ran N tests in Ts" then "OK"; a file that ran nothing proves nothing.
    if !log.contains("\nOK") || log.contains("Ran 0 tests") {
        return Err(format!("python -m unittest {module} ran no test:\n{log}").into());
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let found = pyref::find_for("nki_python", &["numpy", "ml_dtypes"]);
    let ignored = pyref::ignored(&found);
    let trials = FILES
        .iter()
        .map(|module| {
            let found = found.clone();
            Trial::test(*module, move || match &found {
                Ok(python) => run_module(python, module),
                Err(reason) => Err(reason.clone().into()),
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

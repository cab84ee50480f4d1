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

use libtest_mimic::{Arguments, Failed};

mod support;

/// The test files, each a unittest module in `python/nki/tests`.
const FILES: [&str; 4] = ["test_trace", "test_run", "test_graph", "test_properties"];

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/nki/tests")
}

fn run_module(python: &Path, module: &str) -> Result<(), Failed> {
    let mut command = Command::new(python);
    command
        .current_dir(tests_dir())
        .env("NRTSIM_TOOL", support::nrtsim_exe())
        .env("NRTSIM_QUIET", "1")
        .env_remove("NRTSIM_NKI_STRICT");
    support::unittest_log(command, python, module).map_err(Failed::from)?;
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let trials = support::python_trials("nki_python", &["numpy", "ml_dtypes"], &FILES, run_module);
    libtest_mimic::run(&args, trials).exit();
}

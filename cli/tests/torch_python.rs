//! nrtsim's torch layer (`python/torch`, the `nrtsim-torch` package) end to end: its Python
//! tests run against this build's `nrtsim` (`NRTSIM_TOOL`) and `libnrt.so.1` (an SDK folder
//! staged here, `NRTSIM_SDK`), one named trial per test file.
//!
//! - `test_objects.py`: `torch.classes.neuron.Model`, `torch.ops.neuron.forward_v2` and the
//!   loading ops on models compiled from HLO text, results worked out by hand: validation
//!   messages with the input's name, bytes that do not load, the lifecycle methods, the
//!   setters' edit of the metaneff, donation, a scripted module saved and loaded in another
//!   process;
//! - `test_spmd.py`: `SPMDModel` with two ranks meeting in an all-reduce, weights per rank;
//! - `test_trace.py`: `nrtsim_torch.trace` against eager torch (an MLP, states, nested
//!   structures, bfloat16 weights, save and load in another process, refused arguments);
//! - `test_models.py`: a BERT-like encoder, a GPT-2-like decoder (`transformers` configurations,
//!   random weights), torchvision's resnet18 and an MLP with dynamic batching, each traced,
//!   saved, loaded in a fresh process and compared with eager torch.
//!
//! It needs a Python with torch, torch-xla, torchvision, transformers and ninja (`pyref`'s rule:
//! `NRTSIM_PYTHON`, `target/pyenv`, `python3`); without one the trials are ignored with the
//! reason, and under CI they fail. The C++ layer is built once into the target folder.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use libtest_mimic::{Arguments, Failed};

mod support;

/// The test files, each a unittest module in `python/torch/tests`.
const FILES: [&str; 4] = ["test_objects", "test_spmd", "test_trace", "test_models"];

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/torch/tests")
}

fn target_tmp() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// An SDK folder of this build: `include/nrtsim/bind.h` and `lib/libnrt.so.1`, at a fixed path
/// so that the C++ layer, which links it by path, is built once and reused.
fn sdk() -> Result<&'static Path, String> {
    static SDK: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    SDK.get_or_init(|| {
        let profile = Path::new(support::nrtsim_exe())
            .parent()
            .ok_or("nrtsim is in target/<profile>")?
            .to_owned();
        let library =
            conformance::backend::stage_capi_library(&profile).map_err(|e| e.to_string())?;
        let sdk = target_tmp().join("torch-sdk");
        let include = sdk.join("include/nrtsim");
        let lib = sdk.join("lib");
        for dir in [&include, &lib] {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        let header =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../sim/capi/include/nrtsim/bind.h");
        let copy = |from: &Path, to: &Path| {
            // Beside, then renamed: a process loading the library never sees half of it.
            let staged = to.with_extension(format!("{}.partial", std::process::id()));
            std::fs::copy(from, &staged)
                .and_then(|_| std::fs::rename(&staged, to))
                .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))
        };
        copy(&header, &include.join("bind.h"))?;
        copy(&library, &lib.join("libnrt.so.1"))?;
        Ok(sdk)
    })
    .as_deref()
    .map_err(Clone::clone)
}

fn run_module(python: &Path, module: &str) -> Result<(), Failed> {
    let sdk = sdk()?;
    let mut command = Command::new(python);
    command
        .current_dir(tests_dir())
        .env("NRTSIM_TOOL", support::nrtsim_exe())
        .env("NRTSIM_SDK", sdk)
        .env("NRTSIM_TORCH_BUILD_DIR", target_tmp().join("torch-extension"))
        .env("PYTHONPATH", Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/torch/src"))
        .env("PJRT_DEVICE", "CPU")
        .env("NRTSIM_QUIET", "1");
    let log = support::unittest_log(command, python, module).map_err(Failed::from)?;
    // The models' measured errors and times, for whoever runs with --nocapture.
    for line in log.lines().filter(|line| line.contains("max abs error")) {
        println!("{module}: {line}");
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let trials = support::python_trials(
        "torch_python",
        &["torch", "torch_xla", "torchvision", "transformers", "ninja"],
        &FILES,
        run_module,
    );
    libtest_mimic::run(&args, trials).exit();
}

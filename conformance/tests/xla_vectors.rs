//! XLA validity of every vector's device program: XLA on CPU (jax's jaxlib, the pinned Python of
//! `.ci/run`) parses each `model.hlo` with its own parser, compiles it, and runs it on the
//! arguments of every launch the simulator made while running the vector; its results must equal
//! the simulator's byte for byte (any NaN equals any NaN). One trial per vector.
//!
//! It needs a Python with jax, jaxlib, numpy and ml_dtypes: `NRTSIM_PYTHON`, else
//! `target/pyenv/bin/python` (what `.ci/run` makes), else `python3`. Without one every trial is
//! reported ignored with the reason; under CI (`CI` set) they fail instead.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use abi::runtime::Runtime;
use conformance::vector::{self, HLO_TEXT_FILE, Vector};
use hlo::proto::PrimitiveType;
use libtest_mimic::{Arguments, Failed, Trial};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn find_python() -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(path) = std::env::var_os("NRTSIM_PYTHON") {
        candidates.push(PathBuf::from(path));
    }
    candidates.push(workspace_root().join("target/pyenv/bin/python"));
    candidates.push(PathBuf::from("python3"));
    for python in &candidates {
        let ok = Command::new(python)
            .args(["-c", "import jax, jaxlib, numpy, ml_dtypes"])
            .output()
            .is_ok_and(|out| out.status.success());
        if ok {
            return Ok(python.clone());
        }
    }
    Err(format!(
        "no Python with jax, jaxlib, numpy and ml_dtypes (tried {}); run .ci/run or set \
         NRTSIM_PYTHON",
        candidates.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    ))
}

/// An HLO element type name and dimensions.
type Leaf = (String, Vec<i64>);

/// The HLO text type and dimensions of each entry parameter, and the number of result leaves.
fn leaves(text: &str) -> Result<(Vec<Leaf>, usize), String> {
    let bytes = text.as_bytes();
    let (params, results) =
        sim::device_program::entry_signature(bytes).map_err(|e| e.to_string())?;
    let named = params
        .iter()
        .map(|(dltype, dims)| (sim::hlo_text::type_name(*dltype).to_owned(), dims.clone()))
        .collect();
    Ok((named, results.len()))
}

fn is_float(ty: &str) -> Option<PrimitiveType> {
    match ty {
        "f32" => Some(PrimitiveType::F32),
        "f64" => Some(PrimitiveType::F64),
        "f16" => Some(PrimitiveType::F16),
        "bf16" => Some(PrimitiveType::Bf16),
        _ => None,
    }
}

/// Whether two results are equal, any NaN matching any NaN for the float types.
fn same(ty: Option<PrimitiveType>, ours: &[u8], xla: &[u8]) -> bool {
    if ours.len() != xla.len() {
        return false;
    }
    let nan = |chunk: &[u8]| match ty {
        Some(PrimitiveType::F32) => {
            f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]).is_nan()
        }
        Some(PrimitiveType::F64) => {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(chunk);
            f64::from_le_bytes(raw).is_nan()
        }
        Some(PrimitiveType::F16) => {
            let h = u16::from_le_bytes([chunk[0], chunk[1]]);
            h & 0x7c00 == 0x7c00 && h & 0x03ff != 0
        }
        Some(PrimitiveType::Bf16) => {
            let h = u16::from_le_bytes([chunk[0], chunk[1]]);
            h & 0x7f80 == 0x7f80 && h & 0x007f != 0
        }
        _ => false,
    };
    let size = match ty {
        Some(PrimitiveType::F32) => 4,
        Some(PrimitiveType::F64) => 8,
        Some(_) => 2,
        None => return ours == xla,
    };
    ours.chunks_exact(size).zip(xla.chunks_exact(size)).all(|(a, b)| a == b || (nan(a) && nan(b)))
}

/// Runs `vector` on a recording simulator, then its module and launches through XLA.
fn check(vector: &Vector, python: &Path) -> Result<(), Failed> {
    let text = std::fs::read_to_string(vector.dir.join(HLO_TEXT_FILE))
        .map_err(|e| format!("{HLO_TEXT_FILE}: {e}"))?;
    let config = conformance::backend::sim_config(&vector.case.sim)?;
    let sim = Arc::new(sim::SimRuntime::new(config).map_err(|e| e.to_string())?);
    sim.record_launches();
    let run = conformance::runner::run_on(vector, sim.clone() as Arc<dyn Runtime>);
    if let Some(failure) = run.failure {
        return Err(format!("the vector fails on the simulator: {failure}").into());
    }
    let launches = sim.launches();
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("xla-vectors")
        .join(vector.name.replace('/', "__"));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let hlo_path = scratch.join("model.hlo");
    std::fs::write(&hlo_path, &text).map_err(|e| e.to_string())?;
    let (params, n_results) = leaves(&text)?;
    let mut runs = Vec::new();
    let encoded = vector.read(vector::HLO_FILE).map_err(|e| e.to_string())?;
    for (index, launch) in launches.iter().enumerate() {
        if launch.hlo != text.as_bytes() && launch.hlo != encoded {
            return Err(format!("launch {index} ran another module than {HLO_TEXT_FILE}").into());
        }
        let mut args = Vec::new();
        for (i, ((ty, dims), data)) in params.iter().zip(&launch.args).enumerate() {
            let file = scratch.join(format!("launch{index}_arg{i}.bin"));
            std::fs::write(&file, data).map_err(|e| e.to_string())?;
            args.push(serde_json::json!({ "file": file, "type": ty, "shape": dims }));
        }
        let out = scratch.join(format!("launch{index}"));
        runs.push(serde_json::json!({ "args": args, "out": out }));
    }
    let jobs = serde_json::json!([{ "hlo": hlo_path, "runs": runs }]);
    let jobs_path = scratch.join("jobs.json");
    std::fs::write(&jobs_path, jobs.to_string()).map_err(|e| e.to_string())?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/run_vectors.py");
    let out =
        Command::new(python).arg(&script).arg(&jobs_path).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned().into());
    }
    let result_types: Vec<Option<PrimitiveType>> = {
        let (_, results) =
            sim::device_program::entry_signature(text.as_bytes()).map_err(|e| e.to_string())?;
        results.iter().map(|(dltype, _)| is_float(sim::hlo_text::type_name(*dltype))).collect()
    };
    for (index, launch) in launches.iter().enumerate() {
        for (j, ty) in result_types.iter().enumerate().take(n_results) {
            let path = scratch.join(format!("launch{index}/result_{j}.bin"));
            let xla = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if !same(*ty, &launch.results[j], &xla) {
                return Err(format!(
                    "launch {index}, result {j}: the simulator wrote {:02x?}, XLA computes {:02x?}",
                    launch.results[j], xla
                )
                .into());
            }
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let root = workspace_root().join("vectors");
    let vectors = vector::discover(&root).expect("the vectors parse");
    let required = std::env::var_os("CI").is_some();
    let python = find_python();
    if let Err(reason) = &python {
        eprintln!("xla_vectors: {reason}");
    }
    let mut trials = Vec::new();
    let mut with_hlo = 0;
    for vector in vectors {
        if !vector.dir.join(HLO_TEXT_FILE).is_file() {
            continue;
        }
        with_hlo += 1;
        let name = vector.name.clone();
        match &python {
            Ok(python) => {
                let python = python.clone();
                trials.push(Trial::test(name, move || check(&vector, &python)));
            }
            Err(reason) => {
                let reason = reason.clone();
                trials.push(
                    Trial::test(name, move || Err(reason.clone().into()))
                        .with_ignored_flag(!required),
                );
            }
        }
    }
    assert!(with_hlo >= 60, "only {with_hlo} vectors have a {HLO_TEXT_FILE}");
    libtest_mimic::run(&args, trials).exit();
}

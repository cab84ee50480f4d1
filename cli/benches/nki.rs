//! NKI kernels on nrtsim's NKI against NumPy computing the same result, in the same run
//! (`python/nki/bench.py`): per kernel the whole call's time (trace, executor, results back),
//! NumPy's, and the executor's instructions per second; `NRTSIM_NKI_SAMPLES=DIR` (a clone of
//! nki-samples at 8370e11) adds its flash-attention forward at the simulation test size. One
//! `NRTSIM-BENCH {json}` line per kernel for `cargo xtask bench` (group `nki`, peer `numpy`).
//!
//! It needs a Python with numpy and ml_dtypes, found by `pyref`; without one it says so and
//! measures nothing.

use std::path::Path;
use std::process::Command;

fn main() {
    // `cargo test --benches` runs this without `--bench`: it runs only under `cargo bench`.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("nki: benchmarks run only under `cargo bench`");
        return;
    }
    let python = match pyref::find(&["numpy", "ml_dtypes"]) {
        Ok(python) => python,
        Err(reason) => {
            println!("nki: {reason}; nothing measured");
            return;
        }
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/nki/bench.py");
    let mut command = Command::new(&python);
    command.arg(&script).env("NRTSIM_TOOL", env!("CARGO_BIN_EXE_nrtsim"));
    if let Some(samples) = std::env::var_os("NRTSIM_NKI_SAMPLES") {
        command.arg("--samples").arg(samples);
    }
    let out = command.output().expect("run python/nki/bench.py");
    assert!(out.status.success(), "bench.py: {}", String::from_utf8_lossy(&out.stderr));
    println!("{:<48} {:>10} {:>10} {:>9} {:>12}", "kernel", "ours", "numpy", "numpy÷us", "instr/s");
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let row: serde_json::Value =
            serde_json::from_str(line).expect("bench.py prints JSON lines");
        let kernel = row["kernel"].as_str().unwrap_or("?");
        let ours = row["ours_s"].as_f64().unwrap_or(f64::NAN);
        let numpy = row["numpy_s"].as_f64().unwrap_or(f64::NAN);
        let instructions = row["instructions"].as_f64().unwrap_or(f64::NAN);
        println!(
            "{kernel:<48} {:>8.2}ms {:>8.2}ms {:>9.3} {:>12.0}",
            ours * 1e3,
            numpy * 1e3,
            numpy / ours,
            instructions / ours
        );
        let record = serde_json::json!({
            "group": "nki",
            "figure": kernel,
            "ours_s": ours,
            "peer": "numpy",
            "peer_s": numpy,
            "detail": format!("{instructions} instructions, {:.0} per second", instructions / ours),
        });
        println!("NRTSIM-BENCH {record}");
    }
}

//! The interpreter against XLA on CPU, on the same modules, as ratios measured in one run.
//!
//! `tests/xla/bench_xla.py` lowers the benchmark graphs (f32 dot 512×512×512, and a 3×3 convolution
//! of f32[1,64,56,56] with 64 output features and padding 1), writes the modules it compiled, and
//! times XLA on them (best of N after warm-up), once before and once after ours. This bench loads
//! those very modules, compiles each once with `eval::Program::compile`, times `run` the same
//! way, and prints GFLOP/s for both and `ours/xla`, and per graph one `NRTSIM-BENCH {json}` line
//! (seconds per run, XLA the peer) for `cargo xtask bench`. The interpreter bench (`benches/interpreter.rs`) gives the ratio to naive loops in the
//! same `cargo bench` run.
//!
//! It needs a Python with jax, found by `pyref` (what `.ci/run` installs); without one it
//! says so and measures nothing, since there is no baseline to divide by.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hlo::eval::{Array, EvalOptions, Program};
use hlo::proto::PrimitiveType;
use serde_json::Value as Json;

const ITERS: usize = 10;
const WARMUP: usize = 2;

/// Deterministic f32 inputs for an entry parameter of the given dims (the values do not matter
/// for speed, but zeros or denormals could).
fn input(dims: &[i64], seed: u32) -> Array {
    let n: i64 = dims.iter().product();
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (f64::from(state) / f64::from(u32::MAX) * 2.0 - 1.0) as f32
    };
    let bytes = (0..n).flat_map(|_| next().to_le_bytes()).collect();
    Array { ty: PrimitiveType::F32, dims: dims.to_vec(), bytes }
}

fn best_of(mut run: impl FnMut()) -> Duration {
    for _ in 0..WARMUP {
        run();
    }
    (0..ITERS)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .expect("ITERS > 0")
}

fn main() {
    let python = match pyref::find(&["jax"]) {
        Ok(python) => python,
        Err(reason) => {
            println!("vs_xla: {reason}; nothing measured");
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("nrtsim-bench-xla-{}", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/bench_xla.py");
    // XLA is timed before and after ours and the better time kept, so a burst of load from the
    // rest of a shared machine during one of them does not decide the ratio.
    let time_xla = || -> Vec<Json> {
        let out = Command::new(&python)
            .arg(&script)
            .args(["--iters", &ITERS.to_string(), "--warmup", &WARMUP.to_string(), "--export"])
            .arg(&dir)
            .output()
            .expect("run bench_xla.py");
        assert!(out.status.success(), "bench_xla.py: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).expect("bench_xla.py prints JSON lines"))
            .collect()
    };
    let before = time_xla();
    // Each graph: (name, in dims per parameter).
    let graphs: [(&str, &[&[i64]]); 2] = [
        ("dot_f32_512", &[&[512, 512], &[512, 512]]),
        ("conv3x3_f32_1x64x56x56", &[&[1, 64, 56, 56], &[64, 64, 3, 3]]),
    ];
    let mut ours_seconds = Vec::new();
    for (name, params) in graphs {
        let bytes = std::fs::read(dir.join(format!("{name}.pb"))).expect("exported module");
        let module = hlo::load_module(&bytes).expect("our loader reads XLA's module");
        let program = Program::compile(&module, &EvalOptions::default()).expect("compile");
        let args: Vec<Array> =
            params.iter().enumerate().map(|(i, dims)| input(dims, i as u32)).collect();
        let ours = best_of(|| {
            std::hint::black_box(program.run(&args).expect("run"));
        });
        ours_seconds.push((name, ours.as_secs_f64()));
    }
    let after = time_xla();
    let _ = std::fs::remove_dir_all(&dir);
    for (name, ours) in ours_seconds {
        let record = |runs: &[Json]| -> (f64, f64) {
            let r = runs.iter().find(|r| r["graph"] == name).expect("bench_xla.py timed the graph");
            (r["flops"].as_f64().expect("flops"), r["seconds"].as_f64().expect("seconds"))
        };
        let (flops, xla_before) = record(&before);
        let xla_seconds = xla_before.min(record(&after).1);
        // The same line shape as the interpreter bench: `GRAPH ours=… xla=… ratio=ours/xla gflops`.
        let (ours_gflops, xla_gflops) = (flops / ours / 1e9, flops / xla_seconds / 1e9);
        println!(
            "{name} ours={ours_gflops:.2} xla={xla_gflops:.2} ratio={:.3} gflops",
            ours_gflops / xla_gflops
        );
        let record = serde_json::json!({
            "group": "kernels", "figure": name, "ours_s": ours, "peer": "xla",
            "peer_s": xla_seconds, "detail": "",
        });
        println!("NRTSIM-BENCH {record}");
    }
}

//! Dot and convolution in f32, bf16 and f16, per gemm kernel this CPU runs, against XLA on CPU
//! in the same run.
//!
//! `tests/xla/bench_gemm.py` lowers the graphs (dots of 512×512×512 and 128×4096×4096, a 3×3
//! convolution of [1,64,56,56] by [64,64,3,3]), writes the modules it compiled, and times XLA on
//! them before and after ours (the better time is kept). For each kernel the CPU runs
//! (`avx512`, `avx2`; `hlo::eval::gemm_kernel` names them) this bench runs itself again with
//! `NRTSIM_GEMM` set to that kernel, which times `Program::run` on the very same modules (best of
//! N after warm-up). It prints `GRAPH kernel=K ours=… xla=… ratio=ours/xla gflops` and one
//! `NRTSIM-BENCH` JSON line per graph and kernel (`ratio` there is XLA's time over ours).
//!
//! `NRTSIM_BENCH_FILTER` keeps the graphs whose name contains it. It needs a Python with jax,
//! found by `pyref`; without one it says so and measures nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hlo::dtype::SmallFloat;
use hlo::eval::{Array, EvalOptions, Program};
use hlo::proto::PrimitiveType;
use serde_json::Value as Json;

const ITERS: usize = 8;
const WARMUP: usize = 2;
/// The kernels compared, where the CPU runs them (`portable` is matrixmultiply, measured by the
/// interpreter bench).
const KERNELS: [&str; 2] = ["avx512", "avx2"];

/// Deterministic inputs in `ty` for an entry parameter of the given dims (the values do not
/// matter for speed, but zeros or denormals could).
fn input(ty: PrimitiveType, dims: &[i64], seed: u32) -> Array {
    let n: i64 = dims.iter().product();
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (f64::from(state) / f64::from(u32::MAX) * 2.0 - 1.0) as f32
    };
    let bytes = (0..n)
        .flat_map(|_| {
            let x = next();
            match ty {
                PrimitiveType::Bf16 => {
                    (SmallFloat::Bf16.encode_f32(x) as u16).to_le_bytes().to_vec()
                }
                PrimitiveType::F16 => (SmallFloat::F16.encode_f32(x) as u16).to_le_bytes().to_vec(),
                _ => x.to_le_bytes().to_vec(),
            }
        })
        .collect();
    Array { ty, dims: dims.to_vec(), bytes }
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

/// The graphs: (name, element type, dims per parameter), as `bench_gemm.py` names them.
fn graphs() -> Vec<(String, PrimitiveType, Vec<Vec<i64>>)> {
    let filter = std::env::var("NRTSIM_BENCH_FILTER").unwrap_or_default();
    let types =
        [("f32", PrimitiveType::F32), ("bf16", PrimitiveType::Bf16), ("f16", PrimitiveType::F16)];
    let mut out = Vec::new();
    for (name, ty) in types {
        out.push((format!("dot_{name}_512"), ty, vec![vec![512, 512], vec![512, 512]]));
        out.push((
            format!("dot_{name}_128x4096x4096"),
            ty,
            vec![vec![128, 4096], vec![4096, 4096]],
        ));
    }
    for (name, ty) in &types[..2] {
        out.push((
            format!("conv3x3_{name}_1x64x56x56"),
            *ty,
            vec![vec![1, 64, 56, 56], vec![64, 64, 3, 3]],
        ));
    }
    out.retain(|(name, _, _)| name.contains(&filter));
    out
}

/// In the child: times each graph's module in `dir` and prints `name seconds` lines.
fn child(dir: &Path) {
    for (name, ty, params) in graphs() {
        let bytes = std::fs::read(dir.join(format!("{name}.pb"))).expect("exported module");
        let module = hlo::load_module(&bytes).expect("our loader reads XLA's module");
        let program = Program::compile(&module, &EvalOptions::default()).expect("compile");
        let args: Vec<Array> =
            params.iter().enumerate().map(|(i, dims)| input(ty, dims, i as u32)).collect();
        let ours = best_of(|| {
            std::hint::black_box(program.run(&args).expect("run"));
        });
        println!("{name} {} {}", hlo::eval::gemm_kernel(), ours.as_secs_f64());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--child") {
        child(Path::new(&args[at + 1]));
        return;
    }
    let python = match pyref::find(&["jax"]) {
        Ok(python) => python,
        Err(reason) => {
            println!("gemm: {reason}; nothing measured");
            return;
        }
    };
    let names: Vec<String> = graphs().into_iter().map(|(name, _, _)| name).collect();
    if names.is_empty() {
        println!("gemm: no graph matches NRTSIM_BENCH_FILTER");
        return;
    }
    let dir: PathBuf =
        std::env::temp_dir().join(format!("nrtsim-bench-gemm-{}", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/bench_gemm.py");
    let time_xla = || -> Vec<Json> {
        let out = Command::new(&python)
            .arg(&script)
            .args(["--iters", &ITERS.to_string(), "--warmup", &WARMUP.to_string(), "--export"])
            .arg(&dir)
            .args(&names)
            .output()
            .expect("run bench_gemm.py");
        assert!(out.status.success(), "bench_gemm.py: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|line| serde_json::from_str(line).expect("bench_gemm.py prints JSON lines"))
            .collect()
    };
    let before = time_xla();
    let me = std::env::current_exe().expect("the bench's own path");
    // (graph, kernel that ran, seconds)
    let mut ours: Vec<(String, String, f64)> = Vec::new();
    for kernel in KERNELS {
        let out = Command::new(&me)
            .args(["--child"])
            .arg(&dir)
            .env("NRTSIM_GEMM", kernel)
            .output()
            .expect("run the bench's child");
        assert!(out.status.success(), "child: {}", String::from_utf8_lossy(&out.stderr));
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut words = line.split(' ');
            let (Some(name), Some(ran), Some(seconds)) = (words.next(), words.next(), words.next())
            else {
                continue;
            };
            // A kernel the CPU does not run falls back to the best it does: measured once.
            if ran != kernel {
                continue;
            }
            ours.push((name.into(), ran.into(), seconds.parse().expect("seconds")));
        }
    }
    let after = time_xla();
    let _ = std::fs::remove_dir_all(&dir);
    for (name, kernel, ours) in ours {
        let record = |runs: &[Json]| -> (f64, f64) {
            let r = runs.iter().find(|r| r["graph"] == name.as_str()).expect("XLA timed the graph");
            (r["flops"].as_f64().expect("flops"), r["seconds"].as_f64().expect("seconds"))
        };
        let (flops, xla_before) = record(&before);
        let xla = xla_before.min(record(&after).1);
        let (ours_gflops, xla_gflops) = (flops / ours / 1e9, flops / xla / 1e9);
        println!(
            "{name} kernel={kernel} ours={ours_gflops:.2} xla={xla_gflops:.2} ratio={:.3} gflops",
            ours_gflops / xla_gflops
        );
        let figure = serde_json::json!({
            "group": "gemm",
            "figure": format!("{name} {kernel}"),
            "ours_s": ours,
            "peer": "xla",
            "peer_s": xla,
            "detail": format!("gemm={kernel}"),
        });
        println!("NRTSIM-BENCH {figure}");
    }
}

//! Whole models against XLA on CPU: the same modules, the same inputs, timed in one run.
//!
//! `tests/xla/bench_models.py` builds the benchmark set with jax (the six models of the headline
//! figure: a transformer encoder in f32 and in bf16, a ResNet-style CNN, an MLP, a decoder layer
//! updating its KV cache, a 2-rank all-reduce; then argmax/argmin, sort + top-k, and a group of
//! small graphs), writes each module XLA compiled with its inputs and XLA's outputs, and times
//! XLA on it. This bench loads each module, compiles it once with `eval::Program::compile`, times
//! `Program::run` (the SPMD model: `Program::run_spmd` over 2 ranks) by the script's rule (best
//! of at least `ITERS` runs after `WARMUP`, more for fast graphs), and **checks every output against XLA's**: a wrong answer fails the
//! bench, since a fast wrong answer is no result. Each side is timed in two sessions, taken in
//! turn (XLA, ours, XLA, ours), and keeps its better one, so a burst of load from the rest of a
//! shared machine, or a slow spell of a virtual machine, does not decide a ratio.
//!
//! It prints a table (model, ours, XLA, XLA ÷ ours) with the geometric mean of the six models and
//! the worst of them, and one `NRTSIM-BENCH {json}` line per figure for `cargo xtask bench`.
//! `NRTSIM_BENCH_FILTER=substring` runs only the benchmarks whose names or groups contain it
//! (`models` runs the six headline models).
//!
//! On a CPU with AVX-512 the set then runs again as an AVX2-only CPU would run it, both sides:
//! the bench runs itself with `NRTSIM_SIMD=avx2` (every kernel of ours, the GEMM included,
//! compiled for AVX2), and XLA with `--xla_cpu_max_isa=AVX2`; those figures' groups are named
//! with `(avx2)`. `NRTSIM_SIMD` set by hand runs that pass alone (set to the CPU's own level,
//! `avx512`, it runs the quiet pass alone, XLA uncapped). XLA's flag caps only the code
//! XLA compiles, not the libraries its dots call, which choose their instructions by the CPU: on
//! a 2-core Xeon VM with AVX-512 (jax 0.10.2), XLA's one-core 1024³ f32 dot ran YNNPACK's
//! AVX-512 kernel under that cap, and oneDNN's (194 GF/s) with YNNPACK's and XNNPACK's fusions
//! off, about twice what AVX2's two 8-lane FMA units can do at that clock. So the pass also turns
//! those two fusions off (XLA's dots then go to oneDNN) and caps oneDNN with
//! `ONEDNN_MAX_CPU_ISA=AVX2`: the same dot then ran at 102 GF/s, AVX2's peak. On that VM oneDNN
//! was the faster of the two libraries uncapped (194 against YNNPACK's 143-153 GF/s), so turning
//! YNNPACK off does not slow XLA's side.
//!
//! Then the headline models run again with one core taken: the bench runs itself with
//! `NRTSIM_BENCH_BUSY=1`, which starts a thread that spins for the whole run, so ours and XLA
//! each share the machine with it, and both sides report the median run instead of the best (a
//! best-of would hide what the scheduler's bad luck costs). Those figures' group is
//! `models (busy)`; divided by the quiet figures they say how each side degrades.
//!
//! It needs a Python with jax and ml_dtypes, found by `pyref`; without one it says so and
//! measures nothing, since there is no baseline to divide by.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hlo::eval::{self, Array, EvalOptions, Program, Value};
use hlo::proto::PrimitiveType;
use serde_json::{Value as Json, json};

/// At least this many timed runs, after `WARMUP` untimed ones.
const ITERS: usize = 5;
const WARMUP: usize = 2;
/// Fast graphs run until this much time is spent (at most `MAX_ITERS` runs), as the script does.
const MIN_SECONDS: f64 = 0.2;
const MAX_ITERS: usize = 1000;
/// A graph whose warm-up runs take longer than this each is timed twice, not `ITERS` times.
const SLOW_SECONDS: f64 = 0.5;

/// The group whose geometric mean is the headline figure.
const MODELS_GROUP: &str = "models";

/// Whether this run shares the machine with a spinning thread (`NRTSIM_BENCH_BUSY=1`).
fn busy() -> bool {
    std::env::var("NRTSIM_BENCH_BUSY").is_ok_and(|v| v == "1")
}

/// The time of `run`: the best of the timed runs, or on a busy machine their median.
fn best_of(mut run: impl FnMut()) -> Duration {
    let mut timed = || {
        let start = Instant::now();
        run();
        start.elapsed()
    };
    let warmup: Duration = (0..WARMUP).map(|_| timed()).sum();
    // A graph that takes seconds (the general interpreter on a large reduce) gets two timed runs,
    // so the whole set stays a few minutes; its ratio is far from 1 either way.
    let slow = warmup.as_secs_f64() / WARMUP as f64 > SLOW_SECONDS;
    let min_runs = if slow { 2 } else { ITERS };
    let (mut times, mut spent) = (Vec::new(), Duration::ZERO);
    while times.len() < min_runs || (spent.as_secs_f64() < MIN_SECONDS && times.len() < MAX_ITERS) {
        let elapsed = timed();
        times.push(elapsed);
        spent += elapsed;
    }
    times.sort();
    if busy() { times[times.len() / 2] } else { times[0] }
}

// ---------------------------------------------------------------------------------------------
// The exported files.

/// An XLA dtype name: our type and its item size in bytes.
fn dtype(name: &str) -> Result<(PrimitiveType, usize), String> {
    Ok(match name {
        "pred" => (PrimitiveType::Pred, 1),
        "s32" => (PrimitiveType::S32, 4),
        "s64" => (PrimitiveType::S64, 8),
        "u32" => (PrimitiveType::U32, 4),
        "f16" => (PrimitiveType::F16, 2),
        "bf16" => (PrimitiveType::Bf16, 2),
        "f32" => (PrimitiveType::F32, 4),
        _ => return Err(format!("case.json: unknown dtype {name:?}")),
    })
}

/// An npy file numpy wrote for a C-order little-endian array, read as `desc` (case.json's dtype
/// and shape) says.
fn read_npy(path: &Path, desc: &Json) -> Result<Array, String> {
    let (ty, size) = dtype(desc["dtype"].as_str().ok_or("case.json: dtype is not a string")?)?;
    let dims: Vec<i64> = desc["shape"]
        .as_array()
        .ok_or("case.json: shape is not a list")?
        .iter()
        .map(|d| d.as_i64().ok_or("case.json: dimension is not an integer"))
        .collect::<Result<_, _>>()?;
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let fail = |what: &str| format!("{}: {what}", path.display());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(fail("not an npy file"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => {
            (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
        }
        _ => return Err(fail("unknown npy version")),
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| fail("truncated header"))?;
    if header.contains("'fortran_order': True") || header.contains("'descr': '>") {
        return Err(fail("not C-order little-endian data"));
    }
    let data = &bytes[start + header_len..];
    let n_elems: i64 = dims.iter().product();
    if data.len() as i64 != n_elems * size as i64 {
        return Err(fail(&format!("{} data bytes for {n_elems} elements of {size}", data.len())));
    }
    Ok(Array { ty, dims, bytes: data.to_vec() })
}

/// One exported benchmark.
struct Case {
    name: String,
    group: String,
    dir: PathBuf,
    meta: Json,
}

impl Case {
    fn read(root: &Path, name: &str) -> Result<Case, String> {
        let dir = root.join(name);
        let text = std::fs::read(dir.join("case.json")).map_err(|e| format!("case.json: {e}"))?;
        let meta: Json = serde_json::from_slice(&text).map_err(|e| format!("case.json: {e}"))?;
        let group = meta["group"].as_str().ok_or("case.json: no group")?.to_owned();
        Ok(Case { name: name.to_owned(), group, dir, meta })
    }

    fn ranks(&self) -> usize {
        self.meta["ranks"].as_u64().unwrap_or(1) as usize
    }

    /// The arguments of each rank (one rank unless the case is SPMD).
    fn args_per_rank(&self) -> Result<Vec<Vec<Array>>, String> {
        let read_all = |descs: &Json, prefix: &str| -> Result<Vec<Array>, String> {
            let descs = descs.as_array().ok_or("case.json: inputs are not a list")?;
            let path = |i| self.dir.join(format!("{prefix}input_{i}.npy"));
            descs.iter().enumerate().map(|(i, desc)| read_npy(&path(i), desc)).collect()
        };
        if self.ranks() == 1 {
            return Ok(vec![read_all(&self.meta["inputs"], "")?]);
        }
        let per_rank = self.meta["rank_inputs"].as_array().ok_or("case.json: no rank_inputs")?;
        per_rank
            .iter()
            .enumerate()
            .map(|(r, descs)| read_all(descs, &format!("rank{r}_")))
            .collect()
    }

    fn xla_outputs(&self) -> Result<Vec<Array>, String> {
        let descs = self.meta["outputs"].as_array().ok_or("case.json: no outputs")?;
        let path = |i| self.dir.join(format!("output_{i}.npy"));
        descs.iter().enumerate().map(|(i, desc)| read_npy(&path(i), desc)).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Checking our outputs against XLA's.

/// The largest difference allowed, as a fraction of the largest magnitude in XLA's output (at
/// least 1). Models sum hundreds of products and XLA reassociates, vectorises and, in bf16, keeps
/// excess precision where the HLO rounds, so per-element ulps are not the measure here (the
/// cross-check test pins the rounding on small graphs); these bounds catch a wrong answer, which
/// is off by the output's own scale.
fn tolerance(ty: PrimitiveType) -> Option<f64> {
    match ty {
        PrimitiveType::F32 | PrimitiveType::F64 => Some(2e-4),
        PrimitiveType::Bf16 => Some(6e-2),
        PrimitiveType::F16 => Some(1e-2),
        // Integers, pred (argmax indices, top-k indices): exact.
        _ => None,
    }
}

fn check_output(i: usize, ours: &Array, xla: &Array) -> Result<(), String> {
    if ours.ty != xla.ty || ours.dims != xla.dims {
        return Err(format!(
            "output {i}: ours is {:?}{:?}, XLA's {:?}{:?}",
            ours.ty, ours.dims, xla.ty, xla.dims
        ));
    }
    let Some(tol) = tolerance(xla.ty) else {
        let same = ours.bytes == xla.bytes;
        return if same { Ok(()) } else { Err(format!("output {i}: differs (must be exact)")) };
    };
    let (ours_v, xla_v) =
        (ours.to_f64().map_err(|e| e.to_string())?, xla.to_f64().map_err(|e| e.to_string())?);
    let scale = xla_v.iter().filter(|v| v.is_finite()).fold(1f64, |m, v| m.max(v.abs()));
    let mut worst = (0.0f64, 0usize);
    for (j, (&a, &b)) in ours_v.iter().zip(&xla_v).enumerate() {
        let diff = if a.is_nan() && b.is_nan() || a == b {
            0.0
        } else if a.is_finite() && b.is_finite() {
            (a - b).abs() / scale
        } else {
            f64::INFINITY
        };
        if diff > worst.0 {
            worst = (diff, j);
        }
    }
    if worst.0 > tol {
        let j = worst.1;
        return Err(format!(
            "output {i} ({:?}{:?}): element {j} is {} where XLA has {} (difference {:.2e} of the \
             scale {scale:.3}, allowed {tol:.0e})",
            xla.ty, xla.dims, ours_v[j], xla_v[j], worst.0
        ));
    }
    Ok(())
}

fn check_value(value: &Value, xla: &[Array]) -> Result<(), String> {
    let ours = value.flatten();
    if ours.len() != xla.len() {
        return Err(format!("{} outputs, XLA gave {}", ours.len(), xla.len()));
    }
    ours.iter().zip(xla).enumerate().try_for_each(|(i, (o, x))| check_output(i, o, x))
}

/// Loads, compiles, checks and times one case: our best time in seconds.
fn measure(case: &Case) -> Result<f64, String> {
    let bytes = std::fs::read(case.dir.join("module.hlo.pb")).map_err(|e| e.to_string())?;
    let module = hlo::load_module(&bytes).map_err(|e| format!("load_module: {e}"))?;
    let options = EvalOptions::default();
    let args = case.args_per_rank()?;
    let xla = case.xla_outputs()?;
    if case.ranks() == 1 {
        let program = Program::compile(&module, &options).map_err(|e| format!("compile: {e}"))?;
        let value = program.run(&args[0]).map_err(|e| format!("run: {e}"))?;
        check_value(&value, &xla)?;
        let time = best_of(|| {
            std::hint::black_box(program.run(&args[0]).expect("ran once already"));
        });
        return Ok(time.as_secs_f64());
    }
    let program = Program::compile(&module, &options).map_err(|e| format!("compile: {e}"))?;
    let values = program.run_spmd(&args).map_err(|e| format!("run: {e}"))?;
    for (rank, value) in values.iter().enumerate() {
        check_value(value, &xla).map_err(|e| format!("rank {rank}: {e}"))?;
    }
    let time = best_of(|| {
        std::hint::black_box(program.run_spmd(&args).expect("ran once already"));
    });
    Ok(time.as_secs_f64())
}

// ---------------------------------------------------------------------------------------------

fn run_script(python: &Path, dir: &Path, only: &[String], export: bool) -> Vec<Json> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/bench_models.py");
    let mut command = Command::new(python);
    command.arg(&script).arg(dir).args(["--iters", &ITERS.to_string()]);
    command.args(["--warmup", &WARMUP.to_string()]);
    if !export {
        command.arg("--no-export");
    }
    if busy() {
        command.arg("--median");
    }
    command.arg("--only").args(only);
    if let Some(isa) = capped_isa() {
        let flags = std::env::var("XLA_FLAGS").unwrap_or_default();
        // YNNPACK and XNNPACK pick their kernels by the CPU alone, so their fusions are turned
        // off and XLA's dots go to oneDNN, which takes its cap from the environment.
        command.env(
            "XLA_FLAGS",
            format!(
                "{flags} --xla_cpu_max_isa={} --xla_cpu_experimental_ynn_fusion_type= \
                 --xla_cpu_experimental_xnn_fusion_type=",
                isa.to_uppercase()
            ),
        );
        // oneDNN's lowest level is SSE4.1.
        let onednn = if isa == "scalar" { "SSE41".to_owned() } else { isa.to_uppercase() };
        command.env("ONEDNN_MAX_CPU_ISA", onednn);
    }
    let out = command.output().expect("run bench_models.py");
    assert!(out.status.success(), "bench_models.py: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).expect("bench_models.py prints JSON lines"))
        .collect()
}

/// The vector level this run is capped to (`NRTSIM_SIMD`, when it took effect and is below what
/// the CPU has), which XLA is capped to as well. `NRTSIM_SIMD` naming the CPU's own level caps
/// nothing, so XLA runs as it would by default.
fn capped_isa() -> Option<&'static str> {
    let level = eval::simd_level();
    let below_the_cpu = match level {
        "scalar" => true,
        "avx2" => cpu_has_avx512(),
        _ => false,
    };
    (below_the_cpu && std::env::var("NRTSIM_SIMD").ok().as_deref() == Some(level)).then_some(level)
}

fn cpu_has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

fn xla_seconds(runs: &[Json], name: &str) -> f64 {
    runs.iter()
        .find(|r| r["model"] == name)
        .and_then(|r| r["seconds"].as_f64())
        .expect("bench_models.py timed every case it exported")
}

fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.into_iter().fold((0.0, 0), |(s, n), v: f64| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / f64::from(n)).exp())
}

fn main() {
    // `cargo test --benches` (or `--all-targets`) runs this without `--bench`: the set takes
    // minutes, so it runs only under `cargo bench`.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("models: benchmarks run only under `cargo bench`");
        return;
    }
    let python = match pyref::find(&["jax", "ml_dtypes"]) {
        Ok(python) => python,
        Err(reason) => {
            println!("models: {reason}; nothing measured");
            return;
        }
    };
    let filter = std::env::var("NRTSIM_BENCH_FILTER").unwrap_or_default();
    let dir = std::env::temp_dir().join(format!("nrtsim-bench-models-{}", std::process::id()));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla/bench_models.py");
    let listed = Command::new(&python).arg(&script).arg(&dir).arg("--list").output();
    let listed = listed.expect("run bench_models.py --list");
    assert!(listed.status.success(), "bench_models.py --list failed");
    // One `name<TAB>group` line per benchmark; on a busy run only the headline group's.
    let names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .filter(|(name, group)| name.contains(filter.as_str()) || group.contains(filter.as_str()))
        .filter(|(_, group)| !busy() || *group == MODELS_GROUP)
        .map(|(name, _)| name.to_owned())
        .collect();
    if names.is_empty() {
        println!("models: no benchmark matches NRTSIM_BENCH_FILTER={filter:?}");
        return;
    }
    if busy() {
        // One core taken for the whole run, ours and XLA's alike; it ends with the process.
        std::thread::spawn(|| {
            let mut n = 0u64;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        });
    }

    let before = run_script(&python, &dir, &names, true);
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for name in &names {
        let case = Case::read(&dir, name).expect("bench_models.py exported the case");
        match measure(&case) {
            Ok(ours) => results.push((case, ours)),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    let after = run_script(&python, &dir, &names, false);
    // Ours a second time, after XLA's second session, each side keeping its better one: with
    // XLA alone timed twice, a slow spell of the machine during our one session decided the
    // ratio (a transformer's 7.78 ms in one run was 9.01 ms in the next, XLA's 7.57 and 7.64).
    for (case, ours) in &mut results {
        match measure(case) {
            Ok(again) => *ours = ours.min(again),
            Err(e) => failures.push(format!("{} (second session): {e}", case.name)),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let capped = capped_isa();
    let load = if busy() { " (busy)" } else { "" };
    let group_of = |case: &Case| match capped {
        Some(level) => format!("{} ({level}){load}", case.group),
        None => format!("{}{load}", case.group),
    };
    match capped {
        Some(level) => println!("as a CPU with {level} at most runs them, XLA capped alike:"),
        None => println!("vector level {}:", eval::simd_level()),
    }
    println!("{:<24} {:>10} {:>10} {:>9}", "model", "ours ms", "XLA ms", "XLA÷ours");
    let mut ratios = Vec::new();
    for (case, ours) in &results {
        let xla = xla_seconds(&before, &case.name).min(xla_seconds(&after, &case.name));
        let ratio = xla / ours;
        println!("{:<24} {:>10.3} {:>10.3} {ratio:>9.2}", case.name, ours * 1e3, xla * 1e3);
        ratios.push((group_of(case), case.name.as_str(), ratio));
        let record = json!({
            "group": group_of(case), "figure": case.name, "ours_s": ours, "peer": "xla",
            "peer_s": xla,
            "detail": format!("gemm={} simd={}", eval::gemm_kernel(), eval::simd_level()),
        });
        println!("NRTSIM-BENCH {record}");
    }
    let groups: std::collections::BTreeSet<&str> = ratios.iter().map(|r| r.0.as_str()).collect();
    for group in groups {
        let of_group = || ratios.iter().filter(move |r| r.0 == group);
        let mean = geomean(of_group().map(|r| r.2)).expect("the group has a figure");
        let worst = of_group().min_by(|a, b| a.2.total_cmp(&b.2)).expect("the group has a figure");
        let headline = if group.split(' ').next() == Some(MODELS_GROUP) {
            " (the headline figure)"
        } else {
            ""
        };
        println!(
            "{group}{headline}: geometric mean XLA÷ours {mean:.2}, worst {} {:.2}",
            worst.1, worst.2
        );
    }
    if !failures.is_empty() {
        for failure in &failures {
            eprintln!("models: {failure}");
        }
        eprintln!(
            "models: {} of {} benchmarks gave no valid result (wrong answers are not timed)",
            failures.len(),
            names.len()
        );
        std::process::exit(1);
    }
    // The headline models with one core taken (see the module documentation).
    if !busy() && std::env::var_os("NRTSIM_SIMD").is_none() {
        println!();
        println!("with one core taken by a spinning thread, ours and XLA's alike (medians):");
        run_again("NRTSIM_BENCH_BUSY", "1");
    }
    if busy() {
        return;
    }
    // The same set as an AVX2-only CPU runs it (see the module documentation).
    if eval::simd_level() == "avx512" && std::env::var_os("NRTSIM_SIMD").is_none() {
        println!();
        run_again("NRTSIM_SIMD", "avx2");
    }
}

/// Runs this bench again with `variable=value` and the same arguments; exits as it did when it
/// failed.
fn run_again(variable: &str, value: &str) {
    let me = std::env::current_exe().expect("the bench's own path");
    let status = Command::new(me)
        .args(std::env::args().skip(1))
        .env(variable, value)
        .status()
        .expect("run the bench again");
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
}

//! `cargo bench -p nrtsim-hlo`: the interpreter's dot and convolution against naive loops in the
//! same run, and peak RSS for a graph with 1 GiB of intermediates.
//!
//! Output lines are stable and parseable, one measurement each:
//! `dot_f32_512 ours=<GFLOP/s> naive=<GFLOP/s> ratio=<ours/naive> gflops`, and for each of dot and
//! convolution one `NRTSIM-BENCH {json}` line (seconds per run, the naive loop the peer) for
//! `cargo xtask bench`.

use std::time::{Duration, Instant};

use hlo::eval::baseline::{naive_conv2d, naive_matmul};
use hlo::eval::{Array, EvalOptions, Program};

/// The best of `runs` timings (after one warm-up), which is the least noisy on a shared machine.
fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn program(text: &str) -> Program {
    let module = hlo::text::parse_module(text).expect("benchmark module parses");
    Program::compile(&module, &EvalOptions::default()).expect("benchmark module compiles")
}

fn values(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 1000) as f32 * scale - 0.5).collect()
}

fn gflops(flops: f64, t: Duration) -> f64 {
    flops / t.as_secs_f64() / 1e9
}

/// The line `cargo xtask bench` collects: one figure, the naive loop its peer.
fn print_record(figure: &str, ours: Duration, naive: Duration) {
    let record = serde_json::json!({
        "group": "interpreter", "figure": figure, "ours_s": ours.as_secs_f64(), "peer": "naive",
        "peer_s": naive.as_secs_f64(), "detail": "",
    });
    println!("NRTSIM-BENCH {record}");
}

fn bench_dot() {
    let n = 512;
    let p = program(&format!(
        "HloModule dot\n\nENTRY main {{\n  a = f32[{n},{n}] parameter(0)\n  b = f32[{n},{n}] parameter(1)\n  ROOT c = f32[{n},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n"
    ));
    let (a, b) = (values(n * n, 1e-3), values(n * n, 2e-3));
    let args =
        [Array::from_f32(&[n as i64, n as i64], &a), Array::from_f32(&[n as i64, n as i64], &b)];
    let ours = best_of(5, || {
        p.run(&args).expect("dot runs");
    });
    let mut c = vec![0.0f32; n * n];
    let naive = best_of(1, || naive_matmul(&a, &b, &mut c, n, n, n));
    let flops = 2.0 * (n * n * n) as f64;
    let (o, v) = (gflops(flops, ours), gflops(flops, naive));
    println!("dot_f32_512 ours={o:.2} naive={v:.2} ratio={:.1} gflops", o / v);
    print_record("dot_f32_512", ours, naive);
}

fn bench_conv() {
    let (channels, size, features) = (64, 56, 64);
    let p = program(&format!(
        "HloModule conv\n\nENTRY main {{\n  x = f32[1,{channels},{size},{size}] parameter(0)\n  w = f32[{features},{channels},3,3] parameter(1)\n  ROOT y = f32[1,{features},{size},{size}] convolution(x, w), window={{size=3x3 pad=1_1x1_1}}, dim_labels=bf01_oi01->bf01\n}}\n"
    ));
    let x = values(channels * size * size, 1e-3);
    let w = values(features * channels * 9, 1e-3);
    let args = [
        Array::from_f32(&[1, channels as i64, size as i64, size as i64], &x),
        Array::from_f32(&[features as i64, channels as i64, 3, 3], &w),
    ];
    let ours = best_of(5, || {
        p.run(&args).expect("convolution runs");
    });
    let mut out = vec![0.0f32; features * size * size];
    let naive = best_of(1, || naive_conv2d(&x, &w, &mut out, channels, size, size, features, 3, 1));
    let flops = 2.0 * (features * size * size * channels * 9) as f64;
    let (o, v) = (gflops(flops, ours), gflops(flops, naive));
    println!("conv3x3_f32_1x64x56x56 ours={o:.2} naive={v:.2} ratio={:.1} gflops", o / v);
    print_record("conv3x3_f32_1x64x56x56", ours, naive);
}

/// VmHWM (peak resident set) of this process in MiB, from /proc/self/status.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn bench_peak_rss() {
    // A chain of 16 elementwise ops over f32[16Mi] (64 MiB each): 1 GiB of intermediates in
    // total, of which only a few are alive at once because values are freed after their last use.
    let len = 16 << 20;
    let steps = 16;
    let mut body = format!("  x = f32[{len}] parameter(0)\n  v0 = f32[{len}] negate(x)\n");
    for i in 1..steps {
        body.push_str(&format!("  v{i} = f32[{len}] add(v{}, x)\n", i - 1));
    }
    let text =
        format!("HloModule chain\n\nENTRY main {{\n{body}  ROOT r = f32[] constant(0)\n}}\n");
    // The root does not use the chain; make it depend on the last value instead.
    let text = text.replace(
        "  ROOT r = f32[] constant(0)\n",
        &format!("  ROOT r = f32[{len}] negate(v{})\n", steps - 1),
    );
    let p = program(&text);
    let input = Array::from_f32(&[len as i64], &vec![1.0; len]);
    let before = peak_rss_mib().unwrap_or(0.0);
    let out = p.run(&[input]).expect("chain runs");
    let after = peak_rss_mib().unwrap_or(0.0);
    drop(out);
    let intermediates = ((steps + 1) * len * 4) >> 20;
    println!(
        "peak_rss_chain intermediates_mib={intermediates} vmhwm_before_mib={before:.0} vmhwm_after_mib={after:.0}"
    );
}

fn main() {
    // `cargo test --benches` runs this with `--test`-like flags; a quick smoke run is enough then.
    if std::env::args().any(|a| a == "--test") {
        println!("interpreter benchmark: skipped under --test");
        return;
    }
    bench_dot();
    bench_conv();
    bench_peak_rss();
}

//! Benchmarks of the simulator through the `Runtime` trait (`cargo bench -p nrtsim-sim`).
//!
//! Plain `std::time::Instant` timing, many iterations, best of several rounds (the machine is
//! shared, so the best round is the least disturbed one). Prints:
//! - resident memory of a 2 × 16 GiB machine with one small model loaded (`VmRSS` from
//!   `/proc/self/status`), measured first so the other benchmarks' buffers do not count;
//! - the time of one launch of a 1-input/1-output model with 4 KiB host tensors (write, execute,
//!   read);
//! - DMA of a 64 MiB tensor in and out (`tensor_write` + `tensor_read` of a device tensor) as a
//!   ratio to plain `copy_from_slice` of the same bytes, measured in the same run, also as an
//!   `NRTSIM-BENCH {json}` line (memcpy the peer) for `cargo xtask bench`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use abi::runtime::prelude::*;
use abi::runtime::{Framework, Placement, TensorUsage};
use sim::{SimConfig, SimRuntime};
use testkit::models::copy_model;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

fn quiet_default() -> SimConfig {
    SimConfig { warnings_to_stderr: false, ..SimConfig::default() }
}

fn best_of(rounds: usize, mut round: impl FnMut() -> Duration) -> Duration {
    (0..rounds).map(|_| round()).min().unwrap_or_default()
}

fn bench_rss() {
    let before = rss_kib();
    let sim = SimRuntime::new(quiet_default()).expect("sim");
    sim.init(Framework::NoFw, "", "").expect("init");
    let model = sim.load_description(&copy_model(4096).description(), -1, 1).expect("load");
    let after = rss_kib();
    println!(
        "rss: {:.1} MiB resident with 2 x 16 GiB hbm and one small model loaded ({:.1} MiB before the sim, +{:.1} MiB)",
        after as f64 / 1024.0,
        before as f64 / 1024.0,
        after.saturating_sub(before) as f64 / 1024.0
    );
    sim.unload(model).expect("unload");
}

fn bench_launch() {
    let sim = SimRuntime::new(quiet_default()).expect("sim");
    sim.init(Framework::NoFw, "", "").expect("init");
    let model = sim.load_description(&copy_model(4096).description(), -1, 1).expect("load");
    let inputs = sim.allocate_tensor_set().expect("set");
    let outputs = sim.allocate_tensor_set().expect("set");
    let mut input = None;
    let mut output = None;
    for entry in sim.get_model_tensor_info(model).expect("info") {
        let tensor = sim
            .tensor_allocate(Placement::Virtual, 0, entry.size, entry.name.as_bytes())
            .expect("tensor");
        if entry.usage == TensorUsage::Input {
            sim.add_tensor_to_tensor_set(inputs, entry.name.as_bytes(), tensor).expect("add");
            input = Some(tensor);
        } else {
            sim.add_tensor_to_tensor_set(outputs, entry.name.as_bytes(), tensor).expect("add");
            output = Some(tensor);
        }
    }
    let (input, output) = (input.expect("input"), output.expect("output"));
    let runtime: &dyn Runtime = &sim;
    let data = vec![7u8; 4096];
    let mut back = vec![0u8; 4096];
    let iterations = 100_000u32;
    let mut launch_round = || {
        let start = Instant::now();
        for _ in 0..iterations {
            runtime.tensor_write(input, 0, black_box(&data)).expect("write");
            black_box(runtime.execute(model, inputs, outputs).expect("execute"));
            runtime.tensor_read(output, 0, black_box(&mut back)).expect("read");
        }
        start.elapsed()
    };
    launch_round();
    let best = best_of(5, launch_round);
    assert_eq!(back, data, "the launch copied the input to the output");
    println!(
        "launch: {:.0} ns per launch (write 4 KiB, execute, read 4 KiB through &dyn Runtime; best of 5 x {iterations})",
        best.as_nanos() as f64 / f64::from(iterations)
    );
}

fn bench_dma() {
    const SIZE: usize = 64 << 20;
    let sim = SimRuntime::new(quiet_default()).expect("sim");
    sim.init(Framework::NoFw, "", "").expect("init");
    let runtime: &dyn Runtime = &sim;
    let device = runtime.tensor_allocate(Placement::Device, 0, SIZE, b"dma").expect("tensor");
    let source: Vec<u8> = (0..SIZE).map(|i| (i % 253) as u8).collect();
    let mut back = vec![0u8; SIZE];
    let mut plain = vec![0u8; SIZE];
    // Touch every page of every buffer first, so page faults are not part of either timing.
    runtime.tensor_write(device, 0, &source).expect("write");
    runtime.tensor_read(device, 0, &mut back).expect("read");
    let rounds = 10;
    let mut dma_best = Duration::MAX;
    let mut memcpy_best = Duration::MAX;
    // Interleave the two so both see the same machine conditions.
    for _ in 0..rounds {
        let start = Instant::now();
        runtime.tensor_write(device, 0, black_box(&source)).expect("write");
        runtime.tensor_read(device, 0, black_box(&mut back)).expect("read");
        dma_best = dma_best.min(start.elapsed());
        let start = Instant::now();
        plain.copy_from_slice(black_box(&source));
        back.copy_from_slice(black_box(&plain));
        memcpy_best = memcpy_best.min(start.elapsed());
    }
    assert_eq!(back, source);
    let gib_per_s = |time: Duration| (2 * SIZE) as f64 / time.as_secs_f64() / (1u64 << 30) as f64;
    println!(
        "dma: 64 MiB in and out {:.2} ms ({:.1} GiB/s), memcpy of the same bytes {:.2} ms ({:.1} GiB/s): ratio {:.2} (best of {rounds})",
        dma_best.as_secs_f64() * 1e3,
        gib_per_s(dma_best),
        memcpy_best.as_secs_f64() * 1e3,
        gib_per_s(memcpy_best),
        memcpy_best.as_secs_f64() / dma_best.as_secs_f64()
    );
    let record = serde_json::json!({
        "group": "sim", "figure": "dma_64mib_in_out", "ours_s": dma_best.as_secs_f64(),
        "peer": "memcpy", "peer_s": memcpy_best.as_secs_f64(), "detail": "",
    });
    println!("NRTSIM-BENCH {record}");
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent; keep that cheap.
    if !std::env::args().any(|arg| arg == "--bench") {
        println!("benchmarks run only under `cargo bench`");
        return;
    }
    bench_rss();
    bench_launch();
    bench_dma();
}

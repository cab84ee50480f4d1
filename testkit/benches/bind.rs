//! Binding-layer overhead on the simulator: a bare `Runtime` launch (write, execute, read) of a
//! 1-in/1-out 4 KiB model against `Model::forward` of the same model, in the same run; and an
//! 8-rank SPMD forward, parallel against the ranks one after another.
//!
//! Timing is `std::time::Instant` over many iterations after a warm-up; the numbers are printed,
//! never asserted. The forward against the bare launch (the direct call its peer) is also an
//! `NRTSIM-BENCH {json}` line for `cargo xtask bench`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use abi::runtime::prelude::*;
use abi::runtime::{Framework, Placement};
use bind::{HostTensor, Model, ModelOptions, SpmdModel};
use sim::{SimConfig, SimRuntime};
use testkit::models::{ModelDef, TensorDef, copy_model, op_copy};

const N_BYTES: i64 = 4096;

fn sim(n_cores: u32) -> Arc<dyn Runtime> {
    let config = SimConfig {
        n_cores,
        hbm_bytes_per_core: 256 << 20,
        warnings_to_stderr: false,
        ..SimConfig::default()
    };
    let sim = SimRuntime::new(config).expect("sim");
    sim.init(Framework::NoFw, "", "").expect("init");
    Arc::new(sim)
}

fn time_per_iteration(iterations: u32, mut body: impl FnMut()) -> f64 {
    for _ in 0..iterations / 10 {
        body();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        body();
    }
    start.elapsed().as_nanos() as f64 / f64::from(iterations)
}

fn bare_launch_ns(runtime: &Arc<dyn Runtime>, def: &ModelDef, iterations: u32) -> f64 {
    let model = runtime.load(&def.neff(), 0, 1).expect("load");
    let size = N_BYTES as usize;
    let input = runtime.tensor_allocate(Placement::Device, 0, size, b"input0").expect("alloc");
    let output = runtime.tensor_allocate(Placement::Device, 0, size, b"output0").expect("alloc");
    let inputs = runtime.allocate_tensor_set().expect("set");
    let outputs = runtime.allocate_tensor_set().expect("set");
    runtime.add_tensor_to_tensor_set(inputs, b"input0", input).expect("add");
    runtime.add_tensor_to_tensor_set(outputs, b"output0", output).expect("add");
    let host = vec![7u8; size];
    let ns = time_per_iteration(iterations, || {
        runtime.tensor_write(input, 0, &host).expect("write");
        runtime.execute(model, inputs, outputs).expect("execute");
        let mut out = vec![0u8; size];
        runtime.tensor_read(output, 0, &mut out).expect("read");
        black_box(out);
    });
    runtime.unload(model).expect("unload");
    ns
}

fn forward_ns(runtime: &Arc<dyn Runtime>, def: &ModelDef, iterations: u32) -> f64 {
    let mut model =
        Model::new(runtime.clone(), &def.neff(), &def.metaneff(), ModelOptions::default())
            .expect("model");
    let input = HostTensor::from_slice(&vec![7u8; N_BYTES as usize], &[N_BYTES]).expect("input");
    let inputs = [input];
    time_per_iteration(iterations, || {
        black_box(model.forward(&inputs).expect("forward"));
    })
}

fn spmd_ns(runtime: &Arc<dyn Runtime>, n_ranks: usize, n: i64, iterations: u32) -> (f64, f64) {
    let def = ModelDef {
        inputs: vec![TensorDef::input("input0", abi::metaneff::meta_tensor::DataType::Uint8, &[n])],
        outputs: vec![TensorDef::output(
            "output0",
            abi::metaneff::meta_tensor::DataType::Uint8,
            &[n],
        )],
        ops: vec![op_copy("output0", "input0")],
        ..ModelDef::new("spmd_copy")
    };
    let neff = def.neff();
    let metaneff = def.metaneff();
    let mut spmd = SpmdModel::new(
        runtime.clone(),
        &neff,
        &metaneff,
        n_ranks as i64,
        n_ranks as i64,
        ModelOptions::default(),
    )
    .expect("spmd");
    let per_rank: Vec<Vec<HostTensor>> = (0..n_ranks)
        .map(|r| vec![HostTensor::from_slice(&vec![r as u8; n as usize], &[n]).expect("input")])
        .collect();
    // Each launch's outputs stay alive until the next launch has returned, as a caller that
    // uses the results keeps them, so the runtime cannot hand the same buffers straight back.
    let mut kept = None;
    let parallel = time_per_iteration(iterations, || {
        kept = Some(black_box(spmd.forward_ranked(&per_rank).expect("forward")));
    });
    drop(kept);
    drop(spmd);
    // The same ranks one after another: one single-rank model per core, run in turn.
    let mut models: Vec<Model> = (0..n_ranks)
        .map(|r| {
            let options = ModelOptions { vnc: r as i32, ..ModelOptions::default() };
            Model::new(runtime.clone(), &neff, &metaneff, options).expect("model")
        })
        .collect();
    let mut kept = None;
    let sequential = time_per_iteration(iterations, || {
        let outputs: Vec<_> = models
            .iter_mut()
            .zip(&per_rank)
            .map(|(model, inputs)| black_box(model.forward(inputs).expect("forward")))
            .collect();
        kept = Some(outputs);
    });
    drop(kept);
    (parallel, sequential)
}

fn main() {
    let runtime = sim(8);
    let def = copy_model(N_BYTES);
    let iterations = 20_000;
    // Interleave the two measurements twice to even out machine noise.
    let mut bare = Vec::new();
    let mut forward = Vec::new();
    for _ in 0..2 {
        bare.push(bare_launch_ns(&runtime, &def, iterations));
        forward.push(forward_ns(&runtime, &def, iterations));
    }
    let bare = bare.iter().copied().fold(f64::INFINITY, f64::min);
    let forward = forward.iter().copied().fold(f64::INFINITY, f64::min);
    println!("bare Runtime launch (write 4 KiB, execute, read 4 KiB): {bare:.0} ns");
    println!("Model::forward (same model, 4 KiB in/out):               {forward:.0} ns");
    println!(
        "binding-layer overhead: {:.0} ns per launch (ratio {:.2})",
        forward - bare,
        forward / bare
    );
    let record = serde_json::json!({
        "group": "bind", "figure": "forward_4kib", "ours_s": forward * 1e-9, "peer": "direct",
        "peer_s": bare * 1e-9, "detail": "",
    });
    println!("NRTSIM-BENCH {record}");
    for (n_bytes, iterations) in [(64 << 10, 500), (4 << 20, 20)] {
        let (parallel, sequential) = spmd_ns(&runtime, 8, n_bytes, iterations);
        println!(
            "SPMD forward, 8 ranks x {} KiB: parallel {parallel:.0} ns, one after another {sequential:.0} ns, speed-up {:.2}",
            n_bytes >> 10,
            sequential / parallel
        );
    }
}

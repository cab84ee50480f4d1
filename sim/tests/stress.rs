//! Many threads launching on two NeuronCores: launches on one core are serialised (each
//! thread always reads back exactly its own result), different cores run in parallel, and the
//! counters add up.

mod common;

use std::sync::Arc;

use abi::runtime::prelude::*;
use abi::runtime::{Framework, Placement, TensorUsage};
use abi::status::NrtStatus;
use common::{arithmetic_model, f32_bytes, f32_values, small_sim};

const THREADS: usize = 8;
const LAUNCHES: usize = 150;
const N: i64 = 256;

#[test]
fn eight_threads_launching_on_two_cores_see_only_their_own_results() {
    let sim = Arc::new(small_sim());
    sim.init(Framework::NoFw, "", "").unwrap();
    let models = [
        sim.load_description(&arithmetic_model(N).description(), 0, 1).unwrap(),
        sim.load_description(&arithmetic_model(N).description(), 1, 1).unwrap(),
    ];
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let sim = Arc::clone(&sim);
            let core = thread % 2;
            let model = models[core];
            std::thread::spawn(move || {
                // Half the threads use host tensors (DMA through the model's staging slots),
                // half use device tensors on the model's core (in place).
                let placement = if thread % 4 < 2 { Placement::Virtual } else { Placement::Device };
                let inputs = sim.allocate_tensor_set().unwrap();
                let outputs = sim.allocate_tensor_set().unwrap();
                let mut tensors = Vec::new();
                for entry in sim.get_model_tensor_info(model).unwrap() {
                    let tensor = sim
                        .tensor_allocate(placement, core as i32, entry.size, entry.name.as_bytes())
                        .unwrap();
                    let set = if entry.usage == TensorUsage::Input { inputs } else { outputs };
                    sim.add_tensor_to_tensor_set(set, entry.name.as_bytes(), tensor).unwrap();
                    tensors.push((entry.name, tensor));
                }
                let named = |name: &str| tensors.iter().find(|(n, _)| n == name).unwrap().1;
                for launch in 0..LAUNCHES {
                    let x = (thread * 1000 + launch) as f32;
                    sim.tensor_write(named("x"), 0, &f32_bytes(&vec![x; N as usize])).unwrap();
                    sim.tensor_write(named("y"), 0, &f32_bytes(&vec![1.0; N as usize])).unwrap();
                    assert_eq!(sim.execute(model, inputs, outputs), Ok(NrtStatus::Success));
                    let mut out = vec![0u8; (N * 4) as usize];
                    sim.tensor_read(named("sum"), 0, &mut out).unwrap();
                    let sums = f32_values(&out);
                    assert!(
                        sums.iter().all(|&s| s == x + 1.0),
                        "thread {thread} launch {launch}: {:?}",
                        &sums[..4]
                    );
                    sim.tensor_read(named("prod"), 0, &mut out).unwrap();
                    assert!(f32_values(&out).iter().all(|&p| p == x * 2.0));
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a launching thread panicked");
    }
    let per_model = (THREADS / 2 * LAUNCHES) as u64;
    for (core, model) in models.iter().enumerate() {
        assert_eq!(sim.model_counters(*model).unwrap().launches, per_model);
        assert_eq!(sim.core_counters(core as u32).unwrap().launches, per_model);
    }
}

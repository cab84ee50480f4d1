//! Shared helpers of the simulator's integration tests: small machines and small models.
#![allow(dead_code, unreachable_pub)]

use abi::dtype::Dltype;
use abi::runtime::{ModelId, NrtError, Runtime};
use sim::hlo_text::HloText;
use sim::{ModelDescription, SimConfig, SimRuntime};

/// A machine of `n_cores` NeuronCores with 64 MiB of HBM each, quiet, numerical errors as asked.
pub fn small_config(n_cores: u32, numerical_errors: bool) -> SimConfig {
    SimConfig {
        n_cores,
        hbm_bytes_per_core: 64 << 20,
        numerical_errors,
        warnings_to_stderr: false,
        ..SimConfig::default()
    }
}

pub fn small_sim() -> SimRuntime {
    SimRuntime::new(small_config(2, false)).expect("small sim")
}

pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

pub fn f32_values(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// `sum = x + y`, `prod = x * y × 2`, over f32[n]; the names are the NKI style (`x`, `y`).
pub fn arithmetic_model(n: i64) -> ModelDescription {
    let mut hlo = HloText::new("arithmetic");
    let x = hlo.parameter(Dltype::Float32, &[n]);
    let y = hlo.parameter(Dltype::Float32, &[n]);
    let sum = hlo.add(&x, &y);
    let prod = hlo.multiply(&x, &y);
    let prod = hlo.scale(&prod, 2.0);
    let program = hlo.finish(&[sum, prod]);
    ModelDescription::new("arithmetic")
        .with_input("x", Dltype::Float32, &[n])
        .with_input("y", Dltype::Float32, &[n])
        .with_output("sum", Dltype::Float32, &[n])
        .with_output("prod", Dltype::Float32, &[n])
        .with_hlo(program)
}

/// `output0 = input0` over `n_bytes` of uint8: the launch-overhead model.
pub fn copy_model(n_bytes: i64) -> ModelDescription {
    ModelDescription::new("copy")
        .with_input("input0", Dltype::Uint8, &[n_bytes])
        .with_output("output0", Dltype::Uint8, &[n_bytes])
        .with_hlo(copy_hlo(Dltype::Uint8, n_bytes))
}

/// `output0 = input0`, then element `index` of output0 set to NaN, over f32[4].
pub fn nan_model(index: u64) -> ModelDescription {
    ModelDescription::new("nan")
        .with_input("input0", Dltype::Float32, &[4])
        .with_output("output0", Dltype::Float32, &[4])
        .with_hlo({
            let mut hlo = HloText::new("nan");
            let x = hlo.parameter(Dltype::Float32, &[4]);
            let out = hlo.nan_at(&x, index as usize);
            hlo.finish(&[out])
        })
}

/// `output0 = input0` over `dltype[n]`, as HLO text.
pub fn copy_hlo(dltype: Dltype, n: i64) -> String {
    let mut hlo = HloText::new("copy");
    let x = hlo.parameter(dltype, &[n]);
    hlo.finish(&[x])
}

/// A loader for the checks: loads `description` through [`SimRuntime::load_description`].
pub fn describe_loader(
    sim: &SimRuntime,
    description: ModelDescription,
) -> impl Fn(&dyn Runtime, i32) -> Result<ModelId, NrtError> + '_ {
    move |_runtime, vnc| sim.load_description(&description, vnc, 1)
}

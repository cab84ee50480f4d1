//! Shared helpers of the simulator's integration tests: small machines. The models and the f32
//! byte helpers are `testkit`'s, as in every other crate's tests.
#![allow(dead_code, unreachable_pub, unused_imports)]

use abi::runtime::prelude::*;
use abi::runtime::{ModelId, NrtError};
use sim::{ModelDescription, SimConfig, SimRuntime};

pub use testkit::models::{arithmetic_model, copy_hlo, copy_model, nan_model};
pub use testkit::{f32_bytes, f32_values};

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

/// A loader for the checks: loads `description` through [`SimRuntime::load_description`].
pub fn describe_loader(
    sim: &SimRuntime,
    description: ModelDescription,
) -> impl Fn(&dyn Runtime, i32) -> Result<ModelId, NrtError> + '_ {
    move |_runtime, vnc| sim.load_description(&description, vnc, 1)
}

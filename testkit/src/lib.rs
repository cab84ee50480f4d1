//! Test support: bodies written once over any `abi::runtime::Runtime`, the builders of the small
//! models, NEFFs and metaneffs every test uses, and the simulated machines tests run on. No
//! product crate exports test helpers; they are all here.
//!
//! Design choices:
//! - **Bodies take a runtime factory**, not a backend: [`bind_suite`](mod@bind_suite) lists named functions of
//!   a [`Factory`] that builds an initialized runtime for a [`RuntimeSpec`] (cores, numerical
//!   errors, a fault plan in the simulator's compact form). `tests/bind_on_sim.rs` runs each on
//!   `SimRuntime`; a later backend (the sim behind its C ABI, real libnrt) runs the very same
//!   bodies by supplying its own factory.
//! - **Bodies return `Result<(), String>`** with a message that says what was expected and what
//!   came, so a harness can report them as named test failures without panics.
//! - **Models carry an HLO device program** (the `sim/model.hlo.pb` member, see [`models`]), so outputs are a
//!   function of named inputs and a mis-binding shows.
//! - **One helper for f32 bytes** ([`f32_bytes`], [`f32_values`]) and **one set of model
//!   builders** ([`models`]): a [`models::ModelDef`] gives the NEFF, the metaneff, and the
//!   simulator's in-memory description of the same model.
//! - **One reader of the compiled-model fixtures** ([`model_fixture`]): the folders a real
//!   producer wrote, which the C-ABI tests and the `nrtsim` tool's tests both run.
#![forbid(unsafe_code)]

pub mod bind_suite;
pub mod checks;
pub mod model_fixture;
pub mod models;

use std::sync::Arc;

use abi::runtime::prelude::*;
use sim::{FaultPlan, SimConfig};

pub use bind_suite::bind_suite;
pub use models::{f32_bytes, f32_values};

/// Device memory per core of the machines [`sim_config`] describes.
pub const SPEC_HBM_BYTES: u64 = 256 << 20;

/// The quiet simulated machine `spec` asks for: [`SPEC_HBM_BYTES`] per core, warnings not
/// printed. The suite's runners use it on `SimRuntime`, and give it to a child's simulator
/// library through `sim::config::to_env`.
///
/// # Panics
/// When the spec's fault plan does not parse: the suite's own plans are constants, so that is a
/// bug in the suite.
pub fn sim_config(spec: &RuntimeSpec) -> SimConfig {
    SimConfig {
        n_cores: spec.n_cores,
        hbm_bytes_per_core: SPEC_HBM_BYTES,
        numerical_errors: spec.numerical_errors,
        warnings_to_stderr: false,
        fault_plan: FaultPlan::parse(spec.fault_plan).expect("the suite's fault plans parse"),
        ..SimConfig::default()
    }
}

/// What a test body needs from the runtime it is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeSpec {
    /// How many NeuronCores the machine must have (at least).
    pub n_cores: u32,
    /// Whether a NaN output makes a launch return `NRT_EXEC_COMPLETED_WITH_NUM_ERR` (libnrt's
    /// `NEURON_FAIL_ON_NAN=1`).
    pub numerical_errors: bool,
    /// Calls that must fail, in the simulator's compact fault-plan form
    /// (`nrt_tensor_allocate:1=RESOURCE`); empty for none.
    pub fault_plan: &'static str,
}

impl Default for RuntimeSpec {
    /// Two cores, numerical errors off, no faults.
    fn default() -> RuntimeSpec {
        RuntimeSpec { n_cores: 2, numerical_errors: false, fault_plan: "" }
    }
}

/// Builds an initialized runtime (`nrt_init` done) for a spec.
pub type Factory<'a> = dyn Fn(&RuntimeSpec) -> Arc<dyn Runtime> + 'a;

/// A test body.
pub type TestBody = fn(&Factory<'_>) -> Result<(), String>;

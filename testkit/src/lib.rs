//! Test bodies written once over any `abi::runtime::Runtime`, and builders of the small NEFFs
//! and metaneffs they use.
//!
//! Design choices:
//! - **Bodies take a runtime factory**, not a backend: [`bind_suite`] lists named functions of
//!   a [`Factory`] that builds an initialized runtime for a [`RuntimeSpec`] (cores, numerical
//!   errors, a fault plan in the simulator's compact form). `tests/bind_on_sim.rs` runs each on
//!   `SimRuntime`; a later backend (the sim behind its C ABI, real libnrt) runs the very same
//!   bodies by supplying its own factory.
//! - **Bodies return `Result<(), String>`** with a message that says what was expected and what
//!   came, so a harness can report them as named test failures without panics.
//! - **Models carry an HLO device program** (the `sim/model.hlo.pb` member, see [`models`]), so outputs are a
//!   function of named inputs and a mis-binding shows.
#![forbid(unsafe_code)]

pub mod bind_suite;
pub mod models;

use std::sync::Arc;

use abi::runtime::Runtime;

pub use bind_suite::bind_suite;

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

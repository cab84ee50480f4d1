//! `SimRuntime`: a hardware-free libnrt. It implements [`abi::runtime::Runtime`] over simulated
//! NeuronCores, so that host code and the binding layer tested on it behave the same on a device.
//!
//! Design choices:
//! - **Model libnrt at its C API, not libtorchneuron.** Statuses, lifecycle, binding by name and
//!   the I/O contract follow docs/abi-facts.md §3-§5; where the exact code is still to be pinned on a
//!   device, the choice is made in one place and commented.
//! - **Sparse, real memory.** Each NeuronCore's HBM is one anonymous mapping reserved without
//!   swap (`memory`): a 16 GiB core costs nothing until touched, `nrt_tensor_get_va` returns a
//!   real address, and DMA is `memcpy`.
//! - **A loader over a description.** [`model::ModelDescription`] is what gets loaded; the NEFF
//!   parser is plugged in by one function ([`neff_load::describe_neff`]). Every variable becomes a
//!   slot by its memory-reference kind; constants and scratch are staged at load, inputs and
//!   outputs bound by name at execute.
//! - **The device program is XLA HLO** ([`device_program`], the `sim/model.hlo.pb` member, or
//!   `NRTSIM_HLO` for a NEFF that carries none), run by the `hlo` crate at every launch, so
//!   outputs are the model's real function of its inputs and NaN → 1003 can be exercised. A NEFF
//!   without one runs as opaque: outputs are zero, and one warning says so.
//! - **Deterministic failure on demand** ([`fault`]): a seeded plan makes the Nth call, or a
//!   fraction of calls, of a named C function return a chosen status.
//! - **Safe code only.** No `unsafe` here; the C ABI lives in `sim/capi`.
//! - **Concurrency by core.** Launches on one core are serialised by that core's launch lock;
//!   launches on different cores run in parallel. Counters are atomics.
//!
//! Sim-only things (configuration, traffic counters, warnings, memory in use) are inherent
//! methods of [`SimRuntime`], never part of the trait.
#![forbid(unsafe_code)]

pub mod async_queues;
pub mod capped;
pub mod child;
pub mod collectives;
pub mod config;
pub mod device_program;
pub mod fault;
pub mod hlo_text;
mod memory;
pub mod model;
pub mod neff_load;
mod profile;
mod runtime;
pub mod sys_trace;

pub use collectives::{CollectiveError, Collectives, Communicator, Operation};
pub use config::{HLO_ENV, HloSource, ImitatedRelease, Instance, SimConfig};
pub use device_program::{
    DeviceProgram, DeviceProgramError, HLO_MEMBER, LaunchError, LaunchRecord,
};
pub use fault::{FaultPlan, FaultPlanError, FaultRule, FaultTrigger};
pub use model::{IoDescription, IoShapeError, ModelDescription, SlotKind, VarDescription};
pub use runtime::{
    DMA_DESCRIPTOR_BYTES, SimConfigError, SimRuntime, TrafficCounters, VERSION_DETAIL,
};

//! `bind`: what libtorchneuron does with a metaneff (docs/libtorchneuron.md), written once over
//! `Arc<dyn Runtime>`, so it runs unchanged on the simulator and on real libnrt.
//!
//! A [`Model`] holds a NEFF and its metaneff. Loading it (`nrt_load`) is followed by two tensor
//! sets, inputs then outputs, with one runtime tensor per boundary tensor of
//! `item_size × Π shape` bytes, added under `MetaTensor.name` ([`tensor_set`]). A forward
//! validates the caller's tensors with libtorchneuron's checks and exact messages
//! ([`validate()`]), writes host inputs into their staging tensors, binds each slot, executes
//! (tolerating 1003, whose status is returned beside the outputs), and builds the outputs.
//!
//! Design choices, and where they come from:
//! - **Slots are metaneff indices; binding is by name.** Slot `i` is `input_tensors[i]`, as in
//!   libtorchneuron's slot arrays; libnrt binds the set's tensors to the NEFF's variables by
//!   name (docs/abi-facts.md §4 correction: a slot index is not a var_id). The var_id and MrType of
//!   each bound name are read from the NEFF's var table once, for the trace only; a name the
//!   table lacks is traced as `var_id ? MR_INVALID` and left for libnrt to judge at execute.
//! - **One validation layer.** The layer checks what libtorchneuron checks (count, dtype,
//!   shape, scalar/dynamic, ordinal) and nothing libnrt checks itself (sizes and names at
//!   execute), so conformance tests libnrt, not a Rust copy of it. It never downcasts to a
//!   backend.
//! - **Re-bind only on change.** Each slot remembers the runtime tensor bound in it; a launch
//!   calls `nrt_add_tensor_to_tensor_set` only when that changes (`set_input`'s pointer
//!   compare). Host inputs reuse their slot's staging tensor, so repeated launches add nothing;
//!   a device-resident input ([`HostTensor::on_device`]) is bound as it is, without a write.
//! - **Donation.** An output aliased to input `j` is, in the output set, the very runtime tensor
//!   of input `j`, so execute updates it in place; the returned [`HostTensor`] shares input
//!   `j`'s storage and holds the updated bytes. With `return_aliases` false, aliased outputs
//!   are left out of the returned list (docs/abi-facts.md §1).
//! - **States and weights are ordinary inputs the layer fills** (docs/abi-facts.md §5 correction).
//!   The caller passes user inputs only (`USER_INPUT`, and `UNDEFINED_TYPE` that older
//!   producers write), in metaneff order. `INPUT_STATE` tensors start at load as zeros, or
//!   as a copy of the [`ModelOptions::weights`] entry of their `checkpoint_key` when there is
//!   one (a checkpoint's state), and persist because their runtime tensor is reused across launches (updated through their
//!   aliased output); `INPUT_WEIGHT` tensors come from [`ModelOptions::weights`] by
//!   `checkpoint_key`.
//! - **Status 1003 is a warning** (docs/abi-facts.md §3): execute's 1003 is kept in
//!   [`ForwardOutput::status`] with the outputs intact; the allocation calls tolerate it too,
//!   as libtorchneuron does (see [`tensor_set`] for what that means without a handle).
//! - **Dynamic batching** is our documented model of libtorchneuron's slicing arithmetic,
//!   which the disassembly leaves open
//!   ([`batching`]).
//! - **Setters edit bytes.** [`Model::set_async_load`] and the others change the stored
//!   metaneff through [`abi::metaneff::edit`], so fields this crate does not know survive.
//! - **Threads, not a pool.** The background load of `async_load` is a `std::thread` joined by
//!   the first forward; SPMD ranks run on `std::thread::scope` threads (the same parallelism as
//!   rayon for a few long tasks, without a dependency).
//! - **Tracing costs nothing when off.** With [`ModelOptions::trace`] set, the layer wraps its
//!   runtime in a [`abi::trace::TracingRuntime`] and records its own events
//!   (bindings, skipped re-binds, aliasing, validate errors, tolerated statuses); with `None`
//!   it neither wraps nor formats anything.
//! - **Its own crate, above `abi`.** `abi` is the contract as data (schema, tables, parsers, the
//!   `Runtime` trait) and neither spawns threads nor does IO; this layer does both (a background
//!   load, SPMD ranks), so it depends on `abi` and `abi` knows nothing of it.
#![forbid(unsafe_code)]

pub mod batching;
pub mod error;
pub mod host_tensor;
pub mod model;
pub mod spmd;
pub mod tensor_set;
pub mod validate;

use std::sync::Arc;

pub use error::{BindError, HostTensorError, ValidateError, ValidateKind};
pub use host_tensor::{Element, HostStorage, HostTensor, LentBytes};
pub use model::{LoadStatus, Model};
pub use spmd::SpmdModel;
pub use tensor_set::{InputRole, NULL_SET, NULL_TENSOR, Weights};
pub use validate::{ValidatePath, validate};

use abi::status::NrtStatus;
use abi::trace::Trace;

/// How a [`Model`] or [`SpmdModel`] is placed, fed and observed.
#[derive(Clone, Debug)]
pub struct ModelOptions {
    /// The NeuronCore to load on (`-1`: the first free one; device tensors then go to core 0).
    /// For an [`SpmdModel`], the core of rank 0; rank `r` uses `vnc + r`.
    pub vnc: i32,
    /// How many NeuronCores a [`Model`] spans (SPMD ranks use one each).
    pub vnc_count: i32,
    /// The weights, by `checkpoint_key`, for the metaneff's `INPUT_WEIGHT` tensors (required)
    /// and `INPUT_STATE` tensors (optional starting values; zeros otherwise).
    pub weights: Weights,
    /// Where to record the canonical trace; `None` records nothing and costs nothing.
    pub trace: Option<Arc<Trace>>,
    /// The count limits the metaneff is decoded under (the setters' edits included); a
    /// metaneff past one is [`BindError::Metaneff`] with
    /// [`exceeded`](abi::metaneff::MetaneffDecodeError::exceeded) set.
    pub metaneff_limits: abi::metaneff::MetaneffLimits,
    /// How the layer reads the NEFF's variable table for the trace (leniently, the parser's
    /// count limits by default): the runtime's load is what accepts or refuses a NEFF, so this
    /// should carry the limits the runtime loads under.
    pub neff_read_options: abi::neff::ReadOptions,
}

impl Default for ModelOptions {
    /// NeuronCore 0, one core, no weights, no trace, the parsers' count limits.
    fn default() -> ModelOptions {
        ModelOptions {
            vnc: 0,
            vnc_count: 1,
            weights: Weights::new(),
            trace: None,
            metaneff_limits: abi::metaneff::MetaneffLimits::default(),
            neff_read_options: abi::neff::ReadOptions::default(),
        }
    }
}

/// What a forward returns: the outputs and the launch status.
#[derive(Clone, Debug)]
pub struct ForwardOutput {
    /// The outputs in metaneff order (aliased ones only when `return_aliases` is set).
    pub outputs: Vec<HostTensor>,
    /// [`NrtStatus::Success`], or [`NrtStatus::ExecCompletedWithNumErr`] when a launch
    /// completed with a NaN (the outputs are still written).
    pub status: NrtStatus,
}

/// Where a forward puts the outputs it makes (every output but those donated by a caller's
/// input, which are that input): [`Zeroed`] tensors of the layer's own ([`Model::forward`]), or
/// the caller's, so that an FFI layer has outputs read straight into the tensors it returns
/// ([`Model::forward_into`]).
pub trait OutputTensors: Sync {
    /// A tensor of `scalar_type` and `shape` for the output at `index` of the list `rank`'s
    /// forward returns (rank 0 for a [`Model`]); the forward writes every byte of it. An SPMD
    /// forward calls it from each rank's thread.
    ///
    /// # Errors
    /// Whatever the caller cannot provide; the forward fails with it.
    fn output(
        &self,
        rank: usize,
        index: usize,
        scalar_type: abi::dtype::ScalarType,
        shape: &[i64],
    ) -> Result<HostTensor, BindError>;
}

/// Fresh zero tensors of the layer's own for every output.
pub struct Zeroed;

impl OutputTensors for Zeroed {
    fn output(
        &self,
        _rank: usize,
        _index: usize,
        scalar_type: abi::dtype::ScalarType,
        shape: &[i64],
    ) -> Result<HostTensor, BindError> {
        Ok(HostTensor::zeros(scalar_type, shape)?)
    }
}

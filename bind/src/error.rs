//! The errors of the binding layer: [`BindError`], [`ValidateError`] and [`HostTensorError`].
//!
//! Where libtorchneuron has an exact message ("Expected tensor.dtype() == dtype",
//! "Failed to allocate tensor set", …), the error carries that string unchanged in a field of its
//! own, beside the structured facts (kind, index, name, expected, actual), so conformance can
//! compare the exact message while humans read the rest. Every other message is ours: lowercase,
//! saying what was expected and what came.

use std::fmt;

use abi::dtype::{DtypeError, ScalarType};
use abi::metaneff::MetaneffDecodeError;
use abi::metaneff::edit::Side;
use abi::neff::NeffError;
use abi::runtime::NrtError;

/// libtorchneuron's count check message (docs/libtorchneuron.md §3).
pub const MSG_COUNT: &str = "Expected npts->impl()->size() == tensors.size()";
/// libtorchneuron's dtype check message (docs/libtorchneuron.md §3).
pub const MSG_DTYPE: &str = "Expected tensor.dtype() == dtype";
/// libtorchneuron's shape check message (docs/libtorchneuron.md §3).
pub const MSG_SHAPE: &str = "Expected tensor.sizes() == sizes";
/// libtorchneuron's dynamic-batch sanity message (docs/libtorchneuron.md §3).
pub const MSG_SCALAR_DYNAMIC: &str = "Scalar tensor cannot have allow_dynamic_batch_size=True";
/// libtorchneuron's slot range message (docs/libtorchneuron.md §3).
pub const MSG_ORDINAL: &str = "Expected ordinal < nrt_tensors_.size()";
/// libtorchneuron's message for a failed `nrt_allocate_tensor_set` (docs/libtorchneuron.md §1).
pub const MSG_ALLOCATE_SET: &str = "Failed to allocate tensor set";
/// libtorchneuron's message for a failed `nrt_tensor_allocate` (docs/libtorchneuron.md §1).
pub const MSG_ALLOCATE_TENSOR: &str = "Failed to allocate neuron runtime tensor";
/// libtorchneuron's message for a failed `nrt_add_tensor_to_tensor_set` (docs/libtorchneuron.md §1). The binary
/// has this one string for both sides, so the output set uses it too.
pub const MSG_ADD_TENSOR: &str = "Failed to add neuron tensor to the input set";
/// Our message for a failed `nrt_load` / `nrt_load_collectives` (libtorchneuron has none).
pub const MSG_LOAD: &str = "failed to load the neff";
/// Our message for a failed `nrt_tensor_write` of an input, state or weight (libtorchneuron has
/// none; libtorchneuron returns status 3 there).
pub const MSG_WRITE: &str = "failed to write a tensor to the device";
/// Our message for a failed `nrt_execute` (libtorchneuron has none).
pub const MSG_EXECUTE: &str = "failed to execute the model";
/// Our message for a failed `nrt_tensor_read` of an output (libtorchneuron has none).
pub const MSG_READ: &str = "failed to read an output from the device";

/// Which of libtorchneuron's `validate` checks failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValidateKind {
    /// The number of tensors (Model path only).
    Count,
    /// A user input's dtype.
    Dtype,
    /// A user input's shape.
    Shape,
    /// A scalar tensor marked for dynamic batching.
    ScalarDynamicBatch,
    /// A tensor index past the slots (ranked path).
    Ordinal,
}

impl ValidateKind {
    /// The kind as traced: `count`, `dtype`, `shape`, `scalar_dynamic_batch`, `ordinal`.
    pub fn name(self) -> &'static str {
        match self {
            ValidateKind::Count => "count",
            ValidateKind::Dtype => "dtype",
            ValidateKind::Shape => "shape",
            ValidateKind::ScalarDynamicBatch => "scalar_dynamic_batch",
            ValidateKind::Ordinal => "ordinal",
        }
    }

    /// libtorchneuron's exact message for this check.
    pub fn message(self) -> &'static str {
        match self {
            ValidateKind::Count => MSG_COUNT,
            ValidateKind::Dtype => MSG_DTYPE,
            ValidateKind::Shape => MSG_SHAPE,
            ValidateKind::ScalarDynamicBatch => MSG_SCALAR_DYNAMIC,
            ValidateKind::Ordinal => MSG_ORDINAL,
        }
    }
}

/// A failed `validate` check: the kind, the input (index and name, when the check is about one
/// tensor), what was expected and what came, and libtorchneuron's exact message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidateError {
    /// Which check failed.
    pub kind: ValidateKind,
    /// The input slot (metaneff index); `None` for the count check.
    pub index: Option<usize>,
    /// The input's `MetaTensor.name` (lossy UTF-8); `None` for the count check and for an
    /// ordinal past every slot.
    pub name: Option<String>,
    /// What the metaneff expects, e.g. `Float` or `[2, 3]`.
    pub expected: String,
    /// What came, e.g. `Int` or `[2, 4]`.
    pub actual: String,
    /// libtorchneuron's exact message, e.g. `Expected tensor.dtype() == dtype`.
    pub message: &'static str,
}

impl ValidateError {
    pub(crate) fn new(
        kind: ValidateKind,
        index: Option<usize>,
        name: Option<String>,
        expected: String,
        actual: String,
    ) -> ValidateError {
        ValidateError { kind, index, name, expected, actual, message: kind.message() }
    }

    /// The trace line for this error:
    /// `validate error dtype input 0 "input0": Expected tensor.dtype() == dtype (expected Float, got Int)`.
    pub fn trace_line(&self) -> String {
        format!("validate error {self}")
    }
}

impl fmt::Display for ValidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind.name())?;
        if let Some(index) = self.index {
            write!(f, " input {index}")?;
        }
        if let Some(name) = &self.name {
            write!(f, " {name:?}")?;
        }
        write!(f, ": {} (expected {}, got {})", self.message, self.expected, self.actual)
    }
}

impl std::error::Error for ValidateError {}

/// A host tensor that could not be built or converted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HostTensorError {
    /// The bytes do not match `item_size × Π shape`.
    #[error("expected {expected} bytes for {scalar_type} {shape:?}, got {actual}")]
    ByteLength {
        /// The element type.
        scalar_type: ScalarType,
        /// The shape.
        shape: Vec<i64>,
        /// `item_size × Π shape`.
        expected: u64,
        /// The bytes given.
        actual: usize,
    },
    /// The shape has a negative dimension or its size overflows.
    #[error("invalid host tensor shape: {0}")]
    Shape(#[from] DtypeError),
    /// A typed read of a tensor of another element type.
    #[error("read as {requested}: expected element type {requested}, got {actual}")]
    ElementType {
        /// The tensor's element type.
        actual: ScalarType,
        /// The element type asked for.
        requested: ScalarType,
    },
    /// A `.npy` file that is malformed.
    #[error("invalid npy: {0}")]
    Npy(NeffError),
    /// A `.npy` dtype with no torch scalar type here, or in Fortran order.
    #[error("unsupported npy array: {detail}")]
    NpyUnsupported {
        /// What is unsupported, with the value found.
        detail: String,
    },
    /// A copy of lent bytes, made to write them, could not be allocated.
    #[error("a copy of {n_bytes} lent bytes could not be allocated")]
    Allocation {
        /// The bytes to copy.
        n_bytes: usize,
    },
}

/// Everything the binding layer can fail with.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// One of libtorchneuron's `validate` checks failed.
    #[error("validate: {0}")]
    Validate(#[from] ValidateError),

    /// A runtime call failed with a status the layer does not tolerate.
    #[error("{message}: nrt_{call} returned {source}")]
    Runtime {
        /// The runtime method, e.g. `tensor_allocate`.
        call: &'static str,
        /// libtorchneuron's message where libtorchneuron has one (e.g. "Failed to allocate tensor
        /// set"), otherwise ours.
        message: &'static str,
        /// The runtime's error with its exact status.
        #[source]
        source: NrtError,
    },

    /// The metaneff bytes do not decode.
    #[error("invalid metaneff: {0}")]
    Metaneff(#[from] MetaneffDecodeError),

    /// A boundary tensor's data_type or shape has no byte size.
    #[error("{side:?} tensor {index} {name:?}: {source}")]
    Dtype {
        /// Input or output.
        side: Side,
        /// The metaneff index.
        index: usize,
        /// The tensor name (lossy UTF-8).
        name: String,
        /// Why.
        #[source]
        source: DtypeError,
    },

    /// A `MetaTensor.type` value the schema does not define.
    #[error(
        "input tensor {index} {name:?} has type {value}, expected USER_INPUT (1), INPUT_STATE (2), \
         INPUT_WEIGHT (3) or UNDEFINED_TYPE (0)"
    )]
    UnknownTensorType {
        /// The metaneff index.
        index: usize,
        /// The tensor name.
        name: String,
        /// The raw value.
        value: i32,
    },

    /// An `output_aliases_to` entry naming an output or input that does not exist.
    #[error(
        "output_aliases_to maps output {output} to input {input}, expected an output below \
         {n_outputs} and an input below {n_inputs}"
    )]
    AliasOutOfRange {
        /// The output index.
        output: i64,
        /// The input index.
        input: i64,
        /// The number of outputs.
        n_outputs: usize,
        /// The number of inputs.
        n_inputs: usize,
    },

    /// A state or weight input without `checkpoint_key`.
    #[error("{kind} input {index} {name:?} has no checkpoint_key, expected one to bind it by")]
    MissingCheckpointKey {
        /// `INPUT_STATE` or `INPUT_WEIGHT`.
        kind: &'static str,
        /// The metaneff index.
        index: usize,
        /// The tensor name.
        name: String,
    },

    /// A weight whose checkpoint_key is not in the weights the caller gave.
    #[error(
        "missing weight {key:?}: the metaneff binds a weight by this checkpoint_key, the weights given have none (they have {available})"
    )]
    MissingWeight {
        /// The checkpoint_key (lossy UTF-8).
        key: String,
        /// The keys the caller gave, comma-separated.
        available: String,
    },

    /// A weight of the wrong dtype or shape.
    #[error("weight {key:?}: expected {expected}, got {actual}")]
    WeightMismatch {
        /// The checkpoint_key.
        key: String,
        /// The metaneff's dtype and shape.
        expected: String,
        /// The given tensor's dtype and shape.
        actual: String,
    },

    /// `load_collectives` as a rank outside its group.
    #[error("expected 0 <= ctx_device_id < ctx_device_count, got {rank} of {world}")]
    InvalidRank {
        /// `ctx_device_id`.
        rank: i64,
        /// `ctx_device_count`.
        world: i64,
    },

    /// NeuronCores no load can use: a start below -1 or a count below 1.
    #[error(
        "NeuronCores start {start}, count {count}: expected a start of -1 (the first free core) or \
         more and a count of 1 or more"
    )]
    InvalidPlacement {
        /// The first core asked for.
        start: i64,
        /// How many cores.
        count: i64,
    },

    /// `set_dynamic_batching_mixed` with flag lists of the wrong length.
    #[error(
        "set_dynamic_batching_mixed: expected {expected} {side:?} flags (one per tensor), got {actual}"
    )]
    DynamicFlagsLength {
        /// Which list.
        side: Side,
        /// The number of tensors on that side.
        expected: usize,
        /// The number of flags given.
        actual: usize,
    },

    /// Dynamic inputs that disagree on the launch batch.
    #[error(
        "dynamic input {index} {name:?} has leading dimension {actual}, expected the launch batch \
         {expected} of the first dynamic input"
    )]
    BatchMismatch {
        /// The input slot.
        index: usize,
        /// The tensor name.
        name: String,
        /// The launch batch.
        expected: i64,
        /// This input's leading dimension.
        actual: i64,
    },

    /// Dynamic tensors whose compiled leading dimensions differ, so no single slice size fits.
    #[error(
        "{side:?} tensor {index} {name:?} is dynamic with compiled leading dimension {actual}, \
         expected the compiled batch {expected} of the first dynamic input"
    )]
    CompiledBatchMismatch {
        /// Input or output.
        side: Side,
        /// The metaneff index.
        index: usize,
        /// The tensor name.
        name: String,
        /// The compiled batch.
        expected: i64,
        /// This tensor's compiled leading dimension.
        actual: i64,
    },

    /// A device-resident dynamic input whose batch would need slicing or padding.
    #[error(
        "device-resident input {index} {name:?} has batch {actual}, expected exactly the compiled \
         batch {expected}: the layer slices and pads host tensors only"
    )]
    DeviceTensorNeedsSlicing {
        /// The input slot.
        index: usize,
        /// The tensor name.
        name: String,
        /// The compiled batch.
        expected: i64,
        /// The tensor's batch.
        actual: i64,
    },

    /// A host tensor could not be built or read.
    #[error(transparent)]
    HostTensor(#[from] HostTensorError),

    /// `SpmdModel::new` with a rank count that does not fit the world.
    #[error(
        "expected 1 <= local_ranks <= world_size, got local_ranks {local_ranks} and world_size {world_size}"
    )]
    InvalidRanks {
        /// Ranks on this host.
        local_ranks: i64,
        /// Ranks in the collective group.
        world_size: i64,
    },

    /// `forward_ranked` with one input list per rank expected.
    #[error("expected one input list per local rank ({expected}), got {actual}")]
    RankCount {
        /// The local ranks.
        expected: usize,
        /// The lists given.
        actual: usize,
    },

    /// One rank of an SPMD model failed.
    #[error("rank {rank}: {source}")]
    Rank {
        /// The rank.
        rank: usize,
        /// What failed.
        #[source]
        source: Box<BindError>,
    },

    /// The tensor an [`OutputTensors`](crate::OutputTensors) gave for an output is not one the
    /// forward can write it into.
    #[error("output {index}: expected a tensor of {expected} written in place, got {actual}")]
    OutputTensor {
        /// The output's place in the list the forward returns.
        index: usize,
        /// The element type and shape the output has.
        expected: String,
        /// What was given.
        actual: String,
    },

    /// A thread of the layer (the background load of `async_load`, or a rank of an SPMD
    /// forward) panicked: a bug in a runtime backend.
    #[error("the {thread} thread panicked, expected it to return a result")]
    ThreadPanicked {
        /// Which thread: `background load` or `rank`.
        thread: &'static str,
    },
}

impl BindError {
    /// The validate error inside, if this is one.
    pub fn as_validate(&self) -> Option<&ValidateError> {
        match self {
            BindError::Validate(error) => Some(error),
            BindError::Rank { source, .. } => source.as_validate(),
            _ => None,
        }
    }

    /// The runtime message and status inside, if a runtime call failed.
    pub fn as_runtime(&self) -> Option<(&'static str, &NrtError)> {
        match self {
            BindError::Runtime { message, source, .. } => Some((message, source)),
            BindError::Rank { source, .. } => source.as_runtime(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_error_display_has_kind_index_name_values_and_exact_message() {
        let error = ValidateError::new(
            ValidateKind::Dtype,
            Some(0),
            Some("input0".to_owned()),
            "Float".to_owned(),
            "Int".to_owned(),
        );
        assert_eq!(
            error.trace_line(),
            "validate error dtype input 0 \"input0\": Expected tensor.dtype() == dtype (expected Float, got Int)"
        );
        let count = ValidateError::new(ValidateKind::Count, None, None, "2".into(), "1".into());
        assert_eq!(
            count.to_string(),
            "count: Expected npts->impl()->size() == tensors.size() (expected 2, got 1)"
        );
    }
}

//! The HLO interpreter: evaluates a module's entry computation over byte buffers.
//!
//! Design choices:
//! - [`Program::compile`] turns an `HloModuleProto` into a plan once: computations in call-graph
//!   order, instructions in topological order with operands resolved to indices, every shape
//!   parsed and checked against what its operands imply, attributes decoded into an `Op`
//!   enum, and every declared array checked against the byte budget. [`Program::run`] then does
//!   no name or id lookups and trusts the shapes, so kernels index without re-checking.
//! - Values inside the interpreter are reference-counted (`Val`), so tuples, get-tuple-element,
//!   parameters and pass-through ops share buffers; an instruction's operands are dropped after
//!   their last use, which bounds peak memory by the live set rather than the whole graph.
//! - Kernels are generic over the element type and instantiated per type (see `tensor`), with
//!   narrow floats computed in f32 and rounded per instruction as XLA on CPU does.
//! - Called computations on scalars (reduce's `to_apply`, sort's comparator) are recognised
//!   when they are one binary op or one compare of their parameters, or by their instructions
//!   an argmax/argmin-style reducer or a lexicographic comparator (`recognise`), and run as
//!   direct kernels; anything else runs through the general interpreter.
//! - A `call` (or `fusion`) is inlined at compile time: its callee's instructions take its place
//!   in the caller's plan (`inline`), so elementwise chains fuse across the call; the call and
//!   the callee's parameters stay as charge-only entries, so the limits see what they saw
//!   when the call ran the callee, and errors still name the callee's instructions. Inlining is
//!   bounded for the whole program (65 536 instructions, or twice the module's, whichever is
//!   more); past that calls stay calls, and a plan whose calls nest deeper than 256 is refused
//!   (`docs/limits.md`), so no module within the count limits multiplies its memory.
//! - SPMD: [`evaluate_spmd`] runs one thread per rank; collectives meet at an exchange that any
//!   failing rank aborts, so a failure on one rank is an error on all, never a hang.
//! - While loops stop with [`EvalError::WhileLimit`] after [`EvalOptions::max_while_iterations`]
//!   (default 10^7), since a test bench must not hang on a loop that never ends.
//! - A per-loop cap does not bound a run: two nested loops each under it run 10^14 iterations.
//!   A device bounds a launch by time (libnrt's execution timeout), so by default a run is
//!   bounded by the **device time** it would take ([`EvalOptions::device_time_limit`], default
//!   [`DEFAULT_DEVICE_TIME_LIMIT`], libnrt's default timeout): each instruction is charged, before
//!   it runs, a lower bound of what one NeuronCore needs for it at the fastest published rates
//!   ([`device_time`]): at least one instruction's issue latency, and no less than its
//!   multiply-adds at the tensor engine's peak or its elements at the other engines' peak. A
//!   launch a device finishes within its timeout is never refused, and a runaway loop is stopped
//!   once a device would have timed out on it, with [`EvalError::DeviceTime`].
//! - An optional **work budget** ([`EvalOptions::work_budget`], default none) bounds the same
//!   run in the interpreter's own *element-operations*, for a caller who wants a tighter and
//!   device-independent bound: each instruction is charged [`INSTRUCTION_WORK`] (the
//!   interpreter's fixed cost of dispatching and allocating, which dominates scalar loops) plus
//!   the elements it reads and writes, plus its inner products for dot, convolution and windowed
//!   ops, and a charge that would pass the budget stops the run with [`EvalError::WorkBudget`].
//! - Both costs are computed once at compile time, and each count is a plain per-rank integer
//!   added to once per instruction, never per element and never atomic; a charge over a limit
//!   stops the run before that instruction does any work. Called computations (loop bodies,
//!   comparators, non-trivial reducers) charge their own instructions.
//! - A wall-clock limit ([`EvalOptions::time_limit`], default none) is checked at the same
//!   points, reading the clock every [`CLOCK_EVERY`] instructions and after any instruction
//!   heavier than [`HEAVY_WORK`], and stops the run with [`EvalError::TimeLimit`]. One
//!   instruction is never interrupted, so the limit is overrun by at most that instruction.
//!   In an SPMD run each rank has its own count and its own clock check (a launch of a NEFF on
//!   several cores is one program per core), and a rank that stops aborts the others.

mod batch_norm;
mod boundary;
mod collective;
mod compile;
mod conv;
mod dot;
pub(crate) mod elementwise;
mod exec;
mod fusion;
mod gather;
mod inline;
mod math;
mod nki_call;
mod op_context;
mod opcodes;
mod packed_gemm;
mod par;
mod program;
mod rank_threads;
mod recognise;
mod reduce;
mod shape;
pub(crate) mod shape_ops;
mod simd;
mod sort;
mod structure;
pub(crate) mod tensor;

use std::time::Duration;

use crate::dtype::ElementType;
use crate::proto;
pub use boundary::{Input, Output};
pub use dot::gemm_kernel;
pub use nki_call::carries_nki_program;
pub use opcodes::{
    EVALUATED_CUSTOM_CALLS, EVALUATED_OPCODES, is_evaluated, is_evaluated_custom_call,
};
pub use program::Program;
pub use simd::level as simd_level;

/// The default [`EvalOptions::device_time_limit`]: 30 s, libnrt's documented default of
/// `NEURON_RT_EXEC_TIMEOUT` (`docs/limits.md` gives the sources).
pub const DEFAULT_DEVICE_TIME_LIMIT: Duration = Duration::from_secs(30);

/// The device-time model: a lower bound of the time one NeuronCore takes for an instruction,
/// from the fastest figures AWS publishes for any NeuronCore (the NKI architecture guides of
/// Trainium, Trainium2 and Trainium3; `docs/limits.md` has each figure and its source). Times are
/// integer femtoseconds; 2^64 fs is 5.1 hours, so a limit longer than that is no limit.
pub mod device_time {
    /// Femtoseconds in a second.
    pub const FS_PER_SECOND: u64 = 1_000_000_000_000_000;

    /// An instruction that computes costs at least this: 64 engine cycles (the smallest fixed
    /// latency published for an engine instruction, the tensor engine's initiation latency) at
    /// 2.8 GHz (the fastest published engine clock), 22.86 ns.
    pub const INSTRUCTION_FS: u64 = 64 * FS_PER_SECOND / 2_800_000_000;

    /// Multiply-adds per second at the highest published tensor-engine rate of one NeuronCore:
    /// 316 TFLOPS (NeuronCore-v3's sparse rate, above every dense one), two FLOPs each.
    pub const PEAK_MULTIPLY_ADDS_PER_SECOND: u64 = 316_000_000_000_000 / 2;

    /// One multiply-add at [`PEAK_MULTIPLY_ADDS_PER_SECOND`], rounded down: 6 fs.
    pub const MULTIPLY_ADD_FS: u64 = FS_PER_SECOND / PEAK_MULTIPLY_ADDS_PER_SECOND;

    /// Elements read or written per second by the vector, scalar and GpSimd engines together at
    /// their widest published data paths (512, 256 and 128 elements per cycle, each way, at
    /// 1.2 GHz): 2 × 1075.2 × 10^9.
    pub const PEAK_ELEMENTS_PER_SECOND: u64 = 2 * (512 + 256 + 128) * 1_200_000_000;

    /// One element read or written at [`PEAK_ELEMENTS_PER_SECOND`], rounded down: 465 fs.
    pub const ELEMENT_FS: u64 = FS_PER_SECOND / PEAK_ELEMENTS_PER_SECOND;

    /// A duration in femtoseconds, saturated at `u64::MAX`.
    pub fn femtoseconds(duration: std::time::Duration) -> u64 {
        u64::try_from(duration.as_nanos().saturating_mul(1_000_000)).unwrap_or(u64::MAX)
    }
}

/// The work every instruction is charged besides its elements: the interpreter's fixed cost per
/// instruction (operand lookup, dispatch, an allocation) is about that of this many element
/// operations.
pub const INSTRUCTION_WORK: u64 = 16;

/// How many instructions run between two readings of the clock when a time limit is set.
pub const CLOCK_EVERY: u32 = 256;

/// An instruction charged at least this much work reads the clock after it runs.
pub const HEAVY_WORK: u64 = 1 << 16;

/// The naive loops the benchmark compares the interpreter's kernels with.
pub mod baseline {
    pub use super::conv::naive_conv2d;
    pub use super::dot::naive_matmul;
}

/// An array in logical row-major element order, little-endian; pred is one byte 0 or 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array {
    /// The element type.
    pub ty: proto::PrimitiveType,
    /// The dimensions (empty for a scalar).
    pub dims: Vec<i64>,
    /// The elements, `item_size × Π dims` bytes.
    pub bytes: Vec<u8>,
}

/// A result or argument: an array or a tuple of values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// An array.
    Array(Array),
    /// A tuple.
    Tuple(Vec<Value>),
}

impl Value {
    /// The arrays of this value, tuples flattened depth-first.
    pub fn flatten(&self) -> Vec<&Array> {
        match self {
            Value::Array(array) => vec![array],
            Value::Tuple(items) => items.iter().flat_map(Value::flatten).collect(),
        }
    }
}

/// Options of an evaluation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalOptions {
    /// The largest array (an intermediate, a parameter or a result) that may be allocated, in
    /// bytes. Default 4 GiB.
    pub budget_bytes: u64,
    /// How many iterations one `while` may run before the evaluation fails; `None` for no limit.
    /// Default 10^7.
    pub max_while_iterations: Option<u64>,
    /// The device time one run (one rank of it) may take, estimated by the device-time model
    /// (see the module docs and [`device_time`]); `None` for no limit. Default
    /// [`DEFAULT_DEVICE_TIME_LIMIT`].
    pub device_time_limit: Option<Duration>,
    /// The total work one run (one rank of it) may do, in element-operations (see the module
    /// docs); `None` for no limit, the default.
    pub work_budget: Option<u64>,
    /// How long one run may take on the wall clock, from the start of [`Program::run`] (or of an
    /// SPMD run); `None` for no limit, the default.
    pub time_limit: Option<Duration>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            budget_bytes: 4 << 30,
            max_while_iterations: Some(10_000_000),
            device_time_limit: Some(DEFAULT_DEVICE_TIME_LIMIT),
            work_budget: None,
            time_limit: None,
        }
    }
}

/// The limits of one run, which a runtime may set after compiling ([`Program::set_run_limits`]);
/// each is the [`EvalOptions`] field of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunLimits {
    /// [`EvalOptions::device_time_limit`].
    pub device_time_limit: Option<Duration>,
    /// [`EvalOptions::work_budget`].
    pub work_budget: Option<u64>,
    /// [`EvalOptions::time_limit`].
    pub time_limit: Option<Duration>,
}

/// Why a module could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The module as a whole is malformed (no entry computation, duplicate ids, call cycles).
    #[error("invalid module: {detail}")]
    Module {
        /// What is wrong.
        detail: String,
    },
    /// An instruction does not fit its operands or attributes.
    #[error("computation {computation}, instruction {instruction}: {detail}")]
    Invalid {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// What was expected and what came.
        detail: String,
    },
    /// An opcode, custom call or element type the interpreter does not evaluate.
    #[error("computation {computation}, instruction {instruction}: unsupported {what}")]
    Unsupported {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// What is unsupported, e.g. `custom call Sharding` or `opcode rng-bit-generator`.
        what: String,
    },
    /// An array larger than [`EvalOptions::budget_bytes`].
    #[error(
        "computation {computation}, instruction {instruction}: needs {needed} bytes, over the budget of {budget} bytes"
    )]
    Budget {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// The bytes the array needs (saturated at `u64::MAX`).
        needed: u64,
        /// The budget.
        budget: u64,
    },
    /// The allocator refused memory within the budget.
    #[error(
        "computation {computation}, instruction {instruction}: allocation of {bytes} bytes failed"
    )]
    OutOfMemory {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// The size asked for.
        bytes: u64,
    },
    /// The storage of an argument or a result at the boundary could not be allocated.
    #[error("allocation of {bytes} bytes for {what} failed")]
    Allocation {
        /// The array, e.g. `f16[32768,65536]`.
        what: String,
        /// The size asked for.
        bytes: u64,
    },
    /// A while loop reached [`EvalOptions::max_while_iterations`].
    #[error(
        "computation {computation}, instruction {instruction}: while loop still running after {limit} iterations, the limit in EvalOptions"
    )]
    WhileLimit {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// The limit.
        limit: u64,
    },
    /// The run would pass [`EvalOptions::work_budget`] with this instruction, which did not run.
    #[error(
        "computation {computation}, instruction {instruction}: the run would exceed its work budget of {budget} element-operations (EvalOptions::work_budget), expected a module that finishes within it"
    )]
    WorkBudget {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// The budget.
        budget: u64,
    },
    /// With this instruction the run's estimated device time would pass
    /// [`EvalOptions::device_time_limit`]; the instruction did not run.
    #[error(
        "computation {computation}, instruction {instruction}: a NeuronCore could not finish the run within the execution timeout of {} s (EvalOptions::device_time_limit), even at its peak rates; expected a module a device finishes within it",
        limit.as_secs_f64()
    )]
    DeviceTime {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// The limit.
        limit: Duration,
    },
    /// The run was still going when [`EvalOptions::time_limit`] passed.
    #[error(
        "computation {computation}, instruction {instruction}: still running after the time limit of {} ms (EvalOptions::time_limit)",
        limit.as_millis()
    )]
    TimeLimit {
        /// The computation's name.
        computation: String,
        /// The instruction that had just run.
        instruction: String,
        /// The limit.
        limit: Duration,
    },
    /// The number of arguments differs from the entry computation's parameters.
    #[error("expected {expected} arguments for the entry computation, got {got}")]
    ArgumentCount {
        /// Parameters of the entry computation.
        expected: usize,
        /// Arguments given.
        got: usize,
    },
    /// An argument does not match its parameter's shape.
    #[error("argument {index}: expected {expected}, got {got}")]
    Argument {
        /// The parameter number.
        index: usize,
        /// The parameter's shape.
        expected: String,
        /// What was given.
        got: String,
    },
    /// An array's bytes do not fit its type and dimensions, or a layout is not a permutation.
    #[error("array: {detail}")]
    Array {
        /// What is wrong.
        detail: String,
    },
    /// One rank of an SPMD evaluation failed.
    #[error("rank {rank}: {source}")]
    Rank {
        /// The rank that failed first.
        rank: usize,
        /// Its error.
        source: Box<EvalError>,
    },
}

impl EvalError {
    /// The error itself, or for [`EvalError::Rank`] the rank's own error (unwrapped to the
    /// bottom), so a caller can tell which limit stopped an SPMD run.
    pub fn innermost(&self) -> &EvalError {
        match self {
            EvalError::Rank { source, .. } => source.innermost(),
            other => other,
        }
    }
}

/// Failures inside kernels, given their computation and instruction by the executor.
#[derive(Debug)]
pub(crate) enum Fail {
    /// Bad operands or attributes (compile time) or data (run time).
    Invalid(String),
    /// Something not evaluated.
    Unsupported(String),
    /// An array over the budget.
    Budget { needed: u64 },
    /// The allocator refused.
    Alloc { bytes: u64 },
    /// A while loop reached its limit.
    WhileLimit(u64),
    /// The run's work budget would be passed.
    WorkBudget(u64),
    /// The run's device-time limit would be passed.
    DeviceTime(Duration),
    /// The run's time limit passed.
    TimeLimit(Duration),
    /// A bug of ours that we refuse to turn into a panic.
    Internal(String),
    /// An error from a called computation, already with its own context.
    Nested(Box<EvalError>),
}

impl Fail {
    pub(crate) fn at(self, computation: &str, instruction: &str, budget: u64) -> EvalError {
        let computation = computation.to_owned();
        let instruction = instruction.to_owned();
        match self {
            Fail::Invalid(detail) => EvalError::Invalid { computation, instruction, detail },
            Fail::Internal(detail) => EvalError::Invalid {
                computation,
                instruction,
                detail: format!("internal error: {detail}"),
            },
            Fail::Unsupported(what) => EvalError::Unsupported { computation, instruction, what },
            Fail::Budget { needed } => {
                EvalError::Budget { computation, instruction, needed, budget }
            }
            Fail::Alloc { bytes } => EvalError::OutOfMemory { computation, instruction, bytes },
            Fail::WhileLimit(limit) => EvalError::WhileLimit { computation, instruction, limit },
            Fail::WorkBudget(budget) => EvalError::WorkBudget { computation, instruction, budget },
            Fail::DeviceTime(limit) => EvalError::DeviceTime { computation, instruction, limit },
            Fail::TimeLimit(limit) => EvalError::TimeLimit { computation, instruction, limit },
            Fail::Nested(error) => *error,
        }
    }
}

impl Array {
    /// An array of `ty` and `dims` over `bytes`.
    ///
    /// # Errors
    /// [`EvalError::Array`] when the type is not one the interpreter evaluates, a dimension is
    /// negative, or `bytes` is not `item_size × Π dims` long.
    pub fn new(
        ty: proto::PrimitiveType,
        dims: Vec<i64>,
        bytes: Vec<u8>,
    ) -> Result<Array, EvalError> {
        let array = Array { ty, dims, bytes };
        array.check()?;
        Ok(array)
    }

    /// The element type, if the interpreter evaluates it.
    pub fn element_type(&self) -> Option<ElementType> {
        ElementType::from_primitive(self.ty as i32)
    }

    /// Checks type, dimensions and length; returns the element type and dims as `usize`.
    pub(crate) fn check(&self) -> Result<(ElementType, Vec<usize>), EvalError> {
        let (ty, dims, expected) = boundary::check_shape(self.ty, &self.dims)?;
        if expected != self.bytes.len() {
            return Err(EvalError::Array {
                detail: format!(
                    "{}{:?} needs {expected} bytes, got {}",
                    ty,
                    self.dims,
                    self.bytes.len()
                ),
            });
        }
        Ok((ty, dims))
    }

    /// An f32 array (for tests and tools).
    pub fn from_f32(dims: &[i64], values: &[f32]) -> Array {
        Array {
            ty: proto::PrimitiveType::F32,
            dims: dims.to_vec(),
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// An s32 array (for tests and tools).
    pub fn from_i32(dims: &[i64], values: &[i32]) -> Array {
        Array {
            ty: proto::PrimitiveType::S32,
            dims: dims.to_vec(),
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    /// The elements as f64, whatever the type (pred as 0/1), for comparisons in tests and tools.
    ///
    /// # Errors
    /// As [`Array::new`] for a malformed array.
    pub fn to_f64(&self) -> Result<Vec<f64>, EvalError> {
        let (ty, _) = self.check()?;
        let data = tensor::Data::from_le_bytes(ty, &self.bytes)
            .map_err(|fail| EvalError::Array { detail: format!("{fail:?}") })?;
        match elementwise::convert(&data, ElementType::F64) {
            Ok(tensor::Data::F64(v)) => Ok(v),
            _ => Err(EvalError::Array { detail: "conversion to f64 failed".into() }),
        }
    }

    /// Builds the logical array from bytes laid out physically with `minor_to_major` (XLA's
    /// layout: the first entry is the fastest-varying dimension).
    ///
    /// # Errors
    /// [`EvalError::Array`] for a malformed array or a layout that is not a permutation of the
    /// dimensions.
    pub fn from_physical(
        ty: proto::PrimitiveType,
        dims: Vec<i64>,
        minor_to_major: &[i64],
        bytes: Vec<u8>,
    ) -> Result<Array, EvalError> {
        let input = Input::from_physical(ty, &dims, minor_to_major, &bytes)?;
        drop(bytes);
        Output { tensor: std::sync::Arc::new(input.tensor) }.to_array()
    }

    /// The bytes of this array laid out physically with `minor_to_major`.
    ///
    /// # Errors
    /// As [`Array::from_physical`].
    pub fn to_physical(&self, minor_to_major: &[i64]) -> Result<Vec<u8>, EvalError> {
        let input = Input::from_le_bytes(self.ty, &self.dims, &self.bytes)?;
        let output = Output { tensor: std::sync::Arc::new(input.tensor) };
        Ok(output.to_physical_array(Some(minor_to_major))?.bytes)
    }
}

/// `minor_to_major` reversed, checked to be a permutation of `0..rank`.
fn major_to_minor(minor_to_major: &[i64], rank: usize) -> Result<Vec<usize>, EvalError> {
    let mut seen = vec![false; rank];
    let mut order = Vec::with_capacity(rank);
    for &d in minor_to_major.iter().rev() {
        let ok = usize::try_from(d).ok().filter(|&d| d < rank && !seen[d]);
        let Some(d) = ok else {
            return Err(EvalError::Array {
                detail: format!("layout {minor_to_major:?} is not a permutation of 0..{rank}"),
            });
        };
        seen[d] = true;
        order.push(d);
    }
    if order.len() != rank {
        return Err(EvalError::Array {
            detail: format!("layout {minor_to_major:?} is not a permutation of 0..{rank}"),
        });
    }
    Ok(order)
}

/// Compiles and runs a module's entry computation on one rank.
///
/// # Errors
/// Any [`EvalError`]: a malformed module or instruction, arguments that do not match the entry
/// parameters, an array over the budget, an unsupported construct.
pub fn evaluate(
    module: &proto::HloModuleProto,
    args: &[Array],
    options: &EvalOptions,
) -> Result<Value, EvalError> {
    Program::compile(module, options)?.run(args)
}

/// Compiles a module once and runs it on every rank of one SPMD launch, collectives exchanging
/// data between the ranks. `args_per_rank[r]` are rank `r`'s arguments.
///
/// # Errors
/// As [`evaluate`]; a failure on one rank is [`EvalError::Rank`] naming the first that failed.
pub fn evaluate_spmd(
    module: &proto::HloModuleProto,
    args_per_rank: &[Vec<Array>],
    options: &EvalOptions,
) -> Result<Vec<Value>, EvalError> {
    Program::compile(module, options)?.run_spmd(args_per_rank)
}

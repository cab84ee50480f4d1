//! The HLO interpreter: evaluates a module's entry computation over byte buffers.
//!
//! It reads top-down: `program` (every method of [`Program`]) builds a plan with `compile` and
//! runs it with `exec`; both reach the op families (`dot`, `reduce`, `gather`, …), which read
//! their part of the plan from `plan` and build on the leaves (`tensor`, `shape`, `scalar`,
//! `math`, `par`, …). No module imports one above it, and `cargo xtask tidy` fails on a circle.
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
mod error;
mod exec;
mod fusion;
mod gather;
mod inline;
mod math;
mod nki_call;
mod op_context;
mod opcodes;
mod options;
mod packed_gemm;
mod par;
mod plan;
mod program;
mod rank_threads;
mod recognise;
mod reduce;
mod scalar;
mod shape;
pub(crate) mod shape_ops;
mod simd;
mod sort;
mod structure;
pub(crate) mod tensor;

use crate::proto;
pub use boundary::{Array, Input, Output, Value};
pub use dot::gemm_kernel;
pub use error::EvalError;
pub use nki_call::carries_nki_program;
pub use opcodes::{
    EVALUATED_CUSTOM_CALLS, EVALUATED_OPCODES, is_evaluated, is_evaluated_custom_call,
};
pub use options::{
    CLOCK_EVERY, DEFAULT_DEVICE_TIME_LIMIT, EvalOptions, HEAVY_WORK, INSTRUCTION_WORK, RunLimits,
    device_time,
};
pub use plan::Program;
pub use simd::level as simd_level;

/// The naive loops the benchmark compares the interpreter's kernels with.
pub mod baseline {
    pub use super::conv::naive_conv2d;
    pub use super::dot::naive_matmul;
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

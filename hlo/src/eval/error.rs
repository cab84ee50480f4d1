//! Errors: [`EvalError`], what a caller sees, and [`Fail`], what a kernel returns before the
//! executor names the computation and instruction it failed in.

use std::time::Duration;

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
    /// An array larger than [`EvalOptions::budget_bytes`](crate::eval::EvalOptions::budget_bytes).
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
    /// A while loop reached [`EvalOptions::max_while_iterations`](crate::eval::EvalOptions::max_while_iterations).
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
    /// The run would pass [`EvalOptions::work_budget`](crate::eval::EvalOptions::work_budget) with this instruction, which did not run.
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
    /// [`EvalOptions::device_time_limit`](crate::eval::EvalOptions::device_time_limit); the instruction did not run.
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
    /// The run was still going when [`EvalOptions::time_limit`](crate::eval::EvalOptions::time_limit) passed.
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

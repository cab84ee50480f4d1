//! What a caller sets for a run ([`EvalOptions`], [`RunLimits`]) and the cost model a run is
//! charged by: the device-time model ([`device_time`]) and the work count ([`INSTRUCTION_WORK`]),
//! with how often the clock is read ([`CLOCK_EVERY`], [`HEAVY_WORK`]). The `eval` module docs say
//! how they bound a run.

use std::time::Duration;

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
    /// How long one run may take on the wall clock, from the start of [`Program::run`](crate::eval::Program::run) (or of an
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

/// The limits of one run, which a runtime may set after compiling ([`Program::set_run_limits`](crate::eval::Program::set_run_limits));
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

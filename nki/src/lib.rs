//! Traced NKI kernel programs: the document the Python frontend writes, validated and run.
//!
//! An NKI kernel is traced once per SPMD program by the frontend (`python/nki`), which emits a
//! flat list of instructions over access patterns (docs/nki-program.md). This crate is where all
//! of their semantics live; the frontend only decides shapes, dtypes and which instructions to
//! emit.
//!
//! Design choices:
//! - **Validate once, then trust.** [`Program::from_json`] checks everything static: versions,
//!   ids, partition sizes, ranks and shapes per op. Kernels check only what depends on data or
//!   on the mask: indirect indices, reads of unwritten memory, and bounds. An access pattern may
//!   reach past its tensor where the mask leaves those elements out, so bounds are checked on
//!   the elements an instruction touches; the pattern's range of offsets, computed from its
//!   strides and counts, says when no element needs a check, which is nearly always.
//! - **One list of ops.** `ops::declare_ops!` declares the ops once; parsing, validation,
//!   liveness and execution match on the resulting enum exhaustively.
//! - **Float32 tiles, rows when possible.** Each operand of an instruction is loaded as a
//!   float32 vector over the iteration shape, computed on (the operator chosen once per
//!   instruction, not per element), and stored with one conversion to the destination dtype:
//!   the engines' numerics. An operand the instruction reads or writes whole (no mask, no
//!   indirect dimension, its offset range inside the tensor, every element written before) is
//!   walked row by row, its dimensions merged into the longest contiguous runs; any other
//!   becomes a list of element offsets (a skipped element is a sentinel) checked one by one.
//!   Each tensor counts its unwritten elements, so a fully written one skips its bitmap. A
//!   128 × 512 float32 add takes about 0.1 ms in a release build, a 128 × 128 × 512 matmul
//!   about 1 ms.
//! - **Unwritten memory is tracked.** Every tensor that is not an input has a bit per element;
//!   reading an unwritten element gives NaN (0 for integers) and a warning, and an output element
//!   nothing wrote is a warning. Strict mode makes both errors, so a kernel that forgets a store
//!   fails in tests instead of passing on zeros.
//! - **Deterministic.** Random instructions draw from a generator seeded by the program's `seed`;
//!   the report orders everything by instruction.
#![forbid(unsafe_code)]

pub mod alu;
pub mod dtype;
mod exec;
mod kernels;
mod memory;
pub mod ops;
pub mod program;
mod random;

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

pub use alu::{ActFunc, AluOp};
pub use dtype::Dtype;
pub use program::{Program, ProgramError, ProgramErrorKind, SourceLoc};

/// How to run a program.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Make reads of unwritten memory and unwritten output elements errors, not warnings.
    pub strict: bool,
    /// The most bytes the run's tensors may take (their elements and written-bitmaps).
    pub max_memory_bytes: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { strict: false, max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES }
    }
}

/// The default of [`RunOptions::max_memory_bytes`]: 4 GiB, as a laptop can hold.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 4 << 30;

/// What a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Each output's bytes, little-endian elements, in the order of the program's `outputs`.
    pub outputs: Vec<Vec<u8>>,
    /// Warnings, prints and statistics.
    pub report: Report,
}

/// The report of a run (docs/nki-program.md, *Running*).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Why the run failed; absent when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorRecord>,
    /// What the run noticed, in the order it happened.
    pub warnings: Vec<Warning>,
    /// What `print` instructions recorded, in order.
    pub prints: Vec<PrintRecord>,
    /// Counts and peaks.
    pub stats: Stats,
}

/// A failed run's error as the report holds it (docs/nki-program.md, *Running*).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorRecord {
    /// The error's kind: the name of its [`RunErrorKind`] or [`ProgramErrorKind`] variant
    /// (`OutOfBounds`, `Capacity`, ...), or a name the caller gives (`Io`).
    pub kind: String,
    /// The message, as the error displays.
    pub message: String,
    /// `FILE:LINE` where it happened, when known.
    pub loc: Option<String>,
    /// For `OutOfBounds`: the tensor, the offset and the tensor's element count.
    #[serde(flatten)]
    pub out_of_bounds: Option<OutOfBoundsRecord>,
}

/// The facts of an `OutOfBounds` error, for a frontend to raise its own error from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutOfBoundsRecord {
    /// The tensor's name.
    pub tensor: String,
    /// The flat element offset of the element outside (`None` past the range of int64).
    pub offset: Option<i64>,
    /// The tensor's number of elements.
    pub numel: u64,
}

/// The kinds of warning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum WarningKind {
    /// An instruction read an element nothing had written.
    UninitializedRead,
    /// An output element nothing wrote.
    UnwrittenOutput,
}

/// One warning.
#[derive(Clone, Debug, Serialize)]
pub struct Warning {
    /// Its kind.
    pub kind: WarningKind,
    /// What happened, naming the tensor and counts.
    pub message: String,
    /// `file:line` of the instruction (or of the output tensor).
    pub loc: Option<String>,
}

/// A printed tile.
#[derive(Clone, Debug, Serialize)]
pub struct PrintRecord {
    /// The print's label.
    pub label: String,
    /// `file:line` of the print.
    pub loc: String,
    /// The tile's shape.
    pub shape: Vec<u64>,
    /// Its values, row-major.
    pub values: Vec<PrintValue>,
}

/// One printed value: a JSON number when finite, `"nan"`, `"inf"` or `"-inf"` otherwise, and
/// `null` where the print's mask left the element out.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrintValue(pub Option<f32>);

impl Serialize for PrintValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            None => serializer.serialize_none(),
            Some(v) if v.is_nan() => serializer.serialize_str("nan"),
            Some(v) if v == f32::INFINITY => serializer.serialize_str("inf"),
            Some(v) if v == f32::NEG_INFINITY => serializer.serialize_str("-inf"),
            Some(v) => serializer.serialize_f32(v),
        }
    }
}

/// Counts and peaks of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// Instructions executed per engine (`tensor`, `vector`, ...).
    pub instructions_per_engine: BTreeMap<String, u64>,
    /// Bytes DMA instructions wrote (elements moved times the destination's element size).
    pub dma_bytes: u64,
    /// Instructions executed.
    pub instructions: u64,
    /// The most SBUF bytes per partition live tensors took at once.
    pub peak_sbuf_bytes_per_partition: u64,
    /// The most PSUM bytes per partition live tensors took at once.
    pub peak_psum_bytes_per_partition: u64,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[error("{}{kind}", match instruction { Some(i) => format!("instruction {i}: "), None => String::new() })]
pub struct RunError {
    /// The instruction that failed, if any.
    pub instruction: Option<usize>,
    /// Where in the kernel: the instruction's (or the output tensor's) `loc`, when known.
    pub loc: Option<SourceLoc>,
    /// What went wrong (boxed: errors travel in `Result`s that should stay small).
    pub kind: Box<RunErrorKind>,
    /// What the run had reported before it failed (warnings, prints, statistics of the
    /// instructions executed), when it got as far as executing instructions.
    pub partial_report: Option<Box<Report>>,
}

impl RunError {
    fn bare(kind: RunErrorKind) -> RunError {
        RunError { instruction: None, loc: None, kind: Box::new(kind), partial_report: None }
    }

    fn at(program: &Program, index: usize, kind: RunErrorKind) -> RunError {
        let loc = program.source_loc(program.instructions[index].loc);
        RunError {
            instruction: Some(index),
            loc: Some(loc),
            kind: Box::new(kind),
            partial_report: None,
        }
    }

    /// The error as a report holds it; an error with no instruction or tensor behind it
    /// (inputs, memory) is at the kernel's `file:line`.
    pub fn record(&self, program: &Program) -> ErrorRecord {
        let loc = match &self.loc {
            Some(loc) => loc.to_string(),
            None => format!("{}:{}", program.kernel.file, program.kernel.line),
        };
        let out_of_bounds = match &*self.kind {
            RunErrorKind::OutOfBounds { tensor, offset, numel, .. } => {
                Some(OutOfBoundsRecord { tensor: tensor.clone(), offset: *offset, numel: *numel })
            }
            _ => None,
        };
        ErrorRecord {
            kind: self.kind.name().to_owned(),
            message: self.to_string(),
            loc: Some(loc),
            out_of_bounds,
        }
    }

    /// The report to write for this failed run: what the run had reported, and the error.
    pub fn report(&self, program: &Program) -> Report {
        let mut report = self.partial_report.as_deref().cloned().unwrap_or_default();
        report.error = Some(self.record(program));
        report
    }
}

impl ProgramError {
    /// The error as a report holds it; `loc` is the error's, when it has one.
    pub fn record(&self) -> ErrorRecord {
        let out_of_bounds = match &*self.kind {
            ProgramErrorKind::OutOfBounds { tensor, offset, numel, .. } => {
                Some(OutOfBoundsRecord {
                    tensor: tensor.clone(),
                    offset: i64::try_from(*offset).ok(),
                    numel: *numel,
                })
            }
            _ => None,
        };
        ErrorRecord {
            kind: self.kind.name().to_owned(),
            message: self.to_string(),
            loc: self.loc.as_ref().map(ToString::to_string),
            out_of_bounds,
        }
    }
}

/// What went wrong in a run.
#[derive(Debug, thiserror::Error)]
pub enum RunErrorKind {
    /// The caller passed another number of inputs than the program has.
    #[error("the kernel takes {expected} inputs, {found} were given")]
    InputCount {
        /// The program's inputs.
        expected: usize,
        /// The inputs given.
        found: usize,
    },
    /// An input's size is not its tensor's.
    #[error("input {index} (tensor `{tensor}`) must be {expected} bytes, found {found} bytes")]
    InputSize {
        /// Which input.
        index: usize,
        /// Its tensor.
        tensor: String,
        /// numel × element size.
        expected: u64,
        /// The input's size.
        found: u64,
    },
    /// The tensors need more memory than the run may take.
    #[error("the program's tensors need {needed} bytes, more than the limit of {limit} bytes")]
    MemoryLimit {
        /// Bytes of elements and bitmaps.
        needed: u128,
        /// [`RunOptions::max_memory_bytes`].
        limit: u64,
    },
    /// An allocation failed.
    #[error("could not allocate {bytes} bytes")]
    Allocation {
        /// The size asked for.
        bytes: u128,
    },
    /// The live on-chip tensors do not fit in a buffer.
    #[error(
        "live {buffer} tensors take {live} bytes per partition, more than the {capacity} bytes of the target; largest live: {}",
        largest.iter().map(|(name, bytes)| format!("`{name}` ({bytes} bytes)")).collect::<Vec<_>>().join(", ")
    )]
    Capacity {
        /// `SBUF` or `PSUM`.
        buffer: &'static str,
        /// Live bytes per partition.
        live: u64,
        /// The target's bytes per partition.
        capacity: u64,
        /// The largest live tensors, name and bytes per partition.
        largest: Vec<(String, u64)>,
    },
    /// An element an instruction touches lies outside its tensor: an AP reaching past its
    /// tensor where the instruction's mask does not keep it inside, or an indirect index.
    #[error(
        "{operand} reaches outside tensor `{tensor}` ({numel} elements): index {index:?} is at offset {}",
        match offset { Some(o) => o.to_string(), None => "past the range of int64".into() }
    )]
    OutOfBounds {
        /// The operand.
        operand: String,
        /// The tensor's name.
        tensor: String,
        /// The iteration index of the element.
        index: Vec<u64>,
        /// Its offset (`None` when it overflows).
        offset: Option<i64>,
        /// The tensor's number of elements.
        numel: u64,
    },
    /// An instruction continued (`reduce_cmd` `reduce`) an accumulator register nothing set.
    #[error(
        "reduce_cmd `reduce` continues the {engine} engine's accumulator of partition \
         {partition}, which no earlier instruction set (reset_reduce or load_reduce; an \
         instruction with reduce_cmd `idle` leaves it undefined)"
    )]
    Accumulator {
        /// The engine.
        engine: &'static str,
        /// The partition (lane) of the instruction.
        partition: u64,
    },
    /// An operand holds a value the op cannot take (a negative segment id, an index past the
    /// data, `min >= max`).
    #[error("{operand}: {message}")]
    InvalidValue {
        /// The operand.
        operand: String,
        /// What value, where, and what was expected.
        message: String,
    },
    /// A read of unwritten elements (strict mode; a warning otherwise).
    #[error("reads {count} unwritten elements of tensor `{tensor}` (the first at offset {offset})")]
    UninitializedRead {
        /// The tensor.
        tensor: String,
        /// How many elements.
        count: u64,
        /// The first one's offset.
        offset: usize,
    },
    /// Output elements nothing wrote (strict mode; a warning otherwise).
    #[error(
        "output {index} (tensor `{tensor}`) has {count} elements no instruction wrote (the first at offset {offset})"
    )]
    UnwrittenOutput {
        /// Which output.
        index: usize,
        /// Its tensor.
        tensor: String,
        /// How many elements.
        count: u64,
        /// The first one's offset.
        offset: usize,
    },
}

/// Runs a validated program on `inputs` (one per program input, `numel × size` little-endian
/// bytes each).
///
/// # Errors
/// A [`RunError`] when the inputs do not match the program, the tensors do not fit in memory or
/// in the target's on-chip buffers, an indirect index leaves its tensor, or (strict) a read of
/// unwritten memory or an unwritten output element.
pub fn run(
    program: &Program,
    inputs: &[&[u8]],
    options: &RunOptions,
) -> Result<RunResult, RunError> {
    exec::run(program, inputs, options)
}

impl RunErrorKind {
    /// The variant's name, the `kind` of the report's `error`.
    pub fn name(&self) -> &'static str {
        match self {
            RunErrorKind::InputCount { .. } => "InputCount",
            RunErrorKind::InputSize { .. } => "InputSize",
            RunErrorKind::MemoryLimit { .. } => "MemoryLimit",
            RunErrorKind::Allocation { .. } => "Allocation",
            RunErrorKind::Capacity { .. } => "Capacity",
            RunErrorKind::OutOfBounds { .. } => "OutOfBounds",
            RunErrorKind::Accumulator { .. } => "Accumulator",
            RunErrorKind::InvalidValue { .. } => "InvalidValue",
            RunErrorKind::UninitializedRead { .. } => "UninitializedRead",
            RunErrorKind::UnwrittenOutput { .. } => "UnwrittenOutput",
        }
    }
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WarningKind::UninitializedRead => "UninitializedRead",
            WarningKind::UnwrittenOutput => "UnwrittenOutput",
        })
    }
}

#[cfg(test)]
mod tests;

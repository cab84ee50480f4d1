//! HLO text, the form XLA prints with `HloModule::ToString` / jax's `as_hlo_text()`.
//!
//! [`parse_module`] reads what XLA prints, old style (`%name`, typed operands
//! `f32[4]{0} %x`, computation signatures `%c (a: f32[]) -> f32[]`) and new style (bare names,
//! untyped operands, `name {`). [`print_module`] writes the new style, which XLA's parser reads
//! too. Parse and print are each other's inverse on what they produce: for any module `m` that
//! prints, `parse(print(m))` prints as `print(m)`; and a parsed module is reproduced exactly by
//! parsing its print.
//!
//! Choices worth knowing:
//! - Ids are assigned as XLA's own parser assigns them: computations are numbered from 0 in text
//!   order and instruction `i` of computation `c` gets id `c << 32 | i`. The text's own ids (the
//!   `.N` suffixes) are only names.
//! - Names are scoped to their computation; an operand may be defined later in the text than its
//!   user (the order is kept, and [`crate::validate`] rejects a cycle). In the module, as in
//!   XLA's, instruction names are one namespace (XLA's proto reader refuses a name used twice):
//!   the parser renames as XLA's parser does, a repeated `x` becoming `x.1`
//!   (`names::InstructionNames`), and the printer writes the names the parser will give.
//! - An unknown opcode is a parse error naming it, since attributes are read according to the
//!   opcode. An unknown attribute is skipped (XLA adds them every release), as are `sharding`
//!   and the header's `is_scheduled`, `num_partitions`, etc.; `backend_config` is kept as bytes,
//!   whether quoted or raw JSON in braces, and printed quoted.
//! - The parser fills in what XLA's parser fills in (the default comparison type of `compare`,
//!   all-DEFAULT operand precisions of `dot` and `convolution`, group counts of 1, one dynamic
//!   flag per dimension, `p0, p1, ...` in the entry layout), and the printer leaves those out, as
//!   XLA's does; and, when the text has no `entry_computation_layout`, the module's host program
//!   shape, derived from the entry computation as XLA's parser derives it (XLA's readers refuse a
//!   proto without one), which the printer then writes as the entry layout; `tests/text_xla.rs` holds both to XLA's output.
//! - Constants elided by XLA's printer (`constant({...})`) are an error: their values are lost.
//! - Literal values are written in logical (row-major index) order and stored in the proto in the
//!   physical order of the literal's layout, as XLA stores them.
//! - Floats are written as XLA writes them (C's `%g` with the digits the type needs); one
//!   deliberate difference in reading: XLA's lexer takes `-0` for the integer 0 and so loses the
//!   sign of a negative-zero constant, which we keep. (XLA also reads the smallest f8e8m0fnu,
//!   2^-127, printed as `5.9e-39`, back as 2^-126; we read it back as 2^-127.)
//! - Constants of every element type are read and written, sub-byte ones (s1..s4, u1..u4,
//!   f4e2m1fn) one element per byte, masked to their width, as XLA stores them.

mod float;
mod literal;
mod names;
mod parse;
mod print;

pub(crate) use literal::element_count;
pub use parse::parse_module;
pub(crate) use parse::{COMPARISON_TYPES, DIRECTIONS};
pub(crate) use parse::{Stop, parse_module_within};
pub use print::{PrintOptions, print_module, print_module_with};

/// A shape as the text writes it (`f32[2,3]{1,0}`), or its element type's number when the text
/// has no name for it.
pub(crate) fn shape_text(shape: &crate::proto::ShapeProto) -> String {
    let mut out = String::new();
    match print::shape(&mut out, shape) {
        Ok(()) => out,
        Err(_) => format!("a shape of element type {}", shape.element_type),
    }
}

/// Why text is not an HLO module. Every variant carries the 1-based line and column where the
/// problem was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// The text does not follow the grammar at this point.
    #[error("{line}:{column}: expected {expected}, found {found}")]
    Unexpected {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What the grammar allows here.
        expected: String,
        /// What the text has instead (a short excerpt, or "end of input").
        found: String,
    },
    /// A name is used but never defined in its scope.
    #[error("{line}:{column}: {what} `{name}` is not defined")]
    Undefined {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// "instruction" or "computation".
        what: &'static str,
        /// The name as written.
        name: String,
    },
    /// A name is defined twice in one scope.
    #[error("{line}:{column}: {what} `{name}` is defined twice")]
    Duplicate {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// "instruction", "computation" or "attribute".
        what: &'static str,
        /// The name.
        name: String,
    },
    /// An opcode XLA does not have.
    #[error("{line}:{column}: unknown opcode `{opcode}`")]
    UnknownOpcode {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The opcode as written.
        opcode: String,
    },
    /// Well-formed text whose meaning is invalid: a value out of range, a literal whose element
    /// count does not match its shape, an elided constant, nesting too deep.
    #[error("{line}:{column}: {message}")]
    Invalid {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong, saying what was expected and what came.
        message: String,
    },
}

impl TextError {
    /// The 1-based line of the error.
    pub fn line(&self) -> usize {
        match self {
            Self::Unexpected { line, .. }
            | Self::Undefined { line, .. }
            | Self::Duplicate { line, .. }
            | Self::UnknownOpcode { line, .. }
            | Self::Invalid { line, .. } => *line,
        }
    }

    /// The 1-based column of the error.
    pub fn column(&self) -> usize {
        match self {
            Self::Unexpected { column, .. }
            | Self::Undefined { column, .. }
            | Self::Duplicate { column, .. }
            | Self::UnknownOpcode { column, .. }
            | Self::Invalid { column, .. } => *column,
        }
    }
}

/// Why a module cannot be printed as text. Each names the computation and instruction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrintError {
    /// The instruction has no shape.
    #[error("computation `{computation}`, instruction `{instruction}`: has no shape")]
    MissingShape {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
    },
    /// An operand, control predecessor or root id names no instruction of the computation.
    #[error(
        "computation `{computation}`, instruction `{instruction}`: {role} id {id} is not an instruction of the computation"
    )]
    DanglingInstruction {
        /// The computation's name.
        computation: String,
        /// The instruction's name (empty for the root).
        instruction: String,
        /// "operand", "control predecessor" or "root".
        role: &'static str,
        /// The id that resolves to nothing.
        id: i64,
    },
    /// A called computation id names no computation of the module.
    #[error(
        "computation `{computation}`, instruction `{instruction}`: called computation id {id} is not in the module"
    )]
    DanglingComputation {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// The id that resolves to nothing.
        id: i64,
    },
    /// No computation has the entry computation's id (or name).
    #[error("the entry computation (id {id}, name `{name}`) is not in the module")]
    NoEntry {
        /// `entry_computation_id`.
        id: i64,
        /// `entry_computation_name`.
        name: String,
    },
    /// Something the text form cannot express: a name with characters outside
    /// `[A-Za-z0-9_.-]`, an unknown element type, a literal that does not match its shape, the
    /// wrong number of called computations for the opcode.
    #[error("computation `{computation}`, instruction `{instruction}`: {message}")]
    Unprintable {
        /// The computation's name (empty for the module header).
        computation: String,
        /// The instruction's name (empty when not about an instruction).
        instruction: String,
        /// What cannot be written, and why.
        message: String,
    },
}

//! Why text does not parse as a module ([`TextError`]) and why a module does not print as
//! text ([`PrintError`]): a leaf the parser and the printer both use.

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

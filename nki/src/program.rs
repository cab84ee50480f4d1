//! The program document (docs/nki-program.md) as types, read and validated in one place.
//!
//! [`Program::from_json`] is the only way to make a [`Program`], and it checks everything that
//! depends neither on data nor on the mask: the version, tensor ids, partition sizes, each
//! instruction's operand ranks and shapes, dtypes, and the bounds of index APs (read whole). The
//! executor trusts these checks; what depends on data (the values of an indirect dimension's
//! index) or on the mask (the bounds of the elements an instruction touches) it checks as it
//! runs.
//!
//! An instruction is read in two steps: the fields every instruction has (`op`, `engine`,
//! `loc`, `mask`) first, so that every later error names the instruction's index and `loc`,
//! then the op's own fields into that op's struct, which refuses unknown fields.

use std::fmt;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::dtype::Dtype;

/// The `format` field every program carries.
pub const FORMAT: &str = "nrtsim-nki-program";

/// The version of the document this crate reads.
pub const VERSION: u64 = 1;

/// The number of partitions of SBUF and PSUM: the largest partition dimension.
pub const MAX_PARTITIONS: u64 = 128;

/// The largest rank of an access pattern or tensor (NKI tiles have a handful of dimensions).
pub const MAX_RANK: usize = 8;

/// The most elements one instruction may iterate over (2^31): far above any tile, and small
/// enough that every count, index and offset the executor derives fits in `i64` and `usize`.
pub const MAX_INSTRUCTION_ELEMENTS: u64 = 1 << 31;

/// A validated program.
#[derive(Clone, Debug)]
pub struct Program {
    /// The kernel function, for messages.
    pub kernel: Kernel,
    /// The target, which selects capacities.
    pub target: Target,
    /// The SPMD grid the frontend traced (informational).
    pub grid: Vec<u64>,
    /// The seed of the random-number instructions.
    pub seed: u64,
    /// The source files that `loc`s index.
    pub files: Vec<String>,
    /// Every tensor; its index is its id.
    pub tensors: Vec<Tensor>,
    /// The kernel's tensor arguments, in call order.
    pub inputs: Vec<usize>,
    /// The kernel's results, in return order.
    pub outputs: Vec<usize>,
    /// The instructions, executed in order.
    pub instructions: Vec<Instruction>,
}

/// The kernel function a program was traced from.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// The function's name.
    pub name: String,
    /// The file that defines it.
    pub file: String,
    /// The line of its definition.
    pub line: u64,
}

/// The hardware generation a program is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Trainium 1 (NeuronCore-v2).
    Trn1,
    /// Trainium 2 (NeuronCore-v3).
    Trn2,
    /// Trainium 3 (NeuronCore-v4).
    Trn3,
}

impl Target {
    /// SBUF bytes per partition: 24, 28 and 32 MiB over 128 partitions (the NKI architecture
    /// guides, docs/nki.md).
    pub fn sbuf_bytes_per_partition(self) -> u64 {
        match self {
            Target::Trn1 => 192 << 10,
            Target::Trn2 => 224 << 10,
            Target::Trn3 => 256 << 10,
        }
    }

    /// PSUM bytes per partition: 2 MiB over 128 partitions on every generation.
    pub fn psum_bytes_per_partition(self) -> u64 {
        16 << 10
    }
}

/// Where a tensor lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Buffer {
    /// Device memory.
    Hbm,
    /// Device memory shared between programs of a grid.
    SharedHbm,
    /// Device memory private to one program.
    PrivateHbm,
    /// The state buffer (on chip).
    Sbuf,
    /// The partial-sum buffer (on chip), where matmuls accumulate.
    Psum,
}

impl Buffer {
    /// Whether the buffer is on chip (its tensors have a partition dimension, `par`).
    pub fn is_on_chip(self) -> bool {
        matches!(self, Buffer::Sbuf | Buffer::Psum)
    }
}

/// A source location: an index into [`Program::files`] and a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub struct Loc(pub usize, pub u64);

/// A source location resolved to its file name, printed `file:line`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLoc {
    /// The file.
    pub file: String,
    /// The line.
    pub line: u64,
}

impl fmt::Display for SourceLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A tensor of the program.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tensor {
    /// Its name, for messages.
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Its shape; on chip, dimension [`Tensor::par`] is the partition dimension.
    pub shape: Vec<u64>,
    /// Where it lives.
    pub buffer: Buffer,
    /// The partition dimension of an on-chip tensor (0 unless block axes come before it).
    #[serde(default)]
    pub par: usize,
    /// How many of its blocks (the combinations of the axes before `par`) take memory at once,
    /// when the kernel allocated it that way (a modulo allocation: block `i` lives in physical
    /// block `i % blocks`); all of them when absent.
    #[serde(default)]
    pub blocks: Option<u64>,
    /// Whether the kernel placed it at an address of its choice (an explicit allocation): the
    /// capacity check then counts it alone, not with the live tensors the executor places.
    #[serde(default)]
    pub placed: bool,
    /// Where it was allocated.
    pub loc: Loc,
}

impl Tensor {
    /// The number of elements (validated to fit in `i64`).
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }

    /// The size in bytes (validated to fit in `i64`).
    pub fn n_bytes(&self) -> u64 {
        self.numel() * self.dtype.n_bytes() as u64
    }

    /// The number of partitions of an on-chip tensor: `shape[par]` (validated to exist).
    pub fn partitions(&self) -> u64 {
        self.shape.get(self.par).copied().unwrap_or(1)
    }

    /// Bytes per partition of an on-chip tensor: the elements of every dimension but `par`
    /// times the element size, or of `blocks` of its blocks when it was allocated so.
    pub fn bytes_per_partition(&self) -> u64 {
        let free: u64 = self
            .shape
            .iter()
            .enumerate()
            .filter(|&(d, _)| d != self.par)
            .map(|(_, &count)| count)
            .product();
        let all = free * self.dtype.n_bytes() as u64;
        let block_count: u64 = self.shape.iter().take(self.par).product();
        match self.blocks {
            Some(blocks) if blocks < block_count => all / block_count * blocks,
            _ => all,
        }
    }
}

/// The engine an instruction runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// The tensor engine (matmul, transpose).
    Tensor,
    /// The vector engine.
    Vector,
    /// The scalar (activation) engine.
    Scalar,
    /// The general-purpose SIMD engine.
    Gpsimd,
    /// A DMA queue.
    Dma,
    /// No engine: prints.
    Sync,
}

impl Engine {
    /// The engine's name in the document.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Tensor => "tensor",
            Engine::Vector => "vector",
            Engine::Scalar => "scalar",
            Engine::Gpsimd => "gpsimd",
            Engine::Dma => "dma",
            Engine::Sync => "sync",
        }
    }
}

/// An access pattern over one tensor: `off + Σ i_d * stride_d`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ap {
    /// The tensor's id.
    pub t: usize,
    /// The element offset of index `(0, 0, ...)`.
    pub off: i64,
    /// `[stride, count]` per dimension, outermost first.
    pub ap: Vec<[i64; 2]>,
    /// An optional indirect (gathered or scattered) dimension.
    #[serde(default)]
    pub ind: Option<Box<Indirect>>,
}

impl Ap {
    /// The AP's shape: its counts (validated to be non-negative).
    pub fn shape(&self) -> Vec<u64> {
        self.ap.iter().map(|&[_, count]| count as u64).collect()
    }

    /// The smallest and the largest offset the pattern reaches, each with the index that
    /// reaches it, leaving out an indirect dimension's term; `None` for an empty pattern.
    /// Each dimension adds its term at index 0 or at its last index, whichever is smaller (or
    /// larger); i128 cannot overflow: at most [`MAX_RANK`] terms of i64 × i64.
    pub fn offset_range(&self) -> Option<[(i128, Vec<u64>); 2]> {
        if self.ap.iter().any(|&[_, count]| count <= 0) {
            return None;
        }
        let indirect = self.ind.as_ref().map(|ind| ind.dim);
        let mut low = (i128::from(self.off), vec![0u64; self.ap.len()]);
        let mut high = low.clone();
        for (d, &[stride, count]) in self.ap.iter().enumerate() {
            if Some(d) == indirect {
                continue;
            }
            let last = count - 1;
            let term = i128::from(stride) * i128::from(last);
            if term < 0 {
                low.0 += term;
                low.1[d] = last as u64;
            } else {
                high.0 += term;
                high.1[d] = last as u64;
            }
        }
        Some([low, high])
    }

    /// The offset and index of an element of the pattern outside `[0, numel)`, if its range
    /// leaves that (the lowest when it reaches below 0, else the highest).
    pub fn first_outside(&self, numel: u64) -> Option<(i128, Vec<u64>)> {
        let [low, high] = self.offset_range()?;
        [low, high].into_iter().find(|(offset, _)| *offset < 0 || *offset >= i128::from(numel))
    }
}

/// An indirect dimension: dimension `dim`'s index comes from the values of `index`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Indirect {
    /// The dimension whose index is replaced.
    pub dim: usize,
    /// The index values, an integer AP of the same rank (count-1 dimensions broadcast).
    pub index: Ap,
}

/// A scalar or a tile.
#[derive(Clone, Debug)]
pub enum Operand {
    /// An immediate, the same for every element.
    Imm(f32),
    /// A tile of the instruction's iteration shape.
    Ap(Ap),
}

/// Reads a number of the document: a JSON number, or one of the strings `"inf"`, `"-inf"` and
/// `"nan"`, since JSON has no non-finite numbers (docs/nki-program.md, *Operand*). Use it as
/// `#[serde(deserialize_with = "number")]`.
///
/// # Errors
/// serde's error when the value is neither a number nor one of the three strings.
pub fn number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = f64;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a number, \"inf\", \"-inf\" or \"nan\"")
        }

        fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<f64, E> {
            Ok(value)
        }

        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<f64, E> {
            Ok(value as f64)
        }

        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<f64, E> {
            Ok(value as f64)
        }

        fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<f64, E> {
            match value {
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                "nan" => Ok(f64::NAN),
                _ => Err(E::invalid_value(serde::de::Unexpected::Str(value), &self)),
            }
        }
    }
    deserializer.deserialize_any(Visitor)
}

impl<'de> Deserialize<'de> for Operand {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Imm {
            #[serde(deserialize_with = "number")]
            imm: f64,
        }
        let value = Value::deserialize(deserializer)?;
        if value.get("imm").is_some() {
            let imm: Imm = serde_json::from_value(value).map_err(serde::de::Error::custom)?;
            Ok(Operand::Imm(imm.imm as f32))
        } else {
            serde_json::from_value(value).map(Operand::Ap).map_err(serde::de::Error::custom)
        }
    }
}

/// A comparison of an affine predicate against 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cmp {
    /// `< 0`
    Lt,
    /// `<= 0`
    Le,
    /// `== 0`
    Eq,
    /// `!= 0`
    Ne,
    /// `>= 0`
    Ge,
    /// `> 0`
    Gt,
}

impl Cmp {
    /// Whether `value cmp 0` holds.
    pub fn holds(self, value: i64) -> bool {
        match self {
            Cmp::Lt => value < 0,
            Cmp::Le => value <= 0,
            Cmp::Eq => value == 0,
            Cmp::Ne => value != 0,
            Cmp::Ge => value >= 0,
            Cmp::Gt => value > 0,
        }
    }
}

/// An affine predicate over the iteration index: `Σ c_d * i_d + k  cmp  0`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pred {
    /// One coefficient per iteration dimension.
    pub c: Vec<i64>,
    /// The constant.
    pub k: i64,
    /// The comparison against 0.
    pub cmp: Cmp,
}

/// One instruction: the fields every instruction has, and its op.
#[derive(Clone, Debug)]
pub struct Instruction {
    /// The engine it runs on.
    pub engine: Engine,
    /// Where the frontend emitted it.
    pub loc: Loc,
    /// Predicates that must all hold for an element to be read or written.
    pub mask: Vec<Pred>,
    /// The op and its operands.
    pub op: crate::ops::Op,
}

/// Why a document is not a valid program.
#[derive(Debug, thiserror::Error)]
#[error("{}{kind}", match instruction { Some(i) => format!("instruction {i}: "), None => String::new() })]
pub struct ProgramError {
    /// The instruction the error is about, if any.
    pub instruction: Option<usize>,
    /// Where in the kernel: the instruction's or the tensor's `loc`, when known.
    pub loc: Option<SourceLoc>,
    /// What is wrong (boxed: errors travel in `Result`s that should stay small).
    pub kind: Box<ProgramErrorKind>,
}

/// What is wrong with a program.
#[derive(Debug, thiserror::Error)]
pub enum ProgramErrorKind {
    /// The bytes are not JSON, or not a document of the expected structure.
    #[error("invalid program JSON: {message}")]
    Json {
        /// serde_json's message.
        message: String,
        /// The document's line where reading stopped (1-based), when known.
        line: Option<usize>,
    },
    /// The `format` field is not [`FORMAT`].
    #[error("expected format `{FORMAT}`, found {found}")]
    Format {
        /// What the document says.
        found: String,
    },
    /// The `version` field is not [`VERSION`].
    #[error("expected program version {VERSION}, found version {found}")]
    Version {
        /// What the document says.
        found: String,
    },
    /// An instruction's fields do not match its op.
    #[error("`{op}`: {message}")]
    Field {
        /// The op.
        op: String,
        /// serde_json's message.
        message: String,
    },
    /// A tensor id is not an index into `tensors`.
    #[error("{role} names tensor {id}, but the program has {count} tensors")]
    TensorId {
        /// Which operand or list names it.
        role: String,
        /// The id.
        id: usize,
        /// The number of tensors.
        count: usize,
    },
    /// A `loc` names a file index past `files`.
    #[error("loc names file {index}, but the program has {count} files")]
    Loc {
        /// The file index.
        index: usize,
        /// The number of files.
        count: usize,
    },
    /// An on-chip tensor's partition dimension (`shape[par]`) is over 128 (or it has rank 0).
    #[error("tensor `{tensor}` in {buffer} has partition dimension {found}, expected 1 to 128")]
    PartitionDim {
        /// The tensor's name.
        tensor: String,
        /// The buffer.
        buffer: String,
        /// Its dimension `par` (0 for rank 0).
        found: u64,
    },
    /// An operand's shape is not what the op requires.
    #[error("{operand} has shape {found:?}, expected {expected}")]
    ShapeMismatch {
        /// The operand.
        operand: String,
        /// What the op requires, in words or as a shape.
        expected: String,
        /// The operand's shape.
        found: Vec<u64>,
    },
    /// An access pattern reaches an element outside its tensor.
    #[error(
        "{operand} reaches outside tensor `{tensor}` ({numel} elements): index {index:?} is at offset {offset}"
    )]
    OutOfBounds {
        /// The operand.
        operand: String,
        /// The tensor's name.
        tensor: String,
        /// The iteration index of the offending element.
        index: Vec<u64>,
        /// Its element offset.
        offset: i128,
        /// The tensor's number of elements.
        numel: u64,
    },
    /// A dtype the op cannot take.
    #[error("{operand} has dtype {found}, expected {expected}")]
    Dtype {
        /// The operand.
        operand: String,
        /// What the op takes.
        expected: String,
        /// The operand's dtype.
        found: String,
    },
    /// An op, ALU op or activation function the executor does not model.
    #[error("unsupported {what}")]
    Unsupported {
        /// What, with its name (`op \`foo\``).
        what: String,
    },
    /// A size past what the executor can hold.
    #[error("{what} is {found}, more than the limit of {limit}")]
    TooLarge {
        /// What.
        what: String,
        /// Its size.
        found: String,
        /// The limit.
        limit: String,
    },
    /// Anything else the document gets wrong.
    #[error("{0}")]
    Invalid(String),
}

impl ProgramError {
    fn bare(kind: ProgramErrorKind) -> ProgramError {
        ProgramError { instruction: None, loc: None, kind: Box::new(kind) }
    }
}

impl ProgramErrorKind {
    /// The variant's name, the `kind` of the report's `error`.
    pub fn name(&self) -> &'static str {
        match self {
            ProgramErrorKind::Json { .. } => "Json",
            ProgramErrorKind::Format { .. } => "Format",
            ProgramErrorKind::Version { .. } => "Version",
            ProgramErrorKind::Field { .. } => "Field",
            ProgramErrorKind::TensorId { .. } => "TensorId",
            ProgramErrorKind::Loc { .. } => "Loc",
            ProgramErrorKind::PartitionDim { .. } => "PartitionDim",
            ProgramErrorKind::ShapeMismatch { .. } => "ShapeMismatch",
            ProgramErrorKind::OutOfBounds { .. } => "OutOfBounds",
            ProgramErrorKind::Dtype { .. } => "Dtype",
            ProgramErrorKind::Unsupported { .. } => "Unsupported",
            ProgramErrorKind::TooLarge { .. } => "TooLarge",
            ProgramErrorKind::Invalid(_) => "Invalid",
        }
    }
}

/// The top-level document, with instructions still as JSON objects.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[allow(dead_code)]
    format: Value,
    #[allow(dead_code)]
    version: Value,
    kernel: Kernel,
    target: Target,
    grid: Vec<u64>,
    seed: u64,
    files: Vec<String>,
    tensors: Vec<Tensor>,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
    instructions: Vec<Map<String, Value>>,
}

/// Only `format` and `version`, read before anything else so that a document of another version
/// is refused by its version, not by a field this version does not know.
#[derive(Deserialize)]
struct Header {
    #[serde(default)]
    format: Option<Value>,
    #[serde(default)]
    version: Option<Value>,
}

fn json_error(error: &serde_json::Error) -> ProgramError {
    let line = (error.line() > 0).then_some(error.line());
    ProgramError::bare(ProgramErrorKind::Json { message: error.to_string(), line })
}

impl Program {
    /// Reads and validates a program document.
    ///
    /// # Errors
    /// A [`ProgramError`] when the bytes are not JSON, the format or version is not this
    /// crate's, a field is unknown or missing, or a check of docs/nki-program.md fails; errors
    /// about an instruction name its index and `loc`.
    pub fn from_json(bytes: &[u8]) -> Result<Program, ProgramError> {
        let header: Header = serde_json::from_slice(bytes).map_err(|e| json_error(&e))?;
        match &header.format {
            Some(Value::String(format)) if format == FORMAT => {}
            Some(other) => {
                return Err(ProgramError::bare(ProgramErrorKind::Format {
                    found: other.to_string(),
                }));
            }
            None => {
                return Err(ProgramError::bare(ProgramErrorKind::Format {
                    found: "no `format` field".into(),
                }));
            }
        }
        match &header.version {
            Some(Value::Number(n)) if n.as_u64() == Some(VERSION) => {}
            Some(other) => {
                return Err(ProgramError::bare(ProgramErrorKind::Version {
                    found: other.to_string(),
                }));
            }
            None => {
                return Err(ProgramError::bare(ProgramErrorKind::Version {
                    found: "none (no `version` field)".into(),
                }));
            }
        }
        let document: Document = serde_json::from_slice(bytes).map_err(|e| json_error(&e))?;
        let mut program = Program {
            kernel: document.kernel,
            target: document.target,
            grid: document.grid,
            seed: document.seed,
            files: document.files,
            tensors: document.tensors,
            inputs: document.inputs,
            outputs: document.outputs,
            instructions: Vec::new(),
        };
        program.validate_tensors()?;
        program
            .instructions
            .try_reserve_exact(document.instructions.len())
            .map_err(|_| too_large("the instruction list", document.instructions.len()))?;
        for (index, fields) in document.instructions.into_iter().enumerate() {
            let instruction = program.parse_instruction(index, fields)?;
            program.instructions.push(instruction);
        }
        for index in 0..program.instructions.len() {
            crate::ops::validate(&program, index).map_err(|kind| program.error_at(index, kind))?;
        }
        Ok(program)
    }

    /// Resolves a `loc` to its file name and line (validated: the index is in range).
    pub fn source_loc(&self, loc: Loc) -> SourceLoc {
        let file = self.files.get(loc.0).cloned().unwrap_or_else(|| self.kernel.file.clone());
        SourceLoc { file, line: loc.1 }
    }

    /// The error `kind` at instruction `index`.
    pub(crate) fn error_at(&self, index: usize, kind: ProgramErrorKind) -> ProgramError {
        let loc = self.instructions.get(index).map(|i| self.source_loc(i.loc));
        ProgramError { instruction: Some(index), loc, kind: Box::new(kind) }
    }

    fn check_loc(&self, loc: Loc) -> Result<(), ProgramErrorKind> {
        if loc.0 >= self.files.len() {
            return Err(ProgramErrorKind::Loc { index: loc.0, count: self.files.len() });
        }
        Ok(())
    }

    fn validate_tensors(&self) -> Result<(), ProgramError> {
        for tensor in &self.tensors {
            self.check_loc(tensor.loc).map_err(ProgramError::bare)?;
            let at = |kind| ProgramError {
                instruction: None,
                loc: Some(self.source_loc(tensor.loc)),
                kind: Box::new(kind),
            };
            if tensor.shape.len() > MAX_RANK {
                return Err(at(ProgramErrorKind::TooLarge {
                    what: format!("the rank of tensor `{}`", tensor.name),
                    found: tensor.shape.len().to_string(),
                    limit: MAX_RANK.to_string(),
                }));
            }
            let n_bytes = tensor
                .shape
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                .and_then(|numel| numel.checked_mul(tensor.dtype.n_bytes() as u64))
                .filter(|&n| i64::try_from(n).is_ok() && usize::try_from(n).is_ok());
            if n_bytes.is_none() {
                return Err(at(ProgramErrorKind::TooLarge {
                    what: format!("the size of tensor `{}`", tensor.name),
                    found: format!("{:?} of {}", tensor.shape, tensor.dtype.name()),
                    limit: format!("{} bytes", i64::MAX),
                }));
            }
            if tensor.blocks == Some(0) {
                return Err(at(ProgramErrorKind::Invalid(format!(
                    "tensor `{}` has `blocks` 0, expected at least one block",
                    tensor.name
                ))));
            }
            if tensor.par != 0 && tensor.par >= tensor.shape.len() {
                return Err(at(ProgramErrorKind::Invalid(format!(
                    "tensor `{}` has `par` {}, expected a dimension of its shape {:?}",
                    tensor.name, tensor.par, tensor.shape
                ))));
            }
            if tensor.buffer.is_on_chip() {
                let partitions = tensor.shape.get(tensor.par).copied().unwrap_or(0);
                if !(1..=MAX_PARTITIONS).contains(&partitions) {
                    return Err(at(ProgramErrorKind::PartitionDim {
                        tensor: tensor.name.clone(),
                        buffer: if tensor.buffer == Buffer::Sbuf { "sbuf" } else { "psum" }.into(),
                        found: partitions,
                    }));
                }
            }
        }
        for (role, list) in [("inputs", &self.inputs), ("outputs", &self.outputs)] {
            for (k, &id) in list.iter().enumerate() {
                let Some(tensor) = self.tensors.get(id) else {
                    return Err(ProgramError::bare(ProgramErrorKind::TensorId {
                        role: format!("{role}[{k}]"),
                        id,
                        count: self.tensors.len(),
                    }));
                };
                if tensor.buffer.is_on_chip() {
                    return Err(ProgramError::bare(ProgramErrorKind::Invalid(format!(
                        "{role}[{k}] is tensor `{}` in on-chip memory; kernel arguments and \
                         results are device memory (hbm, shared_hbm or private_hbm)",
                        tensor.name
                    ))));
                }
            }
        }
        for (k, id) in self.inputs.iter().enumerate() {
            if self.inputs[..k].contains(id) {
                return Err(ProgramError::bare(ProgramErrorKind::Invalid(format!(
                    "inputs[{k}] is tensor {id}, already inputs[{}]; each argument is its own tensor",
                    self.inputs[..k].iter().position(|i| i == id).unwrap_or(0)
                ))));
            }
        }
        Ok(())
    }

    fn parse_instruction(
        &self,
        index: usize,
        mut fields: Map<String, Value>,
    ) -> Result<Instruction, ProgramError> {
        let bare =
            |kind| ProgramError { instruction: Some(index), loc: None, kind: Box::new(kind) };
        let field = |op: &str, message: String| ProgramErrorKind::Field { op: op.into(), message };
        let loc: Loc = match fields.remove("loc") {
            Some(value) => serde_json::from_value(value)
                .map_err(|e| bare(field("loc", format!("`loc`: {e}"))))?,
            None => return Err(bare(field("instruction", "missing field `loc`".into()))),
        };
        self.check_loc(loc).map_err(bare)?;
        let at = |kind| ProgramError {
            instruction: Some(index),
            loc: Some(self.source_loc(loc)),
            kind: Box::new(kind),
        };
        let op_name = match fields.remove("op") {
            Some(Value::String(name)) => name,
            Some(other) => {
                return Err(at(field(
                    "instruction",
                    format!("`op` is {other}, expected a string"),
                )));
            }
            None => return Err(at(field("instruction", "missing field `op`".into()))),
        };
        let engine: Engine = match fields.remove("engine") {
            Some(value) => serde_json::from_value(value)
                .map_err(|e| at(field(&op_name, format!("`engine`: {e}"))))?,
            None => return Err(at(field(&op_name, "missing field `engine`".into()))),
        };
        let mask: Vec<Pred> = match fields.remove("mask") {
            Some(value) => serde_json::from_value(value)
                .map_err(|e| at(field(&op_name, format!("`mask`: {e}"))))?,
            None => Vec::new(),
        };
        if let Some(what) = crate::ops::unsupported_name(&fields) {
            return Err(at(ProgramErrorKind::Unsupported { what }));
        }
        let op = match crate::ops::Op::parse(&op_name, Value::Object(fields)) {
            Some(Ok(op)) => op,
            Some(Err(e)) => return Err(at(field(&op_name, e.to_string()))),
            None => {
                return Err(at(ProgramErrorKind::Unsupported { what: format!("op `{op_name}`") }));
            }
        };
        Ok(Instruction { engine, loc, mask, op })
    }
}

fn too_large(what: &str, found: usize) -> ProgramError {
    ProgramError::bare(ProgramErrorKind::TooLarge {
        what: what.into(),
        found: found.to_string(),
        limit: "the memory available".into(),
    })
}

/// The checks every op's validation uses, over one program.
pub(crate) struct Checker<'a> {
    pub(crate) program: &'a Program,
}

impl Checker<'_> {
    /// The tensor `ap` names, or `TensorId`.
    pub(crate) fn tensor(&self, ap: &Ap, operand: &str) -> Result<&Tensor, ProgramErrorKind> {
        self.program.tensors.get(ap.t).ok_or_else(|| ProgramErrorKind::TensorId {
            role: operand.into(),
            id: ap.t,
            count: self.program.tensors.len(),
        })
    }

    /// Checks an AP (tensor id, rank, counts, its indirect dimension and that dimension's index
    /// AP, bounds included) and returns its shape. The AP's own bounds are checked as it runs.
    pub(crate) fn ap(&self, ap: &Ap, operand: &str) -> Result<Vec<u64>, ProgramErrorKind> {
        self.tensor(ap, operand)?;
        if ap.ap.len() > MAX_RANK {
            return Err(ProgramErrorKind::TooLarge {
                what: format!("the rank of {operand}"),
                found: ap.ap.len().to_string(),
                limit: MAX_RANK.to_string(),
            });
        }
        if let Some(&[_, count]) = ap.ap.iter().find(|&&[_, count]| count < 0) {
            return Err(ProgramErrorKind::Invalid(format!(
                "{operand} has count {count}, expected counts of 0 or more"
            )));
        }
        let shape = ap.shape();
        let n = shape.iter().try_fold(1u64, |acc, &c| acc.checked_mul(c));
        if n.is_none_or(|n| n > MAX_INSTRUCTION_ELEMENTS) {
            return Err(ProgramErrorKind::TooLarge {
                what: format!("the number of elements of {operand}"),
                found: format!("the product of {shape:?}"),
                limit: MAX_INSTRUCTION_ELEMENTS.to_string(),
            });
        }
        if let Some(ind) = &ap.ind {
            let index_operand = format!("{operand}'s index");
            if ind.dim >= ap.ap.len() {
                return Err(ProgramErrorKind::Invalid(format!(
                    "{operand}'s indirect dimension is {}, expected one of its {} dimensions",
                    ind.dim,
                    ap.ap.len()
                )));
            }
            if ind.index.ind.is_some() {
                return Err(ProgramErrorKind::Invalid(format!(
                    "{index_operand} is itself indirect, expected a direct AP"
                )));
            }
            let index_shape = self.ap(&ind.index, &index_operand)?;
            let broadcasts = index_shape.len() == shape.len()
                && index_shape.iter().zip(&shape).all(|(&i, &s)| i == s || i == 1);
            if !broadcasts {
                return Err(ProgramErrorKind::ShapeMismatch {
                    operand: index_operand,
                    expected: format!("{shape:?} or 1 in any dimension"),
                    found: index_shape,
                });
            }
            let index_dtype = self.tensor(&ind.index, &index_operand)?.dtype;
            if !index_dtype.is_integer() {
                return Err(ProgramErrorKind::Dtype {
                    operand: index_operand,
                    expected: "an integer type".into(),
                    found: index_dtype.name().into(),
                });
            }
            // An index AP is read whole, whatever the instruction's mask, so its bounds are
            // checked here, over its whole pattern. A data AP's are checked as it runs, on the
            // elements its instruction's mask leaves (`Memory::offsets`).
            let index_tensor = self.tensor(&ind.index, &index_operand)?;
            if let Some((offset, index)) = ind.index.first_outside(index_tensor.numel()) {
                return Err(ProgramErrorKind::OutOfBounds {
                    operand: index_operand,
                    tensor: index_tensor.name.clone(),
                    index,
                    offset,
                    numel: index_tensor.numel(),
                });
            }
        }
        Ok(shape)
    }

    /// Checks an AP whose shape must be `expected`.
    pub(crate) fn ap_shaped(
        &self,
        ap: &Ap,
        operand: &str,
        expected: &[u64],
    ) -> Result<(), ProgramErrorKind> {
        let shape = self.ap(ap, operand)?;
        if shape != expected {
            return Err(ProgramErrorKind::ShapeMismatch {
                operand: operand.into(),
                expected: format!("{expected:?}"),
                found: shape,
            });
        }
        Ok(())
    }

    /// Checks an operand: an immediate, or an AP of shape `expected`.
    pub(crate) fn operand(
        &self,
        operand: &Operand,
        name: &str,
        expected: &[u64],
    ) -> Result<(), ProgramErrorKind> {
        match operand {
            Operand::Imm(_) => Ok(()),
            Operand::Ap(ap) => self.ap_shaped(ap, name, expected),
        }
    }

    /// Checks that an AP has no indirect dimension (operands that do not support one).
    pub(crate) fn direct(&self, ap: &Ap, operand: &str) -> Result<(), ProgramErrorKind> {
        if ap.ind.is_some() {
            return Err(ProgramErrorKind::Invalid(format!(
                "{operand} has an indirect dimension, which this op does not take"
            )));
        }
        Ok(())
    }

    /// Checks that an affine form `Σ c_d * i_d + k` over `shape` has one coefficient per
    /// dimension and stays in `i64` over the whole iteration space.
    pub(crate) fn affine(
        &self,
        what: &str,
        c: &[i64],
        k: i64,
        shape: &[u64],
    ) -> Result<(), ProgramErrorKind> {
        if c.len() != shape.len() {
            return Err(ProgramErrorKind::ShapeMismatch {
                operand: format!("{what}'s coefficients ({} of them)", c.len()),
                expected: format!("one per dimension of the iteration shape {shape:?}"),
                found: shape.to_vec(),
            });
        }
        let (mut low, mut high) = (i128::from(k), i128::from(k));
        for (&coefficient, &count) in c.iter().zip(shape) {
            let term = i128::from(coefficient) * i128::from(count.saturating_sub(1));
            if term < 0 {
                low += term;
            } else {
                high += term;
            }
        }
        if i64::try_from(low).is_err() || i64::try_from(high).is_err() {
            return Err(ProgramErrorKind::TooLarge {
                what: format!("the range of {what}"),
                found: format!("{low}..={high}"),
                limit: "the range of int64".into(),
            });
        }
        Ok(())
    }

    /// Checks that an AP's tensor is in one of `buffers`.
    pub(crate) fn buffer(
        &self,
        ap: &Ap,
        operand: &str,
        buffers: &[Buffer],
    ) -> Result<(), ProgramErrorKind> {
        let tensor = self.tensor(ap, operand)?;
        if !buffers.contains(&tensor.buffer) {
            return Err(ProgramErrorKind::Invalid(format!(
                "{operand} is tensor `{}` in {:?}, expected a tensor in {buffers:?}",
                tensor.name, tensor.buffer
            )));
        }
        Ok(())
    }
}

//! The ops: one struct of operands each, the one list of them (`declare_ops!`), and each op's
//! static checks (operand ranks and shapes, buffers, dtypes).
//!
//! The list is declared once; the `Op` enum, its names and its parser expand from it, and
//! `validate`, [`Op::aps`] and the executor match on `Op` exhaustively, so a new op is a
//! compile error wherever it must be handled.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::alu::{ACT_FUNC_NAMES, ALU_OP_NAMES, ActFunc, AluOp};
use crate::dtype::Dtype;
use crate::program::{Ap, Buffer, Checker, Cmp, Operand, Program, ProgramErrorKind, number};

macro_rules! declare_ops {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($ty:ident), )*) => {
        /// An instruction's op and its operands: one variant per op of docs/nki-program.md.
        #[derive(Clone, Debug)]
        pub enum Op {
            $( $(#[$doc])* $variant($ty), )*
        }

        impl Op {
            /// The op's name in the document.
            pub fn name(&self) -> &'static str {
                match self {
                    $( Op::$variant(_) => $name, )*
                }
            }

            /// Reads the op `name`'s operands, or `None` when no op has that name.
            pub(crate) fn parse(name: &str, fields: Value) -> Option<Result<Op, serde_json::Error>> {
                match name {
                    $( $name => Some(serde_json::from_value(fields).map(Op::$variant)), )*
                    _ => None,
                }
            }
        }

        /// The name of every op the executor models.
        pub const OP_NAMES: &[&str] = &[$( $name, )*];
    };
}

declare_ops! {
    /// `dst[i] = src[i]` (or `dst[i] accumulate= src[i]`) through a DMA queue.
    "dma" => Dma(DmaOp),
    /// `dst[i] = src[i]` on a compute engine.
    "copy" => Copy(CopyOp),
    /// `dst[i] = value`.
    "memset" => Memset(MemsetOp),
    /// `dst[i] = k + Σ c_d i_d`.
    "iota" => Iota(IotaOp),
    /// `dst[i] = a[i] op b[i]`.
    "tensor_tensor" => TensorTensor(TensorTensorOp),
    /// `dst[i] = (src[i] op0 v0) op1 v1`.
    "tensor_scalar" => TensorScalar(TensorScalarOp),
    /// `dst[i] = func(src[i] * scale + bias)`, with an optional per-partition fold.
    "activation" => Activation(ActivationOp),
    /// A fold over some axes.
    "reduce" => Reduce(ReduceOp),
    /// A fold over the partition dimension.
    "partition_reduce" => PartitionReduce(PartitionReduceOp),
    /// `dst[m, n] (+)= Σ_k stationary[k, m] moving[k, n]`.
    "matmul" => Matmul(MatmulOp),
    /// `dst[i] = pred(i) ? on_true[i] : on_false[i]`.
    "select" => Select(SelectOp),
    /// Records a tile's values for the report.
    "print" => Print(PrintOp),
    /// `nki.isa.tensor_tensor_scan`: a running `(data0 op0 prev) op1 data1` along each partition.
    "scan" => Scan(ScanOp),
    /// `(data op0 operand0) op1 operand1`.
    "scalar_tensor_tensor" => ScalarTensorTensor(ScalarTensorTensorOp),
    /// Count, mean and variance × count of the even and of the odd elements of each partition.
    "bn_stats" => BnStats(BnStatsOp),
    /// Mean and variance per partition from `bn_stats` triples.
    "bn_aggr" => BnAggr(BnAggrOp),
    /// The 8 largest values of each partition, in descending order.
    "max8" => Max8(Max8Op),
    /// The index of each of 8 values in each partition.
    "nc_find_index8" => NcFindIndex8(NcFindIndex8Op),
    /// `data` with the first match of each of 8 values replaced by `imm`.
    "nc_match_replace8" => NcMatchReplace8(NcMatchReplace8Op),
    /// A running `op1` along each partition of `src op0 imm0`, through the accumulator.
    "tensor_scalar_cumulative" => TensorScalarCumulative(TensorScalarCumulativeOp),
    /// `data op0 operand0`, folded along each partition into the accumulator.
    "tensor_scalar_reduce" => TensorScalarReduce(TensorScalarReduceOp),
    /// `predicate ? on_true : on_false`, folded along each partition into the accumulator.
    "select_reduce" => SelectReduce(SelectReduceOp),
    /// `on_true_tile` where the free index lies between two bounds, else `on_false_value`.
    "range_select" => RangeSelect(RangeSelectOp),
    /// A gather across the 16 partitions of each GpSimd core.
    "local_gather" => LocalGather(LocalGatherOp),
    /// Partitions moved within each quadrant of 32.
    "nc_stream_shuffle" => NcStreamShuffle(NcStreamShuffleOp),
    /// The start and end of the segment of each element.
    "sequence_bounds" => SequenceBounds(SequenceBoundsOp),
    /// `data` with elements replaced by 0 at random.
    "dropout" => Dropout(DropoutOp),
    /// 32 random bits per element.
    "rng" => Rng(RngOp),
    /// Uniform random values between `min` and `max`.
    "rand2" => Rand2(Rand2Op),
    /// `exp(src - max_value)`, summed along each partition into the accumulator.
    "exponential" => Exponential(ExponentialOp),
}

/// A command to an engine's accumulator registers (`nki.isa.reduce_cmd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReduceCmd {
    /// The instruction does not use the accumulator, which it leaves undefined.
    Idle,
    /// Set the accumulator to the identity of the fold, folding nothing in.
    Reset,
    /// Set the accumulator to the identity of the fold, then fold the instruction's results in.
    ResetReduce,
    /// Fold the instruction's results into the accumulator as it is.
    Reduce,
    /// Set the accumulator to the instruction's initial value, then fold its results in.
    LoadReduce,
}

fn reset_reduce() -> ReduceCmd {
    ReduceCmd::ResetReduce
}

fn maximum() -> AluOp {
    AluOp::Maximum
}

/// `range_select`'s default `on_false_value`: the most negative finite float32 (`nl.fp32.min`).
fn float32_min() -> f64 {
    f64::from(f32::MIN)
}

/// `tensor_scalar_cumulative`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorScalarCumulativeOp {
    /// The running results, `src`'s shape.
    pub dst: Ap,
    /// The input tile.
    pub src: Ap,
    /// Applied to each element with `imm0`: `src op0 imm0`.
    pub op0: AluOp,
    /// The running fold: `register = (src op0 imm0) op1 register`.
    pub op1: AluOp,
    /// `op0`'s operand: an immediate or one value per partition (`[P, 1]`).
    pub imm0: Operand,
    /// The register's initial value under `load_reduce` (`[P, 1]`).
    #[serde(default)]
    pub imm1: Option<Operand>,
    /// How the register starts.
    #[serde(default = "reset_reduce")]
    pub reduce_cmd: ReduceCmd,
}

/// `tensor_scalar_reduce`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorScalarReduceOp {
    /// `data op0 operand0`.
    pub dst: Ap,
    /// The input tile.
    pub data: Ap,
    /// The operator.
    pub op0: AluOp,
    /// Its operand, of the iteration shape.
    pub operand0: Operand,
    /// `operand0 op0 data` instead of `data op0 operand0`.
    #[serde(default)]
    pub reverse0: bool,
    /// The fold along each partition.
    pub reduce_op: AluOp,
    /// Where the accumulator is written, `[P, 1]` (none: it stays in the accumulator).
    #[serde(default)]
    pub reduce_res: Option<Ap>,
    /// What the accumulator does.
    #[serde(default = "reset_reduce")]
    pub reduce_cmd: ReduceCmd,
    /// The accumulator's initial value under `load_reduce` (`[P, 1]`).
    #[serde(default)]
    pub reduce_init: Option<Operand>,
    /// Write the accumulator negated (the accumulator itself is not).
    #[serde(default)]
    pub reduce_res_negate: bool,
}

/// `select_reduce`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectReduceOp {
    /// The selected values.
    pub dst: Ap,
    /// True where nonzero.
    pub predicate: Operand,
    /// The value where the predicate holds.
    pub on_true: Operand,
    /// The value where it does not.
    pub on_false: Operand,
    /// What the accumulator does.
    #[serde(default = "idle")]
    pub reduce_cmd: ReduceCmd,
    /// The fold (only `maximum`).
    #[serde(default = "maximum")]
    pub reduce_op: AluOp,
    /// Select `on_true` where the predicate is zero instead.
    #[serde(default)]
    pub reverse_pred: bool,
    /// Where the accumulator is written, `[P, 1]`.
    #[serde(default)]
    pub reduce_res: Option<Ap>,
}

fn idle() -> ReduceCmd {
    ReduceCmd::Idle
}

/// `range_select`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeSelectOp {
    /// The selected values.
    pub dst: Ap,
    /// The values where both comparisons hold.
    pub on_true_tile: Ap,
    /// `index comp_op0 bound0`.
    pub comp_op0: AluOp,
    /// `index comp_op1 bound1`.
    pub comp_op1: AluOp,
    /// One bound per partition (`[P, 1]`).
    pub bound0: Operand,
    /// One bound per partition (`[P, 1]`).
    pub bound1: Operand,
    /// What the accumulator does.
    #[serde(default = "reset_reduce")]
    pub reduce_cmd: ReduceCmd,
    /// The fold (only `maximum`).
    #[serde(default = "maximum")]
    pub reduce_op: AluOp,
    /// Added to each element's free index before the comparisons.
    #[serde(default, deserialize_with = "number")]
    pub range_start: f64,
    /// The value where a comparison fails.
    #[serde(default = "float32_min", deserialize_with = "number")]
    pub on_false_value: f64,
    /// Where the accumulator is written, `[P, 1]`.
    #[serde(default)]
    pub reduce_res: Option<Ap>,
}

/// `local_gather`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalGatherOp {
    /// `[P, ...]`: `num_valid_indices × num_elem_per_idx` elements per partition.
    pub dst: Ap,
    /// `[P, ...]`: the elements gathered from.
    pub src_buffer: Ap,
    /// `[P, ...]` uint16: element offsets into each partition of `src_buffer`.
    pub index: Ap,
    /// Contiguous elements gathered per index: 1, 2, 4, 8, 16 or 32.
    #[serde(default = "one")]
    pub num_elem_per_idx: u64,
    /// Indices used per core of 16 partitions (default: all of the core's).
    #[serde(default)]
    pub num_valid_indices: Option<u64>,
}

fn one() -> u64 {
    1
}

/// `nc_stream_shuffle`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcStreamShuffleOp {
    /// `[Pd, ...]`, `src`'s elements per partition and dtype.
    pub dst: Ap,
    /// `[Ps, ...]`.
    pub src: Ap,
    /// 32 entries: the source partition (0 to 31, within the quadrant) of each destination
    /// partition of a quadrant, 255 for a partition left unmodified.
    pub shuffle_mask: Vec<i64>,
}

/// `sequence_bounds`' operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SequenceBoundsOp {
    /// `[1, 2, n]`: the start and the end of each element's segment.
    pub dst: Ap,
    /// `[1, n]`: segment ids, 0 for padding.
    pub segment_ids: Ap,
}

/// `dropout`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropoutOp {
    /// `data` with some elements replaced by 0.
    pub dst: Ap,
    /// The input tile.
    pub data: Ap,
    /// The probability that an element is replaced, of the iteration shape.
    pub prob: Operand,
}

/// `rng`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RngOp {
    /// An integer tile: the low bits of 32 random bits per element.
    pub dst: Ap,
}

/// `rand2`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rand2Op {
    /// The random values.
    pub dst: Ap,
    /// The low end of the range, of the iteration shape.
    pub min: Operand,
    /// The high end, of the iteration shape.
    pub max: Operand,
}

/// `exponential`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExponentialOp {
    /// `exp(src - max_value)`.
    pub dst: Ap,
    /// The input tile.
    pub src: Ap,
    /// Subtracted before the exponential: an immediate or one value per partition (`[P, 1]`);
    /// none is 0.
    #[serde(default)]
    pub max_value: Option<Operand>,
    /// Where the accumulator (the sum of the results) is written, `[P, 1]`.
    #[serde(default)]
    pub reduce_res: Option<Ap>,
    /// What the accumulator does.
    #[serde(default = "idle")]
    pub reduce_cmd: ReduceCmd,
    /// The accumulator's initial value under `load_reduce` (`[P, 1]`; none is 0).
    #[serde(default)]
    pub reduce_init: Option<Operand>,
}

/// What a DMA does with an index outside the tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Oob {
    /// An index outside the tensor is an error.
    #[default]
    Error,
    /// The element is not moved.
    Skip,
}

/// `dma`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaOp {
    /// The destination.
    pub dst: Ap,
    /// The source.
    pub src: Ap,
    /// What an indirect index outside its tensor does.
    #[serde(default)]
    pub oob: Oob,
    /// Combine with the destination's value instead of overwriting it.
    #[serde(default)]
    pub accumulate: Option<AluOp>,
}

/// `copy`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyOp {
    /// The destination.
    pub dst: Ap,
    /// The source.
    pub src: Ap,
}

/// `memset`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemsetOp {
    /// The destination.
    pub dst: Ap,
    /// The value every element gets.
    #[serde(deserialize_with = "number")]
    pub value: f64,
}

/// `iota`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IotaOp {
    /// The destination.
    pub dst: Ap,
    /// One coefficient per dimension.
    pub c: Vec<i64>,
    /// The constant.
    pub k: i64,
}

/// `tensor_tensor`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorTensorOp {
    /// The destination.
    pub dst: Ap,
    /// The left operand.
    pub a: Operand,
    /// The right operand.
    pub b: Operand,
    /// The operator.
    pub alu_op: AluOp,
}

/// One step of `tensor_scalar`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalarStep {
    /// The operator.
    pub op: AluOp,
    /// Its other operand.
    pub operand: Operand,
    /// `operand op x` instead of `x op operand`.
    #[serde(default)]
    pub reverse: bool,
}

/// `tensor_scalar`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorScalarOp {
    /// The destination.
    pub dst: Ap,
    /// The source.
    pub src: Ap,
    /// One or two steps, applied in order.
    pub ops: Vec<ScalarStep>,
}

/// `activation`'s per-partition fold.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationReduce {
    /// The fold's operator.
    pub op: AluOp,
    /// Where each partition's result goes, shape `[P, 1]`.
    pub dst: Ap,
}

/// `activation`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivationOp {
    /// The destination.
    pub dst: Ap,
    /// The source.
    pub src: Ap,
    /// The function.
    pub func: ActFunc,
    /// Multiplies the source first.
    pub scale: Operand,
    /// Added after the scale (none: 0).
    #[serde(default)]
    pub bias: Option<Operand>,
    /// An optional fold of each partition's results.
    #[serde(default)]
    pub reduce: Option<ActivationReduce>,
}

/// `reduce`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReduceOp {
    /// The destination: the source's rank, count 1 on `axes`.
    pub dst: Ap,
    /// The source, whose shape is the iteration shape.
    pub src: Ap,
    /// The fold's operator.
    pub alu_op: AluOp,
    /// The dimensions folded.
    pub axes: Vec<usize>,
    /// Negate the result.
    #[serde(default)]
    pub negate: bool,
}

/// `partition_reduce`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionReduceOp {
    /// The destination: `[1, ...]`.
    pub dst: Ap,
    /// The source, `[P, ...]`.
    pub src: Ap,
    /// The fold's operator.
    pub alu_op: AluOp,
}

/// `matmul`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatmulOp {
    /// The result `[M, N]`, in PSUM.
    pub dst: Ap,
    /// `[K, M]`.
    pub stationary: Ap,
    /// `[K, N]`.
    pub moving: Ap,
    /// Add to `dst` instead of overwriting it.
    #[serde(default)]
    pub accumulate: bool,
}

/// An affine predicate `Σ c_d i_d + k cmp 0` over the iteration index.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Affine {
    /// One coefficient per dimension.
    pub c: Vec<i64>,
    /// The constant.
    pub k: i64,
    /// The comparison.
    pub cmp: Cmp,
}

/// `select`'s predicate: a tile (true where nonzero) or an affine expression.
#[derive(Clone, Debug)]
pub enum SelectPred {
    /// True where the element is nonzero.
    Ap(Ap),
    /// True where the affine predicate holds.
    Affine(Affine),
}

impl<'de> Deserialize<'de> for SelectPred {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Wrapper {
            affine: Affine,
        }
        let value = Value::deserialize(deserializer)?;
        if value.get("affine").is_some() {
            let wrapper: Wrapper =
                serde_json::from_value(value).map_err(serde::de::Error::custom)?;
            Ok(SelectPred::Affine(wrapper.affine))
        } else {
            serde_json::from_value(value).map(SelectPred::Ap).map_err(serde::de::Error::custom)
        }
    }
}

/// `select`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SelectOp {
    /// The destination.
    pub dst: Ap,
    /// The predicate.
    pub pred: SelectPred,
    /// The value where the predicate holds.
    pub on_true: Operand,
    /// The value where it does not.
    pub on_false: Operand,
}

/// `print`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrintOp {
    /// The label in the report.
    pub label: String,
    /// The tile printed; its shape is the iteration shape.
    pub src: Ap,
}

/// `scan`'s operands (`nki.isa.tensor_tensor_scan`'s names).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanOp {
    /// The result, `[P, ...]`.
    pub dst: Ap,
    /// The left operand of `op0`, `dst`'s shape.
    pub data0: Ap,
    /// The right operand of `op1`, `dst`'s shape.
    pub data1: Ap,
    /// The state before the first element: an immediate or a `[P, 1]` tile.
    pub initial: Operand,
    /// Combines `data0` with the previous result.
    pub op0: AluOp,
    /// Combines that with `data1`.
    pub op1: AluOp,
    /// `prev op0 data0` instead of `data0 op0 prev`.
    #[serde(default)]
    pub reverse0: bool,
    /// `data1 op1 x` instead of `x op1 data1`.
    #[serde(default)]
    pub reverse1: bool,
}

/// `scalar_tensor_tensor`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScalarTensorTensorOp {
    /// The result.
    pub dst: Ap,
    /// The input tile, `dst`'s shape.
    pub data: Ap,
    /// The first operator.
    pub op0: AluOp,
    /// Its operand (an immediate, or a tile broadcast to `dst`'s shape).
    pub operand0: Operand,
    /// The second operator.
    pub op1: AluOp,
    /// Its operand, `dst`'s shape.
    pub operand1: Ap,
    /// `operand0 op0 data` instead of `data op0 operand0`.
    #[serde(default)]
    pub reverse0: bool,
    /// `operand1 op1 x` instead of `x op1 operand1`.
    #[serde(default)]
    pub reverse1: bool,
}

/// `bn_stats`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BnStatsOp {
    /// `[P, 6]`.
    pub dst: Ap,
    /// `[P, ...]`, at most 512 elements per partition.
    pub data: Ap,
}

/// `bn_aggr`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BnAggrOp {
    /// `[P, 2]`: mean, variance.
    pub dst: Ap,
    /// `[P, 3k]`: `(count, mean, variance × count)` triples.
    pub data: Ap,
}

/// `max8`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Max8Op {
    /// `[P, 8]`.
    pub dst: Ap,
    /// `[P, ...]`, 8 to 16384 elements per partition.
    pub src: Ap,
}

/// `nc_find_index8`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcFindIndex8Op {
    /// `[P, 8]`, uint16 or uint32.
    pub dst: Ap,
    /// `[P, ...]`, 8 to 16384 elements per partition.
    pub data: Ap,
    /// `[P, 8]`: the values searched.
    pub vals: Ap,
}

/// `nc_match_replace8`'s operands.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcMatchReplace8Op {
    /// `data`'s shape: `data` with the matches replaced.
    pub dst: Ap,
    /// `[P, ...]`, 8 to 16384 elements per partition.
    pub data: Ap,
    /// `[P, 8]`: the values matched.
    pub vals: Ap,
    /// What a match is replaced with.
    #[serde(deserialize_with = "number")]
    pub imm: f64,
    /// Optional `[P, 8]`: where each value matched (uint16 or uint32).
    #[serde(default)]
    pub dst_idx: Option<Ap>,
}

/// The fields that name ALU operators, and the one that names an activation function.
const ALU_FIELDS: &[&str] =
    &["op", "alu_op", "accumulate", "op0", "op1", "reduce_op", "comp_op0", "comp_op1"];
const ACT_FIELDS: &[&str] = &["func"];

/// Finds an ALU operator or activation function name the executor does not model, anywhere in
/// an instruction's fields, so that it is `Unsupported` rather than a parse error.
pub(crate) fn unsupported_name(fields: &Map<String, Value>) -> Option<String> {
    for (key, value) in fields {
        match value {
            Value::String(name)
                if ALU_FIELDS.contains(&key.as_str()) && !ALU_OP_NAMES.contains(&name.as_str()) =>
            {
                return Some(format!("ALU op `{name}` (in `{key}`)"));
            }
            Value::String(name)
                if ACT_FIELDS.contains(&key.as_str())
                    && !ACT_FUNC_NAMES.contains(&name.as_str()) =>
            {
                return Some(format!("activation function `{name}`"));
            }
            Value::Object(inner) => {
                if let Some(found) = unsupported_name(inner) {
                    return Some(found);
                }
            }
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(inner) = item
                        && let Some(found) = unsupported_name(inner)
                    {
                        return Some(found);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

impl Op {
    /// Every AP the op reads or writes, index APs of indirect dimensions included: the tensors
    /// an instruction touches, for liveness.
    pub fn aps(&self) -> Vec<&Ap> {
        fn operand(operand: &Operand) -> Option<&Ap> {
            match operand {
                Operand::Imm(_) => None,
                Operand::Ap(ap) => Some(ap),
            }
        }
        let mut aps: Vec<&Ap> = match self {
            Op::Dma(op) => vec![&op.dst, &op.src],
            Op::Copy(op) => vec![&op.dst, &op.src],
            Op::Memset(op) => vec![&op.dst],
            Op::Iota(op) => vec![&op.dst],
            Op::TensorTensor(op) => {
                [Some(&op.dst), operand(&op.a), operand(&op.b)].into_iter().flatten().collect()
            }
            Op::TensorScalar(op) => {
                let mut aps = vec![&op.dst, &op.src];
                aps.extend(op.ops.iter().filter_map(|step| operand(&step.operand)));
                aps
            }
            Op::Activation(op) => {
                let mut aps = vec![&op.dst, &op.src];
                aps.extend(operand(&op.scale));
                aps.extend(op.bias.as_ref().and_then(operand));
                aps.extend(op.reduce.as_ref().map(|r| &r.dst));
                aps
            }
            Op::Reduce(op) => vec![&op.dst, &op.src],
            Op::PartitionReduce(op) => vec![&op.dst, &op.src],
            Op::Matmul(op) => vec![&op.dst, &op.stationary, &op.moving],
            Op::Select(op) => {
                let mut aps = vec![&op.dst];
                if let SelectPred::Ap(ap) = &op.pred {
                    aps.push(ap);
                }
                aps.extend(operand(&op.on_true));
                aps.extend(operand(&op.on_false));
                aps
            }
            Op::Print(op) => vec![&op.src],
            Op::Scan(op) => {
                let mut aps = vec![&op.dst, &op.data0, &op.data1];
                aps.extend(operand(&op.initial));
                aps
            }
            Op::ScalarTensorTensor(op) => {
                let mut aps = vec![&op.dst, &op.data, &op.operand1];
                aps.extend(operand(&op.operand0));
                aps
            }
            Op::BnStats(op) => vec![&op.dst, &op.data],
            Op::BnAggr(op) => vec![&op.dst, &op.data],
            Op::Max8(op) => vec![&op.dst, &op.src],
            Op::NcFindIndex8(op) => vec![&op.dst, &op.data, &op.vals],
            Op::NcMatchReplace8(op) => {
                let mut aps = vec![&op.dst, &op.data, &op.vals];
                aps.extend(op.dst_idx.as_ref());
                aps
            }
            Op::TensorScalarCumulative(op) => {
                let mut aps = vec![&op.dst, &op.src];
                aps.extend(operand(&op.imm0));
                aps.extend(op.imm1.as_ref().and_then(operand));
                aps
            }
            Op::TensorScalarReduce(op) => {
                let mut aps = vec![&op.dst, &op.data];
                aps.extend(operand(&op.operand0));
                aps.extend(op.reduce_res.as_ref());
                aps.extend(op.reduce_init.as_ref().and_then(operand));
                aps
            }
            Op::SelectReduce(op) => {
                let mut aps = vec![&op.dst];
                aps.extend(operand(&op.predicate));
                aps.extend(operand(&op.on_true));
                aps.extend(operand(&op.on_false));
                aps.extend(op.reduce_res.as_ref());
                aps
            }
            Op::RangeSelect(op) => {
                let mut aps = vec![&op.dst, &op.on_true_tile];
                aps.extend(operand(&op.bound0));
                aps.extend(operand(&op.bound1));
                aps.extend(op.reduce_res.as_ref());
                aps
            }
            Op::LocalGather(op) => vec![&op.dst, &op.src_buffer, &op.index],
            Op::NcStreamShuffle(op) => vec![&op.dst, &op.src],
            Op::SequenceBounds(op) => vec![&op.dst, &op.segment_ids],
            Op::Dropout(op) => {
                let mut aps = vec![&op.dst, &op.data];
                aps.extend(operand(&op.prob));
                aps
            }
            Op::Rng(op) => vec![&op.dst],
            Op::Rand2(op) => {
                let mut aps = vec![&op.dst];
                aps.extend(operand(&op.min));
                aps.extend(operand(&op.max));
                aps
            }
            Op::Exponential(op) => {
                let mut aps = vec![&op.dst, &op.src];
                aps.extend(op.max_value.as_ref().and_then(operand));
                aps.extend(op.reduce_res.as_ref());
                aps.extend(op.reduce_init.as_ref().and_then(operand));
                aps
            }
        };
        let indexes: Vec<&Ap> =
            aps.iter().filter_map(|ap| ap.ind.as_ref().map(|ind| &ind.index)).collect();
        aps.extend(indexes);
        aps
    }
}

/// Checks instruction `index`'s operands and mask against its op (docs/nki-program.md).
pub(crate) fn validate(program: &Program, index: usize) -> Result<(), ProgramErrorKind> {
    let instruction = &program.instructions[index];
    let check = Checker { program };
    let iteration: Vec<u64> = match &instruction.op {
        Op::Dma(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.src, "src", &shape)?;
            shape
        }
        Op::Copy(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.src, "src", &shape)?;
            shape
        }
        Op::Memset(op) => check.ap(&op.dst, "dst")?,
        Op::Iota(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.affine("iota", &op.c, op.k, &shape)?;
            shape
        }
        Op::TensorTensor(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.operand(&op.a, "a", &shape)?;
            check.operand(&op.b, "b", &shape)?;
            shape
        }
        Op::TensorScalar(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.src, "src", &shape)?;
            if !(1..=2).contains(&op.ops.len()) {
                return Err(ProgramErrorKind::Invalid(format!(
                    "`ops` has {} steps, expected 1 or 2",
                    op.ops.len()
                )));
            }
            for (k, step) in op.ops.iter().enumerate() {
                check.operand(&step.operand, &format!("ops[{k}].operand"), &shape)?;
            }
            shape
        }
        Op::Activation(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.src, "src", &shape)?;
            check.operand(&op.scale, "scale", &shape)?;
            if let Some(bias) = &op.bias {
                check.operand(bias, "bias", &shape)?;
            }
            if let Some(reduce) = &op.reduce {
                check.direct(&reduce.dst, "reduce.dst")?;
                let partitions = shape.first().copied().unwrap_or(1);
                check.ap_shaped(&reduce.dst, "reduce.dst", &[partitions, 1])?;
            }
            shape
        }
        Op::Reduce(op) => {
            let shape = check.ap(&op.src, "src")?;
            let mut expected = shape.clone();
            for (k, &axis) in op.axes.iter().enumerate() {
                if axis >= shape.len() || op.axes[..k].contains(&axis) {
                    return Err(ProgramErrorKind::Invalid(format!(
                        "`axes` is {:?}, expected distinct dimensions of src's rank {}",
                        op.axes,
                        shape.len()
                    )));
                }
                expected[axis] = 1;
            }
            check.direct(&op.dst, "dst")?;
            check.ap_shaped(&op.dst, "dst", &expected)?;
            shape
        }
        Op::PartitionReduce(op) => {
            let shape = check.ap(&op.src, "src")?;
            let mut expected = shape.clone();
            match expected.first_mut() {
                Some(first) => *first = 1,
                None => {
                    return Err(ProgramErrorKind::ShapeMismatch {
                        operand: "src".into(),
                        expected: "rank 1 or more".into(),
                        found: shape,
                    });
                }
            }
            check.direct(&op.dst, "dst")?;
            check.ap_shaped(&op.dst, "dst", &expected)?;
            shape
        }
        Op::Matmul(op) => {
            let rank2 = |shape: Vec<u64>, operand: &str, what: &str| match shape[..] {
                [a, b] => Ok((a, b)),
                _ => Err(ProgramErrorKind::ShapeMismatch {
                    operand: operand.into(),
                    expected: what.into(),
                    found: shape,
                }),
            };
            let (k, m) = rank2(check.ap(&op.stationary, "stationary")?, "stationary", "[K, M]")?;
            let (k_moving, n) = rank2(check.ap(&op.moving, "moving")?, "moving", "[K, N]")?;
            if k_moving != k {
                return Err(ProgramErrorKind::ShapeMismatch {
                    operand: "moving".into(),
                    expected: format!("[{k}, N] (stationary's K)"),
                    found: vec![k_moving, n],
                });
            }
            if k > 128 || m > 128 || n > 512 {
                return Err(ProgramErrorKind::ShapeMismatch {
                    operand: "matmul".into(),
                    expected: "K ≤ 128, M ≤ 128 and N ≤ 512".into(),
                    found: vec![k, m, n],
                });
            }
            check.direct(&op.stationary, "stationary")?;
            check.direct(&op.moving, "moving")?;
            check.direct(&op.dst, "dst")?;
            check.buffer(&op.dst, "dst", &[Buffer::Psum])?;
            check.ap_shaped(&op.dst, "dst", &[m, n])?;
            vec![m, n]
        }
        Op::Select(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            match &op.pred {
                SelectPred::Ap(ap) => check.ap_shaped(ap, "pred", &shape)?,
                SelectPred::Affine(affine) => {
                    check.affine("pred", &affine.c, affine.k, &shape)?;
                }
            }
            check.operand(&op.on_true, "on_true", &shape)?;
            check.operand(&op.on_false, "on_false", &shape)?;
            shape
        }
        Op::Print(op) => check.ap(&op.src, "src")?,
        Op::Scan(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.data0, "data0", &shape)?;
            check.ap_shaped(&op.data1, "data1", &shape)?;
            check.operand(&op.initial, "initial", &[partitions(&shape, "dst")?, 1])?;
            no_mask(instruction)?;
            shape
        }
        Op::ScalarTensorTensor(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.data, "data", &shape)?;
            check.operand(&op.operand0, "operand0", &shape)?;
            check.ap_shaped(&op.operand1, "operand1", &shape)?;
            shape
        }
        Op::BnStats(op) => {
            let shape = check.ap(&op.data, "data")?;
            let p = partitions(&shape, "data")?;
            per_partition(&shape, "data", 1, 512)?;
            check.ap_shaped(&op.dst, "dst", &[p, 6])?;
            no_mask(instruction)?;
            shape
        }
        Op::BnAggr(op) => {
            let shape = check.ap(&op.data, "data")?;
            let p = partitions(&shape, "data")?;
            let free = per_partition(&shape, "data", 3, u64::MAX)?;
            if free % 3 != 0 {
                return Err(ProgramErrorKind::ShapeMismatch {
                    operand: "data".into(),
                    expected: "a multiple of 3 elements per partition".into(),
                    found: shape,
                });
            }
            check.ap_shaped(&op.dst, "dst", &[p, 2])?;
            no_mask(instruction)?;
            shape
        }
        Op::Max8(op) => {
            let shape = check.ap(&op.src, "src")?;
            let p = partitions(&shape, "src")?;
            per_partition(&shape, "src", 8, 16384)?;
            check.ap_shaped(&op.dst, "dst", &[p, 8])?;
            no_mask(instruction)?;
            shape
        }
        Op::NcFindIndex8(op) => {
            let shape = check.ap(&op.data, "data")?;
            let p = partitions(&shape, "data")?;
            per_partition(&shape, "data", 8, 16384)?;
            check.ap_shaped(&op.vals, "vals", &[p, 8])?;
            check.ap_shaped(&op.dst, "dst", &[p, 8])?;
            index_dtype(&check, &op.dst, "dst")?;
            no_mask(instruction)?;
            shape
        }
        Op::NcMatchReplace8(op) => {
            let shape = check.ap(&op.data, "data")?;
            let p = partitions(&shape, "data")?;
            per_partition(&shape, "data", 8, 16384)?;
            check.ap_shaped(&op.vals, "vals", &[p, 8])?;
            check.ap_shaped(&op.dst, "dst", &shape)?;
            if let Some(dst_idx) = &op.dst_idx {
                check.ap_shaped(dst_idx, "dst_idx", &[p, 8])?;
                index_dtype(&check, dst_idx, "dst_idx")?;
            }
            no_mask(instruction)?;
            shape
        }
        Op::TensorScalarCumulative(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.src, "src", &shape)?;
            let p = partitions(&shape, "dst")?;
            check.operand(&op.imm0, "imm0", &[p, 1])?;
            if let Some(imm1) = &op.imm1 {
                check.operand(imm1, "imm1", &[p, 1])?;
            }
            fold_op(op.op1, "op1", FOLD_OPS)?;
            match op.reduce_cmd {
                ReduceCmd::ResetReduce | ReduceCmd::Reduce => {}
                ReduceCmd::LoadReduce if op.imm1.is_some() => {}
                ReduceCmd::LoadReduce => {
                    return Err(ProgramErrorKind::Invalid(
                        "reduce_cmd `load_reduce` loads `imm1` into the accumulator, and the \
                         instruction has no `imm1`"
                            .into(),
                    ));
                }
                ReduceCmd::Idle | ReduceCmd::Reset => {
                    return Err(ProgramErrorKind::Invalid(format!(
                        "`tensor_scalar_cumulative` takes reduce_cmd `reset_reduce`, `reduce` or \
                         `load_reduce`, found `{}`",
                        op.reduce_cmd.name()
                    )));
                }
            }
            no_mask(instruction)?;
            shape
        }
        Op::TensorScalarReduce(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.data, "data", &shape)?;
            check.operand(&op.operand0, "operand0", &shape)?;
            let p = partitions(&shape, "dst")?;
            accumulating(&check, op.reduce_cmd, op.reduce_res.as_ref(), p, "reduce_init")?;
            if let Some(init) = &op.reduce_init {
                check.operand(init, "reduce_init", &[p, 1])?;
            } else if op.reduce_cmd == ReduceCmd::LoadReduce {
                return Err(load_without_init("reduce_init"));
            }
            fold_op(op.reduce_op, "reduce_op", FOLD_OPS)?;
            shape
        }
        Op::SelectReduce(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.operand(&op.predicate, "predicate", &shape)?;
            check.operand(&op.on_true, "on_true", &shape)?;
            check.operand(&op.on_false, "on_false", &shape)?;
            let p = partitions(&shape, "dst")?;
            accumulating(&check, op.reduce_cmd, op.reduce_res.as_ref(), p, "")?;
            fold_op(op.reduce_op, "reduce_op", &[AluOp::Maximum])?;
            shape
        }
        Op::RangeSelect(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.on_true_tile, "on_true_tile", &shape)?;
            let p = partitions(&shape, "dst")?;
            check.operand(&op.bound0, "bound0", &[p, 1])?;
            check.operand(&op.bound1, "bound1", &[p, 1])?;
            let comparisons =
                [AluOp::Equal, AluOp::Less, AluOp::LessEqual, AluOp::Greater, AluOp::GreaterEqual];
            fold_op(op.comp_op0, "comp_op0", &comparisons)?;
            fold_op(op.comp_op1, "comp_op1", &comparisons)?;
            accumulating(&check, op.reduce_cmd, op.reduce_res.as_ref(), p, "")?;
            fold_op(op.reduce_op, "reduce_op", &[AluOp::Maximum])?;
            shape
        }
        Op::LocalGather(op) => {
            let src = check.ap(&op.src_buffer, "src_buffer")?;
            let index = check.ap(&op.index, "index")?;
            let dst = check.ap(&op.dst, "dst")?;
            for (operand, ap) in
                [("src_buffer", &op.src_buffer), ("index", &op.index), ("dst", &op.dst)]
            {
                check.direct(ap, operand)?;
            }
            let p = partitions(&src, "src_buffer")?;
            if p % 16 != 0 || partitions(&index, "index")? != p || partitions(&dst, "dst")? != p {
                return Err(ProgramErrorKind::ShapeMismatch {
                    operand: "local_gather".into(),
                    expected: "src_buffer, index and dst on the same number of partitions, a \
                               multiple of 16"
                        .into(),
                    found: vec![p, index[0], dst[0]],
                });
            }
            if !matches!(op.num_elem_per_idx, 1 | 2 | 4 | 8 | 16 | 32) {
                return Err(ProgramErrorKind::Invalid(format!(
                    "`num_elem_per_idx` is {}, expected 1, 2, 4, 8, 16 or 32",
                    op.num_elem_per_idx
                )));
            }
            let per_core = 16 * per_partition(&index, "index", 1, u64::MAX)?;
            let valid = op.num_valid_indices.unwrap_or(per_core);
            if !(1..=per_core.min(4096)).contains(&valid) {
                return Err(ProgramErrorKind::Invalid(format!(
                    "`num_valid_indices` is {valid}, expected 1 to {} (the indices in 16 \
                     partitions of `index`, at most 4096)",
                    per_core.min(4096)
                )));
            }
            let free = per_partition(&dst, "dst", 0, u64::MAX)?;
            if free != valid * op.num_elem_per_idx {
                return Err(ProgramErrorKind::ShapeMismatch {
                    operand: "dst".into(),
                    expected: format!(
                        "[{p}, ...] with {valid} × {} = {} elements per partition \
                         (num_valid_indices × num_elem_per_idx)",
                        op.num_elem_per_idx,
                        valid * op.num_elem_per_idx
                    ),
                    found: dst,
                });
            }
            let index_dtype = check.tensor(&op.index, "index")?.dtype;
            if index_dtype != Dtype::Uint16 {
                return Err(ProgramErrorKind::Dtype {
                    operand: "index".into(),
                    expected: "uint16".into(),
                    found: index_dtype.name().into(),
                });
            }
            same_dtype(&check, &op.dst, &op.src_buffer, "src_buffer")?;
            no_mask(instruction)?;
            dst
        }
        Op::NcStreamShuffle(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            let src = check.ap(&op.src, "src")?;
            check.direct(&op.dst, "dst")?;
            check.direct(&op.src, "src")?;
            let (dst_p, src_p) = (partitions(&shape, "dst")?, partitions(&src, "src")?);
            let dst_free = per_partition(&shape, "dst", 0, u64::MAX)?;
            if per_partition(&src, "src", 0, u64::MAX)? != dst_free {
                return Err(ProgramErrorKind::ShapeMismatch {
                    operand: "src".into(),
                    expected: format!("{dst_free} elements per partition, as dst"),
                    found: src,
                });
            }
            same_dtype(&check, &op.dst, &op.src, "src")?;
            if op.shuffle_mask.len() != 32 {
                return Err(ProgramErrorKind::Invalid(format!(
                    "`shuffle_mask` has {} entries, expected 32",
                    op.shuffle_mask.len()
                )));
            }
            for partition in 0..dst_p {
                let entry = op.shuffle_mask[(partition % 32) as usize];
                if entry == 255 {
                    continue;
                }
                let source = (partition / 32 * 32).checked_add_signed(entry);
                if !(0..32).contains(&entry) || source.is_none_or(|s| s >= src_p) {
                    return Err(ProgramErrorKind::Invalid(format!(
                        "`shuffle_mask[{}]` is {entry}: dst partition {partition} would copy \
                         src partition {}, expected a partition of src's {src_p} in the same \
                         quadrant of 32 (an entry from 0 to 31), or 255 to leave it unmodified",
                        partition % 32,
                        (partition / 32 * 32) as i64 + entry,
                    )));
                }
            }
            shape
        }
        Op::SequenceBounds(op) => {
            let ids = check.ap(&op.segment_ids, "segment_ids")?;
            if partitions(&ids, "segment_ids")? != 1 {
                return Err(ProgramErrorKind::ShapeMismatch {
                    operand: "segment_ids".into(),
                    expected: "one partition ([1, n])".into(),
                    found: ids,
                });
            }
            let n = per_partition(&ids, "segment_ids", 1, u64::MAX)?;
            check.ap_shaped(&op.dst, "dst", &[1, 2, n])?;
            for (operand, ap) in [("segment_ids", &op.segment_ids), ("dst", &op.dst)] {
                let dtype = check.tensor(ap, operand)?.dtype;
                if !matches!(dtype, Dtype::Float32 | Dtype::Int32) {
                    return Err(ProgramErrorKind::Dtype {
                        operand: operand.into(),
                        expected: "float32 or int32".into(),
                        found: dtype.name().into(),
                    });
                }
            }
            no_mask(instruction)?;
            ids
        }
        Op::Dropout(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.data, "data", &shape)?;
            check.operand(&op.prob, "prob", &shape)?;
            same_dtype(&check, &op.dst, &op.data, "data")?;
            shape
        }
        Op::Rng(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            let tensor = check.tensor(&op.dst, "dst")?;
            if !matches!(
                tensor.dtype,
                Dtype::Int8
                    | Dtype::Int16
                    | Dtype::Int32
                    | Dtype::Uint8
                    | Dtype::Uint16
                    | Dtype::Uint32
            ) {
                return Err(ProgramErrorKind::Dtype {
                    operand: "dst".into(),
                    expected: "int8, int16, int32, uint8, uint16 or uint32".into(),
                    found: tensor.dtype.name().into(),
                });
            }
            shape
        }
        Op::Rand2(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.operand(&op.min, "min", &shape)?;
            check.operand(&op.max, "max", &shape)?;
            if let (Operand::Imm(min), Operand::Imm(max)) = (&op.min, &op.max)
                && min.partial_cmp(max) != Some(std::cmp::Ordering::Less)
            {
                return Err(ProgramErrorKind::Invalid(format!(
                    "`min` is {min} and `max` {max}, expected min < max"
                )));
            }
            shape
        }
        Op::Exponential(op) => {
            let shape = check.ap(&op.dst, "dst")?;
            check.ap_shaped(&op.src, "src", &shape)?;
            let p = partitions(&shape, "dst")?;
            if let Some(max_value) = &op.max_value {
                check.operand(max_value, "max_value", &[p, 1])?;
            }
            if let Some(init) = &op.reduce_init {
                check.operand(init, "reduce_init", &[p, 1])?;
            }
            // `reduce_init` defaults to 0, so `load_reduce` always has an initial value.
            accumulating(&check, op.reduce_cmd, op.reduce_res.as_ref(), p, "reduce_init")?;
            shape
        }
    };
    for (k, pred) in instruction.mask.iter().enumerate() {
        check.affine(&format!("mask[{k}]"), &pred.c, pred.k, &iteration)?;
    }
    Ok(())
}

/// The partition count of a shape (its dimension 0), or a shape error for rank 0.
fn partitions(shape: &[u64], operand: &str) -> Result<u64, ProgramErrorKind> {
    shape.first().copied().ok_or_else(|| ProgramErrorKind::ShapeMismatch {
        operand: operand.into(),
        expected: "rank 1 or more (dimension 0 is the partition)".into(),
        found: shape.to_vec(),
    })
}

/// The elements per partition of a shape, which must lie in `low..=high`.
fn per_partition(
    shape: &[u64],
    operand: &str,
    low: u64,
    high: u64,
) -> Result<u64, ProgramErrorKind> {
    let free: u64 = shape.iter().skip(1).product();
    if !(low..=high).contains(&free) {
        return Err(ProgramErrorKind::ShapeMismatch {
            operand: operand.into(),
            expected: format!("{low} to {high} elements per partition"),
            found: shape.to_vec(),
        });
    }
    Ok(free)
}

/// Ops that combine elements across a partition take no mask (docs/nki-program.md).
fn no_mask(instruction: &crate::program::Instruction) -> Result<(), ProgramErrorKind> {
    if !instruction.mask.is_empty() {
        return Err(ProgramErrorKind::Invalid(format!(
            "`{}` takes no mask; slice its operands instead",
            instruction.op.name()
        )));
    }
    Ok(())
}

/// The folds of the accumulating instructions (the `tensor_scalar_cumulative` page's list).
const FOLD_OPS: &[AluOp] =
    &[AluOp::Add, AluOp::Subtract, AluOp::Multiply, AluOp::Maximum, AluOp::Minimum];

/// Checks that `op` (the field `field`) is one of `allowed`.
fn fold_op(op: AluOp, field: &str, allowed: &[AluOp]) -> Result<(), ProgramErrorKind> {
    if !allowed.contains(&op) {
        let names: Vec<&str> = allowed.iter().map(|op| op.name()).collect();
        return Err(ProgramErrorKind::Invalid(format!(
            "`{field}` is `{}`, expected {}",
            op.name(),
            names.join(", ")
        )));
    }
    Ok(())
}

fn load_without_init(init: &str) -> ProgramErrorKind {
    ProgramErrorKind::Invalid(format!(
        "reduce_cmd `load_reduce` loads `{init}` into the accumulator, and the instruction has \
         no `{init}`"
    ))
}

/// Checks an accumulating instruction's `reduce_cmd` and `reduce_res` (`[P, 1]`): `idle` uses
/// no accumulator, so there is none to write, and `load_reduce` needs an initial value (the
/// field `init`, or none when the op has no such field).
fn accumulating(
    check: &Checker<'_>,
    cmd: ReduceCmd,
    reduce_res: Option<&Ap>,
    partitions: u64,
    init: &str,
) -> Result<(), ProgramErrorKind> {
    if let Some(reduce_res) = reduce_res {
        check.direct(reduce_res, "reduce_res")?;
        check.ap_shaped(reduce_res, "reduce_res", &[partitions, 1])?;
        if cmd == ReduceCmd::Idle {
            return Err(ProgramErrorKind::Invalid(
                "`reduce_res` is written from the accumulator, which reduce_cmd `idle` does not \
                 use; give `reset_reduce`, `reduce` or `load_reduce`"
                    .into(),
            ));
        }
    }
    if cmd == ReduceCmd::LoadReduce && init.is_empty() {
        return Err(ProgramErrorKind::Invalid(
            "reduce_cmd `load_reduce` loads an initial value, which this op has no operand \
             for; give `reset`, `reset_reduce`, `reduce` or `idle`"
                .into(),
        ));
    }
    Ok(())
}

/// An operand whose dtype must be `dst`'s (no conversion on the way).
fn same_dtype(
    check: &Checker<'_>,
    dst: &Ap,
    other: &Ap,
    operand: &str,
) -> Result<(), ProgramErrorKind> {
    let expected = check.tensor(dst, "dst")?.dtype;
    let found = check.tensor(other, operand)?.dtype;
    if found != expected {
        return Err(ProgramErrorKind::Dtype {
            operand: operand.into(),
            expected: format!("dst's, {}", expected.name()),
            found: found.name().into(),
        });
    }
    Ok(())
}

impl ReduceCmd {
    /// The command's name in the document.
    pub fn name(self) -> &'static str {
        match self {
            ReduceCmd::Idle => "idle",
            ReduceCmd::Reset => "reset",
            ReduceCmd::ResetReduce => "reset_reduce",
            ReduceCmd::Reduce => "reduce",
            ReduceCmd::LoadReduce => "load_reduce",
        }
    }
}

/// Index outputs are uint16 or uint32.
fn index_dtype(check: &Checker<'_>, ap: &Ap, operand: &str) -> Result<(), ProgramErrorKind> {
    let dtype = check.tensor(ap, operand)?.dtype;
    if !matches!(dtype, crate::dtype::Dtype::Uint16 | crate::dtype::Dtype::Uint32) {
        return Err(ProgramErrorKind::Dtype {
            operand: operand.into(),
            expected: "uint16 or uint32".into(),
            found: dtype.name().into(),
        });
    }
    Ok(())
}

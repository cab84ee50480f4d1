//! The ops: one struct of operands each, the one list of them (`declare_ops!`), and each op's
//! static checks (operand ranks and shapes, buffers, dtypes).
//!
//! The list is declared once; the `Op` enum, its names and its parser expand from it, and
//! `validate`, [`Op::aps`] and the executor match on `Op` exhaustively, so a new op is a
//! compile error wherever it must be handled.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::alu::{ACT_FUNC_NAMES, ALU_OP_NAMES, ActFunc, AluOp};
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
const ALU_FIELDS: &[&str] = &["op", "alu_op", "accumulate", "op0", "op1", "reduce_op"];
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

//! The ops: one struct of operands each, the one list of them ([`declare_ops!`]), and each op's
//! static checks (operand ranks and shapes, buffers, dtypes).
//!
//! The list is declared once; the `Op` enum, its names and its parser expand from it, and
//! [`validate`], [`Op::aps`] and the executor match on `Op` exhaustively, so a new op is a
//! compile error wherever it must be handled.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::alu::{ACT_FUNC_NAMES, ALU_OP_NAMES, ActFunc, AluOp};
use crate::program::{Ap, Buffer, Checker, Cmp, Operand, Program, ProgramErrorKind};

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
            let wrapper: Wrapper = serde_json::from_value(value).map_err(serde::de::Error::custom)?;
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

/// The fields that name ALU operators, and the one that names an activation function.
const ALU_FIELDS: &[&str] = &["op", "alu_op", "accumulate", "op0", "op1", "reduce_op"];
const ACT_FIELDS: &[&str] = &["func"];

/// Finds an ALU operator or activation function name the executor does not model, anywhere in
/// an instruction's fields, so that it is `Unsupported` rather than a parse error.
pub(crate) fn unsupported_name(fields: &Map<String, Value>) -> Option<String> {
    for (key, value) in fields {
        match value {
            Value::String(name) if ALU_FIELDS.contains(&key.as_str()) => {
                if !ALU_OP_NAMES.contains(&name.as_str()) {
                    return Some(format!("ALU op `{name}` (in `{key}`)"));
                }
            }
            Value::String(name) if ACT_FIELDS.contains(&key.as_str()) => {
                if !ACT_FUNC_NAMES.contains(&name.as_str()) {
                    return Some(format!("activation function `{name}`"));
                }
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
    };
    for (k, pred) in instruction.mask.iter().enumerate() {
        check.affine(&format!("mask[{k}]"), &pred.c, pred.k, &iteration)?;
    }
    Ok(())
}

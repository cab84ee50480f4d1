//! The structural ops' shape checks: parameters, constants (and the literals they hold),
//! tuples, calls, loops, conditionals, and the ops that pass a value on unchanged.

use std::sync::Arc;

use super::boundary::Array;
use super::error::Fail;
use super::op_context::{OpContext, invalid, to_usize};
use super::plan::Op;
use super::shape::{ArrayShape, Shape};
use super::tensor::{Data, Tensor};
use crate::dtype::ElementType;
use crate::proto;

/// Shape checks and attribute decoding for parameters, constants, tuples, calls, loops, conditionals and the ops that only pass a value on.
pub(crate) fn compile_structure(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let opcode = cx.ins.opcode.as_str();
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    Ok(match opcode {
        "parameter" => {
            cx.arity(operands, 0)?;
            Op::Parameter(to_usize(ins.parameter_number, "parameter_number")?)
        }
        "constant" => {
            let literal = ins.literal.as_ref().ok_or_else(|| invalid("constant has no literal"))?;
            match shape {
                Shape::Array(a) => Op::Constant(Arc::new(literal_tensor(literal, a)?)),
                other => {
                    return Err(Fail::Unsupported(format!(
                        "constant of shape {}",
                        other.describe()
                    )));
                }
            }
        }
        "tuple" => {
            cx.expect(shape, &Shape::Tuple(operands.iter().map(|s| (*s).clone()).collect()))?;
            Op::Tuple
        }
        "get-tuple-element" => {
            cx.arity(operands, 1)?;
            let index = to_usize(ins.tuple_index, "tuple_index")?;
            let Shape::Tuple(items) = operands[0] else {
                return Err(invalid(format!(
                    "operand is {}, expected a tuple",
                    operands[0].describe()
                )));
            };
            let item = items.get(index).ok_or_else(|| {
                invalid(format!("tuple_index {index} is out of range for {} elements", items.len()))
            })?;
            cx.expect(shape, item)?;
            Op::GetTupleElement(index)
        }
        "call" | "fusion" => {
            let callee = cx.callee(ins, 0)?;
            cx.check_call(callee, operands, shape)?;
            Op::Call(callee)
        }
        "while" => {
            cx.arity(operands, 1)?;
            let body = cx.callee(ins, 0)?;
            let condition = cx.callee(ins, 1)?;
            cx.check_call(body, operands, operands[0])?;
            let pred =
                Shape::Array(ArrayShape { ty: ElementType::Pred, dims: vec![], layout: None });
            cx.check_call(condition, operands, &pred)?;
            cx.expect(shape, operands[0])?;
            Op::While { condition, body }
        }
        "conditional" => {
            if operands.is_empty() {
                return Err(invalid("conditional needs a predicate or branch index"));
            }
            let selector = operands[0].array()?;
            let n = ins.called_computation_ids.len();
            let ok = selector.dims.is_empty()
                && match selector.ty {
                    ElementType::Pred => n == 2,
                    ElementType::S32 => n >= 1,
                    _ => false,
                };
            if !ok {
                return Err(invalid(format!(
                    "conditional selector is {} with {n} branches, expected pred[] with 2 or s32[] with at least 1",
                    operands[0].describe()
                )));
            }
            cx.arity(operands, n + 1)?;
            let branches: Vec<usize> =
                (0..n).map(|i| cx.callee(ins, i)).collect::<Result<_, _>>()?;
            for (i, &b) in branches.iter().enumerate() {
                cx.check_call(b, &operands[i + 1..i + 2], shape)?;
            }
            Op::Conditional { branches }
        }
        "opt-barrier" | "add-dependency" => {
            let first =
                operands.first().ok_or_else(|| invalid(format!("{opcode} needs an operand")))?;
            cx.expect(shape, first)?;
            Op::PassThrough
        }
        "after-all" => Op::AfterAll,
        "replica-id" | "partition-id" => {
            cx.expect(
                shape,
                &Shape::Array(ArrayShape { ty: ElementType::U32, dims: vec![], layout: None }),
            )?;
            Op::ReplicaId
        }
        other => return Err(Fail::Internal(format!("opcode {other} is not compile_structure's"))),
    })
}

/// Reads a literal into a tensor of `shape`.
pub(crate) fn literal_tensor(
    literal: &proto::LiteralProto,
    shape: &ArrayShape,
) -> Result<Tensor, Fail> {
    let n = shape.n_elems();
    fn check_len(got: usize, n: usize, what: &str) -> Result<(), Fail> {
        if got == n {
            Ok(())
        } else {
            Err(invalid(format!("literal has {got} {what}, expected {n}")))
        }
    }
    let bytes_of = |bytes: &[u8], size: usize, what: &str| -> Result<Data, Fail> {
        check_len(bytes.len() / size.max(1), n, what)?;
        if !bytes.len().is_multiple_of(size) {
            return Err(invalid(format!(
                "literal {what} is {} bytes, not a multiple of {size}",
                bytes.len()
            )));
        }
        Data::from_le_bytes(shape.ty, bytes)
    };
    let data = match shape.ty {
        ElementType::Pred => {
            check_len(literal.preds.len(), n, "preds")?;
            Data::Pred(literal.preds.clone())
        }
        ElementType::S8 => bytes_of(&literal.s8s, 1, "s8s")?,
        ElementType::U8 => bytes_of(&literal.u8s, 1, "u8s")?,
        ElementType::S16 => bytes_of(&literal.s16s, 2, "s16s")?,
        ElementType::U16 => bytes_of(&literal.u16s, 2, "u16s")?,
        ElementType::F16 => bytes_of(&literal.f16s, 2, "f16s")?,
        ElementType::Bf16 => bytes_of(&literal.bf16s, 2, "bf16s")?,
        ElementType::F8e5m2 => bytes_of(&literal.f8e5m2s, 1, "f8e5m2s")?,
        ElementType::F8e4m3fn => bytes_of(&literal.f8e4m3fns, 1, "f8e4m3fns")?,
        ElementType::F8e4m3 => bytes_of(&literal.f8e4m3s, 1, "f8e4m3s")?,
        ElementType::S32 => {
            check_len(literal.s32s.len(), n, "s32s")?;
            Data::S32(literal.s32s.clone())
        }
        ElementType::S64 => {
            check_len(literal.s64s.len(), n, "s64s")?;
            Data::S64(literal.s64s.clone())
        }
        ElementType::U32 => {
            check_len(literal.u32s.len(), n, "u32s")?;
            Data::U32(literal.u32s.clone())
        }
        ElementType::U64 => {
            check_len(literal.u64s.len(), n, "u64s")?;
            Data::U64(literal.u64s.clone())
        }
        ElementType::F32 => {
            check_len(literal.f32s.len(), n, "f32s")?;
            Data::F32(literal.f32s.clone())
        }
        ElementType::F64 => {
            check_len(literal.f64s.len(), n, "f64s")?;
            Data::F64(literal.f64s.clone())
        }
    };
    let tensor = Tensor { dims: shape.dims.clone(), data };
    match &shape.layout {
        None => Ok(tensor),
        Some(layout) => {
            let bytes = tensor.data.to_le_bytes()?;
            let proto_ty = proto::PrimitiveType::try_from(shape.ty as i32)
                .map_err(|_| Fail::Internal("element type number".into()))?;
            let dims: Vec<i64> = shape.dims.iter().map(|&d| d as i64).collect();
            let array = Array::from_physical(proto_ty, dims, layout, bytes)
                .map_err(|e| invalid(e.to_string()))?;
            Ok(Tensor {
                dims: shape.dims.clone(),
                data: Data::from_le_bytes(shape.ty, &array.bytes)?,
            })
        }
    }
}

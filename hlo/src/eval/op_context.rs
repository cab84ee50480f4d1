//! What a family's shape check reads about one instruction ([`OpContext`]), and the checks and
//! attribute decoders the families share.
//!
//! Each op family checks its instructions beside its kernel (`dot::compile_dot`,
//! `reduce::compile_reduce`, …); the compiler builds one context per instruction and
//! dispatches on the opcode.

use std::collections::HashMap;

use super::error::Fail;
use super::plan::Comp;
use super::shape::{ArrayShape, Shape};
use crate::dtype::ElementType;
use crate::proto;

/// One instruction as its family sees it while compiling: the proto, the declared result shape,
/// the operands' shapes, and the computations compiled so far (callees come first).
pub(crate) struct OpContext<'a> {
    pub(crate) ins: &'a proto::HloInstructionProto,
    pub(crate) shape: &'a Shape,
    pub(crate) operands: &'a [&'a Shape],
    pub(crate) comps: &'a [Comp],
    /// Proto computation id → proto computation index.
    pub(crate) by_id: &'a HashMap<i64, usize>,
    /// Proto computation index → plan index.
    pub(crate) plan: &'a HashMap<usize, usize>,
    pub(crate) budget_bytes: u64,
}

pub(crate) fn invalid(detail: impl Into<String>) -> Fail {
    Fail::Invalid(detail.into())
}

pub(crate) fn to_usize(value: i64, what: &str) -> Result<usize, Fail> {
    usize::try_from(value).map_err(|_| invalid(format!("{what} {value} must not be negative")))
}

pub(crate) fn dims_list(values: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, Fail> {
    let mut seen = vec![false; rank];
    values
        .iter()
        .map(|&v| {
            let d = usize::try_from(v).ok().filter(|&d| d < rank && !seen[d]);
            match d {
                Some(d) => {
                    seen[d] = true;
                    Ok(d)
                }
                None => Err(invalid(format!(
                    "{what} {values:?}: each must be a distinct dimension below rank {rank}"
                ))),
            }
        })
        .collect()
}

impl OpContext<'_> {
    pub(crate) fn callee(
        &self,
        instruction: &proto::HloInstructionProto,
        position: usize,
    ) -> Result<usize, Fail> {
        let id = instruction.called_computation_ids.get(position).ok_or_else(|| {
            invalid(format!(
                "expected at least {} called computations, got {}",
                position + 1,
                instruction.called_computation_ids.len()
            ))
        })?;
        let proto_index = self
            .by_id
            .get(id)
            .ok_or_else(|| invalid(format!("called computation id {id} does not exist")))?;
        self.plan
            .get(proto_index)
            .copied()
            .ok_or_else(|| Fail::Internal(format!("computation id {id} compiled out of order")))
    }

    pub(crate) fn expect(&self, shape: &Shape, inferred: &Shape) -> Result<(), Fail> {
        if shape.same(inferred) {
            Ok(())
        } else {
            Err(invalid(format!(
                "shape is {}, but the operands give {}",
                shape.describe(),
                inferred.describe()
            )))
        }
    }

    pub(crate) fn arity(&self, operands: &[&Shape], n: usize) -> Result<(), Fail> {
        if operands.len() == n {
            Ok(())
        } else {
            Err(invalid(format!("expected {n} operands, got {}", operands.len())))
        }
    }

    pub(crate) fn scalar_computation(
        &self,
        comp: usize,
        n_params: usize,
        ty: &[ElementType],
    ) -> Result<(), Fail> {
        let c = &self.comps[comp];
        if c.param_shapes.len() != n_params {
            return Err(invalid(format!(
                "called computation {} takes {} parameters, expected {n_params}",
                c.name,
                c.param_shapes.len()
            )));
        }
        for (i, p) in c.param_shapes.iter().enumerate() {
            let want = ty[i % ty.len()];
            let ok = matches!(p, Shape::Array(a) if a.dims.is_empty() && a.ty == want);
            if !ok {
                return Err(invalid(format!(
                    "called computation {} parameter {i} is {}, expected {want}[]",
                    c.name,
                    p.describe()
                )));
            }
        }
        Ok(())
    }

    /// The k of a top-k custom call `target` returning (values, indices of `indices`), checked
    /// against its operand: k from the result shape, at most the last dimension.
    pub(crate) fn top_k_call(
        &self,
        operands: &[&Shape],
        shape: &Shape,
        target: &str,
        indices: ElementType,
    ) -> Result<usize, Fail> {
        self.arity(operands, 1)?;
        let a = operands[0].array()?;
        let k = match shape {
            Shape::Tuple(items) => match items.as_slice() {
                [Shape::Array(v), Shape::Array(_)] => v.dims.last().copied(),
                _ => None,
            },
            _ => None,
        };
        let k = k.ok_or_else(|| {
            invalid(format!(
                "{target} returns {}, expected a (values, indices) tuple",
                shape.describe()
            ))
        })?;
        let last =
            a.dims.last().copied().ok_or_else(|| invalid(format!("{target} of a scalar")))?;
        if k > last {
            return Err(invalid(format!(
                "{target} k {k} is larger than the last dimension {last}"
            )));
        }
        let mut dims = a.dims.clone();
        if let Some(d) = dims.last_mut() {
            *d = k;
        }
        let inferred = Shape::Tuple(vec![
            Shape::Array(ArrayShape { ty: a.ty, dims: dims.clone(), layout: None }),
            Shape::Array(ArrayShape { ty: indices, dims, layout: None }),
        ]);
        self.expect(shape, &inferred)?;
        Ok(k)
    }

    pub(crate) fn scalar_indices(&self, operands: &[&Shape]) -> Result<(), Fail> {
        for s in operands {
            let a = s.array()?;
            if !a.dims.is_empty() || !(a.ty.is_signed_int() || a.ty.is_unsigned_int()) {
                return Err(invalid(format!(
                    "index operand is {}, expected an integer scalar",
                    s.describe()
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn check_call(
        &self,
        callee: usize,
        operands: &[&Shape],
        result: &Shape,
    ) -> Result<(), Fail> {
        let c = &self.comps[callee];
        if c.param_shapes.len() != operands.len()
            || c.param_shapes.iter().zip(operands).any(|(p, o)| !p.same(o))
        {
            let given: Vec<String> = operands.iter().map(|s| s.describe()).collect();
            let wanted: Vec<String> = c.param_shapes.iter().map(Shape::describe).collect();
            return Err(invalid(format!(
                "called computation {} takes ({}), given ({})",
                c.name,
                wanted.join(", "),
                given.join(", ")
            )));
        }
        if !c.result_shape().same(result) {
            return Err(invalid(format!(
                "called computation {} returns {}, expected {}",
                c.name,
                c.result_shape().describe(),
                result.describe()
            )));
        }
        Ok(())
    }

    pub(crate) fn check_scalar_result(
        &self,
        computation: usize,
        types: &[ElementType],
    ) -> Result<(), Fail> {
        let c = &self.comps[computation];
        let scalar = |ty: ElementType| Shape::Array(ArrayShape { ty, dims: vec![], layout: None });
        let expected = if types.len() == 1 {
            scalar(types[0])
        } else {
            Shape::Tuple(types.iter().map(|&t| scalar(t)).collect())
        };
        if c.result_shape().same(&expected) {
            Ok(())
        } else {
            Err(invalid(format!(
                "called computation {} returns {}, expected {}",
                c.name,
                c.result_shape().describe(),
                expected.describe()
            )))
        }
    }
}

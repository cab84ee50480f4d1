//! The checked shape vocabulary every eval module shares: array and tuple shapes, their text
//! form in error messages, the proto parser, and the byte and element counts the budget and
//! the work measure read.
//!
//! A leaf: it knows protos, element types and failures, and nothing of the compiler, the plan
//! or the kernels.

use super::error::Fail;
use crate::dtype::ElementType;
use crate::proto;

fn invalid(detail: impl Into<String>) -> Fail {
    Fail::Invalid(detail.into())
}

/// A checked shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Array(ArrayShape),
    Tuple(Vec<Shape>),
    Token,
}

/// An array shape; `layout` is `Some` only for a non-default `minor_to_major`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ArrayShape {
    pub(crate) ty: ElementType,
    pub(crate) dims: Vec<usize>,
    pub(crate) layout: Option<Vec<i64>>,
}

impl ArrayShape {
    pub(crate) fn n_elems(&self) -> usize {
        self.dims.iter().product()
    }

    pub(crate) fn same(&self, other: &ArrayShape) -> bool {
        self.ty == other.ty && self.dims == other.dims
    }
}

impl Shape {
    pub(crate) fn describe(&self) -> String {
        match self {
            Shape::Array(a) => describe_array(a.ty, &a.dims),
            Shape::Tuple(items) => {
                let inner: Vec<String> = items.iter().map(Shape::describe).collect();
                format!("({})", inner.join(", "))
            }
            Shape::Token => "token[]".into(),
        }
    }

    /// Equal ignoring layouts.
    pub(crate) fn same(&self, other: &Shape) -> bool {
        match (self, other) {
            (Shape::Array(a), Shape::Array(b)) => a.same(b),
            (Shape::Tuple(a), Shape::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
            }
            (Shape::Token, Shape::Token) => true,
            _ => false,
        }
    }

    pub(crate) fn array(&self) -> Result<&ArrayShape, Fail> {
        match self {
            Shape::Array(a) => Ok(a),
            other => Err(Fail::Invalid(format!("expected an array, got {}", other.describe()))),
        }
    }
}

/// The text form of an array shape, as XLA prints it: `f32[2,3]`.
pub(crate) fn describe_array(ty: ElementType, dims: &[usize]) -> String {
    let dims: Vec<String> = dims.iter().map(usize::to_string).collect();
    format!("{ty}[{}]", dims.join(","))
}

/// Parses a shape proto.
pub(crate) fn parse_shape(shape: &proto::ShapeProto) -> Result<Shape, Fail> {
    match proto::PrimitiveType::try_from(shape.element_type) {
        Ok(proto::PrimitiveType::Tuple) => {
            Ok(Shape::Tuple(shape.tuple_shapes.iter().map(parse_shape).collect::<Result<_, _>>()?))
        }
        Ok(proto::PrimitiveType::Token) => Ok(Shape::Token),
        Ok(other) => {
            let ty = ElementType::from_primitive(other as i32).ok_or_else(|| {
                Fail::Unsupported(format!("element type {}", other.as_str_name()))
            })?;
            let dims = shape
                .dimensions
                .iter()
                .map(|&d| usize::try_from(d))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    invalid(format!("dimensions {:?} must not be negative", shape.dimensions))
                })?;
            let rank = dims.len();
            let layout = shape
                .layout
                .as_ref()
                .map(|l| l.minor_to_major.clone())
                .filter(|m| !m.is_empty() && *m != (0..rank as i64).rev().collect::<Vec<_>>());
            if let Some(m) = &layout {
                let mut sorted = m.clone();
                sorted.sort_unstable();
                if sorted != (0..rank as i64).collect::<Vec<_>>() {
                    return Err(invalid(format!("layout {m:?} is not a permutation of 0..{rank}")));
                }
            }
            Ok(Shape::Array(ArrayShape { ty, dims, layout }))
        }
        Err(_) => Err(Fail::Unsupported(format!("element type number {}", shape.element_type))),
    }
}

/// The array elements of a shape, tuples summed (saturating).
pub(crate) fn shape_elems(shape: &Shape) -> u64 {
    match shape {
        Shape::Array(a) => a.dims.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64)),
        Shape::Tuple(items) => items.iter().fold(0u64, |n, s| n.saturating_add(shape_elems(s))),
        Shape::Token => 0,
    }
}

/// Bytes of every array in a shape; `None` on overflow.
pub(crate) fn shape_bytes(shape: &Shape) -> Option<u64> {
    match shape {
        Shape::Array(a) => {
            a.dims.iter().try_fold(a.ty.item_size() as u64, |n, &d| n.checked_mul(d as u64))
        }
        Shape::Tuple(items) => items.iter().try_fold(0u64, |n, s| n.checked_add(shape_bytes(s)?)),
        Shape::Token => Some(0),
    }
}

/// Whether `bytes` fit in `budget`; an overflowed count (`None`) never fits.
pub(crate) fn check_budget(bytes: Option<u64>, budget: u64) -> Result<(), Fail> {
    match bytes {
        Some(n) if n <= budget => Ok(()),
        Some(n) => Err(Fail::Budget { needed: n }),
        None => Err(Fail::Budget { needed: u64::MAX }),
    }
}

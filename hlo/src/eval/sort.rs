//! `sort` (multi-operand, comparator computation, stable) and `topk`.
//!
//! Sorting uses our own stable merge sort over indices with a fallible comparator: a comparator
//! computed from HLO need not be a strict weak order, and the standard library's sorts may panic
//! on such comparators, which untrusted input must never cause. A comparator recognised as one
//! compare of one operand's pair runs on pre-extracted keys; any other runs the computation.

use std::cmp::Ordering;
use std::sync::Arc;

use super::Fail;
use super::compile::SimpleComparator;
use super::elementwise::{Direction, Float};
use super::exec::{Ctx, element};
use super::tensor::{Data, Tensor, dispatch, try_alloc};

/// Sort keys of one operand, comparable without the interpreter.
enum Keys {
    Float(Vec<f64>),
    Total(Vec<i64>),
    Int(Vec<i128>),
}

fn keys(data: &Data, total_order: bool) -> Result<Keys, Fail> {
    Ok(if data.ty().is_float() {
        let super::tensor::Data::F64(v) =
            super::elementwise::convert(data, crate::dtype::ElementType::F64)?
        else {
            return Err(Fail::Internal("f64 keys".into()));
        };
        if total_order {
            Keys::Total(v.iter().map(|x| x.total_key()).collect())
        } else {
            Keys::Float(v)
        }
    } else {
        let v: Vec<i128> = match data {
            Data::Pred(v) => v.iter().map(|&b| i128::from(b)).collect(),
            Data::S8(v) => v.iter().map(|&x| i128::from(x)).collect(),
            Data::S16(v) => v.iter().map(|&x| i128::from(x)).collect(),
            Data::S32(v) => v.iter().map(|&x| i128::from(x)).collect(),
            Data::S64(v) => v.iter().map(|&x| i128::from(x)).collect(),
            Data::U8(v) => v.iter().map(|&x| i128::from(x)).collect(),
            Data::U16(v) => v.iter().map(|&x| i128::from(x)).collect(),
            Data::U32(v) => v.iter().map(|&x| i128::from(x)).collect(),
            Data::U64(v) => v.iter().map(|&x| i128::from(x)).collect(),
            _ => return Err(Fail::Internal("integer keys".into())),
        };
        Keys::Int(v)
    })
}

impl Keys {
    fn cmp(&self, a: usize, b: usize) -> Option<Ordering> {
        match self {
            Keys::Float(v) => v[a].partial_cmp(&v[b]),
            Keys::Total(v) => Some(v[a].cmp(&v[b])),
            Keys::Int(v) => Some(v[a].cmp(&v[b])),
        }
    }
}

/// Stable merge sort of `items` by `less` (true when the first must come before the second).
fn merge_sort(
    items: &mut Vec<usize>,
    less: &mut dyn FnMut(usize, usize) -> Result<bool, Fail>,
) -> Result<(), Fail> {
    let n = items.len();
    let mut buffer = try_alloc::<usize>(n)?;
    buffer.resize(n, 0);
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut k) = (start, mid, start);
            while i < mid && j < end {
                // Take from the right only when it is strictly before the left: stable.
                if less(items[j], items[i])? {
                    buffer[k] = items[j];
                    j += 1;
                } else {
                    buffer[k] = items[i];
                    i += 1;
                }
                k += 1;
            }
            buffer[k..k + (mid - i)].copy_from_slice(&items[i..mid]);
            k += mid - i;
            buffer[k..k + (end - j)].copy_from_slice(&items[j..end]);
            start = end;
        }
        std::mem::swap(items, &mut buffer);
        width *= 2;
    }
    Ok(())
}

fn permute(data: &Data, order: &[usize]) -> Result<Data, Fail> {
    Ok(dispatch!(data, v => {
        let mut out = try_alloc(order.len())?;
        out.extend(order.iter().map(|&i| v[i]));
        out
    }))
}

/// `sort` along `dim`; returns each operand permuted.
pub(crate) fn sort(
    ctx: &Ctx<'_>,
    computation: usize,
    inputs: &[&Arc<Tensor>],
    dim: usize,
) -> Result<Vec<Data>, Fail> {
    let dims = &inputs[0].dims;
    let len = dims[dim];
    let inner: usize = dims[dim + 1..].iter().product();
    let outer: usize = dims[..dim].iter().product();
    let comp = &ctx.program.comps[computation];
    let simple: Option<(SimpleComparator, Keys)> = match comp.comparator {
        Some(c) => Some((c, keys(&inputs[c.operand].data, c.total_order)?)),
        None => None,
    };
    let total = outer * len * inner;
    let mut order: Vec<usize> = try_alloc(total)?;
    let mut line = Vec::with_capacity(len);
    for o in 0..outer {
        for i in 0..inner {
            line.clear();
            line.extend((0..len).map(|j| (o * len + j) * inner + i));
            let mut less = |a: usize, b: usize| -> Result<bool, Fail> {
                if let Some((c, k)) = &simple {
                    let (x, y) = if c.swapped { (b, a) } else { (a, b) };
                    return Ok(direction_test(c.direction, k.cmp(x, y)));
                }
                let mut args = Vec::with_capacity(2 * inputs.len());
                for t in inputs {
                    args.push(element(&t.data, a));
                    args.push(element(&t.data, b));
                }
                match ctx.apply_scalars(computation, &args)?.first() {
                    Some(Data::Pred(p)) => Ok(p[0]),
                    _ => Err(Fail::Internal("comparator returned no pred".into())),
                }
            };
            merge_sort(&mut line, &mut less)?;
            order.extend_from_slice(&line);
        }
    }
    // `order` lists source offsets grouped by (outer, inner) lines; scatter them back.
    let mut positions: Vec<usize> = try_alloc(total)?;
    positions.resize(total, 0);
    let mut k = 0;
    for o in 0..outer {
        for i in 0..inner {
            for j in 0..len {
                positions[(o * len + j) * inner + i] = order[k];
                k += 1;
            }
        }
    }
    inputs.iter().map(|t| permute(&t.data, &positions)).collect()
}

fn direction_test(direction: Direction, ordering: Option<Ordering>) -> bool {
    use Ordering::*;
    match (direction, ordering) {
        (Direction::Ne, None) => true,
        (_, None) => false,
        (Direction::Eq, Some(o)) => o == Equal,
        (Direction::Ne, Some(o)) => o != Equal,
        (Direction::Lt, Some(o)) => o == Less,
        (Direction::Le, Some(o)) => o != Greater,
        (Direction::Gt, Some(o)) => o == Greater,
        (Direction::Ge, Some(o)) => o != Less,
    }
}

/// `topk` over the last dimension: the `k` largest (or smallest) values, ties by lower index,
/// floats in IEEE total order (so NaN is above +inf), and their s32 indices.
pub(crate) fn top_k(t: &Arc<Tensor>, k: usize, largest: bool) -> Result<(Data, Data), Fail> {
    let len = t.dims.last().copied().unwrap_or(1);
    let rows = t.n_elems().checked_div(len).unwrap_or(0);
    let keys = keys(&t.data, true)?;
    let mut picks: Vec<usize> = try_alloc(rows * k)?;
    let mut idx: Vec<i32> = try_alloc(rows * k)?;
    let mut line = Vec::with_capacity(len);
    for r in 0..rows {
        line.clear();
        line.extend((0..len).map(|j| r * len + j));
        let mut less = |a: usize, b: usize| -> Result<bool, Fail> {
            let o = keys.cmp(a, b);
            Ok(if largest { o == Some(Ordering::Greater) } else { o == Some(Ordering::Less) })
        };
        merge_sort(&mut line, &mut less)?;
        for &p in &line[..k] {
            picks.push(p);
            idx.push((p - r * len) as i32);
        }
    }
    Ok((permute(&t.data, &picks)?, Data::S32(idx)))
}

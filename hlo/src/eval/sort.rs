//! `sort` (multi-operand, comparator computation, stable) and `topk`.
//!
//! Sorting uses our own stable merge sort over indices with a fallible comparator: a comparator
//! computed from HLO need not be a strict weak order, and the standard library's sorts may panic
//! on such comparators, which untrusted input must never cause. A comparator recognised as a
//! lexicographic order of strict compares over integers or floats in total order
//! (`recognise::SortComparator`, jnp.sort's included) is turned into one `u64` key per element
//! and operand whose integer order is the comparator's; each line is then sorted by
//! (keys, position) with the standard library's unstable sort, which over integers is a total
//! order and gives exactly the stable order. A comparator recognised as one compare of one
//! operand's pair in the partial order runs on pre-extracted keys in the merge sort; any other
//! runs the computation. `topk` selects the k first of each row by the same keys before sorting
//! only those.

use std::cmp::Ordering;
use std::sync::Arc;

use super::elementwise::widen;
use super::error::Fail;
use super::op_context::{OpContext, dims_list, invalid, to_usize};
use super::plan::Op;
use super::plan::SimpleComparator;
use super::plan::Subcomputations;
use super::plan::{Canon, SortComparator, SortKey};
use super::scalar::Float;
use super::shape::{ArrayShape, Shape};
use super::tensor::element;
use super::tensor::{Data, Tensor, dispatch, try_alloc};
use crate::dtype::{ElementType, SmallFloat};

/// Keys whose unsigned order is the element type's order: IEEE totalOrder for floats (after
/// `canon`, evaluated as its selects and compares are), numeric order for integers. `None` for
/// a type or constant the recogniser's shapes do not produce (the caller then runs the general
/// path).
fn order_keys(data: &Data, canon: Option<&Canon>) -> Result<Option<Vec<u64>>, Fail> {
    const SIGN: u64 = 1 << 63;
    fn float<F: Float>(v: &[F], canon: Option<(F, F)>) -> Result<Vec<u64>, Fail> {
        let mut out = try_alloc(v.len())?;
        let key = |x: F| (x.total_key() as u64) ^ SIGN;
        match canon {
            // select(x != x, nan, select(x == zero, zero, x)), in the partial order.
            Some((nan, zero)) => out.extend(v.iter().map(|&x| {
                #[allow(clippy::eq_op)]
                let canonical = if x != x {
                    nan
                } else if x == zero {
                    zero
                } else {
                    x
                };
                key(canonical)
            })),
            None => out.extend(v.iter().map(|&x| key(x))),
        }
        Ok(out)
    }
    fn int<T: Copy>(v: &[T], f: impl Fn(T) -> u64) -> Result<Vec<u64>, Fail> {
        let mut out = try_alloc(v.len())?;
        out.extend(v.iter().map(|&x| f(x)));
        Ok(out)
    }
    let consts = canon.map(|c| (&c.nan.data, &c.zero.data));
    macro_rules! small {
        ($format:expr, $v:expr) => {{
            let format: SmallFloat = $format;
            let wide = widen(format, $v)?;
            let canon = match consts {
                None => None,
                Some((Data::F16(n), Data::F16(z))) | Some((Data::Bf16(n), Data::Bf16(z)))
                    if !n.is_empty() && !z.is_empty() =>
                {
                    Some((format.decode(u32::from(n[0])), format.decode(u32::from(z[0]))))
                }
                Some((Data::F8e5m2(n), Data::F8e5m2(z)))
                | Some((Data::F8e4m3fn(n), Data::F8e4m3fn(z)))
                | Some((Data::F8e4m3(n), Data::F8e4m3(z)))
                    if !n.is_empty() && !z.is_empty() =>
                {
                    Some((format.decode(u32::from(n[0])), format.decode(u32::from(z[0]))))
                }
                Some(_) => return Ok(None),
            };
            float(&wide, canon)?
        }};
    }
    let signed = |x: i64| (x as u64) ^ SIGN;
    Ok(Some(match data {
        Data::F32(v) => match consts {
            None => float(v, None)?,
            Some((Data::F32(n), Data::F32(z))) if !n.is_empty() && !z.is_empty() => {
                float(v, Some((n[0], z[0])))?
            }
            Some(_) => return Ok(None),
        },
        Data::F64(v) => match consts {
            None => float(v, None)?,
            Some((Data::F64(n), Data::F64(z))) if !n.is_empty() && !z.is_empty() => {
                float(v, Some((n[0], z[0])))?
            }
            Some(_) => return Ok(None),
        },
        Data::F16(v) => small!(SmallFloat::F16, v),
        Data::Bf16(v) => small!(SmallFloat::Bf16, v),
        Data::F8e5m2(v) => small!(SmallFloat::F8e5m2, v),
        Data::F8e4m3fn(v) => small!(SmallFloat::F8e4m3fn, v),
        Data::F8e4m3(v) => small!(SmallFloat::F8e4m3, v),
        _ if consts.is_some() => return Ok(None),
        Data::Pred(v) => int(v, u64::from)?,
        Data::S8(v) => int(v, |x| signed(i64::from(x)))?,
        Data::S16(v) => int(v, |x| signed(i64::from(x)))?,
        Data::S32(v) => int(v, |x| signed(i64::from(x)))?,
        Data::S64(v) => int(v, signed)?,
        Data::U8(v) => int(v, u64::from)?,
        Data::U16(v) => int(v, u64::from)?,
        Data::U32(v) => int(v, u64::from)?,
        Data::U64(v) => int(v, |x| x)?,
    }))
}

/// The keys of a recognised comparator, "less" meaning a smaller key (descending keys are
/// inverted); `None` when one operand has no direct keys.
fn comparator_keys(
    comparator: &SortComparator,
    inputs: &[&Arc<Tensor>],
) -> Result<Option<Vec<Vec<u64>>>, Fail> {
    let mut all = Vec::with_capacity(comparator.keys.len());
    for SortKey { operand, descending, canon } in &comparator.keys {
        let Some(t) = inputs.get(*operand) else { return Ok(None) };
        let Some(mut keys) = order_keys(&t.data, canon.as_ref())? else { return Ok(None) };
        if *descending {
            keys.iter_mut().for_each(|k| *k = !*k);
        }
        all.push(keys);
    }
    Ok(Some(all))
}

/// For each (outer, inner) line, the source offsets in sorted order, written to the line's
/// offsets of `positions`: a sort by (keys…, position), so equal keys keep their order.
fn sort_lines_by_keys(
    keys: &[Vec<u64>],
    positions: &mut [usize],
    [outer, len, inner]: [usize; 3],
) -> Result<(), Fail> {
    let mut pairs: Vec<(u64, usize)> = try_alloc(len)?;
    let mut line: Vec<usize> = try_alloc(len)?;
    for o in 0..outer {
        for i in 0..inner {
            let offset = |j: usize| (o * len + j) * inner + i;
            if let [only] = keys {
                pairs.clear();
                pairs.extend((0..len).map(|j| (only[offset(j)], j)));
                pairs.sort_unstable();
                for (j, &(_, from)) in pairs.iter().enumerate() {
                    positions[offset(j)] = offset(from);
                }
            } else {
                line.clear();
                line.extend(0..len);
                line.sort_unstable_by(|&a, &b| {
                    keys.iter()
                        .map(|k| k[offset(a)].cmp(&k[offset(b)]))
                        .find(|o| o.is_ne())
                        .unwrap_or_else(|| a.cmp(&b))
                });
                for (j, &from) in line.iter().enumerate() {
                    positions[offset(j)] = offset(from);
                }
            }
        }
    }
    Ok(())
}

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
    ctx: &impl Subcomputations,
    computation: usize,
    inputs: &[&Arc<Tensor>],
    dim: usize,
) -> Result<Vec<Data>, Fail> {
    let dims = &inputs[0].dims;
    let len = dims[dim];
    let inner: usize = dims[dim + 1..].iter().product();
    let outer: usize = dims[..dim].iter().product();
    let comp = ctx.computation(computation);
    let total = outer * len * inner;
    if let Some(comparator) = &comp.recognised.sort
        && let Some(keys) = comparator_keys(comparator, inputs)?
    {
        let mut positions: Vec<usize> = try_alloc(total)?;
        positions.resize(total, 0);
        sort_lines_by_keys(&keys, &mut positions, [outer, len, inner])?;
        return inputs.iter().map(|t| permute(&t.data, &positions)).collect();
    }
    let simple: Option<(SimpleComparator, Keys)> = match comp.comparator {
        Some(c) => Some((c, keys(&inputs[c.operand].data, c.total_order)?)),
        None => None,
    };
    let mut order: Vec<usize> = try_alloc(total)?;
    let mut line = Vec::with_capacity(len);
    for o in 0..outer {
        for i in 0..inner {
            line.clear();
            line.extend((0..len).map(|j| (o * len + j) * inner + i));
            let mut less = |a: usize, b: usize| -> Result<bool, Fail> {
                if let Some((c, k)) = &simple {
                    let (x, y) = if c.swapped { (b, a) } else { (a, b) };
                    return Ok(c.direction.test(k.cmp(x, y)));
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

/// `topk` over the last dimension: the `k` largest (or smallest) values, ties by lower index,
/// floats in IEEE total order (so NaN is above +inf), and their s32 indices.
pub(crate) fn top_k(t: &Arc<Tensor>, k: usize, largest: bool) -> Result<(Data, Data), Fail> {
    let len = t.dims.last().copied().unwrap_or(1);
    let rows = t.n_elems().checked_div(len).unwrap_or(0);
    let k = k.min(len);
    let Some(mut keys) = order_keys(&t.data, None)? else {
        return Err(Fail::Internal(format!("topk of {}", t.ty())));
    };
    if largest {
        keys.iter_mut().for_each(|x| *x = !*x);
    }
    let mut picks: Vec<usize> = try_alloc(rows * k)?;
    let mut idx: Vec<i32> = try_alloc(rows * k)?;
    let mut pairs: Vec<(u64, usize)> = try_alloc(len)?;
    for (r, row) in keys.chunks_exact(len.max(1)).enumerate().take(rows) {
        pairs.clear();
        pairs.extend(row.iter().enumerate().map(|(j, &key)| (key, j)));
        // (key, position) is a total order, so ties go to the lower index.
        if k > 0 && k < len {
            pairs.select_nth_unstable(k - 1);
        }
        let first = &mut pairs[..k];
        first.sort_unstable();
        for &(_, j) in first.iter() {
            picks.push(r * len + j);
            idx.push(j as i32);
        }
    }
    Ok((permute(&t.data, &picks)?, Data::S32(idx)))
}

// Compiling: the shape checks and attribute decoding for this family.

/// Shape checks and attribute decoding for `sort`, `topk` and the top-k custom calls.
pub(crate) fn compile_sort(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    Ok(match cx.ins.opcode.as_str() {
        "sort" => {
            let computation = cx.callee(ins, 0)?;
            let first = operands.first().ok_or_else(|| invalid("sort needs operands"))?.array()?;
            let [dim] = dims_list(&ins.dimensions, first.dims.len().max(1), "dimensions")?[..]
            else {
                return Err(invalid(format!("sort needs one dimension, got {:?}", ins.dimensions)));
            };
            if first.dims.is_empty() {
                return Err(invalid("sort of a scalar"));
            }
            let mut types = Vec::new();
            for s in operands {
                let a = s.array()?;
                if a.dims != first.dims {
                    return Err(invalid(format!(
                        "sort operand {} differs from {}",
                        s.describe(),
                        operands[0].describe()
                    )));
                }
                types.push(a.ty);
                types.push(a.ty);
            }
            cx.scalar_computation(computation, 2 * operands.len(), &types)?;
            cx.check_scalar_result(computation, &[ElementType::Pred])?;
            let inferred = if operands.len() == 1 {
                operands[0].clone()
            } else {
                Shape::Tuple(operands.iter().map(|s| (*s).clone()).collect())
            };
            cx.expect(shape, &inferred)?;
            Op::Sort { dim, computation }
        }
        "topk" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let k = to_usize(ins.k, "k")?;
            let last = a.dims.last().copied().ok_or_else(|| invalid("topk of a scalar"))?;
            if k > last {
                return Err(invalid(format!("k {k} is larger than the last dimension {last}")));
            }
            let mut dims = a.dims.clone();
            *dims.last_mut().unwrap_or(&mut 0) = k;
            let inferred = Shape::Tuple(vec![
                Shape::Array(ArrayShape { ty: a.ty, dims: dims.clone(), layout: None }),
                Shape::Array(ArrayShape { ty: ElementType::S32, dims, layout: None }),
            ]);
            cx.expect(shape, &inferred)?;
            Op::TopK { k, largest: ins.largest, indices: ElementType::S32 }
        }
        "custom-call" if ins.custom_call_target == "TopK" => {
            // XLA CPU's own top-k runtime call (what its optimiser turns sort + slice into):
            // the k largest along the last dimension, k from the result shape.
            let k = cx.top_k_call(operands, shape, "TopK", ElementType::S32)?;
            Op::TopK { k, largest: true, indices: ElementType::S32 }
        }
        "custom-call" if ins.custom_call_target == "AwsNeuronTopK" => {
            // Neuron's top-k (nkipy's `topk`, `nkipy/core/backend/hlo.py`): the k largest
            // along the last dimension, largest first, u32 indices, k in the result shape
            // and, as decimal text, in `backend_config`.
            let k = cx.top_k_call(operands, shape, "AwsNeuronTopK", ElementType::U32)?;
            if !ins.backend_config.is_empty() {
                let text = String::from_utf8_lossy(&ins.backend_config);
                if text.trim().parse::<usize>().ok() != Some(k) {
                    return Err(invalid(format!(
                        "AwsNeuronTopK backend_config {text:?} is not the result's k {k}"
                    )));
                }
            }
            Op::TopK { k, largest: true, indices: ElementType::U32 }
        }
        other => return Err(Fail::Internal(format!("opcode {other} is not compile_sort's"))),
    })
}

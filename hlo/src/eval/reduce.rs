//! `reduce`, `reduce-window` and `select-and-scatter`.
//!
//! Design choices:
//! - `reduce` transposes each input to `[kept…, reduced…]`, so every output element folds one
//!   contiguous run. A reducer recognised as one binary op folds in a typed loop (narrow floats in
//!   f32, rounded back after every step, as the HLO says); anything else calls the computation
//!   through the general interpreter, element by element.
//! - Window positions that fall in padding or between base-dilated elements are skipped (they
//!   hold the init value in XLA's definition, which the fold already starts from).

use std::sync::Arc;

use super::Fail;
use super::compile::Reducer;
use super::elementwise::{Binary, Direction, Float, Int, widen};
use super::exec::{Ctx, element, gather_scalars};
use super::recognise::{ArgReducer, holds};
use super::shape_ops::transpose;
use super::tensor::{Data, Tensor, filled, next_index, strides, try_alloc};
use crate::dtype::SmallFloat;
use crate::proto;

/// One dimension of a window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WindowDim {
    pub(crate) size: usize,
    pub(crate) stride: usize,
    pub(crate) pad_low: i64,
    pub(crate) pad_high: i64,
    pub(crate) base_dilation: usize,
    pub(crate) window_dilation: usize,
}

impl WindowDim {
    pub(crate) fn output_size(&self, input: usize) -> Result<usize, Fail> {
        let dilated =
            if input == 0 { 0 } else { (input as i128 - 1) * self.base_dilation as i128 + 1 };
        let padded = dilated + i128::from(self.pad_low) + i128::from(self.pad_high);
        let window = if self.size == 0 {
            0
        } else {
            (self.size as i128 - 1) * self.window_dilation as i128 + 1
        };
        let size = if padded < window { 0 } else { (padded - window) / self.stride as i128 + 1 };
        usize::try_from(size).map_err(|_| Fail::Invalid(format!("window gives size {size}")))
    }

    /// The input coordinate under window position `w` of output position `o`, if any.
    #[inline]
    fn input(&self, o: usize, w: usize, extent: usize) -> Option<usize> {
        let pos = (o * self.stride + w * self.window_dilation) as i64 - self.pad_low;
        if pos < 0 || pos % self.base_dilation as i64 != 0 {
            return None;
        }
        let q = (pos / self.base_dilation as i64) as usize;
        (q < extent).then_some(q)
    }
}

/// Decodes a `Window` for an operand of `rank`.
pub(crate) fn window_dims(
    window: Option<&proto::Window>,
    rank: usize,
) -> Result<Vec<WindowDim>, Fail> {
    let dims = window.map(|w| w.dimensions.as_slice()).unwrap_or(&[]);
    if dims.len() != rank {
        return Err(Fail::Invalid(format!(
            "window has {} dimensions, expected {rank}",
            dims.len()
        )));
    }
    dims.iter()
        .map(|w| {
            let at_least_one = |v: i64, what: &str| -> Result<usize, Fail> {
                let v = if v == 0 { 1 } else { v };
                usize::try_from(v)
                    .map_err(|_| Fail::Invalid(format!("window {what} {v} must be at least 1")))
            };
            if w.window_reversal {
                return Err(Fail::Unsupported("window reversal outside convolution".into()));
            }
            Ok(WindowDim {
                size: usize::try_from(w.size)
                    .map_err(|_| Fail::Invalid(format!("window size {}", w.size)))?,
                stride: at_least_one(w.stride, "stride")?,
                pad_low: w.padding_low,
                pad_high: w.padding_high,
                base_dilation: at_least_one(w.base_dilation, "base_dilation")?,
                window_dilation: at_least_one(w.window_dilation, "window_dilation")?,
            })
        })
        .collect()
}

/// Folds `groups` consecutive runs of `run` elements.
fn fold_runs<T: Copy>(v: &[T], init: T, run: usize, f: impl Fn(T, T) -> T) -> Result<Vec<T>, Fail> {
    let groups = v.len().checked_div(run).unwrap_or(v.len());
    let mut out = try_alloc(groups)?;
    if run == 0 {
        return Ok(out);
    }
    out.extend(v.chunks_exact(run).map(|chunk| chunk.iter().fold(init, |acc, &x| f(acc, x))));
    Ok(out)
}

/// `fold_runs` with the opcode fixed per arm, so the fold loop has no per-element dispatch.
fn fold_runs_op<T: Copy>(
    op: Binary,
    v: &[T],
    init: T,
    run: usize,
    f: impl Fn(Binary, T, T) -> T + Copy,
) -> Result<Vec<T>, Fail> {
    macro_rules! arms {
        ($($b:ident),*) => {
            match op {
                $(Binary::$b => fold_runs(v, init, run, move |x, y| f(Binary::$b, x, y)),)*
            }
        };
    }
    arms!(
        Add,
        Sub,
        Mul,
        Div,
        Rem,
        Max,
        Min,
        Pow,
        Atan2,
        And,
        Or,
        Xor,
        Shl,
        ShrLogical,
        ShrArithmetic
    )
}

/// Folds with a recognised binary reducer; `None` when the type has no fast path.
fn fast_fold(
    op: Binary,
    data: &Data,
    init: &Data,
    run: usize,
    groups: usize,
) -> Result<Option<Data>, Fail> {
    macro_rules! small {
        ($variant:ident, $format:expr, $t:ty, $v:expr, $i:expr) => {{
            let w = widen($format, $v)?;
            let i0 = $format.decode(u32::from($i[0]));
            let folded = fold_runs(&w, i0, run, |a, b| {
                $format.decode($format.encode_f32(f32::binary(op, a, b)))
            })?;
            Data::$variant(folded.iter().map(|&x| $format.encode_f32(x) as $t).collect())
        }};
    }
    let out = match (data, init) {
        (Data::F32(v), Data::F32(i)) => Data::F32(fold_runs_op(op, v, i[0], run, f32::binary)?),
        (Data::F64(v), Data::F64(i)) => Data::F64(fold_runs_op(op, v, i[0], run, f64::binary)?),
        (Data::S32(v), Data::S32(i)) => Data::S32(fold_runs_op(op, v, i[0], run, i32::binary)?),
        (Data::S64(v), Data::S64(i)) => Data::S64(fold_runs_op(op, v, i[0], run, i64::binary)?),
        (Data::S8(v), Data::S8(i)) => Data::S8(fold_runs_op(op, v, i[0], run, i8::binary)?),
        (Data::S16(v), Data::S16(i)) => Data::S16(fold_runs_op(op, v, i[0], run, i16::binary)?),
        (Data::U8(v), Data::U8(i)) => Data::U8(fold_runs_op(op, v, i[0], run, u8::binary)?),
        (Data::U16(v), Data::U16(i)) => Data::U16(fold_runs_op(op, v, i[0], run, u16::binary)?),
        (Data::U32(v), Data::U32(i)) => Data::U32(fold_runs_op(op, v, i[0], run, u32::binary)?),
        (Data::U64(v), Data::U64(i)) => Data::U64(fold_runs_op(op, v, i[0], run, u64::binary)?),
        (Data::F16(v), Data::F16(i)) => small!(F16, SmallFloat::F16, u16, v, i),
        (Data::Bf16(v), Data::Bf16(i)) => small!(Bf16, SmallFloat::Bf16, u16, v, i),
        (Data::F8e5m2(v), Data::F8e5m2(i)) => small!(F8e5m2, SmallFloat::F8e5m2, u8, v, i),
        (Data::F8e4m3fn(v), Data::F8e4m3fn(i)) => small!(F8e4m3fn, SmallFloat::F8e4m3fn, u8, v, i),
        (Data::F8e4m3(v), Data::F8e4m3(i)) => small!(F8e4m3, SmallFloat::F8e4m3, u8, v, i),
        _ => return Ok(None),
    };
    if run == 0 {
        // An empty reduction: every output is the init value.
        return Ok(Some(super::shape_ops::broadcast_scalar(init, groups)?));
    }
    Ok(Some(out))
}

/// Folds runs of (value, index) pairs with a recognised [`ArgReducer`]; `None` for element types
/// without a direct loop. Narrow floats are compared as their f32 values, as `compare` does, and
/// the kept value is the element's own bits.
fn arg_fold(
    arg: ArgReducer,
    [values, indices]: [&Data; 2],
    [init_value, init_index]: [&Data; 2],
    run: usize,
) -> Result<Option<(Data, Data)>, Fail> {
    if run == 0 {
        // Every result is the init pair; the general path writes it.
        return Ok(None);
    }
    macro_rules! plain {
        ($($variant:ident),*) => {
            match (values, init_value) {
                $((Data::$variant(v), Data::$variant(i)) => {
                    return Ok(arg_fold_indices(arg, v, v, i[0], i[0], indices, init_index, run)?
                        .map(|(v, i)| (Data::$variant(v), i)));
                })*
                _ => {}
            }
        };
    }
    plain!(F32, F64, S8, S16, S32, S64, U8, U16, U32, U64);
    macro_rules! small {
        ($($variant:ident),*) => {
            match (values, init_value) {
                $((Data::$variant(v), Data::$variant(i)) => {
                    let format = SmallFloat::$variant;
                    let keys = widen(format, v)?;
                    let init_key = format.decode(u32::from(i[0]));
                    return Ok(arg_fold_indices(arg, v, &keys, i[0], init_key, indices, init_index, run)?
                        .map(|(v, i)| (Data::$variant(v), i)));
                })*
                _ => {}
            }
        };
    }
    small!(F16, Bf16, F8e5m2, F8e4m3fn, F8e4m3);
    Ok(None)
}

/// [`arg_fold`] for one value type, dispatched over the index type.
#[allow(clippy::too_many_arguments)]
fn arg_fold_indices<V: Copy, K: PartialOrd + Copy>(
    arg: ArgReducer,
    values: &[V],
    keys: &[K],
    init_value: V,
    init_key: K,
    indices: &Data,
    init_index: &Data,
    run: usize,
) -> Result<Option<(Vec<V>, Data)>, Fail> {
    macro_rules! arms {
        ($($variant:ident),*) => {
            match (indices, init_index) {
                $((Data::$variant(x), Data::$variant(i)) => {
                    let (v, i) = fold_pairs(arg, values, keys, x, (init_value, init_key, i[0]), run)?;
                    Some((v, Data::$variant(i)))
                })*
                _ => None,
            }
        };
    }
    Ok(arms!(S8, S16, S32, S64, U8, U16, U32, U64))
}

/// The loop of an [`ArgReducer`]: one (value, index) result per run, evaluating the reducer's
/// compares and selects as its instructions do.
fn fold_pairs<V: Copy, K: PartialOrd + Copy, I: PartialOrd + Copy>(
    arg: ArgReducer,
    values: &[V],
    keys: &[K],
    indices: &[I],
    (init_value, init_key, init_index): (V, K, I),
    run: usize,
) -> Result<(Vec<V>, Vec<I>), Fail> {
    let groups = values.len().checked_div(run).unwrap_or(0);
    let mut out_values = try_alloc(groups)?;
    let mut out_indices = try_alloc(groups)?;
    let ArgReducer { keep, keep_nan, tie } = arg;
    for ((v, k), x) in
        values.chunks_exact(run).zip(keys.chunks_exact(run)).zip(indices.chunks_exact(run))
    {
        let (mut a, mut ka, mut ai) = (init_value, init_key, init_index);
        for ((&b, &kb), &bi) in v.iter().zip(k).zip(x) {
            let kept = holds(keep, ka.partial_cmp(&kb))
                || (keep_nan && holds(Direction::Ne, ka.partial_cmp(&ka)));
            let kept_index = kept
                || (holds(Direction::Eq, ka.partial_cmp(&kb)) && holds(tie, ai.partial_cmp(&bi)));
            if !kept {
                (a, ka) = (b, kb);
            }
            if !kept_index {
                ai = bi;
            }
        }
        out_values.push(a);
        out_indices.push(ai);
    }
    Ok((out_values, out_indices))
}

/// `reduce`: returns one array per input.
pub(crate) fn reduce(
    ctx: &Ctx<'_>,
    computation: usize,
    inputs: &[&Arc<Tensor>],
    inits: &[&Arc<Tensor>],
    dims: &[usize],
) -> Result<Vec<Data>, Fail> {
    let in_dims = &inputs[0].dims;
    let kept: Vec<usize> = (0..in_dims.len()).filter(|d| !dims.contains(d)).collect();
    let groups: usize = kept.iter().map(|&d| in_dims[d]).product();
    let run: usize = dims.iter().map(|&d| in_dims[d]).product();
    let perm: Vec<usize> = kept.iter().chain(dims).copied().collect();
    let identity = perm.iter().enumerate().all(|(i, &p)| i == p);
    let arranged: Vec<Data> = inputs
        .iter()
        .map(|t| if identity { Ok(t.data.clone()) } else { transpose(&t.data, in_dims, &perm) })
        .collect::<Result<_, _>>()?;
    let comp = &ctx.program.comps[computation];
    if let (Some(Reducer::Binary(op)), 1) = (comp.reducer, inputs.len())
        && let Some(out) = fast_fold(op, &arranged[0], &inits[0].data, run, groups)?
    {
        return Ok(vec![out]);
    }
    if let (Some(arg), 2) = (comp.recognised.arg, inputs.len())
        && let Some((values, indices)) =
            arg_fold(arg, [&arranged[0], &arranged[1]], [&inits[0].data, &inits[1].data], run)?
    {
        return Ok(vec![values, indices]);
    }
    let n = inputs.len();
    let mut results: Vec<Vec<Data>> = (0..n).map(|_| Vec::new()).collect();
    for g in 0..groups {
        let mut acc: Vec<Data> = inits.iter().map(|t| t.data.clone()).collect();
        for j in 0..run {
            let mut args = acc.clone();
            args.extend(arranged.iter().map(|d| element(d, g * run + j)));
            acc = ctx.apply_scalars(computation, &args)?;
        }
        for (r, a) in results.iter_mut().zip(acc) {
            r.push(a);
        }
    }
    results.iter().zip(inputs).map(|(parts, t)| gather_scalars(t.ty(), parts)).collect()
}

/// Calls `f(output_flat, input_flat_offsets_in_window)` for every output element.
fn for_each_window(
    in_dims: &[usize],
    window: &[WindowDim],
    mut f: impl FnMut(usize, &[usize]) -> Result<(), Fail>,
) -> Result<(), Fail> {
    let out_dims: Vec<usize> =
        window.iter().zip(in_dims).map(|(w, &d)| w.output_size(d)).collect::<Result<_, _>>()?;
    let sizes: Vec<usize> = window.iter().map(|w| w.size).collect();
    let total: usize = out_dims.iter().product();
    if total == 0 {
        return Ok(());
    }
    let in_strides = strides(in_dims);
    let rank = in_dims.len();
    let mut o = vec![0usize; rank];
    let mut offsets = Vec::with_capacity(sizes.iter().product());
    let mut flat = 0;
    loop {
        offsets.clear();
        if sizes.iter().all(|&s| s > 0) {
            let mut w = vec![0usize; rank];
            loop {
                let mut offset = Some(0usize);
                for axis in 0..rank {
                    offset = match (offset, window[axis].input(o[axis], w[axis], in_dims[axis])) {
                        (Some(b), Some(q)) => Some(b + q * in_strides[axis]),
                        _ => None,
                    };
                }
                if let Some(offset) = offset {
                    offsets.push(offset);
                }
                if !next_index(&mut w, &sizes) {
                    break;
                }
            }
        }
        f(flat, &offsets)?;
        flat += 1;
        if !next_index(&mut o, &out_dims) {
            break;
        }
    }
    Ok(())
}

/// Folds each window with a recognised binary reducer, in a typed loop per element type
/// (narrow floats in f32, rounded after every step); `None` for pred.
fn fast_window_fold(
    op: Binary,
    data: &Data,
    init: &Data,
    in_dims: &[usize],
    window: &[WindowDim],
) -> Result<Option<Data>, Fail> {
    fn fold<T: Copy>(
        v: &[T],
        init: T,
        in_dims: &[usize],
        window: &[WindowDim],
        f: impl Fn(T, T) -> T,
    ) -> Result<Vec<T>, Fail> {
        let mut out = Vec::new();
        for_each_window(in_dims, window, |_, offsets| {
            out.try_reserve(1).map_err(|_| Fail::Alloc { bytes: 8 })?;
            out.push(offsets.iter().fold(init, |acc, &i| f(acc, v[i])));
            Ok(())
        })?;
        Ok(out)
    }
    macro_rules! small {
        ($variant:ident, $format:expr, $t:ty, $v:expr, $i:expr) => {{
            let w = widen($format, $v)?;
            let i0 = $format.decode(u32::from($i[0]));
            let folded = fold(&w, i0, in_dims, window, |a, b| {
                $format.decode($format.encode_f32(f32::binary(op, a, b)))
            })?;
            Data::$variant(folded.iter().map(|&x| $format.encode_f32(x) as $t).collect())
        }};
    }
    Ok(Some(match (data, init) {
        (Data::F32(v), Data::F32(i)) => {
            Data::F32(fold(v, i[0], in_dims, window, |a, b| f32::binary(op, a, b))?)
        }
        (Data::F64(v), Data::F64(i)) => {
            Data::F64(fold(v, i[0], in_dims, window, |a, b| f64::binary(op, a, b))?)
        }
        (Data::S8(v), Data::S8(i)) => {
            Data::S8(fold(v, i[0], in_dims, window, |a, b| i8::binary(op, a, b))?)
        }
        (Data::S16(v), Data::S16(i)) => {
            Data::S16(fold(v, i[0], in_dims, window, |a, b| i16::binary(op, a, b))?)
        }
        (Data::S32(v), Data::S32(i)) => {
            Data::S32(fold(v, i[0], in_dims, window, |a, b| i32::binary(op, a, b))?)
        }
        (Data::S64(v), Data::S64(i)) => {
            Data::S64(fold(v, i[0], in_dims, window, |a, b| i64::binary(op, a, b))?)
        }
        (Data::U8(v), Data::U8(i)) => {
            Data::U8(fold(v, i[0], in_dims, window, |a, b| u8::binary(op, a, b))?)
        }
        (Data::U16(v), Data::U16(i)) => {
            Data::U16(fold(v, i[0], in_dims, window, |a, b| u16::binary(op, a, b))?)
        }
        (Data::U32(v), Data::U32(i)) => {
            Data::U32(fold(v, i[0], in_dims, window, |a, b| u32::binary(op, a, b))?)
        }
        (Data::U64(v), Data::U64(i)) => {
            Data::U64(fold(v, i[0], in_dims, window, |a, b| u64::binary(op, a, b))?)
        }
        (Data::F16(v), Data::F16(i)) => small!(F16, SmallFloat::F16, u16, v, i),
        (Data::Bf16(v), Data::Bf16(i)) => small!(Bf16, SmallFloat::Bf16, u16, v, i),
        (Data::F8e5m2(v), Data::F8e5m2(i)) => small!(F8e5m2, SmallFloat::F8e5m2, u8, v, i),
        (Data::F8e4m3fn(v), Data::F8e4m3fn(i)) => small!(F8e4m3fn, SmallFloat::F8e4m3fn, u8, v, i),
        (Data::F8e4m3(v), Data::F8e4m3(i)) => small!(F8e4m3, SmallFloat::F8e4m3, u8, v, i),
        _ => return Ok(None),
    }))
}

/// `reduce-window`: returns one array per input.
pub(crate) fn reduce_window(
    ctx: &Ctx<'_>,
    computation: usize,
    inputs: &[&Arc<Tensor>],
    inits: &[&Arc<Tensor>],
    window: &[WindowDim],
) -> Result<Vec<Data>, Fail> {
    let in_dims = &inputs[0].dims;
    let comp = &ctx.program.comps[computation];
    if let (Some(Reducer::Binary(op)), 1) = (comp.reducer, inputs.len())
        && let Some(out) = fast_window_fold(op, &inputs[0].data, &inits[0].data, in_dims, window)?
    {
        return Ok(vec![out]);
    }
    let n = inputs.len();
    let mut results: Vec<Vec<Data>> = (0..n).map(|_| Vec::new()).collect();
    for_each_window(in_dims, window, |_, offsets| {
        let mut acc: Vec<Data> = inits.iter().map(|t| t.data.clone()).collect();
        for &i in offsets {
            let mut args = acc.clone();
            args.extend(inputs.iter().map(|t| element(&t.data, i)));
            acc = ctx.apply_scalars(computation, &args)?;
        }
        for (r, a) in results.iter_mut().zip(acc) {
            r.push(a);
        }
        Ok(())
    })?;
    results.iter().zip(inputs).map(|(parts, t)| gather_scalars(t.ty(), parts)).collect()
}

/// `select-and-scatter`: for each window, the element `select` prefers receives the source
/// value, combined with `scatter` into an output that starts as `init` everywhere.
pub(crate) fn select_and_scatter(
    ctx: &Ctx<'_>,
    select: usize,
    scatter: usize,
    operand: &Arc<Tensor>,
    source: &Arc<Tensor>,
    init: &Arc<Tensor>,
    window: &[WindowDim],
) -> Result<Data, Fail> {
    let n = operand.n_elems();
    let mut out: Vec<Data> = Vec::new();
    out.try_reserve_exact(n).map_err(|_| Fail::Alloc { bytes: n as u64 * 16 })?;
    out.extend((0..n).map(|_| init.data.clone()));
    let mut chosen: Vec<Option<usize>> = filled(0, None)?;
    for_each_window(&operand.dims, window, |_, offsets| {
        let mut best: Option<usize> = None;
        for &i in offsets {
            best = match best {
                None => Some(i),
                Some(b) => {
                    let keep = ctx.apply_scalars(
                        select,
                        &[element(&operand.data, b), element(&operand.data, i)],
                    )?;
                    match keep.first() {
                        Some(Data::Pred(p)) if p[0] => Some(b),
                        Some(Data::Pred(_)) => Some(i),
                        _ => return Err(Fail::Internal("select returned no pred".into())),
                    }
                }
            };
        }
        chosen.push(best);
        Ok(())
    })?;
    for (s, target) in chosen.iter().enumerate() {
        if let Some(t) = *target {
            let combined =
                ctx.apply_scalars(scatter, &[out[t].clone(), element(&source.data, s)])?;
            out[t] = combined
                .into_iter()
                .next()
                .ok_or_else(|| Fail::Internal("scatter returned nothing".into()))?;
        }
    }
    gather_scalars(operand.ty(), &out)
}

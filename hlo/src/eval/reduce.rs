//! `reduce`, `reduce-window` and `select-and-scatter`.
//!
//! Design choices:
//! - `reduce` transposes each input to `[kept…, reduced…]`, so every output element folds one
//!   contiguous run, unless the reduced dimensions lead: then rows fold into a row of
//!   accumulators, each seeing its elements in the same order. A reducer recognised as one binary op folds in a typed loop (narrow floats in
//!   f32, rounded back after every step, as the HLO says); f32 add, max and min over runs of
//!   at least `LANE_RUN` fold in interleaved accumulators (max/min exactly, add reassociated as
//!   XLA's vectorised reduction is). A recognised arg reducer (`recognise::ArgReducer`) folds
//!   (value, index) pairs in a typed loop, and when the reduced dimensions lead it folds whole
//!   rows without the transpose. Anything else calls the computation through the general
//!   interpreter, element by element.
//! - Window positions that fall in padding or between base-dilated elements are skipped (they
//!   hold the init value in XLA's definition, which the fold already starts from).

use std::borrow::Cow;
use std::sync::Arc;

use super::elementwise::widen;
use super::error::Fail;
use super::op_context::{OpContext, dims_list, invalid};
use super::plan::ArgReducer;
use super::plan::Op;
use super::plan::Reducer;
use super::plan::Subcomputations;
use super::plan::WindowDim;
use super::scalar::{Binary, Direction, Float, Int, with_binary};
use super::shape::{ArrayShape, Shape};
use super::shape_ops::transpose;
use super::tensor::{Data, Tensor, filled, next_index, strides, try_alloc};
use super::tensor::{element, gather_scalars};
use crate::dtype::ElementType;
use crate::dtype::SmallFloat;
use crate::proto;

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
        if pos < 0 {
            return None;
        }
        // No division for the usual undilated input (one per axis per output row in the loops
        // of `fold_window_rows`).
        let q = if self.base_dilation == 1 {
            pos as usize
        } else if pos % self.base_dilation as i64 != 0 {
            return None;
        } else {
            (pos / self.base_dilation as i64) as usize
        };
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

/// Folds `groups` runs of `run` elements, consecutive or in rows of accumulators (see [`Layout`]).
fn fold_runs<T: Copy>(
    v: &[T],
    init: T,
    layout: Layout,
    f: impl Fn(T, T) -> T,
) -> Result<Vec<T>, Fail> {
    let Layout { run, groups, inner } = layout;
    let mut out = try_alloc(groups)?;
    if run == 0 || groups == 0 {
        return Ok(out);
    }
    if let Some(inner) = inner.filter(|&i| i > 0) {
        // Each accumulator sees its elements in the run's order, as the consecutive fold does.
        out.resize(groups, init);
        for (acc, block) in out.chunks_exact_mut(inner).zip(v.chunks_exact(run * inner)) {
            for row in block.chunks_exact(inner) {
                for (a, &x) in acc.iter_mut().zip(row) {
                    *a = f(*a, x);
                }
            }
        }
        return Ok(out);
    }
    out.extend(v.chunks_exact(run).map(|chunk| chunk.iter().fold(init, |acc, &x| f(acc, x))));
    Ok(out)
}

/// Independent accumulators of [`fold_runs_lanes`]: enough to hide the add latency and fill the
/// vector registers of an AVX2 machine (and four SSE2 registers on the baseline target).
const LANES: usize = 16;

/// Runs at least this long fold in [`LANES`] accumulators; shorter ones keep the sequential
/// order, which is exactly the HLO's.
const LANE_RUN: usize = 64;

/// Folds runs as `fold_runs` does, but each run in [`LANES`] interleaved accumulators combined
/// pairwise at the end, and `init` folded in last. Exact for an associative and commutative `f`
/// (max, min, integer arithmetic); for float addition it reassociates as XLA's vectorised
/// reduction does, which the cross-check's `accum` tolerance allows.
fn fold_runs_lanes<T: Copy>(
    v: &[T],
    init: T,
    run: usize,
    f: impl Fn(T, T) -> T + Copy,
) -> Result<Vec<T>, Fail> {
    let groups = v.len().checked_div(run).unwrap_or(0);
    let mut out = try_alloc(groups)?;
    out.extend(v.chunks_exact(run).map(|chunk| fold_lanes(chunk, init, f)));
    Ok(out)
}

/// One run of [`fold_runs_lanes`] (at least [`LANES`] elements long).
#[inline]
fn fold_lanes<T: Copy>(chunk: &[T], init: T, f: impl Fn(T, T) -> T + Copy) -> T {
    let (head, rest) = chunk.split_at(LANES);
    let mut acc: [T; LANES] = std::array::from_fn(|i| head[i]);
    let mut blocks = rest.chunks_exact(LANES);
    for block in &mut blocks {
        for (a, &x) in acc.iter_mut().zip(block) {
            *a = f(*a, x);
        }
    }
    let mut width = LANES / 2;
    while width > 0 {
        for i in 0..width {
            acc[i] = f(acc[i], acc[i + width]);
        }
        width /= 2;
    }
    let tail = blocks.remainder().iter().fold(acc[0], |a, &x| f(a, x));
    f(init, tail)
}

/// f32 `maximum` (or `minimum`) of each run as `Float::binary` defines it (NaN if any element
/// is NaN, -0 below +0), branch-free so it vectorises: the fold keeps the largest totalOrder
/// key and whether it saw a NaN, and `init` is combined last.
fn fold_runs_extremum_f32<const MAX: bool>(
    v: &[f32],
    init: f32,
    run: usize,
) -> Result<Vec<f32>, Fail> {
    fold_runs_extremum::<f32, MAX>(v, init, run, |x| x)
}

/// [`fold_runs_extremum_f32`] over elements that `decode` reads as f32 (a narrow float's bits),
/// so a narrow input is folded where it lies instead of widened into a copy first. The loop is
/// compiled for the CPU's vector instructions (`pulp`): the baseline target has no packed
/// 32-bit integer max.
fn fold_runs_extremum<T: Copy, const MAX: bool>(
    v: &[T],
    init: f32,
    run: usize,
    decode: impl Fn(T) -> f32 + Copy,
) -> Result<Vec<f32>, Fail> {
    let groups = v.len().checked_div(run).unwrap_or(0);
    let mut out: Vec<f32> = try_alloc(groups)?;
    out.resize(groups, 0.0);
    super::simd::arch().dispatch(ExtremumLoop::<T, _, MAX> { v, init, run, decode, out: &mut out });
    Ok(out)
}

/// The loop of [`fold_runs_extremum`], as a `pulp::WithSimd` so that the fold is inlined into
/// the function pulp compiles with the CPU's features (a closure may be left out of line).
struct ExtremumLoop<'a, T, D, const MAX: bool> {
    v: &'a [T],
    init: f32,
    run: usize,
    decode: D,
    out: &'a mut [f32],
}

impl<T: Copy, D: Fn(T) -> f32 + Copy, const MAX: bool> pulp::WithSimd
    for ExtremumLoop<'_, T, D, MAX>
{
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let ExtremumLoop { v, init, run, decode, out } = self;
        for (o, chunk) in out.iter_mut().zip(v.chunks_exact(run)) {
            *o = fold_extremum::<T, MAX>(chunk, init, decode);
        }
    }
}

/// One run of [`fold_runs_extremum_f32`].
#[inline(always)]
fn fold_extremum_f32<const MAX: bool>(chunk: &[f32], init: f32) -> f32 {
    fold_extremum::<f32, MAX>(chunk, init, |x| x)
}

/// One run of [`fold_runs_extremum`].
#[inline(always)]
fn fold_extremum<T: Copy, const MAX: bool>(
    chunk: &[T],
    init: f32,
    decode: impl Fn(T) -> f32,
) -> f32 {
    // totalOrder as i32: flipping the magnitude bits of negatives makes integer order numeric
    // order; the map is its own inverse.
    #[inline(always)]
    fn key(x: f32) -> i32 {
        let b = x.to_bits() as i32;
        b ^ ((((b >> 31) as u32) >> 1) as i32)
    }
    let op = if MAX { Binary::Max } else { Binary::Min };
    let start = if MAX { i32::MIN } else { i32::MAX };
    // One fold of (key, NaN seen): an integer max (min) and an or are exact in any order, so
    // the compiler folds them in vector lanes. Lanes written out by hand (an array of
    // accumulators) were vectorised across blocks instead, with a gather per load: 7× slower.
    let (best, nan) = chunk.iter().fold((start, 0u32), |(best, nan), &x| {
        let x = decode(x);
        let k = key(x);
        (if MAX { best.max(k) } else { best.min(k) }, nan | u32::from(x.is_nan()))
    });
    let total = if nan != 0 { f32::NAN } else { f32::from_bits(key_inverse(best)) };
    f32::binary(op, init, total)
}

/// One run of a reduce whose input and init are f32 (or a narrow float's values widened to
/// f32, `format` naming it), folded exactly as the unfused reduce folds a run whose reduced
/// dimensions are the minor ones: `add`, `max` and `min` over f32 runs of at least
/// [`LANE_RUN`] in lanes, everything else in order, narrow floats rounded after every step.
/// The result is a value of the input type, in f32. Fused reduces call this per run.
#[inline]
pub(crate) fn fold_run_f32(op: Binary, run: &[f32], init: f32, format: Option<SmallFloat>) -> f32 {
    if let Some(format) = format {
        // Max and min as in `fast_fold`: in lanes, exact without the rounding.
        match op {
            Binary::Max if run.len() >= LANE_RUN => return fold_extremum_f32::<true>(run, init),
            Binary::Min if run.len() >= LANE_RUN => return fold_extremum_f32::<false>(run, init),
            _ => {}
        }
        return run
            .iter()
            .fold(init, |a, &b| format.decode(format.encode_f32(f32::binary(op, a, b))));
    }
    if run.len() >= LANE_RUN {
        match op {
            Binary::Add => return fold_lanes(run, init, |a, b| a + b),
            Binary::Max => return fold_extremum_f32::<true>(run, init),
            Binary::Min => return fold_extremum_f32::<false>(run, init),
            _ => {}
        }
    }
    with_binary!(op, OP => run.iter().fold(init, |a, &b| f32::binary(OP, a, b)))
}

fn key_inverse(k: i32) -> u32 {
    (k ^ ((((k >> 31) as u32) >> 1) as i32)) as u32
}

/// `fold_runs` with the opcode fixed per arm, so the fold loop has no per-element dispatch.
fn fold_runs_op<T: Copy>(
    op: Binary,
    v: &[T],
    init: T,
    layout: Layout,
    f: impl Fn(Binary, T, T) -> T + Copy,
) -> Result<Vec<T>, Fail> {
    with_binary!(op, OP => fold_runs(v, init, layout, move |x, y| f(OP, x, y)))
}

/// A bf16's value: its bits are the high half of the f32's.
#[inline(always)]
fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// Folds with a recognised binary reducer; `None` when the type has no fast path.
fn fast_fold(op: Binary, data: &Data, init: &Data, layout: Layout) -> Result<Option<Data>, Fail> {
    let Layout { run, groups, inner } = layout;
    let extremum_lanes = inner.is_none() && run >= LANE_RUN;
    macro_rules! small {
        ($variant:ident, $format:expr, $t:ty, $v:expr, $i:expr, $decode:expr) => {{
            let i0 = $format.decode(u32::from($i[0]));
            let folded = match op {
                // The max (min) of a format's values is one of them (or NaN), which rounding
                // leaves alone: the lane fold gives the rounding sequential fold's bits.
                Binary::Max if extremum_lanes => {
                    fold_runs_extremum::<$t, true>($v, i0, run, $decode)?
                }
                Binary::Min if extremum_lanes => {
                    fold_runs_extremum::<$t, false>($v, i0, run, $decode)?
                }
                _ => fold_runs(&widen($format, $v)?, i0, layout, |a, b| {
                    $format.decode($format.encode_f32(f32::binary(op, a, b)))
                })?,
            };
            Data::$variant(folded.iter().map(|&x| $format.encode_f32(x) as $t).collect())
        }};
        // 8-bit formats: each element's bits decoded by its format.
        ($variant:ident, $format:expr, u8, $v:expr, $i:expr) => {
            small!($variant, $format, u8, $v, $i, |b: u8| $format.decode(u32::from(b)))
        };
    }
    let lanes =
        inner.is_none() && run >= LANE_RUN && matches!(op, Binary::Add | Binary::Max | Binary::Min);
    let out = match (data, init) {
        (Data::F32(v), Data::F32(i)) if lanes => Data::F32(match op {
            Binary::Add => fold_runs_lanes(v, i[0], run, |a, b| a + b)?,
            Binary::Max => fold_runs_extremum_f32::<true>(v, i[0], run)?,
            _ => fold_runs_extremum_f32::<false>(v, i[0], run)?,
        }),
        (Data::F32(v), Data::F32(i)) => Data::F32(fold_runs_op(op, v, i[0], layout, f32::binary)?),
        (Data::F64(v), Data::F64(i)) => Data::F64(fold_runs_op(op, v, i[0], layout, f64::binary)?),
        (Data::S32(v), Data::S32(i)) => Data::S32(fold_runs_op(op, v, i[0], layout, i32::binary)?),
        (Data::S64(v), Data::S64(i)) => Data::S64(fold_runs_op(op, v, i[0], layout, i64::binary)?),
        (Data::S8(v), Data::S8(i)) => Data::S8(fold_runs_op(op, v, i[0], layout, i8::binary)?),
        (Data::S16(v), Data::S16(i)) => Data::S16(fold_runs_op(op, v, i[0], layout, i16::binary)?),
        (Data::U8(v), Data::U8(i)) => Data::U8(fold_runs_op(op, v, i[0], layout, u8::binary)?),
        (Data::U16(v), Data::U16(i)) => Data::U16(fold_runs_op(op, v, i[0], layout, u16::binary)?),
        (Data::U32(v), Data::U32(i)) => Data::U32(fold_runs_op(op, v, i[0], layout, u32::binary)?),
        (Data::U64(v), Data::U64(i)) => Data::U64(fold_runs_op(op, v, i[0], layout, u64::binary)?),
        (Data::F16(v), Data::F16(i)) => {
            small!(F16, SmallFloat::F16, u16, v, i, super::math::f16_to_f32)
        }
        (Data::Bf16(v), Data::Bf16(i)) => small!(Bf16, SmallFloat::Bf16, u16, v, i, bf16_to_f32),
        (Data::F8e5m2(v), Data::F8e5m2(i)) => small!(F8e5m2, SmallFloat::F8e5m2, u8, v, i),
        (Data::F8e4m3fn(v), Data::F8e4m3fn(i)) => {
            small!(F8e4m3fn, SmallFloat::F8e4m3fn, u8, v, i)
        }
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
    layout: Layout,
) -> Result<Option<(Data, Data)>, Fail> {
    let run = layout.run;
    if run == 0 {
        // Every result is the init pair; the general path writes it.
        return Ok(None);
    }
    if let (Data::F32(v), Data::F32(i), Data::S32(x), Data::S32(j)) =
        (values, init_value, indices, init_index)
        && let Some((v, x)) = fold_pairs_f32_s32(arg, v, x, (i[0], j[0]), layout)?
    {
        return Ok(Some((Data::F32(v), Data::S32(x))));
    }
    macro_rules! plain {
        ($($variant:ident),*) => {
            match (values, init_value) {
                $((Data::$variant(v), Data::$variant(i)) => {
                    return Ok(arg_fold_indices(arg, v, v, i[0], i[0], indices, init_index, layout)?
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
                    return Ok(arg_fold_indices(
                        arg, v, &keys, i[0], init_key, indices, init_index, layout,
                    )?
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
    layout: Layout,
) -> Result<Option<(Vec<V>, Data)>, Fail> {
    macro_rules! arms {
        ($($variant:ident),*) => {
            match (indices, init_index) {
                $((Data::$variant(x), Data::$variant(i)) => {
                    let (v, i) = fold_pairs(arg, values, keys, x, (init_value, init_key, i[0]), layout)?;
                    Some((v, Data::$variant(i)))
                })*
                _ => None,
            }
        };
    }
    Ok(arms!(S8, S16, S32, S64, U8, U16, U32, U64))
}

/// Where a reduction's runs lie in its (possibly transposed) input.
#[derive(Clone, Copy, Debug)]
struct Layout {
    /// Elements folded into each result.
    run: usize,
    /// Results.
    groups: usize,
    /// `None`: result `g` folds the consecutive run at `g * run`. `Some(inner)`: the input is
    /// `[outer, run, inner]` (the reduced dimensions are contiguous and in order, untransposed)
    /// and result `o * inner + i` folds the elements at `(o * run + j) * inner + i`.
    inner: Option<usize>,
}

/// The step of an [`ArgReducer`] on accumulator `(a, ka, ai)` and element `(b, kb, bi)`,
/// evaluating the reducer's compares and selects as its instructions do.
#[inline]
fn arg_step<V: Copy, K: PartialOrd + Copy, I: PartialOrd + Copy>(
    arg: ArgReducer,
    acc: &mut (V, K, I),
    (b, kb, bi): (V, K, I),
) {
    let (a, ka, ai) = *acc;
    let kept = arg.keep.test(ka.partial_cmp(&kb))
        || (arg.keep_nan && Direction::Ne.test(ka.partial_cmp(&ka)));
    let kept_index =
        kept || (Direction::Eq.test(ka.partial_cmp(&kb)) && arg.tie.test(ai.partial_cmp(&bi)));
    *acc = (if kept { a } else { b }, if kept { ka } else { kb }, if kept_index { ai } else { bi });
}

/// The loop of an [`ArgReducer`]: one (value, index) result per run, elements folded in the
/// order of the run either way the layout lies.
fn fold_pairs<V: Copy, K: PartialOrd + Copy, I: PartialOrd + Copy>(
    arg: ArgReducer,
    values: &[V],
    keys: &[K],
    indices: &[I],
    init: (V, K, I),
    layout: Layout,
) -> Result<(Vec<V>, Vec<I>), Fail> {
    let Layout { run, groups, inner } = layout;
    let mut out_values = try_alloc(groups)?;
    let mut out_indices = try_alloc(groups)?;
    if let Some(inner) = inner.filter(|&i| i > 0 && run > 0) {
        let mut acc: Vec<(V, K, I)> = try_alloc(groups)?;
        acc.resize(groups, init);
        let block = run * inner;
        let blocks = values.chunks_exact(block).zip(keys.chunks_exact(block));
        for (acc, ((v, k), x)) in
            acc.chunks_exact_mut(inner).zip(blocks.zip(indices.chunks_exact(block)))
        {
            let rows = v.chunks_exact(inner).zip(k.chunks_exact(inner));
            for ((v, k), x) in rows.zip(x.chunks_exact(inner)) {
                for (a, ((&b, &kb), &bi)) in acc.iter_mut().zip(v.iter().zip(k).zip(x)) {
                    arg_step(arg, a, (b, kb, bi));
                }
            }
        }
        out_values.extend(acc.iter().map(|a| a.0));
        out_indices.extend(acc.iter().map(|a| a.2));
        return Ok((out_values, out_indices));
    }
    let runs = values.chunks_exact(run).zip(keys.chunks_exact(run));
    for ((v, k), x) in runs.zip(indices.chunks_exact(run)) {
        let mut acc = init;
        for ((&b, &kb), &bi) in v.iter().zip(k).zip(x) {
            arg_step(arg, &mut acc, (b, kb, bi));
        }
        out_values.push(acc.0);
        out_indices.push(acc.2);
    }
    Ok((out_values, out_indices))
}

/// [`fold_pairs`] for f32 values and s32 indices under the reducers of jnp's argmax and argmin
/// (keep the accumulator when it is greater, or less, or NaN; on equal values keep the lower
/// index); `None` for other reducers. The same steps in the same order, with the directions fixed
/// at compile time and no branch per element, so that many results fold side by side in vector
/// lanes: the general loop matched both directions per element and mispredicted on random data
/// (three arg-reductions of 256 Ki elements took 2.4 ms, XLA 0.9 to 1.6).
fn fold_pairs_f32_s32(
    arg: ArgReducer,
    values: &[f32],
    indices: &[i32],
    init: (f32, i32),
    layout: Layout,
) -> Result<Option<ArgResults>, Fail> {
    let greater = match (arg.keep, arg.keep_nan, arg.tie) {
        (Direction::Gt, true, Direction::Lt) => true,
        (Direction::Lt, true, Direction::Lt) => false,
        _ => return Ok(None),
    };
    let Layout { run, groups, inner } = layout;
    let mut out_values = filled(groups, init.0)?;
    let mut out_indices = filled(groups, init.1)?;
    if run == 0 || groups == 0 {
        return Ok(Some((out_values, out_indices)));
    }
    let arch = super::simd::arch();
    let fold = |part: ArgFold<'_>| match greater {
        true => arch.dispatch(ArgParts::<true>(part)),
        false => arch.dispatch(ArgParts::<false>(part)),
    };
    if let Some(inner) = inner.filter(|&i| i > 0) {
        // One pass over the rows, as fast as memory gives them. Split over the two cores here
        // it was slower: the bench's three reductions took 1.8 ms instead of 0.8.
        let part = ArgFold {
            values,
            indices,
            out_values: &mut out_values,
            out_indices: &mut out_indices,
            shape: ArgShape::Rows { run, inner },
        };
        fold(part);
        return Ok(Some((out_values, out_indices)));
    }
    // Consecutive runs: a multiple of the lanes of them to each core.
    let threads =
        if values.len() >= PARALLEL_ARG_ELEMS { super::par::cores().min(groups) } else { 1 };
    let per = super::par::per_part(groups, threads, ARG_LANES).next_multiple_of(ARG_LANES);
    let outs = out_values.chunks_mut(per).zip(out_indices.chunks_mut(per));
    let inputs = values.chunks(per * run).zip(indices.chunks(per * run));
    let parts = outs.zip(inputs).map(|((out_values, out_indices), (values, indices))| ArgFold {
        values,
        indices,
        out_values,
        out_indices,
        shape: ArgShape::Runs { run },
    });
    super::par::each(parts, fold);
    Ok(Some((out_values, out_indices)))
}

/// The values and indices [`fold_pairs_f32_s32`] gives, one of each per result.
type ArgResults = (Vec<f32>, Vec<i32>);

/// Elements from which [`fold_pairs_f32_s32`] splits consecutive runs over the cores.
const PARALLEL_ARG_ELEMS: usize = 1 << 16;

/// One part of [`fold_pairs_f32_s32`]: operands, the results it computes (holding the init
/// pair), and how the one lie in the other.
struct ArgFold<'a> {
    values: &'a [f32],
    indices: &'a [i32],
    out_values: &'a mut [f32],
    out_indices: &'a mut [i32],
    shape: ArgShape,
}

#[derive(Clone, Copy)]
enum ArgShape {
    /// Blocks of `run` rows of `inner` elements, `inner` results each.
    Rows { run: usize, inner: usize },
    /// Consecutive runs of `run` elements, one result each.
    Runs { run: usize },
}

/// One step of jnp's argmax (`GREATER`) or argmin reducer: [`arg_step`] with its directions fixed.
#[inline(always)]
fn arg_step_f32<const GREATER: bool>((a, ai): (f32, i32), (b, bi): (f32, i32)) -> (f32, i32) {
    let better = if GREATER { a > b } else { a < b };
    #[allow(clippy::eq_op)]
    let kept = better | (a != a);
    let kept_index = kept | ((a == b) & (ai < bi));
    (if kept { a } else { b }, if kept_index { ai } else { bi })
}

/// The loops of an [`ArgFold`], compiled for the CPU's vectors.
struct ArgParts<'a, const GREATER: bool>(ArgFold<'a>);

impl<const GREATER: bool> pulp::WithSimd for ArgParts<'_, GREATER> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let ArgFold { values, indices, out_values, out_indices, shape } = self.0;
        match shape {
            ArgShape::Rows { run, inner } => {
                arg_rows::<GREATER>(values, indices, out_values, out_indices, run, inner);
            }
            ArgShape::Runs { run } => {
                arg_runs::<GREATER>(values, indices, out_values, out_indices, run);
            }
        }
    }
}

/// The blocked layout: each block's results are folded row by row, in their place in the
/// output, one lane per result.
#[inline(always)]
fn arg_rows<const GREATER: bool>(
    values: &[f32],
    indices: &[i32],
    out_values: &mut [f32],
    out_indices: &mut [i32],
    run: usize,
    inner: usize,
) {
    let block = run * inner;
    let blocks = values.chunks_exact(block).zip(indices.chunks_exact(block));
    let outs = out_values.chunks_exact_mut(inner).zip(out_indices.chunks_exact_mut(inner));
    for ((out_v, out_i), (v, x)) in outs.zip(blocks) {
        for (row_v, row_i) in v.chunks_exact(inner).zip(x.chunks_exact(inner)) {
            let row = row_v.iter().zip(row_i);
            for ((a, ai), (&b, &bi)) in out_v.iter_mut().zip(out_i.iter_mut()).zip(row) {
                (*a, *ai) = arg_step_f32::<GREATER>((*a, *ai), (b, bi));
            }
        }
    }
}

/// The runs [`arg_runs`] folds side by side.
const ARG_LANES: usize = 16;

/// Results folding consecutive runs: [`ARG_LANES`] runs at a time, one lane each, position by
/// position (the steps of one run are a chain; those of several runs are not).
#[inline(always)]
fn arg_runs<const GREATER: bool>(
    values: &[f32],
    indices: &[i32],
    out_values: &mut [f32],
    out_indices: &mut [i32],
    run: usize,
) {
    let span = ARG_LANES * run;
    let blocks = values.chunks(span).zip(indices.chunks(span));
    let outs = out_values.chunks_mut(ARG_LANES).zip(out_indices.chunks_mut(ARG_LANES));
    for ((out_v, out_i), (v, x)) in outs.zip(blocks) {
        if let (Ok(out_v), Ok(out_i)) = (
            <&mut [f32; ARG_LANES]>::try_from(&mut *out_v),
            <&mut [i32; ARG_LANES]>::try_from(&mut *out_i),
        ) {
            let (mut acc_v, mut acc_i) = (*out_v, *out_i);
            for j in 0..run {
                for lane in 0..ARG_LANES {
                    let at = lane * run + j;
                    (acc_v[lane], acc_i[lane]) =
                        arg_step_f32::<GREATER>((acc_v[lane], acc_i[lane]), (v[at], x[at]));
                }
            }
            (*out_v, *out_i) = (acc_v, acc_i);
        } else {
            // The last few runs, one after another.
            let runs = v.chunks_exact(run).zip(x.chunks_exact(run));
            for ((a, ai), (v, x)) in out_v.iter_mut().zip(out_i.iter_mut()).zip(runs) {
                for (&b, &bi) in v.iter().zip(x) {
                    (*a, *ai) = arg_step_f32::<GREATER>((*a, *ai), (b, bi));
                }
            }
        }
    }
}

/// `reduce`: returns one array per input.
pub(crate) fn reduce(
    ctx: &impl Subcomputations,
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
    let comp = ctx.computation(computation);
    // Reduced dimensions contiguous and in order, but not the minor ones: rows fold into rows
    // of accumulators, in the same element order, without transposing.
    let first = dims.first().copied().unwrap_or(0);
    let contiguous = dims.iter().enumerate().all(|(i, &d)| d == first + i);
    let inner: usize = in_dims[(first + dims.len()).min(in_dims.len())..].iter().product();
    let blocked = contiguous && !identity && groups > 0 && inner > 1;
    let layout = Layout { run, groups, inner: Some(inner) };
    if let (Some(Reducer::Binary(op)), 1, true) = (comp.reducer, inputs.len(), blocked)
        && let Some(out) = fast_fold(op, &inputs[0].data, &inits[0].data, layout)?
    {
        return Ok(vec![out]);
    }
    if let (Some(arg), 2, true) = (comp.recognised.arg, inputs.len(), blocked)
        && run > 0
    {
        let [values, indices] = [&inputs[0].data, &inputs[1].data];
        if let Some((values, indices)) =
            arg_fold(arg, [values, indices], [&inits[0].data, &inits[1].data], layout)?
        {
            return Ok(vec![values, indices]);
        }
    }
    // Borrowed when the reduced dimensions are already the minor ones: no copy of the input.
    let arranged: Vec<Cow<'_, Data>> = inputs
        .iter()
        .map(|t| {
            if identity {
                Ok(Cow::Borrowed(&t.data))
            } else {
                transpose(&t.data, in_dims, &perm).map(Cow::Owned)
            }
        })
        .collect::<Result<_, _>>()?;
    if let (Some(Reducer::Binary(op)), 1) = (comp.reducer, inputs.len())
        && let Some(out) =
            fast_fold(op, &arranged[0], &inits[0].data, Layout { run, groups, inner: None })?
    {
        return Ok(vec![out]);
    }
    if let (Some(arg), 2) = (comp.recognised.arg, inputs.len())
        && let Some((values, indices)) = arg_fold(
            arg,
            [&arranged[0], &arranged[1]],
            [&inits[0].data, &inits[1].data],
            Layout { run, groups, inner: None },
        )?
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

/// Folds every window of `v` with `f`, each window's elements in the order `for_each_window`
/// lists them (row-major over the window), so the result is the same fold bit for bit. The loop
/// is turned around: for every output row (all coordinates but the last) and every window
/// position, one pass folds one input element into each accumulator of the row, reading the
/// input row at the window's stride. Each accumulator still sees its window in row-major order,
/// and the inner pass has no index arithmetic, so it vectorises when the stride is 1.
fn fold_windows<T: Copy + Send + Sync>(
    v: &[T],
    init: T,
    in_dims: &[usize],
    window: &[WindowDim],
    f: impl Fn(T, T) -> T + Sync,
) -> Result<Vec<T>, Fail> {
    let out_dims: Vec<usize> =
        window.iter().zip(in_dims).map(|(w, &d)| w.output_size(d)).collect::<Result<_, _>>()?;
    let total = out_dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| Fail::Invalid(format!("reduce-window output {out_dims:?} is too large")))?;
    let mut out = filled(total, init)?;
    if total == 0 || window.iter().any(|w| w.size == 0) {
        return Ok(out);
    }
    let Some(last) = in_dims.len().checked_sub(1) else {
        // A scalar: the window is the one element.
        out[0] = f(init, v[0]);
        return Ok(out);
    };
    if let Some(axis) = prefix_axis(in_dims, window) {
        scan_axis(&mut out, v, init, in_dims, axis, &f);
        return Ok(out);
    }
    // Output rows split over the cores when the windows hold enough elements in all; each part
    // starts its row index at its first row, so the parts are the rows the one loop would fold.
    let row_len = out_dims[last];
    let rows = total / row_len;
    let window_elems: usize = window.iter().map(|w| w.size).product();
    let work = total.saturating_mul(window_elems);
    let threads = if work >= PARALLEL_WORK { super::par::cores().min(rows) } else { 1 };
    let per = super::par::per_part(rows, threads, 1);
    let arch = super::simd::arch();
    super::par::each(out.chunks_mut(per * row_len).enumerate(), |(part, out)| {
        let first_row = part * per;
        arch.dispatch(WindowRows {
            out,
            first_row,
            v,
            in_dims,
            out_dims: &out_dims,
            window,
            f: &f,
        });
    });
    Ok(out)
}

/// [`fold_window_rows`] as a `pulp::WithSimd`, so that it is inlined into the function compiled
/// for the CPU's vectors: as a closure it was left out of line at baseline SSE2 (the CNN's max
/// pooling spent 6 % of the model there).
struct WindowRows<'a, T, F> {
    out: &'a mut [T],
    first_row: usize,
    v: &'a [T],
    in_dims: &'a [usize],
    out_dims: &'a [usize],
    window: &'a [WindowDim],
    f: &'a F,
}

impl<T: Copy, F: Fn(T, T) -> T> pulp::WithSimd for WindowRows<'_, T, F> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let WindowRows { out, first_row, v, in_dims, out_dims, window, f } = self;
        fold_window_rows(out, first_row, v, in_dims, out_dims, window, f);
    }
}

/// Window folds of at least this many input elements in all are split over the cores.
const PARALLEL_WORK: usize = 1 << 17;

/// The output rows of [`fold_windows`] from row `first_row` on, into `out` (whole rows).
#[inline(always)]
fn fold_window_rows<T: Copy>(
    out: &mut [T],
    first_row: usize,
    v: &[T],
    in_dims: &[usize],
    out_dims: &[usize],
    window: &[WindowDim],
    f: &impl Fn(T, T) -> T,
) {
    let last = in_dims.len() - 1;
    let in_strides = strides(in_dims);
    let sizes: Vec<usize> = window.iter().map(|w| w.size).collect();
    let extent = in_dims[last];
    let mut row_index = vec![0usize; last];
    let mut rest = first_row;
    for axis in (0..last).rev() {
        row_index[axis] = rest % out_dims[axis].max(1);
        rest /= out_dims[axis].max(1);
    }
    // A window that tiles the row (stride = size, no padding below, no dilation: pooling)
    // folds each output's run of inputs in one pass, all of the row's window positions at once;
    // each output still meets them in order, after the outer positions before them.
    let dim = &window[last];
    let tiles = dim.stride == dim.size
        && dim.pad_low == 0
        && dim.window_dilation == 1
        && dim.base_dilation == 1
        && (2..=4).contains(&dim.size);
    let mut sizes = sizes;
    if tiles {
        sizes[last] = 1;
    }
    let mut w = vec![0usize; in_dims.len()];
    for row in out.chunks_exact_mut(out_dims[last]) {
        w.fill(0);
        loop {
            let mut base = Some(0usize);
            for axis in 0..last {
                base = match (base, window[axis].input(row_index[axis], w[axis], in_dims[axis])) {
                    (Some(b), Some(q)) => Some(b + q * in_strides[axis]),
                    _ => None,
                };
            }
            if let Some(base) = base {
                let input = &v[base..base + extent];
                if tiles {
                    fold_tiles(row, input, dim, f);
                } else {
                    fold_row(row, input, dim, w[last], f);
                }
            }
            if !next_index(&mut w, &sizes) {
                break;
            }
        }
        next_index(&mut row_index, &out_dims[..last]);
    }
}

/// Every window position of a row whose window tiles it (stride = size, 2 to 4, no padding
/// below, no dilation): output `o` folds inputs `o·size ..` in order, in one pass whose size is
/// known to the compiler, so the loads of a tile vectorise. Outputs whose tile runs past the row
/// (padding above) are left to [`fold_row`], a window position at a time.
#[inline(always)]
fn fold_tiles<T: Copy>(acc: &mut [T], input: &[T], dim: &WindowDim, f: &impl Fn(T, T) -> T) {
    #[inline(always)]
    fn tiles<T: Copy, const N: usize>(acc: &mut [T], input: &[T], f: &impl Fn(T, T) -> T) -> usize {
        // Per block of outputs, each tile position's inputs gathered into a contiguous run,
        // then folded into the block's accumulators as a stride-1 loop (which vectorises).
        const RUN: usize = 64;
        let (whole, _) = input.as_chunks::<N>();
        let done = whole.len().min(acc.len());
        let Some(&first) = input.first() else { return 0 };
        let mut run = [first; RUN];
        for (acc, tiles) in acc[..done].chunks_mut(RUN).zip(whole.chunks(RUN)) {
            let run = &mut run[..acc.len()];
            for j in 0..N {
                for (r, tile) in run.iter_mut().zip(tiles) {
                    *r = tile[j];
                }
                for (a, &x) in acc.iter_mut().zip(run.iter()) {
                    *a = f(*a, x);
                }
            }
        }
        done
    }
    let done = match dim.size {
        2 => tiles::<T, 2>(acc, input, f),
        3 => tiles::<T, 3>(acc, input, f),
        _ => tiles::<T, 4>(acc, input, f),
    };
    if done < acc.len() {
        for w in 0..dim.size {
            fold_row(&mut acc[done..], &input[done * dim.size..], dim, w, f);
        }
    }
}

/// The one axis along which every window is the whole prefix up to its own position (a
/// cumulative fold: the window reaches at least the axis's length back, padded low by all but one
/// of its positions, stride 1, no dilation), with every other axis a window of one element.
/// `None` for any other window.
fn prefix_axis(in_dims: &[usize], window: &[WindowDim]) -> Option<usize> {
    let mut axis = None;
    for (a, (w, &extent)) in window.iter().zip(in_dims).enumerate() {
        if w.stride != 1 || w.base_dilation != 1 || w.window_dilation != 1 || w.pad_high != 0 {
            return None;
        }
        if w.size == 1 && w.pad_low == 0 {
            continue;
        }
        let reaches_back = w.size >= extent && i64::try_from(w.size - 1).ok() == Some(w.pad_low);
        if !reaches_back || axis.is_some() {
            return None;
        }
        axis = Some(a);
    }
    axis
}

/// A cumulative fold along `axis`: output `i` is output `i - 1` folded with input `i`, the first
/// starting from `init`. The window of output `i` is inputs `0..=i` in order (its padding is
/// skipped), so this is the window fold bit for bit, with one step per element instead of one
/// per window element.
fn scan_axis<T: Copy>(
    out: &mut [T],
    v: &[T],
    init: T,
    in_dims: &[usize],
    axis: usize,
    f: &impl Fn(T, T) -> T,
) {
    let extent = in_dims[axis];
    let inner: usize = in_dims[axis + 1..].iter().product();
    let block = extent * inner;
    for (out, v) in out.chunks_exact_mut(block).zip(v.chunks_exact(block)) {
        for (o, &x) in out[..inner].iter_mut().zip(&v[..inner]) {
            *o = f(init, x);
        }
        for i in 1..extent {
            let (done, rest) = out.split_at_mut(i * inner);
            let previous = &done[(i - 1) * inner..];
            let row = &v[i * inner..(i + 1) * inner];
            for ((o, &p), &x) in rest[..inner].iter_mut().zip(previous).zip(row) {
                *o = f(p, x);
            }
        }
    }
}

/// `acc[o] = f(acc[o], input[q])` for every output position `o` of a row whose window position
/// `w` along the row's dimension lands on input element `q` (padding and the holes of base
/// dilation are skipped).
#[inline(always)]
fn fold_row<T: Copy>(
    acc: &mut [T],
    input: &[T],
    dim: &WindowDim,
    w: usize,
    f: &impl Fn(T, T) -> T,
) {
    if dim.base_dilation != 1 {
        for (o, a) in acc.iter_mut().enumerate() {
            if let Some(q) = dim.input(o, w, input.len()) {
                *a = f(*a, input[q]);
            }
        }
        return;
    }
    // Output `o` reads input `o·stride + shift`; keep the `o` that land inside the row.
    let stride = dim.stride;
    let shift = (w * dim.window_dilation) as i64 - dim.pad_low;
    let lo = if shift >= 0 { 0 } else { shift.unsigned_abs().div_ceil(stride as u64) as usize };
    let end = input.len() as i64 - shift;
    let hi = if end <= 0 { 0 } else { (end as u64).div_ceil(stride as u64) as usize };
    let hi = hi.min(acc.len());
    if lo >= hi {
        return;
    }
    let start = (lo as i64 * stride as i64 + shift) as usize;
    let acc = &mut acc[lo..hi];
    if stride == 1 {
        let input = &input[start..start + acc.len()];
        for (a, &x) in acc.iter_mut().zip(input) {
            *a = f(*a, x);
        }
    } else {
        // The strided elements are gathered into a short contiguous run first: the fold over
        // `step_by` compiled to a scalar loop with a branch per element for a float max (its
        // NaN and signed-zero rules), where over a run it vectorises as the stride-1 fold does.
        const RUN: usize = 64;
        let mut run = [input[start]; RUN];
        let mut strided = input[start..].iter().step_by(stride);
        for acc in acc.chunks_mut(RUN) {
            let run = &mut run[..acc.len()];
            for (r, &x) in run.iter_mut().zip(&mut strided) {
                *r = x;
            }
            for (a, &x) in acc.iter_mut().zip(run.iter()) {
                *a = f(*a, x);
            }
        }
    }
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
    macro_rules! small {
        ($variant:ident, $format:expr, $t:ty, $v:expr, $i:expr) => {{
            let w = widen($format, $v)?;
            let i0 = $format.decode(u32::from($i[0]));
            let folded = fold_windows(&w, i0, in_dims, window, |a, b| {
                $format.decode($format.encode_f32(f32::binary(op, a, b)))
            })?;
            Data::$variant(folded.iter().map(|&x| $format.encode_f32(x) as $t).collect())
        }};
    }
    Ok(Some(match (data, init) {
        (Data::F32(v), Data::F32(i)) => {
            // The common reducers get a loop each, with the operation known at compile time.
            let init = i[0];
            Data::F32(match op {
                Binary::Add => fold_windows(v, init, in_dims, window, |a, b| a + b)?,
                Binary::Max => {
                    fold_windows(v, init, in_dims, window, |a, b| f32::binary(Binary::Max, a, b))?
                }
                Binary::Min => {
                    fold_windows(v, init, in_dims, window, |a, b| f32::binary(Binary::Min, a, b))?
                }
                _ => fold_windows(v, init, in_dims, window, |a, b| f32::binary(op, a, b))?,
            })
        }
        (Data::F64(v), Data::F64(i)) => {
            Data::F64(fold_windows(v, i[0], in_dims, window, |a, b| f64::binary(op, a, b))?)
        }
        (Data::S8(v), Data::S8(i)) => {
            Data::S8(fold_windows(v, i[0], in_dims, window, |a, b| i8::binary(op, a, b))?)
        }
        (Data::S16(v), Data::S16(i)) => {
            Data::S16(fold_windows(v, i[0], in_dims, window, |a, b| i16::binary(op, a, b))?)
        }
        (Data::S32(v), Data::S32(i)) => {
            Data::S32(fold_windows(v, i[0], in_dims, window, |a, b| i32::binary(op, a, b))?)
        }
        (Data::S64(v), Data::S64(i)) => {
            Data::S64(fold_windows(v, i[0], in_dims, window, |a, b| i64::binary(op, a, b))?)
        }
        (Data::U8(v), Data::U8(i)) => {
            Data::U8(fold_windows(v, i[0], in_dims, window, |a, b| u8::binary(op, a, b))?)
        }
        (Data::U16(v), Data::U16(i)) => {
            Data::U16(fold_windows(v, i[0], in_dims, window, |a, b| u16::binary(op, a, b))?)
        }
        (Data::U32(v), Data::U32(i)) => {
            Data::U32(fold_windows(v, i[0], in_dims, window, |a, b| u32::binary(op, a, b))?)
        }
        (Data::U64(v), Data::U64(i)) => {
            Data::U64(fold_windows(v, i[0], in_dims, window, |a, b| u64::binary(op, a, b))?)
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
    ctx: &impl Subcomputations,
    computation: usize,
    inputs: &[&Arc<Tensor>],
    inits: &[&Arc<Tensor>],
    window: &[WindowDim],
) -> Result<Vec<Data>, Fail> {
    let in_dims = &inputs[0].dims;
    let comp = ctx.computation(computation);
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
    ctx: &impl Subcomputations,
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

// Compiling: the shape checks and attribute decoding for this family.

/// Shape checks and attribute decoding for `reduce`, `reduce-window` and `select-and-scatter`.
pub(crate) fn compile_reduce(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    Ok(match cx.ins.opcode.as_str() {
        "reduce" => {
            let computation = cx.callee(ins, 0)?;
            if operands.is_empty() || !operands.len().is_multiple_of(2) {
                return Err(invalid(format!(
                    "reduce needs inputs and as many init values, got {} operands",
                    operands.len()
                )));
            }
            let n = operands.len() / 2;
            let first = operands[0].array()?;
            let dims = dims_list(&ins.dimensions, first.dims.len(), "dimensions")?;
            let mut types = Vec::new();
            let mut outs = Vec::new();
            let kept: Vec<usize> = (0..first.dims.len())
                .filter(|d| !dims.contains(d))
                .map(|d| first.dims[d])
                .collect();
            for i in 0..n {
                let a = operands[i].array()?;
                let init = operands[n + i].array()?;
                if a.dims != first.dims || init.ty != a.ty || !init.dims.is_empty() {
                    return Err(invalid(format!(
                        "reduce input {} or init {} does not fit {}",
                        operands[i].describe(),
                        operands[n + i].describe(),
                        operands[0].describe()
                    )));
                }
                types.push(a.ty);
                outs.push(Shape::Array(ArrayShape { ty: a.ty, dims: kept.clone(), layout: None }));
            }
            cx.scalar_computation(computation, 2 * n, &types)?;
            cx.check_scalar_result(computation, &types)?;
            let inferred = if n == 1 { outs.remove(0) } else { Shape::Tuple(outs) };
            cx.expect(shape, &inferred)?;
            Op::Reduce { computation, dims }
        }
        "reduce-window" => {
            let computation = cx.callee(ins, 0)?;
            if operands.is_empty() || !operands.len().is_multiple_of(2) {
                return Err(invalid(format!(
                    "reduce-window needs inputs and init values, got {} operands",
                    operands.len()
                )));
            }
            let n = operands.len() / 2;
            let first = operands[0].array()?;
            let window = super::reduce::window_dims(ins.window.as_ref(), first.dims.len())?;
            let dims: Vec<usize> = window
                .iter()
                .zip(&first.dims)
                .map(|(w, &d)| w.output_size(d))
                .collect::<Result<_, _>>()?;
            let mut types = Vec::new();
            let mut outs = Vec::new();
            for i in 0..n {
                let a = operands[i].array()?;
                let init = operands[n + i].array()?;
                if a.dims != first.dims || init.ty != a.ty || !init.dims.is_empty() {
                    return Err(invalid("reduce-window inputs and inits do not fit"));
                }
                types.push(a.ty);
                outs.push(Shape::Array(ArrayShape { ty: a.ty, dims: dims.clone(), layout: None }));
            }
            cx.scalar_computation(computation, 2 * n, &types)?;
            cx.check_scalar_result(computation, &types)?;
            let inferred = if n == 1 { outs.remove(0) } else { Shape::Tuple(outs) };
            cx.expect(shape, &inferred)?;
            Op::ReduceWindow { computation, window }
        }
        "select-and-scatter" => {
            cx.arity(operands, 3)?;
            let select = cx.callee(ins, 0)?;
            let scatter = cx.callee(ins, 1)?;
            let a = operands[0].array()?;
            let source = operands[1].array()?;
            let init = operands[2].array()?;
            let window = super::reduce::window_dims(ins.window.as_ref(), a.dims.len())?;
            let dims: Vec<usize> = window
                .iter()
                .zip(&a.dims)
                .map(|(w, &d)| w.output_size(d))
                .collect::<Result<_, _>>()?;
            if source.dims != dims || source.ty != a.ty || init.ty != a.ty || !init.dims.is_empty()
            {
                return Err(invalid(format!(
                    "select-and-scatter source {} does not fit the windows of {} ({:?})",
                    operands[1].describe(),
                    operands[0].describe(),
                    dims
                )));
            }
            cx.scalar_computation(select, 2, &[a.ty])?;
            cx.check_scalar_result(select, &[ElementType::Pred])?;
            cx.scalar_computation(scatter, 2, &[a.ty])?;
            cx.check_scalar_result(scatter, &[a.ty])?;
            cx.expect(shape, operands[0])?;
            Op::SelectAndScatter { select, scatter, window }
        }
        other => return Err(Fail::Internal(format!("opcode {other} is not compile_reduce's"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NaN, signed zeros, infinities and repeats in a fixed pseudo-random arrangement.
    fn tricky(n: usize, with_nan: bool) -> Vec<f32> {
        let specials =
            [0.0, -0.0, 1.5, -1.5, f32::INFINITY, f32::NEG_INFINITY, 7.0, -0.0, f32::NAN];
        let choices = if with_nan { specials.len() } else { specials.len() - 1 };
        let mut state = 0x9e37_79b9_u32;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                specials[(state >> 16) as usize % choices]
            })
            .collect()
    }

    #[test]
    fn argmax_and_argmin_in_lanes_equal_the_general_fold_bit_for_bit() {
        // jnp's two reducers, and a third (keeping NaN off) that must be left to the general
        // loop; runs and blocks that are and are not multiples of the lanes; indices that are
        // positions and that are not (repeats and a descending stretch), so that the tie rule
        // compares index values, not places.
        let argmax = ArgReducer { keep: Direction::Gt, keep_nan: true, tie: Direction::Lt };
        let argmin = ArgReducer { keep: Direction::Lt, keep_nan: true, tie: Direction::Lt };
        let other = ArgReducer { keep: Direction::Gt, keep_nan: false, tie: Direction::Lt };
        // (run, results, inner): the last is large enough for its runs to be split over the
        // cores.
        let shapes = [
            (1, 5, None),
            (128, 37, None),
            (7, 16, None),
            (64, 6, Some(3)),
            (5, 40, Some(40)),
            (3, 80, Some(40)),
            (2, 40_000, Some(40_000)),
            (4, 20_000, Some(10_000)),
            (128, 1000, None),
        ];
        for (run, groups, inner) in shapes {
            let n = run * groups;
            for with_nan in [false, true] {
                let v = tricky(n, with_nan);
                let positions: Vec<i32> = (0..n).map(|i| (i % run) as i32).collect();
                let scrambled: Vec<i32> = (0..n).map(|i| ((i * 7) % 5) as i32 - 2).collect();
                let layout = Layout { run, groups, inner };
                for x in [&positions, &scrambled] {
                    for init in [(f32::NEG_INFINITY, 0), (f32::NAN, 3), (-0.0, -1)] {
                        for arg in [argmax, argmin] {
                            let fast = fold_pairs_f32_s32(arg, &v, x, init, layout)
                                .expect("fits")
                                .expect("a reducer of jnp's");
                            let general =
                                fold_pairs(arg, &v, &v, x, (init.0, init.0, init.1), layout)
                                    .expect("fits");
                            let what = format!("{arg:?} {layout:?} nan {with_nan} init {init:?}");
                            assert_eq!(fast.0.len(), general.0.len(), "{what}");
                            let pairs =
                                fast.0.iter().zip(&fast.1).zip(general.0.iter().zip(&general.1));
                            for (g, ((a, ai), (b, bi))) in pairs.enumerate() {
                                let (a, b) = ((a.to_bits(), ai), (b.to_bits(), bi));
                                assert_eq!(a, b, "result {g} (value bits, index), {what}");
                            }
                        }
                        let left = fold_pairs_f32_s32(other, &v, x, init, layout).expect("fits");
                        assert!(left.is_none(), "{other:?} has no direct loop");
                    }
                }
            }
        }
    }

    #[test]
    fn lane_extrema_equal_the_sequential_fold_bit_for_bit() {
        // Runs of 64 and 203 elements (a block remainder), with and without NaN; the naive
        // sequential fold of `Float::binary` is the reference.
        for (run, with_nan) in [(64, false), (203, false), (203, true), (64, true)] {
            let v = tricky(run * 7, with_nan);
            for (op, init) in [(Binary::Max, -0.0), (Binary::Min, 0.0), (Binary::Max, f32::NAN)] {
                let naive: Vec<u32> = v
                    .chunks_exact(run)
                    .map(|c| c.iter().fold(init, |a, &x| f32::binary(op, a, x)).to_bits())
                    .collect();
                let lanes = match op {
                    Binary::Max => fold_runs_extremum_f32::<true>(&v, init, run),
                    _ => fold_runs_extremum_f32::<false>(&v, init, run),
                };
                let lanes: Vec<u32> = lanes.expect("fits").iter().map(|x| x.to_bits()).collect();
                assert_eq!(lanes, naive, "{op:?} run {run} nan {with_nan}");
            }
        }
    }

    #[test]
    fn narrow_float_extrema_in_lanes_equal_the_rounding_sequential_fold() {
        // bf16 and f8 values with NaN, both zeros and infinities, over runs above and below the
        // lane threshold: the lane fold must give the bits of rounding after every step.
        for format in [SmallFloat::Bf16, SmallFloat::F16, SmallFloat::F8e4m3fn] {
            let width = if format.bits() == 8 { 256 } else { 65536 };
            let all: Vec<f32> = (0..width).map(|b| format.decode((b * 40503) % width)).collect();
            for (start, len) in [(0usize, 64usize), (7, 200), (100, 1000), (3, 63), (50, 17)] {
                for nan in [false, true] {
                    let mut run: Vec<f32> =
                        (0..len).map(|i| all[(start + i * 13) % all.len()]).collect();
                    if !nan {
                        run.retain(|x| !x.is_nan());
                    }
                    run.push(-0.0);
                    run.push(0.0);
                    for op in [Binary::Max, Binary::Min] {
                        for init in [f32::NEG_INFINITY, 0.0, -0.0, 1.0] {
                            let init = format.decode(format.encode_f32(init));
                            let got = fold_run_f32(op, &run, init, Some(format));
                            let want = run.iter().fold(init, |a, &b| {
                                format.decode(format.encode_f32(f32::binary(op, a, b)))
                            });
                            assert_eq!(
                                format.encode_f32(got),
                                format.encode_f32(want),
                                "{format:?} {op:?} run {start}+{len} nan {nan} init {init}"
                            );
                            assert_eq!(got.to_bits(), want.to_bits());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn narrow_float_extrema_fold_the_bits_where_they_lie() {
        // The unfused reduce's path: bf16, f16 and f8 bits (NaN, both zeros, infinities), runs
        // of 64 and 203, each result against the sequential fold rounding after every step.
        for format in [SmallFloat::Bf16, SmallFloat::F16, SmallFloat::F8e4m3fn] {
            let width = if format.bits() == 8 { 256 } else { 65536 };
            let bits: Vec<u32> = (0..203 * 5).map(|i| (i * 40503 + 7) % width).collect();
            let data = match format {
                SmallFloat::Bf16 => Data::Bf16(bits.iter().map(|&b| b as u16).collect()),
                SmallFloat::F16 => Data::F16(bits.iter().map(|&b| b as u16).collect()),
                _ => Data::F8e4m3fn(bits.iter().map(|&b| b as u8).collect()),
            };
            let values: Vec<f32> = bits.iter().map(|&b| format.decode(b)).collect();
            assert!(values.iter().any(|x| x.is_nan()), "{format:?}: the runs hold NaNs");
            for run in [64usize, 203] {
                let groups = values.len() / run;
                let layout = Layout { run, groups, inner: None };
                for op in [Binary::Max, Binary::Min] {
                    let init_bits = format.encode_f32(if op == Binary::Max { -0.0 } else { 0.0 });
                    let init = match format {
                        SmallFloat::Bf16 => Data::Bf16(vec![init_bits as u16]),
                        SmallFloat::F16 => Data::F16(vec![init_bits as u16]),
                        _ => Data::F8e4m3fn(vec![init_bits as u8]),
                    };
                    let got = fast_fold(op, &data, &init, layout).expect("fits").expect("fast");
                    let got: Vec<u32> = match got {
                        Data::Bf16(v) | Data::F16(v) => v.iter().map(|&b| u32::from(b)).collect(),
                        Data::F8e4m3fn(v) => v.iter().map(|&b| u32::from(b)).collect(),
                        other => panic!("unexpected result type {:?}", other.ty()),
                    };
                    let want: Vec<u32> = values
                        .chunks_exact(run)
                        .map(|c| {
                            let init = format.decode(init_bits);
                            let folded = c.iter().fold(init, |a, &b| {
                                format.decode(format.encode_f32(f32::binary(op, a, b)))
                            });
                            format.encode_f32(folded)
                        })
                        .collect();
                    assert_eq!(got, want, "{format:?} {op:?} run {run}");
                }
            }
        }
    }

    #[test]
    fn column_fold_keeps_each_runs_order() {
        // Subtraction is order-sensitive: 100 - 1 - 2 - 3 = 94 and 100 - 10 - 20 - 30 = 40,
        // with rows [1, 10], [2, 20], [3, 30] folded as columns.
        let rows = [1.0f32, 10.0, 2.0, 20.0, 3.0, 30.0];
        let layout = Layout { run: 3, groups: 2, inner: Some(2) };
        let out = fold_runs_op(Binary::Sub, &rows, 100.0, layout, f32::binary).expect("fits");
        assert_eq!(out, vec![94.0, 40.0]);
    }

    #[test]
    fn lane_sum_of_exact_values_is_the_exact_sum() {
        // 1 + 2 + … + 100 = 5050 in every row (exact in f32), plus the init 0.5.
        let row: Vec<f32> = (1..=100).map(|x| x as f32).collect();
        let v: Vec<f32> = row.iter().chain(&row).copied().collect();
        let sums = fold_runs_lanes(&v, 0.5, 100, |a, b| a + b).expect("fits");
        assert_eq!(sums, vec![5050.5, 5050.5]);
    }

    /// The fold straight from the definition: every window's offsets, folded in order.
    fn naive_window_fold(
        v: &[f32],
        init: f32,
        dims: &[usize],
        window: &[WindowDim],
        op: Binary,
    ) -> Vec<f32> {
        let mut out = Vec::new();
        for_each_window(dims, window, |_, offsets| {
            out.push(offsets.iter().fold(init, |acc, &i| f32::binary(op, acc, v[i])));
            Ok(())
        })
        .expect("valid window");
        out
    }

    fn dim(size: usize, stride: usize, pad: (i64, i64), dilation: (usize, usize)) -> WindowDim {
        WindowDim {
            size,
            stride,
            pad_low: pad.0,
            pad_high: pad.1,
            base_dilation: dilation.0,
            window_dilation: dilation.1,
        }
    }

    #[test]
    fn window_fold_equals_the_definition_bit_for_bit() {
        // Sums of values like 0.1·k depend on their order, so any reordering shows.
        let sums: Vec<f32> = (0..7 * 11).map(|k| 0.1 * k as f32 - 3.3).collect();
        let extrema: Vec<f32> = tricky(7 * 11, true);
        let cases = [
            vec![dim(1, 1, (0, 0), (1, 1)), dim(3, 1, (0, 0), (1, 1))],
            vec![dim(2, 2, (0, 0), (1, 1)), dim(2, 2, (0, 1), (1, 1))],
            vec![dim(3, 2, (1, 1), (1, 1)), dim(3, 2, (1, 2), (1, 1))],
            vec![dim(7, 1, (6, 0), (1, 1)), dim(11, 1, (10, 0), (1, 1))],
            vec![dim(2, 1, (0, 0), (1, 2)), dim(3, 3, (2, 2), (1, 2))],
            vec![dim(2, 1, (1, 0), (2, 1)), dim(3, 2, (1, 1), (3, 1))],
            vec![dim(1, 1, (-1, 0), (1, 1)), dim(2, 1, (-2, -1), (1, 1))],
            vec![dim(1, 1, (0, 0), (1, 1)), dim(0, 1, (0, 0), (1, 1))],
            vec![dim(4, 5, (0, 0), (1, 1)), dim(20, 1, (0, 0), (1, 1))],
            // Windows that tile the row (pooling), the last tile past the row's end.
            vec![dim(3, 3, (0, 0), (1, 1)), dim(4, 4, (0, 1), (1, 1))],
            vec![dim(2, 2, (0, 1), (1, 1)), dim(3, 3, (0, 1), (1, 1))],
            // Cumulative folds along one axis (the running fold), the window as long as the
            // axis or longer, and near misses that must take the general loop.
            vec![dim(1, 1, (0, 0), (1, 1)), dim(11, 1, (10, 0), (1, 1))],
            vec![dim(7, 1, (6, 0), (1, 1)), dim(1, 1, (0, 0), (1, 1))],
            vec![dim(9, 1, (8, 0), (1, 1)), dim(1, 1, (0, 0), (1, 1))],
            vec![dim(1, 1, (0, 0), (1, 1)), dim(14, 1, (13, 0), (1, 1))],
            vec![dim(1, 1, (0, 0), (1, 1)), dim(11, 1, (0, 10), (1, 1))],
            vec![dim(1, 1, (0, 0), (1, 1)), dim(10, 1, (9, 0), (1, 1))],
            vec![dim(1, 1, (0, 0), (1, 1)), dim(11, 1, (10, 1), (1, 1))],
            vec![dim(1, 1, (0, 0), (1, 1)), dim(11, 2, (10, 0), (1, 1))],
        ];
        for window in &cases {
            for (op, v, init) in [
                (Binary::Add, &sums, 0.25),
                (Binary::Max, &extrema, f32::NEG_INFINITY),
                (Binary::Min, &extrema, 0.0),
                (Binary::Max, &extrema, f32::NAN),
                (Binary::Mul, &sums, 1.0),
            ] {
                let want = naive_window_fold(v, init, &[7, 11], window, op);
                let got = fold_windows(v, init, &[7, 11], window, |a, b| f32::binary(op, a, b))
                    .expect("valid window");
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{op:?} over {window:?}");
            }
        }
    }

    #[test]
    fn large_strided_window_folds_split_over_the_cores_equal_the_definition() {
        // Past PARALLEL_WORK the output rows are split over the cores, and rows longer than the
        // strided gather's run of 64 take several runs: both must keep every window's fold.
        let dims = [4, 64, 520];
        let len = dims.iter().product();
        let sums: Vec<f32> = (0..len).map(|k| 0.1 * (k % 977) as f32 - 40.0).collect();
        let extrema = tricky(len, true);
        let pools = [
            vec![dim(1, 1, (0, 0), (1, 1)), dim(2, 2, (0, 0), (1, 1)), dim(2, 2, (0, 0), (1, 1))],
            vec![dim(2, 1, (0, 0), (1, 1)), dim(3, 3, (1, 1), (1, 1)), dim(3, 3, (0, 2), (1, 1))],
        ];
        for window in &pools {
            let outputs: usize =
                window.iter().zip(&dims).map(|(w, &d)| w.output_size(d).expect("fits")).product();
            let elems: usize = window.iter().map(|w| w.size).product();
            assert!(outputs * elems >= PARALLEL_WORK, "{window:?} must take the split path");
            for (op, v, init) in [
                (Binary::Add, &sums, 0.25),
                (Binary::Max, &extrema, f32::NEG_INFINITY),
                (Binary::Min, &extrema, f32::NAN),
            ] {
                let want = naive_window_fold(v, init, &dims, window, op);
                let got = fold_windows(v, init, &dims, window, |a, b| f32::binary(op, a, b))
                    .expect("valid window");
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{op:?} over {window:?}");
            }
        }
    }

    #[test]
    fn window_fold_by_hand() {
        // Running sum along a row (a cumulative sum's window), and a 2×2 stride-2 max-pool.
        let prefix = [dim(1, 1, (0, 0), (1, 1)), dim(4, 1, (3, 0), (1, 1))];
        let v = [1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0];
        let got = fold_windows(&v, 0.0, &[2, 4], &prefix, |a, b| a + b).expect("valid");
        assert_eq!(got, [1.0, 3.0, 6.0, 10.0, 10.0, 30.0, 60.0, 100.0]);
        let pool = [dim(2, 2, (0, 0), (1, 1)), dim(2, 2, (0, 0), (1, 1))];
        let v =
            [1.0, 5.0, 2.0, 0.0, -1.0, 3.0, 8.0, 7.0, 4.0, 4.0, -2.0, -3.0, 0.5, 6.0, -4.0, -1.0];
        let max = |a, b| f32::binary(Binary::Max, a, b);
        let got = fold_windows(&v, f32::NEG_INFINITY, &[4, 4], &pool, max).expect("valid");
        assert_eq!(got, [5.0, 8.0, 6.0, -1.0]);
        // Down the columns, and a window longer than the axis, the same running sums.
        let down = [dim(4, 1, (3, 0), (1, 1)), dim(1, 1, (0, 0), (1, 1))];
        let v = [1.0, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 40.0];
        let got = fold_windows(&v, 0.0, &[4, 2], &down, |a, b| a + b).expect("valid");
        assert_eq!(got, [1.0, 10.0, 3.0, 30.0, 6.0, 60.0, 10.0, 100.0]);
        let long = [dim(6, 1, (5, 0), (1, 1))];
        let got = fold_windows(&[1.0, 2.0, 3.0], 0.5, &[3], &long, |a, b| a + b).expect("valid");
        assert_eq!(got, [1.5, 3.5, 6.5]);
        // One element, and a NaN that every later sum keeps.
        let one = [dim(1, 1, (0, 0), (1, 1))];
        assert_eq!(fold_windows(&[4.0], 0.0, &[1], &one, |a, b| a + b).expect("valid"), [4.0]);
        let scan = [dim(3, 1, (2, 0), (1, 1))];
        let got = fold_windows(&[1.0, f32::NAN, 2.0], 0.0, &[3], &scan, |a, b| a + b);
        let got = got.expect("valid");
        assert!(got[0] == 1.0 && got[1].is_nan() && got[2].is_nan(), "{got:?}");
        // An empty axis has no windows.
        let empty: [f32; 0] = [];
        assert!(fold_windows(&empty, 0.0, &[2, 0], &prefix, |a, b| a + b).expect("ok").is_empty());
        // A scalar's window is the scalar.
        assert_eq!(fold_windows(&[2.0], 1.0, &[], &[], |a, b| a + b).expect("valid"), [3.0]);
    }
}

//! Data movement kernels, generic over the element type: broadcast, transpose, slice, reverse,
//! pad, concatenate, dynamic slices, iota.
//!
//! Most of them are one strided copy: each output element reads the source at
//! `base + Σ index[k] · stride[k]`, with stride 0 for broadcast dimensions and negative strides
//! for reversed ones. The innermost dimension is a tight loop. Shapes were checked when the
//! program was compiled; offsets that could still go wrong come from data (dynamic indices), and
//! those are clamped here as XLA clamps them.

use super::error::Fail;
use super::op_context::{OpContext, dims_list, invalid, to_usize};
use super::plan::Op;
use super::plan::PadDim;
use super::shape::{ArrayShape, Shape};
use super::tensor::{Data, Stored, dispatch, filled, next_index, strides, try_alloc};
use crate::dtype::{ElementType, SmallFloat};

/// Copies `src` into a new row-major array of `out_dims`, reading element
/// `base + Σ index[k] · stride[k]`. The caller guarantees every read is in bounds.
pub(crate) fn strided<T: Copy>(
    src: &[T],
    out_dims: &[usize],
    base: i64,
    stride: &[i64],
) -> Result<Vec<T>, Fail> {
    strided_into(src, try_alloc(out_dims.iter().product())?, out_dims, base, stride)
}

/// [`strided`] into `out`, which has room for every element (its contents are overwritten).
fn strided_into<T: Copy>(
    src: &[T],
    mut out: Vec<T>,
    out_dims: &[usize],
    base: i64,
    stride: &[i64],
) -> Result<Vec<T>, Fail> {
    let n: usize = out_dims.iter().product();
    // Dimensions of one element are dropped, and a dimension whose stride spans the whole of
    // the next is merged with it: the same elements in the same order, in longer runs (a slice
    // of one of q, k, v from `[b, s, 3, h, d]` is one run of h·d per position, not h runs of d;
    // on the bf16 transformer such slices took 180-350 µs, as one call and an index step per
    // 64 elements).
    let (out_dims, stride) = &coalesced(out_dims, stride);
    let (out_dims, stride) = (out_dims.as_slice(), stride.as_slice());
    let rank = out_dims.len();
    if rank >= 2
        && stride[rank - 1] != 1
        && stride[rank - 2] == 1
        && out_dims[rank - 1] > 1
        && out_dims[rank - 2] > 1
    {
        return strided_tiles(src, out, n, out_dims, base, stride);
    }
    out.clear();
    if n == 0 {
        return Ok(out);
    }
    if out_dims.is_empty() {
        out.push(src[base as usize]);
        return Ok(out);
    }
    let inner = out_dims[rank - 1];
    let inner_stride = stride[rank - 1];
    let outer_dims = &out_dims[..rank - 1];
    let mut index = vec![0usize; rank - 1];
    loop {
        let mut offset = base;
        for (k, &i) in index.iter().enumerate() {
            offset += i as i64 * stride[k];
        }
        if inner_stride == 1 {
            let start = offset as usize;
            out.extend_from_slice(&src[start..start + inner]);
        } else {
            for j in 0..inner as i64 {
                out.push(src[(offset + j * inner_stride) as usize]);
            }
        }
        if !next_index(&mut index, outer_dims) {
            break;
        }
    }
    Ok(out)
}

/// `dims` and `stride` without dimensions of one element, and with each dimension whose stride
/// is the next one's extent times its stride merged into that one.
fn coalesced(dims: &[usize], stride: &[i64]) -> (Vec<usize>, Vec<i64>) {
    let mut out: (Vec<usize>, Vec<i64>) = (Vec::with_capacity(dims.len()), Vec::new());
    for (&d, &s) in dims.iter().zip(stride) {
        if d == 1 {
            continue;
        }
        match (out.0.last_mut(), out.1.last_mut()) {
            (Some(last_d), Some(last_s)) if *last_s == d as i64 * s => {
                *last_d *= d;
                *last_s = s;
            }
            _ => {
                out.0.push(d);
                out.1.push(s);
            }
        }
    }
    out
}

/// [`strided`] when the source is contiguous along the output's second-to-last dimension but
/// not its last (a transpose that moves the source's minor axis, as attention's
/// `[batch, seq, heads, dim] → [batch, heads, dim, seq]` does): each output matrix of the last two
/// dimensions is copied [`BLOCK_ROWS`] columns at a time, reading that many runs of the source
/// and storing each output row's piece of the block whole, where the element-by-element copy
/// would walk the source a whole stride apart for every element (attention's `[4, 128, 4, 64]`
/// to `[4, 4, 64, 128]` went from about 60 to 30 µs). `out` has room for the `n` elements (its
/// contents are overwritten).
fn strided_tiles<T: Copy>(
    src: &[T],
    mut out: Vec<T>,
    n: usize,
    out_dims: &[usize],
    base: i64,
    stride: &[i64],
) -> Result<Vec<T>, Fail> {
    let rank = out_dims.len();
    let (rows, cols) = (out_dims[rank - 2], out_dims[rank - 1]);
    let col_stride = stride[rank - 1];
    let outer_dims = &out_dims[..rank - 2];
    out.resize(n, src[base as usize]);
    let mut index = vec![0usize; rank - 2];
    for dst in out.chunks_exact_mut(rows * cols) {
        let offset = base + index.iter().zip(stride).map(|(&i, &s)| i as i64 * s).sum::<i64>();
        // The run of the source along the rows of output column `c`.
        let run = |c: usize| {
            let start = (offset + c as i64 * col_stride) as usize;
            &src[start..start + rows]
        };
        // Blocks of BLOCK_ROWS columns: each output row's piece of the block is stored whole,
        // gathered from the block's runs (see `transpose_columns`).
        let mut c0 = 0;
        while c0 + BLOCK_ROWS <= cols {
            let block: [&[T]; BLOCK_ROWS] = std::array::from_fn(|i| run(c0 + i));
            for (r, row) in dst.chunks_exact_mut(cols).enumerate() {
                gather_block(&mut row[c0..c0 + BLOCK_ROWS], &block, r);
            }
            c0 += BLOCK_ROWS;
        }
        for c in c0..cols {
            for (r, &x) in run(c).iter().enumerate() {
                dst[r * cols + c] = x;
            }
        }
        next_index(&mut index, outer_dims);
    }
    Ok(out)
}

fn signed_strides(dims: &[usize]) -> Vec<i64> {
    strides(dims).into_iter().map(|s| s as i64).collect()
}

/// `broadcast`: operand dimension `i` becomes output dimension `mapping[i]`.
pub(crate) fn broadcast(
    data: &Data,
    in_dims: &[usize],
    out_dims: &[usize],
    mapping: &[usize],
) -> Result<Data, Fail> {
    let in_strides = signed_strides(in_dims);
    let mut stride = vec![0i64; out_dims.len()];
    for (i, &j) in mapping.iter().enumerate() {
        if in_dims[i] != 1 {
            stride[j] = in_strides[i];
        }
    }
    Ok(dispatch!(data, v => strided(v, out_dims, 0, &stride)?))
}

/// Repeats a one-element array `n` times, or returns a copy of an `n`-element one.
pub(crate) fn broadcast_scalar(data: &Data, n: usize) -> Result<Data, Fail> {
    if data.len() == n {
        return Ok(data.clone());
    }
    Ok(dispatch!(data, v => filled(n, v[0])?))
}

/// `transpose`: output dimension `j` is operand dimension `permutation[j]`.
pub(crate) fn transpose(
    data: &Data,
    in_dims: &[usize],
    permutation: &[usize],
) -> Result<Data, Fail> {
    transpose_reusing(data, in_dims, permutation, None)
}

/// [`transpose`] into `spare`'s storage when it holds the same element type and has room (a
/// pooled temporary), else into a fresh vector.
pub(crate) fn transpose_reusing(
    data: &Data,
    in_dims: &[usize],
    permutation: &[usize],
    spare: Option<Data>,
) -> Result<Data, Fail> {
    // The spare keeps its stale elements: the tiled copies size it with `resize` and write
    // every element, the strided copy clears it first.
    fn storage<T: Stored>(spare: Option<Data>, n: usize) -> Result<Vec<T>, Fail> {
        match spare.and_then(T::storage) {
            Some(v) if v.capacity() >= n => Ok(v),
            _ => try_alloc(n),
        }
    }
    if let Some((rows, cols)) = matrix_batch(in_dims, permutation) {
        return Ok(dispatch!(data, v => {
            transpose_matrices(v, rows, cols, storage(spare, v.len())?)
        }));
    }
    let in_strides = signed_strides(in_dims);
    let out_dims: Vec<usize> = permutation.iter().map(|&p| in_dims[p]).collect();
    let stride: Vec<i64> = permutation.iter().map(|&p| in_strides[p]).collect();
    Ok(dispatch!(data, v => strided_into(v, storage(spare, v.len())?, &out_dims, 0, &stride)?))
}

/// When `permutation` moves the last dimension to some position `j` and keeps the others in
/// order, the transpose is one of a batch of matrices (the dimensions before `j`) of `rows`
/// (the dimensions from `j` on, flattened) by `cols` (the last): their rows × cols and cols ×
/// rows. Returns (rows, cols) when both exceed 1. Swapping the last two dimensions is the case
/// `j = rank − 2`; jax's merge of attention heads, `{0,3,1,2}`, is another.
pub(crate) fn matrix_batch(in_dims: &[usize], permutation: &[usize]) -> Option<(usize, usize)> {
    let last = in_dims.len().checked_sub(1)?;
    let j = permutation.iter().position(|&p| p == last)?;
    let kept_order = permutation.iter().filter(|&&p| p != last).enumerate().all(|(k, &p)| k == p);
    let rows: usize = in_dims[j..last].iter().product();
    let cols = in_dims[last];
    (kept_order && j < last && rows > 1 && cols > 1).then_some((rows, cols))
}

/// Transposes each `rows × cols` matrix of `src` (a batch of them, one after another) into `out`
/// (whose contents are overwritten). Each output row (a column of the source) is written
/// [`BLOCK_ROWS`] elements at a time, gathered from as many source rows that are read along a
/// tile of [`TILE_COLS`] columns, so reads and writes both stay within a few cache lines and the
/// stores are whole short vectors: storing element by element, the attention transposes (a
/// `[4, 4, 128, 128]` swap of the last two dimensions) ran at about 7 GB/s. Large batches split
/// their output rows over the cores.
fn transpose_matrices<T: Copy + Send + Sync>(
    src: &[T],
    rows: usize,
    cols: usize,
    mut out: Vec<T>,
) -> Vec<T> {
    let Some(&first) = src.first() else { return out };
    out.resize(src.len(), first);
    // Output rows (one per source column of each matrix), split in runs over the cores.
    let units = src.len() / rows;
    let threads = if src.len() >= PARALLEL_ELEMS { super::par::cores().min(units) } else { 1 };
    let per = super::par::per_part(units, threads, 1);
    super::par::each(out.chunks_mut(per * rows).enumerate(), |(part, dst)| {
        let first_unit = part * per;
        let mut done = 0;
        while done < dst.len() / rows {
            let unit = first_unit + done;
            let (matrix, c0) = (unit / cols, unit % cols);
            let c1 = cols.min(c0 + dst.len() / rows - done);
            let source = &src[matrix * rows * cols..(matrix + 1) * rows * cols];
            let target = &mut dst[done * rows..(done + c1 - c0) * rows];
            transpose_columns(source, target, rows, cols, c0..c1);
            done += c1 - c0;
        }
    });
    out
}

/// `out[i] = block[i][index]`, stored as one piece of [`BLOCK_ROWS`] elements.
#[inline(always)]
fn gather_block<T: Copy>(out: &mut [T], block: &[&[T]; BLOCK_ROWS], index: usize) {
    let out: &mut [T; BLOCK_ROWS] = out.try_into().expect("a block of BLOCK_ROWS elements");
    for (o, row) in out.iter_mut().zip(block) {
        *o = row[index];
    }
}

/// Source rows [`transpose_columns`] gathers from at a time.
const BLOCK_ROWS: usize = 8;
/// Source columns it walks per block of rows.
const TILE_COLS: usize = 64;
/// Transposes of at least this many elements split over the cores.
const PARALLEL_ELEMS: usize = 1 << 17;

/// Columns `columns` of the `rows × cols` matrix `src`, transposed into `dst` (one row of
/// `rows` elements per column).
fn transpose_columns<T: Copy>(
    src: &[T],
    dst: &mut [T],
    rows: usize,
    cols: usize,
    columns: std::ops::Range<usize>,
) {
    let first = columns.start;
    for c0 in columns.clone().step_by(TILE_COLS) {
        let c1 = (c0 + TILE_COLS).min(columns.end);
        let mut r0 = 0;
        while r0 + BLOCK_ROWS <= rows {
            let block: [&[T]; BLOCK_ROWS] =
                std::array::from_fn(|i| &src[(r0 + i) * cols + c0..(r0 + i) * cols + c1]);
            for (j, out) in
                dst[(c0 - first) * rows..(c1 - first) * rows].chunks_exact_mut(rows).enumerate()
            {
                gather_block(&mut out[r0..r0 + BLOCK_ROWS], &block, j);
            }
            r0 += BLOCK_ROWS;
        }
        for r in r0..rows {
            for c in c0..c1 {
                dst[(c - first) * rows + r] = src[r * cols + c];
            }
        }
    }
}

/// `slice` with per-dimension start, step and output size.
pub(crate) fn slice(
    data: &Data,
    in_dims: &[usize],
    starts: &[usize],
    steps: &[usize],
    out_dims: &[usize],
) -> Result<Data, Fail> {
    let in_strides = signed_strides(in_dims);
    let base: i64 = starts.iter().zip(&in_strides).map(|(&s, &st)| s as i64 * st).sum();
    let stride: Vec<i64> = steps.iter().zip(&in_strides).map(|(&s, &st)| s as i64 * st).collect();
    Ok(dispatch!(data, v => strided(v, out_dims, base, &stride)?))
}

/// `reverse` of the listed dimensions.
pub(crate) fn reverse(data: &Data, dims: &[usize], reversed: &[usize]) -> Result<Data, Fail> {
    let mut stride = signed_strides(dims);
    let mut base = 0i64;
    for &axis in reversed {
        if dims[axis] > 0 {
            base += (dims[axis] as i64 - 1) * stride[axis];
        }
        stride[axis] = -stride[axis];
    }
    Ok(dispatch!(data, v => strided(v, dims, base, &stride)?))
}

/// `pad`: the output is filled with the padding value, then each operand element lands at
/// `low + i · (interior + 1)` when that position is inside the output.
pub(crate) fn pad(
    data: &Data,
    value: &Data,
    in_dims: &[usize],
    config: &[PadDim],
    out_dims: &[usize],
) -> Result<Data, Fail> {
    fn run<T: Copy>(
        src: &[T],
        fill: T,
        in_dims: &[usize],
        config: &[PadDim],
        out_dims: &[usize],
    ) -> Result<Vec<T>, Fail> {
        let n: usize = out_dims.iter().product();
        let mut out = filled(n, fill)?;
        if src.is_empty() || n == 0 {
            return Ok(out);
        }
        let out_strides = strides(out_dims);
        let mut index = vec![0usize; in_dims.len()];
        let mut k = 0usize;
        'outer: loop {
            let mut offset = 0usize;
            let mut inside = true;
            for (axis, &i) in index.iter().enumerate() {
                let c = &config[axis];
                let position = c.low + i as i64 * (c.interior + 1);
                if position < 0 || position >= out_dims[axis] as i64 {
                    inside = false;
                    break;
                }
                offset += position as usize * out_strides[axis];
            }
            if inside {
                out[offset] = src[k];
            }
            k += 1;
            if !next_index(&mut index, in_dims) {
                break 'outer;
            }
        }
        Ok(out)
    }
    super::tensor::dispatch2!(data, value, v, p => run(v, p[0], in_dims, config, out_dims)?)
}

/// `concatenate` along `axis`; `parts` are (data, dims) with equal dims except on `axis`.
pub(crate) fn concatenate(parts: &[(&Data, &[usize])], axis: usize) -> Result<Data, Fail> {
    fn run<T: Copy>(parts: &[(&[T], &[usize])], axis: usize) -> Result<Vec<T>, Fail> {
        let total: usize = parts.iter().map(|(v, _)| v.len()).sum();
        let mut out = try_alloc(total)?;
        let Some((_, first_dims)) = parts.first() else { return Ok(out) };
        let outer: usize = first_dims[..axis].iter().product();
        for o in 0..outer {
            for (v, dims) in parts {
                let chunk: usize = dims[axis..].iter().product();
                out.extend_from_slice(&v[o * chunk..(o + 1) * chunk]);
            }
        }
        Ok(out)
    }
    macro_rules! arm {
        ($variant:ident) => {{
            let mut typed = Vec::with_capacity(parts.len());
            for (data, dims) in parts {
                match data {
                    Data::$variant(v) => typed.push((v.as_slice(), *dims)),
                    _ => return Err(Fail::Internal("concatenate operands differ in type".into())),
                }
            }
            Data::$variant(run(&typed, axis)?)
        }};
    }
    let Some((first, _)) = parts.first() else {
        return Err(Fail::Internal("concatenate of nothing".into()));
    };
    Ok(match first {
        Data::Pred(_) => arm!(Pred),
        Data::S8(_) => arm!(S8),
        Data::S16(_) => arm!(S16),
        Data::S32(_) => arm!(S32),
        Data::S64(_) => arm!(S64),
        Data::U8(_) => arm!(U8),
        Data::U16(_) => arm!(U16),
        Data::U32(_) => arm!(U32),
        Data::U64(_) => arm!(U64),
        Data::F16(_) => arm!(F16),
        Data::F32(_) => arm!(F32),
        Data::F64(_) => arm!(F64),
        Data::Bf16(_) => arm!(Bf16),
        Data::F8e5m2(_) => arm!(F8e5m2),
        Data::F8e4m3fn(_) => arm!(F8e4m3fn),
        Data::F8e4m3(_) => arm!(F8e4m3),
    })
}

/// Reads an integer scalar (any integer type) as i64; u64 above i64::MAX saturates.
pub(crate) fn scalar_index(data: &Data) -> Result<i64, Fail> {
    Ok(match data {
        Data::S8(v) => i64::from(v[0]),
        Data::S16(v) => i64::from(v[0]),
        Data::S32(v) => i64::from(v[0]),
        Data::S64(v) => v[0],
        Data::U8(v) => i64::from(v[0]),
        Data::U16(v) => i64::from(v[0]),
        Data::U32(v) => i64::from(v[0]),
        Data::U64(v) => i64::try_from(v[0]).unwrap_or(i64::MAX),
        _ => return Err(Fail::Internal("index is not an integer".into())),
    })
}

/// All elements of an integer array as i64 (u64 saturating).
pub(crate) fn indices(data: &Data) -> Result<Vec<i64>, Fail> {
    let mut out = try_alloc(data.len())?;
    match data {
        Data::S8(v) => out.extend(v.iter().map(|&x| i64::from(x))),
        Data::S16(v) => out.extend(v.iter().map(|&x| i64::from(x))),
        Data::S32(v) => out.extend(v.iter().map(|&x| i64::from(x))),
        Data::S64(v) => out.extend_from_slice(v),
        Data::U8(v) => out.extend(v.iter().map(|&x| i64::from(x))),
        Data::U16(v) => out.extend(v.iter().map(|&x| i64::from(x))),
        Data::U32(v) => out.extend(v.iter().map(|&x| i64::from(x))),
        Data::U64(v) => out.extend(v.iter().map(|&x| i64::try_from(x).unwrap_or(i64::MAX))),
        _ => return Err(Fail::Internal("indices are not integers".into())),
    }
    Ok(out)
}

/// Clamps a start index so that `size` elements fit in `dim` (XLA's dynamic-slice rule).
pub(crate) fn clamp_start(start: i64, dim: usize, size: usize) -> usize {
    start.clamp(0, dim.saturating_sub(size) as i64) as usize
}

/// `dynamic-update-slice` with already clamped starts, into a copy of `data`.
pub(crate) fn update_slice(
    data: &Data,
    dims: &[usize],
    update: &Data,
    update_dims: &[usize],
    starts: &[usize],
) -> Result<Data, Fail> {
    update_slice_owned(copy(data)?, dims, update, update_dims, starts)
}

/// [`update_slice`] writing into `data`'s own buffer, which the caller no longer needs (a cache
/// updated one row per step is then not copied whole).
pub(crate) fn update_slice_owned(
    data: Data,
    dims: &[usize],
    update: &Data,
    update_dims: &[usize],
    starts: &[usize],
) -> Result<Data, Fail> {
    fn run<T: Copy>(
        mut out: Vec<T>,
        dims: &[usize],
        src: &[T],
        src_dims: &[usize],
        starts: &[usize],
    ) -> Vec<T> {
        if src.is_empty() {
            return out;
        }
        let out_strides = strides(dims);
        let rank = dims.len();
        if rank == 0 {
            out[0] = src[0];
            return out;
        }
        let inner = src_dims[rank - 1];
        let mut index = vec![0usize; rank - 1];
        let mut k = 0;
        loop {
            let mut offset = starts[rank - 1];
            for (axis, &i) in index.iter().enumerate() {
                offset += (starts[axis] + i) * out_strides[axis];
            }
            out[offset..offset + inner].copy_from_slice(&src[k..k + inner]);
            k += inner;
            if !next_index(&mut index, &src_dims[..rank - 1]) {
                break;
            }
        }
        out
    }
    super::tensor::dispatch2!(data, update, d, u => run(d, dims, u, update_dims, starts))
}

/// `iota` of `ty` along `axis`.
pub(crate) fn iota(ty: ElementType, dims: &[usize], axis: usize) -> Result<Data, Fail> {
    let n: usize = dims.iter().product();
    let inner: usize = dims[axis + 1..].iter().product();
    let extent = dims[axis];
    let position = |k: usize| (k / inner.max(1)) % extent.max(1);
    fn build<T>(n: usize, f: impl Fn(usize) -> T) -> Result<Vec<T>, Fail> {
        let mut out = try_alloc(n)?;
        out.extend((0..n).map(f));
        Ok(out)
    }
    Ok(match ty {
        ElementType::Pred => Data::Pred(build(n, |k| position(k) != 0)?),
        ElementType::S8 => Data::S8(build(n, |k| position(k) as i8)?),
        ElementType::S16 => Data::S16(build(n, |k| position(k) as i16)?),
        ElementType::S32 => Data::S32(build(n, |k| position(k) as i32)?),
        ElementType::S64 => Data::S64(build(n, |k| position(k) as i64)?),
        ElementType::U8 => Data::U8(build(n, |k| position(k) as u8)?),
        ElementType::U16 => Data::U16(build(n, |k| position(k) as u16)?),
        ElementType::U32 => Data::U32(build(n, |k| position(k) as u32)?),
        ElementType::U64 => Data::U64(build(n, |k| position(k) as u64)?),
        ElementType::F32 => Data::F32(build(n, |k| position(k) as f32)?),
        ElementType::F64 => Data::F64(build(n, |k| position(k) as f64)?),
        ElementType::F16 => {
            Data::F16(build(n, |k| SmallFloat::F16.encode(position(k) as f64) as u16)?)
        }
        ElementType::Bf16 => {
            Data::Bf16(build(n, |k| SmallFloat::Bf16.encode(position(k) as f64) as u16)?)
        }
        ElementType::F8e5m2 => {
            Data::F8e5m2(build(n, |k| SmallFloat::F8e5m2.encode(position(k) as f64) as u8)?)
        }
        ElementType::F8e4m3fn => {
            Data::F8e4m3fn(build(n, |k| SmallFloat::F8e4m3fn.encode(position(k) as f64) as u8)?)
        }
        ElementType::F8e4m3 => {
            Data::F8e4m3(build(n, |k| SmallFloat::F8e4m3.encode(position(k) as f64) as u8)?)
        }
    })
}

/// Copies the elements of `data` (any type) — used by reshape/bitcast/copy, which keep data.
pub(crate) fn copy(data: &Data) -> Result<Data, Fail> {
    Ok(dispatch!(data, v => {
        let mut out = try_alloc(v.len())?;
        out.extend_from_slice(v);
        out
    }))
}

// Compiling: the shape checks and attribute decoding for this family.

/// Shape checks and attribute decoding for ops that rearrange or reinterpret one operand: broadcast, bitcast, reshape, copy, transpose and reverse.
pub(crate) fn compile_rearrangement(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let opcode = cx.ins.opcode.as_str();
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    let out = || shape.array();
    Ok(match opcode {
        "broadcast" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let o = out()?;
            let mapping = dims_list(&ins.dimensions, o.dims.len(), "dimensions")?;
            let ok = a.ty == o.ty
                && mapping.len() == a.dims.len()
                && mapping.iter().enumerate().all(|(i, &j)| a.dims[i] == o.dims[j]);
            if !ok {
                return Err(invalid(format!(
                    "broadcast of {} to {} with dimensions {:?} does not fit",
                    operands[0].describe(),
                    shape.describe(),
                    ins.dimensions
                )));
            }
            Op::Broadcast(mapping)
        }
        "bitcast" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let o = out()?;
            let n_bytes = |s: &ArrayShape| s.n_elems().checked_mul(s.ty.item_size());
            if n_bytes(a).is_none() || n_bytes(a) != n_bytes(o) {
                return Err(invalid(format!(
                    "bitcast of {} to {} changes the byte size",
                    operands[0].describe(),
                    shape.describe()
                )));
            }
            if a.ty == o.ty && a.layout.is_none() && o.layout.is_none() {
                Op::Reshape
            } else {
                let default = |rank: usize| (0..rank as i64).rev().collect::<Vec<i64>>();
                Op::Bitcast {
                    from: a.layout.clone().unwrap_or_else(|| default(a.dims.len())),
                    to: o.layout.clone().unwrap_or_else(|| default(o.dims.len())),
                }
            }
        }
        "reshape" | "copy" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let o = out()?;
            if a.ty != o.ty || a.n_elems() != o.n_elems() || (opcode == "copy" && a.dims != o.dims)
            {
                return Err(invalid(format!(
                    "{opcode} of {} to {} changes the element type or count",
                    operands[0].describe(),
                    shape.describe()
                )));
            }
            Op::Reshape
        }
        "transpose" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let permutation = dims_list(&ins.dimensions, a.dims.len(), "dimensions")?;
            if permutation.len() != a.dims.len() {
                return Err(invalid(format!(
                    "permutation {:?} is not of rank {}",
                    ins.dimensions,
                    a.dims.len()
                )));
            }
            let dims = permutation.iter().map(|&p| a.dims[p]).collect();
            cx.expect(shape, &Shape::Array(ArrayShape { ty: a.ty, dims, layout: None }))?;
            Op::Transpose(permutation)
        }
        "reverse" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let dims = dims_list(&ins.dimensions, a.dims.len(), "dimensions")?;
            cx.expect(shape, operands[0])?;
            Op::Reverse(dims)
        }
        other => {
            return Err(Fail::Internal(format!("opcode {other} is not compile_rearrangement's")));
        }
    })
}

/// Shape checks and attribute decoding for ops that cut, join, pad or generate arrays by index: slice, dynamic-slice, dynamic-update-slice, concatenate, pad and iota.
pub(crate) fn compile_indexing(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    let out = || shape.array();
    Ok(match cx.ins.opcode.as_str() {
        "slice" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            if ins.slice_dimensions.len() != a.dims.len() {
                return Err(invalid(format!(
                    "slice has {} slice_dimensions for rank {}",
                    ins.slice_dimensions.len(),
                    a.dims.len()
                )));
            }
            let mut starts = Vec::new();
            let mut steps = Vec::new();
            let mut dims = Vec::new();
            for (axis, s) in ins.slice_dimensions.iter().enumerate() {
                let ok = s.start >= 0
                    && s.start <= s.limit
                    && s.limit <= a.dims[axis] as i64
                    && s.stride >= 1;
                if !ok {
                    return Err(invalid(format!(
                        "slice [{}:{}:{}] does not fit dimension {axis} of size {}",
                        s.start, s.limit, s.stride, a.dims[axis]
                    )));
                }
                starts.push(s.start as usize);
                steps.push(s.stride as usize);
                dims.push(((s.limit - s.start + s.stride - 1) / s.stride) as usize);
            }
            cx.expect(shape, &Shape::Array(ArrayShape { ty: a.ty, dims, layout: None }))?;
            Op::Slice { starts, steps }
        }
        "dynamic-slice" => {
            let a = operands
                .first()
                .ok_or_else(|| invalid("dynamic-slice needs an operand"))?
                .array()?;
            cx.arity(operands, 1 + a.dims.len())?;
            cx.scalar_indices(&operands[1..])?;
            let sizes: Vec<usize> = ins
                .dynamic_slice_sizes
                .iter()
                .map(|&s| to_usize(s, "dynamic_slice_sizes"))
                .collect::<Result<_, _>>()?;
            if sizes.len() != a.dims.len() || sizes.iter().zip(&a.dims).any(|(s, d)| s > d) {
                return Err(invalid(format!(
                    "dynamic_slice_sizes {:?} do not fit {}",
                    ins.dynamic_slice_sizes,
                    operands[0].describe()
                )));
            }
            cx.expect(shape, &Shape::Array(ArrayShape { ty: a.ty, dims: sizes, layout: None }))?;
            Op::DynamicSlice
        }
        "dynamic-update-slice" => {
            let a = operands
                .first()
                .ok_or_else(|| invalid("dynamic-update-slice needs an operand"))?
                .array()?;
            cx.arity(operands, 2 + a.dims.len())?;
            let u = operands[1].array()?;
            if u.ty != a.ty
                || u.dims.len() != a.dims.len()
                || u.dims.iter().zip(&a.dims).any(|(s, d)| s > d)
            {
                return Err(invalid(format!(
                    "update {} does not fit in {}",
                    operands[1].describe(),
                    operands[0].describe()
                )));
            }
            cx.scalar_indices(&operands[2..])?;
            cx.expect(shape, operands[0])?;
            Op::DynamicUpdateSlice
        }
        "concatenate" => {
            let first =
                operands.first().ok_or_else(|| invalid("concatenate needs operands"))?.array()?;
            let axis = dims_list(&ins.dimensions, first.dims.len(), "dimensions")?;
            let [axis] = axis[..] else {
                return Err(invalid(format!(
                    "concatenate needs one dimension, got {:?}",
                    ins.dimensions
                )));
            };
            let mut dims = first.dims.clone();
            dims[axis] = 0;
            for s in operands {
                let a = s.array()?;
                let ok = a.ty == first.ty
                    && a.dims.len() == first.dims.len()
                    && a.dims
                        .iter()
                        .zip(&first.dims)
                        .enumerate()
                        .all(|(i, (x, y))| i == axis || x == y);
                if !ok {
                    return Err(invalid(format!(
                        "operand {} does not concatenate with {} on dimension {axis}",
                        s.describe(),
                        operands[0].describe()
                    )));
                }
                dims[axis] += a.dims[axis];
            }
            cx.expect(shape, &Shape::Array(ArrayShape { ty: first.ty, dims, layout: None }))?;
            Op::Concatenate(axis)
        }
        "pad" => {
            cx.arity(operands, 2)?;
            let a = operands[0].array()?;
            let v = operands[1].array()?;
            if v.ty != a.ty || !v.dims.is_empty() {
                return Err(invalid(format!(
                    "padding value is {}, expected {}[]",
                    operands[1].describe(),
                    a.ty
                )));
            }
            let config =
                ins.padding_config.as_ref().map(|c| c.dimensions.as_slice()).unwrap_or(&[]);
            if config.len() != a.dims.len() {
                return Err(invalid(format!(
                    "padding_config has {} dimensions for rank {}",
                    config.len(),
                    a.dims.len()
                )));
            }
            let mut pads = Vec::new();
            let mut dims = Vec::new();
            for (axis, c) in config.iter().enumerate() {
                let d = a.dims[axis] as i128;
                let size = i128::from(c.edge_padding_low)
                    + i128::from(c.edge_padding_high)
                    + d
                    + (d - 1).max(0) * i128::from(c.interior_padding);
                if c.interior_padding < 0 || size < 0 || size > i128::from(u32::MAX) * 1024 {
                    return Err(invalid(format!(
                        "padding {}_{}_{} of dimension {axis} (size {d}) gives size {size}",
                        c.edge_padding_low, c.edge_padding_high, c.interior_padding
                    )));
                }
                dims.push(size as usize);
                pads.push(PadDim {
                    low: c.edge_padding_low,
                    high: c.edge_padding_high,
                    interior: c.interior_padding,
                });
            }
            cx.expect(shape, &Shape::Array(ArrayShape { ty: a.ty, dims, layout: None }))?;
            Op::Pad(pads)
        }
        "iota" => {
            cx.arity(operands, 0)?;
            let o = out()?;
            let axis = dims_list(&ins.dimensions, o.dims.len(), "iota_dimension")?;
            let [axis] = axis[..] else {
                return Err(invalid(format!("iota needs one dimension, got {:?}", ins.dimensions)));
            };
            Op::Iota(axis)
        }
        other => return Err(Fail::Internal(format!("opcode {other} is not compile_indexing's"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transpose by its definition: output element `index` is input element
    /// `index[permutation⁻¹]`, each offset computed from the whole multi-index.
    fn transpose_by_definition(v: &[u32], dims: &[usize], permutation: &[usize]) -> Vec<u32> {
        let out_dims: Vec<usize> = permutation.iter().map(|&p| dims[p]).collect();
        let n: usize = dims.iter().product();
        (0..n)
            .map(|linear| {
                let mut rest = linear;
                let mut in_index = vec![0usize; dims.len()];
                for (k, &d) in out_dims.iter().enumerate().rev() {
                    in_index[permutation[k]] = rest % d;
                    rest /= d;
                }
                let offset = in_index.iter().zip(dims).fold(0, |o, (&i, &d)| o * d + i);
                v[offset]
            })
            .collect()
    }

    #[test]
    fn tiled_transposes_equal_the_definition() {
        // Tile-sized, smaller than a tile, odd remainders on both sides, a batch of matrices,
        // and degenerate rows or columns of one (which keep the strided copy); then transposes
        // that move the minor axis under a batch (attention's [b, s, h, d] → [b, h, d, s]),
        // which copy blocks of a strided source, and ones that keep it (runs of the source).
        let cases: [(&[usize], &[usize]); 19] = [
            (&[8, 8], &[1, 0]),
            (&[3, 5], &[1, 0]),
            (&[17, 9], &[1, 0]),
            (&[64, 64], &[1, 0]),
            (&[2, 3, 11, 13], &[0, 1, 3, 2]),
            (&[1, 7], &[1, 0]),
            (&[7, 1], &[1, 0]),
            (&[4, 6, 5], &[2, 1, 0]),
            (&[2, 19, 3, 10], &[0, 2, 3, 1]),
            (&[3, 9, 2, 8], &[2, 0, 3, 1]),
            (&[5, 4, 17], &[1, 2, 0]),
            (&[2, 1, 3, 9], &[0, 2, 3, 1]),
            (&[2, 7, 3, 5], &[0, 2, 1, 3]),
            (&[2, 3, 5, 7], &[0, 3, 1, 2]),
            (&[3, 4, 6], &[2, 0, 1]),
            (&[2, 1, 9, 5], &[0, 3, 1, 2]),
            // Past the split over the cores: a part ends inside a matrix, or the one matrix is
            // split by its columns; then a strided source with a part block of columns.
            (&[3, 211, 223], &[0, 2, 1]),
            (&[1, 300, 500], &[0, 2, 1]),
            (&[2, 130, 3, 70], &[0, 2, 3, 1]),
        ];
        for (dims, permutation) in cases {
            let n: usize = dims.iter().product();
            let v: Vec<u32> = (0..n as u32).map(|x| x.wrapping_mul(2_654_435_761)).collect();
            let got = transpose(&Data::U32(v.clone()), dims, permutation).expect("fits");
            let want = Data::U32(transpose_by_definition(&v, dims, permutation));
            assert_eq!(got, want, "{dims:?} by {permutation:?}");
            // Into reused storage: stale values of the same type, too little room, another type.
            for spare in
                [Data::U32(vec![7; n + 3]), Data::U32(vec![7; n / 2]), Data::F32(vec![1.0; n])]
            {
                let got = transpose_reusing(&Data::U32(v.clone()), dims, permutation, Some(spare));
                assert_eq!(got.expect("fits"), want, "{dims:?} by {permutation:?}, reusing");
            }
        }
    }

    #[test]
    fn slices_read_contiguous_dimensions_as_one_run() {
        // One of q, k, v of [b, s, 3, h, d]: h·d elements in a run per position (b and s
        // merge as well, b's stride being s positions).
        assert_eq!(coalesced(&[4, 6, 1, 2, 5], &[180, 30, 10, 5, 1]), (vec![24, 10], vec![30, 1]));
        // Nothing to merge, a reversed dimension, only ones.
        assert_eq!(coalesced(&[3, 4], &[1, 3]), (vec![3, 4], vec![1, 3]));
        assert_eq!(coalesced(&[2, 3], &[-3, 1]), (vec![2, 3], vec![-3, 1]));
        assert_eq!(coalesced(&[1, 1], &[5, 1]), (vec![], vec![]));
        // And the slice itself, against its definition.
        let dims = [4usize, 6, 3, 2, 5];
        let v: Vec<u32> = (0..dims.iter().product::<usize>() as u32).collect();
        let got = slice(
            &Data::U32(v.clone()),
            &dims,
            &[1, 0, 2, 0, 1],
            &[1, 2, 1, 1, 1],
            &[3, 3, 1, 2, 4],
        )
        .expect("fits");
        let mut want = Vec::new();
        for a in 1..4 {
            for b in (0..6).step_by(2) {
                for d in 0..2 {
                    for e in 1..5 {
                        want.push(v[(((a * 6 + b) * 3 + 2) * 2 + d) * 5 + e]);
                    }
                }
            }
        }
        assert_eq!(got, Data::U32(want));
    }

    #[test]
    fn a_moved_last_dimension_is_a_batch_of_matrices() {
        // Attention's head merge [b, h, d, s] → [b, s, h, d]: 4 matrices of (4·64) × 128.
        assert_eq!(matrix_batch(&[4, 4, 64, 128], &[0, 3, 1, 2]), Some((256, 128)));
        assert_eq!(matrix_batch(&[2, 3], &[1, 0]), Some((2, 3)));
        assert_eq!(matrix_batch(&[5, 2, 3], &[0, 2, 1]), Some((2, 3)));
        // The last dimension kept, the others out of order, or a side of one: not a batch.
        assert_eq!(matrix_batch(&[2, 3, 4], &[1, 0, 2]), None);
        assert_eq!(matrix_batch(&[2, 3, 4], &[2, 1, 0]), None);
        assert_eq!(matrix_batch(&[2, 1, 4], &[0, 2, 1]), None);
        assert_eq!(matrix_batch(&[], &[]), None);
    }

    #[test]
    fn transpose_by_hand() {
        // [[1, 2, 3], [4, 5, 6]] transposed is [[1, 4], [2, 5], [3, 6]]; NaN payloads move as
        // bits; an empty matrix stays empty.
        let got = transpose(&Data::S32(vec![1, 2, 3, 4, 5, 6]), &[2, 3], &[1, 0]).expect("fits");
        assert_eq!(got, Data::S32(vec![1, 4, 2, 5, 3, 6]));
        let nan = f32::from_bits(0x7fc0_1234);
        let got = transpose(&Data::F32(vec![nan, 1.0, 2.0, 3.0]), &[2, 2], &[1, 0]).expect("fits");
        let Data::F32(got) = got else { panic!("f32 in, f32 out") };
        assert_eq!(
            got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            [0x7fc0_1234, 2f32.to_bits(), 1f32.to_bits(), 3f32.to_bits()]
        );
        let got = transpose(&Data::F32(Vec::new()), &[0, 3], &[1, 0]).expect("fits");
        assert_eq!(got, Data::F32(Vec::new()));
    }
}

//! `gather` and `scatter` with XLA's general dimension numbers (batching dimensions included).
//!
//! Gather clamps each start so the whole slice fits in the operand, as XLA does. Scatter skips an
//! update window whose start does not let the whole window fit (XLA's CPU behaviour for
//! out-of-bounds scatter), and applies updates in row-major order of the updates.

use std::sync::Arc;

use super::error::Fail;
use super::op_context::{OpContext, invalid};
use super::plan::Op;
use super::plan::Reducer;
use super::plan::Subcomputations;
use super::plan::{GatherPlan, IndexLayout, ScatterPlan};
use super::shape::ArrayShape;
use super::shape::Shape;
use super::shape_ops::indices;
use super::tensor::{Data, Tensor, dispatch, next_index, strides, try_alloc};
use super::tensor::{element, gather_scalars};
use crate::proto;

fn list(values: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, Fail> {
    values
        .iter()
        .map(|&v| {
            usize::try_from(v)
                .ok()
                .filter(|&d| d < rank)
                .ok_or_else(|| invalid(format!("{what} {values:?} do not fit rank {rank}")))
        })
        .collect()
}

impl IndexLayout {
    fn new(dims: &[usize], index_vector_dim: i64) -> Result<IndexLayout, Fail> {
        let vector_dim = usize::try_from(index_vector_dim)
            .ok()
            .filter(|&d| d <= dims.len())
            .ok_or_else(|| {
                invalid(format!(
                    "index_vector_dim {index_vector_dim} does not fit indices of rank {}",
                    dims.len()
                ))
            })?;
        let batch_dims: Vec<usize> = (0..dims.len()).filter(|&d| d != vector_dim).collect();
        let vector_len = if vector_dim == dims.len() { 1 } else { dims[vector_dim] };
        Ok(IndexLayout {
            dims: dims.to_vec(),
            strides: strides(dims),
            vector_dim,
            batch_dims,
            vector_len,
        })
    }

    fn batch_extents(&self) -> Vec<usize> {
        self.batch_dims.iter().map(|&d| self.dims[d]).collect()
    }

    /// The flat offsets of the index vector at batch position `batch`.
    fn vector(&self, batch: &[usize], values: &[i64], out: &mut Vec<i64>) {
        let s = &self.strides;
        let mut base = 0;
        for (k, &d) in self.batch_dims.iter().enumerate() {
            base += batch[k] * s[d];
        }
        out.clear();
        for j in 0..self.vector_len {
            let offset = if self.vector_dim == self.dims.len() {
                base
            } else {
                base + j * s[self.vector_dim]
            };
            out.push(values[offset]);
        }
    }
}

impl GatherPlan {
    pub(crate) fn new(
        operand: &ArrayShape,
        start_indices: &ArrayShape,
        numbers: &proto::GatherDimensionNumbers,
        slice_sizes: &[i64],
    ) -> Result<GatherPlan, Fail> {
        let rank = operand.dims.len();
        if !(start_indices.ty.is_signed_int() || start_indices.ty.is_unsigned_int()) {
            return Err(invalid(format!(
                "gather indices are {}, expected integers",
                start_indices.ty
            )));
        }
        let index = IndexLayout::new(&start_indices.dims, numbers.index_vector_dim)?;
        let collapsed = list(&numbers.collapsed_slice_dims, rank, "collapsed_slice_dims")?;
        let start_index_map = list(&numbers.start_index_map, rank, "start_index_map")?;
        let operand_batching_dims =
            list(&numbers.operand_batching_dims, rank, "operand_batching_dims")?;
        let indices_batching_dims = list(
            &numbers.start_indices_batching_dims,
            start_indices.dims.len(),
            "start_indices_batching_dims",
        )?;
        let slice_sizes: Vec<usize> = slice_sizes
            .iter()
            .map(|&s| usize::try_from(s).map_err(|_| invalid(format!("slice size {s}"))))
            .collect::<Result<_, _>>()?;
        if slice_sizes.len() != rank || slice_sizes.iter().zip(&operand.dims).any(|(s, d)| s > d) {
            return Err(invalid(format!(
                "slice_sizes {slice_sizes:?} do not fit operand dims {:?}",
                operand.dims
            )));
        }
        if start_index_map.len() != index.vector_len {
            return Err(invalid(format!(
                "start_index_map has {} entries, the index vector {}",
                start_index_map.len(),
                index.vector_len
            )));
        }
        if operand_batching_dims.len() != indices_batching_dims.len()
            || indices_batching_dims.contains(&index.vector_dim)
            || collapsed.iter().chain(&operand_batching_dims).any(|&d| slice_sizes[d] > 1)
        {
            return Err(invalid("gather batching or collapsed dimensions do not fit"));
        }
        let window_dims: Vec<usize> = (0..rank)
            .filter(|d| !collapsed.contains(d) && !operand_batching_dims.contains(d))
            .collect();
        let batch_extents = index.batch_extents();
        let out_rank = batch_extents.len() + window_dims.len();
        let offset_dims = list(&numbers.offset_dims, out_rank, "offset_dims")?;
        if offset_dims.len() != window_dims.len() || offset_dims.windows(2).any(|w| w[0] >= w[1]) {
            return Err(invalid(format!(
                "offset_dims {offset_dims:?} do not match the {} window dimensions",
                window_dims.len()
            )));
        }
        let mut out_dims = Vec::with_capacity(out_rank);
        let (mut b, mut w) = (0, 0);
        for d in 0..out_rank {
            if offset_dims.contains(&d) {
                out_dims.push(slice_sizes[window_dims[w]]);
                w += 1;
            } else {
                out_dims.push(batch_extents[b]);
                b += 1;
            }
        }
        Ok(GatherPlan {
            operand_dims: operand.dims.clone(),
            index,
            offset_dims,
            start_index_map,
            operand_batching_dims,
            indices_batching_dims,
            slice_sizes,
            window_dims,
            out_dims,
        })
    }

    /// Position of index-array dim `d` among the index batch dims.
    fn batch_position(&self, d: usize) -> usize {
        self.index.batch_dims.iter().position(|&x| x == d).unwrap_or(0)
    }

    pub(crate) fn run(&self, operand: &Data, start_indices: &Data) -> Result<Data, Fail> {
        let values = indices(start_indices)?;
        let n: usize = self.out_dims.iter().product();
        if n > 0 && trailing(&self.offset_dims, self.out_dims.len()) {
            return self.run_by_slices(operand, &values, n);
        }
        self.run_by_elements(operand, &values, n)
    }

    /// The gather for any dimension numbers: the operand offset of every output element in
    /// turn.
    fn run_by_elements(&self, operand: &Data, values: &[i64], n: usize) -> Result<Data, Fail> {
        let mut offsets: Vec<usize> = try_alloc(n)?;
        if n > 0 {
            let op_strides = strides(&self.operand_dims);
            let rank = self.operand_dims.len();
            let mut out_index = vec![0usize; self.out_dims.len()];
            let mut batch = Vec::new();
            let mut vector = Vec::new();
            let mut start = vec![0usize; rank];
            let mut last_batch: Option<Vec<usize>> = None;
            let mut window = Vec::new();
            loop {
                batch.clear();
                window.clear();
                for (d, &i) in out_index.iter().enumerate() {
                    if self.offset_dims.contains(&d) {
                        window.push(i);
                    } else {
                        batch.push(i);
                    }
                }
                if last_batch.as_deref() != Some(&batch[..]) {
                    self.slice_start(&batch, values, &mut vector, &mut start);
                    last_batch = Some(batch.clone());
                }
                let mut offset = 0;
                for d in 0..rank {
                    offset += start[d] * op_strides[d];
                }
                for (w, &d) in window.iter().zip(&self.window_dims) {
                    offset += w * op_strides[d];
                }
                offsets.push(offset);
                if !next_index(&mut out_index, &self.out_dims) {
                    break;
                }
            }
        }
        Ok(dispatch!(operand, v => {
            let mut out = try_alloc(offsets.len())?;
            out.extend(offsets.iter().map(|&o| v[o]));
            out
        }))
    }

    /// The operand start of the slice at index batch position `batch`, clamped so the slice
    /// fits (into `start`; `vector` is scratch for the index vector).
    fn slice_start(
        &self,
        batch: &[usize],
        values: &[i64],
        vector: &mut Vec<i64>,
        start: &mut [usize],
    ) {
        self.index.vector(batch, values, vector);
        start.iter_mut().for_each(|s| *s = 0);
        for (k, &d) in self.start_index_map.iter().enumerate() {
            let max = (self.operand_dims[d] - self.slice_sizes[d]) as i64;
            start[d] = vector[k].clamp(0, max) as usize;
        }
        for (k, &d) in self.operand_batching_dims.iter().enumerate() {
            start[d] = batch[self.batch_position(self.indices_batching_dims[k])];
        }
    }

    /// The gather when the slice dimensions are the output's last ones (as jax emits it): each
    /// index batch position's slice is one contiguous block of the output, copied run by run
    /// along the slice's innermost dimension, with the index arithmetic done once per slice.
    fn run_by_slices(&self, operand: &Data, values: &[i64], n: usize) -> Result<Data, Fail> {
        let op_strides = strides(&self.operand_dims);
        let sizes: Vec<usize> = self.window_dims.iter().map(|&d| self.slice_sizes[d]).collect();
        let runs = WindowRuns::new(&op_strides, &self.window_dims, &sizes)?;
        let batch_extents = self.index.batch_extents();
        let n_batches: usize = batch_extents.iter().product();
        let mut bases: Vec<usize> = try_alloc(n_batches)?;
        let mut batch = vec![0usize; batch_extents.len()];
        let mut vector = Vec::new();
        let mut start = vec![0usize; self.operand_dims.len()];
        for _ in 0..n_batches {
            self.slice_start(&batch, values, &mut vector, &mut start);
            bases.push(start.iter().zip(&op_strides).map(|(s, t)| s * t).sum());
            next_index(&mut batch, &batch_extents);
        }
        Ok(dispatch!(operand, v => {
            let mut out = try_alloc(n)?;
            for &base in &bases {
                for &run in &runs.starts {
                    let first = base + run;
                    if runs.stride == 1 {
                        out.extend_from_slice(&v[first..first + runs.len]);
                    } else {
                        out.extend(v[first..].iter().step_by(runs.stride).take(runs.len));
                    }
                }
            }
            out
        }))
    }
}

/// Whether `dims` (ascending) are the last `dims.len()` of `rank` dimensions.
fn trailing(dims: &[usize], rank: usize) -> bool {
    let first = rank - dims.len().min(rank);
    dims.iter().enumerate().all(|(k, &d)| d == first + k)
}

/// A window of the operand (a gather slice, a scatter update window) as runs along its innermost
/// dimension: the offset of each run's first element from the window's origin, in row-major
/// order of the window, and every run's length and stride.
struct WindowRuns {
    starts: Vec<usize>,
    len: usize,
    stride: usize,
}

impl WindowRuns {
    /// The window over operand dims `window_dims` (ascending) of `sizes` elements each.
    fn new(
        op_strides: &[usize],
        window_dims: &[usize],
        sizes: &[usize],
    ) -> Result<WindowRuns, Fail> {
        let Some((&len, outer)) = sizes.split_last() else {
            return Ok(WindowRuns { starts: vec![0], len: 1, stride: 1 });
        };
        let stride = op_strides[window_dims[window_dims.len() - 1]];
        let count: usize = if len == 0 { 0 } else { outer.iter().product() };
        let mut starts = try_alloc(count)?;
        let mut index = vec![0usize; outer.len()];
        for _ in 0..count {
            starts.push(index.iter().zip(window_dims).map(|(&i, &d)| i * op_strides[d]).sum());
            next_index(&mut index, outer);
        }
        Ok(WindowRuns { starts, len, stride })
    }
}

impl ScatterPlan {
    pub(crate) fn new(
        operand: &ArrayShape,
        scatter_indices: &ArrayShape,
        updates: &ArrayShape,
        numbers: &proto::ScatterDimensionNumbers,
        computation: usize,
    ) -> Result<ScatterPlan, Fail> {
        let rank = operand.dims.len();
        if !(scatter_indices.ty.is_signed_int() || scatter_indices.ty.is_unsigned_int()) {
            return Err(invalid(format!(
                "scatter indices are {}, expected integers",
                scatter_indices.ty
            )));
        }
        let index = IndexLayout::new(&scatter_indices.dims, numbers.index_vector_dim)?;
        let update_window_dims =
            list(&numbers.update_window_dims, updates.dims.len(), "update_window_dims")?;
        let inserted = list(&numbers.inserted_window_dims, rank, "inserted_window_dims")?;
        let scatter_dims_to_operand_dims =
            list(&numbers.scatter_dims_to_operand_dims, rank, "scatter_dims_to_operand_dims")?;
        let input_batching_dims = list(&numbers.input_batching_dims, rank, "input_batching_dims")?;
        let indices_batching_dims = list(
            &numbers.scatter_indices_batching_dims,
            scatter_indices.dims.len(),
            "scatter_indices_batching_dims",
        )?;
        let window_dims: Vec<usize> = (0..rank)
            .filter(|d| !inserted.contains(d) && !input_batching_dims.contains(d))
            .collect();
        let scatter_update_dims: Vec<usize> =
            (0..updates.dims.len()).filter(|d| !update_window_dims.contains(d)).collect();
        let batch_extents = index.batch_extents();
        let ok = scatter_dims_to_operand_dims.len() == index.vector_len
            && window_dims.len() == update_window_dims.len()
            && input_batching_dims.len() == indices_batching_dims.len()
            && scatter_update_dims.len() == batch_extents.len()
            && scatter_update_dims.iter().zip(&batch_extents).all(|(&d, &e)| updates.dims[d] == e)
            && update_window_dims
                .iter()
                .zip(&window_dims)
                .all(|(&u, &o)| updates.dims[u] <= operand.dims[o]);
        if !ok {
            return Err(invalid(format!(
                "scatter dimension numbers do not fit operand {:?}, indices {:?} and updates {:?}",
                operand.dims, scatter_indices.dims, updates.dims
            )));
        }
        Ok(ScatterPlan {
            operand_dims: operand.dims.clone(),
            update_dims: updates.dims.clone(),
            index,
            update_window_dims,
            scatter_dims_to_operand_dims,
            input_batching_dims,
            indices_batching_dims,
            window_dims,
            computation,
        })
    }

    /// For every update element (row-major), the operand offset it combines into, if in bounds.
    fn targets(&self, scatter_indices: &Data) -> Result<Vec<Option<usize>>, Fail> {
        let values = indices(scatter_indices)?;
        let n: usize = self.update_dims.iter().product();
        let mut out = try_alloc(n)?;
        if n == 0 {
            return Ok(out);
        }
        if trailing(&self.update_window_dims, self.update_dims.len()) {
            self.targets_by_windows(&values, &mut out)?;
        } else {
            self.targets_by_elements(&values, &mut out);
        }
        Ok(out)
    }

    /// [`Self::targets`] for any dimension numbers, element by element.
    fn targets_by_elements(&self, values: &[i64], out: &mut Vec<Option<usize>>) {
        let rank = self.operand_dims.len();
        let op_strides = strides(&self.operand_dims);
        let mut u = vec![0usize; self.update_dims.len()];
        let mut batch = Vec::new();
        let mut window = Vec::new();
        let mut vector = Vec::new();
        let mut start = vec![0i64; rank];
        loop {
            batch.clear();
            window.clear();
            for (d, &i) in u.iter().enumerate() {
                if self.update_window_dims.contains(&d) {
                    window.push(i);
                } else {
                    batch.push(i);
                }
            }
            let fits = self.window_start(&batch, values, &mut vector, &mut start);
            if fits {
                let mut offset = 0usize;
                for d in 0..rank {
                    offset += start[d] as usize * op_strides[d];
                }
                for (w, &d) in window.iter().zip(&self.window_dims) {
                    offset += w * op_strides[d];
                }
                out.push(Some(offset));
            } else {
                out.push(None);
            }
            if !next_index(&mut u, &self.update_dims) {
                break;
            }
        }
    }

    /// The operand start of the update window at index batch position `batch` (into `start`;
    /// `vector` is scratch), and whether the whole window fits there.
    fn window_start(
        &self,
        batch: &[usize],
        values: &[i64],
        vector: &mut Vec<i64>,
        start: &mut [i64],
    ) -> bool {
        self.index.vector(batch, values, vector);
        start.iter_mut().for_each(|s| *s = 0);
        for (k, &d) in self.scatter_dims_to_operand_dims.iter().enumerate() {
            start[d] = vector[k];
        }
        for (k, &d) in self.input_batching_dims.iter().enumerate() {
            let position = self
                .index
                .batch_dims
                .iter()
                .position(|&x| x == self.indices_batching_dims[k])
                .unwrap_or(0);
            start[d] = batch[position] as i64;
        }
        let mut fits = true;
        for (k, &d) in self.window_dims.iter().enumerate() {
            let size = self.update_dims[self.update_window_dims[k]] as i64;
            if start[d] < 0 || start[d] + size > self.operand_dims[d] as i64 {
                fits = false;
            }
        }
        for (d, &s) in start.iter().enumerate() {
            if !self.window_dims.contains(&d) && (s < 0 || s >= self.operand_dims[d] as i64) {
                fits = false;
            }
        }
        fits
    }

    /// [`Self::targets`] when the window dimensions are the updates' last ones (as jax emits
    /// them): the updates are one window after another, so the start and the bounds check are
    /// worked out once per window and its elements' targets follow run by run.
    fn targets_by_windows(&self, values: &[i64], out: &mut Vec<Option<usize>>) -> Result<(), Fail> {
        let op_strides = strides(&self.operand_dims);
        let sizes: Vec<usize> =
            self.update_window_dims.iter().map(|&d| self.update_dims[d]).collect();
        let runs = WindowRuns::new(&op_strides, &self.window_dims, &sizes)?;
        let window_elems: usize = sizes.iter().product();
        let batch_extents = self.index.batch_extents();
        let n_batches: usize = batch_extents.iter().product();
        let mut batch = vec![0usize; batch_extents.len()];
        let mut vector = Vec::new();
        let mut start = vec![0i64; self.operand_dims.len()];
        for _ in 0..n_batches {
            if self.window_start(&batch, values, &mut vector, &mut start) {
                let base: usize =
                    start.iter().zip(&op_strides).map(|(&s, &t)| s as usize * t).sum();
                for &run in &runs.starts {
                    let first = base + run;
                    out.extend((0..runs.len).map(|j| Some(first + j * runs.stride)));
                }
            } else {
                out.extend(std::iter::repeat_n(None, window_elems));
            }
            next_index(&mut batch, &batch_extents);
        }
        Ok(())
    }

    pub(crate) fn run(
        &self,
        ctx: &impl Subcomputations,
        operands: &[&Arc<Tensor>],
        scatter_indices: &Data,
        updates: &[&Arc<Tensor>],
    ) -> Result<Vec<Data>, Fail> {
        let targets = self.targets(scatter_indices)?;
        let comp = ctx.computation(self.computation);
        if operands.len() == 1 {
            let reducer = comp.reducer;
            macro_rules! apply {
                ($f:expr) => {
                    super::tensor::dispatch2!(&operands[0].data, &updates[0].data, dst, src => {
                        let mut out = try_alloc(dst.len())?;
                        out.extend_from_slice(dst);
                        for (s, t) in targets.iter().enumerate() {
                            if let Some(t) = *t {
                                out[t] = $f(out[t], src[s]);
                            }
                        }
                        out
                    })
                };
            }
            if reducer == Some(Reducer::Replace) {
                return Ok(vec![apply!(|_, b| b)?]);
            }
            if let Some(Reducer::Binary(op)) = reducer
                && matches!(operands[0].data, Data::F32(_) | Data::F64(_) | Data::S32(_))
            {
                let out = elementwise_fold(op, &operands[0].data, &updates[0].data, &targets)?;
                return Ok(vec![out]);
            }
        }
        // General path: one computation call per update element.
        let n_elems = operands[0].n_elems();
        let mut current: Vec<Vec<Data>> = Vec::with_capacity(operands.len());
        for t in operands {
            let mut column = Vec::new();
            column
                .try_reserve_exact(n_elems)
                .map_err(|_| Fail::Alloc { bytes: n_elems as u64 * 16 })?;
            column.extend((0..n_elems).map(|i| element(&t.data, i)));
            current.push(column);
        }
        for (s, t) in targets.iter().enumerate() {
            let Some(t) = *t else { continue };
            let mut args: Vec<Data> = current.iter().map(|c| c[t].clone()).collect();
            args.extend(updates.iter().map(|u| element(&u.data, s)));
            let out = ctx.apply_scalars(self.computation, &args)?;
            for (c, v) in current.iter_mut().zip(out) {
                c[t] = v;
            }
        }
        current.iter().zip(operands).map(|(c, t)| gather_scalars(t.ty(), c)).collect()
    }
}

fn elementwise_fold(
    op: super::scalar::Binary,
    dst: &Data,
    src: &Data,
    targets: &[Option<usize>],
) -> Result<Data, Fail> {
    use super::scalar::{Float, Int};
    macro_rules! fold {
        ($variant:ident, $d:expr, $s:expr, $f:expr) => {{
            let mut out = try_alloc($d.len())?;
            out.extend_from_slice($d);
            for (i, t) in targets.iter().enumerate() {
                if let Some(t) = *t {
                    out[t] = $f(out[t], $s[i]);
                }
            }
            Data::$variant(out)
        }};
    }
    Ok(match (dst, src) {
        (Data::F32(d), Data::F32(s)) => fold!(F32, d, s, |a, b| f32::binary(op, a, b)),
        (Data::F64(d), Data::F64(s)) => fold!(F64, d, s, |a, b| f64::binary(op, a, b)),
        (Data::S32(d), Data::S32(s)) => fold!(S32, d, s, |a, b| i32::binary(op, a, b)),
        _ => return Err(Fail::Internal("scatter fast path type".into())),
    })
}

// Compiling: the shape checks and attribute decoding for this family.

/// Shape checks and attribute decoding for `gather` and `scatter`.
pub(crate) fn compile_gather(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    Ok(match cx.ins.opcode.as_str() {
        "gather" => {
            cx.arity(operands, 2)?;
            let numbers = ins
                .gather_dimension_numbers
                .as_ref()
                .ok_or_else(|| invalid("gather has no gather_dimension_numbers"))?;
            let plan = GatherPlan::new(
                operands[0].array()?,
                operands[1].array()?,
                numbers,
                &ins.gather_slice_sizes,
            )?;
            cx.expect(
                shape,
                &Shape::Array(ArrayShape {
                    ty: operands[0].array()?.ty,
                    dims: plan.out_dims.clone(),
                    layout: None,
                }),
            )?;
            Op::Gather(Box::new(plan))
        }
        "scatter" => {
            let computation = cx.callee(ins, 0)?;
            if operands.len() < 3 || !(operands.len() - 1).is_multiple_of(2) {
                return Err(invalid(format!(
                    "scatter needs operands, indices and updates, got {} operands",
                    operands.len()
                )));
            }
            let n = (operands.len() - 1) / 2;
            let numbers = ins
                .scatter_dimension_numbers
                .as_ref()
                .ok_or_else(|| invalid("scatter has no scatter_dimension_numbers"))?;
            let plan = ScatterPlan::new(
                operands[0].array()?,
                operands[n].array()?,
                operands[n + 1].array()?,
                numbers,
                computation,
            )?;
            let mut types = Vec::new();
            for i in 0..n {
                let a = operands[i].array()?;
                let u = operands[n + 1 + i].array()?;
                if a.dims != operands[0].array()?.dims
                    || u.dims != operands[n + 1].array()?.dims
                    || u.ty != a.ty
                {
                    return Err(invalid("scatter operands and updates do not fit each other"));
                }
                types.push(a.ty);
            }
            cx.scalar_computation(computation, 2 * n, &types)?;
            cx.check_scalar_result(computation, &types)?;
            let inferred = if n == 1 {
                operands[0].clone()
            } else {
                Shape::Tuple(operands[..n].iter().map(|s| (*s).clone()).collect())
            };
            cx.expect(shape, &inferred)?;
            Op::Scatter(Box::new(plan))
        }
        other => return Err(Fail::Internal(format!("opcode {other} is not compile_gather's"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::ElementType;

    fn shape(ty: ElementType, dims: &[usize]) -> ArrayShape {
        ArrayShape { ty, dims: dims.to_vec(), layout: None }
    }

    fn gather_plan(
        operand: &[usize],
        indices: &[usize],
        offset_dims: &[i64],
        collapsed: &[i64],
        start_index_map: &[i64],
        slice_sizes: &[i64],
    ) -> GatherPlan {
        let numbers = proto::GatherDimensionNumbers {
            offset_dims: offset_dims.to_vec(),
            collapsed_slice_dims: collapsed.to_vec(),
            start_index_map: start_index_map.to_vec(),
            index_vector_dim: 1,
            ..Default::default()
        };
        let (operand, indices) =
            (shape(ElementType::F32, operand), shape(ElementType::S32, indices));
        GatherPlan::new(&operand, &indices, &numbers, slice_sizes).expect("valid gather")
    }

    /// Runs `plan` both ways (slice by slice, element by element) and checks they agree.
    fn gather_both_ways(plan: &GatherPlan, operand: &[f32], ids: &[i32]) -> Vec<f32> {
        let (operand, ids) = (Data::F32(operand.to_vec()), Data::S32(ids.to_vec()));
        let fast = plan.run(&operand, &ids).expect("gathers");
        let values = indices(&ids).expect("integers");
        let n = plan.out_dims.iter().product();
        let slow = plan.run_by_elements(&operand, &values, n).expect("gathers");
        let (Data::F32(fast), Data::F32(slow)) = (fast, slow) else { panic!("f32 in, f32 out") };
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast), bits(&slow), "slice by slice and element by element differ");
        fast
    }

    #[test]
    fn row_gather_clamps_out_of_range_starts() {
        // table[ids] for a 5×4 table: -3 clamps to row 0 and 7 to row 4 (XLA clamps the start
        // so the slice fits); the repeated 2 is copied twice.
        let table: Vec<f32> = (0..20).map(|x| x as f32).collect();
        let plan = gather_plan(&[5, 4], &[6, 1], &[1], &[0], &[0], &[1, 4]);
        let got = gather_both_ways(&plan, &table, &[0, 4, -3, 7, 2, 2]);
        let row = |r: usize| (4 * r..4 * r + 4).map(|x| x as f32).collect::<Vec<_>>();
        let want: Vec<f32> = [0, 4, 0, 4, 2, 2].iter().flat_map(|&r| row(r)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn block_and_column_gathers_equal_the_element_loop() {
        let table: Vec<f32> = (0..20).map(|x| x as f32 * 0.5 - 3.0).collect();
        // 2×3 blocks (several runs per slice), starts clamped on both axes.
        let plan = gather_plan(&[5, 4], &[3, 2], &[1, 2], &[], &[0, 1], &[2, 3]);
        let got = gather_both_ways(&plan, &table, &[4, 3, -1, 1, 1, 0]);
        assert_eq!(&got[..6], &[3.5, 4.0, 4.5, 5.5, 6.0, 6.5]);
        // Whole columns: the run goes down the operand, a row apart.
        let plan = gather_plan(&[5, 4], &[3, 1], &[1], &[1], &[1], &[5, 1]);
        let got = gather_both_ways(&plan, &table, &[3, 0, 9]);
        assert_eq!(&got[..5], &[-1.5, 0.5, 2.5, 4.5, 6.5]);
        // One element.
        let plan = gather_plan(&[1, 1], &[1, 1], &[1], &[0], &[0], &[1, 1]);
        assert_eq!(gather_both_ways(&plan, &[f32::NAN], &[5])[0].to_bits(), f32::NAN.to_bits());
    }

    #[test]
    fn gather_of_no_indices_is_empty() {
        let plan = gather_plan(&[5, 4], &[0, 1], &[1], &[0], &[0], &[1, 4]);
        let got = plan.run(&Data::F32(vec![0.0; 20]), &Data::S32(Vec::new())).expect("gathers");
        assert_eq!(got, Data::F32(Vec::new()));
    }

    fn scatter_plan(
        operand: &[usize],
        indices: &[usize],
        updates: &[usize],
        update_window_dims: &[i64],
        inserted: &[i64],
    ) -> ScatterPlan {
        let numbers = proto::ScatterDimensionNumbers {
            update_window_dims: update_window_dims.to_vec(),
            inserted_window_dims: inserted.to_vec(),
            scatter_dims_to_operand_dims: vec![0],
            index_vector_dim: 1,
            ..Default::default()
        };
        let f32s = |dims| shape(ElementType::F32, dims);
        let indices = shape(ElementType::S32, indices);
        ScatterPlan::new(&f32s(operand), &indices, &f32s(updates), &numbers, 0)
            .expect("valid scatter")
    }

    /// The targets both ways (window by window, element by element), checked to agree.
    fn targets_both_ways(plan: &ScatterPlan, ids: &[i32]) -> Vec<Option<usize>> {
        let ids = Data::S32(ids.to_vec());
        let fast = plan.targets(&ids).expect("targets");
        let values = indices(&ids).expect("integers");
        let mut slow = Vec::new();
        if !fast.is_empty() {
            plan.targets_by_elements(&values, &mut slow);
        }
        assert_eq!(fast, slow, "window by window and element by element differ");
        fast
    }

    #[test]
    fn row_scatter_skips_out_of_range_rows_and_keeps_duplicates() {
        // acc.at[ids].add(u) on a 4×3 operand: rows 4 and -1 are out of range and skipped (no
        // clamping for scatter); row 1 is hit twice, by updates 0 and 2 in that order.
        let plan = scatter_plan(&[4, 3], &[5, 1], &[5, 3], &[1], &[0]);
        let got = targets_both_ways(&plan, &[1, 3, 1, 4, -1]);
        let row = |r: usize| (3 * r..3 * r + 3).map(Some).collect::<Vec<_>>();
        let want: Vec<Option<usize>> =
            [row(1), row(3), row(1), vec![None; 3], vec![None; 3]].concat();
        assert_eq!(got, want);
        let folded = elementwise_fold(
            super::super::scalar::Binary::Add,
            &Data::F32(vec![0.5; 12]),
            &Data::F32((1..=15).map(|x| x as f32).collect()),
            &got,
        )
        .expect("folds");
        let want = [0.5, 0.5, 0.5, 8.5, 10.5, 12.5, 0.5, 0.5, 0.5, 4.5, 5.5, 6.5];
        assert_eq!(folded, Data::F32(want.to_vec()));
    }

    #[test]
    fn block_scatter_needs_the_whole_window_in_bounds() {
        // 2×3 windows into a 4×3 operand: a start of 2 fits, 3 would run past the end, -1
        // before the start; both are skipped whole.
        let plan = scatter_plan(&[4, 3], &[3, 1], &[3, 2, 3], &[1, 2], &[]);
        let got = targets_both_ways(&plan, &[2, 3, -1]);
        let mut want: Vec<Option<usize>> = (6..12).map(Some).collect();
        want.extend([None; 12]);
        assert_eq!(got, want);
        // No updates at all.
        let plan = scatter_plan(&[4, 3], &[0, 1], &[0, 3], &[1], &[0]);
        assert!(targets_both_ways(&plan, &[]).is_empty());
    }
}

//! `convolution` of any spatial rank, by im2col and gemm.
//!
//! Design choices:
//! - Input, kernel and output are brought to canonical orders `[N, C, S…]`, `[O, I, K…]` and
//!   `[N, O, P…]` by transposes, whatever the dimension labels say.
//! - For each output batch and group, im2col builds a `(I·ΠK) × ΠP` matrix whose column `p`
//!   holds the input elements under the window at output position `p` (zero where the window
//!   falls in padding or between dilated input elements, reversed where the window says so);
//!   the group's kernel rows times that matrix is the group's output, one gemm.
//! - Feature groups split input channels and output features; batch groups split the input
//!   batch and output features (XLA: output feature group `g` reads input batch
//!   `g · (N / batch_group_count) + n`).

use super::dot::{
    Floats, compute_type, gemm_f32, gemm_f64, gemm_floats_or_widen, round_result, threads_for,
};
use super::elementwise::convert;
use super::error::Fail;
use super::op_context::{OpContext, invalid};
use super::packed_gemm::{
    self, Bf16Bits, F8Bits, F16Bits, Kernel, Source, TakeRow, chosen, f8_values, widen_each_row,
    zero_f32,
};
use super::plan::Op;
use super::plan::{ConvPlan, SpatialDim};
use super::shape::{ArrayShape, check_budget, describe_array};
use super::shape_ops::transpose;
use super::tensor::{Data, filled, next_index};
use crate::dtype::ElementType;
use crate::proto;

fn dim(value: i64, rank: usize, what: &str) -> Result<usize, Fail> {
    usize::try_from(value)
        .ok()
        .filter(|&d| d < rank)
        .ok_or_else(|| invalid(format!("{what} {value} is not a dimension below rank {rank}")))
}

fn permutation(dims: Vec<usize>, rank: usize, what: &str) -> Result<Vec<usize>, Fail> {
    let mut seen = vec![false; rank];
    for &d in &dims {
        if seen[d] {
            return Err(invalid(format!("{what} dimensions {dims:?} repeat a dimension")));
        }
        seen[d] = true;
    }
    if dims.len() != rank {
        return Err(invalid(format!("{what} dimensions {dims:?} do not cover rank {rank}")));
    }
    Ok(dims)
}

impl ConvPlan {
    /// The multiply-adds of one convolution with `out_elems` output elements (saturating), for
    /// the work budget: each output element sums over the kernel's input features and window.
    pub(crate) fn multiply_adds(&self, out_elems: u64) -> u64 {
        self.spatial.iter().fold(out_elems.saturating_mul(self.kernel_in as u64), |n, s| {
            n.saturating_mul(s.kernel.max(1) as u64)
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        input: &ArrayShape,
        kernel: &ArrayShape,
        numbers: &proto::ConvolutionDimensionNumbers,
        window: &proto::Window,
        feature_groups: i64,
        batch_groups: i64,
        out: &ArrayShape,
        budget: u64,
    ) -> Result<ConvPlan, Fail> {
        let rank = input.dims.len();
        if kernel.dims.len() != rank || out.dims.len() != rank || rank < 2 {
            return Err(invalid(format!(
                "convolution of ranks {}, {} into {} (all must be equal and at least 2)",
                rank,
                kernel.dims.len(),
                out.dims.len()
            )));
        }
        let n_spatial = rank - 2;
        let spatial_list = |values: &[i64], what: &str| -> Result<Vec<usize>, Fail> {
            if values.len() != n_spatial {
                return Err(invalid(format!(
                    "{what} has {} dimensions, expected {n_spatial}",
                    values.len()
                )));
            }
            values.iter().map(|&v| dim(v, rank, what)).collect()
        };
        let is = spatial_list(&numbers.input_spatial_dimensions, "input_spatial_dimensions")?;
        let ks = spatial_list(&numbers.kernel_spatial_dimensions, "kernel_spatial_dimensions")?;
        let os = spatial_list(&numbers.output_spatial_dimensions, "output_spatial_dimensions")?;
        let mut input_perm = vec![
            dim(numbers.input_batch_dimension, rank, "input_batch_dimension")?,
            dim(numbers.input_feature_dimension, rank, "input_feature_dimension")?,
        ];
        input_perm.extend(&is);
        let input_perm = permutation(input_perm, rank, "input")?;
        let mut kernel_perm = vec![
            dim(numbers.kernel_output_feature_dimension, rank, "kernel_output_feature_dimension")?,
            dim(numbers.kernel_input_feature_dimension, rank, "kernel_input_feature_dimension")?,
        ];
        kernel_perm.extend(&ks);
        let kernel_perm = permutation(kernel_perm, rank, "kernel")?;
        let mut canonical_of_output = vec![
            dim(numbers.output_batch_dimension, rank, "output_batch_dimension")?,
            dim(numbers.output_feature_dimension, rank, "output_feature_dimension")?,
        ];
        canonical_of_output.extend(&os);
        let canonical_of_output = permutation(canonical_of_output, rank, "output")?;
        let mut output_perm = vec![0; rank];
        for (c, &d) in canonical_of_output.iter().enumerate() {
            output_perm[d] = c;
        }
        let (fg, bg) = (
            usize::try_from(feature_groups).map_err(|_| invalid("feature_group_count"))?,
            usize::try_from(batch_groups).map_err(|_| invalid("batch_group_count"))?,
        );
        let batch = input.dims[input_perm[0]];
        let channels = input.dims[input_perm[1]];
        let out_features = kernel.dims[kernel_perm[0]];
        let kernel_in = kernel.dims[kernel_perm[1]];
        let groups_ok = fg >= 1
            && bg >= 1
            && (fg == 1 || bg == 1)
            && channels == kernel_in * fg
            && out_features.is_multiple_of(fg * bg)
            && batch.is_multiple_of(bg);
        if !groups_ok {
            return Err(invalid(format!(
                "input of {batch} batch and {channels} features, kernel of {kernel_in} input and {out_features} output features do not fit feature_group_count {fg} and batch_group_count {bg}"
            )));
        }
        if window.dimensions.len() != n_spatial {
            return Err(invalid(format!(
                "window has {} dimensions, expected {n_spatial}",
                window.dimensions.len()
            )));
        }
        let mut spatial = Vec::new();
        let mut out_dims = vec![batch / bg, out_features];
        for (i, w) in window.dimensions.iter().enumerate() {
            let positive = |v: i64, what: &str| -> Result<usize, Fail> {
                let v = if v == 0 { 1 } else { v };
                usize::try_from(v)
                    .ok()
                    .filter(|&v| v >= 1)
                    .ok_or_else(|| invalid(format!("window {what} {v} must be at least 1")))
            };
            let k = kernel.dims[ks[i]];
            if w.size != k as i64 {
                return Err(invalid(format!(
                    "window size {} differs from kernel spatial size {k}",
                    w.size
                )));
            }
            let s = SpatialDim {
                input: input.dims[is[i]],
                kernel: k,
                output: 0,
                stride: positive(w.stride, "stride")?,
                pad_low: w.padding_low,
                base_dilation: positive(w.base_dilation, "base_dilation")?,
                window_dilation: positive(w.window_dilation, "window_dilation")?,
                reversal: w.window_reversal,
            };
            let dilated_input =
                if s.input == 0 { 0 } else { (s.input as i128 - 1) * s.base_dilation as i128 + 1 };
            let padded = dilated_input + i128::from(w.padding_low) + i128::from(w.padding_high);
            let dilated_kernel =
                if k == 0 { 0 } else { (k as i128 - 1) * s.window_dilation as i128 + 1 };
            let size = if padded < dilated_kernel {
                0
            } else {
                (padded - dilated_kernel) / s.stride as i128 + 1
            };
            let size = usize::try_from(size)
                .map_err(|_| invalid(format!("window dimension {i} gives size {size}")))?;
            out_dims.push(size);
            spatial.push(SpatialDim { output: size, ..s });
        }
        let actual: Vec<usize> = output_perm.iter().map(|&c| out_dims[c]).collect();
        if actual != out.dims {
            return Err(invalid(format!(
                "shape is {}, but the operands give {}",
                describe_array(out.ty, &out.dims),
                describe_array(out.ty, &actual)
            )));
        }
        let plan = ConvPlan {
            input_dims: input.dims.clone(),
            kernel_dims: kernel.dims.clone(),
            input_perm,
            kernel_perm,
            output_perm,
            batch,
            channels,
            out_features,
            kernel_in,
            feature_groups: fg,
            batch_groups: bg,
            spatial,
        };
        check_budget(plan.scratch_bytes(), budget)?;
        Ok(plan)
    }

    /// Bytes of the im2col matrix (in f64, the widest compute type).
    fn scratch_bytes(&self) -> Option<u64> {
        let rows = self
            .spatial
            .iter()
            .try_fold(self.kernel_in as u64, |n, s| n.checked_mul(s.kernel as u64))?;
        let cols = self.spatial.iter().try_fold(1u64, |n, s| n.checked_mul(s.output as u64))?;
        rows.checked_mul(cols)?.checked_mul(8)
    }

    pub(crate) fn run(
        &self,
        input: &Data,
        kernel: &Data,
        out_ty: ElementType,
        _budget: u64,
    ) -> Result<Data, Fail> {
        let arrange = |data: &Data, dims: &[usize], perm: &[usize]| -> Result<Option<Data>, Fail> {
            if perm.iter().enumerate().all(|(i, &p)| i == p) {
                Ok(None)
            } else {
                transpose(data, dims, perm).map(Some)
            }
        };
        let input_t = arrange(input, &self.input_dims, &self.input_perm)?;
        let kernel_t = arrange(kernel, &self.kernel_dims, &self.kernel_perm)?;
        let input = input_t.as_ref().unwrap_or(input);
        let kernel = kernel_t.as_ref().unwrap_or(kernel);
        let canonical = match (compute_type(input.ty(), kernel.ty(), out_ty), Floats::of(input)) {
            // Narrow floats: im2col in their own type, widened by the gemm's packing.
            (ElementType::F32, Some(Floats::Bf16(x))) if kernel.ty() == input.ty() => {
                let Data::Bf16(w) = kernel else { return Err(Fail::Internal("bf16".into())) };
                match self.compute_direct(x, w, Bf16Bits, Bf16Bits, chosen())? {
                    Some(out) => Data::F32(out),
                    None => Data::F32(self.compute(x, w, |a, b, c, m, k, n| {
                        gemm_floats_or_widen(Floats::Bf16(a), Floats::Bf16(b), c, m, k, n)
                    })?),
                }
            }
            (ElementType::F32, Some(Floats::F16(x))) if kernel.ty() == input.ty() => {
                let Data::F16(w) = kernel else { return Err(Fail::Internal("f16".into())) };
                match self.compute_direct(x, w, F16Bits, F16Bits, chosen())? {
                    Some(out) => Data::F32(out),
                    None => Data::F32(self.compute(x, w, |a, b, c, m, k, n| {
                        gemm_floats_or_widen(Floats::F16(a), Floats::F16(b), c, m, k, n)
                    })?),
                }
            }
            (ElementType::F32, Some(Floats::F8(x, x_format))) => match Floats::of(kernel) {
                Some(Floats::F8(w, w_format)) => {
                    let (x_values, w_values) = (f8_values(x_format), f8_values(w_format));
                    let direct = self.compute_direct(
                        x,
                        w,
                        |bits| F8Bits { bits, values: x_values },
                        |bits| F8Bits { bits, values: w_values },
                        chosen(),
                    )?;
                    if let Some(out) = direct {
                        return self.finish(Data::F32(out), out_ty);
                    }
                    Data::F32(self.compute(x, w, |a, b, c, m, k, n| {
                        gemm_floats_or_widen(
                            Floats::F8(a, x_format),
                            Floats::F8(b, w_format),
                            c,
                            m,
                            k,
                            n,
                        )
                    })?)
                }
                _ => Data::F32(self.widened_f32(input, kernel)?),
            },
            (ElementType::F32, _) => Data::F32(self.widened_f32(input, kernel)?),
            _ => {
                let (x, w) =
                    (widen_to(input, ElementType::F64)?, widen_to(kernel, ElementType::F64)?);
                let (Data::F64(x), Data::F64(w)) =
                    (x.as_ref().unwrap_or(input), w.as_ref().unwrap_or(kernel))
                else {
                    return Err(Fail::Internal("f64 conversion".into()));
                };
                Data::F64(self.compute(x, w, |a, b, c, m, k, n| {
                    gemm_f64(a, b, c, m, k, n);
                    Ok(())
                })?)
            }
        };
        self.finish(canonical, out_ty)
    }

    /// The canonical `[N, O, P…]` result in the instruction's order and type.
    fn finish(&self, canonical: Data, out_ty: ElementType) -> Result<Data, Fail> {
        let arrange = |data: &Data, dims: &[usize], perm: &[usize]| -> Result<Option<Data>, Fail> {
            if perm.iter().enumerate().all(|(i, &p)| i == p) {
                Ok(None)
            } else {
                transpose(data, dims, perm).map(Some)
            }
        };
        let mut canonical_dims = vec![self.batch / self.batch_groups, self.out_features];
        canonical_dims.extend(self.spatial.iter().map(|s| s.output));
        let arranged =
            arrange(&canonical, &canonical_dims, &self.output_perm)?.unwrap_or(canonical);
        round_result(arranged, out_ty)
    }

    /// The convolution of f32 operands, or of others widened to f32 first (mixed types).
    fn widened_f32(&self, input: &Data, kernel: &Data) -> Result<Vec<f32>, Fail> {
        let (x, w) = (widen_to(input, ElementType::F32)?, widen_to(kernel, ElementType::F32)?);
        let (Data::F32(x), Data::F32(w)) =
            (x.as_ref().unwrap_or(input), w.as_ref().unwrap_or(kernel))
        else {
            return Err(Fail::Internal("f32 conversion".into()));
        };
        let kernel = chosen();
        // Without a SIMD kernel, f32 is faster through the matrix and matrixmultiply.
        if kernel != Kernel::Portable
            && let Some(out) = self.compute_direct(x, w, same, same, kernel)?
        {
            return Ok(out);
        }
        self.compute(x, w, |a, b, c, m, k, n| {
            gemm_f32(a, b, c, m, k, n);
            Ok(())
        })
    }

    /// The convolution without an im2col matrix: per batch and group, the packed gemm of the
    /// weights with an [`Im2col`] source, which its packing reads panel by panel from the image.
    /// `None` when the spatial rank is above [`MAX_DIRECT_RANK`] or the gemm declines (no packing
    /// buffer); the caller then builds the matrix.
    fn compute_direct<'x, T: Sync, A: Source, B: Source>(
        &self,
        x: &'x [T],
        w: &'x [T],
        x_source: impl Fn(&'x [T]) -> A,
        w_source: impl Fn(&'x [T]) -> B,
        kernel: Kernel,
    ) -> Result<Option<Vec<f32>>, Fail> {
        let Some(taps) = Taps::new(&self.spatial, self.kernel_in)? else { return Ok(None) };
        let in_spatial = taps.in_spatial;
        let (rows, positions) = (taps.rows, taps.positions);
        let out_batch = self.batch / self.batch_groups;
        let groups = self.feature_groups * self.batch_groups;
        let group_features = self.out_features / groups;
        let mut out = filled(out_batch * self.out_features * positions, 0.0f32)?;
        let threads = threads_for(group_features * rows * positions, positions / 16);
        for n in 0..out_batch {
            for g in 0..groups {
                let (input_batch, channel_start) = if self.batch_groups > 1 {
                    (g * out_batch + n, 0)
                } else {
                    (n, g * self.kernel_in)
                };
                let image = &x[(input_batch * self.channels + channel_start) * in_spatial..]
                    [..self.kernel_in * in_spatial];
                let columns = Im2col { image: x_source(image), taps: &taps };
                let feature_start = g * group_features;
                let weights =
                    w_source(&w[feature_start * rows..(feature_start + group_features) * rows]);
                let at = (n * self.out_features + feature_start) * positions;
                let product = &mut out[at..at + group_features * positions];
                let dims = (group_features, rows, positions);
                if !packed_gemm::gemm(kernel, weights, columns, product, dims, threads) {
                    return Ok(None);
                }
            }
        }
        Ok(Some(out))
    }

    /// Im2col per batch and group, in the operands' type `T`, and `gemm` into `O`.
    fn compute<T: Copy + Default + Send + Sync, O: Copy + Default>(
        &self,
        x: &[T],
        w: &[T],
        gemm: impl Fn(&[T], &[T], &mut [O], usize, usize, usize) -> Result<(), Fail>,
    ) -> Result<Vec<O>, Fail> {
        let in_spatial: usize = self.spatial.iter().map(|s| s.input).product();
        let k_spatial: usize = self.spatial.iter().map(|s| s.kernel).product();
        let positions: usize = self.spatial.iter().map(|s| s.output).product();
        let rows = self.kernel_in * k_spatial;
        let out_batch = self.batch / self.batch_groups;
        let groups = self.feature_groups * self.batch_groups;
        let group_features = self.out_features / groups;
        let mut out = filled(out_batch * self.out_features * positions, O::default())?;
        let mut cols = filled(rows * positions, T::default())?;
        for n in 0..out_batch {
            for g in 0..groups {
                let (input_batch, channel_start) = if self.batch_groups > 1 {
                    (g * out_batch + n, 0)
                } else {
                    (n, g * self.kernel_in)
                };
                let image = &x[(input_batch * self.channels + channel_start) * in_spatial..]
                    [..self.kernel_in * in_spatial];
                self.im2col(image, &mut cols);
                let feature_start = g * group_features;
                let weights = &w[feature_start * rows..(feature_start + group_features) * rows];
                // The group's features are contiguous in `out`: the gemm writes there directly.
                let at = (n * self.out_features + feature_start) * positions;
                let product = &mut out[at..at + group_features * positions];
                gemm(weights, &cols, product, group_features, rows, positions)?;
            }
        }
        Ok(out)
    }

    /// Fills `cols[(c, k…) × p]` from one image `[I, S…]`, rows split over the cores when the
    /// matrix is large.
    fn im2col<T: Copy + Default + Send + Sync>(&self, image: &[T], cols: &mut [T]) {
        let positions: usize = self.spatial.iter().map(|s| s.output).product();
        if positions == 0 || cols.is_empty() {
            return;
        }
        let rows = cols.len() / positions;
        let threads = if cols.len() < 1 << 18 { 1 } else { super::par::cores().min(rows).min(8) };
        if threads <= 1 {
            for (row, dst) in cols.chunks_mut(positions).enumerate() {
                self.fill_row(image, row, dst);
            }
            return;
        }
        let per_part = super::par::per_part(rows, threads, 1);
        super::par::each(cols.chunks_mut(per_part * positions).enumerate(), |(t, chunk)| {
            for (i, dst) in chunk.chunks_mut(positions).enumerate() {
                self.fill_row(image, t * per_part + i, dst);
            }
        });
    }

    /// Row `row` = (input channel c, kernel position k…) of the im2col matrix: for every output
    /// position, the input element under that kernel tap, or zero in padding and dilation holes.
    fn fill_row<T: Copy + Default>(&self, image: &[T], row: usize, dst: &mut [T]) {
        let d = self.spatial.len();
        let k_spatial: usize = self.spatial.iter().map(|s| s.kernel).product();
        let in_spatial: usize = self.spatial.iter().map(|s| s.input).product();
        let c = row / k_spatial.max(1);
        let mut rest = row % k_spatial.max(1);
        let mut kk = vec![0usize; d];
        for i in (0..d).rev() {
            kk[i] = rest % self.spatial[i].kernel.max(1);
            rest /= self.spatial[i].kernel.max(1);
        }
        let channel = &image[c * in_spatial..(c + 1) * in_spatial];
        if d == 0 {
            dst[0] = channel[0];
            return;
        }
        let in_dims: Vec<usize> = self.spatial.iter().map(|s| s.input).collect();
        let in_strides = super::tensor::strides(&in_dims);
        // Per dimension: the input coordinate for each output coordinate, or None.
        let coords: Vec<Vec<Option<usize>>> = (0..d)
            .map(|i| {
                let s = &self.spatial[i];
                let k = if s.reversal { s.kernel - 1 - kk[i] } else { kk[i] };
                (0..s.output)
                    .map(|o| {
                        let pos = (o * s.stride + k * s.window_dilation) as i64 - s.pad_low;
                        if pos < 0 || pos % s.base_dilation as i64 != 0 {
                            return None;
                        }
                        let q = (pos / s.base_dilation as i64) as usize;
                        (q < s.input).then_some(q)
                    })
                    .collect()
            })
            .collect();
        // The innermost dimension as (first valid output, count, first input, input step) when
        // it is a plain strided run, which is the common case (no base dilation).
        let inner = &coords[d - 1];
        // When the valid outputs of the innermost dimension read consecutive inputs (stride 1,
        // no base dilation: the usual case), that run is one slice copy between zero edges.
        let valid = inner.iter().position(Option::is_some).map(|lo| {
            let hi = inner.iter().rposition(Option::is_some).map_or(lo, |h| h + 1);
            let first = inner[lo].unwrap_or(0);
            let consecutive = inner[lo..hi].iter().enumerate().all(|(i, q)| *q == Some(first + i));
            (lo, hi, first, consecutive)
        });
        let p_dims: Vec<usize> = self.spatial.iter().map(|s| s.output).collect();
        let inner_len = p_dims[d - 1];
        let mut pp = vec![0usize; d - 1];
        let mut at = 0;
        loop {
            let mut base = Some(0usize);
            for (i, &p) in pp.iter().enumerate() {
                base = match (base, coords[i][p]) {
                    (Some(b), Some(q)) => Some(b + q * in_strides[i]),
                    _ => None,
                };
            }
            let chunk = &mut dst[at..at + inner_len];
            match (base, valid) {
                (None, _) | (_, None) => chunk.iter_mut().for_each(|v| *v = T::default()),
                (Some(b), Some((lo, hi, first, true))) => {
                    chunk[..lo].iter_mut().for_each(|v| *v = T::default());
                    chunk[lo..hi].copy_from_slice(&channel[b + first..b + first + hi - lo]);
                    chunk[hi..].iter_mut().for_each(|v| *v = T::default());
                }
                (Some(b), Some(_)) => {
                    let line = &channel[b..];
                    for (v, q) in chunk.iter_mut().zip(inner) {
                        *v = match q {
                            Some(q) => line[*q],
                            None => T::default(),
                        };
                    }
                }
            }
            at += inner_len;
            if !next_index(&mut pp, &p_dims[..d - 1]) {
                break;
            }
        }
    }
}

/// An f32 operand as the gemm reads it: itself.
fn same(values: &[f32]) -> &[f32] {
    values
}

/// The highest spatial rank [`ConvPlan::compute_direct`] takes (its index arrays are fixed).
const MAX_DIRECT_RANK: usize = 4;

/// Where each entry of the im2col matrix comes from, worked out once per convolution.
struct Taps {
    rank: usize,
    kernel: [usize; MAX_DIRECT_RANK],
    output: [usize; MAX_DIRECT_RANK],
    /// Row-major strides of the input's spatial dimensions.
    in_stride: [usize; MAX_DIRECT_RANK],
    /// Per dimension, `kernel × output` entries: for tap `k` (reversal applied) and output
    /// coordinate `o`, the input coordinate, or `None` in padding and between dilated inputs.
    table: Vec<Vec<Option<usize>>>,
    /// Per tap of the innermost dimension, when its valid outputs read consecutive inputs (no
    /// stride, no base dilation: the usual case): (first valid output, end of the valid
    /// outputs, the input coordinate of the first).
    runs: Vec<Option<(usize, usize, usize)>>,
    k_spatial: usize,
    in_spatial: usize,
    /// The matrix's rows (input features × kernel taps) and columns (output positions).
    rows: usize,
    positions: usize,
}

impl Taps {
    /// `None` for spatial ranks 0 and above [`MAX_DIRECT_RANK`].
    fn new(spatial: &[SpatialDim], kernel_in: usize) -> Result<Option<Taps>, Fail> {
        let rank = spatial.len();
        if rank == 0 || rank > MAX_DIRECT_RANK {
            return Ok(None);
        }
        let mut taps = Taps {
            rank,
            kernel: [1; MAX_DIRECT_RANK],
            output: [1; MAX_DIRECT_RANK],
            in_stride: [0; MAX_DIRECT_RANK],
            table: super::tensor::try_alloc(rank)?,
            runs: Vec::new(),
            k_spatial: spatial.iter().map(|s| s.kernel).product(),
            in_spatial: spatial.iter().map(|s| s.input).product(),
            rows: 0,
            positions: spatial.iter().map(|s| s.output).product(),
        };
        taps.rows = kernel_in * taps.k_spatial;
        let mut stride = 1;
        for (i, s) in spatial.iter().enumerate().rev() {
            taps.kernel[i] = s.kernel;
            taps.output[i] = s.output;
            taps.in_stride[i] = stride;
            stride *= s.input;
        }
        for s in spatial {
            let mut table = super::tensor::try_alloc(s.kernel * s.output)?;
            for k in 0..s.kernel {
                let k = if s.reversal { s.kernel - 1 - k } else { k };
                table.extend((0..s.output).map(|o| {
                    let pos = (o * s.stride + k * s.window_dilation) as i64 - s.pad_low;
                    if pos < 0 || pos % s.base_dilation as i64 != 0 {
                        return None;
                    }
                    let q = (pos / s.base_dilation as i64) as usize;
                    (q < s.input).then_some(q)
                }));
            }
            taps.table.push(table);
        }
        let inner = rank - 1;
        let width = taps.output[inner];
        taps.runs = super::tensor::try_alloc(taps.kernel[inner])?;
        for k in 0..taps.kernel[inner] {
            let column = &taps.table[inner][k * width..(k + 1) * width];
            let run = match column.iter().position(Option::is_some) {
                None => Some((0, 0, 0)),
                Some(lo) => {
                    let hi = column.iter().rposition(Option::is_some).map_or(lo, |h| h + 1);
                    let first = column[lo].unwrap_or(0);
                    let consecutive =
                        column[lo..hi].iter().enumerate().all(|(i, q)| *q == Some(first + i));
                    consecutive.then_some((lo, hi, first))
                }
            };
            taps.runs.push(run);
        }
        Ok(Some(taps))
    }
}

/// The im2col matrix of one image (`[I, S…]`, as a [`Source`]) as a gemm operand that is never
/// built: the gemm's packing asks for a few columns of a row at a time, and they come straight
/// from the image (a slice copy per run of consecutive inputs, zero in padding).
#[derive(Clone, Copy)]
struct Im2col<'t, S> {
    image: S,
    taps: &'t Taps,
}

impl<S: Source> Source for Im2col<'_, S> {
    fn elements(&self) -> usize {
        self.taps.rows * self.taps.positions
    }

    #[inline(always)]
    fn widen(&self, at: usize, dst: &mut [f32]) {
        let t = self.taps;
        let (row, col) = (at / t.positions, at % t.positions);
        let (channel, kk) = t.tap_of(row);
        let mut oo = t.coordinates(col);
        let inner = t.rank - 1;
        let run = t.runs[kk[inner]];
        let mut done = 0;
        while done < dst.len() {
            let len = (t.output[inner] - oo[inner]).min(dst.len() - done);
            let line = Line { at: done, o0: oo[inner], len, outer: oo };
            self.fill_line((channel, &kk), run, &line, &mut dst[done..done + len]);
            done += len;
            t.advance(&mut oo, len);
        }
    }

    /// Per call, the split of the columns into output lines, once; per row, the tap by a step
    /// of an odometer rather than divisions, and the input's part of each line as one copy
    /// between edges in padding.
    #[inline(always)]
    fn widen_rows(
        &self,
        (first, count): (usize, usize),
        (n, col): (usize, usize),
        spill: &mut [f32],
        each: &mut impl TakeRow,
    ) {
        let t = self.taps;
        if count == 0 {
            return;
        }
        let Some((lines, line_count)) = t.lines(col, spill.len()).filter(|_| n == t.positions)
        else {
            return widen_each_row(self, (first, count), (n, col), spill, each);
        };
        let lines = &lines[..line_count];
        let (mut channel, mut kk) = t.tap_of(first);
        let inner = t.rank - 1;
        for i in 0..count {
            let run = t.runs[kk[inner]];
            for line in lines {
                let dst = &mut spill[line.at..line.at + line.len];
                self.fill_line((channel, &kk), run, line, dst);
            }
            each.take(i, spill);
            // The next row's tap: the innermost kernel coordinate steps, carrying outwards,
            // and past the last tap the channel.
            let mut d = t.rank;
            loop {
                if d == 0 {
                    channel += 1;
                    break;
                }
                d -= 1;
                kk[d] += 1;
                if kk[d] < t.kernel[d] {
                    break;
                }
                kk[d] = 0;
            }
        }
    }
}

/// The most lines of the output that [`Im2col::widen_rows`] splits a block's columns into
/// (eight panels of an output 16 wide and one more); a block that needs more (a narrow output)
/// is widened row by row.
const MAX_LINES: usize = 10;

/// A block's columns within one line of the output (one run along the innermost output
/// dimension): where they start in the row being widened, the first one's coordinate along that
/// dimension, how many, and the outer output coordinates of the line.
#[derive(Clone, Copy, Default)]
struct Line {
    at: usize,
    o0: usize,
    len: usize,
    outer: [usize; MAX_DIRECT_RANK],
}

impl<S: Source> Im2col<'_, S> {
    /// Fills `dst` (`line.len` elements) with the inputs under tap `kk` of feature `channel` for
    /// the output positions of `line`: one copy of the consecutive inputs between edges in
    /// padding, element by element when the inputs are not consecutive, zeros where an outer
    /// coordinate is in padding.
    /// `run` is the tap's entry of [`Taps::runs`], which callers look up once per row.
    #[inline(always)]
    fn fill_line(
        &self,
        (channel, kk): (usize, &[usize; MAX_DIRECT_RANK]),
        run: Option<(usize, usize, usize)>,
        line: &Line,
        dst: &mut [f32],
    ) {
        let t = self.taps;
        let inner = t.rank - 1;
        let base = (0..inner).try_fold(channel * t.in_spatial, |base, d| {
            let q = t.table[d][kk[d] * t.output[d] + line.outer[d]];
            q.map(|q| base + q * t.in_stride[d])
        });
        let Some(base) = base else { return zero_f32(dst) };
        let end = line.o0 + line.len;
        match run {
            Some((lo, hi, first)) => {
                let (v0, v1) = (lo.clamp(line.o0, end), hi.clamp(line.o0, end));
                let (head, rest) = dst.split_at_mut(v0 - line.o0);
                let (valid, tail) = rest.split_at_mut(v1 - v0);
                zero_f32(head);
                if !valid.is_empty() {
                    self.image.widen(base + first + (v0 - lo), valid);
                }
                zero_f32(tail);
            }
            None => {
                let width = t.output[inner];
                let column = &t.table[inner][kk[inner] * width..(kk[inner] + 1) * width];
                for (v, q) in dst.iter_mut().zip(&column[line.o0..end]) {
                    *v = 0.0;
                    if let Some(q) = q {
                        self.image.widen(base + q, std::slice::from_mut(v));
                    }
                }
            }
        }
    }
}

impl Taps {
    /// A row's input feature and kernel tap (the matrix's rows are (feature, tap…) in
    /// row-major order).
    fn tap_of(&self, row: usize) -> (usize, [usize; MAX_DIRECT_RANK]) {
        let (channel, mut tap) = (row / self.k_spatial, row % self.k_spatial);
        let mut kk = [0usize; MAX_DIRECT_RANK];
        for i in (0..self.rank).rev() {
            kk[i] = tap % self.kernel[i];
            tap /= self.kernel[i];
        }
        (channel, kk)
    }

    /// The output coordinates of column `col` (an output position, row-major).
    fn coordinates(&self, col: usize) -> [usize; MAX_DIRECT_RANK] {
        let mut oo = [0usize; MAX_DIRECT_RANK];
        let mut rest = col;
        for i in (0..self.rank).rev() {
            oo[i] = rest % self.output[i];
            rest /= self.output[i];
        }
        oo
    }

    /// Moves output coordinates `oo` on by `by` positions along the innermost dimension, which
    /// `by` must not carry past (a line ends where the output's line does), carrying a full line into
    /// the outer dimensions.
    fn advance(&self, oo: &mut [usize; MAX_DIRECT_RANK], by: usize) {
        let mut i = self.rank - 1;
        oo[i] += by;
        while i > 0 && oo[i] == self.output[i] {
            oo[i] = 0;
            i -= 1;
            oo[i] += 1;
        }
    }

    /// The lines of columns `col .. col + width`, or `None` past [`MAX_LINES`].
    fn lines(&self, col: usize, width: usize) -> Option<([Line; MAX_LINES], usize)> {
        let inner = self.rank - 1;
        let mut outer = self.coordinates(col);
        let mut lines = [Line::default(); MAX_LINES];
        let (mut count, mut done) = (0, 0);
        while done < width {
            let o0 = outer[inner];
            let len = (self.output[inner] - o0).min(width - done);
            *lines.get_mut(count)? = Line { at: done, o0, len, outer };
            count += 1;
            done += len;
            self.advance(&mut outer, len);
        }
        Some((lines, count))
    }
}

/// `data` converted to `ty`, or `None` when it already is `ty` (no copy).
fn widen_to(data: &Data, ty: ElementType) -> Result<Option<Data>, Fail> {
    if data.ty() == ty { Ok(None) } else { convert(data, ty).map(Some) }
}

/// A direct 2-D convolution (NCHW input, OIHW kernel, stride 1, symmetric padding), the
/// baseline of the benchmark.
#[allow(clippy::too_many_arguments)]
pub fn naive_conv2d(
    x: &[f32],
    w: &[f32],
    out: &mut [f32],
    channels: usize,
    height: usize,
    width: usize,
    features: usize,
    kernel: usize,
    pad: usize,
) {
    let oh = height + 2 * pad - kernel + 1;
    let ow = width + 2 * pad - kernel + 1;
    for o in 0..features {
        for y in 0..oh {
            for xo in 0..ow {
                let mut sum = 0.0f32;
                for c in 0..channels {
                    for ky in 0..kernel {
                        for kx in 0..kernel {
                            let iy = y + ky;
                            let ix = xo + kx;
                            if iy < pad || ix < pad || iy - pad >= height || ix - pad >= width {
                                continue;
                            }
                            sum += x[(c * height + iy - pad) * width + ix - pad]
                                * w[((o * channels + c) * kernel + ky) * kernel + kx];
                        }
                    }
                }
                out[(o * oh + y) * ow + xo] = sum;
            }
        }
    }
}

// Compiling: the shape checks and attribute decoding for this family.

/// Shape checks and attribute decoding for `convolution`.
pub(crate) fn compile_convolution(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    let out = || shape.array();
    Ok(match cx.ins.opcode.as_str() {
        "convolution" => {
            cx.arity(operands, 2)?;
            let numbers = ins
                .convolution_dimension_numbers
                .as_ref()
                .ok_or_else(|| invalid("convolution has no convolution_dimension_numbers"))?;
            let window = ins.window.clone().unwrap_or_default();
            Op::Convolution(Box::new(ConvPlan::new(
                operands[0].array()?,
                operands[1].array()?,
                numbers,
                &window,
                ins.feature_group_count.max(1),
                ins.batch_group_count.max(1),
                out()?,
                cx.budget_bytes,
            )?))
        }
        other => {
            return Err(Fail::Internal(format!("opcode {other} is not compile_convolution's")));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One spatial dimension; its output size follows from the others as XLA's shape rule has it.
    #[allow(clippy::too_many_arguments)]
    fn spatial(
        input: usize,
        kernel: usize,
        stride: usize,
        (pad_low, pad_high): (i64, i64),
        base_dilation: usize,
        window_dilation: usize,
        reversal: bool,
    ) -> SpatialDim {
        let dilated_input = ((input - 1) * base_dilation + 1) as i64 + pad_low + pad_high;
        let dilated_kernel = ((kernel - 1) * window_dilation + 1) as i64;
        let output = ((dilated_input - dilated_kernel) / stride as i64 + 1) as usize;
        SpatialDim {
            input,
            kernel,
            output,
            stride,
            pad_low,
            base_dilation,
            window_dilation,
            reversal,
        }
    }

    /// A plan that only [`ConvPlan::fill_row`] reads: its spatial dimensions.
    fn plan(spatial: Vec<SpatialDim>) -> ConvPlan {
        ConvPlan {
            input_dims: Vec::new(),
            kernel_dims: Vec::new(),
            input_perm: Vec::new(),
            kernel_perm: Vec::new(),
            output_perm: Vec::new(),
            batch: 1,
            channels: 1,
            out_features: 1,
            kernel_in: 1,
            feature_groups: 1,
            batch_groups: 1,
            spatial,
        }
    }

    /// The packing's batched reading of the im2col source (the split of a block's columns into
    /// output lines, the tap stepped per row, short copies between zeroed edges) against the
    /// matrix built row by row with [`ConvPlan::fill_row`], for blocks of columns that start
    /// and end inside output lines, over padding, strides, both dilations, reversal, negative
    /// padding, ranks 1 to 3, and outputs too narrow for the batched split (row by row).
    #[test]
    fn batched_im2col_rows_equal_the_built_matrix() {
        let s = spatial;
        let geometries = [
            vec![s(40, 3, 1, (1, 1), 1, 1, false)],
            vec![s(16, 3, 1, (1, 1), 1, 1, false), s(16, 3, 1, (1, 1), 1, 1, false)],
            vec![s(8, 3, 1, (1, 1), 1, 1, false), s(8, 3, 1, (1, 1), 1, 1, false)],
            vec![s(33, 3, 2, (1, 1), 1, 1, false), s(34, 3, 2, (0, 1), 1, 1, false)],
            vec![s(12, 3, 1, (2, 2), 1, 2, true), s(10, 2, 1, (1, 0), 2, 1, false)],
            vec![s(9, 3, 1, (-1, 2), 1, 1, false), s(30, 5, 1, (2, 2), 1, 1, true)],
            vec![s(4, 2, 1, (1, 0), 1, 1, false), s(5, 3, 1, (1, 1), 1, 1, false), {
                s(20, 3, 1, (1, 1), 1, 1, false)
            }],
        ];
        let channels = 3;
        for geometry in geometries {
            let plan = plan(geometry.clone());
            let taps = Taps::new(&geometry, channels).unwrap().unwrap();
            let image: Vec<f32> = (0..channels * taps.in_spatial).map(|i| i as f32 + 1.0).collect();
            let (rows, positions) = (taps.rows, taps.positions);
            let mut matrix = vec![f32::NAN; rows * positions];
            for (row, dst) in matrix.chunks_mut(positions).enumerate() {
                plan.fill_row(&image, row, dst);
            }
            let source = Im2col { image: &image[..], taps: &taps };
            let blocks = [(0, positions.min(128)), (5, 37.min(positions - 5)), {
                let width = positions.min(100);
                (positions - width, width)
            }];
            for (col, width) in blocks {
                for (first, count) in [(0, rows), (1, rows - 1), (rows - 2, 2)] {
                    let mut spill = vec![f32::NAN; width];
                    let mut seen = Vec::new();
                    source.widen_rows(
                        (first, count),
                        (positions, col),
                        &mut spill,
                        &mut |i, row: &[f32]| {
                            seen.push((i, row.to_vec()));
                        },
                    );
                    assert_eq!(seen.len(), count);
                    for (i, row) in seen {
                        let at = (first + i) * positions + col;
                        assert_eq!(
                            row,
                            matrix[at..at + width],
                            "{geometry:?}: row {} columns {col}..{}",
                            first + i,
                            col + width
                        );
                    }
                }
            }
        }
    }
}

//! `dot` with general dimension numbers, and the gemm both dot and convolution use.
//!
//! Design choices:
//! - Operands are transposed to `[batch, free, contracting]` (lhs) and `[batch, contracting,
//!   free]` (rhs), so every dot is a batch of row-major `M×K · K×N` products whose result is
//!   already in XLA's output order (batch, lhs free, rhs free).
//! - f32 and narrower floats multiply in f32, f64 in f64. f32 goes through our packed kernel
//!   ([`super::packed_gemm`], AVX-512 or AVX2+FMA, whichever the CPU has) and on other CPUs, and
//!   for f64, through ndarray's `general_mat_mul` (matrixmultiply's blocked kernels, safe API).
//!   bf16, f16 and f8 operands go to the packed kernel as they are, which widens them while
//!   packing panels ([`Floats`]), so no whole f32 copy of a narrow operand is made; only mixed
//!   types other than f8 with f8 are widened first. Integers accumulate in wrapping i64, which
//!   equals accumulating in the (≤ 64-bit) result type. The f32 sums are rounded to the
//!   instruction's type once per element at the end (XLA on CPU does the same), so
//!   `preferred_element_type` comes from the result shape.
//! - Float dots of at most a few rows or columns ([`FEW_ROWS`], and fewer than half the gemm's
//!   row band) whose other operand has its contracting or its free elements contiguous skip both:
//!   [`FewRows`] reads that operand in its own layout through offset tables, so a cache attended
//!   by one query, on either side of the dot, is neither transposed nor packed into tiles of
//!   padding. Few columns are computed as the transposed product.
//! - Large products split over the available cores on the kernel pool (`par`): columns in our
//!   kernel, rows through ndarray. Only the parts of a kernel run on the pool, never an
//!   interpreter loop: an SPMD rank that waits for its peers is a thread of its own, so no pool
//!   worker ever waits on a collective, and a worker that waits for nested parts only takes other
//!   parts, which always finish.

use ndarray::{ArrayView2, ArrayViewMut2};

use super::elementwise::convert;
use super::error::Fail;
use super::shape::ArrayShape;
use pulp::Simd;

use super::op_context::{OpContext, invalid};
use super::packed_gemm::{self, Bf16Bits, F8Bits, F16Bits, F32Bytes, Kernel, Source};
use super::plan::{DotPlan, Instr, Op, OperandView};
use super::shape::Shape;
use super::shape_ops::{strided, transpose, transpose_reusing};
use super::tensor::{BufferPool, Data, dispatch, filled};
use crate::dtype::{ElementType, SmallFloat};
use crate::proto;

impl DotPlan {
    /// The multiply-adds of one product (saturating), for the work budget.
    pub(crate) fn multiply_adds(&self) -> u64 {
        [self.batch, self.m, self.k, self.n].iter().fold(1u64, |n, &d| n.saturating_mul(d as u64))
    }

    pub(crate) fn new(
        lhs: &ArrayShape,
        rhs: &ArrayShape,
        numbers: &proto::DotDimensionNumbers,
        out: &ArrayShape,
    ) -> Result<DotPlan, Fail> {
        let list = |values: &[i64], rank: usize, what: &str| -> Result<Vec<usize>, Fail> {
            let mut seen = vec![false; rank];
            values
                .iter()
                .map(|&v| match usize::try_from(v).ok().filter(|&d| d < rank && !seen[d]) {
                    Some(d) => {
                        seen[d] = true;
                        Ok(d)
                    }
                    None => Err(invalid(format!("{what} {values:?} do not fit rank {rank}"))),
                })
                .collect()
        };
        let lb = list(&numbers.lhs_batch_dimensions, lhs.dims.len(), "lhs_batch_dims")?;
        let rb = list(&numbers.rhs_batch_dimensions, rhs.dims.len(), "rhs_batch_dims")?;
        let lc = list(&numbers.lhs_contracting_dimensions, lhs.dims.len(), "lhs_contracting_dims")?;
        let rc = list(&numbers.rhs_contracting_dimensions, rhs.dims.len(), "rhs_contracting_dims")?;
        if lb.len() != rb.len() || lc.len() != rc.len() {
            return Err(invalid(format!(
                "dot has {} lhs and {} rhs batch dims, {} lhs and {} rhs contracting dims",
                lb.len(),
                rb.len(),
                lc.len(),
                rc.len()
            )));
        }
        if lb.iter().any(|d| lc.contains(d)) || rb.iter().any(|d| rc.contains(d)) {
            return Err(invalid("a dimension is both batch and contracting"));
        }
        for (&a, &b) in lb.iter().zip(&rb).chain(lc.iter().zip(&rc)) {
            if lhs.dims[a] != rhs.dims[b] {
                return Err(invalid(format!(
                    "lhs dimension {a} (size {}) does not match rhs dimension {b} (size {})",
                    lhs.dims[a], rhs.dims[b]
                )));
            }
        }
        if lhs.ty == ElementType::Pred || rhs.ty == ElementType::Pred {
            return Err(invalid("dot of pred"));
        }
        let lf: Vec<usize> =
            (0..lhs.dims.len()).filter(|d| !lb.contains(d) && !lc.contains(d)).collect();
        let rf: Vec<usize> =
            (0..rhs.dims.len()).filter(|d| !rb.contains(d) && !rc.contains(d)).collect();
        let mut dims: Vec<usize> = lb.iter().map(|&d| lhs.dims[d]).collect();
        dims.extend(lf.iter().map(|&d| lhs.dims[d]));
        dims.extend(rf.iter().map(|&d| rhs.dims[d]));
        if dims != out.dims {
            return Err(invalid(format!(
                "shape is {}, but the operands give {}",
                super::shape::describe_array(out.ty, &out.dims),
                super::shape::describe_array(out.ty, &dims)
            )));
        }
        let product = |ds: &[usize], src: &[usize]| ds.iter().map(|&d| src[d]).product::<usize>();
        let lhs_perm: Vec<usize> = lb.iter().chain(&lf).chain(&lc).copied().collect();
        let rhs_perm: Vec<usize> = rb.iter().chain(&rc).chain(&rf).copied().collect();
        Ok(DotPlan {
            lhs_dims: lhs.dims.clone(),
            rhs_dims: rhs.dims.clone(),
            batch: product(&lb, &lhs.dims),
            m: product(&lf, &lhs.dims),
            k: product(&lc, &lhs.dims),
            n: product(&rf, &rhs.dims),
            lhs_perm,
            rhs_perm,
            rhs_split: (rb.len(), rc.len()),
            views: [None, None],
        })
    }

    pub(crate) fn run(
        &self,
        lhs: &Data,
        rhs: &Data,
        out_ty: ElementType,
        budget: u64,
        pool: &BufferPool,
    ) -> Result<Data, Fail> {
        if self.views.iter().any(Option::is_some) {
            return self.run_viewed(lhs, rhs, out_ty, budget, pool);
        }
        self.run_contiguous(lhs, rhs, out_ty, budget, pool)
    }

    /// [`DotPlan::run`] with an operand read through its view (see [`read_slices_in_place`]):
    /// when the products are a batch [`DotPlan::run_gathered`] takes (attention's heads, their
    /// q, k and v sliced from one projection), each product's operands are gathered from where
    /// they lie; otherwise the operand is copied out first, as the slice would have been.
    fn run_viewed(
        &self,
        lhs: &Data,
        rhs: &Data,
        out_ty: ElementType,
        budget: u64,
        pool: &BufferPool,
    ) -> Result<Data, Fail> {
        let sides = [(&self.lhs_dims, lhs), (&self.rhs_dims, rhs)];
        for (view, (dims, data)) in self.views.iter().zip(sides) {
            if view.as_ref().is_some_and(|view| !view.fits(dims, data.len())) {
                return Err(Fail::Internal("a dot operand's view lies outside its value".into()));
            }
        }
        let views = [self.views[0].as_ref(), self.views[1].as_ref()];
        if let Some(result) = self.run_gathered(lhs, rhs, views, out_ty, budget, pool)? {
            return Ok(result);
        }
        let copied = |view: Option<&OperandView>, dims: &[usize], data: &Data| {
            let Some(view) = view else { return Ok(None) };
            let strides: Vec<i64> = view.strides.iter().map(|&s| s as i64).collect();
            Ok::<_, Fail>(Some(
                dispatch!(data, v => strided(v, dims, view.offset as i64, &strides)?),
            ))
        };
        let lhs_copy = copied(views[0], &self.lhs_dims, lhs)?;
        let rhs_copy = copied(views[1], &self.rhs_dims, rhs)?;
        let (lhs, rhs) = (lhs_copy.as_ref().unwrap_or(lhs), rhs_copy.as_ref().unwrap_or(rhs));
        self.run_contiguous(lhs, rhs, out_ty, budget, pool)
    }

    /// [`DotPlan::run`] of operands that are the dot's operands themselves, not views.
    fn run_contiguous(
        &self,
        lhs: &Data,
        rhs: &Data,
        out_ty: ElementType,
        budget: u64,
        pool: &BufferPool,
    ) -> Result<Data, Fail> {
        if let Some(sums) = self.few_rows(lhs, rhs, out_ty, budget)? {
            return round_result(Data::F32(sums), out_ty);
        }
        if let Some(result) = self.run_gathered(lhs, rhs, [None, None], out_ty, budget, pool)? {
            return Ok(result);
        }
        // Operands already in gemm order and type are used in place, without a copy; the others
        // are transposed into pooled temporaries, given back once the product is made.
        let arrange = |data: &Data, dims: &[usize], perm: &[usize]| -> Result<Option<Data>, Fail> {
            if in_gemm_order(perm) {
                Ok(None)
            } else {
                let spare = pool.take_scratch(data.ty(), data.len());
                transpose_reusing(data, dims, perm, spare).map(Some)
            }
        };
        let lhs_t = arrange(lhs, &self.lhs_dims, &self.lhs_perm)?;
        let rhs_t = arrange(rhs, &self.rhs_dims, &self.rhs_perm)?;
        let result = self.product(
            lhs_t.as_ref().unwrap_or(lhs),
            rhs_t.as_ref().unwrap_or(rhs),
            out_ty,
            budget,
            pool,
        );
        lhs_t.into_iter().chain(rhs_t).for_each(|t| pool.give_scratch(t));
        result
    }

    /// Storage for the f32 sums of every product (pooled when the pool has it), once the
    /// budget admits them.
    fn sums(&self, budget: u64, pool: &BufferPool) -> Result<Vec<f32>, Fail> {
        let out_elems = self.batch * self.m * self.n;
        super::shape::check_budget(
            Some((out_elems as u64).saturating_mul(8)),
            budget.saturating_mul(2),
        )?;
        let spare = match pool.take(ElementType::F32, out_elems) {
            Some(Data::F32(v)) => Some(v),
            _ => None,
        };
        sums_storage(spare, out_elems, self.k)
    }

    /// [`DotPlan::run`] of a batch of float products too small to split over the cores
    /// themselves, with an operand out of gemm order (attention's `bqhd,bkhd->bhqk`): each
    /// product's operands are gathered from where they lie, in the part that computes the
    /// product, instead of transposing whole operands first. The gathering is then split over
    /// the cores with the products, and each product reads operands it has just written to its
    /// own cache; the whole transposes ran on the calling thread alone (attention's `q·kᵀ` on
    /// two cores: 560 µs, of which the products took 260). `None` for anything else.
    fn run_gathered(
        &self,
        lhs: &Data,
        rhs: &Data,
        views: [Option<&OperandView>; 2],
        out_ty: ElementType,
        budget: u64,
        pool: &BufferPool,
    ) -> Result<Option<Data>, Fail> {
        let (m, k, n) = (self.m, self.k, self.n);
        let splits_itself = threads_for(m.saturating_mul(k).saturating_mul(n), n / 16) > 1;
        let small = m.saturating_mul(k) <= GATHERED_MOST && k.saturating_mul(n) <= GATHERED_MOST;
        let compute = compute_type(lhs.ty(), rhs.ty(), out_ty);
        if self.batch < 2
            || splits_itself
            || !small
            || (in_gemm_order(&self.lhs_perm)
                && in_gemm_order(&self.rhs_perm)
                && views == [None, None])
            || matches!(compute, ElementType::F64 | ElementType::S64)
        {
            return Ok(None);
        }
        let (Some(_), Some(_)) = (Floats::of(lhs), Floats::of(rhs)) else { return Ok(None) };
        let batch_rank = self.rhs_split.0;
        let lhs_slices = ProductSlices::new(&self.lhs_dims, views[0], &self.lhs_perm, batch_rank);
        let rhs_slices = ProductSlices::new(&self.rhs_dims, views[1], &self.rhs_perm, batch_rank);
        let mut c = self.sums(budget, pool)?;
        self.each_product(&mut c, |i, c| {
            let (a, b) = (lhs_slices.gather(lhs, i)?, rhs_slices.gather(rhs, i)?);
            let (Some(a), Some(b)) = (Floats::of(&a), Floats::of(&b)) else {
                return Err(Fail::Internal("a gathered dot operand is not floats".into()));
            };
            gemm_floats_or_widen(a, b, c, m, k, n)
        })?;
        finish(Data::F32(c), out_ty, pool).map(Some)
    }

    /// [`DotPlan::run_operands`] with a lent operand that is not an f32 pair for the packed
    /// gemm: a narrow weight read where it lies by [`FewRows`] (a decoder's matrix-vector
    /// products) or by the gemm when both operands are in gemm order; `None` when the product
    /// needs a value the bytes are not (a transpose of the stream, a type other than floats).
    fn run_views(
        &self,
        lhs: Operand<'_>,
        rhs: Operand<'_>,
        out_ty: ElementType,
        budget: u64,
        pool: &BufferPool,
    ) -> Result<Option<Data>, Fail> {
        let (Some(a), Some(b)) = (lhs.floats(), rhs.floats()) else { return Ok(None) };
        let kernel = packed_gemm::chosen();
        if let Some(sums) =
            self.few_rows_of(kernel, (a, lhs.data()), (b, rhs.data()), out_ty, budget)?
        {
            return round_result(Data::F32(sums), out_ty).map(Some);
        }
        if compute_type(a.ty(), b.ty(), out_ty) != ElementType::F32
            || !in_gemm_order(&self.lhs_perm)
            || !in_gemm_order(&self.rhs_perm)
        {
            return Ok(None);
        }
        let sums = self.float_sums(a, b, budget, pool)?;
        finish(sums, out_ty, pool).map(Some)
    }

    /// The f32 sums of a float product whose operands are in gemm order.
    fn float_sums(
        &self,
        a: Floats<'_>,
        b: Floats<'_>,
        budget: u64,
        pool: &BufferPool,
    ) -> Result<Data, Fail> {
        let mut c = self.sums(budget, pool)?;
        self.batched_floats(a, b, &mut c)?;
        Ok(Data::F32(c))
    }

    /// [`DotPlan::run`] of operands in gemm order.
    fn product(
        &self,
        lhs: &Data,
        rhs: &Data,
        out_ty: ElementType,
        budget: u64,
        pool: &BufferPool,
    ) -> Result<Data, Fail> {
        let compute = compute_type(lhs.ty(), rhs.ty(), out_ty);
        let out_elems = self.batch * self.m * self.n;
        super::shape::check_budget(
            Some((out_elems as u64).saturating_mul(8)),
            budget.saturating_mul(2),
        )?;
        let result = match compute {
            ElementType::F64 => {
                let (lw, rw) = (as_type(lhs, ElementType::F64)?, as_type(rhs, ElementType::F64)?);
                let (Data::F64(a), Data::F64(b)) = (lw.as_ref(), rw.as_ref()) else {
                    return Err(Fail::Internal("f64 conversion".into()));
                };
                let mut c = filled(out_elems, 0.0f64)?;
                self.batched(a, b, &mut c, gemm_f64);
                Data::F64(c)
            }
            ElementType::S64 => {
                let (lw, rw) = (as_type(lhs, ElementType::S64)?, as_type(rhs, ElementType::S64)?);
                let (Data::S64(a), Data::S64(b)) = (lw.as_ref(), rw.as_ref()) else {
                    return Err(Fail::Internal("s64 conversion".into()));
                };
                let mut c = filled(out_elems, 0i64)?;
                self.batched(a, b, &mut c, gemm_i64);
                Data::S64(c)
            }
            _ => {
                if let (Some(a), Some(b)) = (Floats::of(lhs), Floats::of(rhs)) {
                    return finish(self.float_sums(a, b, budget, pool)?, out_ty, pool);
                }
                let mut c = self.sums(budget, pool)?;
                let (lw, rw) = (as_type(lhs, ElementType::F32)?, as_type(rhs, ElementType::F32)?);
                let (Data::F32(a), Data::F32(b)) = (lw.as_ref(), rw.as_ref()) else {
                    return Err(Fail::Internal("f32 conversion".into()));
                };
                self.batched(a, b, &mut c, gemm_f32);
                Data::F32(c)
            }
        };
        finish(result, out_ty, pool)
    }

    /// A float dot with fewer rows than half the gemm's row band, or at most [`FEW_ROWS`]
    /// columns (attention of one query over a cache, a matrix-vector product), whose other
    /// operand has its contracting or its free elements contiguous: computed by [`FewRows`] from
    /// that operand in its own layout, so that it is neither transposed (a copy of the whole
    /// cache) nor packed into mostly padded tiles. A product of few columns is computed as its
    /// transpose, `Bᵀ·Aᵀ` (the rhs supplies the rows), and transposed back when it has more than
    /// one column. `None` when the dot is not of that kind.
    fn few_rows(
        &self,
        lhs: &Data,
        rhs: &Data,
        out_ty: ElementType,
        budget: u64,
    ) -> Result<Option<Vec<f32>>, Fail> {
        self.few_rows_by(packed_gemm::chosen(), lhs, rhs, out_ty, budget)
    }

    /// [`DotPlan::few_rows`] with the vectors of a given kernel (tests run each the CPU has).
    fn few_rows_by(
        &self,
        kernel: Kernel,
        lhs: &Data,
        rhs: &Data,
        out_ty: ElementType,
        budget: u64,
    ) -> Result<Option<Vec<f32>>, Fail> {
        match (Floats::of(lhs), Floats::of(rhs)) {
            (Some(a), Some(b)) => {
                self.few_rows_of(kernel, (a, Some(lhs)), (b, Some(rhs)), out_ty, budget)
            }
            _ => Ok(None),
        }
    }

    /// [`DotPlan::few_rows`] of operands seen as floats, each with its value when it has one
    /// (a transpose of the rows is made from it; a lent operand's is made from a copy).
    fn few_rows_of(
        &self,
        kernel: Kernel,
        lhs: (Floats<'_>, Option<&Data>),
        rhs: (Floats<'_>, Option<&Data>),
        out_ty: ElementType,
        budget: u64,
    ) -> Result<Option<Vec<f32>>, Fail> {
        let (m, k, n) = (self.m, self.k, self.n);
        let few = |rows: usize| rows <= FEW_ROWS && rows < kernel.tile_rows() / 2;
        if compute_type(lhs.0.ty(), rhs.0.ty(), out_ty) != ElementType::F32
            || m == 0
            || k == 0
            || n == 0
            || self.batch == 0
        {
            return Ok(None);
        }
        let (lhs, rhs) = ((lhs.0, lhs.1, self.lhs_side()), (rhs.0, rhs.1, self.rhs_side()));
        if few(m) {
            return few_rows_product(kernel, lhs, rhs, (self.batch, m, k, n), budget);
        }
        // The gemm's column tiles are wider than its row tiles, so few columns are judged by
        // FEW_ROWS alone.
        if n > FEW_ROWS {
            return Ok(None);
        }
        let Some(columns) = few_rows_product(kernel, rhs, lhs, (self.batch, n, k, m), budget)?
        else {
            return Ok(None);
        };
        if n == 1 {
            return Ok(Some(columns));
        }
        match transpose(&Data::F32(columns), &[self.batch, n, m], &[0, 2, 1])? {
            Data::F32(c) => Ok(Some(c)),
            _ => Err(Fail::Internal("a transpose of f32 sums is f32".into())),
        }
    }

    /// The lhs's axes by role.
    fn lhs_side(&self) -> Side<'_> {
        let (nb, nc) = self.rhs_split;
        let free = self.lhs_perm.len() - nb - nc;
        Side {
            dims: &self.lhs_dims,
            batch: &self.lhs_perm[..nb],
            free: &self.lhs_perm[nb..nb + free],
            contracting: &self.lhs_perm[nb + free..],
        }
    }

    /// The rhs's axes by role.
    fn rhs_side(&self) -> Side<'_> {
        let (nb, nc) = self.rhs_split;
        Side {
            dims: &self.rhs_dims,
            batch: &self.rhs_perm[..nb],
            contracting: &self.rhs_perm[nb..nb + nc],
            free: &self.rhs_perm[nb + nc..],
        }
    }

    /// [`DotPlan::batched`] over float operands the packed gemm reads in place. Products too
    /// small to split over the cores themselves (attention's per-head products) are split by
    /// batch instead: each thread multiplies a run of whole products, this one the first.
    fn batched_floats(&self, a: Floats<'_>, b: Floats<'_>, c: &mut [f32]) -> Result<(), Fail> {
        let (m, k, n) = (self.m, self.k, self.n);
        self.each_product(c, |i, c| {
            gemm_floats_or_widen(a.range(i * m * k, m * k), b.range(i * k * n, k * n), c, m, k, n)
        })
    }

    /// Runs `product(i, c_i)` for every product of the batch, each `c_i` its `m × n` sums in
    /// `c`. A product too small to split over the cores itself (attention's heads, 2^20
    /// multiply-adds each) runs whole on one, and the batch is split by products instead, when
    /// it is large enough; larger products run one after another, each split by its gemm.
    fn each_product(
        &self,
        c: &mut [f32],
        product: impl Fn(usize, &mut [f32]) -> Result<(), Fail> + Sync,
    ) -> Result<(), Fail> {
        let (m, k, n) = (self.m, self.k, self.n);
        if m * n == 0 {
            return Ok(());
        }
        let work = m.saturating_mul(k).saturating_mul(n);
        let threads = if threads_for(work, n / 16) == 1 {
            threads_for(work.saturating_mul(self.batch), self.batch)
        } else {
            1
        };
        if threads <= 1 {
            return c.chunks_exact_mut(m * n).enumerate().try_for_each(|(i, c)| product(i, c));
        }
        let per_part = super::par::per_part(self.batch, threads, 1);
        let run = |first: usize, c: &mut [f32]| {
            c.chunks_exact_mut(m * n).enumerate().try_for_each(|(j, c)| product(first + j, c))
        };
        super::par::try_each(c.chunks_mut(per_part * m * n).enumerate(), |(t, c)| {
            run(t * per_part, c)
        })
    }

    fn batched<T>(&self, a: &[T], b: &[T], c: &mut [T], gemm: Gemm<T>) {
        let (m, k, n) = (self.m, self.k, self.n);
        for i in 0..self.batch {
            gemm(
                &a[i * m * k..(i + 1) * m * k],
                &b[i * k * n..(i + 1) * k * n],
                &mut c[i * m * n..(i + 1) * m * n],
                m,
                k,
                n,
            );
        }
    }
}

/// Rewrites each dot of a computation's plan whose operand is a slice of a value, through any
/// reshapes before and after it (attention's q, k and v, sliced from one fused projection), to
/// read that value where it lies through an [`OperandView`]; a slice or reshape nothing else
/// reads is then absorbed (charged where it stands, never computed). On the f32 transformer
/// each of the six slices took about a seventh of the time of the attention product it fed.
/// Runs after fusion and before last uses are computed; `root` is the computation's root,
/// whose value must stay.
pub(crate) fn read_slices_in_place(instrs: &mut [Instr], root: usize) {
    let mut users = vec![0usize; instrs.len()];
    for instr in instrs.iter() {
        for &o in &instr.operands {
            users[o] += 1;
        }
    }
    for k in 0..instrs.len() {
        for side in 0..2 {
            let Op::Dot(_) = &instrs[k].op else { break };
            let Some(&operand) = instrs[k].operands.get(side) else { break };
            let Some((source, view)) = operand_view(instrs, operand) else { continue };
            if let Op::Dot(plan) = &mut instrs[k].op {
                plan.views[side] = Some(view);
            }
            instrs[k].operands[side] = source;
            users[source] += 1;
            // The chain loses the dot as a user; a link that has no other is absorbed, and its
            // own operand loses it in turn.
            let mut link = operand;
            loop {
                users[link] -= 1;
                if users[link] > 0 || link == root || link == source {
                    break;
                }
                let next = instrs[link].operands[0];
                instrs[link].op = Op::Absorbed;
                instrs[link].operands.clear();
                link = next;
            }
        }
    }
}

/// The value an operand is a slice of (through reshapes only, at least one slice), with where
/// the operand's elements lie in it; `None` for any other operand, for an entry parameter
/// (whose bytes a run may lend, read only in place) and for an empty one.
fn operand_view(instrs: &[Instr], operand: usize) -> Option<(usize, OperandView)> {
    let mut chain = Vec::new();
    let mut at = operand;
    while matches!(instrs[at].op, Op::Reshape | Op::Slice { .. }) {
        chain.push(at);
        at = *instrs[at].operands.first()?;
    }
    if !chain.iter().any(|&c| matches!(instrs[c].op, Op::Slice { .. }))
        || matches!(instrs[at].op, Op::Parameter(_) | Op::Absorbed)
    {
        return None;
    }
    let Shape::Array(source) = &instrs[at].shape else { return None };
    if source.dims.contains(&0) {
        return None;
    }
    let mut dims = source.dims.clone();
    let mut strides = super::tensor::strides(&dims);
    let mut offset = 0usize;
    for &link in chain.iter().rev() {
        let Shape::Array(out) = &instrs[link].shape else { return None };
        if out.ty != source.ty {
            return None;
        }
        match &instrs[link].op {
            Op::Slice { starts, steps } => {
                for ((&start, &step), stride) in starts.iter().zip(steps).zip(&mut strides) {
                    offset = offset.checked_add(start.checked_mul(*stride)?)?;
                    *stride = stride.checked_mul(step)?;
                }
            }
            _ => strides = reshaped_strides(&dims, &strides, &out.dims)?,
        }
        dims.clone_from(&out.dims);
    }
    Some((at, OperandView { offset, strides }))
}

/// The strides of a strided array of `dims` reshaped to `to` without moving an element, when
/// that is possible: every group of `to`'s dimensions that spans a group of `dims`' must find
/// that group contiguous in itself (each stride the next one times its extent). Dimensions of
/// one element take any stride (they are never stepped).
fn reshaped_strides(dims: &[usize], strides: &[usize], to: &[usize]) -> Option<Vec<usize>> {
    let old: Vec<(usize, usize)> =
        dims.iter().zip(strides).filter(|&(&d, _)| d != 1).map(|(&d, &s)| (d, s)).collect();
    let mut new = vec![0usize; to.len()];
    let (mut o, mut n) = (0, 0);
    while o < old.len() {
        // Dimensions of one element before the group.
        while n < to.len() && to[n] == 1 {
            n += 1;
        }
        let (o_start, n_start) = (o, n);
        let (mut o_size, mut n_size) = (old[o].0, *to.get(n)?);
        (o, n) = (o + 1, n + 1);
        while o_size != n_size {
            if o_size < n_size {
                o_size = o_size.checked_mul(old.get(o)?.0)?;
                o += 1;
            } else {
                n_size = n_size.checked_mul(*to.get(n)?)?;
                n += 1;
            }
        }
        if (o_start..o - 1).any(|i| old[i].1 != old[i + 1].0.checked_mul(old[i + 1].1).unwrap_or(0))
        {
            return None;
        }
        let mut stride = old[o - 1].1;
        for i in (n_start..n).rev() {
            new[i] = stride;
            stride = stride.checked_mul(to[i])?;
        }
    }
    // What is left of `to` has one element (the sizes agree).
    to[n..].iter().all(|&d| d == 1).then_some(new)
}

impl OperandView {
    /// Whether every element of an operand of `dims` read through the view lies within a value
    /// of `len` elements.
    fn fits(&self, dims: &[usize], len: usize) -> bool {
        if dims.contains(&0) {
            return true;
        }
        let last = dims
            .iter()
            .zip(&self.strides)
            .try_fold(self.offset, |at, (&d, &s)| at.checked_add((d - 1).checked_mul(s)?));
        self.strides.len() == dims.len() && last.is_some_and(|last| last < len)
    }
}

/// Whether an operand whose gemm order is `perm` is in that order already (no copy needed).
fn in_gemm_order(perm: &[usize]) -> bool {
    perm.iter().enumerate().all(|(i, &p)| i == p)
}

/// The most elements of one product's operand that [`DotPlan::run_gathered`] gathers (1 MiB of
/// f32, what L2 holds): a larger one is transposed whole, once.
const GATHERED_MOST: usize = 1 << 18;

/// Where each product's operand lies in an operand of a batched dot: the strided slice that
/// transposing the whole operand into gemm order would have made its `i`-th block.
struct ProductSlices {
    /// Where the operand's first element lies in the value read.
    offset: i64,
    /// The batch dimensions' extents and strides in the operand, outermost first.
    batch: Vec<(usize, i64)>,
    /// One product's operand: its dimensions in gemm order, and their strides in the operand.
    dims: Vec<usize>,
    strides: Vec<i64>,
}

impl ProductSlices {
    /// For an operand of `dims` (read through `view` when it has one) whose gemm order is
    /// `perm`, its first `batch_rank` the batch.
    fn new(
        dims: &[usize],
        view: Option<&OperandView>,
        perm: &[usize],
        batch_rank: usize,
    ) -> ProductSlices {
        let (offset, strides) = match view {
            Some(view) => (view.offset, view.strides.clone()),
            None => (0, super::tensor::strides(dims)),
        };
        let at = |&d: &usize| (dims[d], strides[d] as i64);
        let (batch, product) = perm.split_at(batch_rank.min(perm.len()));
        ProductSlices {
            offset: offset as i64,
            batch: batch.iter().map(at).collect(),
            dims: product.iter().map(|&d| dims[d]).collect(),
            strides: product.iter().map(|&d| strides[d] as i64).collect(),
        }
    }

    /// Product `i`'s operand, copied out of `data` in gemm order.
    fn gather(&self, data: &Data, i: usize) -> Result<Data, Fail> {
        let (mut base, mut rest) = (self.offset, i);
        for &(extent, stride) in self.batch.iter().rev() {
            base += (rest % extent) as i64 * stride;
            rest /= extent;
        }
        Ok(dispatch!(data, v => strided(v, &self.dims, base, &self.strides)?))
    }
}

/// An operand of a dot: a value in the interpreter's storage, or an entry argument's float
/// elements of the given type as the caller's little-endian bytes, which the gemm and
/// [`FewRows`] read where they lie.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand<'a> {
    Data(&'a Data),
    Bytes(ElementType, &'a [u8]),
}

impl<'a> Operand<'a> {
    /// The elements as a value: borrowed, or decoded from the bytes.
    fn decoded(self) -> Result<std::borrow::Cow<'a, Data>, Fail> {
        match self {
            Operand::Data(data) => Ok(std::borrow::Cow::Borrowed(data)),
            Operand::Bytes(ty, bytes) => {
                Data::from_le_bytes(ty, bytes).map(std::borrow::Cow::Owned)
            }
        }
    }

    /// The elements as floats without a copy: `None` for other types, and for bytes not
    /// aligned to their element (or on a big-endian machine), which are decoded instead.
    fn floats(self) -> Option<Floats<'a>> {
        let (ty, bytes) = match self {
            Operand::Data(data) => return Floats::of(data),
            Operand::Bytes(..) if cfg!(target_endian = "big") => return None,
            Operand::Bytes(ty, bytes) => (ty, bytes),
        };
        let halves = || bytemuck::try_cast_slice::<u8, u16>(bytes).ok();
        match ty {
            ElementType::F32 => bytemuck::try_cast_slice::<u8, f32>(bytes).ok().map(Floats::F32),
            ElementType::Bf16 => halves().map(Floats::Bf16),
            ElementType::F16 => halves().map(Floats::F16),
            _ => ty.small_float().filter(|f| f.bits() == 8).map(|f| Floats::F8(bytes, f)),
        }
    }

    /// The value, when the operand is one.
    fn data(self) -> Option<&'a Data> {
        match self {
            Operand::Data(data) => Some(data),
            Operand::Bytes(..) => None,
        }
    }

    /// Whether the elements are f32 (in either form).
    fn is_f32(self) -> bool {
        match self {
            Operand::Data(data) => data.ty() == ElementType::F32,
            Operand::Bytes(ty, _) => ty == ElementType::F32,
        }
    }
}

impl DotPlan {
    /// Whether operand `side` (0 for the lhs, 1 for the rhs) is read by the packed gemm in
    /// place when both operands are f32: it is in gemm order already, and the product is one the
    /// packed kernel takes (so never one for [`FewRows`], which needs fewer rows). A caller may
    /// then hand that operand to [`DotPlan::run_operands`] as bytes, saving a copy.
    pub(crate) fn reads_f32_in_place(&self, side: usize) -> bool {
        let kernel = packed_gemm::chosen();
        let perm = if side == 0 { &self.lhs_perm } else { &self.rhs_perm };
        self.views == [None, None]
            && in_gemm_order(perm)
            && kernel != Kernel::Portable
            && self.m >= kernel.tile_rows() / 2
            && self.n >= 16
            && self.k > 0
    }

    /// [`DotPlan::run`] on operands that may be bytes. An f32 product whose operands are both in
    /// gemm order runs on the packed gemm straight from the bytes, computing what
    /// [`DotPlan::run`] computes from the decoded values (the same panels, the same sums);
    /// anything else decodes the bytes first.
    pub(crate) fn run_operands(
        &self,
        lhs: Operand<'_>,
        rhs: Operand<'_>,
        out_ty: ElementType,
        budget: u64,
        pool: &BufferPool,
    ) -> Result<Data, Fail> {
        if self.views.iter().any(Option::is_some) {
            let (lhs, rhs) = (lhs.decoded()?, rhs.decoded()?);
            return self.run(&lhs, &rhs, out_ty, budget, pool);
        }
        let in_place = lhs.is_f32()
            && rhs.is_f32()
            && compute_type(ElementType::F32, ElementType::F32, out_ty) == ElementType::F32
            && self.reads_f32_in_place(0)
            && self.reads_f32_in_place(1);
        if !in_place {
            if let Some(result) = self.run_views(lhs, rhs, out_ty, budget, pool)? {
                return Ok(result);
            }
            let (lhs, rhs) = (lhs.decoded()?, rhs.decoded()?);
            return self.run(&lhs, &rhs, out_ty, budget, pool);
        }
        let (m, k, n) = (self.m, self.k, self.n);
        let mut c = self.sums(budget, pool)?;
        let kernel = packed_gemm::chosen();
        let threads = threads_for(m * n * k, n / 16);
        // Whether every product found its packing buffer.
        let done = std::sync::atomic::AtomicBool::new(true);
        self.each_product(&mut c, |i, c| {
            let a = f32_range(lhs, i * m * k, m * k);
            let b = f32_range(rhs, i * k * n, k * n);
            let made = match (a, b) {
                (F32Source::Values(a), F32Source::Values(b)) => {
                    packed_gemm::gemm(kernel, a, b, c, (m, k, n), threads)
                }
                (F32Source::Values(a), F32Source::Bytes(b)) => {
                    packed_gemm::gemm(kernel, a, b, c, (m, k, n), threads)
                }
                (F32Source::Bytes(a), F32Source::Values(b)) => {
                    packed_gemm::gemm(kernel, a, b, c, (m, k, n), threads)
                }
                (F32Source::Bytes(a), F32Source::Bytes(b)) => {
                    packed_gemm::gemm(kernel, a, b, c, (m, k, n), threads)
                }
            };
            if !made {
                done.store(false, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(())
        })?;
        let result = Data::F32(c);
        if !done.into_inner() {
            // No packing buffer to be had: the general path, from decoded values.
            pool.give(result);
            let (lhs, rhs) = (lhs.decoded()?, rhs.decoded()?);
            return self.run(&lhs, &rhs, out_ty, budget, pool);
        }
        if out_ty == ElementType::F32 {
            return Ok(result);
        }
        let rounded = rounded_copy(&result, out_ty);
        pool.give(result);
        rounded
    }
}

/// Storage for `n` f32 sums of depth `k`: a pooled buffer's stale elements as they are, since
/// every gemm here writes each sum before it adds to it (the packed kernel's first depth block
/// stores, matrixmultiply runs with β = 0), so only its tail past the stale length is zeroed;
/// zeros throughout for an empty sum (`k = 0`), which no kernel writes.
fn sums_storage(spare: Option<Vec<f32>>, n: usize, k: usize) -> Result<Vec<f32>, Fail> {
    let mut c = match spare {
        Some(v) if v.capacity() >= n => v,
        _ => super::tensor::try_alloc(n)?,
    };
    c.resize(n, 0.0);
    if k == 0 {
        c.fill(0.0);
    }
    Ok(c)
}

/// An f32 operand as the packed gemm reads it.
enum F32Source<'a> {
    Values(&'a [f32]),
    Bytes(F32Bytes<'a>),
}

/// Elements `start .. start + len` of an f32 operand (an empty source for any other type,
/// which the gemm's length check then declines).
fn f32_range(operand: Operand<'_>, start: usize, len: usize) -> F32Source<'_> {
    match operand {
        Operand::Data(Data::F32(v)) => F32Source::Values(&v[start..start + len]),
        Operand::Data(_) => F32Source::Values(&[]),
        Operand::Bytes(_, bytes) => {
            let bytes = &bytes[start * 4..(start + len) * 4];
            // Aligned bytes on a little-endian machine are the f32 values themselves, which
            // the packing copies a vector at a time; otherwise each element is decoded.
            match bytemuck::try_cast_slice::<u8, f32>(bytes) {
                Ok(values) if cfg!(target_endian = "little") => F32Source::Values(values),
                _ => F32Source::Bytes(F32Bytes(bytes)),
            }
        }
    }
}

/// The most rows [`FewRows`] takes (fewer than half of the tallest row band, `tile_rows`).
const FEW_ROWS: usize = 5;

/// An operand's dimensions and which of its axes are batch, free and contracting (each list in
/// the order the dot pairs or outputs them).
struct Side<'p> {
    dims: &'p [usize],
    batch: &'p [usize],
    free: &'p [usize],
    contracting: &'p [usize],
}

/// `c[batch][rows][cols]` of `Σ_p rows[batch][i][p] · stream[batch][p][j]` by [`FewRows`]: the
/// operand of few rows is arranged as `[batch, rows, k]` (a copy only when it is not in that
/// order already), the other is read where it lies through [`RhsOffsets`], in the order of its
/// memory ([`BatchWalk`]). `None` when the types differ or neither the free nor the contracting
/// elements of `stream` are contiguous.
fn few_rows_product(
    kernel: Kernel,
    (a, rows, rows_side): (Floats<'_>, Option<&Data>, Side<'_>),
    (b, _, stream_side): (Floats<'_>, Option<&Data>, Side<'_>),
    (batch, m, k, n): (usize, usize, usize, usize),
    budget: u64,
) -> Result<Option<Vec<f32>>, Fail> {
    if std::mem::discriminant(&a) != std::mem::discriminant(&b) {
        return Ok(None);
    }
    let offsets = RhsOffsets {
        depth: offsets(stream_side.dims, stream_side.contracting)?,
        cols: offsets(stream_side.dims, stream_side.free)?,
    };
    let contiguous = |o: &[usize]| o.iter().enumerate().all(|(i, &x)| x == o[0] + i);
    // Columns are read a batch at a time (walked by nothing), as before: a walk through memory
    // that visited the heads of a cache in turn for each position was no faster for one query
    // over a `[4, 1024, 8, 64]` bf16 cache (0.58-0.90 ms against 0.50-0.83 ms, under load).
    let (layout, walked) = if contiguous(&offsets.cols) {
        (Layout::RowsOfRhs, stream_side.contracting)
    } else if contiguous(&offsets.depth) {
        (Layout::ColumnsOfRhs, &[][..])
    } else {
        return Ok(None);
    };
    let walk = BatchWalk::new(stream_side.dims, stream_side.batch, walked)?;
    let out_elems = batch * m * n;
    super::shape::check_budget(
        Some((out_elems as u64).saturating_mul(8)),
        budget.saturating_mul(2),
    )?;
    let perm: Vec<usize> = rows_side
        .batch
        .iter()
        .chain(rows_side.free)
        .chain(rows_side.contracting)
        .copied()
        .collect();
    let rows_t = if in_gemm_order(&perm) {
        None
    } else {
        let copied;
        let rows = match rows {
            Some(rows) => rows,
            None => {
                copied = a.to_data()?;
                &copied
            }
        };
        Some(transpose(rows, rows_side.dims, &perm)?)
    };
    let a = match &rows_t {
        Some(t) => Floats::of(t).ok_or_else(|| Fail::Internal("transposed rows".into()))?,
        None => a,
    };
    let mut c = filled(out_elems, 0.0f32)?;
    let mut a_rows = filled(batch * m * k, 0.0f32)?;
    let shape = (m, k, n);
    let (offsets, walk, c_out, a_out) = (&offsets, &walk, &mut c, &mut a_rows);
    macro_rules! run {
        ($a:expr, $b:expr) => {
            run_few_rows(
                kernel,
                FewRows { a: $a, b: $b, offsets, walk, layout, shape, c: c_out, a_rows: a_out },
            )
        };
    }
    match (a, b) {
        (Floats::F32(a), Floats::F32(b)) => run!(a, b),
        (Floats::Bf16(a), Floats::Bf16(b)) => run!(Bf16Bits(a), Bf16Bits(b)),
        (Floats::F16(a), Floats::F16(b)) => run!(F16Bits(a), F16Bits(b)),
        (Floats::F8(a, fa), Floats::F8(b, fb)) => run!(
            F8Bits { bits: a, values: packed_gemm::f8_values(fa) },
            F8Bits { bits: b, values: packed_gemm::f8_values(fb) }
        ),
        _ => return Ok(None),
    }
    Ok(Some(c))
}

/// Row-major offsets into an array of `dims` of every multi-index over `axes`, in order (the
/// last axis fastest); one offset, zero, for no axes.
fn offsets(dims: &[usize], axes: &[usize]) -> Result<Vec<usize>, Fail> {
    Ok(index_offsets(dims, axes, axes)?.into_iter().map(|(_, offset)| offset).collect())
}

/// For every multi-index over `some` (a subset of `all`, in `all`'s order; the last axis
/// fastest): its position among the multi-indices over `all` (row-major), and its row-major
/// offset into an array of `dims`.
fn index_offsets(
    dims: &[usize],
    all: &[usize],
    some: &[usize],
) -> Result<Vec<(usize, usize)>, Fail> {
    let strides = super::tensor::strides(dims);
    let positions = super::tensor::strides(&all.iter().map(|&a| dims[a]).collect::<Vec<_>>());
    let position_of = |axis: usize| all.iter().position(|&a| a == axis).map_or(0, |i| positions[i]);
    let sizes: Vec<usize> = some.iter().map(|&a| dims[a]).collect();
    let count: usize = sizes.iter().product();
    let mut out = super::tensor::try_alloc(count)?;
    if count == 0 {
        return Ok(out);
    }
    let mut index = vec![0usize; some.len()];
    loop {
        let terms = index.iter().zip(some);
        let position = terms.clone().map(|(&i, &a)| i * position_of(a)).sum();
        out.push((position, terms.map(|(&i, &a)| i * strides[a]).sum()));
        if !super::tensor::next_index(&mut index, &sizes) {
            break;
        }
    }
    Ok(out)
}

/// Where the rhs element of contracting index `p` and free index `j` sits in the rhs's own
/// layout, past its batch's offset ([`BatchWalk`]): at `depth[p] + cols[j]`.
struct RhsOffsets {
    depth: Vec<usize>,
    cols: Vec<usize>,
}

/// The order in which [`FewRows`] visits the rhs's batches, so that it reads the rhs in the
/// order of its memory: batch axes that lie outside the walked index (the one that is not
/// contiguous) are `outer`, those inside it (the heads of a cache `[b, len, h, d]`) are `inner`,
/// and the walk is `outer`, then the walked index, then `inner`. Each entry is a batch's part
/// of the batch number and of the offset; a batch's are the sums of an outer and an inner entry.
/// Every sum still adds its terms in the contracting order, so the order of visits changes no
/// result. The heads of a cache are inner: [`RowBlock`] sums a few of them side by side from one
/// contiguous run per position, instead of one head's strided runs (a 64-element run every
/// kilobyte) at a time.
struct BatchWalk {
    outer: Vec<(usize, usize)>,
    inner: Vec<(usize, usize)>,
}

impl BatchWalk {
    fn new(dims: &[usize], batch: &[usize], walked: &[usize]) -> Result<BatchWalk, Fail> {
        let strides = super::tensor::strides(dims);
        let walked_stride = walked.iter().filter(|&&a| dims[a] > 1).map(|&a| strides[a]).max();
        let inside = |a: usize| dims[a] > 1 && walked_stride.is_some_and(|s| strides[a] < s);
        let inner: Vec<usize> = batch.iter().copied().filter(|&a| inside(a)).collect();
        let outer: Vec<usize> = batch.iter().copied().filter(|&a| !inside(a)).collect();
        Ok(BatchWalk {
            outer: index_offsets(dims, batch, &outer)?,
            inner: index_offsets(dims, batch, &inner)?,
        })
    }
}

/// Which of the rhs's index runs is contiguous, and so how [`FewRows`] walks it.
#[derive(Clone, Copy)]
enum Layout {
    /// The free elements (a row of the `k × n` matrix): each row of `c` gathers `a[i][p]` times
    /// that row, for `p` in order.
    RowsOfRhs,
    /// The contracting elements (a column of the matrix): each `c[i][j]` is one dot product.
    ColumnsOfRhs,
}

/// `c[batch][m][n]`, zeroed, accumulates `a[batch][m][k]` (row-major) times the rhs read
/// through [`RhsOffsets`] and [`BatchWalk`]; `a_rows` holds `a` widened to f32.
struct FewRows<'r, A, B> {
    a: A,
    b: B,
    offsets: &'r RhsOffsets,
    walk: &'r BatchWalk,
    layout: Layout,
    shape: (usize, usize, usize),
    c: &'r mut [f32],
    a_rows: &'r mut [f32],
}

/// Runs `job` with the SIMD token of `kernel` (scalar lanes when the CPU has none of ours).
fn run_few_rows<A: Source, B: Source>(kernel: Kernel, job: FewRows<'_, A, B>) {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        let v4 = if kernel == Kernel::Avx512 { pulp::x86::V4::try_new() } else { None };
        let v3 = if kernel == Kernel::Avx2 { pulp::x86::V3::try_new() } else { None };
        if let Some(simd) = v4 {
            return Simd::vectorize(simd, job);
        }
        if let Some(simd) = v3 {
            return Simd::vectorize(simd, job);
        }
    }
    #[cfg(target_arch = "aarch64")]
    if kernel == Kernel::Neon
        && let Some(simd) = pulp::aarch64::Neon::try_new()
    {
        return Simd::vectorize(simd, job);
    }
    let _ = kernel;
    Simd::vectorize(pulp::Scalar256b, job)
}

/// Elements of the rhs widened at a time.
const CHUNK: usize = 256;

/// Rhs rows (of the contiguous free elements) [`FewRows`] adds to a vector of sums between its
/// load and its store.
const DEPTH_BLOCK: usize = 8;

impl<A: Source, B: Source> pulp::WithSimd for FewRows<'_, A, B> {
    type Output = ();

    // Everything called here is inlined, so that it is compiled with the token's instructions.
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let FewRows { a, b, offsets, walk, layout, shape: (m, k, n), c, a_rows } = self;
        a.widen(0, a_rows);
        match layout {
            // Past the register blocks, columns a chunk at a time, so that the chunk of `c` the
            // rows add to stays in the first-level cache while every rhs row passes, and
            // DEPTH_BLOCK rows at a time, so that each vector of sums is loaded and stored once
            // per block instead of once per row. Each sum still takes its terms one fused
            // multiply-add at a time, in the contracting order.
            Layout::RowsOfRhs => {
                let mut spill = [0.0f32; DEPTH_BLOCK * CHUNK];
                for &(outer, outer_offset) in &walk.outer {
                    // Whole blocks of columns are summed in registers, for a few batches at a time
                    // ([`RowBlock`]); the columns past them a chunk at a time.
                    for inner in walk.inner.chunks((ROW_BLOCK / m).max(1)) {
                        let mut batches = [(0, 0); ROW_BLOCK];
                        for (batch, &(b, offset)) in batches.iter_mut().zip(inner) {
                            *batch = (outer + b, outer_offset + offset + offsets.cols[0]);
                        }
                        let block = RowBlock {
                            rhs: b,
                            depth: &offsets.depth,
                            batches: &batches[..inner.len()],
                            m,
                            rows: a_rows,
                            c,
                            n,
                        };
                        let blocked = match (inner.len(), m) {
                            (1, 1) => block.run::<S, 1, 1>(simd),
                            (2, 1) => block.run::<S, 2, 1>(simd),
                            (3, 1) => block.run::<S, 3, 1>(simd),
                            (4, 1) => block.run::<S, 4, 1>(simd),
                            (1, 2) => block.run::<S, 1, 2>(simd),
                            (2, 2) => block.run::<S, 2, 2>(simd),
                            (1, 3) => block.run::<S, 1, 3>(simd),
                            (1, 4) => block.run::<S, 1, 4>(simd),
                            (1, 5) => block.run::<S, 1, 5>(simd),
                            _ => 0,
                        };
                        for j0 in (blocked..n).step_by(CHUNK) {
                            let w = CHUNK.min(n - j0);
                            for p0 in (0..k).step_by(DEPTH_BLOCK) {
                                let depth = &offsets.depth[p0..k.min(p0 + DEPTH_BLOCK)];
                                let rows = &mut spill[..depth.len() * w];
                                for &(batch, start) in &batches[..inner.len()] {
                                    for (row, &d) in rows.chunks_exact_mut(w).zip(depth) {
                                        b.widen(start + d + j0, row);
                                    }
                                    let c = &mut c[batch * m * n..(batch + 1) * m * n];
                                    for i in 0..m {
                                        let x = &a_rows[(batch * m + i) * k + p0..][..depth.len()];
                                        let out = &mut c[i * n + j0..i * n + j0 + w];
                                        add_rows(simd, x, rows, out);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Layout::ColumnsOfRhs => {
                let lanes = packed_gemm::lanes::<S>();
                let block = ColumnBlock { rhs: b, cols: &offsets.cols, walk, m, rows: a_rows, c };
                let done = if k % lanes == 0 && offsets.depth[0] == 0 {
                    // Up to 64 elements of depth: four vectors of AVX-512, eight of AVX2 (an
                    // attention head of 64 on an AVX2 CPU took the general loop, three times
                    // as long).
                    match k / lanes {
                        1 => block.run::<S, 1>(simd),
                        2 => block.run::<S, 2>(simd),
                        3 => block.run::<S, 3>(simd),
                        4 => block.run::<S, 4>(simd),
                        5 => block.run::<S, 5>(simd),
                        6 => block.run::<S, 6>(simd),
                        7 => block.run::<S, 7>(simd),
                        8 => block.run::<S, 8>(simd),
                        _ => false,
                    }
                } else {
                    false
                };
                if done {
                    return;
                }
                let mut spill = [0.0f32; CHUNK];
                for &(outer, outer_offset) in &walk.outer {
                    for (j, &col) in offsets.cols.iter().enumerate() {
                        for &(inner, inner_offset) in &walk.inner {
                            let batch = outer + inner;
                            let column = outer_offset + inner_offset + col + offsets.depth[0];
                            let rows = &a_rows[batch * m * k..(batch + 1) * m * k];
                            let c = &mut c[batch * m * n..(batch + 1) * m * n];
                            for p0 in (0..k).step_by(CHUNK) {
                                let w = CHUNK.min(k - p0);
                                b.widen(column + p0, &mut spill[..w]);
                                for i in 0..m {
                                    let row = &rows[i * k + p0..i * k + p0 + w];
                                    c[i * n + j] += dot(simd, row, &spill[..w]);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// [`FewRows`]'s sums of columns of `V` whole vectors (the depth, at most 64 elements: four
/// vectors of AVX-512, eight of AVX2): each one [`dot`]'s sum, term for term, the column widened
/// once for all rows and held in registers, and no loops of unknown length; the general loop
/// spent four times as long per column (the query over a `[4, 1024, 8, 64]` bf16 cache: 590 µs
/// against 237 µs, with the copy-in of the cache). `false`, with nothing done, when the vectors are too wide for its spill.
struct ColumnBlock<'r, B> {
    rhs: B,
    cols: &'r [usize],
    walk: &'r BatchWalk,
    m: usize,
    rows: &'r [f32],
    c: &'r mut [f32],
}

impl<B: Source> ColumnBlock<'_, B> {
    #[inline(always)]
    fn run<S: Simd, const V: usize>(self, simd: S) -> bool {
        let ColumnBlock { rhs, cols, walk, m, rows, c } = self;
        let lanes = packed_gemm::lanes::<S>();
        let k = V * lanes;
        let n = cols.len();
        let mut spill = [0.0f32; 4 * 16];
        if k > spill.len() {
            return false;
        }
        let spill = &mut spill[..k];
        for &(outer, outer_offset) in &walk.outer {
            for &(inner, inner_offset) in &walk.inner {
                let batch = outer + inner;
                let rows = &rows[batch * m * k..(batch + 1) * m * k];
                let c = &mut c[batch * m * n..(batch + 1) * m * n];
                for (j, &col) in cols.iter().enumerate() {
                    rhs.widen(outer_offset + inner_offset + col, spill);
                    let (y, _) = S::as_simd_f32s(spill);
                    let y: [S::f32s; V] = std::array::from_fn(|v| y[v]);
                    for (i, row) in rows.chunks_exact(k).enumerate() {
                        let (x, _) = S::as_simd_f32s(row);
                        let mut acc = simd.splat_f32s(0.0);
                        for (&x, &y) in x.iter().zip(&y) {
                            acc = simd.mul_add_e_f32s(x, y, acc);
                        }
                        // `dot`'s empty tail, added as it adds it.
                        c[i * n + j] += simd.reduce_sum_f32s(acc) + 0.0;
                    }
                }
            }
        }
        true
    }
}

/// The columns of [`FewRows`]'s sums for a few batches (each `(batch, offset of its rhs rows)`:
/// `rows[batch]`, `m × k`, times the rhs rows at `offset + depth[p]`), `G` batches of `M` rows
/// of sums, in blocks of [`ROW_BLOCK`] vectors, each block summed in registers over the
/// whole depth and stored once: the rhs is read once, a block of a row at a time, and the sums
/// never go through memory (adding into `c` row by row had bounded the product by its loads and
/// stores, at a third of this speed). Each sum takes its terms one fused multiply-add at a time
/// in the contracting order, from zero, as [`axpy`] into zeroed sums does. Returns how many
/// leading columns it computed (whole blocks only).
struct RowBlock<'r, B> {
    rhs: B,
    depth: &'r [usize],
    batches: &'r [(usize, usize)],
    m: usize,
    rows: &'r [f32],
    c: &'r mut [f32],
    n: usize,
}

/// Vectors of columns [`RowBlock`] sums at a time, per row; and the most batches it takes.
const ROW_BLOCK: usize = 4;

impl<B: Source> RowBlock<'_, B> {
    #[inline(always)]
    fn run<S: Simd, const G: usize, const M: usize>(self, simd: S) -> usize {
        let RowBlock { rhs, depth, batches, m, rows, c, n } = self;
        let k = depth.len();
        let lanes = packed_gemm::lanes::<S>();
        let width = ROW_BLOCK * lanes;
        let mut spill = [0.0f32; ROW_BLOCK * 16];
        if width > spill.len() || batches.len() != G || m != M {
            return 0;
        }
        let spill = &mut spill[..width];
        let batches: [(usize, usize); G] = std::array::from_fn(|g| batches[g]);
        let blocks = n / width;
        for block in 0..blocks {
            let j0 = block * width;
            let mut sums = [[[simd.splat_f32s(0.0); ROW_BLOCK]; M]; G];
            for (p, &d) in depth.iter().enumerate() {
                for (&(batch, offset), sums) in batches.iter().zip(&mut sums) {
                    rhs.widen(offset + d + j0, spill);
                    let (y, _) = S::as_simd_f32s(spill);
                    let y: [S::f32s; ROW_BLOCK] = std::array::from_fn(|v| y[v]);
                    for (i, sums) in sums.iter_mut().enumerate() {
                        let x = simd.splat_f32s(rows[(batch * M + i) * k + p]);
                        for (sum, &y) in sums.iter_mut().zip(&y) {
                            *sum = simd.mul_add_e_f32s(x, y, *sum);
                        }
                    }
                }
            }
            for (&(batch, _), sums) in batches.iter().zip(&sums) {
                for (i, sums) in sums.iter().enumerate() {
                    let at = (batch * M + i) * n + j0;
                    let (out, _) = S::as_mut_simd_f32s(&mut c[at..at + width]);
                    out.copy_from_slice(sums);
                }
            }
        }
        blocks * width
    }
}

/// `out += Σ_r xs[r] · rows[r]` (each row as long as `out`, one after the other in `rows`),
/// each element taking its terms one fused multiply-add at a time in the order of `r`, as
/// repeated [`axpy`]s would, but loaded and stored once.
#[inline(always)]
fn add_rows<S: Simd>(simd: S, xs: &[f32], rows: &[f32], out: &mut [f32]) {
    let w = out.len();
    if xs.len() == DEPTH_BLOCK {
        let mut heads: [&[S::f32s]; DEPTH_BLOCK] = [&[]; DEPTH_BLOCK];
        for (head, row) in heads.iter_mut().zip(rows.chunks_exact(w)) {
            *head = S::as_simd_f32s(row).0;
        }
        let mut splats = [simd.splat_f32s(0.0); DEPTH_BLOCK];
        for (splat, &x) in splats.iter_mut().zip(xs) {
            *splat = simd.splat_f32s(x);
        }
        let (out_head, out_tail) = S::as_mut_simd_f32s(out);
        let vectors = heads.iter().map(|h| h.len()).min().unwrap_or(0).min(out_head.len());
        // Four vectors of sums side by side, so that four chains of multiply-adds overlap.
        let mut quads = out_head[..vectors].chunks_exact_mut(4);
        for (q, o) in (&mut quads).enumerate() {
            let mut sums = [o[0], o[1], o[2], o[3]];
            for (splat, head) in splats.iter().zip(&heads) {
                let head = &head[q * 4..q * 4 + 4];
                for (sum, &y) in sums.iter_mut().zip(head) {
                    *sum = simd.mul_add_e_f32s(*splat, y, *sum);
                }
            }
            o.copy_from_slice(&sums);
        }
        let rest = vectors - quads.into_remainder().len();
        for (v, o) in out_head.iter_mut().enumerate().skip(rest) {
            let mut sum = *o;
            for (splat, head) in splats.iter().zip(&heads) {
                sum = simd.mul_add_e_f32s(*splat, head[v], sum);
            }
            *o = sum;
        }
        let done = w - out_tail.len();
        for (t, o) in out_tail.iter_mut().enumerate() {
            for (&x, row) in xs.iter().zip(rows.chunks_exact(w)) {
                *o = x.mul_add(row[done + t], *o);
            }
        }
    } else {
        for (&x, row) in xs.iter().zip(rows.chunks_exact(w)) {
            axpy(simd, x, row, out);
        }
    }
}

/// `out += x · y`, elementwise.
#[inline(always)]
fn axpy<S: Simd>(simd: S, x: f32, y: &[f32], out: &mut [f32]) {
    let (y_head, y_tail) = S::as_simd_f32s(y);
    let (out_head, out_tail) = S::as_mut_simd_f32s(out);
    let xs = simd.splat_f32s(x);
    for (o, &v) in out_head.iter_mut().zip(y_head) {
        *o = simd.mul_add_e_f32s(xs, v, *o);
    }
    for (o, &v) in out_tail.iter_mut().zip(y_tail) {
        *o = x.mul_add(v, *o);
    }
}

/// `Σ x[p] · y[p]`, in lanes, then across them.
#[inline(always)]
fn dot<S: Simd>(simd: S, x: &[f32], y: &[f32]) -> f32 {
    let (x_head, x_tail) = S::as_simd_f32s(x);
    let (y_head, y_tail) = S::as_simd_f32s(y);
    let mut acc = simd.splat_f32s(0.0);
    for (&u, &v) in x_head.iter().zip(y_head) {
        acc = simd.mul_add_e_f32s(u, v, acc);
    }
    let tail: f32 = x_tail.iter().zip(y_tail).fold(0.0, |sum, (&u, &v)| u.mul_add(v, sum));
    simd.reduce_sum_f32s(acc) + tail
}

/// The f32 (or f64, or i64) sums of a dot or convolution in the instruction's type: rounded once
/// per element, to nearest even; bf16 and f16 on fast paths of their own, since the general
/// conversion goes through f64 and showed in the profile of a narrow dot as much as the gemm.
pub(crate) fn round_result(result: Data, ty: ElementType) -> Result<Data, Fail> {
    if result.ty() == ty { Ok(result) } else { rounded_copy(&result, ty) }
}

/// [`round_result`], giving the sums' storage back to `pool` when they are rounded.
fn finish(result: Data, out_ty: ElementType, pool: &BufferPool) -> Result<Data, Fail> {
    if result.ty() == out_ty {
        return Ok(result);
    }
    let rounded = rounded_copy(&result, out_ty);
    pool.give(result);
    rounded
}

/// [`round_result`] of sums not of type `ty`, leaving them to the caller (to give back to a
/// pool).
fn rounded_copy(result: &Data, ty: ElementType) -> Result<Data, Fail> {
    let narrowed = |v: &[f32], round: fn(f32) -> u16| -> Result<Vec<u16>, Fail> {
        let mut out = super::tensor::try_alloc(v.len())?;
        out.extend(v.iter().map(|&x| round(x)));
        Ok(out)
    };
    match (result, ty) {
        (Data::F32(v), ElementType::Bf16) => {
            // The crate's bf16 rounding (canonical NaN, as `SmallFloat::encode_f32`) in a loop
            // compiled for the CPU's vectors: element by element it was 3 % of the bf16
            // transformer.
            let mut out = super::tensor::try_alloc(v.len())?;
            super::math::extend_bf16(v, &mut out, super::simd::arch());
            Ok(Data::Bf16(out))
        }
        (Data::F32(v), ElementType::F16) => Ok(Data::F16(narrowed(v, f32_to_f16)?)),
        _ => convert(result, ty),
    }
}

/// f32 to binary16, rounded to nearest even, in f32 and integer steps only (the general encoder
/// works in f64): overflow and infinity give infinity, NaN the quiet NaN of that sign.
pub(crate) fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let magnitude = bits & 0x7fff_ffff;
    let half = if magnitude >= 0x4780_0000 {
        // 65536 and above (finite or not); values just below round up to infinity further down.
        if magnitude > 0x7f80_0000 { 0x7e00 } else { 0x7c00 }
    } else if magnitude < 0x3880_0000 {
        // Below 2^-14, a subnormal half or zero: adding 2^-1 aligns the ten kept bits at the
        // bottom of the sum's mantissa, and the f32 addition rounds them to nearest even.
        let aligner = f32::from_bits((126 << 23) as u32);
        let sum = f32::from_bits(magnitude) + aligner;
        (sum.to_bits() - aligner.to_bits()) as u16
    } else {
        // A normal half: rebias the exponent and round the 13 dropped bits to nearest even (a
        // carry out of the mantissa bumps the exponent, up to infinity).
        let odd = (magnitude >> 13) & 1;
        let rebiased = magnitude - ((127 - 15) << 23);
        ((rebiased + 0xfff + odd) >> 13) as u16
    };
    sign | half
}

/// A row-major `c[m×n] = a[m×k] · b[k×n]` kernel: `(a, b, c, m, k, n)`.
pub(crate) type Gemm<T> = fn(&[T], &[T], &mut [T], usize, usize, usize);

/// `data` as `ty`: borrowed when it already is, converted otherwise.
fn as_type(data: &Data, ty: ElementType) -> Result<std::borrow::Cow<'_, Data>, Fail> {
    if data.ty() == ty {
        Ok(std::borrow::Cow::Borrowed(data))
    } else {
        convert(data, ty).map(std::borrow::Cow::Owned)
    }
}

/// The type a dot or convolution multiplies in.
pub(crate) fn compute_type(lhs: ElementType, rhs: ElementType, out: ElementType) -> ElementType {
    if [lhs, rhs, out].iter().all(|t| !t.is_float()) {
        ElementType::S64
    } else if [lhs, rhs, out].contains(&ElementType::F64) {
        ElementType::F64
    } else {
        ElementType::F32
    }
}

/// The parts a product of `work` multiply-adds splits into, by at most `rows` rows or columns:
/// one below 2^22 (a lower bound split attention's 2^20 products one at a time by columns,
/// where they run better side by side as a batch).
pub(crate) fn threads_for(work: usize, rows: usize) -> usize {
    threads_from(work, rows, 1 << 22)
}

/// [`threads_for`] with the least work that splits.
fn threads_from(work: usize, rows: usize, least: usize) -> usize {
    if work < least || rows < 2 {
        return 1;
    }
    super::par::cores().min(rows).min(8)
}

/// The least work of a [`float_gemm`] product that splits its rows over the cores. What comes
/// there is narrow (fewer than 16 columns, under the packed gemm's panel) or has no packed
/// kernel, and matrixmultiply runs it at a third of the packed speed, so halving it pays sooner:
/// the MLP's last layer (256×1024·1024×10, 2.6 × 10^6) took 160 µs on one core.
const GENERAL_SPLIT_WORK: usize = 1 << 20;

/// The gemm kernel a dot or convolution uses on this machine: `"avx512"`, `"avx2"`, `"neon"`,
/// or `"portable"` (matrixmultiply for f32, scalar lanes for narrow floats). The environment
/// variable `NRTSIM_GEMM` (read once) picks another of these names when the CPU runs it, as
/// benches do to compare kernels.
pub fn gemm_kernel() -> &'static str {
    packed_gemm::chosen().name()
}

/// `c[m×n] = a[m×k] · b[k×n]`, all row-major, with the chosen kernel ([`gemm_kernel`]).
pub(crate) fn gemm_f32(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    gemm_f32_by(packed_gemm::chosen(), a, b, c, (m, k, n));
}

/// [`gemm_f32`] with a given kernel: the packed one when the product is wide enough for its tile
/// not to be mostly padding, matrixmultiply otherwise (and for [`Kernel::Portable`]).
pub(crate) fn gemm_f32_by(
    kernel: Kernel,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
) {
    if kernel != Kernel::Portable && m >= kernel.tile_rows() / 2 && n >= 16 && k > 0 {
        let threads = threads_for(m * n * k, n / 16);
        if packed_gemm::gemm(kernel, a, b, c, (m, k, n), threads) {
            return;
        }
    }
    gemm_f32_general(a, b, c, m, k, n);
}

/// A float operand of a dot or convolution as the gemm reads it: f32 values, or the bits of a
/// narrow float, which the packed gemm widens panel by panel.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Floats<'a> {
    F32(&'a [f32]),
    Bf16(&'a [u16]),
    F16(&'a [u16]),
    F8(&'a [u8], SmallFloat),
}

impl<'a> Floats<'a> {
    /// `None` for f64 and non-float data.
    pub(crate) fn of(data: &'a Data) -> Option<Floats<'a>> {
        Some(match data {
            Data::F32(v) => Floats::F32(v),
            Data::Bf16(v) => Floats::Bf16(v),
            Data::F16(v) => Floats::F16(v),
            Data::F8e5m2(v) => Floats::F8(v, SmallFloat::F8e5m2),
            Data::F8e4m3fn(v) => Floats::F8(v, SmallFloat::F8e4m3fn),
            Data::F8e4m3(v) => Floats::F8(v, SmallFloat::F8e4m3),
            _ => return None,
        })
    }

    /// The element type.
    fn ty(self) -> ElementType {
        match self {
            Floats::F32(_) => ElementType::F32,
            Floats::Bf16(_) => ElementType::Bf16,
            Floats::F16(_) => ElementType::F16,
            Floats::F8(_, SmallFloat::F8e5m2) => ElementType::F8e5m2,
            Floats::F8(_, SmallFloat::F8e4m3fn) => ElementType::F8e4m3fn,
            Floats::F8(_, _) => ElementType::F8e4m3,
        }
    }

    /// The elements as a value of their own type (a copy).
    fn to_data(self) -> Result<Data, Fail> {
        fn copied<T: Copy>(v: &[T]) -> Result<Vec<T>, Fail> {
            let mut out = super::tensor::try_alloc(v.len())?;
            out.extend_from_slice(v);
            Ok(out)
        }
        Ok(match self {
            Floats::F32(v) => Data::F32(copied(v)?),
            Floats::Bf16(v) => Data::Bf16(copied(v)?),
            Floats::F16(v) => Data::F16(copied(v)?),
            Floats::F8(v, SmallFloat::F8e5m2) => Data::F8e5m2(copied(v)?),
            Floats::F8(v, SmallFloat::F8e4m3fn) => Data::F8e4m3fn(copied(v)?),
            Floats::F8(v, _) => Data::F8e4m3(copied(v)?),
        })
    }

    /// A widened copy (only where the gemm cannot read the operand in place).
    fn to_f32(self) -> Result<Vec<f32>, Fail> {
        let mut out = super::tensor::try_alloc(self.len())?;
        out.resize(self.len(), 0.0);
        match self {
            Floats::F32(v) => out.copy_from_slice(v),
            Floats::Bf16(v) => Bf16Bits(v).widen(0, &mut out),
            Floats::F16(v) => F16Bits(v).widen(0, &mut out),
            Floats::F8(v, format) => {
                F8Bits { bits: v, values: packed_gemm::f8_values(format) }.widen(0, &mut out);
            }
        }
        Ok(out)
    }

    fn len(self) -> usize {
        match self {
            Floats::F32(v) => v.len(),
            Floats::Bf16(v) | Floats::F16(v) => v.len(),
            Floats::F8(v, _) => v.len(),
        }
    }

    /// Elements `start .. start + len`.
    pub(crate) fn range(self, start: usize, len: usize) -> Floats<'a> {
        match self {
            Floats::F32(v) => Floats::F32(&v[start..start + len]),
            Floats::Bf16(v) => Floats::Bf16(&v[start..start + len]),
            Floats::F16(v) => Floats::F16(&v[start..start + len]),
            Floats::F8(v, format) => Floats::F8(&v[start..start + len], format),
        }
    }
}

/// [`gemm_floats`], or where it declines, the product of the two operands widened to f32 (mixed
/// types such as f32 with bf16, or no packing buffer to be had).
pub(crate) fn gemm_floats_or_widen(
    a: Floats<'_>,
    b: Floats<'_>,
    c: &mut [f32],
    m: usize,
    k: usize,
    n: usize,
) -> Result<(), Fail> {
    if !gemm_floats(a, b, c, m, k, n) {
        let (a, b) = (a.to_f32()?, b.to_f32()?);
        gemm_f32(&a, &b, c, m, k, n);
    }
    Ok(())
}

/// `c[m×n] = a[m×k] · b[k×n]` in f32 with the chosen kernel, reading narrow operands in place.
/// False, with `c` in any state, when the two are different types (other than two 8-bit
/// formats) or the packed gemm declines; f32 operands never decline.
pub(crate) fn gemm_floats(
    a: Floats<'_>,
    b: Floats<'_>,
    c: &mut [f32],
    m: usize,
    k: usize,
    n: usize,
) -> bool {
    gemm_floats_by(packed_gemm::chosen(), a, b, c, (m, k, n))
}

/// [`gemm_floats`] with a given kernel.
pub(crate) fn gemm_floats_by(
    kernel: Kernel,
    a: Floats<'_>,
    b: Floats<'_>,
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
) -> bool {
    let threads = threads_for(m.saturating_mul(n).saturating_mul(k), n / 16);
    let dims = (m, k, n);
    match (a, b) {
        (Floats::F32(a), Floats::F32(b)) => {
            gemm_f32_by(kernel, a, b, c, dims);
            true
        }
        (Floats::Bf16(a), Floats::Bf16(b)) => {
            packed_gemm::gemm(kernel, Bf16Bits(a), Bf16Bits(b), c, dims, threads)
        }
        (Floats::F16(a), Floats::F16(b)) => {
            packed_gemm::gemm(kernel, F16Bits(a), F16Bits(b), c, dims, threads)
        }
        (Floats::F8(a, a_format), Floats::F8(b, b_format)) => {
            let a = F8Bits { bits: a, values: packed_gemm::f8_values(a_format) };
            let b = F8Bits { bits: b, values: packed_gemm::f8_values(b_format) };
            packed_gemm::gemm(kernel, a, b, c, dims, threads)
        }
        _ => false,
    }
}

macro_rules! float_gemm {
    ($name:ident, $t:ty) => {
        /// `c[m×n] = a[m×k] · b[k×n]`, all row-major, through ndarray's `general_mat_mul`.
        pub(crate) fn $name(a: &[$t], b: &[$t], c: &mut [$t], m: usize, k: usize, n: usize) {
            if m == 0 || n == 0 {
                return;
            }
            if k == 0 {
                c.iter_mut().for_each(|x| *x = 0.0);
                return;
            }
            let threads = threads_from(m * n * k, m, GENERAL_SPLIT_WORK);
            let rows = super::par::per_part(m, threads, 1);
            let Ok(bv) = ArrayView2::from_shape((k, n), b) else { return };
            if threads == 1 {
                let (Ok(av), Ok(mut cv)) =
                    (ArrayView2::from_shape((m, k), a), ArrayViewMut2::from_shape((m, n), c))
                else {
                    return;
                };
                ndarray::linalg::general_mat_mul(1.0, &av, &bv, 0.0, &mut cv);
                return;
            }
            super::par::each(a.chunks(rows * k).zip(c.chunks_mut(rows * n)), |(a_rows, c_rows)| {
                let r = c_rows.len() / n;
                if let (Ok(av), Ok(mut cv)) = (
                    ArrayView2::from_shape((r, k), a_rows),
                    ArrayViewMut2::from_shape((r, n), c_rows),
                ) {
                    ndarray::linalg::general_mat_mul(1.0, &av, &bv, 0.0, &mut cv);
                }
            });
        }
    };
}
float_gemm!(gemm_f32_general, f32);
float_gemm!(gemm_f64, f64);

fn gemm_i64(a: &[i64], b: &[i64], c: &mut [i64], m: usize, k: usize, n: usize) {
    for i in 0..m {
        let row = &mut c[i * n..(i + 1) * n];
        row.iter_mut().for_each(|x| *x = 0);
        for p in 0..k {
            let x = a[i * k + p];
            for (out, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *out = out.wrapping_add(x.wrapping_mul(y));
            }
        }
    }
}

/// The textbook triple loop, the baseline of the benchmark.
pub fn naive_matmul(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    for i in 0..m {
        for j in 0..n {
            let mut sum = 0.0f32;
            for p in 0..k {
                sum += a[i * k + p] * b[p * n + j];
            }
            c[i * n + j] = sum;
        }
    }
}

// Compiling: the shape checks and attribute decoding for this family.

/// Shape checks and attribute decoding for `dot`.
pub(crate) fn compile_dot(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    let out = || shape.array();
    Ok(match cx.ins.opcode.as_str() {
        "dot" => {
            cx.arity(operands, 2)?;
            let numbers = ins.dot_dimension_numbers.clone().unwrap_or_default();
            Op::Dot(DotPlan::new(operands[0].array()?, operands[1].array()?, &numbers, out()?)?)
        }
        other => return Err(Fail::Internal(format!("opcode {other} is not compile_dot's"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `v` cut to values `ty` (f32 or bf16) holds exactly, so sums over them compare bit for bit.
    fn exact_in(ty: ElementType, v: Vec<f32>) -> Vec<f32> {
        match ty {
            ElementType::F32 => v,
            _ => v.iter().map(|&x| f32::from_bits(x.to_bits() & 0xffff_0000)).collect(),
        }
    }

    /// `v` (values `ty` holds exactly) as data of `ty`, f32 or bf16.
    fn encoded_as(ty: ElementType, v: &[f32]) -> Data {
        match ty {
            ElementType::F32 => Data::F32(v.to_vec()),
            _ => Data::Bf16(v.iter().map(|&x| (x.to_bits() >> 16) as u16).collect()),
        }
    }

    /// A dot's dimension numbers: batch then contracting axes of each side.
    fn dot_numbers(lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]) -> proto::DotDimensionNumbers {
        proto::DotDimensionNumbers {
            lhs_batch_dimensions: lb.to_vec(),
            rhs_batch_dimensions: rb.to_vec(),
            lhs_contracting_dimensions: lc.to_vec(),
            rhs_contracting_dimensions: rc.to_vec(),
        }
    }

    /// `len` values in -1..1 from a fixed xorshift sequence started from `seed`.
    fn unit_values(len: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state as f32 / u32::MAX as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn the_fast_f16_rounding_agrees_with_the_encoder() {
        // Every sign, exponent and top mantissa bits, with the low 13 bits (the ones a normal
        // half drops) at and around each rounding boundary, and a few from the middle.
        let lows = [0, 1, 0x7ff, 0xfff, 0x1000, 0x1001, 0x17ff, 0x1800, 0x1fff, 0x0a5a];
        for high in 0..1u32 << 19 {
            for low in lows {
                let x = f32::from_bits(high << 13 | low);
                let expected = SmallFloat::F16.encode_f32(x) as u16;
                assert_eq!(f32_to_f16(x), expected, "{x:e} ({:#010x})", x.to_bits());
            }
        }
    }

    /// `dot(lhs, rhs)` of an attention step over a cache `[b, len, h, d]` in its own layout, the
    /// way a decoder writes it: one query row per (batch, head), the cache neither transposed nor
    /// packed. `scores` contracts `d` (contiguous in the cache), `mix` contracts `len` (whose
    /// free elements `d` are contiguous). Expected values come from naive loops over the
    /// indices; small integers keep every sum exact in f32 and in bf16.
    #[test]
    fn few_row_dots_read_the_rhs_in_its_own_layout() {
        let (b, len, h, d) = (2usize, 37usize, 3usize, 20usize);
        let shape = |ty, dims: &[usize]| ArrayShape { ty, dims: dims.to_vec(), layout: None };
        let numbers = dot_numbers;
        let ints = |len: usize, seed: usize| -> Vec<f32> {
            (0..len).map(|i| ((i * 7 + seed * 13) % 9) as f32 - 4.0).collect()
        };
        let cache = ints(b * len * h * d, 1);
        let at =
            |bi: usize, l: usize, hi: usize, di: usize| cache[((bi * len + l) * h + hi) * d + di];
        // scores[b, h, q, l] = Σ_d q[b, q, h, d] · cache[b, l, h, d], q: [b, 1, h, d].
        let q = ints(b * h * d, 2);
        let mut scores = vec![0.0f32; b * h * len];
        for bi in 0..b {
            for hi in 0..h {
                for l in 0..len {
                    scores[(bi * h + hi) * len + l] =
                        (0..d).map(|di| q[(bi * h + hi) * d + di] * at(bi, l, hi, di)).sum();
                }
            }
        }
        // mix[b, h, q, d] = Σ_l p[b, h, q, l] · cache[b, l, h, d], p: [b, h, 1, len].
        let p = ints(b * h * len, 3);
        let mut mix = vec![0.0f32; b * h * d];
        for bi in 0..b {
            for hi in 0..h {
                for di in 0..d {
                    mix[(bi * h + hi) * d + di] =
                        (0..len).map(|l| p[(bi * h + hi) * len + l] * at(bi, l, hi, di)).sum();
                }
            }
        }
        // The same products with the cache as the lhs: one column (`mix`), and three queries,
        // whose columns come back transposed: cols[b, h, l, q] = Σ_d cache[b, l, h, d] ·
        // q3[b, q, h, d], q3: [b, 3, h, d].
        let q3 = ints(b * 3 * h * d, 4);
        let mut cols = vec![0.0f32; b * h * len * 3];
        for bi in 0..b {
            for hi in 0..h {
                for l in 0..len {
                    for qi in 0..3 {
                        cols[((bi * h + hi) * len + l) * 3 + qi] = (0..d)
                            .map(|di| at(bi, l, hi, di) * q3[((bi * 3 + qi) * h + hi) * d + di])
                            .sum();
                    }
                }
            }
        }
        let cases = [
            (
                q.clone(),
                vec![b, 1, h, d],
                false,
                numbers(&[0, 2], &[0, 2], &[3], &[3]),
                vec![b, h, 1, len],
                scores,
            ),
            (
                p.clone(),
                vec![b, h, 1, len],
                false,
                numbers(&[0, 1], &[0, 2], &[3], &[1]),
                vec![b, h, 1, d],
                mix.clone(),
            ),
            (
                p.clone(),
                vec![b, h, 1, len],
                true,
                numbers(&[0, 2], &[0, 1], &[1], &[3]),
                vec![b, h, d, 1],
                mix,
            ),
            (
                q3.clone(),
                vec![b, 3, h, d],
                true,
                numbers(&[0, 2], &[0, 2], &[3], &[3]),
                vec![b, h, len, 3],
                cols,
            ),
        ];
        for (x, x_dims, cache_first, dims, out_dims, expected) in cases {
            for ty in [ElementType::F32, ElementType::Bf16] {
                let encode = |v: &[f32]| match ty {
                    ElementType::F32 => Data::F32(v.to_vec()),
                    _ => Data::Bf16(
                        v.iter().map(|&x| SmallFloat::Bf16.encode_f32(x) as u16).collect(),
                    ),
                };
                let (x_shape, cache_shape) = (shape(ty, &x_dims), shape(ty, &[b, len, h, d]));
                let (x, cache) = (encode(&x), encode(&cache));
                let ((lhs, lhs_shape), (rhs, rhs_shape)) = if cache_first {
                    ((&cache, &cache_shape), (&x, &x_shape))
                } else {
                    ((&x, &x_shape), (&cache, &cache_shape))
                };
                let plan =
                    DotPlan::new(lhs_shape, rhs_shape, &dims, &shape(ty, &out_dims)).expect("plan");
                let few = plan.few_rows(lhs, rhs, ty, u64::MAX).expect("run");
                assert_eq!(few.as_ref(), Some(&expected), "{ty:?} {out_dims:?} few rows");
                let result = plan.run(lhs, rhs, ty, u64::MAX, &BufferPool::default()).expect("run");
                assert_eq!(result, encode(&expected), "{ty:?} {out_dims:?}");
            }
        }
    }

    /// Few-row dots whose rhs rows (the free elements) are contiguous are summed in registers a
    /// block of columns at a time, for up to four batches at once, with the columns past the
    /// blocks summed a chunk at a time: each sum must still be its terms added one fused
    /// multiply-add at a time in the contracting order, from zero, bit for bit, whatever the
    /// values. Covered: one to five rows, a batch-free weight matrix, a cache `[b, len, h, d]`
    /// read in place with its heads interleaved (and as the lhs, giving few columns), widths
    /// that leave a tail of blocks and of vectors, f32 and bf16.
    #[test]
    fn few_row_sums_take_their_terms_in_contracting_order() {
        if packed_gemm::chosen() == Kernel::Portable {
            // Scalar lanes need not fuse the multiply-add; the exact-integer test covers them.
            return;
        }
        let shape = |ty, dims: &[usize]| ArrayShape { ty, dims: dims.to_vec(), layout: None };
        let numbers = dot_numbers;
        let values = unit_values;
        let fused = |terms: &mut dyn Iterator<Item = (f32, f32)>| {
            terms.fold(0.0f32, |sum, (x, y)| x.mul_add(y, sum))
        };
        for ty in [ElementType::F32, ElementType::Bf16] {
            let exact = |v: Vec<f32>| exact_in(ty, v);
            let encode = |v: &[f32]| encoded_as(ty, v);
            let check = |lhs: (&[f32], &[usize]),
                         rhs: (&[f32], &[usize]),
                         dims: proto::DotDimensionNumbers,
                         out_dims: &[usize],
                         expected: &[f32]| {
                let plan = DotPlan::new(
                    &shape(ty, lhs.1),
                    &shape(ty, rhs.1),
                    &dims,
                    &shape(ElementType::F32, out_dims),
                )
                .expect("plan");
                let (a, b) = (encode(lhs.0), encode(rhs.0));
                // Every kernel the CPU runs; AVX2's row band of 6 takes two rows at most.
                for kernel in Kernel::ALL.into_iter().filter(|k| k.runs_here()) {
                    let few_rows = plan.m <= FEW_ROWS && plan.m < kernel.tile_rows() / 2;
                    if kernel == Kernel::Portable || !(few_rows || plan.n <= FEW_ROWS) {
                        continue;
                    }
                    let few = plan.few_rows_by(kernel, &a, &b, ElementType::F32, u64::MAX);
                    let few = few.expect("run").unwrap_or_else(|| {
                        panic!("{kernel:?} {ty:?} {out_dims:?} is a few-row dot")
                    });
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&few), bits(expected), "{kernel:?} {ty:?} {out_dims:?}");
                }
            };
            // x[m, k] · w[k, n]: 149 columns are two blocks of 64 (AVX-512; more of AVX2's 32),
            // a vector and a tail of 5.
            for (m, k, n) in [(1, 37, 149), (2, 40, 149), (3, 9, 64), (4, 300, 149), (5, 17, 70)] {
                let (x, w) = (exact(values(m * k, 1)), exact(values(k * n, 2)));
                let expected: Vec<f32> = (0..m * n)
                    .map(|o| {
                        let (i, j) = (o / n, o % n);
                        fused(&mut (0..k).map(|p| (x[i * k + p], w[p * n + j])))
                    })
                    .collect();
                let dims = numbers(&[], &[], &[1], &[0]);
                check((&x, &[m, k]), (&w, &[k, n]), dims, &[m, n], &expected);
            }
            // p[b, h, q, len] · cache[b, len, h, d] → [b, h, q, d]: five heads (a group of four
            // and one, or two and two and one for two queries), d with a tail.
            let (b, len, h, d) = (2usize, 29usize, 5usize, 67usize);
            let cache = exact(values(b * len * h * d, 3));
            let at = |bi: usize, l: usize, hi: usize, di: usize| {
                cache[((bi * len + l) * h + hi) * d + di]
            };
            for q in [1usize, 2] {
                let p = exact(values(b * h * q * len, 4 + q as u32));
                let p_at = |bi: usize, hi: usize, qi: usize, l: usize| {
                    p[((bi * h + hi) * q + qi) * len + l]
                };
                let mut expected = vec![0.0f32; b * h * q * d];
                for (o, e) in expected.iter_mut().enumerate() {
                    let (bi, hi, qi, di) = (o / (h * q * d), o / (q * d) % h, o / d % q, o % d);
                    *e = fused(&mut (0..len).map(|l| (p_at(bi, hi, qi, l), at(bi, l, hi, di))));
                }
                let dims = numbers(&[0, 1], &[0, 2], &[3], &[1]);
                let (p_dims, cache_dims) = ([b, h, q, len], [b, len, h, d]);
                check((&p, &p_dims), (&cache, &cache_dims), dims, &[b, h, q, d], &expected);
                // The cache as the lhs: [b, h, d, q], computed as its transpose.
                let mut columns = vec![0.0f32; b * h * d * q];
                for (o, e) in columns.iter_mut().enumerate() {
                    let (bi, hi, di, qi) = (o / (h * d * q), o / (d * q) % h, o / q % d, o % q);
                    *e = expected[((bi * h + hi) * q + qi) * d + di];
                }
                let dims = numbers(&[0, 2], &[0, 1], &[1], &[3]);
                check((&cache, &cache_dims), (&p, &p_dims), dims, &[b, h, d, q], &columns);
            }
        }
    }

    /// Few-row dots whose rhs columns (the contracting elements) are contiguous sum each column
    /// as `dot` does: fused multiply-adds in lanes (term `p` in lane `p mod lanes`), the lanes
    /// halved pairwise down to one, then the terms past the last whole vector folded from zero
    /// and added. Depths of up to 64 elements in whole vectors take the register path, others
    /// the general loop; both must match that order bit for bit, for one to three query rows
    /// over a cache `[b, len, h, d]` read in place, f32 and bf16, with each kernel the CPU runs
    /// (AVX2's eight vectors of a 64-deep head were once left to the general loop).
    #[test]
    fn few_column_sums_take_dots_lane_order() {
        for kernel in Kernel::ALL.into_iter().filter(|k| k.runs_here()) {
            let lanes = match kernel {
                Kernel::Avx512 => 16,
                Kernel::Avx2 => 8,
                // Other lane widths and unfused scalar lanes: the exact-integer test covers them.
                _ => continue,
            };
            few_column_sums_in_lane_order(kernel, lanes);
        }
    }

    fn few_column_sums_in_lane_order(kernel: Kernel, lanes: usize) {
        let shape = |ty, dims: &[usize]| ArrayShape { ty, dims: dims.to_vec(), layout: None };
        let values = unit_values;
        let dot_order = |x: &[f32], y: &[f32]| -> f32 {
            let whole = x.len() / lanes * lanes;
            let mut acc = vec![0.0f32; lanes];
            for p in 0..whole {
                acc[p % lanes] = x[p].mul_add(y[p], acc[p % lanes]);
            }
            let mut len = lanes;
            while len > 1 {
                len /= 2;
                for l in 0..len {
                    acc[l] += acc[l + len];
                }
            }
            let tail = (whole..x.len()).fold(0.0f32, |sum, p| x[p].mul_add(y[p], sum));
            0.0 + (acc[0] + tail)
        };
        let (b, len, h) = (2usize, 37usize, 3usize);
        for ty in [ElementType::F32, ElementType::Bf16] {
            let exact = |v: Vec<f32>| exact_in(ty, v);
            let encode = |v: &[f32]| encoded_as(ty, v);
            for d in [16usize, 32, 48, 64, 20, 80] {
                for q in (1usize..=3).filter(|&q| q < kernel.tile_rows() / 2) {
                    let cache = exact(values(b * len * h * d, d as u32));
                    let x = exact(values(b * q * h * d, 7 + q as u32));
                    // scores[b, h, q, l] = Σ_d x[b, q, h, d] · cache[b, l, h, d]
                    let mut expected = vec![0.0f32; b * h * q * len];
                    for (o, e) in expected.iter_mut().enumerate() {
                        let (bi, hi, qi, l) =
                            (o / (h * q * len), o / (q * len) % h, o / len % q, o % len);
                        let xs: Vec<f32> =
                            (0..d).map(|di| x[((bi * q + qi) * h + hi) * d + di]).collect();
                        let ys: Vec<f32> =
                            (0..d).map(|di| cache[((bi * len + l) * h + hi) * d + di]).collect();
                        *e = dot_order(&xs, &ys);
                    }
                    let numbers = proto::DotDimensionNumbers {
                        lhs_batch_dimensions: vec![0, 2],
                        rhs_batch_dimensions: vec![0, 2],
                        lhs_contracting_dimensions: vec![3],
                        rhs_contracting_dimensions: vec![3],
                    };
                    let plan = DotPlan::new(
                        &shape(ty, &[b, q, h, d]),
                        &shape(ty, &[b, len, h, d]),
                        &numbers,
                        &shape(ElementType::F32, &[b, h, q, len]),
                    )
                    .expect("plan");
                    let few = plan
                        .few_rows_by(
                            kernel,
                            &encode(&x),
                            &encode(&cache),
                            ElementType::F32,
                            u64::MAX,
                        )
                        .expect("run")
                        .unwrap_or_else(|| panic!("{ty:?} d {d} q {q} is a few-row dot"));
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&few), bits(&expected), "{kernel:?} {ty:?} d {d} q {q}");
                }
            }
        }
    }

    #[test]
    fn results_round_once_to_the_instruction_type() {
        // 1 + 2^-11 is halfway between two halves and rounds to even (1.0); 1 + 3·2^-11 up.
        let sums = vec![1.0 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11), 65520.0, -0.0];
        let Ok(Data::F16(h)) = round_result(Data::F32(sums.clone()), ElementType::F16) else {
            panic!("f16 result");
        };
        assert_eq!(h, [0x3c00, 0x3c02, 0x7c00, 0x8000]);
        let Ok(Data::Bf16(b)) = round_result(Data::F32(sums), ElementType::Bf16) else {
            panic!("bf16 result");
        };
        assert_eq!(b, [0x3f80, 0x3f80, 0x4780, 0x8000]);
    }

    /// A program of one `[m, k] · [k, n]` dot of `ty` operands with a result of `out`.
    fn dot_program(ty: &str, out: &str, (m, k, n): (usize, usize, usize)) -> super::super::Program {
        let text = format!(
            "HloModule d\nENTRY main {{\n  a = {ty}[{m},{k}] parameter(0)\n  b = {ty}[{k},{n}] \
             parameter(1)\n  ROOT d = {out}[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, \
             rhs_contracting_dims={{0}}\n}}\n"
        );
        let module = crate::text::parse_module(&text).expect("test module parses");
        super::super::Program::compile(&module, &super::super::EvalOptions::default())
            .expect("test module compiles")
    }

    fn f32_array(dims: &[usize], values: &[f32]) -> super::super::Array {
        let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        super::super::Array::from_f32(&dims, values)
    }

    fn result_f32s(value: super::super::Value) -> Vec<f32> {
        let super::super::Value::Array(array) = value else { panic!("expected an array") };
        array.bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
    }

    /// Launches of one program reuse the storage of the last launch's large arguments and
    /// results (the rhs, copied since the root returns it too, and the product are over the
    /// pool's threshold): each result must
    /// still be its own inputs' product, whatever the reused buffers held, including a NaN that
    /// reaches exactly one row. Small integers keep every sum exact, so the expected values
    /// come from the naive loop.
    #[test]
    fn repeated_launches_reuse_pooled_storage_and_compute_their_own_products() {
        let (m, k, n) = (256, 300, 1024);
        let program = compile_text(&format!(
            "HloModule d\nENTRY main {{\n  a = f32[{m},{k}] parameter(0)\n  b = f32[{k},{n}] \
             parameter(1)\n  d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, \
             rhs_contracting_dims={{0}}\n  ROOT r = (f32[{m},{n}], f32[{k},{n}]) tuple(d, b)\n}}\n"
        ));
        assert_eq!(program.lent_leaves(), [packed_gemm::chosen() != Kernel::Portable, false]);
        let ints = |len: usize, seed: usize| -> Vec<f32> {
            (0..len).map(|i| ((i * 7 + seed * 13) % 11) as f32 - 5.0).collect()
        };
        let expect = |a: &[f32], b: &[f32]| {
            let mut c = vec![0.0; m * n];
            naive_matmul(a, b, &mut c, m, k, n);
            c
        };
        let (a1, b1) = (ints(m * k, 1), ints(k * n, 2));
        let (mut a2, b2) = (ints(m * k, 3), ints(k * n, 4));
        a2[5 * k + 17] = f32::NAN;
        let run = |a: &[f32], b: &[f32]| {
            let value = program.run(&[f32_array(&[m, k], a), f32_array(&[k, n], b)]).expect("run");
            let super::super::Value::Tuple(mut items) = value else { panic!("expected a tuple") };
            assert_eq!(result_f32s(items.pop().expect("b")), b, "the rhs comes back");
            result_f32s(items.pop().expect("d"))
        };
        let first = run(&a1, &b1);
        assert_eq!(first, expect(&a1, &b1));
        let kept = ((k * n + m * n) * 4) as u64;
        assert!(program.pool.idle_bytes() >= kept, "the rhs and the product are kept for reuse");
        let second = run(&a2, &b2);
        let expected = expect(&a2, &b2);
        for (row, values) in second.chunks_exact(n).enumerate() {
            if row == 5 {
                assert!(values.iter().all(|x| x.is_nan()), "the NaN row");
            } else {
                assert_eq!(values, &expected[row * n..(row + 1) * n], "row {row}");
            }
        }
        assert_eq!(run(&a1, &b1), first, "a third launch on the first inputs");
    }

    /// Attention's `scores[b, h, s, t] = Σ_d q[b, s, h, d] · k[b, t, h, d]`: per-head products
    /// too small to split (2^19 multiply-adds) gather their operands per product, split by batch
    /// over the cores, and leave no whole transposes behind; a product whose operand is past
    /// what gathering takes transposes both operands whole, into pooled temporaries kept after
    /// the launch and written over by the next. Each launch must give its own inputs' naive sums
    /// (small integers: exact in f32).
    #[test]
    fn transposed_batched_products_gather_per_product_or_reuse_whole_temporaries() {
        for ((b, h, s, t, d), gathered) in
            [((3usize, 3usize, 64usize, 128usize, 96usize), true), ((1, 2, 1024, 8, 300), false)]
        {
            let program = compile_text(&format!(
                "HloModule d\nENTRY main {{\n  q = f32[{b},{s},{h},{d}] parameter(0)\n  \
                 k = f32[{b},{t},{h},{d}] parameter(1)\n  ROOT s = f32[{b},{h},{s},{t}] dot(q, k), \
                 lhs_batch_dims={{0,2}}, lhs_contracting_dims={{3}}, rhs_batch_dims={{0,2}}, \
                 rhs_contracting_dims={{3}}\n}}\n"
            ));
            let ints = |len: usize, seed: usize| -> Vec<f32> {
                (0..len).map(|i| ((i * 7 + seed * 13) % 11) as f32 - 5.0).collect()
            };
            let expect = |q: &[f32], k: &[f32]| {
                let mut out = vec![0.0f32; b * h * s * t];
                for (bi, hi, si, ti) in (0..b).flat_map(|bi| {
                    (0..h).flat_map(move |hi| {
                        (0..s).flat_map(move |si| (0..t).map(move |ti| (bi, hi, si, ti)))
                    })
                }) {
                    out[((bi * h + hi) * s + si) * t + ti] = (0..d)
                        .map(|di| {
                            q[((bi * s + si) * h + hi) * d + di]
                                * k[((bi * t + ti) * h + hi) * d + di]
                        })
                        .sum();
                }
                out
            };
            let run = |q: &[f32], k: &[f32]| {
                let args = [f32_array(&[b, s, h, d], q), f32_array(&[b, t, h, d], k)];
                result_f32s(program.run(&args).expect("run"))
            };
            let shape = format!("{b}x{h}x{s}x{t}x{d}");
            let (q1, k1) = (ints(b * s * h * d, 1), ints(b * t * h * d, 2));
            assert_eq!(run(&q1, &k1), expect(&q1, &k1), "{shape}: first launch");
            let temporaries = ((b * s * h * d + b * t * h * d) * 4) as u64;
            let kept = program.pool.idle_bytes();
            if gathered {
                assert!(kept < temporaries, "{shape}: whole operands were transposed ({kept})");
            } else {
                assert!(kept >= temporaries, "{shape}: both transposed operands are kept");
            }
            let (q2, k2) = (ints(b * s * h * d, 3), ints(b * t * h * d, 4));
            assert_eq!(run(&q2, &k2), expect(&q2, &k2), "{shape}: second launch");
        }
    }

    /// Gathering each product's operands gives the sums of transposing whole operands, bit for
    /// bit, for every layout of batch, free and contracting dimensions an attention writes, f32
    /// and bf16.
    #[test]
    fn gathered_products_equal_the_products_of_whole_transposes() {
        // (lhs dims, rhs dims, lhs batch, rhs batch, lhs contracting, rhs contracting)
        type Case = (&'static [usize], &'static [usize], [i64; 2], [i64; 2], i64, i64);
        let cases: [Case; 4] = [
            // q·kᵀ: bqhd,bkhd->bhqk
            (&[2, 24, 3, 16], &[2, 40, 3, 16], [0, 2], [0, 2], 3, 3),
            // p·v: bhqk,bkhd->bhqd, and v's side as the lhs: bkhd,bhqk->bhdq
            (&[2, 3, 24, 40], &[2, 40, 3, 16], [0, 1], [0, 2], 3, 1),
            (&[2, 40, 3, 16], &[2, 3, 24, 40], [0, 2], [0, 1], 1, 3),
            // Batch dimensions last on one side.
            (&[24, 16, 2, 3], &[16, 40, 2, 3], [2, 3], [2, 3], 1, 0),
        ];
        for ty in [ElementType::F32, ElementType::Bf16] {
            for (lhs_dims, rhs_dims, lb, rb, lc, rc) in cases {
                let lhs_shape = ArrayShape { ty, dims: lhs_dims.to_vec(), layout: None };
                let rhs_shape = ArrayShape { ty, dims: rhs_dims.to_vec(), layout: None };
                let numbers = dot_numbers(&lb, &rb, &[lc], &[rc]);
                let free = |dims: &[usize], skip: &[i64]| -> Vec<usize> {
                    (0..dims.len())
                        .filter(|d| !skip.contains(&(*d as i64)))
                        .map(|d| dims[d])
                        .collect()
                };
                let mut out_dims: Vec<usize> = lb.iter().map(|&d| lhs_dims[d as usize]).collect();
                out_dims.extend(free(lhs_dims, &[lb[0], lb[1], lc]));
                out_dims.extend(free(rhs_dims, &[rb[0], rb[1], rc]));
                let out = ArrayShape { ty: ElementType::F32, dims: out_dims, layout: None };
                let plan = DotPlan::new(&lhs_shape, &rhs_shape, &numbers, &out).expect("plan");
                let lhs = encoded_as(ty, &exact_in(ty, unit_values(lhs_dims.iter().product(), 5)));
                let rhs = encoded_as(ty, &exact_in(ty, unit_values(rhs_dims.iter().product(), 6)));
                let pool = BufferPool::default();
                let gathered = plan
                    .run_gathered(&lhs, &rhs, [None, None], ElementType::F32, u64::MAX, &pool)
                    .expect("run")
                    .expect("the batch gathers its products");
                let whole = |data: &Data, dims: &[usize], perm: &[usize]| {
                    transpose_reusing(data, dims, perm, None).expect("transpose")
                };
                let (lhs_t, rhs_t) =
                    (whole(&lhs, lhs_dims, &plan.lhs_perm), whole(&rhs, rhs_dims, &plan.rhs_perm));
                let transposed =
                    plan.product(&lhs_t, &rhs_t, ElementType::F32, u64::MAX, &pool).expect("run");
                let bits = |data: &Data| match data {
                    Data::F32(v) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    _ => panic!("f32 sums"),
                };
                assert_eq!(bits(&gathered), bits(&transposed), "{ty:?} {lhs_dims:?}·{rhs_dims:?}");
            }
        }
    }

    /// An empty sum (`k = 0`) is zeros even in pooled storage that still holds NaN from its
    /// last user, f32 and bf16 alike; a product of depth one overwrites the NaN with its values.
    #[test]
    fn pooled_sums_are_written_whole_even_for_empty_products() {
        let (m, n) = (512, 512);
        for ty in ["f32", "bf16"] {
            let program = dot_program(ty, "f32", (m, 0, n));
            assert!(program.pool.take(ElementType::F32, m * n).is_none(), "opens the pool");
            program.pool.give(Data::F32(vec![f32::NAN; m * n]));
            let empty =
                super::super::Array { ty: proto::PrimitiveType::F32, dims: vec![], bytes: vec![] };
            let arg = |dims: [usize; 2]| {
                let mut a = empty.clone();
                a.ty = if ty == "f32" {
                    proto::PrimitiveType::F32
                } else {
                    proto::PrimitiveType::Bf16
                };
                a.dims = dims.iter().map(|&d| d as i64).collect();
                a
            };
            let got = result_f32s(program.run(&[arg([m, 0]), arg([0, n])]).expect("run"));
            assert!(
                got.len() == m * n && got.iter().all(|&x| x.to_bits() == 0),
                "{ty}: +0 everywhere"
            );
        }
        let program = dot_program("f32", "f32", (m, 1, n));
        assert!(program.pool.take(ElementType::F32, m * n).is_none(), "opens the pool");
        program.pool.give(Data::F32(vec![f32::NAN; m * n]));
        let a: Vec<f32> = (0..m).map(|i| (i % 7) as f32).collect();
        let b: Vec<f32> = (0..n).map(|j| (j % 5) as f32 - 2.0).collect();
        let got = result_f32s(
            program.run(&[f32_array(&[m, 1], &a), f32_array(&[1, n], &b)]).expect("run"),
        );
        let want: Vec<f32> = a.iter().flat_map(|&x| b.iter().map(move |&y| x * y)).collect();
        assert_eq!(got, want);
    }

    /// A bf16 dot's f32 sums go back to the pool after rounding, and the next launch sums into
    /// them: its result is the same as that of a fresh program (for two sizes).
    #[test]
    fn narrow_results_from_pooled_sums_match_a_fresh_program() {
        let (k, n) = (64, 4096);
        let bf16 = |len: usize, seed: usize| -> super::super::Array {
            let bytes = (0..len)
                .flat_map(|i| {
                    let x = ((i * 5 + seed) % 13) as f32 * 0.375 - 2.0;
                    (SmallFloat::Bf16.encode_f32(x) as u16).to_le_bytes()
                })
                .collect();
            super::super::Array { ty: proto::PrimitiveType::Bf16, dims: vec![0, 0], bytes }
        };
        let with_dims = |mut array: super::super::Array, dims: [usize; 2]| {
            array.dims = dims.iter().map(|&d| d as i64).collect();
            array
        };
        for m in [128, 96] {
            let program = dot_program("bf16", "bf16", (m, k, n));
            let args = [with_dims(bf16(m * k, m), [m, k]), with_dims(bf16(k * n, 1), [k, n])];
            let fresh = program.clone().run(&args).expect("fresh");
            program.run(&args).expect("fills the pool");
            assert!(program.pool.idle_bytes() > 0);
            assert_eq!(program.run(&args).expect("from the pool"), fresh, "m = {m}");
        }
    }

    fn compile_text(text: &str) -> super::super::Program {
        let module = crate::text::parse_module(text).expect("test module parses");
        super::super::Program::compile(&module, &super::super::EvalOptions::default())
            .expect("test module compiles")
    }

    /// Narrow weights lent to the dot that reads them: read in place by the few-row kernel (a
    /// decoder's products, the weight as either operand) or the gemm, or decoded where the
    /// product needs them transposed; each launch gives the bytes of a run that copied them.
    #[test]
    fn lent_narrow_arguments_give_the_results_of_copied_ones() {
        let narrow = |ty: &str, dims: &[usize], seed: u32| -> super::super::Array {
            let format = if ty == "bf16" { SmallFloat::Bf16 } else { SmallFloat::F16 };
            let len = dims.iter().product();
            let bytes = unit_values(len, seed)
                .into_iter()
                .flat_map(|x| (format.encode_f32(x) as u16).to_le_bytes())
                .collect();
            let ty = if ty == "bf16" {
                crate::proto::PrimitiveType::Bf16
            } else {
                crate::proto::PrimitiveType::F16
            };
            super::super::Array { ty, dims: dims.iter().map(|&d| d as i64).collect(), bytes }
        };
        let cases: [(&str, &str, [Vec<usize>; 2]); 4] = [
            (
                "bf16",
                "a = bf16[4,512] parameter(0)\nw = bf16[512,300] parameter(1)\n\
                 n = bf16[4,512] negate(a)\n\
                 ROOT d = bf16[4,300] dot(n, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                [vec![4, 512], vec![512, 300]],
            ),
            (
                "f16",
                "w = f16[300,512] parameter(0)\nx = f16[512,2] parameter(1)\n\
                 ROOT d = f32[300,2] dot(w, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                [vec![300, 512], vec![512, 2]],
            ),
            (
                "bf16",
                "a = bf16[40,64] parameter(0)\nw = bf16[64,48] parameter(1)\n\
                 ROOT d = bf16[40,48] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                [vec![40, 64], vec![64, 48]],
            ),
            (
                "bf16",
                "a = bf16[40,64] parameter(0)\nw = bf16[48,64] parameter(1)\n\
                 ROOT d = f32[40,48] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}",
                [vec![40, 64], vec![48, 64]],
            ),
        ];
        for (ty, body, shapes) in cases {
            let program = compile_text(&format!("HloModule l\nENTRY main {{\n{body}\n}}\n"));
            assert!(program.lent_leaves().contains(&true), "a weight is lent in {body}");
            let args: Vec<_> =
                shapes.iter().enumerate().map(|(i, d)| narrow(ty, d, 3 + i as u32)).collect();
            let inputs = args
                .iter()
                .map(|a| super::super::Input::from_le_bytes(a.ty, &a.dims, &a.bytes))
                .collect::<Result<Vec<_>, _>>()
                .expect("inputs");
            let copied = program.run_inputs(inputs).expect("copied run");
            let mut expected = vec![0u8; copied[0].n_bytes()];
            copied[0].write_le_bytes(&mut expected).expect("bytes");
            for launch in 0..2 {
                let super::super::Value::Array(lent) = program.run(&args).expect("lent run") else {
                    panic!("expected an array")
                };
                assert_eq!(lent.bytes, expected, "launch {launch} of {body}");
            }
        }
    }

    /// Which arguments `Program::run` lends instead of copying: whole f32 parameters that only
    /// dots in gemm order read, in products the packed kernel takes.
    #[test]
    fn only_arguments_that_dots_read_in_place_are_lent() {
        let packed = packed_gemm::chosen() != Kernel::Portable;
        let check = |body: &str, expected: &[bool]| {
            let text = format!("HloModule l\nENTRY main {{\n{body}\n}}\n");
            let expected: Vec<bool> = expected.iter().map(|&e| e && packed).collect();
            assert_eq!(compile_text(&text).lent_leaves(), expected, "{body}");
        };
        let dims = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";
        check(
            &format!(
                "a = f32[64,128] parameter(0)\nb = f32[128,256] parameter(1)\n\
                 ROOT d = f32[64,256] dot(a, b), {dims}"
            ),
            &[true, true],
        );
        // Also read by a tuple: copied. The lhs is still lent.
        check(
            &format!(
                "a = f32[64,128] parameter(0)\nb = f32[128,256] parameter(1)\n\
                 d = f32[64,256] dot(a, b), {dims}\nROOT t = (f32[64,256], f32[128,256]) tuple(d, b)"
            ),
            &[true, false],
        );
        // A transposed rhs (contracting its minor axis) is rearranged first: copied.
        check(
            "a = f32[64,128] parameter(0)\nb = f32[256,128] parameter(1)\n\
             ROOT d = f32[64,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={1}",
            &[true, false],
        );
        // One row is the few-row path's, which reads values: copied.
        check(
            &format!(
                "a = f32[1,128] parameter(0)\nb = f32[128,256] parameter(1)\n\
                 ROOT d = f32[1,256] dot(a, b), {dims}"
            ),
            &[false, false],
        );
        // A narrow operand read by one dot is lent whatever the kernel (the dot decodes it when
        // it cannot read it in place, the copy binding would have made); the f32 side of a
        // mixed pair is copied.
        let check_any = |body: &str, expected: &[bool]| {
            let text = format!("HloModule l\nENTRY main {{\n{body}\n}}\n");
            assert_eq!(compile_text(&text).lent_leaves(), expected, "{body}");
        };
        check_any(
            &format!(
                "a = bf16[64,128] parameter(0)\nb = bf16[128,256] parameter(1)\n\
                 ROOT d = f32[64,256] dot(a, b), {dims}"
            ),
            &[true, true],
        );
        check_any(
            &format!(
                "a = f32[64,128] parameter(0)\nb = bf16[128,256] parameter(1)\n\
                 ROOT d = f32[64,256] dot(a, b), {dims}"
            ),
            &[false, true],
        );
        // Read by two dots, or by anything but a dot: copied once.
        check_any(
            &format!(
                "a = f16[64,128] parameter(0)\nb = f16[128,256] parameter(1)\n\
                 d = f32[64,256] dot(a, b), {dims}\ne = f32[64,256] dot(a, b), {dims}\n\
                 ROOT s = f32[64,256] add(d, e)"
            ),
            &[false, false],
        );
        check_any(
            &format!(
                "a = bf16[1,128] parameter(0)\nb = bf16[128,256] parameter(1)\n\
                 n = bf16[1,128] negate(a)\nROOT d = f32[1,256] dot(n, b), {dims}"
            ),
            &[false, true],
        );
        // The root, a tuple parameter: copied.
        check("ROOT a = f32[64,128] parameter(0)", &[false]);
        check(
            &format!(
                "p = (f32[64,128], f32[128,256]) parameter(0)\n\
                 a = f32[64,128] get-tuple-element(p), index=0\n\
                 b = f32[128,256] get-tuple-element(p), index=1\n\
                 ROOT d = f32[64,256] dot(a, b), {dims}"
            ),
            &[false, false],
        );
        // Read twice by the same dot: lent.
        check(
            &format!("a = f32[64,64] parameter(0)\nROOT d = f32[64,64] dot(a, a), {dims}"),
            &[true],
        );
    }

    /// A launch whose arguments are lent to the gemm gives, bit for bit, what a launch on
    /// copies of them gives (`run_inputs` copies every argument): values that do not sum
    /// exactly, NaN and infinity, odd sizes, a batch, a narrow result, an operand read twice, a
    /// lent operand next to a computed one.
    #[test]
    fn lent_arguments_give_the_results_of_copied_ones() {
        let values = |len: usize, seed: u32| -> Vec<f32> {
            let values = unit_values(len, seed).into_iter().enumerate();
            values
                .map(|(i, x)| match i % 97 {
                    3 if seed == 2 => f32::NAN,
                    5 if seed == 2 => f32::INFINITY,
                    _ => x,
                })
                .collect()
        };
        let cases: [(&str, Vec<Vec<usize>>); 7] = [
            (
                "a = f32[7,33] parameter(0)\nb = f32[33,50] parameter(1)\n\
                 ROOT d = f32[7,50] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                vec![vec![7, 33], vec![33, 50]],
            ),
            (
                "a = f32[70,300] parameter(0)\nb = f32[300,1030] parameter(1)\n\
                 ROOT d = f32[70,1030] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                vec![vec![70, 300], vec![300, 1030]],
            ),
            (
                "a = f32[3,9,40] parameter(0)\nb = f32[3,40,20] parameter(1)\n\
                 ROOT d = f32[3,9,20] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, \
                 rhs_batch_dims={0}, rhs_contracting_dims={1}",
                vec![vec![3, 9, 40], vec![3, 40, 20]],
            ),
            // Attention-sized products, too small to split themselves: the batch is split
            // over the cores by products, each reading its part of the lent bytes.
            (
                "a = f32[16,128,64] parameter(0)\nb = f32[16,64,128] parameter(1)\n\
                 ROOT d = f32[16,128,128] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, \
                 rhs_batch_dims={0}, rhs_contracting_dims={1}",
                vec![vec![16, 128, 64], vec![16, 64, 128]],
            ),
            (
                "a = f32[12,64] parameter(0)\nb = f32[64,48] parameter(1)\n\
                 ROOT d = bf16[12,48] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                vec![vec![12, 64], vec![64, 48]],
            ),
            (
                "a = f32[32,32] parameter(0)\n\
                 ROOT d = f32[32,32] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                vec![vec![32, 32]],
            ),
            (
                "a = f32[16,24] parameter(0)\nb = f32[24,40] parameter(1)\n\
                 e = f32[16,24] exponential(a)\n\
                 ROOT d = f32[16,40] dot(e, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                vec![vec![16, 24], vec![24, 40]],
            ),
        ];
        for (body, shapes) in cases {
            let program = compile_text(&format!("HloModule l\nENTRY main {{\n{body}\n}}\n"));
            assert!(
                packed_gemm::chosen() == Kernel::Portable || program.lent_leaves().contains(&true),
                "an argument is lent in {body}"
            );
            // Arguments from seeds `first`, `first + 1`, …, and the result of a run that
            // copies them in (nothing lent).
            let arguments = |first: u32| -> Vec<super::super::Array> {
                shapes
                    .iter()
                    .enumerate()
                    .map(|(i, dims)| {
                        f32_array(dims, &values(dims.iter().product(), i as u32 + first))
                    })
                    .collect()
            };
            let copied_result = |args: &[super::super::Array]| -> Vec<u8> {
                let inputs = args
                    .iter()
                    .map(|a| super::super::Input::from_le_bytes(a.ty, &a.dims, &a.bytes))
                    .collect::<Result<Vec<_>, _>>()
                    .expect("inputs");
                let copied = program.run_inputs(inputs).expect("copied run");
                let mut bytes = vec![0u8; copied[0].n_bytes()];
                copied[0].write_le_bytes(&mut bytes).expect("bytes");
                bytes
            };
            let args = arguments(1);
            let expected = copied_result(&args);
            for launch in 0..2 {
                let super::super::Value::Array(lent) = program.run(&args).expect("lent run") else {
                    panic!("expected an array")
                };
                assert_eq!(lent.bytes, expected, "launch {launch} of {body}");
            }
            // An SPMD run lends each rank its own arguments: the second rank's values differ, so
            // a rank that read the other's bytes (or a copy of none) would show.
            let other = arguments(7);
            let other_expected = copied_result(&other);
            assert_ne!(other_expected, expected, "the ranks' arguments give different results");
            let ranks = program.run_spmd(&[args, other]).expect("spmd run");
            for (rank, want) in ranks.iter().zip([&expected, &other_expected]) {
                let super::super::Value::Array(got) = rank else { panic!("expected an array") };
                assert_eq!(&got.bytes, want, "a rank of {body}");
            }
        }
    }

    /// The entry computation's instructions of `program` whose op `is` names.
    fn count_ops(program: &super::super::Program, is: fn(&Op) -> bool) -> usize {
        program.comps[program.entry].instrs.iter().filter(|i| is(&i.op)).count()
    }

    /// Attention's shape of slicing: q and k sliced out of one `[b, s, 3, h, d]` value (as jax
    /// slices them from a fused projection) and multiplied per batch and head. The dot reads
    /// them where they lie (the slices and squeezes are absorbed) and gives the sums a naive
    /// loop over the source gives; small integers keep every sum exact.
    #[test]
    fn sliced_attention_operands_are_read_where_they_lie() {
        let (b, s, h, d) = (2usize, 8usize, 2usize, 4usize);
        let text = format!(
            "HloModule a\nENTRY main {{\n  p = f32[{b},{s},3,{h},{d}] parameter(0)\n  \
             src = f32[{b},{s},3,{h},{d}] add(p, p)\n  \
             qs = f32[{b},{s},1,{h},{d}] slice(src), slice={{[0:{b}], [0:{s}], [0:1], [0:{h}], [0:{d}]}}\n  \
             q = f32[{b},{s},{h},{d}] reshape(qs)\n  \
             ks = f32[{b},{s},1,{h},{d}] slice(src), slice={{[0:{b}], [0:{s}], [1:2], [0:{h}], [0:{d}]}}\n  \
             k = f32[{b},{s},{h},{d}] reshape(ks)\n  \
             ROOT o = f32[{b},{h},{s},{s}] dot(q, k), lhs_batch_dims={{0,2}}, \
             lhs_contracting_dims={{3}}, rhs_batch_dims={{0,2}}, rhs_contracting_dims={{3}}\n}}\n"
        );
        let program = compile_text(&text);
        assert_eq!(count_ops(&program, |op| matches!(op, Op::Slice { .. })), 0, "slices absorbed");
        let viewed = program.comps[program.entry]
            .instrs
            .iter()
            .any(|i| matches!(&i.op, Op::Dot(plan) if plan.views.iter().all(Option::is_some)));
        assert!(viewed, "the dot reads both operands through views");
        let len = b * s * 3 * h * d;
        let p: Vec<f32> = (0..len).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        let got = result_f32s(program.run(&[f32_array(&[b, s, 3, h, d], &p)]).expect("runs"));
        let at = |bi: usize, si: usize, part: usize, hi: usize, di: usize| {
            2.0 * p[(((bi * s + si) * 3 + part) * h + hi) * d + di]
        };
        let mut want = Vec::new();
        for bi in 0..b {
            for hi in 0..h {
                for qi in 0..s {
                    for ki in 0..s {
                        want.push(
                            (0..d)
                                .map(|di| at(bi, qi, 0, hi, di) * at(bi, ki, 1, hi, di))
                                .sum::<f32>(),
                        );
                    }
                }
            }
        }
        assert_eq!(got, want);
    }

    /// A slice that is one product, too large for the gathered path, is copied out as the slice
    /// would have been; one read by another instruction too (the root) is kept for it.
    #[test]
    fn a_sliced_operand_of_one_product_is_copied_and_a_slice_read_elsewhere_kept() {
        let (rows, k, n) = (64usize, 48usize, 40usize);
        let text = format!(
            "HloModule a\nENTRY main {{\n  p = f32[{rows},{k}] parameter(0)\n  \
             w = f32[{k},{n}] parameter(1)\n  src = f32[{rows},{k}] add(p, p)\n  \
             a = f32[32,{k}] slice(src), slice={{[16:48], [0:{k}]}}\n  \
             o = f32[32,{n}] dot(a, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n  \
             ROOT t = (f32[32,{n}], f32[32,{k}]) tuple(o, a)\n}}\n"
        );
        let program = compile_text(&text);
        assert_eq!(count_ops(&program, |op| matches!(op, Op::Slice { .. })), 1, "slice kept");
        let p: Vec<f32> = (0..rows * k).map(|i| ((i * 5) % 9) as f32 - 4.0).collect();
        let w: Vec<f32> = (0..k * n).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
        let args = [f32_array(&[rows, k], &p), f32_array(&[k, n], &w)];
        let super::super::Value::Tuple(items) = program.run(&args).expect("runs") else {
            panic!("a tuple");
        };
        let got = result_f32s(items[0].clone());
        let mut want = vec![0f32; 32 * n];
        for i in 0..32 {
            for j in 0..n {
                want[i * n + j] = (0..k).map(|l| 2.0 * p[(16 + i) * k + l] * w[l * n + j]).sum();
            }
        }
        assert_eq!(got, want);
        let slice = result_f32s(items[1].clone());
        assert_eq!(slice, p[16 * k..48 * k].iter().map(|&x| 2.0 * x).collect::<Vec<_>>());
    }

    /// Reshapes of strided values: a split and a merge of contiguous dimensions have strides;
    /// a merge across a gap (rows of a column slice) has none, and leaves the slice to be made.
    #[test]
    fn reshapes_of_strided_values_keep_their_elements_in_place_or_decline() {
        // [4, 768] split into [4, 3, 4, 64].
        assert_eq!(
            reshaped_strides(&[4, 768], &[768, 1], &[4, 3, 4, 64]),
            Some(vec![768, 256, 64, 1])
        );
        // [4, 1, 4, 64] (one of three parts of the above) merged into [4, 256].
        assert_eq!(
            reshaped_strides(&[4, 1, 4, 64], &[768, 256, 64, 1], &[4, 256]),
            Some(vec![768, 1])
        );
        // With a dimension of one element added.
        assert_eq!(reshaped_strides(&[4, 256], &[768, 1], &[4, 1, 256]), Some(vec![768, 0, 1]));
        // Rows 0..3 of columns 0..4 of a [3, 6]: the rows are not contiguous with each other.
        assert_eq!(reshaped_strides(&[3, 4], &[6, 1], &[12]), None);
        // Sizes that do not agree.
        assert_eq!(reshaped_strides(&[3, 4], &[4, 1], &[5]), None);
    }
}

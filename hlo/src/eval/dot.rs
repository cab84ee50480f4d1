//! `dot` with general dimension numbers, and the gemm both dot and convolution use.
//!
//! Design choices:
//! - Operands are transposed to `[batch, free, contracting]` (lhs) and `[batch, contracting,
//!   free]` (rhs), so every dot is a batch of row-major `M×K · K×N` products whose result is
//!   already in XLA's output order (batch, lhs free, rhs free).
//! - f32 and narrower floats multiply in f32, f64 in f64: f32 through our AVX-512 kernel
//!   ([`super::packed_gemm`]) where the CPU has it, else and for f64 through ndarray's
//!   `general_mat_mul` (matrixmultiply's blocked kernels, safe API, AVX2 at most); integers
//!   accumulate in wrapping i64, which equals accumulating in the (≤ 64-bit) result type. The
//!   result is converted to the instruction's type, so `preferred_element_type` comes from the
//!   result shape.
//! - Large products split over the available cores with scoped threads (columns in our kernel,
//!   rows through ndarray). Not rayon: a gemm can run inside an SPMD rank that waits for its
//!   peers, and a rayon join there could pick up another rank's task and wait on itself.

use ndarray::{ArrayView2, ArrayViewMut2};

use super::Fail;
use super::compile::ArrayShape;
use super::elementwise::convert;
use super::packed_gemm;
use super::shape_ops::transpose;
use super::tensor::{Data, filled};
use crate::dtype::ElementType;
use crate::proto;

/// A checked dot.
#[derive(Clone, Debug)]
pub(crate) struct DotPlan {
    lhs_dims: Vec<usize>,
    rhs_dims: Vec<usize>,
    lhs_perm: Vec<usize>,
    rhs_perm: Vec<usize>,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
}

fn invalid(detail: String) -> Fail {
    Fail::Invalid(detail)
}

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
            return Err(invalid("a dimension is both batch and contracting".into()));
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
            return Err(invalid("dot of pred".into()));
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
                super::compile::describe_array(out.ty, &out.dims),
                super::compile::describe_array(out.ty, &dims)
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
        })
    }

    pub(crate) fn run(
        &self,
        lhs: &Data,
        rhs: &Data,
        out_ty: ElementType,
        budget: u64,
    ) -> Result<Data, Fail> {
        // Operands already in gemm order and type are used in place, without a copy.
        let arrange = |data: &Data, dims: &[usize], perm: &[usize]| -> Result<Option<Data>, Fail> {
            if perm.iter().enumerate().all(|(i, &p)| i == p) {
                Ok(None)
            } else {
                transpose(data, dims, perm).map(Some)
            }
        };
        let lhs_t = arrange(lhs, &self.lhs_dims, &self.lhs_perm)?;
        let rhs_t = arrange(rhs, &self.rhs_dims, &self.rhs_perm)?;
        let lhs = lhs_t.as_ref().unwrap_or(lhs);
        let rhs = rhs_t.as_ref().unwrap_or(rhs);
        let compute = compute_type(lhs.ty(), rhs.ty(), out_ty);
        let out_elems = self.batch * self.m * self.n;
        super::compile::check_budget(
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
                let (lw, rw) = (as_type(lhs, ElementType::F32)?, as_type(rhs, ElementType::F32)?);
                let (Data::F32(a), Data::F32(b)) = (lw.as_ref(), rw.as_ref()) else {
                    return Err(Fail::Internal("f32 conversion".into()));
                };
                let mut c = filled(out_elems, 0.0f32)?;
                self.batched(a, b, &mut c, gemm_f32);
                Data::F32(c)
            }
        };
        if result.ty() == out_ty { Ok(result) } else { convert(&result, out_ty) }
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

fn threads_for(work: usize, rows: usize) -> usize {
    if work < 1 << 22 || rows < 2 {
        return 1;
    }
    cores().min(rows).min(8)
}

/// The cores this process may use, asked once: `available_parallelism` reads cgroup files on
/// every call, which showed in the profile of a convolution.
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `c[m×n] = a[m×k] · b[k×n]`, all row-major: our AVX-512 kernel where the CPU has it and the
/// product is wide enough for its 12 × 32 tile not to be mostly padding, matrixmultiply otherwise.
pub(crate) fn gemm_f32(a: &[f32], b: &[f32], c: &mut [f32], m: usize, k: usize, n: usize) {
    if m >= packed_gemm::MR / 2 && n >= 16 && k > 0 && packed_gemm::available() {
        let threads = threads_for(m * n * k, n / 16);
        if packed_gemm::gemm_f32(a, b, c, (m, k, n), threads) {
            return;
        }
    }
    gemm_f32_general(a, b, c, m, k, n);
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
            let threads = threads_for(m * n * k, m);
            let rows = m.div_ceil(threads);
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
            std::thread::scope(|scope| {
                for (a_rows, c_rows) in a.chunks(rows * k).zip(c.chunks_mut(rows * n)) {
                    let bv = bv.view();
                    scope.spawn(move || {
                        let r = c_rows.len() / n;
                        if let (Ok(av), Ok(mut cv)) = (
                            ArrayView2::from_shape((r, k), a_rows),
                            ArrayViewMut2::from_shape((r, n), c_rows),
                        ) {
                            ndarray::linalg::general_mat_mul(1.0, &av, &bv, 0.0, &mut cv);
                        }
                    });
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

//! Our f32 gemm: packed panels and a register-blocked kernel, written in safe code over `pulp`'s
//! SIMD types, for AVX-512, AVX2+FMA and (not compiled on our machines) NEON, chosen at run time.
//!
//! Why it exists: matrixmultiply (behind ndarray's `general_mat_mul`) has no AVX-512 kernel, and
//! its AVX2 one left the f32 dot at 0.41× of XLA on CPU; and it multiplies only f32 and f64, so
//! a narrow float operand had to be widened into a whole f32 copy first. `pulp` checks the CPU at
//! run time and hands out a token (`V4` for AVX-512, `V3` for AVX2+FMA) whose methods are those
//! instructions, behind a safe API, so the crate keeps `#![forbid(unsafe_code)]`.
//!
//! Design choices, a blocked gemm that packs only `b`:
//! - Each part of the work is a stripe of `c`'s columns, within a band of its rows per thread
//!   when the product is taller than wide or tall enough ([`in_bands`]). Per block of [`KC`]
//!   rows of `b` and up to [`NC_PANELS`] panels of `NR` columns (`NR` = two vectors: 32 floats
//!   with AVX-512, 16 with AVX2), it packs that block of `b` (zero past the stripe's last
//!   column), sized to stay in L2; then [`IN_PLACE_MR`] rows of `a` at a time meet every panel of
//!   the block.
//! - `a` is not packed: the kernel broadcasts its values from plain rows, an f32 `a`'s where they
//!   lie, a narrow one's widened [`WIDE_ROWS`] rows at a time ([`InPlaceBlock`]). Packing `a`
//!   into micro-panels interleaved its rows element by element, and cost 10-20 % of a product
//!   with few panels of `b`; every shape measured was faster without it.
//! - Operands are [`Source`]s: f32 slices, or bf16, f16 and f8 bits that are widened to f32 a
//!   block of rows at a time, so a narrow operand is never copied whole (a 4 GiB f16 weight does
//!   not become 8 GiB of f32). Sums are f32 in any case; the caller rounds `c` to the result
//!   type once per element, as XLA on CPU does.
//! - Packing buffers are kept on the calling thread between calls, since fresh ones would be
//!   fresh mappings whose page faults cost about as much as the packing.
//! - The kernel keeps an `IN_PLACE_MR × NR` tile of `c` in registers, and for each `p`
//!   broadcasts one `a` value per row against the two `b` vectors with fused multiply-adds:
//!   6 × 2 = 12 accumulators, which with the two `b` vectors, a broadcast and the six row
//!   addresses fit AVX2's registers as well as AVX-512's. Rows past the end of `a` read zeros,
//!   which only ever feed tile entries that are not stored, so NaN and infinity propagate as in
//!   the textbook loop.
//! - The first `KC` block overwrites `c`, later ones add to it, so `c` needs no clearing.
//! - The code is generic over `pulp::Simd` and the band height `MR`; [`Kernel`] names the
//!   instantiations, and [`chosen`] picks the best the CPU runs unless `NRTSIM_GEMM` asks for
//!   another (benches compare kernels that way; tests call [`gemm`] with each kernel directly,
//!   so the AVX2 one is checked on AVX-512 machines too, and the portable one everywhere).

use std::cell::RefCell;
use std::sync::OnceLock;

use pulp::Simd;

use super::par::PARTS_PER_CORE;
use crate::dtype::SmallFloat;

/// Depth of a packed block: `KC × IN_PLACE_MR` of `a` (12 KiB) stays in L1 while a block of `b`
/// streams from L2. Each block after the first reads and writes back every sum of `c`, so a deep
/// block pays: 512 against 256 (with half the panels, the block the same size), one core,
/// 512×1024·1024×256 2464 → 2405 µs, and the MLP model 5.0 → 4.7 ms on two cores (AVX2: 5.5 →
/// 4.8 ms).
pub(crate) const KC: usize = 512;
/// Panels of `b` per packed block: `KC × NC_PANELS × NR` floats is 512 KiB with AVX-512, 256 KiB
/// with AVX2.
pub(crate) const NC_PANELS: usize = 8;
/// The most floats of `a` (rows times one depth block) that a stripe keeps using across its
/// blocks of columns (1 MiB, as L2 holds).
const A_STAYS_MAX: usize = 1 << 18;
/// The widest tile row this code is instantiated for (two 16-lane vectors).
const MAX_NR: usize = 32;
/// The tallest band granularity `MR` this code is instantiated for.
const MAX_MR: usize = 12;

/// A gemm kernel of this module, or matrixmultiply's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// AVX-512 (`pulp::x86::V4`), a 12 × 32 tile.
    Avx512,
    /// AVX2 and FMA (`pulp::x86::V3`, x86-64-v3), a 6 × 16 tile.
    Avx2,
    /// aarch64 NEON (`pulp::aarch64::Neon`), a 12 × 8 tile. Written for, but never compiled on,
    /// the x86-64 machines this crate is built and tested on: it is the generic kernel over one
    /// more token.
    Neon,
    /// No SIMD token: f32 goes through matrixmultiply, narrow floats through this module's code
    /// over `pulp::Scalar256b` (eight-lane arrays the compiler vectorises as it can), which keeps
    /// their no-copy packing.
    Portable,
}

impl Kernel {
    pub(crate) const ALL: [Kernel; 4] =
        [Kernel::Avx512, Kernel::Avx2, Kernel::Neon, Kernel::Portable];

    /// The name `NRTSIM_GEMM` takes and benches print.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kernel::Avx512 => "avx512",
            Kernel::Avx2 => "avx2",
            Kernel::Neon => "neon",
            Kernel::Portable => "portable",
        }
    }

    /// The band height `MR` of the kernel (the rows of the packed tile it had before it read `a`
    /// in rows): a product with fewer rows than half of it goes to `dot`'s few-row kernels.
    pub(crate) fn tile_rows(self) -> usize {
        match self {
            Kernel::Avx512 | Kernel::Neon => 12,
            Kernel::Avx2 | Kernel::Portable => 6,
        }
    }

    /// Whether this CPU runs the kernel.
    pub(crate) fn runs_here(self) -> bool {
        match self {
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            Kernel::Avx512 => pulp::x86::V4::try_new().is_some(),
            #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
            Kernel::Avx2 => pulp::x86::V3::try_new().is_some(),
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => pulp::aarch64::Neon::try_new().is_some(),
            Kernel::Portable => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }
}

/// The kernel dot and convolution use: the first of AVX-512, AVX2, NEON that the CPU runs and
/// the vector level allows (`NRTSIM_SIMD`, see [`super::simd`]), else the portable one; or the
/// one `NRTSIM_GEMM` names (`avx512`, `avx2`, `neon`, `portable`) when the CPU runs it. Read
/// once; a name the CPU cannot run is ignored, so [`Kernel::name`] of this is what really runs.
pub(crate) fn chosen() -> Kernel {
    static CHOSEN: OnceLock<Kernel> = OnceLock::new();
    *CHOSEN.get_or_init(|| {
        let asked = std::env::var("NRTSIM_GEMM").ok();
        let named = Kernel::ALL.into_iter().find(|k| asked.as_deref() == Some(k.name()));
        let allowed = |k: &Kernel| match super::simd::level() {
            "scalar" => *k == Kernel::Portable,
            "avx2" => *k != Kernel::Avx512,
            _ => true,
        };
        named
            .filter(|k| k.runs_here())
            .or_else(|| Kernel::ALL.into_iter().find(|k| k.runs_here() && allowed(k)))
            .unwrap_or(Kernel::Portable)
    })
}

/// A row-major operand, read by the packing, which widens it to f32.
pub(crate) trait Source: Copy + Send + Sync {
    /// How many elements it holds.
    fn elements(&self) -> usize;
    /// Elements `at .. at + dst.len()`, as f32.
    fn widen(&self, at: usize, dst: &mut [f32]);
    /// The values themselves when they are f32 (copied whole vectors at a time).
    fn as_f32(&self) -> Option<&[f32]> {
        None
    }
    /// Rows `first .. first + count` of the operand read as a matrix `n` wide, each one's
    /// columns `col .. col + spill.len()` widened into `spill` and handed to `each` with its
    /// place in the run. A source whose rows share work (an im2col's split of the columns into
    /// output rows) overrides it to do that work once per call rather than once per row.
    #[inline(always)]
    fn widen_rows(
        &self,
        (first, count): (usize, usize),
        (n, col): (usize, usize),
        spill: &mut [f32],
        each: &mut impl TakeRow,
    ) {
        widen_each_row(self, (first, count), (n, col), spill, each);
    }
}

/// [`Source::widen_rows`] one row at a time through [`Source::widen`]: the default, and what a
/// source that overrides it falls back on.
#[inline(always)]
pub(crate) fn widen_each_row<S: Source>(
    source: &S,
    (first, count): (usize, usize),
    (n, col): (usize, usize),
    spill: &mut [f32],
    each: &mut impl TakeRow,
) {
    for i in 0..count {
        source.widen((first + i) * n + col, spill);
        each.take(i, spill);
    }
}

/// What [`Source::widen_rows`] hands each widened row to. A trait rather than a closure so the
/// packing's implementation can be `#[inline(always)]`: a closure the compiler left out of line
/// was built without the SIMD token's target features.
pub(crate) trait TakeRow {
    /// Row `i` of the run.
    fn take(&mut self, i: usize, row: &[f32]);
}

impl<F: FnMut(usize, &[f32])> TakeRow for F {
    fn take(&mut self, i: usize, row: &[f32]) {
        self(i, row)
    }
}

/// A block of `b` being packed: per panel, per row `p`, `NR` values as two vectors (zero past
/// the stripe's `nc` columns).
struct Panels<'a, S: Simd> {
    steps: &'a mut [[S::f32s; 2]],
    kc: usize,
    panels: usize,
    nr: usize,
    nc: usize,
}

impl<S: Simd> TakeRow for Panels<'_, S> {
    #[inline(always)]
    fn take(&mut self, p: usize, row: &[f32]) {
        let Panels { kc, panels, nr, nc, .. } = *self;
        for panel in 0..panels {
            let j0 = panel * nr;
            let dst = &mut self.steps[panel * kc + p];
            if j0 + nr <= nc {
                let (src, _) = S::as_simd_f32s(&row[j0..j0 + nr]);
                dst.copy_from_slice(&src[..2]);
            } else {
                let mut tail = [0.0f32; MAX_NR];
                tail[..nc - j0].copy_from_slice(&row[j0..]);
                let (tail, _) = S::as_simd_f32s(&tail[..nr]);
                dst.copy_from_slice(&tail[..2]);
            }
        }
    }
}

impl Source for &[f32] {
    fn elements(&self) -> usize {
        <[f32]>::len(self)
    }
    #[inline(always)]
    fn widen(&self, at: usize, dst: &mut [f32]) {
        copy_f32(&self[at..at + dst.len()], dst);
    }
    fn as_f32(&self) -> Option<&[f32]> {
        Some(self)
    }
}

/// `dst.copy_from_slice(src)`, a short one as two overlapping moves of a fixed size, which the
/// compiler emits as a few vector loads and stores: an im2col row is copied in runs of one
/// output row (often 8 to 64 floats), and a `memcpy` call per run cost more than its copy.
#[inline(always)]
pub(crate) fn copy_f32(src: &[f32], dst: &mut [f32]) {
    #[inline(always)]
    fn ends<const N: usize>(src: &[f32], dst: &mut [f32]) {
        let (len, s, d) = (dst.len(), src.first_chunk::<N>(), dst.first_chunk_mut::<N>());
        if let (Some(s), Some(d)) = (s, d) {
            *d = *s;
        }
        if let (Some(s), Some(d)) = (src.last_chunk::<N>(), dst.last_chunk_mut::<N>()) {
            *d = *s;
        }
        debug_assert!(len >= N && len <= 2 * N && src.len() == len);
    }
    match dst.len() {
        0 => {}
        1 => dst[0] = src[0],
        2..=3 => ends::<2>(src, dst),
        4..=7 => ends::<4>(src, dst),
        8..=15 => ends::<8>(src, dst),
        16..=31 => ends::<16>(src, dst),
        32..=64 => ends::<32>(src, dst),
        _ => dst.copy_from_slice(src),
    }
}

/// `dst.fill(0.0)`, a short one as fixed-size stores (as [`copy_f32`], for an im2col's edges
/// in padding: a `memset` call per edge of one or two floats cost more than the edge).
#[inline(always)]
pub(crate) fn zero_f32(dst: &mut [f32]) {
    #[inline(always)]
    fn ends<const N: usize>(dst: &mut [f32]) {
        if let Some(d) = dst.first_chunk_mut::<N>() {
            *d = [0.0; N];
        }
        if let Some(d) = dst.last_chunk_mut::<N>() {
            *d = [0.0; N];
        }
    }
    match dst.len() {
        0 => {}
        1 => dst[0] = 0.0,
        2..=3 => ends::<2>(dst),
        4..=7 => ends::<4>(dst),
        8..=15 => ends::<8>(dst),
        16..=31 => ends::<16>(dst),
        _ => dst.fill(0.0),
    }
}

/// f32 values as little-endian bytes (a caller's argument, read where it lies).
#[derive(Clone, Copy)]
pub(crate) struct F32Bytes<'a>(pub(crate) &'a [u8]);

impl Source for F32Bytes<'_> {
    fn elements(&self) -> usize {
        self.0.len() / 4
    }
    #[inline(always)]
    fn widen(&self, at: usize, dst: &mut [f32]) {
        let src = &self.0[at * 4..(at + dst.len()) * 4];
        for (d, s) in dst.iter_mut().zip(src.chunks_exact(4)) {
            *d = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
        }
    }
}

/// bfloat16 bits: the high half of an f32.
#[derive(Clone, Copy)]
pub(crate) struct Bf16Bits<'a>(pub(crate) &'a [u16]);

impl Source for Bf16Bits<'_> {
    fn elements(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn widen(&self, at: usize, dst: &mut [f32]) {
        let src = &self.0[at..at + dst.len()];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f32::from_bits(u32::from(s) << 16);
        }
    }
}

/// IEEE binary16 bits.
#[derive(Clone, Copy)]
pub(crate) struct F16Bits<'a>(pub(crate) &'a [u16]);

impl Source for F16Bits<'_> {
    fn elements(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn widen(&self, at: usize, dst: &mut [f32]) {
        let src = &self.0[at..at + dst.len()];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f16_to_f32(s);
        }
    }
}

/// binary16 to f32 without branches (so the packing loop vectorises): exponent and mantissa
/// move to f32's places and are rescaled by 2^(127 − 15), which is exact for normal and subnormal
/// halves alike; infinities and NaNs (exponent all ones) get f32's all-ones exponent instead.
#[inline(always)]
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    let bits = u32::from(bits);
    let sign = (bits & 0x8000) << 16;
    let rest = bits & 0x7fff;
    let scaled = f32::from_bits(rest << 13) * f32::from_bits((127 + 112) << 23);
    let special = f32::from_bits(0x7f80_0000 | (rest << 13));
    let magnitude = if rest >= 0x7c00 { special } else { scaled };
    f32::from_bits(sign | magnitude.to_bits())
}

/// 8-bit float bits and the 256 values they stand for (one table per format, [`f8_values`]).
#[derive(Clone, Copy)]
pub(crate) struct F8Bits<'a> {
    pub(crate) bits: &'a [u8],
    pub(crate) values: &'a [f32; 256],
}

impl Source for F8Bits<'_> {
    fn elements(&self) -> usize {
        self.bits.len()
    }
    #[inline(always)]
    fn widen(&self, at: usize, dst: &mut [f32]) {
        let src = &self.bits[at..at + dst.len()];
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = self.values[usize::from(s)];
        }
    }
}

/// The values of the 256 bit patterns of an 8-bit format, built once per format.
pub(crate) fn f8_values(format: SmallFloat) -> &'static [f32; 256] {
    static TABLES: [OnceLock<[f32; 256]>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match format {
        SmallFloat::F8e5m2 => 0,
        SmallFloat::F8e4m3fn => 1,
        _ => 2,
    };
    TABLES[slot].get_or_init(|| std::array::from_fn(|bits| format.decode(bits as u32)))
}

/// Runs `c[m×n] = a[m×k] · b[k×n]` (row-major) with `kernel` over `threads` cores, and returns
/// false when the CPU does not run that kernel or the lengths do not fit the dimensions (having
/// done nothing), or when a packing buffer cannot be allocated (some parts of `c` then hold
/// what they held before): the caller then computes all of `c` by its general path.
/// [`Kernel::Portable`] runs this module's code over scalar lanes.
pub(crate) fn gemm<A: Source, B: Source>(
    kernel: Kernel,
    a: A,
    b: B,
    c: &mut [f32],
    dims: (usize, usize, usize),
    threads: usize,
) -> bool {
    match kernel {
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        Kernel::Avx512 => match pulp::x86::V4::try_new() {
            Some(simd) => gemm_with::<_, 12, _, _>(simd, a, b, c, dims, threads),
            None => false,
        },
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        Kernel::Avx2 => match pulp::x86::V3::try_new() {
            Some(simd) => gemm_with::<_, 6, _, _>(simd, a, b, c, dims, threads),
            None => false,
        },
        #[cfg(target_arch = "aarch64")]
        Kernel::Neon => match pulp::aarch64::Neon::try_new() {
            Some(simd) => gemm_with::<_, 12, _, _>(simd, a, b, c, dims, threads),
            None => false,
        },
        Kernel::Portable => gemm_with::<_, 6, _, _>(pulp::Scalar256b, a, b, c, dims, threads),
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// Lanes of `S`'s f32 vector, and so `NR = 2 × lanes`.
pub(crate) fn lanes<S: Simd>() -> usize {
    size_of::<S::f32s>() / size_of::<f32>()
}

/// [`gemm`] with a given SIMD token and tile height `MR`; `c` must hold `m × n` values, `a`
/// `m × k`, `b` `k × n`.
pub(crate) fn gemm_with<S: Simd + Send + Sync, const MR: usize, A: Source, B: Source>(
    simd: S,
    a: A,
    b: B,
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
    threads: usize,
) -> bool {
    let nr = 2 * lanes::<S>();
    let fits = |len: usize, rows: usize, cols: usize| rows.checked_mul(cols) == Some(len);
    if nr > MAX_NR
        || MR > MAX_MR
        || !fits(a.elements(), m, k)
        || !fits(b.elements(), k, n)
        || !fits(c.len(), m, n)
    {
        return false;
    }
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 {
        c.fill(0.0);
        return true;
    }
    // Parts of whole panels of columns, [`PARTS_PER_CORE`] per core so that a faster core
    // takes a slower one's last parts ([`super::par::each`]), each packing its own columns of
    // `b`; or, see [`in_bands`], bands of rows, one per thread, each cut into such parts: every
    // thread then has rows of its own, and `b` is packed once per band. Either way every
    // element of `c` gets the same sums in the same order as on one thread.
    let n_panels = n.div_ceil(nr);
    let by_rows = in_bands(m, n, threads, MR);
    let band = if by_rows { m.div_ceil(threads).div_ceil(MR) * MR } else { m };
    let bands = m.div_ceil(band);
    let stripe = if threads > 1 {
        let pieces = threads.saturating_mul(PARTS_PER_CORE).div_ceil(bands);
        n_panels.div_ceil(pieces).max(LEAST_PART_PANELS).min(n_panels) * nr
    } else {
        n_panels * nr
    };
    let pieces = n.div_ceil(stripe);
    // Band by band, so that a thread's run of parts (see `par::each`) keeps to one band of `a`.
    let mut parts: Vec<Vec<&mut [f32]>> = Vec::new();
    if parts.try_reserve_exact(bands * pieces).is_err() {
        return false;
    }
    for _ in 0..bands * pieces {
        let mut rows = Vec::new();
        if rows.try_reserve_exact(band).is_err() {
            return false;
        }
        parts.push(rows);
    }
    for (i, row) in c.chunks_exact_mut(n).enumerate() {
        let first = i / band * pieces;
        for (piece, rows) in row.chunks_mut(stripe).zip(&mut parts[first..first + pieces]) {
            rows.push(piece);
        }
    }
    let b_len = KC * (NC_PANELS * nr).min(stripe) + ALIGN_SLACK;
    let a_len = widened_len(&a, band);
    // Whether a part found no packing buffers (it then did nothing).
    let short = std::sync::atomic::AtomicBool::new(false);
    let job = |(index, mut rows): (usize, Vec<&mut [f32]>)| {
        let Some(mut buffers) = Buffers::take(b_len, a_len) else {
            short.store(true, std::sync::atomic::Ordering::Relaxed);
            return;
        };
        let (row0, col0) = (index / pieces * band, index % pieces * stripe);
        let Buffers { b_block, a_rows } = &mut buffers;
        simd.vectorize(Stripe::<MR, A, B> {
            a,
            b,
            m: rows.len(),
            k,
            n,
            row0,
            col0,
            rows: &mut rows,
            b_block,
            a_rows,
        });
        buffers.give_back();
    };
    super::par::each(parts.into_iter().enumerate(), job);
    !short.into_inner()
}

/// Whether a product of `m × n` over `threads` threads is cut into bands of rows, one per thread
/// (see [`gemm_with`]), rather than into parts of columns only: when it is taller than wide, as
/// the transformer FFN's 512×1024·1024×256 (two blocks of columns, too few to share), and
/// whenever each band has [`BAND_LEAST_ROWS`] rows (the transformer's 512 rows on two cores).
///
/// Bands keep each thread on the same rows from one kernel to the next: the elementwise kernels
/// that read a product (a bias and an activation) and write the next one's `a` split by rows,
/// the calling thread first, so with bands each thread reads rows its own core wrote; with
/// parts of columns each row's halves were written by both cores, and half of every row crossed
/// to the other core's cache twice per layer. Two cores, a product then bias and ReLU then the
/// next product (neither result read back): 512×256·256×1024 then 512×1024·1024×256 3340 →
/// 2990 µs; the transformer model 15.3-15.8 → 14.6-15.0 ms (an AMD EPYC VM with AVX2, in its
/// slow periods, when a thread beside ours ran slower, see `par`; equal within 1-2 % in its
/// quick ones).
///
/// Below 256 rows a band, each thread's packing of all of `b` costs as much as the crossing
/// saves, or more: on the AMD VM bands of 128 rows (256×1024·1024×1024 and back) measured equal
/// either way (6060-6520 against 6240-6500 µs) and bands of 64 rows lost (128×1024·1024×1024 and
/// back 3370 → 3510 µs); on a 2-core Intel Xeon VM with AVX-512 (2 MiB of L2 per core), 256 rows
/// on two cores in parts of columns instead of bands, three interleaved pairs: that product, bias
/// and ReLU, and the next product 3686-3754 → 3461-3504 µs, the MLP model 3402-3407 → 3083-3368
/// µs.
fn in_bands(m: usize, n: usize, threads: usize, mr: usize) -> bool {
    threads > 1 && m >= 2 * mr * threads && (m > n || m >= BAND_LEAST_ROWS.saturating_mul(threads))
}

/// The fewest rows per thread for which a product wider than tall is cut into bands.
const BAND_LEAST_ROWS: usize = 256;

/// The fewest panels of a part of columns: a block of `b`'s. A part reads all of its band of `a`
/// once per block of `b` as the stripes did, so a part narrower than a block would read it more
/// often (parts of four panels made 512×256·256×256 6-16 % slower on two cores).
const LEAST_PART_PANELS: usize = NC_PANELS;

thread_local! {
    /// Packing buffers kept between parts on the thread that runs them: a fresh 512 KiB buffer
    /// per call would be a fresh mapping whose page faults cost about as much as the packing,
    /// and a buffer last written by another core would have each of its lines taken from that
    /// core's cache.
    static SPARE: RefCell<Vec<Buffers>> = const { RefCell::new(Vec::new()) };
}

/// This thread's pair of packing buffers, from [`SPARE`].
#[derive(Default)]
struct Buffers {
    /// A packed block of `b`.
    b_block: Vec<f32>,
    /// The widened rows of a narrow `a`.
    a_rows: Vec<f32>,
}

impl Buffers {
    /// `None` when a buffer cannot be allocated.
    fn take(b_len: usize, a_len: usize) -> Option<Buffers> {
        // A kept buffer keeps its values, and a pair keeps its roles, so that the resize in the
        // stripe finds the length it needs and writes nothing: clearing would cost a `memset` of
        // every buffer in every call. The packing writes each value the kernel reads first.
        let fit = |mut buffer: Vec<f32>, len: usize| -> Option<Vec<f32>> {
            buffer.truncate(len);
            buffer.try_reserve_exact(len - buffer.len()).ok()?;
            Some(buffer)
        };
        let Buffers { b_block, a_rows } = SPARE.with_borrow_mut(Vec::pop).unwrap_or_default();
        Some(Buffers { b_block: fit(b_block, b_len)?, a_rows: fit(a_rows, a_len)? })
    }

    /// Back to this thread's [`SPARE`], for its next part.
    fn give_back(self) {
        SPARE.with_borrow_mut(|spare| spare.push(self));
    }
}

/// One thread's share: the `m` rows of `c` from `row0` on, the columns `col0 .. col0 +
/// rows[_].len()`.
struct Stripe<'a, 'r, const MR: usize, A, B> {
    a: A,
    b: B,
    m: usize,
    k: usize,
    n: usize,
    row0: usize,
    col0: usize,
    rows: &'r mut [&'a mut [f32]],
    b_block: &'r mut Vec<f32>,
    /// A narrow `a`'s rows widened to f32, [`WIDE_ROWS`] at a time.
    a_rows: &'r mut Vec<f32>,
}

impl<const MR: usize, A: Source, B: Source> pulp::WithSimd for Stripe<'_, '_, MR, A, B> {
    type Output = ();

    // Inlined into pulp's `vectorize`, which is compiled with the token's target features: the
    // kernel and the widening below must be inlined into it as well, or they would be built
    // without them.
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Stripe { a, b, m, k, n, row0, col0, rows, b_block, a_rows } = self;
        let nr = 2 * lanes::<S>();
        let width = rows.first().map_or(0, |row| row.len());
        let (column_blocks, depth_blocks) = (width.div_ceil(NC_PANELS * nr), k.div_ceil(KC));
        let a_len = widened_len(&a, m);
        if a_rows.len() < a_len {
            a_rows.resize(a_len, 0.0);
        }
        // Blocks of `b` by columns, then depth; or by depth, then columns, when the stripe has
        // several blocks of columns and a depth's rows of `a` are few enough to stay in L2 while
        // they meet every one of them (128×4096·4096×4096 would otherwise stream all of `a` from
        // L3 once per block of columns). Either way each element of `c` meets the depths in
        // order, so the sums are the same.
        let depth_outer = column_blocks > 1 && m.saturating_mul(KC) <= A_STAYS_MAX;
        let (outer, inner) =
            if depth_outer { (depth_blocks, column_blocks) } else { (column_blocks, depth_blocks) };
        for (o, i) in (0..outer).flat_map(|o| (0..inner).map(move |i| (o, i))) {
            let (column_block, depth_block) = if depth_outer { (i, o) } else { (o, i) };
            let (jc, pc) = (column_block * NC_PANELS * nr, depth_block * KC);
            let nc = (NC_PANELS * nr).min(width - jc);
            let panels = nc.div_ceil(nr);
            let kc = KC.min(k - pc);
            // The block of `b`: per panel, per row `p`, `NR` values (zero past the stripe).
            // Whole f32 panels are copied as two vectors: a `memcpy` call per 128 bytes
            // cost more than the copy. Narrow ones are widened through a spill row.
            if b_block.len() < panels * kc * nr + ALIGN_SLACK {
                b_block.resize(panels * kc * nr + ALIGN_SLACK, 0.0);
            }
            let b_block = aligned_mut(b_block);
            let (block_steps, _) = S::as_mut_simd_f32s(b_block);
            let (block_steps, _) = block_steps.as_chunks_mut::<2>();
            // Row by row of `b`, so the reads run along its rows (one stream the hardware
            // prefetches) rather than down a panel's column of rows `n` apart. A narrow (or
            // computed, as a convolution's im2col) row is widened whole, the block's `nc`
            // columns in one call, into a spill row whose tail past the stripe stays zero: per
            // panel, a call's fixed cost (an im2col source's index arithmetic) and the read of
            // a just-written 128-byte spill as two vectors cost more than the widening.
            let mut spill = [0.0f32; NC_PANELS * MAX_NR];
            let mut pack = Panels::<S> { steps: block_steps, kc, panels, nr, nc };
            match b.as_f32() {
                Some(b) => {
                    for p in 0..kc {
                        let at = (pc + p) * n + col0 + jc;
                        pack.take(p, &b[at..at + nc]);
                    }
                }
                None => b.widen_rows((pc, kc), (n, col0 + jc), &mut spill[..nc], &mut pack),
            }
            let (b_vectors, _) = S::as_simd_f32s(b_block);
            let (b_steps, _) = b_vectors.as_chunks::<2>();
            let first = pc == 0;
            if let Some(a) = a.as_f32() {
                let block = InPlaceBlock { a, k, row0, col: pc, kc, jc, panels, width, nr, first };
                block.run::<S, IN_PLACE_MR>(simd, rows, b_steps);
                continue;
            }
            // A narrow `a`: a few rows widened into plain f32 rows (a vectorised loop per row,
            // where interleaving them into micro-panels stored element by element), then the
            // same kernel.
            for chunk0 in (0..m).step_by(WIDE_ROWS) {
                let chunk = WIDE_ROWS.min(m - chunk0);
                for (i, row) in a_rows[..chunk * kc].chunks_exact_mut(kc).enumerate() {
                    a.widen((row0 + chunk0 + i) * k + pc, row);
                }
                let wide = &a_rows[..chunk * kc];
                let block = InPlaceBlock {
                    a: wide,
                    k: kc,
                    row0: 0,
                    col: 0,
                    kc,
                    jc,
                    panels,
                    width,
                    nr,
                    first,
                };
                block.run::<S, IN_PLACE_MR>(simd, &mut rows[chunk0..chunk0 + chunk], b_steps);
            }
        }
    }
}

/// The tile height: the rows' addresses take a register each, and with twelve rows (the height
/// of the packed AVX-512 tile this kernel replaced) the compiler kept five of them on the stack,
/// reloaded at every step, and spilled an accumulator. Six rows: 512×256·256×1024 went from
/// 1369 to 1311 µs, 512×256·256×768 from 1019 to 982 µs (eight rows measured the same as six,
/// and would not fit AVX2's sixteen registers).
///
/// Reading f32 rows in place rather than packing them, on two cores: attention's 128×64·64×128
/// (one core) 453 to 389 µs; 512×256·256×256 378 to 337 µs; 512×1024·1024×256 1411 to 1274 µs;
/// 256×2048·2048×512 2849 to 2578 µs. Rows a multiple of 4 KiB apart share an L1 set, and six
/// of them fit its eight ways.
const IN_PLACE_MR: usize = 6;

/// Rows of a narrow `a` widened at a time: 48 rows of a [`KC`] block are 96 KiB, which leave
/// the block of `b` its room in L2 (a whole band of 512 rows, 512 KiB, made bf16 512×256·256×768
/// slower on two cores). Against packing micro-panels, bf16 on two cores: 512×256·256×1024 1571
/// to 1495 µs, 512×1024·1024×256 1543 to 1433 µs, 512×256·256×768 1190 to 1150 µs.
const WIDE_ROWS: usize = 48;

/// The floats of the buffer a stripe of `rows` rows widens a narrow `a` into (none for f32).
fn widened_len<A: Source>(a: &A, rows: usize) -> usize {
    if a.as_f32().is_some() { 0 } else { WIDE_ROWS.min(rows) * KC }
}

/// One block of `b` times rows of `a` in memory: an f32 `a` where it lies, or a narrow one's
/// rows widened into a buffer.
struct InPlaceBlock<'a> {
    a: &'a [f32],
    /// The distance between rows of `a`.
    k: usize,
    row0: usize,
    /// Where the block's depth starts in a row of `a`, and its depth.
    col: usize,
    kc: usize,
    /// The block's first column (of the stripe), its panels, and the stripe's width.
    jc: usize,
    panels: usize,
    width: usize,
    nr: usize,
    /// Whether the block is the first of its depth (its sums are stored, not added).
    first: bool,
}

impl InPlaceBlock<'_> {
    #[inline(always)]
    fn run<S: Simd, const H: usize>(
        &self,
        simd: S,
        rows: &mut [&mut [f32]],
        b_steps: &[[S::f32s; 2]],
    ) {
        let InPlaceBlock { a, k, row0, col, kc, jc, panels, width, nr, first } = *self;
        let m = rows.len();
        for r0 in (0..m).step_by(H) {
            let live = H.min(m - r0);
            let a_rows: [&[f32]; H] = std::array::from_fn(|i| {
                if i < live {
                    let at = (row0 + r0 + i) * k + col;
                    &a[at..at + kc]
                } else {
                    &ZERO_ROW[..kc]
                }
            });
            let tile_rows = &mut rows[r0..(r0 + H).min(m)];
            for panel in 0..panels {
                let b = &b_steps[panel * kc..(panel + 1) * kc];
                let tile = tile_from_rows(simd, &a_rows, b);
                let lc = jc + panel * nr;
                store(simd, &tile, tile_rows, lc, nr.min(width - lc), first);
            }
        }
    }
}

/// Floats a buffer holds past its use, so that the use can start on a cache line.
const ALIGN_SLACK: usize = 16;

/// `buffer` from its first element on a 64-byte boundary (a cache line): a vector load of the
/// packed block that straddled two lines took two of them.
fn aligned_mut(buffer: &mut [f32]) -> &mut [f32] {
    let misaligned = buffer.as_ptr() as usize % 64;
    let skip = (64 - misaligned) % 64 / size_of::<f32>();
    &mut buffer[skip..]
}

/// Zeros standing for the rows of a tile past the last row of `a`.
static ZERO_ROW: [f32; KC] = [0.0; KC];

/// The register tile: `Σ_p a_rows[i][p] · b[p][0..NR]` for each of the tile's rows, one slice
/// per row (each at least as long as `b`), each sum in the order of `p`.
#[inline(always)]
fn tile_from_rows<S: Simd, const MR: usize>(
    simd: S,
    a_rows: &[&[f32]; MR],
    b: &[[S::f32s; 2]],
) -> [[S::f32s; 2]; MR] {
    let depth = b.len();
    let a_rows: [&[f32]; MR] = a_rows.map(|row| &row[..depth]);
    let mut acc = [[simd.splat_f32s(0.0); 2]; MR];
    let step = |acc: &mut [[S::f32s; 2]; MR], x: [f32; MR], b_p: &[S::f32s; 2]| {
        for (acc_row, x) in acc.iter_mut().zip(x) {
            let x = simd.splat_f32s(x);
            acc_row[0] = simd.mul_add_e_f32s(x, b_p[0], acc_row[0]);
            acc_row[1] = simd.mul_add_e_f32s(x, b_p[1], acc_row[1]);
        }
    };
    // Four depths at a time, with one bounds check per row for the four: a check per row and
    // depth was an instruction and a branch for every two multiply-adds.
    let (b_quads, b_rest) = b.as_chunks::<4>();
    for (q, b_quad) in b_quads.iter().enumerate() {
        let quads: [&[f32; 4]; MR] = a_rows.map(|row| &row.as_chunks::<4>().0[q]);
        for (s, b_p) in b_quad.iter().enumerate() {
            step(&mut acc, quads.map(|quad| quad[s]), b_p);
        }
    }
    let done = b_quads.len() * 4;
    for (p, b_p) in b_rest.iter().enumerate() {
        step(&mut acc, a_rows.map(|row| row[done + p]), b_p);
    }
    acc
}

/// Writes (`first`) or adds the tile's first `w` columns to `rows[_][lc..lc + w]`.
#[inline(always)]
fn store<S: Simd, const MR: usize>(
    simd: S,
    tile: &[[S::f32s; 2]; MR],
    rows: &mut [&mut [f32]],
    lc: usize,
    w: usize,
    first: bool,
) {
    let nr = 2 * lanes::<S>();
    for (row, acc) in rows.iter_mut().zip(tile) {
        let dst = &mut row[lc..lc + w];
        if w == nr {
            let (v, _) = S::as_mut_simd_f32s(dst);
            for (v, &acc) in v.iter_mut().zip(acc) {
                *v = if first { acc } else { simd.add_f32s(*v, acc) };
            }
        } else {
            let mut spill = [0.0f32; MAX_NR];
            let (s, _) = S::as_mut_simd_f32s(&mut spill[..nr]);
            s.copy_from_slice(acc);
            for (d, &s) in dst.iter_mut().zip(&spill) {
                *d = if first { s } else { *d + s };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Every kernel this CPU runs (the AVX2 one on AVX-512 machines too) against the textbook
    //! loop (`dot::naive_matmul`) on shapes that cross every block edge: rows past a multiple of
    //! `MR`, columns past a multiple of `NR` and of a packed block, depth past `KC`, empty
    //! dimensions, and NaN/infinity. Small integer inputs make every sum exact in f32, so the two
    //! must agree exactly whatever the summation order; narrow operands hold the same integers
    //! (exact in every format), so their products must match the f32 loop exactly too.

    use super::super::dot::{gemm_f32 as dispatched, naive_matmul};
    use super::*;

    /// The short copies and fills, by fixed-size moves from both ends, at every length up to
    /// past the longest they take by moves, into a buffer whose neighbours must stay untouched.
    #[test]
    fn short_copies_and_fills_write_exactly_their_range() {
        let src: Vec<f32> = (0..80).map(|i| i as f32 + 1.0).collect();
        for len in 0..=80 {
            let mut buffer = vec![-1.0f32; len + 2];
            copy_f32(&src[..len], &mut buffer[1..len + 1]);
            assert_eq!(buffer[1..len + 1], src[..len], "copy of {len}");
            assert_eq!((buffer[0], buffer[len + 1]), (-1.0, -1.0), "copy of {len}");
            zero_f32(&mut buffer[1..len + 1]);
            assert!(buffer[1..len + 1].iter().all(|&v| v == 0.0), "fill of {len}");
            assert_eq!((buffer[0], buffer[len + 1]), (-1.0, -1.0), "fill of {len}");
        }
    }

    const SHAPES: [(usize, usize, usize); 19] = [
        (1, 1, 1),
        (17, 33, 5),
        (0, 4, 4),
        (4, 0, 4),
        (4, 4, 0),
        (0, 0, 0),
        (12, 256, 32),
        (13, 300, 33),
        (25, 7, 65),
        (5, 3, 1000),
        (11, 513, 31),
        (24, 1, 17),
        (6, 64, 16),
        (7, 17, 15),
        (40, 40, 600),
        // Taller than wide: split by bands of rows on two and three threads, the last band
        // short and not a whole tile.
        (100, 37, 20),
        (77, 300, 40),
        // Rows 4 KiB apart, two depth blocks, the stripe wider than one block of `b`, a short
        // last tile.
        (14, 1024, 530),
        // Taller than wide with bands of over 128 rows on two and three threads: the bands'
        // edges off the tile height, two depth blocks, the last part of columns short.
        (262, 600, 200),
    ];

    /// `len` values of a fixed xorshift sequence started from `seed`.
    fn xorshift(len: usize, seed: u32) -> impl Iterator<Item = u32> {
        let mut state = seed.wrapping_mul(2_654_435_761) | 1;
        (0..len).map(move |_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        })
    }

    /// Integers in -3..=3 from a fixed xorshift sequence.
    fn small_integers(len: usize, seed: u32) -> Vec<f32> {
        xorshift(len, seed).map(|state| (state % 7) as f32 - 3.0).collect()
    }

    /// The kernels this CPU runs, each with its name.
    fn kernels_here() -> Vec<Kernel> {
        let here: Vec<Kernel> = Kernel::ALL.into_iter().filter(|k| k.runs_here()).collect();
        println!("kernels run here: {:?}", here.iter().map(|k| k.name()).collect::<Vec<_>>());
        here
    }

    /// Runs `gemm` on each shape against the naive loop; `c` starts as garbage, which the gemm
    /// must overwrite.
    fn check(name: &str, gemm: impl Fn(&[f32], &[f32], &mut [f32], usize, usize, usize) -> bool) {
        for (m, k, n) in SHAPES {
            let a = small_integers(m * k, 1 + m as u32);
            let b = small_integers(k * n, 2 + n as u32);
            let mut expected = vec![0.0; m * n];
            naive_matmul(&a, &b, &mut expected, m, k, n);
            let mut got = vec![f32::NAN; m * n];
            assert!(gemm(&a, &b, &mut got, m, k, n), "{name} {m}x{k}x{n} declined");
            assert_eq!(got, expected, "{name} {m}x{k}x{n}");
        }
    }

    #[test]
    fn scalar_tokens_match_the_naive_loop_on_odd_shapes() {
        for threads in [1, 2, 3] {
            check("scalar", |a, b, c, m, k, n| {
                gemm_with::<_, 12, _, _>(pulp::Scalar, a, b, c, (m, k, n), threads)
            });
            let wide = pulp::Scalar512b;
            check("scalar512b", |a, b, c, m, k, n| {
                gemm_with::<_, 12, _, _>(wide, a, b, c, (m, k, n), threads)
            });
            let avx2_like = pulp::Scalar256b;
            check("scalar256b", |a, b, c, m, k, n| {
                gemm_with::<_, 6, _, _>(avx2_like, a, b, c, (m, k, n), threads)
            });
        }
    }

    #[test]
    fn every_kernel_here_matches_the_naive_loop_on_odd_shapes() {
        for kernel in kernels_here() {
            for threads in [1, 2, 3] {
                check(kernel.name(), |a, b, c, m, k, n| gemm(kernel, a, b, c, (m, k, n), threads));
            }
        }
    }

    #[test]
    fn products_are_cut_into_bands_when_taller_than_wide_or_each_band_is_tall() {
        let bands = |m, n, threads| in_bands(m, n, threads, 6);
        assert!(bands(512, 256, 2), "taller than wide");
        assert!(bands(512, 1024, 2), "256 rows a band");
        assert!(bands(1024, 1024, 4), "256 rows a band on four threads");
        assert!(!bands(511, 1024, 2), "under 256 rows a band, parts of columns");
        assert!(!bands(256, 1024, 2), "128 rows a band");
        assert!(!bands(512, 1024, 1), "one thread");
        assert!(!bands(1024, 1024, 8), "128 rows a band on eight threads");
        assert!(!bands(20, 10, 2), "taller, but under two tiles a band");
    }

    #[test]
    fn the_avx2_kernel_is_tested_wherever_avx512_runs() {
        // The AVX2 kernel is what most x86 machines get: an AVX-512 test machine must not be the
        // reason it goes unchecked.
        if Kernel::Avx512.runs_here() {
            assert!(Kernel::Avx2.runs_here());
        }
    }

    #[test]
    fn the_dispatched_gemm_matches_the_naive_loop_on_odd_shapes() {
        check("dispatched", |a, b, c, m, k, n| {
            dispatched(a, b, c, m, k, n);
            true
        });
    }

    #[test]
    fn a_narrow_product_split_by_rows_matches_the_naive_loop() {
        // Under the packed panel's 16 columns, with work past the general path's split: on two
        // cores each half of the rows goes to matrixmultiply on its own core.
        let (m, k, n) = (257, 1024, 10);
        let a = small_integers(m * k, 3);
        let b = small_integers(k * n, 4);
        let mut expected = vec![0.0; m * n];
        naive_matmul(&a, &b, &mut expected, m, k, n);
        let mut got = vec![f32::NAN; m * n];
        dispatched(&a, &b, &mut got, m, k, n);
        assert_eq!(got, expected);
    }

    /// `values` in a narrow format's bits, through the crate's one encoder.
    fn encode16(format: SmallFloat, values: &[f32]) -> Vec<u16> {
        values.iter().map(|&x| format.encode_f32(x) as u16).collect()
    }

    fn encode8(format: SmallFloat, values: &[f32]) -> Vec<u8> {
        values.iter().map(|&x| format.encode_f32(x) as u8).collect()
    }

    #[test]
    fn narrow_operands_widened_while_packing_match_the_naive_loop() {
        for kernel in kernels_here() {
            check("bf16", |a, b, c, m, k, n| {
                let (a, b) = (encode16(SmallFloat::Bf16, a), encode16(SmallFloat::Bf16, b));
                gemm(kernel, Bf16Bits(&a), Bf16Bits(&b), c, (m, k, n), 2)
            });
            check("f16", |a, b, c, m, k, n| {
                let (a, b) = (encode16(SmallFloat::F16, a), encode16(SmallFloat::F16, b));
                gemm(kernel, F16Bits(&a), F16Bits(&b), c, (m, k, n), 2)
            });
            for format in [SmallFloat::F8e5m2, SmallFloat::F8e4m3fn, SmallFloat::F8e4m3] {
                check("f8", |a, b, c, m, k, n| {
                    let (a, b) = (encode8(format, a), encode8(format, b));
                    let values = f8_values(format);
                    let (a, b) = (F8Bits { bits: &a, values }, F8Bits { bits: &b, values });
                    gemm(kernel, a, b, c, (m, k, n), 1)
                });
            }
            // f32 as little-endian bytes that are not 4-byte aligned (aligned ones are read
            // as f32 slices by the caller), on both sides.
            check("f32 bytes", |a, b, c, m, k, n| {
                let unaligned = |values: &[f32]| -> Vec<u8> {
                    let mut bytes = vec![0u8];
                    bytes.extend(values.iter().flat_map(|x| x.to_le_bytes()));
                    bytes
                };
                let (a, b) = (unaligned(a), unaligned(b));
                gemm(kernel, F32Bytes(&a[1..]), F32Bytes(&b[1..]), c, (m, k, n), 2)
            });
            // Mixed operands: f32 times bf16.
            check("f32·bf16", |a, b, c, m, k, n| {
                let b = encode16(SmallFloat::Bf16, b);
                gemm(kernel, a, Bf16Bits(&b), c, (m, k, n), 1)
            });
        }
    }

    #[test]
    fn the_branchless_f16_widening_agrees_with_the_decoder_on_every_pattern() {
        for bits in 0..=u16::MAX {
            let (fast, exact) = (f16_to_f32(bits), SmallFloat::F16.decode(u32::from(bits)));
            if exact.is_nan() {
                assert!(fast.is_nan(), "{bits:#06x}: {fast} against NaN");
            } else {
                assert_eq!(fast.to_bits(), exact.to_bits(), "{bits:#06x}: {fast} against {exact}");
            }
        }
    }

    #[test]
    fn nan_and_infinity_propagate_as_in_the_naive_loop() {
        let (m, k, n) = (14, 20, 35);
        let mut a = small_integers(m * k, 5);
        let mut b = small_integers(k * n, 6);
        a[3 * k + 4] = f32::INFINITY; // row 3: ±inf, or NaN where b's row 4 is zero
        a[13 * k + 19] = f32::NAN; // the last row (in the padded panel): NaN
        b[7 * n + 34] = f32::NEG_INFINITY; // the last column (in the padded panel)
        b[2 * n + 9] = f32::NAN; // column 9: NaN
        let mut expected = vec![0.0; m * n];
        naive_matmul(&a, &b, &mut expected, m, k, n);
        assert!(expected.iter().any(|x| x.is_nan()) && expected.iter().any(|x| x.is_infinite()));
        let same = |got: &[f32]| {
            got.iter().zip(&expected).all(|(g, e)| (g.is_nan() && e.is_nan()) || g == e)
        };
        let mut got = vec![0.0; m * n];
        assert!(gemm_with::<_, 12, _, _>(pulp::Scalar512b, &a[..], &b[..], &mut got, (m, k, n), 2));
        assert!(same(&got), "scalar512b: {got:?}\nnaive: {expected:?}");
        for kernel in kernels_here() {
            let mut got = vec![0.0; m * n];
            assert!(gemm(kernel, &a[..], &b[..], &mut got, (m, k, n), 2));
            assert!(same(&got), "{}: {got:?}\nnaive: {expected:?}", kernel.name());
            let (a16, b16) = (encode16(SmallFloat::F16, &a), encode16(SmallFloat::F16, &b));
            let mut got = vec![0.0; m * n];
            assert!(gemm(kernel, F16Bits(&a16), F16Bits(&b16), &mut got, (m, k, n), 2));
            assert!(same(&got), "{} f16: {got:?}\nnaive: {expected:?}", kernel.name());
        }
        let mut got = vec![0.0; m * n];
        dispatched(&a, &b, &mut got, m, k, n);
        assert!(same(&got), "dispatched: {got:?}\nnaive: {expected:?}");
    }

    /// Fractions in -1..1 with full mantissas, from a fixed xorshift sequence.
    fn fractions(len: usize, seed: u32) -> Vec<f32> {
        xorshift(len, seed)
            .map(|state| (f64::from(state) / f64::from(u32::MAX) * 2.0 - 1.0) as f32)
            .collect()
    }

    /// The order the packed kernels sum in, written out plainly: per element, per block of `KC`
    /// depths, a chain of fused multiply-adds from zero in depth order; the first block's sum is
    /// stored and each later one added to it. Packing may change, this order may not.
    fn blocked_fma_reference(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize)) -> Vec<f32> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut total = 0.0f32;
                for pc in (0..k).step_by(KC) {
                    let mut sum = 0.0f32;
                    for p in pc..(pc + KC).min(k) {
                        sum = a[i * k + p].mul_add(b[p * n + j], sum);
                    }
                    total = if pc == 0 { sum } else { total + sum };
                }
                c[i * n + j] = total;
            }
        }
        c
    }

    /// Runs `gemm` (on f32 values; it may encode them) against [`blocked_fma_reference`] bit for
    /// bit, on shapes with rows past a multiple of `MR` and of the four-row groups of the `a`
    /// packing (15 = 12 + 3 = 6 + 6 + 3), depths past `KC` (up to three blocks, one of 88),
    /// columns past a packed block of `b`, over one to three stripes. `round` maps the inputs
    /// to the values the operand type holds. Fractions have full mantissas, so any change of
    /// order or rounding shows.
    fn check_blocked_order(
        name: &str,
        round: impl Fn(f32) -> f32,
        gemm: impl Fn(&[f32], &[f32], &mut [f32], (usize, usize, usize), usize) -> bool,
    ) {
        for (m, k, n) in [
            (15, 600, 1100),
            (30, 513, 70),
            (13, 257, 40),
            (4, 300, 33),
            (1, 9, 17),
            (1030, 20, 530),
        ] {
            let a: Vec<f32> = fractions(m * k, 3 + m as u32).into_iter().map(&round).collect();
            let b: Vec<f32> = fractions(k * n, 4 + n as u32).into_iter().map(&round).collect();
            let expected = blocked_fma_reference(&a, &b, (m, k, n));
            for threads in [1, 2, 3] {
                let mut got = vec![f32::NAN; m * n];
                assert!(gemm(&a, &b, &mut got, (m, k, n), threads), "{name} declined");
                let same = got.iter().zip(&expected).all(|(g, e)| g.to_bits() == e.to_bits());
                assert!(same, "{name} {m}x{k}x{n} over {threads} threads");
            }
        }
    }

    #[test]
    fn every_fused_kernel_sums_in_the_blocked_order_bit_for_bit() {
        // `pulp::Scalar` multiplies and adds separately; every other token fuses.
        let exact = |x: f32| x;
        check_blocked_order("scalar512b", exact, |a, b, c, dims, threads| {
            gemm_with::<_, 12, _, _>(pulp::Scalar512b, a, b, c, dims, threads)
        });
        check_blocked_order("scalar256b", exact, |a, b, c, dims, threads| {
            gemm_with::<_, 6, _, _>(pulp::Scalar256b, a, b, c, dims, threads)
        });
        let round = |format: SmallFloat| move |x: f32| format.decode(format.encode_f32(x));
        for kernel in kernels_here() {
            let name = kernel.name();
            check_blocked_order(name, exact, |a, b, c, dims, threads| {
                gemm(kernel, a, b, c, dims, threads)
            });
            for format in [SmallFloat::Bf16, SmallFloat::F16] {
                check_blocked_order(name, round(format), |a, b, c, dims, threads| {
                    let (a, b) = (encode16(format, a), encode16(format, b));
                    match format {
                        SmallFloat::Bf16 => {
                            gemm(kernel, Bf16Bits(&a), Bf16Bits(&b), c, dims, threads)
                        }
                        _ => gemm(kernel, F16Bits(&a), F16Bits(&b), c, dims, threads),
                    }
                });
            }
            let format = SmallFloat::F8e4m3fn;
            check_blocked_order(name, round(format), |a, b, c, dims, threads| {
                let (a, b) = (encode8(format, a), encode8(format, b));
                let values = f8_values(format);
                let (a, b) = (F8Bits { bits: &a, values }, F8Bits { bits: &b, values });
                gemm(kernel, a, b, c, dims, threads)
            });
            check_blocked_order(name, exact, |a, b, c, dims, threads| {
                let bytes = |values: &[f32]| -> Vec<u8> {
                    let mut bytes = vec![0u8];
                    bytes.extend(values.iter().flat_map(|x| x.to_le_bytes()));
                    bytes
                };
                let (a, b) = (bytes(a), bytes(b));
                gemm(kernel, F32Bytes(&a[1..]), F32Bytes(&b[1..]), c, dims, threads)
            });
        }
    }

    #[test]
    fn fractional_inputs_stay_within_rounding_of_the_naive_loop() {
        let (m, k, n) = (64, 576, 100);
        let a: Vec<f32> = small_integers(m * k, 8).iter().map(|x| x * 0.37 + 0.011).collect();
        let b: Vec<f32> = small_integers(k * n, 9).iter().map(|x| x * 1.3 - 0.29).collect();
        let mut expected = vec![0.0; m * n];
        naive_matmul(&a, &b, &mut expected, m, k, n);
        let mut results = Vec::new();
        for kernel in kernels_here() {
            let mut got = vec![0.0; m * n];
            assert!(gemm(kernel, &a[..], &b[..], &mut got, (m, k, n), 2));
            results.push((kernel.name(), got));
        }
        let mut got = vec![0.0; m * n];
        dispatched(&a, &b, &mut got, m, k, n);
        results.push(("dispatched", got));
        for (name, got) in results {
            for i in 0..m {
                for j in 0..n {
                    // Both sums are within k·ε·Σ|a·b| of the exact one.
                    let magnitude: f32 = (0..k).map(|p| (a[i * k + p] * b[p * n + j]).abs()).sum();
                    let bound = 2.0 * k as f32 * f32::EPSILON * magnitude;
                    let (g, e) = (got[i * n + j], expected[i * n + j]);
                    assert!((g - e).abs() <= bound, "{name} [{i}][{j}]: {g} against {e} ({bound})");
                }
            }
        }
    }

    #[test]
    fn a_packed_block_starts_on_a_cache_line_and_keeps_its_length() {
        for offset in 0..ALIGN_SLACK {
            let mut buffer = vec![0f32; 100 + ALIGN_SLACK];
            let whole = buffer.len();
            let aligned = aligned_mut(&mut buffer[offset..]);
            assert_eq!(aligned.as_ptr() as usize % 64, 0, "offset {offset}");
            assert!(aligned.len() + ALIGN_SLACK >= whole - offset, "offset {offset}");
        }
    }

    #[test]
    fn mismatched_lengths_are_declined_without_touching_c() {
        let mut c = vec![7.0; 4];
        let (a, b) = ([1.0f32; 3], [1.0f32; 4]);
        assert!(!gemm_with::<_, 6, _, _>(pulp::Scalar, &a[..], &b[..], &mut c, (2, 2, 2), 1));
        assert_eq!(c, [7.0; 4]);
    }
}

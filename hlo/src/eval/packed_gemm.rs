//! An f32 gemm of our own for CPUs with AVX-512: packed panels and a register-blocked kernel,
//! written in safe code over `pulp`'s SIMD types.
//!
//! Why it exists: matrixmultiply (behind ndarray's `general_mat_mul`) has no AVX-512 kernel, and
//! its AVX2 one left the f32 dot at 0.41× of XLA on CPU, which uses AVX-512. `pulp` checks the CPU
//! at run time and hands out a token (`V4`) whose methods are the AVX-512 instructions, behind a
//! safe API, so the crate keeps `#![forbid(unsafe_code)]`.
//!
//! Design choices, the usual blocked gemm:
//! - Each thread owns a stripe of `c`'s columns. Per block of [`KC`] rows of `b` and up to
//!   [`NC_PANELS`] panels of `NR` columns (`NR` = two vectors, 32 floats with AVX-512), it packs
//!   that block of `b` (zero past the stripe's last column), sized to stay in L2; then per
//!   [`MR`] rows of `a` it packs their `KC` columns into a micro-panel (zero past the last row)
//!   that stays in L1 while it meets every panel of the block.
//! - Packing buffers are kept on the calling thread between calls, since fresh ones would be
//!   fresh mappings whose page faults cost about as much as the packing.
//! - The kernel keeps an `MR × NR` tile of `c` in registers (12 × 2 = 24 of AVX-512's 32 vector
//!   registers), and for each `p` broadcasts one `a` value per row against the two `b` vectors
//!   with fused multiply-adds. Zero padding only ever feeds tile entries that are not stored, so
//!   NaN and infinity propagate as in the textbook loop.
//! - The first `KC` block overwrites `c`, later ones add to it, so `c` needs no clearing.
//! - The code is generic over `pulp::Simd`; only the AVX-512 token is dispatched to (tests also
//!   run it over the scalar token, which exercises the same packing with one-lane vectors).

use std::cell::RefCell;

use pulp::Simd;

/// Rows of the register tile.
pub(crate) const MR: usize = 12;
/// Depth of a packed block: `KC × MR` of `a` stays in L1 while a block of `b` streams from L2.
pub(crate) const KC: usize = 256;
/// Panels of `b` per packed block: `KC × NC_PANELS × 32` floats is 512 KiB with AVX-512.
pub(crate) const NC_PANELS: usize = 16;
/// The widest tile row this code is instantiated for (two 16-lane vectors).
const MAX_NR: usize = 32;

/// Runs `c[m×n] = a[m×k] · b[k×n]` (row-major) with the AVX-512 kernel over `threads` column
/// stripes, and returns false, having done nothing, when the CPU has no AVX-512 or a packing
/// buffer cannot be allocated (the caller then uses its general path).
pub(crate) fn gemm_f32(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
    threads: usize,
) -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    if let Some(simd) = pulp::x86::V4::try_new() {
        return gemm_with(simd, a, b, c, (m, k, n), threads);
    }
    let _ = (a, b, c, m, k, n, threads);
    false
}

/// Whether [`gemm_f32`] would run here (the CPU has AVX-512).
pub(crate) fn available() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    if pulp::x86::V4::try_new().is_some() {
        return true;
    }
    false
}

/// Lanes of `S`'s f32 vector, and so `NR = 2 × lanes`.
fn lanes<S: Simd>() -> usize {
    size_of::<S::f32s>() / size_of::<f32>()
}

/// [`gemm_f32`] with a given SIMD token; `c` must hold `m × n` values, `a` `m × k`, `b` `k × n`.
pub(crate) fn gemm_with<S: Simd + Send + Sync>(
    simd: S,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (m, k, n): (usize, usize, usize),
    threads: usize,
) -> bool {
    let nr = 2 * lanes::<S>();
    if nr > MAX_NR || a.len() != m * k || b.len() != k * n || c.len() != m * n {
        return false;
    }
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 {
        c.fill(0.0);
        return true;
    }
    // Column stripes of whole panels, one per thread.
    let n_panels = n.div_ceil(nr);
    let threads = threads.clamp(1, n_panels);
    let stripe = n_panels.div_ceil(threads) * nr;
    let threads = n.div_ceil(stripe);
    let mut stripes: Vec<Vec<&mut [f32]>> = Vec::new();
    if stripes.try_reserve_exact(threads).is_err() {
        return false;
    }
    for _ in 0..threads {
        let mut rows = Vec::new();
        if rows.try_reserve_exact(m).is_err() {
            return false;
        }
        stripes.push(rows);
    }
    for row in c.chunks_exact_mut(n) {
        for (piece, rows) in row.chunks_mut(stripe).zip(stripes.iter_mut()) {
            rows.push(piece);
        }
    }
    let b_len = KC * (NC_PANELS * nr).min(n_panels * nr);
    let Some(mut buffers) = Buffers::take(threads, b_len, KC * MR) else { return false };
    let job = |(index, (mut rows, (b_block, a_panel))): (usize, (Vec<&mut [f32]>, _))| {
        simd.vectorize(Stripe {
            a,
            b,
            m,
            k,
            n,
            col0: index * stripe,
            rows: &mut rows,
            b_block,
            a_panel,
        });
    };
    let mut work = stripes.into_iter().zip(buffers.pairs()).enumerate();
    if threads == 1 {
        work.for_each(job);
    } else {
        std::thread::scope(|scope| {
            let first = work.next();
            for item in work {
                scope.spawn(move || job(item));
            }
            if let Some(item) = first {
                job(item);
            }
        });
    }
    buffers.give_back();
    true
}

thread_local! {
    /// Packing buffers kept between products on the calling thread: a fresh 512 KiB buffer per
    /// call would be a fresh mapping whose page faults cost about as much as the packing.
    static SPARE: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
}

/// Two packing buffers per stripe (a block of `b`, a micro-panel of `a`), from [`SPARE`].
struct Buffers(Vec<(Vec<f32>, Vec<f32>)>);

impl Buffers {
    /// `None` when a buffer cannot be allocated.
    fn take(count: usize, b_len: usize, a_len: usize) -> Option<Buffers> {
        let mut pairs = Vec::new();
        pairs.try_reserve_exact(count).ok()?;
        let one = |len: usize| -> Option<Vec<f32>> {
            let mut buffer = SPARE.with_borrow_mut(Vec::pop).unwrap_or_default();
            buffer.clear();
            buffer.try_reserve_exact(len).ok()?;
            Some(buffer)
        };
        for _ in 0..count {
            pairs.push((one(b_len)?, one(a_len)?));
        }
        Some(Buffers(pairs))
    }

    /// The buffers lent to the stripes (they come back through [`Buffers::give_back`]).
    fn pairs(&mut self) -> impl Iterator<Item = (&mut Vec<f32>, &mut Vec<f32>)> {
        self.0.iter_mut().map(|(b_block, a_panel)| (b_block, a_panel))
    }

    fn give_back(self) {
        SPARE.with_borrow_mut(|spare| {
            spare.extend(self.0.into_iter().flat_map(|(b_block, a_panel)| [b_block, a_panel]));
        });
    }
}

/// One thread's share: every row of `c`, the columns `col0 .. col0 + rows[_].len()`.
struct Stripe<'a, 'r> {
    a: &'a [f32],
    b: &'a [f32],
    m: usize,
    k: usize,
    n: usize,
    col0: usize,
    rows: &'r mut [&'a mut [f32]],
    b_block: &'r mut Vec<f32>,
    a_panel: &'r mut Vec<f32>,
}

impl pulp::WithSimd for Stripe<'_, '_> {
    type Output = ();

    // Inlined into pulp's `vectorize`, which is compiled with the token's target features: the
    // kernel below must be inlined into it as well, or it would be built without them.
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Stripe { a, b, m, k, n, col0, rows, b_block, a_panel } = self;
        let nr = 2 * lanes::<S>();
        let width = rows.first().map_or(0, |row| row.len());
        for jc in (0..width).step_by(NC_PANELS * nr) {
            let nc = (NC_PANELS * nr).min(width - jc);
            let panels = nc.div_ceil(nr);
            for pc in (0..k).step_by(KC) {
                let kc = KC.min(k - pc);
                // The block of `b`: per panel, per row `p`, `NR` values (zero past the stripe).
                // Whole panels are copied as two vectors: a `memcpy` call per 128 bytes cost
                // more than the copy.
                if b_block.len() < panels * kc * nr {
                    b_block.resize(panels * kc * nr, 0.0);
                }
                let (block_steps, _) = S::as_mut_simd_f32s(b_block);
                let (block_steps, _) = block_steps.as_chunks_mut::<2>();
                for panel in 0..panels {
                    let j0 = col0 + jc + panel * nr;
                    let w = nr.min(col0 + width - j0);
                    let dst = &mut block_steps[panel * kc..(panel + 1) * kc];
                    for (p, dst) in (pc..pc + kc).zip(dst) {
                        let src = &b[p * n + j0..p * n + j0 + w];
                        if w == nr {
                            let (src, _) = S::as_simd_f32s(src);
                            dst.copy_from_slice(&src[..2]);
                        } else {
                            let mut spill = [0.0f32; MAX_NR];
                            spill[..w].copy_from_slice(src);
                            let (spill, _) = S::as_simd_f32s(&spill[..nr]);
                            dst.copy_from_slice(&spill[..2]);
                        }
                    }
                }
                let (b_vectors, _) = S::as_simd_f32s(b_block);
                let (b_steps, _) = b_vectors.as_chunks::<2>();
                if a_panel.len() < KC * MR {
                    a_panel.resize(KC * MR, 0.0);
                }
                for r0 in (0..m).step_by(MR) {
                    // The micro-panel of `a`: per column `p`, the `MR` rows' values (zero past
                    // row `m`), packed here, where it stays in L1 for the panels below.
                    let live = MR.min(m - r0);
                    let (a_steps, _) = a_panel[..kc * MR].as_chunks_mut::<MR>();
                    for i in 0..live {
                        let row = &a[(r0 + i) * k + pc..(r0 + i) * k + pc + kc];
                        for (step, &x) in a_steps.iter_mut().zip(row) {
                            step[i] = x;
                        }
                    }
                    if live < MR {
                        a_steps.iter_mut().for_each(|step| step[live..].fill(0.0));
                    }
                    let (a_steps, _) = a_panel[..kc * MR].as_chunks::<MR>();
                    let tile_rows = &mut rows[r0..(r0 + MR).min(m)];
                    for panel in 0..panels {
                        let tile = tile(simd, a_steps, &b_steps[panel * kc..(panel + 1) * kc]);
                        let lc = jc + panel * nr;
                        store(simd, &tile, tile_rows, lc, nr.min(width - lc), pc == 0);
                    }
                }
            }
        }
    }
}

/// The register tile: `Σ_p a[i][p] · b[p][0..NR]` for the panel's `MR` rows.
#[inline(always)]
fn tile<S: Simd>(simd: S, a: &[[f32; MR]], b: &[[S::f32s; 2]]) -> [[S::f32s; 2]; MR] {
    let mut acc = [[simd.splat_f32s(0.0); 2]; MR];
    for (a_p, b_p) in a.iter().zip(b) {
        for (acc_row, &x) in acc.iter_mut().zip(a_p) {
            let x = simd.splat_f32s(x);
            acc_row[0] = simd.mul_add_e_f32s(x, b_p[0], acc_row[0]);
            acc_row[1] = simd.mul_add_e_f32s(x, b_p[1], acc_row[1]);
        }
    }
    acc
}

/// Writes (`first`) or adds the tile's first `w` columns to `rows[_][lc..lc + w]`.
#[inline(always)]
fn store<S: Simd>(
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
    //! The kernel against the textbook loop (`dot::naive_matmul`) on shapes that cross every
    //! block edge: rows past a multiple of `MR`, columns past a multiple of `NR` and of a packed
    //! block, depth past `KC`, empty dimensions, and NaN/infinity. Small integer inputs make
    //! every sum exact in f32, so the two must agree exactly whatever the summation order.

    use super::super::dot::{gemm_f32 as dispatched, naive_matmul};
    use super::*;

    const SHAPES: [(usize, usize, usize); 14] = [
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
        (40, 40, 600),
    ];

    /// Integers in -3..=3 from a fixed xorshift sequence.
    fn small_integers(len: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state % 7) as f32 - 3.0
            })
            .collect()
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
                gemm_with(pulp::Scalar, a, b, c, (m, k, n), threads)
            });
            let wide = pulp::Scalar512b;
            check("scalar512b", |a, b, c, m, k, n| gemm_with(wide, a, b, c, (m, k, n), threads));
        }
    }

    #[test]
    fn avx512_matches_the_naive_loop_on_odd_shapes() {
        if !available() {
            println!("no AVX-512 on this CPU: the kernel is checked through Scalar512b only");
            return;
        }
        for threads in [1, 2, 3] {
            check("avx512", |a, b, c, m, k, n| gemm_f32(a, b, c, (m, k, n), threads));
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
        assert!(gemm_with(pulp::Scalar512b, &a, &b, &mut got, (m, k, n), 2));
        assert!(same(&got), "scalar512b: {got:?}\nnaive: {expected:?}");
        let mut got = vec![0.0; m * n];
        dispatched(&a, &b, &mut got, m, k, n);
        assert!(same(&got), "dispatched: {got:?}\nnaive: {expected:?}");
    }

    #[test]
    fn fractional_inputs_stay_within_rounding_of_the_naive_loop() {
        let (m, k, n) = (64, 576, 100);
        let a: Vec<f32> = small_integers(m * k, 8).iter().map(|x| x * 0.37 + 0.011).collect();
        let b: Vec<f32> = small_integers(k * n, 9).iter().map(|x| x * 1.3 - 0.29).collect();
        let mut expected = vec![0.0; m * n];
        naive_matmul(&a, &b, &mut expected, m, k, n);
        let mut got = vec![0.0; m * n];
        dispatched(&a, &b, &mut got, m, k, n);
        for i in 0..m {
            for j in 0..n {
                // Both sums are within k·ε·Σ|a·b| of the exact one.
                let magnitude: f32 = (0..k).map(|p| (a[i * k + p] * b[p * n + j]).abs()).sum();
                let bound = 2.0 * k as f32 * f32::EPSILON * magnitude;
                let (g, e) = (got[i * n + j], expected[i * n + j]);
                assert!((g - e).abs() <= bound, "[{i}][{j}]: {g} against {e} (bound {bound})");
            }
        }
    }

    #[test]
    fn mismatched_lengths_are_declined_without_touching_c() {
        let mut c = vec![7.0; 4];
        assert!(!gemm_with(pulp::Scalar, &[1.0; 3], &[1.0; 4], &mut c, (2, 2, 2), 1));
        assert_eq!(c, [7.0; 4]);
    }
}

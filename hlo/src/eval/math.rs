//! Vectorisable f32 math: exp, expm1, log, tanh, logistic, erf, sin, cos, and the narrow-float
//! conversions the fused loops use, written as branch-free scalar functions that LLVM vectorises
//! in a loop.
//!
//! Design choices:
//! - Each function is plain Rust without libm's transcendentals and without data-dependent branches
//!   (special cases are selects), so a loop over a slice vectorises. The slice loops over them
//!   (`elementwise::unary_slice` and its siblings, and [`trig_slice`] here) run inside
//!   `pulp::Arch::dispatch`, which compiles them with the CPU's best instruction set (AVX2+FMA
//!   on x86-64-v3, AVX-512 on v4); the same code is the scalar fallback.
//! - Polynomials and the argument reduction are written with `f32::mul_add`. In the dispatched
//!   loops each is one fused multiply-add instruction (AVX2+FMA and AVX-512 both have it), where
//!   a multiply and an add were two instructions and two roundings: exp over 512 Ki elements on
//!   one core went from 240 to 160 µs and the transformer's GELU from 850 to 700 µs. Compiled
//!   without the instruction (the scalar interpreter's per-element calls on a baseline build),
//!   `mul_add` is libm's correctly rounded `fmaf`: slower, but the same bits, so a fused loop
//!   and the unfused instruction still agree exactly.
//! - Accuracy targets XLA on CPU, which uses its own polynomial approximations. tanh and exp
//!   (and so logistic, `1 / (1 + e^-x)`) are XLA's own forms, so they give XLA's bits (committed
//!   XLA sweeps check every one, for normal results: XLA flushes subnormals, we keep them); the
//!   others stay within 2 ulps of the correctly rounded value (checked against f64 libm over
//!   dense sweeps in the tests below), with Taylor series (expm1, the atanh form of log) and
//!   Cody–Waite argument reduction by ln 2 split in two; they give XLA's bits for 61–97 % of
//!   inputs.
//! - Rounding uses the magic-number trick (`x + 1.5·2^23 − 1.5·2^23` rounds to nearest even),
//!   which needs no SSE4.1 `round` instruction (exp floors instead, as XLA's does), and the
//!   rounded integer is read from the sum's bits: `as i32` on a float saturates, which the
//!   compiler does lane by lane.
//! - sin and cos reduce by k·π/2 in f64 (exact far below an f32 ulp up to |x| = 2^17) and stay
//!   within 1 ulp; beyond 2^17, and for infinities and NaN, a second pass over the slice takes
//!   libm's value, so the first pass has no branch.

const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split: the high part has 9 significant bits, so `n · LN2_HI` is exact for |n| < 2^14.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
const ROUND_MAGIC: f32 = 12_582_912.0;

/// 2^k as an f32, for -126 <= k <= 127 (any other `k` gives some float: callers pass such a `k`
/// only beside a NaN, which the product keeps).
#[inline(always)]
fn pow2i(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// `n` of `t = n + ROUND_MAGIC` (an integer of magnitude below 2^22, which `t` holds exactly in
/// its low mantissa bits) as an i32, by integer arithmetic on `t`'s bits. `n as i32` would be a
/// saturating conversion, which the compiler turns into a compare and a scalar move per lane
/// (it was most of `tanh`'s time in a vectorised loop); for a NaN `t` this gives some integer.
#[inline(always)]
fn magic_int(t: f32) -> i32 {
    (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32)
}

/// The polynomial of XLA's exp for `(e^r − 1 − r) / r²` on |r| <= ln2/2, highest power first.
#[allow(clippy::excessive_precision)]
const EXP_POLYNOMIAL: [f32; 6] = [
    1.987_569_150_0e-4,
    1.398_199_950_7e-3,
    8.333_451_907_3e-3,
    4.166_579_589_4e-2,
    1.666_666_545_9e-1,
    5.000_000_120_1e-1,
];

/// e^x as XLA on CPU computes it (with fused multiply-adds): `n = ⌊x·log2 e + ½⌋`, the reduced
/// argument `r = x − n·ln 2` with ln 2 split in two, `e^r = 1 + r + r²·P(r)`, scaled by 2^n.
/// It gives XLA's bits wherever the result is a normal float (our earlier Taylor form agreed on
/// 96 % of inputs); a subnormal result is kept where XLA flushes it to zero. Within 1 ulp up to
/// 88.38 (a few ulps from there to 88.72, where it overflows to +inf, as XLA's does);
/// underflows through the subnormals to 0.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // The clamp (and the cap below) keeps n within [-151, 127]; NaN passes through it.
    let x = x.clamp(-104.0, 89.0);
    // XLA keeps n at most 127 (2^n an f32): from 88.38 on, r grows past ln2/2 and the result
    // drifts a few ulps from e^x until it overflows at 88.72, as XLA's does.
    let n = x.mul_add(LOG2_E, 0.5).floor().min(127.0);
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, x));
    let p = EXP_POLYNOMIAL[1..].iter().fold(EXP_POLYNOMIAL[0], |p, &c| p.mul_add(r, c));
    let p = p.mul_add(r * r, r) + 1.0;
    // n is an integer of magnitude below 2^22: adding the magic number is exact.
    let k = magic_int(n + ROUND_MAGIC);
    // 2^n in two normal factors, so subnormal results round once, at the last multiply.
    let k1 = k / 2;
    let k2 = k - k1;
    p * pow2i(k1) * pow2i(k2)
}

/// The natural logarithm, within 2 ulps: -inf at ±0, NaN below 0, +inf at +inf.
#[inline(always)]
pub(crate) fn ln(x: f32) -> f32 {
    // Subnormals are scaled into the normal range first.
    let subnormal = x < f32::MIN_POSITIVE;
    let xs = if subnormal { x * 8_388_608.0 } else { x };
    let adjust = if subnormal { 23 } else { 0 };
    // x = m · 2^e with m in [√½, √2): shift the exponent boundary to √½'s bits.
    let bits = xs.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let e = ((bits >> 23) as i32) - 127 - adjust;
    let m = f32::from_bits((bits & 0x007f_ffff) + 0x3f35_04f3);
    let f = m - 1.0;
    // log(1 + f) = 2·atanh(s), s = f / (2 + f), |s| <= 0.172; written as
    // f - (f²/2 - s·(f²/2 + R)) with R = 2(s²/3 + s⁴/5 + s⁶/7 + s⁸/9), which keeps the leading
    // term exact.
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * (2.0 / 3.0 + z * (2.0 / 5.0 + z * (2.0 / 7.0 + z * (2.0 / 9.0))));
    let half_f2 = 0.5 * f * f;
    let ef = e as f32;
    let value = ef * LN2_HI + ((f - (half_f2 - s * (half_f2 + r))) + ef * LN2_LO);
    let value = if x == f32::INFINITY { x } else { value };
    let value = if x == 0.0 { f32::NEG_INFINITY } else { value };
    if x < 0.0 || x.is_nan() { f32::NAN } else { value }
}

/// e^x − 1, within 2 ulps: exact near 0 (no cancellation), −1 below −17.4, +inf above 88.72.
#[inline(always)]
pub(crate) fn expm1(x: f32) -> f32 {
    // x = n·ln2 + r with |r| <= ln2/2, as in `exp`; the clamp keeps n within [-44, 129].
    let xc = x.clamp(-30.0, 89.0);
    let t = xc.mul_add(LOG2_E, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, xc));
    // e^r − 1 for |r| <= ln2/2: Taylor to degree 9 (the remainder is below 0.1 ulp).
    let mut q = 1.0 / 362_880.0f32;
    for c in
        [1.0 / 40_320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0]
    {
        q = q.mul_add(r, c);
    }
    let p = r * q;
    // e^x − 1 = 2^n·(p + 1) − 1. Below n = 0 as 2^n·p + (2^n − 1), both terms exact; above as
    // (p + (1 − 2^−n))·2^n, with 2^n in two factors so n = 128 does not overflow early (2^−n
    // is below the rounding of 1 beyond n = 25, so it is capped at 2^−64).
    let k = magic_int(t);
    let below = p * pow2i(k.min(0)) + (pow2i(k.min(0)) - 1.0);
    let k1 = k.max(1) / 2;
    let k2 = k.max(1) - k1;
    let above = (p + (1.0 - pow2i(-k.clamp(1, 64)))) * pow2i(k1) * pow2i(k2);
    let value = if k > 0 { above } else { below };
    // n = 0 keeps p itself, which is exact for tiny x; ±0 and NaN pass through.
    let value = if k == 0 { p } else { value };
    if x.is_nan() || x == 0.0 { x } else { value }
}

/// erf(x)/x − 1 in powers of x², from the Taylor series erf x = 2/√π Σ (−1)^n x^(2n+1)/(n!(2n+1))
/// (the 1 taken out so that the leading term, x, is added exactly).
const ERF_SERIES: [f32; 13] = {
    let mut c = [0.0f32; 13];
    let mut n = 0;
    let mut factorial = 1.0f64;
    while n < 13 {
        if n > 0 {
            factorial *= n as f64;
        }
        let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
        c[n] = (sign * std::f64::consts::FRAC_2_SQRT_PI / (factorial * (2 * n + 1) as f64)) as f32;
        n += 1;
    }
    c[0] = (std::f64::consts::FRAC_2_SQRT_PI - 1.0) as f32;
    c
};

/// e^(x²)·erfc(x) on [1, 4] as a polynomial in u = (x − 2.5)/1.5: a least-squares fit on
/// Chebyshev nodes (degree 12; its error is far below an f32 ulp).
const ERFCX_FIT: [f32; 13] = [
    2.108_063_7e-1,
    -1.115_210_06e-1,
    5.611_047e-2,
    -2.700_572_5e-2,
    1.248_970_35e-2,
    -5.567_332_7e-3,
    2.401_701_6e-3,
    -1.017_117_8e-3,
    4.145_081e-4,
    -1.439_486e-4,
    5.494_725e-5,
    -3.692_872_3e-5,
    1.381_908_9e-5,
];

/// The error function, within 2 ulps: the series below |x| = 1, `1 − e^(−x²)·erfcx(x)` up to
/// 4, ±1 beyond (where erf rounds to 1).
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let a = x.abs();
    let z = a * a;
    let mut q = ERF_SERIES[12];
    for &c in ERF_SERIES[..12].iter().rev() {
        q = q.mul_add(z, c);
    }
    let small = a + a * q;
    let u = (a.min(4.0) - 2.5) * (1.0 / 1.5);
    let mut p = ERFCX_FIT[12];
    for &c in ERFCX_FIT[..12].iter().rev() {
        p = p.mul_add(u, c);
    }
    let tail = 1.0 - exp(-z) * p;
    let value = if a < 1.0 {
        small
    } else if a < 4.0 {
        tail
    } else {
        1.0
    };
    if x.is_nan() { x } else { value.copysign(x) }
}

/// The odd numerator of XLA's rational tanh, highest power first: `x · N(x²)`. The constants
/// are written as XLA writes them (more digits than an f32 holds; they round to the same f32s).
#[allow(clippy::excessive_precision)]
const TANH_NUMERATOR: [f32; 7] = [
    -2.760_768_477_423_55e-16,
    2.000_187_904_824_77e-13,
    -8.604_671_522_137_35e-11,
    5.122_297_090_371_14e-8,
    1.485_722_357_179_79e-5,
    6.372_619_288_754_36e-4,
    4.893_524_558_917_86e-3,
];
/// Its even denominator `D(x²)`, highest power first.
#[allow(clippy::excessive_precision)]
const TANH_DENOMINATOR: [f32; 4] = [
    1.198_258_394_667_02e-6,
    1.185_347_056_866_54e-4,
    2.268_434_632_439e-3,
    4.893_525_185_543_85e-3,
];
/// Where the rational form reaches ±1 exactly (with fused multiply-adds); inputs beyond are
/// clamped to it.
#[allow(clippy::excessive_precision)]
const TANH_CLAMP: f32 = 7.998_811_721_801_757_81;
/// Below this magnitude tanh x is x.
const TANH_LINEAR: f32 = 0.0004;

/// tanh x as XLA on CPU computes it, bit for bit (on CPUs with fused multiply-add, which XLA
/// uses when the CPU has it: all of x86-64-v3 and later): x itself below |x| = 0.0004, else the
/// 13/6-degree rational function `x · N(x²) / D(x²)` of the clamped input, each polynomial by
/// Horner's rule in fused multiply-adds. Within 4.4 ulps of the exact value (2 ulps from it was
/// our own series-and-exp form, which matched XLA's bits for 44 % of inputs and cost a division
/// and an exp). NaN stays NaN, ±inf gives ±1.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    // `clamp` keeps a NaN (`max`/`min` would replace it).
    let clamped = x.clamp(-TANH_CLAMP, TANH_CLAMP);
    let z = clamped * clamped;
    let horner = |coefficients: &[f32]| {
        coefficients[1..].iter().fold(coefficients[0], |p, &c| z.mul_add(p, c))
    };
    let value = clamped * horner(&TANH_NUMERATOR) / horner(&TANH_DENOMINATOR);
    if x.abs() < TANH_LINEAR { x } else { value }
}

/// The largest |x| [`sin_reduced`] and [`cos_reduced`] take: 2^17, so that the quadrant count
/// `k` stays below 2^17 and `k · PIO2_HI` (33 significant bits) is exact in f64.
const TRIG_LIMIT: f32 = 131_072.0;
/// π/2 in two parts: the first 33 bits, and the rest (the fdlibm split).
const PIO2_HI: f64 = 1.570_796_326_734_125_6;
const PIO2_LO: f64 = 6.077_100_506_506_192e-11;
/// 1.5 · 2^52: added to an f64 of magnitude below 2^51, it rounds it to an integer held in
/// the low mantissa bits.
const ROUND_MAGIC_F64: f64 = 6_755_399_441_055_744.0;

/// sin x and cos x for |x| <= [`TRIG_LIMIT`] (any other x gives some value: [`sin`] and [`cos`]
/// take those to libm), within 1 ulp: x − k·π/2 in f64, where it is exact to far below an f32
/// ulp, then the Taylor series of sin and cos to degrees 11 and 12 on |r| <= π/4 (remainders
/// below 2^-36), each selected and signed by the quadrant `k + shift` (0 for sin, 1 for cos), and
/// rounded to f32 once. Written without branches or float-to-int conversions, so that a loop of
/// it vectorises.
#[inline(always)]
fn trig_reduced(x: f32, shift: u64) -> f32 {
    let xd = f64::from(x);
    let t = xd * std::f64::consts::FRAC_2_PI + ROUND_MAGIC_F64;
    let k = t - ROUND_MAGIC_F64;
    let quadrant = (t.to_bits().wrapping_add(shift)) & 3;
    let r = (xd - k * PIO2_HI) - k * PIO2_LO;
    let z = r * r;
    let sin_r = r + r
        * z
        * (-1.0 / 6.0
            + z * (1.0 / 120.0
                + z * (-1.0 / 5040.0 + z * (1.0 / 362_880.0 + z * (-1.0 / 39_916_800.0)))));
    let cos_r = 1.0
        + z * (-0.5
            + z * (1.0 / 24.0
                + z * (-1.0 / 720.0
                    + z * (1.0 / 40_320.0
                        + z * (-1.0 / 3_628_800.0 + z * (1.0 / 479_001_600.0))))));
    let value = if quadrant & 1 == 0 { sin_r } else { cos_r };
    let value = if quadrant & 2 == 0 { value } else { -value };
    value as f32
}

/// [`trig_reduced`] for sin, and ±0 for ±0 (the series would add +0 to -0).
#[inline(always)]
pub(crate) fn sin_reduced(x: f32) -> f32 {
    let value = trig_reduced(x, 0);
    if x == 0.0 { x } else { value }
}

/// [`trig_reduced`] for cos.
#[inline(always)]
pub(crate) fn cos_reduced(x: f32) -> f32 {
    trig_reduced(x, 1)
}

/// sin x within 1 ulp: [`sin_reduced`] up to 2^17, libm beyond (and for infinities and NaN).
#[inline(always)]
pub(crate) fn sin(x: f32) -> f32 {
    if x.abs() <= TRIG_LIMIT { sin_reduced(x) } else { x.sin() }
}

/// cos x within 1 ulp: [`cos_reduced`] up to 2^17, libm beyond (and for infinities and NaN).
#[inline(always)]
pub(crate) fn cos(x: f32) -> f32 {
    if x.abs() <= TRIG_LIMIT { cos_reduced(x) } else { x.cos() }
}

/// [`sin`] or [`cos`] (by `reduced`, `libm`) of a slice, in two passes so that the first
/// vectorises: the reduced form for every element, then libm for the few beyond its range; each
/// result rounded to bf16 afterwards when `BF16`.
#[inline(always)]
pub(crate) fn trig_slice<const BF16: bool>(
    x: &[f32],
    out: &mut [f32],
    reduced: fn(f32) -> f32,
    libm: fn(f32) -> f32,
) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = reduced(v);
    }
    // One unordered compare (true for NaN too): written as `v.is_nan() || v.abs() > LIMIT`, or
    // with `|`, the loop ran a third slower (small_while 30 → 40 µs).
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    for (o, &v) in out.iter_mut().zip(x) {
        if !(v.abs() <= TRIG_LIMIT) {
            *o = libm(v);
        }
    }
    if BF16 {
        out.iter_mut().for_each(|v| *v = bf16_rounded(*v));
    }
}

/// 1 / (1 + e^-x), as XLA expands `logistic`.
#[inline(always)]
pub(crate) fn logistic(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

// ---------------------------------------------------------------------------------------------
// Narrow-float conversions.

/// Decodes IEEE binary16 bits exactly (NaN payloads kept).
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let magnitude = h & 0x7fff;
    // The bits shifted into f32 place read as the value · 2^-112 (subnormals too): scale back.
    let finite = f32::from_bits(magnitude << 13) * f32::from_bits(0x7780_0000);
    let special = f32::from_bits(0x7f80_0000 | ((magnitude & 0x3ff) << 13));
    let value = if magnitude >= 0x7c00 { special } else { finite };
    f32::from_bits(value.to_bits() | sign)
}

/// Rounds to binary16, nearest even; NaN becomes the quiet NaN with its sign (as
/// `SmallFloat::encode` does).
#[inline(always)]
pub(crate) fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = (bits >> 16) & 0x8000;
    let a = bits & 0x7fff_ffff;
    // Normal results: rebias the exponent and round the 13 dropped bits to nearest even.
    let odd = (a >> 13) & 1;
    let normal = (a.wrapping_sub(0x3800_0000).wrapping_add(0x0fff + odd)) >> 13;
    // Subnormal results: adding 0.5 puts the f16 subnormal unit (2^-24) at the last place.
    let sub = (f32::from_bits(a) + 0.5).to_bits().wrapping_sub(0x3f00_0000);
    let value = if a < 0x3880_0000 { sub } else { normal };
    // 65520 and above round to infinity.
    let value = if a >= 0x477f_f000 { 0x7c00 } else { value };
    let value = if a > 0x7f80_0000 { 0x7e00 } else { value };
    (value | sign) as u16
}

/// Like [`f32_to_f16`], but a NaN keeps its payload (quieted): for values copied, not computed.
#[inline(always)]
pub(crate) fn f32_to_f16_keeping_nan(x: f32) -> u16 {
    let bits = x.to_bits();
    let payload = ((bits >> 16) & 0x8000) | 0x7e00 | ((bits >> 13) & 0x3ff);
    if x.is_nan() { payload as u16 } else { f32_to_f16(x) }
}

/// Rounds to bfloat16, nearest even; NaN becomes the quiet NaN with its sign.
#[inline(always)]
pub(crate) fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16;
    let nan = ((bits >> 16) & 0x8000) | 0x7fc0;
    (if x.is_nan() { nan } else { rounded }) as u16
}

/// Appends `f32_to_bf16` of each of `x` to `out`, compiled for the CPU's instruction set.
pub(crate) fn extend_bf16(x: &[f32], out: &mut Vec<u16>, arch: pulp::Arch) {
    arch.dispatch(|| out.extend(x.iter().map(|&v| f32_to_bf16(v))));
}

/// Like [`f32_to_bf16`], but a NaN keeps its payload (quieted).
#[inline(always)]
pub(crate) fn f32_to_bf16_keeping_nan(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() { ((bits >> 16) | 0x40) as u16 } else { f32_to_bf16(x) }
}

/// `v` rounded to bf16, kept in f32.
#[inline(always)]
pub(crate) fn bf16_rounded(v: f32) -> f32 {
    f32::from_bits(u32::from(f32_to_bf16(v)) << 16)
}

#[cfg(test)]
mod tests {
    use super::super::elementwise::unary_slice;
    use super::super::scalar::Unary;
    use super::*;
    use crate::dtype::SmallFloat;

    /// The distance in representable f32 values between `got` and the f64 `want` rounded.
    fn ulps(got: f32, want: f64) -> u64 {
        let want = want as f32;
        if got.is_nan() && want.is_nan() {
            return 0;
        }
        if got == want {
            return 0;
        }
        let key = |v: f32| {
            let b = v.to_bits() as i32;
            i64::from(if b < 0 { i32::MIN - b } else { b })
        };
        (key(got) - key(want)).unsigned_abs()
    }

    /// Every `step`-th f32 bit pattern, both signs, plus the given edge values.
    fn sweep(step: u32, edges: &[f32]) -> Vec<f32> {
        let mut values: Vec<f32> = (0..0x7f80_0000u32)
            .step_by(step as usize)
            .flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)])
            .collect();
        values.extend_from_slice(edges);
        values
    }

    const EDGES: [f32; 12] = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        1.0e-45,
        f32::MAX,
        -f32::MAX,
        1.0,
        -1.0,
        0.5,
    ];

    fn check(name: &str, f: fn(f32) -> f32, reference: fn(f64) -> f64, max_ulps: u64) {
        let mut worst = (0u64, 0f32);
        for x in sweep(997, &EDGES) {
            let want = reference(f64::from(x));
            let got = f(x);
            let d = ulps(got, want);
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(
            worst.0 <= max_ulps,
            "{name}({:e}) = {:e}, libm says {:e}: {} ulps",
            worst.1,
            f(worst.1),
            reference(f64::from(worst.1)),
            worst.0
        );
    }

    /// `f` of each case's argument has the case's bits (both given as f32 bits).
    fn assert_bits(name: &str, f: fn(f32) -> f32, cases: &[(u32, u32)]) {
        for &(x, expected) in cases {
            let x = f32::from_bits(x);
            assert_eq!(f(x).to_bits(), expected, "{name}({x:e})");
        }
    }

    #[test]
    fn sin_and_cos_are_within_one_ulp_and_the_vector_loop_gives_the_same_bits() {
        check("sin", sin, f64::sin, 1);
        check("cos", cos, f64::cos, 1);
        // Around the reduced range's edge, at multiples of π/2 and at large arguments.
        use std::f32::consts::{FRAC_PI_2, PI};
        let near: Vec<f32> = [TRIG_LIMIT, FRAC_PI_2, PI, 3.0 * FRAC_PI_2, 102_943.71, 1e5]
            .iter()
            .flat_map(|&c: &f32| {
                (-3..=3).map(move |d| f32::from_bits((c.to_bits() as i32 + d) as u32))
            })
            .chain([TRIG_LIMIT * 1.5, 1e30, -7.0e4])
            .collect();
        for &x in &near {
            assert!(ulps(sin(x), f64::from(x).sin()) <= 1, "sin({x:e})");
            assert!(ulps(cos(x), f64::from(x).cos()) <= 1, "cos({x:e})");
        }
        assert_eq!(sin(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(sin(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(cos(0.0), 1.0);
        assert!(sin(f32::INFINITY).is_nan() && cos(f32::NEG_INFINITY).is_nan());
        assert!(sin(f32::NAN).is_nan() && cos(f32::NAN).is_nan());
        let xs: Vec<f32> = sweep(4093, &EDGES).into_iter().chain(near).collect();
        for (op, scalar) in [(Unary::Sin, sin as fn(f32) -> f32), (Unary::Cos, cos)] {
            assert_loop_is_scalar(op, scalar, &xs);
        }
    }

    /// [`unary_slice`] of `op` over `xs` gives `scalar`'s bits for every value (any NaN for a
    /// NaN).
    fn assert_loop_is_scalar(op: Unary, scalar: fn(f32) -> f32, xs: &[f32]) {
        let mut out = vec![0.0; xs.len()];
        unary_slice(op, xs, &mut out, false, super::super::simd::arch());
        for (&x, &got) in xs.iter().zip(&out) {
            let want = scalar(x);
            assert!(
                got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                "{op:?}({x:e}): loop {got:e}, scalar {want:e}"
            );
        }
    }

    #[test]
    fn the_vectorised_bf16_rounding_is_the_encoders_bit_for_bit() {
        // Ties, carries into the exponent, overflow to infinity, NaNs with payloads (made
        // canonical, as the encoder does) and subnormals.
        let mut xs = sweep(4111, &EDGES);
        xs.extend([f32::from_bits(0x3f80_8000), f32::from_bits(0x3f81_8000)]);
        xs.extend([f32::from_bits(0x7f7f_ffff), f32::from_bits(0x7fa0_0001)]);
        xs.extend([f32::from_bits(0xffc1_2345), f32::from_bits(0x0000_8001)]);
        let mut got = Vec::new();
        extend_bf16(&xs, &mut got, super::super::simd::arch());
        assert_eq!(got.len(), xs.len());
        for (&x, &bits) in xs.iter().zip(&got) {
            let want = SmallFloat::Bf16.encode_f32(x) as u16;
            assert_eq!(bits, want, "{x:e} ({:#010x})", x.to_bits());
        }
    }

    #[test]
    fn the_vectorised_loop_and_the_scalar_call_give_the_same_bits() {
        // The loop is compiled with the CPU's FMA instruction for `mul_add`; this baseline
        // build's scalar call goes to libm's `fmaf`. Both round once, so every value must
        // match: it is what keeps a fused group, the unfused instruction and the scalar
        // interpreter on the same bits.
        let xs = sweep(4099, &EDGES);
        type Scalar = fn(f32) -> f32;
        let cases: [(Unary, Scalar); 6] = [
            (Unary::Exp, exp),
            (Unary::Expm1, expm1),
            (Unary::Tanh, tanh),
            (Unary::Erf, erf),
            (Unary::Logistic, logistic),
            (Unary::Log, ln),
        ];
        for (op, scalar) in cases {
            assert_loop_is_scalar(op, scalar, &xs);
        }
    }

    #[test]
    fn exp_gives_xlas_bits_and_is_within_one_ulp_of_libm() {
        // XLA's own outputs (jaxlib 0.10 on CPU, `jnp.exp` of f32); our earlier Taylor form gave
        // other bits for 1.0, 0.5, 10 and 88.5.
        let cases: [(u32, u32); 15] = [
            (0x3f80_0000, 0x402d_f854),
            (0xbf80_0000, 0x3ebc_5ab2),
            (0x3f00_0000, 0x3fd3_094c),
            (0x4120_0000, 0x46ac_14ee),
            (0xc120_0000, 0x383e_6bce),
            (0x42b1_0000, 0x7f4c_dcc4),
            (0x42b1_70a4, 0x7f7f_4643),
            (0x42b1_75c3, 0x7f80_0000),
            (0xc2ae_0000, 0x00b3_3687),
            (0x3eb1_7218, 0x3fb5_04f3),
            (0xbeb1_7218, 0x3f35_04f3),
            (0x33d6_bf95, 0x3f80_0001),
            (0x41a0_0000, 0x4de7_5844),
            (0xc1a0_0000, 0x310d_a433),
            (0x4005_1592, 0x4100_0000),
        ];
        assert_bits("exp", exp, &cases);
        let below_the_cap = |x: f32| exp(x.min(88.3));
        check("exp", below_the_cap, |x| x.min(f64::from(88.3f32)).exp(), 1);
        assert_eq!(exp(89.0), f32::INFINITY);
        assert_eq!(exp(-104.0), 0.0);
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn expm1_is_within_two_ulps_of_libm() {
        check("expm1", expm1, f64::exp_m1, 2);
        assert_eq!(expm1(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(expm1(1.0e-45), 1.0e-45);
        assert_eq!(expm1(88.8), f32::INFINITY);
        assert_eq!(expm1(f32::INFINITY), f32::INFINITY);
        assert_eq!(expm1(-20.0), -1.0);
        assert_eq!(expm1(f32::NEG_INFINITY), -1.0);
        assert!(expm1(f32::NAN).is_nan());
        // Dense around the branch points (n = 0 ↔ ±1 at ±ln2/2) and the top of the range.
        for (from, to) in [(0.3f32, 0.4f32), (-0.4, -0.3), (88.0, 88.8), (-17.5, -16.5)] {
            let mut x = from;
            while x < to {
                assert!(ulps(expm1(x), f64::from(x).exp_m1()) <= 2, "expm1({x:e})");
                x = f32::from_bits(x.to_bits().wrapping_add(if x > 0.0 {
                    97
                } else {
                    u32::MAX - 96
                }));
            }
        }
    }

    #[test]
    fn erf_is_within_two_ulps_of_the_exact_value() {
        // The reference is the f64 implementation (accurate to about 1e-15), itself checked
        // against published values in `elementwise`.
        check("erf", erf, super::super::scalar::erf, 2);
        assert_eq!(erf(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(erf(1.0e-45), 1.0e-45);
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(-5.0), -1.0);
        assert!(erf(f32::NAN).is_nan());
        // erf(0.5) = 0.520499877813…, erf(1) = 0.842700792949…, erf(2) = 0.995322265018…
        assert_eq!(erf(0.5), 0.520_499_9);
        assert_eq!(erf(1.0), 0.842_700_8);
        assert_eq!(erf(2.0), 0.995_322_3);
    }

    #[test]
    fn log_is_within_two_ulps_of_libm() {
        check("ln", ln, f64::ln, 2);
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert_eq!(ln(-0.0), f32::NEG_INFINITY);
        assert!(ln(-1.0).is_nan());
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
    }

    #[test]
    fn tanh_gives_xlas_bits() {
        // XLA's own outputs (jaxlib 0.10 on CPU, `jnp.tanh` of f32): its worst points against
        // the exact value (4.3 ulps), the ends of the linear and clamped ranges, and common
        // values; our earlier form gave other bits for 0.5, 2.0, 0.0005 and 7.9.
        let cases: [(u32, u32); 13] = [
            (0x3c7b_e6a8, 0x3c7b_e18f),
            (0xbc7b_e6a8, 0xbc7b_e18f),
            (0xc0de_ab85, 0xbf7f_ffe6),
            (0x3f00_0000, 0x3eec_9a9f),
            (0x3f80_0000, 0x3f42_f7d6),
            (0x4000_0000, 0x3f76_ca83),
            (0x399d_4952, 0x399d_4952),
            (0x3a03_126f, 0x3a03_126d),
            (0x4040_0000, 0x3f7e_bbe8),
            (0x40fc_cccd, 0x3f7f_fffc),
            (0x40ff_f644, 0x3f80_0000),
            (0xbfc0_0000, 0xbf67_b7cb),
            (0x8da2_4260, 0x8da2_4260),
        ];
        assert_bits("tanh", tanh, &cases);
        check("tanh", tanh, f64::tanh, 5);
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(-20.0), -1.0);
        assert!(tanh(f32::NAN).is_nan());
    }

    #[test]
    fn logistic_is_within_three_ulps_of_the_exact_value() {
        // XLA's expansion: e^-x overflows f32 below x = -88.72, and the result is 0 there, not
        // the subnormal the exact function has. Elsewhere exp's error passes through the
        // division, which adds one rounding: 3 ulps.
        let exact =
            |x: f64| if (-x).exp() > f64::from(f32::MAX) { 0.0 } else { 1.0 / (1.0 + (-x).exp()) };
        check("logistic", logistic, exact, 3);
        assert_eq!(logistic(-200.0), 0.0);
        assert_eq!(logistic(200.0), 1.0);
    }

    #[test]
    fn f16_conversions_agree_with_the_reference_encoder_on_every_value() {
        let f = SmallFloat::F16;
        for bits in 0..=u16::MAX {
            let decoded = f16_to_f32(bits);
            let want = f.decode(u32::from(bits));
            assert!(
                decoded.to_bits() == want.to_bits() || (decoded.is_nan() && want.is_nan()),
                "{bits:#x}"
            );
        }
        // Every f32 bit pattern in steps, and the halfway points between f16 values.
        let halfway = (0..0x7c00u32).map(|b| {
            let lo = f64::from(f.decode(b));
            let hi = f64::from(f.decode(b + 1));
            ((lo + hi) / 2.0) as f32
        });
        for x in sweep(61, &EDGES).into_iter().chain(halfway) {
            assert_eq!(u32::from(f32_to_f16(x)), f.encode(f64::from(x)), "{x:e}");
        }
    }

    #[test]
    fn bf16_rounding_agrees_with_the_reference_encoder() {
        let f = SmallFloat::Bf16;
        for x in sweep(61, &EDGES) {
            assert_eq!(u32::from(f32_to_bf16(x)), f.encode(f64::from(x)), "{x:e}");
        }
    }

    #[test]
    fn copied_nans_keep_their_payload() {
        assert_eq!(f32_to_bf16_keeping_nan(f32::from_bits(0xffc1_0000)), 0xffc1);
        assert_eq!(f32_to_f16_keeping_nan(f16_to_f32(0x7e01)), 0x7e01);
    }
}

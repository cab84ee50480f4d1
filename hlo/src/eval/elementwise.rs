//! Elementwise kernels: unary, binary, compare, select, clamp, convert, bitcast-convert.
//!
//! Design choices:
//! - The opcode is matched once per instruction; each arm runs a monomorphic loop over slices.
//! - Narrow floats are decoded to f32, computed in f32 and rounded back to nearest-even per
//!   instruction, as XLA on CPU does.
//! - Integer semantics follow XLA's CPU emitter: wrapping add/sub/mul/neg/abs; `x / 0` is -1
//!   (all ones), `INT_MIN / -1` is `INT_MIN`, `x % 0` is `x`, `INT_MIN % -1` is 0; shifts by at
//!   least the bit width give 0 (or the sign for arithmetic right shifts); `pow` with a negative
//!   exponent is 1 when the base is 1 and 0 otherwise.
//! - Float maximum and minimum propagate NaN. Pred add/max are `or`, multiply/min are `and`.
//! - Float → integer conversion saturates and maps NaN to 0 (Rust's `as`, which matches XLA's
//!   saturating `fptosi`); anything → pred is `x != 0`.

use super::error::Fail;
use super::op_context::{OpContext, invalid};
use super::program::Op;
use super::shape::{ArrayShape, Shape};
use super::tensor::{Data, try_alloc};
use crate::dtype::{ElementType, SmallFloat};

/// Matches a comparison direction once and evaluates `$body` in each arm with `$cmp` that
/// direction's comparison as a closure over two `PartialOrd` values, so each direction's loop is
/// compiled on its own (branch-free, vectorised) instead of matching the direction and the
/// ordering per element. With a NaN operand, every direction but `NE` is false, as
/// [`Direction::test`] says of an unordered pair.
macro_rules! with_direction {
    ($direction:expr, $cmp:ident => $body:expr) => {
        match $direction {
            Direction::Eq => {
                let $cmp = |p, q| p == q;
                $body
            }
            Direction::Ne => {
                let $cmp = |p, q| p != q;
                $body
            }
            Direction::Lt => {
                let $cmp = |p, q| p < q;
                $body
            }
            Direction::Le => {
                let $cmp = |p, q| p <= q;
                $body
            }
            Direction::Gt => {
                let $cmp = |p, q| p > q;
                $body
            }
            Direction::Ge => {
                let $cmp = |p, q| p >= q;
                $body
            }
        }
    };
}
pub(crate) use with_direction;

/// Matches `$op` once and evaluates `$body` in each arm with `$b` a constant of that opcode, so
/// a loop in `$body` that calls `Float::binary`/`Int::binary` with `$b` is monomorphic (the
/// per-element `match` folds away). The one list of binary opcodes the kernels expand over.
macro_rules! with_binary {
    ($op:expr, $b:ident => $body:expr) => {
        with_binary!(@arms $op, $b, $body; Add, Sub, Mul, Div, Rem, Max, Min, Pow, Atan2, And, Or,
            Xor, Shl, ShrLogical, ShrArithmetic)
    };
    (@arms $op:expr, $b:ident, $body:expr; $($v:ident),*) => {
        match $op {
            $($crate::eval::elementwise::Binary::$v => {
                const $b: $crate::eval::elementwise::Binary =
                    $crate::eval::elementwise::Binary::$v;
                $body
            })*
        }
    };
}
pub(crate) use with_binary;

/// Unary elementwise opcodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unary {
    Abs,
    Negate,
    Sign,
    Exp,
    Expm1,
    Log,
    Log1p,
    Sqrt,
    Rsqrt,
    Cbrt,
    Tanh,
    Logistic,
    Sin,
    Cos,
    Tan,
    Floor,
    Ceil,
    RoundEven,
    RoundAfz,
    IsFinite,
    Not,
    Popcnt,
    Clz,
    Erf,
}

impl Unary {
    pub(crate) fn from_opcode(opcode: &str) -> Option<Unary> {
        Some(match opcode {
            "abs" => Unary::Abs,
            "negate" => Unary::Negate,
            "sign" => Unary::Sign,
            "exponential" => Unary::Exp,
            "exponential-minus-one" => Unary::Expm1,
            "log" => Unary::Log,
            "log-plus-one" => Unary::Log1p,
            "sqrt" => Unary::Sqrt,
            "rsqrt" => Unary::Rsqrt,
            "cbrt" => Unary::Cbrt,
            "tanh" => Unary::Tanh,
            "logistic" => Unary::Logistic,
            "sine" => Unary::Sin,
            "cosine" => Unary::Cos,
            "tan" => Unary::Tan,
            "floor" => Unary::Floor,
            "ceil" => Unary::Ceil,
            "round-nearest-even" => Unary::RoundEven,
            "round-nearest-afz" => Unary::RoundAfz,
            "is-finite" => Unary::IsFinite,
            "not" => Unary::Not,
            "popcnt" => Unary::Popcnt,
            "count-leading-zeros" => Unary::Clz,
            "erf" => Unary::Erf,
            _ => return None,
        })
    }

    /// Whether the op is defined on `ty` (shape inference's rule, checked at compile time).
    pub(crate) fn accepts(self, ty: ElementType) -> bool {
        match self {
            Unary::Not => !ty.is_float(),
            Unary::Popcnt | Unary::Clz => ty.is_signed_int() || ty.is_unsigned_int(),
            Unary::Abs | Unary::Negate | Unary::Sign => ty != ElementType::Pred,
            _ => ty.is_float(),
        }
    }
}

/// Binary elementwise opcodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binary {
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
    ShrArithmetic,
}

impl Binary {
    pub(crate) fn from_opcode(opcode: &str) -> Option<Binary> {
        Some(match opcode {
            "add" => Binary::Add,
            "subtract" => Binary::Sub,
            "multiply" => Binary::Mul,
            "divide" => Binary::Div,
            "remainder" => Binary::Rem,
            "maximum" => Binary::Max,
            "minimum" => Binary::Min,
            "power" => Binary::Pow,
            "atan2" => Binary::Atan2,
            "and" => Binary::And,
            "or" => Binary::Or,
            "xor" => Binary::Xor,
            "shift-left" => Binary::Shl,
            "shift-right-logical" => Binary::ShrLogical,
            "shift-right-arithmetic" => Binary::ShrArithmetic,
            _ => return None,
        })
    }

    pub(crate) fn accepts(self, ty: ElementType) -> bool {
        match self {
            Binary::And | Binary::Or | Binary::Xor => !ty.is_float(),
            Binary::Shl | Binary::ShrLogical | Binary::ShrArithmetic => {
                ty.is_signed_int() || ty.is_unsigned_int()
            }
            Binary::Atan2 => ty.is_float(),
            Binary::Add | Binary::Mul | Binary::Max | Binary::Min => true,
            Binary::Sub | Binary::Div | Binary::Rem | Binary::Pow => ty != ElementType::Pred,
        }
    }
}

/// Comparison directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Direction {
    pub(crate) fn parse(text: &str) -> Option<Direction> {
        Some(match text.to_ascii_uppercase().as_str() {
            "EQ" => Direction::Eq,
            "NE" => Direction::Ne,
            "LT" => Direction::Lt,
            "LE" => Direction::Le,
            "GT" => Direction::Gt,
            "GE" => Direction::Ge,
            _ => return None,
        })
    }

    #[inline]
    pub(crate) fn test(self, ordering: Option<std::cmp::Ordering>) -> bool {
        use std::cmp::Ordering::*;
        match (self, ordering) {
            (Direction::Ne, None) => true,
            (_, None) => false,
            (Direction::Eq, Some(o)) => o == Equal,
            (Direction::Ne, Some(o)) => o != Equal,
            (Direction::Lt, Some(o)) => o == Less,
            (Direction::Le, Some(o)) => o != Greater,
            (Direction::Gt, Some(o)) => o == Greater,
            (Direction::Ge, Some(o)) => o != Less,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Float arithmetic, written once for f32 and f64.

pub(crate) trait Float: Copy + PartialOrd + std::fmt::Debug + Send + Sync + 'static {
    fn unary(op: Unary, x: Self) -> Self;
    fn binary(op: Binary, x: Self, y: Self) -> Self;
    fn total_key(self) -> i64;
}

/// The transcendental functions with a vectorisable f32 form (`math`); f64 uses libm.
trait Transcendental {
    fn sin_(self) -> Self;
    fn cos_(self) -> Self;
    fn exp_(self) -> Self;
    fn expm1_(self) -> Self;
    fn erf_(self) -> Self;
    fn ln_(self) -> Self;
    fn tanh_(self) -> Self;
    fn logistic_(self) -> Self;
}

impl Transcendental for f32 {
    #[inline(always)]
    fn sin_(self) -> f32 {
        super::math::sin(self)
    }
    #[inline(always)]
    fn cos_(self) -> f32 {
        super::math::cos(self)
    }
    #[inline(always)]
    fn exp_(self) -> f32 {
        super::math::exp(self)
    }
    #[inline(always)]
    fn expm1_(self) -> f32 {
        super::math::expm1(self)
    }
    #[inline(always)]
    fn erf_(self) -> f32 {
        super::math::erf(self)
    }
    #[inline(always)]
    fn ln_(self) -> f32 {
        super::math::ln(self)
    }
    #[inline(always)]
    fn tanh_(self) -> f32 {
        super::math::tanh(self)
    }
    #[inline(always)]
    fn logistic_(self) -> f32 {
        super::math::logistic(self)
    }
}

impl Transcendental for f64 {
    #[inline(always)]
    fn sin_(self) -> f64 {
        self.sin()
    }
    #[inline(always)]
    fn cos_(self) -> f64 {
        self.cos()
    }
    #[inline(always)]
    fn exp_(self) -> f64 {
        self.exp()
    }
    #[inline(always)]
    fn expm1_(self) -> f64 {
        self.exp_m1()
    }
    #[inline(always)]
    fn erf_(self) -> f64 {
        erf(self)
    }
    #[inline(always)]
    fn ln_(self) -> f64 {
        self.ln()
    }
    #[inline(always)]
    fn tanh_(self) -> f64 {
        self.tanh()
    }
    #[inline(always)]
    fn logistic_(self) -> f64 {
        1.0 / (1.0 + (-self).exp())
    }
}

macro_rules! impl_float {
    ($t:ty, $bits:ty, $signed:ty) => {
        impl Float for $t {
            #[inline]
            fn unary(op: Unary, x: $t) -> $t {
                match op {
                    Unary::Abs => x.abs(),
                    Unary::Negate => -x,
                    Unary::Sign => {
                        if x.is_nan() || x == 0.0 {
                            x
                        } else {
                            (1.0 as $t).copysign(x)
                        }
                    }
                    Unary::Exp => Transcendental::exp_(x),
                    Unary::Expm1 => Transcendental::expm1_(x),
                    Unary::Log => Transcendental::ln_(x),
                    Unary::Log1p => x.ln_1p(),
                    Unary::Sqrt => x.sqrt(),
                    Unary::Rsqrt => 1.0 / x.sqrt(),
                    Unary::Cbrt => x.cbrt(),
                    Unary::Tanh => Transcendental::tanh_(x),
                    Unary::Logistic => Transcendental::logistic_(x),
                    Unary::Sin => Transcendental::sin_(x),
                    Unary::Cos => Transcendental::cos_(x),
                    Unary::Tan => x.tan(),
                    Unary::Floor => x.floor(),
                    Unary::Ceil => x.ceil(),
                    Unary::RoundEven => x.round_ties_even(),
                    Unary::RoundAfz => x.round(),
                    Unary::Erf => Transcendental::erf_(x),
                    // Rejected for floats at compile time; identity keeps this total.
                    Unary::IsFinite | Unary::Not | Unary::Popcnt | Unary::Clz => x,
                }
            }

            #[inline]
            fn binary(op: Binary, x: $t, y: $t) -> $t {
                match op {
                    Binary::Add => x + y,
                    Binary::Sub => x - y,
                    Binary::Mul => x * y,
                    Binary::Div => x / y,
                    Binary::Rem => x % y,
                    // XLA CPU orders -0 below +0 here: max(-0, +0) and max(+0, -0) are both +0,
                    // min of either pair is -0. Written with `|` and `&`, not `||` and `&&`, so
                    // that the tests are selects, not branches, and a loop of them vectorises
                    // (relu and max pooling are such loops).
                    Binary::Max => {
                        let either_nan = x.is_nan() | y.is_nan();
                        let larger =
                            if (x > y) | ((x == y) & y.is_sign_negative()) { x } else { y };
                        if either_nan { <$t>::NAN } else { larger }
                    }
                    Binary::Min => {
                        let either_nan = x.is_nan() | y.is_nan();
                        let smaller =
                            if (x < y) | ((x == y) & x.is_sign_negative()) { x } else { y };
                        if either_nan { <$t>::NAN } else { smaller }
                    }
                    Binary::Pow => x.powf(y),
                    Binary::Atan2 => x.atan2(y),
                    _ => <$t>::NAN,
                }
            }

            /// A key whose integer order is IEEE totalOrder (-NaN < -inf < … < -0 < +0 < … < NaN).
            #[inline]
            fn total_key(self) -> i64 {
                let bits = self.to_bits() as $signed;
                let key = bits ^ ((((bits >> (<$bits>::BITS - 1)) as $bits) >> 1) as $signed);
                key as i64
            }
        }
    };
}
impl_float!(f32, u32, i32);
impl_float!(f64, u64, i64);

/// The error function, to about 1e-15 relative: a Taylor series near zero and Lentz's continued
/// fraction for the complement further out.
pub(crate) fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let value = if a < 2.5 {
        // erf(a) = 2/√π Σ (-1)^n a^(2n+1) / (n! (2n+1)).
        let a2 = a * a;
        let mut term = a;
        let mut sum = a;
        // At most 100 terms: for a < 2.5 the terms fall below 1e-17 of the sum well before.
        for k in 1..100 {
            let n = f64::from(k);
            term *= -a2 / n;
            let add = term / (2.0 * n + 1.0);
            sum += add;
            // `<=`: at a = 0 every term is 0, and `<` would never end the loop.
            if add.abs() <= 1e-17 * sum.abs() {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else if a < 6.0 {
        // erfc(a) = e^(-a²)/√π · 1/(a + 1/2/(a + 1/(a + 3/2/(a + 2/(a + …))))).
        let tiny = 1e-300;
        let mut f = a;
        let mut c = a;
        let mut d = 0.0;
        for k in 1..200 {
            let coefficient = f64::from(k) / 2.0;
            d = a + coefficient * d;
            if d.abs() < tiny {
                d = tiny;
            }
            c = a + coefficient / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        1.0 - (-a * a).exp() / (f * std::f64::consts::PI.sqrt())
    } else {
        1.0
    };
    value.copysign(x)
}

// ---------------------------------------------------------------------------------------------
// Integer arithmetic.

pub(crate) trait Int: Copy + Ord + Eq + std::fmt::Debug + Send + Sync + 'static {
    fn unary(op: Unary, x: Self) -> Self;
    fn binary(op: Binary, x: Self, y: Self) -> Self;
}

macro_rules! impl_int {
    ($t:ty, $u:ty, signed = $signed:expr) => {
        impl Int for $t {
            #[inline]
            fn unary(op: Unary, x: $t) -> $t {
                match op {
                    Unary::Abs => {
                        if $signed && x < (0 as $t) {
                            (0 as $t).wrapping_sub(x)
                        } else {
                            x
                        }
                    }
                    Unary::Negate => (0 as $t).wrapping_sub(x),
                    Unary::Sign => {
                        if x == (0 as $t) {
                            0 as $t
                        } else if $signed && x < (0 as $t) {
                            (0 as $t).wrapping_sub(1)
                        } else {
                            1 as $t
                        }
                    }
                    Unary::Not => !x,
                    Unary::Popcnt => x.count_ones() as $t,
                    Unary::Clz => x.leading_zeros() as $t,
                    _ => x,
                }
            }

            #[inline]
            fn binary(op: Binary, x: $t, y: $t) -> $t {
                let bits = <$t>::BITS as $u;
                match op {
                    Binary::Add => x.wrapping_add(y),
                    Binary::Sub => x.wrapping_sub(y),
                    Binary::Mul => x.wrapping_mul(y),
                    Binary::Div => {
                        if y == (0 as $t) {
                            !(0 as $t)
                        } else {
                            x.wrapping_div(y)
                        }
                    }
                    Binary::Rem => {
                        if y == (0 as $t) {
                            x
                        } else {
                            x.wrapping_rem(y)
                        }
                    }
                    Binary::Max => x.max(y),
                    Binary::Min => x.min(y),
                    Binary::Pow => {
                        if $signed && y < (0 as $t) {
                            if x == (1 as $t) { 1 as $t } else { 0 as $t }
                        } else {
                            let mut base = x;
                            let mut exponent = y as $u;
                            let mut accumulator: $t = 1 as $t;
                            while exponent != 0 {
                                if exponent & 1 == 1 {
                                    accumulator = accumulator.wrapping_mul(base);
                                }
                                base = base.wrapping_mul(base);
                                exponent >>= 1;
                            }
                            accumulator
                        }
                    }
                    Binary::And => x & y,
                    Binary::Or => x | y,
                    Binary::Xor => x ^ y,
                    Binary::Shl => {
                        if (y as $u) >= bits {
                            0 as $t
                        } else {
                            x.wrapping_shl(y as u32)
                        }
                    }
                    Binary::ShrLogical => {
                        if (y as $u) >= bits {
                            0 as $t
                        } else {
                            ((x as $u) >> (y as u32)) as $t
                        }
                    }
                    Binary::ShrArithmetic => {
                        if (y as $u) >= bits {
                            // The sign bit fills every position (XLA shifts the bits as signed).
                            if ((x as $u) >> (bits - 1)) == 1 { !(0 as $t) } else { 0 as $t }
                        } else if $signed {
                            x >> (y as u32)
                        } else {
                            // Unsigned arithmetic shift: XLA shifts the bits as signed.
                            let signed_bits = x as $u;
                            let top = signed_bits >> (bits - 1);
                            let shifted = signed_bits >> (y as u32);
                            if top == 1 && y != (0 as $t) {
                                (shifted | !((!(0 as $u)) >> (y as u32))) as $t
                            } else {
                                shifted as $t
                            }
                        }
                    }
                    Binary::Atan2 => x,
                }
            }
        }
    };
}
impl_int!(i8, u8, signed = true);
impl_int!(i16, u16, signed = true);
impl_int!(i32, u32, signed = true);
impl_int!(i64, u64, signed = true);
impl_int!(u8, u8, signed = false);
impl_int!(u16, u16, signed = false);
impl_int!(u32, u32, signed = false);
impl_int!(u64, u64, signed = false);

// ---------------------------------------------------------------------------------------------
// Slice helpers.

fn map<T: Copy, U>(v: &[T], f: impl Fn(T) -> U) -> Result<Vec<U>, Fail> {
    let mut out = try_alloc(v.len())?;
    out.extend(v.iter().map(|&x| f(x)));
    Ok(out)
}

fn zip<T: Copy, U>(a: &[T], b: &[T], f: impl Fn(T, T) -> U) -> Result<Vec<U>, Fail> {
    let mut out = try_alloc(a.len())?;
    out.extend(a.iter().zip(b).map(|(&x, &y)| f(x, y)));
    Ok(out)
}

/// `zip` with the opcode fixed per arm: each arm instantiates the loop with a constant opcode, so
/// the per-element `match` in `Float::binary`/`Int::binary` folds away (no dispatch per element).
fn zip_op<T: Copy, U>(
    op: Binary,
    a: &[T],
    b: &[T],
    f: impl Fn(Binary, T, T) -> U + Copy,
) -> Result<Vec<U>, Fail> {
    with_binary!(op, OP => zip(a, b, move |x, y| f(OP, x, y)))
}

/// `map` with the opcode fixed per arm (see [`zip_op`]).
fn map_op<T: Copy, U>(
    op: Unary,
    v: &[T],
    f: impl Fn(Unary, T) -> U + Copy,
) -> Result<Vec<U>, Fail> {
    macro_rules! arms {
        ($($u:ident),*) => {
            match op {
                $(Unary::$u => map(v, move |x| f(Unary::$u, x)),)*
            }
        };
    }
    arms!(
        Abs, Negate, Sign, Exp, Expm1, Log, Log1p, Sqrt, Rsqrt, Cbrt, Tanh, Logistic, Sin, Cos,
        Tan, Floor, Ceil, RoundEven, RoundAfz, IsFinite, Not, Popcnt, Clz, Erf
    )
}

/// Decodes narrow-float bits to f32.
pub(crate) fn widen<B: Copy + Into<u32>>(format: SmallFloat, v: &[B]) -> Result<Vec<f32>, Fail> {
    if matches!(format, SmallFloat::F8e4m3fn | SmallFloat::F8e5m2 | SmallFloat::F8e4m3) {
        let table: Vec<f32> = (0..256u32).map(|bits| format.decode(bits)).collect();
        return map(v, |b| table[(b.into() & 0xff) as usize]);
    }
    map(v, |b| format.decode(b.into()))
}

fn narrow16(format: SmallFloat, v: &[f32]) -> Result<Vec<u16>, Fail> {
    map(v, |x| format.encode_f32(x) as u16)
}

fn narrow8(format: SmallFloat, v: &[f32]) -> Result<Vec<u8>, Fail> {
    map(v, |x| format.encode_f32(x) as u8)
}

macro_rules! small_float_arms {
    ($data:expr, $w:ident => $body:expr, $fallback:expr) => {
        match $data {
            Data::F16(v) => {
                let $w = widen(SmallFloat::F16, v)?;
                Data::F16(narrow16(SmallFloat::F16, &$body)?)
            }
            Data::Bf16(v) => {
                let $w = widen(SmallFloat::Bf16, v)?;
                Data::Bf16(narrow16(SmallFloat::Bf16, &$body)?)
            }
            Data::F8e5m2(v) => {
                let $w = widen(SmallFloat::F8e5m2, v)?;
                Data::F8e5m2(narrow8(SmallFloat::F8e5m2, &$body)?)
            }
            Data::F8e4m3fn(v) => {
                let $w = widen(SmallFloat::F8e4m3fn, v)?;
                Data::F8e4m3fn(narrow8(SmallFloat::F8e4m3fn, &$body)?)
            }
            Data::F8e4m3(v) => {
                let $w = widen(SmallFloat::F8e4m3, v)?;
                Data::F8e4m3(narrow8(SmallFloat::F8e4m3, &$body)?)
            }
            _ => $fallback,
        }
    };
}

/// Applies a unary op.
pub(crate) fn unary(op: Unary, data: &Data) -> Result<Data, Fail> {
    if op == Unary::IsFinite {
        return Ok(Data::Pred(match data {
            Data::F32(v) => map(v, |x| x.is_finite())?,
            Data::F64(v) => map(v, |x| x.is_finite())?,
            Data::F16(v) | Data::Bf16(v) => {
                map(&widen(small_of(data), v)?, |x: f32| x.is_finite())?
            }
            Data::F8e5m2(v) | Data::F8e4m3fn(v) | Data::F8e4m3(v) => {
                map(&widen(small_of(data), v)?, |x: f32| x.is_finite())?
            }
            _ => return Err(Fail::Internal("is-finite of a non-float".into())),
        }));
    }
    Ok(small_float_arms!(data, w => unary_f32(op, &w)?, match data {
        Data::F32(v) => Data::F32(unary_f32(op, v)?),
        Data::F64(v) => Data::F64(map_op(op, v, f64::unary)?),
        Data::Pred(v) => Data::Pred(map(v, |x| if op == Unary::Not { !x } else { x })?),
        Data::S8(v) => Data::S8(map_op(op, v, i8::unary)?),
        Data::S16(v) => Data::S16(map_op(op, v, i16::unary)?),
        Data::S32(v) => Data::S32(map_op(op, v, i32::unary)?),
        Data::S64(v) => Data::S64(map_op(op, v, i64::unary)?),
        Data::U8(v) => Data::U8(map_op(op, v, u8::unary)?),
        Data::U16(v) => Data::U16(map_op(op, v, u16::unary)?),
        Data::U32(v) => Data::U32(map_op(op, v, u32::unary)?),
        Data::U64(v) => Data::U64(map_op(op, v, u64::unary)?),
        _ => return Err(Fail::Internal("unreachable narrow float".into())),
    }))
}

/// `op` over f32 values through the vectorised slice kernel, compiled for the CPU's instruction
/// set (the same bits as `f32::unary` element by element): scalar tanh ran at ~3 ns an element.
fn unary_f32(op: Unary, v: &[f32]) -> Result<Vec<f32>, Fail> {
    let mut out = try_alloc(v.len())?;
    out.resize(v.len(), 0.0);
    super::math::unary_slice(op, v, &mut out, false, super::simd::arch());
    Ok(out)
}

fn small_of(data: &Data) -> SmallFloat {
    data.ty().small_float().unwrap_or(SmallFloat::F16)
}

pub(crate) fn pred_binary(op: Binary, x: bool, y: bool) -> bool {
    match op {
        Binary::Add | Binary::Max | Binary::Or => x | y,
        Binary::Mul | Binary::Min | Binary::And => x & y,
        Binary::Xor => x ^ y,
        _ => false,
    }
}

/// Applies a binary op to two arrays of the same type and length.
pub(crate) fn binary(op: Binary, a: &Data, b: &Data) -> Result<Data, Fail> {
    macro_rules! small {
        ($variant:ident, $format:expr, $narrow:ident, $x:ident, $y:ident) => {{
            let wx = widen($format, $x)?;
            let wy = widen($format, $y)?;
            Data::$variant($narrow($format, &zip_op(op, &wx, &wy, f32::binary)?)?)
        }};
    }
    Ok(match (a, b) {
        (Data::F32(x), Data::F32(y)) => Data::F32(zip_op(op, x, y, f32::binary)?),
        (Data::F64(x), Data::F64(y)) => Data::F64(zip_op(op, x, y, f64::binary)?),
        (Data::F16(x), Data::F16(y)) => small!(F16, SmallFloat::F16, narrow16, x, y),
        (Data::Bf16(x), Data::Bf16(y)) => small!(Bf16, SmallFloat::Bf16, narrow16, x, y),
        (Data::F8e5m2(x), Data::F8e5m2(y)) => small!(F8e5m2, SmallFloat::F8e5m2, narrow8, x, y),
        (Data::F8e4m3fn(x), Data::F8e4m3fn(y)) => {
            small!(F8e4m3fn, SmallFloat::F8e4m3fn, narrow8, x, y)
        }
        (Data::F8e4m3(x), Data::F8e4m3(y)) => small!(F8e4m3, SmallFloat::F8e4m3, narrow8, x, y),
        (Data::Pred(x), Data::Pred(y)) => Data::Pred(zip(x, y, |p, q| pred_binary(op, p, q))?),
        (Data::S8(x), Data::S8(y)) => Data::S8(zip_op(op, x, y, i8::binary)?),
        (Data::S16(x), Data::S16(y)) => Data::S16(zip_op(op, x, y, i16::binary)?),
        (Data::S32(x), Data::S32(y)) => Data::S32(zip_op(op, x, y, i32::binary)?),
        (Data::S64(x), Data::S64(y)) => Data::S64(zip_op(op, x, y, i64::binary)?),
        (Data::U8(x), Data::U8(y)) => Data::U8(zip_op(op, x, y, u8::binary)?),
        (Data::U16(x), Data::U16(y)) => Data::U16(zip_op(op, x, y, u16::binary)?),
        (Data::U32(x), Data::U32(y)) => Data::U32(zip_op(op, x, y, u32::binary)?),
        (Data::U64(x), Data::U64(y)) => Data::U64(zip_op(op, x, y, u64::binary)?),
        _ => return Err(Fail::Internal("operands of a binary op differ in type".into())),
    })
}

/// Compares two arrays; `total_order` uses IEEE totalOrder for floats.
pub(crate) fn compare(
    direction: Direction,
    total_order: bool,
    a: &Data,
    b: &Data,
) -> Result<Vec<bool>, Fail> {
    fn float<F: Float>(d: Direction, total: bool, x: &[F], y: &[F]) -> Result<Vec<bool>, Fail> {
        if total {
            zip(x, y, |p, q| d.test(Some(p.total_key().cmp(&q.total_key()))))
        } else {
            with_direction!(d, cmp => zip(x, y, cmp))
        }
    }
    fn ord<T: Ord + Copy>(d: Direction, x: &[T], y: &[T]) -> Result<Vec<bool>, Fail> {
        with_direction!(d, cmp => zip(x, y, cmp))
    }
    match (a, b) {
        (Data::F32(x), Data::F32(y)) => float(direction, total_order, x, y),
        (Data::F64(x), Data::F64(y)) => float(direction, total_order, x, y),
        (Data::F16(x), Data::F16(y)) | (Data::Bf16(x), Data::Bf16(y)) => {
            let f = small_of(a);
            float(direction, total_order, &widen(f, x)?, &widen(f, y)?)
        }
        (Data::F8e5m2(x), Data::F8e5m2(y))
        | (Data::F8e4m3fn(x), Data::F8e4m3fn(y))
        | (Data::F8e4m3(x), Data::F8e4m3(y)) => {
            let f = small_of(a);
            float(direction, total_order, &widen(f, x)?, &widen(f, y)?)
        }
        (Data::Pred(x), Data::Pred(y)) => ord(direction, x, y),
        (Data::S8(x), Data::S8(y)) => ord(direction, x, y),
        (Data::S16(x), Data::S16(y)) => ord(direction, x, y),
        (Data::S32(x), Data::S32(y)) => ord(direction, x, y),
        (Data::S64(x), Data::S64(y)) => ord(direction, x, y),
        (Data::U8(x), Data::U8(y)) => ord(direction, x, y),
        (Data::U16(x), Data::U16(y)) => ord(direction, x, y),
        (Data::U32(x), Data::U32(y)) => ord(direction, x, y),
        (Data::U64(x), Data::U64(y)) => ord(direction, x, y),
        _ => Err(Fail::Internal("operands of compare differ in type".into())),
    }
}

/// `select(pred, on_true, on_false)`; `pred` is either one scalar or one per element.
pub(crate) fn select(pred: &[bool], on_true: &Data, on_false: &Data) -> Result<Data, Fail> {
    fn pick<T: Copy>(p: &[bool], x: &[T], y: &[T]) -> Result<Vec<T>, Fail> {
        let mut out = try_alloc(x.len())?;
        if p.len() == 1 {
            out.extend_from_slice(if p[0] { x } else { y });
        } else {
            out.extend(p.iter().zip(x.iter().zip(y)).map(|(&c, (&a, &b))| if c { a } else { b }));
        }
        Ok(out)
    }
    dispatch2!(on_true, on_false, x, y => pick(pred, x, y)?)
}

use super::tensor::dispatch2;

/// `clamp(min, x, max)`; `min` and `max` are either scalars or full arrays.
pub(crate) fn clamp(min: &Data, x: &Data, max: &Data) -> Result<Data, Fail> {
    let n = x.len();
    let min = super::shape_ops::broadcast_scalar(min, n)?;
    let max = super::shape_ops::broadcast_scalar(max, n)?;
    let lower = binary(Binary::Max, &min, x)?;
    binary(Binary::Min, &max, &lower)
}

// ---------------------------------------------------------------------------------------------
// Conversions.

/// Values widened to a common carrier for conversion: integers as i128, floats as f64.
enum Carrier {
    Int(Vec<i128>),
    Float(Vec<f64>),
}

fn to_carrier(data: &Data) -> Result<Carrier, Fail> {
    Ok(match data {
        Data::Pred(v) => Carrier::Int(map(v, i128::from)?),
        Data::S8(v) => Carrier::Int(map(v, i128::from)?),
        Data::S16(v) => Carrier::Int(map(v, i128::from)?),
        Data::S32(v) => Carrier::Int(map(v, i128::from)?),
        Data::S64(v) => Carrier::Int(map(v, i128::from)?),
        Data::U8(v) => Carrier::Int(map(v, i128::from)?),
        Data::U16(v) => Carrier::Int(map(v, i128::from)?),
        Data::U32(v) => Carrier::Int(map(v, i128::from)?),
        Data::U64(v) => Carrier::Int(map(v, i128::from)?),
        Data::F32(v) => Carrier::Float(map(v, f64::from)?),
        Data::F64(v) => Carrier::Float(v.clone()),
        Data::F16(v) | Data::Bf16(v) => {
            let f = small_of(data);
            Carrier::Float(map(v, |b| f64::from(f.decode(u32::from(b))))?)
        }
        Data::F8e5m2(v) | Data::F8e4m3fn(v) | Data::F8e4m3(v) => {
            let f = small_of(data);
            Carrier::Float(map(v, |b| f64::from(f.decode(u32::from(b))))?)
        }
    })
}

/// Converts elements to `ty` (XLA's `convert`).
pub(crate) fn convert(data: &Data, ty: ElementType) -> Result<Data, Fail> {
    if data.ty() == ty {
        return Ok(data.clone());
    }
    // Fast paths for the common float conversions.
    match (data, ty) {
        (Data::F32(v), ElementType::F64) => return Ok(Data::F64(map(v, f64::from)?)),
        (Data::F64(v), ElementType::F32) => return Ok(Data::F32(map(v, |x| x as f32)?)),
        (Data::Bf16(v), ElementType::F32) => return Ok(Data::F32(widen(SmallFloat::Bf16, v)?)),
        (Data::F32(v), ElementType::Bf16) => {
            return Ok(Data::Bf16(narrow16(SmallFloat::Bf16, v)?));
        }
        _ => {}
    }
    let carrier = to_carrier(data)?;
    macro_rules! int_target {
        ($variant:ident, $t:ty) => {
            Data::$variant(match &carrier {
                Carrier::Int(v) => map(v, |x| x as $t)?,
                Carrier::Float(v) => map(v, |x| x as $t)?,
            })
        };
    }
    macro_rules! small_target {
        ($variant:ident, $format:expr, $t:ty) => {
            Data::$variant(match &carrier {
                Carrier::Int(v) => map(v, |x| $format.encode(x as f64) as $t)?,
                Carrier::Float(v) => map(v, |x| $format.encode(x) as $t)?,
            })
        };
    }
    Ok(match ty {
        ElementType::Pred => Data::Pred(match &carrier {
            Carrier::Int(v) => map(v, |x| x != 0)?,
            Carrier::Float(v) => map(v, |x| x != 0.0)?,
        }),
        ElementType::S8 => int_target!(S8, i8),
        ElementType::S16 => int_target!(S16, i16),
        ElementType::S32 => int_target!(S32, i32),
        ElementType::S64 => int_target!(S64, i64),
        ElementType::U8 => int_target!(U8, u8),
        ElementType::U16 => int_target!(U16, u16),
        ElementType::U32 => int_target!(U32, u32),
        ElementType::U64 => int_target!(U64, u64),
        ElementType::F32 => Data::F32(match &carrier {
            Carrier::Int(v) => map(v, |x| x as f32)?,
            Carrier::Float(v) => map(v, |x| x as f32)?,
        }),
        ElementType::F64 => Data::F64(match &carrier {
            Carrier::Int(v) => map(v, |x| x as f64)?,
            Carrier::Float(v) => v.clone(),
        }),
        ElementType::F16 => small_target!(F16, SmallFloat::F16, u16),
        ElementType::Bf16 => small_target!(Bf16, SmallFloat::Bf16, u16),
        ElementType::F8e5m2 => small_target!(F8e5m2, SmallFloat::F8e5m2, u8),
        ElementType::F8e4m3fn => small_target!(F8e4m3fn, SmallFloat::F8e4m3fn, u8),
        ElementType::F8e4m3 => small_target!(F8e4m3, SmallFloat::F8e4m3, u8),
    })
}

/// Rounds floats to `exponent_bits`/`mantissa_bits` and back (XLA's `reduce-precision`).
pub(crate) fn reduce_precision(
    data: &Data,
    exponent_bits: u32,
    mantissa_bits: u32,
) -> Result<Data, Fail> {
    fn round64(x: f64, e: u32, m: u32) -> f64 {
        if x.is_nan() || e >= 11 && m >= 52 {
            return x;
        }
        let bits = x.to_bits();
        let mut bits = bits;
        if m < 52 {
            let drop = 52 - m;
            let last = (bits >> drop) & 1;
            let half = (1u64 << (drop - 1)) - 1;
            bits = bits.wrapping_add(half + last) & !((1u64 << drop) - 1);
        }
        let rounded = f64::from_bits(bits);
        if e < 11 {
            let max_exponent = (1i32 << (e - 1)) - 1;
            let min_exponent = 1 - max_exponent;
            let exponent = ((bits >> 52) & 0x7ff) as i32 - 1023;
            if exponent > max_exponent {
                return f64::INFINITY.copysign(x);
            }
            if exponent < min_exponent {
                // XLA flushes values below the smallest normal of the target to zero.
                return 0.0f64.copysign(x);
            }
        }
        rounded
    }
    fn round32(x: f32, e: u32, m: u32) -> f32 {
        if x.is_nan() || e >= 8 && m >= 23 {
            return x;
        }
        let mut bits = x.to_bits();
        if m < 23 {
            let drop = 23 - m;
            let last = (bits >> drop) & 1;
            let half = (1u32 << (drop - 1)) - 1;
            bits = bits.wrapping_add(half + last) & !((1u32 << drop) - 1);
        }
        let rounded = f32::from_bits(bits);
        if e < 8 {
            let max_exponent = (1i32 << (e - 1)) - 1;
            let min_exponent = 1 - max_exponent;
            let exponent = ((bits >> 23) & 0xff) as i32 - 127;
            if exponent > max_exponent {
                return f32::INFINITY.copysign(x);
            }
            if exponent < min_exponent {
                return 0.0f32.copysign(x);
            }
        }
        rounded
    }
    let (e, m) = (exponent_bits.max(1), mantissa_bits);
    Ok(small_float_arms!(data, w => map(&w, |x| round32(x, e, m))?, match data {
        Data::F32(v) => Data::F32(map(v, |x| round32(x, e, m))?),
        Data::F64(v) => Data::F64(map(v, |x| round64(x, e, m))?),
        _ => return Err(Fail::Internal("reduce-precision of a non-float".into())),
    }))
}

// Compiling: the shape checks and attribute decoding for this family.

/// Shape checks for a unary elementwise op: defined for the operand type, same dimensions.
pub(crate) fn compile_unary(cx: &OpContext<'_>, op: Unary) -> Result<Op, Fail> {
    let (shape, operands) = (cx.shape, cx.operands);
    let opcode = cx.ins.opcode.as_str();
    cx.arity(operands, 1)?;
    let a = operands[0].array()?;
    let out_ty = if op == Unary::IsFinite { ElementType::Pred } else { a.ty };
    if !op.accepts(a.ty) {
        return Err(invalid(format!("{opcode} is not defined for {}", a.ty)));
    }
    cx.expect(shape, &Shape::Array(ArrayShape { ty: out_ty, dims: a.dims.clone(), layout: None }))?;
    Ok(Op::Unary(op))
}

/// Shape checks for a binary elementwise op: two operands of one shape the op is defined for.
pub(crate) fn compile_binary(cx: &OpContext<'_>, op: Binary) -> Result<Op, Fail> {
    let (shape, operands) = (cx.shape, cx.operands);
    let opcode = cx.ins.opcode.as_str();
    cx.arity(operands, 2)?;
    let (a, b) = (operands[0].array()?, operands[1].array()?);
    if !a.same(b) {
        return Err(invalid(format!(
            "operands differ: {} and {}",
            operands[0].describe(),
            operands[1].describe()
        )));
    }
    if !op.accepts(a.ty) {
        return Err(invalid(format!("{opcode} is not defined for {}", a.ty)));
    }
    cx.expect(shape, operands[0])?;
    Ok(Op::Binary(op))
}

/// Shape checks and attribute decoding for the other elementwise ops: convert, bitcast-convert, select, clamp, compare, map and reduce-precision.
pub(crate) fn compile_elementwise(cx: &OpContext<'_>) -> Result<Op, Fail> {
    let (ins, shape, operands) = (cx.ins, cx.shape, cx.operands);
    let out = || shape.array();
    Ok(match cx.ins.opcode.as_str() {
        "convert" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let o = out()?;
            if a.dims != o.dims {
                return Err(invalid(format!(
                    "convert of {} to {} changes dimensions",
                    operands[0].describe(),
                    shape.describe()
                )));
            }
            Op::Convert(o.ty)
        }
        "bitcast-convert" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            let o = out()?;
            let (from, to) = (a.ty.item_size(), o.ty.item_size());
            let ok = if from == to {
                a.dims == o.dims
            } else if from > to {
                o.dims.len() == a.dims.len() + 1
                    && o.dims[..a.dims.len()] == a.dims[..]
                    && o.dims[a.dims.len()] == from / to
            } else {
                a.dims.len() == o.dims.len() + 1
                    && a.dims[..o.dims.len()] == o.dims[..]
                    && a.dims[o.dims.len()] == to / from
            };
            if !ok || a.ty == ElementType::Pred || o.ty == ElementType::Pred {
                return Err(invalid(format!(
                    "bitcast-convert of {} to {} does not keep the bits",
                    operands[0].describe(),
                    shape.describe()
                )));
            }
            Op::BitcastConvert
        }
        "select" => {
            cx.arity(operands, 3)?;
            let p = operands[0].array()?;
            let t = operands[1].array()?;
            if !operands[1].same(operands[2])
                || p.ty != ElementType::Pred
                || !(p.dims.is_empty() || p.dims == t.dims)
            {
                return Err(invalid(format!(
                    "select({}, {}, {}) does not fit",
                    operands[0].describe(),
                    operands[1].describe(),
                    operands[2].describe()
                )));
            }
            cx.expect(shape, operands[1])?;
            Op::Select
        }
        "clamp" => {
            cx.arity(operands, 3)?;
            let x = operands[1].array()?;
            for bound in [operands[0], operands[2]] {
                let b = bound.array()?;
                if b.ty != x.ty || !(b.dims.is_empty() || b.dims == x.dims) {
                    return Err(invalid(format!(
                        "clamp bound {} does not fit {}",
                        bound.describe(),
                        operands[1].describe()
                    )));
                }
            }
            if x.ty == ElementType::Pred {
                return Err(invalid("clamp is not defined for pred"));
            }
            cx.expect(shape, operands[1])?;
            Op::Clamp
        }
        "compare" => {
            cx.arity(operands, 2)?;
            let a = operands[0].array()?;
            if !operands[0].same(operands[1]) {
                return Err(invalid(format!(
                    "operands differ: {} and {}",
                    operands[0].describe(),
                    operands[1].describe()
                )));
            }
            let direction = Direction::parse(&ins.comparison_direction).ok_or_else(|| {
                invalid(format!(
                    "comparison_direction {:?} is not EQ/NE/LT/LE/GT/GE",
                    ins.comparison_direction
                ))
            })?;
            let total_order = ins.comparison_type.eq_ignore_ascii_case("TOTALORDER");
            cx.expect(
                shape,
                &Shape::Array(ArrayShape {
                    ty: ElementType::Pred,
                    dims: a.dims.clone(),
                    layout: None,
                }),
            )?;
            Op::Compare { direction, total_order }
        }
        "map" => {
            let computation = cx.callee(ins, 0)?;
            let first = operands.first().ok_or_else(|| invalid("map needs operands"))?.array()?;
            let mut types = Vec::new();
            for s in operands {
                let a = s.array()?;
                if a.dims != first.dims {
                    return Err(invalid("map operands differ in dimensions"));
                }
                types.push(a.ty);
            }
            cx.scalar_computation(computation, operands.len(), &types)?;
            let result = cx.comps[computation].result_shape().array()?;
            cx.expect(
                shape,
                &Shape::Array(ArrayShape { ty: result.ty, dims: first.dims.clone(), layout: None }),
            )?;
            Op::Map(computation)
        }
        "reduce-precision" => {
            cx.arity(operands, 1)?;
            let a = operands[0].array()?;
            if !a.ty.is_float() || ins.exponent_bits < 1 || ins.mantissa_bits < 0 {
                return Err(invalid(format!(
                    "reduce-precision of {} to e{}m{}",
                    operands[0].describe(),
                    ins.exponent_bits,
                    ins.mantissa_bits
                )));
            }
            cx.expect(shape, operands[0])?;
            Op::ReducePrecision {
                exponent_bits: ins.exponent_bits as u32,
                mantissa_bits: ins.mantissa_bits as u32,
            }
        }
        other => {
            return Err(Fail::Internal(format!("opcode {other} is not compile_elementwise's")));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_division_edge_cases_follow_xla() {
        assert_eq!(i32::binary(Binary::Div, 7, 0), -1);
        assert_eq!(u8::binary(Binary::Div, 7, 0), 255);
        assert_eq!(i32::binary(Binary::Div, i32::MIN, -1), i32::MIN);
        assert_eq!(i32::binary(Binary::Rem, 7, 0), 7);
        assert_eq!(i32::binary(Binary::Rem, i32::MIN, -1), 0);
        assert_eq!(i32::binary(Binary::Div, -7, 2), -3);
        assert_eq!(i32::binary(Binary::Rem, -7, 2), -1);
    }

    #[test]
    fn shifts_past_the_width_saturate() {
        assert_eq!(i8::binary(Binary::Shl, 1, 8), 0);
        assert_eq!(i8::binary(Binary::ShrArithmetic, -128, 9), -1);
        assert_eq!(i8::binary(Binary::ShrArithmetic, 64, 9), 0);
        assert_eq!(i8::binary(Binary::ShrLogical, -128, 7), 1);
        assert_eq!(i8::binary(Binary::ShrLogical, -128, -1), 0);
        assert_eq!(u8::binary(Binary::ShrArithmetic, 0x80, 1), 0xc0);
    }

    #[test]
    fn integer_power_with_negative_exponent() {
        assert_eq!(i32::binary(Binary::Pow, 1, -3), 1);
        assert_eq!(i32::binary(Binary::Pow, 2, -3), 0);
        assert_eq!(i32::binary(Binary::Pow, -1, -3), 0);
        assert_eq!(i32::binary(Binary::Pow, 3, 4), 81);
    }

    #[test]
    fn float_max_min_propagate_nan() {
        assert!(f32::binary(Binary::Max, f32::NAN, 1.0).is_nan());
        assert!(f32::binary(Binary::Min, 1.0, f32::NAN).is_nan());
        assert_eq!(f32::binary(Binary::Max, 1.0, 2.0), 2.0);
    }

    /// Max and min by hand, one element at a time and in the vectorised slice loop (the pairs
    /// repeated past several vectors): NaN on either side wins, -0 orders below +0, and
    /// subnormals and infinities compare as numbers.
    #[test]
    fn float_max_min_by_hand_in_scalars_and_slices() {
        let tiny = f32::from_bits(1);
        // (x, y, max, min)
        let cases = [
            (-0.0, 0.0, 0.0, -0.0),
            (0.0, -0.0, 0.0, -0.0),
            (-0.0, -0.0, -0.0, -0.0),
            (1.0, f32::NAN, f32::NAN, f32::NAN),
            (f32::NAN, 1.0, f32::NAN, f32::NAN),
            (f32::NEG_INFINITY, 3.0, 3.0, f32::NEG_INFINITY),
            (2.0, -5.0, 2.0, -5.0),
            (tiny, 0.0, tiny, 0.0),
            (-tiny, -0.0, -0.0, -tiny),
            (f32::INFINITY, f32::MAX, f32::INFINITY, f32::MAX),
        ];
        let bits = |v: f32| if v.is_nan() { u32::MAX } else { v.to_bits() };
        for &(x, y, max, min) in &cases {
            assert_eq!(bits(f32::binary(Binary::Max, x, y)), bits(max), "max({x}, {y})");
            assert_eq!(bits(f32::binary(Binary::Min, x, y)), bits(min), "min({x}, {y})");
        }
        let repeated = |pick: fn(&(f32, f32, f32, f32)) -> f32| -> Vec<f32> {
            cases.iter().cycle().take(cases.len() * 7).map(pick).collect()
        };
        let (xs, ys) = (repeated(|c| c.0), repeated(|c| c.1));
        for (op, want) in [(Binary::Max, repeated(|c| c.2)), (Binary::Min, repeated(|c| c.3))] {
            let mut out = vec![0.0; xs.len()];
            super::super::math::binary_slice(
                op,
                (&xs, &ys),
                &mut out,
                false,
                super::super::simd::arch(),
            );
            let got: Vec<u32> = out.iter().map(|&v| bits(v)).collect();
            assert_eq!(got, want.iter().map(|&v| bits(v)).collect::<Vec<_>>(), "{op:?} slice");
        }
    }

    #[test]
    fn erf_known_values() {
        // erf(0.5) = 0.5204998778130465, erf(1) = 0.8427007929497149, erf(3) = 0.9999779095030014.
        assert_eq!(erf(0.0), 0.0);
        for (x, want) in [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (3.0, 0.999_977_909_503_001_4),
            (-2.0, -0.995_322_265_018_952_7),
        ] {
            assert!((erf(x) - want).abs() < 1e-14, "erf({x}) = {} want {want}", erf(x));
        }
    }

    #[test]
    fn total_order_key_orders_signed_zero_and_nan() {
        let values = [-f32::NAN, f32::NEG_INFINITY, -1.0, -0.0, 0.0, 1.0, f32::INFINITY, f32::NAN];
        for pair in values.windows(2) {
            assert!(pair[0].total_key() < pair[1].total_key(), "{pair:?}");
        }
    }

    #[test]
    fn float_to_int_conversion_saturates() {
        let data = Data::F32(vec![f32::NAN, 1e10, -1e10, -1.7, 2.5]);
        assert_eq!(convert(&data, ElementType::S8).ok(), Some(Data::S8(vec![0, 127, -128, -1, 2])));
        assert_eq!(convert(&data, ElementType::U8).ok(), Some(Data::U8(vec![0, 255, 0, 0, 2])));
        assert_eq!(
            convert(&data, ElementType::Pred).ok(),
            Some(Data::Pred(vec![true, true, true, true, true]))
        );
    }
}

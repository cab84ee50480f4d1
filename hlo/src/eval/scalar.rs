//! One element's arithmetic: the elementwise opcodes (`Unary`, `Binary`, `Direction`) and
//! what each computes on one value of each element type (`Float` for f32 and f64, `Int` for the
//! integers), written once and instantiated per type. The plan names these opcodes, and every
//! kernel that computes elementwise (the elementwise kernels, fused groups, reducers, the f32
//! slice loops) computes through these traits, so an opcode means the same everywhere.
//!
//! The transcendental functions of f32 are `math`'s vectorisable ones; f64 uses libm.

use crate::dtype::ElementType;

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
            $($crate::eval::scalar::Binary::$v => {
                const $b: $crate::eval::scalar::Binary =
                    $crate::eval::scalar::Binary::$v;
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

    /// The direction applied to an ordering; `None` (a NaN operand) satisfies only `NE`.
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

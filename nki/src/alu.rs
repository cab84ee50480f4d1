//! The arithmetic of one element: ALU operators and activation functions, in float32.
//!
//! This module is a leaf: it knows nothing of tensors or instructions. Formulas whose NKI pages
//! give only a name (the activation functions) follow the standard definitions written in
//! docs/nki.md, *Activation functions*.

use serde::Deserialize;

/// The names of every ALU operator the executor models, in the document's spelling.
pub const ALU_OP_NAMES: &[&str] = &[
    "add",
    "subtract",
    "multiply",
    "divide",
    "maximum",
    "minimum",
    "abs_max",
    "abs_min",
    "power",
    "mod",
    "fmod",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "left_shift",
    "right_shift",
    "arith_shift_right",
    "bypass",
];

/// A binary ALU operator (docs/nki-program.md, *ALU ops*).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AluOp {
    /// `a + b`
    Add,
    /// `a - b`
    Subtract,
    /// `a * b`
    Multiply,
    /// `a / b`
    Divide,
    /// The larger of `a` and `b` (a NaN operand gives the other).
    Maximum,
    /// The smaller of `a` and `b` (a NaN operand gives the other).
    Minimum,
    /// The larger magnitude: `max(|a|, |b|)`.
    AbsMax,
    /// The smaller magnitude: `min(|a|, |b|)`.
    AbsMin,
    /// `a ** b`
    Power,
    /// The remainder with the divisor's sign (Python's `%`).
    Mod,
    /// The remainder with the dividend's sign (C's `fmod`).
    Fmod,
    /// `a == b` as 1.0 or 0.0.
    Equal,
    /// `a != b` as 1.0 or 0.0.
    NotEqual,
    /// `a < b` as 1.0 or 0.0.
    Less,
    /// `a <= b` as 1.0 or 0.0.
    LessEqual,
    /// `a > b` as 1.0 or 0.0.
    Greater,
    /// `a >= b` as 1.0 or 0.0.
    GreaterEqual,
    /// Both nonzero, as 1.0 or 0.0.
    LogicalAnd,
    /// Either nonzero, as 1.0 or 0.0.
    LogicalOr,
    /// Exactly one nonzero, as 1.0 or 0.0.
    LogicalXor,
    /// Bitwise and of the 32-bit integers.
    BitwiseAnd,
    /// Bitwise or of the 32-bit integers.
    BitwiseOr,
    /// Bitwise xor of the 32-bit integers.
    BitwiseXor,
    /// `a << b` on 32 bits (0 for shifts of 32 or more).
    LeftShift,
    /// Logical `a >> b` on 32 bits (0 for shifts of 32 or more).
    RightShift,
    /// Arithmetic `a >> b` on 32 bits (the sign fills shifts of 32 or more).
    ArithShiftRight,
    /// `a`, the left operand.
    Bypass,
}

/// Converts an operand of a bitwise operator to 32 bits: round half to even, saturate to
/// `int32` or `uint32` (NaN to 0), then reinterpret as `u32`.
fn to_bits(value: f32, signed: bool) -> u32 {
    if signed { value.round_ties_even() as i32 as u32 } else { value.round_ties_even() as u32 }
}

fn from_bits(bits: u32, signed: bool) -> f32 {
    if signed { bits as i32 as f32 } else { bits as f32 }
}

fn truth(condition: bool) -> f32 {
    if condition { 1.0 } else { 0.0 }
}

impl AluOp {
    /// The operator's name in the document.
    pub fn name(self) -> &'static str {
        match self {
            AluOp::Add => "add",
            AluOp::Subtract => "subtract",
            AluOp::Multiply => "multiply",
            AluOp::Divide => "divide",
            AluOp::Maximum => "maximum",
            AluOp::Minimum => "minimum",
            AluOp::AbsMax => "abs_max",
            AluOp::AbsMin => "abs_min",
            AluOp::Power => "power",
            AluOp::Mod => "mod",
            AluOp::Fmod => "fmod",
            AluOp::Equal => "equal",
            AluOp::NotEqual => "not_equal",
            AluOp::Less => "less",
            AluOp::LessEqual => "less_equal",
            AluOp::Greater => "greater",
            AluOp::GreaterEqual => "greater_equal",
            AluOp::LogicalAnd => "logical_and",
            AluOp::LogicalOr => "logical_or",
            AluOp::LogicalXor => "logical_xor",
            AluOp::BitwiseAnd => "bitwise_and",
            AluOp::BitwiseOr => "bitwise_or",
            AluOp::BitwiseXor => "bitwise_xor",
            AluOp::LeftShift => "left_shift",
            AluOp::RightShift => "right_shift",
            AluOp::ArithShiftRight => "arith_shift_right",
            AluOp::Bypass => "bypass",
        }
    }

    /// The value an accumulator register is reset to for this fold: 0 for `add` and
    /// `subtract`, 1 for `multiply`, -inf for `maximum`, +inf for `minimum` (the
    /// `tensor_scalar_cumulative` and `tensor_scalar_reduce` pages); `None` for an operator
    /// the accumulating instructions do not fold with.
    pub fn fold_identity(self) -> Option<f32> {
        match self {
            AluOp::Add | AluOp::Subtract => Some(0.0),
            AluOp::Multiply => Some(1.0),
            AluOp::Maximum => Some(f32::NEG_INFINITY),
            AluOp::Minimum => Some(f32::INFINITY),
            _ => None,
        }
    }

    /// `a[i] = a[i] op b[i]` (`b[i] op a[i]` when `reverse`) for each element: [`AluOp::apply`]
    /// with the operator chosen once, outside the loop, so the common ones vectorise.
    pub fn apply_slices(self, a: &mut [f32], b: &[f32], reverse: bool, signed: bool) {
        macro_rules! each {
            (|$x:ident, $y:ident| $body:expr) => {
                if reverse {
                    a.iter_mut().zip(b).for_each(|(x, &y)| {
                        let ($x, $y) = (y, *x);
                        *x = $body;
                    })
                } else {
                    a.iter_mut().zip(b).for_each(|(x, &y)| {
                        let ($x, $y) = (*x, y);
                        *x = $body;
                    })
                }
            };
        }
        match self {
            AluOp::Add => each!(|x, y| x + y),
            AluOp::Subtract => each!(|x, y| x - y),
            AluOp::Multiply => each!(|x, y| x * y),
            AluOp::Divide => each!(|x, y| x / y),
            AluOp::Maximum => each!(|x, y| x.max(y)),
            AluOp::Minimum => each!(|x, y| x.min(y)),
            _ => each!(|x, y| self.apply(x, y, signed)),
        }
    }

    /// `a op b`; `signed` says whether bitwise operators act on `int32` (else `uint32`).
    pub fn apply(self, a: f32, b: f32, signed: bool) -> f32 {
        match self {
            AluOp::Add => a + b,
            AluOp::Subtract => a - b,
            AluOp::Multiply => a * b,
            AluOp::Divide => a / b,
            AluOp::Maximum => a.max(b),
            AluOp::Minimum => a.min(b),
            AluOp::AbsMax => a.abs().max(b.abs()),
            AluOp::AbsMin => a.abs().min(b.abs()),
            AluOp::Power => a.powf(b),
            AluOp::Mod => {
                let r = a % b;
                if r != 0.0 && (r < 0.0) != (b < 0.0) { r + b } else { r }
            }
            AluOp::Fmod => a % b,
            AluOp::Equal => truth(a == b),
            AluOp::NotEqual => truth(a != b),
            AluOp::Less => truth(a < b),
            AluOp::LessEqual => truth(a <= b),
            AluOp::Greater => truth(a > b),
            AluOp::GreaterEqual => truth(a >= b),
            AluOp::LogicalAnd => truth(a != 0.0 && b != 0.0),
            AluOp::LogicalOr => truth(a != 0.0 || b != 0.0),
            AluOp::LogicalXor => truth((a != 0.0) != (b != 0.0)),
            AluOp::BitwiseAnd => from_bits(to_bits(a, signed) & to_bits(b, signed), signed),
            AluOp::BitwiseOr => from_bits(to_bits(a, signed) | to_bits(b, signed), signed),
            AluOp::BitwiseXor => from_bits(to_bits(a, signed) ^ to_bits(b, signed), signed),
            AluOp::LeftShift => {
                let shift = to_bits(b, true) as i32;
                let bits = to_bits(a, signed);
                from_bits(if (0..32).contains(&shift) { bits << shift } else { 0 }, signed)
            }
            AluOp::RightShift => {
                let shift = to_bits(b, true) as i32;
                let bits = to_bits(a, signed);
                from_bits(if (0..32).contains(&shift) { bits >> shift } else { 0 }, signed)
            }
            AluOp::ArithShiftRight => {
                let shift = (to_bits(b, true) as i32).clamp(0, 31);
                let bits = to_bits(a, signed) as i32;
                from_bits((bits >> shift) as u32, signed)
            }
            AluOp::Bypass => a,
        }
    }
}

/// The names of every activation function the executor models, in the document's spelling.
pub const ACT_FUNC_NAMES: &[&str] = &[
    "copy",
    "identity",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "square",
    "abs",
    "negative",
    "sign",
    "tanh",
    "sigmoid",
    "relu",
    "gelu",
    "gelu_apprx_tanh",
    "gelu_apprx_sigmoid",
    "gelu_dx",
    "silu",
    "silu_dx",
    "softplus",
    "mish",
    "erf",
    "erf_dx",
    "sin",
    "cos",
    "tan",
    "arctan",
    "ceil",
    "floor",
    "trunc",
    "invert",
    "logical_not",
];

/// An activation function (docs/nki-program.md, *Act*; formulas in docs/nki.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActFunc {
    /// `x`
    Copy,
    /// `x`
    Identity,
    /// `e^x`
    Exp,
    /// `ln x`
    Log,
    /// `√x`
    Sqrt,
    /// `1/√x`
    Rsqrt,
    /// `1/x`
    Reciprocal,
    /// `x²`
    Square,
    /// `|x|`
    Abs,
    /// `-x`
    Negative,
    /// -1, 0 or 1 (NaN stays NaN).
    Sign,
    /// `tanh x`
    Tanh,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// `max(x, 0)`
    Relu,
    /// `x Φ(x)`, `Φ` the standard normal distribution function.
    Gelu,
    /// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`
    GeluApprxTanh,
    /// `x σ(1.702 x)`
    GeluApprxSigmoid,
    /// `Φ(x) + x φ(x)`, the derivative of `gelu`.
    GeluDx,
    /// `x σ(x)`
    Silu,
    /// `σ(x) (1 + x (1 - σ(x)))`, the derivative of `silu`.
    SiluDx,
    /// `ln(1 + e^x)`
    Softplus,
    /// `x tanh(softplus(x))`
    Mish,
    /// The error function.
    Erf,
    /// `2/√π e^(-x²)`, the derivative of `erf`.
    ErfDx,
    /// `sin x`
    Sin,
    /// `cos x`
    Cos,
    /// `tan x`
    Tan,
    /// `arctan x`
    Arctan,
    /// Rounds up.
    Ceil,
    /// Rounds down.
    Floor,
    /// Rounds toward zero.
    Trunc,
    /// Bitwise not of the 32-bit integer.
    Invert,
    /// 1.0 where `x` is 0, else 0.0.
    LogicalNot,
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// The error function in float64: its Maclaurin series below |x| = 4 (past that erf(x) is ±1 in
/// float32, since erfc(4) ≈ 1.5e-8 is below half an ulp of 1.0).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() >= 4.0 {
        return x.signum();
    }
    // erf(x) = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)); the terms fall below 1e-17 of the sum
    // within 80 steps for |x| < 4.
    let x2 = x * x;
    let mut power = x; // (-1)^n x^(2n+1) / n!
    let mut sum = x;
    for n in 1..200u32 {
        power *= -x2 / f64::from(n);
        let term = power / f64::from(2 * n + 1);
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    sum * std::f64::consts::FRAC_2_SQRT_PI
}

impl ActFunc {
    /// `func(x)`; `signed` says whether `invert` acts on `int32` (else `uint32`).
    pub fn apply(self, x: f32, signed: bool) -> f32 {
        use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI};
        match self {
            ActFunc::Copy | ActFunc::Identity => x,
            ActFunc::Exp => x.exp(),
            ActFunc::Log => x.ln(),
            ActFunc::Sqrt => x.sqrt(),
            ActFunc::Rsqrt => 1.0 / x.sqrt(),
            ActFunc::Reciprocal => 1.0 / x,
            ActFunc::Square => x * x,
            ActFunc::Abs => x.abs(),
            ActFunc::Negative => -x,
            ActFunc::Sign => {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    x
                }
            }
            ActFunc::Tanh => x.tanh(),
            ActFunc::Sigmoid => sigmoid(x),
            ActFunc::Relu => x.max(0.0),
            ActFunc::Gelu => {
                let x = f64::from(x);
                (0.5 * x * (1.0 + erf(x * FRAC_1_SQRT_2))) as f32
            }
            ActFunc::GeluApprxTanh => {
                let x = f64::from(x);
                let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                (0.5 * x * (1.0 + inner.tanh())) as f32
            }
            ActFunc::GeluApprxSigmoid => x * sigmoid(1.702 * x),
            ActFunc::GeluDx => {
                let x = f64::from(x);
                let cdf = 0.5 * (1.0 + erf(x * FRAC_1_SQRT_2));
                let pdf = (-0.5 * x * x).exp() * FRAC_2_SQRT_PI * FRAC_1_SQRT_2 * 0.5;
                (cdf + x * pdf) as f32
            }
            ActFunc::Silu => x * sigmoid(x),
            ActFunc::SiluDx => {
                let s = sigmoid(x);
                s * (1.0 + x * (1.0 - s))
            }
            ActFunc::Softplus => softplus(x),
            ActFunc::Mish => x * softplus(x).tanh(),
            ActFunc::Erf => erf(f64::from(x)) as f32,
            ActFunc::ErfDx => {
                let x = f64::from(x);
                (FRAC_2_SQRT_PI * (-x * x).exp()) as f32
            }
            ActFunc::Sin => x.sin(),
            ActFunc::Cos => x.cos(),
            ActFunc::Tan => x.tan(),
            ActFunc::Arctan => x.atan(),
            ActFunc::Ceil => x.ceil(),
            ActFunc::Floor => x.floor(),
            ActFunc::Trunc => x.trunc(),
            ActFunc::Invert => from_bits(!to_bits(x, signed), signed),
            ActFunc::LogicalNot => truth(x == 0.0),
        }
    }
}

/// `ln(1 + e^x)` without overflow for large `x`.
fn softplus(x: f32) -> f32 {
    if x > 20.0 { x } else { x.exp().ln_1p() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_slices_is_apply_element_by_element() {
        // 6 - 2 = 4, 2 - 6 = -4 reversed; 1 / 4 = 0.25, 4 / 1 = 4 reversed.
        let mut a = [6.0, 1.0];
        AluOp::Subtract.apply_slices(&mut a, &[2.0, 0.5], false, true);
        assert_eq!(a, [4.0, 0.5]);
        let mut a = [6.0, 1.0];
        AluOp::Subtract.apply_slices(&mut a, &[2.0, 0.5], true, true);
        assert_eq!(a, [-4.0, -0.5]);
        let mut a = [1.0, 12.0];
        AluOp::Divide.apply_slices(&mut a, &[4.0, 10.0], true, true);
        assert_eq!(a, [4.0, 10.0 / 12.0]);
        let mut a = [12.0, -16.0];
        AluOp::ArithShiftRight.apply_slices(&mut a, &[2.0, 2.0], false, true);
        assert_eq!(a, [3.0, -4.0]);
    }

    #[test]
    fn every_alu_op_name_reads_back_as_itself() {
        for &name in ALU_OP_NAMES {
            let op: AluOp = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(op.name(), name);
        }
    }

    #[test]
    fn mod_takes_the_divisor_sign_and_fmod_the_dividend_sign() {
        // -7 = -3 * 3 + 2 (floor division) and -7 = -2 * 3 - 1 (truncating division).
        assert_eq!(AluOp::Mod.apply(-7.0, 3.0, true), 2.0);
        assert_eq!(AluOp::Fmod.apply(-7.0, 3.0, true), -1.0);
        assert_eq!(AluOp::Mod.apply(7.0, -3.0, true), -2.0);
    }

    #[test]
    fn shifts_and_bitwise_ops_act_on_32_bits() {
        assert_eq!(AluOp::LeftShift.apply(3.0, 4.0, true), 48.0);
        // -16 is 0xfffffff0; logical >> 28 is 0xf; arithmetic >> 2 is -4.
        assert_eq!(AluOp::RightShift.apply(-16.0, 28.0, true), 15.0);
        assert_eq!(AluOp::ArithShiftRight.apply(-16.0, 2.0, true), -4.0);
        assert_eq!(AluOp::BitwiseAnd.apply(12.0, 10.0, false), 8.0);
        assert_eq!(AluOp::BitwiseXor.apply(12.0, 10.0, false), 6.0);
        assert_eq!(ActFunc::Invert.apply(0.0, true), -1.0);
        assert_eq!(ActFunc::Invert.apply(0.0, false), 4294967295.0);
    }

    #[test]
    fn erf_and_gelu_match_tabulated_values() {
        // erf(0.5) = 0.5204998778130465, erf(1) = 0.8427007929497149 (A&S table 7.1).
        assert!((erf(0.5) - 0.520_499_877_813_046_5).abs() < 1e-15);
        assert!((erf(1.0) - 0.842_700_792_949_714_9).abs() < 1e-15);
        assert!((erf(-2.0) + 0.995_322_265_018_952_7).abs() < 1e-15);
        // gelu(1) = 0.5 * (1 + erf(1/√2)) = 0.5 * (1 + 0.6826894921370859) = 0.8413447460685429.
        assert!((f64::from(ActFunc::Gelu.apply(1.0, true)) - 0.841_344_746_068_542_9).abs() < 1e-6);
        // The tanh form at 1: 0.5 * (1 + tanh(0.7978845608 * 1.044715)) = 0.8411919906082768.
        assert!((ActFunc::GeluApprxTanh.apply(1.0, true) - 0.841_192).abs() < 1e-6);
    }
}

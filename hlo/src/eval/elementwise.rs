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
//! - What one element computes is `scalar`'s (`Float`, `Int`), shared with every other kernel.
//!   The f32 slice loops here (`unary_slice`, `binary_slice`, `compare_slice`) run the f32
//!   unary kernel and the fused groups' nodes, compiled for the CPU's instruction set by `pulp`.

use super::error::Fail;
use super::math::{
    bf16_rounded, cos_reduced, erf, exp, expm1, ln, logistic, sin_reduced, tanh, trig_slice,
};
use super::op_context::{OpContext, invalid};
use super::plan::Op;
use super::scalar::{Binary, Direction, Float, Int, Unary, with_binary, with_direction};
use super::shape::{ArrayShape, Shape};
use super::tensor::{Data, try_alloc};
use crate::dtype::{ElementType, SmallFloat};

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
    unary_slice(op, v, &mut out, false, super::simd::arch());
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

// ---------------------------------------------------------------------------------------------
// Slice kernels.

/// `out[i] = op(x[i])` in f32, compiled for the CPU's instruction set, each result rounded to
/// bf16 (kept in f32) in the same pass when `bf16` (a fused bf16 group's node, which made a
/// second pass over its chunk to round it).
pub(crate) fn unary_slice(op: Unary, x: &[f32], out: &mut [f32], bf16: bool, arch: pulp::Arch) {
    arch.dispatch(UnaryLoop { op, x, out, bf16 });
}

/// `v` rounded to bf16 when `BF16`, else `v`.
#[inline(always)]
fn rounded<const BF16: bool>(v: f32) -> f32 {
    if BF16 { bf16_rounded(v) } else { v }
}

/// The loop of [`unary_slice`], as a `pulp::WithSimd` so that it is inlined into the function
/// pulp compiles with the CPU's features: a closure holding the larger arms (tanh, erf) was
/// left out of line by the inliner, and so ran with baseline SSE2 only.
struct UnaryLoop<'a> {
    op: Unary,
    x: &'a [f32],
    out: &'a mut [f32],
    bf16: bool,
}

impl pulp::WithSimd for UnaryLoop<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let UnaryLoop { op, x, out, bf16 } = self;
        if bf16 { unary_loop::<true>(op, x, out) } else { unary_loop::<false>(op, x, out) }
    }
}

/// The body of [`UnaryLoop`], rounding each result to bf16 when `BF16`.
#[inline(always)]
fn unary_loop<const BF16: bool>(op: Unary, x: &[f32], out: &mut [f32]) {
    // The transcendental arms call the `#[inline(always)]` functions `f32::unary` calls,
    // so their bodies are inlined here too; the results are the same bits.
    macro_rules! map {
        ($f:expr) => {
            for (o, &v) in out.iter_mut().zip(x) {
                *o = rounded::<BF16>($f(v));
            }
        };
    }
    macro_rules! arms {
            ($($u:ident),*) => {
                match op {
                    Unary::Exp => map!(exp),
                    Unary::Expm1 => map!(expm1),
                    Unary::Log => map!(ln),
                    Unary::Tanh => map!(tanh),
                    Unary::Logistic => map!(logistic),
                    Unary::Erf => map!(erf),
                    Unary::Sin => trig_slice::<BF16>(x, out, sin_reduced, f32::sin),
                    Unary::Cos => trig_slice::<BF16>(x, out, cos_reduced, f32::cos),
                    $(Unary::$u => map!(|v| f32::unary(Unary::$u, v)),)*
                }
            };
        }
    arms!(
        Abs, Negate, Sign, Log1p, Sqrt, Rsqrt, Cbrt, Tan, Floor, Ceil, RoundEven, RoundAfz,
        IsFinite, Not, Popcnt, Clz
    )
}

/// `out[i] = op(a[i], b[i])` in f32, compiled for the CPU's instruction set, each result
/// rounded to bf16 (kept in f32) in the same pass when `bf16` (a fused bf16 group's node, which
/// made a second pass over its chunk to round it). An argument of one element stands for that
/// element at every index (a fused group's scalar constant), so it is neither copied out to the
/// length of `out` nor read from memory for each element.
pub(crate) fn binary_slice(
    op: Binary,
    (a, b): (&[f32], &[f32]),
    out: &mut [f32],
    bf16: bool,
    arch: pulp::Arch,
) {
    arch.dispatch(BinaryLoop { op, a, b, out, bf16 });
}

/// `compare` of f32 values, `out[i]` 1.0 where `a[i] direction b[i]` holds and 0.0 elsewhere (a
/// fused group's predicate), compiled for the CPU's instruction set. An argument of one element
/// stands for that element at every index, as in [`binary_slice`]. The IEEE order: with a NaN
/// only `NE` holds.
pub(crate) fn compare_slice(
    direction: Direction,
    (a, b): (&[f32], &[f32]),
    out: &mut [f32],
    arch: pulp::Arch,
) {
    arch.dispatch(CompareLoop { direction, a, b, out });
}

/// The loops of [`compare_slice`], one per direction: the element loop matched the direction
/// and the ordering per element, a branch that random data mispredicts half the time.
struct CompareLoop<'a> {
    direction: Direction,
    a: &'a [f32],
    b: &'a [f32],
    out: &'a mut [f32],
}

impl pulp::WithSimd for CompareLoop<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let CompareLoop { direction, a, b, out } = self;
        let one = |holds: bool| if holds { 1.0 } else { 0.0 };
        with_direction!(direction, cmp => zip_scalars(a, b, out, |x, y| one(cmp(x, y))))
    }
}

/// The loops of [`binary_slice`], as a `pulp::WithSimd` for the reason [`UnaryLoop`] is one: as
/// a closure per opcode, `max` and `min` (whose NaN and signed-zero rules make a longer body)
/// were left out of line and ran four SSE lanes at a time; ReLU over 256 Ki elements spent a
/// third of its time there.
struct BinaryLoop<'a> {
    op: Binary,
    a: &'a [f32],
    b: &'a [f32],
    out: &'a mut [f32],
    bf16: bool,
}

impl pulp::WithSimd for BinaryLoop<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let BinaryLoop { op, a, b, out, bf16 } = self;
        if bf16 { binary_loop::<true>(op, a, b, out) } else { binary_loop::<false>(op, a, b, out) }
    }
}

/// The body of [`BinaryLoop`], rounding each result to bf16 when `BF16`.
#[inline(always)]
fn binary_loop<const BF16: bool>(op: Binary, a: &[f32], b: &[f32], out: &mut [f32]) {
    with_binary!(op, OP => zip_scalars(a, b, out, |x, y| rounded::<BF16>(f32::binary(OP, x, y))))
}

/// `out[i] = f(a[i], b[i])`, where an argument of one element stands for that element at every
/// index (read once, not from memory for each element).
#[inline(always)]
fn zip_scalars(a: &[f32], b: &[f32], out: &mut [f32], f: impl Fn(f32, f32) -> f32) {
    match (a, b) {
        (&[x], &[y]) => out.fill(f(x, y)),
        (&[x], _) => {
            for (o, &y) in out.iter_mut().zip(b) {
                *o = f(x, y);
            }
        }
        (_, &[y]) => {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = f(x, y);
            }
        }
        _ => {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = f(x, y);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::scalar::erf;

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
            binary_slice(op, (&xs, &ys), &mut out, false, super::super::simd::arch());
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

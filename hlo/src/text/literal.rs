//! Literal values: from the text's scalars into a `LiteralProto`, and back.
//!
//! The text lists elements in logical order (nested braces, last index fastest); the proto holds
//! them in the physical order of the shape's layout. Both directions go through one permutation.

use super::float::Format;
use crate::proto::{LiteralProto, PrimitiveType, ShapeProto};

/// Why a literal does not fit its shape, or has no text form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LiteralError {
    /// The layout is not a permutation of the dimensions.
    #[error("layout {{{layout}}} is not a permutation of the {rank} dimensions")]
    NotAPermutation { layout: String, rank: usize },
    /// The shape's element count does not fit memory.
    #[error("too many elements")]
    TooManyElements,
    /// A dimension is negative, or their product overflows.
    #[error("the shape has a negative or huge dimension")]
    BadDimension,
    /// The element type has no text form.
    #[error("constants of type {ty} are not supported in HLO text")]
    Unsupported { ty: &'static str },
    /// A two-byte or complex type's values are not a whole number of elements.
    #[error("the {ty} literal has an odd number of {what}")]
    OddCount { ty: &'static str, what: &'static str },
    /// The literal holds another number of elements than its shape needs.
    #[error("the {ty} literal holds {stored} elements, its shape needs {count}")]
    WrongCount { ty: &'static str, stored: usize, count: usize },
}

/// One element as written: a real scalar, or a complex `(re, im)` pair.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Elem<'a> {
    Real(&'a str),
    Complex(&'a str, &'a str),
}

/// For each logical (row-major) index, the physical index under the shape's layout; `None` when
/// the layout is absent or the default, so the orders agree.
///
/// # Errors
/// A message when the layout is not a permutation of the dimensions.
pub(crate) fn physical_order(shape: &ShapeProto) -> Result<Option<Vec<usize>>, LiteralError> {
    let Some(layout) = &shape.layout else { return Ok(None) };
    let rank = shape.dimensions.len();
    let m2m = &layout.minor_to_major;
    if m2m.is_empty() && rank == 0 {
        return Ok(None);
    }
    let mut seen = vec![false; rank];
    if m2m.len() != rank
        || !m2m.iter().all(|&d| {
            usize::try_from(d)
                .ok()
                .filter(|&d| d < rank)
                .is_some_and(|d| !std::mem::replace(&mut seen[d], true))
        })
    {
        return Err(LiteralError::NotAPermutation {
            layout: m2m.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
            rank,
        });
    }
    // Default layout: minor_to_major = rank-1, ..., 0.
    if m2m.iter().rev().enumerate().all(|(i, &d)| d as usize == i) {
        return Ok(None);
    }
    let dims: Vec<usize> = shape.dimensions.iter().map(|&d| d.max(0) as usize).collect();
    let mut stride = vec![0usize; rank];
    let mut next = 1usize;
    for &d in m2m {
        stride[d as usize] = next;
        next = next.saturating_mul(dims[d as usize]);
    }
    let count = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or(LiteralError::TooManyElements)?;
    let mut order = Vec::new();
    order.try_reserve_exact(count).map_err(|_| LiteralError::TooManyElements)?;
    let mut index = vec![0usize; rank];
    for _ in 0..count {
        order.push(index.iter().zip(&stride).map(|(i, s)| i * s).sum());
        for axis in (0..rank).rev() {
            index[axis] += 1;
            if index[axis] < dims[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    Ok(Some(order))
}

fn permute<T: Copy + Default>(logical: Vec<T>, order: &Option<Vec<usize>>) -> Vec<T> {
    match order {
        None => logical,
        Some(order) => {
            let mut physical = vec![T::default(); logical.len()];
            for (value, &p) in logical.into_iter().zip(order) {
                physical[p] = value;
            }
            physical
        }
    }
}

fn unpermute<T: Copy>(physical: &[T], order: &Option<Vec<usize>>) -> Vec<T> {
    match order {
        None => physical.to_vec(),
        Some(order) => order.iter().map(|&p| physical[p]).collect(),
    }
}

fn real<'a>(e: &Elem<'a>) -> Result<&'a str, String> {
    match e {
        Elem::Real(s) => Ok(s),
        Elem::Complex(..) => Err("expected a real number, found a complex pair".into()),
    }
}

fn parse_int<T: TryFrom<i128>>(text: &str, ty: &str) -> Result<T, String> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    let value: i128 = if let Some(hex) = digits.strip_prefix("0x") {
        i128::from_str_radix(hex, 16).ok()
    } else if let Some(hex) = digits.strip_prefix("-0x") {
        i128::from_str_radix(hex, 16).ok().map(|v| -v)
    } else {
        digits.parse().ok()
    }
    .ok_or_else(|| format!("expected an integer, found `{text}`"))?;
    T::try_from(value).map_err(|_| format!("{text} is out of range for {ty}"))
}

fn parse_float(text: &str) -> Result<f64, String> {
    text.parse::<f64>().map_err(|_| format!("expected a number, found `{text}`"))
}

fn parse_f32(text: &str) -> Result<f32, String> {
    text.parse::<f32>().map_err(|_| format!("expected a number, found `{text}`"))
}

fn parse_pred(text: &str) -> Result<bool, String> {
    match text {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(format!("expected true or false, found `{text}`")),
    }
}

/// The width and signedness of a sub-byte integer type.
fn sub_byte(ty: PrimitiveType) -> Option<(u32, bool)> {
    use PrimitiveType as T;
    Some(match ty {
        T::S1 => (1, true),
        T::S2 => (2, true),
        T::S4 => (4, true),
        T::U1 => (1, false),
        T::U2 => (2, false),
        T::U4 => (4, false),
        _ => return None,
    })
}

/// Stores `elems` (logical order) as a literal of the array shape `shape`.
///
/// # Errors
/// The index of the offending element and a message.
pub(crate) fn store(
    shape: &ShapeProto,
    elems: &[Elem<'_>],
) -> Result<LiteralProto, (usize, String)> {
    let ty = shape.element_type();
    let ty_name = super::names::type_name(ty).unwrap_or("?");
    let order = physical_order(shape).map_err(|m| (0, m.to_string()))?;
    let mut lit = LiteralProto { shape: Some(shape.clone()), ..Default::default() };
    macro_rules! each {
        ($f:expr) => {
            elems
                .iter()
                .enumerate()
                .map(|(i, e)| real(e).and_then($f).map_err(|m| (i, m)))
                .collect::<Result<Vec<_>, _>>()
        };
    }
    use PrimitiveType as T;
    match ty {
        T::Pred => lit.preds = permute(each!(parse_pred)?, &order),
        T::S8 => {
            lit.s8s = permute(each!(|t| parse_int::<i8>(t, ty_name))?, &order)
                .into_iter()
                .map(|v| v as u8)
                .collect()
        }
        T::U8 => lit.u8s = permute(each!(|t| parse_int::<u8>(t, ty_name))?, &order),
        T::S16 => {
            lit.s16s = permute(each!(|t| parse_int::<i16>(t, ty_name))?, &order)
                .into_iter()
                .flat_map(i16::to_le_bytes)
                .collect()
        }
        T::U16 => {
            lit.u16s = permute(each!(|t| parse_int::<u16>(t, ty_name))?, &order)
                .into_iter()
                .flat_map(u16::to_le_bytes)
                .collect()
        }
        T::S32 => lit.s32s = permute(each!(|t| parse_int::<i32>(t, ty_name))?, &order),
        T::S64 => lit.s64s = permute(each!(|t| parse_int::<i64>(t, ty_name))?, &order),
        T::U32 => lit.u32s = permute(each!(|t| parse_int::<u32>(t, ty_name))?, &order),
        T::U64 => lit.u64s = permute(each!(|t| parse_int::<u64>(t, ty_name))?, &order),
        T::S1 | T::S2 | T::S4 | T::U1 | T::U2 | T::U4 => {
            // One element per byte, masked to its width, as XLA stores them.
            let (bits, signed) = sub_byte(ty).expect("a sub-byte integer type");
            let (lo, hi) = if signed {
                (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
            } else {
                (0, (1i64 << bits) - 1)
            };
            let values = each!(|t| {
                let v = parse_int::<i64>(t, ty_name)?;
                if (lo..=hi).contains(&v) {
                    Ok((v as u8) & ((1u8 << bits) - 1))
                } else {
                    Err(format!("{t} is out of range for {ty_name}"))
                }
            })?;
            let values = permute(values, &order);
            match ty {
                T::S1 => lit.s1s = values,
                T::S2 => lit.s2s = values,
                T::S4 => lit.s4s = values,
                T::U1 => lit.u1s = values,
                T::U2 => lit.u2s = values,
                _ => lit.u4s = values,
            }
        }
        T::F8e8m0fnu => {
            lit.f8e8m0fnus =
                permute(each!(|t| parse_float(t).map(super::float::e8m0::encode))?, &order)
        }
        T::F32 => lit.f32s = permute(each!(parse_f32)?, &order),
        T::F64 => lit.f64s = permute(each!(parse_float)?, &order),
        T::C64 | T::C128 => {
            let pairs = elems
                .iter()
                .enumerate()
                .map(|(i, e)| match e {
                    Elem::Complex(re, im) => Ok((
                        parse_float(re).map_err(|m| (i, m))?,
                        parse_float(im).map_err(|m| (i, m))?,
                    )),
                    Elem::Real(_) => Err((
                        i,
                        "expected a complex pair (re, im), found a real number".to_string(),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let pairs = permute(pairs, &order);
            if ty == T::C64 {
                // Each part rounds to f32 on its own, as XLA's parser does.
                lit.c64s = pairs.into_iter().flat_map(|(re, im)| [re as f32, im as f32]).collect();
            } else {
                lit.c128s = pairs.into_iter().flat_map(|(re, im)| [re, im]).collect();
            }
        }
        _ => {
            let Some(format) = Format::of(ty) else {
                return Err((
                    0,
                    format!("constants of type {ty_name} are not supported in HLO text"),
                ));
            };
            let encode = |t: &str| {
                let v = parse_float(t)?;
                if v.is_nan() && !format.has_nan() {
                    return Err(format!("{ty_name} has no NaN"));
                }
                Ok(format.encode(v))
            };
            let bits = permute(each!(encode)?, &order);
            let bytes: Vec<u8> = if format.n_bytes() == 2 {
                bits.into_iter().flat_map(u16::to_le_bytes).collect()
            } else {
                bits.into_iter().map(|b| b as u8).collect()
            };
            match ty {
                T::F16 => lit.f16s = bytes,
                T::Bf16 => lit.bf16s = bytes,
                T::F8e5m2 => lit.f8e5m2s = bytes,
                T::F8e4m3 => lit.f8e4m3s = bytes,
                T::F8e3m4 => lit.f8e3m4s = bytes,
                T::F8e4m3fn => lit.f8e4m3fns = bytes,
                T::F8e4m3fnuz => lit.f8e4m3fnuzs = bytes,
                T::F8e5m2fnuz => lit.f8e5m2fnuzs = bytes,
                T::F8e4m3b11fnuz => lit.f8e4m3b11fnuzs = bytes,
                T::F4e2m1fn => lit.f4e2m1fns = bytes,
                _ => unreachable!("Format::of covers exactly these types"),
            }
        }
    }
    Ok(lit)
}

/// C's `%.{precision}g`: `precision` significant digits, scientific notation (with a signed
/// exponent of at least two digits) when the exponent is below -4 or at least `precision`,
/// trailing zeros dropped. This is how XLA writes floats.
pub(crate) fn format_g(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let precision = precision.max(1);
    // Rust's `{:e}` rounds exactly, as printf does; its exponent is the one after rounding.
    let sci = format!("{:.*e}", precision - 1, v);
    let (mantissa, exponent) = sci.split_once('e').expect("`{:e}` always writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
    let trim = |digits: &str| -> String {
        if digits.contains('.') {
            digits.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            digits.to_string()
        }
    };
    if exponent < -4 || exponent >= precision as i32 {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exponent.unsigned_abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        trim(&format!("{v:.decimals$}"))
    }
}

/// An `f64` as XLA writes it: 15 significant digits when they give the value back, else 17.
pub(crate) fn format_f64(v: f64) -> String {
    let short = format_g(v, 15);
    if v.is_nan() || short.parse::<f64>().ok() == Some(v) { short } else { format_g(v, 17) }
}

/// An `f32` as XLA writes it: 6 significant digits when they give the value back, else 9.
pub(crate) fn format_f32(v: f32) -> String {
    let short = format_g(f64::from(v), 6);
    if v.is_nan() || short.parse::<f32>().ok() == Some(v) {
        short
    } else {
        format_g(f64::from(v), 9)
    }
}

/// How many elements the literal's field for `ty` holds (rounded down for byte fields), or
/// `None` for types without a text form.
fn stored_count(ty: PrimitiveType, lit: &LiteralProto) -> Option<usize> {
    use PrimitiveType as T;
    Some(match ty {
        T::Pred => lit.preds.len(),
        T::S8 => lit.s8s.len(),
        T::U8 => lit.u8s.len(),
        T::S16 => lit.s16s.len() / 2,
        T::U16 => lit.u16s.len() / 2,
        T::S32 => lit.s32s.len(),
        T::S64 => lit.s64s.len(),
        T::U32 => lit.u32s.len(),
        T::U64 => lit.u64s.len(),
        T::F32 => lit.f32s.len(),
        T::F64 => lit.f64s.len(),
        T::C64 => lit.c64s.len() / 2,
        T::C128 => lit.c128s.len() / 2,
        T::F16 => lit.f16s.len() / 2,
        T::Bf16 => lit.bf16s.len() / 2,
        T::F8e5m2 => lit.f8e5m2s.len(),
        T::F8e4m3 => lit.f8e4m3s.len(),
        T::F8e3m4 => lit.f8e3m4s.len(),
        T::F8e4m3fn => lit.f8e4m3fns.len(),
        T::F8e4m3fnuz => lit.f8e4m3fnuzs.len(),
        T::F8e5m2fnuz => lit.f8e5m2fnuzs.len(),
        T::F8e4m3b11fnuz => lit.f8e4m3b11fnuzs.len(),
        T::F4e2m1fn => lit.f4e2m1fns.len(),
        T::F8e8m0fnu => lit.f8e8m0fnus.len(),
        T::S1 => lit.s1s.len(),
        T::S2 => lit.s2s.len(),
        T::S4 => lit.s4s.len(),
        T::U1 => lit.u1s.len(),
        T::U2 => lit.u2s.len(),
        T::U4 => lit.u4s.len(),
        _ => return None,
    })
}

/// The number of elements of an array literal of `shape`, checked against the values `lit`
/// holds for the shape's element type (for two-byte and complex types, a whole number of them).
///
/// # Errors
/// A message when the count differs from the shape's, or the type has no text form.
pub(crate) fn element_count(shape: &ShapeProto, lit: &LiteralProto) -> Result<usize, LiteralError> {
    use PrimitiveType as T;
    let ty = shape.element_type();
    let ty_name = super::names::type_name(ty).unwrap_or("?");
    let count = shape
        .dimensions
        .iter()
        .try_fold(1usize, |a, &d| usize::try_from(d).ok().and_then(|d| a.checked_mul(d)))
        .ok_or(LiteralError::BadDimension)?;
    let stored = stored_count(ty, lit).ok_or(LiteralError::Unsupported { ty: ty_name })?;
    let odd = |len: usize, what: &'static str| {
        if len.is_multiple_of(2) {
            Ok(())
        } else {
            Err(LiteralError::OddCount { ty: ty_name, what })
        }
    };
    match ty {
        T::S16 => odd(lit.s16s.len(), "bytes")?,
        T::U16 => odd(lit.u16s.len(), "bytes")?,
        T::F16 => odd(lit.f16s.len(), "bytes")?,
        T::Bf16 => odd(lit.bf16s.len(), "bytes")?,
        T::C64 => odd(lit.c64s.len(), "parts")?,
        T::C128 => odd(lit.c128s.len(), "parts")?,
        _ => {}
    }
    if stored != count {
        return Err(LiteralError::WrongCount { ty: ty_name, stored, count });
    }
    Ok(count)
}

/// The elements of an array literal in logical order, as text, checked against the count the
/// shape implies.
///
/// # Errors
/// A message when the literal's values do not fit its shape or its type has no text form.
pub(crate) fn elements(
    shape: &ShapeProto,
    lit: &LiteralProto,
) -> Result<Vec<String>, LiteralError> {
    let ty = shape.element_type();
    let ty_name = super::names::type_name(ty).unwrap_or("?");
    // The stored count is checked before the layout permutation is built, so a shape claiming
    // billions of elements costs nothing when the literal does not hold them.
    let count = element_count(shape, lit)?;
    let order = physical_order(shape)?;
    let check = |n: usize| {
        if n == count {
            Ok(())
        } else {
            Err(LiteralError::WrongCount { ty: ty_name, stored: n, count })
        }
    };
    fn strings<T: Copy>(
        v: &[T],
        order: &Option<Vec<usize>>,
        f: impl Fn(T) -> String,
    ) -> Vec<String> {
        unpermute(v, order).into_iter().map(f).collect()
    }
    fn pairs<const N: usize>(bytes: &[u8]) -> Vec<[u8; N]> {
        bytes.chunks_exact(N).map(|c| c.try_into().expect("chunks_exact gives N bytes")).collect()
    }
    use PrimitiveType as T;
    Ok(match ty {
        T::Pred => {
            check(lit.preds.len())?;
            strings(&lit.preds, &order, |b| b.to_string())
        }
        T::S8 => {
            check(lit.s8s.len())?;
            strings(&lit.s8s, &order, |b| (b as i8).to_string())
        }
        T::U8 => {
            check(lit.u8s.len())?;
            strings(&lit.u8s, &order, |b| b.to_string())
        }
        T::S16 | T::U16 => {
            let bytes = if ty == T::S16 { &lit.s16s } else { &lit.u16s };
            if bytes.len() % 2 != 0 {
                return Err(LiteralError::OddCount { ty: ty_name, what: "bytes" });
            }
            let v = pairs::<2>(bytes);
            check(v.len())?;
            if ty == T::S16 {
                strings(&v, &order, |b| i16::from_le_bytes(b).to_string())
            } else {
                strings(&v, &order, |b| u16::from_le_bytes(b).to_string())
            }
        }
        T::S32 => {
            check(lit.s32s.len())?;
            strings(&lit.s32s, &order, |v| v.to_string())
        }
        T::S64 => {
            check(lit.s64s.len())?;
            strings(&lit.s64s, &order, |v| v.to_string())
        }
        T::U32 => {
            check(lit.u32s.len())?;
            strings(&lit.u32s, &order, |v| v.to_string())
        }
        T::U64 => {
            check(lit.u64s.len())?;
            strings(&lit.u64s, &order, |v| v.to_string())
        }
        T::S1 | T::S2 | T::S4 | T::U1 | T::U2 | T::U4 => {
            let (bits, signed) = sub_byte(ty).expect("a sub-byte integer type");
            let bytes = match ty {
                T::S1 => &lit.s1s,
                T::S2 => &lit.s2s,
                T::S4 => &lit.s4s,
                T::U1 => &lit.u1s,
                T::U2 => &lit.u2s,
                _ => &lit.u4s,
            };
            check(bytes.len())?;
            // Bits above the width are not part of the value; sign-extend from the width.
            let shift = 8 - bits;
            strings(bytes, &order, |b| {
                if signed {
                    (((b << shift) as i8) >> shift).to_string()
                } else {
                    (b & ((1u8 << bits) - 1)).to_string()
                }
            })
        }
        T::F8e8m0fnu => {
            check(lit.f8e8m0fnus.len())?;
            // Two significant digits tell any two powers of two apart (max_digits10 of a
            // one-bit significand).
            strings(&lit.f8e8m0fnus, &order, |b| format_g(super::float::e8m0::decode(b), 2))
        }
        T::F32 => {
            check(lit.f32s.len())?;
            strings(&lit.f32s, &order, format_f32)
        }
        T::F64 => {
            check(lit.f64s.len())?;
            strings(&lit.f64s, &order, format_f64)
        }
        T::C64 => {
            let v: Vec<(f32, f32)> = lit.c64s.chunks_exact(2).map(|c| (c[0], c[1])).collect();
            if !lit.c64s.len().is_multiple_of(2) {
                return Err(LiteralError::OddCount { ty: "c64", what: "parts" });
            }
            check(v.len())?;
            strings(&v, &order, |(re, im)| format!("({}, {})", format_f32(re), format_f32(im)))
        }
        T::C128 => {
            let v: Vec<(f64, f64)> = lit.c128s.chunks_exact(2).map(|c| (c[0], c[1])).collect();
            if !lit.c128s.len().is_multiple_of(2) {
                return Err(LiteralError::OddCount { ty: "c128", what: "parts" });
            }
            check(v.len())?;
            strings(&v, &order, |(re, im)| format!("({}, {})", format_f64(re), format_f64(im)))
        }
        _ => {
            let Some(format) = Format::of(ty) else {
                return Err(LiteralError::Unsupported { ty: ty_name });
            };
            let bytes = match ty {
                T::F16 => &lit.f16s,
                T::Bf16 => &lit.bf16s,
                T::F8e5m2 => &lit.f8e5m2s,
                T::F8e4m3 => &lit.f8e4m3s,
                T::F8e3m4 => &lit.f8e3m4s,
                T::F8e4m3fn => &lit.f8e4m3fns,
                T::F8e4m3fnuz => &lit.f8e4m3fnuzs,
                T::F8e5m2fnuz => &lit.f8e5m2fnuzs,
                T::F8e4m3b11fnuz => &lit.f8e4m3b11fnuzs,
                T::F4e2m1fn => &lit.f4e2m1fns,
                _ => unreachable!("Format::of covers exactly these types"),
            };
            let bits: Vec<u16> = if format.n_bytes() == 2 {
                if bytes.len() % 2 != 0 {
                    return Err(LiteralError::OddCount { ty: ty_name, what: "bytes" });
                }
                pairs::<2>(bytes).into_iter().map(u16::from_le_bytes).collect()
            } else {
                bytes.iter().map(|&b| u16::from(b)).collect()
            };
            check(bits.len())?;
            // As XLA: as many digits as the format needs to be read back (max_digits10).
            let digits = format.max_digits10();
            strings(&bits, &order, |b| format_g(format.decode(b), digits))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{format_f32, format_f64, format_g};

    #[test]
    fn format_g_is_printf_g() {
        // What C's printf("%.*g") writes for these (checked against glibc by hand).
        for (v, p, text) in [
            (100.0, 4, "100"),
            (1e7, 6, "1e+07"),
            (0.0001, 6, "0.0001"),
            (1.5e-5, 6, "1.5e-05"),
            (256.0, 2, "2.6e+02"),
            (123456792.0, 9, "123456792"),
            (1234.5, 6, "1234.5"),
            (9.9999, 3, "10"),
            (-0.0, 6, "-0"),
            (1e300, 15, "1e+300"),
        ] {
            assert_eq!(format_g(v, p), text, "{v} at {p}");
        }
    }

    #[test]
    fn xla_precision_steps_up_only_when_needed() {
        assert_eq!(format_f32(0.1), "0.1");
        assert_eq!(format_f32(1.0 / 3.0), "0.333333343");
        assert_eq!(format_f64(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(format_f32(f32::from_bits(0x7fc0_0000)), "nan");
        assert_eq!(format_f32(-f32::NAN), "-nan");
    }
}

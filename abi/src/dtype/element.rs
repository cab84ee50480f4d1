//! Single elements: numbers to and from the bytes of a [`ScalarType`], little-endian.
//!
//! Vectors and tools write tensor values as plain numbers; this converts them to the bytes a
//! tensor of a given type holds, and back for display. Half and bfloat16 conversions round to
//! nearest even, as hardware and torch do; they are the `half` crate's, checked here against
//! known bit patterns and exhaustively over the 65 536 patterns of each type. The float8 types
//! have no numeric conversion here (their rounding and saturation rules differ between
//! producers): give their bytes directly.

use super::error::DtypeError;
use super::scalar_type::ScalarType;

/// Appends `value` converted to `scalar_type` to `out`.
///
/// # Errors
/// [`DtypeError::NoElementConversion`] for the float8 types; [`DtypeError::ValueOutOfRange`]
/// when an integer type cannot hold `value` exactly.
pub fn encode_element(
    scalar_type: ScalarType,
    value: f64,
    out: &mut Vec<u8>,
) -> Result<(), DtypeError> {
    let integer = |min: f64, max: f64| -> Result<i128, DtypeError> {
        if value.fract() != 0.0 || !(min..=max).contains(&value) {
            return Err(DtypeError::ValueOutOfRange {
                scalar_type: scalar_type.name(),
                value: value.to_string(),
            });
        }
        Ok(value as i128)
    };
    match scalar_type {
        ScalarType::Float => out.extend((value as f32).to_le_bytes()),
        ScalarType::Double => out.extend(value.to_le_bytes()),
        ScalarType::Half => out.extend(f32_to_f16_bits(value as f32).to_le_bytes()),
        ScalarType::BFloat16 => out.extend(f32_to_bf16_bits(value as f32).to_le_bytes()),
        ScalarType::Bool => out.push(u8::from(value != 0.0)),
        ScalarType::Byte => out.push(integer(0.0, 255.0)? as u8),
        ScalarType::Char => out.extend((integer(-128.0, 127.0)? as i8).to_le_bytes()),
        ScalarType::Short => out.extend((integer(-32768.0, 32767.0)? as i16).to_le_bytes()),
        ScalarType::UInt16 => out.extend((integer(0.0, 65535.0)? as u16).to_le_bytes()),
        ScalarType::Int => out.extend((integer(-2147483648.0, 2147483647.0)? as i32).to_le_bytes()),
        ScalarType::Long => out.extend(
            (integer(-9.007_199_254_740_992e15, 9.007_199_254_740_992e15)? as i64).to_le_bytes(),
        ),
        ScalarType::Float8E4m3fn | ScalarType::Float8E5m2 => {
            return Err(DtypeError::NoElementConversion { scalar_type: scalar_type.name() });
        }
    }
    Ok(())
}

/// Reads the elements of `bytes` as `scalar_type`, or `None` for the float8 types and for a
/// length that is not a whole number of elements.
pub fn decode_elements(scalar_type: ScalarType, bytes: &[u8]) -> Option<Vec<f64>> {
    let size = scalar_type.item_size() as usize;
    if bytes.len() % size != 0 {
        return None;
    }
    bytes
        .chunks_exact(size)
        .map(|c| {
            Some(match scalar_type {
                ScalarType::Float => f64::from(f32::from_le_bytes(c.try_into().ok()?)),
                ScalarType::Double => f64::from_le_bytes(c.try_into().ok()?),
                ScalarType::Half => {
                    f64::from(f16_bits_to_f32(u16::from_le_bytes(c.try_into().ok()?)))
                }
                ScalarType::BFloat16 => {
                    f64::from(bf16_bits_to_f32(u16::from_le_bytes(c.try_into().ok()?)))
                }
                ScalarType::Bool | ScalarType::Byte => f64::from(c[0]),
                ScalarType::Char => f64::from(c[0] as i8),
                ScalarType::Short => f64::from(i16::from_le_bytes(c.try_into().ok()?)),
                ScalarType::UInt16 => f64::from(u16::from_le_bytes(c.try_into().ok()?)),
                ScalarType::Int => f64::from(i32::from_le_bytes(c.try_into().ok()?)),
                ScalarType::Long => i64::from_le_bytes(c.try_into().ok()?) as f64,
                ScalarType::Float8E4m3fn | ScalarType::Float8E5m2 => return None,
            })
        })
        .collect()
}

/// IEEE half precision bits for `value`, rounded to nearest even (the `half` crate's conversion).
pub fn f32_to_f16_bits(value: f32) -> u16 {
    half::f16::from_f32(value).to_bits()
}

/// The value of IEEE half precision bits.
pub fn f16_bits_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

/// bfloat16 bits for `value`, rounded to nearest even (NaN stays NaN).
pub fn f32_to_bf16_bits(value: f32) -> u16 {
    half::bf16::from_f32(value).to_bits()
}

/// The value of bfloat16 bits.
pub fn bf16_bits_to_f32(bits: u16) -> f32 {
    half::bf16::from_bits(bits).to_f32()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_match_known_bit_patterns() {
        for (value, bits) in [
            (0.0f32, 0x0000u16),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (0.5, 0x3800),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00),
            (f32::INFINITY, 0x7c00),
            (5.960_464_5e-8, 0x0001),
            (6.097_555e-5, 0x03ff),
            (1.000_488_3, 0x3c00),
        ] {
            assert_eq!(f32_to_f16_bits(value), bits, "{value}");
        }
        // Every non-NaN half value survives the round trip through f32 (exhaustive).
        for bits in 0..=u16::MAX {
            if f16_bits_to_f32(bits).is_nan() {
                continue;
            }
            assert_eq!(f32_to_f16_bits(f16_bits_to_f32(bits)), bits, "{bits:04x}");
        }
        assert!(f16_bits_to_f32(f32_to_f16_bits(f32::NAN)).is_nan());
        // Every finite half value is (-1)^s × 2^(e-15) × (1 + m/1024), or m × 2^-24 when e = 0.
        for bits in 0..=u16::MAX {
            let (sign, exponent, mantissa) =
                (bits >> 15, i32::from((bits >> 10) & 0x1f), bits & 0x3ff);
            if exponent == 0x1f {
                continue;
            }
            let magnitude = if exponent == 0 {
                f64::from(mantissa) * 2f64.powi(-24)
            } else {
                (1.0 + f64::from(mantissa) / 1024.0) * 2f64.powi(exponent - 15)
            };
            let value = if sign == 1 { -magnitude } else { magnitude };
            assert_eq!(f64::from(f16_bits_to_f32(bits)), value, "{bits:04x}");
        }
    }

    #[test]
    fn bfloat16_is_the_top_half_of_f32_for_every_pattern() {
        for bits in 0..=u16::MAX {
            let value = bf16_bits_to_f32(bits);
            if value.is_nan() {
                assert!(f32::from_bits(u32::from(bits) << 16).is_nan(), "{bits:04x}");
                continue;
            }
            assert_eq!(value.to_bits(), u32::from(bits) << 16, "{bits:04x}");
            assert_eq!(f32_to_bf16_bits(value), bits, "{bits:04x} round trips");
        }
    }

    #[test]
    fn bfloat16_rounds_to_nearest_even() {
        assert_eq!(f32_to_bf16_bits(1.0), 0x3f80);
        assert_eq!(f32_to_bf16_bits(-2.5), 0xc020);
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80, "tie to even");
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82, "tie to even");
        assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert!(bf16_bits_to_f32(f32_to_bf16_bits(f32::NAN)).is_nan());
    }

    #[test]
    fn integers_must_fit_exactly() {
        let mut out = Vec::new();
        encode_element(ScalarType::Char, -128.0, &mut out).unwrap();
        encode_element(ScalarType::Int, 7.0, &mut out).unwrap();
        assert_eq!(out, [0x80, 7, 0, 0, 0]);
        assert!(encode_element(ScalarType::Byte, 256.0, &mut out).is_err());
        assert!(encode_element(ScalarType::Int, 1.5, &mut out).is_err());
        assert!(encode_element(ScalarType::Float8E5m2, 1.0, &mut out).is_err());
        assert_eq!(decode_elements(ScalarType::Char, &[0x80, 0x7f]), Some(vec![-128.0, 127.0]));
        assert_eq!(decode_elements(ScalarType::Int, &[1, 2, 3]), None);
    }
}

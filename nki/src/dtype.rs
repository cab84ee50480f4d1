//! Element types: their sizes and the two conversions every engine does, an element read as
//! float32 and a float32 written as an element (docs/nki-program.md, *Numerics*).
//!
//! bfloat16 and float16 go through the `half` crate. The two fp8 types are IEEE-style (an
//! exponent of all ones is infinity or NaN) and are converted here by hand:
//! `float8_e4m3` is ml_dtypes' `float8_e4m3` (bias 7, largest finite 240), not the OCP
//! `float8_e4m3fn` (largest finite 448, no infinity), which NKI names separately
//! (docs/nki.md, *fp8*).

use serde::{Deserialize, Serialize};

/// The element type of a tensor, spelled as the program document spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    /// IEEE binary32.
    Float32,
    /// NKI's tfloat32: stored and computed as float32.
    Tfloat32,
    /// bfloat16 (1 sign, 8 exponent, 7 mantissa bits).
    Bfloat16,
    /// IEEE binary16.
    Float16,
    /// fp8 with 4 exponent and 3 mantissa bits, bias 7, with infinities (largest finite 240).
    #[serde(rename = "float8_e4m3")]
    Float8E4m3,
    /// fp8 with 5 exponent and 2 mantissa bits, bias 15, with infinities (largest finite 57344).
    #[serde(rename = "float8_e5m2")]
    Float8E5m2,
    /// Signed 8-bit integer.
    Int8,
    /// Unsigned 8-bit integer.
    Uint8,
    /// Signed 16-bit integer.
    Int16,
    /// Unsigned 16-bit integer.
    Uint16,
    /// Signed 32-bit integer.
    Int32,
    /// Unsigned 32-bit integer.
    Uint32,
    /// Signed 64-bit integer.
    Int64,
    /// Unsigned 64-bit integer.
    Uint64,
    /// One byte, 0 or 1.
    Bool,
}

impl Dtype {
    /// The size of one element in bytes.
    pub fn n_bytes(self) -> usize {
        match self {
            Dtype::Float8E4m3 | Dtype::Float8E5m2 | Dtype::Int8 | Dtype::Uint8 | Dtype::Bool => 1,
            Dtype::Bfloat16 | Dtype::Float16 | Dtype::Int16 | Dtype::Uint16 => 2,
            Dtype::Float32 | Dtype::Tfloat32 | Dtype::Int32 | Dtype::Uint32 => 4,
            Dtype::Int64 | Dtype::Uint64 => 8,
        }
    }

    /// Whether the type is an integer type (`bool` included).
    pub fn is_integer(self) -> bool {
        !self.is_float()
    }

    /// Whether the type is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Dtype::Float32
                | Dtype::Tfloat32
                | Dtype::Bfloat16
                | Dtype::Float16
                | Dtype::Float8E4m3
                | Dtype::Float8E5m2
        )
    }

    /// Whether the type is a signed integer type; bitwise operators act on `int32` for these
    /// and on `uint32` for the others.
    pub fn is_signed_integer(self) -> bool {
        matches!(self, Dtype::Int8 | Dtype::Int16 | Dtype::Int32 | Dtype::Int64)
    }

    /// The type's name in the program document.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Float32 => "float32",
            Dtype::Tfloat32 => "tfloat32",
            Dtype::Bfloat16 => "bfloat16",
            Dtype::Float16 => "float16",
            Dtype::Float8E4m3 => "float8_e4m3",
            Dtype::Float8E5m2 => "float8_e5m2",
            Dtype::Int8 => "int8",
            Dtype::Uint8 => "uint8",
            Dtype::Int16 => "int16",
            Dtype::Uint16 => "uint16",
            Dtype::Int32 => "int32",
            Dtype::Uint32 => "uint32",
            Dtype::Int64 => "int64",
            Dtype::Uint64 => "uint64",
            Dtype::Bool => "bool",
        }
    }

    /// The value a read of an unwritten element gives: NaN for float types, 0 for integers.
    pub fn uninitialized_value(self) -> f32 {
        if self.is_float() { f32::NAN } else { 0.0 }
    }

    /// Reads the element whose bytes start `bytes` (at least [`Dtype::n_bytes`] of them) as
    /// float32. Integers convert exactly when they fit in float32, else to the nearest float32.
    ///
    /// # Panics
    /// When `bytes` is shorter than one element: callers index whole elements of a tensor.
    pub fn read_f32(self, bytes: &[u8]) -> f32 {
        match self {
            Dtype::Float32 | Dtype::Tfloat32 => f32::from_le_bytes(le4(bytes)),
            Dtype::Bfloat16 => half::bf16::from_bits(u16::from_le_bytes(le2(bytes))).to_f32(),
            Dtype::Float16 => half::f16::from_bits(u16::from_le_bytes(le2(bytes))).to_f32(),
            Dtype::Float8E4m3 => fp8_to_f32(bytes[0], &E4M3),
            Dtype::Float8E5m2 => fp8_to_f32(bytes[0], &E5M2),
            Dtype::Int8 => f32::from(bytes[0] as i8),
            Dtype::Uint8 => f32::from(bytes[0]),
            Dtype::Bool => f32::from(u8::from(bytes[0] != 0)),
            Dtype::Int16 => f32::from(i16::from_le_bytes(le2(bytes))),
            Dtype::Uint16 => f32::from(u16::from_le_bytes(le2(bytes))),
            Dtype::Int32 => i32::from_le_bytes(le4(bytes)) as f32,
            Dtype::Uint32 => u32::from_le_bytes(le4(bytes)) as f32,
            Dtype::Int64 => i64::from_le_bytes(le8(bytes)) as f32,
            Dtype::Uint64 => u64::from_le_bytes(le8(bytes)) as f32,
        }
    }

    /// Reads an element of an integer type exactly (an index); a float element is truncated
    /// toward zero (NaN is 0), as the index AP of an indirect dimension is integer data.
    pub fn read_i64(self, bytes: &[u8]) -> i64 {
        match self {
            Dtype::Int8 => i64::from(bytes[0] as i8),
            Dtype::Uint8 | Dtype::Bool => i64::from(bytes[0]),
            Dtype::Int16 => i64::from(i16::from_le_bytes(le2(bytes))),
            Dtype::Uint16 => i64::from(u16::from_le_bytes(le2(bytes))),
            Dtype::Int32 => i64::from(i32::from_le_bytes(le4(bytes))),
            Dtype::Uint32 => i64::from(u32::from_le_bytes(le4(bytes))),
            Dtype::Int64 => i64::from_le_bytes(le8(bytes)),
            // Saturating: an index past i64 is out of bounds either way.
            Dtype::Uint64 => i64::try_from(u64::from_le_bytes(le8(bytes))).unwrap_or(i64::MAX),
            _ => self.read_f32(bytes) as i64,
        }
    }

    /// Writes `value` as one element into `out` (at least [`Dtype::n_bytes`] bytes): floats by
    /// round to nearest even (overflow to infinity), integers by truncation toward zero then
    /// saturation with NaN as 0, `bool` as 1 for any nonzero value and 0 for zero and NaN.
    ///
    /// # Panics
    /// When `out` is shorter than one element: callers index whole elements of a tensor.
    pub fn write_f32(self, value: f32, out: &mut [u8]) {
        match self {
            Dtype::Float32 | Dtype::Tfloat32 => out[..4].copy_from_slice(&value.to_le_bytes()),
            Dtype::Bfloat16 => {
                out[..2].copy_from_slice(&half::bf16::from_f32(value).to_bits().to_le_bytes());
            }
            Dtype::Float16 => {
                out[..2].copy_from_slice(&half::f16::from_f32(value).to_bits().to_le_bytes());
            }
            Dtype::Float8E4m3 => out[0] = f32_to_fp8(value, &E4M3),
            Dtype::Float8E5m2 => out[0] = f32_to_fp8(value, &E5M2),
            // `as` from a float truncates toward zero, saturates and sends NaN to 0.
            Dtype::Int8 => out[0] = (value as i8) as u8,
            Dtype::Uint8 => out[0] = value as u8,
            Dtype::Bool => out[0] = u8::from(value != 0.0 && !value.is_nan()),
            Dtype::Int16 => {
                out[..2].copy_from_slice(&(value as i16).to_le_bytes());
            }
            Dtype::Uint16 => {
                out[..2].copy_from_slice(&(value as u16).to_le_bytes());
            }
            Dtype::Int32 => {
                out[..4].copy_from_slice(&(value as i32).to_le_bytes());
            }
            Dtype::Uint32 => {
                out[..4].copy_from_slice(&(value as u32).to_le_bytes());
            }
            Dtype::Int64 => {
                out[..8].copy_from_slice(&(value as i64).to_le_bytes());
            }
            Dtype::Uint64 => {
                out[..8].copy_from_slice(&(value as u64).to_le_bytes());
            }
        }
    }

    /// Writes an exact integer (iota's values) as one element: floats by round to nearest even
    /// through float64, integers saturated.
    pub fn write_i64(self, value: i64, out: &mut [u8]) {
        match self {
            Dtype::Int8 => out[0] = value.clamp(i8::MIN.into(), i8::MAX.into()) as i8 as u8,
            Dtype::Uint8 => out[0] = value.clamp(0, u8::MAX.into()) as u8,
            Dtype::Bool => out[0] = u8::from(value != 0),
            Dtype::Int16 => out[..2].copy_from_slice(
                &(value.clamp(i16::MIN.into(), i16::MAX.into()) as i16).to_le_bytes(),
            ),
            Dtype::Uint16 => {
                out[..2].copy_from_slice(&(value.clamp(0, u16::MAX.into()) as u16).to_le_bytes())
            }
            Dtype::Int32 => out[..4].copy_from_slice(
                &(value.clamp(i32::MIN.into(), i32::MAX.into()) as i32).to_le_bytes(),
            ),
            Dtype::Uint32 => {
                out[..4].copy_from_slice(&(value.clamp(0, u32::MAX.into()) as u32).to_le_bytes())
            }
            Dtype::Int64 => out[..8].copy_from_slice(&value.to_le_bytes()),
            Dtype::Uint64 => out[..8].copy_from_slice(&(value.max(0) as u64).to_le_bytes()),
            // i64 → f64 rounds to nearest even when it must; f64 → f32 rounds once more only
            // for magnitudes past 2^53, far beyond any index a tile holds.
            _ => self.write_f32(value as f64 as f32, out),
        }
    }
}

fn le2(bytes: &[u8]) -> [u8; 2] {
    [bytes[0], bytes[1]]
}

fn le4(bytes: &[u8]) -> [u8; 4] {
    [bytes[0], bytes[1], bytes[2], bytes[3]]
}

fn le8(bytes: &[u8]) -> [u8; 8] {
    [bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]]
}

/// An IEEE-style 8-bit float: an exponent of all ones is infinity (mantissa 0) or NaN.
struct Fp8Format {
    /// Mantissa bits.
    man_bits: u32,
    /// Exponent bias.
    bias: i32,
}

const E4M3: Fp8Format = Fp8Format { man_bits: 3, bias: 7 };
const E5M2: Fp8Format = Fp8Format { man_bits: 2, bias: 15 };

impl Fp8Format {
    fn exp_all_ones(&self) -> u32 {
        (1 << (7 - self.man_bits)) - 1
    }
}

fn fp8_to_f32(bits: u8, format: &Fp8Format) -> f32 {
    let sign = if bits & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let exp = u32::from(bits & 0x7f) >> format.man_bits;
    let man = u32::from(bits) & ((1 << format.man_bits) - 1);
    if exp == format.exp_all_ones() {
        return if man == 0 { sign * f32::INFINITY } else { f32::NAN };
    }
    let man_scale = (1u32 << format.man_bits) as f32;
    // Every fp8 value is exact in float32, and so is each step below.
    let magnitude = if exp == 0 {
        man as f32 / man_scale * 2f32.powi(1 - format.bias)
    } else {
        (1.0 + man as f32 / man_scale) * 2f32.powi(exp as i32 - format.bias)
    };
    sign * magnitude
}

fn f32_to_fp8(value: f32, format: &Fp8Format) -> u8 {
    let sign: u8 = if value.is_sign_negative() { 0x80 } else { 0 };
    let inf = (format.exp_all_ones() << format.man_bits) as u8;
    if value.is_nan() {
        // The quiet NaN: exponent all ones, top mantissa bit set.
        return 0x7f & (inf | (1 << (format.man_bits - 1))) | sign;
    }
    let magnitude = value.abs();
    if magnitude.is_infinite() {
        return sign | inf;
    }
    let bits = magnitude.to_bits();
    let exp32 = (bits >> 23) as i32;
    let unbiased = exp32 - 127;
    if unbiased >= 1 - format.bias {
        // Normal in fp8: re-bias the exponent, then round the mantissa to nearest even; a carry
        // out of the mantissa bumps the exponent, which is the right result (up to infinity).
        let shift = 23 - format.man_bits;
        let man32 = bits & 0x7f_ffff;
        let mut result = (((unbiased + format.bias) as u32) << format.man_bits) | (man32 >> shift);
        let rest = man32 & ((1 << shift) - 1);
        let half = 1 << (shift - 1);
        if rest > half || (rest == half && result & 1 == 1) {
            result += 1;
        }
        if result >= u32::from(inf) {
            return sign | inf;
        }
        sign | result as u8
    } else {
        // Subnormal in fp8: the magnitude in units of the smallest subnormal, rounded to
        // nearest even. Scaling by a power of two is exact in float64; a result of
        // 2^man_bits is the smallest normal, whose encoding is that same integer.
        let units = f64::from(magnitude) * 2f64.powi(format.bias - 1 + format.man_bits as i32);
        sign | units.round_ties_even() as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dtype: Dtype, value: f32) -> Vec<u8> {
        let mut out = vec![0; dtype.n_bytes()];
        dtype.write_f32(value, &mut out);
        out
    }

    #[test]
    fn bfloat16_rounds_to_nearest_even() {
        // 1 + 2^-8 is halfway between 1.0 (0x3f80, even) and 1 + 2^-7 (0x3f81): ties to even.
        assert_eq!(write(Dtype::Bfloat16, 1.0 + 2f32.powi(-8)), 0x3f80u16.to_le_bytes());
        // 1 + 3 * 2^-8 is halfway between 0x3f81 (odd) and 0x3f82: ties to 0x3f82.
        assert_eq!(write(Dtype::Bfloat16, 1.0 + 3.0 * 2f32.powi(-8)), 0x3f82u16.to_le_bytes());
        // Just above the halfway point rounds up.
        assert_eq!(write(Dtype::Bfloat16, f32::from_bits(0x3f80_8001)), 0x3f81u16.to_le_bytes());
    }

    #[test]
    fn float8_e4m3_bit_patterns() {
        // 1.0 = exponent 7 (biased), mantissa 0: 0 0111 000.
        assert_eq!(write(Dtype::Float8E4m3, 1.0), [0x38]);
        // -2.5 = -1.25 * 2^1: 1 1000 010.
        assert_eq!(write(Dtype::Float8E4m3, -2.5), [0xc2]);
        // The largest finite value, 1.875 * 2^7 = 240: 0 1110 111.
        assert_eq!(write(Dtype::Float8E4m3, 240.0), [0x77]);
        // 248 is halfway between 240 (odd mantissa) and 256 (past the range): to infinity.
        assert_eq!(write(Dtype::Float8E4m3, 248.0), [0x78]);
        // 244 is below the halfway point: 240.
        assert_eq!(write(Dtype::Float8E4m3, 244.0), [0x77]);
        assert_eq!(write(Dtype::Float8E4m3, f32::INFINITY), [0x78]);
        assert_eq!(write(Dtype::Float8E4m3, f32::NEG_INFINITY), [0xf8]);
        // The smallest subnormal is 2^-9: 0 0000 001; 2^-10 is halfway to 0, ties to 0.
        assert_eq!(write(Dtype::Float8E4m3, 2f32.powi(-9)), [0x01]);
        assert_eq!(write(Dtype::Float8E4m3, 2f32.powi(-10)), [0x00]);
        // 3 * 2^-10 is halfway between 1 and 2 units: ties to 2 (even).
        assert_eq!(write(Dtype::Float8E4m3, 3.0 * 2f32.powi(-10)), [0x02]);
        // 1 + 1/16 is halfway between 1.0 (0x38) and 1.125 (0x39): ties to 0x38.
        assert_eq!(write(Dtype::Float8E4m3, 1.0625), [0x38]);
        // 1.1875 is halfway between 1.125 (0x39) and 1.25 (0x3a): ties to 0x3a.
        assert_eq!(write(Dtype::Float8E4m3, 1.1875), [0x3a]);
        let nan = write(Dtype::Float8E4m3, f32::NAN)[0];
        assert_eq!(nan & 0x78, 0x78);
        assert_ne!(nan & 0x07, 0);
        assert_eq!(Dtype::Float8E4m3.read_f32(&[0x77]), 240.0);
        assert_eq!(Dtype::Float8E4m3.read_f32(&[0xc2]), -2.5);
        assert_eq!(Dtype::Float8E4m3.read_f32(&[0x01]), 2f32.powi(-9));
        assert_eq!(Dtype::Float8E4m3.read_f32(&[0x78]), f32::INFINITY);
        assert!(Dtype::Float8E4m3.read_f32(&[0x7f]).is_nan());
    }

    #[test]
    fn float8_e5m2_bit_patterns() {
        // 1.0 = exponent 15, mantissa 0: 0 01111 00.
        assert_eq!(write(Dtype::Float8E5m2, 1.0), [0x3c]);
        // The largest finite value, 1.75 * 2^15 = 57344: 0 11110 11.
        assert_eq!(write(Dtype::Float8E5m2, 57344.0), [0x7b]);
        // 61440 is halfway between 57344 and 65536 (past the range): to infinity.
        assert_eq!(write(Dtype::Float8E5m2, 61440.0), [0x7c]);
        // -0.75 = -1.5 * 2^-1: 1 01110 10.
        assert_eq!(write(Dtype::Float8E5m2, -0.75), [0xba]);
        // 1.125 is halfway between 1.0 (0x3c) and 1.25 (0x3d): ties to 0x3c.
        assert_eq!(write(Dtype::Float8E5m2, 1.125), [0x3c]);
        // The smallest subnormal is 2^-16.
        assert_eq!(write(Dtype::Float8E5m2, 2f32.powi(-16)), [0x01]);
        assert_eq!(Dtype::Float8E5m2.read_f32(&[0x7b]), 57344.0);
        assert_eq!(Dtype::Float8E5m2.read_f32(&[0x03]), 3.0 * 2f32.powi(-16));
    }

    #[test]
    fn integers_truncate_toward_zero_then_saturate() {
        assert_eq!(write(Dtype::Int8, 2.5), [2]);
        assert_eq!(write(Dtype::Int8, 3.9), [3]);
        assert_eq!(write(Dtype::Int8, -2.7), [(-2i8) as u8]);
        // 2224 / 38 = 58.53: nki-samples' resize kernel floors this quotient after writing it
        // as int32, and needs 58.
        assert_eq!(write(Dtype::Int32, 2224.0 / 38.0), 58i32.to_le_bytes());
        assert_eq!(write(Dtype::Int8, 300.0), [127]);
        assert_eq!(write(Dtype::Int8, -300.0), [0x80]);
        assert_eq!(write(Dtype::Uint8, -1.0), [0]);
        assert_eq!(write(Dtype::Uint16, 70000.0), [0xff, 0xff]);
        assert_eq!(write(Dtype::Int32, f32::NAN), [0, 0, 0, 0]);
        assert_eq!(write(Dtype::Int32, f32::INFINITY), i32::MAX.to_le_bytes());
        assert_eq!(write(Dtype::Bool, 0.25), [1]);
        assert_eq!(write(Dtype::Bool, f32::NAN), [0]);
    }

    #[test]
    fn float16_overflows_to_infinity() {
        // 65520 is halfway between 65504 (the largest finite) and 65536: to infinity.
        assert_eq!(write(Dtype::Float16, 65520.0), 0x7c00u16.to_le_bytes());
        assert_eq!(write(Dtype::Float16, 65504.0), 0x7bffu16.to_le_bytes());
    }
}

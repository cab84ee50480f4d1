//! Narrow floating-point formats (f16, bf16 and the f8 family): their bits to and from `f64`.
//!
//! HLO text writes every float as a decimal; the literal stores the narrow types as bytes. One
//! parameterised codec covers them all, since they differ only in exponent and mantissa widths,
//! bias, and what the all-ones exponent (or the negative zero) means.

use crate::proto::PrimitiveType;

/// What a format does with the encodings IEEE reserves for infinities and NaNs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Specials {
    /// IEEE: all-ones exponent is infinity (zero mantissa) or NaN.
    Ieee,
    /// "FN": no infinities; only all-ones exponent with all-ones mantissa is NaN.
    FiniteAllOnesNan,
    /// "FNUZ": no infinities and no negative zero; the negative-zero encoding is the NaN.
    FiniteNegZeroNan,
    /// "FN" without any NaN (f4e2m1fn): every encoding is a finite number.
    Finite,
}

/// A binary floating-point format of at most 16 bits with a sign bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Format {
    pub(crate) exponent_bits: u32,
    pub(crate) mantissa_bits: u32,
    pub(crate) bias: i32,
    pub(crate) specials: Specials,
}

impl Format {
    /// The format of a narrow float type with a sign bit, or `None` for any other type (f8e8m0fnu,
    /// which has neither sign nor mantissa, is [`e8m0`]).
    pub(crate) fn of(ty: PrimitiveType) -> Option<Format> {
        use PrimitiveType as T;
        use Specials::*;
        let (exponent_bits, mantissa_bits, bias, specials) = match ty {
            T::F16 => (5, 10, 15, Ieee),
            T::Bf16 => (8, 7, 127, Ieee),
            T::F8e5m2 => (5, 2, 15, Ieee),
            T::F8e4m3 => (4, 3, 7, Ieee),
            T::F8e3m4 => (3, 4, 3, Ieee),
            T::F8e4m3fn => (4, 3, 7, FiniteAllOnesNan),
            T::F8e4m3fnuz => (4, 3, 8, FiniteNegZeroNan),
            T::F8e5m2fnuz => (5, 2, 16, FiniteNegZeroNan),
            T::F8e4m3b11fnuz => (4, 3, 11, FiniteNegZeroNan),
            T::F4e2m1fn => (2, 1, 1, Finite),
            _ => return None,
        };
        Some(Format { exponent_bits, mantissa_bits, bias, specials })
    }

    /// The significant decimal digits that always tell two values of the format apart (C++'s
    /// `max_digits10`): ceil(1 + significand bits x log10(2)).
    pub(crate) fn max_digits10(self) -> usize {
        let significand = f64::from(self.mantissa_bits + 1);
        (1.0 + significand * std::f64::consts::LOG10_2).ceil() as usize
    }

    /// Bytes per element: 2 for the 16-bit formats, 1 for the 8-bit ones (and the 4-bit one,
    /// which literals store one per byte).
    pub(crate) fn n_bytes(self) -> usize {
        if self.exponent_bits + self.mantissa_bits + 1 > 8 { 2 } else { 1 }
    }

    fn sign_bit(self) -> u16 {
        1 << (self.exponent_bits + self.mantissa_bits)
    }

    fn exponent_max(self) -> u16 {
        (1 << self.exponent_bits) - 1
    }

    fn mantissa_mask(self) -> u16 {
        (1 << self.mantissa_bits) - 1
    }

    /// The quiet NaN this crate writes for the format.
    fn nan(self) -> u16 {
        match self.specials {
            Specials::Ieee => {
                (self.exponent_max() << self.mantissa_bits) | (1 << (self.mantissa_bits - 1))
            }
            Specials::FiniteAllOnesNan => {
                (self.exponent_max() << self.mantissa_bits) | self.mantissa_mask()
            }
            Specials::FiniteNegZeroNan => self.sign_bit(),
            // Never written: `encode` saturates and its callers reject NaN for this format.
            Specials::Finite => self.sign_bit() - 1,
        }
    }

    /// Whether the format has a NaN at all.
    pub(crate) fn has_nan(self) -> bool {
        self.specials != Specials::Finite
    }

    /// The exact value of an encoding.
    pub(crate) fn decode(self, bits: u16) -> f64 {
        let negative = bits & self.sign_bit() != 0;
        let exponent = (bits >> self.mantissa_bits) & self.exponent_max();
        let mantissa = bits & self.mantissa_mask();
        // NaNs keep their sign bit, which XLA prints (`-nan`; the FNUZ NaN is the sign bit).
        let nan = if negative { -f64::NAN } else { f64::NAN };
        let magnitude = match self.specials {
            Specials::FiniteNegZeroNan if bits == self.sign_bit() => return nan,
            Specials::Ieee if exponent == self.exponent_max() => {
                if mantissa == 0 {
                    f64::INFINITY
                } else {
                    return nan;
                }
            }
            Specials::FiniteAllOnesNan
                if exponent == self.exponent_max() && mantissa == self.mantissa_mask() =>
            {
                return nan;
            }
            _ if exponent == 0 => {
                f64::from(mantissa) * 2f64.powi(1 - self.bias - self.mantissa_bits as i32)
            }
            _ => {
                (1.0 + f64::from(mantissa) / f64::from(1u32 << self.mantissa_bits))
                    * 2f64.powi(i32::from(exponent) - self.bias)
            }
        };
        if negative { -magnitude } else { magnitude }
    }

    /// The encoding nearest to `value`, ties to even. Values beyond the largest finite one become
    /// infinity where the format has it and NaN where it does not (as ml_dtypes converts).
    pub(crate) fn encode(self, value: f64) -> u16 {
        if value.is_nan() {
            // The sign of a NaN survives where the format can hold it (not in FNUZ).
            return match self.specials {
                Specials::FiniteNegZeroNan => self.nan(),
                _ if value.is_sign_negative() => self.sign_bit() | self.nan(),
                _ => self.nan(),
            };
        }
        let sign = if value.is_sign_negative() { self.sign_bit() } else { 0 };
        let magnitude = value.abs();
        let overflow = || match self.specials {
            Specials::Ieee => sign | (self.exponent_max() << self.mantissa_bits),
            // No infinity and no NaN: saturate at the largest finite value.
            Specials::Finite => sign | (self.sign_bit() - 1),
            _ => self.nan(),
        };
        if magnitude.is_infinite() {
            return overflow();
        }
        let m = self.mantissa_bits as i32;
        let min_normal_exponent = 1 - self.bias;
        // The binary exponent of the value, exact from the f64 bits (subnormal f64s are far below
        // every format here, so they are treated as the smallest exponent).
        let exponent = if magnitude == 0.0 {
            min_normal_exponent
        } else {
            (((magnitude.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(min_normal_exponent)
        };
        // Scale so that one unit is one step of the mantissa at that exponent; the division by a
        // power of two is exact, so this rounds once.
        let steps = (magnitude / 2f64.powi(exponent - m)).round_ties_even();
        // `steps` is below 2^(m+1) except when rounding carried into the next binade, which the
        // arithmetic below handles by overflowing the mantissa into the exponent field.
        let code = if exponent == min_normal_exponent && steps < f64::from(1u32 << m) {
            steps as u32
        } else {
            let biased = (exponent + self.bias) as u32;
            (biased << m) + (steps as u32 - (1u32 << m))
        };
        let max_finite = match self.specials {
            Specials::Ieee => {
                ((u32::from(self.exponent_max()) - 1) << m) | u32::from(self.mantissa_mask())
            }
            Specials::FiniteAllOnesNan => {
                (u32::from(self.exponent_max()) << m) | (u32::from(self.mantissa_mask()) - 1)
            }
            Specials::FiniteNegZeroNan | Specials::Finite => u32::from(self.sign_bit()) - 1,
        };
        if code > max_finite {
            return overflow();
        }
        let code = code as u16;
        if self.specials == Specials::FiniteNegZeroNan && code == 0 {
            return 0;
        }
        sign | code
    }
}

/// f8e8m0fnu, the exponent-only scale format: the byte `b` is 2^(b - 127), and 0xff is NaN;
/// there is no sign and no zero.
pub(crate) mod e8m0 {
    /// The value of a byte.
    pub(crate) fn decode(bits: u8) -> f64 {
        if bits == 0xff { f64::NAN } else { 2f64.powi(i32::from(bits) - 127) }
    }

    /// The nearest power of two (ties to the even byte); NaN for NaN, infinities, values not
    /// above zero and values past 2^127; 2^-127 for anything smaller.
    pub(crate) fn encode(value: f64) -> u8 {
        if !(value.is_finite() && value > 0.0) {
            return 0xff;
        }
        // The exponent and mantissa straight from the f64 bits (f64 subnormals are far below
        // 2^-127 and become the smallest byte).
        let raw = (value.to_bits() >> 52) & 0x7ff;
        if raw == 0 {
            return 0;
        }
        let mut exponent = raw as i32 - 1023;
        let mantissa = f64::from_bits((value.to_bits() & ((1 << 52) - 1)) | (1023 << 52));
        let byte = |e: i32| e + 127;
        if mantissa > 1.5 || (mantissa == 1.5 && byte(exponent) % 2 != 0) {
            exponent += 1;
        }
        match byte(exponent) {
            b if b < 0 => 0,
            b if b > 254 => 0xff,
            b => b as u8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Format;
    use crate::proto::PrimitiveType as T;

    fn fmt(ty: T) -> Format {
        Format::of(ty).unwrap()
    }

    #[test]
    fn known_encodings() {
        // Values from the format definitions: 1.0, the largest finite, the smallest subnormal.
        assert_eq!(fmt(T::F16).encode(1.0), 0x3c00);
        assert_eq!(fmt(T::F16).encode(65504.0), 0x7bff);
        assert_eq!(fmt(T::F16).encode(2f64.powi(-24)), 0x0001);
        assert_eq!(fmt(T::F16).encode(65520.0), 0x7c00); // halfway to the next binade: infinity
        assert_eq!(fmt(T::Bf16).encode(1.0), 0x3f80);
        assert_eq!(fmt(T::Bf16).encode(-2.0), 0xc000);
        assert_eq!(fmt(T::F8e4m3fn).encode(448.0), 0x7e);
        assert_eq!(fmt(T::F8e4m3fn).encode(1.0), 0x38);
        assert_eq!(fmt(T::F8e4m3fn).encode(1000.0), 0x7f); // no infinity: NaN
        assert_eq!(fmt(T::F8e5m2).encode(57344.0), 0x7b);
        assert_eq!(fmt(T::F8e5m2).encode(f64::NEG_INFINITY), 0xfc);
        assert_eq!(fmt(T::F8e4m3fnuz).encode(1.0), 0x40);
        assert_eq!(fmt(T::F8e4m3fnuz).encode(-0.0), 0x00);
        assert!(fmt(T::F8e4m3fnuz).decode(0x80).is_nan());
    }

    #[test]
    fn four_bit_and_exponent_only_formats() {
        // Bytes XLA writes for these values (see the float_formats fixture's neighbours).
        let f4 = fmt(T::F4e2m1fn);
        assert_eq!([f4.encode(0.5), f4.encode(-6.0), f4.encode(1.5)], [0x1, 0xf, 0x3]);
        assert_eq!(f4.encode(100.0), 0x7); // saturates: the format has no infinity or NaN
        assert_eq!(f4.max_digits10(), 2);
        for bits in 0..16 {
            assert_eq!(f4.encode(f4.decode(bits)), if bits == 0x8 { 0x8 } else { bits });
        }
        assert_eq!(
            [super::e8m0::encode(0.25), super::e8m0::encode(4.0), super::e8m0::encode(1.0)],
            [0x7d, 0x81, 0x7f]
        );
        assert_eq!(super::e8m0::encode(1.4), 0x7f);
        assert_eq!(super::e8m0::encode(1.6), 0x80);
        assert_eq!(super::e8m0::encode(0.0), 0xff);
        for bits in 0..=254u8 {
            assert_eq!(super::e8m0::encode(super::e8m0::decode(bits)), bits);
        }
    }

    #[test]
    fn ties_go_to_even() {
        // 1 + 2^-11 is halfway between 1 and the next f16 (1 + 2^-10): rounds down to even.
        assert_eq!(fmt(T::F16).encode(1.0 + 2f64.powi(-11)), 0x3c00);
        // 1 + 3 * 2^-11 is halfway between odd 0x3c01 and even 0x3c02: rounds up.
        assert_eq!(fmt(T::F16).encode(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
    }

    #[test]
    fn every_8_bit_encoding_round_trips() {
        for ty in [
            T::F8e5m2,
            T::F8e4m3,
            T::F8e3m4,
            T::F8e4m3fn,
            T::F8e4m3fnuz,
            T::F8e5m2fnuz,
            T::F8e4m3b11fnuz,
        ] {
            let f = fmt(ty);
            for bits in 0..=255u16 {
                let value = f.decode(bits);
                if value.is_nan() {
                    assert!(f.decode(f.encode(value)).is_nan());
                } else {
                    assert_eq!(f.encode(value), bits, "{ty:?} {bits:#x} = {value}");
                }
            }
        }
    }

    #[test]
    fn every_16_bit_encoding_round_trips() {
        for ty in [T::F16, T::Bf16] {
            let f = fmt(ty);
            for bits in 0..=u16::MAX {
                let value = f.decode(bits);
                if !value.is_nan() {
                    assert_eq!(f.encode(value), bits, "{ty:?} {bits:#x} = {value}");
                }
            }
        }
    }

    #[test]
    fn bf16_agrees_with_f32_truncation() {
        // A bf16 is the top half of an f32, so decoding must equal that f32.
        for bits in (0..=u16::MAX).step_by(7) {
            let v = fmt(T::Bf16).decode(bits);
            let as_f32 = f32::from_bits(u32::from(bits) << 16);
            assert!(v.is_nan() && as_f32.is_nan() || v == f64::from(as_f32), "{bits:#x}");
        }
    }
}

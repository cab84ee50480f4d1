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
    /// The format of a narrow float type, or `None` for any other type (and for the sub-byte and
    /// exponent-only formats, which the text form does not handle yet).
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
            _ => return None,
        };
        Some(Format { exponent_bits, mantissa_bits, bias, specials })
    }

    /// Bytes per element: 2 for the 16-bit formats, 1 for the 8-bit ones.
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
        }
    }

    /// The exact value of an encoding.
    pub(crate) fn decode(self, bits: u16) -> f64 {
        let negative = bits & self.sign_bit() != 0;
        let exponent = (bits >> self.mantissa_bits) & self.exponent_max();
        let mantissa = bits & self.mantissa_mask();
        let magnitude = match self.specials {
            Specials::FiniteNegZeroNan if bits == self.sign_bit() => return f64::NAN,
            Specials::Ieee if exponent == self.exponent_max() => {
                if mantissa == 0 {
                    f64::INFINITY
                } else {
                    return f64::NAN;
                }
            }
            Specials::FiniteAllOnesNan
                if exponent == self.exponent_max() && mantissa == self.mantissa_mask() =>
            {
                return f64::NAN;
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
            return self.nan();
        }
        let sign = if value.is_sign_negative() { self.sign_bit() } else { 0 };
        let magnitude = value.abs();
        let overflow = || match self.specials {
            Specials::Ieee => sign | (self.exponent_max() << self.mantissa_bits),
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
            Specials::FiniteNegZeroNan => u32::from(self.sign_bit()) - 1,
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

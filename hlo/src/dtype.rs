//! Element types of the interpreter and the narrow float formats it stores as bits.
//!
//! Design choices:
//! - [`ElementType`] numbers its variants with XLA's `PrimitiveType` values (public facts), so the
//!   proto enum and ours convert by number and nothing else keeps a table of them.
//! - f16, bf16, f8e5m2, f8e4m3fn and f8e4m3 are stored as their bits. Arithmetic on them decodes
//!   to f32 (exact for all five), computes in f32 and rounds back to nearest-even per instruction,
//!   as XLA on CPU does.
//! - One encoder, [`SmallFloat::encode`], rounds an `f64` to any of the five formats with integer
//!   arithmetic. Rounding from `f64` is exact for `f32` sources (every `f32` is an `f64`), so one
//!   routine serves both without double rounding.
//! - f8e4m3fn has no infinities; a value whose rounded magnitude exceeds 448, and ±inf, become NaN
//!   (ml_dtypes' non-saturating conversion, which XLA uses: `464.0` → 448, `465.0` → NaN). f8e5m2
//!   and f8e4m3 (same bits as f8e4m3fn, but with infinities, so its largest finite is 240) follow
//!   IEEE: overflow becomes ±inf.

/// An array element type, numbered as XLA's `PrimitiveType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// Boolean, one byte 0 or 1.
    Pred = 1,
    /// Signed 8-bit integer.
    S8 = 2,
    /// Signed 16-bit integer.
    S16 = 3,
    /// Signed 32-bit integer.
    S32 = 4,
    /// Signed 64-bit integer.
    S64 = 5,
    /// Unsigned 8-bit integer.
    U8 = 6,
    /// Unsigned 16-bit integer.
    U16 = 7,
    /// Unsigned 32-bit integer.
    U32 = 8,
    /// Unsigned 64-bit integer.
    U64 = 9,
    /// IEEE binary16.
    F16 = 10,
    /// IEEE binary32.
    F32 = 11,
    /// IEEE binary64.
    F64 = 12,
    /// bfloat16: binary32 with 16 fewer mantissa bits.
    Bf16 = 16,
    /// 8-bit float, 5 exponent bits, 2 mantissa bits, with infinities.
    F8e5m2 = 19,
    /// 8-bit float, 4 exponent bits, 3 mantissa bits, no infinities.
    F8e4m3fn = 20,
    /// 8-bit float, 4 exponent bits, 3 mantissa bits, IEEE-like: infinities and NaNs in the
    /// all-ones exponent.
    F8e4m3 = 28,
}

impl ElementType {
    /// Every element type, in `PrimitiveType` order.
    pub const ALL: [ElementType; 16] = [
        Self::Pred,
        Self::S8,
        Self::S16,
        Self::S32,
        Self::S64,
        Self::U8,
        Self::U16,
        Self::U32,
        Self::U64,
        Self::F16,
        Self::F32,
        Self::F64,
        Self::Bf16,
        Self::F8e5m2,
        Self::F8e4m3fn,
        Self::F8e4m3,
    ];

    /// The type for a `PrimitiveType` number, or `None` for tuples, tokens, complex and the
    /// types this interpreter does not evaluate.
    pub fn from_primitive(value: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|ty| *ty as i32 == value)
    }

    /// Bytes per element.
    pub fn item_size(self) -> usize {
        match self {
            Self::Pred | Self::S8 | Self::U8 | Self::F8e5m2 | Self::F8e4m3fn | Self::F8e4m3 => 1,
            Self::S16 | Self::U16 | Self::F16 | Self::Bf16 => 2,
            Self::S32 | Self::U32 | Self::F32 => 4,
            Self::S64 | Self::U64 | Self::F64 => 8,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Self::F16
                | Self::F32
                | Self::F64
                | Self::Bf16
                | Self::F8e5m2
                | Self::F8e4m3fn
                | Self::F8e4m3
        )
    }

    /// Whether this is a signed integer type.
    pub fn is_signed_int(self) -> bool {
        matches!(self, Self::S8 | Self::S16 | Self::S32 | Self::S64)
    }

    /// Whether this is an unsigned integer type.
    pub fn is_unsigned_int(self) -> bool {
        matches!(self, Self::U8 | Self::U16 | Self::U32 | Self::U64)
    }

    /// The narrow float format stored as bits, if this is one.
    pub fn small_float(self) -> Option<SmallFloat> {
        match self {
            Self::F16 => Some(SmallFloat::F16),
            Self::Bf16 => Some(SmallFloat::Bf16),
            Self::F8e5m2 => Some(SmallFloat::F8e5m2),
            Self::F8e4m3fn => Some(SmallFloat::F8e4m3fn),
            Self::F8e4m3 => Some(SmallFloat::F8e4m3),
            _ => None,
        }
    }

    /// XLA's lowercase name, as in shapes such as `f32[2,3]`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pred => "pred",
            Self::S8 => "s8",
            Self::S16 => "s16",
            Self::S32 => "s32",
            Self::S64 => "s64",
            Self::U8 => "u8",
            Self::U16 => "u16",
            Self::U32 => "u32",
            Self::U64 => "u64",
            Self::F16 => "f16",
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::Bf16 => "bf16",
            Self::F8e5m2 => "f8e5m2",
            Self::F8e4m3fn => "f8e4m3fn",
            Self::F8e4m3 => "f8e4m3",
        }
    }
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A float format narrower than f32, stored as its bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallFloat {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
    /// 8-bit, e5m2, IEEE-like with infinities.
    F8e5m2,
    /// 8-bit, e4m3, finite: no infinities, NaN only with all exponent and mantissa bits set.
    F8e4m3fn,
    /// 8-bit, e4m3, IEEE-like with infinities (largest finite 240).
    F8e4m3,
}

impl SmallFloat {
    fn exponent_bits(self) -> u32 {
        match self {
            Self::F16 | Self::F8e5m2 => 5,
            Self::Bf16 => 8,
            Self::F8e4m3fn | Self::F8e4m3 => 4,
        }
    }

    fn mantissa_bits(self) -> u32 {
        match self {
            Self::F16 => 10,
            Self::Bf16 => 7,
            Self::F8e5m2 => 2,
            Self::F8e4m3fn | Self::F8e4m3 => 3,
        }
    }

    fn has_infinity(self) -> bool {
        !matches!(self, Self::F8e4m3fn)
    }

    fn total_bits(self) -> u32 {
        1 + self.exponent_bits() + self.mantissa_bits()
    }

    /// The canonical quiet NaN (sign bit clear).
    fn quiet_nan(self) -> u32 {
        let m = self.mantissa_bits();
        let exp_all = ((1u32 << self.exponent_bits()) - 1) << m;
        if self.has_infinity() { exp_all | (1 << (m - 1)) } else { exp_all | ((1 << m) - 1) }
    }

    /// Decodes bits (in the low `total_bits`) to the exact `f32` value.
    pub fn decode(self, bits: u32) -> f32 {
        if self == Self::Bf16 {
            return f32::from_bits(bits << 16);
        }
        let m_bits = self.mantissa_bits();
        let e_bits = self.exponent_bits();
        let sign = (bits >> (m_bits + e_bits)) & 1;
        let exponent = (bits >> m_bits) & ((1 << e_bits) - 1);
        let mantissa = bits & ((1 << m_bits) - 1);
        let bias = (1i32 << (e_bits - 1)) - 1;
        let exp_all = (1 << e_bits) - 1;
        let magnitude = if exponent == exp_all && self.has_infinity() {
            if mantissa == 0 { f32::INFINITY } else { f32::NAN }
        } else if exponent == exp_all && mantissa == (1 << m_bits) - 1 {
            f32::NAN
        } else if exponent == 0 {
            mantissa as f32 * pow2(1 - bias - m_bits as i32)
        } else {
            (mantissa | (1 << m_bits)) as f32 * pow2(exponent as i32 - bias - m_bits as i32)
        };
        if sign == 1 { -magnitude } else { magnitude }
    }

    /// Rounds `value` to nearest, ties to even, and returns the bits.
    pub fn encode(self, value: f64) -> u32 {
        let m_bits = self.mantissa_bits();
        let e_bits = self.exponent_bits();
        let sign = if value.is_sign_negative() { 1u32 << (m_bits + e_bits) } else { 0 };
        if value.is_nan() {
            return sign | self.quiet_nan();
        }
        let exp_all = (1u32 << e_bits) - 1;
        let overflow =
            if self.has_infinity() { sign | (exp_all << m_bits) } else { sign | self.quiet_nan() };
        let magnitude = value.abs();
        if magnitude.is_infinite() {
            return overflow;
        }
        if magnitude == 0.0 {
            return sign;
        }
        // magnitude = significand × 2^exp2 with the significand's bit 52 set.
        let raw = magnitude.to_bits();
        let raw_exponent = (raw >> 52) as i32;
        let (significand, exp2) = if raw_exponent == 0 {
            let fraction = raw & ((1 << 52) - 1);
            let shift = fraction.leading_zeros() - 11;
            (fraction << shift, -1074 - shift as i32)
        } else {
            ((raw & ((1 << 52) - 1)) | (1 << 52), raw_exponent - 1075)
        };
        let bias = (1i32 << (e_bits - 1)) - 1;
        let min_exponent = 1 - bias;
        let floor_log2 = exp2 + 52;
        // The exponent of one unit in the last place of the result.
        let quantum = floor_log2.max(min_exponent) - m_bits as i32;
        let shift = quantum - exp2;
        let mut units: u64 = if shift <= 0 {
            significand << (-shift) as u32
        } else if shift > 60 {
            0
        } else {
            let kept = significand >> shift;
            let rest = significand & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            if rest > half || (rest == half && kept & 1 == 1) { kept + 1 } else { kept }
        };
        let mut quantum = quantum;
        if units >= 1 << (m_bits + 1) {
            units >>= 1;
            quantum += 1;
        }
        if units < 1 << m_bits {
            // Subnormal (or zero after rounding).
            return sign | units as u32;
        }
        let biased = quantum + m_bits as i32 + bias;
        let fraction = units as u32 & ((1 << m_bits) - 1);
        if self.has_infinity() {
            if biased >= exp_all as i32 {
                return overflow;
            }
        } else if biased > exp_all as i32
            || (biased == exp_all as i32 && fraction == (1 << m_bits) - 1)
        {
            return overflow;
        }
        sign | ((biased as u32) << m_bits) | fraction
    }

    /// Rounds an `f32` to this format (fast path for bf16).
    pub fn encode_f32(self, value: f32) -> u32 {
        if self == Self::Bf16 {
            let bits = value.to_bits();
            if value.is_nan() {
                return ((bits >> 16) & 0x8000) | 0x7fc0;
            }
            let rounding = 0x7fff + ((bits >> 16) & 1);
            return bits.wrapping_add(rounding) >> 16;
        }
        self.encode(f64::from(value))
    }

    /// The number of bits of the format.
    pub fn bits(self) -> u32 {
        self.total_bits()
    }
}

fn pow2(exponent: i32) -> f32 {
    // Exact for the exponents the narrow formats reach (-24 ..= 15 and bf16 is handled apart).
    (2.0f64).powi(exponent) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f8e4m3fn_overflow_is_nan_after_rounding() {
        let f = SmallFloat::F8e4m3fn;
        // 448 = 1.75 × 2^8 is the largest finite value, bits 0x7e.
        assert_eq!(f.encode(448.0), 0x7e);
        // 464 is the midpoint between 448 and the 480 the NaN slot took; ties to even → 448.
        assert_eq!(f.encode(464.0), 0x7e);
        assert_eq!(f.encode(465.0), 0x7f);
        assert_eq!(f.encode(f64::INFINITY), 0x7f);
        assert_eq!(f.encode(-1000.0), 0xff);
        assert!(f.decode(0x7f).is_nan());
        assert_eq!(f.decode(0x7e), 448.0);
        // Smallest subnormal 2^-9.
        assert_eq!(f.decode(0x01), 2.0f32.powi(-9));
    }

    #[test]
    fn f8e4m3_has_infinities_and_its_largest_finite_is_240() {
        let f = SmallFloat::F8e4m3;
        // 1.0 = 2^0: biased exponent 7, bits 0 0111 000.
        assert_eq!(f.encode(1.0), 0x38);
        // 240 = 1.875 × 2^7 (exponent 14, mantissa 111) is the largest finite value, 0x77;
        // exponent 15 holds the infinities and NaNs.
        assert_eq!(f.encode(240.0), 0x77);
        assert_eq!(f.decode(0x77), 240.0);
        // 248 is the midpoint between 240 and 256, which would need exponent 15: ties to even
        // (256, mantissa 000) overflow to infinity; just below stays 240.
        assert_eq!(f.encode(247.9), 0x77);
        assert_eq!(f.encode(248.0), 0x78);
        assert_eq!(f.decode(0x78), f32::INFINITY);
        assert_eq!(f.decode(0xf8), f32::NEG_INFINITY);
        assert!(f.decode(0x79).is_nan() && f.decode(0x7f).is_nan());
        assert_eq!(f.encode(f64::NAN), 0x7c);
        // Smallest subnormal 2^-9, as for e4m3fn (same bias).
        assert_eq!(f.decode(0x01), 2.0f32.powi(-9));
        assert_eq!(f.encode(-0.5), 0xb0);
    }

    #[test]
    fn f8e5m2_overflow_is_infinity() {
        let f = SmallFloat::F8e5m2;
        // Max finite 57344 = 1.75 × 2^15 (0x7b); the midpoint to 65536 is 61440.
        assert_eq!(f.encode(58000.0), 0x7b);
        assert_eq!(f.encode(61440.0), 0x7c);
        assert_eq!(f.decode(0x7c), f32::INFINITY);
        assert!(f.decode(0x7d).is_nan());
    }

    #[test]
    fn f16_known_values() {
        let f = SmallFloat::F16;
        assert_eq!(f.encode(1.0), 0x3c00);
        assert_eq!(f.encode(65504.0), 0x7bff);
        assert_eq!(f.encode(65520.0), 0x7c00);
        // 2^-24 is the smallest subnormal; half of it ties to even (zero).
        assert_eq!(f.encode(2f64.powi(-24)), 0x0001);
        assert_eq!(f.encode(2f64.powi(-25)), 0x0000);
        assert_eq!(f.encode(1.5 * 2f64.powi(-25)), 0x0001);
        assert_eq!(f.encode(-2.0), 0xc000);
        // 1 + 2^-11 is the midpoint between 1 and 1 + 2^-10: ties to even, 1.
        assert_eq!(f.encode(1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(f.encode(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
        assert_eq!(f.decode(0x3555), 0.333_251_95);
    }

    #[test]
    fn bf16_fast_path_matches_generic_encoder() {
        for value in
            [1.0f32, 1.0 + 1.0 / 256.0, 1.0 + 3.0 / 256.0, -3.3e38, 3.4e38, 1e-40, 0.1, -0.0]
        {
            assert_eq!(
                SmallFloat::Bf16.encode_f32(value),
                SmallFloat::Bf16.encode(f64::from(value)),
                "{value}"
            );
        }
    }

    #[test]
    fn primitive_numbers_round_trip() {
        for ty in ElementType::ALL {
            assert_eq!(ElementType::from_primitive(ty as i32), Some(ty));
        }
        assert_eq!(ElementType::from_primitive(13), None);
    }
}

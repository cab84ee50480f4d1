//! libnrt's `nrt_dtype_t` and its two numberings (docs/abi-facts.md §4).
//!
//! The runtime renumbered `nrt_dtype_t` in 2025 to the hardware codes, an ABI break: the same
//! `u32` in `nrt_tensor_info_t.dtype` means FLOAT32 for an older library (1) and UINT64 for a newer
//! one. So [`NrtDtype`] is the *logical* element type, and every conversion to or from a code
//! takes a [`DtypeNumbering`]; which numbering a given runtime uses is the caller's decision.
//!
//! Choices:
//! - Code 0 is UNKNOWN in the legacy header and INVALID in the hardware one; both mean "no
//!   element type", so they are one variant, [`NrtDtype::Invalid`].
//! - A code neither table defines survives as [`NrtDtype::Unknown`], which remembers the
//!   numbering it was read under, so it is written back only under that numbering.
//! - FP32R and the three FP8 codes exist only in the hardware numbering; their legacy code is
//!   `None`. Bool and float64 have no code in either numbering.

/// Which `nrt_dtype_t` numbering a runtime uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DtypeNumbering {
    /// The headers up to mid-2025: UNKNOWN 0, FLOAT32 1 … UINT64 11.
    Legacy,
    /// The 2026 headers, which use the hardware codes: INVALID 0, UINT64 1 … FP8_E5 15.
    Hardware2026,
}

impl DtypeNumbering {
    /// Both numberings.
    pub const ALL: [DtypeNumbering; 2] = [DtypeNumbering::Legacy, DtypeNumbering::Hardware2026];

    /// The first runtime release (major, minor) that uses [`DtypeNumbering::Hardware2026`]: the
    /// public headers of 2.27.0 and 2.27.1 (aws-neuron/aws-neuron-sdk tags `v2.27.0`,
    /// `v2.27.1`, `nrt_experimental.h`) still number `nrt_dtype_t` the legacy way, and 2.28.0 is
    /// the first tag whose `nrt.h` has the hardware codes (`docs/dtype-numbering.md`). It is the
    /// one place both the C layer and the `nrt` backend take the cutoff from, and both let a
    /// caller override it.
    pub const HARDWARE_SINCE: (u64, u64) = (2, 28);

    /// The numbering a runtime of version `major.minor` is assumed to use.
    pub fn for_runtime_version(major: u64, minor: u64) -> DtypeNumbering {
        if (major, minor) >= DtypeNumbering::HARDWARE_SINCE {
            DtypeNumbering::Hardware2026
        } else {
            DtypeNumbering::Legacy
        }
    }
}

/// Declares the logical dtype enum with its code in each numbering and its name in one row each.
macro_rules! nrt_dtypes {
    ($($(#[$doc:meta])* $variant:ident: legacy $legacy:expr, hardware $hardware:expr, $name:literal;)*) => {
        /// A libnrt element type, independent of how a runtime numbers it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum NrtDtype {
            $($(#[$doc])* $variant,)*
            /// A code neither table defines, with the numbering it was read under.
            Unknown {
                /// The numbering the code was read under.
                numbering: DtypeNumbering,
                /// The raw code.
                code: u32,
            },
        }

        impl NrtDtype {
            /// Every known logical dtype.
            pub const ALL: &'static [NrtDtype] = &[$(NrtDtype::$variant,)*];

            /// The raw code under `numbering`; `None` when that numbering has no code for this
            /// type (FP8 and FP32R under [`DtypeNumbering::Legacy`], or an unknown code read under
            /// the other numbering).
            pub fn code(self, numbering: DtypeNumbering) -> Option<u32> {
                let (legacy, hardware): (Option<u32>, Option<u32>) = match self {
                    $(NrtDtype::$variant => ($legacy, $hardware),)*
                    NrtDtype::Unknown { numbering: read_under, code } => {
                        return (read_under == numbering).then_some(code);
                    }
                };
                match numbering {
                    DtypeNumbering::Legacy => legacy,
                    DtypeNumbering::Hardware2026 => hardware,
                }
            }

            /// The header's name without prefix (`FLOAT32`, `FP8_E4`); `None` for an unknown code.
            pub fn name(self) -> Option<&'static str> {
                match self {
                    $(NrtDtype::$variant => Some($name),)*
                    NrtDtype::Unknown { .. } => None,
                }
            }
        }
    };
}

nrt_dtypes! {
    /// No element type: UNKNOWN in the legacy header, INVALID in the hardware one.
    Invalid: legacy Some(0), hardware Some(0), "INVALID";
    /// 32-bit float.
    Float32: legacy Some(1), hardware Some(10), "FLOAT32";
    /// 16-bit IEEE float.
    Float16: legacy Some(2), hardware Some(7), "FLOAT16";
    /// bfloat16.
    BFloat16: legacy Some(3), hardware Some(6), "BFLOAT16";
    /// Signed 8-bit integer.
    Int8: legacy Some(4), hardware Some(2), "INT8";
    /// Unsigned 8-bit integer.
    Uint8: legacy Some(5), hardware Some(3), "UINT8";
    /// Signed 16-bit integer.
    Int16: legacy Some(6), hardware Some(4), "INT16";
    /// Unsigned 16-bit integer.
    Uint16: legacy Some(7), hardware Some(5), "UINT16";
    /// Signed 32-bit integer.
    Int32: legacy Some(8), hardware Some(8), "INT32";
    /// Unsigned 32-bit integer.
    Uint32: legacy Some(9), hardware Some(9), "UINT32";
    /// Signed 64-bit integer.
    Int64: legacy Some(10), hardware Some(12), "INT64";
    /// Unsigned 64-bit integer.
    Uint64: legacy Some(11), hardware Some(1), "UINT64";
    /// The hardware's FP32R format (hardware numbering only).
    Fp32r: legacy None, hardware Some(11), "FP32R";
    /// 8-bit float with a 3-bit exponent (hardware numbering only; no torch counterpart).
    Fp8E3: legacy None, hardware Some(13), "FP8_E3";
    /// 8-bit float with a 4-bit exponent (hardware numbering only); torch Float8_e4m3fn maps here.
    Fp8E4: legacy None, hardware Some(14), "FP8_E4";
    /// 8-bit float with a 5-bit exponent (hardware numbering only); torch Float8_e5m2 maps here.
    Fp8E5: legacy None, hardware Some(15), "FP8_E5";
}

impl NrtDtype {
    /// The logical dtype for `code` under `numbering`. Total: a code neither table defines
    /// becomes [`NrtDtype::Unknown`].
    pub fn from_code(numbering: DtypeNumbering, code: u32) -> NrtDtype {
        NrtDtype::ALL
            .iter()
            .copied()
            .find(|dtype| dtype.code(numbering) == Some(code))
            .unwrap_or(NrtDtype::Unknown { numbering, code })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_within_each_numbering() {
        for numbering in DtypeNumbering::ALL {
            let mut seen = std::collections::BTreeSet::new();
            for &dtype in NrtDtype::ALL {
                if let Some(code) = dtype.code(numbering) {
                    assert!(seen.insert(code), "{numbering:?} code {code} used twice");
                }
            }
        }
    }

    #[test]
    fn unknown_codes_are_written_back_only_under_their_numbering() {
        let dtype = NrtDtype::from_code(DtypeNumbering::Legacy, 12);
        assert_eq!(dtype, NrtDtype::Unknown { numbering: DtypeNumbering::Legacy, code: 12 });
        assert_eq!(dtype.code(DtypeNumbering::Legacy), Some(12));
        assert_eq!(dtype.code(DtypeNumbering::Hardware2026), None);
        assert_eq!(dtype.name(), None);
        assert_eq!(dtype.scalar_type(), None);
    }
}

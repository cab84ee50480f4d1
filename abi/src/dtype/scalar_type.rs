//! Torch c10 scalar types and libtorchneuron's `PROTO_AT_DTYPE_MAP` (docs/abi-facts.md §2).
//!
//! Only the thirteen c10 types the map produces are declared: this is the set of host dtypes a
//! Neuron model can have, not all of torch. The index is the c10 `ScalarType` value (what the
//! immediates of libtorchneuron's map are), the item size is c10's `scalarTypeItemSizes` entry, and the name is
//! the c10 identifier (`Float`, `BFloat16`, `Float8_e4m3fn`).
//!
//! Choice: [`ScalarType::canonical_data_type`] maps torch Byte to metaneff UINT8, not BYTE. Both
//! keys give Byte, but UINT8 is what torch-neuronx writes for a `torch.uint8` tensor (XLA U8 →
//! UINT8); BYTE has no known writer among public producers.

use std::fmt;

use super::DataType;
use super::dltype::Dltype;
use super::nrt_dtype::NrtDtype;

/// Declares the scalar-type enum with its index, item size and name in one row each, so the
/// columns cannot disagree.
macro_rules! scalar_types {
    ($($(#[$doc:meta])* $variant:ident = $index:literal, $item_size:literal bytes, $name:literal;)*) => {
        /// A torch c10 scalar type, as libtorchneuron allocates host tensors with it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ScalarType {
            $($(#[$doc])* $variant,)*
        }

        impl ScalarType {
            /// Every scalar type this ABI uses, in c10 index order.
            pub const ALL: &'static [ScalarType] = &[$(ScalarType::$variant,)*];

            /// The c10 `ScalarType` index.
            pub fn index(self) -> u8 {
                match self {
                    $(ScalarType::$variant => $index,)*
                }
            }

            /// The size of one element in bytes (c10's `scalarTypeItemSizes`).
            pub fn item_size(self) -> u64 {
                match self {
                    $(ScalarType::$variant => $item_size,)*
                }
            }

            /// The c10 identifier, e.g. `"Float"`, `"BFloat16"`, `"Float8_e4m3fn"`.
            pub fn name(self) -> &'static str {
                match self {
                    $(ScalarType::$variant => $name,)*
                }
            }
        }
    };
}

scalar_types! {
    /// `torch.uint8`.
    Byte = 0, 1 bytes, "Byte";
    /// `torch.int8`.
    Char = 1, 1 bytes, "Char";
    /// `torch.int16`.
    Short = 2, 2 bytes, "Short";
    /// `torch.int32`.
    Int = 3, 4 bytes, "Int";
    /// `torch.int64`.
    Long = 4, 8 bytes, "Long";
    /// `torch.float16`.
    Half = 5, 2 bytes, "Half";
    /// `torch.float32`.
    Float = 6, 4 bytes, "Float";
    /// `torch.float64`.
    Double = 7, 8 bytes, "Double";
    /// `torch.bool`, one byte per element.
    Bool = 11, 1 bytes, "Bool";
    /// `torch.bfloat16`.
    BFloat16 = 15, 2 bytes, "BFloat16";
    /// `torch.float8_e5m2`.
    Float8E5m2 = 23, 1 bytes, "Float8_e5m2";
    /// `torch.float8_e4m3fn`.
    Float8E4m3fn = 24, 1 bytes, "Float8_e4m3fn";
    /// `torch.uint16`.
    UInt16 = 27, 2 bytes, "UInt16";
}

/// libtorchneuron's `PROTO_AT_DTYPE_MAP`: every metaneff DataType it knows and the torch type it
/// allocates, in key order. UNDEFINED (0), STRING (4) and 11 are deliberately absent.
pub const PROTO_AT_DTYPE_MAP: [(DataType, ScalarType); 14] = [
    (DataType::Float, ScalarType::Float),
    (DataType::Int32, ScalarType::Int),
    (DataType::Byte, ScalarType::Byte),
    (DataType::Bool, ScalarType::Bool),
    (DataType::Uint8, ScalarType::Byte),
    (DataType::Int8, ScalarType::Char),
    (DataType::Uint16, ScalarType::UInt16),
    (DataType::Int16, ScalarType::Short),
    (DataType::Int64, ScalarType::Long),
    (DataType::Float16, ScalarType::Half),
    (DataType::Double, ScalarType::Double),
    (DataType::Bfloat16, ScalarType::BFloat16),
    (DataType::F8e4m3fn, ScalarType::Float8E4m3fn),
    (DataType::F8e5m2, ScalarType::Float8E5m2),
];

impl ScalarType {
    /// The scalar type with c10 index `index`, if this ABI uses it.
    pub fn from_index(index: u8) -> Option<ScalarType> {
        ScalarType::ALL.iter().copied().find(|s| s.index() == index)
    }

    /// The metaneff DataType a producer writes for this torch type. Total: every scalar type of
    /// [`PROTO_AT_DTYPE_MAP`] has at least one key. Byte gives UINT8 (what torch-neuronx writes
    /// for `torch.uint8`), not BYTE.
    pub fn canonical_data_type(self) -> DataType {
        match self {
            ScalarType::Byte => DataType::Uint8,
            ScalarType::Char => DataType::Int8,
            ScalarType::Short => DataType::Int16,
            ScalarType::Int => DataType::Int32,
            ScalarType::Long => DataType::Int64,
            ScalarType::Half => DataType::Float16,
            ScalarType::Float => DataType::Float,
            ScalarType::Double => DataType::Double,
            ScalarType::Bool => DataType::Bool,
            ScalarType::BFloat16 => DataType::Bfloat16,
            ScalarType::Float8E5m2 => DataType::F8e5m2,
            ScalarType::Float8E4m3fn => DataType::F8e4m3fn,
            ScalarType::UInt16 => DataType::Uint16,
        }
    }

    /// The libnrt element type, or `None` for Bool and Double: neither `nrt_dtype_t` numbering
    /// has a boolean or a 64-bit float code. The float8 types map to the hardware FP8_E4 / FP8_E5
    /// codes, which exist only in [`super::DtypeNumbering::Hardware2026`].
    pub fn nrt_dtype(self) -> Option<NrtDtype> {
        match self {
            ScalarType::Byte => Some(NrtDtype::Uint8),
            ScalarType::Char => Some(NrtDtype::Int8),
            ScalarType::Short => Some(NrtDtype::Int16),
            ScalarType::Int => Some(NrtDtype::Int32),
            ScalarType::Long => Some(NrtDtype::Int64),
            ScalarType::Half => Some(NrtDtype::Float16),
            ScalarType::Float => Some(NrtDtype::Float32),
            ScalarType::BFloat16 => Some(NrtDtype::BFloat16),
            ScalarType::Float8E5m2 => Some(NrtDtype::Fp8E5),
            ScalarType::Float8E4m3fn => Some(NrtDtype::Fp8E4),
            ScalarType::UInt16 => Some(NrtDtype::Uint16),
            ScalarType::Double | ScalarType::Bool => None,
        }
    }

    /// The neff.json `dltype` of this torch type. Total: every torch type here has one.
    pub fn dltype(self) -> Dltype {
        match self {
            ScalarType::Byte => Dltype::Uint8,
            ScalarType::Char => Dltype::Int8,
            ScalarType::Short => Dltype::Int16,
            ScalarType::Int => Dltype::Int32,
            ScalarType::Long => Dltype::Int64,
            ScalarType::Half => Dltype::Float16,
            ScalarType::Float => Dltype::Float32,
            ScalarType::Double => Dltype::Float64,
            ScalarType::Bool => Dltype::Bool,
            ScalarType::BFloat16 => Dltype::BFloat16,
            ScalarType::Float8E5m2 => Dltype::Float8E5m2,
            ScalarType::Float8E4m3fn => Dltype::Float8E4m3fn,
            ScalarType::UInt16 => Dltype::Uint16,
        }
    }

    /// The c10 names, for error messages.
    pub(super) fn expected_names() -> String {
        ScalarType::ALL.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
    }

    /// The map's keys as `NAME (n)`, for error messages.
    pub(super) fn expected_data_types() -> String {
        PROTO_AT_DTYPE_MAP
            .iter()
            .map(|(key, _)| format!("{} ({})", key.as_str_name(), *key as i32))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl NrtDtype {
    /// The torch type a host tensor of this element type has; `None` where torch (as this ABI
    /// uses it) has no counterpart: UINT32, UINT64, FP32R, FP8_E3, INVALID and unknown codes.
    pub fn scalar_type(self) -> Option<ScalarType> {
        ScalarType::ALL.iter().copied().find(|scalar_type| scalar_type.nrt_dtype() == Some(self))
    }
}

#[cfg(test)]
mod tests {
    // The tests go through the module's public face, lookups included.
    use super::*;
    use crate::dtype::*;

    #[test]
    fn names_and_indices_round_trip_and_are_unique() {
        let mut names = std::collections::BTreeSet::new();
        for &scalar_type in ScalarType::ALL {
            assert_eq!(ScalarType::from_name(scalar_type.name()), Ok(scalar_type));
            assert_eq!(scalar_type.name().parse::<ScalarType>(), Ok(scalar_type));
            assert_eq!(ScalarType::from_index(scalar_type.index()), Some(scalar_type));
            assert!(names.insert(scalar_type.name()), "duplicate name {scalar_type}");
        }
        assert_eq!(ScalarType::ALL.len(), 13);
        assert_eq!(ScalarType::from_index(8), None);
    }

    #[test]
    fn names_are_exact_c10_identifiers() {
        let err = ScalarType::from_name("float").unwrap_err();
        assert_eq!(err, DtypeError::UnknownScalarTypeName { name: "float".to_owned() });
        let message = err.to_string();
        assert!(
            message.starts_with("unknown torch scalar type name \"float\": expected one of Byte")
        );
        assert!(message.contains("Float8_e4m3fn"));
    }

    #[test]
    fn every_scalar_type_is_a_value_of_the_map_and_its_canonical_key_maps_back() {
        for &scalar_type in ScalarType::ALL {
            let key = scalar_type.canonical_data_type();
            assert!(PROTO_AT_DTYPE_MAP.contains(&(key, scalar_type)), "{scalar_type}");
            assert_eq!(scalar_type_of(key), Ok(scalar_type));
        }
    }
}

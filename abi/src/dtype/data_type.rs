//! The metaneff element type, `MetaTensor.DataType`, declared by hand.
//!
//! The enum belongs to the contract, which is built without prost: the dtype tables join it to
//! the other vocabularies, and `nrt` and the recorder use those tables without decoding a
//! metaneff. The generated metaneff messages refer to this enum (an `extern_path` of the code
//! generator) instead of declaring their own, so it is still the only copy in the crate.
//!
//! It offers what prost's `Enumeration` derive gave the generated enum, with the same names and
//! results: the protobuf names both ways, [`DataType::is_valid`], `Default` (UNDEFINED), and
//! conversions to and from the wire `i32`. Its rows are the enum of `abi/proto/metaneff.proto`;
//! a test checks them against the embedded descriptor.

/// Declares the enum with its wire value and protobuf name in one row each.
macro_rules! data_types {
    ($($(#[$doc:meta])* $variant:ident = $value:literal, $name:literal;)*) => {
        /// The element type of a metaneff tensor (`MetaTensor.DataType`); on the wire it is an
        /// `i32` that may name no variant, which is why every lookup has a `_raw` twin.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i32)]
        pub enum DataType {
            $($(#[$doc])* $variant = $value,)*
        }

        impl DataType {
            /// Every variant, in wire-value order.
            pub const ALL: &[DataType] = &[$(DataType::$variant,)*];

            /// The name of the variant in the proto file (`FLOAT`, `BFLOAT16`, …).
            pub fn as_str_name(&self) -> &'static str {
                match self {
                    $(DataType::$variant => $name,)*
                }
            }

            /// The variant the proto file names `value`, if any.
            pub fn from_str_name(value: &str) -> Option<Self> {
                match value {
                    $($name => Some(DataType::$variant),)*
                    _ => None,
                }
            }

            /// Whether `value` is the wire value of a variant.
            pub const fn is_valid(value: i32) -> bool {
                matches!(value, $($value)|*)
            }
        }

        impl TryFrom<i32> for DataType {
            type Error = UnknownDataType;

            fn try_from(value: i32) -> Result<Self, UnknownDataType> {
                match value {
                    $($value => Ok(DataType::$variant),)*
                    _ => Err(UnknownDataType(value)),
                }
            }
        }
    };
}

data_types! {
    /// No element type given.
    Undefined = 0, "UNDEFINED";
    /// IEEE binary32.
    Float = 1, "FLOAT";
    /// Signed 32-bit integer.
    Int32 = 2, "INT32";
    /// A byte (torch `Byte`, as UINT8).
    Byte = 3, "BYTE";
    /// A string; libtorchneuron maps no torch type to it.
    String = 4, "STRING";
    /// A boolean, one byte.
    Bool = 5, "BOOL";
    /// Unsigned 8-bit integer.
    Uint8 = 6, "UINT8";
    /// Signed 8-bit integer.
    Int8 = 7, "INT8";
    /// Unsigned 16-bit integer.
    Uint16 = 8, "UINT16";
    /// Signed 16-bit integer.
    Int16 = 9, "INT16";
    /// Signed 64-bit integer.
    Int64 = 10, "INT64";
    /// IEEE binary16.
    Float16 = 12, "FLOAT16";
    /// IEEE binary64.
    Double = 13, "DOUBLE";
    /// bfloat16.
    Bfloat16 = 14, "BFLOAT16";
    /// 8-bit float, 4 exponent bits, 3 mantissa bits, no infinities.
    F8e4m3fn = 15, "F8E4M3FN";
    /// 8-bit float, 5 exponent bits, 2 mantissa bits.
    F8e5m2 = 16, "F8E5M2";
}

impl Default for DataType {
    /// UNDEFINED, the proto default (value 0).
    fn default() -> Self {
        DataType::Undefined
    }
}

impl From<DataType> for i32 {
    fn from(data_type: DataType) -> i32 {
        data_type as i32
    }
}

/// A wire value that names no [`DataType`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no metaneff DataType has the value {0}")]
pub struct UnknownDataType(pub i32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_round_trip() {
        for &data_type in DataType::ALL {
            assert_eq!(DataType::from_str_name(data_type.as_str_name()), Some(data_type));
            assert_eq!(DataType::try_from(data_type as i32), Ok(data_type));
            assert!(DataType::is_valid(data_type.into()));
        }
        for value in [-1, 11, 17] {
            assert_eq!(DataType::try_from(value), Err(UnknownDataType(value)));
            assert!(!DataType::is_valid(value));
        }
        assert_eq!(DataType::from_str_name("float"), None);
        assert_eq!(DataType::default(), DataType::Undefined);
    }
}

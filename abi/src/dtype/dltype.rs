//! neff.json `dltype` strings (docs/abi-facts.md §5) and their joins to the other vocabularies.
//!
//! The compiler writes one `dltype` per graph tensor in `attrs.dltype`, and newer files a `dtype`
//! per signature input; both use these strings. Each row carries the item size, the libnrt
//! element type, the metaneff DataType and the XLA primitive type, so the joins cannot drift.
//!
//! Choices:
//! - Reading is liberal: besides the fifteen canonical strings, `float8_e4m3` is accepted as
//!   `float8_e4m3fn`, because both spellings name the same 4-bit-exponent fp8 in the tools around
//!   the compiler. Writing always produces the canonical string. Matching is case-sensitive,
//!   since no producer writes another case.
//! - `uint32` and `uint64` have no metaneff DataType of their own: producers collapse them to
//!   INT32 and INT64 (see [`super::Producer`]), so [`Dltype::data_type`] is `None` for them and a
//!   checker should go through [`Dltype::xla_primitive_type`] and the producer's map instead.
//! - `float64` and `bool` have no `nrt_dtype_t` in either numbering.
//! - metaneff BYTE and UINT8 both read as `uint8`; `uint8` reads back as UINT8.

use std::fmt;

use super::DataType;
use super::nrt_dtype::NrtDtype;
use super::producer::XlaPrimitiveType;

/// Declares the dltype enum with all of its columns in one row each.
macro_rules! dltypes {
    ($($variant:ident = $name:literal, $item_size:literal bytes, nrt $nrt:expr, metaneff $data_type:expr, xla $xla:ident;)*) => {
        /// A neff.json `dltype`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Dltype {
            $(#[doc = concat!("`", $name, "`.")] $variant,)*
        }

        impl Dltype {
            /// Every dltype.
            pub const ALL: &'static [Dltype] = &[$(Dltype::$variant,)*];

            /// The canonical string, as the compiler writes it.
            pub fn name(self) -> &'static str {
                match self {
                    $(Dltype::$variant => $name,)*
                }
            }

            /// The size of one element in bytes.
            pub fn item_size(self) -> u64 {
                match self {
                    $(Dltype::$variant => $item_size,)*
                }
            }

            /// The libnrt element type; `None` for `float64` and `bool`.
            pub fn nrt_dtype(self) -> Option<NrtDtype> {
                match self {
                    $(Dltype::$variant => $nrt,)*
                }
            }

            /// The metaneff DataType of the same element type; `None` for `uint32` and `uint64`,
            /// which metaneff cannot spell (producers collapse them to INT32 and INT64).
            pub fn data_type(self) -> Option<DataType> {
                match self {
                    $(Dltype::$variant => $data_type,)*
                }
            }

            /// The XLA primitive type of the same element type.
            pub fn xla_primitive_type(self) -> XlaPrimitiveType {
                match self {
                    $(Dltype::$variant => XlaPrimitiveType::$xla,)*
                }
            }
        }
    };
}

dltypes! {
    Float32 = "float32", 4 bytes, nrt Some(NrtDtype::Float32), metaneff Some(DataType::Float), xla F32;
    Float16 = "float16", 2 bytes, nrt Some(NrtDtype::Float16), metaneff Some(DataType::Float16), xla F16;
    BFloat16 = "bfloat16", 2 bytes, nrt Some(NrtDtype::BFloat16), metaneff Some(DataType::Bfloat16), xla Bf16;
    Float64 = "float64", 8 bytes, nrt None, metaneff Some(DataType::Double), xla F64;
    Int8 = "int8", 1 bytes, nrt Some(NrtDtype::Int8), metaneff Some(DataType::Int8), xla S8;
    Uint8 = "uint8", 1 bytes, nrt Some(NrtDtype::Uint8), metaneff Some(DataType::Uint8), xla U8;
    Int16 = "int16", 2 bytes, nrt Some(NrtDtype::Int16), metaneff Some(DataType::Int16), xla S16;
    Uint16 = "uint16", 2 bytes, nrt Some(NrtDtype::Uint16), metaneff Some(DataType::Uint16), xla U16;
    Int32 = "int32", 4 bytes, nrt Some(NrtDtype::Int32), metaneff Some(DataType::Int32), xla S32;
    Uint32 = "uint32", 4 bytes, nrt Some(NrtDtype::Uint32), metaneff None, xla U32;
    Int64 = "int64", 8 bytes, nrt Some(NrtDtype::Int64), metaneff Some(DataType::Int64), xla S64;
    Uint64 = "uint64", 8 bytes, nrt Some(NrtDtype::Uint64), metaneff None, xla U64;
    Bool = "bool", 1 bytes, nrt None, metaneff Some(DataType::Bool), xla Pred;
    Float8E4m3fn = "float8_e4m3fn", 1 bytes, nrt Some(NrtDtype::Fp8E4), metaneff Some(DataType::F8e4m3fn), xla F8e4m3fn;
    Float8E5m2 = "float8_e5m2", 1 bytes, nrt Some(NrtDtype::Fp8E5), metaneff Some(DataType::F8e5m2), xla F8e5m2;
}

/// Spellings accepted on read besides the canonical names.
const READ_ALIASES: &[(&str, Dltype)] = &[("float8_e4m3", Dltype::Float8E4m3fn)];

impl Dltype {
    /// The dltype spelled `name`: a canonical string or a read alias; `None` when it is neither
    /// (the fallible form, with the error, is [`Dltype::from_name`]).
    pub(super) fn find_name(name: &str) -> Option<Dltype> {
        Dltype::ALL
            .iter()
            .copied()
            .find(|dltype| dltype.name() == name)
            .or_else(|| READ_ALIASES.iter().find(|(alias, _)| *alias == name).map(|&(_, d)| d))
    }

    /// The dltype of a libnrt element type; `None` for INVALID, FP32R, FP8_E3 and unknown codes.
    pub fn from_nrt_dtype(nrt_dtype: NrtDtype) -> Option<Dltype> {
        Dltype::ALL.iter().copied().find(|dltype| dltype.nrt_dtype() == Some(nrt_dtype))
    }

    /// The canonical names and the read aliases, for error messages.
    pub(super) fn expected_names() -> String {
        let canonical = Dltype::ALL.iter().map(|d| d.name());
        let aliases = READ_ALIASES.iter().map(|(alias, _)| *alias);
        canonical.chain(aliases).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for Dltype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    // The tests go through the module's public face, lookups included.
    use super::*;
    use crate::dtype::*;

    #[test]
    fn canonical_names_round_trip_and_alias_reads_as_e4m3fn() {
        for &dltype in Dltype::ALL {
            assert_eq!(Dltype::from_name(dltype.name()), Ok(dltype));
        }
        assert_eq!(Dltype::from_name("float8_e4m3"), Ok(Dltype::Float8E4m3fn));
        assert_eq!(Dltype::Float8E4m3fn.to_string(), "float8_e4m3fn");
    }

    #[test]
    fn unknown_dltype_names_the_string() {
        let err = Dltype::from_name("Float32").unwrap_err();
        assert_eq!(err, DtypeError::UnknownDltype { name: "Float32".to_owned() });
        assert!(
            err.to_string().starts_with("unknown neff.json dltype \"Float32\": expected one of")
        );
    }

    #[test]
    fn item_sizes_agree_with_the_torch_types() {
        for &dltype in Dltype::ALL {
            if let Some(data_type) = dltype.data_type() {
                assert_eq!(super::super::item_size_of(data_type), Ok(dltype.item_size()));
                assert_eq!(dltype_of(data_type), Ok(dltype));
            }
        }
    }
}

//! `.npy` descrs: the one table of which numpy dtype string stands for which element type.
//!
//! numpy has codes for the integer, bool and IEEE float types, and none for bfloat16 or the fp8
//! types. What `np.save` writes for an ml_dtypes array is the raw void descr of the item size:
//! `<V2` for bfloat16, `|V1` for every fp8 type (older ml_dtypes releases wrote `<f1` for
//! float8_e5m2, which `np.load` refuses), and `np.load` gives back void elements that
//! `.view(ml_dtypes.bfloat16)` reinterprets. Hand-written headers sometimes carry the ml_dtypes
//! name (`bfloat16`, `float8_e4m3fn`) instead. So:
//! - **Writing** gives one descr per type ([`NpyType::descr`]): little-endian `<` for multi-byte
//!   items, `|` for one-byte ones, `<V2`/`|V1` for the ml_dtypes types, which `np.load` reads.
//! - **Reading against a known type** ([`NpyType::accepts`]) takes every spelling of that type:
//!   `<` or `=` (this little-endian host's order) for multi-byte items, any order for one-byte
//!   items, the void descr of the item size, the ml_dtypes name, and `<f1` for float8_e5m2.
//!   Big-endian data is refused.
//! - **Reading with no type to go by** ([`NpyType::of_descr`]) is the same, except that `|V1`
//!   cannot tell the fp8 types apart: that is an error that says the signature decides.

use std::fmt;

use super::dltype::Dltype;
use super::error::DtypeError;
use super::scalar_type::ScalarType;

/// Declares [`NpyType`] with its columns in one row each.
macro_rules! npy_types {
    ($($variant:ident = $name:literal, $descr:literal, xla $xla:literal,
        dltype $dltype:expr, torch $torch:expr;)*) => {
        /// An element type as a `.npy` file can hold it: every element type any layer reads
        /// from or writes to `.npy`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum NpyType {
            $(#[doc = concat!("`", $name, "`, written `", $descr, "`.")] $variant,)*
        }

        impl NpyType {
            /// Every type, in the table's order.
            pub const ALL: &'static [NpyType] = &[$(NpyType::$variant,)*];

            /// The numpy (or ml_dtypes) name, as `str(array.dtype)` spells it.
            pub fn name(self) -> &'static str {
                match self {
                    $(NpyType::$variant => $name,)*
                }
            }

            /// The descr written for this type.
            pub fn descr(self) -> &'static str {
                match self {
                    $(NpyType::$variant => $descr,)*
                }
            }

            /// The XLA primitive type name (`PRED`, `F32`, `F8E4M3FN`).
            pub fn xla_name(self) -> &'static str {
                match self {
                    $(NpyType::$variant => $xla,)*
                }
            }

            /// The neff.json dltype; `None` for float8_e4m3, which neff.json cannot spell.
            pub fn dltype(self) -> Option<Dltype> {
                match self {
                    $(NpyType::$variant => $dltype,)*
                }
            }

            /// The torch scalar type; `None` for uint32, uint64 and float8_e4m3, which
            /// libtorchneuron's tensors cannot hold.
            pub fn scalar_type(self) -> Option<ScalarType> {
                match self {
                    $(NpyType::$variant => $torch,)*
                }
            }
        }
    };
}

npy_types! {
    Bool = "bool", "|b1", xla "PRED", dltype Some(Dltype::Bool), torch Some(ScalarType::Bool);
    Int8 = "int8", "|i1", xla "S8", dltype Some(Dltype::Int8), torch Some(ScalarType::Char);
    Uint8 = "uint8", "|u1", xla "U8", dltype Some(Dltype::Uint8), torch Some(ScalarType::Byte);
    Int16 = "int16", "<i2", xla "S16", dltype Some(Dltype::Int16), torch Some(ScalarType::Short);
    Uint16 = "uint16", "<u2", xla "U16", dltype Some(Dltype::Uint16), torch Some(ScalarType::UInt16);
    Int32 = "int32", "<i4", xla "S32", dltype Some(Dltype::Int32), torch Some(ScalarType::Int);
    Uint32 = "uint32", "<u4", xla "U32", dltype Some(Dltype::Uint32), torch None;
    Int64 = "int64", "<i8", xla "S64", dltype Some(Dltype::Int64), torch Some(ScalarType::Long);
    Uint64 = "uint64", "<u8", xla "U64", dltype Some(Dltype::Uint64), torch None;
    Float16 = "float16", "<f2", xla "F16", dltype Some(Dltype::Float16), torch Some(ScalarType::Half);
    Float32 = "float32", "<f4", xla "F32", dltype Some(Dltype::Float32), torch Some(ScalarType::Float);
    Float64 = "float64", "<f8", xla "F64", dltype Some(Dltype::Float64), torch Some(ScalarType::Double);
    BFloat16 = "bfloat16", "<V2", xla "BF16", dltype Some(Dltype::BFloat16), torch Some(ScalarType::BFloat16);
    Float8E4m3fn = "float8_e4m3fn", "|V1", xla "F8E4M3FN", dltype Some(Dltype::Float8E4m3fn), torch Some(ScalarType::Float8E4m3fn);
    Float8E4m3 = "float8_e4m3", "|V1", xla "F8E4M3", dltype None, torch None;
    Float8E5m2 = "float8_e5m2", "|V1", xla "F8E5M2", dltype Some(Dltype::Float8E5m2), torch Some(ScalarType::Float8E5m2);
}

/// The spellings read besides each type's own descr and name: what older ml_dtypes wrote.
const READ_ALIASES: &[(&str, NpyType)] = &[("<f1", NpyType::Float8E5m2)];

/// A descr taken apart: its byte-order character (if any), its kind letter and its item size.
struct Parsed<'a> {
    order: Option<char>,
    kind: &'a str,
    size: &'a str,
}

fn parse(descr: &str) -> Option<Parsed<'_>> {
    let (order, rest) = match descr.chars().next()? {
        c @ ('<' | '>' | '=' | '|') => (Some(c), &descr[1..]),
        _ => (None, descr),
    };
    let split = rest.find(|c: char| c.is_ascii_digit())?;
    let (kind, size) = rest.split_at(split);
    (kind.len() == 1 && size.bytes().all(|b| b.is_ascii_digit())).then_some(Parsed {
        order,
        kind,
        size,
    })
}

impl NpyType {
    /// The size of one element in bytes.
    pub fn item_size(self) -> u64 {
        // The descr's digits are the item size, `V` included.
        self.descr()[2..].parse().unwrap_or(1)
    }

    /// Whether a file of descr `descr` may hold elements of this type (see the module docs for
    /// the spellings taken).
    pub fn accepts(self, descr: &str) -> bool {
        if descr == self.name() || READ_ALIASES.contains(&(descr, self)) {
            return true;
        }
        let (Some(given), Some(own)) = (parse(descr), parse(self.descr())) else {
            return false;
        };
        if (given.kind, given.size) != (own.kind, own.size) {
            return false;
        }
        // One-byte items have no order; multi-byte ones must be this host's (little-endian).
        self.item_size() == 1 || given.kind == "V" || matches!(given.order, None | Some('<' | '='))
    }

    /// The one type a descr names.
    ///
    /// # Errors
    /// [`DtypeError::AmbiguousNpyDescr`] for a one-byte void descr (`|V1`: one of the fp8
    /// types, told apart only by the signature); [`DtypeError::UnknownNpyDescr`] for a descr no
    /// type takes (big-endian data, complex numbers, strings, …).
    pub fn of_descr(descr: &str) -> Result<NpyType, DtypeError> {
        let mut matching = NpyType::ALL.iter().copied().filter(|ty| ty.accepts(descr));
        match (matching.next(), matching.next()) {
            (Some(ty), None) => Ok(ty),
            (Some(_), Some(_)) => Err(DtypeError::AmbiguousNpyDescr {
                descr: descr.to_owned(),
                candidates: NpyType::ALL
                    .iter()
                    .filter(|ty| ty.accepts(descr))
                    .map(|ty| ty.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            (None, _) => Err(DtypeError::UnknownNpyDescr {
                descr: descr.to_owned(),
                expected: NpyType::ALL.iter().map(|ty| ty.descr()).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// The type of an XLA primitive type name (`F32`, `PRED`, `F8E4M3FN`); `None` for types a
    /// `.npy` file does not hold here (tuples, tokens, complex numbers, the 4-bit types).
    pub fn from_xla_name(name: &str) -> Option<NpyType> {
        NpyType::ALL.iter().copied().find(|ty| ty.xla_name() == name)
    }
}

impl From<Dltype> for NpyType {
    fn from(dltype: Dltype) -> NpyType {
        let found = NpyType::ALL.iter().copied().find(|ty| ty.dltype() == Some(dltype));
        // Every dltype has a row (the table test checks it); float32 is never reached.
        found.unwrap_or(NpyType::Float32)
    }
}

impl From<ScalarType> for NpyType {
    fn from(scalar_type: ScalarType) -> NpyType {
        let found = NpyType::ALL.iter().copied().find(|ty| ty.scalar_type() == Some(scalar_type));
        // Every scalar type has a row (the table test checks it); float32 is never reached.
        found.unwrap_or(NpyType::Float32)
    }
}

impl fmt::Display for NpyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dltype_and_scalar_type_has_one_row_that_maps_back() {
        for &dltype in Dltype::ALL {
            let ty = NpyType::from(dltype);
            assert_eq!(ty.dltype(), Some(dltype), "{dltype}");
            assert_eq!(ty.item_size(), dltype.item_size(), "{dltype}");
            assert_eq!(ty.xla_name(), dltype.xla_primitive_type().name(), "{dltype}");
        }
        for &scalar_type in ScalarType::ALL {
            let ty = NpyType::from(scalar_type);
            assert_eq!(ty.scalar_type(), Some(scalar_type), "{scalar_type}");
            assert_eq!(ty.item_size(), scalar_type.item_size(), "{scalar_type}");
        }
    }

    #[test]
    fn what_is_written_is_what_numpy_and_ml_dtypes_write() {
        // numpy's own codes, and np.save of ml_dtypes arrays.
        let written: Vec<(&str, &str)> =
            NpyType::ALL.iter().map(|t| (t.name(), t.descr())).collect();
        assert_eq!(
            written,
            [
                ("bool", "|b1"),
                ("int8", "|i1"),
                ("uint8", "|u1"),
                ("int16", "<i2"),
                ("uint16", "<u2"),
                ("int32", "<i4"),
                ("uint32", "<u4"),
                ("int64", "<i8"),
                ("uint64", "<u8"),
                ("float16", "<f2"),
                ("float32", "<f4"),
                ("float64", "<f8"),
                ("bfloat16", "<V2"),
                ("float8_e4m3fn", "|V1"),
                ("float8_e4m3", "|V1"),
                ("float8_e5m2", "|V1"),
            ]
        );
    }

    #[test]
    fn every_written_descr_reads_back_and_only_fp8_needs_the_signature() {
        for &ty in NpyType::ALL {
            assert!(ty.accepts(ty.descr()), "{ty}");
            assert!(ty.accepts(ty.name()), "{ty}");
            match NpyType::of_descr(ty.descr()) {
                Ok(read) => assert_eq!(read, ty),
                Err(DtypeError::AmbiguousNpyDescr { candidates, .. }) => {
                    assert!(ty.name().starts_with("float8"), "{ty}");
                    assert_eq!(candidates, "float8_e4m3fn, float8_e4m3, float8_e5m2");
                }
                Err(other) => panic!("{ty}: {other}"),
            }
            assert_eq!(NpyType::of_descr(ty.name()), Ok(ty));
        }
    }

    #[test]
    fn byte_order_and_the_other_spellings() {
        assert!(NpyType::Float32.accepts("=f4"));
        assert!(NpyType::Float32.accepts("f4"));
        assert!(!NpyType::Float32.accepts(">f4"), "big-endian data is refused");
        assert!(!NpyType::Float32.accepts("<f8"));
        assert!(NpyType::Int8.accepts("<i1") && NpyType::Int8.accepts(">i1"));
        assert!(NpyType::Bool.accepts("<b1"));
        assert!(NpyType::BFloat16.accepts("|V2") && NpyType::BFloat16.accepts("V2"));
        assert!(NpyType::Float8E5m2.accepts("<f1"));
        assert!(!NpyType::Float8E4m3fn.accepts("<f1"));
        assert!(!NpyType::Float8E4m3.accepts("float8_e4m3fn"));
        assert_eq!(NpyType::of_descr("<f1"), Ok(NpyType::Float8E5m2));
        assert_eq!(NpyType::of_descr("float8_e4m3"), Ok(NpyType::Float8E4m3));
    }

    #[test]
    fn a_descr_no_type_takes_is_an_error_naming_it() {
        for descr in [">f4", "<c8", "|S5", "<U3", "", "<", "f", "<f4x", "é4", "<V3"] {
            let error = NpyType::of_descr(descr).expect_err(descr);
            let text = error.to_string();
            assert!(text.contains(&format!("{descr:?}")), "{text}");
            assert!(text.contains("<f4") && text.contains("<V2"), "{text}");
        }
        let text = NpyType::of_descr("|V1").expect_err("ambiguous").to_string();
        assert!(text.contains("float8_e5m2") && text.contains("signature"), "{text}");
    }

    #[test]
    fn xla_names_find_their_rows() {
        assert_eq!(NpyType::from_xla_name("PRED"), Some(NpyType::Bool));
        assert_eq!(NpyType::from_xla_name("F8E4M3"), Some(NpyType::Float8E4m3));
        assert_eq!(NpyType::from_xla_name("C64"), None);
    }
}

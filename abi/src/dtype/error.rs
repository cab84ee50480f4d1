//! The one error type of [`crate::dtype`].
//!
//! Every message says what was expected and what came, names the offending value (a data_type
//! with its enumerator name and number, a string in quotes, a dimension with its index), and is
//! lowercase without a trailing period, so callers can wrap it in their own context.

use super::DataType;
use super::dltype::Dltype;
use super::producer::XlaPrimitiveType;
use super::scalar_type::ScalarType;

/// A metaneff data_type for messages: `STRING (4)` for a known enumerator, `11 (no such
/// DataType)` for a value the enum does not define.
pub fn describe_data_type(value: i32) -> String {
    match DataType::try_from(value) {
        Ok(data_type) => format!("{} ({value})", data_type.as_str_name()),
        Err(_) => format!("{value} (no such DataType)"),
    }
}

/// A failed element-type lookup or byte-size computation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DtypeError {
    /// A metaneff data_type that libtorchneuron's `PROTO_AT_DTYPE_MAP` has no entry for
    /// (UNDEFINED, STRING, the unused 11, or any value the enum does not define).
    #[error(
        "unsupported metaneff data_type {}: libtorchneuron's PROTO_AT_DTYPE_MAP has no entry for it \
         (expected one of {})",
        describe_data_type(*value),
        ScalarType::expected_data_types()
    )]
    UnsupportedDataType {
        /// The raw wire value.
        value: i32,
    },

    /// A metaneff data_type whose torch type has no `nrt_dtype_t` in either numbering (BOOL,
    /// DOUBLE).
    #[error(
        "metaneff data_type {} has no nrt_dtype_t: expected a type with a libnrt code, and neither \
         numbering has one for torch {scalar_type}",
        describe_data_type(*value)
    )]
    NoNrtDtype {
        /// The raw wire value.
        value: i32,
        /// The torch type the value maps to.
        scalar_type: ScalarType,
    },

    /// A string that is not a torch c10 scalar type name this ABI uses.
    #[error(
        "unknown torch scalar type name {name:?}: expected one of {}",
        ScalarType::expected_names()
    )]
    UnknownScalarTypeName {
        /// The string that came.
        name: String,
    },

    /// A string that is not a neff.json `dltype`.
    #[error("unknown neff.json dltype {name:?}: expected one of {}", Dltype::expected_names())]
    UnknownDltype {
        /// The string that came.
        name: String,
    },

    /// A string that is not an XLA primitive type name producers map.
    #[error(
        "unknown XLA primitive type {name:?}: expected one of {}",
        XlaPrimitiveType::expected_names()
    )]
    UnknownXlaPrimitiveType {
        /// The string that came.
        name: String,
    },

    /// A shape with a negative dimension.
    #[error("expected a non-negative dimension at shape index {index}, got {value}")]
    NegativeDimension {
        /// The index of the dimension in the shape.
        index: usize,
        /// The dimension.
        value: i64,
    },

    /// A dynamic batch size that is negative.
    #[error("expected a non-negative dynamic batch size, got {batch}")]
    NegativeBatch {
        /// The batch size that came.
        batch: i64,
    },

    /// A dynamic batch size for a 0-dimensional tensor, which has no leading dimension to replace.
    #[error(
        "scalar tensor cannot have allow_dynamic_batch_size=True: expected a shape with a leading \
         dimension to replace with batch {batch}, got an empty shape"
    )]
    ScalarWithDynamicBatch {
        /// The batch size that came.
        batch: i64,
    },

    /// A shape whose element count does not fit in 64 bits.
    #[error("expected the element count of shape {shape:?} to fit in u64, it overflows")]
    ElementCountOverflow {
        /// The shape (after any batch replacement).
        shape: Vec<i64>,
    },

    /// A shape whose byte size does not fit in 64 bits.
    #[error(
        "expected the byte size of shape {shape:?} with {item_size}-byte items to fit in u64, it \
         overflows"
    )]
    ByteSizeOverflow {
        /// The shape (after any batch replacement).
        shape: Vec<i64>,
        /// The item size in bytes.
        item_size: u64,
    },

    /// A number that an integer tensor type cannot hold exactly.
    #[error("value {value} does not fit torch {scalar_type}: expected a whole number in its range")]
    ValueOutOfRange {
        /// The torch type.
        scalar_type: &'static str,
        /// The value, as written.
        value: String,
    },

    /// A type whose elements this crate does not convert from numbers (the float8 types).
    #[error("no number conversion for torch {scalar_type}: give its bytes directly")]
    NoElementConversion {
        /// The torch type.
        scalar_type: &'static str,
    },

    /// A `.npy` descr that names no element type here.
    #[error("npy descr {descr:?} names no element type here: expected one of {expected}")]
    UnknownNpyDescr {
        /// The descr, as the file has it.
        descr: String,
        /// The descrs written, comma-separated.
        expected: String,
    },

    /// A `.npy` descr that several element types are written as (`|V1`, every fp8 type).
    #[error(
        "npy descr {descr:?} is raw bytes that may be {candidates}: the signature's dtype decides \
         which, and none was given"
    )]
    AmbiguousNpyDescr {
        /// The descr, as the file has it.
        descr: String,
        /// The types it may be, comma-separated.
        candidates: String,
    },
}

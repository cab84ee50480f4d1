//! The fallible lookups: names and wire values that come from outside, joined to the tables
//! with a [`DtypeError`] when they miss.
//!
//! The modules below this one are the tables (one per vocabulary, each importing only the
//! vocabularies it names in its columns) and the error type, which names the tables' expected
//! values in its messages; this module sits above both, so the imports among the `dtype` files go
//! one way: `producer`, `nrt_dtype` → `dltype` → `scalar_type` → `error` → `lookup` → `size`.

use std::str::FromStr;

use super::DataType;
use super::dltype::Dltype;
use super::error::DtypeError;
use super::nrt_dtype::NrtDtype;
use super::producer::{Producer, XlaPrimitiveType};
use super::scalar_type::{PROTO_AT_DTYPE_MAP, ScalarType};

impl ScalarType {
    /// The scalar type whose c10 identifier is exactly `name` (`"Float"`, `"Float8_e4m3fn"`).
    ///
    /// # Errors
    ///
    /// [`DtypeError::UnknownScalarTypeName`] when no scalar type of this ABI has that name.
    pub fn from_name(name: &str) -> Result<ScalarType, DtypeError> {
        ScalarType::ALL
            .iter()
            .copied()
            .find(|s| s.name() == name)
            .ok_or_else(|| DtypeError::UnknownScalarTypeName { name: name.to_owned() })
    }
}

impl FromStr for ScalarType {
    type Err = DtypeError;

    fn from_str(name: &str) -> Result<ScalarType, DtypeError> {
        ScalarType::from_name(name)
    }
}

/// The torch type libtorchneuron allocates for a metaneff DataType.
///
/// # Errors
///
/// [`DtypeError::UnsupportedDataType`] for UNDEFINED and STRING, which the map has no entry for.
pub fn scalar_type_of(data_type: DataType) -> Result<ScalarType, DtypeError> {
    scalar_type_of_raw(data_type as i32)
}

/// [`scalar_type_of`] for the raw wire value, which may be a value the enum does not define.
///
/// # Errors
///
/// [`DtypeError::UnsupportedDataType`] naming the value when the map has no entry for it
/// (0, 4, 11, negative values, values above 16).
pub fn scalar_type_of_raw(value: i32) -> Result<ScalarType, DtypeError> {
    PROTO_AT_DTYPE_MAP
        .iter()
        .find(|(key, _)| *key as i32 == value)
        .map(|&(_, scalar_type)| scalar_type)
        .ok_or(DtypeError::UnsupportedDataType { value })
}

/// The element size in bytes of a metaneff DataType, through [`PROTO_AT_DTYPE_MAP`].
///
/// # Errors
///
/// [`DtypeError::UnsupportedDataType`] as [`scalar_type_of`].
pub fn item_size_of(data_type: DataType) -> Result<u64, DtypeError> {
    scalar_type_of(data_type).map(ScalarType::item_size)
}

/// [`item_size_of`] for the raw wire value.
///
/// # Errors
///
/// [`DtypeError::UnsupportedDataType`] as [`scalar_type_of_raw`].
pub fn item_size_of_raw(value: i32) -> Result<u64, DtypeError> {
    scalar_type_of_raw(value).map(ScalarType::item_size)
}

impl Dltype {
    /// The dltype spelled `name`: a canonical string, or an alias accepted on read
    /// (`float8_e4m3`).
    ///
    /// # Errors
    ///
    /// [`DtypeError::UnknownDltype`] naming the string when it is neither.
    pub fn from_name(name: &str) -> Result<Dltype, DtypeError> {
        Dltype::find_name(name).ok_or_else(|| DtypeError::UnknownDltype { name: name.to_owned() })
    }
}

impl FromStr for Dltype {
    type Err = DtypeError;

    fn from_str(name: &str) -> Result<Dltype, DtypeError> {
        Dltype::from_name(name)
    }
}

/// The neff.json dltype of a metaneff DataType (BYTE and UINT8 both give `uint8`).
///
/// # Errors
///
/// [`DtypeError::UnsupportedDataType`] when libtorchneuron's map has no entry for it.
pub fn dltype_of(data_type: DataType) -> Result<Dltype, DtypeError> {
    dltype_of_raw(data_type as i32)
}

/// [`dltype_of`] for the raw wire value.
///
/// # Errors
///
/// As [`dltype_of`].
pub fn dltype_of_raw(value: i32) -> Result<Dltype, DtypeError> {
    scalar_type_of_raw(value).map(|scalar_type| scalar_type.dltype())
}

/// The libnrt element type of a metaneff DataType, through libtorchneuron's map.
///
/// # Errors
///
/// [`DtypeError::UnsupportedDataType`] when the map has no entry for the data_type,
/// [`DtypeError::NoNrtDtype`] for BOOL and DOUBLE, which no `nrt_dtype_t` numbering can describe.
pub fn nrt_dtype_of(data_type: DataType) -> Result<NrtDtype, DtypeError> {
    nrt_dtype_of_raw(data_type as i32)
}

/// [`nrt_dtype_of`] for the raw wire value.
///
/// # Errors
///
/// As [`nrt_dtype_of`].
pub fn nrt_dtype_of_raw(value: i32) -> Result<NrtDtype, DtypeError> {
    let scalar_type = scalar_type_of_raw(value)?;
    scalar_type.nrt_dtype().ok_or(DtypeError::NoNrtDtype { value, scalar_type })
}

impl XlaPrimitiveType {
    /// The XLA type whose HLO name is exactly `name`.
    ///
    /// # Errors
    ///
    /// [`DtypeError::UnknownXlaPrimitiveType`] naming the string when no producer maps it.
    pub fn from_name(name: &str) -> Result<XlaPrimitiveType, DtypeError> {
        XlaPrimitiveType::ALL
            .iter()
            .copied()
            .find(|xla_type| xla_type.name() == name)
            .ok_or_else(|| DtypeError::UnknownXlaPrimitiveType { name: name.to_owned() })
    }
}

impl FromStr for XlaPrimitiveType {
    type Err = DtypeError;

    fn from_str(name: &str) -> Result<XlaPrimitiveType, DtypeError> {
        XlaPrimitiveType::from_name(name)
    }
}

impl Producer {
    /// The metaneff DataType this producer writes for the XLA type named `name`.
    ///
    /// # Errors
    ///
    /// [`DtypeError::UnknownXlaPrimitiveType`] naming the string when it is not an XLA type the
    /// producers map (C64 and C128, for instance, have no DataType).
    pub fn data_type_of_name(self, name: &str) -> Result<DataType, DtypeError> {
        XlaPrimitiveType::from_name(name).map(|xla_type| self.data_type_of(xla_type))
    }
}

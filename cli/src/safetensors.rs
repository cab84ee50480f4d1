//! Reading a `.safetensors` file (`nrtsim run --weights`) into tensors by name.
//!
//! The format is small enough to parse here, and parsing it here lets every error name the file,
//! the tensor and what was expected (the `safetensors` crate reports a bad header entry as one
//! JSON error without its key). The format: an 8-byte
//! little-endian header length `n`, `n` bytes of a JSON object mapping each tensor name to
//! `{"dtype", "shape", "data_offsets": [begin, end]}` (offsets relative to the byte after the
//! header), an optional `__metadata__` entry of strings, then the data. Every size is checked
//! arithmetic against the file's length; tensors may not overlap; each tensor's byte range must
//! equal `item size × Π shape` of its dtype.

use std::collections::BTreeMap;

use abi::dtype::ScalarType;
use bind::HostTensor;

/// Why a safetensors file was refused; every message names the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SafetensorsError {
    /// Fewer than the 8 bytes of the header length.
    #[error("{file}: {len} bytes, expected at least 8 (the header length)")]
    Truncated { file: String, len: usize },
    /// The header length runs past the end of the file.
    #[error(
        "{file}: header of {header} bytes, expected at most the {available} bytes after the length"
    )]
    HeaderTooLarge { file: String, header: u64, available: usize },
    /// The header is not a JSON object.
    #[error("{file}: header is not a JSON object: {detail}")]
    HeaderJson { file: String, detail: String },
    /// An entry lacks a field or has one of the wrong type.
    #[error("{file}: tensor {key:?}: {detail}")]
    Entry { file: String, key: String, detail: String },
    /// A dtype with no torch scalar type.
    #[error(
        "{file}: tensor {key:?}: dtype {dtype:?}, expected one of F64, F32, F16, BF16, I64, I32, \
         I16, I8, U8, U16, BOOL, F8_E4M3, F8_E5M2"
    )]
    UnknownDtype { file: String, key: String, dtype: String },
    /// A safetensors dtype that torch-neuronx's tensors cannot hold.
    #[error(
        "{file}: tensor {key:?}: dtype {dtype:?} is a safetensors dtype with no torch scalar type \
         here, expected one of F64, F32, F16, BF16, I64, I32, I16, I8, U8, U16, BOOL, F8_E4M3, \
         F8_E5M2"
    )]
    UnsupportedDtype { file: String, key: String, dtype: String },
    /// The byte range is reversed or ends past the data.
    #[error(
        "{file}: tensor {key:?}: data_offsets [{begin}, {end}], expected an ascending range within \
         the {available} data bytes"
    )]
    OffsetsOutOfRange { file: String, key: String, begin: u64, end: u64, available: usize },
    /// The byte range does not hold the shape's elements.
    #[error(
        "{file}: tensor {key:?}: {actual} data bytes, expected {expected} for {dtype} {shape:?}"
    )]
    SizeMismatch {
        file: String,
        key: String,
        actual: u64,
        expected: u64,
        dtype: &'static str,
        shape: Vec<i64>,
    },
    /// Two tensors share bytes.
    #[error("{file}: tensors {first:?} and {second:?} overlap, expected disjoint data_offsets")]
    Overlap { file: String, first: String, second: String },
    /// Memory for a tensor could not be reserved.
    #[error("{file}: tensor {key:?}: {bytes} bytes do not fit in memory")]
    OutOfMemory { file: String, key: String, bytes: usize },
}

/// The safetensors dtypes (the format's `Dtype` enum, release 0.8) with no torch scalar type here:
/// refused by name, apart from names the format does not have.
const UNSUPPORTED_DTYPES: &[&str] =
    &["U32", "U64", "C64", "F4", "F6_E2M3", "F6_E3M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ"];

/// The scalar type of a safetensors dtype name.
fn scalar_type(dtype: &str) -> Option<ScalarType> {
    Some(match dtype {
        "F64" => ScalarType::Double,
        "F32" => ScalarType::Float,
        "F16" => ScalarType::Half,
        "BF16" => ScalarType::BFloat16,
        "I64" => ScalarType::Long,
        "I32" => ScalarType::Int,
        "I16" => ScalarType::Short,
        "I8" => ScalarType::Char,
        "U8" => ScalarType::Byte,
        "U16" => ScalarType::UInt16,
        "BOOL" => ScalarType::Bool,
        "F8_E4M3" => ScalarType::Float8E4m3fn,
        "F8_E5M2" => ScalarType::Float8E5m2,
        _ => return None,
    })
}

/// The tensors of a safetensors file's bytes, by name; `file` names it in errors.
///
/// # Errors
/// [`SafetensorsError`] for a truncated file, a header larger than the file, a header that is
/// not the format's JSON, an unknown dtype, offsets out of range, overlapping or of the wrong
/// size.
pub(crate) fn parse(
    file: &str,
    bytes: &[u8],
) -> Result<BTreeMap<Vec<u8>, HostTensor>, SafetensorsError> {
    let file = file.to_owned();
    let Some((len_bytes, rest)) = bytes.split_first_chunk::<8>() else {
        return Err(SafetensorsError::Truncated { file, len: bytes.len() });
    };
    let header_len = u64::from_le_bytes(*len_bytes);
    let split = usize::try_from(header_len).ok().filter(|&n| n <= rest.len());
    let Some(split) = split else {
        return Err(SafetensorsError::HeaderTooLarge {
            file,
            header: header_len,
            available: rest.len(),
        });
    };
    let (header, data) = rest.split_at(split);
    let json_error = |detail: String| SafetensorsError::HeaderJson { file: file.clone(), detail };
    let header: serde_json::Value =
        serde_json::from_slice(header).map_err(|err| json_error(err.to_string()))?;
    let serde_json::Value::Object(entries) = header else {
        return Err(json_error(format!("found {header}")));
    };
    let mut ranges: Vec<(u64, u64, String)> = Vec::new();
    let mut tensors = BTreeMap::new();
    for (key, entry) in &entries {
        if key == "__metadata__" {
            continue;
        }
        let entry_error = |detail: &str| SafetensorsError::Entry {
            file: file.clone(),
            key: key.clone(),
            detail: detail.to_owned(),
        };
        let dtype = entry
            .get("dtype")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| entry_error("expected a string \"dtype\""))?;
        let shape = entry
            .get("shape")
            .and_then(serde_json::Value::as_array)
            .and_then(|dims| {
                dims.iter()
                    .map(|d| d.as_u64().and_then(|d| i64::try_from(d).ok()))
                    .collect::<Option<Vec<i64>>>()
            })
            .ok_or_else(|| entry_error("expected \"shape\", an array of non-negative integers"))?;
        let offsets = entry
            .get("data_offsets")
            .and_then(serde_json::Value::as_array)
            .and_then(|pair| match pair.as_slice() {
                [begin, end] => Some((begin.as_u64()?, end.as_u64()?)),
                _ => None,
            })
            .ok_or_else(|| entry_error("expected \"data_offsets\", two non-negative integers"))?;
        let scalar_type = scalar_type(dtype).ok_or_else(|| {
            let (file, key, dtype) = (file.clone(), key.clone(), dtype.to_owned());
            if UNSUPPORTED_DTYPES.contains(&dtype.as_str()) {
                SafetensorsError::UnsupportedDtype { file, key, dtype }
            } else {
                SafetensorsError::UnknownDtype { file, key, dtype }
            }
        })?;
        let (begin, end) = offsets;
        if begin > end || end > data.len() as u64 {
            return Err(SafetensorsError::OffsetsOutOfRange {
                file,
                key: key.clone(),
                begin,
                end,
                available: data.len(),
            });
        }
        let expected = shape
            .iter()
            .try_fold(scalar_type.item_size(), |acc, &d| acc.checked_mul(d as u64))
            .unwrap_or(u64::MAX);
        if end - begin != expected {
            return Err(SafetensorsError::SizeMismatch {
                file,
                key: key.clone(),
                actual: end - begin,
                expected,
                dtype: scalar_type.name(),
                shape,
            });
        }
        ranges.push((begin, end, key.clone()));
        // In range of `data` (checked above), so these fit in usize.
        let range = &data[begin as usize..end as usize];
        let mut owned = Vec::new();
        owned.try_reserve_exact(range.len()).map_err(|_| SafetensorsError::OutOfMemory {
            file: file.clone(),
            key: key.clone(),
            bytes: range.len(),
        })?;
        owned.extend_from_slice(range);
        let tensor = HostTensor::from_bytes(scalar_type, &shape, owned)
            .map_err(|err| entry_error(&err.to_string()))?;
        tensors.insert(key.as_bytes().to_vec(), tensor);
    }
    // Sorted by start, two non-empty ranges overlap only if some range starts before the end of
    // the one before it.
    ranges.retain(|(begin, end, _)| begin < end);
    ranges.sort();
    if let Some(pair) = ranges.windows(2).find(|pair| pair[1].0 < pair[0].1) {
        return Err(SafetensorsError::Overlap {
            file,
            first: pair[0].2.clone(),
            second: pair[1].2.clone(),
        });
    }
    Ok(tensors)
}

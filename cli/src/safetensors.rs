//! Reading a `.safetensors` file (`nrtsim run --weights`) into tensors by name.
//!
//! The format is small enough to parse here, and parsing it here lets every error name the file,
//! the tensor and what was expected (the `safetensors` crate reports a bad header entry as one
//! JSON error without its key). The format: an 8-byte
//! little-endian header length `n`, `n` bytes of a JSON object mapping each tensor name to
//! `{"dtype", "shape", "data_offsets": [begin, end]}` (offsets relative to the byte after the
//! header), an optional `__metadata__` entry of strings, then the data. Every size is checked
//! arithmetic against the file's length; each tensor's byte range must equal `item size × Π
//! shape` of its dtype; a name may appear once; and the ranges, sorted, must cover the data
//! exactly, each starting where the one before ends (the format's rule, which the `safetensors`
//! crate applies too), so no byte is in two tensors and none is in no tensor.
//!
//! Every entry is checked before a byte is copied, so the tensors cost the data's length once,
//! whatever the header claims.

use std::collections::{BTreeMap, BTreeSet};

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
    /// A tensor starts after the end of the one before it (or, the first, after byte 0).
    #[error(
        "{file}: tensor {key:?} begins at data byte {begin}, expected {expected}: the tensors \
         must cover the data without gaps"
    )]
    Gap { file: String, key: String, begin: u64, expected: u64 },
    /// Data past the end of the last tensor.
    #[error(
        "{file}: the tensors end at data byte {end}, expected them to cover all {available} data \
         bytes"
    )]
    TrailingData { file: String, end: u64, available: usize },
    /// A name the header gives twice (a JSON reader would keep one of them silently).
    #[error("{file}: tensor {key:?} is in the header twice, expected each name once")]
    DuplicateName { file: String, key: String },
    /// Memory for a tensor could not be reserved.
    #[error("{file}: tensor {key:?}: {bytes} bytes do not fit in memory")]
    OutOfMemory { file: String, key: String, bytes: usize },
}

/// The safetensors dtypes (the format's `Dtype` enum, release 0.8) with no torch scalar type here:
/// refused by name, apart from names the format does not have.
pub(crate) const UNSUPPORTED_DTYPES: &[&str] =
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

/// The header's entries in the file's order, repeats kept: a JSON object read as a map would
/// keep one of two entries of a name without a word.
struct HeaderEntries(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for HeaderEntries {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = HeaderEntries;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<HeaderEntries, M::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(HeaderEntries(entries))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// A tensor's entry, checked, its bytes not yet copied.
struct Entry<'a> {
    key: &'a str,
    scalar_type: ScalarType,
    shape: Vec<i64>,
    begin: u64,
    end: u64,
}

/// The tensors of a safetensors file's bytes, by name; `file` names it in errors.
///
/// # Errors
/// [`SafetensorsError`] for a truncated file, a header larger than the file, a header that is
/// not the format's JSON, a name given twice, an unknown dtype, offsets out of range or of the
/// wrong size, and ranges that overlap, leave a gap or leave data after the last tensor.
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
    let HeaderEntries(header) =
        serde_json::from_slice(header).map_err(|err| json_error(err.to_string()))?;
    let mut names = BTreeSet::new();
    let mut entries: Vec<Entry<'_>> = Vec::new();
    for (key, entry) in &header {
        if !names.insert(key.as_str()) {
            return Err(SafetensorsError::DuplicateName { file, key: key.clone() });
        }
        let entry_error = |detail: &str| SafetensorsError::Entry {
            file: file.clone(),
            key: key.clone(),
            detail: detail.to_owned(),
        };
        if key == "__metadata__" {
            // The format's metadata is a map of strings to strings, free-form but nothing else.
            let strings = entry.as_object().is_some_and(|map| map.values().all(|v| v.is_string()));
            if !strings {
                return Err(entry_error("expected an object whose values are strings"));
            }
            continue;
        }
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
            .ok_or_else(|| {
                entry_error(
                    "expected \"shape\", an array of integers from 0 to 2^63 - 1 (a torch \
                     tensor's dimensions are int64)",
                )
            })?;
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
        entries.push(Entry { key, scalar_type, shape, begin, end });
    }
    // Sorted by range, each tensor must begin where the one before it ended (the first at 0),
    // and the last end where the data does: then the ranges tile the data, and copying them
    // costs its length once.
    entries.sort_by_key(|entry| (entry.begin, entry.end));
    let mut covered: u64 = 0;
    let mut previous: Option<&str> = None;
    for entry in &entries {
        if entry.begin < covered {
            return Err(SafetensorsError::Overlap {
                file,
                first: previous.unwrap_or_default().to_owned(),
                second: entry.key.to_owned(),
            });
        }
        if entry.begin > covered {
            return Err(SafetensorsError::Gap {
                file,
                key: entry.key.to_owned(),
                begin: entry.begin,
                expected: covered,
            });
        }
        covered = entry.end;
        previous = Some(entry.key);
    }
    if covered != data.len() as u64 {
        return Err(SafetensorsError::TrailingData { file, end: covered, available: data.len() });
    }
    let mut tensors = BTreeMap::new();
    for Entry { key, scalar_type, shape, begin, end } in entries {
        // In range of `data` (checked above), so these fit in usize.
        let range = &data[begin as usize..end as usize];
        let mut owned = Vec::new();
        owned.try_reserve_exact(range.len()).map_err(|_| SafetensorsError::OutOfMemory {
            file: file.clone(),
            key: key.to_owned(),
            bytes: range.len(),
        })?;
        owned.extend_from_slice(range);
        let tensor = HostTensor::from_bytes(scalar_type, &shape, owned).map_err(|err| {
            SafetensorsError::Entry {
                file: file.clone(),
                key: key.to_owned(),
                detail: err.to_string(),
            }
        })?;
        tensors.insert(key.as_bytes().to_vec(), tensor);
    }
    Ok(tensors)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file: the 8-byte header length, `header`, then `data`.
    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        bytes.extend(data);
        bytes
    }

    /// An `U8` entry of `n` elements at `[begin, begin + n]`.
    fn u8_entry(begin: u64, n: u64) -> String {
        format!(r#"{{"dtype":"U8","shape":[{n}],"data_offsets":[{begin},{}]}}"#, begin + n)
    }

    fn refusal(header: &str, data: &[u8]) -> SafetensorsError {
        match parse("w.safetensors", &file(header, data)) {
            Ok(tensors) => panic!("accepted {header}: {} tensors", tensors.len()),
            Err(error) => error,
        }
    }

    /// The format's `__metadata__` maps strings to strings; anything else is refused, as the
    /// `safetensors` crate refuses it (found by the `safetensors` fuzz target).
    #[test]
    fn metadata_that_is_not_an_object_of_strings_is_refused() {
        for metadata in [r#"{"a":5}"#, "5", r#""pt""#, r#"{"a":{"b":"c"}}"#] {
            let header = format!(r#"{{"__metadata__":{metadata},"x":{}}}"#, u8_entry(0, 1));
            match refusal(&header, &[7]) {
                SafetensorsError::Entry { key, detail, .. } => {
                    assert_eq!(key, "__metadata__", "{metadata}");
                    assert!(detail.contains("values are strings"), "{metadata}: {detail}");
                }
                other => panic!("{metadata}: {other}"),
            }
        }
        let header = format!(r#"{{"__metadata__":{{"format":"pt"}},"x":{}}}"#, u8_entry(0, 1));
        assert_eq!(parse("w.safetensors", &file(&header, &[7])).unwrap().len(), 1);
    }

    /// A dimension past torch's int64 is refused by its range, even beside a zero dimension
    /// that leaves the tensor empty (the `safetensors` crate reads it: its shapes are `usize`).
    #[test]
    fn a_dimension_past_int64_is_refused_naming_the_range() {
        let header = r#"{"x":{"dtype":"U8","shape":[9223372036854775808,0],"data_offsets":[0,0]}}"#;
        match refusal(header, &[]) {
            SafetensorsError::Entry { detail, .. } => {
                assert!(detail.contains("2^63 - 1"), "{detail}")
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn tensors_that_tile_the_data_are_read_in_any_header_order() {
        let header = format!(
            r#"{{"b":{},"__metadata__":{{"format":"pt"}},"empty":{},"a":{}}}"#,
            u8_entry(2, 3),
            u8_entry(5, 0),
            u8_entry(0, 2)
        );
        let tensors = parse("w.safetensors", &file(&header, &[1, 2, 3, 4, 5])).unwrap();
        let bytes: Vec<(&[u8], Vec<u8>)> =
            tensors.iter().map(|(name, tensor)| (name.as_slice(), tensor.to_bytes())).collect();
        assert_eq!(
            bytes,
            [(&b"a"[..], vec![1, 2]), (&b"b"[..], vec![3, 4, 5]), (&b"empty"[..], vec![])]
        );
    }

    #[test]
    fn a_name_given_twice_is_refused() {
        // A JSON map would keep the second entry and leave the first one's bytes unread.
        let header = format!(r#"{{"w":{},"w":{}}}"#, u8_entry(0, 4), u8_entry(4, 4));
        let error = refusal(&header, &[0; 8]);
        assert!(matches!(error, SafetensorsError::DuplicateName { ref key, .. } if key == "w"));
        assert_eq!(
            error.to_string(),
            "w.safetensors: tensor \"w\" is in the header twice, expected each name once"
        );
    }

    #[test]
    fn the_first_tensor_begins_at_data_byte_zero() {
        let error = refusal(&format!(r#"{{"w":{}}}"#, u8_entry(4, 4)), &[0; 8]);
        assert_eq!(
            error.to_string(),
            "w.safetensors: tensor \"w\" begins at data byte 4, expected 0: the tensors must \
             cover the data without gaps"
        );
    }

    #[test]
    fn a_gap_between_tensors_is_refused() {
        let header = format!(r#"{{"a":{},"b":{}}}"#, u8_entry(0, 4), u8_entry(6, 2));
        let error = refusal(&header, &[0; 8]);
        assert!(
            matches!(error, SafetensorsError::Gap { ref key, begin: 6, expected: 4, .. } if key == "b"),
            "{error:?}"
        );
    }

    #[test]
    fn data_after_the_last_tensor_is_refused() {
        let error = refusal(&format!(r#"{{"a":{}}}"#, u8_entry(0, 4)), &[0; 6]);
        assert_eq!(
            error.to_string(),
            "w.safetensors: the tensors end at data byte 4, expected them to cover all 6 data \
             bytes"
        );
    }

    #[test]
    fn entries_sharing_one_range_are_refused_as_an_overlap() {
        // The fuzzer's file: 256 names for one range, which cost 256 copies of it when each
        // tensor was copied before the ranges were compared.
        let entries: Vec<String> =
            (0..256).map(|i| format!(r#""t{i:03}":{}"#, u8_entry(0, 64))).collect();
        let error = refusal(&format!("{{{}}}", entries.join(",")), &[0; 64]);
        assert!(
            matches!(error, SafetensorsError::Overlap { ref first, ref second, .. }
                if first == "t000" && second == "t001"),
            "{error:?}"
        );
    }
}

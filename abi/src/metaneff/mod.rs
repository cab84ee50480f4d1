//! The metaneff protobuf: types, decoding with byte offsets, text format, JSON and lossless edits.
//!
//! The types ([`MetaNeff`], [`MetaTensor`], [`ModelConfig`]) are prost code generated from
//! `abi/proto/metaneff.proto` and committed. Encoding is canonical proto3, as the C++ and Python
//! runtimes write it: fields in number order, scalars equal to their default omitted, `shape`
//! packed, proto3 `optional` fields written whenever set (even when empty), and
//! `output_aliases_to` sorted by key (a `BTreeMap`) so golden bytes are stable.
//!
//! Decoding first walks the wire form against the schema ([`check_wire`]), so that a malformed
//! message is reported with the byte offset and the field path where it goes wrong, and only then
//! hands the bytes to prost. The walk is driven by the embedded descriptor, not by a hand-written
//! table, so it cannot drift from the schema.
//!
//! Seed discrepancies pinned by tests: names are `bytes` (no UTF-8 check), and the seed's worked
//! example writes `38 00` for a default `type`, which a proto3 encoder never does.

pub mod diff;
pub mod edit;
pub mod text;

#[rustfmt::skip]
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
mod generated;

use std::fmt;
use std::sync::OnceLock;

use prost::Message as _;
use prost_reflect::{DescriptorPool, Kind, MessageDescriptor};

pub use generated::*;

use crate::wire::{self, FieldValue, WireError, WireType};

/// The encoded `FileDescriptorSet` of `abi/proto/metaneff.proto`, for reflection.
pub const DESCRIPTOR_SET: &[u8] = include_bytes!("metaneff.fds.bin");

/// The descriptor pool holding the metaneff schema.
pub fn descriptor_pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        // The bytes are generated and committed by `cargo xtask codegen`, and a test checks they
        // are fresh: failing to decode them is a bug in this crate, not bad input.
        DescriptorPool::decode(DESCRIPTOR_SET).expect("the embedded metaneff descriptor is valid")
    })
}

/// The descriptor of a message of the schema, by its name without the package
/// (`"MetaNeff"`, `"MetaTensor"`, `"ModelConfig"`).
pub fn message_descriptor(name: &str) -> MessageDescriptor {
    descriptor_pool()
        .get_message_by_name(&format!("metaneff.{name}"))
        .unwrap_or_else(|| panic!("message metaneff.{name} is in the schema"))
}

/// A metaneff that could not be decoded: where, in which field, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid metaneff at byte {offset} ({path}): {reason}")]
pub struct MetaneffDecodeError {
    /// Offset of the offending byte in the whole message.
    pub offset: usize,
    /// The field path, e.g. `MetaNeff.input_tensors[0].shape`.
    pub path: String,
    /// What is wrong, saying what was expected and what came.
    pub reason: String,
}

/// A field the schema does not know, found while walking a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField {
    /// The path of the message holding it, e.g. `MetaNeff.input_tensors[1]`.
    pub path: String,
    /// Its field number.
    pub number: u32,
    /// Its wire type.
    pub wire_type: WireType,
    /// Offset of its tag in the whole message.
    pub offset: usize,
}

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "field {} ({}) of {} at byte {}",
            self.number, self.wire_type, self.path, self.offset
        )
    }
}

/// Walks `bytes` as a `MetaNeff` against the schema and returns the unknown fields it holds.
///
/// # Errors
/// A [`MetaneffDecodeError`] naming the byte offset and field path of the first malformed field:
/// a truncated or over-long varint, a length running past the end, an invalid tag, or a known
/// field with the wrong wire type.
pub fn check_wire(bytes: &[u8]) -> Result<Vec<UnknownField>, MetaneffDecodeError> {
    let mut unknown = Vec::new();
    walk(&message_descriptor("MetaNeff"), bytes, 0, "MetaNeff", &mut unknown)?;
    Ok(unknown)
}

/// Decodes a `MetaNeff`, keeping nothing of the unknown fields (use [`edit`] to change a message
/// without losing them).
///
/// # Errors
/// A [`MetaneffDecodeError`] naming the byte offset and field path of the first problem.
pub fn decode(bytes: &[u8]) -> Result<MetaNeff, MetaneffDecodeError> {
    check_wire(bytes)?;
    MetaNeff::decode(bytes).map_err(|error| MetaneffDecodeError {
        offset: 0,
        path: "MetaNeff".to_owned(),
        reason: error.to_string(),
    })
}

/// Encodes a `MetaNeff` canonically (see the module documentation).
///
/// prost omits a map entry's key or value when it is zero; the C++ runtime (libprotobuf's
/// `MapEntry`) always writes both, so `{0: 0}` is `32 04 08 00 10 00`, not `32 00`. The aliases
/// are therefore written here, entry by entry, in key order, at their place in field order.
pub fn encode(message: &MetaNeff) -> Vec<u8> {
    if message.output_aliases_to.is_empty() {
        return message.encode_to_vec();
    }
    let without_aliases = MetaNeff { output_aliases_to: Default::default(), ..message.clone() };
    let entries = encode_alias_entries(message.output_aliases_to.iter().map(|(&k, &v)| (k, v)));
    edit::insert_in_order(&without_aliases.encode_to_vec(), OUTPUT_ALIASES_TO_FIELD, &entries)
}

/// Encodes `output_aliases_to` entries in the given order, key and value always written.
fn encode_alias_entries(entries: impl IntoIterator<Item = (i64, i64)>) -> Vec<u8> {
    let mut out = Vec::new();
    for (output, input) in entries {
        let mut entry = Vec::with_capacity(22);
        // int64 values are written as their two's-complement 64-bit pattern.
        wire::put_varint_field(&mut entry, 1, output as u64);
        wire::put_varint_field(&mut entry, 2, input as u64);
        wire::put_len_field(&mut out, OUTPUT_ALIASES_TO_FIELD, &entry);
    }
    out
}

/// The field number of `MetaNeff.output_aliases_to`.
const OUTPUT_ALIASES_TO_FIELD: u32 = 6;

/// The wire type the schema expects for a field, and whether a packed (LEN) form is also valid.
fn expected_wire_type(field: &prost_reflect::FieldDescriptor) -> (WireType, bool) {
    let scalar = match field.kind() {
        Kind::Message(_) | Kind::String | Kind::Bytes => return (WireType::Len, false),
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => WireType::I64,
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => WireType::I32,
        Kind::Int32
        | Kind::Int64
        | Kind::Uint32
        | Kind::Uint64
        | Kind::Sint32
        | Kind::Sint64
        | Kind::Bool
        | Kind::Enum(_) => WireType::Varint,
    };
    (scalar, field.is_list())
}

fn walk(
    descriptor: &MessageDescriptor,
    bytes: &[u8],
    base: usize,
    path: &str,
    unknown: &mut Vec<UnknownField>,
) -> Result<(), MetaneffDecodeError> {
    let at = |error: WireError, path: &str| MetaneffDecodeError {
        offset: base + error.offset,
        path: path.to_owned(),
        reason: error.kind.to_string(),
    };
    let mut counts = std::collections::BTreeMap::<u32, usize>::new();
    for field in wire::fields(bytes) {
        let field = field.map_err(|e| at(e, path))?;
        let Some(schema) = descriptor.get_field(field.number) else {
            unknown.push(UnknownField {
                path: path.to_owned(),
                number: field.number,
                wire_type: field.wire_type,
                offset: base + field.start,
            });
            continue;
        };
        let index = counts.entry(field.number).or_default();
        let field_path = if schema.is_list() || schema.is_map() {
            format!("{path}.{}[{index}]", schema.name())
        } else {
            format!("{path}.{}", schema.name())
        };
        *index += 1;
        let (expected, packable) = expected_wire_type(&schema);
        let packed = packable && field.wire_type == WireType::Len;
        if field.wire_type != expected && !packed {
            return Err(MetaneffDecodeError {
                offset: base + field.start,
                path: field_path,
                reason: format!(
                    "wire type {}, expected {} for a field of type {:?}",
                    field.wire_type,
                    expected,
                    schema.kind()
                ),
            });
        }
        match (field.value, schema.kind()) {
            (FieldValue::Len(payload), Kind::Message(inner)) => {
                walk(&inner, payload, base + field.end - payload.len(), &field_path, unknown)?;
            }
            (FieldValue::Len(payload), _) if packed => {
                let payload_base = base + field.end - payload.len();
                check_packed(payload, expected).map_err(|e| MetaneffDecodeError {
                    offset: payload_base + e.offset,
                    path: field_path.clone(),
                    reason: format!("in a packed list: {}", e.kind),
                })?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks that a packed payload is a whole number of elements of the given wire type.
fn check_packed(payload: &[u8], element: WireType) -> Result<(), WireError> {
    let width = match element {
        WireType::I64 => 8,
        WireType::I32 => 4,
        _ => {
            let mut pos = 0;
            while pos < payload.len() {
                pos = wire::read_varint(payload, pos)?.1;
            }
            return Ok(());
        }
    };
    let remainder = payload.len() % width;
    if remainder != 0 {
        return Err(WireError {
            offset: payload.len() - remainder,
            kind: wire::WireErrorKind::TruncatedFixed { needed: width, available: remainder },
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;

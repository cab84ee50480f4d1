//! The metaneff protobuf: types, decoding with byte offsets, text format, JSON and lossless edits.
//!
//! The types ([`MetaNeff`], [`MetaTensor`], [`ModelConfig`]) are prost code generated from
//! `abi/proto/metaneff.proto` and committed. Encoding is canonical proto3, as the C++ and Python
//! runtimes write it: fields in number order, scalars equal to their default omitted, `shape`
//! packed, proto3 `optional` fields written whenever set (even when empty), and
//! `output_aliases_to` sorted by key (a `BTreeMap`) so golden bytes are stable.
//!
//! Decoding is one pass over the bytes ([`view::MetaneffView`]) that checks the wire form and
//! records where each field lies, borrowing names, keys and the graph from the input; [`decode`]
//! and [`decode_owned`] build the prost message from that view; [`Decoded`] keeps it as flat
//! tables over the message's bytes instead, for readers that never edit it, without an
//! allocation per tensor. A malformed message is reported
//! with the byte offset and the field path where it goes wrong, by the reference decoder
//! ([`decode_reference`]): the wire form walked against the schema ([`check_wire`]), then prost.
//! That walk is driven by the embedded descriptor, not by a hand-written table, so it cannot
//! drift from the schema, and tests check that the one pass accepts exactly what it accepts and
//! gives the same messages.
//!
//! Discrepancies pinned by tests: names are `bytes` (no UTF-8 check), and the worked example of
//! docs/libtorchneuron.md §6 was read with `38 00` for a default `type`, which a proto3 encoder
//! never writes.

pub mod decoded;
pub mod diff;
pub mod edit;
pub mod text;
pub mod view;

#[rustfmt::skip]
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
mod generated;

use std::fmt;
use std::sync::OnceLock;

use prost::Message as _;
use prost_reflect::{DescriptorPool, Kind, MessageDescriptor};

pub use decoded::Decoded;
pub use generated::*;

/// The enums nested in [`MetaTensor`]: the generated [`Type`](meta_tensor::Type), and the
/// [`DataType`](crate::dtype::DataType) the dtype tables declare (the generated messages refer
/// to it). This module shadows the generated one, so both are found where the schema nests them.
pub mod meta_tensor {
    pub use super::generated::meta_tensor::*;
    pub use crate::dtype::DataType;
}

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
/// (`"MetaNeff"`, `"MetaTensor"`, `"ModelConfig"`); `None` for a name the schema lacks.
pub fn find_message_descriptor(name: &str) -> Option<MessageDescriptor> {
    descriptor_pool().get_message_by_name(&format!("metaneff.{name}"))
}

/// [`find_message_descriptor`] for this crate's own constant names, which the schema has: a miss
/// is a bug here (the descriptor freshness test keeps schema and code together), not bad input.
pub(crate) fn message_descriptor(name: &str) -> MessageDescriptor {
    find_message_descriptor(name)
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
    /// The count limit the message went past, when that is why it was refused (the wire form
    /// up to that point was well formed).
    pub exceeded: Option<MetaneffLimitExceeded>,
}

/// The default cap on the tensors of one list (`input_tensors` or `output_tensors`). A
/// metaneff lists one tensor per user input, weight, state and output: hundreds for a large
/// language model with its weights as inputs. 65 536 is far above that; a decoded tensor costs
/// about 300 bytes (its view and its owned copy), so the cap keeps the tensor lists of the
/// largest accepted metaneff near 40 MB whatever its size on the wire (a tensor can be two
/// bytes there).
pub const DEFAULT_MAX_TENSORS: usize = 65_536;

/// The default cap on the dimensions of one tensor's shape: 64, numpy's own limit on array
/// dimensions (`NPY_MAXDIMS` since numpy 2.0), above any shape a framework hands to libnrt.
pub const DEFAULT_MAX_SHAPE_DIMS: usize = 64;

/// The count limits a metaneff is decoded under ([`decode_with_limits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaneffLimits {
    /// The most tensors in each of `input_tensors` and `output_tensors`.
    pub max_tensors: usize,
    /// The most dimensions in one tensor's shape.
    pub max_shape_dims: usize,
}

impl Default for MetaneffLimits {
    fn default() -> MetaneffLimits {
        MetaneffLimits { max_tensors: DEFAULT_MAX_TENSORS, max_shape_dims: DEFAULT_MAX_SHAPE_DIMS }
    }
}

/// Which count limit a metaneff went past ([`MetaneffDecodeError::exceeded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaneffLimitExceeded {
    /// A tensor list holds more than [`MetaneffLimits::max_tensors`] tensors.
    TooManyTensors {
        /// The limit.
        limit: usize,
    },
    /// A shape has more than [`MetaneffLimits::max_shape_dims`] dimensions.
    TooManyShapeDims {
        /// The dimensions found.
        count: usize,
        /// The limit.
        limit: usize,
    },
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
    let root = PathSegment { parent: None, name: "MetaNeff", index: None };
    walk(schema_table(MessageKind::MetaNeff), bytes, 0, &root, &mut unknown)?;
    Ok(unknown)
}

/// Decodes a `MetaNeff`, keeping nothing of the unknown fields (use [`edit`] to change a message
/// without losing them). The input is copied once, into one buffer that every bytes field of
/// the message shares (a name keeps that buffer alive); [`decode_owned`] shares an owned input
/// without copying it, and [`view::MetaneffView`] copies nothing.
///
/// One pass checks the wire form and records the fields ([`view::MetaneffView::decode`]); the
/// owned message is built from that record, with one allocation per tensor (its shape).
///
/// # Errors
/// A [`MetaneffDecodeError`] naming the byte offset and field path of the first problem.
pub fn decode(bytes: &[u8]) -> Result<MetaNeff, MetaneffDecodeError> {
    decode_with_limits(bytes, &MetaneffLimits::default())
}

/// [`decode`] under count limits other than the defaults.
///
/// # Errors
/// As [`decode`]; a message past a limit is refused with [`MetaneffDecodeError::exceeded`] set.
pub fn decode_with_limits(
    bytes: &[u8],
    limits: &MetaneffLimits,
) -> Result<MetaNeff, MetaneffDecodeError> {
    let view = view::MetaneffView::decode_with_limits(bytes, limits)?;
    view.to_owned_in(bytes, &copy_message(bytes)?)
}

/// `bytes` copied once into the buffer a decoded message shares, allocated fallibly.
fn copy_message(bytes: &[u8]) -> Result<prost::bytes::Bytes, MetaneffDecodeError> {
    let mut copy = Vec::new();
    copy.try_reserve_exact(bytes.len()).map_err(|_| MetaneffDecodeError {
        offset: 0,
        path: "MetaNeff".to_owned(),
        reason: format!(
            "could not allocate memory for {} bytes of the message, expected enough for it",
            bytes.len()
        ),
        exceeded: None,
    })?;
    copy.extend_from_slice(bytes);
    Ok(prost::bytes::Bytes::from(copy))
}

/// [`decode`] from an owned buffer: every bytes field of the message (the names and keys, and
/// `serialized_graph_def`, the HLO module, often most of the message) is a view of `bytes`, not
/// a copy, so decoding costs one allocation per tensor (its shape) whatever the names and the
/// graph weigh.
///
/// # Errors
/// As [`decode`].
pub fn decode_owned(bytes: prost::bytes::Bytes) -> Result<MetaNeff, MetaneffDecodeError> {
    let view = view::MetaneffView::decode(&bytes)?;
    view.to_owned_in(&bytes, &bytes)
}

/// The reference decoder: the schema walk ([`check_wire`]), then prost. It is what the one-pass
/// decoder is checked against, and what explains a message that the one pass refuses.
///
/// # Errors
/// As [`decode`].
pub fn decode_reference(bytes: &[u8]) -> Result<MetaNeff, MetaneffDecodeError> {
    check_wire(bytes)?;
    MetaNeff::decode(bytes).map_err(prost_error)
}

/// prost refuses only what the wire check has already passed (its own limits aside, such as
/// recursion depth, which a metaneff cannot reach): the error is kept whole for the record.
fn prost_error(error: prost::DecodeError) -> MetaneffDecodeError {
    MetaneffDecodeError {
        offset: 0,
        path: "MetaNeff".to_owned(),
        reason: error.to_string(),
        exceeded: None,
    }
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

/// The messages of the schema, as indexes into the tables of [`schema_table`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MessageKind {
    MetaNeff,
    MetaTensor,
    ModelConfig,
    AliasEntry,
}

/// What the walk needs to know of one known field, read once from the descriptor.
#[derive(Clone, Debug)]
struct FieldRule {
    name: String,
    /// Repeated or map: paths carry the occurrence index.
    indexed: bool,
    expected: WireType,
    packable: bool,
    kind_name: String,
    /// For message fields, the message they hold.
    message: Option<MessageKind>,
}

/// The known fields of one message, indexed by field number.
#[derive(Debug)]
struct MessageTable {
    fields: Vec<Option<FieldRule>>,
}

impl MessageTable {
    fn get(&self, number: u32) -> Option<&FieldRule> {
        self.fields.get(usize::try_from(number).ok()?)?.as_ref()
    }
}

/// The walk's tables, derived from the embedded descriptor once per process, so the walk does
/// no descriptor lookups, allocation or formatting per field (only for errors and unknown
/// fields) and still cannot drift from the schema.
fn schema_table(kind: MessageKind) -> &'static MessageTable {
    static TABLES: OnceLock<[MessageTable; 4]> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        let build = |descriptor: MessageDescriptor| {
            let mut fields: Vec<Option<FieldRule>> = Vec::new();
            for field in descriptor.fields() {
                let number = field.number() as usize;
                if fields.len() <= number {
                    fields.resize(number + 1, None);
                }
                let (expected, packable) = expected_wire_type(&field);
                let message = match field.kind() {
                    Kind::Message(inner) => Some(match inner.name() {
                        "MetaTensor" => MessageKind::MetaTensor,
                        "ModelConfig" => MessageKind::ModelConfig,
                        // The only other message fields are map entries (output_aliases_to).
                        _ => MessageKind::AliasEntry,
                    }),
                    _ => None,
                };
                fields[number] = Some(FieldRule {
                    name: field.name().to_owned(),
                    indexed: field.is_list() || field.is_map(),
                    expected,
                    packable,
                    kind_name: format!("{:?}", field.kind()),
                    message,
                });
            }
            MessageTable { fields }
        };
        let alias_entry = message_descriptor("MetaNeff")
            .get_field_by_name("output_aliases_to")
            .and_then(|field| field.kind().as_message().cloned())
            .expect("output_aliases_to is a map in the schema");
        [
            build(message_descriptor("MetaNeff")),
            build(message_descriptor("MetaTensor")),
            build(message_descriptor("ModelConfig")),
            build(alias_entry),
        ]
    });
    &tables[kind as usize]
}

/// A field path built only when it is printed: each nested walk holds its segment on the stack.
struct PathSegment<'a> {
    parent: Option<&'a PathSegment<'a>>,
    name: &'a str,
    index: Option<usize>,
}

impl fmt::Display for PathSegment<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            write!(f, "{parent}.")?;
        }
        f.write_str(self.name)?;
        if let Some(index) = self.index {
            write!(f, "[{index}]")?;
        }
        Ok(())
    }
}

fn walk(
    table: &MessageTable,
    bytes: &[u8],
    base: usize,
    path: &PathSegment<'_>,
    unknown: &mut Vec<UnknownField>,
) -> Result<(), MetaneffDecodeError> {
    // Occurrences so far of each field number, for the index in a repeated field's path.
    let mut counts = [0usize; 16];
    let mut more_counts = std::collections::BTreeMap::<u32, usize>::new();
    for field in wire::fields(bytes) {
        let field = field.map_err(|error| MetaneffDecodeError {
            offset: base + error.offset,
            path: path.to_string(),
            reason: error.kind.to_string(),
            exceeded: None,
        })?;
        let Some(rule) = table.get(field.number) else {
            unknown.push(UnknownField {
                path: path.to_string(),
                number: field.number,
                wire_type: field.wire_type,
                offset: base + field.start,
            });
            continue;
        };
        let index = match counts.get_mut(field.number as usize) {
            Some(count) => count,
            None => more_counts.entry(field.number).or_default(),
        };
        let field_path = PathSegment {
            parent: Some(path),
            name: &rule.name,
            index: rule.indexed.then_some(*index),
        };
        *index += 1;
        let packed = rule.packable && field.wire_type == WireType::Len;
        if field.wire_type != rule.expected && !packed {
            return Err(MetaneffDecodeError {
                offset: base + field.start,
                path: field_path.to_string(),
                reason: format!(
                    "wire type {}, expected {} for a field of type {}",
                    field.wire_type, rule.expected, rule.kind_name
                ),
                exceeded: None,
            });
        }
        if let FieldValue::Len(payload) = field.value {
            let payload_base = base + field.end - payload.len();
            if let Some(inner) = rule.message {
                walk(schema_table(inner), payload, payload_base, &field_path, unknown)?;
            } else if packed {
                check_packed(payload, rule.expected).map_err(|e| MetaneffDecodeError {
                    offset: payload_base + e.offset,
                    path: field_path.to_string(),
                    reason: format!("in a packed list: {}", e.kind),
                    exceeded: None,
                })?;
            }
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

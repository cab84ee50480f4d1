//! Protobuf text format and proto3 JSON for metaneff messages, for people and for reviews.
//!
//! Both directions go through the embedded descriptor with prost-reflect, never through a
//! hand-written printer, so every field of the schema is shown with its real name. Bytes back
//! from text or JSON are re-encoded canonically (see [`super::encode`]).
//!
//! Map order. `output_aliases_to` is a map, and implementations write its entries in different
//! orders (libprotobuf's deterministic mode ascending by key, Python's upb descending, the
//! default modes in hash order); prost-reflect would print them in hash order. So that text is
//! deterministic and shows what a foreign file holds, text format uses a *wire view* of the
//! schema in which the map is a repeated entry message: entries are printed in the order they
//! stand on the wire. Encoding from text is canonical like every other encoding ([`from_text`]:
//! entries ascending by key, the last of a repeated key kept, as a map holds it), so a vector's
//! `metaneff.pb` is what libprotobuf's deterministic mode writes whatever order its text has.
//! For a byte-for-byte review of a foreign file, [`from_text_in_written_order`] encodes the
//! entries in the order the text gives them (every one, repeated keys too), so decode → encode
//! gives back the bytes of a file in any entry order (`nrtsim metaneff encode --preserve-order`).
//! Proto3 JSON writes a map as an object, which has no order: JSON output sorts the keys, and
//! bytes from JSON are canonical.
//!
//! Unknown fields cannot be written in text format in a way other parsers accept, so they are
//! listed as `#` comments at the top of the text (and reported to the caller); they do not
//! survive a text round trip. Use [`super::edit`] to change a message and keep them.

use std::sync::OnceLock;

use prost::Message as _;
use prost_reflect::prost_types::{FileDescriptorSet, OneofDescriptorProto};
use prost_reflect::text_format::FormatOptions;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};

use super::{
    DESCRIPTOR_SET, MetaNeff, MetaneffDecodeError, OUTPUT_ALIASES_TO_FIELD, UnknownField,
    check_wire, edit, encode, message_descriptor,
};
use crate::wire::{self, FieldValue};

/// `MetaNeff` in the wire view: `output_aliases_to` as a repeated message whose `key` and `value`
/// track presence, so order and explicit zeros survive.
fn wire_view() -> MessageDescriptor {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        // The descriptor is generated and committed, and a test checks it is fresh: a failure
        // here is a bug in this crate, not bad input.
        let mut set = FileDescriptorSet::decode(DESCRIPTOR_SET).expect("valid descriptor");
        for file in &mut set.file {
            for message in file.message_type.iter_mut().filter(|m| m.name() == "MetaNeff") {
                for entry in &mut message.nested_type {
                    if let Some(options) = entry.options.as_mut() {
                        options.map_entry = Some(false);
                    }
                    for (index, field) in entry.field.iter_mut().enumerate() {
                        field.proto3_optional = Some(true);
                        field.oneof_index = Some(index as i32);
                        entry.oneof_decl.push(OneofDescriptorProto {
                            name: Some(format!("_{}", field.name())),
                            options: None,
                        });
                    }
                }
            }
        }
        DescriptorPool::from_file_descriptor_set(set).expect("the wire view is a valid schema")
    });
    pool.get_message_by_name("metaneff.MetaNeff").expect("MetaNeff is in the schema")
}

/// The name of the JSON format in errors.
const JSON: &str = "JSON";

/// A metaneff printed for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Printed {
    /// The text (text format or JSON).
    pub text: String,
    /// The unknown fields the message holds, which the text does not carry.
    pub unknown_fields: Vec<UnknownField>,
}

/// Text or JSON that is not a valid metaneff.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid metaneff {format} at line {line}, column {column}: {message}")]
pub struct MetaneffTextError {
    /// `"text format"` or `"JSON"`.
    pub format: &'static str,
    /// 1-based line of the error.
    pub line: usize,
    /// 1-based column (in characters) of the error.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

fn dynamic(
    descriptor: MessageDescriptor,
    bytes: &[u8],
) -> Result<(DynamicMessage, Vec<UnknownField>), MetaneffDecodeError> {
    let unknown_fields = check_wire(bytes)?;
    let message = DynamicMessage::decode(descriptor, bytes).map_err(|e| MetaneffDecodeError {
        offset: 0,
        path: "MetaNeff".to_owned(),
        reason: e.to_string(),
        exceeded: None,
    })?;
    Ok((message, unknown_fields))
}

/// Prints a metaneff in protobuf text format.
///
/// # Errors
/// A [`MetaneffDecodeError`] when `bytes` is not a well-formed metaneff.
pub fn to_text(bytes: &[u8]) -> Result<Printed, MetaneffDecodeError> {
    let (message, unknown_fields) = dynamic(wire_view(), bytes)?;
    let mut text = String::new();
    for field in &unknown_fields {
        text.push_str(&format!("# unknown {field}, not shown\n"));
    }
    text.push_str(&message.to_text_format_with_options(&FormatOptions::new().pretty(true)));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(Printed { text, unknown_fields })
}

/// Prints a metaneff as proto3 JSON (field names as in the proto file, 64-bit integers as
/// strings, bytes in base64).
///
/// # Errors
/// A [`MetaneffDecodeError`] when `bytes` is not a well-formed metaneff.
pub fn to_json(bytes: &[u8]) -> Result<Printed, MetaneffDecodeError> {
    let (message, unknown_fields) = dynamic(message_descriptor("MetaNeff"), bytes)?;
    let options = prost_reflect::SerializeOptions::new().use_proto_field_name(true);
    // Through `serde_json::Value`, whose objects sort their keys: map order is deterministic.
    let value = message
        .serialize_with_options(serde_json::value::Serializer, &options)
        .and_then(|value| serde_json::to_string_pretty(&value))
        .map_err(|e| MetaneffDecodeError {
            offset: 0,
            path: "MetaNeff".to_owned(),
            reason: e.to_string(),
            exceeded: None,
        })?;
    let text = value + "\n";
    Ok(Printed { text, unknown_fields })
}

/// The order in which alias map entries from text are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AliasOrder {
    /// Ascending by key, one entry per key (the last one given): canonical bytes.
    Canonical,
    /// As the text gives them, every entry: the wire order of the file the text came from.
    AsWritten,
}

/// Parses text format into canonical metaneff bytes (alias entries ascending by key, whatever
/// their order in the text).
///
/// # Errors
/// A [`MetaneffTextError`] with the line and column of the first problem.
pub fn from_text(text: &str) -> Result<Vec<u8>, MetaneffTextError> {
    encode_text(text, AliasOrder::Canonical)
}

/// Parses text format into metaneff bytes whose alias entries stand in the order the text gives
/// them (every entry kept), for a byte-for-byte review of a foreign file: text printed by
/// [`to_text`] encodes back to the bytes it was printed from, unknown fields aside. Every other
/// field is encoded canonically.
///
/// # Errors
/// A [`MetaneffTextError`] with the line and column of the first problem.
pub fn from_text_in_written_order(text: &str) -> Result<Vec<u8>, MetaneffTextError> {
    encode_text(text, AliasOrder::AsWritten)
}

fn encode_text(text: &str, order: AliasOrder) -> Result<Vec<u8>, MetaneffTextError> {
    let message = DynamicMessage::parse_text_format(wire_view(), text).map_err(|e| {
        let offset = miette::Diagnostic::labels(&e)
            .and_then(|mut labels| labels.next())
            .map_or(text.len(), |label| label.offset());
        located("text format", text, offset, e.to_string())
    })?;
    encode_message(&message, "text format", order)
}

/// Parses proto3 JSON into canonical metaneff bytes.
///
/// # Errors
/// A [`MetaneffTextError`] with the line and column of the first problem.
pub fn from_json(json: &str) -> Result<Vec<u8>, MetaneffTextError> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(message_descriptor("MetaNeff"), &mut deserializer)
        .and_then(|m| deserializer.end().map(|()| m))
        .map_err(|e| MetaneffTextError {
            format: JSON,
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
    encode_message(&message, JSON, AliasOrder::Canonical)
}

/// Re-encodes canonically whatever prost-reflect's encoder does: every field but the alias map
/// through prost, and the alias entries (which the wire view keeps in order) with both key and
/// value written, in `order`, at their place in field order.
fn encode_message(
    message: &DynamicMessage,
    format: &'static str,
    order: AliasOrder,
) -> Result<Vec<u8>, MetaneffTextError> {
    let bytes = message.encode_to_vec();
    let error = |message: String| MetaneffTextError { format, line: 1, column: 1, message };
    let mut entries = Vec::new();
    for field in wire::fields(&bytes) {
        let field = field.map_err(|e| error(e.to_string()))?;
        if let (OUTPUT_ALIASES_TO_FIELD, FieldValue::Len(payload)) = (field.number, field.value) {
            let entry = AliasEntry::decode(payload).map_err(|e| error(e.to_string()))?;
            entries.push((entry.key, entry.value));
        }
    }
    if order == AliasOrder::Canonical {
        // A map holds one value per key, the last one given; a BTreeMap iterates ascending.
        let map: std::collections::BTreeMap<i64, i64> = entries.into_iter().collect();
        entries = map.into_iter().collect();
    }
    let mut rest = MetaNeff::decode(bytes.as_slice()).map_err(|e| error(e.to_string()))?;
    if entries.is_empty() {
        return Ok(encode(&rest));
    }
    rest.output_aliases_to.clear();
    Ok(edit::insert_in_order(
        &encode(&rest),
        OUTPUT_ALIASES_TO_FIELD,
        &super::encode_alias_entries(entries),
    ))
}

/// One `output_aliases_to` entry as it stands on the wire.
#[derive(Clone, PartialEq, prost::Message)]
struct AliasEntry {
    #[prost(int64, tag = "1")]
    key: i64,
    #[prost(int64, tag = "2")]
    value: i64,
}

fn located(format: &'static str, text: &str, offset: usize, message: String) -> MetaneffTextError {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    MetaneffTextError { format, line, column, message }
}

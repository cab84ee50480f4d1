//! Lossless edits of an encoded metaneff: change one field, keep every other byte.
//!
//! libtorchneuron's `Model` setters parse the stored metaneff, change a field and re-serialize;
//! the C++ runtime keeps the fields it does not know. prost drops unknown fields, so these edits
//! work on the wire form instead: the bytes of every field that is not being changed are copied
//! as they are. A changed field keeps the position of its first occurrence; a new one goes before
//! the first field with a higher number.
//!
//! Then the result is put in the order libprotobuf's re-serialization gives
//! ([`libprotobuf_order`]): in every message of the schema (the nested `MetaTensor`s,
//! `ModelConfig` and alias entries too), the known fields in field-number order (occurrences of
//! one number keep their relative order), then the unknown fields in the order they came. Only
//! the order changes: every field's bytes are kept, so a known field written in a non-canonical
//! form (an explicit default, an unpacked `shape`) keeps that form, where libprotobuf would
//! rewrite it. `08 03 78 2a 20 01` (field 1, unknown 15, field 4) with `lazy_load` set is
//! `08 03 20 01 28 01 78 2a`.
//!
//! Values follow proto3: setting a bool to `false` removes it, since an encoder never writes a
//! default. Like the C++ setters (`mutable_model_config()`), setting a `ModelConfig` flag creates
//! an empty `model_config` when there is none, even when the value is `false`.

use prost_reflect::{Kind, MessageDescriptor};

use super::{MetaneffDecodeError, check_wire, message_descriptor};
use crate::wire::{self, FieldValue, WireType};

/// Field numbers of the edited fields, from `metaneff.proto`.
mod field {
    pub(super) const INPUT_TENSORS: u32 = 1;
    pub(super) const OUTPUT_TENSORS: u32 = 2;
    pub(super) const MODEL_CONFIG: u32 = 3;
    pub(super) const ALLOW_DYNAMIC_BATCH_SIZE: u32 = 5;
}

/// A bool of `ModelConfig` that the `Model` setters change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigFlag {
    /// `async_load` (field 4): load in the background.
    AsyncLoad,
    /// `lazy_load` (field 5): load at the first forward.
    LazyLoad,
    /// `return_aliases` (field 6): return aliased outputs to the caller.
    ReturnAliases,
}

impl ConfigFlag {
    fn number(self) -> u32 {
        match self {
            ConfigFlag::AsyncLoad => 4,
            ConfigFlag::LazyLoad => 5,
            ConfigFlag::ReturnAliases => 6,
        }
    }
}

/// Which side of the I/O boundary a tensor is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `input_tensors`.
    Input,
    /// `output_tensors`.
    Output,
}

/// Sets a `ModelConfig` bool, creating `model_config` when absent.
///
/// # Errors
/// A [`MetaneffDecodeError`] when `bytes` is not a well-formed metaneff.
pub fn set_config_flag(
    bytes: &[u8],
    flag: ConfigFlag,
    value: bool,
) -> Result<Vec<u8>, MetaneffDecodeError> {
    check_wire(bytes)?;
    let has_config = wire::fields(bytes).flatten().any(|f| f.number == field::MODEL_CONFIG);
    let mut out = rewrite_len_fields(bytes, field::MODEL_CONFIG, |_, payload| {
        Some(set_bool(payload, flag.number(), value))
    });
    if !has_config {
        let mut config = Vec::new();
        if value {
            wire::put_varint_field(&mut config, flag.number(), 1);
        }
        let mut encoded = Vec::new();
        wire::put_len_field(&mut encoded, field::MODEL_CONFIG, &config);
        out = insert_in_order(&out, field::MODEL_CONFIG, &encoded);
    }
    Ok(libprotobuf_order(&out))
}

/// Sets `allow_dynamic_batch_size` on the tensors for which `choose(side, index)` returns a value;
/// tensors for which it returns `None` are left as they are.
///
/// # Errors
/// A [`MetaneffDecodeError`] when `bytes` is not a well-formed metaneff.
pub fn set_allow_dynamic_batch_size(
    bytes: &[u8],
    mut choose: impl FnMut(Side, usize) -> Option<bool>,
) -> Result<Vec<u8>, MetaneffDecodeError> {
    check_wire(bytes)?;
    let inputs_done = rewrite_len_fields(bytes, field::INPUT_TENSORS, |index, payload| {
        choose(Side::Input, index).map(|v| set_bool(payload, field::ALLOW_DYNAMIC_BATCH_SIZE, v))
    });
    let outputs_done = rewrite_len_fields(&inputs_done, field::OUTPUT_TENSORS, |index, payload| {
        choose(Side::Output, index).map(|v| set_bool(payload, field::ALLOW_DYNAMIC_BATCH_SIZE, v))
    });
    Ok(libprotobuf_order(&outputs_done))
}

/// Puts a well-formed `MetaNeff` in the field order of libprotobuf's serializer, keeping every
/// byte: in each message of the schema, known fields by number (stable), unknown fields after
/// them in their order. The message must already be checked.
pub fn libprotobuf_order(message: &[u8]) -> Vec<u8> {
    reorder(&message_descriptor("MetaNeff"), message)
}

fn reorder(descriptor: &MessageDescriptor, message: &[u8]) -> Vec<u8> {
    let mut known = Vec::new();
    let mut unknown = Vec::new();
    for field in wire::fields(message).flatten() {
        match descriptor.get_field(field.number) {
            Some(schema) => known.push((field, schema)),
            None => unknown.push(field),
        }
    }
    // A stable sort: repeated fields and map entries keep their order.
    known.sort_by_key(|(field, _)| field.number);
    let mut out = Vec::with_capacity(message.len());
    for (field, schema) in &known {
        match (&field.value, schema.kind()) {
            (FieldValue::Len(payload), Kind::Message(inner)) => {
                // The payload keeps its length: the tag and length prefix stay valid as they are.
                out.extend_from_slice(&message[field.start..field.end - payload.len()]);
                out.extend_from_slice(&reorder(&inner, payload));
            }
            _ => out.extend_from_slice(&message[field.start..field.end]),
        }
    }
    for field in &unknown {
        out.extend_from_slice(&message[field.start..field.end]);
    }
    out
}

/// Copies `message`, replacing the payload of each length-delimited field `number` for which
/// `rewrite(occurrence_index, payload)` returns new bytes. The message must already be checked.
fn rewrite_len_fields(
    message: &[u8],
    number: u32,
    mut rewrite: impl FnMut(usize, &[u8]) -> Option<Vec<u8>>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 8);
    let mut occurrence = 0;
    for field in wire::fields(message).flatten() {
        let replaced = match field.value {
            FieldValue::Len(payload) if field.number == number => {
                occurrence += 1;
                rewrite(occurrence - 1, payload)
            }
            _ => None,
        };
        match replaced {
            Some(payload) => wire::put_len_field(&mut out, number, &payload),
            None => out.extend_from_slice(&message[field.start..field.end]),
        }
    }
    out
}

/// Copies `message` with the bool field `number` set to `value` (removed when false): the first
/// occurrence is replaced in place, later ones dropped, or a new field inserted in number order.
fn set_bool(message: &[u8], number: u32, value: bool) -> Vec<u8> {
    let mut encoded = Vec::new();
    if value {
        wire::put_varint_field(&mut encoded, number, 1);
    }
    let mut out = Vec::with_capacity(message.len() + encoded.len());
    let mut placed = false;
    for field in wire::fields(message).flatten() {
        if field.number == number && field.wire_type == WireType::Varint {
            if !placed {
                out.extend_from_slice(&encoded);
                placed = true;
            }
        } else {
            out.extend_from_slice(&message[field.start..field.end]);
        }
    }
    if placed { out } else { insert_in_order(message, number, &encoded) }
}

/// Copies `message` with `encoded` (one whole field numbered `number`) inserted before the first
/// field with a higher number, or at the end.
pub(super) fn insert_in_order(message: &[u8], number: u32, encoded: &[u8]) -> Vec<u8> {
    let at = wire::fields(message)
        .flatten()
        .find(|f| f.number > number)
        .map_or(message.len(), |f| f.start);
    let mut out = Vec::with_capacity(message.len() + encoded.len());
    out.extend_from_slice(&message[..at]);
    out.extend_from_slice(encoded);
    out.extend_from_slice(&message[at..]);
    out
}

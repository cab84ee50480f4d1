//! A borrowed view of a metaneff, checked and recorded in one pass over its bytes.
//!
//! [`MetaneffView::decode`] walks the wire form once. The same walk that checks every rule the
//! two-step decoder applies (the schema walk of [`check_wire`](super::check_wire), then prost)
//! records what a reader needs: names, keys, contents and the graph as slices of the input,
//! shapes as the bytes of their packed run with an iterator over them, scalars by value, and
//! each tensor list as one `Vec` of small structs. Nothing is copied and nothing is allocated per
//! field; the only allocations are the growth of those lists (and of the alias list when a
//! message has aliases), made with `try_reserve`.
//!
//! Design choices:
//! - **The fast walk says only "malformed".** Its hot loop carries no path, offset bookkeeping
//!   or formatting. When it refuses a message, the reference decoder (the schema walk, then
//!   prost) runs on the same bytes and its error is returned, so the byte offset, field path
//!   and reason are the reference decoder's by construction, not a second implementation of
//!   them. Tests check that the two accept exactly the same inputs.
//! - **Exactly as strict as the reference, no more.** Tags, varints (ten bytes at most, the
//!   tenth 0 or 1), lengths within the enclosing message, the wire type of every known field
//!   (`shape` packed or not), packed runs made of whole varints, groups closed by their own end
//!   tag, and prost's recursion budget of 100 (one level per nested message, one per group),
//!   which is the tighter of the two limits on nested groups.
//! - **Count limits are the one exception** ([`MetaneffLimits`]): more tensors in a list or
//!   more dimensions in a shape than the limits allow is refused here, with
//!   [`MetaneffDecodeError::exceeded`] naming the limit, though the wire form is well formed.
//!   A tensor can be two bytes on the wire and a few hundred once decoded, so without them
//!   memory per input byte would have no bound worth the name.
//! - **The same answer as prost.** A scalar seen twice keeps its last value, a repeated
//!   `model_config` merges field by field, `shape` runs (packed or one element per field)
//!   concatenate, an alias entry without a key or value means 0, and a later entry for the same
//!   output wins. [`MetaneffView::to_owned`] builds the prost message from the view, and tests
//!   check it equals the reference decoder's for every metaneff in the repository and for
//!   generated ones.
//! - **Names stay bytes.** The schema declares every text-like field `bytes`, so the view hands
//!   out `&[u8]` and never rejects a name for not being UTF-8.

use std::collections::TryReserveError;
use std::fmt;

use prost::Message as _;
use prost::bytes::Bytes;

use super::meta_tensor::{DataType, Type};
use super::{
    MetaNeff, MetaTensor, MetaneffDecodeError, MetaneffLimitExceeded, MetaneffLimits, ModelConfig,
};

/// A metaneff decoded without copying: every byte field borrows from the input.
///
/// The fields mirror [`MetaNeff`]; [`MetaneffView::to_owned`] converts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaneffView<'a> {
    /// `input_tensors`, in wire order.
    pub input_tensors: Vec<TensorView<'a>>,
    /// `output_tensors`, in wire order.
    pub output_tensors: Vec<TensorView<'a>>,
    /// `model_config`, merged over all its occurrences as prost merges them.
    pub model_config: Option<ModelConfig>,
    /// `serialized_graph_def` (an XLA `HloModuleProto`), a slice of the input.
    pub serialized_graph_def: &'a [u8],
    /// `name`.
    pub name: &'a [u8],
    /// The entries of `output_aliases_to` (output index, input index) in wire order; when an
    /// output appears twice the later entry wins, as it does in the map ([`Self::alias_of`]).
    pub output_aliases_to: Vec<(i64, i64)>,
    /// `num_user_inputs`.
    pub num_user_inputs: i64,
    /// `num_states`.
    pub num_states: i64,
    /// `num_weights`.
    pub num_weights: i64,
    /// How many fields the schema does not know were skipped, at any message level (a group
    /// counts once); [`check_wire`](super::check_wire) lists them with their paths.
    pub n_unknown_fields: usize,
}

/// One `MetaTensor` of a [`MetaneffView`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TensorView<'a> {
    /// `name`: the key the runtime binds by.
    pub name: &'a [u8],
    /// `shape`, borrowed.
    pub shape: ShapeView<'a>,
    /// `data_type` as on the wire (an open enum: any `i32`); see [`Self::dtype`].
    pub data_type: i32,
    /// `content`.
    pub content: &'a [u8],
    /// `allow_dynamic_batch_size`.
    pub allow_dynamic_batch_size: bool,
    /// `checkpoint_key`; `Some(b"")` when set to the empty string.
    pub checkpoint_key: Option<&'a [u8]>,
    /// `type` as on the wire; see [`Self::tensor_type`].
    pub r#type: i32,
    /// `user_input_key`; `Some(b"")` when set to the empty string.
    pub user_input_key: Option<&'a [u8]>,
}

/// A tensor's `shape` without decoding it into a `Vec`: [`ShapeView::iter`] reads the
/// dimensions from the input's bytes, and [`ShapeView::len`] counts them there (or was counted
/// by the decoding pass when the shape is spread over several fields).
///
/// Encoders write the shape as one packed run ([`ShapeView::packed_bytes`]); the wire form also
/// allows one element per field or several runs, which the view reads from the tensor's bytes.
#[derive(Clone, Copy, Default)]
pub struct ShapeView<'a> {
    /// The packed run, or (for [`ShapeForm::Fields`]) the whole tensor message.
    bytes: &'a [u8],
    /// The number of dimensions, for [`ShapeForm::Fields`] only.
    fields_len: usize,
    form: ShapeForm,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ShapeForm {
    /// `bytes` is one packed run of varints (or empty).
    #[default]
    Packed,
    /// `bytes` is the tensor message; the shape is every field 2 in it, in order.
    Fields,
}

impl<'a> ShapeView<'a> {
    /// The number of dimensions.
    pub fn len(&self) -> usize {
        match self.form {
            // Each varint of a checked run ends with the one byte of it below 0x80.
            ShapeForm::Packed => count_varints(self.bytes),
            ShapeForm::Fields => self.fields_len,
        }
    }

    /// Whether the shape has no dimensions (a scalar).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The dimensions, in order.
    pub fn iter(&self) -> ShapeIter<'a> {
        let (fields, run) = match self.form {
            ShapeForm::Packed => (Reader::new(&[]), Reader::new(self.bytes)),
            ShapeForm::Fields => (Reader::new(self.bytes), Reader::new(&[])),
        };
        ShapeIter { fields, run, remaining: self.len() }
    }

    /// The packed varints of the shape when it is written as one packed run (as every encoder
    /// writes it), `None` when it is spread over several fields.
    pub fn packed_bytes(&self) -> Option<&'a [u8]> {
        (self.form == ShapeForm::Packed).then_some(self.bytes)
    }

    /// The dimensions in a new `Vec`.
    ///
    /// # Errors
    /// The allocation failed.
    pub fn to_vec(&self) -> Result<Vec<i64>, TryReserveError> {
        let mut out = Vec::new();
        if self.bytes.is_empty() {
            return Ok(out);
        }
        out.try_reserve_exact(self.len())?;
        self.append_to(&mut out);
        debug_assert_eq!(out.len(), self.len(), "a checked run is whole varints");
        Ok(out)
    }

    /// At least the number of dimensions, found without reading them: each takes a byte at
    /// least.
    #[inline(always)]
    pub(super) fn max_len(&self) -> usize {
        match self.form {
            ShapeForm::Packed => self.bytes.len(),
            ShapeForm::Fields => self.fields_len,
        }
    }

    /// Appends the dimensions to `out`, which the caller has reserved [`Self::max_len`] more
    /// elements of.
    #[inline(always)]
    pub(super) fn append_to(&self, out: &mut Vec<i64>) {
        if self.form == ShapeForm::Packed {
            // The run was checked: whole varints, none over ten bytes. One and two bytes (every
            // dimension below 16 384) are read inline.
            let run = self.bytes;
            let mut pos = 0;
            while let Some(&first) = run.get(pos) {
                if first < 0x80 {
                    out.push(i64::from(first));
                    pos += 1;
                    continue;
                }
                match run.get(pos + 1) {
                    Some(&second) if second < 0x80 => {
                        out.push(i64::from(first & 0x7f) | (i64::from(second) << 7));
                        pos += 2;
                    }
                    _ => match long_varint(run, pos) {
                        (_, 0) => return,
                        (value, after) => {
                            out.push(value as i64);
                            pos = after;
                        }
                    },
                }
            }
        } else {
            out.extend(self.iter());
        }
    }
}

impl fmt::Debug for ShapeView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Two shapes are equal when their dimensions are, whatever their wire form.
impl PartialEq for ShapeView<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for ShapeView<'_> {}

impl<'a> IntoIterator for &ShapeView<'a> {
    type Item = i64;
    type IntoIter = ShapeIter<'a>;

    fn into_iter(self) -> ShapeIter<'a> {
        self.iter()
    }
}

/// The dimensions of a [`ShapeView`].
#[derive(Clone, Debug)]
pub struct ShapeIter<'a> {
    /// The tensor's fields still to read ([`ShapeForm::Fields`]), else empty.
    fields: Reader<'a>,
    /// The packed run being read.
    run: Reader<'a>,
    remaining: usize,
}

impl Iterator for ShapeIter<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        // The bytes were checked when the view was made, so no read below fails; if one did,
        // the iteration would end early rather than panic.
        loop {
            if self.run.has_more() {
                let value = self.run.varint().ok()?;
                self.remaining = self.remaining.saturating_sub(1);
                return Some(value as i64);
            }
            if !self.fields.has_more() {
                return None;
            }
            match self.fields.tag().ok()? {
                (2, LEN) => self.run = Reader::new(self.fields.bytes().ok()?),
                (2, VARINT) => {
                    let value = self.fields.varint().ok()?;
                    self.remaining = self.remaining.saturating_sub(1);
                    return Some(value as i64);
                }
                (number, wire) => self.fields.skip(number, wire, RECURSION_LIMIT).ok()?,
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for ShapeIter<'_> {}

impl<'a> TensorView<'a> {
    /// The data type, `None` for a value the schema does not name.
    pub fn dtype(&self) -> Option<DataType> {
        DataType::try_from(self.data_type).ok()
    }

    /// The tensor's role, `None` for a value the schema does not name.
    pub fn tensor_type(&self) -> Option<Type> {
        Type::try_from(self.r#type).ok()
    }

    /// The owned prost message, each byte field copied into a buffer of its own.
    ///
    /// # Errors
    /// An allocation failed.
    pub fn to_owned(&self) -> Result<MetaTensor, TryReserveError> {
        self.to_owned_with(&mut |field| copy(field).map(Bytes::from))
    }

    /// [`Self::to_owned`], with each byte field made by `share` (a copy, or a view of a buffer
    /// the field lies in).
    fn to_owned_with<E>(
        &self,
        share: &mut impl FnMut(&'a [u8]) -> Result<Bytes, E>,
    ) -> Result<MetaTensor, E>
    where
        E: From<TryReserveError>,
    {
        let mut owned = MetaTensor::default();
        self.fill_owned(&mut owned, share)?;
        Ok(owned)
    }

    /// Sets every field of `owned` (which holds the defaults) from this view.
    #[inline(always)]
    fn fill_owned<E>(
        &self,
        owned: &mut MetaTensor,
        share: &mut impl FnMut(&'a [u8]) -> Result<Bytes, E>,
    ) -> Result<(), E>
    where
        E: From<TryReserveError>,
    {
        owned.name = share(self.name)?;
        owned.shape = self.shape.to_vec()?;
        owned.data_type = self.data_type;
        if !self.content.is_empty() {
            owned.content = share(self.content)?;
        }
        owned.allow_dynamic_batch_size = self.allow_dynamic_batch_size;
        owned.checkpoint_key = self.checkpoint_key.map(&mut *share).transpose()?;
        owned.r#type = self.r#type;
        owned.user_input_key = self.user_input_key.map(&mut *share).transpose()?;
        Ok(())
    }
}

impl<'a> MetaneffView<'a> {
    /// Decodes `bytes` as a `MetaNeff` in one pass, borrowing every byte field from it.
    ///
    /// # Errors
    /// A [`MetaneffDecodeError`] naming the byte offset and field path of the first problem,
    /// the same error [`decode`](super::decode) gives for the same bytes; or, when the tensor
    /// lists cannot be allocated, an error saying so.
    pub fn decode(bytes: &'a [u8]) -> Result<Self, MetaneffDecodeError> {
        Self::decode_with_limits(bytes, &MetaneffLimits::default())
    }

    /// [`Self::decode`] under count limits other than the defaults.
    ///
    /// # Errors
    /// As [`Self::decode`]; a message past a limit is refused with
    /// [`MetaneffDecodeError::exceeded`] set, naming the list or tensor that passed it.
    pub fn decode_with_limits(
        bytes: &'a [u8],
        limits: &MetaneffLimits,
    ) -> Result<Self, MetaneffDecodeError> {
        match parse(bytes, limits) {
            Ok(view) => Ok(view),
            Err(Stop::Malformed) => Err(reference_error(bytes)),
            Err(Stop::OutOfMemory) => Err(out_of_memory("the tensor lists")),
            Err(Stop::Exceeded { list, index, at, exceeded }) => {
                Err(limit_error(bytes, list, index, at, exceeded))
            }
        }
    }

    /// The input index whose buffer output `output` reuses, if any (the last entry for that
    /// output, as in the map).
    pub fn alias_of(&self, output: i64) -> Option<i64> {
        self.output_aliases_to.iter().rev().find(|(key, _)| *key == output).map(|(_, input)| *input)
    }

    /// The owned prost message, equal to what [`decode`](super::decode) returns for the same
    /// bytes. Every byte field is copied into a buffer of its own, `serialized_graph_def`
    /// included; [`decode`](super::decode) copies the input once and shares it, and
    /// [`decode_owned`](super::decode_owned) shares an owned input without copying.
    ///
    /// # Errors
    /// An allocation failed.
    pub fn to_owned(&self) -> Result<MetaNeff, MetaneffDecodeError> {
        self.to_owned_with(|field| {
            copy(field).map(Bytes::from).map_err(|_| out_of_memory_for(field.len()))
        })
    }

    /// The owned prost message whose byte fields are views of `input`, the buffer this view
    /// was decoded from (or a copy of it): no field is copied, and each shares `input`'s
    /// allocation, which lives as long as any of them.
    ///
    /// `origin` is the slice the view was decoded from, whose bytes `input` holds at the same
    /// offsets.
    pub(super) fn to_owned_in(
        &self,
        origin: &'a [u8],
        input: &Bytes,
    ) -> Result<MetaNeff, MetaneffDecodeError> {
        debug_assert_eq!(origin.len(), input.len(), "the input is the view's bytes");
        let base = origin.as_ptr() as usize;
        self.to_owned_with(|field| {
            // Every field of the view is a slice of `origin`, so its offset there is the
            // difference of the two addresses, and the same range of `input` holds its bytes.
            let start = (field.as_ptr() as usize).wrapping_sub(base);
            let end = start.checked_add(field.len());
            match end {
                _ if field.is_empty() => Ok(Bytes::new()),
                Some(end) if end <= input.len() => Ok(input.slice(start..end)),
                _ => Err(MetaneffDecodeError {
                    offset: 0,
                    path: "MetaNeff".to_owned(),
                    reason: "a decoded field lies outside the message, expected every field \
                             within it (a bug in nrtsim)"
                        .to_owned(),
                    exceeded: None,
                }),
            }
        })
    }

    /// The owned prost message with each byte field made by `share`.
    fn to_owned_with(
        &self,
        mut share: impl FnMut(&'a [u8]) -> Result<Bytes, MetaneffDecodeError>,
    ) -> Result<MetaNeff, MetaneffDecodeError> {
        let mut tensors = |list: &[TensorView<'a>], field: &str| {
            let mut out: Vec<MetaTensor> = Vec::new();
            out.try_reserve_exact(list.len()).map_err(|_| out_of_memory(field))?;
            // The defaults are written into the reserved room, then each tensor's fields in
            // their place there: building a tensor aside and moving it in copies its 170 bytes,
            // which costs about as much as building it.
            out.resize_with(list.len(), MetaTensor::default);
            let mut share = |bytes| share(bytes).map_err(|_| OwnedStop::OutOfMemory);
            for (owned, tensor) in out.iter_mut().zip(list) {
                if tensor.fill_owned(owned, &mut share).is_err() {
                    return Err(out_of_memory(field));
                }
            }
            Ok::<_, MetaneffDecodeError>(out)
        };
        let input_tensors = tensors(&self.input_tensors, "input_tensors")?;
        let output_tensors = tensors(&self.output_tensors, "output_tensors")?;
        Ok(MetaNeff {
            input_tensors,
            output_tensors,
            model_config: self.model_config,
            serialized_graph_def: share(self.serialized_graph_def).map_err(|_| {
                out_of_memory(&format!(
                    "{} bytes of serialized_graph_def",
                    self.serialized_graph_def.len()
                ))
            })?,
            name: share(self.name).map_err(|_| out_of_memory("name"))?,
            output_aliases_to: self.output_aliases_to.iter().copied().collect(),
            num_user_inputs: self.num_user_inputs,
            num_states: self.num_states,
            num_weights: self.num_weights,
        })
    }
}

/// A tensor field that could not be made while building an owned message; the message's error
/// names the tensor list.
enum OwnedStop {
    OutOfMemory,
}

impl From<TryReserveError> for OwnedStop {
    fn from(_: TryReserveError) -> OwnedStop {
        OwnedStop::OutOfMemory
    }
}

/// Copies a byte field into a new `Vec`, failing instead of aborting when memory is short.
fn copy(bytes: &[u8]) -> Result<Vec<u8>, TryReserveError> {
    let mut out = Vec::new();
    out.try_reserve_exact(bytes.len())?;
    out.extend_from_slice(bytes);
    Ok(out)
}

fn out_of_memory_for(n_bytes: usize) -> MetaneffDecodeError {
    out_of_memory(&format!("{n_bytes} bytes"))
}

fn out_of_memory(what: &str) -> MetaneffDecodeError {
    MetaneffDecodeError {
        offset: 0,
        path: "MetaNeff".to_owned(),
        reason: format!("could not allocate memory for {what}, expected enough for the message"),
        exceeded: None,
    }
}

/// The error for a message past a count limit: the offset and path of the tensor that passed it.
fn limit_error(
    bytes: &[u8],
    list: &str,
    index: usize,
    at: usize,
    exceeded: MetaneffLimitExceeded,
) -> MetaneffDecodeError {
    // `at` is the address of a tensor's payload inside `bytes`, so the difference of the two
    // addresses is its offset.
    let offset = at.saturating_sub(bytes.as_ptr() as usize);
    let (path, reason) = match exceeded {
        MetaneffLimitExceeded::TooManyTensors { limit } => (
            format!("MetaNeff.{list}[{index}]"),
            format!("more than {limit} {list}, expected at most {limit} (the tensor limit)"),
        ),
        MetaneffLimitExceeded::TooManyShapeDims { count, limit } => (
            format!("MetaNeff.{list}[{index}].shape"),
            format!("{count} dimensions, expected at most {limit} (the shape dimension limit)"),
        ),
    };
    MetaneffDecodeError { offset, path, reason, exceeded: Some(exceeded) }
}

/// The error of the reference decoder (the schema walk, then prost) for bytes the fast walk
/// refused.
fn reference_error(bytes: &[u8]) -> MetaneffDecodeError {
    match super::check_wire(bytes) {
        Err(error) => error,
        Ok(_) => match MetaNeff::decode(bytes) {
            Err(error) => super::prost_error(error),
            // The two walks are tested to agree; should they not, the input is still refused
            // rather than half decoded.
            Ok(_) => MetaneffDecodeError {
                offset: 0,
                path: "MetaNeff".to_owned(),
                reason: "the one-pass decoder refused bytes the reference decoder accepts, \
                         expected both to agree (a bug in nrtsim)"
                    .to_owned(),
                exceeded: None,
            },
        },
    }
}

/// Why the fast walk stopped. The details of a malformed input come from [`reference_error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Malformed,
    OutOfMemory,
    /// A count limit was passed by tensor `index` of `list`, whose payload starts at address `at`.
    Exceeded {
        list: &'static str,
        index: usize,
        at: usize,
        exceeded: MetaneffLimitExceeded,
    },
}

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const I32: u8 = 5;

/// The largest field number a tag may carry.
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// prost's recursion budget: a field directly in the top-level message has 100, one in a
/// nested message 99, and each enclosing group takes one more; a field with none left is
/// refused.
const RECURSION_LIMIT: u32 = 100;

// The hot loops below match on a whole tag (field number and wire type as one varint value),
// so each known field costs one dispatch, and keep the read position in a local that the
// helpers update through `&mut usize` once inlined. Every helper keeps `*pos <= buf.len()`.

/// Reads a varint at `*pos`: one or two bytes inline, longer ones out of line.
#[inline(always)]
fn varint(buf: &[u8], pos: &mut usize) -> Result<u64, Stop> {
    if let Some(&first) = buf.get(*pos) {
        if first < 0x80 {
            *pos += 1;
            return Ok(u64::from(first));
        }
        if let Some(&second) = buf.get(*pos + 1) {
            if second < 0x80 {
                *pos += 2;
                return Ok(u64::from(first & 0x7f) | (u64::from(second) << 7));
            }
        }
    }
    match long_varint(buf, *pos) {
        (_, 0) => Err(Stop::Malformed),
        (value, after) => {
            *pos = after;
            Ok(value)
        }
    }
}

/// A varint of any length at `pos`: its value and the position after it, or a position of 0
/// when it is truncated, longer than ten bytes, or its tenth byte carries more than the 64th
/// bit.
#[inline(never)]
fn long_varint(buf: &[u8], pos: usize) -> (u64, usize) {
    let rest = buf.get(pos..).unwrap_or_default();
    let mut value = 0u64;
    for (i, &byte) in rest.iter().take(10).enumerate() {
        if i == 9 && byte > 1 {
            return (0, 0);
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return (value, pos + i + 1);
        }
    }
    (0, 0)
}

/// Reads a length-delimited payload at `*pos`, which must lie within `buf`.
#[inline(always)]
fn len_delimited<'a>(buf: &'a [u8], pos: &mut usize) -> Result<&'a [u8], Stop> {
    // A length under 128 (one byte) inline.
    if let Some(&declared) = buf.get(*pos) {
        if declared < 0x80 {
            let start = *pos + 1;
            let end = start + usize::from(declared);
            return match buf.get(start..end) {
                Some(payload) => {
                    *pos = end;
                    Ok(payload)
                }
                None => Err(Stop::Malformed),
            };
        }
    }
    match long_len_delimited(buf, *pos) {
        Some((payload, end)) => {
            *pos = end;
            Ok(payload)
        }
        None => Err(Stop::Malformed),
    }
}

/// A length-delimited payload at `pos` whose length takes two bytes or more, and the position
/// after it; `None` when the length is malformed or runs past the end. The position is passed
/// by value so that the callers' stays in a register.
#[inline(never)]
fn long_len_delimited(buf: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let (declared, start) = match long_varint(buf, pos) {
        (_, 0) => return None,
        read => read,
    };
    let available = buf.len() - start;
    if declared > available as u64 {
        return None;
    }
    let end = start + declared as usize;
    Some((buf.get(start..end)?, end))
}

/// A field whose tag matched none of the known fields of a message whose known field numbers
/// are `1..=n_known`: a malformed tag, a known field with the wrong wire type, or an unknown
/// field, which is skipped.
#[inline(never)]
fn other_field(
    buf: &[u8],
    pos: &mut usize,
    key: u64,
    n_known: u64,
    budget: u32,
) -> Result<(), Stop> {
    let wire = (key & 7) as u8;
    let number = key >> 3;
    if wire > I32 || number == 0 || number > MAX_FIELD_NUMBER || number <= n_known {
        return Err(Stop::Malformed);
    }
    // Bounded to 29 bits just above.
    skip(buf, pos, number as u32, wire, budget)
}

/// Skips a field the schema does not know, checking it as prost and the schema walk do.
/// `budget` is what is left of [`RECURSION_LIMIT`] at this field.
fn skip(buf: &[u8], pos: &mut usize, number: u32, wire: u8, budget: u32) -> Result<(), Stop> {
    if budget == 0 {
        return Err(Stop::Malformed);
    }
    match wire {
        VARINT => varint(buf, pos).map(drop),
        I64 => fixed(buf, pos, 8),
        LEN => len_delimited(buf, pos).map(drop),
        I32 => fixed(buf, pos, 4),
        START_GROUP => loop {
            if *pos >= buf.len() {
                return Err(Stop::Malformed);
            }
            let (inner, inner_wire) = tag(buf, pos)?;
            if inner_wire == END_GROUP {
                return if inner == number { Ok(()) } else { Err(Stop::Malformed) };
            }
            skip(buf, pos, inner, inner_wire, budget - 1)?;
        },
        _ => Err(Stop::Malformed),
    }
}

fn fixed(buf: &[u8], pos: &mut usize, width: usize) -> Result<(), Stop> {
    if buf.len() - *pos < width {
        return Err(Stop::Malformed);
    }
    *pos += width;
    Ok(())
}

/// A tag: the field number (1 to 2^29 - 1) and the wire type (0 to 5).
fn tag(buf: &[u8], pos: &mut usize) -> Result<(u32, u8), Stop> {
    let key = varint(buf, pos)?;
    let wire = (key & 7) as u8;
    let number = key >> 3;
    if wire > I32 || number == 0 || number > MAX_FIELD_NUMBER {
        return Err(Stop::Malformed);
    }
    // Bounded to 29 bits just above.
    Ok((number as u32, wire))
}

/// A cursor over bytes the decoding pass has checked, for [`ShapeIter`].
#[derive(Clone, Copy, Debug)]
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn has_more(&self) -> bool {
        self.pos < self.buf.len()
    }

    fn varint(&mut self) -> Result<u64, Stop> {
        varint(self.buf, &mut self.pos)
    }

    fn tag(&mut self) -> Result<(u32, u8), Stop> {
        tag(self.buf, &mut self.pos)
    }

    fn bytes(&mut self) -> Result<&'a [u8], Stop> {
        len_delimited(self.buf, &mut self.pos)
    }

    fn skip(&mut self, number: u32, wire: u8, budget: u32) -> Result<(), Stop> {
        skip(self.buf, &mut self.pos, number, wire, budget)
    }
}

/// Appends to a list, growing it with `try_reserve` (amortized, as `push` grows).
#[inline(always)]
fn push<T>(list: &mut Vec<T>, item: T) -> Result<(), Stop> {
    if list.len() == list.capacity() {
        list.try_reserve(1).map_err(|_| Stop::OutOfMemory)?;
    }
    list.push(item);
    Ok(())
}

/// Appends a tensor decoded from `bytes` to a list. The tensor is decoded in its place in the
/// list: returning a struct this size through a `Result` costs more than decoding it.
#[inline(always)]
fn push_tensor<'a>(
    list: &mut Vec<TensorView<'a>>,
    bytes: &'a [u8],
    n_unknown: &mut usize,
    limits: &MetaneffLimits,
    name: &'static str,
) -> Result<(), Stop> {
    let index = list.len();
    if index == limits.max_tensors {
        let exceeded = MetaneffLimitExceeded::TooManyTensors { limit: limits.max_tensors };
        return Err(Stop::Exceeded { list: name, index, at: bytes.as_ptr() as usize, exceeded });
    }
    push(list, TensorView::default())?;
    let Some(tensor) = list.last_mut() else {
        return Err(Stop::OutOfMemory);
    };
    parse_tensor(bytes, tensor, n_unknown)?;
    // Each dimension takes a byte at least, so a shape of few bytes needs no count.
    let shape = tensor.shape;
    if shape.bytes.len() > limits.max_shape_dims || shape.fields_len > limits.max_shape_dims {
        let count = shape.len();
        if count > limits.max_shape_dims {
            let exceeded =
                MetaneffLimitExceeded::TooManyShapeDims { count, limit: limits.max_shape_dims };
            return Err(Stop::Exceeded {
                list: name,
                index,
                at: bytes.as_ptr() as usize,
                exceeded,
            });
        }
    }
    Ok(())
}

/// Tags (`number << 3 | wire type`) of the known fields, as the hot loops match them.
const fn key(number: u64, wire: u8) -> u64 {
    (number << 3) | wire as u64
}

fn parse<'a>(bytes: &'a [u8], limits: &MetaneffLimits) -> Result<MetaneffView<'a>, Stop> {
    const INPUT_TENSORS: u64 = key(1, LEN);
    const OUTPUT_TENSORS: u64 = key(2, LEN);
    const MODEL_CONFIG: u64 = key(3, LEN);
    const SERIALIZED_GRAPH_DEF: u64 = key(4, LEN);
    const NAME: u64 = key(5, LEN);
    const OUTPUT_ALIASES_TO: u64 = key(6, LEN);
    const NUM_USER_INPUTS: u64 = key(7, VARINT);
    const NUM_STATES: u64 = key(8, VARINT);
    const NUM_WEIGHTS: u64 = key(9, VARINT);

    let mut view = MetaneffView::default();
    let mut pos = 0;
    // The input tensors come first and are most of a small message: take them in a loop of
    // their own, matching the tag's one byte (see `parse_tensor` for the same idea within a
    // tensor; any other form of the tag goes to the general loop below).
    let mut inputs = Vec::new();
    inputs
        .try_reserve_exact(
            (bytes.len() / TYPICAL_TENSOR_BYTES).min(MAX_RESERVED_INPUTS).min(limits.max_tensors),
        )
        .map_err(|_| Stop::OutOfMemory)?;
    let mut n_unknown = 0;
    while bytes.get(pos) == Some(&(INPUT_TENSORS as u8)) {
        pos += 1;
        let tensor = len_delimited(bytes, &mut pos)?;
        push_tensor(&mut inputs, tensor, &mut n_unknown, limits, "input_tensors")?;
    }
    view.input_tensors = inputs;
    view.n_unknown_fields = n_unknown;
    while pos < bytes.len() {
        match varint(bytes, &mut pos)? {
            INPUT_TENSORS => {
                let tensor = len_delimited(bytes, &mut pos)?;
                push_tensor(
                    &mut view.input_tensors,
                    tensor,
                    &mut view.n_unknown_fields,
                    limits,
                    "input_tensors",
                )?;
            }
            OUTPUT_TENSORS => {
                let tensor = len_delimited(bytes, &mut pos)?;
                push_tensor(
                    &mut view.output_tensors,
                    tensor,
                    &mut view.n_unknown_fields,
                    limits,
                    "output_tensors",
                )?;
            }
            MODEL_CONFIG => {
                let config = view.model_config.get_or_insert_with(ModelConfig::default);
                parse_config(len_delimited(bytes, &mut pos)?, config, &mut view.n_unknown_fields)?;
            }
            SERIALIZED_GRAPH_DEF => view.serialized_graph_def = len_delimited(bytes, &mut pos)?,
            NAME => view.name = len_delimited(bytes, &mut pos)?,
            OUTPUT_ALIASES_TO => {
                let entry = len_delimited(bytes, &mut pos)?;
                let entry = parse_alias_entry(entry, &mut view.n_unknown_fields)?;
                push(&mut view.output_aliases_to, entry)?;
            }
            // int64 fields carry the two's-complement pattern of the value.
            NUM_USER_INPUTS => view.num_user_inputs = varint(bytes, &mut pos)? as i64,
            NUM_STATES => view.num_states = varint(bytes, &mut pos)? as i64,
            NUM_WEIGHTS => view.num_weights = varint(bytes, &mut pos)? as i64,
            other => {
                other_field(bytes, &mut pos, other, 9, RECURSION_LIMIT)?;
                view.n_unknown_fields += 1;
            }
        }
    }
    Ok(view)
}

/// The wire bytes of an input tensor assumed when reserving the input list before its length
/// is known: a tensor with a short name, a shape, a data type and a checkpoint key takes 20 to
/// 60. Counting the tensors first would be a second walk over their lengths, one dependent load
/// after another, which costs a fifth of the decode; a list longer than the estimate grows by
/// doubling.
const TYPICAL_TENSOR_BYTES: usize = 32;

/// The most input tensor views reserved from the estimate (64 KiB of them), so that a message
/// that is mostly its graph does not reserve room for tensors it does not have.
const MAX_RESERVED_INPUTS: usize = 65_536 / std::mem::size_of::<TensorView<'static>>();

/// Where a tensor's shape was seen so far.
#[derive(Clone, Copy)]
enum ShapeSeen<'a> {
    None,
    OneRun(&'a [u8]),
    /// In several fields, with this many dimensions so far.
    Scattered(usize),
}

impl ShapeSeen<'_> {
    fn len(self) -> usize {
        match self {
            ShapeSeen::None => 0,
            ShapeSeen::OneRun(run) => count_varints(run),
            ShapeSeen::Scattered(len) => len,
        }
    }
}

/// Decodes a tensor into `tensor`, which holds the defaults.
#[inline(always)]
fn parse_tensor<'a>(
    bytes: &'a [u8],
    tensor: &mut TensorView<'a>,
    n_unknown: &mut usize,
) -> Result<(), Stop> {
    const NAME: u64 = key(1, LEN);
    const SHAPE_PACKED: u64 = key(2, LEN);
    const SHAPE_ELEMENT: u64 = key(2, VARINT);
    const DATA_TYPE: u64 = key(3, VARINT);
    const CONTENT: u64 = key(4, LEN);
    const ALLOW_DYNAMIC_BATCH_SIZE: u64 = key(5, VARINT);
    const CHECKPOINT_KEY: u64 = key(6, LEN);
    const TYPE: u64 = key(7, VARINT);
    const USER_INPUT_KEY: u64 = key(8, LEN);

    let mut pos = 0;

    // Encoders write the fields in number order, each at most once, each tag in its one
    // shortest byte, and most lengths and small values in one byte too: take the fields of
    // that form in that order, each with one well-predicted two-byte comparison, then hand
    // whatever is left (fields out of order, repeated, unknown, long, or tags written longer)
    // to the general loop, which continues in wire order, so the last occurrence of a field
    // still wins.
    const _: () = assert!(USER_INPUT_KEY < 0x80, "every known tag fits in one byte");
    macro_rules! in_order {
        (len $expected:expr => |$payload:ident| $take:expr) => {
            if let Some(n) = short_field(bytes, pos, $expected as u8) {
                let start = pos + 2;
                let end = start + usize::from(n);
                let $payload = bytes.get(start..end).ok_or(Stop::Malformed)?;
                pos = end;
                $take;
            }
        };
        (varint $expected:expr => |$value:ident| $take:expr) => {
            if let Some($value) = short_field(bytes, pos, $expected as u8) {
                pos += 2;
                $take;
            }
        };
    }
    in_order!(len NAME => |name| tensor.name = name);
    in_order!(len SHAPE_PACKED => |run| {
        check_packed(run)?;
        tensor.shape.bytes = run;
    });
    in_order!(varint DATA_TYPE => |value| tensor.data_type = i32::from(value));
    in_order!(len CONTENT => |content| tensor.content = content);
    in_order!(varint ALLOW_DYNAMIC_BATCH_SIZE => |value| {
        tensor.allow_dynamic_batch_size = value != 0;
    });
    in_order!(len CHECKPOINT_KEY => |key| tensor.checkpoint_key = Some(key));
    in_order!(varint TYPE => |value| tensor.r#type = i32::from(value));
    in_order!(len USER_INPUT_KEY => |key| tensor.user_input_key = Some(key));
    if pos == bytes.len() {
        return Ok(());
    }

    // An empty run taken above and no run at all give the same shape.
    let mut shape = match tensor.shape.bytes {
        [] => ShapeSeen::None,
        run => ShapeSeen::OneRun(run),
    };
    while pos < bytes.len() {
        match varint(bytes, &mut pos)? {
            NAME => tensor.name = len_delimited(bytes, &mut pos)?,
            SHAPE_PACKED => {
                let run = len_delimited(bytes, &mut pos)?;
                check_packed(run)?;
                shape = match shape {
                    ShapeSeen::None => ShapeSeen::OneRun(run),
                    seen => ShapeSeen::Scattered(seen.len() + count_varints(run)),
                };
            }
            SHAPE_ELEMENT => {
                varint(bytes, &mut pos)?;
                shape = ShapeSeen::Scattered(shape.len() + 1);
            }
            // An enum field takes the low 32 bits of the varint, as prost does.
            DATA_TYPE => tensor.data_type = varint(bytes, &mut pos)? as i32,
            CONTENT => tensor.content = len_delimited(bytes, &mut pos)?,
            ALLOW_DYNAMIC_BATCH_SIZE => {
                tensor.allow_dynamic_batch_size = varint(bytes, &mut pos)? != 0;
            }
            CHECKPOINT_KEY => tensor.checkpoint_key = Some(len_delimited(bytes, &mut pos)?),
            TYPE => tensor.r#type = varint(bytes, &mut pos)? as i32,
            USER_INPUT_KEY => tensor.user_input_key = Some(len_delimited(bytes, &mut pos)?),
            other => {
                other_field(bytes, &mut pos, other, 8, RECURSION_LIMIT - 1)?;
                *n_unknown += 1;
            }
        }
    }
    tensor.shape = match shape {
        ShapeSeen::None => ShapeView::default(),
        ShapeSeen::OneRun(run) => ShapeView { bytes: run, fields_len: 0, form: ShapeForm::Packed },
        ShapeSeen::Scattered(len) => ShapeView { bytes, fields_len: len, form: ShapeForm::Fields },
    };
    Ok(())
}

/// The byte after the one-byte tag `tag` at `pos` when it is below 0x80 (a whole one-byte
/// length or value), `None` when the field at `pos` is another, or of another form.
#[inline(always)]
fn short_field(buf: &[u8], pos: usize, tag: u8) -> Option<u8> {
    match *buf.get(pos..pos + 2)? {
        [first, second] if first == tag && second < 0x80 => Some(second),
        _ => None,
    }
}

/// Checks that a packed run is whole varints.
#[inline(always)]
fn check_packed(run: &[u8]) -> Result<(), Stop> {
    // Under ten bytes no varint can be too long, so the run is whole varints exactly when its
    // last byte ends one.
    if run.len() < 10 {
        return match run.last() {
            Some(&last) if last >= 0x80 => Err(Stop::Malformed),
            _ => Ok(()),
        };
    }
    let mut pos = 0;
    while pos < run.len() {
        varint(run, &mut pos)?;
    }
    Ok(())
}

/// The number of varints in a checked packed run: each ends with its one byte below 0x80.
fn count_varints(run: &[u8]) -> usize {
    run.iter().filter(|&&byte| byte < 0x80).count()
}

fn parse_config(bytes: &[u8], config: &mut ModelConfig, n_unknown: &mut usize) -> Result<(), Stop> {
    const NUM_INFER: u64 = key(1, VARINT);
    const TIMEOUT: u64 = key(2, VARINT);
    const OPTIMAL_NCG_SIZE: u64 = key(3, VARINT);
    const ASYNC_LOAD: u64 = key(4, VARINT);
    const LAZY_LOAD: u64 = key(5, VARINT);
    const RETURN_ALIASES: u64 = key(6, VARINT);

    let mut pos = 0;
    while pos < bytes.len() {
        match varint(bytes, &mut pos)? {
            NUM_INFER => config.num_infer = varint(bytes, &mut pos)? as i64,
            TIMEOUT => config.timeout = varint(bytes, &mut pos)? as i64,
            OPTIMAL_NCG_SIZE => config.optimal_ncg_size = varint(bytes, &mut pos)? as i64,
            ASYNC_LOAD => config.async_load = varint(bytes, &mut pos)? != 0,
            LAZY_LOAD => config.lazy_load = varint(bytes, &mut pos)? != 0,
            RETURN_ALIASES => config.return_aliases = varint(bytes, &mut pos)? != 0,
            other => {
                other_field(bytes, &mut pos, other, 6, RECURSION_LIMIT - 1)?;
                *n_unknown += 1;
            }
        }
    }
    Ok(())
}

fn parse_alias_entry(bytes: &[u8], n_unknown: &mut usize) -> Result<(i64, i64), Stop> {
    const KEY: u64 = key(1, VARINT);
    const VALUE: u64 = key(2, VARINT);

    let (mut output, mut input) = (0, 0);
    let mut pos = 0;
    while pos < bytes.len() {
        match varint(bytes, &mut pos)? {
            KEY => output = varint(bytes, &mut pos)? as i64,
            VALUE => input = varint(bytes, &mut pos)? as i64,
            other => {
                other_field(bytes, &mut pos, other, 2, RECURSION_LIMIT - 1)?;
                *n_unknown += 1;
            }
        }
    }
    Ok((output, input))
}

#[cfg(test)]
pub(super) mod tests;

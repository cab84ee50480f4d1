//! An owned, read-only metaneff held as the message's bytes and a few flat tables.
//!
//! [`Decoded`] is for readers that keep a metaneff past the input's lifetime but never edit
//! it: the checker, the command line, the binding layer. The prost [`MetaNeff`] costs one
//! allocation per tensor (its shape) and two reference-counted [`Bytes`] per tensor (its name
//! and key), which on a message of a few hundred tensors is most of the decoding time. Here the
//! message is decoded by the one-pass view ([`MetaneffView::decode`], so it accepts and refuses
//! exactly what [`decode`](super::decode) does, with the same errors), and its fields are then
//! copied into:
//! - the message's bytes, one [`Bytes`] (shared with the caller's when decoded from one);
//! - one table of tensors, inputs then outputs, each holding the byte ranges of its names and
//!   content and its scalar fields by value;
//! - one `Vec<i64>` of every tensor's dimensions, end to end;
//! - the aliases, sorted by output, each output once (the last entry on the wire wins, as in
//!   the map).
//!
//! That is a fixed number of allocations whatever the tensor count (none for the aliases when
//! there are none), each reserved once from the view's counts with `try_reserve`. Accessors hand
//! out `&[u8]`, `&[i64]` and the schema's enums; [`Decoded::to_message`] builds the prost
//! message for a caller that edits or encodes it.

use std::fmt;
use std::ops::Range;

use prost::bytes::Bytes;

use super::meta_tensor::{DataType, Type};
use super::view::{MetaneffView, TensorView};
use super::{MetaNeff, MetaTensor, MetaneffDecodeError, MetaneffLimits, ModelConfig};

/// A metaneff decoded into flat tables over its own bytes (see the module documentation).
#[derive(Clone)]
pub struct Decoded {
    /// The whole message; every range below is into it.
    bytes: Bytes,
    /// `input_tensors` then `output_tensors`.
    tensors: Vec<TensorRecord>,
    /// How many of `tensors` are inputs.
    n_inputs: usize,
    /// Every tensor's dimensions, in the order of `tensors`.
    dims: Vec<i64>,
    /// `output_aliases_to` as (output, input), sorted by output, one entry per output.
    aliases: Vec<(i64, i64)>,
    model_config: Option<ModelConfig>,
    serialized_graph_def: Range<usize>,
    name: Range<usize>,
    num_user_inputs: i64,
    num_states: i64,
    num_weights: i64,
    n_unknown_fields: usize,
}

/// One tensor of a [`Decoded`]: where its byte fields lie in the message, and its scalars.
#[derive(Clone, Debug)]
struct TensorRecord {
    name: Range<usize>,
    content: Range<usize>,
    /// `None` when unset; an empty range when set to the empty string.
    checkpoint_key: Option<Range<usize>>,
    user_input_key: Option<Range<usize>>,
    /// Its dimensions in [`Decoded::dims`].
    dims: Range<usize>,
    data_type: i32,
    r#type: i32,
    allow_dynamic_batch_size: bool,
}

impl Decoded {
    /// Decodes `bytes` as a `MetaNeff`, copying them once into a buffer the result owns.
    ///
    /// # Errors
    /// The [`MetaneffDecodeError`] [`decode`](super::decode) gives for the same bytes; or an
    /// error saying that the copy or the tables could not be allocated.
    pub fn decode(bytes: &[u8]) -> Result<Decoded, MetaneffDecodeError> {
        Self::decode_with_limits(bytes, &MetaneffLimits::default())
    }

    /// [`Self::decode`] under count limits other than the defaults.
    ///
    /// # Errors
    /// As [`Self::decode`]; a message past a limit is refused as
    /// [`decode_with_limits`](super::decode_with_limits) refuses it.
    pub fn decode_with_limits(
        bytes: &[u8],
        limits: &MetaneffLimits,
    ) -> Result<Decoded, MetaneffDecodeError> {
        let view = MetaneffView::decode_with_limits(bytes, limits)?;
        Self::from_view(&view, bytes, super::copy_message(bytes)?)
    }

    /// Decodes an owned buffer without copying it: the result keeps `bytes` alive and reads
    /// every name, key and the graph from it.
    ///
    /// # Errors
    /// As [`Self::decode`].
    pub fn decode_owned(bytes: Bytes) -> Result<Decoded, MetaneffDecodeError> {
        Self::decode_owned_with_limits(bytes, &MetaneffLimits::default())
    }

    /// [`Self::decode_owned`] under count limits other than the defaults.
    ///
    /// # Errors
    /// As [`Self::decode_with_limits`].
    pub fn decode_owned_with_limits(
        bytes: Bytes,
        limits: &MetaneffLimits,
    ) -> Result<Decoded, MetaneffDecodeError> {
        let view = MetaneffView::decode_with_limits(&bytes, limits)?;
        Self::from_view(&view, &bytes, bytes.clone())
    }

    /// The tables of `view`, which was decoded from `origin`; `bytes` holds the same bytes as
    /// `origin` (it may be the same buffer or a copy).
    fn from_view(
        view: &MetaneffView<'_>,
        origin: &[u8],
        bytes: Bytes,
    ) -> Result<Decoded, MetaneffDecodeError> {
        debug_assert_eq!(origin.len(), bytes.len(), "the buffer holds the view's bytes");
        let spans = Spans { base: origin.as_ptr() as usize, len: origin.len() };
        let lists = [&view.input_tensors[..], &view.output_tensors[..]];
        let n_tensors = view.input_tensors.len() + view.output_tensors.len();
        // An upper bound (a byte of shape on the wire per dimension), cheaper than counting;
        // common dimensions take two bytes, so the room left over is small.
        let max_dims: usize =
            lists.iter().flat_map(|list| list.iter()).map(|t| t.shape.max_len()).sum();
        let mut tensors = Vec::new();
        tensors.try_reserve_exact(n_tensors).map_err(|_| out_of_memory("the tensor table"))?;
        let mut dims = Vec::new();
        dims.try_reserve_exact(max_dims).map_err(|_| out_of_memory("the tensor dimensions"))?;
        for tensor in lists.into_iter().flatten() {
            tensors.push(spans.record(tensor, &mut dims)?);
        }
        let mut aliases = Vec::new();
        if !view.output_aliases_to.is_empty() {
            aliases
                .try_reserve_exact(view.output_aliases_to.len())
                .map_err(|_| out_of_memory("output_aliases_to"))?;
            // Newest first, then a stable sort by output: the first entry of each output is the
            // one the map keeps, the last on the wire.
            aliases.extend(view.output_aliases_to.iter().rev().copied());
            aliases.sort_by_key(|&(output, _)| output);
            aliases.dedup_by_key(|&mut (output, _)| output);
        }
        Ok(Decoded {
            tensors,
            n_inputs: view.input_tensors.len(),
            dims,
            aliases,
            model_config: view.model_config,
            serialized_graph_def: spans.of(view.serialized_graph_def)?,
            name: spans.of(view.name)?,
            num_user_inputs: view.num_user_inputs,
            num_states: view.num_states,
            num_weights: view.num_weights,
            n_unknown_fields: view.n_unknown_fields,
            bytes,
        })
    }

    /// `input_tensors`, in wire order.
    pub fn input_tensors(&self) -> DecodedTensors<'_> {
        self.list(0..self.n_inputs)
    }

    /// `output_tensors`, in wire order.
    pub fn output_tensors(&self) -> DecodedTensors<'_> {
        self.list(self.n_inputs..self.tensors.len())
    }

    fn list(&self, range: Range<usize>) -> DecodedTensors<'_> {
        DecodedTensors {
            bytes: &self.bytes,
            dims: &self.dims,
            records: self.tensors.get(range).unwrap_or_default(),
        }
    }

    /// `model_config`, merged over all its occurrences as prost merges them.
    pub fn model_config(&self) -> Option<&ModelConfig> {
        self.model_config.as_ref()
    }

    /// `serialized_graph_def` (an XLA `HloModuleProto`).
    pub fn serialized_graph_def(&self) -> &[u8] {
        slice(&self.bytes, &self.serialized_graph_def)
    }

    /// `serialized_graph_def` as a [`Bytes`] sharing the message's buffer, for a caller that
    /// keeps the graph without copying it.
    pub fn serialized_graph_def_shared(&self) -> Bytes {
        shared(&self.bytes, &self.serialized_graph_def)
    }

    /// `name`.
    pub fn name(&self) -> &[u8] {
        slice(&self.bytes, &self.name)
    }

    /// `output_aliases_to` as (output index, input index) pairs, sorted by output, each output
    /// once (the map's entries in the map's order).
    pub fn output_aliases_to(&self) -> &[(i64, i64)] {
        &self.aliases
    }

    /// The input index whose buffer output `output` reuses, if any.
    pub fn alias_of(&self, output: i64) -> Option<i64> {
        let index = self.aliases.binary_search_by_key(&output, |&(output, _)| output).ok()?;
        Some(self.aliases[index].1)
    }

    /// `num_user_inputs`.
    pub fn num_user_inputs(&self) -> i64 {
        self.num_user_inputs
    }

    /// `num_states`.
    pub fn num_states(&self) -> i64 {
        self.num_states
    }

    /// `num_weights`.
    pub fn num_weights(&self) -> i64 {
        self.num_weights
    }

    /// How many fields the schema does not know were skipped, at any message level (a group
    /// counts once); [`check_wire`](super::check_wire) lists them with their paths.
    pub fn n_unknown_fields(&self) -> usize {
        self.n_unknown_fields
    }

    /// The whole message, as decoded.
    pub fn message_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// The prost message, equal to what [`decode`](super::decode) returns for the same bytes;
    /// its byte fields share this message's buffer.
    ///
    /// # Errors
    /// An allocation failed.
    pub fn to_message(&self) -> Result<MetaNeff, MetaneffDecodeError> {
        let list = |tensors: DecodedTensors<'_>, field: &str| {
            let mut out = Vec::new();
            out.try_reserve_exact(tensors.len()).map_err(|_| out_of_memory(field))?;
            for tensor in tensors {
                out.push(tensor.to_message().map_err(|_| out_of_memory(field))?);
            }
            Ok::<_, MetaneffDecodeError>(out)
        };
        Ok(MetaNeff {
            input_tensors: list(self.input_tensors(), "input_tensors")?,
            output_tensors: list(self.output_tensors(), "output_tensors")?,
            model_config: self.model_config,
            serialized_graph_def: self.serialized_graph_def_shared(),
            name: shared(&self.bytes, &self.name),
            output_aliases_to: self.aliases.iter().copied().collect(),
            num_user_inputs: self.num_user_inputs,
            num_states: self.num_states,
            num_weights: self.num_weights,
        })
    }
}

impl fmt::Debug for Decoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decoded")
            .field("input_tensors", &self.input_tensors())
            .field("output_tensors", &self.output_tensors())
            .field("model_config", &self.model_config)
            .field(
                "serialized_graph_def",
                &format_args!("{} bytes", self.serialized_graph_def.len()),
            )
            .field("name", &Bytes::copy_from_slice(self.name()))
            .field("output_aliases_to", &self.aliases)
            .field("num_user_inputs", &self.num_user_inputs)
            .field("num_states", &self.num_states)
            .field("num_weights", &self.num_weights)
            .field("n_unknown_fields", &self.n_unknown_fields)
            .finish()
    }
}

/// One tensor list of a [`Decoded`].
#[derive(Clone, Copy)]
pub struct DecodedTensors<'a> {
    bytes: &'a Bytes,
    dims: &'a [i64],
    records: &'a [TensorRecord],
}

impl<'a> DecodedTensors<'a> {
    /// The number of tensors.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Tensor `index`, `None` past the end.
    pub fn get(&self, index: usize) -> Option<DecodedTensor<'a>> {
        let record = self.records.get(index)?;
        Some(DecodedTensor { bytes: self.bytes, dims: self.dims, record })
    }

    /// The tensors, in wire order.
    pub fn iter(&self) -> DecodedTensorsIter<'a> {
        DecodedTensorsIter { bytes: self.bytes, dims: self.dims, records: self.records.iter() }
    }
}

impl fmt::Debug for DecodedTensors<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for DecodedTensors<'a> {
    type Item = DecodedTensor<'a>;
    type IntoIter = DecodedTensorsIter<'a>;

    fn into_iter(self) -> DecodedTensorsIter<'a> {
        self.iter()
    }
}

/// The tensors of a [`DecodedTensors`].
#[derive(Clone, Debug)]
pub struct DecodedTensorsIter<'a> {
    bytes: &'a Bytes,
    dims: &'a [i64],
    records: std::slice::Iter<'a, TensorRecord>,
}

impl<'a> Iterator for DecodedTensorsIter<'a> {
    type Item = DecodedTensor<'a>;

    fn next(&mut self) -> Option<DecodedTensor<'a>> {
        let record = self.records.next()?;
        Some(DecodedTensor { bytes: self.bytes, dims: self.dims, record })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.records.size_hint()
    }
}

impl DoubleEndedIterator for DecodedTensorsIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let record = self.records.next_back()?;
        Some(DecodedTensor { bytes: self.bytes, dims: self.dims, record })
    }
}

impl ExactSizeIterator for DecodedTensorsIter<'_> {}

/// One `MetaTensor` of a [`Decoded`].
#[derive(Clone, Copy)]
pub struct DecodedTensor<'a> {
    bytes: &'a Bytes,
    dims: &'a [i64],
    record: &'a TensorRecord,
}

impl<'a> DecodedTensor<'a> {
    /// `name`: the key the runtime binds by.
    pub fn name(&self) -> &'a [u8] {
        slice(self.bytes, &self.record.name)
    }

    /// `shape`.
    pub fn shape(&self) -> &'a [i64] {
        self.dims.get(self.record.dims.clone()).unwrap_or_default()
    }

    /// `data_type` as on the wire (an open enum: any `i32`); see [`Self::dtype`].
    pub fn data_type(&self) -> i32 {
        self.record.data_type
    }

    /// The data type, `None` for a value the schema does not name.
    pub fn dtype(&self) -> Option<DataType> {
        DataType::try_from(self.record.data_type).ok()
    }

    /// `content`.
    pub fn content(&self) -> &'a [u8] {
        slice(self.bytes, &self.record.content)
    }

    /// `allow_dynamic_batch_size`.
    pub fn allow_dynamic_batch_size(&self) -> bool {
        self.record.allow_dynamic_batch_size
    }

    /// `checkpoint_key`; `Some(b"")` when set to the empty string.
    pub fn checkpoint_key(&self) -> Option<&'a [u8]> {
        self.record.checkpoint_key.as_ref().map(|range| slice(self.bytes, range))
    }

    /// `type` as on the wire; see [`Self::tensor_type`].
    pub fn r#type(&self) -> i32 {
        self.record.r#type
    }

    /// The tensor's role, `None` for a value the schema does not name.
    pub fn tensor_type(&self) -> Option<Type> {
        Type::try_from(self.record.r#type).ok()
    }

    /// `user_input_key`; `Some(b"")` when set to the empty string.
    pub fn user_input_key(&self) -> Option<&'a [u8]> {
        self.record.user_input_key.as_ref().map(|range| slice(self.bytes, range))
    }

    /// The prost message, its byte fields sharing the metaneff's buffer.
    ///
    /// # Errors
    /// The shape could not be allocated.
    pub fn to_message(&self) -> Result<MetaTensor, std::collections::TryReserveError> {
        let record = self.record;
        let mut shape = Vec::new();
        shape.try_reserve_exact(record.dims.len())?;
        shape.extend_from_slice(self.shape());
        Ok(MetaTensor {
            name: shared(self.bytes, &record.name),
            shape,
            data_type: record.data_type,
            content: shared(self.bytes, &record.content),
            allow_dynamic_batch_size: record.allow_dynamic_batch_size,
            checkpoint_key: record.checkpoint_key.as_ref().map(|range| shared(self.bytes, range)),
            r#type: record.r#type,
            user_input_key: record.user_input_key.as_ref().map(|range| shared(self.bytes, range)),
        })
    }
}

impl fmt::Debug for DecodedTensor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = |field: &[u8]| Bytes::copy_from_slice(field);
        f.debug_struct("DecodedTensor")
            .field("name", &bytes(self.name()))
            .field("shape", &self.shape())
            .field("data_type", &self.data_type())
            .field("content", &bytes(self.content()))
            .field("allow_dynamic_batch_size", &self.allow_dynamic_batch_size())
            .field("checkpoint_key", &self.checkpoint_key().map(bytes))
            .field("type", &self.r#type())
            .field("user_input_key", &self.user_input_key().map(bytes))
            .finish()
    }
}

/// The bytes of `range` in `bytes`: every range was checked against the message when it was
/// recorded, so the empty fallback is never taken.
fn slice<'a>(bytes: &'a Bytes, range: &Range<usize>) -> &'a [u8] {
    bytes.get(range.clone()).unwrap_or_default()
}

/// A [`Bytes`] of `range` sharing `bytes`' buffer (an empty one for an empty range, which
/// holds no reference).
fn shared(bytes: &Bytes, range: &Range<usize>) -> Bytes {
    if range.is_empty() || range.end > bytes.len() {
        return Bytes::new();
    }
    bytes.slice(range.clone())
}

/// Turns the view's slices of the message into ranges.
struct Spans {
    /// The address of the message's first byte.
    base: usize,
    len: usize,
}

impl Spans {
    /// The range of `field`, a slice of the message (an empty field may lie anywhere).
    #[inline(always)]
    fn of(&self, field: &[u8]) -> Result<Range<usize>, MetaneffDecodeError> {
        if field.is_empty() {
            return Ok(0..0);
        }
        // Every field of the view is a slice of the message, so its offset there is the
        // difference of the two addresses.
        let start = (field.as_ptr() as usize).wrapping_sub(self.base);
        match start.checked_add(field.len()) {
            Some(end) if end <= self.len => Ok(start..end),
            _ => Err(MetaneffDecodeError {
                offset: 0,
                path: "MetaNeff".to_owned(),
                reason: "a decoded field lies outside the message, expected every field within \
                         it (a bug in nrtsim)"
                    .to_owned(),
                exceeded: None,
            }),
        }
    }

    /// The record of `tensor`, its dimensions appended to `dims` (reserved by the caller).
    #[inline(always)]
    fn record(
        &self,
        tensor: &TensorView<'_>,
        dims: &mut Vec<i64>,
    ) -> Result<TensorRecord, MetaneffDecodeError> {
        let first_dim = dims.len();
        tensor.shape.append_to(dims);
        let key = |key: Option<&[u8]>| key.map(|key| self.of(key)).transpose();
        Ok(TensorRecord {
            name: self.of(tensor.name)?,
            content: self.of(tensor.content)?,
            checkpoint_key: key(tensor.checkpoint_key)?,
            user_input_key: key(tensor.user_input_key)?,
            dims: first_dim..dims.len(),
            data_type: tensor.data_type,
            r#type: tensor.r#type,
            allow_dynamic_batch_size: tensor.allow_dynamic_batch_size,
        })
    }
}

fn out_of_memory(what: &str) -> MetaneffDecodeError {
    MetaneffDecodeError {
        offset: 0,
        path: "MetaNeff".to_owned(),
        reason: format!("could not allocate memory for {what}, expected enough for the message"),
        exceeded: None,
    }
}

#[cfg(test)]
mod tests;

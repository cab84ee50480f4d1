//! The I/O signature of `neff.json`: input and output names, dtypes and shapes.
//!
//! `neff.json` comes in two forms, and newer files carry both:
//! - the **graph form** (TVM-like): `nodes[i].name`, `arg_nodes` (the input node indexes),
//!   `heads` (`[node, output_idx, version]` per output), and per node entry `attrs.shape`
//!   (`["list_shape", [[…], …]]`) and `attrs.dltype` (`["list_str", […]]`). A node entry's index
//!   is `node_row_ptr[node] + output_idx` when `node_row_ptr` is present, else `node + output_idx`
//!   (one output per node, which is what NEFF graphs have);
//! - the **metadata form**: `metadata.signatures.default.{inputs,outputs}` as
//!   `{name: {id, dtype, shape}}`, ordered by `id`.
//!
//! Design choices: each list (inputs, outputs) is taken from the metadata form when it is there
//! and not empty, and from the graph form otherwise (neuronx-cc 2.23 writes an empty metadata
//! `outputs` and the outputs in the graph form only). A head of a node with `output_names` (the
//! compiled `sg_core…` node) is named by it; an output named by several heads is listed once.
//! Missing parts give an empty list or an empty dtype, since real files vary; a part that is
//! present but malformed is an error naming the member and field. The shapes read are the structs
//! below, read by `json::read`; only the node-index range is checked by hand.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::NeffError;
use super::json::{
    Entries, Integer, List, NonNegative, Tag, Tagged, Text, malformed, parse_member, read,
};

/// One input or output of the signature.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TensorSignature {
    /// The tensor (and variable) name.
    pub name: String,
    /// The dtype as written, such as `float16`; empty when the file does not say.
    pub dtype: String,
    /// The shape; negative dimensions are kept as written.
    pub shape: Vec<i64>,
}

impl TensorSignature {
    /// A signature entry.
    pub fn new(name: &str, dtype: &str, shape: &[i64]) -> TensorSignature {
        TensorSignature { name: name.to_owned(), dtype: dtype.to_owned(), shape: shape.to_vec() }
    }
}

/// The inputs and outputs of a NEFF, in their declared order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Signature {
    /// The inputs.
    pub inputs: Vec<TensorSignature>,
    /// The outputs.
    pub outputs: Vec<TensorSignature>,
}

/// `neff.json` as far as the signature reads it (other fields are ignored).
#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct NeffJson {
    metadata: Option<Metadata>,
    nodes: Option<List<Node>>,
    node_row_ptr: Option<List<NonNegative>>,
    attrs: Option<GraphAttrs>,
    arg_nodes: Option<List<NonNegative>>,
    heads: Option<List<Head>>,
}

#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct Metadata {
    /// Only the chosen signature is left in the value by [`keep_chosen_signature`].
    signatures: Option<Entries<Option<SignatureLists>>>,
}

#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct SignatureLists {
    inputs: Option<Entries<TensorEntry>>,
    outputs: Option<Entries<TensorEntry>>,
}

#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct TensorEntry {
    id: Option<NonNegative>,
    dtype: Option<Text>,
    shape: Option<List<Integer>>,
}

#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct Node {
    name: Option<Text>,
    output_names: Option<List<Text>>,
    attrs: Option<NodeAttrs>,
}

/// A node's `attrs`: only `output_names` is read from it, and a value that is not an object is
/// ignored (real files put other things there).
#[derive(Default)]
struct NodeAttrs {
    output_names: Option<List<Text>>,
}

impl<'de> Deserialize<'de> for NodeAttrs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<NodeAttrs, D::Error> {
        struct AttrsVisitor;
        impl<'de> Visitor<'de> for AttrsVisitor {
            type Value = NodeAttrs;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeAttrs, A::Error> {
                let mut attrs = NodeAttrs::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "output_names" {
                        attrs.output_names = map.next_value()?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(attrs)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeAttrs, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(NodeAttrs::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<NodeAttrs, E> {
                Ok(NodeAttrs::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<NodeAttrs, E> {
                Ok(NodeAttrs::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<NodeAttrs, E> {
                Ok(NodeAttrs::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<NodeAttrs, E> {
                Ok(NodeAttrs::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<NodeAttrs, E> {
                Ok(NodeAttrs::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<NodeAttrs, E> {
                Ok(NodeAttrs::default())
            }
        }
        deserializer.deserialize_any(AttrsVisitor)
    }
}

#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct GraphAttrs {
    shape: Option<Tagged<List<Integer>, ListShape>>,
    dltype: Option<Tagged<Text, ListStr>>,
}

struct ListShape;
impl Tag for ListShape {
    const TAG: &'static str = "list_shape";
}

struct ListStr;
impl Tag for ListStr {
    const TAG: &'static str = "list_str";
}

/// One entry of `heads`: `[node, output_idx, version]`, where only the node is required.
struct Head {
    node: u64,
    output_idx: u64,
}

impl<'de> Deserialize<'de> for Head {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Head, D::Error> {
        struct HeadVisitor;
        impl<'de> Visitor<'de> for HeadVisitor {
            type Value = Head;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("[node, output_idx, version]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Head, A::Error> {
                let Some(NonNegative(node)) = seq.next_element()? else {
                    return Err(de::Error::invalid_length(0, &self));
                };
                let output_idx = seq.next_element::<NonNegative>()?.map_or(0, |idx| idx.0);
                while seq.next_element::<NonNegative>()?.is_some() {}
                Ok(Head { node, output_idx })
            }
        }
        deserializer.deserialize_any(HeadVisitor)
    }
}

/// Leaves only the signature the reader uses: `default` when there is one, else the first.
/// The others are not read, so a malformed one does not refuse the file.
fn keep_chosen_signature(root: &mut Value) {
    let Some(Value::Object(signatures)) =
        root.get_mut("metadata").and_then(|metadata| metadata.get_mut("signatures"))
    else {
        return;
    };
    let chosen = if signatures.contains_key("default") {
        "default".to_owned()
    } else {
        match signatures.keys().next() {
            Some(key) => key.clone(),
            None => return,
        }
    };
    signatures.retain(|key, _| *key == chosen);
}

/// Reads the signature of a `neff.json` member.
pub(crate) fn parse_neff_json(member: &str, bytes: &[u8]) -> Result<Signature, NeffError> {
    let mut root = parse_member(member, bytes)?;
    keep_chosen_signature(&mut root);
    let neff_json: NeffJson = read(member, &root)?;
    let (graph_inputs, graph_outputs) = graph_form(member, &neff_json)?;
    let (metadata_inputs, metadata_outputs) = metadata_form(neff_json.metadata);
    // neuronx-cc 2.23 writes `outputs: {}` (present and empty) while the graph form carries the
    // outputs: an empty metadata list defers to a non-empty graph list.
    let pick = |metadata: Option<Vec<TensorSignature>>, graph: Vec<TensorSignature>| match metadata
    {
        Some(list) if !list.is_empty() || graph.is_empty() => list,
        _ => graph,
    };
    Ok(Signature {
        inputs: pick(metadata_inputs, graph_inputs),
        outputs: pick(metadata_outputs, graph_outputs),
    })
}

type MaybeLists = (Option<Vec<TensorSignature>>, Option<Vec<TensorSignature>>);

fn metadata_form(metadata: Option<Metadata>) -> MaybeLists {
    let chosen = metadata
        .and_then(|metadata| metadata.signatures)
        .and_then(|Entries(signatures)| signatures.into_iter().next())
        .and_then(|(_, lists)| lists);
    let Some(SignatureLists { inputs, outputs }) = chosen else {
        return (None, None);
    };
    (inputs.map(metadata_tensors), outputs.map(metadata_tensors))
}

/// The tensors of a metadata list, ordered by `id` (a missing one last), then name.
fn metadata_tensors(Entries(tensors): Entries<TensorEntry>) -> Vec<TensorSignature> {
    let mut with_ids: Vec<(u64, TensorSignature)> = tensors
        .into_iter()
        .map(|(name, tensor)| {
            let signature = TensorSignature {
                name,
                dtype: tensor.dtype.map(|Text(dtype)| dtype).unwrap_or_default(),
                shape: tensor.shape.map(|List(dims)| integers(dims)).unwrap_or_default(),
            };
            (tensor.id.map_or(u64::MAX, |NonNegative(id)| id), signature)
        })
        .collect();
    with_ids.sort_by(|left, right| (left.0, &left.1.name).cmp(&(right.0, &right.1.name)));
    with_ids.into_iter().map(|(_, tensor)| tensor).collect()
}

fn integers(dims: Vec<Integer>) -> Vec<i64> {
    dims.into_iter().map(|Integer(dim)| dim).collect()
}

fn graph_form(
    member: &str,
    neff_json: &NeffJson,
) -> Result<(Vec<TensorSignature>, Vec<TensorSignature>), NeffError> {
    let Some(List(nodes)) = &neff_json.nodes else {
        return Ok((Vec::new(), Vec::new()));
    };
    let node_row_ptr = neff_json.node_row_ptr.as_ref().map(|List(row_ptr)| row_ptr);
    let attrs = neff_json.attrs.as_ref();
    let shapes = attrs.and_then(|attrs| attrs.shape.as_ref()).map_or(&[][..], |tagged| &tagged.0);
    let dtypes = attrs.and_then(|attrs| attrs.dltype.as_ref()).map_or(&[][..], |tagged| &tagged.0);
    let tensor = |field: String,
                  node: u64,
                  output_idx: u64|
     -> Result<TensorSignature, NeffError> {
        let node_idx =
            usize::try_from(node).ok().filter(|&node| node < nodes.len()).ok_or_else(|| {
                malformed(member, &field, "a node index in range", &Value::from(node))
            })?;
        let node_entry = &nodes[node_idx];
        // A compiled node names its outputs (`output_names`, one per output, on the node or in
        // its `attrs`); a plain node is its own output.
        let output_names = node_entry
            .output_names
            .as_ref()
            .or_else(|| node_entry.attrs.as_ref()?.output_names.as_ref());
        let name = usize::try_from(output_idx)
            .ok()
            .and_then(|idx| output_names?.0.get(idx))
            .or(node_entry.name.as_ref())
            .map(|Text(name)| name.clone())
            .unwrap_or_default();
        let row = match node_row_ptr {
            Some(row_ptr) => usize::try_from(node)
                .ok()
                .and_then(|node| row_ptr.get(node))
                .map_or(node, |NonNegative(row)| *row),
            None => node,
        };
        let entry = usize::try_from(row.saturating_add(output_idx)).unwrap_or(usize::MAX);
        Ok(TensorSignature {
            name,
            dtype: dtypes.get(entry).map(|Text(dtype)| dtype.clone()).unwrap_or_default(),
            shape: shapes.get(entry).map(|List(dims)| integers(dims.clone())).unwrap_or_default(),
        })
    };
    let inputs = match &neff_json.arg_nodes {
        None => Vec::new(),
        Some(List(arg_nodes)) => arg_nodes
            .iter()
            .enumerate()
            .map(|(idx, NonNegative(node))| tensor(format!("arg_nodes[{idx}]"), *node, 0))
            .collect::<Result<_, _>>()?,
    };
    let outputs: Vec<TensorSignature> = match &neff_json.heads {
        None => Vec::new(),
        Some(List(heads)) => heads
            .iter()
            .enumerate()
            .map(|(idx, head)| tensor(format!("heads[{idx}][0]"), head.node, head.output_idx))
            .collect::<Result<_, _>>()?,
    };
    // Heads of several subgraphs may name one output (neuronx-cc: `output0` once per
    // subgraph); the signature lists it once, as its first head describes it.
    let mut seen = std::collections::HashSet::new();
    let outputs = outputs.into_iter().filter(|output| seen.insert(output.name.clone())).collect();
    Ok((inputs, outputs))
}

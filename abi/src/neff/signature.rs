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
//! compiled `sg_core…` node) is named by it; an output named by several heads is listed once. Missing parts give an empty list or an empty dtype, since
//! real files vary; a part that is present but malformed is an error naming the member and field.

use serde_json::{Map, Value};

use super::NeffError;
use super::json::{FieldContext, malformed, parse_member};

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

/// Reads the signature of a `neff.json` member.
pub(crate) fn parse_neff_json(member: &str, bytes: &[u8]) -> Result<Signature, NeffError> {
    let root = parse_member(member, bytes)?;
    let Value::Object(root) = root else {
        return Err(malformed(member, "(root)", "an object", &root));
    };
    let (metadata_inputs, metadata_outputs) = metadata_form(member, &root)?;
    let (graph_inputs, graph_outputs) = graph_form(member, &root)?;
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

fn metadata_form(member: &str, root: &Map<String, Value>) -> Result<MaybeLists, NeffError> {
    let context = FieldContext { member, path: String::new() };
    let Some(metadata) = context.object(root, "metadata")? else {
        return Ok((None, None));
    };
    let context = FieldContext { member, path: "metadata".to_owned() };
    let Some(signatures) = context.object(metadata, "signatures")? else {
        return Ok((None, None));
    };
    let context = FieldContext { member, path: "metadata.signatures".to_owned() };
    let key = if signatures.contains_key("default") {
        "default"
    } else {
        match signatures.keys().next() {
            Some(key) => key.as_str(),
            None => return Ok((None, None)),
        }
    };
    let Some(signature) = context.object(signatures, key)? else {
        return Ok((None, None));
    };
    let context = FieldContext { member, path: format!("metadata.signatures.{key}") };
    let mut lists = [None, None];
    for (slot, list_key) in lists.iter_mut().zip(["inputs", "outputs"]) {
        if let Some(tensors) = context.object(signature, list_key)? {
            *slot =
                Some(metadata_tensors(member, &format!("{}.{list_key}", context.path), tensors)?);
        }
    }
    let [inputs, outputs] = lists;
    Ok((inputs, outputs))
}

fn metadata_tensors(
    member: &str,
    path: &str,
    tensors: &Map<String, Value>,
) -> Result<Vec<TensorSignature>, NeffError> {
    let mut with_ids = Vec::with_capacity(tensors.len());
    for (name, tensor) in tensors {
        let tensor_path = format!("{path}.{name}");
        let Value::Object(tensor) = tensor else {
            return Err(malformed(member, &tensor_path, "an object", tensor));
        };
        let context = FieldContext { member, path: tensor_path.clone() };
        let id = context.u64(tensor, "id")?.unwrap_or(u64::MAX);
        let dtype = context.string(tensor, "dtype")?.unwrap_or_default();
        let shape = match tensor.get("shape") {
            None | Some(Value::Null) => Vec::new(),
            Some(shape) => shape_of(member, &format!("{tensor_path}.shape"), shape)?,
        };
        with_ids.push((id, TensorSignature { name: name.clone(), dtype, shape }));
    }
    with_ids.sort_by(|left, right| (left.0, &left.1.name).cmp(&(right.0, &right.1.name)));
    Ok(with_ids.into_iter().map(|(_, tensor)| tensor).collect())
}

fn shape_of(member: &str, path: &str, shape: &Value) -> Result<Vec<i64>, NeffError> {
    let Value::Array(dims) = shape else {
        return Err(malformed(member, path, "an array of integers", shape));
    };
    dims.iter()
        .map(|dim| dim.as_i64().ok_or_else(|| malformed(member, path, "an array of integers", dim)))
        .collect()
}

/// A tagged list `["list_shape", [...]]` or `["list_str", [...]]`: the items after the tag.
fn tagged_list<'v>(
    member: &str,
    path: &str,
    value: &'v Value,
    tag: &str,
) -> Result<&'v Vec<Value>, NeffError> {
    match value {
        Value::Array(pair) if pair.len() == 2 && pair[0].as_str() == Some(tag) => match &pair[1] {
            Value::Array(items) => Ok(items),
            other => Err(malformed(member, path, "a tagged list [tag, [items]]", other)),
        },
        other => Err(malformed(member, path, "a tagged list [tag, [items]]", other)),
    }
}

fn graph_form(
    member: &str,
    root: &Map<String, Value>,
) -> Result<(Vec<TensorSignature>, Vec<TensorSignature>), NeffError> {
    let context = FieldContext { member, path: String::new() };
    let Some(nodes) = context.array(root, "nodes")? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut node_names = Vec::with_capacity(nodes.len());
    let mut node_output_names = Vec::with_capacity(nodes.len());
    for (node_idx, node) in nodes.iter().enumerate() {
        let path = format!("nodes[{node_idx}]");
        let Value::Object(node) = node else {
            return Err(malformed(member, &path, "an object", node));
        };
        let context = FieldContext { member, path };
        node_names.push(context.string(node, "name")?.unwrap_or_default());
        node_output_names.push(output_names(&context, node)?);
    }
    let node_row_ptr = context.u64_list(root, "node_row_ptr")?;
    let (shapes, dtypes) = match context.object(root, "attrs")? {
        None => (Vec::new(), Vec::new()),
        Some(attrs) => {
            let shapes = match attrs.get("shape") {
                None | Some(Value::Null) => Vec::new(),
                Some(value) => tagged_list(member, "attrs.shape", value, "list_shape")?
                    .iter()
                    .map(|shape| shape_of(member, "attrs.shape", shape))
                    .collect::<Result<Vec<_>, _>>()?,
            };
            let dtypes = match attrs.get("dltype") {
                None | Some(Value::Null) => Vec::new(),
                Some(value) => tagged_list(member, "attrs.dltype", value, "list_str")?
                    .iter()
                    .map(|dtype| {
                        dtype
                            .as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| malformed(member, "attrs.dltype", "a string", dtype))
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            };
            (shapes, dtypes)
        }
    };
    let tensor = |field: &str, node: u64, output_idx: u64| -> Result<TensorSignature, NeffError> {
        let node_idx = usize::try_from(node)
            .ok()
            .filter(|&node| node < node_names.len())
            .ok_or_else(|| malformed(member, field, "a node index in range", &Value::from(node)))?;
        // A compiled node names its outputs (`output_names`, one per output); a plain node is its
        // own output.
        let name = usize::try_from(output_idx)
            .ok()
            .and_then(|idx| node_output_names[node_idx].as_ref()?.get(idx))
            .unwrap_or(&node_names[node_idx]);
        let row = match &node_row_ptr {
            Some(row_ptr) => usize::try_from(node)
                .ok()
                .and_then(|node| row_ptr.get(node))
                .copied()
                .unwrap_or(node),
            None => node,
        };
        let entry = usize::try_from(row.saturating_add(output_idx)).unwrap_or(usize::MAX);
        Ok(TensorSignature {
            name: name.clone(),
            dtype: dtypes.get(entry).cloned().unwrap_or_default(),
            shape: shapes.get(entry).cloned().unwrap_or_default(),
        })
    };
    let inputs = match context.u64_list(root, "arg_nodes")? {
        None => Vec::new(),
        Some(arg_nodes) => {
            arg_nodes.iter().map(|&node| tensor("arg_nodes", node, 0)).collect::<Result<_, _>>()?
        }
    };
    let outputs: Vec<TensorSignature> = match context.array(root, "heads")? {
        None => Vec::new(),
        Some(heads) => heads
            .iter()
            .map(|head| {
                let parts = match head {
                    Value::Array(parts) if !parts.is_empty() => parts,
                    other => {
                        return Err(malformed(
                            member,
                            "heads",
                            "[node, output_idx, version] entries",
                            other,
                        ));
                    }
                };
                let numbers = super::json::u64_items(member, "heads", parts)?;
                tensor("heads", numbers[0], numbers.get(1).copied().unwrap_or(0))
            })
            .collect::<Result<_, _>>()?,
    };
    // Heads of several subgraphs may name one output (neuronx-cc: `output0` once per
    // subgraph); the signature lists it once, as its first head describes it.
    let mut seen = std::collections::HashSet::new();
    let outputs = outputs.into_iter().filter(|output| seen.insert(output.name.clone())).collect();
    Ok((inputs, outputs))
}

/// A node's `output_names` (neuronx-cc writes it on its compiled node; read from the node or its
/// `attrs`): `None` when absent.
fn output_names(
    context: &FieldContext<'_>,
    node: &Map<String, Value>,
) -> Result<Option<Vec<String>>, NeffError> {
    let attrs = match node.get("attrs") {
        Some(Value::Object(attrs)) => Some(attrs),
        _ => None,
    };
    let Some(value) = node.get("output_names").or_else(|| attrs?.get("output_names")) else {
        return Ok(None);
    };
    let path = format!("{}.output_names", context.path);
    let expected = "an array of strings";
    let Value::Array(items) = value else {
        return Err(malformed(context.member, &path, expected, value));
    };
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| malformed(context.member, &path, expected, item))
        })
        .collect::<Result<Vec<String>, NeffError>>()
        .map(Some)
}

//! Writing small, valid, deterministic NEFFs from a [`NeffSpec`], for conformance vectors.
//!
//! Design choices:
//! - The spec says what a vector needs (graphs and their variables, the signature, constants as
//!   `.npy`, extra members such as `sim/model.hlo.pb`) and the writer derives the rest:
//!   `kelf-0.json` listing the graphs, one `<graph>/def.json` per graph, `neff.json` in the
//!   graph form, the metadata form, both, or the compiler's own form ([`SignatureForm`]), and
//!   the header (sizes, hash, a uuid derived from the name).
//! - Same spec, same bytes, on every machine: JSON objects have sorted keys (serde_json's
//!   default map), members are sorted, and the archive writer fixes every varying field.
//! - The writer refuses what it cannot encode faithfully (duplicate names, comment-like var
//!   names, unsafe member names), but does not check the loader invariants, so tests can build
//!   NEFFs that break them on purpose.

use std::collections::BTreeMap;

use md5::{Digest, Md5};
use serde_json::{Map, Value, json};

use super::archive::write_payload;
use super::header::assemble_neff;
use super::npy;
use super::{NeffError, NeffHeader, Signature, TensorSignature, Var};

/// Which forms of the signature `neff.json` carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SignatureForm {
    /// The graph form and the metadata form, as newer compilers write.
    #[default]
    Both,
    /// Only the TVM-like graph form, as older compilers write.
    GraphOnly,
    /// Only `metadata.signatures`.
    MetadataOnly,
    /// The form neuronx-cc 2.23 writes: input nodes (`op: null`), one compiled node
    /// ([`COMPILED_NODE`], `op: tvm_op`) that names the outputs in `output_names`, `heads` at that
    /// node, shapes and dtypes by node entry through `node_row_ptr`, and
    /// `metadata.signatures.default` with the inputs and an empty `outputs`.
    Compiled,
}

/// The name of the compiled node in [`SignatureForm::Compiled`], as in the public neuronx-cc NEFF
/// `spike/tests/artifacts/matmul_small.neff` of aws-neuron/nkipy (commit `1dc349fca539`).
pub const COMPILED_NODE: &str = "sg_coreV10";

/// One graph to write: its name (the folder of its `def.json`) and its variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphSpec {
    /// The graph name, such as `sg00`.
    pub name: String,
    /// The variables, written to `<name>/def.json`.
    pub vars: Vec<Var>,
}

/// A constant array to store as a `.npy` member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConstantSpec {
    /// The dtype descriptor, such as `<f2`.
    pub descr: String,
    /// The shape.
    pub shape: Vec<u64>,
    /// The C-order data, `item_size × Π shape` bytes.
    pub data: Vec<u8>,
}

/// Everything needed to write a NEFF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeffSpec {
    /// Header fields to keep (`pkg_version` 1 or 2, versions, `num_tpb`, `name`, `lnc_size`,
    /// `feature_bits`, …). `header_size`, `data_size` and `hash` are computed, and so is `uuid`
    /// (from the name) when it is all zero; a non-zero `uuid` is kept.
    pub header: NeffHeader,
    /// The `target` of `kelf-0.json`.
    pub target: String,
    /// The graphs, in kelf order.
    pub graphs: Vec<GraphSpec>,
    /// The I/O signature for `neff.json`.
    pub signature: Signature,
    /// Which signature forms to write.
    pub signature_form: SignatureForm,
    /// Constants by member name, such as `sg00/constant0.npy`.
    pub constants: BTreeMap<String, ConstantSpec>,
    /// Other members, written as given, such as `sim/model.hlo.pb`.
    pub extra_members: BTreeMap<String, Vec<u8>>,
}

impl NeffSpec {
    /// An empty version 2.0 spec (package 2, gzip) named `name`, targeting `cayman`.
    pub fn new(name: &str) -> NeffSpec {
        NeffSpec {
            header: NeffHeader { name: name.to_owned(), ..NeffHeader::default() },
            target: "cayman".to_owned(),
            graphs: Vec::new(),
            signature: Signature::default(),
            signature_form: SignatureForm::Both,
            constants: BTreeMap::new(),
            extra_members: BTreeMap::new(),
        }
    }

    /// Writes the NEFF; see [`write_neff`].
    ///
    /// # Errors
    /// As [`write_neff`].
    pub fn to_bytes(&self) -> Result<Vec<u8>, NeffError> {
        write_neff(self)
    }
}

/// A name-based uuid: the MD5 of a fixed prefix and the name, with the RFC 4122 version-3 and
/// variant bits set, so two machines derive the same uuid from the same name.
fn uuid_from_name(name: &str) -> [u8; 16] {
    let mut hasher = Md5::new();
    hasher.update(b"nrtsim-neff:");
    hasher.update(name.as_bytes());
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&hasher.finalize());
    uuid[6] = (uuid[6] & 0x0f) | 0x30;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid
}

fn invalid(detail: String) -> NeffError {
    NeffError::InvalidSpec { detail }
}

/// Writes a NEFF from a spec. The same spec gives the same bytes on every machine.
///
/// # Errors
/// [`NeffError::InvalidSpec`] for a duplicate or comment-like variable name, a graph name that is
/// not a plain folder name, a package version other than 1 or 2, or a header text that does not
/// fit; [`NeffError::Npy`] for a constant whose data does not match its shape;
/// [`NeffError::DuplicateMember`] when an extra member or constant collides with another member;
/// [`NeffError::UnsafeMemberName`] for an absolute or `..` member name.
pub fn write_neff(spec: &NeffSpec) -> Result<Vec<u8>, NeffError> {
    if !matches!(spec.header.pkg_version, 1 | 2) {
        return Err(invalid(format!(
            "pkg_version must be 1 or 2, found {}",
            spec.header.pkg_version
        )));
    }
    let mut generated: Vec<(String, Vec<u8>)> = Vec::new();
    let kelf_graphs: Vec<Value> = spec
        .graphs
        .iter()
        .map(
            |graph| json!({ "definition": format!("{}/def.json", graph.name), "name": graph.name }),
        )
        .collect();
    let kelf = json!({ "graphs": kelf_graphs, "target": spec.target, "version": "0.5" });
    generated.push(("kelf-0.json".to_owned(), to_json_bytes(&kelf)));
    for graph in &spec.graphs {
        let valid_name = !graph.name.is_empty()
            && !graph.name.contains(['/', '\\'])
            && graph.name != "."
            && graph.name != "..";
        if !valid_name {
            return Err(invalid(format!(
                "graph name {:?} must be a plain folder name",
                graph.name
            )));
        }
        generated.push((format!("{}/def.json", graph.name), to_json_bytes(&def_json(graph)?)));
    }
    generated.push((
        "neff.json".to_owned(),
        to_json_bytes(&neff_json(&spec.signature, spec.signature_form)),
    ));
    for (name, constant) in &spec.constants {
        generated
            .push((name.clone(), npy::encode(&constant.descr, &constant.shape, &constant.data)?));
    }
    let mut members: Vec<(&str, &[u8])> =
        generated.iter().map(|(name, bytes)| (name.as_str(), bytes.as_slice())).collect();
    members
        .extend(spec.extra_members.iter().map(|(name, bytes)| (name.as_str(), bytes.as_slice())));
    let payload = write_payload(spec.header.pkg_version, &members)?;
    let uuid = if spec.header.uuid == [0; 16] {
        uuid_from_name(&spec.header.name)
    } else {
        spec.header.uuid
    };
    let header = NeffHeader { uuid, ..spec.header.clone() };
    assemble_neff(&header, &payload)
}

fn to_json_bytes(value: &Value) -> Vec<u8> {
    // Serializing a `Value` into memory cannot fail: its keys are strings and it holds no floats
    // that JSON cannot represent.
    serde_json::to_vec(value).unwrap_or_default()
}

fn def_json(graph: &GraphSpec) -> Result<Value, NeffError> {
    let mut var_table = Map::new();
    for var in &graph.vars {
        if var.name.starts_with('#') {
            return Err(invalid(format!(
                "graph {:?}: var name {:?} would read as a comment",
                graph.name, var.name
            )));
        }
        let mut entry = Map::new();
        entry.insert("type".to_owned(), json!(var.kind));
        entry.insert("var_id".to_owned(), json!(var.var_id));
        let optional_numbers = [
            ("size", var.size),
            ("alignment", var.alignment),
            ("backing_variable_off", var.backing_variable_off),
            ("referenced_var_id", var.referenced_var_id.map(u64::from)),
        ];
        for (key, value) in optional_numbers {
            if let Some(value) = value {
                entry.insert(key.to_owned(), json!(value));
            }
        }
        if let Some(file_name) = &var.file_name {
            entry.insert("file_name".to_owned(), json!(file_name));
        }
        if let Some(list) = &var.list {
            entry.insert("list".to_owned(), json!(list));
        }
        if var_table.insert(var.name.clone(), Value::Object(entry)).is_some() {
            return Err(invalid(format!(
                "graph {:?}: var name {:?} appears twice",
                graph.name, var.name
            )));
        }
    }
    Ok(json!({ "var": var_table }))
}

/// `neff.json` in the compiled form (see [`SignatureForm::Compiled`]).
fn compiled_neff_json(signature: &Signature) -> Value {
    let n_inputs = signature.inputs.len();
    let n_outputs = signature.outputs.len();
    let mut nodes: Vec<Value> = signature
        .inputs
        .iter()
        .map(|tensor| {
            json!({ "inputs": [], "is_param": "0", "name": tensor.name, "op": "null",
                    "output_names": [tensor.name] })
        })
        .collect();
    let output_names: Vec<&str> =
        signature.outputs.iter().map(|tensor| tensor.name.as_str()).collect();
    nodes.push(json!({
        "attrs": {
            "flatten_data": "0",
            "func_name": "__kelf",
            "kelf": "kelf-0.json",
            "num_inputs": n_inputs.to_string(),
            "num_outputs": n_outputs.to_string(),
        },
        "inputs": (0..n_inputs).map(|input| json!([input, 0, 0])).collect::<Vec<_>>(),
        "name": COMPILED_NODE,
        "op": "tvm_op",
        "output_names": output_names,
    }));
    let n_entries = n_inputs + n_outputs;
    let mut node_row_ptr: Vec<usize> = (0..=n_inputs).collect();
    node_row_ptr.push(n_entries);
    let tensors: Vec<&TensorSignature> =
        signature.inputs.iter().chain(&signature.outputs).collect();
    let shapes: Vec<&Vec<i64>> = tensors.iter().map(|tensor| &tensor.shape).collect();
    let dtypes: Vec<&str> = tensors.iter().map(|tensor| tensor.dtype.as_str()).collect();
    let inputs: Map<String, Value> = signature
        .inputs
        .iter()
        .enumerate()
        .map(|(id, tensor)| {
            (tensor.name.clone(), json!({ "dtype": tensor.dtype, "id": id, "shape": tensor.shape }))
        })
        .collect();
    json!({
        "arg_nodes": (0..n_inputs).collect::<Vec<_>>(),
        "attrs": {
            "dltype": ["list_str", dtypes],
            "shape": ["list_shape", shapes],
            "storage_id": ["list_int", (0..n_entries).collect::<Vec<_>>()],
        },
        "heads": (0..n_outputs).map(|output| json!([n_inputs, output, 0])).collect::<Vec<_>>(),
        "metadata": { "signatures": { "default": { "inputs": inputs, "outputs": {} } } },
        "node_row_ptr": node_row_ptr,
        "nodes": nodes,
    })
}

fn neff_json(signature: &Signature, form: SignatureForm) -> Value {
    if form == SignatureForm::Compiled {
        return compiled_neff_json(signature);
    }
    let mut root = Map::new();
    if form != SignatureForm::MetadataOnly {
        let tensors: Vec<&TensorSignature> =
            signature.inputs.iter().chain(&signature.outputs).collect();
        let n_inputs = signature.inputs.len();
        let nodes: Vec<Value> = tensors
            .iter()
            .enumerate()
            .map(|(node_idx, tensor)| {
                if node_idx < n_inputs {
                    json!({ "inputs": [], "name": tensor.name, "op": "null" })
                } else {
                    let inputs: Vec<Value> =
                        (0..n_inputs).map(|input| json!([input, 0, 0])).collect();
                    json!({ "inputs": inputs, "name": tensor.name, "op": "neff" })
                }
            })
            .collect();
        root.insert("nodes".to_owned(), Value::Array(nodes));
        root.insert("arg_nodes".to_owned(), json!((0..n_inputs).collect::<Vec<_>>()));
        let heads: Vec<Value> = (n_inputs..tensors.len()).map(|node| json!([node, 0, 0])).collect();
        root.insert("heads".to_owned(), Value::Array(heads));
        root.insert("node_row_ptr".to_owned(), json!((0..=tensors.len()).collect::<Vec<_>>()));
        let shapes: Vec<&Vec<i64>> = tensors.iter().map(|tensor| &tensor.shape).collect();
        let dtypes: Vec<&str> = tensors.iter().map(|tensor| tensor.dtype.as_str()).collect();
        root.insert(
            "attrs".to_owned(),
            json!({ "dltype": ["list_str", dtypes], "shape": ["list_shape", shapes] }),
        );
    }
    if form != SignatureForm::GraphOnly {
        let list = |tensors: &[TensorSignature]| -> Value {
            let entries: Map<String, Value> = tensors
                .iter()
                .enumerate()
                .map(|(id, tensor)| {
                    (
                        tensor.name.clone(),
                        json!({ "dtype": tensor.dtype, "id": id, "shape": tensor.shape }),
                    )
                })
                .collect();
            Value::Object(entries)
        };
        let default =
            json!({ "inputs": list(&signature.inputs), "outputs": list(&signature.outputs) });
        root.insert("metadata".to_owned(), json!({ "signatures": { "default": default } }));
    }
    Value::Object(root)
}

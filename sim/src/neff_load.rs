//! From NEFF bytes to a [`ModelDescription`], and back: the one place the simulator touches
//! `abi::neff`.
//!
//! Design choices:
//! - **Parse as libnrt's loader does** ([`abi::neff::ReadOptions::loader`]): every header gate, payload
//!   check and loader invariant is `abi::neff`'s, and its [`abi::neff::NeffError::status`] is the
//!   status `nrt_load` returns.
//! - **Graphs are flattened.** libnrt runs a NEFF's subgraphs on one NeuronCore over one set of
//!   inputs and outputs, so an input or output name is bound once (the first graph that declares
//!   it). A staged variable of a later graph whose name is taken is renamed `graph/name`, which
//!   keeps names unique.
//! - **Constants** (`file` variables) come from their `.npy` member, data after the header; a
//!   missing member is `NRT_INVALID`.
//! - **The writer side** ([`neff_spec_of`]) turns a description back into a [`NeffSpec`], with the
//!   device program as the `sim/model.hlo.pb` member ([`add_hlo`]), so tests and vectors can
//!   make real NEFF bytes for any model the simulator can describe.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use abi::dtype::Dltype;
use abi::neff::{
    ConstantSpec, GraphSpec, MrType, Neff, NeffError, NeffSpec, Signature, TensorSignature, Var,
    npy,
};
use abi::runtime::NrtError;
use abi::status::NrtStatus;

use crate::device_program::{Binding, HLO_MEMBER};
use crate::model::{IoDescription, ModelDescription, SlotKind, VarDescription};

/// The one mapping between the parser's memory-reference type and the simulator's slot kind.
pub fn slot_kind_of(mr_type: MrType) -> Option<SlotKind> {
    Some(match mr_type {
        MrType::Invalid => return None,
        MrType::Sb => SlotKind::Sb,
        MrType::BufferStaged => SlotKind::BufferStaged,
        MrType::Buffer => SlotKind::Buffer,
        MrType::TmpBuf => SlotKind::TmpBuf,
        MrType::Input => SlotKind::Input,
        MrType::Output => SlotKind::Output,
        MrType::Ptr => SlotKind::Ptr,
        MrType::VirtualTmpBuf => SlotKind::VirtualTmpBuf,
        MrType::List => SlotKind::List,
        MrType::PtrTable => SlotKind::PtrTable,
        MrType::Remote => SlotKind::Remote,
    })
}

/// The parser's type for a slot kind.
pub fn mr_type_of(kind: SlotKind) -> MrType {
    match kind {
        SlotKind::Sb => MrType::Sb,
        SlotKind::BufferStaged => MrType::BufferStaged,
        SlotKind::Buffer => MrType::Buffer,
        SlotKind::TmpBuf => MrType::TmpBuf,
        SlotKind::Input => MrType::Input,
        SlotKind::Output => MrType::Output,
        SlotKind::Ptr => MrType::Ptr,
        SlotKind::VirtualTmpBuf => MrType::VirtualTmpBuf,
        SlotKind::List => MrType::List,
        SlotKind::PtrTable => MrType::PtrTable,
        SlotKind::Remote => MrType::Remote,
    }
}

fn invalid(detail: String) -> NrtError {
    NrtError::new(NrtStatus::Invalid, detail)
}

/// Parses a NEFF as libnrt's loader does and describes it for the simulator.
///
/// # Errors
/// The status of the parser's error (`NRT_UNSUPPORTED_NEFF_VERSION` for version and feature
/// gates, `NRT_INVALID` otherwise), or `NRT_INVALID` for a constant whose member is missing. The
/// `sim/model.hlo.pb` member is taken as it is; it is checked when the model is loaded.
pub fn describe_neff(bytes: &[u8]) -> Result<ModelDescription, NrtError> {
    describe_neff_with_limits(bytes, &crate::config::LoadLimits::default())
}

/// [`describe_neff`] under the count limits of a [`SimConfig`](crate::SimConfig) (its
/// [`load_limits`](crate::SimConfig::load_limits)); a NEFF past one is refused with a message
/// naming the variable that raises it.
///
/// # Errors
/// As [`describe_neff`].
pub fn describe_neff_with_limits(
    bytes: &[u8],
    limits: &crate::config::LoadLimits,
) -> Result<ModelDescription, NrtError> {
    let neff = Neff::parse(bytes, &limits.neff_read_options()).map_err(|err| {
        let detail = match crate::config::LoadLimits::neff_variable_for(&err) {
            Some(variable) => format!("{err}{}", crate::config::LoadLimits::hint(variable)),
            None => err.to_string(),
        };
        NrtError::new(err.status(), detail)
    })?;
    describe(&neff)
}

/// Describes a parsed NEFF for the simulator.
///
/// # Errors
/// As [`describe_neff`], after parsing.
pub fn describe(neff: &Neff) -> Result<ModelDescription, NrtError> {
    let io_of = |tensor: &TensorSignature| IoDescription {
        name: tensor.name.clone(),
        dltype: Dltype::from_name(&tensor.dtype).ok(),
        shape: tensor.shape.clone(),
    };
    let inputs: Vec<IoDescription> = neff.signature.inputs.iter().map(io_of).collect();
    let outputs: Vec<IoDescription> = neff.signature.outputs.iter().map(io_of).collect();
    // Shapes come from an untrusted file: every byte size is checked arithmetic, a negative or
    // oversized dimension is an error rather than a zero.
    let mut signature_sizes: BTreeMap<&str, u64> = BTreeMap::new();
    for io in inputs.iter().chain(&outputs) {
        if let Some(n_bytes) = io.check().map_err(|why| invalid(format!("neff.json: {why}")))? {
            signature_sizes.entry(io.name.as_str()).or_insert(n_bytes);
        }
    }
    let mut vars = Vec::new();
    let mut taken: HashSet<String> = HashSet::new();
    for graph in &neff.graphs {
        for var in &graph.vars {
            let kind = var.mr_type.and_then(slot_kind_of).ok_or_else(|| {
                invalid(format!(
                    "graph {:?}: variable {:?} has type {:?}, which the simulator cannot place",
                    graph.name, var.name, var.kind
                ))
            })?;
            let is_io = matches!(kind, SlotKind::Input | SlotKind::Output);
            let name = if !taken.contains(&var.name) {
                var.name.clone()
            } else if is_io {
                continue;
            } else {
                format!("{}/{}", graph.name, var.name)
            };
            let constant = if kind == SlotKind::Buffer {
                let member = neff.var_file(graph, var).ok_or_else(|| {
                    invalid(format!(
                        "graph {:?}: constant {:?} names member {:?}, which the neff does not hold",
                        graph.name, var.name, var.file_name
                    ))
                })?;
                let context = format!("constant {:?}", var.name);
                let header = npy::parse_header(&context, member.bytes())
                    .map_err(|err| NrtError::new(err.status(), err.to_string()))?;
                Some(Arc::new(member.bytes()[header.data_offset..].to_vec()))
            } else {
                None
            };
            let signature_size = || signature_sizes.get(var.name.as_str()).copied();
            let size = var
                .size
                .or_else(|| constant.as_ref().map(|data| data.len() as u64))
                .or_else(|| if is_io { signature_size() } else { None })
                .unwrap_or(0);
            taken.insert(name.clone());
            vars.push(VarDescription {
                name,
                var_id: var.var_id,
                kind,
                size,
                alignment: var.alignment,
                backing_variable_off: var.backing_variable_off,
                constant,
            });
        }
    }
    let hlo = neff.members.get(HLO_MEMBER).map(|member| member.bytes().to_vec());
    Ok(ModelDescription {
        name: neff.header.name.clone(),
        vars,
        inputs,
        outputs,
        hlo,
        hlo_origin: String::new(),
        // The compile target writes the signature in parameter order, so a name that looks like
        // the compiler's default (`input1` on parameter 0) does not rebind it.
        binding: if neff.members.contains_key(abi::neff::SIMULATOR_TARGET_MEMBER) {
            Binding::SignatureOrder
        } else {
            Binding::CompilerNames
        },
    })
}

/// Puts `hlo` (an encoded `HloModuleProto`, or HLO text) into `spec` as its `sim/model.hlo.pb`
/// member, replacing any earlier one.
pub fn add_hlo(spec: &mut NeffSpec, hlo: &[u8]) {
    spec.extra_members.insert(HLO_MEMBER.to_owned(), hlo.to_vec());
}

/// A one-graph (`sg00`) NEFF spec for `description`: its variables, signature, constants (as
/// byte `.npy` members) and device program. The writer's loader-invariant checks are not
/// repeated here: what the description says is what gets written.
///
/// # Errors
/// [`NeffError::InvalidSpec`] for a [`SlotKind::BufferStaged`] variable, which has no `def.json`
/// type (it is made by the runtime, never written by compilers).
pub fn neff_spec_of(description: &ModelDescription) -> Result<NeffSpec, NeffError> {
    let mut spec = NeffSpec::new(&description.name);
    let mut graph = GraphSpec { name: "sg00".to_owned(), vars: Vec::new() };
    let mut constants = BTreeMap::new();
    for var in &description.vars {
        let def_type = mr_type_of(var.kind).def_type().ok_or_else(|| NeffError::InvalidSpec {
            detail: format!(
                "variable {:?} is {:?}, which has no def.json type",
                var.name, var.kind
            ),
        })?;
        let mut written = Var::new(&var.name, var.var_id, def_type).with_size(var.size);
        written.alignment = var.alignment;
        written.backing_variable_off = var.backing_variable_off;
        if let Some(data) = &var.constant {
            let member = format!("sg00/{}.npy", var.name);
            written.file_name = Some(member.clone());
            let spec = ConstantSpec {
                descr: "|u1".to_owned(),
                shape: vec![data.len() as u64],
                data: data.to_vec(),
            };
            constants.insert(member, spec);
        }
        graph.vars.push(written);
    }
    let signature_of = |io: &IoDescription| {
        TensorSignature::new(&io.name, io.dltype.map_or("", Dltype::name), &io.shape)
    };
    spec.signature = Signature {
        inputs: description.inputs.iter().map(signature_of).collect(),
        outputs: description.outputs.iter().map(signature_of).collect(),
    };
    spec.graphs.push(graph);
    spec.constants = constants;
    if let Some(hlo) = &description.hlo {
        add_hlo(&mut spec, hlo);
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mr_type_but_invalid_has_a_slot_kind_and_maps_back() {
        for &mr_type in MrType::ALL {
            match slot_kind_of(mr_type) {
                Some(kind) => assert_eq!(mr_type_of(kind), mr_type),
                None => assert_eq!(mr_type, MrType::Invalid),
            }
        }
    }
}

//! Graphs and their variable tables: `kelf-N.json` and every `sgNN/def.json`.
//!
//! Design choices:
//! - The graph list comes from every top-level `kelf-N.json`, in order of N; a graph listed
//!   twice (by two kelf files or one) is kept once, found in a set so the work stays linear in
//!   the entries. At most [`MAX_GRAPHS`] distinct graphs, else a typed error. A NEFF without any
//!   kelf file falls back to every `*/def.json` member, named after its folder, so a hand-made or
//!   older file is still readable.
//! - `def.json`'s `var` object is keyed by variable name; keys starting with `#` are comments.
//!   Fields this crate does not model are ignored; the ones it models must have the right shape
//!   when present (the structs below, read by `json::read`, which names the refused field).
//!   `size` is optional because real files omit it for `state-buffer` and `dge-table` variables;
//!   `type` and `var_id` are required.
//! - Each graph's variables are sorted by var_id (then name), which is the loader's order.
//! - Loader invariants: var_ids are dense per graph (each `def.json` is its own table) and the
//!   NEFF has at least one output variable over all graphs. Checking outputs per graph would
//!   refuse real multi-subgraph NEFFs whose secondary subgraphs are not known to hold outputs.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::Deserialize;

use super::json::{Entries, List, NonNegative, Text, U32, parse_member, read};
use super::{Member, MrType, NeffError};

/// One device variable of a graph's `def.json`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    /// The key of the `var` object.
    pub name: String,
    /// The dense id the loader binds by.
    pub var_id: u32,
    /// The `def.json` `type` string, exactly as written.
    pub kind: String,
    /// The memory-reference type of `kind`; `None` for a type this crate does not know.
    pub mr_type: Option<MrType>,
    /// Size in bytes (absent for `state-buffer` and `dge-table` in real files).
    pub size: Option<u64>,
    /// Alignment in bytes.
    pub alignment: Option<u64>,
    /// For `file` variables: the member holding the constant.
    pub file_name: Option<String>,
    /// For `virtual` variables: the offset in the shared scratchpad.
    pub backing_variable_off: Option<u64>,
    /// For `pointer` variables: the var_id whose address the pointer holds.
    pub referenced_var_id: Option<u32>,
    /// For `dge-table` variables: the var_ids whose addresses fill the table.
    pub list: Option<Vec<u32>>,
}

impl Var {
    /// A variable of `kind` with every optional field empty; `mr_type` follows from `kind`.
    pub fn new(name: &str, var_id: u32, kind: &str) -> Var {
        Var {
            name: name.to_owned(),
            var_id,
            kind: kind.to_owned(),
            mr_type: MrType::from_def_type(kind),
            size: None,
            alignment: None,
            file_name: None,
            backing_variable_off: None,
            referenced_var_id: None,
            list: None,
        }
    }

    /// The same variable with `size` set.
    pub fn with_size(mut self, size: u64) -> Var {
        self.size = Some(size);
        self
    }
}

/// One subgraph: its name, its `def.json` member and its variables sorted by var_id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    /// The graph name, such as `sg00`.
    pub name: String,
    /// The member holding its definition, such as `sg00/def.json`.
    pub definition: String,
    /// The variables, sorted by var_id.
    pub vars: Vec<Var>,
}

impl Graph {
    /// The variable called `name`.
    pub fn var(&self, name: &str) -> Option<&Var> {
        self.vars.iter().find(|var| var.name == name)
    }
}

/// The most distinct graphs a NEFF may list. Real NEFFs have one or two subgraphs per NeuronCore
/// group; the cap bounds the work a hostile file can ask for (each graph is a `def.json` to parse)
/// far above anything a compiler writes.
pub const MAX_GRAPHS: usize = 4096;

/// The `N` of a top-level `kelf-N.json` member name.
fn kelf_number(name: &str) -> Option<u64> {
    name.strip_prefix("kelf-")?.strip_suffix(".json")?.parse().ok()
}

/// Reads the graph list and every graph's variable table.
pub(crate) fn read_graphs(
    members: &BTreeMap<String, Member>,
    strict_var_types: bool,
    max_vars: usize,
) -> Result<Vec<Graph>, NeffError> {
    let mut kelf_members: Vec<(u64, &str)> = members
        .keys()
        .filter_map(|name| kelf_number(name).map(|number| (number, name.as_str())))
        .collect();
    kelf_members.sort();
    let mut listed: Vec<(String, String, String)> = Vec::new();
    // Definitions already listed: a set, since a kelf file may repeat one entry many times.
    let mut known: HashSet<String> = HashSet::new();
    let too_many = || NeffError::TooManyGraphs { limit: MAX_GRAPHS };
    for (_, kelf_name) in &kelf_members {
        for (name, definition) in read_kelf(kelf_name, members[*kelf_name].bytes())? {
            if known.insert(definition.clone()) {
                if listed.len() == MAX_GRAPHS {
                    return Err(too_many());
                }
                listed.push((name, definition, (*kelf_name).to_owned()));
            }
        }
    }
    if kelf_members.is_empty() {
        for member in members.keys() {
            if let Some(dir) = member.strip_suffix("/def.json") {
                if listed.len() == MAX_GRAPHS {
                    return Err(too_many());
                }
                listed.push((dir.to_owned(), member.clone(), String::new()));
            }
        }
    }
    let mut n_vars = 0usize;
    listed
        .into_iter()
        .map(|(name, definition, referenced_by)| {
            let member =
                members.get(definition.strip_prefix("./").unwrap_or(&definition)).ok_or_else(
                    || NeffError::MissingMember { member: definition.clone(), referenced_by },
                )?;
            let vars = read_def_json(&name, &definition, member.bytes(), strict_var_types)?;
            n_vars = n_vars.saturating_add(vars.len());
            if n_vars > max_vars {
                return Err(NeffError::TooManyVars { graph: name, count: n_vars, limit: max_vars });
            }
            Ok(Graph { name, definition, vars })
        })
        .collect()
}

/// `kelf-N.json` as far as the graph list reads it.
#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct KelfJson {
    graphs: Option<List<KelfGraph>>,
}

#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct KelfGraph {
    definition: Text,
    name: Option<Text>,
}

/// `def.json` as far as the variable table reads it.
#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct DefJson {
    /// Keyed by variable name; `#` keys are comments.
    var: Option<Entries<VarEntry, true>>,
}

#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct VarEntry {
    #[serde(rename = "type")]
    kind: Text,
    var_id: U32,
    size: Option<NonNegative>,
    alignment: Option<NonNegative>,
    file_name: Option<Text>,
    backing_variable_off: Option<NonNegative>,
    referenced_var_id: Option<U32>,
    list: Option<List<U32>>,
}

/// The `(name, definition)` pairs of a `kelf-N.json`.
fn read_kelf(member: &str, bytes: &[u8]) -> Result<Vec<(String, String)>, NeffError> {
    let kelf: KelfJson = read(member, &parse_member(member, bytes)?)?;
    let graphs = kelf.graphs.map(|List(graphs)| graphs).unwrap_or_default();
    Ok(graphs
        .into_iter()
        .map(|KelfGraph { definition: Text(definition), name }| {
            let name = match name {
                Some(Text(name)) => name,
                None => definition.split('/').next().unwrap_or_default().to_owned(),
            };
            (name, definition)
        })
        .collect())
}

/// The variables of one `def.json`, sorted by var_id.
fn read_def_json(
    graph: &str,
    member: &str,
    bytes: &[u8],
    strict_var_types: bool,
) -> Result<Vec<Var>, NeffError> {
    let def: DefJson = read(member, &parse_member(member, bytes)?)?;
    let Some(Entries(entries)) = def.var else {
        return Ok(Vec::new());
    };
    let mut vars = Vec::with_capacity(entries.len());
    for (name, entry) in entries {
        let kind = entry.kind.0;
        let mr_type = MrType::from_def_type(&kind);
        if mr_type.is_none() && strict_var_types {
            return Err(NeffError::UnknownVarType {
                graph: graph.to_owned(),
                var: name,
                var_type: kind,
            });
        }
        vars.push(Var {
            name,
            var_id: entry.var_id.0,
            kind,
            mr_type,
            size: entry.size.map(|NonNegative(size)| size),
            alignment: entry.alignment.map(|NonNegative(alignment)| alignment),
            file_name: entry.file_name.map(|Text(file_name)| file_name),
            backing_variable_off: entry.backing_variable_off.map(|NonNegative(offset)| offset),
            referenced_var_id: entry.referenced_var_id.map(|U32(var_id)| var_id),
            list: entry.list.map(|List(items)| items.into_iter().map(|U32(item)| item).collect()),
        });
    }
    vars.sort_by(|left, right| (left.var_id, &left.name).cmp(&(right.var_id, &right.name)));
    Ok(vars)
}

/// Dense var_ids in every graph and at least one output in the NEFF.
pub(crate) fn check_loader_invariants(graphs: &[Graph]) -> Result<(), NeffError> {
    for graph in graphs {
        let count = graph.vars.len();
        let mut seen = BTreeSet::new();
        let mut repeated = BTreeSet::new();
        let mut out_of_range = BTreeSet::new();
        for var in &graph.vars {
            if !seen.insert(var.var_id) {
                repeated.insert(var.var_id);
            }
            if var.var_id as usize >= count {
                out_of_range.insert(var.var_id);
            }
        }
        let missing: Vec<u32> = (0..count)
            .filter_map(|id| u32::try_from(id).ok())
            .filter(|id| !seen.contains(id))
            .collect();
        if !missing.is_empty() || !repeated.is_empty() || !out_of_range.is_empty() {
            return Err(NeffError::VarIdsNotDense {
                graph: graph.name.clone(),
                count,
                missing,
                repeated: repeated.into_iter().collect(),
                out_of_range: out_of_range.into_iter().collect(),
            });
        }
    }
    let has_output =
        graphs.iter().flat_map(|graph| &graph.vars).any(|var| var.mr_type == Some(MrType::Output));
    if has_output { Ok(()) } else { Err(NeffError::NoOutputs) }
}

//! Structural validation of a module: everything an evaluator must be able to rely on before it
//! looks at a single opcode.
//!
//! Checked: the entry computation exists; computation ids are unique, and instruction ids within
//! their computation; every instruction has a well-formed shape; parameters are numbered 0..n; operands, control predecessors
//! and roots name instructions of the same computation, called computations name computations of
//! the module; neither the instructions of a computation nor the call graph has a cycle; every
//! enum-like field (comparison direction and type, operand precisions, fft type, rng distribution
//! and algorithm, triangular-solve transpose, input/output alias kinds) holds a value XLA has, so
//! the printer never writes text the parser refuses; for the same reason a constant's literal
//! agrees with its shape (element type, dimensions, element count) and its layouts are
//! permutations, and the entry layout's shapes are well formed. Not checked: whether opcodes
//! exist, or shapes agree with operands (the evaluator's business).
//!
//! Every walk is iterative (Kahn's algorithm), so a hostile module cannot exhaust the stack.

use std::collections::{BTreeMap, VecDeque};

use crate::proto::{
    FftType, HloInstructionProto, HloModuleProto, Kind, LiteralProto, PrimitiveType,
    RandomAlgorithm, RandomDistribution, ShapeProto, precision_config::Precision,
    triangular_solve_options::Transpose,
};

/// Deepest tuple nesting accepted in a shape; prost's decoder stops far below the stack limit,
/// and the text parser at 64, so this only bounds modules built in memory.
const MAX_SHAPE_DEPTH: usize = 64;

/// Why a module is structurally invalid. Computations and instructions are named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidateError {
    /// No computation has the entry computation's id.
    #[error("the entry computation id {id} (`{name}`) names no computation of the module")]
    NoEntry {
        /// `entry_computation_id`.
        id: i64,
        /// `entry_computation_name`.
        name: String,
    },
    /// Two computations share an id.
    #[error("computations `{first}` and `{second}` have the same id {id}")]
    DuplicateComputationId {
        /// The id.
        id: i64,
        /// The first computation with it.
        first: String,
        /// The second.
        second: String,
    },
    /// Two instructions of one computation share an id.
    #[error(
        "computation `{computation}`: instructions `{first}` and `{second}` have the same id {id}"
    )]
    DuplicateInstructionId {
        /// The computation.
        computation: String,
        /// The id.
        id: i64,
        /// The first instruction with it.
        first: String,
        /// The second.
        second: String,
    },
    /// An instruction without a shape.
    #[error("computation `{computation}`, instruction `{instruction}`: has no shape")]
    MissingShape {
        /// The computation.
        computation: String,
        /// The instruction.
        instruction: String,
    },
    /// A shape that cannot describe a value.
    #[error("computation `{computation}`, instruction `{instruction}`: invalid shape: {why}")]
    InvalidShape {
        /// The computation.
        computation: String,
        /// The instruction.
        instruction: String,
        /// What is wrong.
        why: String,
    },
    /// An id that names no instruction of the computation.
    #[error(
        "computation `{computation}`, instruction `{instruction}`: {role} id {id} is not an instruction of `{computation}`"
    )]
    DanglingInstruction {
        /// The computation.
        computation: String,
        /// The instruction holding the id (empty for the root).
        instruction: String,
        /// "operand", "control predecessor" or "root".
        role: &'static str,
        /// The id.
        id: i64,
    },
    /// A called computation id that names no computation.
    #[error(
        "computation `{computation}`, instruction `{instruction}`: called computation id {id} is not in the module"
    )]
    DanglingComputation {
        /// The computation.
        computation: String,
        /// The instruction.
        instruction: String,
        /// The id.
        id: i64,
    },
    /// A constant whose literal does not fit it: no literal, a literal of another element type
    /// or dimensions, a count of values its shape does not have, or a layout that is not a
    /// permutation of the dimensions.
    #[error("computation `{computation}`, instruction `{instruction}`: invalid constant: {why}")]
    InvalidConstant {
        /// The computation.
        computation: String,
        /// The constant.
        instruction: String,
        /// What is wrong.
        why: String,
    },
    /// Iota replica groups (on any instruction, in either field) that the text form cannot
    /// write or that do not expand: no reshape dimensions, or counts, dimensions and transpose
    /// that disagree.
    #[error(
        "computation `{computation}`, instruction `{instruction}`: invalid iota replica groups: {why}"
    )]
    InvalidReplicaGroups {
        /// The computation.
        computation: String,
        /// The instruction.
        instruction: String,
        /// What is wrong.
        why: String,
    },
    /// A shape of the module's entry layout (`host_program_shape`) that cannot describe a value.
    #[error("the entry computation layout has an invalid shape: {why}")]
    InvalidEntryLayout {
        /// What is wrong.
        why: String,
    },
    /// The instructions of a computation depend on each other in a cycle.
    #[error(
        "computation `{computation}`: instruction `{instruction}` depends on itself through its operands or control predecessors"
    )]
    InstructionCycle {
        /// The computation.
        computation: String,
        /// One instruction on the cycle.
        instruction: String,
    },
    /// The parameters of a computation are not numbered 0, 1, ... each exactly once.
    #[error(
        "computation `{computation}`, instruction `{instruction}`: parameter number {number} {why}"
    )]
    BadParameterNumber {
        /// The computation.
        computation: String,
        /// The parameter instruction.
        instruction: String,
        /// Its `parameter_number`.
        number: i64,
        /// "is used twice" or "leaves a gap (expected N)".
        why: String,
    },
    /// An enum-like field holds a value XLA does not have (a string such as `FLMAT` for a
    /// comparison type, or a number past the enum's values).
    #[error(
        "computation `{computation}`, instruction `{instruction}`: {field} {value} is not one of {allowed}"
    )]
    UnknownEnumValue {
        /// The computation (empty for the module's input/output aliases).
        computation: String,
        /// The instruction (`input_output_alias` for the module's aliases).
        instruction: String,
        /// The proto field.
        field: &'static str,
        /// The value, quoted when a string.
        value: String,
        /// The values XLA has, comma-separated.
        allowed: String,
    },
    /// The call graph has a cycle (HLO has no recursion).
    #[error("computation `{computation}` calls itself, directly or through other computations")]
    CallCycle {
        /// One computation on the cycle.
        computation: String,
    },
}

/// Checks the structure of a module: the entry computation exists; computation ids, and
/// instruction ids within a computation, are unique; every instruction, and the entry layout,
/// has a well-formed shape; a constant's literal fits its shape;
/// parameters are numbered 0..n; operands, control predecessors and roots name instructions of
/// the same computation and called computations name computations of the module; neither the
/// instructions of a computation nor the call graph has a cycle.
///
/// # Errors
/// The first [`ValidateError`] found, naming the computation and instruction.
pub fn validate(m: &HloModuleProto) -> Result<(), ValidateError> {
    let mut computations: BTreeMap<i64, usize> = BTreeMap::new();
    for (index, c) in m.computations.iter().enumerate() {
        if let Some(first) = computations.insert(c.id, index) {
            return Err(ValidateError::DuplicateComputationId {
                id: c.id,
                first: m.computations[first].name.clone(),
                second: c.name.clone(),
            });
        }
    }
    if !computations.contains_key(&m.entry_computation_id) {
        return Err(ValidateError::NoEntry {
            id: m.entry_computation_id,
            name: m.entry_computation_name.clone(),
        });
    }
    if let Some(layout) = &m.host_program_shape {
        for shape in layout.parameters.iter().chain(&layout.result) {
            check_shape(shape).map_err(|why| ValidateError::InvalidEntryLayout { why })?;
        }
    }
    for entry in m.input_output_alias.iter().flat_map(|a| &a.entries) {
        if Kind::try_from(entry.kind).is_err() {
            return Err(ValidateError::UnknownEnumValue {
                computation: String::new(),
                instruction: "input_output_alias".into(),
                field: "kind",
                value: entry.kind.to_string(),
                allowed: names(|v| Kind::try_from(v).ok().map(|k| k.as_str_name())),
            });
        }
    }
    // Call graph edges, caller -> callees, by computation index.
    let mut callees: Vec<Vec<usize>> = vec![Vec::new(); m.computations.len()];
    for (c_index, c) in m.computations.iter().enumerate() {
        let mut ids: BTreeMap<i64, usize> = BTreeMap::new();
        for (index, i) in c.instructions.iter().enumerate() {
            if let Some(first) = ids.insert(i.id, index) {
                return Err(ValidateError::DuplicateInstructionId {
                    computation: c.name.clone(),
                    id: i.id,
                    first: c.instructions[first].name.clone(),
                    second: i.name.clone(),
                });
            }
            let Some(shape) = &i.shape else {
                return Err(ValidateError::MissingShape {
                    computation: c.name.clone(),
                    instruction: i.name.clone(),
                });
            };
            check_shape(shape).map_err(|why| ValidateError::InvalidShape {
                computation: c.name.clone(),
                instruction: i.name.clone(),
                why,
            })?;
            if i.opcode == "constant" {
                check_constant(i, shape).map_err(|why| ValidateError::InvalidConstant {
                    computation: c.name.clone(),
                    instruction: i.name.clone(),
                    why,
                })?;
            }
            check_iota_groups(i).map_err(|why| ValidateError::InvalidReplicaGroups {
                computation: c.name.clone(),
                instruction: i.name.clone(),
                why,
            })?;
            check_enums(i).map_err(|(field, value, allowed)| ValidateError::UnknownEnumValue {
                computation: c.name.clone(),
                instruction: i.name.clone(),
                field,
                value,
                allowed,
            })?;
        }
        let mut numbers: BTreeMap<i64, &str> = BTreeMap::new();
        for i in c.instructions.iter().filter(|i| i.opcode == "parameter") {
            if numbers.insert(i.parameter_number, &i.name).is_some() {
                return Err(ValidateError::BadParameterNumber {
                    computation: c.name.clone(),
                    instruction: i.name.clone(),
                    number: i.parameter_number,
                    why: "is used twice".into(),
                });
            }
        }
        for (expected, (&number, name)) in numbers.iter().enumerate() {
            if number != expected as i64 {
                return Err(ValidateError::BadParameterNumber {
                    computation: c.name.clone(),
                    instruction: name.to_string(),
                    number,
                    why: format!("leaves a gap (expected {expected})"),
                });
            }
        }
        if !ids.contains_key(&c.root_id) {
            return Err(ValidateError::DanglingInstruction {
                computation: c.name.clone(),
                instruction: String::new(),
                role: "root",
                id: c.root_id,
            });
        }
        // users[k] lists the instructions that must come after k; pending[k] counts the
        // dependencies of k not yet placed.
        let n = c.instructions.len();
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut pending = vec![0usize; n];
        for (index, i) in c.instructions.iter().enumerate() {
            let edges = i
                .operand_ids
                .iter()
                .map(|id| (id, "operand"))
                .chain(i.control_predecessor_ids.iter().map(|id| (id, "control predecessor")));
            for (id, role) in edges {
                let Some(&dependency) = ids.get(id) else {
                    return Err(ValidateError::DanglingInstruction {
                        computation: c.name.clone(),
                        instruction: i.name.clone(),
                        role,
                        id: *id,
                    });
                };
                users[dependency].push(index);
                pending[index] += 1;
            }
            for id in &i.called_computation_ids {
                let Some(&callee) = computations.get(id) else {
                    return Err(ValidateError::DanglingComputation {
                        computation: c.name.clone(),
                        instruction: i.name.clone(),
                        id: *id,
                    });
                };
                callees[c_index].push(callee);
            }
        }
        if let Some(stuck) = unordered(&users, pending) {
            return Err(ValidateError::InstructionCycle {
                computation: c.name.clone(),
                instruction: c.instructions[stuck].name.clone(),
            });
        }
    }
    let mut pending = vec![0usize; m.computations.len()];
    for list in &callees {
        for &callee in list {
            pending[callee] += 1;
        }
    }
    if let Some(stuck) = unordered(&callees, pending) {
        return Err(ValidateError::CallCycle { computation: m.computations[stuck].name.clone() });
    }
    Ok(())
}

/// The names of an enum's values, comma-separated (`name_of` gives the name of a known value).
fn names(name_of: impl Fn(i32) -> Option<&'static str>) -> String {
    (0..=255).filter_map(name_of).collect::<Vec<_>>().join(", ")
}

/// The first enum-like field of `i` whose value XLA does not have: the field, the value and the
/// allowed values. Empty strings and zero numbers are the fields' "unset".
fn check_enums(i: &HloInstructionProto) -> Result<(), (&'static str, String, String)> {
    let strings = [
        ("comparison_direction", &i.comparison_direction, crate::text::DIRECTIONS),
        ("comparison_type", &i.comparison_type, crate::text::COMPARISON_TYPES),
    ];
    for (field, value, allowed) in strings {
        if !value.is_empty() && !allowed.contains(&value.as_str()) {
            return Err((field, format!("`{value}`"), allowed.join(", ")));
        }
    }
    let number = |field, value: i32, name_of: &dyn Fn(i32) -> Option<&'static str>| {
        if name_of(value).is_none() {
            return Err((field, value.to_string(), names(name_of)));
        }
        Ok(())
    };
    for &p in i.precision_config.iter().flat_map(|p| &p.operand_precision) {
        number("operand_precision", p, &|v| Precision::try_from(v).ok().map(|e| e.as_str_name()))?;
    }
    number("distribution", i.distribution, &|v| {
        RandomDistribution::try_from(v).ok().map(|e| e.as_str_name())
    })?;
    number("rng_algorithm", i.rng_algorithm, &|v| {
        RandomAlgorithm::try_from(v).ok().map(|e| e.as_str_name())
    })?;
    number("fft_type", i.fft_type, &|v| FftType::try_from(v).ok().map(|e| e.as_str_name()))?;
    if let Some(t) = &i.triangular_solve_options {
        number("transpose_a", t.transpose_a, &|v| {
            Transpose::try_from(v).ok().map(|e| e.as_str_name())
        })?;
    }
    Ok(())
}

/// Kahn's algorithm: places every node whose dependencies are placed; returns a node that could
/// not be placed (it is on a cycle or depends on one), or `None` when all were.
fn unordered(edges: &[Vec<usize>], mut pending: Vec<usize>) -> Option<usize> {
    let mut ready: VecDeque<usize> = (0..pending.len()).filter(|&k| pending[k] == 0).collect();
    let mut placed = 0;
    while let Some(k) = ready.pop_front() {
        placed += 1;
        for &next in &edges[k] {
            pending[next] -= 1;
            if pending[next] == 0 {
                ready.push_back(next);
            }
        }
    }
    if placed == pending.len() { None } else { pending.iter().position(|&p| p > 0) }
}

/// Whether `minor_to_major` is a permutation of `0..rank`.
fn is_permutation(minor_to_major: &[i64], rank: usize) -> bool {
    let mut seen = vec![false; rank];
    minor_to_major.len() == rank
        && minor_to_major.iter().all(|&d| {
            usize::try_from(d)
                .ok()
                .filter(|&d| d < rank)
                .is_some_and(|d| !std::mem::replace(&mut seen[d], true))
        })
}

/// The first layout of an array in `shape` that is not a permutation of its dimensions (an
/// empty one included, which the text reads values through), as `{...}` with the rank.
fn strict_layouts(shape: &ShapeProto) -> Result<(), (String, usize)> {
    let mut stack = vec![shape];
    while let Some(s) = stack.pop() {
        stack.extend(&s.tuple_shapes);
        if let Some(layout) = &s.layout
            && s.element_type() != PrimitiveType::Tuple
            && !is_permutation(&layout.minor_to_major, s.dimensions.len())
        {
            let list: Vec<String> = layout.minor_to_major.iter().map(i64::to_string).collect();
            return Err((format!("{{{}}}", list.join(",")), s.dimensions.len()));
        }
    }
    Ok(())
}

/// Whether two shapes have the same element types and dimensions, leaf by leaf; layouts may
/// differ (the text writes the literal's values in logical order either way). Recursive: both
/// shapes have passed [`check_shape`], which bounds their depth.
fn same_values_shape(a: &ShapeProto, b: &ShapeProto) -> bool {
    a.element_type == b.element_type
        && a.dimensions == b.dimensions
        && a.tuple_shapes.len() == b.tuple_shapes.len()
        && a.tuple_shapes.iter().zip(&b.tuple_shapes).all(|(a, b)| same_values_shape(a, b))
}

/// What the text form needs of a constant (the printer writes the literal's values under the
/// instruction's shape, and the parser reads them through it): a literal, of the shape's
/// element types and dimensions, holding as many values as the shape has elements, and layouts
/// that are permutations.
fn check_constant(i: &HloInstructionProto, shape: &ShapeProto) -> Result<(), String> {
    let not_permutation = |whose: &str, (layout, rank): (String, usize)| {
        format!("{whose} layout {layout} is not a permutation of {rank} dimensions")
    };
    strict_layouts(shape).map_err(|e| not_permutation("its shape's", e))?;
    let literal = i.literal.as_ref().ok_or("it has no literal")?;
    // Each literal, the elements of a tuple's too, with the shape the text will read it by; the
    // printer writes a literal's values by its own shape when it has one.
    let mut stack: Vec<(&LiteralProto, &ShapeProto, usize)> = vec![(literal, shape, 0usize)];
    while let Some((literal, expected, depth)) = stack.pop() {
        if depth > MAX_SHAPE_DEPTH {
            return Err(format!("tuple literals nested deeper than {MAX_SHAPE_DEPTH}"));
        }
        let own = match &literal.shape {
            Some(own) => {
                strict_layouts(own).map_err(|e| not_permutation("its literal's", e))?;
                check_shape(own).map_err(|why| format!("its literal's shape: {why}"))?;
                if !same_values_shape(own, expected) {
                    return Err(format!(
                        "its literal's shape {} is not its shape {}",
                        crate::text::shape_text(own),
                        crate::text::shape_text(expected)
                    ));
                }
                own
            }
            None => expected,
        };
        if own.element_type() == PrimitiveType::Tuple {
            if literal.tuple_literals.len() != own.tuple_shapes.len() {
                return Err(format!(
                    "its tuple literal has {} elements, its shape {}",
                    literal.tuple_literals.len(),
                    own.tuple_shapes.len()
                ));
            }
            for (element, element_shape) in literal.tuple_literals.iter().zip(&own.tuple_shapes) {
                stack.push((element, element_shape, depth + 1));
            }
        } else {
            crate::text::element_count(own, literal).map_err(|err| err.to_string())?;
        }
    }
    Ok(())
}

fn check_shape(root: &ShapeProto) -> Result<(), String> {
    let mut stack = vec![(root, 0usize)];
    while let Some((s, depth)) = stack.pop() {
        if depth > MAX_SHAPE_DEPTH {
            return Err(format!("tuples nested deeper than {MAX_SHAPE_DEPTH}"));
        }
        match PrimitiveType::try_from(s.element_type) {
            Err(_) | Ok(PrimitiveType::Invalid) => {
                return Err(format!("element type {} is not a valid type", s.element_type));
            }
            Ok(PrimitiveType::Tuple) => {
                if !s.dimensions.is_empty() {
                    return Err("a tuple shape has dimensions".into());
                }
                stack.extend(s.tuple_shapes.iter().map(|t| (t, depth + 1)));
            }
            Ok(_) => {
                if let Some(d) = s.dimensions.iter().find(|&&d| d < 0) {
                    return Err(format!("dimension size {d} is negative"));
                }
                if !s.is_dynamic_dimension.is_empty()
                    && s.is_dynamic_dimension.len() != s.dimensions.len()
                {
                    return Err(format!(
                        "{} dynamic-dimension flags for {} dimensions",
                        s.is_dynamic_dimension.len(),
                        s.dimensions.len()
                    ));
                }
                if let Some(layout) = &s.layout {
                    let rank = s.dimensions.len();
                    // An empty layout on an array means "default", as XLA's own protos have.
                    if !is_permutation(&layout.minor_to_major, rank)
                        && !layout.minor_to_major.is_empty()
                    {
                        return Err(format!(
                            "layout {:?} is not a permutation of {rank} dimensions",
                            layout.minor_to_major
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The iota replica groups an instruction carries, in either field, must be what the text form
/// writes and the parser reads back: at least one reshape dimension, and an expansion.
fn check_iota_groups(i: &crate::proto::HloInstructionProto) -> Result<(), String> {
    let lists = [
        i.iota_replica_group_list.as_deref(),
        i.collective_device_list.as_ref().and_then(|l| l.iota_replica_group_list.as_ref()),
    ];
    for iota in lists.into_iter().flatten() {
        if iota.iota_reshape_dims.is_empty() {
            return Err(format!(
                "[{},{}]<=[] has no reshape dimensions, expected at least one",
                iota.num_replica_groups, iota.num_devices_per_group
            ));
        }
        iota.expand().map_err(|e| e.to_string())?;
    }
    Ok(())
}

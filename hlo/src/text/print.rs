//! The HLO text printer: the new style XLA prints (bare names, untyped operands, `name {`).
//!
//! Each attribute is written when its field differs from what the parser produces for an absent
//! attribute, so that printing a parsed module and parsing it again gives the same module.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::error::PrintError;
use super::literal;
use super::names;
use crate::proto::{
    ConvolutionDimensionNumbers, FftType, FrontendAttributes, HloComputationProto,
    HloInputOutputAliasProto, HloInstructionProto, HloModuleProto, Kind, LayoutProto, LiteralProto,
    OpMetadata, PrimitiveType, ProgramShapeProto, RandomAlgorithm, RandomDistribution, ShapeProto,
    Window, precision_config::Precision, triangular_solve_options::Transpose,
};

/// The most brace pairs one literal may print as.
const MAX_BRACES: usize = 1 << 26;

/// Opcodes whose `dimensions` XLA prints even when empty.
const ALWAYS_DIMENSIONS: &[&str] =
    &["broadcast", "concatenate", "reduce", "reverse", "sort", "transpose"];

/// What to leave out when printing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintOptions {
    /// Write `metadata={...}` (op type, op name, source location). jax's `as_hlo_text()` leaves
    /// it out, so turning this off prints a jax proto exactly as jax prints its text.
    pub metadata: bool,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions { metadata: true }
    }
}

/// Prints a module as HLO text, with everything the text form can hold.
///
/// # Errors
/// A [`PrintError`] naming the computation and instruction when something cannot be written:
/// a dangling id, a missing shape, a name the text cannot hold, a literal that does not fit its
/// shape.
pub fn print_module(m: &HloModuleProto) -> Result<String, PrintError> {
    print_module_with(m, &PrintOptions::default())
}

/// Prints a module as HLO text, leaving out what `options` says.
///
/// # Errors
/// As [`print_module`].
pub fn print_module_with(m: &HloModuleProto, options: &PrintOptions) -> Result<String, PrintError> {
    let unprintable =
        |computation: &str, instruction: &str, message: String| PrintError::Unprintable {
            computation: computation.to_string(),
            instruction: instruction.to_string(),
            message,
        };
    check_name(&m.name).map_err(|why| unprintable("", "", format!("module name {why}")))?;
    let mut computations: BTreeMap<i64, &HloComputationProto> = BTreeMap::new();
    let mut names_seen = BTreeMap::new();
    for c in &m.computations {
        check_name(&c.name)
            .map_err(|why| unprintable(&c.name, "", format!("computation name {why}")))?;
        if computations.insert(c.id, c).is_some() {
            return Err(unprintable(&c.name, "", format!("two computations have id {}", c.id)));
        }
        if names_seen.insert(c.name.as_str(), ()).is_some() {
            return Err(unprintable(&c.name, "", "two computations have this name".into()));
        }
    }
    let entry = m
        .computations
        .iter()
        .find(|c| c.id == m.entry_computation_id)
        .or_else(|| m.computations.iter().find(|c| c.name == m.entry_computation_name))
        .ok_or_else(|| PrintError::NoEntry {
            id: m.entry_computation_id,
            name: m.entry_computation_name.clone(),
        })?;

    let mut out = format!("HloModule {}", name_text(&m.name));
    // A module without a host program shape prints the one the parser would derive, so that
    // printing its parse gives the same text.
    let derived;
    let host_program_shape = match &m.host_program_shape {
        Some(shape) => Some(shape),
        None => {
            derived = m.derived_host_program_shape();
            derived.as_ref()
        }
    };
    if let Some(shape) = host_program_shape {
        out.push_str(", entry_computation_layout={");
        program_shape(&mut out, shape)
            .map_err(|why| unprintable("", "", format!("entry_computation_layout: {why}")))?;
        out.push('}');
    }
    if let Some(alias) =
        m.input_output_alias.as_ref().filter(|a| **a != HloInputOutputAliasProto::default())
    {
        out.push_str(", input_output_alias=");
        input_output_alias(&mut out, alias).map_err(|why| unprintable("", "", why))?;
    }
    if let Some(attrs) = nonempty_attrs(&m.frontend_attributes) {
        out.push_str(", frontend_attributes=");
        frontend_attributes(&mut out, attrs);
    }
    out.push_str("\n\n");
    // The names the parser gives the instructions, one namespace for the module as XLA has it,
    // so that printing a parse prints the same names.
    let mut instruction_names = names::InstructionNames::default();
    for (index, c) in m.computations.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let is_entry = std::ptr::eq(c, entry);
        computation(&mut out, c, is_entry, &computations, &mut instruction_names, options)?;
    }
    out.push('\n');
    Ok(out)
}

/// Why `name` cannot be written as a bare HLO name, if it cannot.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if let Some(c) =
        name.chars().find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(format!("`{name}` has `{c}`, outside [A-Za-z0-9_.-]"));
    }
    Ok(())
}

/// A name as the text writes it: with XLA's `%` when it is a keyword of the text form (`%ROOT`),
/// which XLA's parser and ours read as the name; bare otherwise.
fn name_text(name: &str) -> std::borrow::Cow<'_, str> {
    if names::KEYWORDS.contains(&name) { format!("%{name}").into() } else { name.into() }
}

fn nonempty_attrs(a: &Option<FrontendAttributes>) -> Option<&FrontendAttributes> {
    a.as_ref().filter(|a| !a.map.is_empty())
}

fn join<T>(items: impl IntoIterator<Item = T>, f: impl Fn(T) -> String) -> String {
    items.into_iter().map(f).collect::<Vec<_>>().join(",")
}

fn int_list(v: &[i64]) -> String {
    format!("{{{}}}", join(v, |d| d.to_string()))
}

/// A quoted string with C escapes for quotes, backslashes and control bytes.
fn quoted(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    // Valid UTF-8 is written as is; any other byte as an octal escape.
    let text = String::from_utf8_lossy(bytes);
    if std::str::from_utf8(bytes).is_ok() {
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                    let _ = write!(out, "\\{:03o}", c as u32);
                }
                c => out.push(c),
            }
        }
    } else {
        for &b in bytes {
            match b {
                b'"' => out.push_str("\\\""),
                b'\\' => out.push_str("\\\\"),
                0x20..=0x7e => out.push(b as char),
                _ => {
                    let _ = write!(out, "\\{b:03o}");
                }
            }
        }
    }
    out.push('"');
    out
}

/// An element type XLA's text has no name for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("element type {0} has no text form")]
pub(crate) struct NoTextForm(i32);

pub(crate) fn shape(out: &mut String, s: &ShapeProto) -> Result<(), NoTextForm> {
    match s.element_type() {
        PrimitiveType::Tuple => {
            out.push('(');
            for (i, element) in s.tuple_shapes.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                // XLA marks every fifth element of a long tuple; the parser skips comments.
                if i > 0 && i % 5 == 0 {
                    let _ = write!(out, "/*index={i}*/");
                }
                shape(out, element)?;
            }
            out.push(')');
            Ok(())
        }
        ty => {
            let name = names::type_name(ty).ok_or(NoTextForm(s.element_type))?;
            out.push_str(name);
            out.push('[');
            for (i, d) in s.dimensions.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if s.is_dynamic_dimension.get(i).copied().unwrap_or(false) {
                    out.push_str("<=");
                }
                let _ = write!(out, "{d}");
            }
            out.push(']');
            if let Some(l) = &s.layout
                && (!s.dimensions.is_empty() || *l != LayoutProto::default())
            {
                layout(out, l);
            }
            Ok(())
        }
    }
}

fn layout(out: &mut String, l: &LayoutProto) {
    out.push('{');
    out.push_str(&join(&l.minor_to_major, |d| d.to_string()));
    if !l.tiles.is_empty() || l.element_size_in_bits != 0 || l.memory_space != 0 {
        out.push(':');
        if !l.tiles.is_empty() {
            out.push('T');
            for t in &l.tiles {
                let _ = write!(
                    out,
                    "({})",
                    join(&t.dimensions, |&d| if d == -1 { "*".into() } else { d.to_string() })
                );
            }
        }
        if l.element_size_in_bits != 0 {
            let _ = write!(out, "E({})", l.element_size_in_bits);
        }
        if l.memory_space != 0 {
            let _ = write!(out, "S({})", l.memory_space);
        }
    }
    out.push('}');
}

fn program_shape(out: &mut String, p: &ProgramShapeProto) -> Result<(), String> {
    out.push('(');
    for (i, s) in p.parameters.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if i > 0 && i % 5 == 0 {
            let _ = write!(out, "/*index={i}*/");
        }
        shape(out, s).map_err(|err| err.to_string())?;
    }
    out.push_str(")->");
    shape(out, p.result.as_ref().ok_or("the result shape is missing")?)
        .map_err(|err| err.to_string())
}

fn input_output_alias(out: &mut String, a: &HloInputOutputAliasProto) -> Result<(), String> {
    out.push_str("{ ");
    for (i, e) in a.entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(
            out,
            "{}: ({}, {}",
            int_list(&e.output_shape_index),
            e.parameter_number,
            int_list(&e.parameter_shape_index)
        );
        match Kind::try_from(e.kind) {
            Ok(Kind::UndefinedAlias) => {}
            Ok(Kind::MayAlias) => out.push_str(", may-alias"),
            Ok(Kind::MustAlias) => out.push_str(", must-alias"),
            Err(_) => return Err(format!("alias kind {} is unknown", e.kind)),
        }
        out.push(')');
    }
    out.push_str(" }");
    Ok(())
}

fn frontend_attributes(out: &mut String, a: &FrontendAttributes) {
    out.push('{');
    for (i, (k, v)) in a.map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{}={}", quoted(k.as_bytes()), quoted(v.as_bytes()));
    }
    out.push('}');
}

fn computation(
    out: &mut String,
    c: &HloComputationProto,
    is_entry: bool,
    computations: &BTreeMap<i64, &HloComputationProto>,
    instruction_names: &mut names::InstructionNames,
    options: &PrintOptions,
) -> Result<(), PrintError> {
    let mut by_id: BTreeMap<i64, &HloInstructionProto> = BTreeMap::new();
    let mut names_seen = BTreeMap::new();
    for i in &c.instructions {
        let fail = |message: String| PrintError::Unprintable {
            computation: c.name.clone(),
            instruction: i.name.clone(),
            message,
        };
        check_name(&i.name).map_err(|why| fail(format!("instruction name {why}")))?;
        if by_id.insert(i.id, i).is_some() {
            return Err(fail(format!("two instructions have id {}", i.id)));
        }
        if names_seen.insert(i.name.as_str(), ()).is_some() {
            return Err(fail("two instructions have this name".into()));
        }
    }
    if !by_id.contains_key(&c.root_id) {
        return Err(PrintError::DanglingInstruction {
            computation: c.name.clone(),
            instruction: String::new(),
            role: "root",
            id: c.root_id,
        });
    }
    let printed_names: BTreeMap<i64, String> =
        c.instructions.iter().map(|i| (i.id, instruction_names.unique(&i.name))).collect();
    if is_entry {
        out.push_str("ENTRY ");
    }
    let _ = writeln!(out, "{} {{", name_text(&c.name));
    for i in &c.instructions {
        out.push_str("  ");
        if i.id == c.root_id {
            out.push_str("ROOT ");
        }
        instruction(out, c, i, &by_id, &printed_names, computations, options)?;
        out.push('\n');
    }
    out.push_str("}\n");
    Ok(())
}

fn instruction(
    out: &mut String,
    c: &HloComputationProto,
    i: &HloInstructionProto,
    by_id: &BTreeMap<i64, &HloInstructionProto>,
    printed_names: &BTreeMap<i64, String>,
    computations: &BTreeMap<i64, &HloComputationProto>,
    options: &PrintOptions,
) -> Result<(), PrintError> {
    let fail = |message: String| PrintError::Unprintable {
        computation: c.name.clone(),
        instruction: i.name.clone(),
        message,
    };
    let Some(s) = &i.shape else {
        return Err(PrintError::MissingShape {
            computation: c.name.clone(),
            instruction: i.name.clone(),
        });
    };
    if !names::is_opcode(&i.opcode) {
        return Err(fail(format!("opcode `{}` is unknown", i.opcode)));
    }
    let _ = write!(out, "{} = ", name_text(&printed_names[&i.id]));
    if i.opcode == "constant" {
        // The parser gives a constant XLA's default layout where the text has none (XLA's
        // reader requires it); writing it here keeps printing a fixed point.
        shape(out, &s.with_default_layouts()).map_err(|err| fail(err.to_string()))?;
    } else {
        shape(out, s).map_err(|err| fail(err.to_string()))?;
    }
    let _ = write!(out, " {}(", i.opcode);
    let op = i.opcode.as_str();
    match op {
        "parameter" => {
            let _ = write!(out, "{}", i.parameter_number);
        }
        "constant" => {
            let lit = i.literal.as_ref().ok_or_else(|| fail("constant has no literal".into()))?;
            literal_text(out, lit, s).map_err(fail)?;
        }
        _ => {}
    }
    let operand_name = |id: &i64, role: &'static str| {
        printed_names.get(id).map(|name| name_text(name)).ok_or_else(|| {
            PrintError::DanglingInstruction {
                computation: c.name.clone(),
                instruction: i.name.clone(),
                role,
                id: *id,
            }
        })
    };
    let operands = i
        .operand_ids
        .iter()
        .map(|id| operand_name(id, "operand"))
        .collect::<Result<Vec<_>, _>>()?;
    out.push_str(&operands.join(", "));
    out.push(')');

    let mut attr = |key: &str, value: String| {
        let _ = write!(out, ", {key}={value}");
    };
    if op == "get-tuple-element" || i.tuple_index != 0 {
        attr("index", i.tuple_index.to_string());
    }
    if op == "iota" && i.dimensions.len() == 1 {
        attr("iota_dimension", i.dimensions[0].to_string());
    } else if !i.dimensions.is_empty() || ALWAYS_DIMENSIONS.contains(&op) {
        attr("dimensions", int_list(&i.dimensions));
    }
    if !i.slice_dimensions.is_empty() {
        // As XLA: strides are written only when one of them is not 1.
        let strided = i.slice_dimensions.iter().any(|d| d.stride != 1);
        let one = |d: &crate::proto::hlo_instruction_proto::SliceDimensions| {
            if strided {
                format!("[{}:{}:{}]", d.start, d.limit, d.stride)
            } else {
                format!("[{}:{}]", d.start, d.limit)
            }
        };
        attr(
            "slice",
            format!("{{{}}}", i.slice_dimensions.iter().map(one).collect::<Vec<_>>().join(", ")),
        );
    }
    if let Some(p) = i.padding_config.as_ref().filter(|p| !p.dimensions.is_empty()) {
        // As XLA: interior padding is written for every dimension when any has some.
        let interior = p.dimensions.iter().any(|d| d.interior_padding != 0);
        let one = |d: &crate::proto::padding_config::PaddingConfigDimension| {
            if interior {
                format!("{}_{}_{}", d.edge_padding_low, d.edge_padding_high, d.interior_padding)
            } else {
                format!("{}_{}", d.edge_padding_low, d.edge_padding_high)
            }
        };
        attr("padding", p.dimensions.iter().map(one).collect::<Vec<_>>().join("x"));
    }
    if let Some(w) = i.window.as_ref().filter(|w| !w.dimensions.is_empty()) {
        attr("window", window(w));
    }
    if let Some(d) = i
        .convolution_dimension_numbers
        .as_deref()
        .filter(|d| **d != ConvolutionDimensionNumbers::default())
    {
        attr("dim_labels", dim_labels(d).map_err(fail)?);
    }
    let default_group_count = if op == "convolution" { 1 } else { 0 };
    if i.feature_group_count != default_group_count {
        attr("feature_group_count", i.feature_group_count.to_string());
    }
    if i.batch_group_count != default_group_count {
        attr("batch_group_count", i.batch_group_count.to_string());
    }
    if let Some(d) = &i.dot_dimension_numbers {
        for (key, v) in [
            ("lhs_batch_dims", &d.lhs_batch_dimensions),
            ("lhs_contracting_dims", &d.lhs_contracting_dimensions),
            ("rhs_batch_dims", &d.rhs_batch_dimensions),
            ("rhs_contracting_dims", &d.rhs_contracting_dimensions),
        ] {
            if !v.is_empty() {
                attr(key, int_list(v));
            }
        }
    }
    // All-DEFAULT precisions are what the parser fills in, so XLA (and we) leave them out.
    if let Some(p) =
        i.precision_config.as_ref().filter(|p| p.operand_precision.iter().any(|&v| v != 0))
    {
        let names = p
            .operand_precision
            .iter()
            .map(|&v| match Precision::try_from(v) {
                Ok(Precision::Default) => Ok("default"),
                Ok(Precision::High) => Ok("high"),
                Ok(Precision::Highest) => Ok("highest"),
                Err(_) => Err(fail(format!("operand precision {v} is unknown"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        attr("operand_precision", format!("{{{}}}", names.join(",")));
    }
    if let Some(g) = i.gather_dimension_numbers.as_ref().filter(|g| **g != Default::default()) {
        attr("offset_dims", int_list(&g.offset_dims));
        attr("collapsed_slice_dims", int_list(&g.collapsed_slice_dims));
        attr("start_index_map", int_list(&g.start_index_map));
        if !g.operand_batching_dims.is_empty() {
            attr("operand_batching_dims", int_list(&g.operand_batching_dims));
        }
        if !g.start_indices_batching_dims.is_empty() {
            attr("start_indices_batching_dims", int_list(&g.start_indices_batching_dims));
        }
        if op != "scatter" {
            attr("index_vector_dim", g.index_vector_dim.to_string());
        }
    }
    if !i.gather_slice_sizes.is_empty() {
        attr("slice_sizes", int_list(&i.gather_slice_sizes));
    }
    if let Some(g) = i.scatter_dimension_numbers.as_ref().filter(|g| **g != Default::default()) {
        attr("update_window_dims", int_list(&g.update_window_dims));
        attr("inserted_window_dims", int_list(&g.inserted_window_dims));
        attr("scatter_dims_to_operand_dims", int_list(&g.scatter_dims_to_operand_dims));
        if !g.input_batching_dims.is_empty() {
            attr("input_batching_dims", int_list(&g.input_batching_dims));
        }
        if !g.scatter_indices_batching_dims.is_empty() {
            attr("scatter_indices_batching_dims", int_list(&g.scatter_indices_batching_dims));
        }
        if op == "scatter" {
            attr("index_vector_dim", g.index_vector_dim.to_string());
        }
    }
    if !i.dynamic_slice_sizes.is_empty() {
        attr("dynamic_slice_sizes", int_list(&i.dynamic_slice_sizes));
    }
    for (key, set) in
        [("indices_are_sorted", i.indices_are_sorted), ("unique_indices", i.unique_indices)]
    {
        if set {
            attr(key, "true".into());
        }
    }
    if !i.comparison_direction.is_empty() {
        attr("direction", i.comparison_direction.clone());
    }
    // The type the parser fills in from the operands is left out, as XLA does.
    let operand_type = i
        .operand_ids
        .first()
        .and_then(|id| by_id.get(id))
        .and_then(|o| o.shape.as_ref())
        .map(ShapeProto::element_type);
    let implied =
        operand_type.filter(|_| op == "compare").map(super::parse::default_comparison_type);
    if !i.comparison_type.is_empty() && implied != Some(i.comparison_type.as_str()) {
        attr("type", i.comparison_type.clone());
    }
    if i.is_stable {
        attr("is_stable", "true".into());
    }
    if op == "topk" || i.k != 0 {
        attr("k", i.k.to_string());
    }
    if i.largest {
        attr("largest", "true".into());
    }
    if op == "reduce-precision" || i.exponent_bits != 0 {
        attr("exponent_bits", i.exponent_bits.to_string());
    }
    if op == "reduce-precision" || i.mantissa_bits != 0 {
        attr("mantissa_bits", i.mantissa_bits.to_string());
    }
    if i.epsilon != 0.0 {
        attr("epsilon", literal::format_f32(i.epsilon));
    }
    if i.feature_index != 0 || op.starts_with("batch-norm") {
        attr("feature_index", i.feature_index.to_string());
    }
    if i.distribution != 0 {
        let name = match RandomDistribution::try_from(i.distribution) {
            Ok(RandomDistribution::RngUniform) => "rng_uniform",
            Ok(RandomDistribution::RngNormal) => "rng_normal",
            _ => return Err(fail(format!("rng distribution {} is unknown", i.distribution))),
        };
        attr("distribution", name.into());
    }
    if op == "rng-bit-generator" {
        let name = match RandomAlgorithm::try_from(i.rng_algorithm) {
            Ok(RandomAlgorithm::RngDefault) => "rng_default",
            Ok(RandomAlgorithm::RngThreeFry) => "rng_three_fry",
            Ok(RandomAlgorithm::RngPhilox) => "rng_philox",
            Err(_) => return Err(fail(format!("rng algorithm {} is unknown", i.rng_algorithm))),
        };
        attr("algorithm", name.into());
    }
    if op == "fft" || i.fft_type != 0 {
        let name = match FftType::try_from(i.fft_type) {
            Ok(FftType::Fft) => "FFT",
            Ok(FftType::Ifft) => "IFFT",
            Ok(FftType::Rfft) => "RFFT",
            Ok(FftType::Irfft) => "IRFFT",
            Err(_) => return Err(fail(format!("fft type {} is unknown", i.fft_type))),
        };
        attr("fft_type", name.into());
    }
    if !i.fft_length.is_empty() {
        attr("fft_length", int_list(&i.fft_length));
    }
    if let Some(t) = &i.triangular_solve_options {
        for (key, set) in
            [("left_side", t.left_side), ("lower", t.lower), ("unit_diagonal", t.unit_diagonal)]
        {
            if set {
                attr(key, "true".into());
            }
        }
        if t.transpose_a != 0 {
            let name = match Transpose::try_from(t.transpose_a) {
                Ok(Transpose::NoTranspose) => "NO_TRANSPOSE",
                Ok(Transpose::Transpose) => "TRANSPOSE",
                Ok(Transpose::Adjoint) => "ADJOINT",
                _ => return Err(fail(format!("transpose_a {} is unknown", t.transpose_a))),
            };
            attr("transpose_a", name.into());
        }
    }
    if i.cholesky_options.as_ref().is_some_and(|o| o.lower) {
        if op == "cholesky" {
            attr("lower", "true".into());
        } else {
            return Err(fail("cholesky options on an instruction that is not a cholesky".into()));
        }
    }
    if i.delta != 0 {
        attr("delta", i.delta.to_string());
    }
    if i.channel_id != 0 {
        attr("channel_id", i.channel_id.to_string());
    }
    if let Some(groups) = replica_groups(i) {
        attr("replica_groups", groups);
    }
    for (key, set) in [
        ("use_global_device_ids", i.use_global_device_ids),
        ("constrain_layout", i.constrain_layout),
        ("is_host_transfer", i.is_host_transfer),
        ("custom_call_has_side_effect", i.custom_call_has_side_effect),
        ("is_composite", i.is_composite),
    ] {
        if set {
            attr(key, "true".into());
        }
    }
    if !i.source_target_pairs.is_empty() {
        attr(
            "source_target_pairs",
            format!(
                "{{{}}}",
                join(&i.source_target_pairs, |p| format!("{{{},{}}}", p.source, p.target))
            ),
        );
    }
    if !i.custom_call_target.is_empty() {
        attr("custom_call_target", quoted(i.custom_call_target.as_bytes()));
    }
    if !i.fusion_kind.is_empty() {
        if op != "fusion" {
            return Err(fail("a fusion kind on an instruction that is not a fusion".into()));
        }
        check_name(&i.fusion_kind).map_err(|why| fail(format!("fusion kind {why}")))?;
        attr("kind", i.fusion_kind.clone());
    }
    let called = i
        .called_computation_ids
        .iter()
        .map(|id| {
            computations.get(id).map(|c| name_text(&c.name)).ok_or_else(|| {
                PrintError::DanglingComputation {
                    computation: c.name.clone(),
                    instruction: i.name.clone(),
                    id: *id,
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Any combination without a dedicated spelling (a while with one call, say) is written as
    // `called_computations`, which the parser reads back in the same order.
    let list = |names: &[std::borrow::Cow<'_, str>]| format!("{{{}}}", names.join(", "));
    match (op, &called[..]) {
        (_, []) => {}
        ("while", [body, condition]) => {
            attr("condition", condition.to_string());
            attr("body", body.to_string());
        }
        ("select-and-scatter", [select, scatter]) => {
            attr("select", select.to_string());
            attr("scatter", scatter.to_string());
        }
        ("conditional", [t, f])
            if i.operand_ids
                .first()
                .and_then(|id| by_id.get(id))
                .and_then(|o| o.shape.as_ref())
                .is_some_and(|s| {
                    s.element_type() == PrimitiveType::Pred && s.dimensions.is_empty()
                }) =>
        {
            attr("true_computation", t.to_string());
            attr("false_computation", f.to_string());
        }
        ("conditional", _) => attr("branch_computations", list(&called)),
        ("fusion" | "async-start" | "async-update" | "async-done", [one]) => {
            attr("calls", one.to_string())
        }
        ("fusion" | "async-start" | "async-update" | "async-done", _) => {
            attr("calls", list(&called))
        }
        ("custom-call", _) => attr("called_computations", list(&called)),
        (_, [one]) => attr("to_apply", one.to_string()),
        (_, _) => attr("called_computations", list(&called)),
    }
    if !i.control_predecessor_ids.is_empty() {
        let preds = i
            .control_predecessor_ids
            .iter()
            .map(|id| operand_name(id, "control predecessor"))
            .collect::<Result<Vec<_>, _>>()?;
        attr("control-predecessors", format!("{{{}}}", preds.join(", ")));
    }
    if !i.backend_config.is_empty() {
        attr("backend_config", quoted(&i.backend_config));
    }
    if let Some(a) = nonempty_attrs(&i.frontend_attributes) {
        let mut text = String::new();
        frontend_attributes(&mut text, a);
        attr("frontend_attributes", text);
    }
    if let Some(m) =
        i.metadata.as_deref().filter(|m| options.metadata && **m != OpMetadata::default())
    {
        attr("metadata", metadata(m));
    }
    Ok(())
}

fn window(w: &Window) -> String {
    let each = |f: &dyn Fn(&crate::proto::WindowDimension) -> String| {
        w.dimensions.iter().map(f).collect::<Vec<_>>().join("x")
    };
    let mut parts = vec![format!("size={}", each(&|d| d.size.to_string()))];
    if w.dimensions.iter().any(|d| d.stride != 1) {
        parts.push(format!("stride={}", each(&|d| d.stride.to_string())));
    }
    if w.dimensions.iter().any(|d| d.padding_low != 0 || d.padding_high != 0) {
        parts.push(format!("pad={}", each(&|d| format!("{}_{}", d.padding_low, d.padding_high))));
    }
    if w.dimensions.iter().any(|d| d.base_dilation != 1) {
        parts.push(format!("lhs_dilate={}", each(&|d| d.base_dilation.to_string())));
    }
    if w.dimensions.iter().any(|d| d.window_dilation != 1) {
        parts.push(format!("rhs_dilate={}", each(&|d| d.window_dilation.to_string())));
    }
    if w.dimensions.iter().any(|d| d.window_reversal) {
        parts.push(format!("rhs_reversal={}", each(&|d| u8::from(d.window_reversal).to_string())));
    }
    format!("{{{}}}", parts.join(" "))
}

fn dim_labels(d: &ConvolutionDimensionNumbers) -> Result<String, String> {
    let spatial = d.input_spatial_dimensions.len();
    if d.kernel_spatial_dimensions.len() != spatial || d.output_spatial_dimensions.len() != spatial
    {
        return Err(
            "convolution input, kernel and output have different numbers of spatial dimensions"
                .into(),
        );
    }
    if spatial > 10 {
        return Err(format!("dim_labels can name at most 10 spatial dimensions, found {spatial}"));
    }
    let labels = |a: (char, i64), b: (char, i64), spatial_dims: &[i64]| -> Result<String, String> {
        let rank = spatial + 2;
        let mut chars = vec![None; rank];
        let mut place = |at: i64, c: char| -> Result<(), String> {
            let slot = usize::try_from(at)
                .ok()
                .and_then(|at| chars.get_mut(at))
                .ok_or_else(|| format!("dimension {at} is outside rank {rank}"))?;
            if slot.replace(c).is_some() {
                return Err(format!("dimension {at} has two roles"));
            }
            Ok(())
        };
        place(a.1, a.0)?;
        place(b.1, b.0)?;
        for (index, &at) in spatial_dims.iter().enumerate() {
            place(at, char::from_digit(index as u32, 10).expect("at most 10 spatial dimensions"))?;
        }
        Ok(chars.into_iter().map(|c| c.expect("every slot of a permutation is filled")).collect())
    };
    let input = labels(
        ('b', d.input_batch_dimension),
        ('f', d.input_feature_dimension),
        &d.input_spatial_dimensions,
    )?;
    let kernel = labels(
        ('i', d.kernel_input_feature_dimension),
        ('o', d.kernel_output_feature_dimension),
        &d.kernel_spatial_dimensions,
    )?;
    let output = labels(
        ('b', d.output_batch_dimension),
        ('f', d.output_feature_dimension),
        &d.output_spatial_dimensions,
    )?;
    Ok(format!("{input}_{kernel}->{output}"))
}

/// The replica groups in the text form of whichever field holds them, if any.
fn replica_groups(i: &HloInstructionProto) -> Option<String> {
    let iota = i
        .iota_replica_group_list
        .as_deref()
        .or(i.collective_device_list.as_ref().and_then(|l| l.iota_replica_group_list.as_ref()));
    if let Some(iota) = iota {
        let mut text = format!(
            "[{},{}]<=[{}]",
            iota.num_replica_groups,
            iota.num_devices_per_group,
            join(&iota.iota_reshape_dims, |d| d.to_string())
        );
        let identity = iota.iota_transpose_perm.iter().enumerate().all(|(k, &p)| p as usize == k);
        if !identity || iota.iota_transpose_perm.len() != iota.iota_reshape_dims.len() {
            let _ = write!(text, "T({})", join(&iota.iota_transpose_perm, |p| p.to_string()));
        }
        return Some(text);
    }
    let explicit = i
        .collective_device_list
        .as_ref()
        .map(|l| &l.replica_groups)
        .filter(|g| !g.is_empty())
        .unwrap_or(&i.replica_groups);
    if explicit.is_empty() {
        return None;
    }
    Some(format!("{{{}}}", join(explicit, |g| int_list(&g.replica_ids))))
}

fn metadata(m: &OpMetadata) -> String {
    let mut parts = Vec::new();
    if !m.op_type.is_empty() {
        parts.push(format!("op_type={}", quoted(m.op_type.as_bytes())));
    }
    if !m.op_name.is_empty() {
        parts.push(format!("op_name={}", quoted(m.op_name.as_bytes())));
    }
    if !m.source_file.is_empty() {
        parts.push(format!("source_file={}", quoted(m.source_file.as_bytes())));
    }
    if m.source_line != 0 {
        parts.push(format!("source_line={}", m.source_line));
    }
    format!("{{{}}}", parts.join(" "))
}

/// Writes a literal's value: a scalar, nested braces for an array, parentheses for a tuple.
fn literal_text(
    out: &mut String,
    lit: &LiteralProto,
    instruction_shape: &ShapeProto,
) -> Result<(), String> {
    let s = lit.shape.as_ref().unwrap_or(instruction_shape);
    if s.element_type() == PrimitiveType::Tuple {
        if lit.tuple_literals.len() != s.tuple_shapes.len() {
            return Err(format!(
                "tuple literal has {} elements, its shape {}",
                lit.tuple_literals.len(),
                s.tuple_shapes.len()
            ));
        }
        out.push('(');
        for (k, (element, element_shape)) in
            lit.tuple_literals.iter().zip(&s.tuple_shapes).enumerate()
        {
            if k > 0 {
                out.push_str(", ");
            }
            literal_text(out, element, element_shape)?;
        }
        out.push(')');
        return Ok(());
    }
    let mut elements = literal::elements(s, lit).map_err(|err| err.to_string())?;
    // XLA writes a scalar pred as true/false and the elements of a pred array as 1/0.
    if s.element_type() == PrimitiveType::Pred && !s.dimensions.is_empty() {
        for e in &mut elements {
            *e = if e == "true" { "1".into() } else { "0".into() };
        }
    }
    let dims: Vec<usize> = s.dimensions.iter().map(|&d| d as usize).collect();
    // With a zero dimension there are no elements but there may be many empty braces (f32[N,0]);
    // refuse to write more braces than any real module has.
    let mut braces = 0usize;
    let mut at_level = 1usize;
    for &d in &dims {
        braces = braces.saturating_add(at_level);
        at_level = at_level.saturating_mul(d);
    }
    if braces > MAX_BRACES {
        return Err(format!(
            "the literal would need {braces} pairs of braces, more than {MAX_BRACES}"
        ));
    }
    let mut next = elements.iter();
    // As XLA: `{1, 2}` for one dimension, `{ { 1, 2 }, { 3, 4 } }` (spaced at every level) for
    // more.
    nest(out, &dims, dims.len() > 1, &mut next);
    Ok(())
}

fn nest<'a>(
    out: &mut String,
    dims: &[usize],
    spaced: bool,
    next: &mut impl Iterator<Item = &'a String>,
) {
    let Some((&first, inner)) = dims.split_first() else {
        if let Some(e) = next.next() {
            out.push_str(e);
        }
        return;
    };
    if first == 0 {
        out.push_str("{}");
        return;
    }
    out.push('{');
    if spaced {
        out.push(' ');
    }
    for k in 0..first {
        if k > 0 {
            out.push_str(", ");
        }
        nest(out, inner, spaced, next);
    }
    if spaced {
        out.push(' ');
    }
    out.push('}');
}

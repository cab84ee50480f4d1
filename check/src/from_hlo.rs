//! The producers' metaneff of an XLA `HloModuleProto` (`nrtsim metaneff from-hlo`).
//!
//! A framework that compiles a model to a NEFF writes the metaneff beside it from the same module:
//! transformers-neuronx's `hlo2metaneff` (public, `src/transformers_neuronx/compiler.py` of
//! `aws-neuron/transformers-neuronx`) is the reference followed here. Its rules:
//! - one input tensor per parameter of `host_program_shape`, in parameter order, named
//!   `input{i}` by parameter number;
//! - one output tensor per element of the result when the result is a tuple, else one for the
//!   result, named `output{j}` (`output0` for a single result);
//! - shapes are the HLO dimensions; the dtype comes from the producer's XLA type table
//!   ([`Producer::TransformersNeuronx`] in abi, so PRED is UINT8 and F8E4M3FN is INT8);
//! - every `input_output_alias` entry gives `output_aliases_to[output_shape_index[0]] =
//!   parameter_number`; only top-level parameters may be aliased.
//!
//! What this module adds to it, and why:
//! - **Weights and states are chosen by the caller** ([`FromHloOptions`]): a parameter becomes
//!   `INPUT_WEIGHT` or `INPUT_STATE` with a `checkpoint_key` (by default the parameter
//!   instruction's name), every other parameter `USER_INPUT`. `hlo2metaneff` leaves `type`
//!   unset (`UNDEFINED_TYPE`), which the binding layer treats as an unvalidated user input; a
//!   typed `USER_INPUT` gets libtorchneuron's checks.
//! - **The order stays the parameter order**, because the metaneff's input `i` is HLO parameter
//!   `i` (the alias values are parameter numbers, and `nrtsim check` matches them by index). The
//!   binding layer's order rule (user inputs, then states, then weights) is therefore a rule on
//!   the choice: a choice that breaks it is refused, naming the parameter, rather than reordered.
//! - **The module travels in `serialized_graph_def`**, as torch-neuronx stores it: the bytes as
//!   given for a binary module, the encoding of the parsed module for HLO text (whose parser
//!   derives the program shape XLA's reader requires).
//! - **Every way a module can fail the rules is a [`FromHloError`]** naming the parameter,
//!   result or alias: `hlo2metaneff` asserts or raises a `KeyError` in those places.
//! - **Deterministic:** the metaneff is written by abi's canonical encoder.
//!
//! One table difference: transformers-neuronx's own table has no F8E5M2 row (such a module
//! fails there); abi's column gives it INT8, as F8E4M3FN, by the rule that table states for fp8
//! (the runtime treats fp8 storage as int8), so the metaneff binds to the NEFF the compile target
//! writes, whose 8-bit float variables are all `int8` as neuronx-cc's are.

use std::fmt;
use std::str::FromStr;

use abi::dtype::{Producer, XlaPrimitiveType};
use abi::metaneff::meta_tensor::Type as TensorType;
use abi::metaneff::{MetaNeff, MetaTensor};
use hlo::proto::{HloModuleProto, PrimitiveType, ShapeProto};

/// Which parameter a `--weight`/`--state` choice names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParameterRef {
    /// By parameter number.
    Number(usize),
    /// By the name of the entry computation's parameter instruction (e.g. `w.1`).
    Name(String),
}

impl fmt::Display for ParameterRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParameterRef::Number(number) => write!(f, "{number}"),
            ParameterRef::Name(name) => write!(f, "{name:?}"),
        }
    }
}

/// One parameter chosen as a weight or a state, with its checkpoint key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParameterChoice {
    /// The parameter.
    pub parameter: ParameterRef,
    /// The `checkpoint_key`; `None` for the parameter instruction's name.
    pub key: Option<String>,
}

/// Why a `PARAM[=KEY]` choice does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParameterChoiceError {
    /// Nothing before the `=` (or nothing at all).
    #[error("{text:?}: expected PARAM[=KEY], a parameter number or name, got an empty PARAM")]
    EmptyParameter {
        /// The text given.
        text: String,
    },
    /// An `=` with nothing after it.
    #[error("{text:?}: expected PARAM=KEY with a non-empty KEY, or PARAM alone")]
    EmptyKey {
        /// The text given.
        text: String,
    },
}

impl FromStr for ParameterChoice {
    type Err = ParameterChoiceError;

    /// `PARAM` or `PARAM=KEY`: PARAM is a parameter number when it is all digits, else a
    /// parameter instruction's name; KEY is everything after the first `=`.
    fn from_str(text: &str) -> Result<ParameterChoice, ParameterChoiceError> {
        let (parameter, key) = match text.split_once('=') {
            Some((_, "")) => return Err(ParameterChoiceError::EmptyKey { text: text.to_owned() }),
            Some((parameter, key)) => (parameter, Some(key.to_owned())),
            None => (text, None),
        };
        if parameter.is_empty() {
            return Err(ParameterChoiceError::EmptyParameter { text: text.to_owned() });
        }
        let parameter = match parameter.parse::<usize>() {
            Ok(number) if parameter.bytes().all(|b| b.is_ascii_digit()) => {
                ParameterRef::Number(number)
            }
            _ => ParameterRef::Name(parameter.to_owned()),
        };
        Ok(ParameterChoice { parameter, key })
    }
}

/// Which parameters are weights and which are states (every other one is a user input), and
/// the count limits the module is read under.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FromHloOptions {
    /// Parameters that become `INPUT_WEIGHT`.
    pub weights: Vec<ParameterChoice>,
    /// Parameters that become `INPUT_STATE`.
    pub states: Vec<ParameterChoice>,
    /// The module's computations and instructions ([`hlo::LoadLimits::default`] by default);
    /// a module past them is [`FromHloError::Load`].
    pub limits: hlo::LoadLimits,
}

/// The role of an input in the metaneff, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// `USER_INPUT`.
    User,
    /// `INPUT_STATE`.
    State,
    /// `INPUT_WEIGHT`.
    Weight,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::User => "user input",
            Role::State => "state",
            Role::Weight => "weight",
        }
    }

    fn tensor_type(self) -> TensorType {
        match self {
            Role::User => TensorType::UserInput,
            Role::State => TensorType::InputState,
            Role::Weight => TensorType::InputWeight,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a module has no producers' metaneff.
#[derive(Debug, thiserror::Error)]
pub enum FromHloError {
    /// The bytes are neither a binary `HloModuleProto` nor HLO text.
    #[error("{0}")]
    Load(#[from] hlo::LoadError),
    /// The module is structurally invalid.
    #[error("invalid module: {0}")]
    Invalid(#[from] hlo::ValidateError),
    /// A binary module without `host_program_shape`.
    #[error(
        "the module has no host_program_shape, expected one: XLA writes it into every module it \
         serializes (jax's `as_serialized_hlo_module_proto()` does); for a module made another \
         way, `nrtsim hlo print MODULE -o m.hlo` then `nrtsim hlo encode m.hlo -o MODULE.pb` adds \
         it"
    )]
    NoProgramShape,
    /// The program shape has no result.
    #[error("the module's host_program_shape has no result, expected the entry's result shape")]
    NoResult,
    /// The program shape and the entry computation disagree on the parameters.
    #[error(
        "the host_program_shape has {program_shape} parameter(s) and the entry computation \
         `{entry}` has {entry_parameters}, expected the same number"
    )]
    ParameterCountDisagrees {
        /// Parameters in `host_program_shape`.
        program_shape: usize,
        /// The entry computation's name.
        entry: String,
        /// Its parameter instructions.
        entry_parameters: usize,
    },
    /// A parameter whose shape is a tuple.
    #[error(
        "parameter {number} `{name}` is a tuple, expected an array: a metaneff input is one \
         tensor, so tuple parameters must be flattened into one parameter per element"
    )]
    TupleParameter {
        /// The parameter number.
        number: usize,
        /// The parameter instruction's name.
        name: String,
    },
    /// A tuple element of the result that is itself a tuple.
    #[error(
        "result element {index} is a tuple, expected an array: nested tuple results have no metaneff outputs"
    )]
    NestedTupleResult {
        /// The element's index in the result tuple.
        index: usize,
    },
    /// An element type with no metaneff DataType.
    #[error(
        "{what} has element type {element_type}, which has no metaneff dtype, expected one of {expected}"
    )]
    UnsupportedElementType {
        /// The parameter or result, e.g. `parameter 1 \`w.1\``.
        what: String,
        /// The XLA type name (or its number when the schema has none).
        element_type: String,
        /// The XLA types with a metaneff dtype.
        expected: String,
    },
    /// An alias whose parameter is not top-level.
    #[error(
        "input_output_alias entry {entry} aliases parameter {parameter} at shape index \
         {parameter_shape_index:?}, expected a whole top-level parameter (shape index {{}})"
    )]
    AliasIntoTupleParameter {
        /// The entry's index in `input_output_alias.entries`.
        entry: usize,
        /// Its `parameter_number`.
        parameter: i64,
        /// Its `parameter_shape_index`.
        parameter_shape_index: Vec<i64>,
    },
    /// An alias whose parameter number is no parameter.
    #[error(
        "input_output_alias entry {entry} names parameter {parameter}, expected one of the module's \
         {n_parameters} parameter(s)"
    )]
    AliasParameterOutOfRange {
        /// The entry's index.
        entry: usize,
        /// Its `parameter_number`.
        parameter: i64,
        /// The parameters the module has.
        n_parameters: usize,
    },
    /// An alias whose output index names no output.
    #[error(
        "input_output_alias entry {entry} names output shape index {output_shape_index:?}, \
         expected {expected}"
    )]
    AliasOutputOutOfRange {
        /// The entry's index.
        entry: usize,
        /// Its `output_shape_index`.
        output_shape_index: Vec<i64>,
        /// What fits this result.
        expected: String,
    },
    /// Two alias entries for one output.
    #[error(
        "input_output_alias aliases output {output} twice, expected at most one entry per output"
    )]
    DuplicateAlias {
        /// The output index.
        output: usize,
    },
    /// A choice names a parameter the module does not have.
    #[error(
        "--{role_flag} {parameter}: no such parameter, expected a number below {n_parameters} or one of the names {names:?}"
    )]
    UnknownParameter {
        /// `weight` or `state`.
        role_flag: &'static str,
        /// What was given.
        parameter: ParameterRef,
        /// The parameters the module has.
        n_parameters: usize,
        /// Their instruction names, by number.
        names: Vec<String>,
    },
    /// One parameter chosen twice.
    #[error(
        "parameter {number} `{name}` is chosen as a {first} and again as a {second}, expected one choice per parameter"
    )]
    ChosenTwice {
        /// The parameter number.
        number: usize,
        /// Its name.
        name: String,
        /// The first role.
        first: Role,
        /// The second.
        second: Role,
    },
    /// Two weights or states with one checkpoint key.
    #[error(
        "parameters {first} and {second} both have checkpoint_key {key:?}, expected one tensor per key"
    )]
    DuplicateKey {
        /// The key.
        key: String,
        /// The first parameter number.
        first: usize,
        /// The second.
        second: usize,
    },
    /// A choice that puts a parameter of a later role before one of an earlier role.
    #[error(
        "parameter {number} `{name}` is a {role} after the {later} parameter {after}, expected the \
         parameters in the order user inputs, states, weights (metaneff input i is HLO parameter \
         i, so reorder the function's arguments)"
    )]
    InputOrder {
        /// The out-of-order parameter.
        number: usize,
        /// Its name.
        name: String,
        /// Its role.
        role: Role,
        /// The earlier parameter of a later role.
        after: usize,
        /// That parameter's role.
        later: Role,
    },
}

/// The producers' metaneff of a module, encoded by abi's canonical encoder.
///
/// `module` is a binary `HloModuleProto` or HLO text ([`hlo::load_module`] tells them apart).
///
/// # Errors
/// [`FromHloError`] for a module that does not load or validate, has no program shape, a tuple
/// parameter, a nested tuple result, an element type without a metaneff dtype, an alias the
/// metaneff cannot say, or for choices that name no parameter, one parameter twice, one key twice
/// or break the input order.
pub fn metaneff_from_hlo(module: &[u8], options: &FromHloOptions) -> Result<Vec<u8>, FromHloError> {
    Ok(abi::metaneff::encode(&metaneff_message_from_hlo(module, options)?))
}

/// [`metaneff_from_hlo`] as the prost message.
///
/// # Errors
/// As [`metaneff_from_hlo`].
pub fn metaneff_message_from_hlo(
    module: &[u8],
    options: &FromHloOptions,
) -> Result<MetaNeff, FromHloError> {
    let parsed = hlo::load_module_with_limits(module, &options.limits)?;
    hlo::validate(&parsed)?;
    let graph = if hlo::is_text(module) { hlo::encode_module(&parsed) } else { module.to_vec() };
    let program_shape = parsed.host_program_shape.as_ref().ok_or(FromHloError::NoProgramShape)?;
    let result = program_shape.result.as_ref().ok_or(FromHloError::NoResult)?;
    let names = parameter_names(&parsed, program_shape.parameters.len())?;
    let roles = roles(options, &names)?;

    let is_tuple = result.element_type() == PrimitiveType::Tuple;
    let result_shapes =
        if is_tuple { result.tuple_shapes.as_slice() } else { std::slice::from_ref(result) };
    let mut output_aliases_to = std::collections::BTreeMap::new();
    let entries =
        parsed.input_output_alias.as_ref().map(|a| a.entries.as_slice()).unwrap_or_default();
    for (entry_index, entry) in entries.iter().enumerate() {
        if !entry.parameter_shape_index.is_empty() {
            return Err(FromHloError::AliasIntoTupleParameter {
                entry: entry_index,
                parameter: entry.parameter_number,
                parameter_shape_index: entry.parameter_shape_index.clone(),
            });
        }
        if !usize::try_from(entry.parameter_number).is_ok_and(|p| p < names.len()) {
            return Err(FromHloError::AliasParameterOutOfRange {
                entry: entry_index,
                parameter: entry.parameter_number,
                n_parameters: names.len(),
            });
        }
        let output = alias_output(&entry.output_shape_index, is_tuple, result_shapes.len())
            .ok_or_else(|| FromHloError::AliasOutputOutOfRange {
                entry: entry_index,
                output_shape_index: entry.output_shape_index.clone(),
                expected: if is_tuple {
                    format!("{{j}} with j below the result's {} element(s)", result_shapes.len())
                } else {
                    "{} (the result is not a tuple)".to_owned()
                },
            })?;
        if output_aliases_to.insert(output as i64, entry.parameter_number).is_some() {
            return Err(FromHloError::DuplicateAlias { output });
        }
    }

    let mut input_tensors = Vec::with_capacity(names.len());
    for (number, (shape, name)) in program_shape.parameters.iter().zip(&names).enumerate() {
        if shape.element_type() == PrimitiveType::Tuple {
            return Err(FromHloError::TupleParameter { number, name: name.clone() });
        }
        let what = format!("parameter {number} `{name}`");
        let (role, key) = &roles[number];
        input_tensors.push(MetaTensor {
            r#type: role.tensor_type() as i32,
            checkpoint_key: key.as_ref().map(|key| key.as_bytes().to_vec().into()),
            ..tensor(format!("input{number}"), shape, &what)?
        });
    }

    let mut output_tensors = Vec::with_capacity(result_shapes.len());
    for (index, shape) in result_shapes.iter().enumerate() {
        if shape.element_type() == PrimitiveType::Tuple {
            return Err(FromHloError::NestedTupleResult { index });
        }
        let what =
            if is_tuple { format!("result element {index}") } else { "the result".to_owned() };
        output_tensors.push(tensor(format!("output{index}"), shape, &what)?);
    }

    Ok(MetaNeff {
        input_tensors,
        output_tensors,
        serialized_graph_def: graph.into(),
        output_aliases_to,
        ..MetaNeff::default()
    })
}

/// The output an alias's `output_shape_index` names: `{j}` of a tuple result, `{}` of a single
/// one (`hlo2metaneff` reads index 0 only, which a single result does not have).
fn alias_output(index: &[i64], is_tuple: bool, n_outputs: usize) -> Option<usize> {
    match (index, is_tuple) {
        ([], false) => Some(0),
        ([j], true) => usize::try_from(*j).ok().filter(|&j| j < n_outputs),
        _ => None,
    }
}

/// One metaneff tensor of an array shape.
fn tensor(name: String, shape: &ShapeProto, what: &str) -> Result<MetaTensor, FromHloError> {
    let element_type = PrimitiveType::try_from(shape.element_type)
        .map_or_else(|_| format!("number {}", shape.element_type), |t| t.as_str_name().to_owned());
    let xla_type = XlaPrimitiveType::from_name(&element_type).map_err(|_| {
        FromHloError::UnsupportedElementType {
            what: what.to_owned(),
            element_type: element_type.clone(),
            expected: XlaPrimitiveType::ALL.iter().map(|t| t.name()).collect::<Vec<_>>().join(", "),
        }
    })?;
    Ok(MetaTensor {
        name: name.into_bytes().into(),
        shape: shape.dimensions.clone(),
        data_type: Producer::TransformersNeuronx.data_type_of(xla_type) as i32,
        ..MetaTensor::default()
    })
}

/// The entry computation's parameter instruction names, by parameter number.
fn parameter_names(
    module: &HloModuleProto,
    n_parameters: usize,
) -> Result<Vec<String>, FromHloError> {
    // `hlo::validate` has checked that the entry exists and numbers its parameters 0..n.
    let entry =
        module.computations.iter().find(|c| c.id == module.entry_computation_id).ok_or_else(
            || FromHloError::ParameterCountDisagrees {
                program_shape: n_parameters,
                entry: module.entry_computation_name.clone(),
                entry_parameters: 0,
            },
        )?;
    let mut parameters: Vec<(i64, &str)> = entry
        .instructions
        .iter()
        .filter(|i| i.opcode == "parameter")
        .map(|i| (i.parameter_number, i.name.as_str()))
        .collect();
    parameters.sort_unstable();
    if parameters.len() != n_parameters
        || !parameters.iter().map(|(number, _)| *number).eq(0..n_parameters as i64)
    {
        return Err(FromHloError::ParameterCountDisagrees {
            program_shape: n_parameters,
            entry: entry.name.clone(),
            entry_parameters: parameters.len(),
        });
    }
    Ok(parameters.into_iter().map(|(_, name)| name.to_owned()).collect())
}

/// Each parameter's role and checkpoint key, from the choices.
fn roles(
    options: &FromHloOptions,
    names: &[String],
) -> Result<Vec<(Role, Option<String>)>, FromHloError> {
    let mut roles: Vec<(Role, Option<String>)> = vec![(Role::User, None); names.len()];
    let mut chosen = vec![false; names.len()];
    for (role, flag, choices) in
        [(Role::State, "state", &options.states), (Role::Weight, "weight", &options.weights)]
    {
        for choice in choices {
            let number = match &choice.parameter {
                ParameterRef::Number(number) => Some(*number).filter(|&n| n < names.len()),
                ParameterRef::Name(name) => names.iter().position(|n| n == name),
            }
            .ok_or_else(|| FromHloError::UnknownParameter {
                role_flag: flag,
                parameter: choice.parameter.clone(),
                n_parameters: names.len(),
                names: names.to_vec(),
            })?;
            if chosen[number] {
                return Err(FromHloError::ChosenTwice {
                    number,
                    name: names[number].clone(),
                    first: roles[number].0,
                    second: role,
                });
            }
            chosen[number] = true;
            let key = choice.key.clone().unwrap_or_else(|| names[number].clone());
            roles[number] = (role, Some(key));
        }
    }
    let mut keys = std::collections::BTreeMap::new();
    for (number, (_, key)) in roles.iter().enumerate() {
        if let Some(key) = key {
            if let Some(first) = keys.insert(key.clone(), number) {
                return Err(FromHloError::DuplicateKey { key: key.clone(), first, second: number });
            }
        }
    }
    // The latest parameter of the highest role so far; a lower role after it breaks the order.
    let mut highest: Option<(Role, usize)> = None;
    for (number, (role, _)) in roles.iter().enumerate() {
        match highest {
            Some((later, after)) if *role < later => {
                return Err(FromHloError::InputOrder {
                    number,
                    name: names[number].clone(),
                    role: *role,
                    after,
                    later,
                });
            }
            Some((latest, _)) if *role == latest => {}
            _ => highest = Some((*role, number)),
        }
    }
    Ok(roles)
}

#[cfg(test)]
mod tests {
    use abi::metaneff::meta_tensor::DataType;

    use super::*;

    /// XLA's element types have one numbering, the `PrimitiveType` generated from hlo's proto.
    /// The producers' types (`abi`, which knows no proto) are joined to it by name, so every
    /// name must be one of its names; the interpreter's `ElementType` is numbered by it, so a
    /// type both know must have the same number under the same name.
    #[test]
    fn the_producers_xla_types_are_named_as_the_proto_names_them() {
        for &xla_type in XlaPrimitiveType::ALL {
            let proto = PrimitiveType::from_str_name(xla_type.name())
                .unwrap_or_else(|| panic!("{xla_type} is not a PrimitiveType name"));
            if let Some(interpreted) = hlo::dtype::ElementType::from_primitive(proto as i32) {
                assert_eq!(interpreted.name().to_uppercase(), xla_type.name(), "{xla_type}");
            }
        }
    }

    /// The metaneff of HLO text under `options`.
    fn metaneff(text: &str, options: &FromHloOptions) -> MetaNeff {
        metaneff_message_from_hlo(text.as_bytes(), options)
            .unwrap_or_else(|error| panic!("from_hlo failed: {error}\n{text}"))
    }

    /// The error for HLO text under `options`.
    fn error(text: &str, options: &FromHloOptions) -> FromHloError {
        match metaneff_message_from_hlo(text.as_bytes(), options) {
            Ok(meta) => panic!("expected an error, got {meta:?}"),
            Err(error) => error,
        }
    }

    fn choices(texts: &[&str]) -> Vec<ParameterChoice> {
        texts.iter().map(|t| t.parse().unwrap()).collect()
    }

    fn options(weights: &[&str], states: &[&str]) -> FromHloOptions {
        FromHloOptions { weights: choices(weights), states: choices(states), ..Default::default() }
    }

    /// A tensor as (name, shape, data_type, type, checkpoint_key).
    type Summary = (String, Vec<i64>, i32, i32, Option<String>);

    fn summary(tensors: &[MetaTensor]) -> Vec<Summary> {
        tensors
            .iter()
            .map(|t| {
                (
                    String::from_utf8(t.name.to_vec()).unwrap(),
                    t.shape.clone(),
                    t.data_type,
                    t.r#type,
                    t.checkpoint_key.as_ref().map(|k| String::from_utf8(k.to_vec()).unwrap()),
                )
            })
            .collect()
    }

    fn user(name: &str, shape: &[i64], dtype: DataType) -> Summary {
        (name.to_owned(), shape.to_vec(), dtype as i32, TensorType::UserInput as i32, None)
    }

    fn output(name: &str, shape: &[i64], dtype: DataType) -> Summary {
        (name.to_owned(), shape.to_vec(), dtype as i32, 0, None)
    }

    const MLP: &str = "HloModule mlp

ENTRY main {
  x.1 = f32[2,3] parameter(0)
  w.1 = f32[3,4] parameter(1)
  b.1 = f32[4] parameter(2)
  d = f32[2,4] dot(x.1, w.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[2,4] broadcast(b.1), dimensions={1}
  ROOT s = f32[2,4] add(d, bb)
}
";

    #[test]
    fn parameters_are_inputs_by_number_and_a_single_result_is_output0() {
        let meta = metaneff(MLP, &FromHloOptions::default());
        assert_eq!(
            summary(&meta.input_tensors),
            [
                user("input0", &[2, 3], DataType::Float),
                user("input1", &[3, 4], DataType::Float),
                user("input2", &[4], DataType::Float),
            ]
        );
        assert_eq!(summary(&meta.output_tensors), [output("output0", &[2, 4], DataType::Float)]);
        assert!(meta.output_aliases_to.is_empty());
        assert_eq!((meta.num_user_inputs, meta.num_states, meta.num_weights), (0, 0, 0));
    }

    #[test]
    fn the_element_types_follow_the_transformers_neuronx_table() {
        // transformers-neuronx's table: PRED→UINT8, U16→UINT16, U32→INT32, U64→INT64,
        // F8E4M3FN→INT8, BF16→BFLOAT16, F16→FLOAT16, F64→DOUBLE, S8→INT8, S64→INT64.
        let text = "HloModule types

ENTRY main {
  a = pred[2] parameter(0)
  b = u16[3] parameter(1)
  c = f8e4m3fn[4] parameter(2)
  d = u32[] parameter(3)
  e = u64[1] parameter(4)
  f = bf16[2,2] parameter(5)
  g = f16[5] parameter(6)
  h = f64[6] parameter(7)
  i = s8[7] parameter(8)
  j = s64[8] parameter(9)
  k = u8[9] parameter(10)
  ROOT t = (pred[2], u16[3]) tuple(a, b)
}
";
        let meta = metaneff(text, &FromHloOptions::default());
        let dtypes: Vec<i32> = meta.input_tensors.iter().map(|t| t.data_type).collect();
        let expected = [
            DataType::Uint8,
            DataType::Uint16,
            DataType::Int8,
            DataType::Int32,
            DataType::Int64,
            DataType::Bfloat16,
            DataType::Float16,
            DataType::Double,
            DataType::Int8,
            DataType::Int64,
            DataType::Uint8,
        ];
        assert_eq!(dtypes, expected.map(|d| d as i32));
        assert_eq!(meta.input_tensors[3].shape, Vec::<i64>::new(), "a scalar has no dimensions");
        assert_eq!(
            summary(&meta.output_tensors),
            [output("output0", &[2], DataType::Uint8), output("output1", &[3], DataType::Uint16)]
        );
    }

    #[test]
    fn a_tuple_result_gives_one_output_per_element_and_aliases_by_element() {
        let text = "HloModule step, input_output_alias={ {1}: (1, {}, may-alias) }

ENTRY main {
  x = f32[4] parameter(0)
  state = s32[2] parameter(1)
  one = s32[] constant(1)
  ones = s32[2] broadcast(one), dimensions={}
  next = s32[2] add(state, ones)
  ROOT t = (f32[4], s32[2]) tuple(x, next)
}
";
        let meta = metaneff(text, &options(&[], &["1=cache"]));
        assert_eq!(
            summary(&meta.output_tensors),
            [output("output0", &[4], DataType::Float), output("output1", &[2], DataType::Int32)]
        );
        assert_eq!(meta.output_aliases_to.into_iter().collect::<Vec<_>>(), [(1, 1)]);
        assert_eq!(
            summary(&meta.input_tensors),
            [
                user("input0", &[4], DataType::Float),
                (
                    "input1".to_owned(),
                    vec![2],
                    DataType::Int32 as i32,
                    TensorType::InputState as i32,
                    Some("cache".to_owned())
                ),
            ]
        );
    }

    #[test]
    fn an_alias_of_a_single_result_is_output_0() {
        let text = "HloModule inplace, input_output_alias={ {}: (0, {}, must-alias) }

ENTRY main {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}
";
        let meta = metaneff(text, &FromHloOptions::default());
        assert_eq!(meta.output_aliases_to.into_iter().collect::<Vec<_>>(), [(0, 0)]);
    }

    #[test]
    fn weights_and_states_get_their_keys_by_number_or_by_name() {
        let text = "HloModule mixed

ENTRY main {
  x.1 = f32[2] parameter(0)
  kv.1 = f32[2] parameter(1)
  w.1 = f32[2] parameter(2)
  b.1 = f32[2] parameter(3)
  s = f32[2] add(x.1, kv.1)
  m = f32[2] multiply(s, w.1)
  ROOT r = f32[2] add(m, b.1)
}
";
        // The state by name with the default key, the weights by number and by name.
        let meta = metaneff(text, &options(&["2=layer.weight", "b.1"], &["kv.1"]));
        let kinds: Vec<(i32, Option<String>)> = summary(&meta.input_tensors)
            .into_iter()
            .map(|(_, _, _, kind, key)| (kind, key))
            .collect();
        assert_eq!(
            kinds,
            [
                (TensorType::UserInput as i32, None),
                (TensorType::InputState as i32, Some("kv.1".to_owned())),
                (TensorType::InputWeight as i32, Some("layer.weight".to_owned())),
                (TensorType::InputWeight as i32, Some("b.1".to_owned())),
            ]
        );
        let names: Vec<&[u8]> = meta.input_tensors.iter().map(|t| &t.name[..]).collect();
        assert_eq!(names, [b"input0", b"input1", b"input2", b"input3"]);
    }

    #[test]
    fn the_graph_is_the_binary_module_as_given_or_the_encoded_text() {
        let parsed = hlo::text::parse_module(MLP).unwrap();
        let binary = hlo::encode_module(&parsed);
        let from_binary = metaneff_message_from_hlo(&binary, &FromHloOptions::default()).unwrap();
        assert_eq!(from_binary.serialized_graph_def.as_ref(), binary.as_slice());
        let from_text = metaneff(MLP, &FromHloOptions::default());
        assert_eq!(from_text.serialized_graph_def.as_ref(), binary.as_slice());
        let decoded = hlo::decode_module(&from_text.serialized_graph_def).unwrap();
        assert!(decoded.host_program_shape.is_some(), "the text parser adds the program shape");
    }

    #[test]
    fn the_encoding_is_canonical_and_deterministic() {
        let text = "HloModule neg

ENTRY main {
  x = f32[2] parameter(0)
  ROOT n = f32[2] negate(x)
}
";
        let bytes = metaneff_from_hlo(text.as_bytes(), &FromHloOptions::default()).unwrap();
        assert_eq!(bytes, metaneff_from_hlo(text.as_bytes(), &FromHloOptions::default()).unwrap());
        let graph = hlo::encode_module(&hlo::text::parse_module(text).unwrap());
        // input_tensors (field 1): name "input0", shape packed [2], data_type FLOAT (1),
        // type USER_INPUT (field 7 = 1); output_tensors (field 2): "output0", [2], FLOAT; then
        // serialized_graph_def (field 4).
        let mut expected = vec![0x0a, 0x0f, 0x0a, 0x06];
        expected.extend_from_slice(b"input0");
        expected.extend_from_slice(&[0x12, 0x01, 0x02, 0x18, 0x01, 0x38, 0x01]);
        expected.extend_from_slice(&[0x12, 0x0e, 0x0a, 0x07]);
        expected.extend_from_slice(b"output0");
        expected.extend_from_slice(&[0x12, 0x01, 0x02, 0x18, 0x01]);
        expected.push(0x22);
        let mut len = graph.len();
        while len >= 0x80 {
            expected.push((len & 0x7f) as u8 | 0x80);
            len >>= 7;
        }
        expected.push(len as u8);
        expected.extend_from_slice(&graph);
        assert_eq!(bytes, expected);
    }

    #[test]
    fn choices_parse_numbers_names_and_keys() {
        let parse = |t: &str| t.parse::<ParameterChoice>();
        assert_eq!(
            parse("3"),
            Ok(ParameterChoice { parameter: ParameterRef::Number(3), key: None })
        );
        assert_eq!(
            parse("w.1=fc1.weight"),
            Ok(ParameterChoice {
                parameter: ParameterRef::Name("w.1".to_owned()),
                key: Some("fc1.weight".to_owned())
            })
        );
        assert_eq!(
            parse("2=a=b"),
            Ok(ParameterChoice { parameter: ParameterRef::Number(2), key: Some("a=b".to_owned()) })
        );
        assert_eq!(
            parse("+3"),
            Ok(ParameterChoice { parameter: ParameterRef::Name("+3".to_owned()), key: None })
        );
        assert_eq!(parse("=k"), Err(ParameterChoiceError::EmptyParameter { text: "=k".into() }));
        assert_eq!(parse(""), Err(ParameterChoiceError::EmptyParameter { text: String::new() }));
        assert_eq!(parse("w="), Err(ParameterChoiceError::EmptyKey { text: "w=".into() }));
    }

    #[test]
    fn a_binary_module_without_program_shape_is_refused_with_the_way_to_add_one() {
        let mut parsed = hlo::text::parse_module(MLP).unwrap();
        parsed.host_program_shape = None;
        let bytes = hlo::encode_module(&parsed);
        let error = metaneff_message_from_hlo(&bytes, &FromHloOptions::default()).unwrap_err();
        assert!(matches!(error, FromHloError::NoProgramShape), "{error:?}");
        let message = error.to_string();
        assert!(message.contains("nrtsim hlo encode"), "{message}");
        assert!(message.contains("XLA writes it"), "{message}");
    }

    #[test]
    fn bytes_that_are_no_module_are_a_load_error() {
        let error = metaneff_message_from_hlo(b"", &FromHloOptions::default()).unwrap_err();
        assert!(matches!(error, FromHloError::Load(_)), "{error:?}");
        let error = metaneff_message_from_hlo(b"HloModule broken\n", &FromHloOptions::default())
            .unwrap_err();
        assert!(matches!(error, FromHloError::Load(hlo::LoadError::Text(_))), "{error:?}");
    }

    #[test]
    fn a_tuple_parameter_is_refused() {
        let text = "HloModule tp

ENTRY main {
  p.1 = (f32[2], f32[3]) parameter(0)
  ROOT a = f32[2] get-tuple-element(p.1), index=0
}
";
        let error = error(text, &FromHloOptions::default());
        assert!(
            matches!(&error, FromHloError::TupleParameter { number: 0, name } if name == "p.1"),
            "{error:?}"
        );
    }

    #[test]
    fn an_alias_into_a_tuple_parameter_is_refused() {
        let text = "HloModule tp, input_output_alias={ {}: (0, {1}, may-alias) }

ENTRY main {
  p = (f32[2], f32[3]) parameter(0)
  ROOT a = f32[3] get-tuple-element(p), index=1
}
";
        let error = error(text, &FromHloOptions::default());
        assert!(
            matches!(
                &error,
                FromHloError::AliasIntoTupleParameter { entry: 0, parameter: 0, parameter_shape_index }
                    if parameter_shape_index == &[1]
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("shape index [1]"), "{error}");
    }

    #[test]
    fn a_nested_tuple_result_is_refused() {
        let text = "HloModule nested

ENTRY main {
  x = f32[2] parameter(0)
  inner = (f32[2]) tuple(x)
  ROOT t = (f32[2], (f32[2])) tuple(x, inner)
}
";
        let error = error(text, &FromHloOptions::default());
        assert!(matches!(error, FromHloError::NestedTupleResult { index: 1 }), "{error:?}");
    }

    #[test]
    fn an_element_type_without_a_metaneff_dtype_is_named() {
        let text = "HloModule complex

ENTRY main {
  x = f32[2] parameter(0)
  z = c64[2] parameter(1)
  ROOT n = f32[2] negate(x)
}
";
        let error = error(text, &FromHloOptions::default());
        let FromHloError::UnsupportedElementType { what, element_type, .. } = &error else {
            panic!("{error:?}")
        };
        assert_eq!((what.as_str(), element_type.as_str()), ("parameter 1 `z`", "C64"));
        assert!(error.to_string().contains("expected one of PRED, S8"), "{error}");
    }

    #[test]
    fn aliases_that_name_no_parameter_or_output_are_refused() {
        let module = |alias: &str| {
            format!(
                "HloModule a, input_output_alias={{ {alias} }}

ENTRY main {{
  x = f32[2] parameter(0)
  y = f32[2] parameter(1)
  ROOT t = (f32[2], f32[2]) tuple(x, y)
}}
"
            )
        };
        let none = FromHloOptions::default();
        let err = error(&module("{0}: (2, {})"), &none);
        assert!(
            matches!(
                err,
                FromHloError::AliasParameterOutOfRange { parameter: 2, n_parameters: 2, .. }
            ),
            "{err:?}"
        );
        let err = error(&module("{2}: (0, {})"), &none);
        assert!(matches!(err, FromHloError::AliasOutputOutOfRange { .. }), "{err:?}");
        let err = error(&module("{}: (0, {})"), &none);
        assert!(matches!(err, FromHloError::AliasOutputOutOfRange { .. }), "{err:?}");
        let err = error(&module("{0, 0}: (0, {})"), &none);
        assert!(matches!(err, FromHloError::AliasOutputOutOfRange { .. }), "{err:?}");
        let err = error(&module("{1}: (0, {}), {1}: (1, {})"), &none);
        assert!(matches!(err, FromHloError::DuplicateAlias { output: 1 }), "{err:?}");
        let single = "HloModule s, input_output_alias={ {0}: (0, {}) }

ENTRY main {
  x = f32[2] parameter(0)
  ROOT n = f32[2] negate(x)
}
";
        let err = error(single, &none);
        let FromHloError::AliasOutputOutOfRange { expected, .. } = &err else { panic!("{err:?}") };
        assert_eq!(expected, "{} (the result is not a tuple)");
    }

    #[test]
    fn a_choice_naming_no_parameter_is_refused() {
        let err = error(MLP, &options(&["3"], &[]));
        let FromHloError::UnknownParameter { role_flag, n_parameters, names, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!((*role_flag, *n_parameters), ("weight", 3));
        assert_eq!(names, &["x.1", "w.1", "b.1"]);
        assert!(err.to_string().starts_with("--weight 3: no such parameter"), "{err}");
        let err = error(MLP, &options(&[], &["w"]));
        assert!(err.to_string().starts_with("--state \"w\": no such parameter"), "{err}");
    }

    #[test]
    fn a_parameter_chosen_twice_or_a_key_used_twice_is_refused() {
        let err = error(MLP, &options(&["1"], &["w.1"]));
        assert!(
            matches!(
                err,
                FromHloError::ChosenTwice {
                    number: 1,
                    first: Role::State,
                    second: Role::Weight,
                    ..
                }
            ),
            "{err:?}"
        );
        let err = error(MLP, &options(&["1=k", "2=k"], &[]));
        assert!(
            matches!(&err, FromHloError::DuplicateKey { key, first: 1, second: 2 } if key == "k"),
            "{err:?}"
        );
    }

    #[test]
    fn a_choice_out_of_the_user_state_weight_order_is_refused() {
        // Parameter 0 a weight, then user inputs: the user input 1 comes after the weight 0.
        let err = error(MLP, &options(&["0"], &[]));
        assert!(
            matches!(
                err,
                FromHloError::InputOrder {
                    number: 1,
                    role: Role::User,
                    after: 0,
                    later: Role::Weight,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("after the weight parameter 0"), "{err}");
        // A weight then a state.
        let err = error(MLP, &options(&["1"], &["2"]));
        assert!(
            matches!(err, FromHloError::InputOrder { number: 2, role: Role::State, after: 1, .. }),
            "{err:?}"
        );
        // Users, then a state, then a weight is the order.
        let meta = metaneff(MLP, &options(&["2"], &["1"]));
        let kinds: Vec<i32> = meta.input_tensors.iter().map(|t| t.r#type).collect();
        assert_eq!(kinds, [1, 2, 3]);
    }
}

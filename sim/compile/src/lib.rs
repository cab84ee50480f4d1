//! The simulator as a compile target: an XLA HLO module in, a NEFF the simulator runs out, with
//! neuronx-cc's command line ([`parse_neuronx_cc_args`]).
//!
//! What [`compile`] does, in order:
//! 1. decodes the module (binary `HloModuleProto` or HLO text, sniffed by `hlo::load_module`) and
//!    validates it;
//! 2. refuses an NKI kernel (a custom call to [`NKI_CUSTOM_CALL_TARGETS`]) whose configuration
//!    nrtsim's NKI did not trace: compiled by AWS's NKI, its body is device code the simulator
//!    cannot run (a kernel nrtsim's NKI traced carries its program and runs);
//! 3. compiles it exactly as the simulator will at load (`hlo::eval::Program::compile` with the
//!    default options), so an unsupported opcode, custom call or element type is an error here,
//!    naming the computation and instruction, and not at load;
//! 4. names the inputs and outputs as neuronx-cc does (below), and writes the NEFF.
//!
//! **Names.** Input `i` (the `i`-th parameter leaf in parameter order) is the parameter's
//! frontend attribute `neff_input_names` when it has one, else `input{i}`; output `j` (the `j`-th
//! leaf of the entry result) is the `j`-th comma-separated name of the root instruction's
//! `neff_output_names` when it has one, else `output{j}`. nkipy sets both attributes and drives
//! the NEFF by those names; torch-neuronx producers set neither and use `input{i}`/`output{j}`
//! (`docs/compile-target.md` has the evidence). A zero-element result is left out, as
//! neuronx-cc does, unless every result is empty.
//!
//! **The NEFF.** Header version 2.0, `num_tpb` 1, `lnc_size` from `--lnc`, the name of the output
//! file, a build version naming nrtsim, and [`SIMULATOR_TARGET_FEATURE_BIT`]; members
//! `neff.json` in the compiler's form ([`SignatureForm::Compiled`]), `kelf-0.json`, `info.json`,
//! `sg00/def.json` (an `SB` state buffer, then the inputs and outputs with their byte sizes), the
//! module as `sim/model.hlo.pb`, and [`SIMULATOR_TARGET_MEMBER`] (the command line, target, lnc,
//! version, the ignored flags and the module's aliases). Same module and options, same bytes.
//!
//! **A package of its own**, beside `sim/capi`: that one exports the simulator as libnrt, this
//! one as neuronx-cc. The `nrtsim` tool and the C-ABI tests of the compiled-model fixtures both
//! compile with it, and neither needs the vector runner for that.
#![forbid(unsafe_code)]

mod args;

use std::collections::BTreeSet;

use abi::dtype::Dltype;
use abi::neff::{
    GraphSpec, NeffError, NeffHeader, NeffSpec, SIMULATOR_TARGET_FEATURE_BIT,
    SIMULATOR_TARGET_MEMBER, Signature, SignatureForm, TensorSignature, Var,
};
use hlo::LoadError;
use hlo::eval::{EvalError, EvalOptions, Program};
use hlo::proto::{
    HloInstructionProto, HloModuleProto, PrimitiveType, ProgramShapeProto, ShapeProto,
};
use serde_json::json;

pub use args::{
    CompileUsageError, FLAGS, Flag, FlagUse, Invocation, PIPELINE_WORDS, help_text,
    parse_neuronx_cc_args,
};

/// nrtsim's version, as the compile target reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The custom-call targets of NKI kernels: nkipy emits an NKI kernel as a custom call to
/// `AwsNeuronCustomNativeKernel` (`nkipy/core/nki_op.py`).
pub const NKI_CUSTOM_CALL_TARGETS: &[&str] = &["AwsNeuronCustomNativeKernel"];

/// The frontend attribute naming a parameter's NEFF input (nkipy, `nkipy/core/backend/hlo.py`).
pub const NEFF_INPUT_NAMES: &str = "neff_input_names";
/// The frontend attribute of the root naming the NEFF outputs, comma-separated.
pub const NEFF_OUTPUT_NAMES: &str = "neff_output_names";

/// The one-line answer to `--version`.
pub fn version_line() -> String {
    format!(
        "neuronx-cc: nrtsim {VERSION} simulator compile target (not the Neuron compiler; its \
         NEFFs run only on the nrtsim simulator)"
    )
}

/// The instance families neuronx-cc compiles for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// `trn1`.
    Trn1,
    /// `trn1n`.
    Trn1n,
    /// `trn2`.
    Trn2,
    /// `trn3`.
    Trn3,
    /// `inf2`.
    Inf2,
}

impl Target {
    /// Every target.
    pub const ALL: [Target; 5] =
        [Target::Trn1, Target::Trn1n, Target::Trn2, Target::Trn3, Target::Inf2];

    /// The target spelled `name` on the command line.
    pub fn parse(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|target| target.as_str() == name)
    }

    /// The command-line spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Trn1 => "trn1",
            Target::Trn1n => "trn1n",
            Target::Trn2 => "trn2",
            Target::Trn3 => "trn3",
            Target::Inf2 => "inf2",
        }
    }

    /// The logical NeuronCore size when `--lnc` is not given: 2 where the documentation says so
    /// (trn2; trn3 is taken to follow it), else 1.
    pub fn default_lnc(self) -> u32 {
        self.max_lnc()
    }

    /// The largest logical NeuronCore size of the target.
    pub fn max_lnc(self) -> u32 {
        match self {
            Target::Trn2 | Target::Trn3 => 2,
            Target::Trn1 | Target::Trn1n | Target::Inf2 => 1,
        }
    }
}

/// What a compile command line asks for besides its input and output paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// `--target`.
    pub target: Target,
    /// `--lnc` (the header's `lnc_size`).
    pub lnc: u32,
    /// The `--pipeline` words, in order.
    pub pipeline: Vec<String>,
    /// The output's file name, which becomes the NEFF header's name.
    pub output_name: String,
    /// Flags accepted and not modelled, as given (flag, value), in order.
    pub accepted_flags: Vec<(String, Option<String>)>,
    /// The whole argument list after the program name, recorded in the NEFF.
    pub argv: Vec<String>,
    /// The count limits the module is read under ([`hlo::LoadLimits::default`] unless the
    /// caller raises them: neuronx-cc's command line has no flag for them).
    pub limits: hlo::LoadLimits,
}

impl CompileOptions {
    /// Options for `target` with its default lnc, no flags, output `file.neff`.
    pub fn new(target: Target) -> CompileOptions {
        CompileOptions {
            target,
            lnc: target.default_lnc(),
            pipeline: Vec::new(),
            output_name: "file.neff".to_owned(),
            accepted_flags: Vec::new(),
            argv: Vec::new(),
            limits: hlo::LoadLimits::default(),
        }
    }
}

/// A count of a module that [`CompileOptions::limits`] bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleCount {
    /// [`hlo::LoadLimits::max_computations`].
    Computations,
    /// [`hlo::LoadLimits::max_instructions`].
    Instructions,
}

impl ModuleCount {
    /// `computation` or `instruction`.
    pub fn singular(self) -> &'static str {
        match self {
            ModuleCount::Computations => "computation",
            ModuleCount::Instructions => "instruction",
        }
    }
}

impl std::fmt::Display for ModuleCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModuleCount::Computations => "computations",
            ModuleCount::Instructions => "instructions",
        })
    }
}

/// Why a module does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The bytes are not an HLO module, or the module is malformed.
    #[error("the input is not a valid XLA HLO module: {detail}")]
    Module {
        /// What the decoder or validator said.
        detail: String,
    },
    /// The module has more computations or instructions than [`CompileOptions::limits`]
    /// allows; it is not read past the limit.
    #[error(
        "the module has more than {limit} {what}, expected at most {limit} (the {} limit)",
        what.singular()
    )]
    CountLimit {
        /// Which count.
        what: ModuleCount,
        /// The limit.
        limit: usize,
    },
    /// An NKI kernel compiled for a device, which the simulator cannot run.
    #[error(
        "computation {computation}, instruction {instruction}: custom call {target} is an NKI kernel compiled for a device (its configuration is not a program nrtsim's NKI traced): device code, which the simulator cannot run; trace the kernel with nrtsim's NKI (the nrtsim-nki package) to run it here"
    )]
    NkiKernel {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// The custom-call target.
        target: String,
    },
    /// An opcode, custom call or element type the simulator does not evaluate.
    #[error(
        "computation {computation}, instruction {instruction}: unsupported {what} (the simulator does not evaluate it; `neuronx-cc list-operators --framework XLA` lists what it does)"
    )]
    Unsupported {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// What is unsupported, such as `opcode fft` or `custom call Foo`.
        what: String,
    },
    /// An instruction that does not fit its operands or attributes.
    #[error("computation {computation}, instruction {instruction}: {detail}")]
    Invalid {
        /// The computation's name.
        computation: String,
        /// The instruction's name.
        instruction: String,
        /// What was expected and what came.
        detail: String,
    },
    /// Another refusal of the interpreter (a module-level problem, an array over the budget).
    #[error("the simulator would refuse the module: {detail}")]
    Refused {
        /// The interpreter's message.
        detail: String,
    },
    /// A parameter or result leaf whose element type has no NEFF dtype.
    #[error("{what} has element type {element_type}, which has no NEFF dtype")]
    NoDtype {
        /// Which parameter or result.
        what: String,
        /// The HLO element type.
        element_type: String,
    },
    /// A tensor too large for its byte size to be counted.
    #[error("{name} has shape {shape:?}, whose byte size overflows")]
    TooLarge {
        /// The tensor.
        name: String,
        /// Its shape.
        shape: Vec<i64>,
    },
    /// `neff_output_names` names a different number of outputs than the module returns.
    #[error(
        "the root's {NEFF_OUTPUT_NAMES} names {named} outputs ({names:?}), expected {expected}, one per result leaf"
    )]
    OutputNames {
        /// How many it names.
        named: usize,
        /// The names.
        names: Vec<String>,
        /// How many result leaves the module has.
        expected: usize,
    },
    /// A weight that does not fit the module: no such parameter, a second weight for one,
    /// the wrong byte count, or a parameter the module aliases to an output.
    #[error("weight {weight}: {detail}")]
    Weight {
        /// The weight's key (a parameter number or name).
        weight: String,
        /// What was expected and what came.
        detail: String,
    },
    /// A name that cannot be a NEFF variable.
    #[error(
        "{what} is named {name:?}, expected a unique name that is not empty and does not start with #"
    )]
    BadName {
        /// Which input or output.
        what: String,
        /// The name.
        name: String,
    },
    /// A module that returns nothing: a NEFF needs an output.
    #[error("the module returns no arrays, expected at least one (a NEFF needs an output)")]
    NoOutputs,
    /// The NEFF writer refused the result.
    #[error("cannot write the NEFF: {0}")]
    Write(#[from] NeffError),
}

/// One input or output of the compiled module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledTensor {
    /// The NEFF variable name.
    pub name: String,
    /// The dtype.
    pub dltype: Dltype,
    /// The shape.
    pub shape: Vec<i64>,
    /// The size in bytes.
    pub size: u64,
}

/// The inputs and outputs of a module as the compile target names them, and its aliases as
/// (output index, input index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledSignature {
    /// The inputs, in parameter order.
    pub inputs: Vec<CompiledTensor>,
    /// The outputs, in result order.
    pub outputs: Vec<CompiledTensor>,
    /// `input_output_alias` entries that alias a result leaf to a whole array parameter.
    pub aliases: Vec<(usize, usize)>,
}

fn entry_computation(module: &HloModuleProto) -> Option<&hlo::proto::HloComputationProto> {
    module
        .computations
        .iter()
        .find(|c| c.id == module.entry_computation_id)
        .or_else(|| module.computations.iter().find(|c| c.name == module.entry_computation_name))
}

fn tensor(what: &str, name: String, shape: &ShapeProto) -> Result<CompiledTensor, CompileError> {
    // PRED is written as `uint8`, as producers map it (libnrt has no bool dtype), and the 8-bit
    // floats as `int8`, as spike expects of a NEFF: the simulator's carrier rule, which binds
    // those leaves to them.
    let dltype = PrimitiveType::try_from(shape.element_type)
        .ok()
        .and_then(|ty| {
            sim::device_program::carrier_of(ty).or_else(|| {
                Dltype::ALL.iter().copied().find(|d| sim::device_program::primitive_of(*d) == ty)
            })
        })
        .ok_or_else(|| CompileError::NoDtype {
            what: what.to_owned(),
            element_type: PrimitiveType::try_from(shape.element_type)
                .map_or_else(|_| shape.element_type.to_string(), |t| t.as_str_name().to_owned()),
        })?;
    let size = shape
        .dimensions
        .iter()
        .try_fold(dltype.item_size(), |n, &d| n.checked_mul(u64::try_from(d).ok()?))
        .ok_or_else(|| CompileError::TooLarge {
            name: name.clone(),
            shape: shape.dimensions.clone(),
        })?;
    // A scalar is a one-element vector in the NEFF: spike checks a tensor's shape against the
    // variable's, and the tensors it makes of scalars have shape (1,) (`np.ascontiguousarray`).
    let dims = if shape.dimensions.is_empty() { vec![1] } else { shape.dimensions.clone() };
    Ok(CompiledTensor { name, dltype, shape: dims, size })
}

fn attribute<'i>(instruction: &'i HloInstructionProto, key: &str) -> Option<&'i str> {
    instruction
        .frontend_attributes
        .as_ref()
        .and_then(|attributes| attributes.map.get(key))
        .map(String::as_str)
        .filter(|value| !value.is_empty())
}

/// The inputs, outputs and aliases of a decoded module, named as described in the module docs.
///
/// # Errors
/// [`CompileError::Module`] without an entry computation or a parameter shape,
/// [`CompileError::NoDtype`], [`CompileError::TooLarge`], [`CompileError::OutputNames`],
/// [`CompileError::BadName`] for an empty, comment-like or repeated name, and
/// [`CompileError::NoOutputs`].
pub fn signature_of(module: &HloModuleProto) -> Result<CompiledSignature, CompileError> {
    let malformed = |detail: String| CompileError::Module { detail };
    let entry = entry_computation(module)
        .ok_or_else(|| malformed("the module has no entry computation".to_owned()))?;
    let mut parameters: Vec<&HloInstructionProto> =
        entry.instructions.iter().filter(|i| i.opcode == "parameter").collect();
    parameters.sort_by_key(|i| i.parameter_number);
    let mut inputs = Vec::new();
    // The input index of each whole-array parameter, for the aliases.
    let mut input_of_parameter = std::collections::BTreeMap::new();
    for parameter in parameters {
        let shape = parameter
            .shape
            .as_ref()
            .ok_or_else(|| malformed(format!("parameter {} has no shape", parameter.name)))?;
        let parameter_leaves = shape.array_leaves();
        let whole_array = shape.element_type != PrimitiveType::Tuple as i32;
        if whole_array {
            input_of_parameter.insert(parameter.parameter_number, inputs.len());
        }
        for leaf in parameter_leaves {
            let index = inputs.len();
            let name = match attribute(parameter, NEFF_INPUT_NAMES) {
                Some(name) if whole_array => name.to_owned(),
                _ => format!("input{index}"),
            };
            let what = format!("parameter {} ({})", parameter.parameter_number, parameter.name);
            inputs.push(tensor(&what, name, leaf)?);
        }
    }
    let root = entry
        .instructions
        .iter()
        .find(|i| i.id == entry.root_id)
        .or_else(|| entry.instructions.last())
        .ok_or_else(|| malformed(format!("entry computation {} is empty", entry.name)))?;
    let root_shape =
        root.shape.as_ref().ok_or_else(|| malformed(format!("root {} has no shape", root.name)))?;
    let result_leaves = root_shape.array_leaves();
    if result_leaves.is_empty() {
        return Err(CompileError::NoOutputs);
    }
    let names: Vec<String> = match attribute(root, NEFF_OUTPUT_NAMES) {
        Some(names) => {
            let names: Vec<String> = names.split(',').map(|name| name.trim().to_owned()).collect();
            if names.len() != result_leaves.len() {
                return Err(CompileError::OutputNames {
                    named: names.len(),
                    names,
                    expected: result_leaves.len(),
                });
            }
            names
        }
        None => (0..result_leaves.len()).map(|j| format!("output{j}")).collect(),
    };
    // neuronx-cc leaves zero-element results out of the NEFF (nkipy materialises them on the
    // host, `nkipy/runtime/execute.py`); a NEFF needs one output, so when every result is empty
    // they all stay.
    let all_empty = result_leaves.iter().all(|leaf| leaf.dimensions.contains(&0));
    let mut outputs = Vec::new();
    // The output index of each result leaf written, for the aliases.
    let mut output_of_leaf = Vec::new();
    for (j, (leaf, name)) in result_leaves.into_iter().zip(names).enumerate() {
        if leaf.dimensions.contains(&0) && !all_empty {
            output_of_leaf.push(None);
            continue;
        }
        output_of_leaf.push(Some(outputs.len()));
        outputs.push(tensor(&format!("result {j} ({})", root.name), name, leaf)?);
    }
    let mut seen = BTreeSet::new();
    for (what, tensor) in inputs
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("input {i}"), t))
        .chain(outputs.iter().enumerate().map(|(j, t)| (format!("output {j}"), t)))
    {
        if tensor.name.is_empty() || tensor.name.starts_with('#') || !seen.insert(&tensor.name) {
            return Err(CompileError::BadName { what, name: tensor.name.clone() });
        }
    }
    let tuple_result = root_shape.element_type == PrimitiveType::Tuple as i32;
    let mut aliases = Vec::new();
    for entry in module.input_output_alias.iter().flat_map(|alias| &alias.entries) {
        let leaf = match (tuple_result, entry.output_shape_index.as_slice()) {
            (false, []) => Some(0),
            (true, [index]) => usize::try_from(*index).ok(),
            _ => None,
        };
        let output = leaf.and_then(|leaf| output_of_leaf.get(leaf).copied().flatten());
        let input = entry
            .parameter_shape_index
            .is_empty()
            .then(|| input_of_parameter.get(&entry.parameter_number).copied())
            .flatten();
        if let (Some(output), Some(input)) = (output, input) {
            aliases.push((output, input));
        }
    }
    Ok(CompiledSignature { inputs, outputs, aliases })
}

fn from_eval(error: &EvalError) -> CompileError {
    match error.innermost() {
        EvalError::Unsupported { computation, instruction, what } => CompileError::Unsupported {
            computation: computation.clone(),
            instruction: instruction.clone(),
            what: what.clone(),
        },
        EvalError::Invalid { computation, instruction, detail } => CompileError::Invalid {
            computation: computation.clone(),
            instruction: instruction.clone(),
            detail: detail.clone(),
        },
        _ => CompileError::Refused { detail: error.to_string() },
    }
}

/// Checks `module_bytes` as the simulator will run it and writes the NEFF (see the module docs).
///
/// # Errors
/// A [`CompileError`] naming what the simulator cannot run, or the name that cannot be written.
pub fn compile(module_bytes: &[u8], options: &CompileOptions) -> Result<Vec<u8>, CompileError> {
    compile_with_weights(module_bytes, &[], options)
}

/// A value for a parameter of the entry computation, which the compile makes a constant of the
/// program (neuronx-cc's model folder: `metadata.json` names `.npy` weights by key).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Weight {
    /// The parameter: its number in decimal, or the name of its `parameter` instruction.
    pub key: String,
    /// Its elements in row-major order, little-endian, as many bytes as the parameter's shape
    /// holds.
    pub bytes: Vec<u8>,
    /// The size of one element as its file says (a `.npy` descriptor's), checked against the
    /// parameter's element type; `None` checks only the total size.
    pub item_size: Option<u64>,
}

/// As [`compile`], with `weights` folded into the program first: each named parameter becomes
/// a constant holding its weight, the other parameters are numbered again in their order (so
/// they are the NEFF's inputs), and the module's aliases follow them.
///
/// # Errors
/// [`CompileError::Weight`] for a weight that names no parameter, names one twice, has the
/// wrong size, or names a parameter aliased to an output or one with a non-default layout;
/// those of [`compile`].
pub fn compile_with_weights(
    module_bytes: &[u8],
    weights: &[Weight],
    options: &CompileOptions,
) -> Result<Vec<u8>, CompileError> {
    if weights.is_empty() {
        return compile_module(module_bytes, options);
    }
    let mut module = load(module_bytes, options)?;
    fold_weights(&mut module, weights)?;
    compile_module(&hlo::encode_module(&module), options)
}

/// Makes the weights' parameters constants (see [`compile_with_weights`]).
fn fold_weights(module: &mut HloModuleProto, weights: &[Weight]) -> Result<(), CompileError> {
    let entry_id = entry_computation(module).map(|c| c.id).ok_or_else(|| CompileError::Module {
        detail: "the module has no entry computation".into(),
    })?;
    let fail = |weight: &Weight, detail: String| CompileError::Weight {
        weight: weight.key.clone(),
        detail,
    };
    let entry = module.computations.iter_mut().find(|c| c.id == entry_id).ok_or_else(|| {
        CompileError::Module { detail: "the module has no entry computation".into() }
    })?;
    // The parameter number of each weight.
    let mut folded = std::collections::BTreeMap::new();
    for weight in weights {
        let parameter = entry.instructions.iter().find(|i| {
            i.opcode == "parameter"
                && (weight.key.parse::<i64>().ok() == Some(i.parameter_number)
                    || i.name == weight.key)
        });
        let Some(parameter) = parameter else {
            return Err(fail(
                weight,
                "the entry computation has no parameter of that number or name".into(),
            ));
        };
        if folded.insert(parameter.parameter_number, weight).is_some() {
            return Err(fail(
                weight,
                format!("parameter {} has a weight already", parameter.parameter_number),
            ));
        }
    }
    if let Some(aliases) = &module.input_output_alias {
        for entry in &aliases.entries {
            if let Some(weight) = folded.get(&entry.parameter_number) {
                return Err(fail(
                    weight,
                    format!(
                        "parameter {} is aliased to an output, so it cannot be a constant",
                        entry.parameter_number
                    ),
                ));
            }
        }
    }
    // Old number → new number of each parameter that stays.
    let mut numbers: Vec<i64> = entry
        .instructions
        .iter()
        .filter(|i| i.opcode == "parameter")
        .map(|i| i.parameter_number)
        .collect();
    numbers.sort_unstable();
    let renumber: std::collections::BTreeMap<i64, i64> = numbers
        .iter()
        .filter(|n| !folded.contains_key(n))
        .enumerate()
        .map(|(new, &old)| (old, new as i64))
        .collect();
    for instruction in entry.instructions.iter_mut().filter(|i| i.opcode == "parameter") {
        let number = instruction.parameter_number;
        match folded.get(&number) {
            Some(weight) => {
                let shape = instruction.shape.clone().unwrap_or_default();
                let literal =
                    literal_of(&shape, &weight.bytes, weight.item_size).map_err(|detail| {
                        fail(weight, format!("parameter {number} ({}): {detail}", instruction.name))
                    })?;
                instruction.opcode = "constant".to_owned();
                instruction.parameter_number = 0;
                instruction.literal = Some(Box::new(literal));
            }
            None => instruction.parameter_number = renumber[&number],
        }
    }
    let keep = |index: usize| !folded.contains_key(&(index as i64));
    fn kept<T>(list: &mut Vec<T>, keep: impl Fn(usize) -> bool) {
        let all = std::mem::take(list);
        list.extend(all.into_iter().enumerate().filter(|(index, _)| keep(*index)).map(|(_, x)| x));
    }
    let drop_folded = |shape: &mut ProgramShapeProto| {
        kept(&mut shape.parameters, keep);
        kept(&mut shape.parameter_names, keep);
    };
    if let Some(shape) = &mut entry.program_shape {
        drop_folded(shape);
    }
    if let Some(shape) = &mut module.host_program_shape {
        drop_folded(shape);
    }
    if let Some(aliases) = &mut module.input_output_alias {
        for entry in &mut aliases.entries {
            entry.parameter_number = renumber[&entry.parameter_number];
        }
    }
    Ok(())
}

/// A literal of `shape` (an array with the default layout) from row-major little-endian bytes.
fn literal_of(
    shape: &ShapeProto,
    bytes: &[u8],
    item_size: Option<u64>,
) -> Result<hlo::proto::LiteralProto, String> {
    use hlo::proto::LiteralProto;
    if let Some(layout) = &shape.layout {
        let rank = shape.dimensions.len() as i64;
        let default: Vec<i64> = (0..rank).rev().collect();
        if !layout.minor_to_major.is_empty() && layout.minor_to_major != default {
            return Err(format!(
                "layout {:?} is not the default {default:?}, expected a row-major parameter",
                layout.minor_to_major
            ));
        }
    }
    let ty = PrimitiveType::try_from(shape.element_type)
        .map_err(|_| format!("element type {} is unknown", shape.element_type))?;
    let size: usize = match ty {
        PrimitiveType::Pred
        | PrimitiveType::S8
        | PrimitiveType::U8
        | PrimitiveType::F8e5m2
        | PrimitiveType::F8e4m3fn
        | PrimitiveType::F8e4m3 => 1,
        PrimitiveType::S16 | PrimitiveType::U16 | PrimitiveType::F16 | PrimitiveType::Bf16 => 2,
        PrimitiveType::S32 | PrimitiveType::U32 | PrimitiveType::F32 => 4,
        PrimitiveType::S64 | PrimitiveType::U64 | PrimitiveType::F64 => 8,
        other => return Err(format!("element type {} cannot be a weight", other.as_str_name())),
    };
    if let Some(given) = item_size.filter(|&given| given != size as u64) {
        return Err(format!(
            "elements of {given} bytes, expected {} elements of {size} bytes",
            ty.as_str_name()
        ));
    }
    let mut elements: u64 = 1;
    for &dim in &shape.dimensions {
        elements = u64::try_from(dim)
            .ok()
            .and_then(|d| elements.checked_mul(d))
            .ok_or_else(|| format!("shape {:?} has no element count", shape.dimensions))?;
    }
    let expected = elements
        .checked_mul(size as u64)
        .ok_or_else(|| format!("shape {:?} overflows", shape.dimensions))?;
    if bytes.len() as u64 != expected {
        return Err(format!(
            "{} bytes, expected {expected} ({} elements of {} bytes)",
            bytes.len(),
            elements,
            size
        ));
    }
    let mut literal = LiteralProto {
        shape: Some(ShapeProto { layout: None, ..shape.clone() }),
        ..LiteralProto::default()
    };
    fn chunks<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        bytes.chunks_exact(N).map(|c| c.try_into().expect("chunks of N"))
    }
    match ty {
        PrimitiveType::Pred => literal.preds = bytes.iter().map(|&b| b != 0).collect(),
        PrimitiveType::S8 => literal.s8s = bytes.to_vec(),
        PrimitiveType::U8 => literal.u8s = bytes.to_vec(),
        PrimitiveType::F8e5m2 => literal.f8e5m2s = bytes.to_vec(),
        PrimitiveType::F8e4m3fn => literal.f8e4m3fns = bytes.to_vec(),
        PrimitiveType::F8e4m3 => literal.f8e4m3s = bytes.to_vec(),
        PrimitiveType::S16 => literal.s16s = bytes.to_vec(),
        PrimitiveType::U16 => literal.u16s = bytes.to_vec(),
        PrimitiveType::F16 => literal.f16s = bytes.to_vec(),
        PrimitiveType::Bf16 => literal.bf16s = bytes.to_vec(),
        PrimitiveType::S32 => literal.s32s = chunks::<4>(bytes).map(i32::from_le_bytes).collect(),
        PrimitiveType::U32 => literal.u32s = chunks::<4>(bytes).map(u32::from_le_bytes).collect(),
        PrimitiveType::F32 => literal.f32s = chunks::<4>(bytes).map(f32::from_le_bytes).collect(),
        PrimitiveType::S64 => literal.s64s = chunks::<8>(bytes).map(i64::from_le_bytes).collect(),
        PrimitiveType::U64 => literal.u64s = chunks::<8>(bytes).map(u64::from_le_bytes).collect(),
        PrimitiveType::F64 => literal.f64s = chunks::<8>(bytes).map(f64::from_le_bytes).collect(),
        _ => unreachable!("sizes above cover these types"),
    }
    Ok(literal)
}

/// The module, counted against `options.limits` as it is read.
fn load(module_bytes: &[u8], options: &CompileOptions) -> Result<HloModuleProto, CompileError> {
    hlo::load_module_with_limits(module_bytes, &options.limits).map_err(|err| match err {
        LoadError::TooManyComputations { limit } => {
            CompileError::CountLimit { what: ModuleCount::Computations, limit }
        }
        LoadError::TooManyInstructions { limit } => {
            CompileError::CountLimit { what: ModuleCount::Instructions, limit }
        }
        LoadError::Text(_) | LoadError::NotUtf8 { .. } | LoadError::Binary(_) => {
            CompileError::Module { detail: err.to_string() }
        }
    })
}

fn compile_module(module_bytes: &[u8], options: &CompileOptions) -> Result<Vec<u8>, CompileError> {
    let module = load(module_bytes, options)?;
    hlo::validate(&module).map_err(|err| CompileError::Module { detail: err.to_string() })?;
    for computation in &module.computations {
        for instruction in &computation.instructions {
            let nki = instruction.opcode == "custom-call"
                && NKI_CUSTOM_CALL_TARGETS.contains(&instruction.custom_call_target.as_str());
            if nki && !hlo::carries_nki_program(&instruction.backend_config) {
                return Err(CompileError::NkiKernel {
                    computation: computation.name.clone(),
                    instruction: instruction.name.clone(),
                    target: instruction.custom_call_target.clone(),
                });
            }
        }
    }
    Program::compile(&module, &EvalOptions::default()).map_err(|err| from_eval(&err))?;
    let signature = signature_of(&module)?;
    write(module_bytes, &signature, options)
}

/// The `sim/compile.json` member: what the compile target was asked and what it made.
fn compile_json(signature: &CompiledSignature, options: &CompileOptions) -> Vec<u8> {
    let flags: Vec<serde_json::Value> = options
        .accepted_flags
        .iter()
        .map(|(flag, value)| json!({ "flag": flag, "value": value }))
        .collect();
    let aliases: Vec<serde_json::Value> = signature
        .aliases
        .iter()
        .map(|&(output, input)| {
            json!({ "input": signature.inputs[input].name, "output": signature.outputs[output].name })
        })
        .collect();
    let value = json!({
        "aliases": aliases,
        "argv": options.argv,
        "ignored_flags": flags,
        "lnc": options.lnc,
        "pipeline": options.pipeline,
        "simulator_target": true,
        "target": options.target.as_str(),
        "version": format!("nrtsim {VERSION}"),
    });
    let mut bytes = serde_json::to_vec_pretty(&value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// A uuid from what was compiled (the module and the command line), so two NEFFs of one output
/// name differ and the same compile gives the same uuid: a SHA-256 prefix with the RFC 9562
/// version-8 (custom) and variant bits set.
fn content_uuid(module_bytes: &[u8], compile_json: &[u8]) -> [u8; 16] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(b"nrtsim-compile:");
    hasher.update((module_bytes.len() as u64).to_le_bytes());
    hasher.update(module_bytes);
    hasher.update(compile_json);
    let mut uuid = [0u8; 16];
    uuid.copy_from_slice(&hasher.finalize()[..16]);
    uuid[6] = (uuid[6] & 0x0f) | 0x80;
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    uuid
}

fn write(
    module_bytes: &[u8],
    signature: &CompiledSignature,
    options: &CompileOptions,
) -> Result<Vec<u8>, CompileError> {
    let mut spec = NeffSpec::new(&options.output_name);
    let mut tpb_per_node = [0u8; 64];
    tpb_per_node[0] = 1;
    spec.header = NeffHeader {
        build_version: format!("nrtsim {VERSION} simulator compile target"),
        num_tpb: 1,
        requested_tpb_count: 1,
        tpb_per_node,
        feature_bits: SIMULATOR_TARGET_FEATURE_BIT,
        lnc_size: options.lnc,
        ..spec.header
    };
    let compile_json = compile_json(signature, options);
    spec.header.uuid = content_uuid(module_bytes, &compile_json);
    let mut vars = vec![Var::new("SB", 0, "state-buffer")];
    let io = signature
        .inputs
        .iter()
        .map(|t| (t, "input"))
        .chain(signature.outputs.iter().map(|t| (t, "output")));
    for (var_id, (tensor, kind)) in (1u32..).zip(io) {
        vars.push(Var::new(&tensor.name, var_id, kind).with_size(tensor.size));
    }
    spec.graphs.push(GraphSpec { name: "sg00".to_owned(), vars });
    let entry = |t: &CompiledTensor| TensorSignature::new(&t.name, t.dltype.name(), &t.shape);
    spec.signature = Signature {
        inputs: signature.inputs.iter().map(entry).collect(),
        outputs: signature.outputs.iter().map(entry).collect(),
    };
    spec.signature_form = SignatureForm::Compiled;
    let info = json!({
        "name": options.output_name,
        "num_tpb": 1,
        "num_tpb_requested": 1,
        "tool_version": format!("nrtsim {VERSION} (simulator compile target)"),
    });
    let mut info = serde_json::to_vec_pretty(&info).unwrap_or_default();
    info.push(b'\n');
    spec.extra_members.insert("info.json".to_owned(), info);
    spec.extra_members.insert(SIMULATOR_TARGET_MEMBER.to_owned(), compile_json);
    sim::neff_load::add_hlo(&mut spec, module_bytes);
    Ok(spec.to_bytes()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(hlo: &str) -> CompileError {
        compile(hlo.as_bytes(), &CompileOptions::new(Target::Trn1)).unwrap_err()
    }

    #[test]
    fn output_names_must_match_the_results() {
        let hlo = "HloModule m\n\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT r = (f32[2], f32[2]) tuple(x, x), frontend_attributes={neff_output_names=\"only\"}\n}\n";
        assert_eq!(
            refusal(hlo),
            CompileError::OutputNames { named: 1, names: vec!["only".into()], expected: 2 }
        );
    }

    #[test]
    fn names_must_be_unique_and_not_comments() {
        let clash = "HloModule m\n\nENTRY main {\n  x = f32[2] parameter(0), frontend_attributes={neff_input_names=\"t\"}\n  ROOT y = f32[2] negate(x), frontend_attributes={neff_output_names=\"t\"}\n}\n";
        assert_eq!(
            refusal(clash),
            CompileError::BadName { what: "output 0".into(), name: "t".into() }
        );
        let comment = clash.replace("neff_input_names=\"t\"", "neff_input_names=\"#t\"");
        assert_eq!(
            refusal(&comment),
            CompileError::BadName { what: "input 0".into(), name: "#t".into() }
        );
    }

    #[test]
    fn inputs_follow_parameter_numbers_not_the_order_of_the_text() {
        // Parameter 1 is written first, with its own name and shape; input 1 must still be it,
        // and the alias of the result to parameter 1 must name input 1.
        let hlo = "HloModule m, input_output_alias={ {}: (1, {}, may-alias) }\n\nENTRY main {\n  b = s32[3] parameter(1), frontend_attributes={neff_input_names=\"second\"}\n  a = f32[2,5] parameter(0), frontend_attributes={neff_input_names=\"first\"}\n  ROOT r = s32[3] negate(b)\n}\n";
        let module = hlo::load_module(hlo.as_bytes()).unwrap();
        let signature = signature_of(&module).unwrap();
        let inputs: Vec<(&str, Dltype, Vec<i64>)> =
            signature.inputs.iter().map(|t| (t.name.as_str(), t.dltype, t.shape.clone())).collect();
        assert_eq!(
            inputs,
            [("first", Dltype::Float32, vec![2, 5]), ("second", Dltype::Int32, vec![3])]
        );
        assert_eq!(signature.aliases, [(0, 1)]);
    }

    #[test]
    fn scalars_are_one_element_vectors_pred_is_uint8_and_8_bit_floats_int8() {
        let hlo = "HloModule m\n\nENTRY main {\n  x = f8e4m3[4] parameter(0)\n  y = f8e5m2[] parameter(1)\n  s = f32[] parameter(2)\n  b = pred[] compare(s, s), direction=EQ\n  ROOT r = (f8e4m3[4], f8e5m2[], f32[], pred[]) tuple(x, y, s, b)\n}\n";
        let module = hlo::load_module(hlo.as_bytes()).unwrap();
        let signature = signature_of(&module).unwrap();
        let typed = |tensors: &[CompiledTensor]| -> Vec<(Dltype, Vec<i64>, u64)> {
            tensors.iter().map(|t| (t.dltype, t.shape.clone(), t.size)).collect()
        };
        assert_eq!(
            typed(&signature.inputs),
            [(Dltype::Int8, vec![4], 4), (Dltype::Int8, vec![1], 1), (Dltype::Float32, vec![1], 4)]
        );
        assert_eq!(
            typed(&signature.outputs),
            [
                (Dltype::Int8, vec![4], 4),
                (Dltype::Int8, vec![1], 1),
                (Dltype::Float32, vec![1], 4),
                (Dltype::Uint8, vec![1], 1)
            ]
        );
    }

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// `r = x * w + b` with `w` (parameter 1) and `b` (parameter 2) given as weights, `x`
    /// aliased to the second result: after folding, `x` is the one parameter and the alias
    /// follows it.
    const AFFINE: &str = "HloModule m, input_output_alias={ {1}: (0, {}, may-alias) }\n\nENTRY main {\n  x = f32[3] parameter(0)\n  w = f32[3] parameter(1)\n  b = f32[3] parameter(2)\n  m = f32[3] multiply(x, w)\n  r = f32[3] add(m, b)\n  ROOT t = (f32[3], f32[3]) tuple(r, x)\n}\n";

    fn weight(key: &str, values: &[f32]) -> Weight {
        Weight { key: key.to_owned(), bytes: f32_bytes(values), item_size: Some(4) }
    }

    #[test]
    fn weights_become_constants_and_the_other_parameters_are_numbered_again() {
        let mut module = hlo::load_module(AFFINE.as_bytes()).unwrap();
        // One by number, one by its instruction's name.
        fold_weights(&mut module, &[weight("1", &[2.0, 3.0, 4.0]), weight("b", &[0.5, 0.5, -1.0])])
            .unwrap();
        let program = Program::compile(&module, &EvalOptions::default()).unwrap();
        let x = hlo::eval::Array {
            ty: PrimitiveType::F32,
            dims: vec![3],
            bytes: f32_bytes(&[1.0, -1.0, 2.0]),
        };
        let value = program.run(&[x]).unwrap();
        let hlo::eval::Value::Tuple(leaves) = value else { panic!("a tuple result") };
        let hlo::eval::Value::Array(r) = &leaves[0] else { panic!("an array") };
        assert_eq!(r.bytes, f32_bytes(&[2.5, -2.5, 7.0]));
        let signature = signature_of(&module).unwrap();
        assert_eq!(signature.inputs.len(), 1);
        assert_eq!(signature.aliases, [(1, 0)]);
        let entry = entry_computation(&module).unwrap();
        assert_eq!(entry.program_shape.as_ref().unwrap().parameters.len(), 1);
    }

    #[test]
    fn a_weight_that_does_not_fit_is_refused_naming_it() {
        let refused = |weights: &[Weight]| {
            let mut module = hlo::load_module(AFFINE.as_bytes()).unwrap();
            fold_weights(&mut module, weights).unwrap_err().to_string()
        };
        assert_eq!(
            refused(&[weight("7", &[1.0; 3])]),
            "weight 7: the entry computation has no parameter of that number or name"
        );
        assert_eq!(
            refused(&[weight("w", &[1.0; 2])]),
            "weight w: parameter 1 (w): 8 bytes, expected 12 (3 elements of 4 bytes)"
        );
        let halves = Weight { item_size: Some(2), ..weight("w", &[1.0; 3]) };
        assert_eq!(
            refused(&[halves]),
            "weight w: parameter 1 (w): elements of 2 bytes, expected F32 elements of 4 bytes"
        );
        assert_eq!(
            refused(&[weight("1", &[1.0; 3]), weight("w", &[1.0; 3])]),
            "weight w: parameter 1 has a weight already"
        );
        assert_eq!(
            refused(&[weight("x", &[1.0; 3])]),
            "weight x: parameter 0 is aliased to an output, so it cannot be a constant"
        );
    }

    #[test]
    fn a_module_returning_nothing_has_no_neff() {
        let hlo =
            "HloModule m\n\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT r = () tuple()\n}\n";
        assert_eq!(refusal(hlo), CompileError::NoOutputs);
    }

    #[test]
    fn bytes_that_are_not_a_module_are_refused() {
        assert!(matches!(refusal("HloModule broken\nENTRY {"), CompileError::Module { .. }));
    }

    #[test]
    fn targets_spell_and_default_as_documented() {
        for target in Target::ALL {
            assert_eq!(Target::parse(target.as_str()), Some(target));
        }
        assert_eq!(Target::parse("trn9"), None);
        let lnc: Vec<u32> = Target::ALL.iter().map(|t| t.default_lnc()).collect();
        assert_eq!(lnc, [1, 1, 2, 2, 1]);
    }
}

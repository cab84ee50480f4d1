//! The device program: the XLA HLO module a NEFF carries (or is given), run by the `hlo` crate.
//!
//! A real NEFF's engine programs cannot run off-device; the HLO module the compiler was given can.
//! A NEFF may carry it as the member [`HLO_MEMBER`] (`sim/model.hlo.pb`: an encoded
//! `HloModuleProto`, or HLO text, sniffed by `hlo::load_module`); a real NEFF that carries none
//! can be given one by [`HloSource`] (`NRTSIM_HLO`).
//!
//! Design choices:
//! - **Binding as the compiler names things.** A side of the signature whose variables are named
//!   exactly `input0..input{n-1}` (outputs: `output0..output{m-1}`), in any order, is an
//!   XLA-compiled side: parameter `i` is `input{i}`, result leaf `j` is `output{j}`. Otherwise
//!   parameter `i` is the `i`-th input of the signature and result leaf `j` its `j`-th output (an
//!   NKI NEFF with inputs `x`, `y`). A NEFF from the simulator's compile target (it holds
//!   `sim/compile.json`) always binds by signature order, which is its parameter order: its
//!   names are the producer's, and `input1` on parameter 0 is a name, not a number.
//! - **Zero-element results.** neuronx-cc leaves them out of the NEFF (nkipy,
//!   `nkipy/runtime/execute.py`), and so does the simulator's compile target; for such a NEFF
//!   (bound by signature order) a zero-element result leaf without a variable is dropped.
//! - **PRED is `uint8` at the boundary too, and the 8-bit floats `int8`.** A PRED parameter or
//!   result binds a `uint8` variable as well as a `bool` one, an f8 leaf an `int8` variable as
//!   well as its own dtype: neuronx-cc and the producers spell PRED as `uint8` (the producers'
//!   dtype maps; nkipy reads a boolean result as uint8) and fp8 tensors as `int8` (spike checks
//!   it), and libnrt has no bool dtype (`carries`).
//! - **Every check at load.** [`DeviceProgram::compile`] compiles the module once
//!   (`hlo::eval::Program::compile`) and checks the count of parameters and result leaves, their
//!   element types against the signature's dltypes and their byte sizes against the variables';
//!   a mismatch names both sides and is `NRT_INVALID` from `nrt_load`. Only what the data itself
//!   can do (a while loop over its limit, say) fails at execute.
//! - **Collectives across the ranks of one launch.** A module with collective ops loaded by
//!   `nrt_load_collectives` joins the [`Rendezvous`] of its loaded instance (the ranks loaded
//!   together, one each, by the runtime's loader): each
//!   rank's launch brings its arguments, the last to arrive evaluates all ranks at once
//!   (`hlo::eval::evaluate_spmd`), and every rank writes its own results. A rank whose peers do
//!   not come within `SimConfig::collective_timeout` (default [`RENDEZVOUS_TIMEOUT`](crate::config::RENDEZVOUS_TIMEOUT)) fails its
//!   launch (`NRT_TIMEOUT`, outputs unwritten), never hangs; `nrt_close` fails a waiting rank's
//!   launch at once ([`Rendezvous::close`], `NRT_CLOSED`).
//! - **Every launch is bounded.** [`DeviceProgram::set_run_limits`] gives each run the
//!   simulator's execution timeout in estimated device time, and its optional work budget and
//!   wall-clock limit (`SimConfig::exec_timeout`, `SimConfig::work_budget`,
//!   `SimConfig::launch_timeout`); a run that reaches one is [`LaunchError::OverLimit`], which
//!   the runtime reports as `NRT_TIMEOUT` with the outputs unwritten, the status libnrt gives an
//!   execution that overruns its own execution timeout (`docs/limits.md`).
//! - **Layouts at the boundary.** A parameter or result with a non-default layout is read from or
//!   written to the variable's bytes in that physical order (`Input::from_physical`,
//!   `Output::write_physical`).
//! - **One copy each way.** A launch reads each argument from device memory once, straight into
//!   the interpreter's typed storage ([`DeviceProgram::read_inputs`], fallible), and writes each
//!   result once, straight from that storage into the output variable ([`Written::write_into`]).
//!   Device memory is memory C may write while the interpreter runs, so it is copied rather than
//!   borrowed; a launch's peak is its device memory plus one copy of the arguments, the live
//!   intermediates and the results (`docs/limits.md`).

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use abi::dtype::Dltype;
use hlo::eval::{EvalOptions, Input, Output, Program};
use hlo::proto::{HloModuleProto, PrimitiveType, ShapeProto};
use sha2::{Digest, Sha256};

use crate::config::{HLO_ENV, HloSource};

/// The NEFF member that holds the device program (an encoded `HloModuleProto`, or HLO text).
pub const HLO_MEMBER: &str = "sim/model.hlo.pb";

/// Why a device program was refused at load.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceProgramError {
    /// The bytes are not an HLO module.
    #[error("device program ({origin}): {detail}")]
    Module {
        /// Where the module came from.
        origin: String,
        /// What is wrong.
        detail: String,
    },
    /// The module does not fit the NEFF's signature.
    #[error("device program ({origin}) does not fit the neff: {detail}")]
    Binding {
        /// Where the module came from.
        origin: String,
        /// Which parameter or result, and the variable it meets.
        detail: String,
    },
    /// The `NRTSIM_HLO` setting names something unreadable.
    #[error("{HLO_ENV}={path}: {detail}")]
    Source {
        /// The path.
        path: String,
        /// What is wrong.
        detail: String,
    },
}

/// Why one launch of a device program produced no results.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The module failed on this launch's data (the interpreter's message).
    #[error("{0}")]
    Failed(String),
    /// The run reached the execution timeout, the work budget or the wall-clock limit of a
    /// launch.
    #[error(
        "{detail}; the launch limit is {variable}={value}, raise it (or set it to none) for a longer launch"
    )]
    OverLimit {
        /// The interpreter's message, naming the instruction and the limit.
        detail: String,
        /// The simulator setting that sets the limit.
        variable: &'static str,
        /// Its value.
        value: String,
    },
}

impl LaunchError {
    fn of(error: &hlo::eval::EvalError, options: &EvalOptions) -> LaunchError {
        use hlo::eval::EvalError;
        let detail = error.to_string();
        match error.innermost() {
            EvalError::DeviceTime { limit, .. } => LaunchError::OverLimit {
                detail,
                variable: crate::config::EXEC_TIMEOUT_ENV,
                value: format!("{}", limit.as_secs_f64()),
            },
            EvalError::WorkBudget { budget, .. } => LaunchError::OverLimit {
                detail,
                variable: crate::config::WORK_BUDGET_ENV,
                value: budget.to_string(),
            },
            EvalError::TimeLimit { limit, .. } => LaunchError::OverLimit {
                detail,
                variable: crate::config::LAUNCH_TIMEOUT_ENV,
                value: options.time_limit.unwrap_or(*limit).as_millis().to_string(),
            },
            _ => LaunchError::Failed(detail),
        }
    }
}

/// How parameters and results find their variables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Binding {
    /// A side named exactly `input0…`/`output0…` binds by the number in the name; any other
    /// side by signature order (see the module docs).
    #[default]
    CompilerNames,
    /// Parameter `i` is the `i`-th input and result `j` the `j`-th output whatever the names, and
    /// a zero-element result without a variable is dropped: a NEFF from the simulator's compile
    /// target, whose signature is in parameter order.
    SignatureOrder,
}

/// One input or output variable as the program sees it.
#[derive(Clone, Debug)]
pub struct IoVar {
    /// The variable's name.
    pub name: String,
    /// Its size in bytes.
    pub size: usize,
    /// Its element type, when the signature gives one.
    pub dltype: Option<Dltype>,
}

/// One parameter or result leaf bound to a variable.
#[derive(Clone, Debug)]
struct Leaf {
    /// The index of the variable among the model's inputs (parameters) or outputs (results).
    io: usize,
    ty: PrimitiveType,
    dims: Vec<i64>,
    layout: Option<Vec<i64>>,
    bytes: usize,
}

/// A module checked against a model's signature, ready to run at every launch.
#[derive(Debug)]
pub struct DeviceProgram {
    source: Vec<u8>,
    collective: bool,
    program: Program,
    options: EvalOptions,
    params: Vec<Leaf>,
    /// One entry per result leaf; `None` for a zero-element result the NEFF leaves out.
    results: Vec<Option<Leaf>>,
}

/// The HLO element type of a dltype, from abi's one dltype table
/// ([`Dltype::xla_primitive_type`]), whose XLA names are the proto enum's. A name the proto did
/// not spell would give `Invalid`, which matches no leaf; a test pins that none does.
pub fn primitive_of(dltype: Dltype) -> PrimitiveType {
    PrimitiveType::from_str_name(dltype.xla_primitive_type().name())
        .unwrap_or(PrimitiveType::Invalid)
}

fn type_name(ty: PrimitiveType) -> String {
    ty.as_str_name().to_ascii_lowercase()
}

/// The one-byte carrier dltype neuronx-cc gives, in its NEFFs, an element type libnrt has no
/// dtype for: `uint8` for pred and `int8` for the 8-bit floats. The bytes are the same either way
/// (pred is one byte 0 or 1, and a nonzero byte reads as true); nkipy, which the runs of real
/// devices pin, allocates a pred result as uint8 (`nkipy/core/backend/hlo.py`,
/// `HLOModule.outputs`) and checks that an fp8 tensor's variable is int8
/// (`spike/src/spike/spike_model.py`, `_check_dtype_compatibility`). The compile target writes
/// these dtypes; [`DeviceProgram::compile`] binds such a leaf to its carrier.
pub fn carrier_of(ty: PrimitiveType) -> Option<Dltype> {
    match ty {
        PrimitiveType::Pred => Some(Dltype::Uint8),
        PrimitiveType::F8e4m3fn | PrimitiveType::F8e5m2 | PrimitiveType::F8e4m3 => {
            Some(Dltype::Int8)
        }
        _ => None,
    }
}

/// Whether a variable of `dltype` holds a leaf of element type `ty`: the same type, or its
/// carrier ([`carrier_of`]).
fn carries(dltype: Dltype, ty: PrimitiveType) -> bool {
    primitive_of(dltype) == ty || carrier_of(ty) == Some(dltype)
}

/// Whether `names` are exactly `{prefix}0..{prefix}{n-1}` in some order (an XLA-compiled
/// side); then the position of `{prefix}{i}` for each `i`.
pub fn xla_order(names: &[&str], prefix: &str) -> Option<Vec<usize>> {
    let mut order = vec![usize::MAX; names.len()];
    for (position, name) in names.iter().enumerate() {
        let digits = name.strip_prefix(prefix)?;
        if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
            return None;
        }
        let index: usize = digits.parse().ok()?;
        let slot = order.get_mut(index)?;
        if *slot != usize::MAX {
            return None;
        }
        *slot = position;
    }
    Some(order)
}

fn leaf_bytes(shape: &ShapeProto) -> Option<usize> {
    let ty = hlo::dtype::ElementType::from_primitive(shape.element_type)?;
    shape
        .dimensions
        .iter()
        .try_fold(ty.item_size(), |n, &d| n.checked_mul(usize::try_from(d).ok()?))
}

fn describe(shape: &ShapeProto) -> String {
    let ty = PrimitiveType::try_from(shape.element_type)
        .map_or_else(|_| format!("type {}", shape.element_type), type_name);
    let dims: Vec<String> = shape.dimensions.iter().map(i64::to_string).collect();
    format!("{ty}[{}]", dims.join(","))
}

impl DeviceProgram {
    /// Decodes `bytes` (binary `HloModuleProto` or HLO text), compiles it and binds it to
    /// `inputs` and `outputs` (the model's variables in signature order). `origin` says where the
    /// module came from, for messages.
    ///
    /// # Errors
    /// [`DeviceProgramError::Module`] for bytes that are not a valid module or that the
    /// interpreter refuses; [`DeviceProgramError::Binding`] for a count, element type or size of
    /// a parameter or result that differs from its variable.
    pub fn compile(
        bytes: &[u8],
        origin: &str,
        inputs: &[IoVar],
        outputs: &[IoVar],
    ) -> Result<DeviceProgram, DeviceProgramError> {
        DeviceProgram::compile_bound(
            bytes,
            origin,
            inputs,
            outputs,
            Binding::CompilerNames,
            &hlo::LoadLimits::default(),
        )
    }

    /// [`DeviceProgram::compile`] with the binding rule given ([`Binding::SignatureOrder`] for a
    /// NEFF from the simulator's compile target) and the module read under `limits` (a module
    /// past one is refused naming the variable that raises it,
    /// [`LoadLimits::hlo_variable_for`](crate::config::LoadLimits::hlo_variable_for)).
    ///
    /// # Errors
    /// As [`DeviceProgram::compile`].
    pub fn compile_bound(
        bytes: &[u8],
        origin: &str,
        inputs: &[IoVar],
        outputs: &[IoVar],
        binding: Binding,
        limits: &hlo::LoadLimits,
    ) -> Result<DeviceProgram, DeviceProgramError> {
        let module_error =
            |detail: String| DeviceProgramError::Module { origin: origin.to_owned(), detail };
        let module = hlo::load_module_with_limits(bytes, limits).map_err(|err| {
            match crate::config::LoadLimits::hlo_variable_for(&err) {
                Some(variable) => {
                    module_error(format!("{err}{}", crate::config::LoadLimits::hint(variable)))
                }
                None => module_error(err.to_string()),
            }
        })?;
        hlo::validate(&module).map_err(|err| module_error(err.to_string()))?;
        let program = Program::compile(&module, &EvalOptions::default())
            .map_err(|err| module_error(err.to_string()))?;
        let (params, results) = entry_leaves(&module).map_err(module_error)?;
        let binding_error =
            |detail: String| DeviceProgramError::Binding { origin: origin.to_owned(), detail };
        let param_layouts = program.parameter_layouts();
        let result_layouts = program.result_layouts();
        let params = bind_side(&params, &param_layouts, inputs, "parameter", "input", binding)
            .map_err(binding_error)?;
        let results =
            bind_results(&results, &result_layouts, outputs, binding).map_err(binding_error)?;
        let collective = module.computations.iter().flat_map(|c| &c.instructions).any(|i| {
            matches!(
                i.opcode.as_str(),
                "all-reduce"
                    | "all-gather"
                    | "reduce-scatter"
                    | "all-to-all"
                    | "collective-permute"
                    | "replica-id"
                    | "partition-id"
            )
        });
        Ok(DeviceProgram {
            source: bytes.to_vec(),
            collective,
            program,
            options: EvalOptions::default(),
            params,
            results,
        })
    }

    /// The execution timeout, work budget and wall-clock limit of each later launch (see the
    /// module docs).
    pub fn set_run_limits(&mut self, limits: &hlo::eval::RunLimits) {
        self.options.device_time_limit = limits.device_time_limit;
        self.options.work_budget = limits.work_budget;
        self.options.time_limit = limits.time_limit;
        self.program.set_run_limits(limits);
    }

    /// Whether the module has collective ops (or asks for its replica or partition id), so its
    /// ranks must run together.
    pub fn is_collective(&self) -> bool {
        self.collective
    }

    /// The arguments of one launch in the interpreter's storage, in parameter order:
    /// `read(i, n)` gives the first `n` bytes of input variable `i` (device memory, borrowed),
    /// each copied once, put in logical order during that copy when the parameter has a
    /// layout.
    ///
    /// # Errors
    /// [`LaunchError::Failed`] when an argument's storage cannot be allocated.
    pub fn read_inputs<'a>(
        &self,
        mut read: impl FnMut(usize, usize) -> &'a [u8],
    ) -> Result<Vec<Input>, LaunchError> {
        let mut inputs = Vec::new();
        inputs.try_reserve_exact(self.params.len()).map_err(|_| {
            LaunchError::Failed(format!("no memory for a list of {} arguments", self.params.len()))
        })?;
        for (index, leaf) in self.params.iter().enumerate() {
            let bytes = read(leaf.io, leaf.bytes);
            let input = match &leaf.layout {
                Some(layout) => Input::from_physical(leaf.ty, &leaf.dims, layout, bytes),
                None => Input::from_le_bytes(leaf.ty, &leaf.dims, bytes),
            }
            .map_err(|err| LaunchError::Failed(format!("parameter {index}: {err}")))?;
            inputs.push(input);
        }
        Ok(inputs)
    }

    /// Pairs a run's result leaves with the output variables they go to.
    fn written(&self, outputs: Vec<Output>) -> Result<Written, LaunchError> {
        if outputs.len() != self.results.len() {
            return Err(LaunchError::Failed(format!(
                "the module returned {} arrays, expected {}",
                outputs.len(),
                self.results.len()
            )));
        }
        let leaves = self
            .results
            .iter()
            .zip(outputs)
            .filter_map(|(leaf, output)| {
                leaf.as_ref().map(|leaf| (leaf.io, leaf.layout.clone(), output))
            })
            .collect();
        Ok(Written { leaves })
    }

    /// Runs every rank of one SPMD launch: `inputs_per_rank[r]` are rank `r`'s arguments (as
    /// [`DeviceProgram::read_inputs`] gives them); the result is, per rank, what to write.
    ///
    /// # Errors
    /// [`LaunchError::OverLimit`] when a rank reached a launch limit; otherwise
    /// [`LaunchError::Failed`] with the interpreter's message, naming the rank that failed first.
    pub fn run_ranks(&self, inputs_per_rank: Vec<Vec<Input>>) -> Result<Vec<Written>, LaunchError> {
        let per_rank = self
            .program
            .run_spmd_inputs(inputs_per_rank)
            .map_err(|err| LaunchError::of(&err, &self.options))?;
        per_rank.into_iter().map(|outputs| self.written(outputs)).collect()
    }

    /// The module's bytes, as given to [`DeviceProgram::compile`].
    pub fn source(&self) -> &[u8] {
        &self.source
    }

    /// Runs the module once on `inputs` (as [`DeviceProgram::read_inputs`] gives them),
    /// consuming them; the result is what to write to the output variables.
    ///
    /// # Errors
    /// [`LaunchError::OverLimit`] for a run that reached a launch limit, [`LaunchError::Failed`]
    /// with the interpreter's message for another failure only the data can cause.
    pub fn run(&self, inputs: Vec<Input>) -> Result<Written, LaunchError> {
        let outputs =
            self.program.run_inputs(inputs).map_err(|err| LaunchError::of(&err, &self.options))?;
        self.written(outputs)
    }
}

/// What one launch writes: per output variable, the result leaf in the interpreter's storage
/// (shared, so handing it to a rank or a record costs no copy) and the variable's layout.
#[derive(Clone, Debug)]
pub struct Written {
    leaves: Vec<(usize, Option<Vec<i64>>, Output)>,
}

impl Written {
    /// Writes each result into device memory `memory`, at `start_of(i)` for output variable
    /// `i`, in one pass per result (its layout applied on the way).
    ///
    /// # Errors
    /// [`LaunchError::Failed`] when a result does not fit `memory` at its start.
    pub fn write_into(
        &self,
        memory: &mut [u8],
        start_of: impl Fn(usize) -> usize,
    ) -> Result<(), LaunchError> {
        for (io, layout, output) in &self.leaves {
            let start = start_of(*io);
            let n_bytes = output.n_bytes();
            let out = start
                .checked_add(n_bytes)
                .and_then(|end| memory.get_mut(start..end))
                .ok_or_else(|| {
                    LaunchError::Failed(format!(
                        "output {io}: {n_bytes} bytes at {start} do not fit device memory"
                    ))
                })?;
            match layout {
                Some(layout) => output.write_physical(layout, out),
                None => output.write_le_bytes(out),
            }
            .map_err(|err| LaunchError::Failed(format!("output {io}: {err}")))?;
        }
        Ok(())
    }

    /// Per output variable index, its bytes (a copy, for a launch record).
    ///
    /// # Errors
    /// [`LaunchError::Failed`] when the bytes cannot be allocated.
    pub fn to_bytes(&self) -> Result<Vec<(usize, Vec<u8>)>, LaunchError> {
        self.leaves
            .iter()
            .map(|(io, layout, output)| {
                let mut bytes = Vec::new();
                bytes.try_reserve_exact(output.n_bytes()).map_err(|_| {
                    LaunchError::Failed(format!("output {io}: no memory for a copy to record"))
                })?;
                bytes.resize(output.n_bytes(), 0);
                match layout {
                    Some(layout) => output.write_physical(layout, &mut bytes),
                    None => output.write_le_bytes(&mut bytes),
                }
                .map_err(|err| LaunchError::Failed(format!("output {io}: {err}")))?;
                Ok((*io, bytes))
            })
            .collect()
    }
}

/// An element type and dimensions.
pub type TypedShape = (Dltype, Vec<i64>);

/// The element types (as dltypes) and shapes of a module's entry parameter leaves and result
/// leaves, in order: the I/O signature a compiler gives the NEFF it makes of the module.
///
/// # Errors
/// [`DeviceProgramError::Module`] for bytes that are not a module, or a leaf whose element type
/// has no dltype.
pub fn entry_signature(
    bytes: &[u8],
) -> Result<(Vec<TypedShape>, Vec<TypedShape>), DeviceProgramError> {
    let error = |detail: String| DeviceProgramError::Module { origin: "input".to_owned(), detail };
    let module = hlo::load_module(bytes).map_err(|err| error(err.to_string()))?;
    let (params, results) = entry_leaves(&module).map_err(error)?;
    let typed = |shapes: Vec<ShapeProto>| {
        shapes
            .iter()
            .map(|shape| {
                Dltype::ALL
                    .iter()
                    .find(|d| primitive_of(**d) as i32 == shape.element_type)
                    .map(|d| (*d, shape.dimensions.clone()))
                    .ok_or_else(|| error(format!("{} has no dltype", describe(shape))))
            })
            .collect::<Result<Vec<_>, _>>()
    };
    Ok((typed(params)?, typed(results)?))
}

/// The entry computation's parameter leaves (by parameter number) and result leaves.
fn entry_leaves(module: &HloModuleProto) -> Result<(Vec<ShapeProto>, Vec<ShapeProto>), String> {
    let entry = module
        .computations
        .iter()
        .find(|c| c.id == module.entry_computation_id)
        .or_else(|| module.computations.iter().find(|c| c.name == module.entry_computation_name))
        .ok_or_else(|| "the module has no entry computation".to_owned())?;
    let mut parameters: Vec<(i64, &ShapeProto)> = Vec::new();
    for instruction in entry.instructions.iter().filter(|i| i.opcode == "parameter") {
        let shape = instruction
            .shape
            .as_ref()
            .ok_or_else(|| format!("parameter {} has no shape", instruction.name))?;
        parameters.push((instruction.parameter_number, shape));
    }
    parameters.sort_by_key(|(number, _)| *number);
    let mut params = Vec::new();
    for (_, shape) in parameters {
        params.extend(shape.array_leaves().into_iter().cloned());
    }
    let root = entry
        .instructions
        .iter()
        .find(|i| i.id == entry.root_id)
        .or_else(|| entry.instructions.last())
        .and_then(|i| i.shape.as_ref())
        .ok_or_else(|| format!("entry computation {} has no root shape", entry.name))?;
    Ok((params, root.array_leaves().into_iter().cloned().collect()))
}

/// The position among `names` (the model's inputs, `prefix` `input`, or outputs, `output`, in
/// signature order) of the variable that parameter or result `i` binds to.
pub fn binding_order(names: &[&str], prefix: &str) -> Vec<usize> {
    xla_order(names, prefix).unwrap_or_else(|| (0..names.len()).collect())
}

/// Binds the result leaves. A compile-target NEFF ([`Binding::SignatureOrder`]) leaves zero-element
/// results out, as neuronx-cc does: when it has fewer outputs than the module has result
/// leaves, the zero-element leaves are not bound and their (empty) values are dropped.
fn bind_results(
    shapes: &[ShapeProto],
    layouts: &[Option<Vec<i64>>],
    vars: &[IoVar],
    binding: Binding,
) -> Result<Vec<Option<Leaf>>, String> {
    let empty = |shape: &ShapeProto| shape.dimensions.contains(&0);
    let drop_empty = binding == Binding::SignatureOrder && vars.len() < shapes.len();
    let kept: Vec<usize> =
        (0..shapes.len()).filter(|&index| !(drop_empty && empty(&shapes[index]))).collect();
    let kept_shapes: Vec<ShapeProto> = kept.iter().map(|&index| shapes[index].clone()).collect();
    let kept_layouts: Vec<Option<Vec<i64>>> =
        kept.iter().map(|&index| layouts.get(index).cloned().flatten()).collect();
    let bound = bind_side(&kept_shapes, &kept_layouts, vars, "result", "output", binding)?;
    let mut results: Vec<Option<Leaf>> = (0..shapes.len()).map(|_| None).collect();
    for (index, leaf) in kept.into_iter().zip(bound) {
        results[index] = Some(leaf);
    }
    Ok(results)
}

fn bind_side(
    shapes: &[ShapeProto],
    layouts: &[Option<Vec<i64>>],
    vars: &[IoVar],
    leaf_kind: &str,
    var_kind: &str,
    binding: Binding,
) -> Result<Vec<Leaf>, String> {
    let names: Vec<&str> = vars.iter().map(|var| var.name.as_str()).collect();
    let by_name = match binding {
        Binding::CompilerNames => xla_order(&names, var_kind),
        Binding::SignatureOrder => None,
    };
    let (order, rule) = match by_name {
        Some(order) => (order, format!("{leaf_kind} i is {var_kind}{{i}}")),
        None => ((0..vars.len()).collect(), format!("{leaf_kind} i is the i-th {var_kind}")),
    };
    if shapes.len() != vars.len() {
        let listed: Vec<String> = names.iter().map(|name| format!("{name:?}")).collect();
        return Err(format!(
            "the module has {} {leaf_kind}s, the neff {} {var_kind} variables ({})",
            shapes.len(),
            vars.len(),
            listed.join(", ")
        ));
    }
    let mut bound = Vec::with_capacity(shapes.len());
    for (index, shape) in shapes.iter().enumerate() {
        let io = order[index];
        let var = &vars[io];
        let ty = PrimitiveType::try_from(shape.element_type)
            .map_err(|_| format!("{leaf_kind} {index} has element type {}", shape.element_type))?;
        let what = || {
            format!(
                "{leaf_kind} {index} ({}) and {var_kind} {:?} ({rule})",
                describe(shape),
                var.name
            )
        };
        if let Some(dltype) = var.dltype {
            if !carries(dltype, ty) {
                return Err(format!(
                    "{}: element type {} against dltype {}",
                    what(),
                    type_name(ty),
                    dltype.name()
                ));
            }
        }
        let bytes =
            leaf_bytes(shape).ok_or_else(|| format!("{}: the shape has no byte size", what()))?;
        if bytes != var.size {
            return Err(format!("{}: {bytes} bytes against the variable's {}", what(), var.size));
        }
        bound.push(Leaf {
            io,
            ty,
            dims: shape.dimensions.clone(),
            layout: layouts.get(index).cloned().flatten(),
            bytes,
        });
    }
    Ok(bound)
}

/// Results of one round of a [`Rendezvous`], per rank.
type RoundResults = Arc<Result<Vec<Written>, LaunchError>>;

#[derive(Debug, Default)]
struct Round {
    generation: u64,
    args: Vec<Option<Vec<Input>>>,
    results: Option<RoundResults>,
    /// Set by [`Rendezvous::close`] (`nrt_close`): no round completes any more.
    closed: bool,
}

/// Where the ranks of one collective launch meet (see the module docs).
#[derive(Debug)]
pub struct Rendezvous {
    world: usize,
    round: Mutex<Round>,
    arrived: Condvar,
}

impl Rendezvous {
    /// The number of ranks that meet here.
    pub fn world(&self) -> usize {
        self.world
    }

    /// A meeting point for `world` ranks.
    pub fn new(world: usize) -> Rendezvous {
        Rendezvous {
            world,
            round: Mutex::new(Round {
                args: (0..world).map(|_| None).collect(),
                ..Round::default()
            }),
            arrived: Condvar::new(),
        }
    }

    /// `nrt_close`: fails the waiting ranks and every later launch (see [`Rendezvous::is_closed`]),
    /// waking the waiters so they return now rather than at their timeout.
    pub fn close(&self) {
        let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
        round.closed = true;
        round.args.iter_mut().for_each(|arg| *arg = None);
        self.arrived.notify_all();
    }

    /// Whether [`Rendezvous::close`] was called (a failed `join` then failed for that reason).
    pub fn is_closed(&self) -> bool {
        self.round.lock().unwrap_or_else(PoisonError::into_inner).closed
    }

    /// Rank `rank`'s launch with `args`: returns what this rank writes once every rank has come.
    ///
    /// # Errors
    /// A rank out of range or already waiting, a closed rendezvous, peers that do not come within
    /// `timeout` (`Err(None)`), or the evaluation's failure (`Err(Some(..))`).
    pub fn join(
        &self,
        program: &DeviceProgram,
        rank: usize,
        args: Vec<Input>,
        timeout: Duration,
    ) -> Result<Written, Option<LaunchError>> {
        let closed = || {
            Err(Some(LaunchError::Failed(format!(
                "rank {rank}: the runtime was closed (nrt_close)"
            ))))
        };
        let mut round = self.round.lock().unwrap_or_else(PoisonError::into_inner);
        if round.closed {
            return closed();
        }
        match round.args.get(rank) {
            Some(None) => {}
            Some(Some(_)) => {
                return Err(Some(LaunchError::Failed(format!(
                    "rank {rank} is already in this launch"
                ))));
            }
            None => {
                return Err(Some(LaunchError::Failed(format!(
                    "rank {rank} is outside the world of {}",
                    self.world
                ))));
            }
        }
        round.args[rank] = Some(args);
        let generation = round.generation;
        if round.args.iter().all(Option::is_some) {
            let all: Vec<Vec<Input>> = round.args.iter_mut().filter_map(Option::take).collect();
            round.results = Some(Arc::new(program.run_ranks(all)));
            round.generation += 1;
            self.arrived.notify_all();
        } else {
            let deadline = Instant::now() + timeout;
            while round.generation == generation {
                if round.closed {
                    return closed();
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    round.args[rank] = None;
                    return Err(None);
                }
                round = self
                    .arrived
                    .wait_timeout(round, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
        let results = round.results.clone().ok_or(None)?;
        match &*results {
            Ok(per_rank) => Ok(per_rank[rank].clone()),
            Err(detail) => Err(Some(detail.clone())),
        }
    }
}

/// One launch of a device program, as [`crate::SimRuntime::launches`] records it: the module,
/// the bytes of each parameter (in parameter order) and of each result leaf (in result order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchRecord {
    /// The model's name.
    pub model: String,
    /// The module's bytes (binary `HloModuleProto` or HLO text).
    pub hlo: Vec<u8>,
    /// The parameters' bytes.
    pub args: Vec<Vec<u8>>,
    /// The result leaves' bytes.
    pub results: Vec<Vec<u8>>,
    /// For a launch of a collective program (`nrt_load_collectives`): this launch's rank and the
    /// world size. The records of one round of the ranks all come before any of the next round's,
    /// since no rank can finish a round before every rank has started it.
    pub collective: Option<(usize, usize)>,
}

/// The largest file `NRTSIM_HLO` may name: 1 GiB, the cap `nrtsim` puts on an HLO module, so a
/// setting naming `/dev/zero` or a huge file is refused instead of filling memory.
pub const MAX_HLO_SOURCE_BYTES: u64 = 1 << 30;

/// Reads an `NRTSIM_HLO` file of at most `limit` bytes through the one capped reader
/// ([`crate::capped::read_capped`]); no flag raises this limit, so the message names none.
fn read_hlo_source(path: &Path, limit: u64) -> Result<Vec<u8>, DeviceProgramError> {
    use crate::capped::{CappedReadError, read_capped};
    read_capped(path, limit, HLO_ENV).map_err(|err| {
        let detail = match err {
            CappedReadError::TooLarge { .. } => {
                format!("larger than the limit of {limit} bytes, expected at most that")
            }
            CappedReadError::Io { source, .. } => source.to_string(),
            CappedReadError::OutOfMemory { n_bytes, .. } => {
                format!("{n_bytes} bytes do not fit in memory, expected room for them")
            }
        };
        DeviceProgramError::Source { path: path.display().to_string(), detail }
    })
}

/// Where `NRTSIM_HLO`'s HLO is read from.
impl HloSource {
    /// The HLO for the NEFF `neff_bytes` and where it came from, if this source has one.
    ///
    /// # Errors
    /// [`DeviceProgramError::Source`] when the named file cannot be read.
    pub fn lookup(
        &self,
        neff_bytes: &[u8],
    ) -> Result<Option<(Vec<u8>, String)>, DeviceProgramError> {
        let read = |path: &Path| read_hlo_source(path, MAX_HLO_SOURCE_BYTES);
        match self {
            HloSource::File(path) => {
                Ok(Some((read(path)?, format!("{HLO_ENV}={}", path.display()))))
            }
            HloSource::Directory(dir) => {
                let hash = abi::hex::to_hex(&Sha256::digest(neff_bytes));
                for suffix in ["hlo.pb", "hlo"] {
                    let path = dir.join(format!("{hash}.{suffix}"));
                    if path.is_file() {
                        return Ok(Some((read(&path)?, format!("{HLO_ENV}: {}", path.display()))));
                    }
                }
                Ok(None)
            }
        }
    }
}

/// Whether `bytes` of element type `dltype` hold a NaN (floating-point types of 16 bits or more;
/// integers, bool and fp8 never do here).
pub fn holds_nan(dltype: Dltype, bytes: &[u8]) -> bool {
    match dltype {
        Dltype::Float32 => {
            bytes.chunks_exact(4).any(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_nan())
        }
        Dltype::Float16 => bytes.chunks_exact(2).any(|c| {
            let h = u16::from_le_bytes([c[0], c[1]]);
            h & 0x7c00 == 0x7c00 && h & 0x03ff != 0
        }),
        Dltype::BFloat16 => bytes.chunks_exact(2).any(|c| {
            let h = u16::from_le_bytes([c[0], c[1]]);
            h & 0x7f80 == 0x7f80 && h & 0x007f != 0
        }),
        Dltype::Float64 => bytes.chunks_exact(8).any(|c| {
            let mut raw = [0u8; 8];
            raw.copy_from_slice(c);
            f64::from_le_bytes(raw).is_nan()
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str, dltype: Dltype, elements: usize) -> IoVar {
        IoVar {
            name: name.to_owned(),
            size: elements * dltype.item_size() as usize,
            dltype: Some(dltype),
        }
    }

    #[test]
    fn every_dltype_has_the_element_type_of_its_name() {
        let expected = [
            (Dltype::Float32, PrimitiveType::F32),
            (Dltype::Float16, PrimitiveType::F16),
            (Dltype::BFloat16, PrimitiveType::Bf16),
            (Dltype::Float64, PrimitiveType::F64),
            (Dltype::Int8, PrimitiveType::S8),
            (Dltype::Uint8, PrimitiveType::U8),
            (Dltype::Int16, PrimitiveType::S16),
            (Dltype::Uint16, PrimitiveType::U16),
            (Dltype::Int32, PrimitiveType::S32),
            (Dltype::Uint32, PrimitiveType::U32),
            (Dltype::Int64, PrimitiveType::S64),
            (Dltype::Uint64, PrimitiveType::U64),
            (Dltype::Bool, PrimitiveType::Pred),
            (Dltype::Float8E4m3fn, PrimitiveType::F8e4m3fn),
            (Dltype::Float8E5m2, PrimitiveType::F8e5m2),
        ];
        assert_eq!(expected.len(), Dltype::ALL.len(), "a dltype without an expectation");
        for (dltype, ty) in expected {
            assert_eq!(primitive_of(dltype), ty, "{dltype:?}");
        }
    }

    #[test]
    fn an_hlo_source_over_the_limit_is_refused_unread() {
        // A sparse file: its length is over the limit though no byte of it is stored. The folder
        // is this test's own: `directory_source_is_keyed_by_the_neff_hash` runs beside it in the
        // same process, and removed a folder of the same name while it read it.
        let dir =
            std::env::temp_dir().join(format!("nrtsim-hlo-source-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let path = dir.join("big.hlo.pb");
        let made =
            std::fs::File::create(&path).and_then(|file| file.set_len(MAX_HLO_SOURCE_BYTES + 1));
        assert!(made.is_ok(), "{made:?}");
        let looked_up = HloSource::File(path.clone()).lookup(b"neff").map(|_| ());
        std::fs::remove_dir_all(&dir).ok();
        let message = looked_up.err().map(|err| err.to_string()).unwrap_or_default();
        assert!(message.contains("larger than the limit of 1073741824 bytes"), "{message}");
        let endless = read_hlo_source(Path::new("/dev/zero"), 1000).err().map(|e| e.to_string());
        assert!(endless.unwrap_or_default().contains("limit of 1000 bytes"));
    }

    const SUB: &str = "HloModule sub\n\nENTRY main {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(1)\n  ROOT d = f32[2] subtract(a, b)\n}\n";

    /// One launch of `program` over `data` (input variable `i`'s bytes are `data[i]`).
    fn run(
        program: &DeviceProgram,
        data: &[Vec<u8>],
    ) -> Result<Vec<(usize, Vec<u8>)>, LaunchError> {
        let inputs = program.read_inputs(|i, n| &data[i][..n])?;
        program.run(inputs)?.to_bytes()
    }

    /// The one argument of a one-parameter program.
    fn inputs_of(program: &DeviceProgram, arg: &[u8]) -> Vec<Input> {
        program.read_inputs(|_, n| &arg[..n]).unwrap()
    }

    /// The arguments of a rank of the two-input program `SUB`.
    fn sub_args(a: &[f32], b: &[f32]) -> Vec<Input> {
        let data = [f32s(a), f32s(b)];
        data.iter()
            .map(|bytes| Input::from_le_bytes(PrimitiveType::F32, &[2], bytes).unwrap())
            .collect()
    }

    /// The crate's one way to make f32 bytes is the interpreter's own array constructor (the
    /// unit tests cannot use testkit's, which links this crate's library, not this test build).
    fn f32s(values: &[f32]) -> Vec<u8> {
        hlo::eval::Array::from_f32(&[values.len() as i64], values).bytes
    }

    #[test]
    fn xla_names_bind_by_number_and_others_by_position() {
        let inputs = [var("input1", Dltype::Float32, 2), var("input0", Dltype::Float32, 2)];
        let outputs = [var("output0", Dltype::Float32, 2)];
        let program = DeviceProgram::compile(SUB.as_bytes(), "test", &inputs, &outputs).unwrap();
        // input0 (position 1) holds [10, 20], input1 (position 0) holds [1, 2]: a - b = input0 - input1.
        let data = [f32s(&[1.0, 2.0]), f32s(&[10.0, 20.0])];
        let out = run(&program, &data).unwrap();
        assert_eq!(out, vec![(0, f32s(&[9.0, 18.0]))]);

        let inputs = [var("y", Dltype::Float32, 2), var("x", Dltype::Float32, 2)];
        let program = DeviceProgram::compile(SUB.as_bytes(), "test", &inputs, &outputs).unwrap();
        let out = run(&program, &data).unwrap();
        assert_eq!(out, vec![(0, f32s(&[-9.0, -18.0]))]);
    }

    #[test]
    fn mismatches_name_both_sides() {
        let outputs = [var("output0", Dltype::Float32, 2)];
        let one = [var("input0", Dltype::Float32, 2)];
        let err = DeviceProgram::compile(SUB.as_bytes(), "test", &one, &outputs).unwrap_err();
        assert!(
            err.to_string().contains("2 parameters, the neff 1 input variables (\"input0\")"),
            "{err}"
        );
        let typed = [var("input0", Dltype::Float32, 2), var("input1", Dltype::Int32, 2)];
        let err = DeviceProgram::compile(SUB.as_bytes(), "test", &typed, &outputs).unwrap_err();
        assert!(err.to_string().contains("parameter 1 (f32[2]) and input \"input1\""), "{err}");
        assert!(err.to_string().contains("element type f32 against dltype int32"), "{err}");
        let sized = [var("input0", Dltype::Float32, 2), var("input1", Dltype::Float32, 3)];
        let err = DeviceProgram::compile(SUB.as_bytes(), "test", &sized, &outputs).unwrap_err();
        assert!(err.to_string().contains("8 bytes against the variable's 12"), "{err}");
        let err = DeviceProgram::compile(b"HloModule broken\nENTRY {", "test", &one, &outputs)
            .unwrap_err();
        assert!(matches!(err, DeviceProgramError::Module { .. }), "{err}");
    }

    #[test]
    fn pred_binds_to_uint8_and_8_bit_floats_to_int8_as_neuronx_cc_writes_them() {
        const LESS: &str = "HloModule less\n\nENTRY main {\n  a = f32[3] parameter(0)\n  b = f32[3] parameter(1)\n  ROOT lt = pred[3] compare(a, b), direction=LT\n}\n";
        let inputs = [var("a", Dltype::Float32, 3), var("b", Dltype::Float32, 3)];
        let program =
            DeviceProgram::compile(LESS.as_bytes(), "test", &inputs, &[var("o", Dltype::Uint8, 3)])
                .unwrap();
        let data = [f32s(&[1.0, 5.0, 2.0]), f32s(&[2.0, 4.0, 2.0])];
        assert_eq!(run(&program, &data).unwrap(), vec![(0, vec![1, 0, 0])]);
        // A pred parameter reads any nonzero byte of its uint8 variable as true.
        const NOT: &str = "HloModule not\n\nENTRY main {\n  p = pred[3] parameter(0)\n  ROOT n = pred[3] not(p)\n}\n";
        let flags = [var("p", Dltype::Uint8, 3)];
        let program =
            DeviceProgram::compile(NOT.as_bytes(), "test", &flags, &[var("o", Dltype::Uint8, 3)])
                .unwrap();
        assert_eq!(run(&program, &[vec![0, 7, 1]]).unwrap(), vec![(0, vec![1, 0, 0])]);
        // f8e5m2 1.0 is 0x3c; the variable is int8.
        const F8: &str = "HloModule f8\n\nENTRY main {\n  x = f8e5m2[2] parameter(0)\n  ROOT y = f8e5m2[2] add(x, x)\n}\n";
        let bytes = [var("x", Dltype::Int8, 2)];
        let program =
            DeviceProgram::compile(F8.as_bytes(), "test", &bytes, &[var("y", Dltype::Int8, 2)])
                .unwrap();
        // 1 + 1 = 2 (0x40); -1 + -1 = -2 (0xc0).
        assert_eq!(run(&program, &[vec![0x3c, 0xbc]]).unwrap(), vec![(0, vec![0x40, 0xc0])]);
        // Other carriers stay refused: pred is not int8, f32 is not int32.
        let err =
            DeviceProgram::compile(LESS.as_bytes(), "test", &inputs, &[var("o", Dltype::Int8, 3)])
                .unwrap_err();
        assert!(err.to_string().contains("element type pred against dltype int8"), "{err}");
    }

    #[test]
    fn a_rank_whose_peers_do_not_come_times_out_and_can_join_again() {
        let inputs = [var("input0", Dltype::Float32, 2), var("input1", Dltype::Float32, 2)];
        let outputs = [var("output0", Dltype::Float32, 2)];
        let program = DeviceProgram::compile(SUB.as_bytes(), "test", &inputs, &outputs).unwrap();
        let group = Rendezvous::new(2);
        let args = || sub_args(&[1.0, 2.0], &[3.0, 4.0]);
        let waited = group.join(&program, 0, args(), Duration::from_millis(20));
        assert!(matches!(waited, Err(None)), "{waited:?}");
        assert!(matches!(group.join(&program, 2, args(), Duration::ZERO), Err(Some(_))));
        // Both ranks come: each gets its own result.
        let got = std::thread::scope(|scope| {
            let first = scope.spawn(|| group.join(&program, 0, args(), Duration::from_secs(10)));
            let second = group.join(
                &program,
                1,
                sub_args(&[5.0, 5.0], &[1.0, 1.0]),
                Duration::from_secs(10),
            );
            (first.join().unwrap(), second)
        });
        assert_eq!(got.0.unwrap().to_bytes().unwrap(), vec![(0, f32s(&[-2.0, -2.0]))]);
        assert_eq!(got.1.unwrap().to_bytes().unwrap(), vec![(0, f32s(&[4.0, 4.0]))]);
    }

    /// Nested loops of 10^7 iterations each: 10^14 inner iterations, carrying input0 through.
    const RUNAWAY: &str = "HloModule runaway\n\ninner_cond {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  n = s32[] constant(10000000)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n\ninner_body {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  x = f32[2] get-tuple-element(s), index=1\n  one = s32[] constant(1)\n  i1 = s32[] add(i, one)\n  ROOT t = (s32[], f32[2]) tuple(i1, x)\n}\n\nouter_body {\n  s = (s32[], f32[2]) parameter(0)\n  j = s32[] get-tuple-element(s), index=0\n  x = f32[2] get-tuple-element(s), index=1\n  zero = s32[] constant(0)\n  start = (s32[], f32[2]) tuple(zero, x)\n  done = (s32[], f32[2]) while(start), condition=inner_cond, body=inner_body\n  x1 = f32[2] get-tuple-element(done), index=1\n  one = s32[] constant(1)\n  j1 = s32[] add(j, one)\n  ROOT t = (s32[], f32[2]) tuple(j1, x1)\n}\n\nENTRY main {\n  input0 = f32[2] parameter(0)\n  zero = s32[] constant(0)\n  start = (s32[], f32[2]) tuple(zero, input0)\n  done = (s32[], f32[2]) while(start), condition=inner_cond, body=outer_body\n  ROOT output0 = f32[2] get-tuple-element(done), index=1\n}\n";

    #[test]
    fn a_run_over_a_launch_limit_is_over_limit_on_one_rank_and_on_many() {
        let inputs = [var("input0", Dltype::Float32, 2)];
        let outputs = [var("output0", Dltype::Float32, 2)];
        let mut program =
            DeviceProgram::compile(RUNAWAY.as_bytes(), "test", &inputs, &outputs).unwrap();
        let limits = |device_time_limit, work_budget, time_limit| hlo::eval::RunLimits {
            device_time_limit,
            work_budget,
            time_limit,
        };
        program.set_run_limits(&limits(None, Some(10_000), None));
        let arg = f32s(&[1.0, 2.0]);
        let over_budget = |err: LaunchError| match err {
            LaunchError::OverLimit { variable, value, detail } => {
                assert_eq!((variable, value.as_str()), ("NRTSIM_WORK_BUDGET", "10000"));
                assert!(detail.contains("work budget of 10000 element-operations"), "{detail}");
            }
            other => panic!("expected OverLimit, got {other:?}"),
        };
        over_budget(run(&program, std::slice::from_ref(&arg)).unwrap_err());
        over_budget(
            program
                .run_ranks(vec![inputs_of(&program, &arg), inputs_of(&program, &arg)])
                .unwrap_err(),
        );
        // A millisecond of device time is some 20 000 iterations of the inner loop (a compare
        // and an add each, 22.9 ns apiece): the run stops there, at libnrt's variable.
        program.set_run_limits(&limits(Some(Duration::from_millis(1)), None, None));
        for err in [
            run(&program, std::slice::from_ref(&arg)).unwrap_err(),
            program
                .run_ranks(vec![inputs_of(&program, &arg), inputs_of(&program, &arg)])
                .unwrap_err(),
        ] {
            match err {
                LaunchError::OverLimit { variable, value, detail } => {
                    assert_eq!((variable, value.as_str()), ("NEURON_RT_EXEC_TIMEOUT", "0.001"));
                    assert!(detail.contains("execution timeout of 0.001 s"), "{detail}");
                }
                other => panic!("expected OverLimit, got {other:?}"),
            }
        }
        program.set_run_limits(&limits(None, None, Some(Duration::from_millis(30))));
        match program
            .run_ranks(vec![inputs_of(&program, &arg), inputs_of(&program, &arg)])
            .unwrap_err()
        {
            LaunchError::OverLimit { variable, value, .. } => {
                assert_eq!((variable, value.as_str()), ("NRTSIM_LAUNCH_TIMEOUT_MS", "30"));
            }
            other => panic!("expected OverLimit, got {other:?}"),
        }
    }

    #[test]
    fn xla_order_needs_every_number_once() {
        assert_eq!(xla_order(&["input1", "input0"], "input"), Some(vec![1, 0]));
        assert_eq!(xla_order(&["input0", "input2"], "input"), None);
        assert_eq!(xla_order(&["input0", "input0"], "input"), None);
        assert_eq!(xla_order(&["input01"], "input"), None);
        assert_eq!(xla_order(&["x"], "input"), None);
        assert_eq!(xla_order(&[], "input"), Some(vec![]));
    }

    #[test]
    fn directory_source_is_keyed_by_the_neff_hash() {
        let dir = std::env::temp_dir().join(format!("nrtsim-hlo-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // sha256("abc"), a published test vector.
        let name = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad.hlo";
        std::fs::write(dir.join(name), SUB).unwrap();
        let source = HloSource::of_path(&dir);
        let (bytes, origin) = source.lookup(b"abc").unwrap().unwrap();
        assert_eq!(bytes, SUB.as_bytes());
        assert!(origin.contains(name), "{origin}");
        assert_eq!(source.lookup(b"abd").unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

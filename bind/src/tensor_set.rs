//! The boundary of a model as the layer uses it (`Layout`), the context every layer function
//! runs in (`Ctx`: the runtime, the trace, the layout), and load-time tensor sets
//! (docs/libtorchneuron.md §1): one runtime tensor per `MetaTensor`, `item_size × Π shape` bytes, added to its
//! set under `MetaTensor.name`.
//!
//! Allocation statuses follow libtorchneuron (docs/libtorchneuron.md §1): `nrt_allocate_tensor_set` and `nrt_tensor_allocate`
//! tolerate 1003 and fail with libtorchneuron's messages on any other non-zero status. In the
//! Rust trait an `Err` carries no handle, so a tolerated 1003 leaves the layer with the null
//! handle the C call would have left behind ([`NULL_TENSOR`], [`NULL_SET`]); the next call that
//! uses it fails as it would in C (typically `nrt_add_tensor_to_tensor_set` with
//! `NRT_INVALID_HANDLE`, reported as "Failed to add neuron tensor to the input set").

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::{
    BindError, MSG_ADD_TENSOR, MSG_ALLOCATE_SET, MSG_ALLOCATE_TENSOR, MSG_LOAD, MSG_WRITE,
};
use super::host_tensor::HostTensor;
use abi::dtype::{ScalarType, n_bytes_with_item_size, scalar_type_of_raw};
use abi::metaneff::Decoded;
use abi::metaneff::decoded::DecodedTensor;
use abi::metaneff::edit::Side;
use abi::metaneff::meta_tensor::Type as TensorType;
use abi::neff::{MrType, Neff, ReadOptions};
use abi::runtime::prelude::*;
use abi::runtime::{ModelId, NrtError, Placement, SetId, TensorId};
use abi::status::NrtStatus;
use abi::trace::{Trace, TracingRuntime, name_text};

/// Weights by `checkpoint_key` (bytes, as the metaneff stores it).
pub type Weights = BTreeMap<Vec<u8>, HostTensor>;

/// What every layer function needs: the runtime (wrapped for tracing when a trace is on), the
/// trace for the layer's own events, and the layout of the current metaneff.
#[derive(Clone)]
pub(crate) struct Ctx {
    pub(crate) runtime: Arc<dyn Runtime>,
    pub(crate) trace: Option<Arc<Trace>>,
    pub(crate) layout: Arc<Layout>,
    /// The runtime without the tracing wrapper, for [`Ctx::fork`].
    untraced: Arc<dyn Runtime>,
}

impl Ctx {
    pub(crate) fn new(runtime: Arc<dyn Runtime>, trace: Option<Arc<Trace>>, layout: Layout) -> Ctx {
        let untraced = Arc::clone(&runtime);
        let runtime: Arc<dyn Runtime> = match &trace {
            Some(trace) => Arc::new(TracingRuntime::new(runtime, trace.clone())),
            None => runtime,
        };
        Ctx { runtime, trace, layout: Arc::new(layout), untraced }
    }

    /// The context for one of several pieces of work that run at once: when tracing, its runtime
    /// and events record into a [`Trace::fork`] of this context's trace, which
    /// [`Ctx::join`] appends in order afterwards.
    pub(crate) fn fork(&self) -> Ctx {
        let Some(trace) = &self.trace else {
            return self.clone();
        };
        let fork = Arc::new(trace.fork());
        Ctx {
            runtime: Arc::new(TracingRuntime::new(Arc::clone(&self.untraced), Arc::clone(&fork))),
            trace: Some(fork),
            layout: Arc::clone(&self.layout),
            untraced: Arc::clone(&self.untraced),
        }
    }

    /// Appends the traces of `forks` (made by [`Ctx::fork`]) to this context's, in order, as if
    /// their work had run one after another.
    pub(crate) fn join(&self, forks: &[Ctx]) {
        if let Some(trace) = &self.trace {
            trace.join(forks.iter().filter_map(|fork| fork.trace.as_deref()));
        }
    }

    /// Records a layer event; `line` is not even called when tracing is off.
    pub(crate) fn event(&self, line: impl FnOnce() -> String) {
        if let Some(trace) = &self.trace {
            trace.record(line());
        }
    }
}

/// The handle a tolerated 1003 from `nrt_tensor_allocate` leaves (C's null pointer); runtimes
/// never hand out handle 0.
pub const NULL_TENSOR: TensorId = TensorId(0);
/// The handle a tolerated 1003 from `nrt_allocate_tensor_set` leaves.
pub const NULL_SET: SetId = SetId(0);

/// What fills an input slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputRole {
    /// `USER_INPUT`: from the caller's tensors, validated.
    User,
    /// `UNDEFINED_TYPE`: from the caller's tensors (older producers write no type), not
    /// validated (libtorchneuron checks `type == USER_INPUT` only).
    UntypedUser,
    /// `INPUT_STATE`: bound by the layer, zero at load (or the caller's value by
    /// `checkpoint_key`), persisted through its aliased output.
    State,
    /// `INPUT_WEIGHT`: bound by the layer from the caller's weights, by `checkpoint_key`.
    Weight,
}

impl InputRole {
    /// Whether the caller supplies this slot's tensor.
    pub fn is_user_supplied(self) -> bool {
        matches!(self, InputRole::User | InputRole::UntypedUser)
    }
}

/// One boundary tensor as the layer needs it.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    /// The name for messages (lossy where the bytes are not UTF-8).
    pub(crate) name: String,
    /// The name's exact bytes, the tensor-set key handed to the runtime.
    pub(crate) key: Vec<u8>,
    pub(crate) scalar_type: ScalarType,
    pub(crate) shape: Vec<i64>,
    pub(crate) n_bytes: usize,
    pub(crate) dynamic: bool,
    /// Inputs only; `User` for outputs (unused there).
    pub(crate) role: InputRole,
    pub(crate) checkpoint_key: Option<Vec<u8>>,
    pub(crate) var_id: Option<u32>,
    pub(crate) mr_type: MrType,
}

impl Slot {
    /// The bytes of one row of a dynamic tensor (everything after the leading dimension).
    pub(crate) fn row_bytes(&self) -> usize {
        match self.shape.first() {
            Some(&lead) if lead > 0 => self.n_bytes / lead as usize,
            _ => 0,
        }
    }
}

/// The var_id and MrType of every variable of a NEFF, by name, for the trace.
#[derive(Clone, Debug, Default)]
pub(crate) struct VarTable {
    vars: BTreeMap<String, (u32, MrType)>,
}

impl VarTable {
    /// Reads the NEFF leniently; a NEFF that does not parse gives an empty table (libnrt decides
    /// at load whether it is acceptable, the layer does not re-check).
    pub(crate) fn of_neff(neff: &[u8], options: &ReadOptions) -> VarTable {
        let mut vars = BTreeMap::new();
        if let Ok(neff) = Neff::parse(neff, options) {
            for graph in &neff.graphs {
                for var in &graph.vars {
                    vars.entry(var.name.clone())
                        .or_insert((var.var_id, var.mr_type.unwrap_or(MrType::Invalid)));
                }
            }
        }
        VarTable { vars }
    }

    fn lookup(&self, name: &str) -> (Option<u32>, MrType) {
        match self.vars.get(name) {
            Some(&(var_id, mr_type)) => (Some(var_id), mr_type),
            None => (None, MrType::Invalid),
        }
    }
}

/// A decoded metaneff in the form the launch path reads without allocating.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub(crate) inputs: Vec<Slot>,
    pub(crate) outputs: Vec<Slot>,
    /// The input slots the caller fills, in metaneff order.
    pub(crate) user_slots: Vec<usize>,
    /// For each output, the input it aliases.
    pub(crate) output_alias: Vec<Option<usize>>,
    pub(crate) return_aliases: bool,
    /// The caller's weight tensor for each weight slot.
    pub(crate) weights: Vec<Option<HostTensor>>,
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn slot_of(
    side: Side,
    index: usize,
    tensor: DecodedTensor<'_>,
    vars: &VarTable,
) -> Result<Slot, BindError> {
    // Names are bytes end to end (docs/abi-facts.md §1): the exact bytes key the tensor set, and the
    // runtime judges them; a lossy copy is only for messages.
    let name = lossy(tensor.name());
    let dtype_error = |source| BindError::Dtype { side, index, name: name.clone(), source };
    let scalar_type = scalar_type_of_raw(tensor.data_type()).map_err(dtype_error)?;
    let n_bytes = n_bytes_with_item_size(tensor.shape(), scalar_type.item_size(), None)
        .map_err(dtype_error)?;
    let role = match side {
        Side::Output => InputRole::User,
        Side::Input => match TensorType::try_from(tensor.r#type()) {
            Ok(TensorType::UndefinedType) => InputRole::UntypedUser,
            Ok(TensorType::UserInput) => InputRole::User,
            Ok(TensorType::InputState) => InputRole::State,
            Ok(TensorType::InputWeight) => InputRole::Weight,
            Err(_) => {
                return Err(BindError::UnknownTensorType { index, name, value: tensor.r#type() });
            }
        },
    };
    // NEFF variable names are JSON strings, so bytes that are not UTF-8 name no variable.
    let (var_id, mr_type) = match std::str::from_utf8(tensor.name()) {
        Ok(text) => vars.lookup(text),
        Err(_) => (None, MrType::Invalid),
    };
    Ok(Slot {
        scalar_type,
        shape: tensor.shape().to_vec(),
        n_bytes: usize::try_from(n_bytes).unwrap_or(usize::MAX),
        dynamic: tensor.allow_dynamic_batch_size(),
        role,
        checkpoint_key: tensor.checkpoint_key().map(<[u8]>::to_vec),
        var_id,
        mr_type,
        name,
        key: tensor.name().to_vec(),
    })
}

fn describe(scalar_type: ScalarType, shape: &[i64]) -> String {
    format!("{scalar_type} {shape:?}")
}

impl Layout {
    /// The positions, among the caller's tensors, of the inputs an output is aliased to: a
    /// launch writes their new value into them (donation), whether or not the output is
    /// returned.
    pub(crate) fn donated_positions(&self) -> Vec<usize> {
        self.user_slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| self.output_alias.contains(&Some(**slot)))
            .map(|(position, _)| position)
            .collect()
    }

    /// Builds the layout of a decoded metaneff; weight slots stay unresolved until
    /// [`Layout::resolve_internal`].
    pub(crate) fn from_decoded(meta: &Decoded, vars: &VarTable) -> Result<Layout, BindError> {
        let inputs = (meta.input_tensors().iter().enumerate())
            .map(|(index, tensor)| slot_of(Side::Input, index, tensor, vars))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = (meta.output_tensors().iter().enumerate())
            .map(|(index, tensor)| slot_of(Side::Output, index, tensor, vars))
            .collect::<Result<Vec<_>, _>>()?;
        let mut output_alias = vec![None; outputs.len()];
        // Each output once, in output order.
        for &(output, input) in meta.output_aliases_to() {
            let in_range = usize::try_from(output)
                .ok()
                .filter(|&o| o < outputs.len())
                .zip(usize::try_from(input).ok().filter(|&i| i < inputs.len()));
            match in_range {
                Some((output, input)) => output_alias[output] = Some(input),
                None => {
                    return Err(BindError::AliasOutOfRange {
                        output,
                        input,
                        n_outputs: outputs.len(),
                        n_inputs: inputs.len(),
                    });
                }
            }
        }
        let user_slots = (0..inputs.len()).filter(|&i| inputs[i].role.is_user_supplied()).collect();
        Ok(Layout {
            weights: vec![None; inputs.len()],
            inputs,
            outputs,
            user_slots,
            output_alias,
            return_aliases: meta.model_config().is_some_and(|c| c.return_aliases),
        })
    }

    /// Checks that every state and weight has a `checkpoint_key` and finds each weight in
    /// `weights`, with the metaneff's dtype and shape; a state found there (checked the same way)
    /// starts from that value instead of zeros.
    pub(crate) fn resolve_internal(&mut self, weights: &Weights) -> Result<(), BindError> {
        for (index, slot) in self.inputs.iter().enumerate() {
            if !matches!(slot.role, InputRole::State | InputRole::Weight) {
                continue;
            }
            let kind = if slot.role == InputRole::State { "INPUT_STATE" } else { "INPUT_WEIGHT" };
            let Some(key) = &slot.checkpoint_key else {
                return Err(BindError::MissingCheckpointKey {
                    kind,
                    index,
                    name: slot.name.clone(),
                });
            };
            // A state's starting value is optional (zeros without one); a weight's is not.
            let weight = match (weights.get(key), slot.role) {
                (Some(weight), _) => weight,
                (None, InputRole::State) => continue,
                (None, _) => {
                    return Err(BindError::MissingWeight {
                        key: lossy(key),
                        available: weights.keys().map(|k| lossy(k)).collect::<Vec<_>>().join(", "),
                    });
                }
            };
            if weight.scalar_type() != slot.scalar_type || weight.shape() != slot.shape {
                return Err(BindError::WeightMismatch {
                    key: lossy(key),
                    expected: describe(slot.scalar_type, &slot.shape),
                    actual: describe(weight.scalar_type(), weight.shape()),
                });
            }
            self.weights[index] = Some(weight.clone());
        }
        Ok(())
    }
}

/// Where and how a task loads its NEFF.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LoadPlacement {
    pub(crate) vnc: i32,
    pub(crate) vnc_count: i32,
    /// `(ctx_device_id, ctx_device_count)` for `nrt_load_collectives`.
    pub(crate) collectives: Option<(u32, u32)>,
}

impl LoadPlacement {
    /// The NeuronCore device tensors are allocated on (`-1`, "first free", allocates on 0).
    fn tensor_vnc(self) -> i32 {
        self.vnc.max(0)
    }
}

/// A loaded model with its two tensor sets and slot arrays (libtorchneuron's
/// `SPMDRankedTask`).
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) model: ModelId,
    pub(crate) input_set: SetId,
    pub(crate) output_set: SetId,
    /// The runtime tensor the layer allocated for each input slot (staging for user inputs,
    /// the persistent buffer for states and weights).
    pub(crate) input_own: Vec<TensorId>,
    /// The runtime tensor allocated for each output; `None` for an aliased output (donated).
    pub(crate) output_own: Vec<Option<TensorId>>,
    /// The tensor currently bound in each input slot.
    pub(crate) input_bound: Vec<TensorId>,
    /// The tensor currently bound in each output slot.
    pub(crate) output_bound: Vec<TensorId>,
    /// Host mirrors of states (zero or the caller's value at load) and weights (the caller's tensors), returned for
    /// outputs aliased to them.
    pub(crate) internal_host: Vec<Option<HostTensor>>,
}

fn runtime_error(call: &'static str, message: &'static str) -> impl FnOnce(NrtError) -> BindError {
    move |source| BindError::Runtime { call, message, source }
}

/// A tolerated-1003 outcome: the value, or the null handle with a trace line.
fn tolerate<T>(ctx: &Ctx, result: Result<T, NrtError>, null: T) -> Result<T, NrtError> {
    match result {
        Err(error) if error.status == NrtStatus::ExecCompletedWithNumErr => {
            ctx.event(|| format!("status tolerated {}", error.status.name()));
            Ok(null)
        }
        other => other,
    }
}

/// Everything a partial load allocated, so that a failure releases it.
#[derive(Default)]
struct Allocations {
    model: Option<ModelId>,
    sets: Vec<SetId>,
    tensors: Vec<TensorId>,
}

impl Allocations {
    fn release(self, runtime: &dyn Runtime) {
        for set in self.sets {
            let _ = runtime.destroy_tensor_set(set);
        }
        for tensor in self.tensors {
            let _ = runtime.tensor_free(tensor);
        }
        if let Some(model) = self.model {
            let _ = runtime.unload(model);
        }
    }
}

fn allocate_set(ctx: &Ctx) -> Result<SetId, BindError> {
    let result = ctx.runtime.allocate_tensor_set();
    tolerate(ctx, result, NULL_SET).map_err(runtime_error("allocate_tensor_set", MSG_ALLOCATE_SET))
}

fn allocate_tensor(ctx: &Ctx, vnc: i32, slot: &Slot) -> Result<TensorId, BindError> {
    let result = ctx.runtime.tensor_allocate(Placement::Device, vnc, slot.n_bytes, &slot.key);
    tolerate(ctx, result, NULL_TENSOR)
        .map_err(runtime_error("tensor_allocate", MSG_ALLOCATE_TENSOR))
}

/// Adds `tensor` to `set` under the slot's name and traces the binding.
pub(crate) fn bind(
    ctx: &Ctx,
    side: Side,
    index: usize,
    slot: &Slot,
    set: SetId,
    tensor: TensorId,
) -> Result<(), BindError> {
    ctx.runtime
        .add_tensor_to_tensor_set(set, &slot.key, tensor)
        .map_err(runtime_error("add_tensor_to_tensor_set", MSG_ADD_TENSOR))?;
    if let Some(trace) = &ctx.trace {
        trace.record_with(|names| {
            let var_id = slot.var_id.map_or_else(|| "?".to_owned(), |id| id.to_string());
            format!(
                "bind {} {index} {} -> {} var_id {var_id} {}",
                side_name(side),
                name_text(&slot.key),
                names.tensor(tensor),
                slot.mr_type.name()
            )
        });
    }
    Ok(())
}

pub(crate) fn side_name(side: Side) -> &'static str {
    match side {
        Side::Input => "input",
        Side::Output => "output",
    }
}

/// Loads the NEFF, builds the input set then the output set, and stages states (zeros) and
/// weights. On failure everything allocated so far is released.
pub(crate) fn load(ctx: &Ctx, neff: &[u8], placement: LoadPlacement) -> Result<Loaded, BindError> {
    let mut allocations = Allocations::default();
    match load_into(ctx, neff, placement, &mut allocations) {
        Ok(loaded) => Ok(loaded),
        Err(error) => {
            allocations.release(ctx.runtime.as_ref());
            Err(error)
        }
    }
}

fn load_into(
    ctx: &Ctx,
    neff: &[u8],
    placement: LoadPlacement,
    allocations: &mut Allocations,
) -> Result<Loaded, BindError> {
    let layout = &ctx.layout;
    let model = match placement.collectives {
        None => ctx.runtime.load(neff, placement.vnc, placement.vnc_count),
        Some((rank, world)) => {
            ctx.runtime.load_collectives(neff, placement.vnc, placement.vnc_count, rank, world)
        }
    }
    .map_err(runtime_error(
        if placement.collectives.is_some() { "load_collectives" } else { "load" },
        MSG_LOAD,
    ))?;
    allocations.model = Some(model);
    let vnc = placement.tensor_vnc();

    let input_set = allocate_set(ctx)?;
    allocations.sets.push(input_set);
    let mut input_own = Vec::with_capacity(layout.inputs.len());
    for (index, slot) in layout.inputs.iter().enumerate() {
        let tensor = allocate_tensor(ctx, vnc, slot)?;
        allocations.tensors.push(tensor);
        bind(ctx, Side::Input, index, slot, input_set, tensor)?;
        input_own.push(tensor);
    }

    let output_set = allocate_set(ctx)?;
    allocations.sets.push(output_set);
    let mut output_own = Vec::with_capacity(layout.outputs.len());
    let mut output_bound = Vec::with_capacity(layout.outputs.len());
    for (index, slot) in layout.outputs.iter().enumerate() {
        let (own, tensor) = match layout.output_alias[index] {
            // A donated buffer: the output is the aliased input's runtime tensor.
            Some(input) => (None, input_own[input]),
            None => {
                let tensor = allocate_tensor(ctx, vnc, slot)?;
                allocations.tensors.push(tensor);
                (Some(tensor), tensor)
            }
        };
        bind(ctx, Side::Output, index, slot, output_set, tensor)?;
        output_own.push(own);
        output_bound.push(tensor);
    }

    let mut internal_host = vec![None; layout.inputs.len()];
    for (index, slot) in layout.inputs.iter().enumerate() {
        let host = match slot.role {
            // A copy, so the caller's tensor is not updated through the state's aliased output
            // and every load starts from the same value.
            InputRole::State => match &layout.weights[index] {
                Some(initial) => {
                    HostTensor::from_bytes(slot.scalar_type, &slot.shape, initial.to_bytes())?
                }
                None => HostTensor::zeros(slot.scalar_type, &slot.shape)?,
            },
            InputRole::Weight => match &layout.weights[index] {
                Some(weight) => weight.clone(),
                None => continue,
            },
            InputRole::User | InputRole::UntypedUser => continue,
        };
        // States are written as zeros explicitly: a real nrt_tensor_allocate need not zero.
        ctx.runtime
            .tensor_write(input_own[index], 0, &host.storage().read())
            .map_err(runtime_error("tensor_write", MSG_WRITE))?;
        internal_host[index] = Some(host);
    }

    Ok(Loaded {
        model,
        input_set,
        output_set,
        input_bound: input_own.clone(),
        input_own,
        output_own,
        output_bound,
        internal_host,
    })
}

/// Destroys the sets, frees the layer's tensors and unloads the model; returns the first error.
pub(crate) fn release(ctx: &Ctx, loaded: Loaded) -> Result<(), BindError> {
    let runtime = ctx.runtime.as_ref();
    let mut first: Result<(), BindError> = Ok(());
    let mut keep = |result: Result<(), NrtError>, call: &'static str, message: &'static str| {
        if let (Err(source), true) = (result, first.is_ok()) {
            first = Err(BindError::Runtime { call, message, source });
        }
    };
    keep(
        runtime.destroy_tensor_set(loaded.input_set),
        "destroy_tensor_set",
        "failed to release a tensor set",
    );
    keep(
        runtime.destroy_tensor_set(loaded.output_set),
        "destroy_tensor_set",
        "failed to release a tensor set",
    );
    for tensor in loaded.input_own.iter().chain(loaded.output_own.iter().flatten()) {
        keep(runtime.tensor_free(*tensor), "tensor_free", "failed to free a runtime tensor");
    }
    keep(runtime.unload(loaded.model), "unload", "failed to unload the model");
    first
}

/// Shared ownership of the NEFF bytes, for reloads and the background load thread.
pub(crate) type NeffBytes = Arc<[u8]>;

#[cfg(test)]
mod tests {
    use super::*;
    use abi::metaneff::meta_tensor::DataType;
    use abi::metaneff::{MetaNeff, MetaTensor, ModelConfig};

    fn tensor(name: &[u8], r#type: i32, data_type: DataType, shape: &[i64]) -> MetaTensor {
        MetaTensor {
            name: name.to_vec().into(),
            shape: shape.to_vec(),
            data_type: data_type as i32,
            r#type,
            ..MetaTensor::default()
        }
    }

    fn input(name: &str, r#type: i32) -> MetaTensor {
        tensor(name.as_bytes(), r#type, DataType::Float, &[2])
    }

    /// The layout of `meta` as the layer reads it: encoded, then decoded.
    fn layout_of(meta: &MetaNeff) -> Result<Layout, BindError> {
        let decoded = Decoded::decode(&abi::metaneff::encode(meta)).expect("decodes");
        Layout::from_decoded(&decoded, &VarTable::default())
    }

    #[test]
    fn each_schema_tensor_type_has_its_role_and_other_values_are_errors() {
        let meta = MetaNeff {
            input_tensors: (0..4).map(|t| input(&format!("in{t}"), t)).collect(),
            ..MetaNeff::default()
        };
        let layout = layout_of(&meta).expect("types 0..=3 are the schema's");
        let roles: Vec<InputRole> = layout.inputs.iter().map(|slot| slot.role).collect();
        assert_eq!(
            roles,
            [InputRole::UntypedUser, InputRole::User, InputRole::State, InputRole::Weight]
        );
        assert_eq!(layout.user_slots, [0, 1]);

        let meta = MetaNeff { input_tensors: vec![input("in0", 1), input("odd", 4)], ..meta };
        match layout_of(&meta) {
            Err(BindError::UnknownTensorType { index, name, value }) => {
                assert_eq!((index, name.as_str(), value), (1, "odd", 4));
            }
            other => panic!("expected UnknownTensorType, got {other:?}"),
        }
    }

    /// A slot's fields that the metaneff decides: name, key, scalar type, shape, bytes, dynamic,
    /// role and checkpoint key.
    type SlotFields =
        (String, Vec<u8>, ScalarType, Vec<i64>, usize, bool, InputRole, Option<Vec<u8>>);

    fn fields(slot: &Slot) -> SlotFields {
        (
            slot.name.clone(),
            slot.key.clone(),
            slot.scalar_type,
            slot.shape.clone(),
            slot.n_bytes,
            slot.dynamic,
            slot.role,
            slot.checkpoint_key.clone(),
        )
    }

    #[test]
    fn a_layout_holds_each_tensors_name_size_role_and_key_and_each_outputs_alias() {
        let mut state = tensor(b"state", 2, DataType::Float, &[3, 1, 4]);
        state.checkpoint_key = Some(b"layer.0.state".to_vec().into());
        state.allow_dynamic_batch_size = true;
        let meta = MetaNeff {
            input_tensors: vec![input("in0", 1), tensor(b"\xff", 0, DataType::Int64, &[5]), state],
            output_tensors: vec![
                tensor(b"output0", 0, DataType::Float, &[]),
                tensor(b"output1", 0, DataType::Bfloat16, &[2, 0]),
            ],
            output_aliases_to: [(1, 2), (0, 0)].into(),
            model_config: Some(ModelConfig { return_aliases: true, ..ModelConfig::default() }),
            ..MetaNeff::default()
        };
        let layout = layout_of(&meta).expect("a usable metaneff");
        let user = |name: &str, key: &[u8], scalar_type, shape: &[i64], n_bytes, role| {
            (name.to_owned(), key.to_vec(), scalar_type, shape.to_vec(), n_bytes, false, role, None)
        };
        assert_eq!(
            layout.inputs.iter().map(fields).collect::<Vec<_>>(),
            [
                user("in0", b"in0", ScalarType::Float, &[2], 8, InputRole::User),
                // The message's name is lossy, the key exact.
                user("\u{fffd}", b"\xff", ScalarType::Long, &[5], 40, InputRole::UntypedUser),
                (
                    "state".to_owned(),
                    b"state".to_vec(),
                    ScalarType::Float,
                    vec![3, 1, 4],
                    48,
                    true,
                    InputRole::State,
                    Some(b"layer.0.state".to_vec()),
                ),
            ]
        );
        // Outputs have no role of their own; a scalar holds one element, an empty dimension none.
        assert_eq!(
            layout.outputs.iter().map(fields).collect::<Vec<_>>(),
            [
                user("output0", b"output0", ScalarType::Float, &[], 4, InputRole::User),
                user("output1", b"output1", ScalarType::BFloat16, &[2, 0], 0, InputRole::User),
            ]
        );
        // No NEFF: no variable is known.
        assert!(layout.inputs.iter().all(|slot| slot.var_id.is_none()));
        assert_eq!(layout.user_slots, [0, 1]);
        assert_eq!(layout.output_alias, [Some(0), Some(2)]);
        assert!(layout.return_aliases);
        assert_eq!(layout.weights.len(), 3);

        let empty = layout_of(&MetaNeff::default()).expect("an empty metaneff is usable");
        assert!(empty.inputs.is_empty() && empty.outputs.is_empty() && !empty.return_aliases);

        match layout_of(&MetaNeff { output_aliases_to: [(5, 0)].into(), ..meta }) {
            Err(BindError::AliasOutOfRange { output, input, n_outputs, n_inputs }) => {
                assert_eq!((output, input, n_outputs, n_inputs), (5, 0, 2, 3));
            }
            other => panic!("expected AliasOutOfRange, got {other:?}"),
        }
    }
}

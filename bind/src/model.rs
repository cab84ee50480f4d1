//! [`Model`] (docs/libtorchneuron.md §5) and the launch path shared with [`super::SpmdModel`] (docs/libtorchneuron.md §2).

use std::thread::JoinHandle;

use super::batching::{self, BatchPlan};
use super::error::{BindError, HostTensorError, MSG_EXECUTE, MSG_READ, MSG_WRITE};
use super::host_tensor::HostTensor;
use super::tensor_set::{self, Layout, LoadPlacement, Loaded, NeffBytes, VarTable};
use super::tensor_set::{Ctx, Weights};
use super::validate::{ValidatePath, validate_layout};
use super::{ForwardOutput, ModelOptions, OutputTensors, Zeroed};
use abi::dtype::ScalarType;
use abi::metaneff::Decoded;
use abi::metaneff::edit::{self, ConfigFlag, Side};
use abi::runtime::{NrtError, SetId, TensorId};
use abi::status::NrtStatus;

/// Binds `want` into a slot unless it is already there (libtorchneuron's `set_input` /
/// `set_output`: a pointer compare, then `nrt_add_tensor_to_tensor_set` only on change).
fn rebind(
    ctx: &Ctx,
    side: Side,
    index: usize,
    set: SetId,
    bound: &mut TensorId,
    want: TensorId,
) -> Result<(), BindError> {
    let layout = &ctx.layout;
    if *bound == want {
        ctx.event(|| format!("rebind skipped {} {index}", tensor_set::side_name(side)));
        return Ok(());
    }
    let slot = match side {
        Side::Input => &layout.inputs[index],
        Side::Output => &layout.outputs[index],
    };
    tensor_set::bind(ctx, side, index, slot, set, want)?;
    *bound = want;
    Ok(())
}

fn write_error(source: NrtError) -> BindError {
    BindError::Runtime { call: "tensor_write", message: MSG_WRITE, source }
}

fn read_error(source: NrtError) -> BindError {
    BindError::Runtime { call: "tensor_read", message: MSG_READ, source }
}

/// A caller tensor too short for the rows the batch plan needs from it.
fn short_host_tensor(host: &HostTensor, needed: usize, actual: usize) -> BindError {
    BindError::HostTensor(HostTensorError::ByteLength {
        scalar_type: host.scalar_type(),
        shape: host.shape().to_vec(),
        expected: needed as u64,
        actual,
    })
}

/// Whether input slot `index` is cut into slices under `plan`.
fn is_sliced(layout: &Layout, plan: Option<BatchPlan>, index: usize) -> bool {
    let slot = &layout.inputs[index];
    plan.is_some_and(|plan| !plan.is_exact()) && slot.dynamic && slot.role.is_user_supplied()
}

/// Writes launch `k`'s part of a host input into the slot's staging tensor.
fn write_input(
    ctx: &Ctx,
    index: usize,
    host: &HostTensor,
    staging: TensorId,
    plan: Option<BatchPlan>,
    k: usize,
) -> Result<(), BindError> {
    let bytes = host.storage().read();
    if !is_sliced(&ctx.layout, plan, index) {
        return ctx.runtime.tensor_write(staging, 0, &bytes).map_err(write_error);
    }
    let plan = plan.unwrap_or(BatchPlan { batch: 0, compiled: 0 });
    let row_bytes = ctx.layout.inputs[index].row_bytes();
    let (start, n_rows) = plan.rows(k);
    // Untyped inputs are not validated, so their bytes may be shorter than the batch says.
    let Some(rows) = bytes.get(start * row_bytes..(start + n_rows) * row_bytes) else {
        return Err(short_host_tensor(host, (start + n_rows) * row_bytes, bytes.len()));
    };
    if n_rows == plan.compiled {
        ctx.runtime.tensor_write(staging, 0, rows).map_err(write_error)
    } else {
        let mut padded = vec![0u8; plan.compiled * row_bytes];
        padded[..rows.len()].copy_from_slice(rows);
        ctx.runtime.tensor_write(staging, 0, &padded).map_err(write_error)
    }
}

/// Reads `tensor` into `host`'s bytes: the whole tensor, or the real rows of launch `k`.
fn read_into(
    ctx: &Ctx,
    tensor: TensorId,
    host: &HostTensor,
    rows: Option<(usize, usize, usize)>,
) -> Result<(), BindError> {
    let mut storage = host.storage().write();
    let bytes = storage.writable()?;
    match rows {
        None => ctx.runtime.tensor_read(tensor, 0, bytes).map_err(read_error),
        Some((start, n_rows, row_bytes)) => {
            let end = (start + n_rows) * row_bytes;
            if bytes.len() < end {
                return Err(short_host_tensor(host, end, bytes.len()));
            }
            ctx.runtime
                .tensor_read(tensor, 0, &mut bytes[start * row_bytes..end])
                .map_err(read_error)
        }
    }
}

/// The tensor `made` gives for the output at `position` of the returned list, checked to be one
/// the forward writes in place.
fn made_output(
    made: &dyn OutputTensors,
    rank: usize,
    position: usize,
    scalar_type: ScalarType,
    shape: &[i64],
) -> Result<HostTensor, BindError> {
    let tensor = made.output(rank, position, scalar_type, shape)?;
    let in_place = tensor.writes_in_place();
    if tensor.scalar_type() != scalar_type || tensor.shape() != shape || !in_place {
        return Err(BindError::OutputTensor {
            index: position,
            expected: format!("{scalar_type} {shape:?}"),
            actual: format!(
                "{} {:?}{}",
                tensor.scalar_type(),
                tensor.shape(),
                if in_place { "" } else { ", read only" }
            ),
        });
    }
    Ok(tensor)
}

/// One forward on a loaded task: validate, write, bind, execute (tolerating 1003) and collect
/// the outputs (into the tensors `made` gives), over as many launches as the batch plan needs.
pub(crate) fn run(
    ctx: &Ctx,
    loaded: &mut Loaded,
    inputs: &[HostTensor],
    path: ValidatePath,
    (rank, made): (usize, &dyn OutputTensors),
) -> Result<ForwardOutput, BindError> {
    let layout = &*ctx.layout;
    if let Err(error) = validate_layout(layout, inputs, path) {
        ctx.event(|| error.trace_line());
        return Err(BindError::Validate(error));
    }
    let plan = batching::plan(layout, inputs)?;

    // The caller tensor of each input slot, if any.
    let mut source: Vec<Option<&HostTensor>> = vec![None; layout.inputs.len()];
    for (&index, tensor) in layout.user_slots.iter().zip(inputs) {
        source[index] = Some(tensor);
    }

    // What each output returns: the aliased input's tensor (donation), or a fresh tensor from
    // `made` (by its place among the outputs returned; one not returned is the layer's own).
    let mut results: Vec<HostTensor> = Vec::with_capacity(layout.outputs.len());
    let mut position = 0;
    for (index, slot) in layout.outputs.iter().enumerate() {
        let returned = layout.return_aliases || layout.output_alias[index].is_none();
        let fresh: &dyn OutputTensors = if returned { made } else { &Zeroed };
        let at = position;
        position += usize::from(returned);
        let result = match layout.output_alias[index] {
            Some(input) => match (source[input], &loaded.internal_host[input]) {
                (Some(host), _) | (None, Some(host)) => host.clone(),
                // A user slot the ranked caller left out: the output is read into a fresh
                // tensor of the input's type and shape.
                (None, None) => {
                    let donor = &layout.inputs[input];
                    made_output(fresh, rank, at, donor.scalar_type, &donor.shape)?
                }
            },
            None => match plan {
                Some(plan) if slot.dynamic => {
                    let mut shape = slot.shape.clone();
                    shape[0] = plan.batch as i64;
                    made_output(fresh, rank, at, slot.scalar_type, &shape)?
                }
                _ => made_output(fresh, rank, at, slot.scalar_type, &slot.shape)?,
            },
        };
        results.push(result);
    }

    let n_launches = plan.map_or(1, BatchPlan::n_launches);
    let mut status = NrtStatus::Success;
    for k in 0..n_launches {
        for (index, host) in source.iter().enumerate() {
            let want = match host {
                Some(host) => match host.device() {
                    Some(device) => device,
                    None => {
                        let staging = loaded.input_own[index];
                        write_input(ctx, index, host, staging, plan, k)?;
                        staging
                    }
                },
                None if layout.inputs[index].role.is_user_supplied() => loaded.input_bound[index],
                None => loaded.input_own[index],
            };
            rebind(
                ctx,
                Side::Input,
                index,
                loaded.input_set,
                &mut loaded.input_bound[index],
                want,
            )?;
        }
        for index in 0..layout.outputs.len() {
            let want = match layout.output_alias[index] {
                Some(input) => loaded.input_bound[input],
                None => loaded.output_own[index].unwrap_or(loaded.output_bound[index]),
            };
            rebind(
                ctx,
                Side::Output,
                index,
                loaded.output_set,
                &mut loaded.output_bound[index],
                want,
            )?;
        }
        let launch =
            ctx.runtime.execute(loaded.model, loaded.input_set, loaded.output_set).map_err(
                |source| BindError::Runtime { call: "execute", message: MSG_EXECUTE, source },
            )?;
        if launch != NrtStatus::Success {
            ctx.event(|| format!("status tolerated {}", launch.name()));
            status = launch;
        }
        for (index, result) in results.iter().enumerate() {
            let tensor = loaded.output_bound[index];
            let rows = match layout.output_alias[index] {
                Some(input) if is_sliced(layout, plan, input) => plan.map(|plan| {
                    let (start, n_rows) = plan.rows(k);
                    (start, n_rows, layout.inputs[input].row_bytes())
                }),
                Some(_) => None,
                None => match plan {
                    Some(plan) if layout.outputs[index].dynamic && !plan.is_exact() => {
                        let (start, n_rows) = plan.rows(k);
                        Some((start, n_rows, layout.outputs[index].row_bytes()))
                    }
                    _ => None,
                },
            };
            read_into(ctx, tensor, result, rows)?;
        }
    }

    let mut outputs = Vec::with_capacity(results.len());
    for (index, result) in results.into_iter().enumerate() {
        match layout.output_alias[index] {
            Some(input) => {
                ctx.event(|| format!("alias output {index} = input {input} (shared storage)"));
                if layout.return_aliases {
                    outputs.push(result);
                }
            }
            None => outputs.push(result),
        }
    }
    Ok(ForwardOutput { outputs, status })
}

/// Where a [`Model`] is in its load lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadStatus {
    /// Not loaded (lazy, unloaded, or a failed load).
    Unloaded,
    /// Loading in the background (`async_load`).
    Loading,
    /// Loaded: the NEFF is on the device and the tensor sets are built.
    Loaded,
}

enum LoadState {
    Unloaded,
    Loading(JoinHandle<Result<Loaded, BindError>>),
    Loaded(Loaded),
}

/// `torch.classes.neuron.Model`: one NEFF and its metaneff on one NeuronCore group.
pub struct Model {
    runtime_ctx: Ctx,
    neff: NeffBytes,
    /// The metaneff, read-only; it holds the bytes the setters edit.
    meta: Decoded,
    vars: VarTable,
    weights: Weights,
    /// The limits every decode of the metaneff applies ([`ModelOptions::metaneff_limits`]).
    metaneff_limits: abi::metaneff::MetaneffLimits,
    placement: LoadPlacement,
    state: LoadState,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("placement", &self.placement)
            .field("load_status", &self.load_status())
            .finish_non_exhaustive()
    }
}

impl Model {
    /// A model from NEFF and metaneff bytes. Unless the metaneff's `lazy_load` is set it is
    /// loaded now ([`Model::load`]: in the background when `async_load` is set).
    ///
    /// # Errors
    /// [`BindError::Metaneff`] for bytes that do not decode; the layout errors (unmapped dtype,
    /// alias out of range, missing checkpoint_key, [`BindError::MissingWeight`],
    /// [`BindError::WeightMismatch`]); any load error of [`Model::blocking_load`].
    pub fn new(
        runtime: std::sync::Arc<dyn abi::runtime::Runtime>,
        neff: &[u8],
        metaneff_bytes: &[u8],
        options: ModelOptions,
    ) -> Result<Model, BindError> {
        let meta = Decoded::decode_with_limits(metaneff_bytes, &options.metaneff_limits)?;
        let vars = VarTable::of_neff(neff, &options.neff_read_options);
        let mut layout = Layout::from_decoded(&meta, &vars)?;
        layout.resolve_internal(&options.weights)?;
        let lazy = meta.model_config().is_some_and(|c| c.lazy_load);
        let mut model = Model {
            runtime_ctx: Ctx::new(runtime, options.trace, layout),
            neff: NeffBytes::from(neff),
            meta,
            vars,
            weights: options.weights,
            metaneff_limits: options.metaneff_limits,
            placement: LoadPlacement {
                vnc: options.vnc,
                vnc_count: options.vnc_count,
                collectives: None,
            },
            state: LoadState::Unloaded,
        };
        if !lazy {
            model.load()?;
        }
        Ok(model)
    }

    /// The current metaneff bytes (the setters edit them losslessly).
    pub fn metaneff(&self) -> &[u8] {
        self.meta.message_bytes()
    }

    /// The current metaneff, decoded.
    pub fn metaneff_decoded(&self) -> &Decoded {
        &self.meta
    }

    /// Where the model is in its load lifecycle.
    pub fn load_status(&self) -> LoadStatus {
        match self.state {
            LoadState::Unloaded => LoadStatus::Unloaded,
            LoadState::Loading(_) => LoadStatus::Loading,
            LoadState::Loaded(_) => LoadStatus::Loaded,
        }
    }

    /// Whether no background load is still running (a finished one is collected by the next
    /// forward or [`Model::blocking_load`]). Lets an observer wait without joining, e.g. so a
    /// trace does not depend on thread timing.
    pub fn background_load_finished(&self) -> bool {
        match &self.state {
            LoadState::Loading(handle) => handle.is_finished(),
            LoadState::Unloaded | LoadState::Loaded(_) => true,
        }
    }

    fn async_load(&self) -> bool {
        self.meta.model_config().is_some_and(|c| c.async_load)
    }

    /// Loads the model unless it is loaded or loading: in a background thread when the
    /// metaneff's `async_load` is set (the next forward or [`Model::blocking_load`] waits for
    /// it), otherwise now.
    ///
    /// # Errors
    /// As [`Model::blocking_load`] when loading now.
    pub fn load(&mut self) -> Result<(), BindError> {
        if !matches!(self.state, LoadState::Unloaded) {
            return Ok(());
        }
        if self.async_load() {
            let ctx = self.runtime_ctx.clone();
            let neff = self.neff.clone();
            let placement = self.placement;
            self.state = LoadState::Loading(std::thread::spawn(move || {
                tensor_set::load(&ctx, &neff, placement)
            }));
            Ok(())
        } else {
            self.blocking_load()
        }
    }

    /// Loads the model now, or waits for a background load to finish.
    ///
    /// # Errors
    /// [`BindError::Runtime`] with "failed to load the neff", "Failed to allocate tensor set",
    /// "Failed to allocate neuron runtime tensor", "Failed to add neuron tensor to the input
    /// set" or a failed state/weight write; [`BindError::ThreadPanicked`].
    pub fn blocking_load(&mut self) -> Result<(), BindError> {
        let loaded = match std::mem::replace(&mut self.state, LoadState::Unloaded) {
            LoadState::Loaded(loaded) => loaded,
            LoadState::Loading(handle) => {
                // The wait itself is the observable difference between async and sync loading.
                self.runtime_ctx.event(|| "background load joined".to_owned());
                handle
                    .join()
                    .map_err(|_| BindError::ThreadPanicked { thread: "background load" })??
            }
            LoadState::Unloaded => tensor_set::load(&self.runtime_ctx, &self.neff, self.placement)?,
        };
        self.state = LoadState::Loaded(loaded);
        Ok(())
    }

    /// Releases the tensor sets and the layer's tensors and unloads the model (waiting for a
    /// background load first). States start again from
    /// their initial value (zeros, or the given weight) at the next load.
    ///
    /// # Errors
    /// The first failed release call, as [`BindError::Runtime`]; the error of a background load
    /// that failed.
    pub fn unload(&mut self) -> Result<(), BindError> {
        match std::mem::replace(&mut self.state, LoadState::Unloaded) {
            LoadState::Unloaded => Ok(()),
            LoadState::Loading(handle) => {
                let loaded = handle
                    .join()
                    .map_err(|_| BindError::ThreadPanicked { thread: "background load" })??;
                tensor_set::release(&self.runtime_ctx, loaded)
            }
            LoadState::Loaded(loaded) => tensor_set::release(&self.runtime_ctx, loaded),
        }
    }

    /// `forward_v2`: validates the user inputs (in metaneff order of the user-supplied slots),
    /// loads the model if needed, launches, and returns the outputs in metaneff order (aliased
    /// outputs only when `return_aliases` is set).
    ///
    /// # Errors
    /// [`BindError::Validate`]; a load error; the batching errors; [`BindError::Runtime`] for a
    /// failed write, bind, execute (other than 1003, which is returned as the status) or read.
    pub fn forward(&mut self, inputs: &[HostTensor]) -> Result<ForwardOutput, BindError> {
        self.forward_into(inputs, &Zeroed)
    }

    /// [`Model::forward`], reading each output it makes into the tensor `outputs` gives for it
    /// (rank 0), which it returns; an output donated by an input is that input, as before.
    ///
    /// # Errors
    /// As [`Model::forward`]; `outputs`' own errors, and [`BindError::OutputTensor`] for a
    /// tensor of another type or shape, or one that cannot be written in place.
    pub fn forward_into(
        &mut self,
        inputs: &[HostTensor],
        outputs: &dyn OutputTensors,
    ) -> Result<ForwardOutput, BindError> {
        if !matches!(self.state, LoadState::Loaded(_)) {
            self.blocking_load()?;
        }
        let LoadState::Loaded(loaded) = &mut self.state else {
            unreachable!("blocking_load leaves the model loaded or returns an error");
        };
        run(&self.runtime_ctx, loaded, inputs, ValidatePath::Model, (0, outputs))
    }

    fn replace_metaneff(&mut self, bytes: Vec<u8>) -> Result<(), BindError> {
        let meta = Decoded::decode_owned_with_limits(
            prost::bytes::Bytes::from(bytes),
            &self.metaneff_limits,
        )?;
        let mut layout = Layout::from_decoded(&meta, &self.vars)?;
        layout.resolve_internal(&self.weights)?;
        self.meta = meta;
        self.runtime_ctx.layout = std::sync::Arc::new(layout);
        Ok(())
    }

    /// Sets `ModelConfig.async_load` in the stored metaneff (lossless edit); it takes effect at
    /// the next load.
    ///
    /// # Errors
    /// [`BindError::Metaneff`] if the stored bytes do not re-decode.
    pub fn set_async_load(&mut self, value: bool) -> Result<(), BindError> {
        let bytes = edit::set_config_flag(self.meta.message_bytes(), ConfigFlag::AsyncLoad, value)?;
        self.replace_metaneff(bytes)
    }

    /// Sets `ModelConfig.lazy_load` in the stored metaneff (lossless edit); it takes effect at
    /// the next construction or reload.
    ///
    /// # Errors
    /// As [`Model::set_async_load`].
    pub fn set_lazy_load(&mut self, value: bool) -> Result<(), BindError> {
        let bytes = edit::set_config_flag(self.meta.message_bytes(), ConfigFlag::LazyLoad, value)?;
        self.replace_metaneff(bytes)
    }

    /// Sets `allow_dynamic_batch_size` on every input and output (lossless edit) and forces a
    /// reload, as `Model::set_dynamic_batching` does (docs/libtorchneuron.md §4).
    ///
    /// # Errors
    /// As [`Model::set_async_load`], and any unload or load error.
    pub fn set_dynamic_batching(&mut self, value: bool) -> Result<(), BindError> {
        let bytes =
            edit::set_allow_dynamic_batch_size(self.meta.message_bytes(), |_, _| Some(value))?;
        self.replace_metaneff(bytes)?;
        self.reload()
    }

    /// Our model of `set_dynamic_batching_mixed(vector<int64>, vector<int64>)`, a per-tensor
    /// variant whose arguments the disassembly leaves open (to be pinned on a device): one flag per input and one
    /// per output in metaneff order, non-zero meaning dynamic; then a forced reload.
    ///
    /// # Errors
    /// [`BindError::DynamicFlagsLength`] naming both lengths when a list does not have one flag
    /// per tensor; as [`Model::set_dynamic_batching`] otherwise.
    pub fn set_dynamic_batching_mixed(
        &mut self,
        inputs: &[i64],
        outputs: &[i64],
    ) -> Result<(), BindError> {
        for (side, flags, expected) in [
            (Side::Input, inputs, self.meta.input_tensors().len()),
            (Side::Output, outputs, self.meta.output_tensors().len()),
        ] {
            if flags.len() != expected {
                return Err(BindError::DynamicFlagsLength { side, expected, actual: flags.len() });
            }
        }
        let bytes =
            edit::set_allow_dynamic_batch_size(self.meta.message_bytes(), |side, index| {
                let flags = match side {
                    Side::Input => inputs,
                    Side::Output => outputs,
                };
                flags.get(index).map(|&flag| flag != 0)
            })?;
        self.replace_metaneff(bytes)?;
        self.reload()
    }

    /// `set_neuron_devices(start, count)`: the NeuronCores the next load uses (`start` as
    /// `nrt_load`'s `vnc`, `-1` for the first free one; `count` as its `vnc_count`). A loaded
    /// model is unloaded and loaded again there.
    ///
    /// # Errors
    /// [`BindError::InvalidPlacement`] for a count below 1 or a start below -1 (values libnrt
    /// would only refuse at load); any unload or load error.
    pub fn set_neuron_devices(&mut self, start: i64, count: i64) -> Result<(), BindError> {
        let (Ok(vnc), Ok(vnc_count)) = (i32::try_from(start), i32::try_from(count)) else {
            return Err(BindError::InvalidPlacement { start, count });
        };
        if vnc < -1 || vnc_count < 1 {
            return Err(BindError::InvalidPlacement { start, count });
        }
        self.placement = LoadPlacement { vnc, vnc_count, collectives: None };
        self.reload()
    }

    /// `load_collectives(vnc, vnc_count, ctx_device_id, ctx_device_count)`: loads the model now
    /// with `nrt_load_collectives`, as rank `ctx_device_id` of `ctx_device_count`, unloading it
    /// first if it was loaded by a plain load or elsewhere.
    ///
    /// # Errors
    /// [`BindError::InvalidPlacement`] for cores as in [`Model::set_neuron_devices`];
    /// [`BindError::InvalidRank`] unless `0 <= ctx_device_id < ctx_device_count`; any unload or
    /// load error.
    pub fn load_collectives(
        &mut self,
        vnc: i64,
        vnc_count: i64,
        ctx_device_id: i64,
        ctx_device_count: i64,
    ) -> Result<(), BindError> {
        let (Ok(core), Ok(count)) = (i32::try_from(vnc), i32::try_from(vnc_count)) else {
            return Err(BindError::InvalidPlacement { start: vnc, count: vnc_count });
        };
        if core < -1 || count < 1 {
            return Err(BindError::InvalidPlacement { start: vnc, count: vnc_count });
        }
        let (Ok(rank), Ok(world)) = (u32::try_from(ctx_device_id), u32::try_from(ctx_device_count))
        else {
            return Err(BindError::InvalidRank { rank: ctx_device_id, world: ctx_device_count });
        };
        if rank >= world {
            return Err(BindError::InvalidRank { rank: ctx_device_id, world: ctx_device_count });
        }
        self.unload()?;
        self.placement =
            LoadPlacement { vnc: core, vnc_count: count, collectives: Some((rank, world)) };
        self.blocking_load()
    }

    /// How many loaded instances the model has: 1 when loaded (or loading), 0 otherwise.
    pub fn instance_count(&self) -> i64 {
        match self.state {
            LoadState::Unloaded => 0,
            LoadState::Loading(_) | LoadState::Loaded(_) => 1,
        }
    }

    /// The positions of the caller's tensors that a forward writes (inputs donated to an
    /// output): after a forward they hold the launch's new value.
    pub fn donated_inputs(&self) -> Vec<usize> {
        self.runtime_ctx.layout.donated_positions()
    }

    /// The NEFF bytes the model was made from.
    pub fn neff(&self) -> &[u8] {
        &self.neff
    }

    /// Unloads and loads again if the model was loaded or loading.
    fn reload(&mut self) -> Result<(), BindError> {
        if matches!(self.state, LoadState::Unloaded) {
            return Ok(());
        }
        self.unload()?;
        self.load()
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.unload();
    }
}

#[cfg(test)]
mod tests {
    use crate::InputRole;

    #[test]
    fn input_roles_say_who_supplies_the_tensor() {
        assert!(InputRole::User.is_user_supplied() && InputRole::UntypedUser.is_user_supplied());
        assert!(!InputRole::State.is_user_supplied() && !InputRole::Weight.is_user_supplied());
    }
}

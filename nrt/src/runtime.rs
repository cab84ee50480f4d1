//! [`Runtime`] for [`NrtRuntime`]: each method is one C call through `sys`, its status mapped
//! by [`status_of`], and handle bookkeeping so that raw pointers never leave this crate.
//!
//! The only refusals made here, without calling libnrt, are those that keep pointers sound:
//! - a handle this runtime did not give out, or already released, is `NRT_INVALID_HANDLE`
//!   (libnrt would be handed a dangling pointer);
//! - a name with a NUL byte is `NRT_INVALID` (it cannot be written as a C string);
//! - a launch (`nrt_execute`, `nrt_execute_repeat`, `nrta_execute_schedule`) whose tensor set
//!   still names a tensor the caller freed is `NRT_INVALID_HANDLE`, as the simulator's is.
//!   libnrt's set holds the caller's pointer, which the header asks to stay valid until the set
//!   is destroyed; after `nrt_tensor_free` libnrt would launch with a dangling pointer. This
//!   crate keeps the C tensor alive while a set names it (its `nrt_tensor_free` runs when the
//!   set lets go), so nothing dangles, but the launch is refused as libnrt's contract says it
//!   cannot be made.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use abi::dtype::NrtDtype;
use abi::functions::LibnrtFunction;
use abi::runtime::{
    AsyncReadBuffer, ExternalBuffer, Framework, InspectConfig, InstanceInfo, ModelId, NrtError,
    NrtVersion, Placement, Runtime, SeqId, SetId, SysTraceConfig, SysTraceFetch, TensorId,
    TensorInfo, TensorReadBatch, TensorUsage, TensorWriteBatch, TrackerId, VncMemoryStats,
};
use abi::status::NrtStatus;
use abi::trace::name_text;

use crate::sys::{self, OwnedModel, OwnedSet, OwnedTensor, RawStatus};
use crate::{NrtRuntime, status_of};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `Ok` for `NRT_SUCCESS`, else the status of `call`.
fn check(call: LibnrtFunction, code: RawStatus) -> Result<(), NrtError> {
    if code == sys::SUCCESS { Ok(()) } else { Err(failed(call, code)) }
}

/// As [`check`], with the byte range in the message (libnrt's own message does not cross the C
/// ABI, and a bounds error should say which range was asked for).
fn check_range(
    call: LibnrtFunction,
    offset: impl Into<u128>,
    len: usize,
    code: RawStatus,
) -> Result<(), NrtError> {
    check(call, code).map_err(|err| {
        let start = offset.into();
        let end = start + len as u128;
        NrtError::new(
            err.status,
            format!("{call} of bytes {start}..{end} returned {}", err.status.name()),
        )
    })
}

fn failed(call: LibnrtFunction, code: RawStatus) -> NrtError {
    let status = status_of(code);
    NrtError::new(status, format!("{call} returned {}", status.name()))
}

fn c_name(call: LibnrtFunction, name: &[u8]) -> Result<std::ffi::CString, NrtError> {
    sys::c_name(name).map_err(|_| {
        NrtError::new(
            NrtStatus::Invalid,
            format!("{call}: name {} has a NUL byte, expected a C string", name_text(name)),
        )
    })
}

/// The handle tables of one runtime.
#[derive(Default)]
pub(crate) struct Handles {
    tensors: Mutex<HashMap<TensorId, Arc<OwnedTensor>>>,
    sets: Mutex<HashMap<SetId, Arc<OwnedSet>>>,
    models: Mutex<HashMap<ModelId, Arc<OwnedModel>>>,
}

impl Handles {
    /// Releases everything still held: sets first (they keep tensors), then tensors, then
    /// models.
    pub(crate) fn release_all(&self) {
        let sets = std::mem::take(&mut *lock(&self.sets));
        drop(sets);
        let tensors = std::mem::take(&mut *lock(&self.tensors));
        drop(tensors);
        let models = std::mem::take(&mut *lock(&self.models));
        drop(models);
    }
}

impl NrtRuntime {
    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn tensor(&self, tensor: TensorId) -> Result<Arc<OwnedTensor>, NrtError> {
        lock(&self.handles.tensors).get(&tensor).cloned().ok_or_else(|| {
            NrtError::new(
                NrtStatus::InvalidHandle,
                format!("tensor {} was not allocated by this runtime or is freed", tensor.0),
            )
        })
    }

    fn set(&self, set: SetId) -> Result<Arc<OwnedSet>, NrtError> {
        lock(&self.handles.sets).get(&set).cloned().ok_or_else(|| {
            NrtError::new(
                NrtStatus::InvalidHandle,
                format!("tensor set {} was not allocated by this runtime or is destroyed", set.0),
            )
        })
    }

    fn model(&self, model: ModelId) -> Result<Arc<OwnedModel>, NrtError> {
        lock(&self.handles.models).get(&model).cloned().ok_or_else(|| {
            NrtError::new(
                NrtStatus::InvalidHandle,
                format!("model {} was not loaded by this runtime or is unloaded", model.0),
            )
        })
    }

    fn tracker(&self, tracker: TrackerId) -> Result<Arc<sys::OwnedTracker>, NrtError> {
        lock(&self.trackers).get(&tracker).cloned().ok_or_else(|| unknown_tracker(tracker))
    }

    fn insert_tensor(&self, tensor: OwnedTensor) -> TensorId {
        let id = TensorId(tensor.tag);
        lock(&self.handles.tensors).insert(id, Arc::new(tensor));
        id
    }

    fn insert_model(&self, model: OwnedModel) -> ModelId {
        let id = ModelId(self.next_id());
        lock(&self.handles.models).insert(id, Arc::new(model));
        id
    }

    /// `NRT_INVALID_HANDLE` when `set` names a tensor the caller freed (see the module docs).
    fn check_members(
        &self,
        call: LibnrtFunction,
        set: &OwnedSet,
        which: &str,
    ) -> Result<(), NrtError> {
        let tensors = lock(&self.handles.tensors);
        match set.member_tags().into_iter().find(|(_, tag)| !tensors.contains_key(&TensorId(*tag)))
        {
            Some((name, tag)) => Err(NrtError::new(
                NrtStatus::InvalidHandle,
                format!(
                    "{call}: tensor {tag} was freed (nrt_tensor_free) while still in the {which} set under {}, expected it allocated until the set is destroyed or the name re-added",
                    name_text(&name)
                ),
            )),
            None => Ok(()),
        }
    }

    fn launch(
        &self,
        call: LibnrtFunction,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        repeat: Option<i32>,
    ) -> Result<NrtStatus, NrtError> {
        let model = self.model(model)?;
        let (input, output) = (self.set(input_set)?, self.set(output_set)?);
        self.check_members(call, &input, "input")?;
        self.check_members(call, &output, "output")?;
        let code = model.execute(&input, &output, repeat);
        let status = status_of(code);
        if status.is_completed() { Ok(status) } else { Err(failed(call, code)) }
    }
}

impl Runtime for NrtRuntime {
    fn init(
        &self,
        framework: Framework,
        fw_version: &str,
        fal_version: &str,
    ) -> Result<(), NrtError> {
        let fw_version = c_name(LibnrtFunction::nrt_init, fw_version.as_bytes())?;
        let fal_version = c_name(LibnrtFunction::nrt_init, fal_version.as_bytes())?;
        check(
            LibnrtFunction::nrt_init,
            self.library.init(framework.code(), &fw_version, &fal_version),
        )
    }

    fn close(&self) {
        self.library.close();
    }

    fn load(&self, neff: &[u8], vnc: i32, vnc_count: i32) -> Result<ModelId, NrtError> {
        let model = self
            .library
            .load(neff, vnc, vnc_count, None)
            .map_err(|c| failed(LibnrtFunction::nrt_load, c))?;
        Ok(self.insert_model(model))
    }

    fn load_collectives(
        &self,
        neff: &[u8],
        vnc: i32,
        vnc_count: i32,
        ctx_device_id: u32,
        ctx_device_count: u32,
    ) -> Result<ModelId, NrtError> {
        let model = self
            .library
            .load(neff, vnc, vnc_count, Some((ctx_device_id, ctx_device_count)))
            .map_err(|c| failed(LibnrtFunction::nrt_load_collectives, c))?;
        Ok(self.insert_model(model))
    }

    fn unload(&self, model: ModelId) -> Result<(), NrtError> {
        let owner = self.model(model)?;
        check(LibnrtFunction::nrt_unload, owner.unload())?;
        lock(&self.handles.models).remove(&model);
        Ok(())
    }

    fn execute(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
    ) -> Result<NrtStatus, NrtError> {
        self.launch(LibnrtFunction::nrt_execute, model, input_set, output_set, None)
    }

    fn execute_repeat(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        repeat_count: i32,
    ) -> Result<NrtStatus, NrtError> {
        self.launch(
            LibnrtFunction::nrt_execute_repeat,
            model,
            input_set,
            output_set,
            Some(repeat_count),
        )
    }

    fn allocate_tensor_set(&self) -> Result<SetId, NrtError> {
        let set = self
            .library
            .allocate_tensor_set()
            .map_err(|c| failed(LibnrtFunction::nrt_allocate_tensor_set, c))?;
        let id = SetId(self.next_id());
        lock(&self.handles.sets).insert(id, Arc::new(set));
        Ok(id)
    }

    fn destroy_tensor_set(&self, set: SetId) -> Result<(), NrtError> {
        let removed = lock(&self.handles.sets).remove(&set);
        removed.map(drop).ok_or_else(|| {
            NrtError::new(
                NrtStatus::InvalidHandle,
                format!("tensor set {} was not allocated by this runtime or is destroyed", set.0),
            )
        })
    }

    fn add_tensor_to_tensor_set(
        &self,
        set: SetId,
        name: &[u8],
        tensor: TensorId,
    ) -> Result<(), NrtError> {
        let (owner, tensor) = (self.set(set)?, self.tensor(tensor)?);
        let name = c_name(LibnrtFunction::nrt_add_tensor_to_tensor_set, name)?;
        check(LibnrtFunction::nrt_add_tensor_to_tensor_set, owner.add(&name, &tensor))
    }

    fn get_tensor_from_tensor_set(&self, set: SetId, name: &[u8]) -> Result<TensorId, NrtError> {
        let owner = self.set(set)?;
        let c_name = c_name(LibnrtFunction::nrt_get_tensor_from_tensor_set, name)?;
        match owner.get(&c_name) {
            Ok(Some(tag)) => Ok(TensorId(tag)),
            Ok(None) => Err(NrtError::new(
                NrtStatus::Failure,
                format!(
                    "nrt_get_tensor_from_tensor_set returned a tensor never added under {name:?}"
                ),
            )),
            Err(code) => Err(failed(LibnrtFunction::nrt_get_tensor_from_tensor_set, code)),
        }
    }

    fn tensor_allocate(
        &self,
        placement: Placement,
        vnc: i32,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError> {
        let c_name = c_name(LibnrtFunction::nrt_tensor_allocate, name)?;
        let tensor = self
            .library
            .tensor_allocate(placement.code(), vnc, size, &c_name, self.next_id())
            .map_err(|c| failed(LibnrtFunction::nrt_tensor_allocate, c))?;
        Ok(self.insert_tensor(tensor))
    }

    fn tensor_allocate_empty(&self, name: &[u8]) -> Result<TensorId, NrtError> {
        let c_name = c_name(LibnrtFunction::nrt_tensor_allocate_empty, name)?;
        let tensor = self
            .library
            .tensor_allocate_empty(&c_name, self.next_id())
            .map_err(|c| failed(LibnrtFunction::nrt_tensor_allocate_empty, c))?;
        Ok(self.insert_tensor(tensor))
    }

    fn tensor_attach_buffer(
        &self,
        tensor: TensorId,
        buffer: Arc<dyn ExternalBuffer>,
    ) -> Result<(), NrtError> {
        // C keeps using the memory after this call returns, so only memory whose address this
        // crate can vouch for goes through: a `SharedBuffer`, whose address and length come from
        // that type itself, never from the trait object.
        let Some(buffer) = buffer.into_shared_buffer() else {
            return Err(NrtError::new(
                NrtStatus::Invalid,
                "nrt_tensor_attach_buffer: the nrt backend attaches only abi::runtime::SharedBuffer \
                 memory, whose address is fixed for its life; expected a SharedBuffer, got another \
                 ExternalBuffer implementation",
            ));
        };
        check(LibnrtFunction::nrt_tensor_attach_buffer, self.tensor(tensor)?.attach_buffer(buffer))
    }

    fn tensor_allocate_slice(
        &self,
        src: TensorId,
        offset: usize,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError> {
        let source = self.tensor(src)?;
        let c_name = c_name(LibnrtFunction::nrt_tensor_allocate_slice, name)?;
        let slice = source
            .allocate_slice(offset, size, &c_name, self.next_id())
            .map_err(|c| failed(LibnrtFunction::nrt_tensor_allocate_slice, c))?;
        Ok(self.insert_tensor(slice))
    }

    fn tensor_free(&self, tensor: TensorId) -> Result<(), NrtError> {
        let removed = lock(&self.handles.tensors).remove(&tensor);
        let owner = removed.ok_or_else(|| {
            NrtError::new(
                NrtStatus::InvalidHandle,
                format!("tensor {} was not allocated by this runtime or is freed", tensor.0),
            )
        })?;
        // A set that still names the tensor keeps it allocated in libnrt (the set holds an
        // `Arc` of it), so nothing dangles; a launch through that set is refused
        // (`check_members`), as libnrt's contract does not allow it.
        drop(owner);
        Ok(())
    }

    fn tensor_read(&self, tensor: TensorId, offset: usize, buf: &mut [u8]) -> Result<(), NrtError> {
        let len = buf.len();
        check_range(
            LibnrtFunction::nrt_tensor_read,
            offset as u64,
            len,
            self.tensor(tensor)?.read(offset, buf),
        )
    }

    fn tensor_write(&self, tensor: TensorId, offset: usize, bytes: &[u8]) -> Result<(), NrtError> {
        let code = self.tensor(tensor)?.write(offset, bytes);
        check_range(LibnrtFunction::nrt_tensor_write, offset as u64, bytes.len(), code)
    }

    fn tensor_copy(
        &self,
        src: TensorId,
        src_offset: usize,
        dst: TensorId,
        dst_offset: usize,
        size: usize,
    ) -> Result<(), NrtError> {
        let (src, dst) = (self.tensor(src)?, self.tensor(dst)?);
        let code = src.copy_to(src_offset, &dst, dst_offset, size);
        check(LibnrtFunction::nrt_tensor_copy, code).map_err(|err| {
            let status = err.status;
            NrtError::new(
                status,
                format!(
                    "nrt_tensor_copy of {size} bytes from offset {src_offset} to offset {dst_offset} returned {}",
                    status.name()
                ),
            )
        })
    }

    fn tensor_memset(
        &self,
        tensor: TensorId,
        offset: u64,
        value: i32,
        size: usize,
    ) -> Result<(), NrtError> {
        check_range(
            LibnrtFunction::nrt_tensor_memset,
            offset,
            size,
            self.tensor(tensor)?.memset(offset, value, size),
        )
    }

    fn tensor_get_size(&self, tensor: TensorId) -> Result<usize, NrtError> {
        Ok(self.tensor(tensor)?.size())
    }

    fn tensor_get_va(&self, tensor: TensorId) -> Result<usize, NrtError> {
        match self.tensor(tensor)?.va() {
            // The C function has no status: NULL is how it says there is no address.
            0 => Err(NrtError::new(
                NrtStatus::Invalid,
                format!("nrt_tensor_get_va returned NULL for tensor {}", tensor.0),
            )),
            address => Ok(address),
        }
    }

    fn get_model_tensor_info(&self, model: ModelId) -> Result<Vec<TensorInfo>, NrtError> {
        let raw = self
            .model(model)?
            .tensor_info()
            .map_err(|c| failed(LibnrtFunction::nrt_get_model_tensor_info, c))?;
        raw.into_iter()
            .map(|info| {
                let usage = TensorUsage::from_code(info.usage).ok_or_else(|| {
                    NrtError::new(
                        NrtStatus::Failure,
                        format!(
                            "nrt_get_model_tensor_info: usage {} is neither INPUT nor OUTPUT",
                            info.usage
                        ),
                    )
                })?;
                Ok(TensorInfo {
                    name: String::from_utf8_lossy(&info.name).into_owned(),
                    usage,
                    size: info.size,
                    dtype: NrtDtype::from_code(self.numbering, info.dtype),
                    shape: info.shape,
                })
            })
            .collect()
    }

    fn get_version(&self) -> Result<NrtVersion, NrtError> {
        let raw =
            self.library.get_version().map_err(|c| failed(LibnrtFunction::nrt_get_version, c))?;
        Ok(NrtVersion {
            major: raw.major,
            minor: raw.minor,
            patch: raw.patch,
            maintenance: raw.maintenance,
            detail: String::from_utf8_lossy(&raw.detail).into_owned(),
            git_hash: String::from_utf8_lossy(&raw.git_hash).into_owned(),
        })
    }

    fn get_total_vnc_count(&self) -> Result<u32, NrtError> {
        self.library
            .get_total_vnc_count()
            .map_err(|c| failed(LibnrtFunction::nrt_get_total_vnc_count, c))
    }

    fn get_visible_vnc_count(&self) -> Result<u32, NrtError> {
        self.library
            .get_visible_vnc_count()
            .map_err(|c| failed(LibnrtFunction::nrt_get_visible_vnc_count, c))
    }

    fn get_total_nc_count(&self) -> Result<u32, NrtError> {
        let function = LibnrtFunction::nrt_get_total_nc_count;
        optional(function, self.library.get_total_nc_count())
    }

    fn get_visible_nc_count(&self) -> Result<u32, NrtError> {
        let function = LibnrtFunction::nrt_get_visible_nc_count;
        optional(function, self.library.get_visible_nc_count())
    }

    fn get_model_nc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let function = LibnrtFunction::nrt_get_model_nc_count;
        optional(function, self.model(model)?.count(function))
    }

    fn get_model_vnc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let function = LibnrtFunction::nrt_get_model_vnc_count;
        optional(function, self.model(model)?.count(function))
    }

    fn get_model_instance_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let function = LibnrtFunction::nrt_get_model_instance_count;
        optional(function, self.model(model)?.count(function))
    }

    fn nrta_error_tracker_create(&self, lnc: u32) -> Result<TrackerId, NrtError> {
        let function = LibnrtFunction::nrta_error_tracker_create;
        let tracker = optional(function, sys::OwnedTracker::create(&self.library, lnc))?;
        let id = TrackerId(self.next_id());
        lock(&self.trackers).insert(id, Arc::new(tracker));
        Ok(id)
    }

    fn nrta_error_tracker_destroy(&self, tracker: TrackerId) -> Result<(), NrtError> {
        // The tracker is destroyed when the last request naming it is released.
        lock(&self.trackers).remove(&tracker).map(drop).ok_or_else(|| unknown_tracker(tracker))
    }

    fn nrta_error_tracker_get_list(
        &self,
        tracker: TrackerId,
    ) -> Result<Vec<(SeqId, NrtStatus)>, NrtError> {
        let function = LibnrtFunction::nrta_error_tracker_get_list;
        let errors = optional(function, self.tracker(tracker)?.errors())?;
        Ok(errors
            .into_iter()
            .map(|(seq, code)| (SeqId(seq), status_of(u32::try_from(code).unwrap_or(u32::MAX))))
            .collect())
    }

    fn nrta_tensor_write(
        &self,
        tensor: TensorId,
        offset: u64,
        bytes: &[u8],
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_tensor_write;
        let tensor = self.tensor(tensor)?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let mut block = host_block(bytes.len())?;
        block.copy_from_slice(bytes);
        let scheduled = self.async_state.tensor_write(&tensor, offset, block, queue, tracker);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_tensor_read(
        &self,
        tensor: TensorId,
        offset: u64,
        size: u64,
        queue: i32,
        tracker: Option<TrackerId>,
        into: Arc<AsyncReadBuffer>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_tensor_read;
        let tensor = self.tensor(tensor)?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let size = usize::try_from(size).map_err(|_| {
            NrtError::new(
                NrtStatus::Invalid,
                format!("{function}: size {size} does not fit in size_t"),
            )
        })?;
        let block = host_block(size)?;
        let scheduled = self.async_state.tensor_read(&tensor, offset, block, queue, tracker, into);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_execute_schedule(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        queue: i32,
        tracker: Option<TrackerId>,
    ) -> Result<SeqId, NrtError> {
        let function = LibnrtFunction::nrta_execute_schedule;
        let model = self.model(model)?;
        let (input, output) = (self.set(input_set)?, self.set(output_set)?);
        self.check_members(function, &input, "input")?;
        self.check_members(function, &output, "output")?;
        let tracker = tracker.map(|id| self.tracker(id)).transpose()?;
        let scheduled = self.async_state.execute(&model, &input, &output, queue, tracker);
        optional(function, scheduled).map(SeqId)
    }

    fn nrta_is_completed(&self, seq: SeqId) -> Result<bool, NrtError> {
        let function = LibnrtFunction::nrta_is_completed;
        optional(function, self.async_state.is_completed(&self.library, seq.0))
    }

    fn nrt_async_drain_queued_execs(&self, vnc: i32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_async_drain_queued_execs;
        optional(function, self.async_state.drain(&self.library, vnc))
    }

    fn sys_trace_get_event_types(&self) -> Result<Vec<String>, NrtError> {
        let function = LibnrtFunction::nrt_sys_trace_get_event_types;
        optional(function, self.library.sys_trace_event_types())
    }

    fn sys_trace_start(&self, config: &SysTraceConfig) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_sys_trace_start;
        let types = config
            .disabled_event_types
            .iter()
            .map(|kind| c_name(function, kind.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let started =
            self.library.sys_trace_start(config.max_events_per_nc, &config.disabled_ncs, &types);
        optional(function, started)
    }

    fn sys_trace_fetch_events(&self, fetch: &SysTraceFetch) -> Result<String, NrtError> {
        let function = LibnrtFunction::nrt_sys_trace_fetch_events;
        optional(function, self.library.sys_trace_fetch(fetch.max_events_per_nc, fetch.nc))
    }

    fn sys_trace_stop(&self) -> Result<(), NrtError> {
        optional(LibnrtFunction::nrt_sys_trace_stop, self.library.sys_trace_stop())
    }

    fn get_vnc_memory_stats(&self, vnc: u32) -> Result<VncMemoryStats, NrtError> {
        let function = LibnrtFunction::nrt_get_vnc_memory_stats;
        let (bytes_used, bytes_limit) = optional(function, self.library.get_vnc_memory_stats(vnc))?;
        Ok(VncMemoryStats { bytes_used, bytes_limit })
    }

    fn tensor_read_batch(
        &self,
        batches: &[TensorReadBatch],
        untracked: bool,
    ) -> Result<Vec<Vec<u8>>, NrtError> {
        let function = LibnrtFunction::nrt_tensor_read_batch;
        let mut read = Vec::new();
        let mut tensors = Vec::new();
        for batch in batches {
            tensors.push(self.tensor(batch.tensor)?);
            for &(_, size) in &batch.ranges {
                read.push(host_block(size)?.into_vec());
            }
        }
        let mut buffers = read.iter_mut();
        let mut calls = Vec::new();
        for (batch, tensor) in batches.iter().zip(tensors) {
            let ops = batch
                .ranges
                .iter()
                .zip(buffers.by_ref())
                .map(|(&(offset, _), buffer)| (offset, buffer.as_mut_slice()));
            calls.push((tensor, ops.collect()));
        }
        let code =
            optional(function, self.library.tensor_read_batch(&mut calls, untracked).map(Ok))?;
        drop(calls);
        check(function, code)?;
        Ok(read)
    }

    fn tensor_write_batch(
        &self,
        batches: &[TensorWriteBatch],
        untracked: bool,
    ) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_tensor_write_batch;
        let mut calls = Vec::new();
        for batch in batches {
            let ops = batch.ops.iter().map(|(offset, bytes)| (*offset, bytes.as_slice()));
            calls.push((self.tensor(batch.tensor)?, ops.collect()));
        }
        let code = optional(function, self.library.tensor_write_batch(&calls, untracked).map(Ok))?;
        check(function, code)
    }

    fn tensor_check_output_completion(
        &self,
        tensor: TensorId,
        timeout_us: i64,
        expected: u64,
    ) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_tensor_check_output_completion;
        let tensor = self.tensor(tensor)?;
        let code =
            optional(function, tensor.check_output_completion(timeout_us, expected).map(Ok))?;
        check(function, code)
    }

    fn tensor_reset_output_completion(&self, tensor: TensorId) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_tensor_reset_output_completion;
        let code = optional(function, self.tensor(tensor)?.reset_output_completion().map(Ok))?;
        check(function, code)
    }

    fn get_model_info(&self, model: ModelId) -> Result<u32, NrtError> {
        optional(LibnrtFunction::nrt_get_model_info, self.model(model)?.info_vnc())
    }

    fn memcpy_to_device(&self, address: usize, bytes: &[u8]) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_memcpy_to_device;
        let code = optional(function, self.library.memcpy_to_device(address, bytes).map(Ok))?;
        check(function, code)
    }

    // Instance information and profiling: libnrt judges every argument; a path reaches it as
    // its bytes (only a NUL byte, which a C string cannot hold, is refused here).

    fn get_instance_info(&self) -> Result<InstanceInfo, NrtError> {
        optional(LibnrtFunction::nrt_get_instance_info, self.library.get_instance_info())
    }

    fn profile_start(&self, model: ModelId, filename: Option<&Path>) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_start;
        let filename = filename.map(|path| c_path(function, path)).transpose()?;
        let code =
            optional(function, self.model(model)?.profile_start(filename.as_deref()).map(Ok))?;
        check(function, code)
    }

    fn profile_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_stop;
        let filename = filename.map(|path| c_path(function, path)).transpose()?;
        let code = optional(function, self.library.profile_stop(filename.as_deref()).map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_start(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_start;
        let code = optional(function, self.library.profile_continuous_start().map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_save(&self, vnc: u32, output_dir: &Path) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_save;
        let dir = c_path(function, output_dir)?;
        let code = optional(function, self.library.profile_continuous_save(vnc, &dir).map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_stop(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_stop;
        let code = optional(function, self.library.profile_continuous_stop().map(Ok))?;
        check(function, code)
    }

    fn inspect_begin_with_options(&self, config: &InspectConfig) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_inspect_begin_with_options;
        let dir = config.output_dir.as_deref().map(|dir| c_path(function, dir)).transpose()?;
        let begun = self.library.inspect_begin_with_options(
            config.session_id,
            dir.as_deref(),
            config.enable_inspect,
            config.enable_inspect_on_fail,
        );
        let code = optional(function, begun.map(Ok))?;
        check(function, code)
    }

    fn inspect_stop(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_inspect_stop;
        let code = optional(function, self.library.inspect_stop().map(Ok))?;
        check(function, code)
    }

    fn build_global_comm(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_build_global_comm;
        let code = optional(function, self.library.build_global_comm(vnc, rank, world).map(Ok))?;
        check(function, code)
    }

    fn cc_global_comm_init(&self, vnc: u32, rank: u32, world: u32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_cc_global_comm_init;
        let code = optional(function, self.library.cc_global_comm_init(vnc, rank, world).map(Ok))?;
        check(function, code)
    }

    fn barrier(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_barrier;
        let code = optional(function, self.library.barrier(vnc, rank, world).map(Ok))?;
        check(function, code)
    }

    fn all_gather(
        &self,
        vnc: i32,
        rank: u32,
        world: u32,
        input: &[u8],
    ) -> Result<Vec<u8>, NrtError> {
        optional(LibnrtFunction::nrt_all_gather, self.library.all_gather(vnc, rank, world, input))
    }

    fn get_dmabuf_fd(&self, va: usize, size: u64) -> Result<i32, NrtError> {
        optional(LibnrtFunction::nrt_get_dmabuf_fd, self.library.get_dmabuf_fd(va, size))
    }

    fn get_hbm_mmap_va(&self, device_id: i32, hbm_idx: i32) -> Result<(usize, usize), NrtError> {
        let mapped = self.library.get_hbm_mmap_va(device_id, hbm_idx);
        optional(LibnrtFunction::nrt_get_hbm_mmap_va, mapped)
    }

    fn get_attached_efa_bdf(&self, va: usize) -> Result<String, NrtError> {
        optional(LibnrtFunction::nrt_get_attached_efa_bdf, self.library.get_attached_efa_bdf(va))
    }

    fn trace_start(&self, trace_mem: bool) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_trace_start;
        let code = optional(function, self.library.trace_start(trace_mem).map(Ok))?;
        check(function, code)
    }

    fn nrta_get_completion_handle(&self, seq: SeqId) -> Result<std::os::fd::OwnedFd, NrtError> {
        let function = LibnrtFunction::nrta_get_completion_handle;
        optional(function, self.library.get_completion_handle(seq.0))
    }

    fn trace_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_trace_stop;
        let filename = filename.map(|path| c_path(function, path)).transpose()?;
        let code = optional(function, self.library.trace_stop(filename.as_deref()).map(Ok))?;
        check(function, code)
    }
}

/// A path as a C string: its bytes, refused only for a NUL byte.
fn c_path(call: LibnrtFunction, path: &Path) -> Result<std::ffi::CString, NrtError> {
    use std::os::unix::ffi::OsStrExt as _;
    c_name(call, path.as_os_str().as_bytes())
}

/// A zeroed host block of `n_bytes` for an async request; `NRT_RESOURCE` when memory runs out.
fn host_block(n_bytes: usize) -> Result<Box<[u8]>, NrtError> {
    let mut block = Vec::new();
    block.try_reserve_exact(n_bytes).map_err(|_| {
        NrtError::new(
            NrtStatus::Resource,
            format!("cannot allocate {n_bytes} bytes of host memory for an async request"),
        )
    })?;
    block.resize(n_bytes, 0);
    Ok(block.into_boxed_slice())
}

fn unknown_tracker(tracker: TrackerId) -> NrtError {
    NrtError::new(
        NrtStatus::InvalidHandle,
        format!("error tracker {} was not made by this runtime or is destroyed", tracker.0),
    )
}

/// The result of a function only recent libraries export: a library without it is
/// [`NrtStatus::Failure`] with a detail that says so (the call never reached libnrt).
fn optional<T>(
    function: LibnrtFunction,
    called: Option<Result<T, RawStatus>>,
) -> Result<T, NrtError> {
    match called {
        Some(result) => result.map_err(|code| failed(function, code)),
        None => Err(NrtError::new(
            NrtStatus::Failure,
            format!("the loaded libnrt does not export {function}, expected a newer release"),
        )),
    }
}

//! The calls of `nrt/nrt.h` (and `nrt_get_version`) on [`SimRuntime`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use abi::functions::LibnrtFunction;
use abi::runtime::{
    ExternalBuffer, Framework, InstanceInfo, ModelId, NrtError, NrtVersion, Placement, RuntimeNrt,
    SetId, TensorId, TensorReadBatch, TensorWriteBatch, VncMemoryStats,
};
use abi::status::NrtStatus;
use abi::trace::name_text;

use super::{
    CLOSED, INITIALIZED, SimRuntime, Tensor, UNINITIALIZED, Unsupported, VERSION_DETAIL, View,
    WarningKind, check_range, lock, read_lock, write_lock,
};
use crate::memory::{Storage, copy_bytes, fill_bytes, read_bytes, staging_buffer, write_bytes};
use crate::sys_trace::Event;

mod launch;
mod load;

impl RuntimeNrt for SimRuntime {
    fn init(
        &self,
        framework: Framework,
        _fw_version: &str,
        _fal_version: &str,
    ) -> Result<(), NrtError> {
        if self.lifecycle.load(Ordering::Acquire) == INITIALIZED {
            return Err(NrtError::new(
                NrtStatus::Invalid,
                "nrt_init called twice, expected nrt_close first",
            ));
        }
        self.enter(LibnrtFunction::nrt_init)?;
        if framework == Framework::Invalid {
            return Err(NrtError::new(
                NrtStatus::Invalid,
                "framework INVALID (0), expected a framework type",
            ));
        }
        if let Some(err) = &self.scope_error {
            return Err(NrtError::new(NrtStatus::Resource, format!("nrt_init: {err}")));
        }
        self.collectives.reopen();
        self.lifecycle.store(INITIALIZED, Ordering::Release);
        Ok(())
    }

    fn close(&self) {
        if self.lifecycle.swap(CLOSED, Ordering::AcqRel) == INITIALIZED {
            // Collectives first: a rank blocked in `nrt_barrier`, `nrt_all_gather` or a
            // collective launch returns `NRT_CLOSED` now instead of waiting out its timeout, and
            // every communicator and rendezvous is dropped (the next `nrt_init` starts afresh).
            self.collectives.close();
            let open = std::mem::take(&mut *lock(&self.rendezvous));
            for group in open.values().flatten() {
                group.rendezvous.close();
            }
            let mut occupancy = lock(&self.occupancy);
            let models = std::mem::take(&mut *write_lock(&self.models));
            for (group, _) in models.values().filter_map(|model| model.group.as_ref()) {
                group.close();
            }
            drop(models);
            occupancy.iter_mut().for_each(|n| *n = 0);
        } else {
            // Closing a runtime that was never initialized leaves it uninitialized.
            let _ = self.lifecycle.compare_exchange(
                CLOSED,
                UNINITIALIZED,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    fn load(&self, neff: &[u8], vnc: i32, vnc_count: i32) -> Result<ModelId, NrtError> {
        self.enter(LibnrtFunction::nrt_load)?;
        let description = self.describe(neff)?;
        self.load_checked(&description, vnc, vnc_count)
    }

    fn load_collectives(
        &self,
        neff: &[u8],
        vnc: i32,
        vnc_count: i32,
        ctx_device_id: u32,
        ctx_device_count: u32,
    ) -> Result<ModelId, NrtError> {
        self.enter(LibnrtFunction::nrt_load_collectives)?;
        if ctx_device_id >= ctx_device_count {
            return Err(NrtError::new(
                NrtStatus::Invalid,
                format!(
                    "ctx_device_id {ctx_device_id} is invalid, expected below ctx_device_count {ctx_device_count}"
                ),
            ));
        }
        let description = self.describe(neff)?;
        self.load_ranked(&description, vnc, vnc_count, Some((ctx_device_id, ctx_device_count)))
    }

    fn unload(&self, model: ModelId) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_unload)?;
        let mut occupancy = lock(&self.occupancy);
        let loaded = write_lock(&self.models).remove(&model).ok_or_else(|| {
            NrtError::new(NrtStatus::InvalidHandle, format!("model {} is not loaded", model.0))
        })?;
        for core in &loaded.cores {
            occupancy[*core as usize] = occupancy[*core as usize].saturating_sub(1);
        }
        if let Some((group, rank)) = &loaded.group {
            self.leave_group(group, *rank);
        }
        let now = self.events.now_ns();
        self.events.record(Event {
            kind: "model_unload",
            nc: loaded.core,
            start_ns: now,
            end_ns: now,
            model: Some(model.0),
            bytes: None,
            status: None,
        });
        Ok(())
    }

    fn execute(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
    ) -> Result<NrtStatus, NrtError> {
        self.execute_n(LibnrtFunction::nrt_execute, model, input_set, output_set, 1)
    }

    fn execute_repeat(
        &self,
        model: ModelId,
        input_set: SetId,
        output_set: SetId,
        repeat_count: i32,
    ) -> Result<NrtStatus, NrtError> {
        if repeat_count < 1 {
            self.gate(LibnrtFunction::nrt_execute_repeat)?;
            return Err(NrtError::new(
                NrtStatus::Invalid,
                format!("repeat_count {repeat_count} is invalid, expected at least 1"),
            ));
        }
        self.execute_n(
            LibnrtFunction::nrt_execute_repeat,
            model,
            input_set,
            output_set,
            repeat_count as u32,
        )
    }

    fn allocate_tensor_set(&self) -> Result<SetId, NrtError> {
        self.enter(LibnrtFunction::nrt_allocate_tensor_set)?;
        let id = SetId(self.next_id());
        write_lock(&self.sets).insert(id, HashMap::new());
        Ok(id)
    }

    fn destroy_tensor_set(&self, set: SetId) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_destroy_tensor_set)?;
        write_lock(&self.sets).remove(&set).map(|_| ()).ok_or_else(|| SimRuntime::unknown_set(set))
    }

    fn add_tensor_to_tensor_set(
        &self,
        set: SetId,
        name: &[u8],
        tensor: TensorId,
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_add_tensor_to_tensor_set)?;
        self.tensor(tensor)?;
        let mut sets = write_lock(&self.sets);
        let entries = sets.get_mut(&set).ok_or_else(|| SimRuntime::unknown_set(set))?;
        entries.insert(name.to_vec(), tensor);
        Ok(())
    }

    fn get_tensor_from_tensor_set(&self, set: SetId, name: &[u8]) -> Result<TensorId, NrtError> {
        self.enter(LibnrtFunction::nrt_get_tensor_from_tensor_set)?;
        let sets = read_lock(&self.sets);
        let entries = sets.get(&set).ok_or_else(|| SimRuntime::unknown_set(set))?;
        entries.get(name).copied().ok_or_else(|| {
            NrtError::new(
                NrtStatus::Failure,
                format!("tensor set {} has no tensor named {}", set.0, name_text(name)),
            )
        })
    }

    fn tensor_allocate(
        &self,
        placement: Placement,
        vnc: i32,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_allocate)?;
        let name = String::from_utf8_lossy(name);
        let storage = match placement {
            Placement::Device => {
                let core = usize::try_from(vnc)
                    .ok()
                    .and_then(|vnc| self.cores.get(vnc))
                    .ok_or_else(|| {
                        NrtError::new(
                            NrtStatus::Invalid,
                            format!(
                                "vnc {vnc} is invalid, expected a neuron core below {}",
                                self.cores.len()
                            ),
                        )
                    })?;
                Storage::Device(core.memory.allocate(size as u64, 0)?)
            }
            Placement::Host => {
                // Over-limit host placement is refused as a resource shortage; to be pinned on a
                // device.
                if size > self.config.host_placement_limit {
                    return Err(NrtError::new(
                        NrtStatus::Resource,
                        format!(
                            "host tensor {name:?} of {size} bytes is over the host-placement limit of {} bytes",
                            self.config.host_placement_limit
                        ),
                    ));
                }
                Storage::host(size)?
            }
            Placement::Virtual => Storage::host(size)?,
        };
        let view = View { storage: Arc::new(storage), offset: 0, size };
        Ok(self.insert_tensor(Tensor {
            name: name.into_owned(),
            view: Some(view),
            completions: AtomicU64::new(0),
        }))
    }

    fn tensor_allocate_empty(&self, name: &[u8]) -> Result<TensorId, NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_allocate_empty)?;
        let name = String::from_utf8_lossy(name).into_owned();
        Ok(self.insert_tensor(Tensor { name, view: None, completions: AtomicU64::new(0) }))
    }

    fn tensor_attach_buffer(
        &self,
        tensor: TensorId,
        buffer: Arc<dyn ExternalBuffer>,
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_attach_buffer)?;
        let mut tensors = write_lock(&self.tensors);
        let entry = tensors.get_mut(&tensor).ok_or_else(|| {
            NrtError::new(NrtStatus::InvalidHandle, format!("tensor {} is not allocated", tensor.0))
        })?;
        let owns_storage =
            entry.view.as_ref().is_some_and(|view| !matches!(&*view.storage, Storage::External(_)));
        if owns_storage {
            return Err(NrtError::new(
                NrtStatus::Invalid,
                format!("tensor {:?} owns storage, expected one from allocate_empty", entry.name),
            ));
        }
        let size = buffer.len();
        let view = View { storage: Arc::new(Storage::External(buffer)), offset: 0, size };
        *entry = Arc::new(Tensor {
            name: entry.name.clone(),
            view: Some(view),
            completions: AtomicU64::new(0),
        });
        Ok(())
    }

    fn tensor_allocate_slice(
        &self,
        src: TensorId,
        offset: usize,
        size: usize,
        name: &[u8],
    ) -> Result<TensorId, NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_allocate_slice)?;
        let name = String::from_utf8_lossy(name);
        let parent = self.tensor(src)?;
        let view = parent.view()?;
        check_range(&parent.name, offset, size, view.size)?;
        let slice = View { storage: Arc::clone(&view.storage), offset: view.offset + offset, size };
        Ok(self.insert_tensor(Tensor {
            name: name.into_owned(),
            view: Some(slice),
            completions: AtomicU64::new(0),
        }))
    }

    fn tensor_free(&self, tensor: TensorId) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_free)?;
        // Dropping the registry's `Arc` outside the lock: a device block's drop takes the
        // allocator lock.
        let removed = write_lock(&self.tensors).remove(&tensor);
        removed.map(drop).ok_or_else(|| {
            NrtError::new(NrtStatus::InvalidHandle, format!("tensor {} is not allocated", tensor.0))
        })
    }

    fn tensor_read(&self, tensor: TensorId, offset: usize, buf: &mut [u8]) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_read)?;
        let tensor = self.tensor(tensor)?;
        let view = tensor.view()?;
        check_range(&tensor.name, offset, buf.len(), view.size)?;
        read_bytes(view.place(offset), buf);
        self.count_device_traffic(&view.storage, false, buf.len());
        Ok(())
    }

    fn tensor_write(&self, tensor: TensorId, offset: usize, bytes: &[u8]) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_write)?;
        let tensor = self.tensor(tensor)?;
        let view = tensor.view()?;
        check_range(&tensor.name, offset, bytes.len(), view.size)?;
        write_bytes(view.place(offset), bytes);
        self.count_device_traffic(&view.storage, true, bytes.len());
        Ok(())
    }

    fn tensor_copy(
        &self,
        src: TensorId,
        src_offset: usize,
        dst: TensorId,
        dst_offset: usize,
        size: usize,
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_copy)?;
        let (src, dst) = (self.tensor(src)?, self.tensor(dst)?);
        let (src_view, dst_view) = (src.view()?, dst.view()?);
        check_range(&src.name, src_offset, size, src_view.size)?;
        check_range(&dst.name, dst_offset, size, dst_view.size)?;
        let (src_core, dst_core) = (src_view.storage.core(), dst_view.storage.core());
        if let (Some(a), Some(b)) = (src_core, dst_core) {
            if a != b {
                return Err(NrtError::new(
                    NrtStatus::Invalid,
                    format!(
                        "copy from tensor {:?} on neuron core {a} to {:?} on neuron core {b}, expected one core",
                        src.name, dst.name
                    ),
                ));
            }
        }
        copy_bytes(src_view.place(src_offset), dst_view.place(dst_offset), size);
        match (src_core, dst_core) {
            (None, Some(_)) => self.count_device_traffic(&dst_view.storage, true, size),
            (Some(_), None) => self.count_device_traffic(&src_view.storage, false, size),
            _ => {}
        }
        Ok(())
    }

    fn tensor_memset(
        &self,
        tensor: TensorId,
        offset: u64,
        value: i32,
        size: usize,
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_memset)?;
        let tensor = self.tensor(tensor)?;
        let view = tensor.view()?;
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        check_range(&tensor.name, offset, size, view.size)?;
        // As C's memset: the value is converted to an unsigned char.
        fill_bytes(view.place(offset), size, value as u8);
        Ok(())
    }

    fn tensor_get_size(&self, tensor: TensorId) -> Result<usize, NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_get_size)?;
        Ok(self.tensor(tensor)?.size())
    }

    fn tensor_get_va(&self, tensor: TensorId) -> Result<usize, NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_get_va)?;
        let tensor = self.tensor(tensor)?;
        let view = tensor.view()?;
        Ok(view.storage.address(view.offset))
    }

    fn get_version(&self) -> Result<NrtVersion, NrtError> {
        self.enter(LibnrtFunction::nrt_get_version)?;
        let release = &self.config.release;
        Ok(NrtVersion {
            major: release.major,
            minor: release.minor,
            patch: release.patch,
            maintenance: release.maintenance,
            detail: VERSION_DETAIL.to_owned(),
            git_hash: String::new(),
        })
    }

    fn get_total_vnc_count(&self) -> Result<u32, NrtError> {
        self.enter(LibnrtFunction::nrt_get_total_vnc_count)?;
        Ok(self.config.n_cores)
    }

    fn get_visible_vnc_count(&self) -> Result<u32, NrtError> {
        self.enter(LibnrtFunction::nrt_get_visible_vnc_count)?;
        Ok(self.visible_core_count())
    }

    fn get_total_nc_count(&self) -> Result<u32, NrtError> {
        self.enter(LibnrtFunction::nrt_get_total_nc_count)?;
        Ok(self.config.n_cores)
    }

    fn get_visible_nc_count(&self) -> Result<u32, NrtError> {
        self.enter(LibnrtFunction::nrt_get_visible_nc_count)?;
        Ok(self.visible_core_count())
    }

    fn get_model_nc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        Ok(self.model_cores(LibnrtFunction::nrt_get_model_nc_count, model)?.len() as u32)
    }

    fn get_model_vnc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        Ok(self.model_cores(LibnrtFunction::nrt_get_model_vnc_count, model)?.len() as u32)
    }

    /// The instance of [`SimConfig::instance`](crate::SimConfig::instance), device revision `sim`.
    fn get_instance_info(&self) -> Result<InstanceInfo, NrtError> {
        self.enter(LibnrtFunction::nrt_get_instance_info)?;
        let instance = &self.config.instance;
        Ok(InstanceInfo {
            family: instance.family(),
            size: instance.size(),
            arch_name: instance.arch_name().to_owned(),
            device_revision: "sim".to_owned(),
        })
    }

    fn get_dmabuf_fd(&self, _va: usize, _size: u64) -> Result<i32, NrtError> {
        Err(self.unsupported(Unsupported::DmabufFd)?)
    }

    fn get_hbm_mmap_va(&self, _device_id: i32, _hbm_idx: i32) -> Result<(usize, usize), NrtError> {
        Err(self.unsupported(Unsupported::HbmMmapVa)?)
    }

    /// Makes sure the communicator of `world` ranks exists. It does not wait for the other
    /// ranks: they share this process, so nothing has to be exchanged before the first collective.
    fn build_global_comm(&self, vnc: i32, rank: u32, world: u32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_build_global_comm;
        self.collective(function, vnc.into(), rank, world).map(drop)
    }

    fn cc_global_comm_init(&self, vnc: u32, rank: u32, world: u32) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_cc_global_comm_init;
        self.collective(function, vnc.into(), rank, world).map(drop)
    }

    fn get_attached_efa_bdf(&self, _va: usize) -> Result<String, NrtError> {
        Err(self.unsupported(Unsupported::AttachedEfaBdf)?)
    }

    /// The core's allocated bytes (64-byte granules) and its HBM budget.
    fn get_vnc_memory_stats(&self, vnc: u32) -> Result<VncMemoryStats, NrtError> {
        self.enter(LibnrtFunction::nrt_get_vnc_memory_stats)?;
        let bytes_used = self.device_bytes_in_use(vnc).ok_or_else(|| {
            NrtError::new(
                NrtStatus::Invalid,
                format!(
                    "vnc {vnc} does not exist, expected one below {}",
                    self.visible_core_count()
                ),
            )
        })?;
        Ok(VncMemoryStats { bytes_used, bytes_limit: self.config.hbm_bytes_per_core })
    }

    /// Every range is an `nrt_tensor_read`, in order; `untracked` changes nothing here (a read
    /// never races a launch it could corrupt).
    fn tensor_read_batch(
        &self,
        batches: &[TensorReadBatch],
        _untracked: bool,
    ) -> Result<Vec<Vec<u8>>, NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_read_batch)?;
        let mut read = Vec::new();
        for batch in batches {
            for &(offset, size) in &batch.ranges {
                let mut bytes = staging_buffer("nrt_tensor_read_batch", size)?;
                self.tensor_read(batch.tensor, offset, &mut bytes)?;
                read.try_reserve(1).map_err(|_| {
                    NrtError::new(NrtStatus::Resource, "cannot grow the list of batch reads")
                })?;
                read.push(bytes);
            }
        }
        Ok(read)
    }

    /// Every operation is an `nrt_tensor_write`, in order.
    fn tensor_write_batch(
        &self,
        batches: &[TensorWriteBatch],
        _untracked: bool,
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_write_batch)?;
        for batch in batches {
            for (offset, bytes) in &batch.ops {
                self.tensor_write(batch.tensor, *offset, bytes)?;
            }
        }
        Ok(())
    }

    /// `nrt_tensor_check_output_completion`: waits until `expected` launches have written the
    /// tensor as an output since it was made or last reset, at most `timeout_us` microseconds
    /// (a negative timeout waits without bound, with one warning after 30 seconds).
    ///
    /// # Errors
    /// The lifecycle statuses, [`NrtStatus::InvalidHandle`] for an unknown tensor,
    /// [`NrtStatus::Timeout`] when the count is not reached in time.
    fn tensor_check_output_completion(
        &self,
        tensor: TensorId,
        timeout_us: i64,
        expected: u64,
    ) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_check_output_completion)?;
        let tensor = self.tensor(tensor)?;
        let start = std::time::Instant::now();
        let mut warned = false;
        loop {
            let done = tensor.completions.load(Ordering::Acquire);
            if done >= expected {
                return Ok(());
            }
            let waited = start.elapsed();
            if timeout_us >= 0 && waited.as_micros() >= timeout_us as u128 {
                return Err(NrtError::new(
                    NrtStatus::Timeout,
                    format!(
                        "tensor {:?} completed {done} times in {timeout_us} us, expected {expected}",
                        tensor.name
                    ),
                ));
            }
            if timeout_us < 0 && !warned && waited.as_secs() >= 30 {
                warned = true;
                self.warn(WarningKind::CompletionWait, || {
                    format!(
                        "nrt_tensor_check_output_completion has waited 30 s for tensor {:?} \
                         ({done} of {expected} completions)",
                        tensor.name
                    )
                });
            }
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    /// `nrt_tensor_reset_output_completion`: the tensor's completion count becomes 0.
    ///
    /// # Errors
    /// The lifecycle statuses, [`NrtStatus::InvalidHandle`] for an unknown tensor.
    fn tensor_reset_output_completion(&self, tensor: TensorId) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_tensor_reset_output_completion)?;
        self.tensor(tensor)?.completions.store(0, Ordering::Release);
        Ok(())
    }
}

impl SimRuntime {
    /// The error of a function the simulator cannot provide (`NRT_INVALID`, saying why), after
    /// its gate: `Err` is the gate's error, `Ok` the refusal.
    fn unsupported(&self, unsupported: Unsupported) -> Result<NrtError, NrtError> {
        let function = unsupported.function();
        self.enter(function)?;
        let why = unsupported.reason();
        Ok(NrtError::new(
            NrtStatus::Invalid,
            format!("{function} is not supported by the simulator ({why})"),
        ))
    }

    fn insert_tensor(&self, tensor: Tensor) -> TensorId {
        let id = TensorId(self.next_id());
        write_lock(&self.tensors).insert(id, Arc::new(tensor));
        id
    }
}

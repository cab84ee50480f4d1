//! The calls of `nrt/nrt.h` (and `nrt_get_version`) on [`NrtRuntime`], through the loaded library.

use std::sync::Arc;

use abi::functions::LibnrtFunction;
use abi::runtime::{
    ExternalBuffer, Framework, InstanceInfo, ModelId, NrtError, NrtVersion, Placement, RuntimeNrt,
    SetId, TensorId, TensorReadBatch, TensorWriteBatch, VncMemoryStats,
};
use abi::status::NrtStatus;

use super::{NrtRuntime, c_name, check, check_range, failed, host_block, lock, optional};

impl RuntimeNrt for NrtRuntime {
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

    // Instance information and profiling: libnrt judges every argument; a path reaches it as
    // its bytes (only a NUL byte, which a C string cannot hold, is refused here).

    fn get_instance_info(&self) -> Result<InstanceInfo, NrtError> {
        optional(LibnrtFunction::nrt_get_instance_info, self.library.get_instance_info())
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
}

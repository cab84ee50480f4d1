//! The calls of `nrt.h`: lifecycle, loading and executing models, tensor sets, tensors and
//! their memory (batched I/O included), core counts and instance information, the collectives
//! communicator, and the device-only queries (dma-buf fds, HBM mappings, EFA).
//!
//! The owners' own calls are here too, next to the library's; only their releases (`Drop`) are
//! with the owners in the module root. [`OwnedModel::count`] also serves
//! `nrt_get_model_instance_count` of `nrt_experimental.h`, since it is one call shape.
//!
//! Below the calls, `RuntimeNrt` for `NrtRuntime`: the methods of `nrt.h` over them.
#![deny(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::mem::size_of;
use std::ptr;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use abi::functions::LibnrtFunction;
use abi::runtime::{
    ExternalBuffer, Framework, InstanceInfo, ModelId, NrtError, NrtVersion, Placement, RuntimeNrt,
    SetId, SharedBuffer, TensorId, TensorReadBatch, TensorWriteBatch, VncMemoryStats,
};
use abi::status::NrtStatus;

use crate::NrtRuntime;
use crate::runtime::{c_name, check, check_range, failed, host_block, lock, optional};

use super::c_names::{self, nrt_instance_info_t, nrt_vnc_memory_stats_t};
use super::{
    INVALID, INVALID_HANDLE, Library, NrtModel, NrtTensor, NrtTensorSet, OwnedModel, OwnedSet,
    OwnedTensor, RawStatus, SUCCESS, owned,
};

/// One tensor's ranges of a batched read: `(offset, buffer to fill)` each.
pub(crate) type ReadBatch<'a> = (Arc<OwnedTensor>, Vec<(usize, &'a mut [u8])>);

/// One tensor's operations of a batched write: `(offset, bytes)` each.
pub(crate) type WriteBatch<'a> = (Arc<OwnedTensor>, Vec<(usize, &'a [u8])>);

/// A batch as C sees it: the tensor, then `(offset, buffer, size)` of each operation.
type RawBatch = (*mut NrtTensor, Vec<(usize, *mut u8, usize)>);

/// Builds the `nrt_tensor_batch_t` array of `(tensor, [(offset, buffer, size)])` batches and
/// passes it with its length to `call`; `NRT_INVALID` without a call for a batch of more
/// operations than `num_ops` holds.
fn with_batches(
    batches: &[RawBatch],
    call: impl FnOnce(*const c_names::nrt_tensor_batch_t, u64) -> RawStatus,
) -> RawStatus {
    let mut ops = Vec::with_capacity(batches.len());
    for (_, batch_ops) in batches {
        let batch_ops: Vec<c_names::nrt_tensor_batch_op_t> = batch_ops
            .iter()
            .map(|&(offset, buffer, size)| c_names::nrt_tensor_batch_op_t {
                offset: offset as u64,
                size: size as u64,
                buffer: buffer.cast(),
            })
            .collect();
        ops.push(batch_ops);
    }
    let mut array = Vec::with_capacity(batches.len());
    for ((tensor, _), batch_ops) in batches.iter().zip(&ops) {
        let Ok(num_ops) = u32::try_from(batch_ops.len()) else { return INVALID };
        array.push(c_names::nrt_tensor_batch_t {
            tensor: tensor.cast_const().cast(),
            ops: batch_ops.as_ptr(),
            num_ops,
        });
    }
    call(array.as_ptr(), array.len() as u64)
}

#[allow(unsafe_code)]
impl Library {
    /// `nrt_init`.
    pub(crate) fn init(&self, framework: u32, fw_version: &CStr, fal_version: &CStr) -> RawStatus {
        // SAFETY: both strings are NUL-terminated and outlive the call; the framework is a plain
        // integer that libnrt validates.
        unsafe { (self.functions.nrt_init)(framework, fw_version.as_ptr(), fal_version.as_ptr()) }
    }

    /// `nrt_close`.
    pub(crate) fn close(&self) {
        // SAFETY: no arguments; libnrt gates later calls itself.
        unsafe { (self.functions.nrt_close)() }
    }

    /// `nrt_load` (`collectives`: `nrt_load_collectives` with `(ctx_device_id,
    /// ctx_device_count)`).
    pub(crate) fn load(
        self: &Arc<Self>,
        neff: &[u8],
        vnc: i32,
        vnc_count: i32,
        collectives: Option<(u32, u32)>,
    ) -> Result<OwnedModel, RawStatus> {
        let mut model: *mut NrtModel = ptr::null_mut();
        let data = neff.as_ptr().cast::<c_void>();
        let status = match collectives {
            // SAFETY: `neff` is readable for `neff.len()` bytes during the call and libnrt does
            // not keep the pointer (it parses the NEFF before returning); `model` is a valid
            // out-pointer.
            None => unsafe {
                (self.functions.nrt_load)(data, neff.len(), vnc, vnc_count, &mut model)
            },
            // SAFETY: as above.
            Some((id, count)) => unsafe {
                (self.functions.nrt_load_collectives)(
                    data,
                    neff.len(),
                    vnc,
                    vnc_count,
                    id,
                    count,
                    &mut model,
                )
            },
        };
        let model = owned(status, model)?;
        Ok(OwnedModel { library: Arc::clone(self), model, unloaded: RwLock::new(false) })
    }

    /// `nrt_allocate_tensor_set`.
    pub(crate) fn allocate_tensor_set(self: &Arc<Self>) -> Result<OwnedSet, RawStatus> {
        let mut set: *mut NrtTensorSet = ptr::null_mut();
        // SAFETY: `set` is a valid out-pointer.
        let status = unsafe { (self.functions.nrt_allocate_tensor_set)(&mut set) };
        let set = owned(status, set)?;
        Ok(OwnedSet { library: Arc::clone(self), set, members: Mutex::new(HashMap::new()) })
    }

    /// `nrt_tensor_allocate`.
    pub(crate) fn tensor_allocate(
        self: &Arc<Self>,
        placement: u32,
        vnc: i32,
        size: usize,
        name: &CStr,
        tag: u64,
    ) -> Result<OwnedTensor, RawStatus> {
        let mut tensor: *mut NrtTensor = ptr::null_mut();
        // SAFETY: `name` is NUL-terminated and outlives the call; `tensor` is a valid
        // out-pointer; placement and sizes are integers libnrt validates.
        let status = unsafe {
            (self.functions.nrt_tensor_allocate)(placement, vnc, size, name.as_ptr(), &mut tensor)
        };
        Ok(self.own_tensor(owned(status, tensor)?, tag, None))
    }

    /// `nrt_tensor_allocate_empty`.
    pub(crate) fn tensor_allocate_empty(
        self: &Arc<Self>,
        name: &CStr,
        tag: u64,
    ) -> Result<OwnedTensor, RawStatus> {
        let mut tensor: *mut NrtTensor = ptr::null_mut();
        // SAFETY: `name` is NUL-terminated and outlives the call; `tensor` is a valid
        // out-pointer.
        let status =
            unsafe { (self.functions.nrt_tensor_allocate_empty)(name.as_ptr(), &mut tensor) };
        Ok(self.own_tensor(owned(status, tensor)?, tag, None))
    }

    /// `nrt_get_total_vnc_count`.
    pub(crate) fn get_total_vnc_count(&self) -> Result<u32, RawStatus> {
        let mut count = 0u32;
        // SAFETY: `count` is a valid out-pointer.
        let status = unsafe { (self.functions.nrt_get_total_vnc_count)(&mut count) };
        if status == SUCCESS { Ok(count) } else { Err(status) }
    }

    /// `nrt_get_visible_vnc_count`.
    pub(crate) fn get_visible_vnc_count(&self) -> Result<u32, RawStatus> {
        let mut count = 0u32;
        // SAFETY: `count` is a valid out-pointer.
        let status = unsafe { (self.functions.nrt_get_visible_vnc_count)(&mut count) };
        if status == SUCCESS { Ok(count) } else { Err(status) }
    }

    /// `nrt_get_total_nc_count`; `None` when the library does not export it.
    pub(crate) fn get_total_nc_count(&self) -> Option<Result<u32, RawStatus>> {
        let function = self.functions.nrt_get_total_nc_count?;
        let mut count = 0u32;
        // SAFETY: `count` is a valid out-pointer; the signature is the table's.
        let status = unsafe { function(&mut count) };
        Some(if status == SUCCESS { Ok(count) } else { Err(status) })
    }

    /// `nrt_get_visible_nc_count`; `None` when the library does not export it.
    pub(crate) fn get_visible_nc_count(&self) -> Option<Result<u32, RawStatus>> {
        let function = self.functions.nrt_get_visible_nc_count?;
        let mut count = 0u32;
        // SAFETY: `count` is a valid out-pointer; the signature is the table's.
        let status = unsafe { function(&mut count) };
        Some(if status == SUCCESS { Ok(count) } else { Err(status) })
    }

    /// `nrt_get_vnc_memory_stats` (bytes used, bytes limit); `None` when the library does not
    /// export it.
    pub(crate) fn get_vnc_memory_stats(&self, vnc: u32) -> Option<Result<(u64, u64), RawStatus>> {
        let function = self.functions.nrt_get_vnc_memory_stats?;
        let mut stats = nrt_vnc_memory_stats_t { bytes_used: 0, bytes_limit: 0 };
        let mut written = 0usize;
        // SAFETY: `stats` has `size_of` writable bytes and `written` is a valid out-pointer.
        let status =
            unsafe { function(vnc, &mut stats, size_of::<nrt_vnc_memory_stats_t>(), &mut written) };
        Some(if status == SUCCESS {
            Ok((stats.bytes_used as u64, stats.bytes_limit as u64))
        } else {
            Err(status)
        })
    }

    /// `nrt_tensor_read_batch` into the caller's buffers: `(tensor, [(offset, buffer)])` per
    /// batch; `None` when the library does not export it.
    pub(crate) fn tensor_read_batch(
        &self,
        batches: &mut [ReadBatch<'_>],
        untracked: bool,
    ) -> Option<RawStatus> {
        let function = self.functions.nrt_tensor_read_batch?;
        let ops = batches.iter_mut().map(|(tensor, ops)| {
            let ops =
                ops.iter_mut().map(|(offset, buffer)| (*offset, buffer.as_mut_ptr(), buffer.len()));
            (tensor.tensor.as_ptr(), ops.collect::<Vec<_>>())
        });
        let ops: Vec<_> = ops.collect();
        Some(with_batches(&ops, |array, count| {
            // SAFETY: `array` has `count` entries whose operations point at buffers writable for
            // their sizes (the caller's `&mut [u8]`, borrowed for this call) and at live tensors.
            unsafe { function(array, count, untracked) }
        }))
    }

    /// `nrt_tensor_write_batch` from the caller's bytes: `(tensor, [(offset, bytes)])` per
    /// batch; `None` when the library does not export it.
    pub(crate) fn tensor_write_batch(
        &self,
        batches: &[WriteBatch<'_>],
        untracked: bool,
    ) -> Option<RawStatus> {
        let function = self.functions.nrt_tensor_write_batch?;
        let ops = batches.iter().map(|(tensor, ops)| {
            // libnrt only reads the buffers of a write; the C field is not const.
            let ops =
                ops.iter().map(|(offset, bytes)| (*offset, bytes.as_ptr().cast_mut(), bytes.len()));
            (tensor.tensor.as_ptr(), ops.collect::<Vec<_>>())
        });
        let ops: Vec<_> = ops.collect();
        Some(with_batches(&ops, |array, count| {
            // SAFETY: `array` has `count` entries whose operations point at buffers readable for
            // their sizes (the caller's slices, borrowed for this call) and at live tensors.
            unsafe { function(array, count, untracked) }
        }))
    }

    /// `nrt_get_instance_info` into a whole `nrt_instance_info_t`, its names copied up to their
    /// NUL; `None` when the library lacks it.
    pub(crate) fn get_instance_info(
        &self,
    ) -> Option<Result<abi::runtime::InstanceInfo, RawStatus>> {
        let function = self.functions.nrt_get_instance_info?;
        let mut info =
            nrt_instance_info_t { family: 0, size: 0, arch_name: [0; 16], device_revision: [0; 8] };
        // SAFETY: `info` has `size_of` writable bytes; the signature is the table's.
        let status = unsafe { function(&mut info, size_of::<nrt_instance_info_t>()) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        let text = |chars: &[c_char]| {
            let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        Some(Ok(abi::runtime::InstanceInfo {
            family: info.family,
            size: info.size,
            arch_name: text(&info.arch_name),
            device_revision: text(&info.device_revision),
        }))
    }

    /// `nrt_get_dmabuf_fd` of device memory at `va`; `None` when the library lacks it.
    pub(crate) fn get_dmabuf_fd(&self, va: usize, size: u64) -> Option<Result<i32, RawStatus>> {
        let function = self.functions.nrt_get_dmabuf_fd?;
        let mut fd: c_int = -1;
        // SAFETY: the address is a number libnrt judges; `fd` is a valid out-pointer.
        let status = unsafe { function(va as u64, size, &mut fd) };
        Some(if status == SUCCESS { Ok(fd) } else { Err(status) })
    }

    /// `nrt_get_hbm_mmap_va`: the mapping's address (as a number, never dereferenced here) and
    /// size; `None` when the library lacks it.
    pub(crate) fn get_hbm_mmap_va(
        &self,
        device_id: c_int,
        hbm_idx: c_int,
    ) -> Option<Result<(usize, usize), RawStatus>> {
        let function = self.functions.nrt_get_hbm_mmap_va?;
        let mut address: *mut c_void = ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: both out-pointers are valid; the signature is the table's.
        let status = unsafe { function(device_id, hbm_idx, &mut address, &mut size) };
        Some(if status == SUCCESS { Ok((address as usize, size)) } else { Err(status) })
    }

    /// `nrt_get_attached_efa_bdf` of device memory at `va` into a 64-byte buffer, copied up to
    /// its NUL; `None` when the library lacks it.
    pub(crate) fn get_attached_efa_bdf(&self, va: usize) -> Option<Result<String, RawStatus>> {
        let function = self.functions.nrt_get_attached_efa_bdf?;
        let mut buffer = [0 as c_char; 64];
        let mut len = buffer.len();
        // SAFETY: the address is a number libnrt judges; `buffer` has `len` writable bytes and
        // `len` is a valid in/out pointer.
        let status = unsafe { function(va as *const c_void, buffer.as_mut_ptr(), &mut len) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        let bytes: Vec<u8> = buffer.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
        Some(Ok(String::from_utf8_lossy(&bytes).into_owned()))
    }

    /// `nrt_build_global_comm`; `None` when the library lacks it.
    pub(crate) fn build_global_comm(&self, vnc: i32, rank: u32, world: u32) -> Option<RawStatus> {
        let function = self.functions.nrt_build_global_comm?;
        // SAFETY: plain value arguments.
        Some(unsafe { function(vnc, rank, world) })
    }

    /// `nrt_cc_global_comm_init`; `None` when the library lacks it.
    pub(crate) fn cc_global_comm_init(&self, vnc: u32, rank: u32, world: u32) -> Option<RawStatus> {
        let function = self.functions.nrt_cc_global_comm_init?;
        // SAFETY: plain value arguments.
        Some(unsafe { function(vnc, rank, world) })
    }
}

#[allow(unsafe_code)]
impl OwnedModel {
    /// `nrt_execute` (`repeat`: `nrt_execute_repeat` with that count).
    pub(crate) fn execute(
        &self,
        input: &OwnedSet,
        output: &OwnedSet,
        repeat: Option<i32>,
    ) -> RawStatus {
        let _live = match self.live() {
            Ok(guard) => guard,
            Err(status) => return status,
        };
        let (model, input, output) = (self.model.as_ptr(), input.set.as_ptr(), output.set.as_ptr());
        match repeat {
            // SAFETY: the model is loaded (checked under the read lock held until the call
            // returns) and both sets are live: their owners are borrowed for the call, and every
            // tensor they name is kept alive by them.
            None => unsafe { (self.library.functions.nrt_execute)(model, input, output) },
            // SAFETY: as above.
            Some(count) => unsafe {
                (self.library.functions.nrt_execute_repeat)(model, input, output, count)
            },
        }
    }

    /// A count of the loaded model; `None` when the library does not export its function.
    pub(crate) fn count(&self, which: ModelCount) -> Option<Result<u32, RawStatus>> {
        let functions = &self.library.functions;
        let mut count = 0u32;
        let call = |count: &mut u32| -> Option<RawStatus> {
            // SAFETY: the model is loaded (read lock held by the caller below); `count` is a
            // valid out-pointer; the signatures are the table's.
            unsafe {
                Some(match which {
                    ModelCount::Nc => functions.nrt_get_model_nc_count?(self.model.as_ptr(), count),
                    ModelCount::Vnc => {
                        functions.nrt_get_model_vnc_count?(self.model.as_ptr(), count)
                    }
                    ModelCount::Instance => {
                        functions.nrt_get_model_instance_count?(self.model.as_ptr(), count)
                    }
                })
            }
        };
        let live = match self.live() {
            Ok(live) => live,
            Err(status) => return Some(Err(status)),
        };
        let status = call(&mut count)?;
        drop(live);
        Some(if status == SUCCESS { Ok(count) } else { Err(status) })
    }

    /// `nrt_unload`. On failure the model stays loaded and this owner stays usable.
    pub(crate) fn unload(&self) -> RawStatus {
        let mut unloaded = self.unloaded.write().unwrap_or_else(PoisonError::into_inner);
        if *unloaded {
            return INVALID_HANDLE;
        }
        // SAFETY: the model is loaded and no call is in flight on it (write lock held).
        let status = unsafe { (self.library.functions.nrt_unload)(self.model.as_ptr()) };
        if status == SUCCESS {
            *unloaded = true;
        }
        status
    }
}

#[allow(unsafe_code)]
impl OwnedSet {
    /// `nrt_add_tensor_to_tensor_set`; on success the set keeps `tensor` alive under `name`.
    pub(crate) fn add(&self, name: &CStr, tensor: &Arc<OwnedTensor>) -> RawStatus {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        // SAFETY: the set and the tensor are live (their owners are borrowed); `name` is
        // NUL-terminated. The set keeps the tensor's owner for as long as it may use the pointer.
        let status = unsafe {
            (self.library.functions.nrt_add_tensor_to_tensor_set)(
                self.set.as_ptr(),
                name.as_ptr(),
                tensor.tensor.as_ptr(),
            )
        };
        if status == SUCCESS {
            members.insert(name.to_bytes().to_vec(), Arc::clone(tensor));
        }
        status
    }

    /// The names this set was given, each with its tensor's tag (no call into libnrt).
    pub(crate) fn member_tags(&self) -> Vec<(Vec<u8>, u64)> {
        let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.iter().map(|(name, tensor)| (name.clone(), tensor.tag)).collect()
    }

    /// `nrt_get_tensor_from_tensor_set`: the tag of the tensor libnrt returns, or `None` when
    /// it is not one this set was given (a library bug).
    pub(crate) fn get(&self, name: &CStr) -> Result<Option<u64>, RawStatus> {
        let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        let mut tensor: *mut NrtTensor = ptr::null_mut();
        // SAFETY: the set is live; `name` is NUL-terminated; `tensor` is a valid out-pointer and
        // the pointer returned is only compared, never dereferenced.
        let status = unsafe {
            (self.library.functions.nrt_get_tensor_from_tensor_set)(
                self.set.as_ptr(),
                name.as_ptr(),
                &mut tensor,
            )
        };
        if status != SUCCESS {
            return Err(status);
        }
        Ok(members
            .get(name.to_bytes())
            .filter(|owner| owner.tensor.as_ptr() == tensor)
            .map(|owner| owner.tag))
    }
}

#[allow(unsafe_code)]
impl OwnedTensor {
    /// `nrt_tensor_attach_buffer` over the caller's buffer, kept alive by this tensor.
    pub(crate) fn attach_buffer(&self, buffer: Arc<SharedBuffer>) -> RawStatus {
        let mut kept = self.buffer.lock().unwrap_or_else(PoisonError::into_inner);
        let (address, len) = (buffer.as_mut_ptr().cast::<c_void>(), buffer.byte_len());
        // SAFETY: the tensor is live. `address` and `len` come from the `SharedBuffer` itself
        // (not from a trait a caller implements): `len` interior-mutable bytes of one boxed slice
        // that never moves and may be written through a shared reference while it lives; this
        // tensor keeps `buffer` (and its slices keep a clone) for as long as libnrt may touch the
        // memory.
        let status = unsafe {
            (self.library.functions.nrt_tensor_attach_buffer)(self.tensor.as_ptr(), address, len)
        };
        if status == SUCCESS {
            *kept = Some(buffer);
        }
        status
    }

    /// `nrt_tensor_allocate_slice`.
    pub(crate) fn allocate_slice(
        &self,
        offset: usize,
        size: usize,
        name: &CStr,
        tag: u64,
    ) -> Result<OwnedTensor, RawStatus> {
        let mut slice: *mut NrtTensor = ptr::null_mut();
        // SAFETY: the source tensor is live; `name` is NUL-terminated; `slice` is a valid
        // out-pointer.
        let status = unsafe {
            (self.library.functions.nrt_tensor_allocate_slice)(
                self.tensor.as_ptr(),
                offset,
                size,
                name.as_ptr(),
                &mut slice,
            )
        };
        let slice = owned(status, slice)?;
        let buffer = self.buffer.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Ok(self.library.own_tensor(slice, tag, buffer))
    }

    /// `nrt_tensor_check_output_completion`; `None` when the library does not export it.
    pub(crate) fn check_output_completion(
        &self,
        timeout_us: i64,
        expected: u64,
    ) -> Option<RawStatus> {
        let function = self.library.functions.nrt_tensor_check_output_completion?;
        // SAFETY: the tensor is live; the signature is the table's.
        Some(unsafe { function(self.tensor.as_ptr(), timeout_us, expected) })
    }

    /// `nrt_tensor_reset_output_completion`; `None` when the library does not export it.
    pub(crate) fn reset_output_completion(&self) -> Option<RawStatus> {
        let function = self.library.functions.nrt_tensor_reset_output_completion?;
        // SAFETY: the tensor is live; the signature is the table's.
        Some(unsafe { function(self.tensor.as_ptr()) })
    }

    /// `nrt_tensor_read` into `buf`.
    pub(crate) fn read(&self, offset: usize, buf: &mut [u8]) -> RawStatus {
        // SAFETY: the tensor is live; `buf` is writable for `buf.len()` bytes during the call.
        unsafe {
            (self.library.functions.nrt_tensor_read)(
                self.tensor.as_ptr(),
                buf.as_mut_ptr().cast(),
                offset,
                buf.len(),
            )
        }
    }

    /// `nrt_tensor_write` from `bytes`.
    pub(crate) fn write(&self, offset: usize, bytes: &[u8]) -> RawStatus {
        // SAFETY: the tensor is live; `bytes` is readable for its length during the call.
        unsafe {
            (self.library.functions.nrt_tensor_write)(
                self.tensor.as_ptr(),
                bytes.as_ptr().cast(),
                offset,
                bytes.len(),
            )
        }
    }

    /// `nrt_tensor_copy` from this tensor to `dst`.
    pub(crate) fn copy_to(
        &self,
        src_offset: usize,
        dst: &OwnedTensor,
        dst_offset: usize,
        size: usize,
    ) -> RawStatus {
        // SAFETY: both tensors are live (owners borrowed); libnrt checks the ranges.
        unsafe {
            (self.library.functions.nrt_tensor_copy)(
                self.tensor.as_ptr(),
                src_offset,
                dst.tensor.as_ptr(),
                dst_offset,
                size,
            )
        }
    }

    /// `nrt_tensor_memset`.
    pub(crate) fn memset(&self, offset: u64, value: i32, size: usize) -> RawStatus {
        // SAFETY: the tensor is live; libnrt checks the range.
        unsafe {
            (self.library.functions.nrt_tensor_memset)(self.tensor.as_ptr(), offset, value, size)
        }
    }

    /// `nrt_tensor_get_size`.
    pub(crate) fn size(&self) -> usize {
        // SAFETY: the tensor is live.
        unsafe { (self.library.functions.nrt_tensor_get_size)(self.tensor.as_ptr()) }
    }

    /// `nrt_tensor_get_va`, as an integer (never dereferenced here).
    pub(crate) fn va(&self) -> usize {
        // SAFETY: the tensor is live; the result is only converted to an integer.
        unsafe { (self.library.functions.nrt_tensor_get_va)(self.tensor.as_ptr()) as usize }
    }
}

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
        self.library.get_version().map_err(|c| failed(LibnrtFunction::nrt_get_version, c))
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
        let which = ModelCount::Nc;
        optional(which.function(), self.model(model)?.count(which))
    }

    fn get_model_vnc_count(&self, model: ModelId) -> Result<u32, NrtError> {
        let which = ModelCount::Vnc;
        optional(which.function(), self.model(model)?.count(which))
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

/// The counts of a loaded model, one libnrt function each.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ModelCount {
    /// `nrt_get_model_nc_count`.
    Nc,
    /// `nrt_get_model_vnc_count`.
    Vnc,
    /// `nrt_get_model_instance_count`.
    Instance,
}

impl ModelCount {
    /// The function that reads the count.
    pub(crate) fn function(self) -> LibnrtFunction {
        match self {
            ModelCount::Nc => LibnrtFunction::nrt_get_model_nc_count,
            ModelCount::Vnc => LibnrtFunction::nrt_get_model_vnc_count,
            ModelCount::Instance => LibnrtFunction::nrt_get_model_instance_count,
        }
    }
}

/// How the recorder reads the calls of `nrt.h` (see [`super::record`]).
#[allow(unsafe_code)]
pub(crate) mod recorded {
    use std::sync::Arc;

    use abi::runtime::call::{ReadBuffer, calls};
    use abi::runtime::{Framework, ModelId, NrtError, Placement, SetId, TensorId};
    use abi::status::NrtStatus;

    use super::super::record::Read::{Input, Nothing, Sync, Word};
    use super::super::record::{
        Call, Decoded, Effect, Kind, Measured, by_name, bytes, c_name, c_text, count, decoded,
        failure, launch, out_word, plans,
    };

    plans! {
        nrt_init => decoded(Nothing, &[1, 2], init),
        nrt_close => decoded(Nothing, &[], close),
        nrt_load => decoded(Input { pointer: 0, size: 1 }, &[0, 4], load),
        nrt_load_collectives => decoded(Input { pointer: 0, size: 1 }, &[0, 6], load_collectives),
        nrt_unload => decoded(Nothing, &[0], unload),
        nrt_execute => decoded(Sync, &[0, 1, 2], execute),
        nrt_execute_repeat => decoded(Sync, &[0, 1, 2], execute_repeat),
        nrt_allocate_tensor_set => decoded(Nothing, &[0], allocate_tensor_set),
        nrt_destroy_tensor_set => decoded(Word, &[0], destroy_tensor_set),
        nrt_add_tensor_to_tensor_set => decoded(Nothing, &[0, 1, 2], add_tensor_to_tensor_set),
        nrt_get_tensor_from_tensor_set => decoded(Nothing, &[0, 1, 2], get_tensor_from_tensor_set),
        nrt_tensor_allocate => decoded(Nothing, &[3, 4], tensor_allocate),
        nrt_tensor_allocate_empty => decoded(Nothing, &[0, 1], tensor_allocate_empty),
        nrt_tensor_allocate_slice => decoded(Nothing, &[0, 3, 4], tensor_allocate_slice),
        nrt_tensor_attach_buffer => decoded(Nothing, &[0, 1], tensor_attach_buffer),
        nrt_tensor_free => decoded(Word, &[0], tensor_free),
        nrt_tensor_read => decoded(Sync, &[0, 1], tensor_read),
        nrt_tensor_write => decoded(Input { pointer: 1, size: 3 }, &[0, 1], tensor_write),
        nrt_tensor_copy => decoded(Sync, &[0, 2], tensor_copy),
        nrt_tensor_memset => decoded(Nothing, &[0], tensor_memset),
        nrt_tensor_get_size => decoded(Nothing, &[0], tensor_get_size),
        nrt_tensor_get_va => decoded(Nothing, &[0], tensor_get_va),
        nrt_get_total_nc_count => decoded(Nothing, &[0], get_total_nc_count),
        nrt_get_total_vnc_count => decoded(Nothing, &[0], get_total_vnc_count),
        nrt_get_visible_nc_count => decoded(Nothing, &[0], get_visible_nc_count),
        nrt_get_visible_vnc_count => decoded(Nothing, &[0], get_visible_vnc_count),
        nrt_get_model_nc_count => decoded(Nothing, &[0, 1], get_model_nc_count),
        nrt_get_model_vnc_count => decoded(Nothing, &[0, 1], get_model_vnc_count),

        // Recorded by name and status only; a replay does not re-issue them.
        // What the machine alone decides, or an address or descriptor of this process.
        nrt_get_instance_info
        | nrt_tensor_get_device_allocation_info
        | nrt_get_dmabuf_fd
        | nrt_host_device_id_get
        | nrt_host_device_id_rid_map_get
        | nrt_get_hbm_mmap_va
        | nrt_get_vnc_memory_stats
        | nrt_get_attached_efa_bdf => by_name(Nothing),
        // Collectives: their peers are other processes, not in this recording.
        nrt_build_global_comm
        | nrt_cc_global_comm_init => by_name(Nothing),
        // Arguments spread over lists that a line does not carry.
        nrt_tensor_read_batch
        | nrt_tensor_write_batch => by_name(Nothing),
        // Results that depend on timing or on what the device did.
        nrt_tensor_check_output_completion
        | nrt_tensor_reset_output_completion => by_name(Nothing),
    }

    unsafe fn init(call: &mut Call<'_, '_, '_>) -> Decoded {
        let Some(framework) = Framework::from_code(call.args[0] as u32) else {
            return Decoded::ByName;
        };
        // SAFETY: two NUL-terminated strings.
        let (fw_version, fal_version) = unsafe { (c_text(call.args[1]), c_text(call.args[2])) };
        let output = call.status();
        call.line(calls::nrt_init { framework, fw_version, fal_version }, output, Effect::None)
    }

    fn close(call: &mut Call<'_, '_, '_>) -> Decoded {
        call.line(calls::nrt_close {}, (), Effect::None)
    }

    unsafe fn load(call: &mut Call<'_, '_, '_>) -> Decoded {
        let [_, _, vnc, vnc_count, model, ..] = *call.args else { return Decoded::ByName };
        let typed =
            calls::nrt_load { neff: call.input(), vnc: vnc as i32, vnc_count: vnc_count as i32 };
        // SAFETY: an `nrt_model_t **`.
        let output = call.made(Kind::Model, unsafe { out_word(model) }, ModelId);
        call.line(typed, output, Effect::None)
    }

    unsafe fn load_collectives(call: &mut Call<'_, '_, '_>) -> Decoded {
        let [_, _, vnc, vnc_count, id, count, model, ..] = *call.args else {
            return Decoded::ByName;
        };
        let typed = calls::nrt_load_collectives {
            neff: call.input(),
            vnc: vnc as i32,
            vnc_count: vnc_count as i32,
            ctx_device_id: id as u32,
            ctx_device_count: count as u32,
        };
        // SAFETY: an `nrt_model_t **`.
        let output = call.made(Kind::Model, unsafe { out_word(model) }, ModelId);
        call.line(typed, output, Effect::None)
    }

    fn unload(call: &mut Call<'_, '_, '_>) -> Decoded {
        // A released model's address may come back for the next load.
        let model = if call.ok() {
            ModelId(call.generations.released(Kind::Model, call.args[0]))
        } else {
            call.model(0)
        };
        let output = call.status();
        call.line(calls::nrt_unload { model }, output, Effect::None)
    }

    fn execute(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_execute {
            model: call.model(0),
            input_set: call.set(1),
            output_set: call.set(2),
        };
        let output = launch(call);
        call.line(typed, output, Effect::None)
    }

    fn execute_repeat(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_execute_repeat {
            model: call.model(0),
            input_set: call.set(1),
            output_set: call.set(2),
            repeat_count: call.args[3] as i32,
        };
        let output = launch(call);
        call.line(typed, output, Effect::None)
    }

    unsafe fn allocate_tensor_set(call: &mut Call<'_, '_, '_>) -> Decoded {
        // SAFETY: an `nrt_tensor_set_t **`.
        let output = call.made(Kind::Set, unsafe { out_word(call.args[0]) }, SetId);
        call.line(calls::nrt_allocate_tensor_set {}, output, Effect::None)
    }

    /// A release, whose handle was read before the call cleared it; `void` in C.
    fn destroy_tensor_set(call: &mut Call<'_, '_, '_>) -> Decoded {
        if call.before.word == 0 {
            return Decoded::ByName;
        }
        let set = SetId(call.generations.released(Kind::Set, call.before.word));
        call.line(calls::nrt_destroy_tensor_set { set }, Ok(()), Effect::None)
    }

    unsafe fn add_tensor_to_tensor_set(call: &mut Call<'_, '_, '_>) -> Decoded {
        let set = call.set(0);
        // SAFETY: a NUL-terminated name.
        let name = unsafe { c_name(call.args[1]) };
        let typed = calls::nrt_add_tensor_to_tensor_set { set, name, tensor: call.tensor(2) };
        let output = call.status();
        call.line(typed, output, Effect::None)
    }

    unsafe fn get_tensor_from_tensor_set(call: &mut Call<'_, '_, '_>) -> Decoded {
        let set = call.set(0);
        // SAFETY: a NUL-terminated name, and an `nrt_tensor_t **`.
        let (name, found) = unsafe { (c_name(call.args[1]), out_word(call.args[2])) };
        // The tensor found is one the set holds, not a new one.
        let output = if call.ok() {
            Ok(TensorId(call.generations.read(Kind::Tensor, found)))
        } else {
            Err(failure(call.result))
        };
        call.line(calls::nrt_get_tensor_from_tensor_set { set, name }, output, Effect::None)
    }

    unsafe fn tensor_allocate(call: &mut Call<'_, '_, '_>) -> Decoded {
        let Some(placement) = Placement::from_code(call.args[0] as u32) else {
            return Decoded::ByName;
        };
        let [_, vnc, size, name, tensor, ..] = *call.args else { return Decoded::ByName };
        // SAFETY: a NUL-terminated name.
        let name = unsafe { c_name(name) };
        let typed =
            calls::nrt_tensor_allocate { placement, vnc: vnc as i32, size: size as usize, name };
        // SAFETY: an `nrt_tensor_t **`.
        let output = call.made(Kind::Tensor, unsafe { out_word(tensor) }, TensorId);
        call.line(typed, output, Effect::None)
    }

    unsafe fn tensor_allocate_empty(call: &mut Call<'_, '_, '_>) -> Decoded {
        // SAFETY: a NUL-terminated name, and an `nrt_tensor_t **`.
        let (name, tensor) = unsafe { (c_name(call.args[0]), out_word(call.args[1])) };
        let output = call.made(Kind::Tensor, tensor, TensorId);
        call.line(calls::nrt_tensor_allocate_empty { name }, output, Effect::None)
    }

    unsafe fn tensor_allocate_slice(call: &mut Call<'_, '_, '_>) -> Decoded {
        let src = call.tensor(0);
        let [_, offset, size, name, slice, ..] = *call.args else { return Decoded::ByName };
        // SAFETY: a NUL-terminated name, and an `nrt_tensor_t **`.
        let (name, slice) = unsafe { (c_name(name), out_word(slice)) };
        let typed = calls::nrt_tensor_allocate_slice {
            src,
            offset: offset as usize,
            size: size as usize,
            name,
        };
        let output = call.made(Kind::Tensor, slice, TensorId);
        call.line(typed, output, Effect::None)
    }

    fn tensor_attach_buffer(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_tensor_attach_buffer {
            tensor: call.tensor(0),
            buffer: Arc::new(Measured(call.args[2] as usize)),
        };
        let (output, effect) = (call.status(), call.on_success(Effect::Expose(call.args[0])));
        call.line(typed, output, effect)
    }

    /// A release, whose handle was read before the call cleared it; `void` in C.
    fn tensor_free(call: &mut Call<'_, '_, '_>) -> Decoded {
        let freed = call.before.word;
        if freed == 0 {
            return Decoded::ByName;
        }
        let tensor = TensorId(call.generations.released(Kind::Tensor, freed));
        call.line(calls::nrt_tensor_free { tensor }, Ok(()), Effect::Forget(freed))
    }

    unsafe fn tensor_read(call: &mut Call<'_, '_, '_>) -> Decoded {
        let [_, buf, offset, size, ..] = *call.args else { return Decoded::ByName };
        let buf = if call.ok() {
            // SAFETY: the buffer holds the `size` bytes read.
            ReadBuffer::read(unsafe { bytes(buf, size) }.to_vec())
        } else {
            ReadBuffer::unread(size as usize)
        };
        let typed = calls::nrt_tensor_read { tensor: call.tensor(0), offset: offset as usize, buf };
        let output = call.status();
        call.line(typed, output, Effect::None)
    }

    fn tensor_write(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_tensor_write {
            tensor: call.tensor(0),
            offset: call.args[2] as usize,
            bytes: call.input(),
        };
        let (output, effect) = (call.status(), call.on_success(Effect::Refresh(call.args[0])));
        call.line(typed, output, effect)
    }

    fn tensor_copy(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_tensor_copy {
            src: call.tensor(0),
            src_offset: call.args[1] as usize,
            dst: call.tensor(2),
            dst_offset: call.args[3] as usize,
            size: call.args[4] as usize,
        };
        let (output, effect) = (call.status(), call.on_success(Effect::Refresh(call.args[2])));
        call.line(typed, output, effect)
    }

    fn tensor_memset(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_tensor_memset {
            tensor: call.tensor(0),
            offset: call.args[1],
            value: call.args[2] as i32,
            size: call.args[3] as usize,
        };
        let (output, effect) = (call.status(), call.on_success(Effect::Refresh(call.args[0])));
        call.line(typed, output, effect)
    }

    /// The size is the result: 0 for a failure, which the line cannot tell from an empty
    /// tensor.
    fn tensor_get_size(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_tensor_get_size { tensor: call.tensor(0) };
        call.line(typed, Ok(call.result as usize), Effect::None)
    }

    /// The address is the result: NULL is a failure, `NRT_INVALID` as the simulator says.
    fn tensor_get_va(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_tensor_get_va { tensor: call.tensor(0) };
        if call.result == 0 {
            let invalid = NrtError { status: NrtStatus::Invalid, detail: String::new() };
            call.line(typed, Err(invalid), Effect::None)
        } else {
            call.line(typed, Ok(call.result as usize), Effect::Expose(call.args[0]))
        }
    }

    unsafe fn get_total_nc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
        // SAFETY: a `uint32_t *`.
        unsafe { count(call, calls::nrt_get_total_nc_count {}, 0) }
    }

    unsafe fn get_total_vnc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
        // SAFETY: a `uint32_t *`.
        unsafe { count(call, calls::nrt_get_total_vnc_count {}, 0) }
    }

    unsafe fn get_visible_nc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
        // SAFETY: a `uint32_t *`.
        unsafe { count(call, calls::nrt_get_visible_nc_count {}, 0) }
    }

    unsafe fn get_visible_vnc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
        // SAFETY: a `uint32_t *`.
        unsafe { count(call, calls::nrt_get_visible_vnc_count {}, 0) }
    }

    unsafe fn get_model_nc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_get_model_nc_count { model: call.model(0) };
        // SAFETY: a `uint32_t *`.
        unsafe { count(call, typed, 1) }
    }

    unsafe fn get_model_vnc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
        let typed = calls::nrt_get_model_vnc_count { model: call.model(0) };
        // SAFETY: a `uint32_t *`.
        unsafe { count(call, typed, 1) }
    }
}

//! The exports of `nrt.h`: lifecycle, loading and executing models, tensor sets, tensors and
//! their memory, core counts and instance information, and the collectives communicator.
//!
//! Where the simulator models a call the answer is the simulator's; the device-only calls at the
//! end (dma-buf fds, routing ids, HBM mappings, EFA) return `NRT_INVALID` with the reason.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::Arc;

use abi::c_layout::c_types::{
    nrt_instance_info_t, nrt_tensor_batch_t, nrt_tensor_device_allocation_info_t,
    nrt_vnc_memory_stats_t,
};
use abi::functions::LibnrtFunction as F;
use abi::runtime::prelude::*;
use abi::runtime::{Framework, ModelId, Placement, SetId, TensorId};

use super::{
    c_bytes, c_text, count, guard, model_count, put, put_value, put_versioned, with_global,
};
use crate::ffi::CallerBuffer;
use crate::handles::{Global, Kind, global};
use crate::status::{INVALID, SUCCESS};

/// `nrt_get_instance_info`: the simulated instance (`NRTSIM_INSTANCE`, `SimConfig::instance`); `instance_info_len`
/// must cover the whole struct.
///
/// # Safety
/// `info` is NULL or points at `instance_info_len` writable bytes.
pub unsafe extern "C" fn nrt_get_instance_info(
    info: *mut nrt_instance_info_t,
    instance_info_len: usize,
) -> u32 {
    with_global(F::nrt_get_instance_info.name(), |g| {
        if info.is_null() || instance_info_len < size_of::<nrt_instance_info_t>() {
            return INVALID;
        }
        let instance = match g.sim.get_instance_info() {
            Ok(instance) => instance,
            Err(err) => return g.failed(F::nrt_get_instance_info.name(), &err),
        };
        let mut value = nrt_instance_info_t {
            family: instance.family,
            size: instance.size,
            arch_name: [0; 16],
            device_revision: [0; 8],
        };
        for (slot, byte) in value.arch_name.iter_mut().zip(instance.arch_name.bytes().take(15)) {
            *slot = byte as c_char;
        }
        for (slot, byte) in
            value.device_revision.iter_mut().zip(instance.device_revision.bytes().take(7))
        {
            *slot = byte as c_char;
        }
        // SAFETY: non-NULL with room for the struct (checked above).
        unsafe { put_value(info, value) }
    })
}

/// `nrt_init`. NULL version strings are read as empty: they are informational.
///
/// # Safety
/// The strings are NULL or NUL-terminated.
pub unsafe extern "C" fn nrt_init(
    framework: u32,
    fw_version: *const c_char,
    fal_version: *const c_char,
) -> u32 {
    with_global(F::nrt_init.name(), |g| {
        let Some(framework) = Framework::from_code(framework) else { return INVALID };
        // SAFETY: the caller passes NULL or C strings.
        let (fw, fal) = unsafe { (c_text(fw_version), c_text(fal_version)) };
        g.status(
            F::nrt_init.name(),
            g.sim.init(framework, &fw.unwrap_or_default(), &fal.unwrap_or_default()),
        )
    })
}

/// `nrt_close`. Later gated calls return `NRT_CLOSED`; `nrt_init` may open the simulator again
/// (models are gone, tensors and sets stay valid), as the simulator does.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_close() {
    guard(F::nrt_close.name(), (), || {
        if let Ok(g) = global() {
            g.sim.close();
        }
    })
}

fn load(
    call: &str,
    g: &Global,
    neff: *const c_void,
    size: usize,
    model: *mut *mut c_void,
    load: impl FnOnce(&[u8]) -> Result<ModelId, abi::runtime::NrtError>,
) -> u32 {
    if neff.is_null() || model.is_null() {
        return INVALID;
    }
    // SAFETY: `neff` points at `size` readable bytes (the C contract); they are only read
    // during this call.
    let bytes = unsafe { std::slice::from_raw_parts(neff.cast::<u8>(), size) };
    match load(bytes) {
        Ok(id) => {
            // SAFETY: `model` is non-NULL and points at the caller's handle variable.
            unsafe { put(model, g.register(Kind::Model, id.0)) };
            SUCCESS
        }
        Err(err) => g.failed(call, &err),
    }
}

/// `nrt_load`.
///
/// # Safety
/// `neff` points at `size` readable bytes; `model` at writable storage for a handle.
pub unsafe extern "C" fn nrt_load(
    neff: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    model: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_load.name(), |g| {
        load(F::nrt_load.name(), g, neff, size, model, |bytes| g.sim.load(bytes, vnc, vnc_count))
    })
}

/// `nrt_load_collectives`.
///
/// # Safety
/// As [`nrt_load`].
pub unsafe extern "C" fn nrt_load_collectives(
    neff: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    ctx_device_id: u32,
    ctx_device_count: u32,
    model: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_load_collectives.name(), |g| {
        load(F::nrt_load_collectives.name(), g, neff, size, model, |bytes| {
            g.sim.load_collectives(bytes, vnc, vnc_count, ctx_device_id, ctx_device_count)
        })
    })
}

/// `nrt_unload`; the handle is released when the simulator unloads the model.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_unload(model: *mut c_void) -> u32 {
    with_global(F::nrt_unload.name(), |g| {
        let id = try_status!(g.lookup(Kind::Model, model as usize));
        let status = g.status(F::nrt_unload.name(), g.sim.unload(ModelId(id)));
        if status == SUCCESS {
            g.release(Kind::Model, model as usize);
        }
        status
    })
}

/// `nrt_get_model_nc_count`: how many NeuronCores the model occupies.
///
/// # Safety
/// `vnc_count` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_model_nc_count(model: *const c_void, vnc_count: *mut u32) -> u32 {
    model_count(F::nrt_get_model_nc_count, model, vnc_count, |sim, id| sim.get_model_nc_count(id))
}

/// `nrt_get_model_vnc_count`: how many NeuronCores the model occupies.
///
/// # Safety
/// `vnc_count` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_model_vnc_count(model: *const c_void, vnc_count: *mut u32) -> u32 {
    model_count(F::nrt_get_model_vnc_count, model, vnc_count, |sim, id| sim.get_model_vnc_count(id))
}

/// `nrt_get_total_nc_count`: the NeuronCores of the machine, before `nrt_init` too.
///
/// # Safety
/// `vnc_count` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_total_nc_count(vnc_count: *mut u32) -> u32 {
    with_global(F::nrt_get_total_nc_count.name(), |g| {
        count(g, F::nrt_get_total_nc_count, vnc_count, || g.sim.get_total_nc_count())
    })
}

/// `nrt_get_total_vnc_count`: works before `nrt_init`.
///
/// # Safety
/// `count` is NULL or points at a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_total_vnc_count(out: *mut u32) -> u32 {
    with_global(F::nrt_get_total_vnc_count.name(), |g| {
        count(g, F::nrt_get_total_vnc_count, out, || g.sim.get_total_vnc_count())
    })
}

/// `nrt_get_visible_nc_count`: the NeuronCores this process may use, before `nrt_init` too.
///
/// # Safety
/// `vnc_count` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_visible_nc_count(vnc_count: *mut u32) -> u32 {
    with_global(F::nrt_get_visible_nc_count.name(), |g| {
        count(g, F::nrt_get_visible_nc_count, vnc_count, || g.sim.get_visible_nc_count())
    })
}

/// `nrt_get_visible_vnc_count`.
///
/// # Safety
/// `count` is NULL or points at a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_visible_vnc_count(out: *mut u32) -> u32 {
    with_global(F::nrt_get_visible_vnc_count.name(), |g| {
        count(g, F::nrt_get_visible_vnc_count, out, || g.sim.get_visible_vnc_count())
    })
}

/// `nrt_allocate_tensor_set`.
///
/// # Safety
/// `set` points at writable storage for a handle.
pub unsafe extern "C" fn nrt_allocate_tensor_set(set: *mut *mut c_void) -> u32 {
    with_global(F::nrt_allocate_tensor_set.name(), |g| {
        if set.is_null() {
            return INVALID;
        }
        match g.sim.allocate_tensor_set() {
            Ok(id) => {
                // SAFETY: non-NULL, the caller's handle variable.
                unsafe { put(set, g.register(Kind::Set, id.0)) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_allocate_tensor_set.name(), &err),
        }
    })
}

/// `nrt_destroy_tensor_set`: forgets the set (not its tensors) and sets `*set` to NULL. An
/// unknown handle is ignored.
///
/// # Safety
/// `set` is NULL or points at the caller's handle variable.
pub unsafe extern "C" fn nrt_destroy_tensor_set(set: *mut *mut c_void) {
    guard(F::nrt_destroy_tensor_set.name(), (), || {
        let Ok(g) = global() else { return };
        if set.is_null() {
            return;
        }
        // SAFETY: non-NULL, the caller's handle variable.
        let handle = unsafe { *set } as usize;
        if let Some(id) = g.release(Kind::Set, handle) {
            let _ = g.sim.destroy_tensor_set(SetId(id));
        }
        // SAFETY: as above.
        unsafe { *set = ptr::null_mut() };
    })
}

/// `nrt_add_tensor_to_tensor_set`: adds or replaces `name`.
///
/// # Safety
/// `name` is NULL or a C string.
pub unsafe extern "C" fn nrt_add_tensor_to_tensor_set(
    set: *mut c_void,
    name: *const c_char,
    tensor: *mut c_void,
) -> u32 {
    with_global(F::nrt_add_tensor_to_tensor_set.name(), |g| {
        // SAFETY: NULL or a C string.
        let Some(name) = (unsafe { c_bytes(name) }) else { return INVALID };
        let set = SetId(try_status!(g.lookup(Kind::Set, set as usize)));
        let tensor = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        g.status(
            F::nrt_add_tensor_to_tensor_set.name(),
            g.sim.add_tensor_to_tensor_set(set, name, tensor),
        )
    })
}

/// `nrt_get_tensor_from_tensor_set`: `NRT_FAILURE` for a missing name.
///
/// # Safety
/// `name` is NULL or a C string; `tensor` is NULL or points at writable storage for a handle.
pub unsafe extern "C" fn nrt_get_tensor_from_tensor_set(
    set: *mut c_void,
    name: *const c_char,
    tensor: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_get_tensor_from_tensor_set.name(), |g| {
        // SAFETY: NULL or a C string.
        let Some(name) = (unsafe { c_bytes(name) }) else { return INVALID };
        if tensor.is_null() {
            return INVALID;
        }
        let set = SetId(try_status!(g.lookup(Kind::Set, set as usize)));
        match g.sim.get_tensor_from_tensor_set(set, name) {
            Ok(id) => {
                // SAFETY: non-NULL, the caller's handle variable. The handle of a tensor freed
                // since it was added is not registered, so using it is NRT_INVALID_HANDLE.
                unsafe { put(tensor, crate::handles::encode(Kind::Tensor, id.0)) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_get_tensor_from_tensor_set.name(), &err),
        }
    })
}

fn execute(
    call: &str,
    g: &Global,
    model: usize,
    input: usize,
    output: usize,
    repeat: Option<c_int>,
) -> u32 {
    let model = ModelId(try_status!(g.lookup(Kind::Model, model)));
    let input = SetId(try_status!(g.lookup(Kind::Set, input)));
    let output = SetId(try_status!(g.lookup(Kind::Set, output)));
    let result = match repeat {
        None => g.sim.execute(model, input, output),
        Some(count) => g.sim.execute_repeat(model, input, output, count),
    };
    match result {
        Ok(status) => status.code(),
        Err(err) => g.failed(call, &err),
    }
}

/// `nrt_execute`: `NRT_SUCCESS`, or `NRT_EXEC_COMPLETED_WITH_NUM_ERR` (1003) with the outputs
/// written, or a failure.
///
/// # Safety
/// None: handles are looked up, never dereferenced.
pub unsafe extern "C" fn nrt_execute(
    model: *mut c_void,
    input: *const c_void,
    output: *mut c_void,
) -> u32 {
    with_global(F::nrt_execute.name(), |g| {
        execute(F::nrt_execute.name(), g, model as usize, input as usize, output as usize, None)
    })
}

/// `nrt_execute_repeat`.
///
/// # Safety
/// None: handles are looked up, never dereferenced.
pub unsafe extern "C" fn nrt_execute_repeat(
    model: *mut c_void,
    input: *const c_void,
    output: *mut c_void,
    repeat_count: c_int,
) -> u32 {
    with_global(F::nrt_execute_repeat.name(), |g| {
        execute(
            F::nrt_execute_repeat.name(),
            g,
            model as usize,
            input as usize,
            output as usize,
            Some(repeat_count),
        )
    })
}

/// `nrt_build_global_comm`: the communicator of `g_device_count` ranks of this process
/// (`SimRuntime::build_global_comm`).
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_build_global_comm(
    vnc: i32,
    g_device_id: u32,
    g_device_count: u32,
) -> u32 {
    with_global(F::nrt_build_global_comm.name(), |g| {
        let built = g.sim.build_global_comm(vnc, g_device_id, g_device_count);
        g.status(F::nrt_build_global_comm.name(), built)
    })
}

fn new_tensor(
    call: &str,
    g: &Global,
    out: *mut *mut c_void,
    made: Result<TensorId, abi::runtime::NrtError>,
) -> u32 {
    match made {
        Ok(id) => {
            // SAFETY: `out` was checked non-NULL by the caller of this function and is the C
            // caller's handle variable.
            unsafe { put(out, g.register(Kind::Tensor, id.0)) };
            SUCCESS
        }
        Err(err) => g.failed(call, &err),
    }
}

/// `nrt_tensor_allocate`. A NULL name is an empty name.
///
/// # Safety
/// `name` is NULL or a C string; `tensor` is NULL or points at writable storage for a handle.
pub unsafe extern "C" fn nrt_tensor_allocate(
    placement: u32,
    vnc: c_int,
    size: usize,
    name: *const c_char,
    tensor: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_tensor_allocate.name(), |g| {
        let Some(placement) = Placement::from_code(placement) else { return INVALID };
        if tensor.is_null() {
            return INVALID;
        }
        // SAFETY: NULL or a C string.
        let name = unsafe { c_bytes(name) }.unwrap_or_default();
        new_tensor(
            F::nrt_tensor_allocate.name(),
            g,
            tensor,
            g.sim.tensor_allocate(placement, vnc, size, name),
        )
    })
}

/// `nrt_tensor_free`: releases the handle and sets `*tensor` to NULL; storage shared with
/// slices lives on. An unknown handle is ignored.
///
/// # Safety
/// `tensor` is NULL or points at the caller's handle variable.
pub unsafe extern "C" fn nrt_tensor_free(tensor: *mut *mut c_void) {
    guard(F::nrt_tensor_free.name(), (), || {
        let Ok(g) = global() else { return };
        if tensor.is_null() {
            return;
        }
        // SAFETY: non-NULL, the caller's handle variable.
        let handle = unsafe { *tensor } as usize;
        if let Some(id) = g.release(Kind::Tensor, handle) {
            let _ = g.sim.tensor_free(TensorId(id));
        }
        // SAFETY: as above.
        unsafe { *tensor = ptr::null_mut() };
    })
}

/// `nrt_tensor_read`.
///
/// # Safety
/// `buffer` points at `size` writable bytes.
pub unsafe extern "C" fn nrt_tensor_read(
    tensor: *const c_void,
    buffer: *mut c_void,
    offset: usize,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_read.name(), |g| {
        if buffer.is_null() {
            return INVALID;
        }
        let id = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        // `buffer` may point into simulator memory (from `nrt_tensor_get_va`), so it is never
        // made a slice: the bytes are staged and moved with an overlap-safe copy.
        let read = g.sim.tensor_read_staged(id, offset, size, |staged| {
            // SAFETY: `buffer` points at `size` writable bytes (the C contract) for this call;
            // `ptr::copy` allows them to overlap anything, the staging buffer is our own.
            unsafe { ptr::copy(staged.as_ptr(), buffer.cast::<u8>(), staged.len()) }
        });
        g.status(F::nrt_tensor_read.name(), read)
    })
}

/// `nrt_tensor_write`.
///
/// # Safety
/// `buffer` points at `size` readable bytes.
pub unsafe extern "C" fn nrt_tensor_write(
    tensor: *mut c_void,
    buffer: *const c_void,
    offset: usize,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_write.name(), |g| {
        if buffer.is_null() {
            return INVALID;
        }
        let id = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        // As in `nrt_tensor_read`: staged, never a slice over caller memory.
        let written = g.sim.tensor_write_staged(id, offset, size, |staged| {
            // SAFETY: `buffer` points at `size` readable bytes (the C contract) for this call;
            // `ptr::copy` allows them to overlap anything.
            unsafe { ptr::copy(buffer.cast::<u8>(), staged.as_mut_ptr(), staged.len()) }
        });
        g.status(F::nrt_tensor_write.name(), written)
    })
}

/// Runs every operation of `n_batches` batches through `each` (tensor handle, offset, buffer,
/// size), stopping at the first failure.
///
/// # Safety
/// `batches` points at `n_batches` entries whose `ops` point at `num_ops` entries each.
unsafe fn for_each_op(
    g: &Global,
    batches: *const nrt_tensor_batch_t,
    n_batches: u64,
    mut each: impl FnMut(TensorId, usize, *mut c_void, usize) -> u32,
) -> u32 {
    if batches.is_null() {
        return INVALID;
    }
    let Ok(n_batches) = usize::try_from(n_batches) else { return INVALID };
    // SAFETY: `n_batches` readable entries by the caller's contract.
    let batches = unsafe { std::slice::from_raw_parts(batches, n_batches) };
    for batch in batches {
        let tensor = match g.lookup(Kind::Tensor, batch.tensor as usize) {
            Ok(id) => TensorId(id),
            Err(status) => return status,
        };
        if batch.ops.is_null() && batch.num_ops > 0 {
            return INVALID;
        }
        let ops = if batch.num_ops == 0 {
            &[][..]
        } else {
            // SAFETY: `num_ops` readable entries by the caller's contract.
            unsafe { std::slice::from_raw_parts(batch.ops, batch.num_ops as usize) }
        };
        for op in ops {
            let (Ok(offset), Ok(size)) = (usize::try_from(op.offset), usize::try_from(op.size))
            else {
                return INVALID;
            };
            if op.buffer.is_null() && size > 0 {
                return INVALID;
            }
            let status = each(tensor, offset, op.buffer, size);
            if status != SUCCESS {
                return status;
            }
        }
    }
    SUCCESS
}

/// `nrt_tensor_read_batch`: every operation is an `nrt_tensor_read`, in order. `untracked` changes
/// nothing in the simulator (its reads never race a launch they could corrupt).
///
/// # Safety
/// `batches` points at `num_batches` entries; each operation's buffer has `size` writable bytes.
pub unsafe extern "C" fn nrt_tensor_read_batch(
    batches: *const nrt_tensor_batch_t,
    num_batches: u64,
    _untracked: bool,
) -> u32 {
    with_global(F::nrt_tensor_read_batch.name(), |g| {
        if let Err(status) = g.enter(F::nrt_tensor_read_batch) {
            return status;
        }
        // SAFETY: by this function's contract.
        unsafe {
            for_each_op(g, batches, num_batches, |tensor, offset, buffer, size| {
                // The staged read checks the op's range before it allocates, so a size from the
                // caller that the tensor cannot hold is refused without allocating it.
                let result = g.sim.tensor_read_staged(tensor, offset, size, |staged| {
                    if !staged.is_empty() {
                        // SAFETY: `buffer` has `size` writable bytes (this function's contract);
                        // `ptr::copy` allows it to overlap simulator memory.
                        ptr::copy(staged.as_ptr(), buffer.cast::<u8>(), staged.len());
                    }
                });
                g.status(F::nrt_tensor_read_batch.name(), result)
            })
        }
    })
}

/// `nrt_tensor_write_batch`: every operation is an `nrt_tensor_write`, in order.
///
/// # Safety
/// `batches` points at `num_batches` entries; each operation's buffer has `size` readable bytes.
pub unsafe extern "C" fn nrt_tensor_write_batch(
    batches: *const nrt_tensor_batch_t,
    num_batches: u64,
    _untracked: bool,
) -> u32 {
    with_global(F::nrt_tensor_write_batch.name(), |g| {
        if let Err(status) = g.enter(F::nrt_tensor_write_batch) {
            return status;
        }
        // SAFETY: by this function's contract.
        unsafe {
            for_each_op(g, batches, num_batches, |tensor, offset, buffer, size| {
                // As `nrt_tensor_write`: the range is checked before the caller's bytes are
                // staged, so an op larger than its tensor is refused without copying it.
                let written = g.sim.tensor_write_staged(tensor, offset, size, |staged| {
                    if !staged.is_empty() {
                        // SAFETY: `buffer` has `size` readable bytes (this function's contract).
                        ptr::copy(buffer.cast::<u8>(), staged.as_mut_ptr(), staged.len());
                    }
                });
                g.status(F::nrt_tensor_write_batch.name(), written)
            })
        }
    })
}

/// `nrt_tensor_copy`.
///
/// # Safety
/// None: handles are looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_copy(
    source: *const c_void,
    source_offset: usize,
    destination: *mut c_void,
    destination_offset: usize,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_copy.name(), |g| {
        let source = TensorId(try_status!(g.lookup(Kind::Tensor, source as usize)));
        let destination = TensorId(try_status!(g.lookup(Kind::Tensor, destination as usize)));
        let copied =
            g.sim.tensor_copy(source, source_offset, destination, destination_offset, size);
        g.status(F::nrt_tensor_copy.name(), copied)
    })
}

/// `nrt_tensor_get_size`: 0 for a handle this library does not know.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_get_size(tensor: *const c_void) -> usize {
    guard(F::nrt_tensor_get_size.name(), 0, || {
        let Ok(g) = global() else { return 0 };
        let Ok(id) = g.lookup(Kind::Tensor, tensor as usize) else { return 0 };
        g.sim.tensor_get_size(TensorId(id)).unwrap_or(0)
    })
}

/// `nrt_tensor_memset`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_memset(
    tensor: *mut c_void,
    offset: u64,
    value: c_int,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_memset.name(), |g| {
        let id = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        g.status(F::nrt_tensor_memset.name(), g.sim.tensor_memset(id, offset, value, size))
    })
}

/// `nrt_tensor_allocate_empty`. A NULL name is an empty name.
///
/// # Safety
/// As [`nrt_tensor_allocate`].
pub unsafe extern "C" fn nrt_tensor_allocate_empty(
    name: *const c_char,
    tensor: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_tensor_allocate_empty.name(), |g| {
        if tensor.is_null() {
            return INVALID;
        }
        // SAFETY: NULL or a C string.
        let name = unsafe { c_bytes(name) }.unwrap_or_default();
        new_tensor(
            F::nrt_tensor_allocate_empty.name(),
            g,
            tensor,
            g.sim.tensor_allocate_empty(name),
        )
    })
}

/// `nrt_tensor_attach_buffer`: the tensor uses the caller's memory in place.
///
/// # Safety
/// `buffer` points at `size` bytes that the caller keeps readable, writable and in place while
/// the tensor (or a slice of it) exists.
pub unsafe extern "C" fn nrt_tensor_attach_buffer(
    tensor: *mut c_void,
    buffer: *mut c_void,
    size: usize,
) -> u32 {
    with_global(F::nrt_tensor_attach_buffer.name(), |g| {
        if buffer.is_null() {
            return INVALID;
        }
        let id = TensorId(try_status!(g.lookup(Kind::Tensor, tensor as usize)));
        // SAFETY: the caller keeps `size` bytes at `buffer` alive and in place (this
        // function's contract, libnrt's for attached buffers).
        let memory = unsafe { CallerBuffer::new(buffer as usize, size) };
        g.status(
            F::nrt_tensor_attach_buffer.name(),
            g.sim.tensor_attach_buffer(id, Arc::new(memory)),
        )
    })
}

/// `nrt_tensor_allocate_slice`. A NULL name is an empty name.
///
/// # Safety
/// `name` is NULL or a C string; `slice` is NULL or points at writable storage for a handle.
pub unsafe extern "C" fn nrt_tensor_allocate_slice(
    source: *const c_void,
    offset: usize,
    size: usize,
    name: *const c_char,
    slice: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_tensor_allocate_slice.name(), |g| {
        if slice.is_null() {
            return INVALID;
        }
        let source = TensorId(try_status!(g.lookup(Kind::Tensor, source as usize)));
        // SAFETY: NULL or a C string.
        let name = unsafe { c_bytes(name) }.unwrap_or_default();
        let made = g.sim.tensor_allocate_slice(source, offset, size, name);
        new_tensor(F::nrt_tensor_allocate_slice.name(), g, slice, made)
    })
}

/// `nrt_tensor_get_va`: the address of the tensor's simulated storage (or of the attached
/// buffer); NULL for an unknown handle or a tensor without storage.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_get_va(tensor: *const c_void) -> *mut c_void {
    guard(F::nrt_tensor_get_va.name(), ptr::null_mut(), || {
        let Ok(g) = global() else { return ptr::null_mut() };
        let Ok(id) = g.lookup(Kind::Tensor, tensor as usize) else { return ptr::null_mut() };
        match g.sim.tensor_get_va(TensorId(id)) {
            Ok(address) => address as *mut c_void,
            Err(err) => {
                g.failed(F::nrt_tensor_get_va.name(), &err);
                ptr::null_mut()
            }
        }
    })
}

/// `nrt_tensor_get_device_allocation_info`: the storage's address as the physical address, the
/// tensor's size, HBM 0.
///
/// # Safety
/// `alloc_info` is NULL or a writable `nrt_tensor_device_allocation_info_t`.
pub unsafe extern "C" fn nrt_tensor_get_device_allocation_info(
    tensor: *const c_void,
    alloc_info: *mut nrt_tensor_device_allocation_info_t,
) -> u32 {
    with_global(F::nrt_tensor_get_device_allocation_info.name(), |g| {
        if alloc_info.is_null() {
            return INVALID;
        }
        if let Err(status) = g.enter(F::nrt_tensor_get_device_allocation_info) {
            return status;
        }
        let id = match g.lookup(Kind::Tensor, tensor as usize) {
            Ok(id) => TensorId(id),
            Err(status) => return status,
        };
        let found = g.sim.tensor_get_va(id).and_then(|va| Ok((va, g.sim.tensor_get_size(id)?)));
        match found {
            Ok((va, size)) => {
                let value = nrt_tensor_device_allocation_info_t {
                    physical_address: va as u64,
                    size,
                    hbm_index: 0,
                };
                // SAFETY: non-NULL, the caller's struct.
                unsafe { put_value(alloc_info, value) }
            }
            Err(err) => g.failed(F::nrt_tensor_get_device_allocation_info.name(), &err),
        }
    })
}

/// `nrt_tensor_check_output_completion`: `NRT_SUCCESS` once `expected_completion_count`
/// launches have written the tensor as an output (since it was made or reset), `NRT_TIMEOUT`
/// after `timeout` microseconds; a negative timeout waits without bound.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_check_output_completion(
    output_tensor: *const c_void,
    timeout: i64,
    expected_completion_count: u64,
) -> u32 {
    with_global(F::nrt_tensor_check_output_completion.name(), |g| {
        let id = match g.lookup(Kind::Tensor, output_tensor as usize) {
            Ok(id) => TensorId(id),
            Err(status) => return status,
        };
        let checked = g.sim.tensor_check_output_completion(id, timeout, expected_completion_count);
        g.status(F::nrt_tensor_check_output_completion.name(), checked)
    })
}

/// `nrt_tensor_reset_output_completion`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_tensor_reset_output_completion(output_tensor: *mut c_void) -> u32 {
    with_global(F::nrt_tensor_reset_output_completion.name(), |g| {
        let id = match g.lookup(Kind::Tensor, output_tensor as usize) {
            Ok(id) => TensorId(id),
            Err(status) => return status,
        };
        g.status(
            F::nrt_tensor_reset_output_completion.name(),
            g.sim.tensor_reset_output_completion(id),
        )
    })
}

/// `nrt_get_dmabuf_fd`: `NRT_INVALID` (`SimRuntime`'s answer: no dma-buf exists without a
/// Neuron device).
///
/// # Safety
/// None: only the numbers are read.
pub unsafe extern "C" fn nrt_get_dmabuf_fd(va: u64, size: u64, _fd: *mut c_int) -> u32 {
    with_global(F::nrt_get_dmabuf_fd.name(), |g| {
        let va = usize::try_from(va).unwrap_or(usize::MAX);
        g.unsupported_result(F::nrt_get_dmabuf_fd, g.sim.get_dmabuf_fd(va, size))
    })
}

/// `nrt_host_device_id_get`: the simulator is one device, 0, whose host id is 0.
///
/// # Safety
/// `host_device_id` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn nrt_host_device_id_get(
    neuron_dev: c_int,
    host_device_id: *mut u32,
) -> u32 {
    with_global(F::nrt_host_device_id_get.name(), |g| {
        if host_device_id.is_null() || neuron_dev != 0 {
            return INVALID;
        }
        if let Err(status) = g.enter(F::nrt_host_device_id_get) {
            return status;
        }
        // SAFETY: non-NULL, the caller's `uint32_t`.
        unsafe { put_value(host_device_id, 0) }
    })
}

/// `nrt_host_device_id_rid_map_get`: `NRT_INVALID`, there are no routing ids without a Neuron driver.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_host_device_id_rid_map_get(
    _count: *mut u32,
    _host_did_to_rid_map: *mut u32,
) -> u32 {
    with_global(F::nrt_host_device_id_rid_map_get.name(), |g| {
        g.unsupported(
            F::nrt_host_device_id_rid_map_get,
            "there are no routing ids without a Neuron driver",
        )
    })
}

/// `nrt_get_hbm_mmap_va`: `NRT_INVALID` (`SimRuntime`'s answer: simulated HBM cannot be
/// mapped into the caller).
///
/// # Safety
/// None: only the numbers are read.
pub unsafe extern "C" fn nrt_get_hbm_mmap_va(
    device_id: c_int,
    hbm_idx: c_int,
    _addr: *mut *mut c_void,
    _size: *mut usize,
) -> u32 {
    with_global(F::nrt_get_hbm_mmap_va.name(), |g| {
        g.unsupported_result(F::nrt_get_hbm_mmap_va, g.sim.get_hbm_mmap_va(device_id, hbm_idx))
    })
}

/// `nrt_get_vnc_memory_stats`: the simulator's device bytes in use on `vnc` (64-byte granules)
/// and the core's HBM budget.
///
/// # Safety
/// `stats` points at `stats_size_in` writable bytes; `stats_size_out` is NULL or a writable
/// `size_t`.
pub unsafe extern "C" fn nrt_get_vnc_memory_stats(
    vnc: u32,
    stats: *mut nrt_vnc_memory_stats_t,
    stats_size_in: usize,
    stats_size_out: *mut usize,
) -> u32 {
    with_global(F::nrt_get_vnc_memory_stats.name(), |g| {
        if stats.is_null() {
            return INVALID;
        }
        let value = match g.sim.get_vnc_memory_stats(vnc) {
            Ok(found) => nrt_vnc_memory_stats_t {
                bytes_used: found.bytes_used as usize,
                bytes_limit: found.bytes_limit as usize,
            },
            Err(err) => return g.failed(F::nrt_get_vnc_memory_stats.name(), &err),
        };
        // SAFETY: by this function's contract.
        unsafe { put_versioned(stats, stats_size_in, stats_size_out, value) }
    })
}

/// `nrt_get_attached_efa_bdf`: `NRT_INVALID` (`SimRuntime`'s answer: no EFA device is attached
/// to a simulated device).
///
/// # Safety
/// None: only the address's value is read.
pub unsafe extern "C" fn nrt_get_attached_efa_bdf(
    va: *const c_void,
    _efa_bdf: *mut c_char,
    _len: *mut usize,
) -> u32 {
    with_global(F::nrt_get_attached_efa_bdf.name(), |g| {
        g.unsupported_result(F::nrt_get_attached_efa_bdf, g.sim.get_attached_efa_bdf(va as usize))
    })
}

/// `nrt_cc_global_comm_init`: as `nrt_build_global_comm`.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_cc_global_comm_init(
    vnc: u32,
    g_device_id: u32,
    g_device_count: u32,
) -> u32 {
    with_global(F::nrt_cc_global_comm_init.name(), |g| {
        let built = g.sim.cc_global_comm_init(vnc, g_device_id, g_device_count);
        g.status(F::nrt_cc_global_comm_init.name(), built)
    })
}

//! The exported functions beyond docs/abi-facts.md §4: the rest of the public headers.
//!
//! Each function runs under the same guard and gate as [`crate::exports`]: a panic is its
//! failure value, the lifecycle rule is the table's (`abi::functions`), NULL out-pointers are
//! `NRT_INVALID`. Where the simulator models the behaviour (counts, instance and model info,
//! memory statistics, batched tensor I/O, allocation info, collectives over the ranks
//! (threads) of this process, the legacy `nrt_trace_*`, a profiler of `SimRuntime`) the answer
//! comes from the simulator; what cannot exist without hardware (dma-buf fds, EFA, HBM
//! mappings, microcode, the NCCL plugin, the debug stream of device code) and what is not modelled yet (`nrta_cc_*`) returns
//! `NRT_INVALID` (or NULL for `nrt_get_libnccl_net`) and says why once under `NRTSIM_LOG=1`,
//! never a silent success. The async API is in `async_api`, system trace and profiling in
//! `trace_api`.

// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt as _;
use std::ptr;

use abi::c_layout::c_types::{
    nrt_cc_comm_t, nrt_cc_op_type_t, nrt_dtype_t, nrt_instance_info_t, nrt_model_info_t,
    nrt_op_type_t, nrt_tensor_batch_t, nrt_tensor_device_allocation_info_t, nrt_tensor_list_t,
    nrt_ucode_info, nrt_vnc_memory_stats_t, nrta_seq_t,
};
use abi::functions::LibnrtFunction as F;
use abi::runtime::prelude::*;
use abi::runtime::{ModelId, NrtError, TensorId};

use crate::exports::{guard, with_global};
use crate::handles::{Global, Kind, global};
use crate::status::{INVALID, SUCCESS};

/// Writes `value` through a caller's out-pointer, `NRT_INVALID` for NULL.
///
/// # Safety
/// `out` is NULL or points at writable storage for a `T`.
unsafe fn put_value<T>(out: *mut T, value: T) -> u32 {
    if out.is_null() {
        return INVALID;
    }
    // SAFETY: non-NULL, the caller's variable; `write_unaligned` asks nothing of alignment.
    unsafe { ptr::write_unaligned(out, value) };
    SUCCESS
}

/// Copies the first `size_in` bytes of `value` to `out` (a struct the caller may know in an
/// older, shorter form), and the count written to `size_out` when it is not NULL.
///
/// # Safety
/// `out` points at `size_in` writable bytes; `size_out` is NULL or a writable `size_t`.
unsafe fn put_versioned<T: Copy>(
    out: *mut T,
    size_in: usize,
    size_out: *mut usize,
    value: T,
) -> u32 {
    if out.is_null() {
        return INVALID;
    }
    let n_bytes = size_in.min(size_of::<T>());
    // SAFETY: `value` is `size_of::<T>()` readable bytes; `out` has `size_in` writable bytes by
    // the caller's contract; the two do not overlap (`value` is a local).
    unsafe { ptr::copy_nonoverlapping((&raw const value).cast::<u8>(), out.cast::<u8>(), n_bytes) };
    if !size_out.is_null() {
        // SAFETY: non-NULL, the caller's variable.
        unsafe { ptr::write_unaligned(size_out, n_bytes) };
    }
    SUCCESS
}

/// Writes a count the simulator gives, or returns the status of its failure.
fn count(
    g: &Global,
    function: F,
    out: *mut u32,
    counted: impl FnOnce() -> Result<u32, NrtError>,
) -> u32 {
    if out.is_null() {
        return INVALID;
    }
    match counted() {
        // SAFETY: non-NULL, the caller's `uint32_t`.
        Ok(value) => unsafe { put_value(out, value) },
        Err(err) => g.failed(function.name(), &err),
    }
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

/// `nrt_get_visible_nc_count`: the NeuronCores this process may use, before `nrt_init` too.
///
/// # Safety
/// `vnc_count` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_visible_nc_count(vnc_count: *mut u32) -> u32 {
    with_global(F::nrt_get_visible_nc_count.name(), |g| {
        count(g, F::nrt_get_visible_nc_count, vnc_count, || g.sim.get_visible_nc_count())
    })
}

fn model_cores(g: &Global, function: F, model: *const c_void) -> Result<Vec<u32>, u32> {
    let id = ModelId(g.lookup(Kind::Model, model as usize)?);
    g.sim.model_cores(function, id).map_err(|err| g.failed(function.name(), &err))
}

fn model_count(
    function: F,
    model: *const c_void,
    out: *mut u32,
    counted: fn(&sim::SimRuntime, ModelId) -> Result<u32, NrtError>,
) -> u32 {
    with_global(function.name(), |g| {
        if out.is_null() {
            return INVALID;
        }
        let id = match g.lookup(Kind::Model, model as usize) {
            Ok(id) => ModelId(id),
            Err(status) => return status,
        };
        count(g, function, out, || counted(&g.sim, id))
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

/// `nrt_get_model_instance_count`: 1, since a simulated model runs one launch at a time (its
/// core's launch lock).
///
/// # Safety
/// `instance_count` is NULL or a writable `uint32_t`.
pub unsafe extern "C" fn nrt_get_model_instance_count(
    model: *mut c_void,
    instance_count: *mut u32,
) -> u32 {
    model_count(F::nrt_get_model_instance_count, model, instance_count, |sim, id| {
        sim.get_model_instance_count(id)
    })
}

/// `nrt_get_model_info`: the model's first NeuronCore; writes at most `info_size_in` bytes.
///
/// # Safety
/// `info` points at `info_size_in` writable bytes; `info_size_out` is NULL or a writable
/// `size_t`.
pub unsafe extern "C" fn nrt_get_model_info(
    model: *const c_void,
    info: *mut nrt_model_info_t,
    info_size_in: usize,
    info_size_out: *mut usize,
) -> u32 {
    with_global(F::nrt_get_model_info.name(), |g| {
        if info.is_null() {
            return INVALID;
        }
        match model_cores(g, F::nrt_get_model_info, model) {
            Ok(cores) => {
                let value = nrt_model_info_t { vnc: cores.first().copied().unwrap_or(0) };
                // SAFETY: by this function's contract.
                unsafe { put_versioned(info, info_size_in, info_size_out, value) }
            }
            Err(status) => status,
        }
    })
}

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

/// `nrt_barrier`: returns once all `g_device_count` ranks (threads of this process) have come;
/// one rank passes at once.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_barrier(vnc: i32, g_device_id: u32, g_device_count: u32) -> u32 {
    with_global(F::nrt_barrier.name(), |g| {
        g.status(F::nrt_barrier.name(), g.sim.barrier(vnc, g_device_id, g_device_count))
    })
}

/// `nrt_all_gather`: every rank's `rank_input_size` bytes, in rank order, into every rank's
/// `output`; with one rank the output is the input.
///
/// # Safety
/// `input` has `rank_input_size` readable bytes and `output` `g_device_count * rank_input_size`
/// writable bytes.
pub unsafe extern "C" fn nrt_all_gather(
    vnc: i32,
    g_device_id: u32,
    g_device_count: u32,
    rank_input_size: u32,
    input: *mut c_void,
    output: *mut c_void,
) -> u32 {
    with_global(F::nrt_all_gather.name(), |g| {
        if (input.is_null() || output.is_null()) && rank_input_size > 0 {
            return INVALID;
        }
        let size = rank_input_size as usize;
        let Some(mut mine) = crate::ffi::zeroed(size) else { return crate::status::RESOURCE };
        if size > 0 {
            // SAFETY: `input` has `rank_input_size` readable bytes (this function's contract);
            // `ptr::copy` allows them to overlap simulator memory.
            unsafe { ptr::copy(input.cast::<u8>(), mine.as_mut_ptr(), size) };
        }
        match g.sim.all_gather(vnc, g_device_id, g_device_count, &mine) {
            Ok(gathered) => {
                if !gathered.is_empty() {
                    // SAFETY: `gathered` is `g_device_count * rank_input_size` bytes, which
                    // `output` can hold (this function's contract); `ptr::copy` allows overlap.
                    unsafe { ptr::copy(gathered.as_ptr(), output.cast::<u8>(), gathered.len()) };
                }
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_all_gather.name(), &err),
        }
    })
}

/// `nrt_get_libnccl_net`: there is no NCCL network plugin; NULL, with `*err` set to 1 and the
/// reason in `err_msg`.
///
/// # Safety
/// `err` is NULL or a writable `int`; `err_msg` is NULL or has `err_msg_size` writable bytes.
pub unsafe extern "C" fn nrt_get_libnccl_net(
    err: *mut c_int,
    err_msg: *mut c_char,
    err_msg_size: usize,
) -> *mut c_void {
    guard(F::nrt_get_libnccl_net.name(), ptr::null_mut(), || {
        if let Ok(g) = global() {
            g.unsupported(F::nrt_get_libnccl_net, "there is no NCCL network plugin");
        }
        if !err.is_null() {
            // SAFETY: non-NULL, the caller's `int`.
            unsafe { ptr::write_unaligned(err, 1) };
        }
        if !err_msg.is_null() && err_msg_size > 0 {
            let message = b"nrtsim: no NCCL network plugin in the simulator";
            let n = message.len().min(err_msg_size - 1);
            // SAFETY: `err_msg` has `err_msg_size` writable bytes; `n + 1` fit.
            unsafe {
                ptr::copy_nonoverlapping(message.as_ptr(), err_msg.cast::<u8>(), n);
                *err_msg.add(n) = 0;
            }
        }
        ptr::null_mut()
    })
}

// The functions below are not modelled (see the module documentation), except the legacy
// trace, which `SimRuntime` records as a profile.

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

/// `nrt_trace_start`: the legacy trace, every launch until `nrt_trace_stop`.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_trace_start(trace_mem: bool) -> u32 {
    with_global(F::nrt_trace_start.name(), |g| {
        g.status(F::nrt_trace_start.name(), g.sim.trace_start(trace_mem))
    })
}

/// `nrt_trace_stop`: writes the legacy trace to `filename` as a profile
/// (`docs/sim-trace-format.md`).
///
/// # Safety
/// `filename` is NULL or a C string.
pub unsafe extern "C" fn nrt_trace_stop(filename: *const c_char) -> u32 {
    with_global(F::nrt_trace_stop.name(), |g| {
        let path = if filename.is_null() {
            None
        } else {
            // SAFETY: non-NULL and NUL-terminated by the caller's contract.
            let bytes = unsafe { std::ffi::CStr::from_ptr(filename) }.to_bytes();
            Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
        };
        g.status(F::nrt_trace_stop.name(), g.sim.trace_stop(path.as_deref()))
    })
}

/// `nrt_set_pool_eng_ucode`: `NRT_INVALID`, there is no pooling engine to load microcode into.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_set_pool_eng_ucode(_ucode_info: *const nrt_ucode_info) -> u32 {
    with_global(F::nrt_set_pool_eng_ucode.name(), |g| {
        g.unsupported(
            F::nrt_set_pool_eng_ucode,
            "there is no pooling engine to load microcode into",
        )
    })
}

/// Why `nrta_cc_*` answer `NRT_INVALID`.
const NRTA_CC_UNSIMULATED: &str = "asynchronous collectives over an nrt_cc_comm_t are not simulated (nrt_barrier and nrt_all_gather are)";

/// `nrta_cc_prepare`: `NRT_INVALID`: asynchronous collectives over an `nrt_cc_comm_t` are not
/// simulated.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrta_cc_prepare(
    _comm: *mut nrt_cc_comm_t,
    _input: *mut nrt_tensor_list_t,
    _output: *mut nrt_tensor_list_t,
    _dtype: nrt_dtype_t,
    _op: nrt_op_type_t,
    _cc_op: nrt_cc_op_type_t,
    _cc_ctx: *mut *mut c_void,
) -> u32 {
    with_global(F::nrta_cc_prepare.name(), |g| {
        g.unsupported(F::nrta_cc_prepare, NRTA_CC_UNSIMULATED)
    })
}

/// `nrta_cc_schedule`: as `nrta_cc_prepare`.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrta_cc_schedule(
    _cc_ctx: *mut *mut c_void,
    _queue: c_int,
    _err: *mut c_void,
    _req_sequence: *mut nrta_seq_t,
) -> u32 {
    with_global(F::nrta_cc_schedule.name(), |g| {
        g.unsupported(F::nrta_cc_schedule, NRTA_CC_UNSIMULATED)
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

/// `nrt_memcpy_to_device`: `dest` must lie inside a device tensor's storage (an address from
/// `nrt_tensor_get_va`); `NRT_INVALID` otherwise.
///
/// # Safety
/// `src` has `size` readable bytes.
pub unsafe extern "C" fn nrt_memcpy_to_device(
    dest: *mut c_void,
    src: *const c_void,
    size: usize,
) -> u32 {
    with_global(F::nrt_memcpy_to_device.name(), |g| {
        if dest.is_null() || (src.is_null() && size > 0) {
            return INVALID;
        }
        let Some(mut bytes) = crate::ffi::zeroed(size) else { return crate::status::RESOURCE };
        if size > 0 {
            // SAFETY: `src` has `size` readable bytes (this function's contract); `ptr::copy`
            // allows them to overlap simulator memory.
            unsafe { ptr::copy(src.cast::<u8>(), bytes.as_mut_ptr(), size) };
        }
        g.status(F::nrt_memcpy_to_device.name(), g.sim.memcpy_to_device(dest as usize, &bytes))
    })
}

// nrt_async_sendrecv.h: there is no network between simulated hosts.

/// `nrt_async_sendrecv_get_max_num_communicators_per_lnc`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_get_max_num_communicators_per_lnc(
    _num: *mut c_int,
) -> u32 {
    with_global(F::nrt_async_sendrecv_get_max_num_communicators_per_lnc.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_get_max_num_communicators_per_lnc,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_get_max_num_pending_request`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_get_max_num_pending_request(_num: *mut c_int) -> u32 {
    with_global(F::nrt_async_sendrecv_get_max_num_pending_request.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_get_max_num_pending_request,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_init`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_init(_lnc: c_int) -> u32 {
    with_global(F::nrt_async_sendrecv_init.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_init,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_close`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_close(_lnc: c_int) -> u32 {
    with_global(F::nrt_async_sendrecv_close.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_close,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_connect`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_connect(
    _peer_ip: *const c_char,
    _peer_lnc: c_int,
    _lnc: c_int,
    _send_comm: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_async_sendrecv_connect.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_connect,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_accept`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_accept(
    _peer_ip: *const c_char,
    _peer_lnc: c_int,
    _lnc: c_int,
    _recv_comm: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_async_sendrecv_accept.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_accept,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_test_comm`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_test_comm(_comm: *mut c_void, _done: *mut bool) -> u32 {
    with_global(F::nrt_async_sendrecv_test_comm.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_test_comm,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_send_tensor`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_send_tensor(
    _tensor: *mut c_void,
    _offset: usize,
    _length: usize,
    _send_comm: *mut c_void,
    _request: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_async_sendrecv_send_tensor.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_send_tensor,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_recv_tensor`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_recv_tensor(
    _tensor: *mut c_void,
    _offset: usize,
    _length: usize,
    _recv_comm: *mut c_void,
    _request: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_async_sendrecv_recv_tensor.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_recv_tensor,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_test_request`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_test_request(
    _request: *mut c_void,
    _done: *mut bool,
    _size: *mut usize,
) -> u32 {
    with_global(F::nrt_async_sendrecv_test_request.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_test_request,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

/// `nrt_async_sendrecv_flush`: `NRT_INVALID`, the simulator has no network between hosts.
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_async_sendrecv_flush(_lnc: c_int) -> u32 {
    with_global(F::nrt_async_sendrecv_flush.name(), |g| {
        g.unsupported(
            F::nrt_async_sendrecv_flush,
            "asynchronous send and receive between hosts is not simulated",
        )
    })
}

// --- ndebug_stream.h ---

/// Why the debug-stream calls are refused: the events they carry (prints and debug tensor reads
/// a kernel emits on its NeuronCore) come from device code, which the simulator does not run.
const NO_DEBUG_STREAM: &str =
    "the simulator runs no device code, so no neuron core emits debug stream events";

/// `nrt_debug_client_connect`: `NRT_INVALID`, the simulator has no debug stream to connect to.
/// `*stream_fd` is left as the caller set it.
///
/// # Safety
/// None: no argument is read or written.
pub unsafe extern "C" fn nrt_debug_client_connect(
    _logical_nc_idx: c_int,
    _stream_fd: *mut c_int,
) -> u32 {
    with_global(F::nrt_debug_client_connect.name(), |g| {
        g.unsupported(F::nrt_debug_client_connect, NO_DEBUG_STREAM)
    })
}

/// `nrt_debug_client_connect_close`: nothing to close, since `nrt_debug_client_connect` never
/// hands out a stream; the descriptor is not touched (it may be one of the caller's own).
///
/// # Safety
/// None: no argument is read.
pub unsafe extern "C" fn nrt_debug_client_connect_close(_stream_fd: c_int) {
    guard(F::nrt_debug_client_connect_close.name(), (), || {});
}

/// `nrt_debug_client_read_one_event`: `NRT_INVALID`, no stream exists to read; `*header` and
/// `*payload` are left as the caller set them.
///
/// # Safety
/// None: no argument is read or written.
pub unsafe extern "C" fn nrt_debug_client_read_one_event(
    _stream_fd: c_int,
    _header: *mut abi::c_layout::NdebugStreamEventHeaderC,
    _payload: *mut *mut c_void,
) -> u32 {
    with_global(F::nrt_debug_client_read_one_event.name(), |g| {
        g.unsupported(F::nrt_debug_client_read_one_event, NO_DEBUG_STREAM)
    })
}

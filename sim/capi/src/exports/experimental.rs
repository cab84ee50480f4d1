//! The exports of `nrt_experimental.h`: model tensor and instance information, the legacy
//! `nrt_trace_*` (which the simulator records as a profile), collectives over the ranks
//! (threads) of this process, device-address copies, and the helpers of the async API (the
//! exec callback and draining a core's queues).
//!
//! The NCCL network plugin and pooling-engine microcode do not exist without hardware: those
//! calls return NULL / `NRT_INVALID` with the reason.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_char, c_int, c_void};
use std::os::unix::ffi::OsStrExt as _;
use std::ptr;

use abi::c_layout::c_types::{NRT_ASYNC_EXEC_STATUS_CALLBACK, nrt_model_info_t, nrt_ucode_info};
use abi::functions::LibnrtFunction as F;
use abi::runtime::prelude::*;
use abi::runtime::{ModelId, NrtError};

use super::{guard, model_count, put_versioned, with_global};
use crate::ffi::{InfoArray, NrtTensorInfoC};
use crate::handles::{Global, Kind, global, lock};
use crate::status::{INVALID, SUCCESS};

/// `nrt_get_model_tensor_info`: allocates the array (inputs, then outputs); the caller frees
/// it with `nrt_free_model_tensor_info`.
///
/// # Safety
/// `info` is NULL or points at writable storage for a pointer.
pub unsafe extern "C" fn nrt_get_model_tensor_info(
    model: *mut c_void,
    info: *mut *mut NrtTensorInfoC,
) -> u32 {
    with_global(F::nrt_get_model_tensor_info.name(), |g| {
        if info.is_null() {
            return INVALID;
        }
        let id = ModelId(try_status!(g.lookup(Kind::Model, model as usize)));
        match g.sim.get_model_tensor_info(id) {
            Ok(infos) => {
                let address = g.keep_info(InfoArray::new(&infos, g.sim.dtype_numbering()));
                // SAFETY: non-NULL, the caller's pointer variable.
                unsafe { *info = address as *mut NrtTensorInfoC };
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_get_model_tensor_info.name(), &err),
        }
    })
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

/// `nrt_free_model_tensor_info`: `NRT_INVALID` for NULL, `NRT_INVALID_HANDLE` for an array this
/// library did not hand out or already freed.
///
/// # Safety
/// None: the address is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_free_model_tensor_info(info: *mut NrtTensorInfoC) -> u32 {
    with_global(F::nrt_free_model_tensor_info.name(), |g| g.free_info(info as usize))
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

/// `nrt_register_async_exec_callback`: replaces the callback called after each execution of
/// `nrta_execute_schedule` (NULL removes it).
///
/// # Safety
/// `callback` is NULL or a function that stays callable with `params` from any thread.
pub unsafe extern "C" fn nrt_register_async_exec_callback(
    callback: NRT_ASYNC_EXEC_STATUS_CALLBACK,
    params: *mut c_void,
) -> u32 {
    with_global(F::nrt_register_async_exec_callback.name(), |g| {
        if let Err(status) = g.enter(F::nrt_register_async_exec_callback) {
            return status;
        }
        *lock(&g.exec_callback) = callback.map(|callback| (callback, params as usize));
        SUCCESS
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

/// `nrt_async_drain_queued_execs`: blocks until every request scheduled so far on `vnc` has
/// completed; `NRT_INVALID` at once when called from the exec callback (on a queue's worker),
/// where it would wait for itself.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_async_drain_queued_execs(vnc: i32) -> u32 {
    with_global(F::nrt_async_drain_queued_execs.name(), |g| {
        if let Err(status) = g.enter(F::nrt_async_drain_queued_execs) {
            return status;
        }
        match u32::try_from(vnc) {
            Ok(vnc) if vnc < g.sim.visible_core_count() => match g.queues.drain(vnc) {
                Ok(()) => SUCCESS,
                Err(err) => g.failed(F::nrt_async_drain_queued_execs.name(), &NrtError::from(err)),
            },
            _ => INVALID,
        }
    })
}

fn model_cores(g: &Global, function: F, model: *const c_void) -> Result<Vec<u32>, u32> {
    let id = ModelId(g.lookup(Kind::Model, model as usize)?);
    g.sim.model_cores(function, id).map_err(|err| g.failed(function.name(), &err))
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

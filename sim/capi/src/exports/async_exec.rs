//! The exports of `nrt_async.h` (`nrta_*`), over [`sim::async_queues::AsyncQueues`].
//!
//! A request is checked when it is scheduled (NULL pointers, handles, queue index, tracker, and
//! for a launch a set naming a freed tensor, as the simulator's own async API checks) and
//! its work runs later on the queue's worker thread as the synchronous call it stands for; its
//! status goes to the error tracker named at scheduling. Caller buffers are read (writes) and
//! written (reads) when the request runs, so the caller must keep them until the request has
//! completed, as the public header requires. Asynchronous collectives (`nrta_cc_*`) are not
//! modelled and return `NRT_INVALID` with the reason.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_int, c_void};
use std::ptr;

use abi::c_layout::c_types::{
    nrt_cc_comm_t, nrt_cc_op_type_t, nrt_dtype_t, nrt_op_type_t, nrt_tensor_list_t, nrta_error_t,
    nrta_seq_t, nrta_xu_t,
};
use abi::functions::LibnrtFunction as F;
use abi::runtime::prelude::*;
use abi::runtime::{ModelId, NrtError, SetId, TensorId};
use abi::status::NrtStatus;
use sim::async_queues::{ExecutionUnit, Job};

use super::{guard, with_global};
use crate::handles::{Global, Kind, global, lock};
use crate::status::{INVALID, SUCCESS};

/// A caller's memory address, carried to a worker thread.
#[derive(Clone, Copy)]
struct Address(usize);

/// Checks an out-pointer and the optional tracker of a request.
fn tracker_of(g: &Global, err: *mut c_void) -> Result<Option<u64>, u32> {
    if err.is_null() { Ok(None) } else { g.lookup(Kind::ErrorTracker, err as usize).map(Some) }
}

/// Schedules `job` on queue `(lnc, xu, queue)` and writes its sequence id.
fn schedule(
    g: &Global,
    function: F,
    (lnc, xu, queue): (u32, ExecutionUnit, c_int),
    err: *mut c_void,
    req_sequence: *mut nrta_seq_t,
    job: Job,
) -> u32 {
    let tracker = match tracker_of(g, err) {
        Ok(tracker) => tracker,
        Err(status) => return status,
    };
    let scheduled = g
        .queues
        .key(lnc, xu, queue.into())
        .and_then(|key| g.queues.schedule(key, tracker, job))
        .map_err(NrtError::from);
    match scheduled {
        Ok(seq) => {
            // SAFETY: checked non-NULL by every caller; the caller's `nrta_seq_t`.
            unsafe { ptr::write_unaligned(req_sequence, seq) };
            SUCCESS
        }
        Err(err) => g.failed(function.name(), &err),
    }
}

/// The NeuronCore a tensor request runs on: the one holding the tensor, else 0.
fn tensor_lnc(g: &Global, function: F, tensor: TensorId) -> Result<u32, u32> {
    match g.sim.tensor_core(tensor) {
        Ok(core) => Ok(core.unwrap_or(0)),
        Err(err) => Err(g.failed(function.name(), &err)),
    }
}

/// The checks a tensor request makes before it is queued: the lifecycle gate, offsets that fit in
/// memory, a live tensor handle, and the core the tensor is on.
fn tensor_request(
    g: &Global,
    function: F,
    tensor: *mut c_void,
    offset: u64,
    size: u64,
) -> Result<(TensorId, u32, usize, usize), u32> {
    g.enter(function)?;
    let (offset, size) = sizes(offset, size)?;
    let id = TensorId(g.lookup(Kind::Tensor, tensor as usize)?);
    let lnc = tensor_lnc(g, function, id)?;
    Ok((id, lnc, offset, size))
}

/// `u64` sizes and offsets as `usize`, or `NRT_INVALID`.
fn sizes(offset: u64, size: u64) -> Result<(usize, usize), u32> {
    match (usize::try_from(offset), usize::try_from(size)) {
        (Ok(offset), Ok(size)) => Ok((offset, size)),
        _ => Err(INVALID),
    }
}

/// `nrta_tensor_write`: copies `size` bytes from `buf` into the tensor when the request runs.
///
/// # Safety
/// `buf` has `size` readable bytes until the request completes; `req_sequence` is NULL or a
/// writable `nrta_seq_t`.
pub unsafe extern "C" fn nrta_tensor_write(
    tensor: *mut c_void,
    buf: *const c_void,
    offset: u64,
    size: u64,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut nrta_seq_t,
) -> u32 {
    with_global(F::nrta_tensor_write.name(), |g| {
        if buf.is_null() || req_sequence.is_null() {
            return INVALID;
        }
        let (id, lnc, offset, size) =
            match tensor_request(g, F::nrta_tensor_write, tensor, offset, size) {
                Ok(request) => request,
                Err(status) => return status,
            };
        let source = Address(buf as usize);
        // The staged write checks the range before it allocates or copies, so a size the
        // tensor cannot hold fails the request without touching that many caller bytes.
        let job: Job = Box::new(move |_seq| {
            g.sim.tensor_write_staged(id, offset, size, |staged| {
                if !staged.is_empty() {
                    // SAFETY: the caller keeps `size` readable bytes at `buf` until the request
                    // completes (this function's contract); `ptr::copy` allows them to overlap
                    // simulator memory.
                    unsafe { ptr::copy(source.0 as *const u8, staged.as_mut_ptr(), staged.len()) };
                }
            })
        });
        schedule(
            g,
            F::nrta_tensor_write,
            (lnc, ExecutionUnit::TensorWrite, queue),
            err,
            req_sequence,
            job,
        )
    })
}

/// `nrta_tensor_read`: copies `size` bytes of the tensor into `buf` when the request runs.
///
/// # Safety
/// `buf` has `size` writable bytes until the request completes; `req_sequence` is NULL or a
/// writable `nrta_seq_t`.
pub unsafe extern "C" fn nrta_tensor_read(
    buf: *mut c_void,
    tensor: *mut c_void,
    offset: u64,
    size: u64,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut nrta_seq_t,
) -> u32 {
    with_global(F::nrta_tensor_read.name(), |g| {
        if buf.is_null() || req_sequence.is_null() {
            return INVALID;
        }
        let (id, lnc, offset, size) =
            match tensor_request(g, F::nrta_tensor_read, tensor, offset, size) {
                Ok(request) => request,
                Err(status) => return status,
            };
        let destination = Address(buf as usize);
        // As the write: the range is checked before the staging buffer is allocated.
        let job: Job = Box::new(move |_seq| {
            g.sim.tensor_read_staged(id, offset, size, |staged| {
                if !staged.is_empty() {
                    // SAFETY: the caller keeps `size` writable bytes at `buf` until the request
                    // completes (this function's contract); `ptr::copy` allows them to overlap
                    // simulator memory.
                    unsafe { ptr::copy(staged.as_ptr(), destination.0 as *mut u8, staged.len()) };
                }
            })
        });
        schedule(
            g,
            F::nrta_tensor_read,
            (lnc, ExecutionUnit::TensorRead, queue),
            err,
            req_sequence,
            job,
        )
    })
}

/// `nrta_tensor_copy`: `nrt_tensor_copy` when the request runs, on the source's NeuronCore.
///
/// # Safety
/// `req_sequence` is NULL or a writable `nrta_seq_t`.
pub unsafe extern "C" fn nrta_tensor_copy(
    src: *mut c_void,
    src_offset: u64,
    dst: *mut c_void,
    dst_offset: u64,
    size: u64,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut nrta_seq_t,
) -> u32 {
    with_global(F::nrta_tensor_copy.name(), |g| {
        if req_sequence.is_null() {
            return INVALID;
        }
        if let Err(status) = g.enter(F::nrta_tensor_copy) {
            return status;
        }
        let (Ok((src_offset, size)), Ok((dst_offset, _))) =
            (sizes(src_offset, size), sizes(dst_offset, 0))
        else {
            return INVALID;
        };
        let ids = g
            .lookup(Kind::Tensor, src as usize)
            .and_then(|s| Ok((TensorId(s), TensorId(g.lookup(Kind::Tensor, dst as usize)?))));
        let (source, destination) = match ids {
            Ok(ids) => ids,
            Err(status) => return status,
        };
        let lnc = match tensor_lnc(g, F::nrta_tensor_copy, source) {
            Ok(lnc) => lnc,
            Err(status) => return status,
        };
        let job: Job = Box::new(move |_seq| {
            g.sim.tensor_copy(source, src_offset, destination, dst_offset, size)
        });
        schedule(
            g,
            F::nrta_tensor_copy,
            (lnc, ExecutionUnit::TensorOp, queue),
            err,
            req_sequence,
            job,
        )
    })
}

/// `nrta_execute_schedule`: `nrt_execute` when the request runs, on the model's first
/// NeuronCore's compute queue (queue 0); a set that names a freed tensor is `NRT_INVALID_HANDLE`
/// when the request is scheduled. A launch that completes with NaN (1003) is recorded in
/// the tracker too. The registered exec callback, if any, is called after each execution.
///
/// # Safety
/// `req_sequence` is NULL or a writable `nrta_seq_t`.
pub unsafe extern "C" fn nrta_execute_schedule(
    model: *mut c_void,
    input: *const c_void,
    output: *mut c_void,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut nrta_seq_t,
) -> u32 {
    with_global(F::nrta_execute_schedule.name(), |g| {
        if req_sequence.is_null() {
            return INVALID;
        }
        let ids = g.lookup(Kind::Model, model as usize).and_then(|m| {
            Ok((
                ModelId(m),
                SetId(g.lookup(Kind::Set, input as usize)?),
                SetId(g.lookup(Kind::Set, output as usize)?),
            ))
        });
        let (model_id, input_set, output_set) = match ids {
            Ok(ids) => ids,
            Err(status) => return status,
        };
        let lnc = match g.sim.model_cores(F::nrta_execute_schedule, model_id) {
            Ok(cores) => cores.first().copied().unwrap_or(0),
            Err(err) => return g.failed(F::nrta_execute_schedule.name(), &err),
        };
        // A set naming a freed tensor is refused now, as the simulator's own async API and
        // `nrt_execute` refuse it, not queued to fail later in the tracker.
        let checked =
            g.sim.check_sets_of_a_scheduled_launch(F::nrta_execute_schedule, input_set, output_set);
        if let Err(err) = checked {
            return g.failed(F::nrta_execute_schedule.name(), &err);
        }
        let job: Job = Box::new(move |seq| {
            let result = match g.sim.execute(model_id, input_set, output_set) {
                Ok(NrtStatus::Success) => Ok(()),
                Ok(status) => Err(NrtError::new(status, "execution completed with a warning")),
                Err(err) => Err(err),
            };
            let callback = *lock(&g.exec_callback);
            if let Some((callback, params)) = callback {
                let status = result.as_ref().map_or_else(|err| err.status.code(), |()| SUCCESS);
                // SAFETY: a function pointer registered by the caller with its parameter, called
                // with the arguments the public header gives it.
                unsafe { callback(params as *mut c_void, model_id.0 as u32, lnc, seq, status) };
            }
            result
        });
        schedule(
            g,
            F::nrta_execute_schedule,
            (lnc, ExecutionUnit::Compute, queue),
            err,
            req_sequence,
            job,
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

/// `nrta_is_completed`: `NRT_INVALID` for a sequence id never issued.
///
/// # Safety
/// `is_completed` is NULL or a writable `bool`.
pub unsafe extern "C" fn nrta_is_completed(seq: nrta_seq_t, is_completed: *mut bool) -> u32 {
    with_global(F::nrta_is_completed.name(), |g| {
        if is_completed.is_null() {
            return INVALID;
        }
        if let Err(status) = g.enter(F::nrta_is_completed) {
            return status;
        }
        match g.queues.is_completed(seq) {
            Ok(done) => {
                // SAFETY: non-NULL, the caller's `bool`.
                unsafe { ptr::write_unaligned(is_completed, done) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrta_is_completed.name(), &err.into()),
        }
    })
}

/// `nrta_get_sequence`: the last completed sequence id of a queue (number 0 before any).
///
/// # Safety
/// `seq` is NULL or a writable `nrta_seq_t`.
pub unsafe extern "C" fn nrta_get_sequence(
    lnc: u32,
    xu: nrta_xu_t,
    queue: c_int,
    seq: *mut nrta_seq_t,
) -> u32 {
    with_global(F::nrta_get_sequence.name(), |g| {
        if seq.is_null() {
            return INVALID;
        }
        if let Err(status) = g.enter(F::nrta_get_sequence) {
            return status;
        }
        let Some(xu) = ExecutionUnit::from_code(xu) else { return INVALID };
        match g.queues.key(lnc, xu, queue.into()) {
            Ok(key) => {
                // SAFETY: non-NULL, the caller's `nrta_seq_t`.
                unsafe { ptr::write_unaligned(seq, g.queues.last_completed(key)) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrta_get_sequence.name(), &err.into()),
        }
    })
}

/// `nrta_get_completion_handle`: a descriptor that polls readable once the request has
/// completed (the read end of a socket pair whose other end the queue closes then); the caller
/// closes it.
///
/// # Safety
/// `fd` is NULL or a writable `int`.
pub unsafe extern "C" fn nrta_get_completion_handle(seq: nrta_seq_t, fd: *mut c_int) -> u32 {
    with_global(F::nrta_get_completion_handle.name(), |g| {
        if fd.is_null() {
            return INVALID;
        }
        if let Err(status) = g.enter(F::nrta_get_completion_handle) {
            return status;
        }
        match g.queues.completion_handle(seq) {
            Ok(handle) => {
                use std::os::fd::IntoRawFd as _;
                // SAFETY: non-NULL, the caller's `int`; the descriptor is the caller's to close.
                unsafe { ptr::write_unaligned(fd, handle.into_raw_fd()) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrta_get_completion_handle.name(), &err.into()),
        }
    })
}

/// `nrta_error_tracker_create`.
///
/// # Safety
/// `error_tracker` is NULL or writable storage for a handle.
pub unsafe extern "C" fn nrta_error_tracker_create(
    lnc_idx: u32,
    error_tracker: *mut *mut c_void,
) -> u32 {
    with_global(F::nrta_error_tracker_create.name(), |g| {
        if error_tracker.is_null() {
            return INVALID;
        }
        if let Err(status) = g.enter(F::nrta_error_tracker_create) {
            return status;
        }
        match g.queues.tracker_create(lnc_idx) {
            Ok(id) => {
                let handle = g.register(Kind::ErrorTracker, id);
                // SAFETY: non-NULL, the caller's handle variable.
                unsafe { *error_tracker = handle as *mut c_void };
                SUCCESS
            }
            Err(err) => g.failed(F::nrta_error_tracker_create.name(), &err.into()),
        }
    })
}

/// `nrta_error_tracker_destroy`: forgets the tracker and its last list; an unknown handle is
/// ignored.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrta_error_tracker_destroy(error_tracker: *mut c_void) {
    guard(F::nrta_error_tracker_destroy.name(), (), || {
        let Ok(g) = global() else { return };
        if let Some(id) = g.release(Kind::ErrorTracker, error_tracker as usize) {
            g.queues.tracker_destroy(id);
            lock(&g.error_lists).remove(&id);
        }
    })
}

/// `nrta_error_tracker_get_list`: the failed requests so far; the array stays valid until the
/// next call for the same tracker or its destroy.
///
/// # Safety
/// `list` and `error_count` are NULL or writable.
pub unsafe extern "C" fn nrta_error_tracker_get_list(
    error_tracker: *mut c_void,
    list: *mut *const nrta_error_t,
    error_count: *mut usize,
) -> u32 {
    with_global(F::nrta_error_tracker_get_list.name(), |g| {
        if list.is_null() || error_count.is_null() {
            return INVALID;
        }
        let id = match g.lookup(Kind::ErrorTracker, error_tracker as usize) {
            Ok(id) => id,
            Err(status) => return status,
        };
        match g.queues.tracker_errors(id) {
            Ok(errors) => {
                let array: Box<[nrta_error_t]> = errors
                    .iter()
                    .map(|&(seq_id, status)| nrta_error_t {
                        seq_id,
                        error_code: status.code().into(),
                    })
                    .collect();
                let mut lists = lock(&g.error_lists);
                let address = if array.is_empty() { ptr::null() } else { array.as_ptr() };
                let count = array.len();
                lists.insert(id, array);
                // SAFETY: both non-NULL, the caller's variables; the array lives in `error_lists`
                // until the next call or the destroy.
                unsafe {
                    ptr::write_unaligned(list, address);
                    ptr::write_unaligned(error_count, count);
                }
                SUCCESS
            }
            Err(err) => g.failed(F::nrta_error_tracker_get_list.name(), &err.into()),
        }
    })
}

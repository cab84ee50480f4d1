//! The exports of `nrt_async_sendrecv.h`: every one returns `NRT_INVALID`, since there is no
//! network between simulated hosts.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_char, c_int, c_void};

use abi::functions::LibnrtFunction as F;

use super::with_global;

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

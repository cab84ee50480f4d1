//! The exports of `ndebug_stream.h`: the debug stream of device code, which the simulator does
//! not run, so connecting and reading return `NRT_INVALID` with the reason.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::{c_int, c_void};

use abi::functions::LibnrtFunction as F;

use super::{guard, with_global};

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

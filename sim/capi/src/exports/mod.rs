//! The exported C functions, one file per public header, named with the stems the other
//! layers use: `nrt.rs` (`nrt.h`), `experimental.rs` (`nrt_experimental.h`), `async_exec.rs`
//! (`nrt_async.h`), `sendrecv.rs` (`nrt_async_sendrecv.h`), `profile.rs` (`nrt_profile.h`),
//! `sys_trace.rs` (`nrt_sys_trace.h`), `ndebug_stream.rs` (`ndebug_stream.h`), `status.rs`
//! (`nrt_status.h`) and `version.rs` (`nrt_version.h`); the header of each function is the
//! table's (`abi::functions`). This file holds what several headers share.
//!
//! Each export is an ordinary Rust function with the C name and the table's signature; the
//! exported symbol `<c name>@@NRT_2.0.0` is a trampoline to it (see [`crate::symbols`]), which
//! finds it here through the re-exports below. Every body runs under [`guard`], so a Rust panic
//! becomes `NRT_FAILURE` (or the function's neutral value) and a line on stderr, never an unwind
//! into C. Arguments are checked in this order: NULL pointers (`NRT_INVALID`), then handles
//! (`NRT_INVALID_HANDLE` for one this library did not hand out, or released), then the
//! simulator decides (lifecycle gate, contract, faults).
//!
//! Where the simulator models a behaviour the answer comes from it; what cannot exist without
//! hardware (dma-buf fds, EFA, HBM mappings, microcode, the NCCL plugin, the debug stream of
//! device code, a network between hosts) and what is not modelled yet (`nrta_cc_*`) returns
//! `NRT_INVALID` (or NULL for `nrt_get_libnccl_net`) and says why once under `NRTSIM_LOG=1`,
//! never a silent success.

// The exports are reached through `crate::symbols`, not as Rust API.
#![allow(unreachable_pub)]

use std::borrow::Cow;
use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use abi::functions::LibnrtFunction as F;
use abi::runtime::{ModelId, NrtError};

use crate::handles::{Global, Kind, global};
use crate::status::{FAILURE, INVALID, SUCCESS};

/// Early return of a failing status from a `Result<T, u32>`.
macro_rules! try_status {
    ($e:expr) => {
        match $e {
            Ok(value) => value,
            Err(status) => return status,
        }
    };
}

mod async_exec;
pub(crate) mod bind;
mod experimental;
mod ndebug_stream;
mod nrt;
mod profile;
mod sendrecv;
mod status;
mod sys_trace;
mod version;

pub use async_exec::*;
pub use experimental::*;
pub use ndebug_stream::*;
pub use nrt::*;
pub use profile::*;
pub use sendrecv::*;
pub use status::*;
pub use sys_trace::*;
pub use version::*;

/// Runs `body`, turning a panic into `on_panic` and a message.
pub(crate) fn guard<R>(call: &str, on_panic: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic".to_owned());
            eprintln!("nrtsim: {call} panicked ({message}); returning its failure value");
            on_panic
        }
    }
}

/// Runs a status-returning body with the global simulator.
pub(crate) fn with_global(call: &str, body: impl FnOnce(&'static Global) -> u32) -> u32 {
    guard(call, FAILURE, || match global() {
        Ok(g) => body(g),
        Err(status) => status,
    })
}

/// A C string as text (bytes that are not UTF-8 are replaced); `None` for NULL.
///
/// # Safety
/// `text` is NULL or points at a NUL-terminated string that stays valid for `'a`.
unsafe fn c_text<'a>(text: *const c_char) -> Option<Cow<'a, str>> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Some(unsafe { CStr::from_ptr(text) }.to_string_lossy())
}

/// A C string's bytes, exactly (names are bytes: two names that differ only in bytes that are
/// not UTF-8 stay two names); `None` for NULL.
///
/// # Safety
/// `text` is NULL or points at a NUL-terminated string that stays valid for `'a`.
unsafe fn c_bytes<'a>(text: *const c_char) -> Option<&'a [u8]> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Some(unsafe { CStr::from_ptr(text) }.to_bytes())
}

/// A C string as UTF-8, `None` for NULL or bytes that are not UTF-8.
///
/// # Safety
/// `text` is NULL or NUL-terminated.
unsafe fn c_utf8<'a>(text: *const c_char) -> Option<&'a str> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(text) }.to_str().ok()
}

/// Writes a handle through a caller's out-pointer (checked non-NULL before).
///
/// # Safety
/// `out` points at writable storage for one pointer.
unsafe fn put(out: *mut *mut c_void, handle: usize) {
    // SAFETY: by the caller's contract.
    unsafe { *out = handle as *mut c_void }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_failure_value_and_does_not_unwind() {
        let status = guard("nrt_test", FAILURE, || -> u32 { panic!("a bug in the simulator") });
        assert_eq!(status, FAILURE);
        let address = guard("nrt_test", ptr::null_mut::<c_void>(), || panic!("another bug"));
        assert!(address.is_null());
        assert_eq!(guard("nrt_test", FAILURE, || SUCCESS), SUCCESS);
    }
}

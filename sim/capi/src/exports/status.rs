//! The export of `nrt_status.h`: the name of a status code.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::ffi::c_char;

use abi::functions::LibnrtFunction as F;

use super::guard;
use crate::ffi::status_text;

/// `nrt_get_status_as_str`: the bare identifier (`"NRT_EXEC_COMPLETED_WITH_NUM_ERR"`), static;
/// `"NRT_STATUS_UNKNOWN"` for a code no table knows.
///
/// # Safety
/// None.
pub unsafe extern "C" fn nrt_get_status_as_str(status: u32) -> *const c_char {
    guard(F::nrt_get_status_as_str.name(), crate::ffi::UNKNOWN_STATUS.as_ptr(), || {
        status_text(status).as_ptr()
    })
}

//! The export of `nrt_version.h`: the library's version, before `nrt_init` too.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::ptr;

use abi::functions::LibnrtFunction as F;
use abi::runtime::prelude::*;

use super::with_global;
use crate::ffi::{NrtVersionC, version_c};
use crate::status::{INVALID, SUCCESS};

/// `nrt_get_version`: works before `nrt_init`. `size` must be at least the 224 bytes of
/// `nrt_version_t`.
///
/// # Safety
/// `version` is NULL or points at `size` writable bytes.
pub unsafe extern "C" fn nrt_get_version(version: *mut NrtVersionC, size: usize) -> u32 {
    with_global(F::nrt_get_version.name(), |g| {
        if version.is_null() || size < size_of::<NrtVersionC>() {
            return INVALID;
        }
        match g.sim.get_version() {
            Ok(found) => {
                // SAFETY: non-NULL and at least `size_of::<NrtVersionC>()` writable bytes; the C
                // struct has the same alignment (8) as this one.
                unsafe { ptr::write_unaligned(version, version_c(&found)) };
                SUCCESS
            }
            Err(err) => g.failed(F::nrt_get_version.name(), &err),
        }
    })
}

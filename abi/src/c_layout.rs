//! The C struct layouts of the libnrt API (ABI-FACTS §4), declared once for both sides of the
//! FFI: the real-libnrt backend (`nrt`) reads them from the library, the simulator's C ABI
//! (`sim/capi`) writes them for C callers.
//!
//! Plain `#[repr(C)]` data with compile-time layout checks; nothing here dereferences the raw
//! pointer fields, so no `unsafe` is needed (that stays in the two FFI crates).

use std::ffi::c_char;
use std::mem::{offset_of, size_of};

/// `nrt_tensor_info_t`: 296 bytes.
#[repr(C)]
#[derive(Debug)]
pub struct NrtTensorInfoC {
    /// The tensor name, NUL-terminated.
    pub name: [c_char; 256],
    /// `nrt_tensor_usage_t`: INPUT 0, OUTPUT 1.
    pub usage: u32,
    /// Size in bytes.
    pub size: usize,
    /// `nrt_dtype_t`, in the library's numbering.
    pub dtype: u32,
    /// `ndim` dimensions, owned by the info array.
    pub shape: *mut u32,
    /// Number of dimensions.
    pub ndim: u32,
}

/// `nrt_version_t`: 224 bytes.
#[repr(C)]
#[derive(Debug)]
pub struct NrtVersionC {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// Maintenance version.
    pub maintenance: u64,
    /// Free text, NUL-terminated.
    pub detail: [c_char; 128],
    /// The build's git hash, NUL-terminated.
    pub git_hash: [c_char; 64],
}

/// Bytes before the first entry of `nrt_tensor_info_array_t` (its `uint64_t tensor_count`).
pub const INFO_ARRAY_HEADER: usize = 8;

const _: () = {
    assert!(size_of::<NrtTensorInfoC>() == 296);
    assert!(offset_of!(NrtTensorInfoC, usage) == 256);
    assert!(offset_of!(NrtTensorInfoC, size) == 264);
    assert!(offset_of!(NrtTensorInfoC, dtype) == 272);
    assert!(offset_of!(NrtTensorInfoC, shape) == 280);
    assert!(offset_of!(NrtTensorInfoC, ndim) == 288);
    assert!(size_of::<NrtTensorInfoC>() % 8 == 0);
    assert!(size_of::<NrtVersionC>() == 224);
    assert!(offset_of!(NrtVersionC, detail) == 32);
    assert!(offset_of!(NrtVersionC, git_hash) == 160);
};

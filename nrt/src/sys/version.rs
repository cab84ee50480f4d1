//! The call of `nrt_version.h`: the library's version, copied out.
#![deny(unsafe_code)]

use std::mem::size_of;

use abi::c_layout::NrtVersionC;

use super::{Library, RawStatus, SUCCESS, c_array_bytes};

/// `nrt_version_t`, copied out.
pub(crate) struct RawVersion {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    pub(crate) patch: u64,
    pub(crate) maintenance: u64,
    pub(crate) detail: Vec<u8>,
    pub(crate) git_hash: Vec<u8>,
}

#[allow(unsafe_code)]
impl Library {
    /// `nrt_get_version`, with the size of our 224-byte struct.
    pub(crate) fn get_version(&self) -> Result<RawVersion, RawStatus> {
        let mut version = NrtVersionC {
            major: 0,
            minor: 0,
            patch: 0,
            maintenance: 0,
            detail: [0; 128],
            git_hash: [0; 64],
        };
        // SAFETY: `version` is a writable `nrt_version_t` of exactly the size passed.
        let status =
            unsafe { (self.functions.nrt_get_version)(&mut version, size_of::<NrtVersionC>()) };
        if status != SUCCESS {
            return Err(status);
        }
        Ok(RawVersion {
            major: version.major,
            minor: version.minor,
            patch: version.patch,
            maintenance: version.maintenance,
            detail: c_array_bytes(&version.detail),
            git_hash: c_array_bytes(&version.git_hash),
        })
    }
}

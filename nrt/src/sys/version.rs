//! The call of `nrt_version.h`: the library's version, copied out.
#![deny(unsafe_code)]

use std::mem::size_of;

use abi::c_layout::NrtVersionC;
use abi::runtime::NrtVersion;

use super::{Library, RawStatus, SUCCESS, c_array_bytes};

/// `nrt_version_t` as the method returns it.
fn version_of(version: &NrtVersionC) -> NrtVersion {
    let text =
        |chars: &[std::ffi::c_char]| String::from_utf8_lossy(&c_array_bytes(chars)).into_owned();
    NrtVersion {
        major: version.major,
        minor: version.minor,
        patch: version.patch,
        maintenance: version.maintenance,
        detail: text(&version.detail),
        git_hash: text(&version.git_hash),
    }
}

#[allow(unsafe_code)]
impl Library {
    /// `nrt_get_version`, with the size of our 224-byte struct.
    pub(crate) fn get_version(&self) -> Result<NrtVersion, RawStatus> {
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
        Ok(version_of(&version))
    }
}

/// How the recorder reads `nrt_get_version` (see [`super::record`]).
#[allow(unsafe_code)]
pub(crate) mod recorded {
    use abi::c_layout::NrtVersionC;
    use abi::runtime::call::calls;

    use super::super::record::{Call, Decoded, Effect, Read::Nothing, decoded, failure, plans};
    use super::version_of;

    plans! {
        nrt_get_version => decoded(Nothing, &[0], get_version),
    }

    /// Only for an `nrt_version_t` of this size, the one the method's call passes.
    unsafe fn get_version(call: &mut Call<'_, '_, '_>) -> Decoded {
        if call.args[1] != size_of::<NrtVersionC>() as u64 {
            return Decoded::ByName;
        }
        let output = if call.ok() {
            // SAFETY: an `nrt_version_t` the library filled.
            let version = unsafe { (call.args[0] as usize as *const NrtVersionC).read_unaligned() };
            Ok(version_of(&version))
        } else {
            Err(failure(call.result))
        };
        call.line(calls::nrt_get_version {}, output, Effect::None)
    }
}

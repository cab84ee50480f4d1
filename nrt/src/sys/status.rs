//! The call of `nrt_status.h`: the name libnrt gives a status.
#![deny(unsafe_code)]

use std::ffi::CStr;

use super::{Library, RawStatus};

#[allow(unsafe_code)]
impl Library {
    /// `nrt_get_status_as_str`, copied into Rust; `None` when the library returns NULL.
    pub(crate) fn status_as_str(&self, status: RawStatus) -> Option<String> {
        // SAFETY: any integer is a valid argument.
        let text = unsafe { (self.functions.nrt_get_status_as_str)(status) };
        if text.is_null() {
            return None;
        }
        // SAFETY: libnrt returns a NUL-terminated static string for every status.
        let text = unsafe { CStr::from_ptr(text) };
        Some(text.to_string_lossy().into_owned())
    }
}

/// How the recorder reads the calls of `nrt_status.h` (see [`super::record`]).
pub(crate) mod recorded {
    use super::super::record::{Read::Nothing, by_name, plans};

    plans! {
        // Recorded by name only: no `Runtime` method (it is `NrtStatus::identifier`).
        nrt_get_status_as_str => by_name(Nothing),
    }
}

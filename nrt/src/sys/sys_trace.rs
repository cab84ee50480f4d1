//! The calls of `nrt_sys_trace.h`: event types, starting a capture with a config, fetching the
//! events as JSON, stopping. Configs, fetch options and the buffers libnrt hands out live only
//! inside one method, copied into Rust and freed before it returns.
//!
//! Below the calls, `RuntimeSysTrace` for `NrtRuntime`: the methods of `nrt_sys_trace.h` over them.
#![deny(unsafe_code)]

use std::ffi::{CStr, CString, c_char};
use std::ptr;

use abi::functions::LibnrtFunction;
use abi::runtime::{NrtError, RuntimeSysTrace, SysTraceConfig, SysTraceFetch};

use crate::NrtRuntime;
use crate::runtime::{c_name, optional};

use super::c_names::{nrt_sys_trace_config_t, nrt_sys_trace_fetch_options_t};
use super::{INVALID, Library, RawStatus, SUCCESS};

#[allow(unsafe_code)]
impl Library {
    /// `nrt_sys_trace_get_event_types`, copied into Rust, then
    /// `nrt_sys_trace_free_event_types`; `None` when the library lacks either.
    pub(crate) fn sys_trace_event_types(&self) -> Option<Result<Vec<String>, RawStatus>> {
        let get = self.functions.nrt_sys_trace_get_event_types?;
        let free = self.functions.nrt_sys_trace_free_event_types?;
        let mut array: *mut *const c_char = ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: both out-pointers are valid; the signature is the table's.
        let status = unsafe { get(&mut array, &mut count) };
        if status != SUCCESS {
            return Some(Err(status));
        }
        if array.is_null() {
            return Some(Ok(Vec::new()));
        }
        // SAFETY: libnrt returned `count` NUL-terminated strings, valid until they are passed
        // to `nrt_sys_trace_free_event_types`, below; they are copied out before.
        let names = unsafe {
            (0..count)
                .map(|i| *array.add(i))
                .filter(|name| !name.is_null())
                .map(|name| CStr::from_ptr(name).to_string_lossy().into_owned())
                .collect()
        };
        // SAFETY: the array and count libnrt returned, released once.
        unsafe { free(array, count) };
        Some(Ok(names))
    }

    /// `nrt_sys_trace_config_allocate`, the setters, `nrt_sys_trace_start`, then
    /// `nrt_sys_trace_config_free`; `None` when the library lacks one of them.
    pub(crate) fn sys_trace_start(
        &self,
        max_events_per_nc: Option<u64>,
        disabled_ncs: &[u32],
        disabled_event_types: &[CString],
    ) -> Option<Result<(), RawStatus>> {
        let functions = &self.functions;
        let allocate = functions.nrt_sys_trace_config_allocate?;
        let free = functions.nrt_sys_trace_config_free?;
        let set_max = functions.nrt_sys_trace_config_set_max_events_per_nc?;
        let set_nc = functions.nrt_sys_trace_config_set_capture_enabled_for_nc?;
        let set_type = functions.nrt_sys_trace_config_set_capture_enabled_for_event_type?;
        let start = functions.nrt_sys_trace_start?;
        let mut config: *mut nrt_sys_trace_config_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signatures are the table's.
        let status = unsafe { allocate(&mut config) };
        if status != SUCCESS || config.is_null() {
            return Some(Err(if status == SUCCESS { INVALID } else { status }));
        }
        // SAFETY: `config` is the object libnrt allocated, used until it is freed at the end;
        // the event type names are NUL-terminated and outlive the calls.
        let status = unsafe {
            let mut status = SUCCESS;
            if let Some(max) = max_events_per_nc {
                set_max(config, max);
            }
            for &nc in disabled_ncs {
                set_nc(config, nc, false);
            }
            for kind in disabled_event_types {
                if status == SUCCESS {
                    status = set_type(config, kind.as_ptr(), false);
                }
            }
            if status == SUCCESS {
                status = start(config);
            }
            free(config);
            status
        };
        Some(if status == SUCCESS { Ok(()) } else { Err(status) })
    }

    /// `nrt_sys_trace_fetch_options_allocate`, its setters, `nrt_sys_trace_fetch_events`, the
    /// JSON copied into Rust, `nrt_sys_trace_buffer_free` and `nrt_sys_trace_fetch_options_free`;
    /// `None` when the library lacks one of them.
    pub(crate) fn sys_trace_fetch(
        &self,
        max_events_per_nc: Option<u64>,
        nc: Option<u64>,
    ) -> Option<Result<String, RawStatus>> {
        let functions = &self.functions;
        let allocate = functions.nrt_sys_trace_fetch_options_allocate?;
        let free_options = functions.nrt_sys_trace_fetch_options_free?;
        let set_max = functions.nrt_sys_trace_fetch_options_set_max_events_per_nc?;
        let set_nc = functions.nrt_sys_trace_fetch_options_set_nc_idx?;
        let fetch = functions.nrt_sys_trace_fetch_events?;
        let free_buffer = functions.nrt_sys_trace_buffer_free?;
        let mut options: *mut nrt_sys_trace_fetch_options_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signatures are the table's.
        let status = unsafe { allocate(&mut options) };
        if status != SUCCESS || options.is_null() {
            return Some(Err(if status == SUCCESS { INVALID } else { status }));
        }
        let mut buffer: *mut c_char = ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: `options` is the object libnrt allocated, freed once at the end; the buffer
        // libnrt returns holds `size` bytes until `nrt_sys_trace_buffer_free`, and is copied
        // out before that.
        let result = unsafe {
            if let Some(max) = max_events_per_nc {
                set_max(options, max);
            }
            if let Some(nc) = nc {
                set_nc(options, nc);
            }
            let status = fetch(&mut buffer, &mut size, options);
            let result = if status != SUCCESS {
                Err(status)
            } else if buffer.is_null() {
                Ok(String::new())
            } else {
                let bytes = std::slice::from_raw_parts(buffer.cast::<u8>(), size);
                let text = String::from_utf8_lossy(bytes).into_owned();
                free_buffer(buffer);
                Ok(text)
            };
            free_options(options);
            result
        };
        Some(result)
    }

    /// `nrt_sys_trace_stop`; `None` when the library lacks it.
    pub(crate) fn sys_trace_stop(&self) -> Option<Result<(), RawStatus>> {
        let stop = self.functions.nrt_sys_trace_stop?;
        // SAFETY: no arguments.
        let status = unsafe { stop() };
        Some(if status == SUCCESS { Ok(()) } else { Err(status) })
    }
}

impl RuntimeSysTrace for NrtRuntime {
    fn sys_trace_get_event_types(&self) -> Result<Vec<String>, NrtError> {
        let function = LibnrtFunction::nrt_sys_trace_get_event_types;
        optional(function, self.library.sys_trace_event_types())
    }

    fn sys_trace_start(&self, config: &SysTraceConfig) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_sys_trace_start;
        let types = config
            .disabled_event_types
            .iter()
            .map(|kind| c_name(function, kind.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let started =
            self.library.sys_trace_start(config.max_events_per_nc, &config.disabled_ncs, &types);
        optional(function, started)
    }

    fn sys_trace_fetch_events(&self, fetch: &SysTraceFetch) -> Result<String, NrtError> {
        let function = LibnrtFunction::nrt_sys_trace_fetch_events;
        optional(function, self.library.sys_trace_fetch(fetch.max_events_per_nc, fetch.nc))
    }

    fn sys_trace_stop(&self) -> Result<(), NrtError> {
        optional(LibnrtFunction::nrt_sys_trace_stop, self.library.sys_trace_stop())
    }
}

/// How the recorder reads the calls of `nrt_sys_trace.h` (see [`super::record`]).
pub(crate) mod recorded {
    use super::super::record::{Read::Nothing, by_name, plans};

    plans! {
        // Recorded by name and status only; a replay does not re-issue them: their arguments
        // are spread over configs, fetch options and lists that a line does not carry.
        nrt_sys_trace_config_allocate
        | nrt_sys_trace_config_set_defaults
        | nrt_sys_trace_config_free
        | nrt_sys_trace_config_set_max_events_per_nc
        | nrt_sys_trace_config_set_capture_enabled_for_nc
        | nrt_sys_trace_config_set_capture_enabled_for_event_type
        | nrt_sys_trace_get_event_types
        | nrt_sys_trace_free_event_types
        | nrt_sys_trace_config_get_enabled_event_types
        | nrt_sys_trace_start
        | nrt_sys_trace_stop
        | nrt_sys_trace_fetch_options_allocate
        | nrt_sys_trace_fetch_options_set_defaults
        | nrt_sys_trace_fetch_options_free
        | nrt_sys_trace_fetch_options_set_max_events_per_nc
        | nrt_sys_trace_fetch_options_set_nc_idx
        | nrt_sys_trace_fetch_events
        | nrt_sys_trace_buffer_free => by_name(Nothing),
    }
}

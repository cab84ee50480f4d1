//! The exports of `nrt_sys_trace.h`, over the simulator's event stream ([`sim::sys_trace`]).
//!
//! Capture configs and fetch options are option objects ([`crate::options`]). The events are
//! fetched as a `malloc`ed JSON string in the simulator's documented format
//! (`docs/sim-trace-format.md`), which the caller may release with `free` as well as with
//! `nrt_sys_trace_buffer_free`.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::ptr;

use abi::functions::LibnrtFunction as F;
use abi::runtime::NrtError;
use abi::status::NrtStatus;
use sim::sys_trace::{CaptureConfig, EVENT_TYPES, FetchOptions};

use super::{c_utf8, guard, with_global};
use crate::ffi::{free, free_strings, malloc, put_strings};
use crate::handles::{Global, Kind};
use crate::options::{Options, allocate, release, set_quietly, with_object};
use crate::status::{INVALID, SUCCESS};

fn trace_configs(options: &mut Options) -> &mut HashMap<u64, CaptureConfig> {
    &mut options.trace_configs
}

fn fetch_options(options: &mut Options) -> &mut HashMap<u64, FetchOptions> {
    &mut options.fetch_options
}

/// The status of a refused trace or profile call.
fn refused(g: &Global, function: F, err: impl std::fmt::Display) -> u32 {
    g.failed(function.name(), &NrtError::new(NrtStatus::Invalid, err.to_string()))
}

/// `nrt_sys_trace_config_allocate`: a config with the defaults (every core and event type,
/// 100 000 events per core).
///
/// # Safety
/// `options` is NULL or writable storage for a handle.
pub unsafe extern "C" fn nrt_sys_trace_config_allocate(options: *mut *mut c_void) -> u32 {
    allocate(F::nrt_sys_trace_config_allocate, Kind::TraceConfig, options, |o, id| {
        o.trace_configs.insert(id, CaptureConfig::default());
    })
}

/// `nrt_sys_trace_config_set_defaults`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_config_set_defaults(options: *mut c_void) {
    set_quietly(
        F::nrt_sys_trace_config_set_defaults.name(),
        Kind::TraceConfig,
        options,
        trace_configs,
        |c| {
            *c = CaptureConfig::default();
        },
    )
}

/// `nrt_sys_trace_config_free`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_config_free(options: *mut c_void) {
    guard(F::nrt_sys_trace_config_free.name(), (), || {
        release(Kind::TraceConfig, options, trace_configs);
    })
}

/// `nrt_sys_trace_config_set_max_events_per_nc`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_config_set_max_events_per_nc(
    options: *mut c_void,
    max_events_per_nc: u64,
) {
    set_quietly(
        F::nrt_sys_trace_config_set_max_events_per_nc.name(),
        Kind::TraceConfig,
        options,
        trace_configs,
        |c| {
            c.max_events_per_nc = max_events_per_nc;
        },
    )
}

/// `nrt_sys_trace_config_set_capture_enabled_for_nc`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_config_set_capture_enabled_for_nc(
    options: *mut c_void,
    nc_idx: u32,
    enabled: bool,
) {
    set_quietly(
        F::nrt_sys_trace_config_set_capture_enabled_for_nc.name(),
        Kind::TraceConfig,
        options,
        trace_configs,
        |c| {
            if enabled {
                c.disabled_ncs.remove(&nc_idx);
            } else {
                c.disabled_ncs.insert(nc_idx);
            }
        },
    )
}

/// `nrt_sys_trace_config_set_capture_enabled_for_event_type`: `NRT_INVALID` for a type
/// `nrt_sys_trace_get_event_types` does not list.
///
/// # Safety
/// `event_type` is NULL or a C string.
pub unsafe extern "C" fn nrt_sys_trace_config_set_capture_enabled_for_event_type(
    options: *mut c_void,
    event_type: *const c_char,
    enabled: bool,
) -> u32 {
    with_global(F::nrt_sys_trace_config_set_capture_enabled_for_event_type.name(), |g| {
        // SAFETY: NULL or a C string.
        let Some(event_type) = (unsafe { c_utf8(event_type) }) else { return INVALID };
        with_object(g, Kind::TraceConfig, options, trace_configs, |c| {
            match c.set_event_type(event_type, enabled) {
                Ok(()) => SUCCESS,
                Err(err) => {
                    refused(g, F::nrt_sys_trace_config_set_capture_enabled_for_event_type, err)
                }
            }
        })
    })
}

/// `nrt_sys_trace_get_event_types`: every event type the simulator records.
///
/// # Safety
/// Both pointers are NULL or writable.
pub unsafe extern "C" fn nrt_sys_trace_get_event_types(
    event_types: *mut *mut *const c_char,
    count: *mut usize,
) -> u32 {
    with_global(F::nrt_sys_trace_get_event_types.name(), |_| {
        if event_types.is_null() || count.is_null() {
            return INVALID;
        }
        // SAFETY: both checked non-NULL.
        unsafe { put_strings(EVENT_TYPES, event_types, count) }
    })
}

/// `nrt_sys_trace_free_event_types`.
///
/// # Safety
/// `event_types` is NULL or an array of `count` strings from this library (or the caller's
/// `malloc`).
pub unsafe extern "C" fn nrt_sys_trace_free_event_types(
    event_types: *mut *const c_char,
    count: usize,
) {
    guard(F::nrt_sys_trace_free_event_types.name(), (), || free_strings(event_types, count))
}

/// `nrt_sys_trace_config_get_enabled_event_types`.
///
/// # Safety
/// Both out-pointers are NULL or writable.
pub unsafe extern "C" fn nrt_sys_trace_config_get_enabled_event_types(
    options: *mut c_void,
    event_types: *mut *mut *const c_char,
    count: *mut usize,
) -> u32 {
    with_global(F::nrt_sys_trace_config_get_enabled_event_types.name(), |g| {
        if event_types.is_null() || count.is_null() {
            return INVALID;
        }
        with_object(g, Kind::TraceConfig, options, trace_configs, |c| {
            // SAFETY: both checked non-NULL.
            unsafe { put_strings(&c.enabled_event_types(), event_types, count) }
        })
    })
}

/// `nrt_sys_trace_start`: starts capturing with `options` (NULL: the defaults); `NRT_INVALID`
/// while a capture runs.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_start(options: *mut c_void) -> u32 {
    with_global(F::nrt_sys_trace_start.name(), |g| {
        if let Err(status) = g.enter(F::nrt_sys_trace_start) {
            return status;
        }
        let config = if options.is_null() {
            CaptureConfig::default()
        } else {
            let mut found = None;
            let status = with_object(g, Kind::TraceConfig, options, trace_configs, |c| {
                found = Some(c.clone());
                SUCCESS
            });
            match found {
                Some(config) => config,
                None => return status,
            }
        };
        match g.sim.events().start_capture(config) {
            Ok(()) => SUCCESS,
            Err(err) => refused(g, F::nrt_sys_trace_start, err),
        }
    })
}

/// `nrt_sys_trace_stop`: stops the capture and frees its events; `NRT_INVALID` without one.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_sys_trace_stop() -> u32 {
    with_global(F::nrt_sys_trace_stop.name(), |g| {
        if let Err(status) = g.enter(F::nrt_sys_trace_stop) {
            return status;
        }
        match g.sim.events().stop_capture() {
            Ok(()) => SUCCESS,
            Err(err) => refused(g, F::nrt_sys_trace_stop, err),
        }
    })
}

/// `nrt_sys_trace_fetch_options_allocate`: all cores, all events.
///
/// # Safety
/// `options` is NULL or writable storage for a handle.
pub unsafe extern "C" fn nrt_sys_trace_fetch_options_allocate(options: *mut *mut c_void) -> u32 {
    allocate(F::nrt_sys_trace_fetch_options_allocate, Kind::FetchOptions, options, |o, id| {
        o.fetch_options.insert(id, FetchOptions::default());
    })
}

/// `nrt_sys_trace_fetch_options_set_defaults`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_fetch_options_set_defaults(options: *mut c_void) {
    set_quietly(
        F::nrt_sys_trace_fetch_options_set_defaults.name(),
        Kind::FetchOptions,
        options,
        fetch_options,
        |o| {
            *o = FetchOptions::default();
        },
    )
}

/// `nrt_sys_trace_fetch_options_free`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_fetch_options_free(options: *mut c_void) {
    guard(F::nrt_sys_trace_fetch_options_free.name(), (), || {
        release(Kind::FetchOptions, options, fetch_options);
    })
}

/// `nrt_sys_trace_fetch_options_set_max_events_per_nc`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_fetch_options_set_max_events_per_nc(
    options: *mut c_void,
    max_events_per_nc: u64,
) {
    set_quietly(
        F::nrt_sys_trace_fetch_options_set_max_events_per_nc.name(),
        Kind::FetchOptions,
        options,
        fetch_options,
        |o| {
            o.max_events_per_nc = Some(max_events_per_nc);
        },
    )
}

/// `nrt_sys_trace_fetch_options_set_nc_idx`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_sys_trace_fetch_options_set_nc_idx(options: *mut c_void, nc_idx: u64) {
    set_quietly(
        F::nrt_sys_trace_fetch_options_set_nc_idx.name(),
        Kind::FetchOptions,
        options,
        fetch_options,
        |o| {
            o.nc = Some(nc_idx);
        },
    )
}

/// `nrt_sys_trace_fetch_events`: removes the captured events and returns them as a
/// `malloc`ed, NUL-terminated JSON string (`docs/sim-trace-format.md`); `NRT_INVALID` without a
/// capture.
///
/// # Safety
/// `buffer` and `written_size` are NULL or writable.
pub unsafe extern "C" fn nrt_sys_trace_fetch_events(
    buffer: *mut *mut c_char,
    written_size: *mut usize,
    options: *const c_void,
) -> u32 {
    with_global(F::nrt_sys_trace_fetch_events.name(), |g| {
        if buffer.is_null() || written_size.is_null() {
            return INVALID;
        }
        if let Err(status) = g.enter(F::nrt_sys_trace_fetch_events) {
            return status;
        }
        let fetch = if options.is_null() {
            FetchOptions::default()
        } else {
            let mut found = None;
            let status =
                with_object(g, Kind::FetchOptions, options.cast_mut(), fetch_options, |o| {
                    found = Some(o.clone());
                    SUCCESS
                });
            match found {
                Some(fetch) => fetch,
                None => return status,
            }
        };
        let json = match g.sim.events().fetch(&fetch) {
            Ok(json) => json,
            Err(err) => return refused(g, F::nrt_sys_trace_fetch_events, err),
        };
        // SAFETY: `malloc` of the text and its NUL; checked for NULL.
        let copy = unsafe { malloc(json.len() + 1) }.cast::<u8>();
        if copy.is_null() {
            return crate::status::RESOURCE;
        }
        // SAFETY: `copy` has `len + 1` bytes; the out-pointers were checked non-NULL.
        unsafe {
            ptr::copy_nonoverlapping(json.as_ptr(), copy, json.len());
            *copy.add(json.len()) = 0;
            *buffer = copy.cast::<c_char>();
            *written_size = json.len();
        }
        SUCCESS
    })
}

/// `nrt_sys_trace_buffer_free`.
///
/// # Safety
/// `buffer` is NULL or a buffer from `nrt_sys_trace_fetch_events`.
pub unsafe extern "C" fn nrt_sys_trace_buffer_free(buffer: *mut c_char) {
    guard(F::nrt_sys_trace_buffer_free.name(), (), || {
        // SAFETY: NULL (a no-op for `free`) or memory this library `malloc`ed.
        unsafe { free(buffer.cast::<c_void>()) }
    })
}

//! The exported `nrt_sys_trace_*` (`nrt_sys_trace.h`) and `nrt_profile_*` / `nrt_inspect_*`
//! (`nrt_profile.h`) functions, over the simulator's event stream ([`sim::sys_trace`]).
//!
//! Option objects are registry handles like every other handle of this library (a NULL one is
//! `NRT_INVALID`, a freed or foreign one `NRT_INVALID_HANDLE`; the `void` setters ignore both).
//! Strings and string arrays handed to the caller are `malloc`ed, because the public header lets
//! the caller release them with `free` as well as with the library's own functions.
//!
//! Profiles are JSON files in the simulator's documented format (`docs/sim-trace-format.md`):
//! `nrt_profile_stop` writes the launches of the profiled model to the file named at start (or
//! at stop); continuous profiling saves the latest launch of a core into its output folder;
//! inspect profiling records every launch between begin and stop into
//! `<output dir>/nrtsim-inspect-session<ID>.json`.

// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::collections::{BTreeSet, HashMap};
use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::PathBuf;
use std::ptr;
use std::sync::Mutex;

use abi::functions::LibnrtFunction as F;
use abi::runtime::prelude::*;
use abi::runtime::{ModelId, NrtError};
use abi::status::NrtStatus;
use sim::sys_trace::{ACTIVITY_TYPES, CaptureConfig, EVENT_TYPES, FetchOptions};

use crate::exports::{guard, with_global};
use crate::handles::{Global, Kind, global, lock};
use crate::status::{FAILURE, INVALID, SUCCESS};

unsafe extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(pointer: *mut c_void);
}

/// The option objects given to C, by id.
#[derive(Default)]
pub(crate) struct Options {
    trace_configs: HashMap<u64, CaptureConfig>,
    fetch_options: HashMap<u64, FetchOptions>,
    continuous: HashMap<u64, PathBuf>,
    inspect: HashMap<u64, InspectConfig>,
    next_id: u64,
}

/// `nrt_inspect_config_t`.
#[derive(Clone)]
struct InspectConfig {
    session_id: c_int,
    output_dir: PathBuf,
    capture: CaptureConfig,
    activities: BTreeSet<&'static str>,
    enable_inspect: bool,
    enable_inspect_on_fail: bool,
}

impl Default for InspectConfig {
    fn default() -> InspectConfig {
        InspectConfig {
            session_id: 1,
            output_dir: PathBuf::from("./output"),
            capture: CaptureConfig::default(),
            activities: ACTIVITY_TYPES.iter().copied().collect(),
            enable_inspect: false,
            enable_inspect_on_fail: false,
        }
    }
}

/// A C string as UTF-8, `None` for NULL or bytes that are not UTF-8.
///
/// # Safety
/// `text` is NULL or NUL-terminated.
unsafe fn text<'a>(text: *const c_char) -> Option<&'a str> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(text) }.to_str().ok()
}

/// `items` as a `malloc`ed array of `malloc`ed C strings; NULL when memory runs out.
fn c_strings(items: &[&str]) -> *mut *const c_char {
    // SAFETY: `malloc` of at least one pointer; checked for NULL below.
    let array =
        unsafe { malloc(size_of::<*const c_char>() * items.len().max(1)) }.cast::<*const c_char>();
    if array.is_null() {
        return ptr::null_mut();
    }
    for (i, item) in items.iter().enumerate() {
        // SAFETY: `malloc` of the string and its NUL; checked for NULL.
        let copy = unsafe { malloc(item.len() + 1) }.cast::<u8>();
        if copy.is_null() {
            free_strings(array, i);
            return ptr::null_mut();
        }
        // SAFETY: `copy` has `len + 1` bytes; `array` has room for `items.len()` pointers.
        unsafe {
            ptr::copy_nonoverlapping(item.as_ptr(), copy, item.len());
            *copy.add(item.len()) = 0;
            *array.add(i) = copy.cast::<c_char>();
        }
    }
    array
}

/// Frees the first `count` strings of `array` and the array.
fn free_strings(array: *mut *const c_char, count: usize) {
    if array.is_null() {
        return;
    }
    for i in 0..count {
        // SAFETY: `array` holds `count` pointers from `malloc` (or from the caller's own, as
        // the public header allows the caller to free them either way).
        unsafe { free((*array.add(i)).cast_mut().cast::<c_void>()) };
    }
    // SAFETY: the array itself came from `malloc`.
    unsafe { free(array.cast::<c_void>()) };
}

/// Writes a string array and its count through the caller's pointers.
///
/// # Safety
/// Both pointers were checked non-NULL and are the caller's variables.
unsafe fn put_strings(items: &[&str], out: *mut *mut *const c_char, count: *mut usize) -> u32 {
    let array = c_strings(items);
    if array.is_null() {
        return crate::status::RESOURCE;
    }
    // SAFETY: by this function's contract.
    unsafe {
        *out = array;
        *count = items.len();
    }
    SUCCESS
}

fn registry() -> &'static Mutex<Options> {
    static OPTIONS: std::sync::OnceLock<Mutex<Options>> = std::sync::OnceLock::new();
    OPTIONS.get_or_init(|| Mutex::new(Options::default()))
}

/// Registers a new option object made by `insert` and writes its handle.
fn allocate(
    function: F,
    kind: Kind,
    out: *mut *mut c_void,
    insert: impl FnOnce(&mut Options, u64),
) -> u32 {
    with_global(function.name(), |g| {
        if out.is_null() {
            return INVALID;
        }
        let mut options = lock(registry());
        options.next_id += 1;
        let id = options.next_id;
        insert(&mut options, id);
        let handle = g.register(kind, id);
        // SAFETY: non-NULL, the caller's handle variable.
        unsafe { *out = handle as *mut c_void };
        SUCCESS
    })
}

/// Runs `change` on a live option object; the status is `NRT_INVALID` for NULL and
/// `NRT_INVALID_HANDLE` for a handle that is not one of `kind`.
fn with_object<T>(
    g: &Global,
    kind: Kind,
    handle: *mut c_void,
    map: impl FnOnce(&mut Options) -> &mut HashMap<u64, T>,
    change: impl FnOnce(&mut T) -> u32,
) -> u32 {
    let id = match g.lookup(kind, handle as usize) {
        Ok(id) => id,
        Err(status) => return status,
    };
    let mut options = lock(registry());
    match map(&mut options).get_mut(&id) {
        Some(object) => change(object),
        None => crate::status::INVALID_HANDLE,
    }
}

/// `with_object` for a `void` setter: failures are ignored, as the C function cannot say them.
fn set_quietly<T>(
    call: &str,
    kind: Kind,
    handle: *mut c_void,
    map: impl FnOnce(&mut Options) -> &mut HashMap<u64, T>,
    change: impl FnOnce(&mut T),
) {
    guard(call, (), || {
        if let Ok(g) = global() {
            with_object(g, kind, handle, map, |object| {
                change(object);
                SUCCESS
            });
        }
    })
}

/// Releases an option object; unknown handles are ignored.
fn release<T>(
    kind: Kind,
    handle: *mut c_void,
    map: impl FnOnce(&mut Options) -> &mut HashMap<u64, T>,
) -> u32 {
    let Ok(g) = global() else { return INVALID };
    match g.release(kind, handle as usize) {
        Some(id) => {
            map(&mut lock(registry())).remove(&id);
            SUCCESS
        }
        None if handle.is_null() => INVALID,
        None => crate::status::INVALID_HANDLE,
    }
}

fn trace_configs(options: &mut Options) -> &mut HashMap<u64, CaptureConfig> {
    &mut options.trace_configs
}

fn fetch_options(options: &mut Options) -> &mut HashMap<u64, FetchOptions> {
    &mut options.fetch_options
}

fn continuous(options: &mut Options) -> &mut HashMap<u64, PathBuf> {
    &mut options.continuous
}

fn inspect(options: &mut Options) -> &mut HashMap<u64, InspectConfig> {
    &mut options.inspect
}

/// The status of a refused trace or profile call.
fn refused(g: &Global, function: F, err: impl std::fmt::Display) -> u32 {
    g.failed(function.name(), &NrtError::new(NrtStatus::Invalid, err.to_string()))
}

// --- nrt_sys_trace.h ---

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
        let Some(event_type) = (unsafe { text(event_type) }) else { return INVALID };
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

// --- nrt_profile.h ---

/// `nrt_profile_start`: records the launches of `model` until `nrt_profile_stop`.
///
/// # Safety
/// `filename` is NULL or a C string.
pub unsafe extern "C" fn nrt_profile_start(model: *mut c_void, filename: *const c_char) -> u32 {
    with_global(F::nrt_profile_start.name(), |g| {
        let id = match g.lookup(Kind::Model, model as usize) {
            Ok(id) => ModelId(id),
            Err(status) => return status,
        };
        // SAFETY: NULL or a C string.
        let path = unsafe { text(filename) }.map(PathBuf::from);
        g.status(F::nrt_profile_start.name(), g.sim.profile_start(id, path.as_deref()))
    })
}

/// `nrt_profile_stop`: writes the profile to `filename` (NULL: the name given at start).
///
/// # Safety
/// `filename` is NULL or a C string.
pub unsafe extern "C" fn nrt_profile_stop(filename: *const c_char) -> u32 {
    with_global(F::nrt_profile_stop.name(), |g| {
        // SAFETY: NULL or a C string.
        let path = unsafe { text(filename) }.map(PathBuf::from);
        g.status(F::nrt_profile_stop.name(), g.sim.profile_stop(path.as_deref()))
    })
}

/// `nrt_profile_continuous_options_allocate`: output folder `./output`.
///
/// # Safety
/// `options` is NULL or writable storage for a handle.
pub unsafe extern "C" fn nrt_profile_continuous_options_allocate(options: *mut *mut c_void) -> u32 {
    allocate(
        F::nrt_profile_continuous_options_allocate,
        Kind::ContinuousOptions,
        options,
        |o, id| {
            o.continuous.insert(id, PathBuf::from("./output"));
        },
    )
}

/// `nrt_profile_continuous_options_free`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_profile_continuous_options_free(options: *mut c_void) -> u32 {
    guard(F::nrt_profile_continuous_options_free.name(), FAILURE, || {
        release(Kind::ContinuousOptions, options, continuous)
    })
}

/// `nrt_profile_continuous_options_set_output_dir`.
///
/// # Safety
/// `output_dir` is NULL or a C string.
pub unsafe extern "C" fn nrt_profile_continuous_options_set_output_dir(
    options: *mut c_void,
    output_dir: *const c_char,
) -> u32 {
    with_global(F::nrt_profile_continuous_options_set_output_dir.name(), |g| {
        // SAFETY: NULL or a C string.
        let Some(dir) = (unsafe { text(output_dir) }).filter(|dir| !dir.is_empty()) else {
            return INVALID;
        };
        with_object(g, Kind::ContinuousOptions, options, continuous, |path| {
            *path = PathBuf::from(dir);
            SUCCESS
        })
    })
}

/// `nrt_profile_continuous_start`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_profile_continuous_start(options: *mut c_void) -> u32 {
    with_global(F::nrt_profile_continuous_start.name(), |g| {
        if !options.is_null() {
            let status = with_object(g, Kind::ContinuousOptions, options, continuous, |_| SUCCESS);
            if status != SUCCESS {
                return status;
            }
        }
        g.status(F::nrt_profile_continuous_start.name(), g.sim.profile_continuous_start())
    })
}

/// `nrt_profile_continuous_save`: the latest launch on `vnc` into
/// `<output dir>/nrtsim-profile-vnc<VNC>-<N>.json`; `NRT_INVALID` when nothing launched there.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_profile_continuous_save(vnc: u32, options: *mut c_void) -> u32 {
    with_global(F::nrt_profile_continuous_save.name(), |g| {
        let mut dir = None;
        let status = with_object(g, Kind::ContinuousOptions, options, continuous, |path| {
            dir = Some(path.clone());
            SUCCESS
        });
        // The gate's status comes first, as for every call; the simulator's method passes the
        // gate itself, so it is entered here only when the method is not called.
        let Some(dir) = dir else {
            return match g.enter(F::nrt_profile_continuous_save) {
                Ok(()) => status,
                Err(gated) => gated,
            };
        };
        g.status(F::nrt_profile_continuous_save.name(), g.sim.profile_continuous_save(vnc, &dir))
    })
}

/// `nrt_profile_continuous_stop`.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_profile_continuous_stop() -> u32 {
    with_global(F::nrt_profile_continuous_stop.name(), |g| {
        g.status(F::nrt_profile_continuous_stop.name(), g.sim.profile_continuous_stop())
    })
}

/// `nrt_inspect_begin`: records every launch until `nrt_inspect_stop`, into
/// `NEURON_RT_INSPECT_OUTPUT_DIR` (default `./output`).
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_inspect_begin() -> u32 {
    with_global(F::nrt_inspect_begin.name(), |g| {
        let dir =
            std::env::var("NEURON_RT_INSPECT_OUTPUT_DIR").unwrap_or_else(|_| "./output".to_owned());
        g.status(F::nrt_inspect_begin.name(), g.sim.inspect_begin(std::path::Path::new(&dir)))
    })
}

/// `nrt_inspect_stop`: writes `<output dir>/nrtsim-inspect-session<ID>.json`.
///
/// # Safety
/// None beyond the C ABI.
pub unsafe extern "C" fn nrt_inspect_stop() -> u32 {
    with_global(F::nrt_inspect_stop.name(), |g| {
        g.status(F::nrt_inspect_stop.name(), g.sim.inspect_stop())
    })
}

/// `nrt_inspect_config_allocate`: session 1, `./output`, every activity, inspection off.
///
/// # Safety
/// `options` is NULL or writable storage for a handle.
pub unsafe extern "C" fn nrt_inspect_config_allocate(options: *mut *mut c_void) -> u32 {
    allocate(F::nrt_inspect_config_allocate, Kind::InspectConfig, options, |o, id| {
        o.inspect.insert(id, InspectConfig::default());
    })
}

/// Changes an inspect config through a status-returning setter.
fn inspect_set(
    function: F,
    options: *mut c_void,
    change: impl FnOnce(&mut InspectConfig) -> u32,
) -> u32 {
    with_global(function.name(), |g| with_object(g, Kind::InspectConfig, options, inspect, change))
}

/// `nrt_inspect_config_set_defaults`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_inspect_config_set_defaults(options: *mut c_void) -> u32 {
    inspect_set(F::nrt_inspect_config_set_defaults, options, |c| {
        *c = InspectConfig::default();
        SUCCESS
    })
}

/// `nrt_inspect_config_free`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_inspect_config_free(options: *mut c_void) -> u32 {
    guard(F::nrt_inspect_config_free.name(), FAILURE, || {
        release(Kind::InspectConfig, options, inspect)
    })
}

/// `nrt_inspect_config_set_session_id`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_inspect_config_set_session_id(
    options: *mut c_void,
    session_id: c_int,
) -> u32 {
    inspect_set(F::nrt_inspect_config_set_session_id, options, |c| {
        c.session_id = session_id;
        SUCCESS
    })
}

/// `nrt_inspect_config_set_output_dir`: `NRT_INVALID` for NULL or an empty string.
///
/// # Safety
/// `output_dir` is NULL or a C string.
pub unsafe extern "C" fn nrt_inspect_config_set_output_dir(
    options: *mut c_void,
    output_dir: *const c_char,
) -> u32 {
    // SAFETY: NULL or a C string.
    let dir = unsafe { text(output_dir) }.filter(|dir| !dir.is_empty()).map(PathBuf::from);
    inspect_set(F::nrt_inspect_config_set_output_dir, options, |c| match dir {
        Some(dir) => {
            c.output_dir = dir;
            SUCCESS
        }
        None => INVALID,
    })
}

/// `nrt_inspect_config_set_sys_trace_max_events_per_nc`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_inspect_config_set_sys_trace_max_events_per_nc(
    options: *mut c_void,
    sys_trace_max_events_per_nc: u64,
) -> u32 {
    inspect_set(F::nrt_inspect_config_set_sys_trace_max_events_per_nc, options, |c| {
        c.capture.max_events_per_nc = sys_trace_max_events_per_nc;
        SUCCESS
    })
}

/// `nrt_inspect_config_set_capture_enabled_for_nc`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_inspect_config_set_capture_enabled_for_nc(
    options: *mut c_void,
    nc_idx: u32,
    enabled: bool,
) -> u32 {
    inspect_set(F::nrt_inspect_config_set_capture_enabled_for_nc, options, |c| {
        if enabled {
            c.capture.disabled_ncs.remove(&nc_idx);
        } else {
            c.capture.disabled_ncs.insert(nc_idx);
        }
        SUCCESS
    })
}

/// `nrt_inspect_config_set_capture_enabled_for_event_type_string`: `NRT_INVALID` for an
/// unknown event type.
///
/// # Safety
/// `event_type` is NULL or a C string.
pub unsafe extern "C" fn nrt_inspect_config_set_capture_enabled_for_event_type_string(
    options: *mut c_void,
    event_type: *const c_char,
    enabled: bool,
) -> u32 {
    // SAFETY: NULL or a C string.
    let event_type = unsafe { text(event_type) };
    inspect_set(F::nrt_inspect_config_set_capture_enabled_for_event_type_string, options, |c| {
        match event_type.map(|kind| c.capture.set_event_type(kind, enabled)) {
            Some(Ok(())) => SUCCESS,
            _ => INVALID,
        }
    })
}

/// `nrt_inspect_config_set_enable_inspect`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_inspect_config_set_enable_inspect(
    options: *mut c_void,
    enable_inspect: bool,
) -> u32 {
    inspect_set(F::nrt_inspect_config_set_enable_inspect, options, |c| {
        c.enable_inspect = enable_inspect;
        SUCCESS
    })
}

/// `nrt_inspect_config_set_enable_inspect_on_fail`.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_inspect_config_set_enable_inspect_on_fail(
    options: *mut c_void,
    enable_inspect_on_fail: bool,
) -> u32 {
    inspect_set(F::nrt_inspect_config_set_enable_inspect_on_fail, options, |c| {
        c.enable_inspect_on_fail = enable_inspect_on_fail;
        SUCCESS
    })
}

/// `nrt_inspect_begin_with_options`: with inspection and inspection on failure both off
/// (the defaults), nothing is recorded, as the public header says; otherwise as
/// `nrt_inspect_begin` into the config's folder and session.
///
/// # Safety
/// None: the handle is looked up, never dereferenced.
pub unsafe extern "C" fn nrt_inspect_begin_with_options(options: *mut c_void) -> u32 {
    with_global(F::nrt_inspect_begin_with_options.name(), |g| {
        let config = if options.is_null() {
            InspectConfig::default()
        } else {
            let mut found = None;
            let status = with_object(g, Kind::InspectConfig, options, inspect, |c| {
                found = Some(c.clone());
                SUCCESS
            });
            match found {
                Some(config) => config,
                None => return status,
            }
        };
        let options = abi::runtime::InspectConfig {
            session_id: Some(config.session_id),
            output_dir: Some(config.output_dir.clone()),
            enable_inspect: Some(config.enable_inspect),
            enable_inspect_on_fail: Some(config.enable_inspect_on_fail),
        };
        g.status(
            F::nrt_inspect_begin_with_options.name(),
            g.sim.inspect_begin_with_options(&options),
        )
    })
}

/// `nrt_inspect_config_get_all_activity_types`.
///
/// # Safety
/// Both pointers are NULL or writable.
pub unsafe extern "C" fn nrt_inspect_config_get_all_activity_types(
    activity_types: *mut *mut *const c_char,
    count: *mut usize,
) -> u32 {
    with_global(F::nrt_inspect_config_get_all_activity_types.name(), |_| {
        if activity_types.is_null() || count.is_null() {
            return INVALID;
        }
        // SAFETY: both checked non-NULL.
        unsafe { put_strings(ACTIVITY_TYPES, activity_types, count) }
    })
}

/// `nrt_inspect_config_get_enabled_activity_types`.
///
/// # Safety
/// Both out-pointers are NULL or writable.
pub unsafe extern "C" fn nrt_inspect_config_get_enabled_activity_types(
    options: *mut c_void,
    activity_types: *mut *mut *const c_char,
    count: *mut usize,
) -> u32 {
    if activity_types.is_null() || count.is_null() {
        return INVALID;
    }
    inspect_set(F::nrt_inspect_config_get_enabled_activity_types, options, |c| {
        let enabled: Vec<&str> =
            ACTIVITY_TYPES.iter().copied().filter(|a| c.activities.contains(a)).collect();
        // SAFETY: both checked non-NULL.
        unsafe { put_strings(&enabled, activity_types, count) }
    })
}

/// `nrt_inspect_config_free_activity_types`.
///
/// # Safety
/// `activity_types` is NULL or an array of `count` strings from this library.
pub unsafe extern "C" fn nrt_inspect_config_free_activity_types(
    activity_types: *mut *const c_char,
    count: usize,
) {
    guard(F::nrt_inspect_config_free_activity_types.name(), (), || {
        free_strings(activity_types, count)
    })
}

/// `nrt_inspect_config_set_activity`: one activity type or `all`; `NRT_INVALID` for another
/// name.
///
/// # Safety
/// `activity_type` is NULL or a C string.
pub unsafe extern "C" fn nrt_inspect_config_set_activity(
    options: *mut c_void,
    activity_type: *const c_char,
    enabled: bool,
) -> u32 {
    // SAFETY: NULL or a C string.
    let activity = unsafe { text(activity_type) };
    inspect_set(F::nrt_inspect_config_set_activity, options, |c| {
        let chosen: Vec<&'static str> = match activity {
            Some("all") => ACTIVITY_TYPES.to_vec(),
            Some(name) => match ACTIVITY_TYPES.iter().find(|known| **known == name) {
                Some(known) => vec![*known],
                None => return INVALID,
            },
            None => return INVALID,
        };
        for activity in chosen {
            if enabled {
                c.activities.insert(activity);
            } else {
                c.activities.remove(activity);
            }
        }
        SUCCESS
    })
}

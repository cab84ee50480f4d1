//! The exports of `nrt_profile.h`: `nrt_profile_*` and `nrt_inspect_*`.
//!
//! Continuous options and inspect configs are option objects ([`crate::options`]); activity
//! type lists handed to the caller are `malloc`ed. Profiles are JSON files in the simulator's
//! documented format (`docs/sim-trace-format.md`): `nrt_profile_stop` writes the launches of the
//! profiled model to the file named at start (or at stop); continuous profiling saves the latest
//! launch of a core into its output folder; inspect profiling records every launch between
//! begin and stop into `<output dir>/nrtsim-inspect-session<ID>.json`.
// These functions are exported to C through `crate::symbols`, not to Rust.
#![allow(unreachable_pub)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;

use abi::functions::LibnrtFunction as F;
use abi::runtime::ModelId;
use abi::runtime::prelude::*;
use sim::sys_trace::ACTIVITY_TYPES;

use super::{c_utf8, guard, with_global};
use crate::ffi::{free_strings, put_strings};
use crate::handles::Kind;
use crate::options::{InspectConfig, Options, allocate, release, with_object};
use crate::status::{FAILURE, INVALID, SUCCESS};

fn continuous(options: &mut Options) -> &mut HashMap<u64, PathBuf> {
    &mut options.continuous
}

fn inspect(options: &mut Options) -> &mut HashMap<u64, InspectConfig> {
    &mut options.inspect
}

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
        let path = unsafe { c_utf8(filename) }.map(PathBuf::from);
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
        let path = unsafe { c_utf8(filename) }.map(PathBuf::from);
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
        let Some(dir) = (unsafe { c_utf8(output_dir) }).filter(|dir| !dir.is_empty()) else {
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
    let dir = unsafe { c_utf8(output_dir) }.filter(|dir| !dir.is_empty()).map(PathBuf::from);
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
    let event_type = unsafe { c_utf8(event_type) };
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
    let activity = unsafe { c_utf8(activity_type) };
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

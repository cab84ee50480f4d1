//! The option objects of `nrt_sys_trace.h` and `nrt_profile.h` (capture configs, fetch options,
//! continuous options, inspect configs), shared by the two headers' exports.
//!
//! Option objects are registry handles like every other handle of this library (a NULL one is
//! `NRT_INVALID`, a freed or foreign one `NRT_INVALID_HANDLE`; the `void` setters ignore both).
//! The objects themselves live in one registry here, by id.

use std::collections::{BTreeSet, HashMap};
use std::ffi::{c_int, c_void};
use std::path::PathBuf;
use std::sync::Mutex;

use abi::functions::LibnrtFunction as F;
use sim::sys_trace::{ACTIVITY_TYPES, CaptureConfig, FetchOptions};

use crate::exports::{guard, with_global};
use crate::handles::{Global, Kind, global, lock};
use crate::status::{INVALID, SUCCESS};

/// The option objects given to C, by id.
#[derive(Default)]
pub(crate) struct Options {
    pub(crate) trace_configs: HashMap<u64, CaptureConfig>,
    pub(crate) fetch_options: HashMap<u64, FetchOptions>,
    pub(crate) continuous: HashMap<u64, PathBuf>,
    pub(crate) inspect: HashMap<u64, InspectConfig>,
    pub(crate) next_id: u64,
}

/// `nrt_inspect_config_t`.
#[derive(Clone)]
pub(crate) struct InspectConfig {
    pub(crate) session_id: c_int,
    pub(crate) output_dir: PathBuf,
    pub(crate) capture: CaptureConfig,
    pub(crate) activities: BTreeSet<&'static str>,
    pub(crate) enable_inspect: bool,
    pub(crate) enable_inspect_on_fail: bool,
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

fn registry() -> &'static Mutex<Options> {
    static OPTIONS: std::sync::OnceLock<Mutex<Options>> = std::sync::OnceLock::new();
    OPTIONS.get_or_init(|| Mutex::new(Options::default()))
}

/// Registers a new option object made by `insert` and writes its handle.
pub(crate) fn allocate(
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
pub(crate) fn with_object<T>(
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
pub(crate) fn set_quietly<T>(
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
pub(crate) fn release<T>(
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

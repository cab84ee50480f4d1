//! The calls of `nrt_profile.h`: profiling one model, continuous profiling and inspect
//! sessions. Option objects libnrt allocates live only inside one method, freed before it
//! returns.
//!
//! Below the calls, `RuntimeProfile` for `NrtRuntime`: the methods of `nrt_profile.h` over them.
#![deny(unsafe_code)]

use std::ffi::{CStr, c_int};
use std::path::Path;
use std::ptr;

use abi::functions::LibnrtFunction;
use abi::runtime::{InspectConfig, ModelId, NrtError, RuntimeProfile};

use crate::NrtRuntime;
use crate::runtime::{c_path, check, optional};

use super::c_names::{nrt_inspect_config_t, nrt_profile_continuous_options_t};
use super::{INVALID, Library, OwnedModel, RawStatus, SUCCESS};

#[allow(unsafe_code)]
impl Library {
    /// `nrt_profile_stop(filename)` (NULL for `None`); `None` when the library lacks it.
    pub(crate) fn profile_stop(&self, filename: Option<&CStr>) -> Option<RawStatus> {
        let stop = self.functions.nrt_profile_stop?;
        // SAFETY: NULL or a NUL-terminated string that outlives the call.
        Some(unsafe { stop(filename.map_or(ptr::null(), CStr::as_ptr)) })
    }

    /// `nrt_profile_continuous_start(NULL)`; `None` when the library lacks it.
    pub(crate) fn profile_continuous_start(&self) -> Option<RawStatus> {
        let start = self.functions.nrt_profile_continuous_start?;
        // SAFETY: NULL options are the library's defaults.
        Some(unsafe { start(ptr::null_mut()) })
    }

    /// `nrt_profile_continuous_options_allocate`, `…_set_output_dir`,
    /// `nrt_profile_continuous_save(vnc, options)`, then `…_options_free`; `None` when the
    /// library lacks one of them.
    pub(crate) fn profile_continuous_save(&self, vnc: u32, output_dir: &CStr) -> Option<RawStatus> {
        let functions = &self.functions;
        let allocate = functions.nrt_profile_continuous_options_allocate?;
        let set_dir = functions.nrt_profile_continuous_options_set_output_dir?;
        let save = functions.nrt_profile_continuous_save?;
        let free = functions.nrt_profile_continuous_options_free?;
        let mut options: *mut nrt_profile_continuous_options_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signatures are the table's.
        let status = unsafe { allocate(&mut options) };
        if status != SUCCESS || options.is_null() {
            return Some(if status == SUCCESS { INVALID } else { status });
        }
        // SAFETY: `options` is the object libnrt allocated, freed once at the end; the folder
        // name is NUL-terminated and outlives the calls.
        let status = unsafe {
            let mut status = set_dir(options, output_dir.as_ptr());
            if status == SUCCESS {
                status = save(vnc, options);
            }
            free(options);
            status
        };
        Some(status)
    }

    /// `nrt_profile_continuous_stop`; `None` when the library lacks it.
    pub(crate) fn profile_continuous_stop(&self) -> Option<RawStatus> {
        let stop = self.functions.nrt_profile_continuous_stop?;
        // SAFETY: no arguments.
        Some(unsafe { stop() })
    }

    /// `nrt_inspect_config_allocate`, the setters asked for, `nrt_inspect_begin_with_options`,
    /// then `nrt_inspect_config_free`; `None` when the library lacks one of them.
    pub(crate) fn inspect_begin_with_options(
        &self,
        session_id: Option<c_int>,
        output_dir: Option<&CStr>,
        enable_inspect: Option<bool>,
        enable_inspect_on_fail: Option<bool>,
    ) -> Option<RawStatus> {
        let functions = &self.functions;
        let allocate = functions.nrt_inspect_config_allocate?;
        let set_session = functions.nrt_inspect_config_set_session_id?;
        let set_dir = functions.nrt_inspect_config_set_output_dir?;
        let set_inspect = functions.nrt_inspect_config_set_enable_inspect?;
        let set_on_fail = functions.nrt_inspect_config_set_enable_inspect_on_fail?;
        let begin = functions.nrt_inspect_begin_with_options?;
        let free = functions.nrt_inspect_config_free?;
        let mut config: *mut nrt_inspect_config_t = ptr::null_mut();
        // SAFETY: a valid out-pointer; the signatures are the table's.
        let status = unsafe { allocate(&mut config) };
        if status != SUCCESS || config.is_null() {
            return Some(if status == SUCCESS { INVALID } else { status });
        }
        // SAFETY: `config` is the object libnrt allocated, freed once at the end; the folder
        // name is NUL-terminated and outlives the calls.
        let status = unsafe {
            let mut status = SUCCESS;
            if let Some(id) = session_id {
                status = set_session(config, id);
            }
            if let (SUCCESS, Some(dir)) = (status, output_dir) {
                status = set_dir(config, dir.as_ptr());
            }
            if let (SUCCESS, Some(on)) = (status, enable_inspect) {
                status = set_inspect(config, on);
            }
            if let (SUCCESS, Some(on)) = (status, enable_inspect_on_fail) {
                status = set_on_fail(config, on);
            }
            if status == SUCCESS {
                status = begin(config);
            }
            free(config);
            status
        };
        Some(status)
    }

    /// `nrt_inspect_stop`; `None` when the library lacks it.
    pub(crate) fn inspect_stop(&self) -> Option<RawStatus> {
        let stop = self.functions.nrt_inspect_stop?;
        // SAFETY: no arguments.
        Some(unsafe { stop() })
    }
}

#[allow(unsafe_code)]
impl OwnedModel {
    /// `nrt_profile_start` of the loaded model with `filename` (NULL for `None`); `None` when
    /// the library does not export it.
    pub(crate) fn profile_start(&self, filename: Option<&CStr>) -> Option<RawStatus> {
        let start = self.library.functions.nrt_profile_start?;
        let live = match self.live() {
            Ok(live) => live,
            Err(status) => return Some(status),
        };
        // SAFETY: the model is loaded (read lock held); the name is NULL or NUL-terminated and
        // outlives the call; the signature is the table's.
        let status =
            unsafe { start(self.model.as_ptr(), filename.map_or(ptr::null(), CStr::as_ptr)) };
        drop(live);
        Some(status)
    }
}

impl RuntimeProfile for NrtRuntime {
    fn profile_start(&self, model: ModelId, filename: Option<&Path>) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_start;
        let filename = filename.map(|path| c_path(function, path)).transpose()?;
        let code =
            optional(function, self.model(model)?.profile_start(filename.as_deref()).map(Ok))?;
        check(function, code)
    }

    fn profile_stop(&self, filename: Option<&Path>) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_stop;
        let filename = filename.map(|path| c_path(function, path)).transpose()?;
        let code = optional(function, self.library.profile_stop(filename.as_deref()).map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_start(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_start;
        let code = optional(function, self.library.profile_continuous_start().map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_save(&self, vnc: u32, output_dir: &Path) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_save;
        let dir = c_path(function, output_dir)?;
        let code = optional(function, self.library.profile_continuous_save(vnc, &dir).map(Ok))?;
        check(function, code)
    }

    fn profile_continuous_stop(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_profile_continuous_stop;
        let code = optional(function, self.library.profile_continuous_stop().map(Ok))?;
        check(function, code)
    }

    fn inspect_begin_with_options(&self, config: &InspectConfig) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_inspect_begin_with_options;
        let dir = config.output_dir.as_deref().map(|dir| c_path(function, dir)).transpose()?;
        let begun = self.library.inspect_begin_with_options(
            config.session_id,
            dir.as_deref(),
            config.enable_inspect,
            config.enable_inspect_on_fail,
        );
        let code = optional(function, begun.map(Ok))?;
        check(function, code)
    }

    fn inspect_stop(&self) -> Result<(), NrtError> {
        let function = LibnrtFunction::nrt_inspect_stop;
        let code = optional(function, self.library.inspect_stop().map(Ok))?;
        check(function, code)
    }
}

/// How the recorder reads the calls of `nrt_profile.h` (see [`super::record`]).
pub(crate) mod recorded {
    use super::super::record::{Read::Nothing, by_name, plans};

    plans! {
        // Recorded by name and status only; a replay does not re-issue them: their arguments
        // are spread over option objects and paths that a line does not carry.
        nrt_profile_start
        | nrt_profile_stop
        | nrt_profile_continuous_options_allocate
        | nrt_profile_continuous_options_free
        | nrt_profile_continuous_options_set_output_dir
        | nrt_profile_continuous_start
        | nrt_profile_continuous_save
        | nrt_profile_continuous_stop
        | nrt_inspect_begin
        | nrt_inspect_stop
        | nrt_inspect_config_allocate
        | nrt_inspect_config_set_defaults
        | nrt_inspect_config_free
        | nrt_inspect_config_set_session_id
        | nrt_inspect_config_set_output_dir
        | nrt_inspect_config_set_sys_trace_max_events_per_nc
        | nrt_inspect_config_set_capture_enabled_for_nc
        | nrt_inspect_config_set_capture_enabled_for_event_type_string
        | nrt_inspect_config_set_enable_inspect
        | nrt_inspect_config_set_enable_inspect_on_fail
        | nrt_inspect_begin_with_options
        | nrt_inspect_config_get_all_activity_types
        | nrt_inspect_config_get_enabled_activity_types
        | nrt_inspect_config_free_activity_types
        | nrt_inspect_config_set_activity => by_name(Nothing),
    }
}

//! The calls of `nrt/nrt_sys_trace.h` on [`NrtRuntime`], through the loaded library.

use abi::functions::LibnrtFunction;
use abi::runtime::{NrtError, RuntimeSysTrace, SysTraceConfig, SysTraceFetch};

use super::{NrtRuntime, c_name, optional};

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

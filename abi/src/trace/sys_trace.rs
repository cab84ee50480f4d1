//! How [`TracingRuntime`] forwards and records the calls of `nrt/nrt_sys_trace.h`.

use super::TracingRuntime;
use crate::functions::LibnrtFunction;
use crate::runtime::{NrtError, RuntimeSysTrace, SysTraceConfig, SysTraceFetch};

impl RuntimeSysTrace for TracingRuntime {
    fn sys_trace_get_event_types(&self) -> Result<Vec<String>, NrtError> {
        let result = self.inner.sys_trace_get_event_types();
        self.sys_trace_line(LibnrtFunction::nrt_sys_trace_get_event_types, String::new(), &result);
        result
    }

    fn sys_trace_start(&self, config: &SysTraceConfig) -> Result<(), NrtError> {
        let result = self.inner.sys_trace_start(config);
        let args = format!(
            "max_events_per_nc {:?}, disabled_ncs {:?}, disabled_event_types {:?}",
            config.max_events_per_nc, config.disabled_ncs, config.disabled_event_types
        );
        self.sys_trace_line(LibnrtFunction::nrt_sys_trace_start, args, &result);
        result
    }

    fn sys_trace_fetch_events(&self, fetch: &SysTraceFetch) -> Result<String, NrtError> {
        let result = self.inner.sys_trace_fetch_events(fetch);
        let args = format!("max_events_per_nc {:?}, nc {:?}", fetch.max_events_per_nc, fetch.nc);
        self.sys_trace_line(LibnrtFunction::nrt_sys_trace_fetch_events, args, &result);
        result
    }

    fn sys_trace_stop(&self) -> Result<(), NrtError> {
        let result = self.inner.sys_trace_stop();
        self.sys_trace_line(LibnrtFunction::nrt_sys_trace_stop, String::new(), &result);
        result
    }
}

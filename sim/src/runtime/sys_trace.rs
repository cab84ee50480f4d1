//! The calls of `nrt/nrt_sys_trace.h` on [`SimRuntime`].

use abi::functions::LibnrtFunction;
use abi::runtime::{NrtError, RuntimeSysTrace, SysTraceConfig, SysTraceFetch};
use abi::status::NrtStatus;

use super::SimRuntime;
use crate::sys_trace::{CaptureConfig, FetchOptions};

impl RuntimeSysTrace for SimRuntime {
    fn sys_trace_get_event_types(&self) -> Result<Vec<String>, NrtError> {
        Ok(crate::sys_trace::EVENT_TYPES.iter().map(|kind| (*kind).to_owned()).collect())
    }

    fn sys_trace_start(&self, config: &SysTraceConfig) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_sys_trace_start)?;
        let mut capture = CaptureConfig::default();
        if let Some(max) = config.max_events_per_nc {
            capture.max_events_per_nc = max;
        }
        capture.disabled_ncs.extend(config.disabled_ncs.iter().copied());
        for kind in &config.disabled_event_types {
            capture
                .set_event_type(kind, false)
                .map_err(|err| NrtError::new(NrtStatus::Invalid, err.to_string()))?;
        }
        self.events
            .start_capture(capture)
            .map_err(|err| NrtError::new(NrtStatus::Invalid, err.to_string()))
    }

    fn sys_trace_fetch_events(&self, fetch: &SysTraceFetch) -> Result<String, NrtError> {
        self.enter(LibnrtFunction::nrt_sys_trace_fetch_events)?;
        let options = FetchOptions { max_events_per_nc: fetch.max_events_per_nc, nc: fetch.nc };
        self.events
            .fetch(&options)
            .map_err(|err| NrtError::new(NrtStatus::Invalid, err.to_string()))
    }

    fn sys_trace_stop(&self) -> Result<(), NrtError> {
        self.enter(LibnrtFunction::nrt_sys_trace_stop)?;
        self.events.stop_capture().map_err(|err| NrtError::new(NrtStatus::Invalid, err.to_string()))
    }
}

//! [`RuntimeSysTrace`]: the methods of `nrt/nrt_sys_trace.h` (system-trace captures). The config
//! and fetch-option objects of the C API are Rust values here ([`SysTraceConfig`],
//! [`SysTraceFetch`]).

// Named by the doc links only.
use super::{NrtError, SysTraceConfig, SysTraceFetch, declare::runtime_trait};
#[cfg(doc)]
use crate::status::NrtStatus;
use crate::trace::format::Untraced;

runtime_trait! {
    /// The functions of `nrt/nrt_sys_trace.h`, one method per call sequence; see
    /// [`Runtime`](super::Runtime).
    pub trait RuntimeSysTrace {
        /// `nrt_sys_trace_get_event_types`: the event types a capture can record.
        ///
        /// # Errors
        /// A library failure, or a library without the function.
        // The event names, like the JSON of a fetch, are the library's own: only the status is
        // traced.
        fn sys_trace_get_event_types(&self) -> Result<Vec<String>, NrtError> as Untraced
            => nrt_sys_trace_get_event_types;

        /// `nrt_sys_trace_config_allocate`, the config setters `config` asks for,
        /// `nrt_sys_trace_start`, then `nrt_sys_trace_config_free`: starts a system-trace capture.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] for an unknown event type or while a capture runs; the lifecycle
        /// statuses.
        fn sys_trace_start(&self, config: &SysTraceConfig) -> Result<(), NrtError>
            => nrt_sys_trace_start;

        /// `nrt_sys_trace_fetch_events` (with fetch options as `fetch` asks), then
        /// `nrt_sys_trace_buffer_free`: removes the captured events and returns them as JSON.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] without a capture; the lifecycle statuses.
        // Only the status is traced, as for the event types.
        fn sys_trace_fetch_events(
            &self,
            fetch: &SysTraceFetch,
        ) -> Result<String, NrtError> as Untraced => nrt_sys_trace_fetch_events;

        /// `nrt_sys_trace_stop`: ends the capture and frees its events.
        ///
        /// # Errors
        /// [`NrtStatus::Invalid`] without a capture; the lifecycle statuses.
        fn sys_trace_stop(&self) -> Result<(), NrtError> => nrt_sys_trace_stop;
    }
}

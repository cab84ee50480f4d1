//! [`TracingRuntime`], the runtime that records every call it forwards, and the one writer of a
//! call line ([`call_text`]), which it and a typed call's line share. Apart from the renaming
//! state and the value writers it uses, which do not depend on it.

use std::sync::Arc;

use super::format::{TraceArg, TraceResult};
use super::{Names, Trace, call_line};
use crate::functions::LibnrtFunction;
use crate::runtime::{NrtError, Runtime};

/// A [`Runtime`] that forwards every call to another and records it in a [`Trace`].
pub struct TracingRuntime {
    inner: Arc<dyn Runtime>,
    trace: Arc<Trace>,
}

impl std::fmt::Debug for TracingRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracingRuntime").finish_non_exhaustive()
    }
}

impl TracingRuntime {
    /// Wraps `inner`; every call is recorded in `trace`.
    pub fn new(inner: Arc<dyn Runtime>, trace: Arc<Trace>) -> TracingRuntime {
        TracingRuntime { inner, trace }
    }

    /// The trace calls are recorded in.
    pub fn trace(&self) -> &Arc<Trace> {
        &self.trace
    }

    /// The wrapped runtime.
    pub fn inner(&self) -> &Arc<dyn Runtime> {
        &self.inner
    }

    /// Records `name(args) -> RESULT` for a call that returned `outcome`, as [`call_text`]
    /// writes it.
    pub(crate) fn record_call(
        &self,
        function: LibnrtFunction,
        args: &[&dyn TraceArg],
        outcome: Result<&dyn TraceResult, &NrtError>,
    ) {
        self.trace.record_with(|names| call_text(names, function, args, Some(outcome)));
    }

    /// Records `name(args)` for a call without a result (`close()`).
    pub(crate) fn record_call_without_result(
        &self,
        function: LibnrtFunction,
        args: &[&dyn TraceArg],
    ) {
        self.trace.record_with(|names| call_text(names, function, args, None));
    }
}

/// The one writer of a call line, for [`TracingRuntime`] and for a typed call
/// ([`TypedCall::trace_line`](crate::runtime::call::TypedCall::trace_line), which the recorder
/// writes through): `name(args) -> RESULT`, the value of a success as [`TraceResult`] writes it
/// then the status, a failure's status alone; `name(args)` for a call without a result.
pub(crate) fn call_text(
    names: &mut Names<'_>,
    function: LibnrtFunction,
    args: &[&dyn TraceArg],
    outcome: Option<Result<&dyn TraceResult, &NrtError>>,
) -> String {
    let args = call_args(names, args);
    let result = outcome.map(|outcome| match outcome {
        Ok(value) => {
            let status = value.status().name();
            match value.shown(names) {
                Some(shown) => format!("{shown} {status}"),
                None => status,
            }
        }
        Err(error) => error.status.name(),
    });
    call_line(function.trace_name(), &args, result.as_deref())
}

/// The arguments of a call line, separated by `, `, with handles named left to right.
fn call_args(names: &mut Names<'_>, args: &[&dyn TraceArg]) -> String {
    let mut pieces = Vec::with_capacity(args.len());
    for arg in args {
        arg.trace_arg(names, &mut pieces);
    }
    pieces.join(", ")
}

//! The [`TracingRuntime`] methods whose line no declaration can describe, each named as its
//! method; a declaration marks them `=> by_hand;` (see `runtime/declare.rs`).

use super::TracingRuntime;
use super::format::{Opaque, TraceResult};
use crate::functions::LibnrtFunction;
use crate::runtime::NrtError;

/// `profile_continuous_start(NULL)`: the method takes no options, but the C call it stands for
/// passes NULL for them, and the line shows that argument.
pub(crate) fn profile_continuous_start(tracing: &TracingRuntime) -> Result<(), NrtError> {
    let result = tracing.inner().profile_continuous_start();
    let outcome = result.as_ref().map(|value| value as &dyn TraceResult);
    tracing.record_call(LibnrtFunction::nrt_profile_continuous_start, &[&Opaque("NULL")], outcome);
    result
}

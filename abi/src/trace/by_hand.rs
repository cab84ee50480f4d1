//! The arguments of the lines no declaration can describe, each named as its method; a
//! declaration marks them `=> function, by_hand;` (see `runtime/declare.rs`), and both the
//! [`TracingRuntime`](super::TracingRuntime) method and the typed call's line write them.

#![allow(non_upper_case_globals)]

use super::format::{Opaque, TraceArg};

/// `profile_continuous_start(NULL)`: the method takes no options, but the C call it stands for
/// passes NULL for them, and the line shows that argument.
pub(crate) const profile_continuous_start: &[&dyn TraceArg] = &[&Opaque("NULL")];

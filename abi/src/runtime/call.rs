//! [`Call`]: one libnrt call as a value, one variant per function of the table.
//!
//! The variants are derived, not written: each `runtime_trait!` declaration gives, beside its
//! trait, a struct per method named for its libnrt function (`calls::nrt_tensor_memset`) whose
//! fields are the method's arguments in owned form, and [`Call`] is expanded from the function
//! table with one variant per function, holding that struct. A function with no method (the
//! option objects of the profiling and trace APIs, the send/receive and debug-stream headers, a
//! few helpers) is listed once, in [`no_method`], and its variant holds [`NoMethod`], which has
//! no value. So every function of the table is a variant, and a function that is neither a
//! method nor in that list is a compile error here.
//!
//! A typed call does what the layers that handle calls by function would otherwise each do by
//! hand:
//! - [`Call::parse`] reads the arguments of a recorded line back into the call, argument by
//!   argument, through each argument type's [`CallArg`] (the inverse of its trace form), with
//!   handles and kept byte strings found through a [`Resolve`];
//! - [`Call::issue`] makes the call on any [`Runtime`] and says what it gave ([`Issued`]);
//! - [`TypedCall::trace_line`] writes the call's trace line for a given output, with the writer
//!   `TracingRuntime` uses, so a call made elsewhere (the recorder sees them in C) is traced as
//!   the same call made through [`TracingRuntime`](crate::trace::TracingRuntime).
//!
//! `conformance::replay` is the first two in a loop, and the vectors' `libnrt` step is one of
//! them; neither holds a list of functions.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::{
    AsyncReadBuffer, ExternalBuffer, Framework, InspectConfig, InstanceInfo, ModelId, NrtError,
    NrtVersion, Placement, Runtime, SeqId, SetId, SharedBuffer, SysTraceConfig, SysTraceFetch,
    TensorId, TensorInfo, TensorReadBatch, TensorWriteBatch, TrackerId, VncMemoryStats,
};
use crate::functions::LibnrtFunction;
use crate::status::NrtStatus;
use crate::trace::format::{TraceArg, TraceResult};
use crate::trace::parse::{ParseError, parse_buffer, parse_bytes, parse_name};
use crate::trace::{INLINE_BYTES, Names, format_bytes, framework_name, placement_name};

/// Why a recorded call's arguments cannot be read back into a [`Call`].
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// An argument that does not read as its type's trace form, or the wrong number of them.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// A handle or a byte string the [`Resolve`] could not give.
    #[error(transparent)]
    Resolve(Box<dyn std::error::Error + Send + Sync>),
}

/// Where a call's handles and long byte strings come from when it is read back: the handles an
/// earlier call made, by their trace name (`t1`), and bytes kept beside a recording.
pub trait Resolve {
    /// The tensor named `name`.
    ///
    /// # Errors
    /// A name the resolver cannot stand a tensor for.
    fn tensor(&mut self, name: &str) -> Result<TensorId, CallError>;
    /// The tensor set named `name`.
    ///
    /// # Errors
    /// As [`Resolve::tensor`].
    fn set(&mut self, name: &str) -> Result<SetId, CallError>;
    /// The model named `name`.
    ///
    /// # Errors
    /// As [`Resolve::tensor`].
    fn model(&mut self, name: &str) -> Result<ModelId, CallError>;
    /// The async request named `name`.
    ///
    /// # Errors
    /// As [`Resolve::tensor`].
    fn seq(&mut self, name: &str) -> Result<SeqId, CallError>;
    /// The error tracker named `name`.
    ///
    /// # Errors
    /// As [`Resolve::tensor`].
    fn tracker(&mut self, name: &str) -> Result<TrackerId, CallError>;
    /// The bytes a byte-string argument stands for (`[00 ff]` or `<N bytes sha256:…>`).
    ///
    /// # Errors
    /// Bytes that are not there, or not the ones recorded.
    fn bytes(&mut self, text: &str) -> Result<Vec<u8>, CallError>;
}

/// The argument texts of one recorded call, read front to back.
#[derive(Debug)]
pub struct ArgTexts<'a> {
    function: LibnrtFunction,
    line: usize,
    texts: &'a [String],
    next: usize,
}

impl<'a> ArgTexts<'a> {
    /// The arguments of a call of `function` on line `line`.
    pub fn new(function: LibnrtFunction, line: usize, texts: &'a [String]) -> ArgTexts<'a> {
        ArgTexts { function, line, texts, next: 0 }
    }

    /// The line the arguments are on.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The next argument; `None` past the last.
    fn next_text(&mut self) -> Option<&'a str> {
        let text = self.texts.get(self.next)?;
        self.next += 1;
        Some(text)
    }

    /// Whether every argument was read.
    fn is_done(&self) -> bool {
        self.next == self.texts.len()
    }

    fn syntax(&self, expected: &'static str, found: &str) -> CallError {
        CallError::Parse(ParseError::Syntax { line: self.line, expected, found: found.into() })
    }

    /// The error of a call with more or fewer arguments than its method takes.
    fn count_error(&self) -> CallError {
        let found = format!("{}({})", self.function.trace_name(), self.texts.join(", "));
        CallError::Parse(ParseError::Syntax {
            line: self.line,
            expected: "the recorded number of arguments",
            found,
        })
    }
}

/// A type a method takes, as a [`Call`] holds it and as a recorded line gives it back.
///
/// Implemented for `fn(T)`, where `T` is the argument type as the method declares it: a
/// function pointer gives any borrowed type (`&[u8]`) a name without a lifetime, so the
/// declaration's own type picks the implementation. A type with no implementation here is a
/// compile error in the declaration.
pub trait CallArg {
    /// The argument as a call holds it (`Vec<u8>` for `&[u8]`).
    type Owned;
    /// The argument as the method takes it.
    type Arg<'a>
    where
        Self::Owned: 'a;

    /// The argument the method takes, from the one held.
    fn lend(owned: &mut Self::Owned) -> Self::Arg<'_>;

    /// Reads the argument from the recorded texts, taking as many as its trace form writes.
    ///
    /// # Errors
    /// A text that does not read as the type's trace form, a missing text, or a handle or byte
    /// string `resolve` cannot give.
    fn parse(args: &mut ArgTexts<'_>, resolve: &mut dyn Resolve) -> Result<Self::Owned, CallError>;
}

/// The next text, or the error of a call with too few arguments.
fn next<'a>(args: &mut ArgTexts<'a>) -> Result<&'a str, CallError> {
    args.next_text().ok_or_else(|| args.count_error())
}

/// Numbers are written as Rust prints them.
macro_rules! number_args {
    ($($ty:ty),*) => {$(
        impl CallArg for fn($ty) {
            type Owned = $ty;
            type Arg<'a> = $ty;

            fn lend(owned: &mut $ty) -> $ty {
                *owned
            }

            fn parse(args: &mut ArgTexts<'_>, _: &mut dyn Resolve) -> Result<$ty, CallError> {
                let text = next(args)?;
                text.parse().map_err(|_| args.syntax("a number", text))
            }
        }
    )*};
}

number_args!(bool, i32, u32, i64, u64, usize);

/// Handles are found by their trace name.
macro_rules! handle_args {
    ($($ty:ty => $kind:ident),*) => {$(
        impl CallArg for fn($ty) {
            type Owned = $ty;
            type Arg<'a> = $ty;

            fn lend(owned: &mut $ty) -> $ty {
                *owned
            }

            fn parse(args: &mut ArgTexts<'_>, resolve: &mut dyn Resolve) -> Result<$ty, CallError> {
                resolve.$kind(next(args)?)
            }
        }
    )*};
}

handle_args!(
    TensorId => tensor, SetId => set, ModelId => model, SeqId => seq, TrackerId => tracker
);

/// An optional tracker: `-` for none.
impl CallArg for fn(Option<TrackerId>) {
    type Owned = Option<TrackerId>;
    type Arg<'a> = Option<TrackerId>;

    fn lend(owned: &mut Option<TrackerId>) -> Option<TrackerId> {
        *owned
    }

    fn parse(
        args: &mut ArgTexts<'_>,
        resolve: &mut dyn Resolve,
    ) -> Result<Option<TrackerId>, CallError> {
        match next(args)? {
            "-" => Ok(None),
            text => resolve.tracker(text).map(Some),
        }
    }
}

/// A framework by its C name; a name outside the enum is [`Framework::Invalid`], as a call
/// with an unknown code is.
impl CallArg for fn(Framework) {
    type Owned = Framework;
    type Arg<'a> = Framework;

    fn lend(owned: &mut Framework) -> Framework {
        *owned
    }

    fn parse(args: &mut ArgTexts<'_>, _: &mut dyn Resolve) -> Result<Framework, CallError> {
        let text = next(args)?;
        Ok(Framework::ALL
            .iter()
            .copied()
            .find(|&framework| framework_name(framework) == text)
            .unwrap_or(Framework::Invalid))
    }
}

/// A placement by its C name.
impl CallArg for fn(Placement) {
    type Owned = Placement;
    type Arg<'a> = Placement;

    fn lend(owned: &mut Placement) -> Placement {
        *owned
    }

    fn parse(args: &mut ArgTexts<'_>, _: &mut dyn Resolve) -> Result<Placement, CallError> {
        let text = next(args)?;
        Placement::ALL
            .iter()
            .copied()
            .find(|&placement| placement_name(placement) == text)
            .ok_or_else(|| args.syntax("a placement (DEVICE, HOST, VIRTUAL)", text))
    }
}

/// Bytes a call takes (a NEFF, a write, a name), as a call holds them. Their trace form (a
/// digest for long ones, see [`format_bytes`]) is computed once however often it is asked for:
/// the recorder keeps long inputs beside the recording under that digest, then writes it in
/// the line.
#[derive(Debug, Default)]
pub struct CallBytes {
    bytes: Vec<u8>,
    shown: OnceLock<String>,
}

impl CallBytes {
    /// The bytes as a byte-string argument shows them: `[00 ff]`, or `<N bytes sha256:…>`.
    pub fn shown(&self) -> &str {
        self.shown.get_or_init(|| format_bytes(&self.bytes))
    }

    /// Bytes seen in memory the caller owns, for a call that is written, never issued (the
    /// recorder's): short ones, which the line shows whole, are copied; a long one keeps only its
    /// trace form, so recording a large NEFF or write costs no copy of it and no allocation that
    /// could fail. Such a long one reads as no bytes.
    pub fn seen(bytes: &[u8]) -> CallBytes {
        if bytes.len() <= INLINE_BYTES {
            return CallBytes::from(bytes.to_vec());
        }
        CallBytes { bytes: Vec::new(), shown: OnceLock::from(format_bytes(bytes)) }
    }
}

impl From<Vec<u8>> for CallBytes {
    fn from(bytes: Vec<u8>) -> CallBytes {
        CallBytes { bytes, shown: OnceLock::new() }
    }
}

impl std::ops::Deref for CallBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

/// Bytes, in either form the trace gives them: a name (`"input0"`, `b"i\xff"`) or a byte
/// string (`[00 ff]`, `<N bytes sha256:…>`); the two never look alike.
impl CallArg for fn(&[u8]) {
    type Owned = CallBytes;
    type Arg<'a> = &'a [u8];

    fn lend(owned: &mut CallBytes) -> &[u8] {
        owned
    }

    fn parse(args: &mut ArgTexts<'_>, resolve: &mut dyn Resolve) -> Result<CallBytes, CallError> {
        let text = next(args)?;
        if text.starts_with('"') || text.starts_with("b\"") {
            return Ok(parse_name(args.line(), text)?.into());
        }
        parse_bytes(args.line(), text)?;
        resolve.bytes(text).map(CallBytes::from)
    }
}

/// Written as the bytes it holds, as `&[u8]` is.
impl TraceArg for CallBytes {
    fn trace_arg(&self, _: &mut Names<'_>, args: &mut Vec<String>) {
        args.push(self.shown().to_owned());
    }
}

/// A buffer a call reads into, as a call holds it: its length (what the line shows as the
/// argument) and, once read, the bytes (what it shows as the result).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadBuffer {
    len: usize,
    bytes: Vec<u8>,
}

impl ReadBuffer {
    /// `len` zero bytes to read into.
    ///
    /// # Errors
    /// When `len` bytes cannot be allocated.
    pub fn zeroed(len: usize) -> Result<ReadBuffer, std::collections::TryReserveError> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(len)?;
        bytes.resize(len, 0);
        Ok(ReadBuffer { len, bytes })
    }

    /// The bytes a read gave.
    pub fn read(bytes: Vec<u8>) -> ReadBuffer {
        ReadBuffer { len: bytes.len(), bytes }
    }

    /// A buffer of `len` bytes whose content is not known (a read that failed), never
    /// allocated.
    pub fn unread(len: usize) -> ReadBuffer {
        ReadBuffer { len, bytes: Vec::new() }
    }

    /// The length asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the length is 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes (none for [`ReadBuffer::unread`]).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// The bytes a typed call's read gave.
impl TraceResult for ReadBuffer {
    fn shown(&self, names: &mut Names<'_>) -> Option<String> {
        self.bytes().shown(names)
    }
}

/// A buffer to read into, traced as its length: that many zero bytes.
impl CallArg for fn(&mut [u8]) {
    type Owned = ReadBuffer;
    type Arg<'a> = &'a mut [u8];

    fn lend(owned: &mut ReadBuffer) -> &mut [u8] {
        owned.bytes.resize(owned.len, 0);
        &mut owned.bytes
    }

    fn parse(args: &mut ArgTexts<'_>, _: &mut dyn Resolve) -> Result<ReadBuffer, CallError> {
        let text = next(args)?;
        let size: usize = text.parse().map_err(|_| args.syntax("a number", text))?;
        ReadBuffer::zeroed(size).map_err(|_| args.syntax("a size that can be allocated", text))
    }
}

/// A version string, read as a name is (quoted).
impl CallArg for fn(&str) {
    type Owned = String;
    type Arg<'a> = &'a str;

    fn lend(owned: &mut String) -> &str {
        owned
    }

    fn parse(args: &mut ArgTexts<'_>, _: &mut dyn Resolve) -> Result<String, CallError> {
        let text = next(args)?;
        Ok(String::from_utf8_lossy(&parse_name(args.line(), text)?).into_owned())
    }
}

/// A caller-owned buffer, traced as its size: a zeroed [`SharedBuffer`] of that size.
impl CallArg for fn(Arc<dyn ExternalBuffer>) {
    type Owned = Arc<dyn ExternalBuffer>;
    type Arg<'a> = Arc<dyn ExternalBuffer>;

    fn lend(owned: &mut Arc<dyn ExternalBuffer>) -> Arc<dyn ExternalBuffer> {
        Arc::clone(owned)
    }

    fn parse(
        args: &mut ArgTexts<'_>,
        _: &mut dyn Resolve,
    ) -> Result<Arc<dyn ExternalBuffer>, CallError> {
        let size = parse_buffer(args.line(), next(args)?)?;
        Ok(Arc::new(SharedBuffer::zeroed(size)))
    }
}

/// Where an async read delivers its bytes: not traced, so a fresh buffer, from no text.
impl CallArg for fn(Arc<AsyncReadBuffer>) {
    type Owned = Arc<AsyncReadBuffer>;
    type Arg<'a> = Arc<AsyncReadBuffer>;

    fn lend(owned: &mut Arc<AsyncReadBuffer>) -> Arc<AsyncReadBuffer> {
        Arc::clone(owned)
    }

    fn parse(
        args: &mut ArgTexts<'_>,
        _: &mut dyn Resolve,
    ) -> Result<Arc<AsyncReadBuffer>, CallError> {
        let _ = args;
        Ok(Arc::new(AsyncReadBuffer::new()))
    }
}

/// Arguments whose trace form drops what the call needs (paths are `<path>`, settings and
/// batches are not recorded): held and issued, but never read back.
macro_rules! unreadable_args {
    ($($referent:ty => $owned:ty, $what:literal;)*) => {$(
        impl CallArg for fn(&$referent) {
            type Owned = $owned;
            type Arg<'a> = &'a $referent;

            fn lend(owned: &mut $owned) -> &$referent {
                owned
            }

            fn parse(args: &mut ArgTexts<'_>, _: &mut dyn Resolve) -> Result<$owned, CallError> {
                let text = next(args)?;
                Err(args.syntax($what, text))
            }
        }
    )*};
}

unreadable_args! {
    Path => PathBuf, "a path (traced as <path>, so the call cannot be re-issued)";
    InspectConfig => InspectConfig,
        "an inspect config (not recorded, so the call cannot be re-issued)";
    SysTraceConfig => SysTraceConfig,
        "a system-trace config (not recorded, so the call cannot be re-issued)";
    SysTraceFetch => SysTraceFetch,
        "system-trace fetch options (not recorded, so the call cannot be re-issued)";
    [TensorReadBatch] => Vec<TensorReadBatch>,
        "read batches (not recorded, so the call cannot be re-issued)";
    [TensorWriteBatch] => Vec<TensorWriteBatch>,
        "write batches (not recorded, so the call cannot be re-issued)";
}

/// An optional path: as a path, never read back.
impl CallArg for fn(Option<&Path>) {
    type Owned = Option<PathBuf>;
    type Arg<'a> = Option<&'a Path>;

    fn lend(owned: &mut Option<PathBuf>) -> Option<&Path> {
        owned.as_deref()
    }

    fn parse(args: &mut ArgTexts<'_>, _: &mut dyn Resolve) -> Result<Option<PathBuf>, CallError> {
        let text = next(args)?;
        Err(args.syntax("a path (traced as <path>, so the call cannot be re-issued)", text))
    }
}

/// A handle a call made, to be known by the name its line gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadeHandle {
    /// A tensor.
    Tensor(TensorId),
    /// A tensor set.
    Set(SetId),
    /// A model.
    Model(ModelId),
    /// An async request.
    Seq(SeqId),
    /// An error tracker.
    Tracker(TrackerId),
}

/// What an issued call gave, as far as a replay needs it.
#[derive(Debug, Default)]
pub struct Issued {
    /// The handle it made, when it made one.
    pub made: Option<MadeHandle>,
    /// Its failure.
    pub error: Option<NrtError>,
}

/// A value a method returns, by whether it is a handle the call made.
pub trait Made {
    /// The handle, for the handle types; `None` for every other value.
    fn made(&self) -> Option<MadeHandle>;
}

macro_rules! made_handles {
    ($($ty:ty => $variant:ident),*) => {$(
        impl Made for $ty {
            fn made(&self) -> Option<MadeHandle> {
                Some(MadeHandle::$variant(*self))
            }
        }
    )*};
}

made_handles!(
    TensorId => Tensor, SetId => Set, ModelId => Model, SeqId => Seq, TrackerId => Tracker
);

macro_rules! made_nothing {
    ($($ty:ty),*) => {$(
        impl Made for $ty {
            fn made(&self) -> Option<MadeHandle> {
                None
            }
        }
    )*};
}

made_nothing!(
    (),
    (usize, usize),
    bool,
    i32,
    u32,
    usize,
    String,
    InstanceInfo,
    NrtStatus,
    NrtVersion,
    OwnedFd,
    VncMemoryStats,
    Vec<u8>,
    Vec<Vec<u8>>,
    Vec<String>,
    Vec<TensorInfo>,
    Vec<(SeqId, NrtStatus)>
);

/// What a method returns, as an [`Issued`].
pub trait CallOutput {
    /// The handle made and the failure.
    fn issued(self) -> Issued;
}

/// A method without a result (`close`).
impl CallOutput for () {
    fn issued(self) -> Issued {
        Issued::default()
    }
}

impl<T: Made> CallOutput for Result<T, NrtError> {
    fn issued(self) -> Issued {
        match self {
            Ok(value) => Issued { made: value.made(), error: None },
            Err(error) => Issued { made: None, error: Some(error) },
        }
    }
}

/// What every function's struct does: read back, and issue.
pub trait TypedCall: Sized {
    /// What the method returns.
    type Output: CallOutput;

    /// Reads the call back from its recorded arguments; `None` for a function with no method.
    ///
    /// # Errors
    /// As [`CallArg::parse`].
    fn parse(args: &mut ArgTexts<'_>, resolve: &mut dyn Resolve)
    -> Result<Option<Self>, CallError>;

    /// Makes the call.
    fn issue(self, runtime: &dyn Runtime) -> Self::Output;

    /// The trace line of the call that gave `output`, exactly as
    /// [`TracingRuntime`](crate::trace::TracingRuntime) writes it for the same call (one writer
    /// serves both), with handles named through `names`; `None` for a call that is not traced.
    fn trace_line(&self, output: &Self::Output, names: &mut Names<'_>) -> Option<String>;
}

/// The call of a function with no [`Runtime`] method: there is none.
#[derive(Debug)]
pub enum NoMethod {}

impl TypedCall for NoMethod {
    type Output = ();

    fn parse(_: &mut ArgTexts<'_>, _: &mut dyn Resolve) -> Result<Option<NoMethod>, CallError> {
        Ok(None)
    }

    fn issue(self, _: &dyn Runtime) {
        match self {}
    }

    fn trace_line(&self, _: &(), _: &mut Names<'_>) -> Option<String> {
        match *self {}
    }
}

/// The functions of the table with no [`Runtime`] method, each the name of [`NoMethod`]: the
/// option objects of the profiling and trace APIs (a method takes the settings whole), the
/// headers a simulator does not model (send/receive, the debug stream), and helpers with
/// nothing to run (`nrt_get_status_as_str` is [`NrtStatus::identifier`]).
///
/// A function both here and declared as a method is an ambiguous name in [`calls`], a compile
/// error where [`Call`] is expanded.
pub mod no_method {
    #![allow(non_camel_case_types)]

    macro_rules! no_method {
        ($($function:ident,)*) => {$(
            #[doc = concat!("`", stringify!($function), "`: no method.")]
            pub type $function = super::NoMethod;
        )*};
    }

    no_method! {
        // nrt.h
        nrt_tensor_get_device_allocation_info,
        nrt_host_device_id_get,
        nrt_host_device_id_rid_map_get,
        // nrt_experimental.h
        nrt_free_model_tensor_info,
        nrt_get_libnccl_net,
        nrt_set_pool_eng_ucode,
        nrt_register_async_exec_callback,
        // nrt_async.h
        nrta_tensor_copy,
        nrta_cc_prepare,
        nrta_cc_schedule,
        nrta_get_sequence,
        // nrt_profile.h
        nrt_profile_continuous_options_allocate,
        nrt_profile_continuous_options_free,
        nrt_profile_continuous_options_set_output_dir,
        nrt_inspect_begin,
        nrt_inspect_config_allocate,
        nrt_inspect_config_set_defaults,
        nrt_inspect_config_free,
        nrt_inspect_config_set_session_id,
        nrt_inspect_config_set_output_dir,
        nrt_inspect_config_set_sys_trace_max_events_per_nc,
        nrt_inspect_config_set_capture_enabled_for_nc,
        nrt_inspect_config_set_capture_enabled_for_event_type_string,
        nrt_inspect_config_set_enable_inspect,
        nrt_inspect_config_set_enable_inspect_on_fail,
        nrt_inspect_config_get_all_activity_types,
        nrt_inspect_config_get_enabled_activity_types,
        nrt_inspect_config_free_activity_types,
        nrt_inspect_config_set_activity,
        // nrt_sys_trace.h
        nrt_sys_trace_config_allocate,
        nrt_sys_trace_config_set_defaults,
        nrt_sys_trace_config_free,
        nrt_sys_trace_config_set_max_events_per_nc,
        nrt_sys_trace_config_set_capture_enabled_for_nc,
        nrt_sys_trace_config_set_capture_enabled_for_event_type,
        nrt_sys_trace_free_event_types,
        nrt_sys_trace_config_get_enabled_event_types,
        nrt_sys_trace_fetch_options_allocate,
        nrt_sys_trace_fetch_options_set_defaults,
        nrt_sys_trace_fetch_options_free,
        nrt_sys_trace_fetch_options_set_max_events_per_nc,
        nrt_sys_trace_fetch_options_set_nc_idx,
        nrt_sys_trace_buffer_free,
        // nrt_async_sendrecv.h
        nrt_async_sendrecv_get_max_num_communicators_per_lnc,
        nrt_async_sendrecv_get_max_num_pending_request,
        nrt_async_sendrecv_init,
        nrt_async_sendrecv_close,
        nrt_async_sendrecv_connect,
        nrt_async_sendrecv_accept,
        nrt_async_sendrecv_test_comm,
        nrt_async_sendrecv_send_tensor,
        nrt_async_sendrecv_recv_tensor,
        nrt_async_sendrecv_test_request,
        nrt_async_sendrecv_flush,
        // ndebug_stream.h
        nrt_debug_client_connect,
        nrt_debug_client_connect_close,
        nrt_debug_client_read_one_event,
        // nrt_status.h
        nrt_get_status_as_str,
    }
}

/// Every function's call type, by the function's name: the declared methods' structs and the
/// [`no_method`] names.
pub mod calls {
    pub use super::super::async_exec::calls::*;
    pub use super::super::experimental::calls::*;
    pub use super::super::nrt::calls::*;
    pub use super::super::profile::calls::*;
    pub use super::super::sys_trace::calls::*;
    pub use super::no_method::*;
}

macro_rules! define_call {
    ($(
        $name:ident = $header:ident [$pre:ident, $fault:ident, $avail:ident]
            fn($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?;
    )*) => {
        /// One libnrt call: a variant per function of the table, holding its arguments.
        #[allow(non_camel_case_types)]
        pub enum Call {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                $name(calls::$name),
            )*
        }

        impl Call {
            /// The function called.
            pub fn function(&self) -> LibnrtFunction {
                match self {
                    $(Call::$name(_) => LibnrtFunction::$name,)*
                }
            }

            /// Reads a call of `function` back from the argument texts of its recorded line;
            /// `None` for a function with no [`Runtime`] method.
            ///
            /// # Errors
            /// [`CallError::Parse`] for an argument that does not read, or more or fewer
            /// arguments than the method takes; [`CallError::Resolve`] for a handle or byte
            /// string `resolve` cannot give.
            pub fn parse(
                function: LibnrtFunction,
                line: usize,
                args: &[String],
                resolve: &mut dyn Resolve,
            ) -> Result<Option<Call>, CallError> {
                let mut texts = ArgTexts::new(function, line, args);
                let call = match function {
                    $(LibnrtFunction::$name => {
                        <calls::$name as TypedCall>::parse(&mut texts, resolve)?.map(Call::$name)
                    })*
                };
                if call.is_some() && !texts.is_done() {
                    return Err(texts.count_error());
                }
                Ok(call)
            }

            /// Makes the call on `runtime`.
            pub fn issue(self, runtime: &dyn Runtime) -> Issued {
                match self {
                    $(Call::$name(call) => TypedCall::issue(call, runtime).issued(),)*
                }
            }
        }
    };
}

crate::for_each_libnrt_function!(define_call);

#[cfg(test)]
mod tests {
    use super::*;

    /// Handles named `t1`, `s1`… stand for the number after the letter; bytes must be inline.
    struct ByNumber;

    fn number(name: &str) -> Result<u64, CallError> {
        name.get(1..)
            .and_then(|digits| digits.parse().ok())
            .ok_or_else(|| CallError::Resolve(format!("no handle {name:?}").into()))
    }

    impl Resolve for ByNumber {
        fn tensor(&mut self, name: &str) -> Result<TensorId, CallError> {
            number(name).map(TensorId)
        }
        fn set(&mut self, name: &str) -> Result<SetId, CallError> {
            number(name).map(SetId)
        }
        fn model(&mut self, name: &str) -> Result<ModelId, CallError> {
            number(name).map(ModelId)
        }
        fn seq(&mut self, name: &str) -> Result<SeqId, CallError> {
            number(name).map(SeqId)
        }
        fn tracker(&mut self, name: &str) -> Result<TrackerId, CallError> {
            number(name).map(TrackerId)
        }
        fn bytes(&mut self, text: &str) -> Result<Vec<u8>, CallError> {
            match parse_bytes(1, text)? {
                crate::trace::parse::Bytes::Inline(bytes) => Ok(bytes),
                crate::trace::parse::Bytes::Digest { .. } => {
                    Err(CallError::Resolve("not kept".into()))
                }
            }
        }
    }

    fn parse(function: LibnrtFunction, args: &[&str]) -> Result<Option<Call>, CallError> {
        let args: Vec<String> = args.iter().map(|&arg| arg.to_owned()).collect();
        Call::parse(function, 7, &args, &mut ByNumber)
    }

    #[test]
    fn every_function_reads_back_to_its_own_variant_or_has_no_method() {
        let mut without_method = Vec::new();
        for &function in LibnrtFunction::ALL {
            // No arguments: a call of a method without any, or the count error of one with some.
            match parse(function, &[]) {
                Ok(Some(call)) => assert_eq!(call.function(), function),
                Ok(None) => without_method.push(function.name()),
                Err(CallError::Parse(ParseError::Syntax { expected, found, .. })) => {
                    assert_eq!(expected, "the recorded number of arguments", "{function}");
                    assert_eq!(found, format!("{}()", function.trace_name()));
                }
                Err(error) => panic!("{function}: {error}"),
            }
        }
        // The declared methods and `no_method` cover the table once each (a function in both is
        // a compile error, one in neither too).
        assert_eq!(LibnrtFunction::ALL.len() - without_method.len(), 68);
        assert!(without_method.contains(&"nrt_get_status_as_str"), "{without_method:?}");
        assert!(!without_method.contains(&"nrt_tensor_memset"), "{without_method:?}");
    }

    #[test]
    fn a_recorded_call_reads_back_into_its_typed_arguments() {
        let Ok(Some(Call::nrt_tensor_memset(call))) =
            parse(LibnrtFunction::nrt_tensor_memset, &["t3", "4", "255", "8"])
        else {
            panic!("not a memset");
        };
        assert_eq!((call.tensor, call.offset, call.value, call.size), (TensorId(3), 4, 255, 8));
        let Ok(Some(Call::nrt_tensor_allocate(call))) =
            parse(LibnrtFunction::nrt_tensor_allocate, &["HOST", "0", "16", r#"b"i\xff""#])
        else {
            panic!("not an allocation");
        };
        assert_eq!((call.placement, call.size, &*call.name), (Placement::Host, 16, &b"i\xff"[..]));
        let Ok(Some(Call::nrta_tensor_write(call))) =
            parse(LibnrtFunction::nrta_tensor_write, &["t1", "0", "[00 ff]", "2", "-"])
        else {
            panic!("not an async write");
        };
        assert_eq!((&*call.bytes, call.tracker), (&[0, 0xff][..], None));
    }

    #[test]
    fn a_call_with_the_wrong_arguments_is_refused_with_the_line() {
        let message = |function, args: &[&str]| match parse(function, args) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("{function} read back from {args:?}"),
        };
        assert_eq!(
            message(LibnrtFunction::nrt_unload, &["m1", "2"]),
            r#"line 7: expected the recorded number of arguments, found "unload(m1, 2)""#
        );
        assert_eq!(
            message(LibnrtFunction::nrt_tensor_memset, &["t1", "x", "0", "4"]),
            r#"line 7: expected a number, found "x""#
        );
        assert_eq!(
            message(LibnrtFunction::nrt_tensor_allocate, &["DISK", "0", "4", r#""t""#]),
            r#"line 7: expected a placement (DEVICE, HOST, VIRTUAL), found "DISK""#
        );
        assert_eq!(
            message(LibnrtFunction::nrt_profile_stop, &["<path>"]),
            r#"line 7: expected a path (traced as <path>, so the call cannot be re-issued), found "<path>""#
        );
        assert_eq!(message(LibnrtFunction::nrt_tensor_free, &["x"]), r#"no handle "x""#);
    }

    /// The line each typed call writes for `output`, in one trace (handles named across lines).
    fn lines(write: impl FnOnce(&mut Vec<Option<String>>, &mut Names<'_>)) -> Vec<Option<String>> {
        let trace = crate::trace::Trace::new();
        let mut lines = Vec::new();
        trace.record_with(|names| {
            write(&mut lines, names);
            String::new()
        });
        lines
    }

    #[test]
    fn a_typed_call_writes_the_line_of_its_declaration() {
        use super::calls;
        let invalid = NrtError { status: NrtStatus::Invalid, detail: "out of range".into() };
        let written = lines(|lines, names| {
            let load = calls::nrt_load { neff: vec![1, 2].into(), vnc: 0, vnc_count: -1 };
            lines.push(load.trace_line(&Ok(ModelId(9)), names));
            let name = b"input0".to_vec().into();
            let allocate =
                calls::nrt_tensor_allocate { placement: Placement::Device, vnc: 1, size: 4, name };
            lines.push(allocate.trace_line(&Ok(TensorId(5)), names));
            let read = calls::nrt_tensor_read {
                tensor: TensorId(5),
                offset: 0,
                buf: ReadBuffer::read(vec![0xab; 2]),
            };
            lines.push(read.trace_line(&Ok(()), names));
            let failed = calls::nrt_tensor_read {
                tensor: TensorId(5),
                offset: 8,
                buf: ReadBuffer::unread(4),
            };
            lines.push(failed.trace_line(&Err(invalid.clone()), names));
            let va = calls::nrt_tensor_get_va { tensor: TensorId(5) };
            lines.push(va.trace_line(&Ok(0x7000), names));
            lines.push(calls::nrt_profile_continuous_start {}.trace_line(&Ok(()), names));
            lines.push(calls::nrta_is_completed { seq: SeqId(1) }.trace_line(&Ok(true), names));
            lines.push(calls::nrt_close {}.trace_line(&(), names));
        });
        let expected = [
            Some("load([01 02], 0, -1) -> m1 NRT_SUCCESS"),
            Some(r#"tensor_allocate(DEVICE, 1, 4, "input0") -> t1 NRT_SUCCESS"#),
            Some("tensor_read(t1, 0, 2) -> [ab ab] NRT_SUCCESS"),
            Some("tensor_read(t1, 8, 4) -> NRT_INVALID"),
            Some("tensor_get_va(t1) -> <va> NRT_SUCCESS"),
            Some("profile_continuous_start(NULL) -> NRT_SUCCESS"),
            None,
            Some("close()"),
        ];
        assert_eq!(written, expected.map(|line| line.map(str::to_owned)));
    }

    /// Seen bytes show as the bytes they were; a long run of them is not held.
    #[test]
    fn seen_bytes_show_as_held_ones_and_long_ones_are_not_kept() {
        let short = [1u8, 2, 255];
        let long = vec![7u8; INLINE_BYTES + 1];
        assert_eq!(CallBytes::seen(&short).shown(), CallBytes::from(short.to_vec()).shown());
        assert_eq!(&*CallBytes::seen(&short), &short[..]);
        assert_eq!(CallBytes::seen(&long).shown(), CallBytes::from(long.clone()).shown());
        assert!(CallBytes::seen(&long).is_empty());
    }
}

//! [`runtime_trait!`]: declares one per-header supertrait of [`Runtime`](super::Runtime) and
//! derives from the same declaration how [`TracingRuntime`](crate::trace::TracingRuntime) forwards
//! and records each of its methods.
//!
//! A declaration is the trait as it would be written by hand, each method followed by the libnrt
//! function it stands for:
//!
//! ```text
//! /// `nrt_unload`: … fn unload(&self, model: ModelId) -> Result<(), NrtError> => nrt_unload;
//! ```
//!
//! The trait comes out unchanged (docs, names, signatures); the tracing method calls the wrapped
//! runtime, then records `unload(m1) -> NRT_SUCCESS`: the function's trace name, each argument as
//! its type's [`TraceArg`](crate::trace::format::TraceArg) writes it, and ` -> ` with the value of
//! a success as its type's [`TraceResult`](crate::trace::format::TraceResult) writes it followed by
//! the status, or the failure's status alone. A method with no return type (`close`) records
//! `name(args)` only.
//!
//! Where a method's line is not what its types give, the declaration says so in place:
//! - `arg: Type as VALUE` writes `VALUE` (any [`TraceArg`](crate::trace::format::TraceArg))
//!   instead of the argument. It is evaluated before the call, so it may measure an argument the
//!   call consumes (`buffer: Arc<dyn ExternalBuffer> as Buffer(buffer.len())`).
//! - `-> Result<T, NrtError> as VALUE` shows `VALUE` (any
//!   [`TraceResult`](crate::trace::format::TraceResult)) for a success instead of the `T`. It is
//!   evaluated after the call, so it may show what the call wrote (`as buf`).
//! - `=> function, untraced;` forwards without recording; `=> function, by_hand;` calls the
//!   function of the method's name in `trace/by_hand.rs`, for a line no annotation can describe.
//!
//! The same declaration also gives, in a module `calls` beside the trait, one struct per method
//! named for its libnrt function (`calls::nrt_unload { model }`): the call as a value, with its
//! arguments owned, which [`Call`](super::call::Call) gathers into one enum over the table, and
//! which parses a recorded line's arguments and issues itself on any
//! [`Runtime`](super::Runtime).
//!
//! Handles are named while the line is recorded, under the trace's lock, in the order the line
//! shows them: arguments left to right, then the result.

/// Declares a supertrait of [`Runtime`](super::Runtime) and the
/// [`TracingRuntime`](crate::trace::TracingRuntime) implementation derived from it (see the
/// module docs for the grammar).
macro_rules! runtime_trait {
    (
        $(#[$trait_meta:meta])*
        pub trait $trait:ident {
            $(
                $(#[$meta:meta])*
                fn $method:ident(
                    &self $(, $arg:ident: $arg_ty:ty $(as $arg_shown:expr)?)* $(,)?
                ) $(-> $ret:ty $(as $ret_shown:expr)?)? => $function:ident $(, $how:ident)?;
            )*
        }
    ) => {
        $(#[$trait_meta])*
        pub trait $trait {
            $(
                $(#[$meta])*
                fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)?;
            )*
        }

        impl $trait for $crate::trace::TracingRuntime {
            $(
                fn $method(&self $(, $arg: $arg_ty)*) $(-> $ret)? {
                    $crate::runtime::declare::traced_body!(
                        [$function $($how)?] self, $method($($arg $(as $arg_shown)?),*)
                        $(-> $ret $(as $ret_shown)?)?
                    )
                }
            )*
        }

        /// One struct per method, named for its libnrt function: the call as a value, its
        /// arguments owned (see [`crate::runtime::call`]).
        pub(super) mod calls {
            #![allow(non_camel_case_types)]

            use super::*;
            use $crate::runtime::call::{ArgTexts, CallArg, CallError, Resolve, TypedCall};

            $(
                #[doc = concat!(
                    "A call of `", stringify!($function), "`, [`", stringify!($trait), "::",
                    stringify!($method), "`]'s arguments owned."
                )]
                pub struct $function {
                    $(
                        #[doc = concat!("`", stringify!($arg), "`.")]
                        pub $arg: <fn($arg_ty) as CallArg>::Owned,
                    )*
                }

                impl TypedCall for $function {
                    type Output = $crate::runtime::declare::output_of!($($ret)?);

                    fn parse(
                        _args: &mut ArgTexts<'_>,
                        _resolve: &mut dyn Resolve,
                    ) -> Result<Option<Self>, CallError> {
                        Ok(Some($function {
                            $($arg: <fn($arg_ty) as CallArg>::parse(_args, _resolve)?,)*
                        }))
                    }

                    #[allow(unused_mut)]
                    fn issue(mut self, runtime: &dyn $crate::runtime::Runtime) -> Self::Output {
                        $trait::$method(
                            runtime
                            $(, <fn($arg_ty) as CallArg>::lend(&mut self.$arg))*
                        )
                    }

                    #[allow(unused_variables)]
                    fn trace_line(
                        &self,
                        output: &Self::Output,
                        names: &mut $crate::trace::Names<'_>,
                    ) -> Option<String> {
                        let $function { $($arg),* } = self;
                        $crate::runtime::declare::typed_line!(
                            [$function $($how)?] names, output,
                            $method($($arg $(as $arg_shown)?),*) $(-> $ret $(as $ret_shown)?)?
                        )
                    }
                }
            )*
        }
    };
}

/// What a method returns: its return type, `()` for none.
macro_rules! output_of {
    () => {
        ()
    };
    ($ret:ty) => {
        $ret
    };
}

/// The body of one [`TracingRuntime`](crate::trace::TracingRuntime) method, by what its
/// declaration asks for.
macro_rules! traced_body {
    // Forwarded only.
    ([$function:ident untraced] $this:expr, $method:ident($($arg:ident $(as $shown:expr)?),*) $($ret:tt)*) => {
        $this.inner().$method($($arg),*)
    };
    // No result: `name(args)`.
    ([$function:ident $($how:ident)?] $this:expr, $method:ident($($arg:ident $(as $shown:expr)?),*)) => {{
        let args: &[&dyn $crate::trace::format::TraceArg] = $crate::runtime::declare::traced_args!(
            [$function $($how)?] $method($($arg $(as $shown)?),*)
        );
        $this.inner().$method($($arg),*);
        $this.record_call_without_result($crate::functions::LibnrtFunction::$function, args)
    }};
    // A result shown by its type.
    (
        [$function:ident $($how:ident)?] $this:expr, $method:ident($($arg:ident $(as $shown:expr)?),*)
        -> $ret:ty
    ) => {{
        let args: &[&dyn $crate::trace::format::TraceArg] = $crate::runtime::declare::traced_args!(
            [$function $($how)?] $method($($arg $(as $shown)?),*)
        );
        let result = $this.inner().$method($($arg),*);
        let outcome = result.as_ref().map(|value| value as &dyn $crate::trace::format::TraceResult);
        $this.record_call($crate::functions::LibnrtFunction::$function, args, outcome);
        result
    }};
    // A result shown as the declaration says.
    (
        [$function:ident $($how:ident)?] $this:expr, $method:ident($($arg:ident $(as $shown:expr)?),*)
        -> $ret:ty as $ret_shown:expr
    ) => {{
        let args: &[&dyn $crate::trace::format::TraceArg] = $crate::runtime::declare::traced_args!(
            [$function $($how)?] $method($($arg $(as $shown)?),*)
        );
        let result = $this.inner().$method($($arg),*);
        let function = $crate::functions::LibnrtFunction::$function;
        match &result {
            Ok(_) => $this.record_call(
                function,
                args,
                Ok(&$ret_shown as &dyn $crate::trace::format::TraceResult),
            ),
            Err(error) => $this.record_call(function, args, Err(error)),
        }
        result
    }};
}

/// The line of a typed call ([`TypedCall::trace_line`](super::call::TypedCall::trace_line)),
/// with its arguments bound to the call's fields: the same arguments, stand-ins and writer as
/// [`traced_body!`], from the call and its output instead of a live call.
macro_rules! typed_line {
    // Not traced.
    ([$function:ident untraced] $names:ident, $output:ident, $method:ident($($args:tt)*) $($ret:tt)*) => {
        None
    };
    // No result: `name(args)`.
    ([$function:ident $($how:ident)?] $names:ident, $output:ident, $method:ident($($arg:ident $(as $shown:expr)?),*)) => {{
        let _ = $output;
        let args: &[&dyn $crate::trace::format::TraceArg] = $crate::runtime::declare::traced_args!(
            [$function $($how)?] $method($($arg $(as $shown)?),*)
        );
        Some($crate::trace::tracing::call_text($names, $crate::functions::LibnrtFunction::$function, args, None))
    }};
    // A result shown by its type.
    (
        [$function:ident $($how:ident)?] $names:ident, $output:ident,
        $method:ident($($arg:ident $(as $shown:expr)?),*) -> $ret:ty
    ) => {{
        let args: &[&dyn $crate::trace::format::TraceArg] = $crate::runtime::declare::traced_args!(
            [$function $($how)?] $method($($arg $(as $shown)?),*)
        );
        let outcome = $output.as_ref().map(|value| value as &dyn $crate::trace::format::TraceResult);
        Some($crate::trace::tracing::call_text(
            $names,
            $crate::functions::LibnrtFunction::$function,
            args,
            Some(outcome),
        ))
    }};
    // A result shown as the declaration says.
    (
        [$function:ident $($how:ident)?] $names:ident, $output:ident,
        $method:ident($($arg:ident $(as $shown:expr)?),*) -> $ret:ty as $ret_shown:expr
    ) => {{
        let args: &[&dyn $crate::trace::format::TraceArg] = $crate::runtime::declare::traced_args!(
            [$function $($how)?] $method($($arg $(as $shown)?),*)
        );
        let function = $crate::functions::LibnrtFunction::$function;
        Some(match $output {
            Ok(_) => $crate::trace::tracing::call_text(
                $names,
                function,
                args,
                Some(Ok(&$ret_shown as &dyn $crate::trace::format::TraceResult)),
            ),
            Err(error) => $crate::trace::tracing::call_text($names, function, args, Some(Err(error))),
        })
    }};
}

/// The arguments of a line: the method's, each as the declaration shows it, or for a
/// `by_hand` declaration the list of the method's name in `trace/by_hand.rs`.
macro_rules! traced_args {
    ([$function:ident by_hand] $method:ident($($arg:ident $(as $shown:expr)?),*)) => {
        $crate::trace::by_hand::$method
    };
    ([$function:ident] $method:ident($($arg:ident $(as $shown:expr)?),*)) => {
        &[$($crate::runtime::declare::traced_arg!($arg $(as $shown)?)),*]
    };
}

/// One argument as the line shows it: the argument itself, or what the declaration puts in its
/// place.
macro_rules! traced_arg {
    ($arg:ident) => {
        &$arg
    };
    ($arg:ident as $shown:expr) => {
        &$shown
    };
}

pub(crate) use {output_of, runtime_trait, traced_arg, traced_args, traced_body, typed_line};

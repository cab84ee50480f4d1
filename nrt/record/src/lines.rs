//! The line recorded for each call: [`before`] reads what the call may change or consume, and
//! [`after`] writes the line, as `nrt::record::plan` says for the function: a decoded call's
//! line is that typed call's, written by the same writer as `abi::trace::TracingRuntime`'s; any
//! other is written `name(…) -> STATUS` (name and result only), and a replay checks it against
//! nothing but its position.

use abi::functions::LibnrtFunction;
use abi::runtime::call::CallBytes;
use abi::trace::{INLINE_BYTES, UNRECORDED_ARGS, call_line};

use crate::real::status_name;
use crate::sink::{Part, record, record_line};
use nrt::record::{Before, Call, Decoded, Effect, Read, bytes, out_word, plan};

/// Reads what must be read before the call.
///
/// # Safety
/// The C contract of `function` for `args`.
pub(crate) unsafe fn before(function: LibnrtFunction, args: &[u64]) -> Before {
    match plan(function).read {
        Read::Nothing => Before::default(),
        // SAFETY: the argument is `T **`, NULL or valid.
        Read::Word => Before { word: unsafe { out_word(args[0]) }, input: None },
        Read::Input { pointer, size } => {
            // SAFETY: the buffer is valid for `size` bytes (and, for an async write, stays so
            // until completion).
            let seen = unsafe { bytes(args[pointer], args[size]) };
            let input = CallBytes::seen(seen);
            if seen.len() > INLINE_BYTES {
                crate::sink::keep_blob(seen, input.shown());
            }
            Before { word: 0, input: Some(input) }
        }
        Read::Sync => {
            crate::exposed::sync();
            Before::default()
        }
    }
}

fn text(text: impl Into<std::borrow::Cow<'static, str>>) -> Part {
    Part::Text(text.into())
}

/// Records the call. `result` is the status (or value) returned, `before` what [`before`] read.
///
/// # Safety
/// The C contract of `function` for `args`, after a call that returned `result`.
pub(crate) unsafe fn after(function: LibnrtFunction, args: &[u64], result: u64, before: Before) {
    let Some((nonzero, decode)) = plan(function).detail else {
        record(generic(function, result));
        return;
    };
    if nonzero.iter().any(|&index| args[index] == 0) {
        record(generic(function, result));
        return;
    }
    let mut decoded = Decoded::Nothing;
    record_line(|generations, names| {
        let numbering = crate::real::numbering();
        let mut call = Call { args, result, before, generations, names, numbering };
        // SAFETY: the decoder keeps the C contract of `function` (strings are NUL-terminated,
        // buffers valid for the sizes passed, output pointers valid where they must not be
        // NULL), which the caller kept.
        decoded = unsafe { decode(&mut call) };
        match &mut decoded {
            Decoded::Line(line, _) => Some(std::mem::take(line)),
            Decoded::ByName | Decoded::Nothing => None,
        }
    });
    match decoded {
        Decoded::Line(_, Effect::None) | Decoded::Nothing => {}
        Decoded::Line(_, Effect::Expose(tensor)) => crate::exposed::expose(tensor),
        Decoded::Line(_, Effect::Refresh(tensor)) => crate::exposed::refresh(tensor),
        Decoded::Line(_, Effect::Forget(tensor)) => crate::exposed::forget(tensor),
        Decoded::ByName => record(generic(function, result)),
    }
}

/// `name(…) -> STATUS` (or `-> VALUE` / nothing for functions without a status).
fn generic(function: LibnrtFunction, result: u64) -> Vec<Part> {
    let status = function.returns_status().then(|| status_name(result));
    vec![text(call_line(function.trace_name(), UNRECORDED_ARGS, status.as_deref()))]
}

/// A function the real library lacks (or no real library): recorded, with the status the
/// caller got.
pub(crate) fn missing(function: LibnrtFunction) {
    let status = function.returns_status().then(|| status_name(1));
    let call = call_line(function.trace_name(), UNRECORDED_ARGS, status.as_deref());
    let line = format!("{call} # missing in the real library");
    record(vec![text(line)]);
}

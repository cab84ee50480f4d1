//! How the recorder (`nrtsim-record`) reads a call of the real library from its raw C
//! arguments: what it reads before the call ([`Read`]) and how the call's line is made.
//!
//! This module holds what every function shares (the handles' generations, the typed call's
//! output from the C result, reads through argument pointers); each function's own entry (its
//! [`Plan`], and for the calls a replay re-issues the decoder that makes its typed call) sits in
//! the file of its header, in a `recorded` module below the C calls that a method makes: one
//! screen shows how a method's arguments become C arguments and how C arguments become the
//! typed call again. `plan` (`sys/plans.rs`, public beside this module's items) is expanded from the function table and
//! names every function's entry, so a function added to the table is a compile error there
//! until its header's file gives it one, and none is found by a default.
//!
//! A decoder is called, under the C contract of its function for the arguments, after a call
//! that returned the result, and only with the arguments its plan names not NULL. Only a
//! decoder that reads through a pointer argument is an `unsafe fn`.

use std::collections::HashMap;
use std::ffi::{CStr, c_char};

use abi::dtype::DtypeNumbering;
use abi::runtime::call::{CallBytes, TypedCall};
use abi::runtime::{ExternalBuffer, ModelId, NrtError, SetId, TensorId, TrackerId};
use abi::status::NrtStatus;
use abi::trace::Names;

/// The kinds of handle a recording names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An `nrt_tensor_t *`.
    Tensor,
    /// An `nrt_tensor_set_t *`.
    Set,
    /// An `nrt_model_t *`.
    Model,
    /// An `nrta_seq_t` (a value, not a pointer).
    Seq,
    /// An `nrta_error_tracker_t *`.
    Tracker,
}

/// The generations of the real library's pointers, while a line is made: what a typed call's
/// handles are (`TensorId(generation)`), so that `Names` renames them as it renames a
/// simulator's handles, and a pointer the library reuses after a release is a new handle.
pub struct Generations<'a> {
    live: &'a mut HashMap<(Kind, u64), u64>,
    next: &'a mut u64,
}

impl<'a> Generations<'a> {
    /// The generations `live` (by kind and pointer), `next` the last one given.
    pub fn new(live: &'a mut HashMap<(Kind, u64), u64>, next: &'a mut u64) -> Generations<'a> {
        Generations { live, next }
    }

    /// The generation of `pointer`: its live one, or (`new`, or never seen) the next.
    fn generation(&mut self, kind: Kind, pointer: u64, new: bool) -> u64 {
        if !new {
            if let Some(&generation) = self.live.get(&(kind, pointer)) {
                return generation;
            }
        }
        *self.next += 1;
        self.live.insert((kind, pointer), *self.next);
        *self.next
    }

    /// A handle the call reads (a generation on first sight).
    pub fn read(&mut self, kind: Kind, pointer: u64) -> u64 {
        self.generation(kind, pointer, false)
    }

    /// A handle the call made (always a new generation).
    pub fn made(&mut self, kind: Kind, pointer: u64) -> u64 {
        self.generation(kind, pointer, true)
    }

    /// A handle the call released (its generation, then forgotten).
    pub fn released(&mut self, kind: Kind, pointer: u64) -> u64 {
        let generation = self.generation(kind, pointer, false);
        self.live.remove(&(kind, pointer));
        generation
    }

    /// Whether `pointer` of `kind` has a generation (was seen and not released).
    pub fn known(&self, kind: Kind, pointer: u64) -> bool {
        self.live.contains_key(&(kind, pointer))
    }
}

/// What the recorder reads before a call.
#[derive(Clone, Copy)]
pub enum Read {
    /// Nothing.
    Nothing,
    /// The handle a release clears, through its `T **` (argument 0).
    Word,
    /// The bytes the call takes: `pointer` and `size` are argument indices.
    Input {
        /// The buffer's argument.
        pointer: usize,
        /// Its size's argument.
        size: usize,
    },
    /// The call reads tensor contents: the tensors whose memory the client has are looked at
    /// first.
    Sync,
}

/// The line of one call, from its raw arguments.
///
/// # Safety
/// The C contract of the call's function for `Call::args`, after a call that returned
/// `Call::result`, with the arguments the plan names not NULL.
pub type Decode = unsafe fn(&mut Call<'_, '_, '_>) -> Decoded;

/// How a function is recorded.
pub struct Plan {
    /// What is read before the call.
    pub read: Read,
    /// How its line is made: the arguments that must not be NULL for the typed call to carry
    /// them (a replay passes real ones), and the decoder. `None`: by name and status only.
    pub detail: Option<(&'static [usize], Decode)>,
}

/// The plan of a call decoded into its typed call.
pub(crate) fn decoded(read: Read, nonzero: &'static [usize], decode: Decode) -> Plan {
    Plan { read, detail: Some((nonzero, decode)) }
}

/// The plan of a call recorded by name and status only.
pub(crate) fn by_name(read: Read) -> Plan {
    Plan { read, detail: None }
}

/// One `fn NAME() -> Plan` per function named, in a header's `recorded` module: `NAME | NAME
/// => plan,` (the plan is an expression, evaluated per call of the fn).
macro_rules! plans {
    ($($($function:ident)|+ => $plan:expr,)*) => {$($(
        pub(crate) fn $function() -> $crate::sys::record::Plan {
            $plan
        }
    )+)*};
}
pub(crate) use plans;

/// A C string argument's bytes, up to its NUL (NULL as empty).
///
/// # Safety
/// `pointer` is NULL or a NUL-terminated string.
pub(crate) unsafe fn c_bytes<'a>(pointer: u64) -> &'a [u8] {
    if pointer == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { CStr::from_ptr(pointer as usize as *const c_char) }.to_bytes()
}

/// `size` bytes at `pointer` (NULL or 0: empty).
///
/// # Safety
/// `pointer` is valid for reads of `size` bytes.
pub unsafe fn bytes<'a>(pointer: u64, size: u64) -> &'a [u8] {
    if pointer == 0 || size == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(pointer as usize as *const u8, size as usize) }
}

/// The word an output pointer points to (0 for NULL).
///
/// # Safety
/// `pointer` is NULL or valid for reading a pointer-sized word.
pub unsafe fn out_word(pointer: u64) -> u64 {
    if pointer == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { (pointer as usize as *const usize).read_unaligned() as u64 }
}

/// The `u64` an output pointer points to (0 for NULL).
///
/// # Safety
/// As [`out_word`], for 8 bytes.
pub(crate) unsafe fn out_u64(pointer: u64) -> u64 {
    if pointer == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { (pointer as usize as *const u64).read_unaligned() }
}

/// The `u32` an output pointer points to (0 for NULL).
///
/// # Safety
/// As [`out_word`], for 4 bytes.
pub(crate) unsafe fn out_u32(pointer: u64) -> u32 {
    if pointer == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { (pointer as usize as *const u32).read_unaligned() }
}

/// What is read before the call: the handle a release will clear, and input bytes (which the
/// call may overwrite when they alias its destination).
#[derive(Default)]
pub struct Before {
    /// The handle a release clears (0 when none was read).
    pub word: u64,
    /// The bytes the call takes.
    pub input: Option<CallBytes>,
}

/// What a decoder made of a call.
pub enum Decoded {
    /// The line, and what to do once it is written.
    Line(String, Effect),
    /// Arguments the typed call cannot carry (an unknown enum code, a release of NULL):
    /// recorded by name.
    ByName,
    /// No line (a poll that did not complete).
    Nothing,
}

/// What a recorded call changes about the tensors whose memory the client has (the recorder's
/// exposed tensors), done after its line is written and outside the sink's lock.
pub enum Effect {
    /// Nothing.
    None,
    /// The client now has this tensor's memory.
    Expose(u64),
    /// The library itself changed this tensor.
    Refresh(u64),
    /// This tensor is gone.
    Forget(u64),
}

/// A call being recorded: its raw arguments and result, what was read before it, and, since
/// its line is made under the sink's lock, the generations and names of its handles.
pub struct Call<'a, 'g, 'n> {
    /// The raw arguments, each as a word.
    pub args: &'a [u64],
    /// The value returned, as a word.
    pub result: u64,
    /// What was read before the call.
    pub before: Before,
    /// The generations of the handles.
    pub generations: &'a mut Generations<'g>,
    /// The names of the handles, as the line gives them.
    pub names: &'a mut Names<'n>,
    /// How the real library numbers element types (its version's).
    pub numbering: DtypeNumbering,
}

impl Call<'_, '_, '_> {
    pub(crate) fn ok(&self) -> bool {
        self.result == 0
    }

    /// The method's output for a call that returns only a status.
    pub(crate) fn status(&self) -> Result<(), NrtError> {
        self.outcome(())
    }

    /// The method's output: `value` on success, else the status the library returned.
    pub(crate) fn outcome<T>(&self, value: T) -> Result<T, NrtError> {
        if self.ok() { Ok(value) } else { Err(failure(self.result)) }
    }

    /// The output of a call that made a handle at `pointer` (a new generation, on success only).
    pub(crate) fn made<T>(
        &mut self,
        kind: Kind,
        pointer: u64,
        id: fn(u64) -> T,
    ) -> Result<T, NrtError> {
        if self.ok() {
            Ok(id(self.generations.made(kind, pointer)))
        } else {
            Err(failure(self.result))
        }
    }

    /// The tensor argument `index`.
    pub(crate) fn tensor(&mut self, index: usize) -> TensorId {
        TensorId(self.generations.read(Kind::Tensor, self.args[index]))
    }

    /// The tensor set argument `index`.
    pub(crate) fn set(&mut self, index: usize) -> SetId {
        SetId(self.generations.read(Kind::Set, self.args[index]))
    }

    /// The model argument `index`.
    pub(crate) fn model(&mut self, index: usize) -> ModelId {
        ModelId(self.generations.read(Kind::Model, self.args[index]))
    }

    /// The optional error tracker argument `index`: `None` for NULL.
    pub(crate) fn tracker(&mut self, index: usize) -> Option<TrackerId> {
        let pointer = self.args[index];
        (pointer != 0).then(|| TrackerId(self.generations.read(Kind::Tracker, pointer)))
    }

    /// The input bytes read before the call.
    pub(crate) fn input(&mut self) -> CallBytes {
        self.before.input.take().unwrap_or_default()
    }

    /// `effect` when the call succeeded, none otherwise.
    pub(crate) fn on_success(&self, effect: Effect) -> Effect {
        if self.ok() { effect } else { Effect::None }
    }

    /// The typed call's line for `output`, and what to do once it is written.
    pub(crate) fn line<C: TypedCall>(
        &mut self,
        call: C,
        output: C::Output,
        effect: Effect,
    ) -> Decoded {
        match call.trace_line(&output, self.names) {
            Some(line) => Decoded::Line(line, effect),
            None => Decoded::Nothing,
        }
    }
}

/// The error of a call that returned `code` (not 0): the status alone, since the recorder sees
/// no message.
pub(crate) fn failure(code: u64) -> NrtError {
    NrtError { status: NrtStatus::from_code(code as u32), detail: String::new() }
}

/// The client's buffer as a line needs it: its length. The call it stands for was made in C,
/// so nothing reads or writes it through this value.
pub(crate) struct Measured(pub(crate) usize);

impl ExternalBuffer for Measured {
    fn len(&self) -> usize {
        self.0
    }

    fn read_at(&self, _: usize, _: &mut [u8]) {}

    fn write_at(&self, _: usize, _: &[u8]) {}

    fn address(&self) -> usize {
        0
    }
}

/// A C string argument, as the `&str` a method takes (lossy for invalid UTF-8).
///
/// # Safety
/// `pointer` is NULL or a NUL-terminated string.
pub(crate) unsafe fn c_text(pointer: u64) -> String {
    // SAFETY: the caller's contract.
    String::from_utf8_lossy(unsafe { c_bytes(pointer) }).into_owned()
}

/// A C string argument, as the name bytes a method takes.
///
/// # Safety
/// As [`c_text`].
pub(crate) unsafe fn c_name(pointer: u64) -> CallBytes {
    // SAFETY: the caller's contract.
    unsafe { c_bytes(pointer) }.to_vec().into()
}

/// A launch's output: its status as the value of a completed launch (success, or outputs
/// written with numerical errors), else the failure.
pub(crate) fn launch(call: &Call<'_, '_, '_>) -> Result<NrtStatus, NrtError> {
    match NrtStatus::from_code(call.result as u32) {
        status @ (NrtStatus::Success | NrtStatus::ExecCompletedWithNumErr) => Ok(status),
        _ => Err(failure(call.result)),
    }
}

/// A count the call wrote through argument `index`, as the output of `typed`.
///
/// # Safety
/// Argument `index` is a `uint32_t *` (not NULL).
pub(crate) unsafe fn count<C>(call: &mut Call<'_, '_, '_>, typed: C, index: usize) -> Decoded
where
    C: TypedCall<Output = Result<u32, NrtError>>,
{
    // SAFETY: the caller's contract.
    let count = unsafe { out_u32(call.args[index]) };
    let output = call.outcome(count);
    call.line(typed, output, Effect::None)
}

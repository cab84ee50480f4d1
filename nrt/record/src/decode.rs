//! What the arguments of each call mean: [`plan`] says, for every function of the table in one
//! match with no wildcard arm, what is read before the call ([`Read`]) and how its line is made.
//! A call a replay re-issues (the lifecycle, loading, tensors, sets, launches, counts) has a
//! decoder here, named for its function, which makes the typed call of its `Runtime` method
//! (`abi::runtime::call`) from the raw C arguments and the method's output from the C result;
//! every other function is recorded by name and status only, grouped with the reason. A function
//! added to the table is a compile error in [`plan`] until it is given a decoder or a place
//! among those recorded by name, so adding one means editing this file and no other of the
//! recorder.
//!
//! Each decoder is called, as `lines::after` is, under the C contract of its function for the
//! arguments, after a call that returned the result, and only with the arguments its [`plan`]
//! entry names not NULL. Only a decoder that reads through a pointer argument is an
//! `unsafe fn`; one that takes values and handles as they are is safe.

use std::ffi::{CStr, c_char};
use std::sync::Arc;

use abi::c_layout::c_types::nrt_version_t;
use abi::c_layout::{INFO_ARRAY_HEADER, NrtTensorInfoC};
use abi::dtype::{DtypeNumbering, NrtDtype};
use abi::functions::LibnrtFunction;
use abi::runtime::call::{CallBytes, ReadBuffer, TypedCall, calls};
use abi::runtime::{
    AsyncReadBuffer, ExternalBuffer, Framework, ModelId, NrtError, NrtVersion, Placement, SeqId,
    SetId, TensorId, TensorInfo, TensorUsage, TrackerId,
};
use abi::status::NrtStatus;
use abi::trace::{COMPLETED_PREFIX, Names};

use crate::sink::{Generations, Kind};

/// What the recorder reads before a call.
#[derive(Clone, Copy)]
pub(crate) enum Read {
    /// Nothing.
    Nothing,
    /// The handle a release clears, through its `T **` (argument 0).
    Word,
    /// The bytes the call takes: `pointer` and `size` are argument indices.
    Input { pointer: usize, size: usize },
    /// The call reads tensor contents: the exposed tensors are looked at first
    /// ([`crate::exposed::sync`]).
    Sync,
}

/// The line of one call, from its raw arguments: one of the decoders below.
pub(crate) type Decode = unsafe fn(&mut Call<'_, '_, '_>) -> Decoded;

/// How a function is recorded.
pub(crate) struct Plan {
    pub(crate) read: Read,
    /// How its line is made: the arguments that must not be NULL for the typed call to carry
    /// them (a replay passes real ones), and the decoder. `None`: by name and status only.
    pub(crate) detail: Option<(&'static [usize], Decode)>,
}

/// How each function is recorded: every function of the table, once.
pub(crate) fn plan(function: LibnrtFunction) -> Plan {
    use LibnrtFunction as F;
    use Read::{Input, Nothing, Sync, Word};
    let detail = |read, nonzero, decode: Decode| Plan { read, detail: Some((nonzero, decode)) };
    let by_name = |read| Plan { read, detail: None };
    match function {
        // The calls a replay re-issues, decoded into their typed calls.
        F::nrt_init => detail(Nothing, &[1, 2], nrt_init),
        F::nrt_close => detail(Nothing, &[], nrt_close),
        F::nrt_load => detail(Input { pointer: 0, size: 1 }, &[0, 4], nrt_load),
        F::nrt_load_collectives => {
            detail(Input { pointer: 0, size: 1 }, &[0, 6], nrt_load_collectives)
        }
        F::nrt_unload => detail(Nothing, &[0], nrt_unload),
        F::nrt_execute => detail(Sync, &[0, 1, 2], nrt_execute),
        F::nrt_execute_repeat => detail(Sync, &[0, 1, 2], nrt_execute_repeat),
        F::nrt_allocate_tensor_set => detail(Nothing, &[0], nrt_allocate_tensor_set),
        F::nrt_destroy_tensor_set => detail(Word, &[0], nrt_destroy_tensor_set),
        F::nrt_add_tensor_to_tensor_set => {
            detail(Nothing, &[0, 1, 2], nrt_add_tensor_to_tensor_set)
        }
        F::nrt_get_tensor_from_tensor_set => {
            detail(Nothing, &[0, 1, 2], nrt_get_tensor_from_tensor_set)
        }
        F::nrt_tensor_allocate => detail(Nothing, &[3, 4], nrt_tensor_allocate),
        F::nrt_tensor_allocate_empty => detail(Nothing, &[0, 1], nrt_tensor_allocate_empty),
        F::nrt_tensor_allocate_slice => detail(Nothing, &[0, 3, 4], nrt_tensor_allocate_slice),
        F::nrt_tensor_attach_buffer => detail(Nothing, &[0, 1], nrt_tensor_attach_buffer),
        F::nrt_tensor_free => detail(Word, &[0], nrt_tensor_free),
        F::nrt_tensor_read => detail(Sync, &[0, 1], nrt_tensor_read),
        F::nrt_tensor_write => detail(Input { pointer: 1, size: 3 }, &[0, 1], nrt_tensor_write),
        F::nrt_tensor_copy => detail(Sync, &[0, 2], nrt_tensor_copy),
        F::nrt_tensor_memset => detail(Nothing, &[0], nrt_tensor_memset),
        F::nrt_tensor_get_size => detail(Nothing, &[0], nrt_tensor_get_size),
        F::nrt_tensor_get_va => detail(Nothing, &[0], nrt_tensor_get_va),
        F::nrt_get_version => detail(Nothing, &[0], nrt_get_version),
        F::nrt_get_total_nc_count => detail(Nothing, &[0], nrt_get_total_nc_count),
        F::nrt_get_total_vnc_count => detail(Nothing, &[0], nrt_get_total_vnc_count),
        F::nrt_get_visible_nc_count => detail(Nothing, &[0], nrt_get_visible_nc_count),
        F::nrt_get_visible_vnc_count => detail(Nothing, &[0], nrt_get_visible_vnc_count),
        F::nrt_get_model_nc_count => detail(Nothing, &[0, 1], nrt_get_model_nc_count),
        F::nrt_get_model_vnc_count => detail(Nothing, &[0, 1], nrt_get_model_vnc_count),
        F::nrt_get_model_instance_count => detail(Nothing, &[0, 1], nrt_get_model_instance_count),
        F::nrt_get_model_tensor_info => detail(Nothing, &[0, 1], nrt_get_model_tensor_info),
        F::nrt_async_drain_queued_execs => detail(Nothing, &[], nrt_async_drain_queued_execs),
        F::nrta_error_tracker_create => detail(Nothing, &[1], nrta_error_tracker_create),
        F::nrta_error_tracker_destroy => detail(Nothing, &[0], nrta_error_tracker_destroy),
        F::nrta_tensor_write => {
            detail(Input { pointer: 1, size: 3 }, &[0, 1, 6], nrta_tensor_write)
        }
        F::nrta_tensor_read => detail(Sync, &[0, 1, 6], nrta_tensor_read),
        F::nrta_execute_schedule => detail(Sync, &[0, 1, 2, 5], nrta_execute_schedule),
        // Not a call line: the first `true` for a request is a `# completed` line.
        F::nrta_is_completed => detail(Nothing, &[1], nrta_is_completed),

        // Recorded by name and status only; a replay does not re-issue them.
        // What the machine alone decides, or an address or descriptor of this process.
        F::nrt_get_instance_info
        | F::nrt_tensor_get_device_allocation_info
        | F::nrt_get_dmabuf_fd
        | F::nrt_host_device_id_get
        | F::nrt_host_device_id_rid_map_get
        | F::nrt_get_hbm_mmap_va
        | F::nrt_get_vnc_memory_stats
        | F::nrt_get_attached_efa_bdf
        | F::nrt_memcpy_to_device
        | F::nrta_get_completion_handle => by_name(Nothing),
        // Collectives: their peers are other processes, not in this recording.
        F::nrt_build_global_comm
        | F::nrt_cc_global_comm_init
        | F::nrt_barrier
        | F::nrt_all_gather
        | F::nrta_cc_prepare
        | F::nrta_cc_schedule => by_name(Nothing),
        // Arguments spread over option objects, paths or lists that a line does not carry:
        // profiling, inspection, the system trace, the legacy trace, batches.
        F::nrt_tensor_read_batch
        | F::nrt_tensor_write_batch
        | F::nrt_trace_start
        | F::nrt_trace_stop
        | F::nrt_profile_start
        | F::nrt_profile_stop
        | F::nrt_profile_continuous_options_allocate
        | F::nrt_profile_continuous_options_free
        | F::nrt_profile_continuous_options_set_output_dir
        | F::nrt_profile_continuous_start
        | F::nrt_profile_continuous_save
        | F::nrt_profile_continuous_stop
        | F::nrt_inspect_begin
        | F::nrt_inspect_stop
        | F::nrt_inspect_config_allocate
        | F::nrt_inspect_config_set_defaults
        | F::nrt_inspect_config_free
        | F::nrt_inspect_config_set_session_id
        | F::nrt_inspect_config_set_output_dir
        | F::nrt_inspect_config_set_sys_trace_max_events_per_nc
        | F::nrt_inspect_config_set_capture_enabled_for_nc
        | F::nrt_inspect_config_set_capture_enabled_for_event_type_string
        | F::nrt_inspect_config_set_enable_inspect
        | F::nrt_inspect_config_set_enable_inspect_on_fail
        | F::nrt_inspect_begin_with_options
        | F::nrt_inspect_config_get_all_activity_types
        | F::nrt_inspect_config_get_enabled_activity_types
        | F::nrt_inspect_config_free_activity_types
        | F::nrt_inspect_config_set_activity
        | F::nrt_sys_trace_config_allocate
        | F::nrt_sys_trace_config_set_defaults
        | F::nrt_sys_trace_config_free
        | F::nrt_sys_trace_config_set_max_events_per_nc
        | F::nrt_sys_trace_config_set_capture_enabled_for_nc
        | F::nrt_sys_trace_config_set_capture_enabled_for_event_type
        | F::nrt_sys_trace_get_event_types
        | F::nrt_sys_trace_free_event_types
        | F::nrt_sys_trace_config_get_enabled_event_types
        | F::nrt_sys_trace_start
        | F::nrt_sys_trace_stop
        | F::nrt_sys_trace_fetch_options_allocate
        | F::nrt_sys_trace_fetch_options_set_defaults
        | F::nrt_sys_trace_fetch_options_free
        | F::nrt_sys_trace_fetch_options_set_max_events_per_nc
        | F::nrt_sys_trace_fetch_options_set_nc_idx
        | F::nrt_sys_trace_fetch_events
        | F::nrt_sys_trace_buffer_free => by_name(Nothing),
        // Results that depend on timing or on what the device did.
        F::nrt_tensor_check_output_completion
        | F::nrt_tensor_reset_output_completion
        | F::nrt_get_model_info
        | F::nrta_get_sequence
        | F::nrta_error_tracker_get_list => by_name(Nothing),
        // No `Runtime` method, so nothing to re-issue: an async copy (which reads tensors), the
        // headers a simulator does not model, and helpers.
        F::nrta_tensor_copy => by_name(Sync),
        F::nrt_free_model_tensor_info
        | F::nrt_get_libnccl_net
        | F::nrt_set_pool_eng_ucode
        | F::nrt_register_async_exec_callback
        | F::nrt_async_sendrecv_get_max_num_communicators_per_lnc
        | F::nrt_async_sendrecv_get_max_num_pending_request
        | F::nrt_async_sendrecv_init
        | F::nrt_async_sendrecv_close
        | F::nrt_async_sendrecv_connect
        | F::nrt_async_sendrecv_accept
        | F::nrt_async_sendrecv_test_comm
        | F::nrt_async_sendrecv_send_tensor
        | F::nrt_async_sendrecv_recv_tensor
        | F::nrt_async_sendrecv_test_request
        | F::nrt_async_sendrecv_flush
        | F::nrt_debug_client_connect
        | F::nrt_debug_client_connect_close
        | F::nrt_debug_client_read_one_event
        | F::nrt_get_status_as_str => by_name(Nothing),
    }
}

/// A C string argument's bytes, up to its NUL (NULL as empty).
///
/// # Safety
/// `pointer` is NULL or a NUL-terminated string.
unsafe fn c_bytes<'a>(pointer: u64) -> &'a [u8] {
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
pub(crate) unsafe fn bytes<'a>(pointer: u64, size: u64) -> &'a [u8] {
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
pub(crate) unsafe fn out_word(pointer: u64) -> u64 {
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
unsafe fn out_u64(pointer: u64) -> u64 {
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
unsafe fn out_u32(pointer: u64) -> u32 {
    if pointer == 0 {
        return 0;
    }
    // SAFETY: the caller's contract.
    unsafe { (pointer as usize as *const u32).read_unaligned() }
}

/// What is read before the call: the handle a release will clear, and input bytes (which the
/// call may overwrite when they alias its destination).
#[derive(Default)]
pub(crate) struct Before {
    pub(crate) word: u64,
    pub(crate) input: Option<CallBytes>,
}

/// What a decoder made of a call.
pub(crate) enum Decoded {
    /// The line, and what to do once it is written.
    Line(String, Effect),
    /// Arguments the typed call cannot carry (an unknown enum code, a release of NULL):
    /// recorded by name.
    ByName,
    /// No line (a poll that did not complete).
    Nothing,
}

/// What a recorded call changes about the exposed tensors ([`crate::exposed`]), done after its
/// line is written and outside the sink's lock.
pub(crate) enum Effect {
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
pub(crate) struct Call<'a, 'g, 'n> {
    pub(crate) args: &'a [u64],
    pub(crate) result: u64,
    pub(crate) before: Before,
    pub(crate) generations: &'a mut Generations<'g>,
    pub(crate) names: &'a mut Names<'n>,
}

impl Call<'_, '_, '_> {
    fn ok(&self) -> bool {
        self.result == 0
    }

    /// The method's output for a call that returns only a status.
    fn status(&self) -> Result<(), NrtError> {
        self.outcome(())
    }

    /// The method's output: `value` on success, else the status the library returned.
    fn outcome<T>(&self, value: T) -> Result<T, NrtError> {
        if self.ok() { Ok(value) } else { Err(failure(self.result)) }
    }

    /// The output of a call that made a handle at `pointer` (a new generation, on success only).
    fn made<T>(&mut self, kind: Kind, pointer: u64, id: fn(u64) -> T) -> Result<T, NrtError> {
        if self.ok() {
            Ok(id(self.generations.made(kind, pointer)))
        } else {
            Err(failure(self.result))
        }
    }

    /// The tensor argument `index`.
    fn tensor(&mut self, index: usize) -> TensorId {
        TensorId(self.generations.read(Kind::Tensor, self.args[index]))
    }

    /// The tensor set argument `index`.
    fn set(&mut self, index: usize) -> SetId {
        SetId(self.generations.read(Kind::Set, self.args[index]))
    }

    /// The model argument `index`.
    fn model(&mut self, index: usize) -> ModelId {
        ModelId(self.generations.read(Kind::Model, self.args[index]))
    }

    /// The optional error tracker argument `index`: `None` for NULL.
    fn tracker(&mut self, index: usize) -> Option<TrackerId> {
        let pointer = self.args[index];
        (pointer != 0).then(|| TrackerId(self.generations.read(Kind::Tracker, pointer)))
    }

    /// The input bytes read before the call.
    fn input(&mut self) -> CallBytes {
        self.before.input.take().unwrap_or_default()
    }

    /// `effect` when the call succeeded, none otherwise.
    fn on_success(&self, effect: Effect) -> Effect {
        if self.ok() { effect } else { Effect::None }
    }

    /// The typed call's line for `output`, and what to do once it is written.
    fn line<C: TypedCall>(&mut self, call: C, output: C::Output, effect: Effect) -> Decoded {
        match call.trace_line(&output, self.names) {
            Some(line) => Decoded::Line(line, effect),
            None => Decoded::Nothing,
        }
    }
}

/// The error of a call that returned `code` (not 0): the status alone, since the recorder sees
/// no message.
fn failure(code: u64) -> NrtError {
    NrtError { status: NrtStatus::from_code(code as u32), detail: String::new() }
}

/// The client's buffer as a line needs it: its length. The call it stands for was made in C,
/// so nothing reads or writes it through this value.
struct Measured(usize);

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
unsafe fn c_text(pointer: u64) -> String {
    // SAFETY: the caller's contract.
    String::from_utf8_lossy(unsafe { c_bytes(pointer) }).into_owned()
}

/// A C string argument, as the name bytes a method takes.
///
/// # Safety
/// As [`c_text`].
unsafe fn c_name(pointer: u64) -> CallBytes {
    // SAFETY: the caller's contract.
    unsafe { c_bytes(pointer) }.to_vec().into()
}

/// A launch's output: its status as the value of a completed launch (success, or outputs
/// written with numerical errors), else the failure.
fn launch(call: &Call<'_, '_, '_>) -> Result<NrtStatus, NrtError> {
    match NrtStatus::from_code(call.result as u32) {
        status @ (NrtStatus::Success | NrtStatus::ExecCompletedWithNumErr) => Ok(status),
        _ => Err(failure(call.result)),
    }
}

/// A count the call wrote through argument `index`, as the output of `typed`.
///
/// # Safety
/// Argument `index` is a `uint32_t *` (not NULL).
unsafe fn count<C>(call: &mut Call<'_, '_, '_>, typed: C, index: usize) -> Decoded
where
    C: TypedCall<Output = Result<u32, NrtError>>,
{
    // SAFETY: the caller's contract.
    let count = unsafe { out_u32(call.args[index]) };
    let output = call.outcome(count);
    call.line(typed, output, Effect::None)
}

pub(crate) unsafe fn nrt_init(call: &mut Call<'_, '_, '_>) -> Decoded {
    let Some(framework) = Framework::from_code(call.args[0] as u32) else {
        return Decoded::ByName;
    };
    // SAFETY: two NUL-terminated strings.
    let (fw_version, fal_version) = unsafe { (c_text(call.args[1]), c_text(call.args[2])) };
    let output = call.status();
    call.line(calls::nrt_init { framework, fw_version, fal_version }, output, Effect::None)
}

pub(crate) fn nrt_close(call: &mut Call<'_, '_, '_>) -> Decoded {
    call.line(calls::nrt_close {}, (), Effect::None)
}

pub(crate) unsafe fn nrt_load(call: &mut Call<'_, '_, '_>) -> Decoded {
    let [_, _, vnc, vnc_count, model, ..] = *call.args else { return Decoded::ByName };
    let typed =
        calls::nrt_load { neff: call.input(), vnc: vnc as i32, vnc_count: vnc_count as i32 };
    // SAFETY: an `nrt_model_t **`.
    let output = call.made(Kind::Model, unsafe { out_word(model) }, ModelId);
    call.line(typed, output, Effect::None)
}

pub(crate) unsafe fn nrt_load_collectives(call: &mut Call<'_, '_, '_>) -> Decoded {
    let [_, _, vnc, vnc_count, id, count, model, ..] = *call.args else {
        return Decoded::ByName;
    };
    let typed = calls::nrt_load_collectives {
        neff: call.input(),
        vnc: vnc as i32,
        vnc_count: vnc_count as i32,
        ctx_device_id: id as u32,
        ctx_device_count: count as u32,
    };
    // SAFETY: an `nrt_model_t **`.
    let output = call.made(Kind::Model, unsafe { out_word(model) }, ModelId);
    call.line(typed, output, Effect::None)
}

pub(crate) fn nrt_unload(call: &mut Call<'_, '_, '_>) -> Decoded {
    // A released model's address may come back for the next load.
    let model = if call.ok() {
        ModelId(call.generations.released(Kind::Model, call.args[0]))
    } else {
        call.model(0)
    };
    let output = call.status();
    call.line(calls::nrt_unload { model }, output, Effect::None)
}

pub(crate) fn nrt_execute(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_execute {
        model: call.model(0),
        input_set: call.set(1),
        output_set: call.set(2),
    };
    let output = launch(call);
    call.line(typed, output, Effect::None)
}

pub(crate) fn nrt_execute_repeat(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_execute_repeat {
        model: call.model(0),
        input_set: call.set(1),
        output_set: call.set(2),
        repeat_count: call.args[3] as i32,
    };
    let output = launch(call);
    call.line(typed, output, Effect::None)
}

pub(crate) unsafe fn nrt_allocate_tensor_set(call: &mut Call<'_, '_, '_>) -> Decoded {
    // SAFETY: an `nrt_tensor_set_t **`.
    let output = call.made(Kind::Set, unsafe { out_word(call.args[0]) }, SetId);
    call.line(calls::nrt_allocate_tensor_set {}, output, Effect::None)
}

/// A release, whose handle was read before the call cleared it; `void` in C.
pub(crate) fn nrt_destroy_tensor_set(call: &mut Call<'_, '_, '_>) -> Decoded {
    if call.before.word == 0 {
        return Decoded::ByName;
    }
    let set = SetId(call.generations.released(Kind::Set, call.before.word));
    call.line(calls::nrt_destroy_tensor_set { set }, Ok(()), Effect::None)
}

pub(crate) unsafe fn nrt_add_tensor_to_tensor_set(call: &mut Call<'_, '_, '_>) -> Decoded {
    let set = call.set(0);
    // SAFETY: a NUL-terminated name.
    let name = unsafe { c_name(call.args[1]) };
    let typed = calls::nrt_add_tensor_to_tensor_set { set, name, tensor: call.tensor(2) };
    let output = call.status();
    call.line(typed, output, Effect::None)
}

pub(crate) unsafe fn nrt_get_tensor_from_tensor_set(call: &mut Call<'_, '_, '_>) -> Decoded {
    let set = call.set(0);
    // SAFETY: a NUL-terminated name, and an `nrt_tensor_t **`.
    let (name, found) = unsafe { (c_name(call.args[1]), out_word(call.args[2])) };
    // The tensor found is one the set holds, not a new one.
    let output = if call.ok() {
        Ok(TensorId(call.generations.read(Kind::Tensor, found)))
    } else {
        Err(failure(call.result))
    };
    call.line(calls::nrt_get_tensor_from_tensor_set { set, name }, output, Effect::None)
}

pub(crate) unsafe fn nrt_tensor_allocate(call: &mut Call<'_, '_, '_>) -> Decoded {
    let Some(placement) = Placement::from_code(call.args[0] as u32) else {
        return Decoded::ByName;
    };
    let [_, vnc, size, name, tensor, ..] = *call.args else { return Decoded::ByName };
    // SAFETY: a NUL-terminated name.
    let name = unsafe { c_name(name) };
    let typed =
        calls::nrt_tensor_allocate { placement, vnc: vnc as i32, size: size as usize, name };
    // SAFETY: an `nrt_tensor_t **`.
    let output = call.made(Kind::Tensor, unsafe { out_word(tensor) }, TensorId);
    call.line(typed, output, Effect::None)
}

pub(crate) unsafe fn nrt_tensor_allocate_empty(call: &mut Call<'_, '_, '_>) -> Decoded {
    // SAFETY: a NUL-terminated name, and an `nrt_tensor_t **`.
    let (name, tensor) = unsafe { (c_name(call.args[0]), out_word(call.args[1])) };
    let output = call.made(Kind::Tensor, tensor, TensorId);
    call.line(calls::nrt_tensor_allocate_empty { name }, output, Effect::None)
}

pub(crate) unsafe fn nrt_tensor_allocate_slice(call: &mut Call<'_, '_, '_>) -> Decoded {
    let src = call.tensor(0);
    let [_, offset, size, name, slice, ..] = *call.args else { return Decoded::ByName };
    // SAFETY: a NUL-terminated name, and an `nrt_tensor_t **`.
    let (name, slice) = unsafe { (c_name(name), out_word(slice)) };
    let typed = calls::nrt_tensor_allocate_slice {
        src,
        offset: offset as usize,
        size: size as usize,
        name,
    };
    let output = call.made(Kind::Tensor, slice, TensorId);
    call.line(typed, output, Effect::None)
}

pub(crate) fn nrt_tensor_attach_buffer(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_tensor_attach_buffer {
        tensor: call.tensor(0),
        buffer: Arc::new(Measured(call.args[2] as usize)),
    };
    let (output, effect) = (call.status(), call.on_success(Effect::Expose(call.args[0])));
    call.line(typed, output, effect)
}

/// A release, whose handle was read before the call cleared it; `void` in C.
pub(crate) fn nrt_tensor_free(call: &mut Call<'_, '_, '_>) -> Decoded {
    let freed = call.before.word;
    if freed == 0 {
        return Decoded::ByName;
    }
    let tensor = TensorId(call.generations.released(Kind::Tensor, freed));
    call.line(calls::nrt_tensor_free { tensor }, Ok(()), Effect::Forget(freed))
}

pub(crate) unsafe fn nrt_tensor_read(call: &mut Call<'_, '_, '_>) -> Decoded {
    let [_, buf, offset, size, ..] = *call.args else { return Decoded::ByName };
    let buf = if call.ok() {
        // SAFETY: the buffer holds the `size` bytes read.
        ReadBuffer::read(unsafe { bytes(buf, size) }.to_vec())
    } else {
        ReadBuffer::unread(size as usize)
    };
    let typed = calls::nrt_tensor_read { tensor: call.tensor(0), offset: offset as usize, buf };
    let output = call.status();
    call.line(typed, output, Effect::None)
}

pub(crate) fn nrt_tensor_write(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_tensor_write {
        tensor: call.tensor(0),
        offset: call.args[2] as usize,
        bytes: call.input(),
    };
    let (output, effect) = (call.status(), call.on_success(Effect::Refresh(call.args[0])));
    call.line(typed, output, effect)
}

pub(crate) fn nrt_tensor_copy(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_tensor_copy {
        src: call.tensor(0),
        src_offset: call.args[1] as usize,
        dst: call.tensor(2),
        dst_offset: call.args[3] as usize,
        size: call.args[4] as usize,
    };
    let (output, effect) = (call.status(), call.on_success(Effect::Refresh(call.args[2])));
    call.line(typed, output, effect)
}

pub(crate) fn nrt_tensor_memset(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_tensor_memset {
        tensor: call.tensor(0),
        offset: call.args[1],
        value: call.args[2] as i32,
        size: call.args[3] as usize,
    };
    let (output, effect) = (call.status(), call.on_success(Effect::Refresh(call.args[0])));
    call.line(typed, output, effect)
}

/// The size is the result: 0 for a failure, which the line cannot tell from an empty
/// tensor.
pub(crate) fn nrt_tensor_get_size(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_tensor_get_size { tensor: call.tensor(0) };
    call.line(typed, Ok(call.result as usize), Effect::None)
}

/// The address is the result: NULL is a failure, `NRT_INVALID` as the simulator says.
pub(crate) fn nrt_tensor_get_va(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_tensor_get_va { tensor: call.tensor(0) };
    if call.result == 0 {
        let invalid = NrtError { status: NrtStatus::Invalid, detail: String::new() };
        call.line(typed, Err(invalid), Effect::None)
    } else {
        call.line(typed, Ok(call.result as usize), Effect::Expose(call.args[0]))
    }
}

/// Only for an `nrt_version_t` of this size, the one the method's call passes.
pub(crate) unsafe fn nrt_get_version(call: &mut Call<'_, '_, '_>) -> Decoded {
    if call.args[1] != size_of::<nrt_version_t>() as u64 {
        return Decoded::ByName;
    }
    let output = if call.ok() {
        // SAFETY: an `nrt_version_t` the library filled.
        let version = unsafe { (call.args[0] as usize as *const nrt_version_t).read_unaligned() };
        Ok(version_of(&version))
    } else {
        Err(failure(call.result))
    };
    call.line(calls::nrt_get_version {}, output, Effect::None)
}

pub(crate) unsafe fn nrt_get_total_nc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
    // SAFETY: a `uint32_t *`.
    unsafe { count(call, calls::nrt_get_total_nc_count {}, 0) }
}

pub(crate) unsafe fn nrt_get_total_vnc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
    // SAFETY: a `uint32_t *`.
    unsafe { count(call, calls::nrt_get_total_vnc_count {}, 0) }
}

pub(crate) unsafe fn nrt_get_visible_nc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
    // SAFETY: a `uint32_t *`.
    unsafe { count(call, calls::nrt_get_visible_nc_count {}, 0) }
}

pub(crate) unsafe fn nrt_get_visible_vnc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
    // SAFETY: a `uint32_t *`.
    unsafe { count(call, calls::nrt_get_visible_vnc_count {}, 0) }
}

pub(crate) unsafe fn nrt_get_model_nc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_get_model_nc_count { model: call.model(0) };
    // SAFETY: a `uint32_t *`.
    unsafe { count(call, typed, 1) }
}

pub(crate) unsafe fn nrt_get_model_vnc_count(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_get_model_vnc_count { model: call.model(0) };
    // SAFETY: a `uint32_t *`.
    unsafe { count(call, typed, 1) }
}

pub(crate) unsafe fn nrt_get_model_instance_count(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_get_model_instance_count { model: call.model(0) };
    // SAFETY: a `uint32_t *`.
    unsafe { count(call, typed, 1) }
}

pub(crate) unsafe fn nrt_get_model_tensor_info(call: &mut Call<'_, '_, '_>) -> Decoded {
    let output = if call.ok() {
        // SAFETY: an `nrt_tensor_info_array_t **` the library filled.
        Ok(unsafe { tensor_info(out_word(call.args[1])) })
    } else {
        Err(failure(call.result))
    };
    let typed = calls::nrt_get_model_tensor_info { model: call.model(0) };
    call.line(typed, output, Effect::None)
}

pub(crate) fn nrt_async_drain_queued_execs(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrt_async_drain_queued_execs { vnc: call.args[0] as i32 };
    let output = call.status();
    call.line(typed, output, Effect::None)
}

pub(crate) unsafe fn nrta_error_tracker_create(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrta_error_tracker_create { lnc: call.args[0] as u32 };
    // SAFETY: an `nrta_error_tracker_t **`.
    let output = call.made(Kind::Tracker, unsafe { out_word(call.args[1]) }, TrackerId);
    call.line(typed, output, Effect::None)
}

/// A release; `void` in C.
pub(crate) fn nrta_error_tracker_destroy(call: &mut Call<'_, '_, '_>) -> Decoded {
    let tracker = TrackerId(call.generations.released(Kind::Tracker, call.args[0]));
    call.line(calls::nrta_error_tracker_destroy { tracker }, Ok(()), Effect::None)
}

pub(crate) unsafe fn nrta_tensor_write(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrta_tensor_write {
        tensor: call.tensor(0),
        offset: call.args[2],
        bytes: call.input(),
        queue: call.args[4] as i32,
        tracker: call.tracker(5),
    };
    // SAFETY: an `nrta_seq_t *`.
    let output = call.made(Kind::Seq, unsafe { out_u64(call.args[6]) }, SeqId);
    call.line(typed, output, Effect::None)
}

pub(crate) unsafe fn nrta_tensor_read(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrta_tensor_read {
        tensor: call.tensor(1),
        offset: call.args[2],
        size: call.args[3],
        queue: call.args[4] as i32,
        tracker: call.tracker(5),
        into: Arc::new(AsyncReadBuffer::new()),
    };
    // SAFETY: an `nrta_seq_t *`.
    let output = call.made(Kind::Seq, unsafe { out_u64(call.args[6]) }, SeqId);
    call.line(typed, output, Effect::None)
}

pub(crate) unsafe fn nrta_execute_schedule(call: &mut Call<'_, '_, '_>) -> Decoded {
    let typed = calls::nrta_execute_schedule {
        model: call.model(0),
        input_set: call.set(1),
        output_set: call.set(2),
        queue: call.args[3] as i32,
        tracker: call.tracker(4),
    };
    // SAFETY: an `nrta_seq_t *`.
    let output = call.made(Kind::Seq, unsafe { out_u64(call.args[5]) }, SeqId);
    call.line(typed, output, Effect::None)
}

/// Not a call line (polls depend on timing, and `TracingRuntime` does not trace them): the
/// first `true` for a request is a `# completed` line, where a replay waits for it.
pub(crate) unsafe fn nrta_is_completed(call: &mut Call<'_, '_, '_>) -> Decoded {
    // SAFETY: a `bool *` the call filled.
    let done = unsafe { (call.args[1] as usize as *const u8).read() } != 0;
    let seq = call.args[0];
    if !(call.ok() && done && call.generations.known(Kind::Seq, seq)) {
        return Decoded::Nothing;
    }
    let seq = call.names.seq(SeqId(call.generations.released(Kind::Seq, seq)));
    Decoded::Line(format!("{COMPLETED_PREFIX}{seq}"), Effect::None)
}

/// `nrt_version_t` as the method returns it.
fn version_of(version: &nrt_version_t) -> NrtVersion {
    let text = |chars: &[c_char]| {
        let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    NrtVersion {
        major: version.major,
        minor: version.minor,
        patch: version.patch,
        maintenance: version.maintenance,
        detail: text(&version.detail),
        git_hash: text(&version.git_hash),
    }
}

/// The entries of a tensor info array the real library filled.
///
/// # Safety
/// `array` is NULL or an `nrt_tensor_info_array_t` the library made.
unsafe fn tensor_info(array: u64) -> Vec<TensorInfo> {
    if array == 0 {
        return Vec::new();
    }
    let base = array as usize as *const u8;
    // SAFETY: the array starts with its `uint64_t` count, then the entries.
    let count = unsafe { (base as *const u64).read_unaligned() };
    let numbering = crate::real::version().map_or(DtypeNumbering::Legacy, |(major, minor)| {
        DtypeNumbering::for_runtime_version(major, minor)
    });
    let mut entries = Vec::new();
    for index in 0..count as usize {
        // SAFETY: entry `index` of `count`, after the header.
        let entry: NrtTensorInfoC = unsafe {
            (base.add(INFO_ARRAY_HEADER + index * size_of::<NrtTensorInfoC>())
                as *const NrtTensorInfoC)
                .read_unaligned()
        };
        let name_bytes: Vec<u8> =
            entry.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        let shape = if entry.shape.is_null() {
            Vec::new()
        } else {
            // SAFETY: `ndim` dimensions, owned by the array.
            unsafe { std::slice::from_raw_parts(entry.shape, entry.ndim as usize) }.to_vec()
        };
        entries.push(TensorInfo {
            name: String::from_utf8_lossy(&name_bytes).into_owned(),
            usage: TensorUsage::from_code(entry.usage).unwrap_or(TensorUsage::Output),
            size: entry.size,
            dtype: NrtDtype::from_code(numbering, entry.dtype),
            shape,
        });
    }
    entries
}

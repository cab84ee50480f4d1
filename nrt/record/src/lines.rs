//! What the arguments of each call mean, and the line recorded for it.
//!
//! [`plan`] says, for every function of the table in one match with no wildcard arm, what is
//! read before the call ([`Read`]) and how its line is made: a call a replay re-issues (the
//! lifecycle, loading, tensors, sets, launches, counts) is decoded from its raw C arguments
//! into the typed call of its `Runtime` method (`abi::runtime::call`) and its result into the
//! method's output, and the line is that typed call's, written by the same writer as
//! `abi::trace::TracingRuntime`'s; every other function is written `name(…) -> STATUS` (name and
//! result only), and a replay checks it against nothing but its position. A function added to
//! the table is a compile error in [`plan`] until it is given a decoder or a place among the
//! functions recorded by name.

use abi::functions::LibnrtFunction;
use abi::runtime::call::CallBytes;
use abi::trace::{INLINE_BYTES, UNRECORDED_ARGS, call_line};

use crate::decode::{self, Before, Call, Decoded, Effect, bytes, out_word};
use crate::real::status_name;
use crate::sink::{Part, record, record_line};

/// What the recorder reads before a call.
#[derive(Clone, Copy)]
enum Read {
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

/// The line of one call, from its raw arguments; see [`decode`].
type Decode = unsafe fn(&mut Call<'_, '_, '_>) -> Decoded;

/// How a function is recorded.
struct Plan {
    read: Read,
    /// How its line is made: the arguments that must not be NULL for the typed call to carry
    /// them (a replay passes real ones), and the decoder. `None`: by name and status only.
    detail: Option<(&'static [usize], Decode)>,
}

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
            let input = CallBytes::from(unsafe { bytes(args[pointer], args[size]) }.to_vec());
            if input.len() > INLINE_BYTES {
                crate::sink::keep_blob(&input, input.shown());
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
        let mut call = Call { args, result, before, generations, names };
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

/// How each function is recorded: every function of the table, once.
fn plan(function: LibnrtFunction) -> Plan {
    use LibnrtFunction as F;
    use Read::{Input, Nothing, Sync, Word};
    let detail = |read, nonzero, decode: Decode| Plan { read, detail: Some((nonzero, decode)) };
    let by_name = |read| Plan { read, detail: None };
    match function {
        // The calls a replay re-issues, decoded into their typed calls.
        F::nrt_init => detail(Nothing, &[1, 2], decode::nrt_init),
        F::nrt_close => detail(Nothing, &[], decode::nrt_close),
        F::nrt_load => detail(Input { pointer: 0, size: 1 }, &[0, 4], decode::nrt_load),
        F::nrt_load_collectives => {
            detail(Input { pointer: 0, size: 1 }, &[0, 6], decode::nrt_load_collectives)
        }
        F::nrt_unload => detail(Nothing, &[0], decode::nrt_unload),
        F::nrt_execute => detail(Sync, &[0, 1, 2], decode::nrt_execute),
        F::nrt_execute_repeat => detail(Sync, &[0, 1, 2], decode::nrt_execute_repeat),
        F::nrt_allocate_tensor_set => detail(Nothing, &[0], decode::nrt_allocate_tensor_set),
        F::nrt_destroy_tensor_set => detail(Word, &[0], decode::nrt_destroy_tensor_set),
        F::nrt_add_tensor_to_tensor_set => {
            detail(Nothing, &[0, 1, 2], decode::nrt_add_tensor_to_tensor_set)
        }
        F::nrt_get_tensor_from_tensor_set => {
            detail(Nothing, &[0, 1, 2], decode::nrt_get_tensor_from_tensor_set)
        }
        F::nrt_tensor_allocate => detail(Nothing, &[3, 4], decode::nrt_tensor_allocate),
        F::nrt_tensor_allocate_empty => detail(Nothing, &[0, 1], decode::nrt_tensor_allocate_empty),
        F::nrt_tensor_allocate_slice => {
            detail(Nothing, &[0, 3, 4], decode::nrt_tensor_allocate_slice)
        }
        F::nrt_tensor_attach_buffer => detail(Nothing, &[0, 1], decode::nrt_tensor_attach_buffer),
        F::nrt_tensor_free => detail(Word, &[0], decode::nrt_tensor_free),
        F::nrt_tensor_read => detail(Sync, &[0, 1], decode::nrt_tensor_read),
        F::nrt_tensor_write => {
            detail(Input { pointer: 1, size: 3 }, &[0, 1], decode::nrt_tensor_write)
        }
        F::nrt_tensor_copy => detail(Sync, &[0, 2], decode::nrt_tensor_copy),
        F::nrt_tensor_memset => detail(Nothing, &[0], decode::nrt_tensor_memset),
        F::nrt_tensor_get_size => detail(Nothing, &[0], decode::nrt_tensor_get_size),
        F::nrt_tensor_get_va => detail(Nothing, &[0], decode::nrt_tensor_get_va),
        F::nrt_get_version => detail(Nothing, &[0], decode::nrt_get_version),
        F::nrt_get_total_nc_count => detail(Nothing, &[0], decode::nrt_get_total_nc_count),
        F::nrt_get_total_vnc_count => detail(Nothing, &[0], decode::nrt_get_total_vnc_count),
        F::nrt_get_visible_nc_count => detail(Nothing, &[0], decode::nrt_get_visible_nc_count),
        F::nrt_get_visible_vnc_count => detail(Nothing, &[0], decode::nrt_get_visible_vnc_count),
        F::nrt_get_model_nc_count => detail(Nothing, &[0, 1], decode::nrt_get_model_nc_count),
        F::nrt_get_model_vnc_count => detail(Nothing, &[0, 1], decode::nrt_get_model_vnc_count),
        F::nrt_get_model_instance_count => {
            detail(Nothing, &[0, 1], decode::nrt_get_model_instance_count)
        }
        F::nrt_get_model_tensor_info => detail(Nothing, &[0, 1], decode::nrt_get_model_tensor_info),
        F::nrt_async_drain_queued_execs => {
            detail(Nothing, &[], decode::nrt_async_drain_queued_execs)
        }
        F::nrta_error_tracker_create => detail(Nothing, &[1], decode::nrta_error_tracker_create),
        F::nrta_error_tracker_destroy => detail(Nothing, &[0], decode::nrta_error_tracker_destroy),
        F::nrta_tensor_write => {
            detail(Input { pointer: 1, size: 3 }, &[0, 1, 6], decode::nrta_tensor_write)
        }
        F::nrta_tensor_read => detail(Sync, &[0, 1, 6], decode::nrta_tensor_read),
        F::nrta_execute_schedule => detail(Sync, &[0, 1, 2, 5], decode::nrta_execute_schedule),
        // Not a call line: the first `true` for a request is a `# completed` line.
        F::nrta_is_completed => detail(Nothing, &[1], decode::nrta_is_completed),

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

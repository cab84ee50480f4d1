//! The table of libnrt functions: every function the public libnrt headers declare, once.
//!
//! This file is the only list of libnrt functions in the workspace. Each entry gives, in order:
//! the C name, the public header that declares it, the pre-init rule ([`PreInit`]), whether a
//! fault plan may name it ([`Faults`]), whether every libnrt release the harness supports
//! exports it ([`Availability`]), and the signature with C type names spelled as Rust
//! identifiers (`NRT_STATUS`, `nrt_tensor_t`, `c_char`, `usize` for `size_t`). The C text of the
//! signature is derived from that typed form ([`FunctionInfo::c_declaration`]).
//!
//! Consumers expand the table with [`for_each_libnrt_function!`] and a macro of their own, with
//! the C type names in scope (the defaults are in [`crate::c_layout::c_types`]; an FFI crate may
//! shadow the handle types). Parameter names follow the public headers, except `unsafe` (a Rust
//! keyword), which is `untracked` here.
//!
//! [`PreInit`]: super::PreInit
//! [`Faults`]: super::Faults
//! [`Availability`]: super::Availability
//! [`FunctionInfo::c_declaration`]: super::FunctionInfo::c_declaration

/// Calls `$callback! { entries }` with every entry of the table, in header order.
///
/// An entry reads `name = header [pre_init, faults, availability] fn(arg: type, …) -> ret;`.
#[macro_export]
macro_rules! for_each_libnrt_function {
    ($callback:ident) => {
        $callback! {
            // nrt.h
            nrt_get_instance_info = nrt [Gated, Faults, Optional]
                fn(info: *mut nrt_instance_info_t, instance_info_len: usize) -> NRT_STATUS;
            nrt_init = nrt [Allowed, Faults, Always]
                fn(framework: nrt_framework_type_t, fw_version: *const c_char, fal_version: *const c_char) -> NRT_STATUS;
            nrt_close = nrt [Ungated, NoFaults, Always] fn();
            nrt_load = nrt [Gated, Faults, Always]
                fn(neff_bytes: *const c_void, size: usize, vnc: i32, vnc_count: i32, model: *mut *mut nrt_model_t) -> NRT_STATUS;
            nrt_load_collectives = nrt [Gated, Faults, Always]
                fn(neff_bytes: *const c_void, size: usize, vnc: i32, vnc_count: i32, ctx_device_id: u32, ctx_device_count: u32, model: *mut *mut nrt_model_t) -> NRT_STATUS;
            nrt_unload = nrt [Gated, Faults, Always] fn(model: *mut nrt_model_t) -> NRT_STATUS;
            nrt_get_model_nc_count = nrt [Gated, Faults, Optional]
                fn(model: *const nrt_model_t, vnc_count: *mut u32) -> NRT_STATUS;
            nrt_get_model_vnc_count = nrt [Gated, Faults, Optional]
                fn(model: *const nrt_model_t, vnc_count: *mut u32) -> NRT_STATUS;
            nrt_get_total_nc_count = nrt [Allowed, Faults, Optional] fn(vnc_count: *mut u32) -> NRT_STATUS;
            nrt_get_total_vnc_count = nrt [Allowed, Faults, Always] fn(vnc_count: *mut u32) -> NRT_STATUS;
            nrt_get_visible_nc_count = nrt [Allowed, Faults, Optional] fn(vnc_count: *mut u32) -> NRT_STATUS;
            nrt_get_visible_vnc_count = nrt [Allowed, Faults, Always] fn(vnc_count: *mut u32) -> NRT_STATUS;
            nrt_allocate_tensor_set = nrt [Gated, Faults, Always]
                fn(result: *mut *mut nrt_tensor_set_t) -> NRT_STATUS;
            nrt_destroy_tensor_set = nrt [Ungated, Faults, Always] fn(tensor_set: *mut *mut nrt_tensor_set_t);
            nrt_add_tensor_to_tensor_set = nrt [Gated, Faults, Always]
                fn(tensor_set: *mut nrt_tensor_set_t, tensor_name: *const c_char, tensor: *mut nrt_tensor_t) -> NRT_STATUS;
            nrt_get_tensor_from_tensor_set = nrt [Gated, Faults, Always]
                fn(tensor_set: *mut nrt_tensor_set_t, tensor_name: *const c_char, tensor: *mut *mut nrt_tensor_t) -> NRT_STATUS;
            nrt_execute = nrt [Gated, Faults, Always]
                fn(model: *mut nrt_model_t, input_set: *const nrt_tensor_set_t, output_set: *mut nrt_tensor_set_t) -> NRT_STATUS;
            nrt_execute_repeat = nrt [Gated, Faults, Always]
                fn(model: *mut nrt_model_t, input_set: *const nrt_tensor_set_t, output_set: *mut nrt_tensor_set_t, repeat_count: c_int) -> NRT_STATUS;
            nrt_build_global_comm = nrt [Gated, Faults, Optional]
                fn(vnc: i32, g_device_id: u32, g_device_count: u32) -> NRT_STATUS;
            nrt_tensor_allocate = nrt [Gated, Faults, Always]
                fn(tensor_placement: nrt_tensor_placement_t, vnc: c_int, size: usize, name: *const c_char, tensor: *mut *mut nrt_tensor_t) -> NRT_STATUS;
            nrt_tensor_free = nrt [Ungated, Faults, Always] fn(tensor: *mut *mut nrt_tensor_t);
            nrt_tensor_read = nrt [Gated, Faults, Always]
                fn(tensor: *const nrt_tensor_t, buf: *mut c_void, offset: usize, size: usize) -> NRT_STATUS;
            nrt_tensor_write = nrt [Gated, Faults, Always]
                fn(tensor: *mut nrt_tensor_t, buf: *const c_void, offset: usize, size: usize) -> NRT_STATUS;
            nrt_tensor_read_batch = nrt [Gated, Faults, Optional]
                fn(batches: *const nrt_tensor_batch_t, num_batches: u64, untracked: bool) -> NRT_STATUS;
            nrt_tensor_write_batch = nrt [Gated, Faults, Optional]
                fn(batches: *const nrt_tensor_batch_t, num_batches: u64, untracked: bool) -> NRT_STATUS;
            nrt_tensor_copy = nrt [Gated, Faults, Always]
                fn(src: *const nrt_tensor_t, src_offset: usize, dst: *mut nrt_tensor_t, dst_offset: usize, size: usize) -> NRT_STATUS;
            nrt_tensor_get_size = nrt [Ungated, Faults, Always] fn(tensor: *const nrt_tensor_t) -> usize;
            nrt_tensor_memset = nrt [Gated, Faults, Always]
                fn(tensor: *mut nrt_tensor_t, offset: u64, value: c_int, size: usize) -> NRT_STATUS;
            nrt_tensor_allocate_empty = nrt [Gated, Faults, Always]
                fn(name: *const c_char, tensor: *mut *mut nrt_tensor_t) -> NRT_STATUS;
            nrt_tensor_attach_buffer = nrt [Gated, Faults, Always]
                fn(tensor: *mut nrt_tensor_t, buffer: *mut c_void, size: usize) -> NRT_STATUS;
            nrt_tensor_allocate_slice = nrt [Gated, Faults, Always]
                fn(tensor_source: *const nrt_tensor_t, offset: usize, size: usize, name: *const c_char, tensor_slice: *mut *mut nrt_tensor_t) -> NRT_STATUS;
            nrt_tensor_get_va = nrt [Gated, Faults, Always] fn(tensor: *const nrt_tensor_t) -> *mut c_void;
            nrt_tensor_get_device_allocation_info = nrt [Gated, Faults, Optional]
                fn(tensor: *const nrt_tensor_t, alloc_info: *mut nrt_tensor_device_allocation_info_t) -> NRT_STATUS;
            nrt_tensor_check_output_completion = nrt [Gated, Faults, Optional]
                fn(output_tensor: *const nrt_tensor_t, timeout: i64, expected_completion_count: u64) -> NRT_STATUS;
            nrt_tensor_reset_output_completion = nrt [Gated, Faults, Optional]
                fn(output_tensor: *mut nrt_tensor_t) -> NRT_STATUS;
            nrt_get_dmabuf_fd = nrt [Gated, NoFaults, Optional] fn(va: u64, size: u64, fd: *mut c_int) -> NRT_STATUS;
            nrt_host_device_id_get = nrt [Gated, Faults, Optional]
                fn(neuron_dev: c_int, host_device_id: *mut u32) -> NRT_STATUS;
            nrt_host_device_id_rid_map_get = nrt [Gated, NoFaults, Optional]
                fn(count: *mut u32, host_did_to_rid_map: *mut u32) -> NRT_STATUS;
            nrt_get_hbm_mmap_va = nrt [Gated, NoFaults, Optional]
                fn(device_id: c_int, hbm_idx: c_int, addr: *mut *mut c_void, size: *mut usize) -> NRT_STATUS;
            nrt_get_vnc_memory_stats = nrt [Gated, Faults, Optional]
                fn(vnc: u32, stats: *mut nrt_vnc_memory_stats_t, stats_size_in: usize, stats_size_out: *mut usize) -> NRT_STATUS;
            nrt_get_attached_efa_bdf = nrt [Gated, NoFaults, Optional]
                fn(va: *const c_void, efa_bdf: *mut c_char, len: *mut usize) -> NRT_STATUS;
            nrt_cc_global_comm_init = nrt [Gated, Faults, Optional]
                fn(vnc: u32, g_device_id: u32, g_device_count: u32) -> NRT_STATUS;

            // nrt_experimental.h
            nrt_get_model_tensor_info = nrt_experimental [Gated, Faults, Always]
                fn(model: *mut nrt_model_t, tensor_info: *mut *mut nrt_tensor_info_array_t) -> NRT_STATUS;
            nrt_get_model_instance_count = nrt_experimental [Gated, Faults, Optional]
                fn(model: *mut nrt_model_t, instance_count: *mut u32) -> NRT_STATUS;
            nrt_free_model_tensor_info = nrt_experimental [Ungated, NoFaults, Always]
                fn(tensor_info: *mut nrt_tensor_info_array_t) -> NRT_STATUS;
            nrt_trace_start = nrt_experimental [Gated, Faults, Optional] fn(trace_mem: bool) -> NRT_STATUS;
            nrt_trace_stop = nrt_experimental [Gated, Faults, Optional] fn(filename: *const c_char) -> NRT_STATUS;
            nrt_get_libnccl_net = nrt_experimental [Ungated, NoFaults, Optional]
                fn(err: *mut c_int, err_msg: *mut c_char, err_msg_size: usize) -> *mut c_void;
            nrt_set_pool_eng_ucode = nrt_experimental [Required, NoFaults, Optional]
                fn(ucode_info: *const nrt_ucode_info) -> NRT_STATUS;
            nrt_memcpy_to_device = nrt_experimental [Gated, Faults, Optional]
                fn(dest: *mut c_void, src: *const c_void, size: usize) -> NRT_STATUS;
            nrt_register_async_exec_callback = nrt_experimental [Gated, Faults, Optional]
                fn(callback: NRT_ASYNC_EXEC_STATUS_CALLBACK, params: *mut c_void) -> NRT_STATUS;
            nrt_barrier = nrt_experimental [Gated, Faults, Optional]
                fn(vnc: i32, g_device_id: u32, g_device_count: u32) -> NRT_STATUS;
            nrt_all_gather = nrt_experimental [Gated, Faults, Optional]
                fn(vnc: i32, g_device_id: u32, g_device_count: u32, rank_input_size: u32, input: *mut c_void, output: *mut c_void) -> NRT_STATUS;
            nrt_async_drain_queued_execs = nrt_experimental [Gated, Faults, Optional] fn(vnc: i32) -> NRT_STATUS;
            nrt_get_model_info = nrt_experimental [Gated, Faults, Optional]
                fn(model: *const nrt_model_t, info: *mut nrt_model_info_t, info_size_in: usize, info_size_out: *mut usize) -> NRT_STATUS;

            // nrt_async.h
            nrta_tensor_write = nrt_async [Gated, Faults, Optional]
                fn(tensor: *mut nrt_tensor_t, buf: *const c_void, offset: u64, size: u64, queue: c_int, err: *mut nrta_error_tracker_t, req_sequence: *mut nrta_seq_t) -> NRT_STATUS;
            nrta_tensor_read = nrt_async [Gated, Faults, Optional]
                fn(buf: *mut c_void, tensor: *mut nrt_tensor_t, offset: u64, size: u64, queue: c_int, err: *mut nrta_error_tracker_t, req_sequence: *mut nrta_seq_t) -> NRT_STATUS;
            nrta_tensor_copy = nrt_async [Gated, Faults, Optional]
                fn(src: *mut nrt_tensor_t, src_offset: u64, dst: *mut nrt_tensor_t, dst_offset: u64, size: u64, queue: c_int, err: *mut nrta_error_tracker_t, req_sequence: *mut nrta_seq_t) -> NRT_STATUS;
            nrta_execute_schedule = nrt_async [Gated, Faults, Optional]
                fn(model: *mut nrt_model_t, input: *const nrt_tensor_set_t, output: *mut nrt_tensor_set_t, queue: c_int, err: *mut nrta_error_tracker_t, req_sequence: *mut nrta_seq_t) -> NRT_STATUS;
            nrta_cc_prepare = nrt_async [Gated, Faults, Optional]
                fn(comm: *mut nrt_cc_comm_t, input: *mut nrt_tensor_list_t, output: *mut nrt_tensor_list_t, dtype: nrt_dtype_t, op: nrt_op_type_t, cc_op: nrt_cc_op_type_t, cc_ctx: *mut *mut nrt_cc_context_t) -> NRT_STATUS;
            nrta_cc_schedule = nrt_async [Gated, Faults, Optional]
                fn(cc_ctx: *mut *mut nrt_cc_context_t, queue: c_int, err: *mut nrta_error_tracker_t, req_sequence: *mut nrta_seq_t) -> NRT_STATUS;
            nrta_is_completed = nrt_async [Gated, Faults, Optional] fn(seq: nrta_seq_t, is_completed: *mut bool) -> NRT_STATUS;
            nrta_get_sequence = nrt_async [Gated, Faults, Optional]
                fn(lnc: u32, xu: nrta_xu_t, queue: c_int, seq: *mut nrta_seq_t) -> NRT_STATUS;
            nrta_get_completion_handle = nrt_async [Gated, Faults, Optional]
                fn(seq: nrta_seq_t, fd: *mut c_int) -> NRT_STATUS;
            nrta_error_tracker_create = nrt_async [Gated, Faults, Optional]
                fn(lnc_idx: u32, error_tracker: *mut *mut nrta_error_tracker_t) -> NRT_STATUS;
            nrta_error_tracker_destroy = nrt_async [Ungated, NoFaults, Optional]
                fn(error_tracker: *mut nrta_error_tracker_t);
            nrta_error_tracker_get_list = nrt_async [Ungated, NoFaults, Optional]
                fn(error_tracker: *mut nrta_error_tracker_t, list: *mut *const nrta_error_t, error_count: *mut usize) -> NRT_STATUS;

            // nrt_profile.h
            nrt_profile_start = nrt_profile [Gated, Faults, Optional]
                fn(model: *mut nrt_model_t, filename: *const c_char) -> NRT_STATUS;
            nrt_profile_stop = nrt_profile [Gated, Faults, Optional] fn(filename: *const c_char) -> NRT_STATUS;
            nrt_profile_continuous_options_allocate = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut *mut nrt_profile_continuous_options_t) -> NRT_STATUS;
            nrt_profile_continuous_options_free = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_profile_continuous_options_t) -> NRT_STATUS;
            nrt_profile_continuous_options_set_output_dir = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_profile_continuous_options_t, output_dir: *const c_char) -> NRT_STATUS;
            nrt_profile_continuous_start = nrt_profile [Gated, Faults, Optional]
                fn(options: *mut nrt_profile_continuous_options_t) -> NRT_STATUS;
            nrt_profile_continuous_save = nrt_profile [Gated, Faults, Optional]
                fn(vnc: u32, options: *mut nrt_profile_continuous_options_t) -> NRT_STATUS;
            nrt_profile_continuous_stop = nrt_profile [Gated, Faults, Optional] fn() -> NRT_STATUS;
            nrt_inspect_begin = nrt_profile [Gated, Faults, Optional] fn() -> NRT_STATUS;
            nrt_inspect_stop = nrt_profile [Gated, Faults, Optional] fn() -> NRT_STATUS;
            nrt_inspect_config_allocate = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut *mut nrt_inspect_config_t) -> NRT_STATUS;
            nrt_inspect_config_set_defaults = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t) -> NRT_STATUS;
            nrt_inspect_config_free = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t) -> NRT_STATUS;
            nrt_inspect_config_set_session_id = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, session_id: c_int) -> NRT_STATUS;
            nrt_inspect_config_set_output_dir = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, output_dir: *const c_char) -> NRT_STATUS;
            nrt_inspect_config_set_sys_trace_max_events_per_nc = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, sys_trace_max_events_per_nc: u64) -> NRT_STATUS;
            nrt_inspect_config_set_capture_enabled_for_nc = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, nc_idx: u32, enabled: bool) -> NRT_STATUS;
            nrt_inspect_config_set_capture_enabled_for_event_type_string = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, event_type: *const c_char, enabled: bool) -> NRT_STATUS;
            nrt_inspect_config_set_enable_inspect = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, enable_inspect: bool) -> NRT_STATUS;
            nrt_inspect_config_set_enable_inspect_on_fail = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, enable_inspect_on_fail: bool) -> NRT_STATUS;
            nrt_inspect_begin_with_options = nrt_profile [Gated, Faults, Optional]
                fn(options: *mut nrt_inspect_config_t) -> NRT_STATUS;
            nrt_inspect_config_get_all_activity_types = nrt_profile [Ungated, NoFaults, Optional]
                fn(activity_types: *mut *mut *const c_char, count: *mut usize) -> NRT_STATUS;
            nrt_inspect_config_get_enabled_activity_types = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, activity_types: *mut *mut *const c_char, count: *mut usize) -> NRT_STATUS;
            nrt_inspect_config_free_activity_types = nrt_profile [Ungated, NoFaults, Optional]
                fn(activity_types: *mut *const c_char, count: usize);
            nrt_inspect_config_set_activity = nrt_profile [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_inspect_config_t, activity_type: *const c_char, enabled: bool) -> NRT_STATUS;

            // nrt_sys_trace.h
            nrt_sys_trace_config_allocate = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut *mut nrt_sys_trace_config_t) -> NRT_STATUS;
            nrt_sys_trace_config_set_defaults = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_config_t);
            nrt_sys_trace_config_free = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_config_t);
            nrt_sys_trace_config_set_max_events_per_nc = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_config_t, max_events_per_nc: u64);
            nrt_sys_trace_config_set_capture_enabled_for_nc = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_config_t, nc_idx: u32, enabled: bool);
            nrt_sys_trace_config_set_capture_enabled_for_event_type = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_config_t, event_type: *const c_char, enabled: bool) -> NRT_STATUS;
            nrt_sys_trace_get_event_types = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(event_types: *mut *mut *const c_char, count: *mut usize) -> NRT_STATUS;
            nrt_sys_trace_free_event_types = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(event_types: *mut *const c_char, count: usize);
            nrt_sys_trace_config_get_enabled_event_types = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_config_t, event_types: *mut *mut *const c_char, count: *mut usize) -> NRT_STATUS;
            nrt_sys_trace_start = nrt_sys_trace [Gated, Faults, Optional]
                fn(options: *mut nrt_sys_trace_config_t) -> NRT_STATUS;
            nrt_sys_trace_stop = nrt_sys_trace [Gated, Faults, Optional] fn() -> NRT_STATUS;
            nrt_sys_trace_fetch_options_allocate = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut *mut nrt_sys_trace_fetch_options_t) -> NRT_STATUS;
            nrt_sys_trace_fetch_options_set_defaults = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_fetch_options_t);
            nrt_sys_trace_fetch_options_free = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_fetch_options_t);
            nrt_sys_trace_fetch_options_set_max_events_per_nc = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_fetch_options_t, max_events_per_nc: u64);
            nrt_sys_trace_fetch_options_set_nc_idx = nrt_sys_trace [Ungated, NoFaults, Optional]
                fn(options: *mut nrt_sys_trace_fetch_options_t, nc_idx: u64);
            nrt_sys_trace_fetch_events = nrt_sys_trace [Gated, Faults, Optional]
                fn(buffer: *mut *mut c_char, written_size: *mut usize, options: *const nrt_sys_trace_fetch_options_t) -> NRT_STATUS;
            nrt_sys_trace_buffer_free = nrt_sys_trace [Ungated, NoFaults, Optional] fn(buffer: *mut c_char);

            // nrt_async_sendrecv.h
            nrt_async_sendrecv_get_max_num_communicators_per_lnc = nrt_async_sendrecv [Ungated, NoFaults, Optional]
                fn(num: *mut c_int) -> NRT_STATUS;
            nrt_async_sendrecv_get_max_num_pending_request = nrt_async_sendrecv [Ungated, NoFaults, Optional]
                fn(num: *mut c_int) -> NRT_STATUS;
            nrt_async_sendrecv_init = nrt_async_sendrecv [Gated, NoFaults, Optional] fn(lnc: c_int) -> NRT_STATUS;
            nrt_async_sendrecv_close = nrt_async_sendrecv [Gated, NoFaults, Optional] fn(lnc: c_int) -> NRT_STATUS;
            nrt_async_sendrecv_connect = nrt_async_sendrecv [Gated, NoFaults, Optional]
                fn(peer_ip: *const c_char, peer_lnc: c_int, lnc: c_int, send_comm: *mut *mut nrt_async_sendrecv_comm_t) -> NRT_STATUS;
            nrt_async_sendrecv_accept = nrt_async_sendrecv [Gated, NoFaults, Optional]
                fn(peer_ip: *const c_char, peer_lnc: c_int, lnc: c_int, recv_comm: *mut *mut nrt_async_sendrecv_comm_t) -> NRT_STATUS;
            nrt_async_sendrecv_test_comm = nrt_async_sendrecv [Gated, NoFaults, Optional]
                fn(comm: *mut nrt_async_sendrecv_comm_t, done: *mut bool) -> NRT_STATUS;
            nrt_async_sendrecv_send_tensor = nrt_async_sendrecv [Gated, NoFaults, Optional]
                fn(tensor: *mut nrt_tensor_t, offset: usize, length: usize, send_comm: *mut nrt_async_sendrecv_comm_t, request: *mut *mut nrt_async_sendrecv_request_t) -> NRT_STATUS;
            nrt_async_sendrecv_recv_tensor = nrt_async_sendrecv [Gated, NoFaults, Optional]
                fn(tensor: *mut nrt_tensor_t, offset: usize, length: usize, recv_comm: *mut nrt_async_sendrecv_comm_t, request: *mut *mut nrt_async_sendrecv_request_t) -> NRT_STATUS;
            nrt_async_sendrecv_test_request = nrt_async_sendrecv [Gated, NoFaults, Optional]
                fn(request: *mut nrt_async_sendrecv_request_t, done: *mut bool, size: *mut usize) -> NRT_STATUS;
            nrt_async_sendrecv_flush = nrt_async_sendrecv [Gated, NoFaults, Optional] fn(lnc: c_int) -> NRT_STATUS;

            // ndebug_stream.h
            nrt_debug_client_connect = ndebug_stream [Gated, NoFaults, Optional]
                fn(logical_nc_idx: c_int, stream_fd: *mut c_int) -> NRT_STATUS;
            nrt_debug_client_connect_close = ndebug_stream [Ungated, NoFaults, Optional] fn(stream_fd: c_int);
            nrt_debug_client_read_one_event = ndebug_stream [Gated, NoFaults, Optional]
                fn(stream_fd: c_int, header: *mut ndebug_stream_event_header_t, payload: *mut *mut c_void) -> NRT_STATUS;

            // nrt_version.h
            nrt_get_version = nrt_version [Allowed, Faults, Always]
                fn(ver: *mut nrt_version_t, size: usize) -> NRT_STATUS;

            // nrt_status.h
            nrt_get_status_as_str = nrt_status [Ungated, NoFaults, Always]
                fn(status: NRT_STATUS) -> *const c_char;
        }
    };
}

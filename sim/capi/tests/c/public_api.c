/*
 * The public libnrt API beyond the canonical flow, against nrtsim's libnrt.so.1, as a C11
 * client written against the public header set would use it: counts before init, instance and
 * model info, memory statistics, batched tensor I/O, the async API (queues, sequence numbers,
 * completion, error trackers, the exec callback), a system-trace capture fetched as JSON, a
 * model profile written to a file, and unsupported interfaces.
 *
 * Usage: public_api MODEL.neff PROFILE.json, where the model has input0 and output0, f32[4],
 * and output0 = 2 * input0; run with NRTSIM_INSTANCE=trn2.48xlarge and 64 MiB of HBM per core.
 * Prints "public api ok" and exits 0, or names the first failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L /* poll, close */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <poll.h>
#include <unistd.h>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_async_sendrecv.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_profile.h>
#include <nrt/nrt_sys_trace.h>

#include "check.h"

static int callbacks = 0;
static NRT_STATUS last_callback_status = NRT_FAILURE;
static uint64_t last_job_id = 0;

static void on_exec(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id,
                    NRT_STATUS status) {
    (void)model_id;
    last_job_id = job_id;
    ensure(params == (void *)&callbacks, "the callback gets its parameter");
    ensure(vnc == 0, "the callback names the model's core");
    callbacks++;
    last_callback_status = status;
}

int main(int argc, char **argv) {
    ensure(argc == 3, "usage: public_api MODEL.neff PROFILE.json");
    size_t neff_size = 0;
    void *neff = read_file(argv[1], &neff_size);

    /* Counts work before nrt_init, as the header says; gated calls do not. */
    uint32_t total = 0, visible = 0, total_nc = 0, visible_nc = 0;
    expect("nrt_get_total_nc_count before init", nrt_get_total_nc_count(&total_nc), NRT_SUCCESS);
    expect("nrt_get_visible_nc_count before init", nrt_get_visible_nc_count(&visible_nc),
           NRT_SUCCESS);
    expect("nrt_get_total_vnc_count before init", nrt_get_total_vnc_count(&total), NRT_SUCCESS);
    expect("nrt_get_visible_vnc_count before init", nrt_get_visible_vnc_count(&visible),
           NRT_SUCCESS);
    ensure(total == 2 && visible == 2 && total_nc == 2 && visible_nc == 2, "two cores");
    nrt_instance_info_t instance;
    expect("nrt_get_instance_info before init", nrt_get_instance_info(&instance, sizeof instance),
           NRT_UNINITIALIZED);

    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    expect("nrt_get_instance_info", nrt_get_instance_info(&instance, sizeof instance),
           NRT_SUCCESS);
    ensure(instance.family == NRT_INSTANCE_TRN2, "family from NRTSIM_INSTANCE");
    ensure(instance.size == NRT_INSTANCE_SIZE_48XL, "size from NRTSIM_INSTANCE");
    ensure(strcmp(instance.arch_name, "trn2") == 0, "the family name as arch_name");
    expect("nrt_get_instance_info too small", nrt_get_instance_info(&instance, 8), NRT_INVALID);

    /* A system trace capture of everything below. */
    const char **types = NULL;
    size_t n_types = 0;
    expect("nrt_sys_trace_get_event_types", nrt_sys_trace_get_event_types(&types, &n_types),
           NRT_SUCCESS);
    int has_exec = 0;
    for (size_t i = 0; i < n_types; i++) {
        has_exec |= strcmp(types[i], "nc_exec_running") == 0;
    }
    ensure(has_exec, "nc_exec_running is an event type");
    nrt_sys_trace_free_event_types(types, n_types);
    nrt_sys_trace_config_t *trace_config = NULL;
    expect("nrt_sys_trace_config_allocate", nrt_sys_trace_config_allocate(&trace_config),
           NRT_SUCCESS);
    nrt_sys_trace_config_set_max_events_per_nc(trace_config, 1000);
    expect("disable an unknown event type",
           nrt_sys_trace_config_set_capture_enabled_for_event_type(trace_config, "nope", false),
           NRT_INVALID);
    expect("disable dma_from_device",
           nrt_sys_trace_config_set_capture_enabled_for_event_type(trace_config,
                                                                   "dma_from_device", false),
           NRT_SUCCESS);
    expect("nrt_sys_trace_config_get_enabled_event_types",
           nrt_sys_trace_config_get_enabled_event_types(trace_config, &types, &n_types),
           NRT_SUCCESS);
    ensure(n_types == 4, "four event types stay enabled");
    nrt_sys_trace_free_event_types(types, n_types);
    expect("nrt_sys_trace_start", nrt_sys_trace_start(trace_config), NRT_SUCCESS);
    expect("nrt_sys_trace_start twice", nrt_sys_trace_start(trace_config), NRT_INVALID);

    nrt_vnc_memory_stats_t before, after;
    size_t written = 0;
    expect("nrt_get_vnc_memory_stats",
           nrt_get_vnc_memory_stats(0, &before, sizeof before, &written), NRT_SUCCESS);
    ensure(written == sizeof before, "the whole struct is written");
    ensure(before.bytes_limit == 64u << 20, "the limit is the core's HBM");

    nrt_model_t *model = NULL;
    expect("nrt_load", nrt_load(neff, neff_size, 0, -1, &model), NRT_SUCCESS);
    uint32_t count = 0;
    expect("nrt_get_model_nc_count", nrt_get_model_nc_count(model, &count), NRT_SUCCESS);
    ensure(count == 1, "the model occupies one core");
    expect("nrt_get_model_vnc_count", nrt_get_model_vnc_count(model, &count), NRT_SUCCESS);
    ensure(count == 1, "the model occupies one vnc");
    expect("nrt_get_model_instance_count", nrt_get_model_instance_count(model, &count),
           NRT_SUCCESS);
    ensure(count == 1, "one instance");
    nrt_model_info_t model_info;
    expect("nrt_get_model_info",
           nrt_get_model_info(model, &model_info, sizeof model_info, &written), NRT_SUCCESS);
    ensure(model_info.vnc == 0 && written == sizeof model_info, "the model is on core 0");

    nrt_tensor_set_t *inputs = NULL, *outputs = NULL;
    nrt_tensor_t *input = NULL, *output = NULL;
    expect("nrt_allocate_tensor_set", nrt_allocate_tensor_set(&inputs), NRT_SUCCESS);
    expect("nrt_allocate_tensor_set", nrt_allocate_tensor_set(&outputs), NRT_SUCCESS);
    expect("nrt_tensor_allocate input",
           nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "input0", &input), NRT_SUCCESS);
    expect("nrt_tensor_allocate output",
           nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "output0", &output),
           NRT_SUCCESS);
    expect("add input0", nrt_add_tensor_to_tensor_set(inputs, "input0", input), NRT_SUCCESS);
    expect("add output0", nrt_add_tensor_to_tensor_set(outputs, "output0", output), NRT_SUCCESS);
    expect("nrt_get_vnc_memory_stats after", nrt_get_vnc_memory_stats(0, &after, sizeof after, NULL),
           NRT_SUCCESS);
    ensure(after.bytes_used >= before.bytes_used + 32, "two device tensors are counted");

    nrt_tensor_device_allocation_info_t allocation;
    expect("nrt_tensor_get_device_allocation_info",
           nrt_tensor_get_device_allocation_info(input, &allocation), NRT_SUCCESS);
    ensure(allocation.size == 16 && allocation.physical_address != 0, "allocation info");

    /* Batched I/O: two ranges of one tensor in one call. */
    float low[2] = {1.0f, 2.0f}, high[2] = {3.0f, -4.0f};
    nrt_tensor_batch_op_t write_ops[2] = {{0, 8, low}, {8, 8, high}};
    nrt_tensor_batch_t write_batch = {input, write_ops, 2};
    expect("nrt_tensor_write_batch", nrt_tensor_write_batch(&write_batch, 1, false), NRT_SUCCESS);
    expect("nrt_execute", nrt_execute(model, inputs, outputs), NRT_SUCCESS);
    float out_low[2] = {0}, out_high[2] = {0};
    nrt_tensor_batch_op_t read_ops[2] = {{0, 8, out_low}, {8, 8, out_high}};
    nrt_tensor_batch_t read_batch = {output, read_ops, 2};
    expect("nrt_tensor_read_batch", nrt_tensor_read_batch(&read_batch, 1, false), NRT_SUCCESS);
    ensure(out_low[0] == 2.0f && out_low[1] == 4.0f && out_high[0] == 6.0f && out_high[1] == -8.0f,
           "batched read of the doubled input");

    /* The async flow: write, execute, read on their queues; completion by polling. */
    expect("nrt_register_async_exec_callback",
           nrt_register_async_exec_callback(on_exec, &callbacks), NRT_SUCCESS);
    nrta_error_tracker_t *tracker = NULL;
    expect("nrta_error_tracker_create", nrta_error_tracker_create(0, &tracker), NRT_SUCCESS);
    const float async_in[4] = {0.5f, 1.5f, -2.0f, 8.0f};
    float async_out[4] = {0};
    nrta_seq_t write_seq = 0, exec_seq = 0, read_seq = 0, bad_seq = 0;
    expect("nrta_tensor_write",
           nrta_tensor_write(input, async_in, 0, sizeof async_in, 0, tracker, &write_seq),
           NRT_SUCCESS);
    ensure(NRTA_SEQ_GET_SEQ_NUM(write_seq) == 1, "the first write has number 1");
    wait_for(write_seq);
    expect("nrta_execute_schedule",
           nrta_execute_schedule(model, inputs, outputs, 0, tracker, &exec_seq), NRT_SUCCESS);
    ensure(NRTA_SEQ_GET_XU_ID(exec_seq) != NRTA_SEQ_GET_XU_ID(write_seq),
           "compute and tensor writes are different execution units");
    expect("nrta_execute_schedule on queue 1",
           nrta_execute_schedule(model, inputs, outputs, 1, tracker, &bad_seq), NRT_INVALID);
    wait_for(exec_seq);
    nrta_seq_t last = 0;
    expect("nrta_get_sequence", nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &last), NRT_SUCCESS);
    ensure(last == exec_seq, "the last completed compute request is the execution");
    expect("nrta_tensor_read",
           nrta_tensor_read(async_out, output, 0, sizeof async_out, 0, tracker, &read_seq),
           NRT_SUCCESS);
    expect("nrta_tensor_read out of range",
           nrta_tensor_read(async_out, output, 8, sizeof async_out, 0, tracker, &bad_seq),
           NRT_SUCCESS);
    expect("nrt_async_drain_queued_execs", nrt_async_drain_queued_execs(0), NRT_SUCCESS);
    bool done = false;
    expect("nrta_is_completed after drain", nrta_is_completed(bad_seq, &done), NRT_SUCCESS);
    ensure(done, "drained requests are complete");
    expect("nrta_is_completed of a sequence never issued", nrta_is_completed(bad_seq + 5, &done),
           NRT_INVALID);
    int completion = -1;
    expect("nrta_get_completion_handle",
           nrta_get_completion_handle(read_seq, &completion), NRT_SUCCESS);
    struct pollfd ready = {completion, POLLIN, 0};
    ensure(poll(&ready, 1, 10000) == 1 && (ready.revents & POLLIN) != 0,
           "the handle of a completed request polls readable");
    ensure(close(completion) == 0, "the caller closes the handle");
    expect("nrta_get_completion_handle of a sequence never issued",
           nrta_get_completion_handle(bad_seq + 5, &completion), NRT_INVALID);
    for (int i = 0; i < 4; i++) {
        ensure(async_out[i] == 2.0f * async_in[i], "the async read sees the async execution");
    }
    ensure(callbacks == 1 && last_callback_status == NRT_SUCCESS, "one callback, success");
    ensure(last_job_id == exec_seq, "the callback's job id is the execution's sequence id");
    const nrta_error_t *errors = NULL;
    size_t n_errors = 0;
    expect("nrta_error_tracker_get_list", nrta_error_tracker_get_list(tracker, &errors, &n_errors),
           NRT_SUCCESS);
    ensure(n_errors == 1, "one failed request");
    ensure(errors[0].seq_id == bad_seq && errors[0].error_code == NRT_INVALID,
           "the out-of-range read failed with NRT_INVALID");
    nrta_error_tracker_destroy(tracker);

    /* Output completion: two launches (one sync, one async) wrote output0 so far. */
    expect("two completions", nrt_tensor_check_output_completion(output, 0, 2), NRT_SUCCESS);
    expect("a third completion times out", nrt_tensor_check_output_completion(output, 1000, 3),
           NRT_TIMEOUT);
    expect("nrt_tensor_reset_output_completion", nrt_tensor_reset_output_completion(output),
           NRT_SUCCESS);
    expect("no completion after reset", nrt_tensor_check_output_completion(output, 0, 1),
           NRT_TIMEOUT);
    expect("completion of NULL", nrt_tensor_check_output_completion(NULL, 0, 1), NRT_INVALID);

    /* nrt_memcpy_to_device: into device memory given by nrt_tensor_get_va, nowhere else. */
    char *input_va = (char *)nrt_tensor_get_va(input);
    const float seven = 7.0f;
    expect("nrt_memcpy_to_device", nrt_memcpy_to_device(input_va + 4, &seven, sizeof seven),
           NRT_SUCCESS);
    float readback[4] = {0};
    expect("nrt_tensor_read", nrt_tensor_read(input, readback, 0, sizeof readback), NRT_SUCCESS);
    ensure(readback[1] == 7.0f, "nrt_memcpy_to_device wrote the tensor");
    float host[4];
    expect("nrt_memcpy_to_device to host memory",
           nrt_memcpy_to_device(host, &seven, sizeof seven), NRT_INVALID);
    expect("nrt_memcpy_to_device past the tensor",
           nrt_memcpy_to_device(input_va + 14, &seven, sizeof seven), NRT_INVALID);

    /* The capture saw the load and the launches. */
    char *json = NULL;
    size_t json_size = 0;
    expect("nrt_sys_trace_fetch_events", nrt_sys_trace_fetch_events(&json, &json_size, NULL),
           NRT_SUCCESS);
    ensure(json != NULL && strlen(json) == json_size, "a NUL-terminated JSON string");
    ensure(strstr(json, "\"event_type\":\"model_load\"") != NULL, "the load is traced");
    ensure(strstr(json, "\"event_type\":\"nc_exec_running\"") != NULL, "launches are traced");
    ensure(strstr(json, "\"event_type\":\"dma_to_device\"") != NULL, "writes are traced");
    ensure(strstr(json, "dma_from_device") == NULL, "a disabled event type is not traced");
    nrt_sys_trace_buffer_free(json);
    expect("nrt_sys_trace_stop", nrt_sys_trace_stop(), NRT_SUCCESS);
    expect("fetch after stop", nrt_sys_trace_fetch_events(&json, &json_size, NULL), NRT_INVALID);
    nrt_sys_trace_config_free(trace_config);

    /* A model profile. */
    expect("nrt_profile_start", nrt_profile_start(model, argv[2]), NRT_SUCCESS);
    expect("nrt_execute (profiled)", nrt_execute(model, inputs, outputs), NRT_SUCCESS);
    expect("nrt_execute (profiled)", nrt_execute(model, inputs, outputs), NRT_SUCCESS);
    expect("nrt_profile_stop", nrt_profile_stop(NULL), NRT_SUCCESS);
    size_t profile_size = 0;
    char *profile = read_file(argv[2], &profile_size);
    ensure(strstr(profile, "\"format\": \"nrtsim-profile-1\"") != NULL, "the profile's format");
    ensure(strstr(profile, "nc_exec_running") != NULL, "the profile lists the executions");
    free(profile);
    expect("nrt_profile_stop twice", nrt_profile_stop(NULL), NRT_INVALID);

    /* What a simulator cannot have is NRT_INVALID, never a silent success. */
    int fd = -1;
    expect("nrt_get_dmabuf_fd", nrt_get_dmabuf_fd(0, 16, &fd), NRT_INVALID);
    void *va = NULL;
    size_t hbm_size = 0;
    expect("nrt_get_hbm_mmap_va", nrt_get_hbm_mmap_va(0, 0, &va, &hbm_size), NRT_INVALID);
    int err = 0;
    char message[64];
    ensure(nrt_get_libnccl_net(&err, message, sizeof message) == NULL && err != 0,
           "no NCCL network plugin");
    uint32_t host_id = 7;
    expect("nrt_host_device_id_get", nrt_host_device_id_get(0, &host_id), NRT_SUCCESS);
    ensure(host_id == 0, "device 0 is host device 0");
    expect("nrt_barrier of one rank", nrt_barrier(0, 0, 1), NRT_SUCCESS);
    float gathered[4] = {0};
    expect("nrt_all_gather of one rank", nrt_all_gather(0, 0, 1, sizeof low, low, gathered),
           NRT_SUCCESS);
    ensure(gathered[0] == 1.0f && gathered[1] == 2.0f, "one rank gathers its own input");
    expect("nrt_barrier of rank 2 of 2", nrt_barrier(0, 2, 2), NRT_INVALID);
    expect("nrt_async_sendrecv_init", nrt_async_sendrecv_init(0), NRT_INVALID);

    nrt_tensor_free(&input);
    nrt_tensor_free(&output);
    nrt_destroy_tensor_set(&inputs);
    nrt_destroy_tensor_set(&outputs);
    expect("nrt_unload", nrt_unload(model), NRT_SUCCESS);
    nrt_close();
    free(neff);
    printf("public api ok\n");
    return 0;
}

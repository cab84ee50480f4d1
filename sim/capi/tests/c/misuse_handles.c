/*
 * Misuse of the handle types beyond tensors, sets and models (error trackers, system-trace
 * configs, fetch options, continuous-profiling options, inspect configs): NULL is NRT_INVALID,
 * a freed handle or a handle of another kind is NRT_INVALID_HANDLE, and the void functions
 * ignore them; nothing crashes. Prints "misuse of handles ok" and exits 0, or names the first
 * failed check and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_profile.h>
#include <nrt/nrt_sys_trace.h>

#include "check.h"

int main(void) {
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    nrt_tensor_t *tensor = NULL;
    expect("nrt_tensor_allocate",
           nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "t", &tensor), NRT_SUCCESS);
    char buffer[16] = {0};
    nrta_seq_t seq = 0;
    const nrta_error_t *errors = NULL;
    size_t count = 0;
    const char **names = NULL;

    /* Error trackers. */
    nrta_error_tracker_t *tracker = NULL;
    expect("tracker on a missing core", nrta_error_tracker_create(9, &tracker), NRT_INVALID);
    expect("tracker into NULL", nrta_error_tracker_create(0, NULL), NRT_INVALID);
    expect("nrta_error_tracker_create", nrta_error_tracker_create(0, &tracker), NRT_SUCCESS);
    expect("list of NULL", nrta_error_tracker_get_list(NULL, &errors, &count), NRT_INVALID);
    expect("list into NULL", nrta_error_tracker_get_list(tracker, NULL, &count), NRT_INVALID);
    expect("list of a tensor",
           nrta_error_tracker_get_list((nrta_error_tracker_t *)tensor, &errors, &count),
           NRT_INVALID_HANDLE);
    expect("list of a made-up handle",
           nrta_error_tracker_get_list((nrta_error_tracker_t *)(uintptr_t)0x1234, &errors, &count),
           NRT_INVALID_HANDLE);
    nrta_error_tracker_destroy(tracker);
    expect("list of a destroyed tracker", nrta_error_tracker_get_list(tracker, &errors, &count),
           NRT_INVALID_HANDLE);
    expect("write with a destroyed tracker",
           nrta_tensor_write(tensor, buffer, 0, 16, 0, tracker, &seq), NRT_INVALID_HANDLE);
    expect("write with a tensor as tracker",
           nrta_tensor_write(tensor, buffer, 0, 16, 0, (nrta_error_tracker_t *)tensor, &seq),
           NRT_INVALID_HANDLE);
    expect("write of a tracker as tensor",
           nrta_tensor_write((nrt_tensor_t *)tracker, buffer, 0, 16, 0, NULL, &seq),
           NRT_INVALID_HANDLE);
    expect("write from NULL", nrta_tensor_write(tensor, NULL, 0, 16, 0, NULL, &seq), NRT_INVALID);
    expect("write on queue 99", nrta_tensor_write(tensor, buffer, 0, 16, 99, NULL, &seq),
           NRT_INVALID);
    nrta_error_tracker_destroy(tracker);
    nrta_error_tracker_destroy(NULL);
    bool done = false;
    expect("completion of a made-up sequence", nrta_is_completed(12345, &done), NRT_INVALID);
    expect("completion into NULL", nrta_is_completed(12345, NULL), NRT_INVALID);

    /* System trace configs and fetch options. */
    nrt_sys_trace_config_t *config = NULL;
    nrt_sys_trace_fetch_options_t *fetch = NULL;
    expect("config into NULL", nrt_sys_trace_config_allocate(NULL), NRT_INVALID);
    expect("nrt_sys_trace_config_allocate", nrt_sys_trace_config_allocate(&config), NRT_SUCCESS);
    expect("nrt_sys_trace_fetch_options_allocate", nrt_sys_trace_fetch_options_allocate(&fetch),
           NRT_SUCCESS);
    expect("event type of NULL",
           nrt_sys_trace_config_set_capture_enabled_for_event_type(NULL, "model_load", true),
           NRT_INVALID);
    expect("event type of fetch options",
           nrt_sys_trace_config_set_capture_enabled_for_event_type(
               (nrt_sys_trace_config_t *)fetch, "model_load", true),
           NRT_INVALID_HANDLE);
    expect("start with fetch options", nrt_sys_trace_start((nrt_sys_trace_config_t *)fetch),
           NRT_INVALID_HANDLE);
    nrt_sys_trace_config_set_max_events_per_nc(NULL, 5);
    nrt_sys_trace_config_set_capture_enabled_for_nc((nrt_sys_trace_config_t *)tensor, 0, false);
    nrt_sys_trace_config_set_defaults((nrt_sys_trace_config_t *)(uintptr_t)0x1234);
    nrt_sys_trace_config_free(config);
    expect("enabled types of a freed config",
           nrt_sys_trace_config_get_enabled_event_types(config, &names, &count),
           NRT_INVALID_HANDLE);
    expect("start with a freed config", nrt_sys_trace_start(config), NRT_INVALID_HANDLE);
    nrt_sys_trace_config_free(config);
    nrt_sys_trace_config_free(NULL);
    expect("start with the defaults", nrt_sys_trace_start(NULL), NRT_SUCCESS);
    char *json = NULL;
    size_t size = 0;
    expect("fetch with a config as options",
           nrt_sys_trace_fetch_events(&json, &size, (const nrt_sys_trace_fetch_options_t *)config),
           NRT_INVALID_HANDLE);
    expect("fetch into NULL", nrt_sys_trace_fetch_events(NULL, &size, fetch), NRT_INVALID);
    nrt_sys_trace_fetch_options_free(fetch);
    expect("fetch with freed options", nrt_sys_trace_fetch_events(&json, &size, fetch),
           NRT_INVALID_HANDLE);
    nrt_sys_trace_fetch_options_set_nc_idx(fetch, 1);
    nrt_sys_trace_fetch_options_free(fetch);
    nrt_sys_trace_buffer_free(NULL);
    expect("nrt_sys_trace_stop", nrt_sys_trace_stop(), NRT_SUCCESS);
    expect("stop twice", nrt_sys_trace_stop(), NRT_INVALID);

    /* Continuous-profiling options and inspect configs. */
    nrt_profile_continuous_options_t *continuous = NULL;
    nrt_inspect_config_t *inspect = NULL;
    expect("nrt_profile_continuous_options_allocate",
           nrt_profile_continuous_options_allocate(&continuous), NRT_SUCCESS);
    expect("nrt_inspect_config_allocate", nrt_inspect_config_allocate(&inspect), NRT_SUCCESS);
    expect("output dir of NULL", nrt_profile_continuous_options_set_output_dir(NULL, "out"),
           NRT_INVALID);
    expect("output dir of an inspect config",
           nrt_profile_continuous_options_set_output_dir(
               (nrt_profile_continuous_options_t *)inspect, "out"),
           NRT_INVALID_HANDLE);
    expect("empty output dir", nrt_inspect_config_set_output_dir(inspect, ""), NRT_INVALID);
    expect("session of NULL", nrt_inspect_config_set_session_id(NULL, 3), NRT_INVALID);
    expect("session of continuous options",
           nrt_inspect_config_set_session_id((nrt_inspect_config_t *)continuous, 3),
           NRT_INVALID_HANDLE);
    expect("unknown activity", nrt_inspect_config_set_activity(inspect, "nope", true),
           NRT_INVALID);
    expect("free continuous options", nrt_profile_continuous_options_free(continuous),
           NRT_SUCCESS);
    expect("free continuous options twice", nrt_profile_continuous_options_free(continuous),
           NRT_INVALID_HANDLE);
    expect("free NULL continuous options", nrt_profile_continuous_options_free(NULL),
           NRT_INVALID);
    expect("start with freed options", nrt_profile_continuous_start(continuous),
           NRT_INVALID_HANDLE);
    expect("free the inspect config", nrt_inspect_config_free(inspect), NRT_SUCCESS);
    expect("begin with a freed config", nrt_inspect_begin_with_options(inspect),
           NRT_INVALID_HANDLE);
    expect("defaults of a freed config", nrt_inspect_config_set_defaults(inspect),
           NRT_INVALID_HANDLE);
    expect("inspect stop without begin", nrt_inspect_stop(), NRT_INVALID);

    nrt_tensor_free(&tensor);
    nrt_close();
    printf("misuse of handles ok\n");
    return 0;
}

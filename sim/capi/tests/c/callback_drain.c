/*
 * A C client that re-enters libnrt from its exec callback: the callback registered with
 * nrt_register_async_exec_callback calls nrt_async_drain_queued_execs on the core whose launch
 * it reports. The callback runs on the worker of that core's compute queue, so the drain cannot
 * wait for its own request: it must return (the simulator answers NRT_INVALID) instead of
 * blocking forever. The main thread waits for the launch with a deadline, so a drain that hangs
 * fails this program within seconds instead of hanging it.
 *
 * Usage: callback_drain MODEL.neff (input0 and output0, f32[4], output0 = 2 * input0).
 * Prints "callback drain ok" and exits 0, or names the first failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_experimental.h>

#include "check.h"

/* How long the launch may take, callback included, before the drain counts as hung. */
#define DEADLINE_SECONDS 10

static atomic_int callbacks = 0;
static atomic_int entered_drain = 0;
static atomic_uint drain_status = NRT_FAILURE;

static void drain_from_callback(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id,
                                NRT_STATUS status) {
    (void)params;
    (void)model_id;
    (void)job_id;
    (void)status;
    atomic_store(&entered_drain, 1);
    atomic_store(&drain_status, (unsigned)nrt_async_drain_queued_execs((int32_t)vnc));
    atomic_fetch_add(&callbacks, 1);
}

static double now_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Waits for `seq` until the deadline; a request still pending then is reported, and the process
 * leaves at once (_exit: a worker blocked in the library must not hold up the exit). */
static void wait_with_deadline(nrta_seq_t seq) {
    double deadline = now_seconds() + DEADLINE_SECONDS;
    struct timespec pause = {0, 1000000};
    for (;;) {
        bool done = false;
        expect("nrta_is_completed", nrta_is_completed(seq, &done), NRT_SUCCESS);
        if (done) {
            return;
        }
        if (now_seconds() > deadline) {
            printf("check failed: the launch did not complete within %d s (the callback %s "
                   "nrt_async_drain_queued_execs and never came back)\n",
                   DEADLINE_SECONDS, atomic_load(&entered_drain) ? "called" : "never called");
            fflush(stdout);
            _exit(1);
        }
        nanosleep(&pause, NULL);
    }
}

int main(int argc, char **argv) {
    ensure(argc == 2, "usage: callback_drain MODEL.neff");
    size_t neff_size = 0;
    void *neff = read_file(argv[1], &neff_size);
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    nrt_model_t *model = NULL;
    expect("nrt_load", nrt_load(neff, neff_size, 0, -1, &model), NRT_SUCCESS);
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
    const float values[4] = {1.0f, -2.0f, 3.5f, 0.25f};
    expect("nrt_tensor_write", nrt_tensor_write(input, values, 0, sizeof values), NRT_SUCCESS);

    expect("nrt_register_async_exec_callback",
           nrt_register_async_exec_callback(drain_from_callback, NULL), NRT_SUCCESS);
    nrta_error_tracker_t *tracker = NULL;
    expect("nrta_error_tracker_create", nrta_error_tracker_create(0, &tracker), NRT_SUCCESS);
    nrta_seq_t exec_seq = 0;
    expect("nrta_execute_schedule",
           nrta_execute_schedule(model, inputs, outputs, 0, tracker, &exec_seq), NRT_SUCCESS);
    wait_with_deadline(exec_seq);
    ensure(atomic_load(&callbacks) == 1, "the callback ran once and returned");
    expect("nrt_async_drain_queued_execs from the callback", (NRT_STATUS)atomic_load(&drain_status),
           NRT_INVALID);

    /* The refused drain changed nothing: the launch succeeded, its output is written, and a
     * drain from the client's own thread (no callback registered now) waits and succeeds. */
    const nrta_error_t *errors = NULL;
    size_t n_errors = 0;
    expect("nrta_error_tracker_get_list", nrta_error_tracker_get_list(tracker, &errors, &n_errors),
           NRT_SUCCESS);
    ensure(n_errors == 0, "the launch whose callback drained did not fail");
    float doubled[4] = {0};
    expect("nrt_tensor_read", nrt_tensor_read(output, doubled, 0, sizeof doubled), NRT_SUCCESS);
    for (int i = 0; i < 4; i++) {
        ensure(doubled[i] == 2.0f * values[i], "the launch wrote the doubled input");
    }
    expect("unregister the callback", nrt_register_async_exec_callback(NULL, NULL), NRT_SUCCESS);
    expect("nrta_execute_schedule again",
           nrta_execute_schedule(model, inputs, outputs, 0, tracker, &exec_seq), NRT_SUCCESS);
    expect("nrt_async_drain_queued_execs from the client",
           nrt_async_drain_queued_execs(0), NRT_SUCCESS);
    bool done = false;
    expect("nrta_is_completed after the drain", nrta_is_completed(exec_seq, &done), NRT_SUCCESS);
    ensure(done, "a drain from the client's thread waits for the launch");

    nrta_error_tracker_destroy(tracker);
    nrt_tensor_free(&input);
    nrt_tensor_free(&output);
    nrt_destroy_tensor_set(&inputs);
    nrt_destroy_tensor_set(&outputs);
    expect("nrt_unload", nrt_unload(model), NRT_SUCCESS);
    nrt_close();
    free(neff);
    printf("callback drain ok\n");
    return 0;
}

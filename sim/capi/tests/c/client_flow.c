/*
 * The canonical libnrt client flow, against nrtsim's libnrt.so.1:
 * init -> load -> get_model_tensor_info -> allocate one tensor per info entry with its size ->
 * add to the input or output set by name -> write -> execute -> read -> free -> destroy sets ->
 * free info -> unload -> close.
 *
 * Usage: client_flow MODEL.neff, where the model has input0 and output0, f32[4], and
 * output0 = 2 * input0. Prints "client flow ok" and exits 0, or names the first failed check
 * and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nrt/nrt.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_version.h>

#include "check.h"

_Static_assert(sizeof(nrt_tensor_info_t) == 296, "nrt_tensor_info_t is 296 bytes");
_Static_assert(sizeof(nrt_version_t) == 224, "nrt_version_t is 224 bytes");
_Static_assert(sizeof(NRT_STATUS) == 4, "NRT_STATUS is a 4-byte enum");

static void check_output(nrt_tensor_t *tensor, const float *want) {
    float got[4];
    expect("nrt_tensor_read", nrt_tensor_read(tensor, got, 0, sizeof got), NRT_SUCCESS);
    for (int i = 0; i < 4; i++) {
        if (got[i] != want[i]) {
            printf("output0[%d] is %g, expected %g\n", i, got[i], want[i]);
            exit(1);
        }
    }
}

int main(int argc, char **argv) {
    ensure(argc == 2, "usage: client_flow MODEL.neff");
    size_t neff_size = 0;
    void *neff = read_file(argv[1], &neff_size);

    nrt_version_t version;
    expect("nrt_get_version", nrt_get_version(&version, sizeof version), NRT_SUCCESS);
    ensure(version.rt_major >= 2, "runtime major version is at least 2");
    ensure(strlen(version.rt_detail) < sizeof version.rt_detail, "detail is NUL-terminated");

    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    uint32_t visible = 0;
    expect("nrt_get_visible_vnc_count", nrt_get_visible_vnc_count(&visible), NRT_SUCCESS);
    ensure(visible >= 1, "at least one visible NeuronCore");

    nrt_model_t *model = NULL;
    expect("nrt_load", nrt_load(neff, neff_size, 0, 1, &model), NRT_SUCCESS);
    ensure(model != NULL, "nrt_load gives a model");

    nrt_tensor_info_array_t *info = NULL;
    expect("nrt_get_model_tensor_info", nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
    ensure(info != NULL && info->tensor_count == 2, "two tensors: input0 then output0");
    ensure(strcmp(info->tensor_array[0].name, "input0") == 0, "inputs come first");
    ensure(info->tensor_array[0].usage == NRT_TENSOR_USAGE_INPUT, "input0 is an input");
    ensure(info->tensor_array[1].usage == NRT_TENSOR_USAGE_OUTPUT, "output0 is an output");
    ensure(info->tensor_array[0].size == 16, "input0 is 16 bytes");
    ensure(info->tensor_array[0].ndim == 1 && info->tensor_array[0].shape[0] == 4, "shape [4]");

    nrt_tensor_set_t *inputs = NULL, *outputs = NULL;
    expect("nrt_allocate_tensor_set", nrt_allocate_tensor_set(&inputs), NRT_SUCCESS);
    expect("nrt_allocate_tensor_set", nrt_allocate_tensor_set(&outputs), NRT_SUCCESS);

    nrt_tensor_t *tensors[2] = {NULL, NULL};
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        nrt_tensor_info_t *entry = &info->tensor_array[i];
        expect("nrt_tensor_allocate",
               nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, entry->size, entry->name,
                                   &tensors[i]),
               NRT_SUCCESS);
        nrt_tensor_set_t *set = entry->usage == NRT_TENSOR_USAGE_INPUT ? inputs : outputs;
        expect("nrt_add_tensor_to_tensor_set",
               nrt_add_tensor_to_tensor_set(set, entry->name, tensors[i]), NRT_SUCCESS);
    }
    ensure(nrt_tensor_get_size(tensors[0]) == 16, "nrt_tensor_get_size is the allocated size");
    /* The va is the simulated storage itself: bytes stored through it read back. */
    float *va = (float *)nrt_tensor_get_va(tensors[0]);
    ensure(va != NULL, "a device tensor has an address");
    va[2] = 42.0f;
    float through_va[4] = {0};
    expect("nrt_tensor_read", nrt_tensor_read(tensors[0], through_va, 0, sizeof through_va),
           NRT_SUCCESS);
    ensure(through_va[2] == 42.0f, "a store through nrt_tensor_get_va is the tensor's content");

    const float input[4] = {1.0f, 2.0f, 3.5f, -4.0f};
    const float doubled[4] = {2.0f, 4.0f, 7.0f, -8.0f};
    expect("nrt_tensor_write", nrt_tensor_write(tensors[0], input, 0, sizeof input), NRT_SUCCESS);
    expect("nrt_execute", nrt_execute(model, inputs, outputs), NRT_SUCCESS);
    check_output(tensors[1], doubled);

    nrt_tensor_t *found = NULL;
    expect("nrt_get_tensor_from_tensor_set",
           nrt_get_tensor_from_tensor_set(outputs, "output0", &found), NRT_SUCCESS);
    ensure(found == tensors[1], "the set returns the tensor added under the name");

    /* An attached buffer is used in place: writing the caller's array changes the input. */
    float caller[4] = {10.0f, 20.0f, 30.0f, 40.0f};
    nrt_tensor_t *attached = NULL;
    expect("nrt_tensor_allocate_empty", nrt_tensor_allocate_empty("caller", &attached),
           NRT_SUCCESS);
    expect("nrt_tensor_attach_buffer", nrt_tensor_attach_buffer(attached, caller, sizeof caller),
           NRT_SUCCESS);
    ensure(nrt_tensor_get_va(attached) == (void *)caller, "the va of an attached buffer is it");
    expect("nrt_add_tensor_to_tensor_set (replace)",
           nrt_add_tensor_to_tensor_set(inputs, "input0", attached), NRT_SUCCESS);
    caller[3] = -0.5f;
    expect("nrt_execute (attached)", nrt_execute(model, inputs, outputs), NRT_SUCCESS);
    const float doubled_caller[4] = {20.0f, 40.0f, 60.0f, -1.0f};
    check_output(tensors[1], doubled_caller);

    expect("nrt_execute_repeat", nrt_execute_repeat(model, inputs, outputs, 3), NRT_SUCCESS);
    ensure(strcmp(nrt_get_status_as_str(NRT_EXEC_COMPLETED_WITH_NUM_ERR),
                  "NRT_EXEC_COMPLETED_WITH_NUM_ERR") == 0,
           "status strings are the bare identifiers");

    nrt_tensor_free(&attached);
    ensure(attached == NULL, "nrt_tensor_free nulls the pointer");
    for (int i = 0; i < 2; i++) {
        nrt_tensor_free(&tensors[i]);
        ensure(tensors[i] == NULL, "nrt_tensor_free nulls the pointer");
    }
    nrt_destroy_tensor_set(&inputs);
    nrt_destroy_tensor_set(&outputs);
    ensure(inputs == NULL && outputs == NULL, "nrt_destroy_tensor_set nulls the pointer");
    expect("nrt_free_model_tensor_info", nrt_free_model_tensor_info(info), NRT_SUCCESS);
    expect("nrt_unload", nrt_unload(model), NRT_SUCCESS);
    nrt_close();
    free(neff);
    printf("client flow ok\n");
    return 0;
}

/*
 * Misuse of the libnrt API against nrtsim's libnrt.so.1: calls before init and after close,
 * NULL pointers, foreign and freed handles (a freed tensor still named by a set too), a missing
 * set name, a too-small tensor. Each call must return its status and nothing may crash.
 *
 * Usage: misuse MODEL.neff (input0 and output0, f32[4]). Prints "misuse ok" and exits 0, or
 * names the first failed check and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_version.h>

#include "check.h"

int main(int argc, char **argv) {
    ensure(argc == 2, "usage: misuse MODEL.neff");
    size_t neff_size = 0;
    void *neff = read_file(argv[1], &neff_size);
    nrt_tensor_set_t *set = NULL;
    nrt_tensor_t *tensor = NULL;
    nrt_model_t *model = NULL;
    uint32_t count = 0;
    nrt_version_t version;

    /* Before nrt_init: gated calls are UNINITIALIZED; the counts (as the public header says)
     * and the version work. */
    expect("set before init", nrt_allocate_tensor_set(&set), NRT_UNINITIALIZED);
    expect("tensor before init",
           nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, 0, 8, "t", &tensor),
           NRT_UNINITIALIZED);
    expect("load before init", nrt_load(neff, neff_size, 0, 1, &model), NRT_UNINITIALIZED);
    expect("visible count before init", nrt_get_visible_vnc_count(&count), NRT_SUCCESS);
    expect("total count before init", nrt_get_total_vnc_count(&count), NRT_SUCCESS);
    expect("version before init", nrt_get_version(&version, sizeof version), NRT_SUCCESS);
    ensure(set == NULL && tensor == NULL && model == NULL, "failed calls write no handle");

    /* NULL and bad arguments are INVALID. */
    expect("version into NULL", nrt_get_version(NULL, sizeof version), NRT_INVALID);
    expect("version of 10 bytes", nrt_get_version(&version, 10), NRT_INVALID);
    expect("total count into NULL", nrt_get_total_vnc_count(NULL), NRT_INVALID);
    expect("init with framework 77", nrt_init((nrt_framework_type_t)77, "", ""), NRT_INVALID);
    expect("init with INVALID", nrt_init(NRT_FRAMEWORK_TYPE_INVALID, "", ""), NRT_INVALID);
    expect("init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    expect("init twice", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    expect("set into NULL", nrt_allocate_tensor_set(NULL), NRT_INVALID);
    expect("tensor into NULL", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, 0, 8, "t", NULL),
           NRT_INVALID);
    expect("placement 9",
           nrt_tensor_allocate((nrt_tensor_placement_t)9, 0, 8, "t", &tensor), NRT_INVALID);
    expect("load NULL bytes", nrt_load(NULL, 16, 0, 1, &model), NRT_INVALID);
    expect("load into NULL", nrt_load(neff, neff_size, 0, 1, NULL), NRT_INVALID);
    expect("load garbage", nrt_load("not a neff", 10, 0, 1, &model), NRT_INVALID);
    expect("execute NULL model", nrt_execute(NULL, NULL, NULL), NRT_INVALID);
    expect("read NULL tensor", nrt_tensor_read(NULL, &count, 0, 4), NRT_INVALID);
    expect("free NULL info", nrt_free_model_tensor_info(NULL), NRT_INVALID);
    nrt_tensor_free(NULL);
    nrt_destroy_tensor_set(NULL);

    /* Pointers this library never handed out are INVALID_HANDLE, never dereferenced. */
    nrt_tensor_t *foreign = (nrt_tensor_t *)&count;
    expect("read a foreign pointer", nrt_tensor_read(foreign, &count, 0, 4), NRT_INVALID_HANDLE);
    ensure(nrt_tensor_get_size(foreign) == 0, "the size of a foreign pointer is 0");
    ensure(nrt_tensor_get_va(foreign) == NULL, "the va of a foreign pointer is NULL");
    expect("unload a foreign pointer", nrt_unload((nrt_model_t *)&count), NRT_INVALID_HANDLE);
    expect("free a foreign info", nrt_free_model_tensor_info((nrt_tensor_info_array_t *)&count),
           NRT_INVALID_HANDLE);

    /* A freed tensor: the caller's pointer is NULL, a kept copy is INVALID_HANDLE. */
    expect("allocate", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, 0, 16, "t", &tensor),
           NRT_SUCCESS);
    nrt_tensor_t *copy = tensor;
    nrt_tensor_free(&tensor);
    ensure(tensor == NULL, "nrt_tensor_free nulls the pointer");
    float value = 1.0f;
    expect("write a freed tensor", nrt_tensor_write(copy, &value, 0, 4), NRT_INVALID_HANDLE);
    expect("write through the nulled pointer", nrt_tensor_write(tensor, &value, 0, 4),
           NRT_INVALID);
    nrt_tensor_free(&copy);
    ensure(copy == NULL, "freeing a stale handle is ignored and nulls it");

    /* A handle of the wrong kind. */
    expect("allocate set", nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    expect("read a set as a tensor", nrt_tensor_read((nrt_tensor_t *)set, &value, 0, 4),
           NRT_INVALID_HANDLE);
    /* Releasing a handle as another kind releases nothing: the set is still a live set. */
    nrt_tensor_t *set_as_tensor = (nrt_tensor_t *)set;
    nrt_tensor_free(&set_as_tensor);
    nrt_tensor_t *none = NULL;
    expect("a set after nrt_tensor_free was given it",
           nrt_get_tensor_from_tensor_set(set, "nope", &none), NRT_FAILURE);
    expect("unload a set", nrt_unload((nrt_model_t *)set), NRT_INVALID_HANDLE);
    expect("a set after nrt_unload was given it",
           nrt_get_tensor_from_tensor_set(set, "nope", &none), NRT_FAILURE);
    expect("allocate", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "t", &tensor),
           NRT_SUCCESS);
    nrt_tensor_set_t *tensor_as_set = (nrt_tensor_set_t *)tensor;
    nrt_destroy_tensor_set(&tensor_as_set);
    expect("a tensor after nrt_destroy_tensor_set was given it",
           nrt_tensor_write(tensor, &value, 0, 4), NRT_SUCCESS);
    nrt_tensor_free(&tensor);

    /* Sets: a missing name is FAILURE. */
    nrt_tensor_t *found = NULL;
    expect("missing set name", nrt_get_tensor_from_tensor_set(set, "nope", &found), NRT_FAILURE);
    expect("NULL set name", nrt_get_tensor_from_tensor_set(set, NULL, &found), NRT_INVALID);

    /* Bounds. */
    expect("allocate", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "t", &tensor),
           NRT_SUCCESS);
    char bytes[32] = {0};
    expect("read past the end", nrt_tensor_read(tensor, bytes, 8, 16), NRT_INVALID);
    expect("slice past the end", nrt_tensor_allocate_slice(tensor, 8, 16, "s", &found),
           NRT_INVALID);
    expect("attach to a tensor with storage", nrt_tensor_attach_buffer(tensor, bytes, 16),
           NRT_INVALID);

    /* The I/O contract at execute: a too-small tensor, then a missing name, are INVALID. */
    expect("load", nrt_load(neff, neff_size, 0, 1, &model), NRT_SUCCESS);
    expect("schedule into a NULL sequence",
           nrta_execute_schedule(model, set, set, 0, NULL, NULL), NRT_INVALID);
    nrt_tensor_set_t *outputs = NULL;
    nrt_tensor_t *small = NULL, *output = NULL;
    expect("allocate outputs", nrt_allocate_tensor_set(&outputs), NRT_SUCCESS);
    expect("allocate small", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 12, "s", &small),
           NRT_SUCCESS);
    expect("allocate output", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "o", &output),
           NRT_SUCCESS);
    expect("add output", nrt_add_tensor_to_tensor_set(outputs, "output0", output), NRT_SUCCESS);
    expect("execute without input0", nrt_execute(model, set, outputs), NRT_INVALID);
    expect("add small", nrt_add_tensor_to_tensor_set(set, "input0", small), NRT_SUCCESS);
    expect("execute with a too-small input0", nrt_execute(model, set, outputs), NRT_INVALID);
    expect("add input", nrt_add_tensor_to_tensor_set(set, "input0", tensor), NRT_SUCCESS);
    expect("execute", nrt_execute(model, set, outputs), NRT_SUCCESS);
    expect("execute with sets swapped", nrt_execute(model, outputs, set), NRT_INVALID);
    expect("repeat 0 times", nrt_execute_repeat(model, set, outputs, 0), NRT_INVALID);

    /* A set naming a freed tensor: a launch through it is INVALID_HANDLE, and a scheduled one
     * is refused when it is scheduled (no sequence is issued, nothing runs later), until a live
     * tensor is added under the name again. */
    nrt_tensor_t *doomed = NULL;
    expect("allocate doomed", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "d", &doomed),
           NRT_SUCCESS);
    expect("add doomed", nrt_add_tensor_to_tensor_set(set, "input0", doomed), NRT_SUCCESS);
    nrt_tensor_free(&doomed);
    expect("execute with a freed input0", nrt_execute(model, set, outputs), NRT_INVALID_HANDLE);
    nrta_seq_t scheduled = 0;
    expect("schedule with a freed input0",
           nrta_execute_schedule(model, set, outputs, 0, NULL, &scheduled), NRT_INVALID_HANDLE);
    ensure(scheduled == 0, "a refused schedule issues no sequence");
    expect("schedule with a freed input0 in the output set",
           nrta_execute_schedule(model, outputs, set, 0, NULL, &scheduled), NRT_INVALID_HANDLE);
    expect("add input again", nrt_add_tensor_to_tensor_set(set, "input0", tensor), NRT_SUCCESS);
    expect("schedule with input0 live again",
           nrta_execute_schedule(model, set, outputs, 0, NULL, &scheduled), NRT_SUCCESS);
    wait_for(scheduled);

    nrt_tensor_info_array_t *info = NULL;
    expect("info", nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
    expect("free info", nrt_free_model_tensor_info(info), NRT_SUCCESS);
    expect("free info twice", nrt_free_model_tensor_info(info), NRT_INVALID_HANDLE);

    ensure(strcmp(nrt_get_status_as_str((NRT_STATUS)12345), "NRT_STATUS_UNKNOWN") == 0,
           "an unknown status has a string");
    ensure(strcmp(nrt_get_status_as_str(NRT_CLOSED), "NRT_CLOSED") == 0, "NRT_CLOSED");

    /* After nrt_close: gated calls are CLOSED, the ungated ones still work. */
    nrt_close();
    nrt_tensor_set_t *late = NULL;
    expect("set after close", nrt_allocate_tensor_set(&late), NRT_CLOSED);
    expect("write after close", nrt_tensor_write(tensor, &value, 0, 4), NRT_CLOSED);
    expect("execute after close", nrt_execute(model, set, outputs), NRT_CLOSED);
    expect("version after close", nrt_get_version(&version, sizeof version), NRT_SUCCESS);
    ensure(nrt_tensor_get_size(tensor) == 16, "nrt_tensor_get_size works after close");

    /* nrt_init after nrt_close re-opens the same machine: models are gone, tensors stay. */
    expect("init after close", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    expect("execute a model from before close", nrt_execute(model, set, outputs),
           NRT_INVALID_HANDLE);
    expect("read a tensor from before close", nrt_tensor_read(tensor, bytes, 0, 4), NRT_SUCCESS);
    nrt_close();
    nrt_tensor_free(&tensor);
    nrt_tensor_free(&small);
    nrt_tensor_free(&output);
    nrt_destroy_tensor_set(&set);
    nrt_destroy_tensor_set(&outputs);
    free(neff);
    printf("misuse ok\n");
    return 0;
}

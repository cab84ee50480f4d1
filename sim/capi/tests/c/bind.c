/* The binding layer's C API (nrtsim/bind.h) as a C program uses it: a model doubling a float32[4]
 * input, run through nrtsim_bind_forward, and every kind of misuse, each with its status and a
 * message that names what was expected. argv: the NEFF, then its metaneff. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nrtsim/bind.h>

#include "check.h"

/* `status` must be `want`, and on failure the message must contain `needle`. */
static void expect_bind(const char *what, int32_t status, int32_t want, const char *needle) {
    if (status != want) {
        printf("%s returned %d, expected %d (%s)\n", what, (int)status, (int)want,
               nrtsim_bind_last_error());
        exit(1);
    }
    if (needle != NULL && strstr(nrtsim_bind_last_error(), needle) == NULL) {
        printf("%s: message \"%s\" lacks \"%s\"\n", what, nrtsim_bind_last_error(), needle);
        exit(1);
    }
}

int main(int argc, char **argv) {
    ensure(argc == 3, "usage: bind NEFF METANEFF");
    size_t neff_size = 0, metaneff_size = 0;
    void *neff = read_file(argv[1], &neff_size);
    void *metaneff = read_file(argv[2], &metaneff_size);

    uint64_t model = 0;
    expect_bind("model_new", nrtsim_bind_model_new(neff, neff_size, metaneff, metaneff_size, &model),
                NRTSIM_BIND_OK, NULL);
    int64_t count = -1;
    expect_bind("instance_count", nrtsim_bind_model_instance_count(model, &count), NRTSIM_BIND_OK,
                NULL);
    ensure(count == 1, "a model loads at construction unless lazy_load is set");

    /* A forward: float32 (c10 index 6) [4] in, doubled out. */
    float in[4] = {1.0f, -2.0f, 3.5f, 0.25f};
    int64_t shape[1] = {4};
    nrtsim_bind_tensor_t input = {6, 1, shape, in, sizeof in};
    size_t one = 1;
    uint64_t result = 0;
    expect_bind("forward", nrtsim_bind_forward(model, &input, &one, 1, &result), NRTSIM_BIND_OK,
                NULL);
    size_t n_ranks = 0, n_outputs = 0;
    expect_bind("result_size", nrtsim_bind_result_size(result, &n_ranks, &n_outputs),
                NRTSIM_BIND_OK, NULL);
    ensure(n_ranks == 1 && n_outputs == 1, "a Model's result is one rank of one output");
    nrtsim_bind_output_t output;
    expect_bind("result_output", nrtsim_bind_result_output(result, 0, 0, &output), NRTSIM_BIND_OK,
                NULL);
    ensure(output.scalar_type == 6 && output.ndim == 1 && output.shape[0] == 4, "float32[4] out");
    ensure(output.nbytes == 16 && output.alias_input == -1 && output.status == 0, "no alias");
    float out[4] = {0};
    expect_bind("result_copy short", nrtsim_bind_result_copy(result, 0, 0, out, 8),
                NRTSIM_BIND_INVALID_ARGUMENT, "dst holds 8 bytes, output 0 has 16");
    expect_bind("result_copy", nrtsim_bind_result_copy(result, 0, 0, out, sizeof out),
                NRTSIM_BIND_OK, NULL);
    for (int i = 0; i < 4; ++i) {
        if (out[i] != 2.0f * in[i]) {
            printf("output0[%d] is %g, expected %g\n", i, (double)out[i], 2.0 * in[i]);
            return 1;
        }
    }
    /* Inputs are read where they lie, and only read: a forward of memory the program may not
     * write succeeds, and its result stays readable after that memory is gone. */
    long page = sysconf(_SC_PAGESIZE);
    float *readonly = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
    ensure(readonly != MAP_FAILED, "mmap of one page");
    memcpy(readonly, in, sizeof in);
    ensure(mprotect(readonly, (size_t)page, PROT_READ) == 0, "mprotect PROT_READ");
    nrtsim_bind_tensor_t lent = {6, 1, shape, readonly, sizeof in};
    uint64_t lent_result = 0;
    expect_bind("forward of read-only memory",
                nrtsim_bind_forward(model, &lent, &one, 1, &lent_result), NRTSIM_BIND_OK, NULL);
    ensure(munmap(readonly, (size_t)page) == 0, "munmap");
    float again[4] = {0};
    expect_bind("result_copy after the input is gone",
                nrtsim_bind_result_copy(lent_result, 0, 0, again, sizeof again), NRTSIM_BIND_OK, NULL);
    ensure(memcmp(again, out, sizeof out) == 0, "the same doubled values");
    expect_bind("result_free", nrtsim_bind_result_free(lent_result), NRTSIM_BIND_OK, NULL);

    expect_bind("result_output past the outputs", nrtsim_bind_result_output(result, 0, 1, &output),
                NRTSIM_BIND_INVALID_ARGUMENT, "rank 0 has 1 outputs");
    expect_bind("result_free", nrtsim_bind_result_free(result), NRTSIM_BIND_OK, NULL);
    expect_bind("result_free twice", nrtsim_bind_result_free(result),
                NRTSIM_BIND_INVALID_ARGUMENT, "is not a live result");

    /* libtorchneuron's checks, with their messages and the input's name. */
    int32_t wrong[4] = {0};
    nrtsim_bind_tensor_t as_int = {3, 1, shape, wrong, sizeof wrong};
    expect_bind("forward of int32", nrtsim_bind_forward(model, &as_int, &one, 1, &result),
                NRTSIM_BIND_VALIDATE, "dtype input 0 \"input0\": Expected tensor.dtype() == dtype");
    int64_t long_shape[1] = {5};
    float five[5] = {0};
    nrtsim_bind_tensor_t too_long = {6, 1, long_shape, five, sizeof five};
    expect_bind("forward of [5]", nrtsim_bind_forward(model, &too_long, &one, 1, &result),
                NRTSIM_BIND_VALIDATE, "Expected tensor.sizes() == sizes");
    size_t none = 0;
    expect_bind("forward of nothing", nrtsim_bind_forward(model, NULL, &none, 1, &result),
                NRTSIM_BIND_VALIDATE, "Expected npts->impl()->size() == tensors.size()");

    /* Descriptions that do not add up, NULLs and numbers never handed out. */
    nrtsim_bind_tensor_t short_bytes = {6, 1, shape, in, 12};
    expect_bind("forward of 12 bytes", nrtsim_bind_forward(model, &short_bytes, &one, 1, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "input 0");
    nrtsim_bind_tensor_t bad_type = {99, 1, shape, in, sizeof in};
    expect_bind("forward of scalar type 99", nrtsim_bind_forward(model, &bad_type, &one, 1, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "scalar type 99");
    nrtsim_bind_tensor_t null_data = {6, 1, shape, NULL, sizeof in};
    expect_bind("forward of NULL data", nrtsim_bind_forward(model, &null_data, &one, 1, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "is NULL");
    expect_bind("forward into NULL", nrtsim_bind_forward(model, &input, &one, 1, NULL),
                NRTSIM_BIND_INVALID_ARGUMENT, "result is NULL");
    expect_bind("forward of two lists", nrtsim_bind_forward(model, &input, (size_t[]){1, 0}, 2, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "a Model takes one list of inputs, got 2");
    expect_bind("forward of model 0", nrtsim_bind_forward(0, &input, &one, 1, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "model 0 is not a live model");
    expect_bind("model_new into NULL",
                nrtsim_bind_model_new(neff, neff_size, metaneff, metaneff_size, NULL),
                NRTSIM_BIND_INVALID_ARGUMENT, "out is NULL");
    expect_bind("unknown action", nrtsim_bind_model_action(model, 9), NRTSIM_BIND_INVALID_ARGUMENT,
                "expected 1 (load), 2 (blocking_load) or 3 (unload)");
    expect_bind("initialize of a Model", nrtsim_bind_spmd_initialize(model, NULL, NULL, 0, 0),
                NRTSIM_BIND_INVALID_ARGUMENT, "initialize is a method of SPMDModel");

    /* Bytes that do not load say which. */
    uint64_t other = 0;
    expect_bind("model_new of a bad metaneff",
                nrtsim_bind_model_new(neff, neff_size, "\xff\xff", 2, &other), NRTSIM_BIND_METANEFF,
                "the metaneff does not describe a model");
    expect_bind("model_new of a bad NEFF",
                nrtsim_bind_model_new("garbage", 7, metaneff, metaneff_size, &other),
                NRTSIM_BIND_LOAD, "the NEFF does not load");
    expect_bind("spmd_model_new of 3 ranks of 2",
                nrtsim_bind_spmd_model_new(neff, neff_size, metaneff, metaneff_size, 3, 2, &other),
                NRTSIM_BIND_INVALID_ARGUMENT, "local_ranks 3 and world_size 2");

    /* The stored bytes come back whole. */
    size_t size = 0;
    expect_bind("model_bytes size", nrtsim_bind_model_bytes(model, NRTSIM_BIND_METANEFF_BYTES, NULL, &size),
                NRTSIM_BIND_OK, NULL);
    ensure(size == metaneff_size, "the metaneff's size");
    void *copy = malloc(size);
    expect_bind("model_bytes", nrtsim_bind_model_bytes(model, NRTSIM_BIND_METANEFF_BYTES, copy, &size),
                NRTSIM_BIND_OK, NULL);
    ensure(memcmp(copy, metaneff, size) == 0, "the metaneff's bytes");
    free(copy);

    /* Unload, then a forward loads again; a freed model is gone. */
    expect_bind("unload", nrtsim_bind_model_action(model, NRTSIM_BIND_UNLOAD_ACTION), NRTSIM_BIND_OK,
                NULL);
    expect_bind("instance_count", nrtsim_bind_model_instance_count(model, &count), NRTSIM_BIND_OK,
                NULL);
    ensure(count == 0, "no instance after unload");
    expect_bind("forward after unload", nrtsim_bind_forward(model, &input, &one, 1, &result),
                NRTSIM_BIND_OK, NULL);
    expect_bind("result_free", nrtsim_bind_result_free(result), NRTSIM_BIND_OK, NULL);
    expect_bind("model_free", nrtsim_bind_model_free(model), NRTSIM_BIND_OK, NULL);
    expect_bind("forward after free", nrtsim_bind_forward(model, &input, &one, 1, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "is not a live model");
    free(neff);
    free(metaneff);
    printf("bind ok\n");
    return 0;
}

/* The binding layer's C API (nrtsim/bind.h) as a C program uses it: a model doubling a float32[4]
 * input, run through nrtsim_bind_forward, and every kind of misuse, each with its status and a
 * message that names what was expected; then nrtsim_bind_forward_into on a model that donates
 * input 0 to output 0 (output0 = input0 + input1, output1 = 2 * input1, float32[2]).
 * argv: the NEFF, its metaneff, then the donating model's NEFF and metaneff. */
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

/* What forward_into's callback saw and gives: buffers of the program's, or a chosen pointer. */
struct outputs {
    int calls;
    size_t rank, index, nbytes;
    int32_t scalar_type, ndim;
    int64_t dim0;
    float buffer[2];
    void *give; /* returned instead of `buffer` when set (NULL included, with `give_set`) */
    int give_set;
};

static void *allocate(void *context, size_t rank, size_t index, int32_t scalar_type, int32_t ndim,
                      const int64_t *shape, size_t nbytes) {
    struct outputs *seen = context;
    seen->calls += 1;
    seen->rank = rank;
    seen->index = index;
    seen->scalar_type = scalar_type;
    seen->ndim = ndim;
    seen->dim0 = ndim > 0 ? shape[0] : -1;
    seen->nbytes = nbytes;
    return seen->give_set ? seen->give : seen->buffer;
}

static void forward_into(const char *neff_path, const char *metaneff_path) {
    size_t neff_size = 0, metaneff_size = 0;
    void *neff = read_file(neff_path, &neff_size);
    void *metaneff = read_file(metaneff_path, &metaneff_size);
    uint64_t model = 0, result = 0;
    expect_bind("model_new", nrtsim_bind_model_new(neff, neff_size, metaneff, metaneff_size, &model),
                NRTSIM_BIND_OK, NULL);
    int64_t shape[1] = {2};
    size_t two = 2;

    /* The output is read into the buffer given; the donated input is written where it lies. */
    float a[2] = {1.0f, 2.0f}, b[2] = {10.0f, 20.0f};
    nrtsim_bind_tensor_t inputs[2] = {{6, 1, shape, a, sizeof a}, {6, 1, shape, b, sizeof b}};
    struct outputs seen = {0};
    expect_bind("forward_into",
                nrtsim_bind_forward_into(model, inputs, &two, 1, allocate, &seen, &result),
                NRTSIM_BIND_OK, NULL);
    ensure(seen.calls == 1 && seen.rank == 0 && seen.index == 1,
           "one buffer asked for: output 1 (output 0 is input 0)");
    ensure(seen.scalar_type == 6 && seen.ndim == 1 && seen.dim0 == 2 && seen.nbytes == 8,
           "asked as float32 [2], 8 bytes");
    ensure(seen.buffer[0] == 20.0f && seen.buffer[1] == 40.0f, "output1 = 2 * input1 in the buffer");
    ensure(a[0] == 11.0f && a[1] == 22.0f, "input 0 holds output0 = input0 + input1");
    ensure(b[0] == 10.0f && b[1] == 20.0f, "input 1 only read");
    nrtsim_bind_output_t output;
    expect_bind("result_output 0", nrtsim_bind_result_output(result, 0, 0, &output), NRTSIM_BIND_OK,
                NULL);
    ensure(output.alias_input == 0 && output.nbytes == 8, "output 0 is input 0");
    expect_bind("result_output 1", nrtsim_bind_result_output(result, 0, 1, &output), NRTSIM_BIND_OK,
                NULL);
    ensure(output.alias_input == -1 && output.shape[0] == 2, "output 1 is its own");
    float copy[2];
    expect_bind("result_copy after forward_into", nrtsim_bind_result_copy(result, 0, 1, copy, 8),
                NRTSIM_BIND_INVALID_ARGUMENT, "in the caller's memory already");
    size_t n_updated = 0, position = 9;
    expect_bind("updated_count", nrtsim_bind_result_updated_count(result, 0, &n_updated),
                NRTSIM_BIND_OK, NULL);
    expect_bind("updated_position", nrtsim_bind_result_updated_position(result, 0, 0, &position),
                NRTSIM_BIND_OK, NULL);
    ensure(n_updated == 1 && position == 0, "input 0 was written");
    expect_bind("copy_updated after forward_into",
                nrtsim_bind_result_copy_updated(result, 0, 0, copy, 8),
                NRTSIM_BIND_INVALID_ARGUMENT, "in the caller's memory already");
    expect_bind("result_free", nrtsim_bind_result_free(result), NRTSIM_BIND_OK, NULL);

    /* One buffer given as both inputs: the donor shares its bytes with the other input, so it
     * is not written while the launch reads; its new value lands there after. */
    float same[2] = {1.0f, 2.0f};
    nrtsim_bind_tensor_t twice[2] = {{6, 1, shape, same, sizeof same},
                                     {6, 1, shape, same, sizeof same}};
    struct outputs again = {0};
    expect_bind("forward_into of one buffer twice",
                nrtsim_bind_forward_into(model, twice, &two, 1, allocate, &again, &result),
                NRTSIM_BIND_OK, NULL);
    ensure(same[0] == 2.0f && same[1] == 4.0f, "the donor's new value: x + x");
    ensure(again.buffer[0] == 2.0f && again.buffer[1] == 4.0f, "output1 = 2 * x, from the old x");
    expect_bind("result_free", nrtsim_bind_result_free(result), NRTSIM_BIND_OK, NULL);

    /* Buffers the forward cannot use. */
    struct outputs null_buffer = {.give = NULL, .give_set = 1};
    expect_bind("forward_into with NULL from allocate",
                nrtsim_bind_forward_into(model, inputs, &two, 1, allocate, &null_buffer, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "output 1: expected a tensor of Float [2] written in place, got NULL");
    struct outputs on_input = {.give = b, .give_set = 1};
    expect_bind("forward_into with an input as the output",
                nrtsim_bind_forward_into(model, inputs, &two, 1, allocate, &on_input, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "sharing bytes with an input or another output");
    expect_bind("forward_into without a callback",
                nrtsim_bind_forward_into(model, inputs, &two, 1, NULL, NULL, &result),
                NRTSIM_BIND_INVALID_ARGUMENT, "allocate is NULL");
    expect_bind("model_free", nrtsim_bind_model_free(model), NRTSIM_BIND_OK, NULL);
    free(neff);
    free(metaneff);
}

int main(int argc, char **argv) {
    ensure(argc == 5, "usage: bind NEFF METANEFF IN_PLACE_NEFF IN_PLACE_METANEFF");
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
    forward_into(argv[3], argv[4]);
    printf("bind ok\n");
    return 0;
}

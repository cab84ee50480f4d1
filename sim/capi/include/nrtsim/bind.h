/*
 * nrtsim/bind.h: nrtsim's binding layer (libtorchneuron's rules over libnrt) as a C API.
 *
 * This is nrtsim's own interface, not part of libnrt: the simulator's libnrt.so.1 exports it
 * beside the nrt_* functions, with the symbol version NRTSIM_BIND_1, and runs its models on the
 * same simulated device as those functions. The nrtsim-torch package builds torch.classes.neuron.Model, SPMDModel and
 * torch.ops.neuron.forward_v2 on it; any other host program can use it the same way.
 *
 * Every function returns an nrtsim_bind_status_t. On failure, nrtsim_bind_last_error() gives the
 * calling thread's message (what was expected and what came), valid until that thread's next
 * call. Models and results are numbers, never addresses; a freed number stays invalid.
 * Tensors cross as a c10 ScalarType index, a shape and bytes. A forward reads its inputs where
 * they lie. nrtsim_bind_forward keeps the outputs in its result, to copy out;
 * nrtsim_bind_forward_into reads them straight into buffers the caller gives.
 */
#ifndef NRTSIM_BIND_H
#define NRTSIM_BIND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nrtsim_bind_status {
    NRTSIM_BIND_OK = 0,
    /* A NULL pointer, an unknown number, an unknown scalar type, sizes that do not agree. */
    NRTSIM_BIND_INVALID_ARGUMENT = 1,
    /* One of libtorchneuron's checks of an input (count, dtype, shape, ...). */
    NRTSIM_BIND_VALIDATE = 2,
    /* The metaneff does not decode or does not describe a model. */
    NRTSIM_BIND_METANEFF = 3,
    /* The NEFF does not load. */
    NRTSIM_BIND_LOAD = 4,
    /* A runtime call failed at execute, write or read. */
    NRTSIM_BIND_RUNTIME = 5,
    /* Something the simulator does not model. */
    NRTSIM_BIND_UNSUPPORTED = 6,
    /* A bug of nrtsim, caught at the boundary. */
    NRTSIM_BIND_INTERNAL = 7,
} nrtsim_bind_status_t;

/* nrtsim_bind_model_action */
#define NRTSIM_BIND_LOAD_ACTION 1
#define NRTSIM_BIND_BLOCKING_LOAD_ACTION 2
#define NRTSIM_BIND_UNLOAD_ACTION 3

/* nrtsim_bind_model_set_flag */
#define NRTSIM_BIND_ASYNC_LOAD 1
#define NRTSIM_BIND_LAZY_LOAD 2
#define NRTSIM_BIND_DYNAMIC_BATCHING 3

/* nrtsim_bind_model_bytes */
#define NRTSIM_BIND_NEFF 0
#define NRTSIM_BIND_METANEFF_BYTES 1

typedef struct nrtsim_bind_tensor {
    int32_t scalar_type; /* c10 ScalarType index: 6 float32, 15 bfloat16, 3 int32, ... */
    int32_t ndim;
    const int64_t *shape;
    const void *data;
    size_t nbytes;
} nrtsim_bind_tensor_t;

typedef struct nrtsim_bind_named_tensor {
    const char *name; /* a checkpoint_key, name_len bytes, not NUL-terminated */
    size_t name_len;
    nrtsim_bind_tensor_t tensor;
} nrtsim_bind_named_tensor_t;

typedef struct nrtsim_bind_output {
    int32_t scalar_type;
    int32_t ndim;
    const int64_t *shape; /* valid until the result is freed */
    size_t nbytes;
    int64_t alias_input;  /* the input this output was donated, -1 for none */
    int32_t status;       /* the launch's status: 0, or 1003 (completed with numerical errors) */
} nrtsim_bind_output_t;

const char *nrtsim_bind_last_error(void);
/* "sim", or "nrt PATH" when NRTSIM_TORCH_LIBNRT names the libnrt.so.1 the models run on. */
const char *nrtsim_bind_backend(void);

int32_t nrtsim_bind_model_new(const void *neff, size_t neff_size, const void *metaneff,
                              size_t metaneff_size, uint64_t *model);
int32_t nrtsim_bind_spmd_model_new(const void *neff, size_t neff_size, const void *metaneff,
                                   size_t metaneff_size, int64_t local_ranks, int64_t world_size,
                                   uint64_t *model);
int32_t nrtsim_bind_model_free(uint64_t model);

int32_t nrtsim_bind_model_action(uint64_t model, int32_t action);
int32_t nrtsim_bind_model_set_flag(uint64_t model, int32_t flag, int32_t value);
int32_t nrtsim_bind_model_set_dynamic_batching_mixed(uint64_t model, const int64_t *inputs,
                                                     size_t n_inputs, const int64_t *outputs,
                                                     size_t n_outputs);
int32_t nrtsim_bind_model_set_neuron_devices(uint64_t model, int64_t start, int64_t count);
int32_t nrtsim_bind_model_load_collectives(uint64_t model, int64_t vnc, int64_t vnc_count,
                                           int64_t ctx_device_id, int64_t ctx_device_count);
int32_t nrtsim_bind_model_instance_count(uint64_t model, int64_t *count);
/* dst NULL: *size receives the size; otherwise dst receives exactly *size bytes. */
int32_t nrtsim_bind_model_bytes(uint64_t model, int32_t which, void *dst, size_t *size);

/* A Model takes one list (n_lists 1); an SPMDModel one list for every rank, or one per rank.
 * The inputs' data is read where it lies, not copied first, and never written: it must stay
 * readable and unchanged until the call returns; nothing refers to it afterwards. */
int32_t nrtsim_bind_forward(uint64_t model, const nrtsim_bind_tensor_t *inputs,
                            const size_t *counts, size_t n_lists, uint64_t *result);
/* Gives the buffer for the output at `index` of `rank`'s list (rank 0 for a Model): exactly
 * nbytes writable bytes (any pointer when nbytes is 0), untouched by the caller and sharing no
 * byte with an input or another output until the forward returns; NULL fails the forward. Called
 * one call at a time, possibly from several threads (an SPMDModel's ranks); it must not throw or
 * unwind. */
typedef void *(*nrtsim_bind_allocate_fn)(void *context, size_t rank, size_t index,
                                         int32_t scalar_type, int32_t ndim, const int64_t *shape,
                                         size_t nbytes);
/* nrtsim_bind_forward, except where the outputs go: each output that is not a donated input is
 * read into the buffer `allocate` gives for it, and each donated input is written where it lies
 * (its data must be writable), as a device writes the donated buffer itself. The result
 * describes the outputs and lists the inputs written; it holds no bytes to copy. */
int32_t nrtsim_bind_forward_into(uint64_t model, const nrtsim_bind_tensor_t *inputs,
                                 const size_t *counts, size_t n_lists,
                                 nrtsim_bind_allocate_fn allocate, void *context,
                                 uint64_t *result);
/* counts[r] named tensors (states and weights by checkpoint_key) for rank r, concatenated. */
int32_t nrtsim_bind_spmd_initialize(uint64_t model, const nrtsim_bind_named_tensor_t *entries,
                                    const size_t *counts, size_t n_ranks, int64_t start_rank);

int32_t nrtsim_bind_result_size(uint64_t result, size_t *n_ranks, size_t *n_outputs);
int32_t nrtsim_bind_result_output(uint64_t result, size_t rank, size_t index,
                                  nrtsim_bind_output_t *output);
/* After nrtsim_bind_forward only: forward_into's outputs are in the caller's buffers. */
int32_t nrtsim_bind_result_copy(uint64_t result, size_t rank, size_t index, void *dst,
                                size_t nbytes);
/* The inputs of a rank the launch wrote (donated to an output, returned or not): their count,
 * then the k-th one's position in the caller's list, and its new bytes (after
 * nrtsim_bind_forward only: forward_into wrote them into the input). */
int32_t nrtsim_bind_result_updated_count(uint64_t result, size_t rank, size_t *n);
int32_t nrtsim_bind_result_updated_position(uint64_t result, size_t rank, size_t k,
                                            size_t *position);
int32_t nrtsim_bind_result_copy_updated(uint64_t result, size_t rank, size_t k, void *dst,
                                        size_t nbytes);
int32_t nrtsim_bind_result_free(uint64_t result);

#ifdef __cplusplus
}
#endif

#endif /* NRTSIM_BIND_H */

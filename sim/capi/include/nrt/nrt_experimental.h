/*
 * nrt/nrt_experimental.h: model tensor info, instance counts, the legacy trace, collectives
 * helpers and other interfaces the public headers mark experimental.
 *
 * Written for nrtsim from public facts; it is not the AWS header.
 */
#ifndef NRTSIM_NRT_NRT_EXPERIMENTAL_H
#define NRTSIM_NRT_NRT_EXPERIMENTAL_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nrt_tensor_usage {
    NRT_TENSOR_USAGE_INPUT = 0,
    NRT_TENSOR_USAGE_OUTPUT = 1
} nrt_tensor_usage_t;

#define NRT_TENSOR_NAME_MAX 256

/* 296 bytes. */
typedef struct nrt_tensor_info {
    char name[NRT_TENSOR_NAME_MAX];
    nrt_tensor_usage_t usage;
    size_t size;                /* the smallest tensor a launch accepts, in bytes */
    nrt_dtype_t dtype;
    uint32_t *shape;            /* ndim entries, owned by the array */
    uint32_t ndim;
} nrt_tensor_info_t;

/* A count, then the entries: inputs first, then outputs. */
typedef struct nrt_tensor_info_array {
    uint64_t tensor_count;
    nrt_tensor_info_t tensor_array[];
} nrt_tensor_info_array_t;

/* Called with (params, model_id, vnc, job_id, status) when an async execution ends. */
typedef void (*NRT_ASYNC_EXEC_STATUS_CALLBACK)(void *params, uint32_t model_id, uint32_t vnc,
                                               uint64_t job_id, NRT_STATUS status);

typedef struct nrt_ucode_img {
    uint8_t *bin;
    size_t size;
} nrt_ucode_img;

typedef struct nrt_ucode_info {
    nrt_ucode_img iram;
    nrt_ucode_img dram;
} nrt_ucode_info;

/* 4 bytes; fields are only ever appended (callers pass the size they know). */
typedef struct nrt_model_info {
    uint32_t vnc;
} nrt_model_info_t;

NRTSIM_LAYOUT_CHECK(sizeof(nrt_tensor_info_t) == 296, "nrt_tensor_info_t is 296 bytes");
NRTSIM_LAYOUT_CHECK(offsetof(nrt_tensor_info_t, shape) == 280, "shape at 280");
NRTSIM_LAYOUT_CHECK(sizeof(nrt_ucode_info) == 32, "nrt_ucode_info is 32 bytes");

/* Generated from abi/src/functions/table.rs by `cargo xtask codegen`; do not edit. */
NRT_STATUS nrt_get_model_tensor_info(nrt_model_t *model, nrt_tensor_info_array_t **tensor_info);
NRT_STATUS nrt_get_model_instance_count(nrt_model_t *model, uint32_t *instance_count);
NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info);
NRT_STATUS nrt_trace_start(bool trace_mem);
NRT_STATUS nrt_trace_stop(const char *filename);
void *nrt_get_libnccl_net(int *err, char *err_msg, size_t err_msg_size);
NRT_STATUS nrt_set_pool_eng_ucode(const nrt_ucode_info *ucode_info);
NRT_STATUS nrt_memcpy_to_device(void *dest, const void *src, size_t size);
NRT_STATUS nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback, void *params);
NRT_STATUS nrt_barrier(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count);
NRT_STATUS nrt_all_gather(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count, uint32_t rank_input_size, void *input, void *output);
NRT_STATUS nrt_async_drain_queued_execs(int32_t vnc);
NRT_STATUS nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info, size_t info_size_in, size_t *info_size_out);
/* End of the generated prototypes. */

#ifdef __cplusplus
}
#endif

#endif

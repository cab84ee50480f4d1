/*
 * nrt/nrt.h: the core of the libnrt C API (lifecycle, models, tensors, tensor sets, counts,
 * collectives setup) as nrtsim's simulated libnrt.so.1 exports it.
 *
 * Written for nrtsim from public facts (function names and signatures, enum tags and values,
 * struct layouts); it is not the AWS header, but a program written against the public headers
 * compiles against this one unchanged. Every function is listed in docs/libnrt-functions.md with
 * its pre-init rule.
 *
 * Conventions of the simulator behind it (see sim/capi/src/lib.rs):
 * - NULL pointer arguments return NRT_INVALID; a handle the library did not hand out, or already
 *   released, returns NRT_INVALID_HANDLE. Handles are opaque: never dereference them.
 * - Before nrt_init, gated calls return NRT_UNINITIALIZED; after nrt_close, NRT_CLOSED. The
 *   counts, nrt_get_version and nrt_tensor_get_size work in any state.
 * - What a simulator cannot have (dma-buf, EFA, HBM mappings) returns NRT_INVALID.
 */
#ifndef NRTSIM_NRT_NRT_H
#define NRTSIM_NRT_NRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NRT_MAJOR_VERSION 2
#define NRT_MINOR_VERSION 0

#ifdef __cplusplus
#define NRTSIM_LAYOUT_CHECK(condition, message) static_assert(condition, message)
#else
#define NRTSIM_LAYOUT_CHECK(condition, message) _Static_assert(condition, message)
#endif

/* Opaque handles. */
typedef struct nrt_model nrt_model_t;
typedef struct nrt_tensor nrt_tensor_t;
typedef struct nrt_cc_context nrt_cc_context_t;

/* A tensor set: a name -> tensor map that does not own its tensors. */
typedef void nrt_tensor_set_t;

/* Only appended to, never renumbered. */
typedef enum {
    NRT_TENSOR_PLACEMENT_DEVICE = 0,
    NRT_TENSOR_PLACEMENT_HOST = 1,    /* deprecated; at most 4 MiB */
    NRT_TENSOR_PLACEMENT_VIRTUAL = 2
} nrt_tensor_placement_t;

typedef enum {
    NRT_FRAMEWORK_TYPE_INVALID = 0,
    NRT_FRAMEWORK_TYPE_NO_FW = 1,
    NRT_FRAMEWORK_TYPE_TENSORFLOW = 2,
    NRT_FRAMEWORK_TYPE_PYTORCH = 3,
    NRT_FRAMEWORK_TYPE_MXNET = 4,
    NRT_FRAMEWORK_TYPE_PRECHECK = 5
} nrt_framework_type_t;

/* Instance families, as nrt_instance_info_t.family. */
enum {
    NRT_INSTANCE_UNKNOWN = 0,
    NRT_INSTANCE_INF1 = 1,
    NRT_INSTANCE_TRN1 = 2,
    NRT_INSTANCE_TRN1N = 3,
    NRT_INSTANCE_INF2 = 4,
    NRT_INSTANCE_TRN2 = 5,
    NRT_INSTANCE_TRN2N = 6,
    NRT_INSTANCE_INF2E = 7,
    NRT_INSTANCE_TRN2P = 8,
    NRT_INSTANCE_TRN2U = 9,
    NRT_INSTANCE_TRN2E = 10,
    NRT_INSTANCE_TRN2EU = 11,
    NRT_INSTANCE_TRN2AC = 12,
    NRT_INSTANCE_TRN2UAC = 13,
    NRT_INSTANCE_TRN3 = 14,
    NRT_INSTANCE_TRN3PDS98 = 15
};

/* Instance sizes, as nrt_instance_info_t.size (new sizes go before UNKNOWN). */
enum {
    NRT_INSTANCE_SIZE_1XL = 0,
    NRT_INSTANCE_SIZE_2XL = 1,
    NRT_INSTANCE_SIZE_4XL = 2,
    NRT_INSTANCE_SIZE_6XL = 3,
    NRT_INSTANCE_SIZE_8XL = 4,
    NRT_INSTANCE_SIZE_24XL = 5,
    NRT_INSTANCE_SIZE_32XL = 6,
    NRT_INSTANCE_SIZE_48XL = 7,
    NRT_INSTANCE_SIZE_3XL = 8,
    NRT_INSTANCE_SIZE_UNKNOWN = 9,
    NRT_INSTANCE_SIZE_NUM = NRT_INSTANCE_SIZE_UNKNOWN
};

typedef enum nrt_op_type {
    NRT_OP_ADD = 0x0,
    NRT_OP_FMA = 0x1,
    NRT_OP_MAX = 0x2,
    NRT_OP_MIN = 0x3,
    NRT_OP_INVALID = 0xF
} nrt_op_type_t;

/* Element types, in the hardware numbering of current releases (older releases numbered
 * them UNKNOWN 0, FLOAT32 1, FLOAT16 2, BFLOAT16 3, INT8 4, UINT8 5, INT16 6, UINT16 7,
 * INT32 8, UINT32 9, INT64 10, UINT64 11; NRTSIM_DTYPE_NUMBERING selects what the simulator
 * writes into nrt_tensor_info_t). */
typedef enum nrt_dtype {
    NRT_DTYPE_UNKNOWN = 0x0,
    NRT_DTYPE_INVALID = 0x0,
    NRT_DTYPE_UINT64 = 0x1,
    NRT_DTYPE_INT8 = 0x2,
    NRT_DTYPE_UINT8 = 0x3,
    NRT_DTYPE_INT16 = 0x4,
    NRT_DTYPE_UINT16 = 0x5,
    NRT_DTYPE_BFLOAT16 = 0x6,
    NRT_DTYPE_FLOAT16 = 0x7,
    NRT_DTYPE_INT32 = 0x8,
    NRT_DTYPE_UINT32 = 0x9,
    NRT_DTYPE_FLOAT32 = 0xA,
    NRT_DTYPE_FP32R = 0xB,
    NRT_DTYPE_INT64 = 0xC,
    NRT_DTYPE_FP8_E3 = 0xD,
    NRT_DTYPE_FP8_E4 = 0xE,
    NRT_DTYPE_FP8_E5 = 0xF
} nrt_dtype_t;

typedef enum nrt_cc_op_type {
    NRT_CC_ALLGATHER = 0,
    NRT_CC_ALLREDUCE = 1,
    NRT_CC_REDUCESCATTER = 2
} nrt_cc_op_type_t;

/* 32 bytes. */
typedef struct nrt_instance_info {
    uint32_t family;            /* NRT_INSTANCE_* */
    uint32_t size;              /* NRT_INSTANCE_SIZE_* */
    char arch_name[16];
    char device_revision[8];
} nrt_instance_info_t;

/* One range of a batched read or write: 24 bytes. */
typedef uint64_t nrt_tensor_batch_offset_t;
typedef uint64_t nrt_tensor_batch_size_t;
typedef struct nrt_tensor_batch_op {
    nrt_tensor_batch_offset_t offset;
    nrt_tensor_batch_size_t size;
    void *buffer;
} nrt_tensor_batch_op_t;

/* The operations on one tensor: 24 bytes. */
typedef struct nrt_tensor_batch {
    const nrt_tensor_t *tensor;
    const nrt_tensor_batch_op_t *ops;
    uint32_t num_ops;
} nrt_tensor_batch_t;

/* 24 bytes. */
typedef struct nrt_tensor_device_allocation_info {
    uint64_t physical_address;
    size_t size;                /* at least the tensor's size */
    int hbm_index;
} nrt_tensor_device_allocation_info_t;

/* 16 bytes; fields are only ever appended (callers pass the size they know). */
typedef struct nrt_vnc_memory_stats {
    size_t bytes_used;
    size_t bytes_limit;
} nrt_vnc_memory_stats_t;

/* A communicator of out-of-NEFF collectives: 32 bytes. */
typedef struct nrt_cc_comm {
    uint32_t *replica_group;    /* rank_n participants */
    uint32_t rank;
    uint32_t rank_n;
    uint32_t ctx_device_id;
    uint32_t ctx_device_count;
    uint32_t vnc;
} nrt_cc_comm_t;

/* 16 bytes. */
typedef struct nrt_tensor_list {
    nrt_tensor_t **tensors;
    size_t num_tensors;
} nrt_tensor_list_t;

NRTSIM_LAYOUT_CHECK(sizeof(nrt_instance_info_t) == 32, "nrt_instance_info_t is 32 bytes");
NRTSIM_LAYOUT_CHECK(sizeof(nrt_tensor_batch_op_t) == 24, "nrt_tensor_batch_op_t is 24 bytes");
NRTSIM_LAYOUT_CHECK(sizeof(nrt_tensor_batch_t) == 24, "nrt_tensor_batch_t is 24 bytes");
NRTSIM_LAYOUT_CHECK(sizeof(nrt_tensor_device_allocation_info_t) == 24,
                    "nrt_tensor_device_allocation_info_t is 24 bytes");
NRTSIM_LAYOUT_CHECK(sizeof(nrt_vnc_memory_stats_t) == 16, "nrt_vnc_memory_stats_t is 16 bytes");
NRTSIM_LAYOUT_CHECK(sizeof(nrt_cc_comm_t) == 32, "nrt_cc_comm_t is 32 bytes");
NRTSIM_LAYOUT_CHECK(sizeof(nrt_tensor_list_t) == 16, "nrt_tensor_list_t is 16 bytes");
NRTSIM_LAYOUT_CHECK(sizeof(nrt_dtype_t) == 4, "enums are 4 bytes");

/* Generated from abi/src/functions/table.rs by `cargo xtask codegen`; do not edit. */
NRT_STATUS nrt_get_instance_info(nrt_instance_info_t *info, size_t instance_info_len);
NRT_STATUS nrt_init(nrt_framework_type_t framework, const char *fw_version, const char *fal_version);
void nrt_close(void);
NRT_STATUS nrt_load(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count, nrt_model_t **model);
NRT_STATUS nrt_load_collectives(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count, uint32_t ctx_device_id, uint32_t ctx_device_count, nrt_model_t **model);
NRT_STATUS nrt_unload(nrt_model_t *model);
NRT_STATUS nrt_get_model_nc_count(const nrt_model_t *model, uint32_t *vnc_count);
NRT_STATUS nrt_get_model_vnc_count(const nrt_model_t *model, uint32_t *vnc_count);
NRT_STATUS nrt_get_total_nc_count(uint32_t *vnc_count);
NRT_STATUS nrt_get_total_vnc_count(uint32_t *vnc_count);
NRT_STATUS nrt_get_visible_nc_count(uint32_t *vnc_count);
NRT_STATUS nrt_get_visible_vnc_count(uint32_t *vnc_count);
NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t **result);
void nrt_destroy_tensor_set(nrt_tensor_set_t **tensor_set);
NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t *tensor);
NRT_STATUS nrt_get_tensor_from_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t **tensor);
NRT_STATUS nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set);
NRT_STATUS nrt_execute_repeat(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set, int repeat_count);
NRT_STATUS nrt_build_global_comm(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count);
NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement, int vnc, size_t size, const char *name, nrt_tensor_t **tensor);
void nrt_tensor_free(nrt_tensor_t **tensor);
NRT_STATUS nrt_tensor_read(const nrt_tensor_t *tensor, void *buf, size_t offset, size_t size);
NRT_STATUS nrt_tensor_write(nrt_tensor_t *tensor, const void *buf, size_t offset, size_t size);
NRT_STATUS nrt_tensor_read_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool untracked);
NRT_STATUS nrt_tensor_write_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool untracked);
NRT_STATUS nrt_tensor_copy(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst, size_t dst_offset, size_t size);
size_t nrt_tensor_get_size(const nrt_tensor_t *tensor);
NRT_STATUS nrt_tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value, size_t size);
NRT_STATUS nrt_tensor_allocate_empty(const char *name, nrt_tensor_t **tensor);
NRT_STATUS nrt_tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer, size_t size);
NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t *tensor_source, size_t offset, size_t size, const char *name, nrt_tensor_t **tensor_slice);
void *nrt_tensor_get_va(const nrt_tensor_t *tensor);
NRT_STATUS nrt_tensor_get_device_allocation_info(const nrt_tensor_t *tensor, nrt_tensor_device_allocation_info_t *alloc_info);
NRT_STATUS nrt_tensor_check_output_completion(const nrt_tensor_t *output_tensor, int64_t timeout, uint64_t expected_completion_count);
NRT_STATUS nrt_tensor_reset_output_completion(nrt_tensor_t *output_tensor);
NRT_STATUS nrt_get_dmabuf_fd(uint64_t va, uint64_t size, int *fd);
NRT_STATUS nrt_host_device_id_get(int neuron_dev, uint32_t *host_device_id);
NRT_STATUS nrt_host_device_id_rid_map_get(uint32_t *count, uint32_t *host_did_to_rid_map);
NRT_STATUS nrt_get_hbm_mmap_va(int device_id, int hbm_idx, void **addr, size_t *size);
NRT_STATUS nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t *stats, size_t stats_size_in, size_t *stats_size_out);
NRT_STATUS nrt_get_attached_efa_bdf(const void *va, char *efa_bdf, size_t *len);
NRT_STATUS nrt_cc_global_comm_init(uint32_t vnc, uint32_t g_device_id, uint32_t g_device_count);
/* End of the generated prototypes. */

#ifdef __cplusplus
}
#endif

#endif

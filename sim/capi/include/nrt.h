/*
 * nrt.h: the subset of the libnrt C API that nrtsim's simulated libnrt.so.1 exports.
 *
 * Written for nrtsim from the facts of its ABI notes (function list, enum values, struct
 * layouts); it is not the AWS header. Programs written against the official headers link
 * against the simulator unchanged; this header is for nrtsim's own tests and for users who
 * build a program against the simulator alone.
 *
 * Conventions of the simulator behind it (see sim/capi/src/lib.rs):
 * - NULL pointer arguments return NRT_INVALID; a handle the library did not hand out, or
 *   already released, returns NRT_INVALID_HANDLE. Handles are opaque: never dereference them.
 * - Before nrt_init, calls return NRT_UNINITIALIZED; after nrt_close, NRT_CLOSED. nrt_get_version,
 *   nrt_get_total_vnc_count and nrt_tensor_get_size work in any state.
 */
#ifndef NRTSIM_NRT_H
#define NRTSIM_NRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: a 4-byte enum. 8 and 12 are not defined. */
typedef enum {
    NRT_SUCCESS = 0,
    NRT_FAILURE = 1,
    NRT_INVALID = 2,
    NRT_INVALID_HANDLE = 3,
    NRT_RESOURCE = 4,
    NRT_TIMEOUT = 5,
    NRT_HW_ERROR = 6,
    NRT_QUEUE_FULL = 7,
    NRT_LOAD_NOT_ENOUGH_NC = 9,
    NRT_UNSUPPORTED_NEFF_VERSION = 10,
    NRT_FAIL_HOST_MEM_ALLOC = 11,
    NRT_UNINITIALIZED = 13,
    NRT_CLOSED = 14,
    NRT_QUEUE_EMPTY = 15,
    NRT_EXEC_UNIT_UNRECOVERABLE = 101,
    NRT_EXEC_BAD_INPUT = 1002,
    NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003, /* outputs written; some hold a NaN */
    NRT_EXEC_COMPLETED_WITH_ERR = 1004,
    NRT_EXEC_NC_BUSY = 1005,
    NRT_EXEC_OOB = 1006,
    NRT_COLL_PENDING = 1100,
    NRT_EXEC_HW_ERR_COLLECTIVES = 1200,
    NRT_EXEC_HW_ERR_HBM_UE = 1201,
    NRT_EXEC_HW_ERR_NC_UE = 1202,
    NRT_EXEC_HW_ERR_DMA_ABORT = 1203,
    NRT_EXEC_SW_NQ_OVERFLOW = 1204,
    NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205,
    NRT_NETWORK_PROXY_FAILURE = 1206
} NRT_STATUS;

typedef enum {
    NRT_FRAMEWORK_TYPE_INVALID = 0,
    NRT_FRAMEWORK_TYPE_NO_FW = 1,
    NRT_FRAMEWORK_TYPE_TENSORFLOW = 2,
    NRT_FRAMEWORK_TYPE_PYTORCH = 3,
    NRT_FRAMEWORK_TYPE_MXNET = 4,
    NRT_FRAMEWORK_TYPE_PRECHECK = 5
} nrt_framework_type_t;

typedef enum {
    NRT_TENSOR_PLACEMENT_DEVICE = 0,
    NRT_TENSOR_PLACEMENT_HOST = 1, /* deprecated; at most 4 MiB */
    NRT_TENSOR_PLACEMENT_VIRTUAL = 2
} nrt_tensor_placement_t;

typedef enum {
    NRT_TENSOR_USAGE_INPUT = 0,
    NRT_TENSOR_USAGE_OUTPUT = 1
} nrt_tensor_usage_t;

typedef struct nrt_model nrt_model_t;
typedef struct nrt_tensor nrt_tensor_t;
typedef void nrt_tensor_set_t;

/* 296 bytes. dtype is numbered as the imitated runtime release does (NRTSIM_DTYPE_NUMBERING). */
typedef struct {
    char name[256];
    uint32_t usage; /* nrt_tensor_usage_t */
    size_t size;
    uint32_t dtype;
    uint32_t *shape;
    uint32_t ndim;
} nrt_tensor_info_t;

/* Inputs first, then outputs. */
typedef struct {
    uint64_t tensor_count;
    nrt_tensor_info_t tensor_array[];
} nrt_tensor_info_array_t;

/* 224 bytes. */
typedef struct {
    uint64_t rt_major;
    uint64_t rt_minor;
    uint64_t rt_patch;
    uint64_t rt_maintenance;
    char rt_detail[128];
    char git_hash[64];
} nrt_version_t;

NRT_STATUS nrt_init(nrt_framework_type_t fw, const char *fw_version, const char *fal_version);
void nrt_close(void);

NRT_STATUS nrt_load(const void *neff, size_t size, int32_t vnc, int32_t vnc_count,
                    nrt_model_t **model);
NRT_STATUS nrt_load_collectives(const void *neff, size_t size, int32_t vnc, int32_t vnc_count,
                                uint32_t ctx_device_id, uint32_t ctx_device_count,
                                nrt_model_t **model);
NRT_STATUS nrt_unload(nrt_model_t *model);
NRT_STATUS nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input,
                       nrt_tensor_set_t *output);
NRT_STATUS nrt_execute_repeat(nrt_model_t *model, const nrt_tensor_set_t *input,
                              nrt_tensor_set_t *output, int repeat_count);

NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t **set);
/* Sets *set to NULL; frees none of the set's tensors. */
void nrt_destroy_tensor_set(nrt_tensor_set_t **set);
/* Adds or replaces; the name need not be the tensor's own. */
NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *set, const char *name,
                                        nrt_tensor_t *tensor);
/* A missing name is NRT_FAILURE. */
NRT_STATUS nrt_get_tensor_from_tensor_set(nrt_tensor_set_t *set, const char *name,
                                          nrt_tensor_t **tensor);

NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t placement, int vnc, size_t size,
                               const char *name, nrt_tensor_t **tensor);
NRT_STATUS nrt_tensor_allocate_empty(const char *name, nrt_tensor_t **tensor);
/* The tensor uses the caller's buffer in place; the caller keeps it alive. */
NRT_STATUS nrt_tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer, size_t size);
NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t *source, size_t offset, size_t size,
                                     const char *name, nrt_tensor_t **slice);
/* Sets *tensor to NULL; storage shared with slices lives on. */
void nrt_tensor_free(nrt_tensor_t **tensor);
NRT_STATUS nrt_tensor_read(const nrt_tensor_t *tensor, void *buffer, size_t offset, size_t size);
NRT_STATUS nrt_tensor_write(nrt_tensor_t *tensor, const void *buffer, size_t offset,
                            size_t size);
NRT_STATUS nrt_tensor_copy(const nrt_tensor_t *source, size_t source_offset,
                           nrt_tensor_t *destination, size_t destination_offset, size_t size);
NRT_STATUS nrt_tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value, size_t size);
size_t nrt_tensor_get_size(const nrt_tensor_t *tensor);
void *nrt_tensor_get_va(const nrt_tensor_t *tensor);

NRT_STATUS nrt_get_model_tensor_info(nrt_model_t *model, nrt_tensor_info_array_t **info);
NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t *info);

NRT_STATUS nrt_get_version(nrt_version_t *version, size_t size);
NRT_STATUS nrt_get_total_vnc_count(uint32_t *count);
NRT_STATUS nrt_get_visible_vnc_count(uint32_t *count);
/* The bare identifier, e.g. "NRT_INVALID"; "NRT_STATUS_UNKNOWN" for other codes. */
const char *nrt_get_status_as_str(NRT_STATUS status);

#ifdef __cplusplus
}
#endif

#endif /* NRTSIM_NRT_H */

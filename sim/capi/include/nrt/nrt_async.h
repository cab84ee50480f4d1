/*
 * nrt/nrt_async.h: asynchronous tensor I/O, execution and collectives, in queues per
 * NeuronCore and execution unit, with sequence numbers and error trackers.
 *
 * Written for nrtsim from public facts; it is not the AWS header.
 */
#ifndef NRTSIM_NRT_NRT_ASYNC_H
#define NRTSIM_NRT_NRT_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Execution units; new ones are only appended. */
typedef enum {
    NRTA_XU_TENSOR_READ = 0,
    NRTA_XU_TENSOR_WRITE = 1,
    NRTA_XU_TENSOR_OP = 2,
    NRTA_XU_COMPUTE = 3,
    NRTA_XU_COLLECTIVES = 4,
    NRTA_XU_TYPE_NUM = 5
} nrta_xu_t;

/* A request's id: the execution unit in the top 16 bits, a strictly increasing sequence
 * number in the low 48. */
typedef uint64_t nrta_seq_t;
typedef uint16_t nrta_xu_id_t;

#define NRTA_SEQ_NUM_MAX ((1ull << 48) - 1)
#define NRTA_SEQ_NUM_MASK NRTA_SEQ_NUM_MAX
#define NRTA_SEQ_GET_SEQ_NUM(seq_id) ((seq_id) & NRTA_SEQ_NUM_MASK)
#define NRTA_SEQ_GET_XU_ID(seq_id) ((seq_id) >> 48)

/* One failed request: 16 bytes. */
typedef struct nrta_error {
    nrta_seq_t seq_id;
    uint64_t error_code;        /* an NRT_STATUS, widened */
} nrta_error_t;

NRTSIM_LAYOUT_CHECK(sizeof(nrta_error_t) == 16, "nrta_error_t is 16 bytes");

/* The failed requests of one NeuronCore's queues. */
typedef struct nrta_error_tracker nrta_error_tracker_t;

/* Generated from abi/src/functions/table.rs by `cargo xtask codegen`; do not edit. */
NRT_STATUS nrta_tensor_write(nrt_tensor_t *tensor, const void *buf, uint64_t offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence);
NRT_STATUS nrta_tensor_read(void *buf, nrt_tensor_t *tensor, uint64_t offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence);
NRT_STATUS nrta_tensor_copy(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst, uint64_t dst_offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence);
NRT_STATUS nrta_execute_schedule(nrt_model_t *model, const nrt_tensor_set_t *input, nrt_tensor_set_t *output, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence);
NRT_STATUS nrta_cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input, nrt_tensor_list_t *output, nrt_dtype_t dtype, nrt_op_type_t op, nrt_cc_op_type_t cc_op, nrt_cc_context_t **cc_ctx);
NRT_STATUS nrta_cc_schedule(nrt_cc_context_t **cc_ctx, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence);
NRT_STATUS nrta_is_completed(nrta_seq_t seq, bool *is_completed);
NRT_STATUS nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq);
NRT_STATUS nrta_get_completion_handle(nrta_seq_t seq, int *fd);
NRT_STATUS nrta_error_tracker_create(uint32_t lnc_idx, nrta_error_tracker_t **error_tracker);
void nrta_error_tracker_destroy(nrta_error_tracker_t *error_tracker);
NRT_STATUS nrta_error_tracker_get_list(nrta_error_tracker_t *error_tracker, const nrta_error_t **list, size_t *error_count);
/* End of the generated prototypes. */

#ifdef __cplusplus
}
#endif

#endif

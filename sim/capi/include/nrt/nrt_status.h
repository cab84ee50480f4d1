/*
 * nrt/nrt_status.h: NRT_STATUS, the status every libnrt call returns.
 *
 * Written for nrtsim from the facts of its ABI notes (names and values); it is not the AWS
 * header. A 4-byte enum; 8 and 12 were never defined.
 */
#ifndef NRTSIM_NRT_NRT_STATUS_H
#define NRTSIM_NRT_NRT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

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
    NRT_COLL_PENDING = 1100, /* not finished yet: poll again */
    NRT_EXEC_HW_ERR_COLLECTIVES = 1200,
    NRT_EXEC_HW_ERR_HBM_UE = 1201,
    NRT_EXEC_HW_ERR_NC_UE = 1202,
    NRT_EXEC_HW_ERR_DMA_ABORT = 1203,
    NRT_EXEC_SW_NQ_OVERFLOW = 1204,
    NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205,
    NRT_NETWORK_PROXY_FAILURE = 1206
} NRT_STATUS;

/* nrt_get_status_as_str: the bare identifier of a status ("NRT_EXEC_COMPLETED_WITH_NUM_ERR"), in
 * static storage. */
/* Generated from abi/src/functions/table.rs by `cargo xtask codegen`; do not edit. */
const char *nrt_get_status_as_str(NRT_STATUS status);
/* End of the generated prototypes. */

#ifdef __cplusplus
}
#endif

#endif

/*
 * nrt/ndebug_stream.h: a client's connection to the debug events a Logical NeuronCore emits
 * (prints and debug tensor reads of device code).
 *
 * Written for nrtsim from the facts of the public header (names, signatures, values and
 * layouts); it is not the AWS header. The simulator runs no device code: nrt_debug_client_connect
 * and nrt_debug_client_read_one_event return NRT_INVALID, and nrt_debug_client_connect_close
 * does nothing.
 */
#ifndef NRTSIM_NRT_NDEBUG_STREAM_H
#define NRTSIM_NRT_NDEBUG_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ndebug_stream_event_type {
    NDEBUG_STREAM_EVENT_TYPE_INVALID = 0,
    NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ = 1,
} ndebug_stream_event_type_t;

/* 64 bytes: the payload's size and its ndebug_stream_event_type_t. */
typedef struct ndebug_stream_event_header {
    uint64_t data_size;
    uint32_t type;
    char reserved[52];
} ndebug_stream_event_header_t;

/* The payload of NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ: 1024 bytes, then the tensor's bytes. */
typedef struct ndebug_stream_payload_debug_tensor_read {
    char prefix[512];
    uint32_t logical_nc_id;
    uint32_t pipe;
    char tensor_dtype[16];
    uint64_t tensor_shape[8];
    uint64_t tensor_data_size;
    char reserved0[416];
    char tensor_data[];
} ndebug_stream_payload_debug_tensor_read_t;

/* nrt_debug_client_connect connects to the debug stream of Logical NeuronCore logical_nc_idx;
 * *stream_fd is a pollable descriptor, one connection per stream at a time.
 * nrt_debug_client_connect_close closes such a connection. nrt_debug_client_read_one_event takes
 * one event off the stream: its header, and a payload the caller frees. */
/* Generated from abi/src/functions/table.rs by `cargo xtask codegen`; do not edit. */
NRT_STATUS nrt_debug_client_connect(int logical_nc_idx, int *stream_fd);
void nrt_debug_client_connect_close(int stream_fd);
NRT_STATUS nrt_debug_client_read_one_event(int stream_fd, ndebug_stream_event_header_t *header, void **payload);
/* End of the generated prototypes. */

#ifdef __cplusplus
}
#endif

#endif

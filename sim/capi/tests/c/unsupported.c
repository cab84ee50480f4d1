/*
 * Interfaces a simulator cannot provide: each returns NRT_INVALID (never a silent success), also
 * when called again. Run with NRTSIM_LOG=1, the library says why once per function on stderr.
 * Prints "unsupported ok" and exits 0, or names the first failed check and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include <nrt/ndebug_stream.h>
#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_async_sendrecv.h>
#include <nrt/nrt_experimental.h>

#include "check.h"

int main(void) {
    nrt_ucode_info ucode = {{NULL, 0}, {NULL, 0}};
    /* The debug stream is a runtime call: before nrt_init it is refused by the gate. */
    int stream = -7;
    expect("nrt_debug_client_connect before init", nrt_debug_client_connect(0, &stream),
           NRT_UNINITIALIZED);
    /* The only function documented as callable only before nrt_init. */
    expect("nrt_set_pool_eng_ucode before init", nrt_set_pool_eng_ucode(&ucode), NRT_INVALID);
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    for (int round = 0; round < 2; round++) {
        int fd = 0;
        void *va = NULL;
        size_t size = 0;
        uint32_t count = 4, map[4];
        char bdf[32];
        size_t len = sizeof bdf;
        int err = 0;
        char message[64];
        nrt_cc_context_t *context = NULL;
        nrta_seq_t seq = 0;
        nrt_async_sendrecv_comm_t *comm = NULL;
        nrt_async_sendrecv_request_t *request = NULL;
        bool done = false;
        int num = 0;
        expect("nrt_get_dmabuf_fd", nrt_get_dmabuf_fd(0, 16, &fd), NRT_INVALID);
        expect("nrt_host_device_id_rid_map_get", nrt_host_device_id_rid_map_get(&count, map),
               NRT_INVALID);
        expect("nrt_get_hbm_mmap_va", nrt_get_hbm_mmap_va(0, 0, &va, &size), NRT_INVALID);
        expect("nrt_get_attached_efa_bdf", nrt_get_attached_efa_bdf(va, bdf, &len), NRT_INVALID);
        expect("nrt_set_pool_eng_ucode after init", nrt_set_pool_eng_ucode(&ucode), NRT_INVALID);
        if (nrt_get_libnccl_net(&err, message, sizeof message) != NULL || err == 0) {
            printf("nrt_get_libnccl_net returned a plugin\n");
            return 1;
        }
        expect("nrta_cc_prepare",
               nrta_cc_prepare(NULL, NULL, NULL, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE,
                               &context),
               NRT_INVALID);
        expect("nrta_cc_schedule", nrta_cc_schedule(&context, 0, NULL, &seq), NRT_INVALID);
        expect("nrt_async_sendrecv_get_max_num_communicators_per_lnc",
               nrt_async_sendrecv_get_max_num_communicators_per_lnc(&num), NRT_INVALID);
        expect("nrt_async_sendrecv_get_max_num_pending_request",
               nrt_async_sendrecv_get_max_num_pending_request(&num), NRT_INVALID);
        expect("nrt_async_sendrecv_init", nrt_async_sendrecv_init(0), NRT_INVALID);
        expect("nrt_async_sendrecv_connect",
               nrt_async_sendrecv_connect("10.0.0.1", 0, 0, &comm), NRT_INVALID);
        expect("nrt_async_sendrecv_accept", nrt_async_sendrecv_accept("10.0.0.1", 0, 0, &comm),
               NRT_INVALID);
        expect("nrt_async_sendrecv_test_comm", nrt_async_sendrecv_test_comm(comm, &done),
               NRT_INVALID);
        expect("nrt_async_sendrecv_send_tensor",
               nrt_async_sendrecv_send_tensor(NULL, 0, 16, comm, &request), NRT_INVALID);
        expect("nrt_async_sendrecv_recv_tensor",
               nrt_async_sendrecv_recv_tensor(NULL, 0, 16, comm, &request), NRT_INVALID);
        expect("nrt_async_sendrecv_test_request",
               nrt_async_sendrecv_test_request(request, &done, &size), NRT_INVALID);
        expect("nrt_async_sendrecv_flush", nrt_async_sendrecv_flush(0), NRT_INVALID);
        expect("nrt_async_sendrecv_close", nrt_async_sendrecv_close(0), NRT_INVALID);
        /* No device code runs, so no core has a debug stream: nothing is handed out or read. */
        ndebug_stream_event_header_t header = {7, 1, {0}};
        void *payload = &header;
        expect("nrt_debug_client_connect", nrt_debug_client_connect(0, &stream), NRT_INVALID);
        ensure(stream == -7, "a refused connect leaves the descriptor alone");
        expect("nrt_debug_client_read_one_event",
               nrt_debug_client_read_one_event(stream, &header, &payload), NRT_INVALID);
        ensure(header.data_size == 7 && payload == &header, "a refused read writes nothing");
        nrt_debug_client_connect_close(stream);
    }
    _Static_assert(sizeof(ndebug_stream_event_header_t) == 64, "the event header is 64 bytes");
    nrt_close();
    printf("unsupported ok\n");
    return 0;
}

/*
 * Collectives over the ranks of one process: four threads, one rank and one NeuronCore each,
 * call nrt_build_global_comm, then nrt_barrier and nrt_all_gather for three rounds, and check
 * that every rank gathers every rank's bytes in rank order. Run with NRTSIM_CORES=4. Prints
 * "collectives ok" and exits 0, or names the first failed check and exits 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <nrt/nrt.h>
#include <nrt/nrt_experimental.h>

#include "check.h"

#define WORLD 4
#define VALUES 3
#define ROUNDS 3

/* What rank `rank` brings in round `round`: distinct in every byte's position. */
static uint32_t value_of(int round, int rank, int i) {
    return (uint32_t)(round * 10000 + rank * 100 + i);
}

struct rank_result {
    int rank;
    char failure[160];
};

static void *run_rank(void *arg) {
    struct rank_result *result = arg;
    int rank = result->rank;
    NRT_STATUS status = nrt_build_global_comm(rank, (uint32_t)rank, WORLD);
    if (status != NRT_SUCCESS) {
        snprintf(result->failure, sizeof result->failure,
                 "rank %d: nrt_build_global_comm returned %s", rank,
                 nrt_get_status_as_str(status));
        return NULL;
    }
    for (int round = 0; round < ROUNDS; round++) {
        uint32_t input[VALUES];
        uint32_t gathered[WORLD * VALUES] = {0};
        for (int i = 0; i < VALUES; i++) {
            input[i] = value_of(round, rank, i);
        }
        status = nrt_barrier(rank, (uint32_t)rank, WORLD);
        if (status != NRT_SUCCESS) {
            snprintf(result->failure, sizeof result->failure,
                     "rank %d round %d: nrt_barrier returned %s", rank, round,
                     nrt_get_status_as_str(status));
            return NULL;
        }
        status = nrt_all_gather(rank, (uint32_t)rank, WORLD, sizeof input, input, gathered);
        if (status != NRT_SUCCESS) {
            snprintf(result->failure, sizeof result->failure,
                     "rank %d round %d: nrt_all_gather returned %s", rank, round,
                     nrt_get_status_as_str(status));
            return NULL;
        }
        for (int from = 0; from < WORLD; from++) {
            for (int i = 0; i < VALUES; i++) {
                uint32_t got = gathered[from * VALUES + i];
                uint32_t want = value_of(round, from, i);
                if (got != want) {
                    snprintf(result->failure, sizeof result->failure,
                             "rank %d round %d: gathered[%d] is %u, expected %u", rank, round,
                             from * VALUES + i, (unsigned)got, (unsigned)want);
                    return NULL;
                }
            }
        }
    }
    return NULL;
}

int main(void) {
    expect("nrt_barrier before nrt_init", nrt_barrier(0, 0, WORLD), NRT_UNINITIALIZED);
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    expect("nrt_build_global_comm of rank 4 of 4", nrt_build_global_comm(0, WORLD, WORLD),
           NRT_INVALID);
    expect("nrt_cc_global_comm_init on vnc 4 of 4", nrt_cc_global_comm_init(WORLD, 0, WORLD),
           NRT_INVALID);
    uint32_t one = 7;
    expect("nrt_all_gather without an output", nrt_all_gather(0, 0, WORLD, 4, &one, NULL),
           NRT_INVALID);

    pthread_t threads[WORLD];
    struct rank_result results[WORLD];
    for (int rank = 0; rank < WORLD; rank++) {
        results[rank].rank = rank;
        results[rank].failure[0] = '\0';
        if (pthread_create(&threads[rank], NULL, run_rank, &results[rank]) != 0) {
            printf("cannot start the thread of rank %d\n", rank);
            return 1;
        }
    }
    int failed = 0;
    for (int rank = 0; rank < WORLD; rank++) {
        pthread_join(threads[rank], NULL);
        if (results[rank].failure[0] != '\0') {
            printf("%s\n", results[rank].failure);
            failed = 1;
        }
    }
    if (failed) {
        return 1;
    }
    nrt_close();
    printf("collectives ok\n");
    return 0;
}

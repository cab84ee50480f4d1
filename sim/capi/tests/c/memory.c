/*
 * Raw memory at the C boundary of nrtsim's libnrt.so.1: a caller pointer that points into the
 * tensor's own storage (from nrt_tensor_get_va) is a valid source for nrt_tensor_write and a valid
 * destination for nrt_tensor_read, with memmove semantics; an allocation the machine cannot hold
 * is NRT_RESOURCE and the process goes on.
 *
 * Usage: memory PLACEMENT (0 device, 2 virtual). Prints "memory ok" and the time the refused
 * allocation took, and exits 0, or names the first failed check and exits 1.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrt.h"

#include "check.h"

#define SIZE 4096

static void fill_pattern(nrt_tensor_t *tensor) {
    unsigned char pattern[SIZE];
    for (int i = 0; i < SIZE; i++) {
        pattern[i] = (unsigned char)(i * 7 + 1);
    }
    expect("write the pattern", nrt_tensor_write(tensor, pattern, 0, SIZE), NRT_SUCCESS);
}

/* After a move by one byte, byte i + 1 holds what byte i held (memmove), byte `kept` is as it
 * was. */
static void check_shifted(nrt_tensor_t *tensor, const char *what) {
    unsigned char got[SIZE];
    expect("read back", nrt_tensor_read(tensor, got, 0, SIZE), NRT_SUCCESS);
    if (got[0] != 1) {
        printf("%s: byte 0 is %d, expected 1 (untouched)\n", what, got[0]);
        exit(1);
    }
    for (int i = 0; i + 1 < SIZE; i++) {
        unsigned char want = (unsigned char)(i * 7 + 1);
        if (got[i + 1] != want) {
            printf("%s: byte %d is %d, expected %d\n", what, i + 1, got[i + 1], want);
            exit(1);
        }
    }
}

int main(int argc, char **argv) {
    ensure(argc == 2, "usage: memory PLACEMENT");
    nrt_tensor_placement_t placement = (nrt_tensor_placement_t)atoi(argv[1]);
    expect("init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);

    nrt_tensor_t *tensor = NULL;
    expect("allocate", nrt_tensor_allocate(placement, 0, SIZE, "t", &tensor), NRT_SUCCESS);
    unsigned char *va = nrt_tensor_get_va(tensor);
    ensure(va != NULL, "the tensor has an address");

    /* Write from the tensor's own memory, one byte further on. */
    fill_pattern(tensor);
    expect("write from the tensor's own memory", nrt_tensor_write(tensor, va, 1, SIZE - 1),
           NRT_SUCCESS);
    check_shifted(tensor, "write from own memory");

    /* Read into the tensor's own memory, one byte further on. */
    fill_pattern(tensor);
    expect("read into the tensor's own memory", nrt_tensor_read(tensor, va + 1, 0, SIZE - 1),
           NRT_SUCCESS);
    check_shifted(tensor, "read into own memory");
    nrt_tensor_free(&tensor);

    /* A terabyte of host memory: refused as a resource shortage, and the process survives. */
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    NRT_STATUS huge = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, 0, (size_t)1 << 40,
                                          "huge", &tensor);
    clock_gettime(CLOCK_MONOTONIC, &end);
    expect("allocate 1 TiB of virtual memory", huge, NRT_RESOURCE);
    ensure(tensor == NULL, "no tensor for a refused allocation");
    double micros = (double)(end.tv_sec - start.tv_sec) * 1e6 +
                    (double)(end.tv_nsec - start.tv_nsec) / 1e3;

    /* Still usable afterwards. */
    expect("allocate after the refusal",
           nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, 0, 8, "small", &tensor), NRT_SUCCESS);
    nrt_tensor_free(&tensor);
    nrt_close();
    printf("refused 1 TiB allocation in %.1f us\n", micros);
    printf("memory ok\n");
    return 0;
}

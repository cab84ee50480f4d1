/* The checks every C test program uses: a failed one prints what failed and exits with 1, so the
 * Rust test that runs the program reports the line. Included by the programs in this folder. */
#ifndef NRTSIM_TESTS_C_CHECK_H
#define NRTSIM_TESTS_C_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>

/* `got` must be `want`; the message names both statuses by libnrt's own strings. */
static inline void expect(const char *what, NRT_STATUS got, NRT_STATUS want) {
    if (got != want) {
        printf("%s returned %s (%d), expected %s (%d)\n", what, nrt_get_status_as_str(got),
               (int)got, nrt_get_status_as_str(want), (int)want);
        exit(1);
    }
}

/* `ok` must hold. */
static inline void ensure(int ok, const char *what) {
    if (!ok) {
        printf("check failed: %s\n", what);
        exit(1);
    }
}

/* The whole file at `path` in memory from malloc, its size in `*size`. */
static inline void *read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    ensure(file != NULL, "open the file");
    ensure(fseek(file, 0, SEEK_END) == 0, "seek to the end of the file");
    long length = ftell(file);
    ensure(length >= 0 && fseek(file, 0, SEEK_SET) == 0, "measure the file");
    void *bytes = malloc(length > 0 ? (size_t)length : 1);
    ensure(bytes != NULL && fread(bytes, 1, (size_t)length, file) == (size_t)length,
           "read the file");
    fclose(file);
    *size = (size_t)length;
    return bytes;
}

/* Polls a request until it completes; a request that never completes fails the program. */
static inline void wait_for(nrta_seq_t seq) {
    for (long spin = 0; spin < 200000000L; spin++) {
        bool done = false;
        expect("nrta_is_completed", nrta_is_completed(seq, &done), NRT_SUCCESS);
        if (done) {
            return;
        }
    }
    ensure(0, "an async request completes");
}

#endif

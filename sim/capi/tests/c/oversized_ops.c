/*
 * Batched and asynchronous tensor I/O whose operation names far more bytes than its tensor has:
 * each is refused by its range (NRT_INVALID) before the library allocates or copies the
 * operation's bytes, as nrt_tensor_write and nrt_tensor_read refuse the same arguments. The
 * program first caps its own address space at what it already uses plus 1 GiB, so a library
 * that allocated the 4 GiB an operation names fails it with NRT_RESOURCE instead, and the check
 * names it; the caller's 16-byte buffers are never read past their end by a correct library.
 * Ranges whose end overflows, and batch ops without a buffer, are refused too.
 * Prints "oversized ops ok" and exits 0, or names the first failed check and exits 1.
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>

#include "check.h"

/* Four GiB: far more than the 16-byte tensor, and more than the capped address space. */
static const uint64_t HUGE_SIZE = 1ull << 32;

/* Caps the address space at the current size plus 1 GiB. */
static void cap_address_space(void) {
    FILE *statm = fopen("/proc/self/statm", "r");
    ensure(statm != NULL, "open /proc/self/statm");
    unsigned long pages = 0;
    ensure(fscanf(statm, "%lu", &pages) == 1, "read the address space size");
    fclose(statm);
    rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (1ull << 30);
    struct rlimit limit = {cap, cap};
    ensure(setrlimit(RLIMIT_AS, &limit) == 0, "cap the address space");
}

/* The tracker lists exactly one failure, request `seq` with NRT_INVALID. */
static void expect_one_invalid(nrta_error_tracker_t *tracker, nrta_seq_t seq, const char *what) {
    const nrta_error_t *errors = NULL;
    size_t count = 0;
    expect("nrta_error_tracker_get_list", nrta_error_tracker_get_list(tracker, &errors, &count),
           NRT_SUCCESS);
    if (count != 1 || errors[0].seq_id != seq || errors[0].error_code != NRT_INVALID) {
        printf("%s: the tracker lists %zu failures, the first with status %llu, expected one, "
               "NRT_INVALID (%d)\n",
               what, count, count > 0 ? (unsigned long long)errors[0].error_code : 0ull,
               (int)NRT_INVALID);
        exit(1);
    }
}

int main(void) {
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    nrt_tensor_t *tensor = NULL;
    expect("nrt_tensor_allocate",
           nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "t", &tensor), NRT_SUCCESS);
    unsigned char buffer[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    cap_address_space();

    /* The single calls, for reference: the range is refused. */
    expect("nrt_tensor_write of 4 GiB", nrt_tensor_write(tensor, buffer, 0, HUGE_SIZE),
           NRT_INVALID);
    expect("nrt_tensor_read of 4 GiB", nrt_tensor_read(tensor, buffer, 0, HUGE_SIZE),
           NRT_INVALID);

    /* The batch calls refuse the same operation; the valid operation before it is applied. */
    nrt_tensor_batch_op_t write_ops[2] = {{0, 16, buffer}, {0, HUGE_SIZE, buffer}};
    nrt_tensor_batch_t write_batch = {tensor, write_ops, 2};
    expect("nrt_tensor_write_batch with a 4 GiB op",
           nrt_tensor_write_batch(&write_batch, 1, false), NRT_INVALID);
    unsigned char back[16] = {0};
    nrt_tensor_batch_op_t read_ops[2] = {{0, 16, back}, {8, HUGE_SIZE, back}};
    nrt_tensor_batch_t read_batch = {tensor, read_ops, 2};
    expect("nrt_tensor_read_batch with a 4 GiB op", nrt_tensor_read_batch(&read_batch, 1, false),
           NRT_INVALID);
    ensure(back[0] == 1 && back[15] == 16, "the valid op before the refused one was applied");

    /* A range whose end does not fit in 64 bits is refused, not wrapped around to a small end. */
    expect("nrt_tensor_read at offset SIZE_MAX", nrt_tensor_read(tensor, back, SIZE_MAX, 16),
           NRT_INVALID);
    expect("nrt_tensor_write at offset SIZE_MAX", nrt_tensor_write(tensor, buffer, SIZE_MAX, 16),
           NRT_INVALID);
    nrt_tensor_batch_op_t wrapping_ops[1] = {{UINT64_MAX, 16, back}};
    nrt_tensor_batch_t wrapping_batch = {tensor, wrapping_ops, 1};
    expect("nrt_tensor_read_batch at offset UINT64_MAX",
           nrt_tensor_read_batch(&wrapping_batch, 1, false), NRT_INVALID);

    /* An op with bytes to move and no buffer is refused; an empty op needs none. */
    nrt_tensor_batch_op_t null_ops[1] = {{0, 16, NULL}};
    nrt_tensor_batch_t null_batch = {tensor, null_ops, 1};
    expect("nrt_tensor_write_batch from NULL", nrt_tensor_write_batch(&null_batch, 1, false),
           NRT_INVALID);
    expect("nrt_tensor_read_batch into NULL", nrt_tensor_read_batch(&null_batch, 1, false),
           NRT_INVALID);
    nrt_tensor_batch_op_t empty_ops[1] = {{0, 0, NULL}};
    nrt_tensor_batch_t empty_batch = {tensor, empty_ops, 1};
    expect("nrt_tensor_write_batch of an empty op", nrt_tensor_write_batch(&empty_batch, 1, false),
           NRT_SUCCESS);

    /* The async calls schedule (the range is the request's to judge) and fail with INVALID. */
    nrta_error_tracker_t *tracker = NULL;
    expect("nrta_error_tracker_create", nrta_error_tracker_create(0, &tracker), NRT_SUCCESS);
    nrta_seq_t seq = 0;
    expect("nrta_tensor_write of 4 GiB",
           nrta_tensor_write(tensor, buffer, 0, HUGE_SIZE, 0, tracker, &seq), NRT_SUCCESS);
    wait_for(seq);
    expect_one_invalid(tracker, seq, "nrta_tensor_write of 4 GiB");
    nrta_error_tracker_destroy(tracker);
    expect("nrta_error_tracker_create", nrta_error_tracker_create(0, &tracker), NRT_SUCCESS);
    expect("nrta_tensor_read of 4 GiB",
           nrta_tensor_read(back, tensor, 0, HUGE_SIZE, 0, tracker, &seq), NRT_SUCCESS);
    wait_for(seq);
    expect_one_invalid(tracker, seq, "nrta_tensor_read of 4 GiB");
    nrta_error_tracker_destroy(tracker);

    nrt_tensor_free(&tensor);
    nrt_close();
    printf("oversized ops ok\n");
    return 0;
}

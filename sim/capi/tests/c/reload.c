/*
 * Loads and unloads one NEFF many times through nrtsim's libnrt.so.1 and reports how the
 * process's data segment grew (/proc/self/statm), for a NEFF without a device program whose
 * warning must be printed once per process and kept once.
 *
 * Usage: reload MODEL.neff CYCLES. Prints "reload ok", then "data segment grew N KiB over CYCLES
 * cycles", and exits 0, or names the first failed call and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>

#include "nrt.h"

#include "check.h"

static long data_pages(void) {
    long fields[7] = {0};
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm == NULL) {
        return 0;
    }
    for (int i = 0; i < 7; i++) {
        if (fscanf(statm, "%ld", &fields[i]) != 1) {
            break;
        }
    }
    fclose(statm);
    return fields[5];
}

static void cycles(const void *neff, size_t size, long count) {
    for (long i = 0; i < count; i++) {
        nrt_model_t *model = NULL;
        expect("nrt_load", nrt_load(neff, size, -1, 1, &model), NRT_SUCCESS);
        expect("nrt_unload", nrt_unload(model), NRT_SUCCESS);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        printf("usage: reload MODEL.neff CYCLES\n");
        return 1;
    }
    size_t length = 0;
    void *neff = read_file(argv[1], &length);
    long count = atol(argv[2]);
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    cycles(neff, length, 100); /* warm up allocator caches */
    long before = data_pages();
    cycles(neff, length, count);
    long after = data_pages();
    nrt_close();
    printf("reload ok\n");
    printf("data segment grew %ld KiB over %ld cycles\n", (after - before) * 4, count);
    return 0;
}

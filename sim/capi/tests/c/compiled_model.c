/*
 * A compiled model run the way spike (nkipy's runtime) drives libnrt: init -> visible core count
 * -> load -> tensor info -> one tensor per info entry with its size, added to the input or
 * output set under its name -> write the inputs -> execute -> read the outputs -> free.
 *
 * Usage: compiled_model MODEL.neff INPUTS_DIR OUTPUTS_DIR RTOL ATOL
 * Each input NAME is read from INPUTS_DIR/NAME.npy; each output is compared with
 * OUTPUTS_DIR/NAME.npy (the producer's values), element by element as numpy.allclose does:
 * |ours - theirs| <= ATOL + RTOL * |theirs|, NaN matching NaN. The .npy dtype must be the one the
 * tensor info reports, and its data exactly the tensor's size. Prints one line per output with the
 * largest differences, then "compiled model ok", or names the first failed check and exits 1.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nrt/nrt.h>
#include <nrt/nrt_experimental.h>

#include "check.h"

/* The .npy descr numpy writes for an nrt dtype (bfloat16 as ml_dtypes saves it); NULL for one
 * this program does not compare. */
static const char *descr_of(nrt_dtype_t dtype) {
    switch (dtype) {
    case NRT_DTYPE_FLOAT32: return "<f4";
    case NRT_DTYPE_FLOAT16: return "<f2";
    case NRT_DTYPE_BFLOAT16: return "<V2";
    case NRT_DTYPE_INT8: return "|i1";
    case NRT_DTYPE_UINT8: return "|u1";
    case NRT_DTYPE_INT16: return "<i2";
    case NRT_DTYPE_UINT16: return "<u2";
    case NRT_DTYPE_INT32: return "<i4";
    case NRT_DTYPE_UINT32: return "<u4";
    case NRT_DTYPE_INT64: return "<i8";
    case NRT_DTYPE_UINT64: return "<u8";
    default: return NULL;
    }
}

/* An IEEE half's bits as a float, by building the float's bits (no libm: the harness links
 * only -lnrt). */
static float half_to_float(uint16_t bits) {
    uint32_t sign = (uint32_t)(bits >> 15) << 31, exponent = (bits >> 10) & 0x1f;
    uint32_t mantissa = bits & 0x3ff, wide;
    if (exponent == 0x1f) {
        wide = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
        wide = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        wide = sign;
    } else {
        /* A subnormal half is a normal float: shift the mantissa up to its leading one. */
        int shift = 0;
        while ((mantissa & 0x400) == 0) {
            mantissa <<= 1;
            shift++;
        }
        wide = sign | ((uint32_t)(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
    }
    float value;
    memcpy(&value, &wide, 4);
    return value;
}

static double absolute(double x) { return x < 0 ? -x : x; }

/* Element `i` of `bytes` of `dtype`, as a double. */
static double element(nrt_dtype_t dtype, const unsigned char *bytes, size_t i) {
    switch (dtype) {
    case NRT_DTYPE_FLOAT32: { float v; memcpy(&v, bytes + 4 * i, 4); return v; }
    case NRT_DTYPE_FLOAT16: { uint16_t v; memcpy(&v, bytes + 2 * i, 2); return half_to_float(v); }
    case NRT_DTYPE_BFLOAT16: {
        uint16_t v; memcpy(&v, bytes + 2 * i, 2);
        uint32_t wide = (uint32_t)v << 16; float f; memcpy(&f, &wide, 4); return f;
    }
    case NRT_DTYPE_INT8: return (int8_t)bytes[i];
    case NRT_DTYPE_UINT8: return bytes[i];
    case NRT_DTYPE_INT16: { int16_t v; memcpy(&v, bytes + 2 * i, 2); return v; }
    case NRT_DTYPE_UINT16: { uint16_t v; memcpy(&v, bytes + 2 * i, 2); return v; }
    case NRT_DTYPE_INT32: { int32_t v; memcpy(&v, bytes + 4 * i, 4); return v; }
    case NRT_DTYPE_UINT32: { uint32_t v; memcpy(&v, bytes + 4 * i, 4); return v; }
    case NRT_DTYPE_INT64: { int64_t v; memcpy(&v, bytes + 8 * i, 8); return (double)v; }
    case NRT_DTYPE_UINT64: { uint64_t v; memcpy(&v, bytes + 8 * i, 8); return (double)v; }
    default: return NAN;
    }
}

static size_t item_size(nrt_dtype_t dtype) {
    const char *descr = descr_of(dtype);
    return descr ? (size_t)(descr[2] - '0') : 0;
}

/* The data of DIR/NAME.npy in memory from malloc, after checking that its descr is `descr`, it
 * is in C order and holds exactly `size` bytes. */
static unsigned char *read_npy(const char *dir, const char *name, const char *descr, size_t size) {
    char path[4096];
    ensure(snprintf(path, sizeof path, "%s/%s.npy", dir, name) < (int)sizeof path, "path fits");
    size_t length = 0;
    unsigned char *file = read_file(path, &length);
    ensure(length >= 10 && memcmp(file, "\x93NUMPY", 6) == 0, "a .npy file starts with its magic");
    size_t header_len, start;
    if (file[6] == 1) {
        header_len = (size_t)file[8] | (size_t)file[9] << 8;
        start = 10;
    } else {
        ensure(length >= 12, "a version 2 or 3 .npy header has a 4-byte length");
        header_len = (size_t)file[8] | (size_t)file[9] << 8 | (size_t)file[10] << 16 |
                     (size_t)file[11] << 24;
        start = 12;
    }
    ensure(start + header_len <= length, "the .npy header fits in the file");
    char *header = malloc(header_len + 1);
    ensure(header != NULL, "allocate the header");
    memcpy(header, file + start, header_len);
    header[header_len] = '\0';
    char want[64];
    snprintf(want, sizeof want, "'descr': '%s'", descr);
    char want_void[64];
    snprintf(want_void, sizeof want_void, "'descr': '|%s'", descr + 1);
    /* A PRED tensor crosses libnrt as uint8: numpy saves the producer's bools as |b1. */
    int as_bool = strcmp(descr, "|u1") == 0 && strstr(header, "'descr': '|b1'") != NULL;
    if (strstr(header, want) == NULL && strstr(header, want_void) == NULL && !as_bool) {
        printf("%s: header %s, expected descr %s (the tensor info's dtype)\n", path, header, descr);
        exit(1);
    }
    ensure(strstr(header, "'fortran_order': False") != NULL, "the .npy array is in C order");
    free(header);
    size_t data = start + header_len;
    if (length - data != size) {
        printf("%s: %zu data bytes, expected the tensor's %zu\n", path, length - data, size);
        exit(1);
    }
    unsigned char *bytes = malloc(size > 0 ? size : 1);
    ensure(bytes != NULL, "allocate the data");
    memcpy(bytes, file + data, size);
    free(file);
    return bytes;
}

int main(int argc, char **argv) {
    ensure(argc == 6, "usage: compiled_model MODEL.neff INPUTS_DIR OUTPUTS_DIR RTOL ATOL");
    const char *inputs_dir = argv[2], *outputs_dir = argv[3];
    double rtol = strtod(argv[4], NULL), atol = strtod(argv[5], NULL);
    size_t neff_size = 0;
    void *neff = read_file(argv[1], &neff_size);

    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    uint32_t visible = 0;
    expect("nrt_get_visible_nc_count", nrt_get_visible_nc_count(&visible), NRT_SUCCESS);
    ensure(visible >= 1, "at least one visible NeuronCore");
    nrt_model_t *model = NULL;
    expect("nrt_load", nrt_load(neff, neff_size, 0, 1, &model), NRT_SUCCESS);
    nrt_tensor_info_array_t *info = NULL;
    expect("nrt_get_model_tensor_info", nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
    ensure(info->tensor_count > 0, "the model has tensors");

    nrt_tensor_set_t *inputs = NULL, *outputs = NULL;
    expect("nrt_allocate_tensor_set", nrt_allocate_tensor_set(&inputs), NRT_SUCCESS);
    expect("nrt_allocate_tensor_set", nrt_allocate_tensor_set(&outputs), NRT_SUCCESS);
    nrt_tensor_t **tensors = calloc(info->tensor_count, sizeof *tensors);
    ensure(tensors != NULL, "allocate the tensor list");
    size_t n_outputs = 0;
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        const nrt_tensor_info_t *entry = &info->tensor_array[i];
        const char *descr = descr_of(entry->dtype);
        if (descr == NULL) {
            printf("%s: dtype %d, which this program does not compare\n", entry->name,
                   (int)entry->dtype);
            exit(1);
        }
        expect("nrt_tensor_allocate",
               nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, entry->size, entry->name,
                                   &tensors[i]),
               NRT_SUCCESS);
        if (entry->usage == NRT_TENSOR_USAGE_INPUT) {
            unsigned char *data = read_npy(inputs_dir, entry->name, descr, entry->size);
            expect("nrt_tensor_write", nrt_tensor_write(tensors[i], data, 0, entry->size),
                   NRT_SUCCESS);
            free(data);
            expect("nrt_add_tensor_to_tensor_set",
                   nrt_add_tensor_to_tensor_set(inputs, entry->name, tensors[i]), NRT_SUCCESS);
        } else {
            n_outputs++;
            expect("nrt_add_tensor_to_tensor_set",
                   nrt_add_tensor_to_tensor_set(outputs, entry->name, tensors[i]), NRT_SUCCESS);
        }
    }
    ensure(n_outputs > 0, "the model has outputs");

    expect("nrt_execute", nrt_execute(model, inputs, outputs), NRT_SUCCESS);

    for (uint64_t i = 0; i < info->tensor_count; i++) {
        const nrt_tensor_info_t *entry = &info->tensor_array[i];
        if (entry->usage != NRT_TENSOR_USAGE_OUTPUT) {
            continue;
        }
        unsigned char *got = malloc(entry->size > 0 ? entry->size : 1);
        ensure(got != NULL, "allocate an output buffer");
        expect("nrt_tensor_read", nrt_tensor_read(tensors[i], got, 0, entry->size), NRT_SUCCESS);
        unsigned char *want = read_npy(outputs_dir, entry->name, descr_of(entry->dtype), entry->size);
        size_t n = entry->size / item_size(entry->dtype);
        double max_abs = 0.0, max_rel = 0.0;
        for (size_t k = 0; k < n; k++) {
            double g = element(entry->dtype, got, k), w = element(entry->dtype, want, k);
            if ((isnan(g) && isnan(w)) || g == w) {
                continue;
            }
            double difference = absolute(g - w);
            if (!(difference <= atol + rtol * absolute(w))) {
                printf("%s[%zu] is %.9g, expected %.9g within atol %g + rtol %g\n", entry->name,
                       k, g, w, atol, rtol);
                exit(1);
            }
            max_abs = difference > max_abs ? difference : max_abs;
            if (w != 0.0) {
                double relative = difference / absolute(w);
                max_rel = relative > max_rel ? relative : max_rel;
            }
        }
        printf("%s: %zu elements, max abs %.3e, max rel %.3e\n", entry->name, n, max_abs, max_rel);
        free(got);
        free(want);
    }

    for (uint64_t i = 0; i < info->tensor_count; i++) {
        nrt_tensor_free(&tensors[i]);
    }
    free(tensors);
    nrt_destroy_tensor_set(&inputs);
    nrt_destroy_tensor_set(&outputs);
    expect("nrt_free_model_tensor_info", nrt_free_model_tensor_info(info), NRT_SUCCESS);
    expect("nrt_unload", nrt_unload(model), NRT_SUCCESS);
    nrt_close();
    free(neff);
    printf("compiled model ok\n");
    return 0;
}

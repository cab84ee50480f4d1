/* A client of one header era reading a float16 model's tensor info: it compares
 * `nrt_tensor_info_t.dtype` with FLOAT16 as the headers it was built on number it, and the
 * reported runtime version with that era's release.
 *
 * Built as is, it is a client of our headers (the 2.28 numbering, where FLOAT16 is 7 and UINT16
 * is 5). Built with -DNRTSIM_CLIENT_OF_2_27 it is a client of the 2.27 public headers, whose
 * nrt_dtype_t counts up from UNKNOWN 0: FLOAT32 1, FLOAT16 2, BFLOAT16 3, ..., UINT16 7. The
 * codes are facts of those headers, not a copy of them. Arguments: the NEFF, then the expected
 * runtime minor version. */
#include <stdint.h>

#include <nrt/nrt.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_version.h>

#include "check.h"

#ifdef NRTSIM_CLIENT_OF_2_27
#define CLIENT_FLOAT16 2u
#define CLIENT_UINT16 7u
#define CLIENT_ERA "2.27"
#else
#define CLIENT_FLOAT16 ((uint32_t)NRT_DTYPE_FLOAT16)
#define CLIENT_UINT16 ((uint32_t)NRT_DTYPE_UINT16)
#define CLIENT_ERA "2.28"
#endif

int main(int argc, char **argv) {
    ensure(argc == 3, "usage: dtype_era MODEL.neff MINOR");
    nrt_version_t version;
    expect("nrt_get_version", nrt_get_version(&version, sizeof version), NRT_SUCCESS);
    unsigned long long minor = strtoull(argv[2], NULL, 10);
    if (version.rt_minor != minor) {
        printf("runtime %llu.%llu, expected 2.%llu\n", (unsigned long long)version.rt_major,
               (unsigned long long)version.rt_minor, minor);
        return 1;
    }

    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    size_t neff_size = 0;
    void *neff = read_file(argv[1], &neff_size);
    nrt_model_t *model = NULL;
    expect("nrt_load", nrt_load(neff, neff_size, 0, 1, &model), NRT_SUCCESS);
    nrt_tensor_info_array_t *info = NULL;
    expect("nrt_get_model_tensor_info", nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
    ensure(info->tensor_count == 2, "one input and one output");
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        const nrt_tensor_info_t *entry = &info->tensor_array[i];
        uint32_t dtype = (uint32_t)entry->dtype;
        if (dtype != CLIENT_FLOAT16) {
            printf("%s dtype is %u, a %s client expected float16 (%u)%s\n", entry->name, dtype,
                   CLIENT_ERA, CLIENT_FLOAT16, dtype == CLIENT_UINT16 ? ", and reads uint16" : "");
            return 1;
        }
    }
    expect("nrt_free_model_tensor_info", nrt_free_model_tensor_info(info), NRT_SUCCESS);
    expect("nrt_unload", nrt_unload(model), NRT_SUCCESS);
    nrt_close();
    free(neff);
    printf("dtype era %s ok\n", CLIENT_ERA);
    return 0;
}

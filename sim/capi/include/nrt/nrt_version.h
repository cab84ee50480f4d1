/*
 * nrt/nrt_version.h: the runtime library's version.
 *
 * Written for nrtsim from the facts of its ABI notes; it is not the AWS header.
 */
#ifndef NRTSIM_NRT_NRT_VERSION_H
#define NRTSIM_NRT_NRT_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_VERSION_DETAIL_LEN 128
#define GIT_HASH_LEN 64

/* 224 bytes. */
typedef struct nrt_version {
    uint64_t rt_major;
    uint64_t rt_minor;
    uint64_t rt_patch;
    uint64_t rt_maintenance;
    char rt_detail[RT_VERSION_DETAIL_LEN];
    char git_hash[GIT_HASH_LEN];
} nrt_version_t;

/* nrt_get_version works before nrt_init. size: the bytes of *ver the caller provides (at least
 * 224). */
/* Generated from abi/src/functions/table.rs by `cargo xtask codegen`; do not edit. */
NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size);
/* End of the generated prototypes. */

#ifdef __cplusplus
}
#endif

#endif

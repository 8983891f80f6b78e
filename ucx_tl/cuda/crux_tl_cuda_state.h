/* Internal to libcrux_tl, CUDA builds: the engine's CUDA state. */
#ifndef CRUX_TL_CUDA_H
#define CRUX_TL_CUDA_H

#include "common/crux_cuda.h"
#include "ucx_tl/core/crux_tl_core_internal.h"

#ifdef CRUX_HAVE_CUDA
/* An allocation of ours whose IPC handle was taken, by its buffer id (unique
 * per allocation in the process, so a freed and reused range never returns
 * a stale handle). */
typedef struct crux_tl_export {
    struct crux_tl_export *next;
    unsigned long long buffer_id;
    CUdeviceptr base;
    CUipcMemHandle handle;
} crux_tl_export_t;

/* A peer's allocation mapped here: opening a handle twice from one context
 * only counts references, but the mapping is kept for reuse. */
typedef struct crux_tl_import {
    struct crux_tl_import *next;
    pid_t pid;
    uint64_t base; /* 0: replaced (the peer reused the range), unmapped once idle */
    CUipcMemHandle handle;
    CUdeviceptr mapped;
    int device;   /* whose context opened it: part of the key */
    size_t bytes; /* the whole allocation mapped */
    /* the same allocation mapped in the context of the exporter's own
     * device, where staged channels run their first hop (0: not yet) */
    int home; /* the exporter's device here, -1: not visible */
    CUdeviceptr at_home;
    unsigned busy; /* transfers using it */
    uint64_t used; /* the cache's clock at the last use */
} crux_tl_import_t;

/* The paths and channels between two devices, by name (crux_cuda_name). */
typedef struct crux_tl_dpair {
    struct crux_tl_dpair *next;
    char src[CRUX_CUDA_NAME_SIZE], dst[CRUX_CUDA_NAME_SIZE];
    unsigned npaths;
    crux_tl_gpu_path_t path[CRUX_TL_MAX_GPU_PATHS];
    crux_tl_chan_t *chan[CRUX_TL_MAX_GPU_PATHS]; /* NULL until used */
    /* for cuda-host paths between processes: the sender-staged channel's
     * entry (its figures; engine/crux_tl_dstage.c moves its bytes), NULL until used */
    crux_tl_chan_t *staged[CRUX_TL_MAX_GPU_PATHS];
    int from_topo; /* the paths are the topology's (crux_tl_engine_gpu_paths) */
} crux_tl_dpair_t;

#define CRUX_TL_COPY_DEVICES 64 /* devices with copy channels */

struct crux_tl_cuda_state {
    crux_tl_export_t *exports;
    crux_tl_import_t *imports;
    size_t import_bytes; /* of every mapping in imports */
    uint64_t clock;
    crux_tl_dpair_t *dpairs;
    /* CUDA events every channel's streams wait on before their next copy
     * (crux_tl_engine_cuda_order), and their generation: a channel whose
     * own is older adds the waits when it issues */
    void *const *order; /* the caller's array */
    unsigned norder;
    uint64_t order_gen;
    /* per device, to host and from host (crux_tl_cuda_copy_channel) */
    crux_tl_chan_t *copy[CRUX_TL_COPY_DEVICES][2];
};

/* The engine's CUDA state, created on first use; NULL without memory. */
crux_tl_cuda_state_t *crux_tl_cuda_state(crux_tl_engine_t *engine);

/* Where 'ptr', a peer's buffer mapped in the context of 'device', is mapped
 * in the context of its own device 'home' (opened there on first use, kept
 * with the import); 'ptr' itself when it is no import (our own memory). */
crux_status_t crux_tl_cuda_at_home(crux_tl_cuda_state_t *state, CUdeviceptr ptr, int device,
                                   int home, CUdeviceptr *out);
#endif

#endif

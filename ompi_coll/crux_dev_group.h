/* Internal to libcrux_dev: the group structure. */
#ifndef CRUX_DEV_GROUP_H
#define CRUX_DEV_GROUP_H

#include "ompi_coll/crux_dev_internal.h"

struct crux_dev_group {
    int                 rank, size;
    crux_dev_config_t   config;
    crux_tl_context_t  *ctx;
    crux_tl_engine_t   *engine;
    crux_tl_pair_t    **rs;          /* [size]: reduce-scatter pairs, NULL at our rank */
    crux_tl_pair_t    **ag;          /* [size]: allgather pairs */
    /* landing slots for reduce-scatter pieces, on the buffers' device (or
     * host memory); kept between calls */
    void               *scratch;
    size_t              scratch_size;
    int                 scratch_device;   /* -1: host */
    crux_dev_queue_t   *queue;            /* kernels, on scratch_device */
    unsigned            spins;            /* idle polls before yielding the core */
    /* host buffers: the engine's shared buffer that pieces and results are
     * sent from (crux_tl_shared_alloc), kept between calls; NULL: none */
    void               *stage;
    size_t              stage_size;
    /* the row the next call starts at: successive calls write rows the
     * peers read longest ago (writing lines a peer's cache holds is slow) */
    unsigned            stage_row;
    int                 whole;            /* every member reserved a stage for whole calls */
    void               *call_mem;         /* a call's arrays (crux_dev_allreduce.c) */
    size_t              call_mem_size;
    /* sends from the stage a call left in flight (its result was complete) */
    crux_tl_xfer_t    **tail;
    size_t              ntail, tail_cap;
};

/* Reserve the stage small calls exchange whole buffers through (collective
 * use: every member must have it); CRUX_ERR_UNSUPPORTED when they cannot. */
crux_status_t crux_dev_stage_reserve(crux_dev_group_t *group);
/* Finish the sends the last call left in flight; their first error. */
crux_status_t crux_dev_finish_sends(crux_dev_group_t *group);


/* Scratch of at least 'bytes' on 'device' (-1: host), and a queue there. */
crux_status_t crux_dev_scratch(crux_dev_group_t *group, int device, size_t bytes);
void crux_dev_release_scratch(crux_dev_group_t *group);

#endif

/* Creating and destroying a group: open the transport, allocate this
 * member's segment, exchange segment keys through the caller's allgather
 * and map the peers' segments.  Every step ends with an allgather of each
 * member's outcome so all members agree on success or failure. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crux_idle.h"
#include "coll/group/crux_group_internal.h"
#include "coll/oob/crux_oob_internal.h"

/* What members exchange first: fixed size, so it can be sent even by a
 * member whose setup already failed. */
typedef struct {
    int32_t status;
    int32_t pid;
    uint64_t key_size;
    uint64_t stage_size, chunk_size, stream_min_bytes;
    uint64_t small_max_bytes, small_whole_max_bytes;
} crux_hello_t;

static int oob_allgather(const crux_coll_oob_t *oob, const void *sbuf, void *rbuf, size_t len)
{
    return oob->allgather(sbuf, rbuf, len, oob->arg);
}

static crux_status_t alloc_arrays(crux_coll_group_t *g)
{
    size_t n = (size_t)g->size;
    g->ctrl = calloc(n, sizeof(*g->ctrl));
    g->stage = calloc(n, sizeof(*g->stage));
    g->small = calloc(n, sizeof(*g->small));
    g->rsegs = calloc(n, sizeof(*g->rsegs));
    g->pids = calloc(n, sizeof(*g->pids));
    g->reach = calloc(n, sizeof(*g->reach));
    return g->ctrl && g->stage && g->small && g->rsegs && g->pids && g->reach ? CRUX_OK
                                                                              : CRUX_ERR_NO_MEMORY;
}

/* Mapped shared memory is all a group uses: no cma endpoints. */
static crux_status_t open_transport(crux_coll_group_t *g, const crux_tl_config_t *config)
{
    crux_tl_config_t shm_only = *config;
    shm_only.use_cma = 0;
    return crux_tl_context_open(&shm_only, &g->tl);
}

/* This member's segment: its control block, the small Allreduce's slots,
 * then its staging area. */
static crux_status_t alloc_segment(crux_coll_group_t *g, size_t stage_size, size_t small_max)
{
    crux_tl_seg_free(g->seg);
    g->seg = NULL;
    size_t small = crux_small_area_bytes(small_max);
    crux_status_t status = crux_tl_seg_alloc(g->tl, CRUX_CTRL_BYTES + small + stage_size, &g->seg);
    if (status != CRUX_OK) {
        return status;
    }
    crux_ctrl_t *ctrl = crux_tl_seg_ptr(g->seg);
    memset(ctrl, 0, CRUX_CTRL_BYTES);
    for (size_t at = 0; at < small; at += crux_small_slot_bytes(small_max)) {
        memset((uint8_t *)ctrl + CRUX_CTRL_BYTES + at, 0, sizeof(crux_small_head_t));
    }
    ctrl->magic = CRUX_CTRL_MAGIC;
    ctrl->pid = getpid();
    return CRUX_OK;
}

/* Map every peer's segment, and check that it is the peer's. */
static crux_status_t connect_peers(crux_coll_group_t *g, const crux_hello_t *hello,
                                   const uint8_t *keys, size_t key_size)
{
    for (int p = 0; p < g->size; p++) {
        g->pids[p] = hello[p].pid;
        if (p == g->rank) {
            g->ctrl[p] = crux_tl_seg_ptr(g->seg);
            continue;
        }
        crux_status_t status =
            crux_tl_rseg_attach(g->tl, keys + (size_t)p * key_size, &g->rsegs[p]);
        if (status != CRUX_OK) {
            return status;
        }
        g->ctrl[p] = crux_tl_rseg_ptr(g->rsegs[p]);
        if (g->ctrl[p]->magic != CRUX_CTRL_MAGIC || g->ctrl[p]->pid != hello[p].pid) {
            return CRUX_ERR_NO_RESOURCE;
        }
    }
    size_t small = crux_small_area_bytes(g->config.small_max_bytes);
    for (int p = 0; p < g->size; p++) {
        g->small[p] = small > 0 ? (uint8_t *)g->ctrl[p] + CRUX_CTRL_BYTES : NULL;
        g->stage[p] = (uint8_t *)g->ctrl[p] + CRUX_CTRL_BYTES + small;
    }
    return CRUX_OK;
}

/* The small Allreduce's limit, within bounds (a larger one is cut). */
static size_t small_max(const crux_coll_config_t *config)
{
    return config->small_max_bytes < CRUX_SMALL_MAX_BYTES ? config->small_max_bytes
                                                          : CRUX_SMALL_MAX_BYTES;
}

crux_status_t crux_coll_group_create(const crux_coll_oob_t *oob, const crux_coll_config_t *config,
                                     crux_coll_group_t **group_p)
{
    const crux_coll_config_t defaults = CRUX_COLL_CONFIG_DEFAULT;
    config = config != NULL ? config : &defaults;
    crux_coll_group_t *g = calloc(1, sizeof(*g));
    crux_hello_t mine = { .pid = getpid() }, *hello = NULL;
    uint8_t *keys = NULL, *my_key = NULL;
    crux_status_t status = g != NULL ? CRUX_OK : CRUX_ERR_NO_MEMORY;

    if (status == CRUX_OK) {
        g->rank = oob->rank;
        g->size = oob->size;
        g->config = *config;
        status = open_transport(g, &config->tl);
    }
    if (status == CRUX_OK) {
        status = alloc_segment(g, config->stage_size, small_max(config));
    }
    if (status == CRUX_OK) {
        mine.key_size = crux_tl_seg_key_size(g->tl);
    }
    mine.status = status;
    mine.stage_size = config->stage_size;
    mine.chunk_size = config->chunk_size;
    mine.stream_min_bytes = config->stream_min_bytes;
    mine.small_max_bytes = small_max(config);
    mine.small_whole_max_bytes = config->small_whole_max_bytes;

    /* 1: who succeeded, with what sizes; member 0's configuration wins. */
    hello = calloc((size_t)oob->size, sizeof(*hello));
    if (hello == NULL || oob_allgather(oob, &mine, hello, sizeof(mine)) != 0) {
        status = CRUX_ERR_IO;
        goto out;
    }
    for (int p = 0; p < oob->size && status == CRUX_OK; p++) {
        status = (crux_status_t)hello[p].status;
        if (status == CRUX_OK && hello[p].key_size != hello[0].key_size) {
            status = CRUX_ERR_NO_RESOURCE; /* members chose different shared memory */
        }
    }
    if (status != CRUX_OK) {
        goto out;
    }
    g->config.stage_size = hello[0].stage_size;
    g->config.chunk_size = hello[0].chunk_size;
    g->config.stream_min_bytes = hello[0].stream_min_bytes;
    g->config.small_max_bytes = hello[0].small_max_bytes;
    g->config.small_whole_max_bytes = hello[0].small_whole_max_bytes;
    if (g->config.stage_size != config->stage_size ||
        g->config.small_max_bytes != small_max(config)) {
        /* the agreed sizes */
        status = alloc_segment(g, g->config.stage_size, g->config.small_max_bytes);
    }
    status = crux_oob_agree(oob, status != CRUX_OK ? status : alloc_arrays(g), 1, NULL);
    if (status != CRUX_OK) {
        goto out;
    }

    /* 2: segment keys; then map the peers' segments. */
    size_t key_size = hello[0].key_size;
    my_key = calloc(1, key_size);
    keys = calloc((size_t)oob->size, key_size);
    status =
        my_key != NULL && keys != NULL ? crux_tl_seg_key_pack(g->seg, my_key) : CRUX_ERR_NO_MEMORY;
    status = crux_oob_agree(oob, status, 1, NULL);
    if (status != CRUX_OK || oob_allgather(oob, my_key, keys, key_size) != 0) {
        status = status != CRUX_OK ? status : CRUX_ERR_IO;
        goto out;
    }
    status = crux_oob_agree(oob, connect_peers(g, hello, keys, key_size), 1, NULL);
    if (status == CRUX_OK) {
        unsigned local =
            config->local_procs > 0 ? (unsigned)config->local_procs : (unsigned)g->size;
        g->spins = crux_idle_spins(local, config->shared_cores);
    }

out:
    free(hello);
    free(keys);
    free(my_key);
    if (status != CRUX_OK) {
        crux_coll_group_destroy(g);
        return status;
    }
    *group_p = g;
    return CRUX_OK;
}

void crux_coll_group_destroy(crux_coll_group_t *g)
{
    if (g == NULL) {
        return;
    }
    for (int p = 0; g->rsegs != NULL && p < g->size; p++) {
        crux_tl_rseg_detach(g->rsegs[p]);
    }
    crux_tl_seg_free(g->seg);
    crux_tl_context_close(g->tl);
    free(g->ctrl);
    free(g->stage);
    free(g->small);
    free(g->rsegs);
    free(g->pids);
    free(g->reach);
    free(g);
}

void crux_coll_group_set_caller(crux_coll_group_t *g, uint64_t caller)
{
    g->caller = crux_caller_word(caller);
}

int crux_coll_group_broken(const crux_coll_group_t *g)
{
    return crux_abandoned(g);
}

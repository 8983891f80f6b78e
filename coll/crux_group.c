/* Creating and destroying a group: open the transport, allocate this
 * member's segment, exchange addresses and keys through the caller's
 * allgather, map the peers' segments and check single-copy access.  Every
 * step ends with an allgather of each member's outcome so all members agree
 * on success, failure, and whether cma works. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crux_cpus.h"
#include "coll/crux_group_internal.h"
#include "coll/crux_oob.h"

#define CRUX_SPIN_POLLS 4096u

/* What members exchange first: fixed size, so it can be sent even by a
 * member whose setup already failed. */
typedef struct {
    int32_t status;
    int32_t pid;
    uint64_t ctrl_address; /* filled from the second exchange */
    uint64_t address_size;
    uint64_t key_size;
    uint64_t stage_size, chunk_size, cma_chunk_size, cma_min_bytes, stream_min_bytes;
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
    g->rsegs = calloc(n, sizeof(*g->rsegs));
    g->eps = calloc(n, sizeof(*g->eps));
    g->pids = calloc(n, sizeof(*g->pids));
    g->scratch = malloc(n * g->config.cma_chunk_size); /* one landing slot per peer */
    g->reach = calloc(n, sizeof(*g->reach));
    return g->ctrl && g->stage && g->rsegs && g->eps && g->pids && g->scratch && g->reach
               ? CRUX_OK
               : CRUX_ERR_NO_MEMORY;
}

static crux_status_t open_transport(crux_coll_group_t *g, const crux_tl_config_t *config)
{
    crux_status_t status = crux_tl_context_open(config, &g->tl);
    if (status != CRUX_OK && config->use_cma) {
        crux_tl_config_t no_cma = *config; /* shared memory alone still works */
        no_cma.use_cma = 0;
        status = crux_tl_context_open(&no_cma, &g->tl);
    }
    return status;
}

/* This member's segment: its control block, then its staging area. */
static crux_status_t alloc_segment(crux_coll_group_t *g, size_t stage_size)
{
    crux_tl_seg_free(g->seg);
    g->seg = NULL;
    crux_status_t status = crux_tl_seg_alloc(g->tl, CRUX_CTRL_BYTES + stage_size, &g->seg);
    if (status != CRUX_OK) {
        return status;
    }
    crux_ctrl_t *ctrl = crux_tl_seg_ptr(g->seg);
    memset(ctrl, 0, CRUX_CTRL_BYTES);
    ctrl->magic = CRUX_CTRL_MAGIC;
    ctrl->pid = getpid();
    return CRUX_OK;
}

/* Map every peer's segment and connect to it; check cma by reading the
 * peer's control block header through it. */
static crux_status_t connect_peers(crux_coll_group_t *g, const crux_hello_t *hello,
                                   size_t address_size, const uint8_t *blobs, size_t blob_size,
                                   int *cma_ok)
{
    *cma_ok = address_size > 0;
    for (int p = 0; p < g->size; p++) {
        g->pids[p] = hello[p].pid;
        if (p == g->rank) {
            g->ctrl[p] = crux_tl_seg_ptr(g->seg);
            continue;
        }
        const uint8_t *blob = blobs + (size_t)p * blob_size;
        crux_status_t status = crux_tl_rseg_attach(g->tl, blob + address_size, &g->rsegs[p]);
        if (status != CRUX_OK) {
            return status;
        }
        g->ctrl[p] = crux_tl_rseg_ptr(g->rsegs[p]);
        if (g->ctrl[p]->magic != CRUX_CTRL_MAGIC || g->ctrl[p]->pid != hello[p].pid) {
            return CRUX_ERR_NO_RESOURCE;
        }
        if (*cma_ok) {
            uint64_t header[2] = { 0, 0 };
            *cma_ok =
                crux_tl_ep_create(g->tl, blob, &g->eps[p]) == CRUX_OK &&
                crux_tl_get(g->eps[p], header, hello[p].ctrl_address, sizeof(header)) == CRUX_OK &&
                header[0] == CRUX_CTRL_MAGIC && (int64_t)header[1] == hello[p].pid;
        }
    }
    for (int p = 0; p < g->size; p++) {
        g->stage[p] = (uint8_t *)g->ctrl[p] + CRUX_CTRL_BYTES;
    }
    return CRUX_OK;
}

crux_status_t crux_coll_group_create(const crux_coll_oob_t *oob, const crux_coll_config_t *config,
                                     crux_coll_group_t **group_p)
{
    const crux_coll_config_t defaults = CRUX_COLL_CONFIG_DEFAULT;
    config = config != NULL ? config : &defaults;
    crux_coll_group_t *g = calloc(1, sizeof(*g));
    crux_hello_t mine = { .pid = getpid() }, *hello = NULL;
    uint8_t *blobs = NULL, *my_blob = NULL;
    crux_status_t status = g != NULL ? CRUX_OK : CRUX_ERR_NO_MEMORY;

    if (status == CRUX_OK) {
        g->rank = oob->rank;
        g->size = oob->size;
        g->config = *config;
        status = open_transport(g, &config->tl);
    }
    if (status == CRUX_OK) {
        status = alloc_segment(g, config->stage_size);
    }
    if (status == CRUX_OK) {
        mine.address_size = crux_tl_address_size(g->tl); /* 0 without cma */
        mine.key_size = crux_tl_seg_key_size(g->tl);
    }
    mine.status = status;
    mine.stage_size = config->stage_size;
    mine.chunk_size = config->chunk_size;
    mine.cma_chunk_size = config->cma_chunk_size;
    mine.cma_min_bytes = config->cma_min_bytes;
    mine.stream_min_bytes = config->stream_min_bytes;

    /* 1: who succeeded, with what sizes; member 0's configuration wins. */
    hello = calloc((size_t)oob->size, sizeof(*hello));
    if (hello == NULL || oob_allgather(oob, &mine, hello, sizeof(mine)) != 0) {
        status = CRUX_ERR_IO;
        goto out;
    }
    /* cma addresses are exchanged only if every member has one, of one size */
    size_t address_size = hello[0].address_size;
    for (int p = 0; p < oob->size && status == CRUX_OK; p++) {
        status = (crux_status_t)hello[p].status;
        if (status == CRUX_OK && hello[p].key_size != hello[0].key_size) {
            status = CRUX_ERR_NO_RESOURCE; /* members chose different shared memory */
        }
        address_size = hello[p].address_size == address_size ? address_size : 0;
    }
    if (status != CRUX_OK) {
        goto out;
    }
    g->config.stage_size = hello[0].stage_size;
    g->config.chunk_size = hello[0].chunk_size;
    g->config.cma_chunk_size = hello[0].cma_chunk_size;
    g->config.cma_min_bytes = hello[0].cma_min_bytes;
    g->config.stream_min_bytes = hello[0].stream_min_bytes;
    if (g->config.stage_size != config->stage_size) {
        status = alloc_segment(g, g->config.stage_size); /* the agreed size */
    }
    status = crux_oob_agree(oob, status != CRUX_OK ? status : alloc_arrays(g), 1, NULL);
    if (status != CRUX_OK) {
        goto out;
    }

    /* 2: addresses and keys. */
    size_t blob_size = sizeof(uint64_t) + address_size + hello[0].key_size;
    my_blob = calloc(1, blob_size);
    blobs = calloc((size_t)oob->size, blob_size);
    if (my_blob == NULL || blobs == NULL) {
        status = CRUX_ERR_NO_MEMORY;
    } else {
        if (address_size > 0) {
            status = crux_tl_address_pack(g->tl, my_blob + sizeof(uint64_t));
        }
        if (status == CRUX_OK) {
            status = crux_tl_seg_key_pack(g->seg, my_blob + sizeof(uint64_t) + address_size);
        }
        uint64_t ctrl_address = (uintptr_t)crux_tl_seg_ptr(g->seg);
        memcpy(my_blob, &ctrl_address, sizeof(uint64_t));
    }
    status = crux_oob_agree(oob, status, 1, NULL);
    if (status != CRUX_OK || oob_allgather(oob, my_blob, blobs, blob_size) != 0) {
        status = status != CRUX_OK ? status : CRUX_ERR_IO;
        goto out;
    }
    for (int p = 0; p < oob->size; p++) {
        memcpy(&hello[p].ctrl_address, blobs + (size_t)p * blob_size, sizeof(uint64_t));
    }

    /* 3: map and connect; cma only if it works between every pair. */
    int cma_ok = 0;
    status = connect_peers(g, hello, address_size, blobs + sizeof(uint64_t), blob_size, &cma_ok);
    status = crux_oob_agree(oob, status, cma_ok, &cma_ok);
    if (status == CRUX_OK) {
        g->has_cma = cma_ok;
        for (int p = 0; !cma_ok && p < g->size; p++) {
            crux_tl_ep_destroy(g->eps[p]);
            g->eps[p] = NULL;
        }
        unsigned local =
            config->local_procs > 0 ? (unsigned)config->local_procs : (unsigned)g->size;
        g->spin = local > crux_cpus_online() ? 0 : CRUX_SPIN_POLLS;
    }

out:
    free(hello);
    free(blobs);
    free(my_blob);
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
    for (int p = 0; g->eps != NULL && p < g->size; p++) {
        crux_tl_ep_destroy(g->eps[p]);
    }
    for (int p = 0; g->rsegs != NULL && p < g->size; p++) {
        crux_tl_rseg_detach(g->rsegs[p]);
    }
    crux_tl_seg_free(g->seg);
    crux_tl_context_close(g->tl);
    free(g->ctrl);
    free(g->stage);
    free(g->rsegs);
    free(g->eps);
    free(g->pids);
    free(g->scratch);
    free(g->reach);
    free(g);
}

int crux_coll_group_rank(const crux_coll_group_t *g)
{
    return g->rank;
}

int crux_coll_group_size(const crux_coll_group_t *g)
{
    return g->size;
}

int crux_coll_group_has_cma(const crux_coll_group_t *g)
{
    return g->has_cma;
}

void crux_coll_group_set_caller(crux_coll_group_t *g, uint64_t caller)
{
    g->caller = caller * 0x9e3779b97f4a7c15ull; /* spread over the shape's bits */
}

int crux_coll_group_broken(const crux_coll_group_t *g)
{
    return crux_abandoned(g);
}

const crux_coll_config_t *crux_coll_group_config(const crux_coll_group_t *g)
{
    return &g->config;
}

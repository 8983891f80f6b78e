/* Single-copy flat Allreduce over cma.
 *
 * Members publish their buffer addresses; the owner of each shard fetches
 * that shard's chunks straight from every peer's input buffer into a small
 * cache-resident scratch (one copy, done by the kernel), reduces them with
 * its own input in rank order into its result buffer and announces the
 * chunk; every member then fetches the reduced chunks of the other shards
 * straight from their owners' result buffers into its own.  Large messages
 * are bound by memory bandwidth, and this moves the fewest bytes.
 *
 * Members publish the call's shape (bytes and element size) with their
 * addresses; a peer whose shape differs ends the call (CRUX_ERR_INVALID)
 * and the group (crux_abandon), so mismatched calls fail on every member.
 *
 * Peers read this member's buffers, so a call returns only when every peer
 * has finished.  In place, a member overwrites its input for shard p only
 * after p announced the chunk, i.e. after p has read it. */
#include <string.h>

#include "coll/crux_allreduce_algs.h"
#include "coll/crux_shard.h"

typedef struct {
    crux_coll_group_t *g;
    const crux_cut_t *cut;
    const uint8_t *src;
    uint8_t *dst;
    crux_reduce_fn_t reduce;
    const void **inputs; /* [size] */
    uint64_t *peer_src;  /* [size] peers' input addresses */
    uint64_t *peer_dst;  /* [size] peers' result addresses */
    int *arrived;        /* [size] */
    unsigned reduced;
    unsigned *out; /* [size] */
} cma_call_t;

static crux_status_t learn_addresses(cma_call_t *c, int q)
{
    if (!c->arrived[q]) {
        crux_status_t st = CRUX_WAIT(c->g, q, arrive, c->g->seq);
        if (st != CRUX_OK) {
            return st;
        }
        if (crux_peer_shape(c->g, q) != crux_shape(c->g, c->cut->count, c->cut->esize)) {
            return CRUX_ERR_INVALID; /* the peer runs another call */
        }
        c->peer_src[q] = c->g->ctrl[q]->sbuf;
        c->peer_dst[q] = c->g->ctrl[q]->rbuf;
        c->arrived[q] = 1;
    }
    return CRUX_OK;
}

static crux_status_t reduce_chunk(cma_call_t *c)
{
    crux_coll_group_t *g = c->g;
    size_t at = crux_chunk_offset(c->cut, g->rank, c->reduced);
    size_t bytes = crux_chunk_bytes(c->cut, g->rank, c->reduced);
    size_t slot = g->config.cma_chunk_size;
    crux_tl_completion_t comp = { 0, CRUX_OK };

    /* Every peer's call first: one of another shape is found before a
     * transfer starts, and no failure returns with one in flight (they
     * land in the scratch and complete into 'comp', on this stack). */
    for (int q = 0; q < g->size; q++) {
        crux_status_t st = q == g->rank ? CRUX_OK : learn_addresses(c, q);
        if (st != CRUX_OK) {
            return st;
        }
    }
    crux_status_t st = CRUX_OK;
    for (int q = 0; q < g->size && st == CRUX_OK; q++) {
        if (q == g->rank) {
            c->inputs[q] = c->src + at;
            continue;
        }
        void *landing = (uint8_t *)g->scratch + (size_t)q * slot;
        st = crux_tl_get_nb(g->eps[q], landing, c->peer_src[q] + at, bytes, &comp);
        c->inputs[q] = landing;
    }
    while (comp.pending > 0) {
        crux_tl_progress(g->tl);
    }
    if (st != CRUX_OK || comp.status != CRUX_OK) {
        return st != CRUX_OK ? st : comp.status;
    }
    /* In place, a member past rank 1 must not overwrite its own input before
     * the chain reads it: then each block is formed aside and copied. */
    if (c->src != c->dst || g->rank < 2) {
        crux_reduce_chain(c->reduce, c->dst + at, NULL, c->inputs, g->size, bytes, c->cut->esize,
                          0);
    } else {
        crux_reduce_chain(c->reduce, NULL, c->dst + at, c->inputs, g->size, bytes, c->cut->esize,
                          0);
    }
    c->reduced++;
    CRUX_PUBLISH(g, reduced, CRUX_PROGRESS(g->seq, c->reduced));
    return CRUX_OK;
}

/* Fetch every chunk of shard p its owner has announced and we lack, in one get. */
static crux_status_t fetch_reduced(cma_call_t *c, int p, int *progressed)
{
    crux_coll_group_t *g = c->g;
    unsigned first = c->out[p], chunks = crux_shard_chunks(c->cut, p);
    while (c->out[p] < chunks &&
           CRUX_REACHED(g, p, reduced, CRUX_PROGRESS(g->seq, c->out[p] + 1))) {
        c->out[p]++;
    }
    if (c->out[p] == first) {
        return CRUX_OK;
    }
    *progressed = 1;
    size_t at = crux_chunk_offset(c->cut, p, first);
    size_t end =
        crux_chunk_offset(c->cut, p, c->out[p] - 1) + crux_chunk_bytes(c->cut, p, c->out[p] - 1);
    crux_status_t st = learn_addresses(c, p);
    return st != CRUX_OK ? st : crux_tl_get(g->eps[p], c->dst + at, c->peer_dst[p] + at, end - at);
}

static crux_status_t cma_call(cma_call_t *c)
{
    crux_coll_group_t *g = c->g;
    crux_ctrl_t *me = g->ctrl[g->rank];
    me->sbuf = (uintptr_t)c->src;
    me->rbuf = (uintptr_t)c->dst;
    crux_set_shape(g, crux_shape(c->g, c->cut->count, c->cut->esize));
    CRUX_PUBLISH(g, arrive, g->seq);

    unsigned mine = crux_shard_chunks(c->cut, g->rank);
    for (;;) {
        int progressed = 0, pending = -1;
        crux_status_t st = CRUX_OK;
        if (c->reduced < mine) {
            st = reduce_chunk(c);
            progressed = 1;
        }
        for (int i = 1; i < g->size && st == CRUX_OK; i++) {
            int p = (g->rank + i) % g->size;
            st = fetch_reduced(c, p, &progressed);
            if (pending < 0 && c->out[p] < crux_shard_chunks(c->cut, p)) {
                pending = p;
            }
        }
        if (st != CRUX_OK) {
            return st;
        }
        if (pending < 0 && c->reduced == mine) {
            break;
        }
        if (!progressed) {
            st = CRUX_WAIT(g, pending, reduced, CRUX_PROGRESS(g->seq, c->out[pending] + 1));
            if (st != CRUX_OK) {
                return st;
            }
        }
    }
    /* Peers may still be reading our buffers. */
    CRUX_PUBLISH(g, done, g->seq);
    for (int p = 0; p < g->size; p++) {
        crux_status_t st = p == g->rank ? CRUX_OK : CRUX_WAIT(g, p, done, g->seq);
        if (st != CRUX_OK) {
            return st;
        }
    }
    return CRUX_OK;
}

crux_status_t crux_allreduce_cma(crux_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                 size_t esize, crux_reduce_fn_t reduce)
{
    if (crux_abandoned(g)) {
        return CRUX_ERR_PEER;
    }
    const void *inputs[g->size];
    uint64_t peer_src[g->size], peer_dst[g->size];
    int arrived[g->size];
    unsigned out[g->size];
    crux_cut_t cut = crux_cut(count, esize, g->config.cma_chunk_size, g->size);
    memset(arrived, 0, sizeof(arrived));
    memset(out, 0, sizeof(out));
    cma_call_t c = {
        .g = g,
        .cut = &cut,
        .reduce = reduce,
        .inputs = inputs,
        .src = sbuf != NULL ? sbuf : rbuf,
        .dst = rbuf,
        .peer_src = peer_src,
        .peer_dst = peer_dst,
        .arrived = arrived,
        .out = out,
    };
    g->seq++;
    crux_status_t status = cma_call(&c);
    if (status != CRUX_OK) {
        crux_abandon(g);
    }
    return status;
}

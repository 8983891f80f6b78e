/* Host pieces reduced as they land (crux_tl_recv_reduce): the owner of a
 * shard folds each peer's piece of a chunk into the chunk's result in rank
 * order, so no piece is stored before it is reduced.  Part of the Allreduce
 * data movement of crux_dev_allreduce.c, which calls crux_dev_fold_chunks
 * in place of its scratch-and-reduce step for host buffers. */
#include <string.h>

#include "coll/crux_dev_call.h"

/* Chunk k's pieces fold into its accumulator in rank order.  Steps: member
 * 0 folds peer 1 into its input, then peers 2, 3 ... into the result;
 * member 1 folds its input into peer 0's piece, then peers 2, 3 ...; a
 * member r past 1 receives peer 0's piece as it is, folds peer 1, and
 * when its own turn comes reduces its input in itself (no transfer). */
static unsigned fold_steps(const crux_dev_call_t *c)
{
    return c->g->rank < 2 ? (unsigned)c->g->size - 1 : (unsigned)c->g->size;
}

/* The peer whose piece step i brings (our own rank: the local step). */
static int fold_peer(const crux_dev_call_t *c, unsigned i)
{
    int r = c->g->rank;
    return r == 0 ? (int)i + 1 : r == 1 ? (i == 0 ? 0 : (int)i + 1) : (int)i;
}

static uint8_t *fold_target(const crux_dev_call_t *c, unsigned k)
{
    size_t at = crux_dev_chunk_first(c, c->g->rank, k) * c->esize;
    return c->in_place && c->g->rank >= 2 ? crux_dev_accumulator(c, k) : c->dst + at;
}

/* Step i's transfer of chunk k (NULL for the local step, or once released). */
static crux_tl_xfer_t **fold_slot(crux_dev_call_t *c, unsigned k, unsigned i)
{
    int q = fold_peer(c, i);
    return q == c->g->rank ? NULL : &c->rs_recv[(size_t)q * c->kmax + k];
}

/* Issue step i of chunk k; 'before' is step i-1's transfer, if it had one:
 * the engine lands this step's piece only once that one is done. */
static void fold_step(crux_dev_call_t *c, unsigned k, unsigned i, const crux_tl_xfer_t *before)
{
    crux_dev_group_t *g = c->g;
    int r = g->rank;
    int q = fold_peer(c, i);
    size_t at = crux_dev_chunk_first(c, r, k) * c->esize, n = crux_dev_chunk_count(c, r, k);
    uint8_t *acc = fold_target(c, k);
    if (q == r) {
        c->cpu(acc, acc, c->src + at, n);
        return;
    }
    crux_tl_xfer_t **slot = fold_slot(c, k, i);
    if (r >= 2 && i == 0) {
        crux_dev_recv_chunk(c, g->rs[q], slot, acc, r, k);
        return;
    }
    crux_tl_reduce_t red = {
        .fn = c->cpu,
        .esize = c->esize,
        .incoming_first = i == 0 && r == 1,
        .local = i == 0 ? c->src + at : acc,
        .after = before,
    };
    crux_tl_xfer_t *x = NULL;
    crux_status_t st = crux_tl_recv_reduce(g->rs[q], acc, n * c->esize, &red, NULL, &x);
    crux_dev_post(c, st, slot, x);
}

/* 1 once every step of chunk k is issued and landed; its transfers are
 * then retired together (a chained step refers to the one before it). */
static int fold_done(crux_dev_call_t *c, unsigned k)
{
    unsigned steps = fold_steps(c);
    if (c->folded[k] < steps) {
        return 0;
    }
    for (unsigned i = 0; i < steps; i++) {
        crux_tl_xfer_t **x = fold_slot(c, k, i);
        if (x != NULL && *x != NULL && !crux_tl_xfer_done(*x)) {
            return 0;
        }
    }
    for (unsigned i = 0; i < steps; i++) {
        crux_tl_xfer_t **x = fold_slot(c, k, i);
        if (x != NULL) {
            crux_dev_finished(c, x);
        }
    }
    return 1;
}

/* Issue what every started chunk can: a chunk's steps go out at once,
 * chained, except the local step, which waits for the landing before it.
 * A chunk issues a step only after the chunk before it did, so each pair's
 * receives are posted in chunk order (the i-th receive matches the peer's
 * i-th send). */
unsigned crux_dev_fold_chunks(crux_dev_call_t *c)
{
    unsigned events = 0, steps = fold_steps(c);
    for (unsigned k = c->launched; k < c->rs_posted; k++) {
        while (c->folded[k] < steps && (k == 0 || c->folded[k - 1] > c->folded[k])) {
            unsigned i = c->folded[k];
            crux_tl_xfer_t **prev = i > 0 ? fold_slot(c, k, i - 1) : NULL;
            const crux_tl_xfer_t *before = prev != NULL ? *prev : NULL;
            if (fold_peer(c, i) == c->g->rank && before != NULL && !crux_tl_xfer_done(before)) {
                break;
            }
            fold_step(c, k, i, before);
            c->folded[k]++;
            events++;
        }
    }
    while (c->launched < c->rs_posted && fold_done(c, c->launched)) {
        unsigned k = c->launched++;
        if (c->in_place && c->g->rank >= 2) {
            memcpy(c->dst + crux_dev_chunk_first(c, c->g->rank, k) * c->esize, fold_target(c, k),
                   crux_dev_chunk_count(c, c->g->rank, k) * c->esize);
        }
        events++;
    }
    return events;
}

/* The shared stage of host calls (part of the Allreduce data movement of
 * crux_dev_allreduce.c).
 *
 * When every pair has shm-direct, a member copies its pieces of row k
 * (chunk k of every other shard) into the group's shared stage and sends
 * them from there; the fold writes the chunk's result into the stage as
 * well (crux_tl_reduce_t.also), where the gather sends it from: every piece
 * and result travels in one copy by its receiver, and a result is written
 * once for all peers, as in the staged algorithm.  The stage is a ring of
 * 'window' rows: a row's pieces are rewritten once the row's scatter sends
 * before them are done, a chunk's result place once the gather from it
 * before is done.  Successive calls start at the next row, as rewriting
 * lines a peer has just read is slow.  A call returns once its result is
 * complete, leaving its last sends to the group. */
#include <stdlib.h>
#include <string.h>

#include "common/crux_copy.h"
#include "ompi_coll/crux_dev_call.h"

/* A shared stage of at least 'bytes', kept by the group and grown; a
 * stage that cannot grow stays as it was (whole calls rely on it). */
static crux_status_t group_stage(crux_dev_group_t *g, size_t bytes)
{
    if (g->stage != NULL && g->stage_size >= bytes) {
        return CRUX_OK;
    }
    void *stage = NULL;
    crux_status_t st = crux_tl_shared_alloc(g->engine, bytes, &stage);
    if (st != CRUX_OK) {
        return st;
    }
    if (g->stage != NULL) {
        crux_tl_shared_free(g->engine, g->stage);
    }
    g->stage = stage;
    g->stage_size = bytes;
    return CRUX_OK;
}

static int all_direct(const crux_dev_group_t *g)
{
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && !(crux_tl_pair_direct(g->rs[q]) && crux_tl_pair_direct(g->ag[q]))) {
            return 0;
        }
    }
    return 1;
}

crux_status_t crux_dev_stage_reserve(crux_dev_group_t *g)
{
    if (g->config.whole_max_bytes == 0 || g->size < 2 || !all_direct(g)) {
        return CRUX_ERR_UNSUPPORTED;
    }
    return group_stage(g, (size_t)g->config.window * (size_t)g->size * g->config.whole_max_bytes);
}

/* Host buffers between members that all have shm-direct get the shared
 * stage (none when the shared memory domain has no room: then the pairs'
 * other channels carry private buffers); folding needs it, or pairs with
 * channels that reduce whatever the sender's buffer. */
void crux_dev_host_channels(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    int direct = all_direct(g), reduces = 1;
    for (int q = 0; q < g->size; q++) {
        reduces &= q == g->rank || crux_tl_pair_reduces(g->rs[q]);
    }
    size_t rows = g->config.window;
    size_t largest = c->whole ? c->count : c->count / (size_t)g->size + (c->count % (size_t)g->size != 0);
    c->slot_elems = largest < c->chunk ? largest : c->chunk;
    if (direct && group_stage(g, rows * (size_t)g->size * c->slot_elems * c->esize) == CRUX_OK) {
        c->stage = g->stage;
        c->row0 = g->stage_row;
        g->stage_row = (g->stage_row + c->kmax) % g->config.window;
        for (int q = 0; q < g->size; q++) {
            c->far[q] = q != g->rank && (crux_tl_pair_far(g->rs[q]) || crux_tl_pair_far(g->ag[q]));
            c->any_far |= c->far[q];
        }
    }
    c->fold = c->do_rs && 64 % c->esize == 0 && (c->stage != NULL || reduces);
}

uint8_t *crux_dev_stage_at(const crux_dev_call_t *c, int p, unsigned k)
{
    size_t row = (size_t)((c->row0 + k) % c->g->config.window) * (size_t)c->g->size;
    return c->stage + (row + (size_t)p) * c->slot_elems * c->esize;
}

/* Row k's places in the stage that 'sends' went from are free: those
 * transfers of the row before it in that place are done (finished ones are
 * released, see step; the caller knows they were posted).  Our pieces'
 * places go with rs_send, our own result's place with ag_send. */
int crux_dev_row_free(const crux_dev_call_t *c, crux_tl_xfer_t *const *sends, unsigned k)
{
    unsigned window = c->g->config.window;
    for (int q = 0; k >= window && q < c->g->size; q++) {
        if (sends[(size_t)q * c->kmax + (k - window)] != NULL) {
            return 0;
        }
    }
    return 1;
}

void crux_dev_stage_fence(const crux_dev_call_t *c)
{
    if (c->any_far) {
        crux_copy_fence();
    }
}

/* Copy our input's chunk k of member p's shard to its place in the stage
 * (a whole call's: our own place, read by every peer). */
static uint8_t *copy_in(crux_dev_call_t *c, int p, unsigned k)
{
    uint8_t *to = crux_dev_stage_at(c, p, k);
    crux_copy_to(to, c->src + crux_dev_chunk_first(c, p, k) * c->esize,
                 crux_dev_chunk_count(c, p, k) * c->esize, p == c->g->rank ? c->any_far : c->far[p]);
    return to;
}

unsigned crux_dev_stage_row(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned k = c->staged;
    if (c->stage == NULL || !c->do_rs || k >= c->kmax || !crux_dev_row_free(c, c->rs_send, k)) {
        return 0;
    }
    /* whole: every peer gets the same piece, copied once into our place */
    uint8_t *whole = c->whole ? copy_in(c, g->rank, k) : NULL;
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && k < c->chunks[q]) {
            uint8_t *from = whole != NULL ? whole : copy_in(c, q, k);
            crux_dev_send_chunk(c, g->rs[q], &c->rs_send[q * c->kmax + k], from, q, k);
        }
    }
    crux_dev_stage_fence(c);   /* posted sends are published by a later progress call */
    c->staged++;
    return 1;
}

/* With a stage, a call is done once every receive finished and every send
 * is left to its receiver: sends from the stage touch nothing of the
 * caller's, and the next call (or the group's end) finishes them before
 * the stage is written again. */
int crux_dev_stage_done(const crux_dev_call_t *c)
{
    if (c->do_rs && c->staged < c->kmax) {
        return 0;
    }
    for (size_t i = 0; i < (size_t)c->g->size * c->kmax; i++) {
        if (c->rs_recv[i] != NULL || c->ag_recv[i] != NULL ||
            (c->rs_send[i] != NULL && !crux_tl_xfer_left_to_peer(c->rs_send[i])) ||
            (c->ag_send[i] != NULL && !crux_tl_xfer_left_to_peer(c->ag_send[i]))) {
            return 0;
        }
    }
    return 1;
}

/* Hand the sends still in flight to the group, which finishes them before
 * the stage is written again; wait for them here if it has no room. */
void crux_dev_leave_sends(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    size_t slots = (size_t)g->size * c->kmax;
    if (c->pending > 0 && g->tail_cap < g->ntail + c->pending) {
        crux_tl_xfer_t **tail = realloc(g->tail, (g->ntail + c->pending) * sizeof(*tail));
        if (tail != NULL) {
            g->tail = tail;
            g->tail_cap = g->ntail + c->pending;
        }
    }
    for (size_t i = 0; i < 2 * slots; i++) {
        crux_tl_xfer_t **x = i < slots ? &c->rs_send[i] : &c->ag_send[i - slots];
        if (*x != NULL && g->ntail < g->tail_cap) {
            g->tail[g->ntail++] = *x;
            *x = NULL;
            c->pending--;
        }
    }
    for (size_t i = 0; i < 2 * slots; i++) {   /* no room: wait for them */
        crux_tl_xfer_t **x = i < slots ? &c->rs_send[i] : &c->ag_send[i - slots];
        if (*x != NULL) {
            crux_tl_xfer_wait(*x);
            crux_dev_finished(c, x);
        }
    }
}

crux_status_t crux_dev_finish_sends(crux_dev_group_t *g)
{
    crux_status_t status = CRUX_OK;
    for (unsigned i = 0; i < g->ntail; i++) {
        crux_status_t st = crux_tl_xfer_wait(g->tail[i]);
        status = status == CRUX_OK ? st : status;
        crux_tl_xfer_release(g->tail[i]);
    }
    g->ntail = 0;
    return status;
}

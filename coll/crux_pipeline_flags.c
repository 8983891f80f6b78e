/* Staged Allreduce: no system calls inside the group, only loads and stores
 * to shared memory and flags; flat (two stages) or hierarchical (three).
 *
 * Each member's staging area holds two banks; a bank mirrors the part of the
 * buffer being reduced (a "round": the whole buffer when it fits, else
 * successive slices), and successive rounds and calls alternate banks.  A
 * member copies its input for every other member's shard into the matching
 * place of its own stage; the owner of a shard reduces the staged copies
 * and its own input, in rank order; every member copies the reduced shards
 * out.  All steps go chunk by chunk and a member does whichever step is
 * ready, so the copy-in of one chunk overlaps the reduction and copy-out of
 * earlier ones across members.
 *
 * Hierarchically, between the reduction and the copy-out, the owner reduces
 * each chunk of its shard with the members holding the same shard in the
 * other groups (the caller's inter-group step, crux_coll_inter_t), and only
 * then puts the chunk in its stage and announces it.  Up to 'depth' chunks
 * are in that step at once, so the three stages of successive chunks
 * overlap; with depth 0 the stages run one after the other, over the whole
 * shard (for comparison).
 *
 * What a far peer reads of our stage (common/crux_reach.h: measured in the
 * waits) is written with streaming stores, fenced before it is announced.
 *
 * Every member puts the call's shape (bytes and element size) beside its
 * progress words; a member compares the shapes of the peers it has seen in
 * a round at the round's end and before it blocks, and gives the group up
 * (crux_abandon) when one differs: members that passed different counts
 * or datatype sizes all fail, for one compare per peer and round.
 *
 * User buffers are only touched by their owner, so a call returns as soon as
 * its own result is complete; a member only waits, before writing a bank
 * again, for the peers to have finished reading it two rounds ago, so one
 * round's copy-out overlaps the next round's copy-in. */
#include <string.h>

#include "coll/crux_allreduce_algs.h"
#include "common/crux_copy.h"
#include "coll/crux_shard.h"

#define CRUX_MAX_DEPTH 64

typedef struct {
    crux_coll_group_t *g;
    const crux_cut_t *cut;
    const uint8_t *src; /* this member's input */
    uint8_t *dst;       /* this member's result */
    crux_reduce_fn_t reduce;
    int stream;          /* write copied-out results with streaming stores */
    int any_far;         /* a peer is far: what it reads of our stage is streamed */
    uint8_t **bank;      /* [size] every member's bank for this round */
    const void **inputs; /* [size] scratch array of chunk pointers */
    unsigned mine;       /* chunks of the own shard */
    unsigned copied;     /* copy-in steps done */
    unsigned reduced;    /* chunks of the own shard reduced in the group */
    unsigned final;      /* ... and announced to the peers */
    unsigned *out;       /* [size] chunks of each shard copied out */

    /* hierarchical only */
    const crux_coll_inter_t *inter;
    unsigned depth;                 /* inter-group steps in flight at most; 0: sequential */
    uint64_t shape;                 /* the whole call's (crux_shape) */
    void *requests[CRUX_MAX_DEPTH]; /* ring, for chunks [final, reduced) */
} staged_round_t;

/* Copy chunk 'step' of every other member's shard into the own stage. */
static void copy_in(staged_round_t *s)
{
    crux_coll_group_t *g = s->g;
    for (int i = 1; i < g->size; i++) {
        int p = (g->rank + i) % g->size;
        if (s->copied < crux_shard_chunks(s->cut, p)) {
            size_t at = crux_chunk_offset(s->cut, p, s->copied);
            crux_copy_to(s->bank[g->rank] + at, s->src + at, crux_chunk_bytes(s->cut, p, s->copied),
                         crux_far(g, p));
        }
    }
    if (s->any_far) {
        crux_copy_fence(); /* streamed pieces before the word that announces them */
    }
    s->copied++;
    CRUX_PUBLISH(g, staged, CRUX_PROGRESS(g->seq, s->copied));
}

static int inputs_ready(staged_round_t *s)
{
    for (int q = 0; q < s->g->size; q++) {
        if (q != s->g->rank &&
            !CRUX_REACHED(s->g, q, staged, CRUX_PROGRESS(s->g->seq, s->reduced + 1))) {
            return 0;
        }
    }
    return 1;
}

/* Whether the next chunk may be reduced now: its inputs are staged and, in
 * a pipelined hierarchy, the inter-group step has room. */
static int can_reduce(staged_round_t *s)
{
    if (s->reduced == s->mine) {
        return 0;
    }
    if (s->inter != NULL && s->depth > 0 && s->reduced - s->final >= s->depth) {
        return 0;
    }
    return inputs_ready(s);
}

static crux_status_t start_inter(staged_round_t *s, unsigned first, unsigned last)
{
    size_t at = crux_chunk_offset(s->cut, s->g->rank, first);
    size_t end = crux_chunk_offset(s->cut, s->g->rank, last - 1) +
                 crux_chunk_bytes(s->cut, s->g->rank, last - 1);
    return s->inter->start(s->inter->arg, s->dst + at, (end - at) / s->cut->esize,
                           &s->requests[first % CRUX_MAX_DEPTH]);
}

/* Reduce the next chunk of the own shard within the group.  Flat: into the
 * stage, announced at once, and into dst.  Hierarchical: into dst, where
 * the inter-group step takes it. */
static crux_status_t reduce_chunk(staged_round_t *s)
{
    crux_coll_group_t *g = s->g;
    size_t at = crux_chunk_offset(s->cut, g->rank, s->reduced);
    size_t bytes = crux_chunk_bytes(s->cut, g->rank, s->reduced);
    for (int q = 0; q < g->size; q++) {
        s->inputs[q] = (q == g->rank ? s->src : s->bank[q]) + at;
    }
    s->reduced++;
    if (s->inter == NULL) {
        /* for far peers the stage's copy is the streamed one; the result may
         * be formed in dst unless that is a later input (in place past 1) */
        if (crux_copy_streams_to(s->any_far, bytes) && (s->src != s->dst || g->rank < 2)) {
            crux_reduce_chain(s->reduce, s->dst + at, s->bank[g->rank] + at, s->inputs, g->size,
                              bytes, s->cut->esize, 1);
            crux_copy_fence();
        } else {
            crux_reduce_chain(s->reduce, s->bank[g->rank] + at, s->dst + at, s->inputs, g->size,
                              bytes, s->cut->esize, s->stream);
        }
        s->final = s->reduced;
        CRUX_PUBLISH(g, reduced, CRUX_PROGRESS(g->seq, s->final));
        return CRUX_OK;
    }
    /* in place, a member past rank 1 must not overwrite its input before the
     * chain has read it: then blocks are formed aside and copied */
    int direct = s->src != s->dst || g->rank < 2;
    crux_reduce_chain(s->reduce, direct ? s->dst + at : NULL, direct ? NULL : s->dst + at,
                      s->inputs, g->size, bytes, s->cut->esize, 0);
    if (s->depth > 0) {
        return start_inter(s, s->reduced - 1, s->reduced);
    }
    return s->reduced == s->mine ? start_inter(s, 0, s->mine) : CRUX_OK;
}

/* Put finished inter-group steps, oldest first, in the stage and announce
 * them.  Sets *progressed when one finished. */
static crux_status_t finish_inter(staged_round_t *s, int *progressed)
{
    crux_coll_group_t *g = s->g;
    unsigned span = s->depth > 0 ? 1 : s->mine; /* chunks one step covers */
    while (s->final < s->reduced && (s->depth > 0 || s->reduced == s->mine)) {
        int done = 0;
        crux_status_t st =
            s->inter->test(s->inter->arg, s->requests[s->final % CRUX_MAX_DEPTH], &done);
        if (st != CRUX_OK || !done) {
            return st;
        }
        size_t at = crux_chunk_offset(s->cut, g->rank, s->final);
        size_t end = crux_chunk_offset(s->cut, g->rank, s->final + span - 1) +
                     crux_chunk_bytes(s->cut, g->rank, s->final + span - 1);
        crux_copy_to(s->bank[g->rank] + at, s->dst + at, end - at, s->any_far);
        if (s->any_far) {
            crux_copy_fence();
        }
        s->final += span;
        CRUX_PUBLISH(g, reduced, CRUX_PROGRESS(g->seq, s->final));
        *progressed = 1;
    }
    return CRUX_OK;
}

/* Copy out every announced chunk of member p's shard not yet copied. */
static int copy_out(staged_round_t *s, int p)
{
    crux_coll_group_t *g = s->g;
    unsigned first = s->out[p], chunks = crux_shard_chunks(s->cut, p);
    while (s->out[p] < chunks &&
           CRUX_REACHED(g, p, reduced, CRUX_PROGRESS(g->seq, s->out[p] + 1))) {
        s->out[p]++;
    }
    if (s->out[p] == first) {
        return 0;
    }
    size_t at = crux_chunk_offset(s->cut, p, first);
    size_t end =
        crux_chunk_offset(s->cut, p, s->out[p] - 1) + crux_chunk_bytes(s->cut, p, s->out[p] - 1);
    if (s->stream) {
        crux_copy_stream(s->dst + at, s->bank[p] + at, end - at);
    } else {
        memcpy(s->dst + at, s->bank[p] + at, end - at);
    }
    return 1;
}

/* CRUX_ERR_INVALID when a peer that entered this round (its shape for it
 * is written) runs a call of another shape. */
static crux_status_t check_shapes(const staged_round_t *s)
{
    const crux_coll_group_t *g = s->g;
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && crux_load(&g->ctrl[q]->staged) >= CRUX_PROGRESS(g->seq, 1) &&
            crux_peer_shape(g, q) != s->shape) {
            return CRUX_ERR_INVALID;
        }
    }
    return CRUX_OK;
}

/* Block on whatever the next step needs (only when no inter-group step is in
 * flight: those need the caller's progress, so the loop keeps polling); a
 * peer that runs another call would never give it. */
static crux_status_t wait_for_next(staged_round_t *s)
{
    crux_coll_group_t *g = s->g;
    crux_status_t shapes = check_shapes(s);
    if (shapes != CRUX_OK) {
        return shapes;
    }
    if (s->reduced < s->mine) {
        for (int q = 0; q < g->size; q++) {
            if (q != g->rank) {
                crux_status_t st = CRUX_WAIT(g, q, staged, CRUX_PROGRESS(g->seq, s->reduced + 1));
                if (st != CRUX_OK) {
                    return st;
                }
            }
        }
        return CRUX_OK;
    }
    for (int i = 1; i < g->size; i++) {
        int p = (g->rank + i) % g->size;
        if (s->out[p] < crux_shard_chunks(s->cut, p)) {
            return CRUX_WAIT(g, p, reduced, CRUX_PROGRESS(g->seq, s->out[p] + 1));
        }
    }
    return CRUX_OK;
}

static int round_done(const staged_round_t *s, unsigned steps)
{
    const crux_coll_group_t *g = s->g;
    if (s->copied < steps || s->final < s->mine) {
        return 0;
    }
    for (int p = 0; p < g->size; p++) {
        if (p != g->rank && s->out[p] < crux_shard_chunks(s->cut, p)) {
            return 0;
        }
    }
    return 1;
}

static crux_status_t staged_round(staged_round_t *s)
{
    crux_coll_group_t *g = s->g;
    /* The peers must be done reading this bank from two rounds ago. */
    for (int p = 0; p < g->size; p++) {
        crux_status_t st = p == g->rank || g->seq < 3 ? CRUX_OK : CRUX_WAIT(g, p, done, g->seq - 2);
        if (st != CRUX_OK) {
            return st;
        }
    }
    unsigned steps = crux_shard_chunks(s->cut, 0); /* shard 0 is the longest */
    crux_set_shape(g, s->shape);
    while (!round_done(s, steps)) {
        int progressed = 0;
        crux_status_t st = CRUX_OK;
        if (s->copied < steps) {
            copy_in(s);
            progressed = 1;
        }
        if (can_reduce(s)) {
            st = reduce_chunk(s);
            progressed = 1;
        }
        if (st == CRUX_OK && s->inter != NULL) {
            st = finish_inter(s, &progressed);
        }
        for (int i = 1; i < g->size; i++) {
            progressed |= copy_out(s, (g->rank + i) % g->size);
        }
        if (st == CRUX_OK && !progressed) {
            st = s->final < s->reduced ? (crux_yield(g), CRUX_OK) : wait_for_next(s);
        }
        if (st != CRUX_OK) {
            return st;
        }
    }
    crux_status_t shapes = check_shapes(s);
    if (shapes != CRUX_OK) {
        return shapes;
    }
    CRUX_PUBLISH(g, done, g->seq);
    return CRUX_OK;
}

crux_status_t crux_allreduce_staged(crux_coll_group_t *g, const crux_coll_inter_t *inter,
                                    unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                    size_t esize, crux_reduce_fn_t reduce)
{
    const void *inputs[g->size];
    uint8_t *bank[g->size];
    unsigned out[g->size];
    if (crux_abandoned(g)) {
        return CRUX_ERR_PEER;
    }
    const uint8_t *src = sbuf != NULL ? sbuf : rbuf;
    size_t bank_size = g->config.stage_size / 2;
    size_t per_round = bank_size / esize;
    int stream = g->config.stream_min_bytes > 0 && count * esize >= g->config.stream_min_bytes;
    int any_far = 0;
    for (int q = 0; q < g->size; q++) {
        any_far |= q != g->rank && crux_far(g, q);
    }

    for (size_t first = 0; first < count; first += per_round) {
        size_t n = count - first < per_round ? count - first : per_round;
        crux_cut_t cut = crux_cut(n, esize, g->config.chunk_size, g->size);
        memset(out, 0, sizeof(out));
        g->seq++;
        for (int p = 0; p < g->size; p++) {
            bank[p] = g->stage[p] + (g->seq % 2) * bank_size;
        }
        staged_round_t s = {
            .g = g,
            .cut = &cut,
            .reduce = reduce,
            .stream = stream,
            .any_far = any_far,
            .bank = bank,
            .inputs = inputs,
            .out = out,
            .mine = crux_shard_chunks(&cut, g->rank),
            .src = src + first * esize,
            .dst = (uint8_t *)rbuf + first * esize,
            .inter = inter,
            .depth = depth < CRUX_MAX_DEPTH ? depth : CRUX_MAX_DEPTH,
            .shape = crux_shape(g, count, esize),
        };
        crux_status_t status = staged_round(&s);
        if (status != CRUX_OK) {
            crux_abandon(g);
            return status;
        }
    }
    if (stream) {
        crux_copy_fence(); /* the caller reads the result next */
    }
    return CRUX_OK;
}

/* The pipeline's flags backend (crux_pipeline_internal.h), and the flags Allreduce
 * over it: no system calls inside the group, only loads and stores to
 * shared memory and progress words; flat (two stages) or hierarchical
 * (three).
 *
 * Each member's staging area holds two banks; a bank mirrors the part of the
 * buffer being reduced (a "round": the whole buffer when it fits, else
 * successive slices), and successive rounds and calls alternate banks.  A
 * member's pieces for every other member's shard go to the matching place
 * of its own bank, announced by its 'copied' word (chunks copied in); the
 * owner's reduced chunks go to the place of its shard in its own bank,
 * announced by its 'reduced' word.  A member only waits, before writing a
 * bank again, for the peers to have finished reading it two rounds ago
 * ('done'), so one round's copy-out overlaps the next round's copy-in, and a
 * call returns as soon as its own result is complete.
 *
 * Every member puts the call's shape (bytes and element size) beside its
 * progress words; a member compares the shapes of the peers it has seen in
 * a round at the round's end and in its liveness checks, and gives the
 * group up (crux_abandon) when one differs: members that passed different
 * counts or datatype sizes all fail, for one compare per peer and round. */
#include <sched.h>
#include <string.h>

#include "coll/pipeline/crux_pipeline_internal.h"
#include "common/crux_proc.h"

typedef struct {
    crux_coll_group_t *g;
    uint8_t **bank; /* [size] every member's bank for this round */
    uint64_t shape; /* the whole call's (crux_shape) */
    crux_sleep_t sleep;
    int sleeping;
} flags_t;

static int always(crux_pipe_t *p, unsigned k)
{
    (void)p;
    (void)k;
    return 1; /* the bank was free at the round's start */
}

static uint8_t *piece(crux_pipe_t *p, int q, unsigned k)
{
    const flags_t *f = p->handoff;
    return f->bank[p->rank] + crux_chunk_offset(&p->cut, q, k);
}

static void post_pieces(crux_pipe_t *p, unsigned k)
{
    crux_coll_group_t *g = ((flags_t *)p->handoff)->g;
    CRUX_PUBLISH(g, copied, CRUX_PROGRESS(g->seq, k + 1));
}

static int pieces(crux_pipe_t *p, unsigned k, const void **inputs)
{
    const flags_t *f = p->handoff;
    crux_coll_group_t *g = f->g;
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && !CRUX_REACHED(g, q, copied, CRUX_PROGRESS(g->seq, k + 1))) {
            return 0;
        }
    }
    size_t at = crux_chunk_offset(&p->cut, g->rank, k);
    for (int q = 0; q < g->size; q++) {
        inputs[q] = f->bank[q] + at;
    }
    return 1;
}

static void consume_pieces(crux_pipe_t *p, unsigned k)
{
    (void)p;
    (void)k;
}

static uint8_t *result(crux_pipe_t *p, unsigned k)
{
    return piece(p, p->rank, k);
}

static void post_result(crux_pipe_t *p, unsigned k)
{
    crux_coll_group_t *g = ((flags_t *)p->handoff)->g;
    CRUX_PUBLISH(g, reduced, CRUX_PROGRESS(g->seq, k + 1));
}

static unsigned gathered(crux_pipe_t *p, int q, unsigned k, const void **from)
{
    const flags_t *f = p->handoff;
    crux_coll_group_t *g = f->g;
    unsigned n = 0, chunks = crux_shard_chunks(&p->cut, q);
    while (k + n < chunks && CRUX_REACHED(g, q, reduced, CRUX_PROGRESS(g->seq, k + n + 1))) {
        n++;
    }
    *from = f->bank[q] + crux_chunk_offset(&p->cut, q, k);
    return n;
}

static void consume_gathered(crux_pipe_t *p, int q, unsigned n)
{
    (void)p;
    (void)q;
    (void)n;
}

/* Sleep on the word the next step needs: a peer's pieces of our next
 * chunk, else the next result of the first shard not copied out. */
static void doze(crux_pipe_t *p)
{
    flags_t *f = p->handoff;
    crux_coll_group_t *g = f->g;
    f->sleeping = 0;
    if (p->reduced < crux_shard_chunks(&p->cut, g->rank)) {
        for (int q = 0; q < g->size && !f->sleeping; q++) {
            if (q != g->rank &&
                crux_load(&g->ctrl[q]->copied) < CRUX_PROGRESS(g->seq, p->reduced + 1)) {
                crux_sleep_begin(g, q, offsetof(crux_ctrl_t, copied), &f->sleep);
                f->sleeping = 1;
            }
        }
        return;
    }
    for (int i = 1; i < g->size && !f->sleeping; i++) {
        int q = (g->rank + i) % g->size;
        if (p->gathered[q] < crux_shard_chunks(&p->cut, q)) {
            crux_sleep_begin(g, q, offsetof(crux_ctrl_t, reduced), &f->sleep);
            f->sleeping = 1;
        }
    }
}

static void sleep_(crux_pipe_t *p, int moved)
{
    flags_t *f = p->handoff;
    if (f->sleeping) {
        crux_sleep_end(&f->sleep, moved);
    } else if (!moved) {
        sched_yield();
    }
    f->sleeping = 0;
}

/* CRUX_ERR_INVALID when a peer that entered this round (its shape for it
 * is written) runs a call of another shape. */
static crux_status_t check_shapes(const flags_t *f)
{
    const crux_coll_group_t *g = f->g;
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && crux_load(&g->ctrl[q]->copied) >= CRUX_PROGRESS(g->seq, 1) &&
            crux_peer_shape(g, q) != f->shape) {
            return CRUX_ERR_INVALID;
        }
    }
    return CRUX_OK;
}

/* A peer that runs another call would never give what we wait for; one
 * that gave up or died neither. */
static crux_status_t check(crux_pipe_t *p)
{
    const flags_t *f = p->handoff;
    crux_coll_group_t *g = f->g;
    crux_status_t st = check_shapes(f);
    for (int q = 0; st == CRUX_OK && q < g->size; q++) {
        if (q != g->rank &&
            (crux_load(&g->ctrl[q]->failed) >= g->seq || !crux_proc_alive(g->pids[q]))) {
            st = CRUX_ERR_PEER;
        }
    }
    return st;
}

static const crux_handoff_ops_t flags_ops = {
    .stage_free = always,
    .piece = piece,
    .post_pieces = post_pieces,
    .pieces = pieces,
    .consume_pieces = consume_pieces,
    .result_free = always,
    .result = result,
    .post_result = post_result,
    .gathered = gathered,
    .consume_gathered = consume_gathered,
    .doze = doze,
    .sleep = sleep_,
    .check = check,
};

static crux_status_t flags_round(flags_t *f, crux_pipe_t *p)
{
    crux_coll_group_t *g = f->g;
    /* The peers must be done reading this bank from two rounds ago. */
    for (int q = 0; q < g->size; q++) {
        crux_status_t st = q == g->rank || g->seq < 3 ? CRUX_OK : CRUX_WAIT(g, q, done, g->seq - 2);
        if (st != CRUX_OK) {
            return st;
        }
    }
    crux_set_shape(g, f->shape);
    crux_pipe_start(p);
    crux_status_t st = crux_pipe_run(p);
    if (st == CRUX_OK) {
        st = check_shapes(f);
    }
    if (st == CRUX_OK) {
        CRUX_PUBLISH(g, done, g->seq);
    }
    return st;
}

crux_status_t crux_allreduce_flags(crux_coll_group_t *g, const crux_coll_inter_t *inter,
                                   unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                   size_t esize, crux_reduce_fn_t reduce)
{
    uint8_t *bank[g->size], far[g->size];
    unsigned out[g->size];
    if (crux_abandoned(g)) {
        return CRUX_ERR_PEER;
    }
    const uint8_t *src = sbuf != NULL ? sbuf : rbuf;
    size_t bank_size = g->config.stage_size / 2;
    size_t per_round = bank_size / esize;
    int any_far = 0;
    for (int q = 0; q < g->size; q++) {
        far[q] = q != g->rank && crux_far(g, q);
        any_far |= far[q];
    }
    flags_t f = { .g = g, .bank = bank, .shape = crux_shape(g, count, esize) };
    crux_pipe_t p = {
        .ops = &flags_ops,
        .handoff = &f,
        .rank = g->rank,
        .size = g->size,
        .reduce = reduce,
        .do_rs = 1,
        .do_ag = 1,
        .stream = g->config.stream_min_bytes > 0 && count * esize >= g->config.stream_min_bytes,
        .far = far,
        .any_far = any_far,
        .spins = g->spins,
        .inter = inter,
        .depth = depth < CRUX_HIER_MAX_DEPTH ? depth : CRUX_HIER_MAX_DEPTH,
        .gathered = out,
    };
    for (size_t first = 0; first < count; first += per_round) {
        size_t n = count - first < per_round ? count - first : per_round;
        p.cut = crux_cut(n, esize, g->config.chunk_size, g->size);
        p.src = src + first * esize;
        p.dst = (uint8_t *)rbuf + first * esize;
        g->seq++;
        for (int q = 0; q < g->size; q++) {
            bank[q] = g->stage[q] + (g->seq % 2) * bank_size;
        }
        crux_status_t status = flags_round(&f, &p);
        if (status != CRUX_OK) {
            crux_abandon(g);
            return status;
        }
    }
    return CRUX_OK;
}

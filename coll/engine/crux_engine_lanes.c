/* The pipeline's lanes backend (crux_pipeline_internal.h): the engine group's host calls
 * over the engine's lanes, when every pair has shm-direct.
 *
 * Each member keeps a shared stage (crux_tl_shared_alloc): a ring of
 * 'window' rows, a row holding one place per member of host_chunk_size
 * bytes.  Row k of a call (the rows go on from call to call, as rewriting
 * lines a peer has just read is slow) holds our pieces of every other
 * member's chunk k, each posted on the reduce-scatter lane to its owner,
 * and in our own place our reduced chunk k, posted on the allgather lane to
 * every peer.  Receivers read straight from their mappings of the stage:
 * every piece and result moves in one copy by its receiver, and a result
 * written once serves every peer.
 *
 * A place is rewritten once every post from its row's last use is
 * consumed: the group keeps, per row and peer, the lanes' post numbers it
 * must see consumed (lane_need).  A call returns as soon as its own result
 * is complete; posts it leaves unconsumed are the next call's business.
 *
 * A whole call (at most whole_max_bytes) is one exchange: every member
 * posts its whole input to every peer and reduces every member's input
 * itself, so one hand-off is on the critical path instead of two.
 *
 * Every post carries the call's shape (its bytes and element size): a
 * member that finds a peer's shape or a piece's size different from its
 * own (the members passed different counts or datatype sizes), or a peer
 * gone or giving up while a post it still needs from it is missing (a peer
 * that did its part may leave), abandons the lanes; the peers find that in
 * their waits, and the group's later host calls fail with CRUX_ERR_PEER. */
#include <stdlib.h>
#include <string.h>

#include "coll/engine/crux_engine_call.h"
#include "coll/pipeline/crux_pipeline_internal.h"
#include "common/crux_idle.h"

#define ROTATE_BYTES (1u << 20) /* stage rows successive calls rotate over, at most */

enum { NEED_RS, NEED_AG };

static int all_direct(const crux_engine_group_t *g)
{
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && !(crux_tl_pair_direct(g->rs[q]) && crux_tl_pair_direct(g->ag[q]))) {
            return 0;
        }
    }
    return 1;
}

static int peer_lives(crux_engine_group_t *g, int q)
{
    return crux_tl_lane_check(g->rs[q]) == CRUX_OK && crux_tl_lane_check(g->ag[q]) == CRUX_OK;
}

static void abandon(crux_engine_group_t *g)
{
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank) {
            crux_tl_lane_abandon(g->rs[q]);
            crux_tl_lane_abandon(g->ag[q]);
        }
    }
    g->lanes_broken = 1;
}

crux_status_t crux_engine_lanes_reserve(crux_engine_group_t *g)
{
    if (g->size < 2 || g->config.window > CRUX_TL_LANE_DEPTH || !all_direct(g)) {
        return CRUX_ERR_UNSUPPORTED;
    }
    size_t rows = (size_t)g->config.window * (size_t)g->size;
    g->lane_need = calloc(rows * 2, sizeof(*g->lane_need));
    if (g->lane_need == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    void *stage = NULL;
    crux_status_t st = crux_tl_shared_alloc(g->engine, rows * g->config.host_chunk_size, &stage);
    g->stage = st == CRUX_OK ? stage : NULL;
    return st;
}

/* The stage is freed only once the peers read what was posted from it
 * (a call returns before they may have), or they are gone. */
static void drain(crux_engine_group_t *g)
{
    crux_idle_t idle = crux_idle_start(0); /* the peers must run to read: yield */
    for (;;) {
        int check = crux_idle_check_due(&idle), left = 0;
        for (int q = 0; q < g->size; q++) {
            left |= q != g->rank &&
                    (!crux_tl_lane_consumed(g->rs[q], crux_tl_lane_posted(g->rs[q])) ||
                     !crux_tl_lane_consumed(g->ag[q], crux_tl_lane_posted(g->ag[q]))) &&
                    (!check || peer_lives(g, q));
        }
        if (!left) {
            return;
        }
        crux_idle_poll(&idle, 0);
    }
}

void crux_engine_lanes_release(crux_engine_group_t *g)
{
    if (g->lanes && !g->lanes_broken) {
        drain(g);
    }
    if (g->stage != NULL) {
        crux_tl_shared_free(g->engine, g->stage);
    }
    g->stage = NULL;
    free(g->lane_need);
    g->lane_need = NULL;
}

/* --- the stage ------------------------------------------------------------------ */

typedef struct {
    crux_engine_group_t *g;
    unsigned row0; /* the stage row of chunk 0 */
    /* the call's shape (bytes and element size), on every post: a member
     * whose peer's differs ends the call (mismatched arguments) */
    uint64_t tag;
    uint32_t ticket; /* the engine's doorbell, while dozing */
} lanes_t;

static unsigned row_of(const crux_pipe_t *p, unsigned k)
{
    const lanes_t *l = p->handoff;
    return (l->row0 + k) % l->g->config.window;
}

static uint8_t *place(const crux_pipe_t *p, int q, unsigned k)
{
    const crux_engine_group_t *g = ((const lanes_t *)p->handoff)->g;
    size_t index = (size_t)row_of(p, k) * (size_t)g->size + (size_t)q;
    return g->stage + index * g->config.host_chunk_size;
}

static uint64_t *need(const crux_pipe_t *p, unsigned k, int q, int lane)
{
    const crux_engine_group_t *g = ((const lanes_t *)p->handoff)->g;
    size_t index = ((size_t)row_of(p, k) * (size_t)g->size + (size_t)q) * 2 + (size_t)lane;
    return &g->lane_need[index];
}

/* Every post on 'lane' from row k's places at their last use is consumed. */
static int consumed(const crux_pipe_t *p, unsigned k, int lane)
{
    const crux_engine_group_t *g = ((const lanes_t *)p->handoff)->g;
    for (int q = 0; q < g->size; q++) {
        crux_tl_pair_t *pair = lane == NEED_RS ? g->rs[q] : g->ag[q];
        if (q != g->rank && !crux_tl_lane_consumed(pair, *need(p, k, q, lane))) {
            return 0;
        }
    }
    return 1;
}

static int row_free(crux_pipe_t *p, unsigned k)
{
    return consumed(p, k, NEED_RS) && consumed(p, k, NEED_AG);
}

static void post(crux_pipe_t *p, crux_tl_pair_t *pair, const uint8_t *from, size_t bytes,
                 unsigned k, int q, int lane)
{
    crux_status_t st = crux_tl_lane_post(pair, from, bytes, ((const lanes_t *)p->handoff)->tag);
    if (st != CRUX_OK && p->status == CRUX_OK) {
        p->status = st; /* cannot happen while the group keeps to its window */
    }
    *need(p, k, q, lane) = crux_tl_lane_posted(pair);
}

/* A post of 'got' bytes with 'tag' where 'bytes' of this call belong. */
static int matches(crux_pipe_t *p, size_t got, uint64_t tag, size_t bytes)
{
    if (got == bytes && tag == ((const lanes_t *)p->handoff)->tag) {
        return 1;
    }
    if (p->status == CRUX_OK) {
        p->status = CRUX_ERR_INVALID; /* the members disagree on the call */
    }
    return 0;
}

/* A peek that found nothing (CRUX_INPROGRESS) or failed. */
static void missing(crux_pipe_t *p, crux_status_t st)
{
    if (st != CRUX_INPROGRESS && p->status == CRUX_OK) {
        p->status = st; /* its buffer cannot be mapped */
    }
}

/* --- the hand-off ------------------------------------------------------------------ */

static uint8_t *piece(crux_pipe_t *p, int q, unsigned k)
{
    return place(p, q, k);
}

static void post_pieces(crux_pipe_t *p, unsigned k)
{
    crux_engine_group_t *g = ((lanes_t *)p->handoff)->g;
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && k < crux_shard_chunks(&p->cut, q)) {
            post(p, g->rs[q], place(p, p->cut.whole ? g->rank : q, k),
                 crux_chunk_bytes(&p->cut, q, k), k, q, NEED_RS);
        }
    }
}

static int pieces(crux_pipe_t *p, unsigned k, const void **inputs)
{
    crux_engine_group_t *g = ((lanes_t *)p->handoff)->g;
    size_t bytes = crux_chunk_bytes(&p->cut, g->rank, k);
    for (int q = 0; q < g->size; q++) {
        size_t got = 0;
        uint64_t tag = 0;
        crux_status_t st;
        if (q == g->rank) {
            continue;
        }
        if ((st = crux_tl_lane_peek(g->rs[q], &inputs[q], &got, &tag)) != CRUX_OK) {
            missing(p, st);
            return 0;
        }
        if (!matches(p, got, tag, bytes)) {
            return 0;
        }
    }
    return 1;
}

static void consume_pieces(crux_pipe_t *p, unsigned k)
{
    crux_engine_group_t *g = ((lanes_t *)p->handoff)->g;
    (void)k;
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank) {
            crux_tl_lane_consume(g->rs[q]);
        }
    }
}

static int result_free(crux_pipe_t *p, unsigned k)
{
    return consumed(p, k, NEED_AG);
}

static uint8_t *result(crux_pipe_t *p, unsigned k)
{
    return place(p, p->rank, k);
}

static void post_result(crux_pipe_t *p, unsigned k)
{
    crux_engine_group_t *g = ((lanes_t *)p->handoff)->g;
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank) {
            post(p, g->ag[q], place(p, g->rank, k), crux_chunk_bytes(&p->cut, g->rank, k), k, q,
                 NEED_AG);
        }
    }
}

static unsigned gathered(crux_pipe_t *p, int q, unsigned k, const void **from)
{
    crux_engine_group_t *g = ((lanes_t *)p->handoff)->g;
    size_t got = 0;
    uint64_t tag = 0;
    crux_status_t st = crux_tl_lane_peek(g->ag[q], from, &got, &tag);
    if (st != CRUX_OK) {
        missing(p, st);
        return 0;
    }
    return matches(p, got, tag, crux_chunk_bytes(&p->cut, q, k)) ? 1 : 0;
}

static void consume_gathered(crux_pipe_t *p, int q, unsigned n)
{
    crux_engine_group_t *g = ((lanes_t *)p->handoff)->g;
    for (unsigned i = 0; i < n; i++) {
        crux_tl_lane_consume(g->ag[q]);
    }
}

/* Sleep on the engine's doorbell, which every post rings. */
static void doze(crux_pipe_t *p)
{
    lanes_t *l = p->handoff;
    l->ticket = crux_tl_engine_doze(l->g->engine);
}

static void sleep_(crux_pipe_t *p, int moved)
{
    lanes_t *l = p->handoff;
    crux_tl_engine_sleep(l->g->engine, l->ticket, moved ? 0 : CRUX_IDLE_SLEEP_NS * 1e-9);
}

/* A peer that went away or gave up fails the call only if something we
 * still need from it is not posted: members that finished their part
 * leave, as the last posts of a call are consumed by then. */
static crux_status_t check(crux_pipe_t *p)
{
    crux_engine_group_t *g = ((lanes_t *)p->handoff)->g;
    for (int q = 0; q < g->size; q++) {
        if (q == g->rank || peer_lives(g, q)) {
            continue;
        }
        unsigned pieces_left = p->do_rs ? crux_shard_chunks(&p->cut, g->rank) - p->reduced : 0;
        unsigned results_left = p->do_ag ? crux_shard_chunks(&p->cut, q) - p->gathered[q] : 0;
        if (!crux_tl_lane_ready(g->rs[q], pieces_left > CRUX_TL_LANE_DEPTH ? CRUX_TL_LANE_DEPTH + 1
                                                                           : pieces_left) ||
            !crux_tl_lane_ready(g->ag[q], results_left > CRUX_TL_LANE_DEPTH ? CRUX_TL_LANE_DEPTH + 1
                                                                            : results_left)) {
            return CRUX_ERR_PEER;
        }
    }
    return CRUX_OK;
}

static const crux_handoff_ops_t lanes_ops = {
    .stage_free = row_free,
    .piece = piece,
    .post_pieces = post_pieces,
    .pieces = pieces,
    .consume_pieces = consume_pieces,
    .result_free = result_free,
    .result = result,
    .post_result = post_result,
    .gathered = gathered,
    .consume_gathered = consume_gathered,
    .doze = doze,
    .sleep = sleep_,
    .check = check,
};

/* --- a call --------------------------------------------------------------------------- */

crux_status_t crux_lanes_run(const crux_engine_call_t *c)
{
    crux_engine_group_t *g = c->g;
    if (g->lanes_broken) {
        return CRUX_ERR_PEER;
    }
    uint8_t far[g->size];
    unsigned out[g->size];
    /* the same on every member: the group agreed on g->lanes and g->whole */
    int whole = g->whole && c->do_rs && c->do_ag && c->inter == NULL &&
                c->count * c->esize <= g->config.whole_max_bytes;
    crux_pipe_t p = {
        .ops = &lanes_ops,
        .rank = g->rank,
        .size = g->size,
        .cut = whole ? crux_cut_whole(c->count, c->esize, g->config.host_chunk_size, g->size)
                     : crux_cut(c->count, c->esize, g->config.host_chunk_size, g->size),
        .src = c->src,
        .dst = c->dst,
        .reduce = c->cpu,
        .do_rs = c->do_rs,
        .do_ag = c->do_ag && !whole,
        .stream = c->stream,
        .far = far,
        .spins = g->spins,
        .inter = c->inter,
        .depth = c->depth < CRUX_HIER_MAX_DEPTH ? c->depth : CRUX_HIER_MAX_DEPTH,
        .gathered = out,
    };
    crux_pipe_start(&p);
    /* Successive calls start at the next row, so a member does not rewrite
     * lines its peers have just read; but every row in the rotation stays
     * in the members' caches, so calls rotate over as many rows as fit in
     * ROTATE_BYTES, at least two (a call of more chunks uses every row
     * anyway): at 4 ranks on 2 cores, 1 MiB calls over four rows of 1 MiB
     * took 1.3x their time over two. */
    size_t row_bytes = (size_t)g->size * crux_chunk_bytes(&p.cut, 0, 0);
    size_t span = ROTATE_BYTES / row_bytes;
    span = span < 2 ? 2 : span;
    span = span > g->config.window ? g->config.window : span;
    /* esize at most 32; the caller's word tells calls of communicators apart */
    lanes_t l = {
        .g = g,
        .row0 = g->stage_row,
        .tag = crux_call_shape(g->caller, c->count, c->esize),
    };
    p.handoff = &l;
    g->stage_row = (unsigned)((g->stage_row + p.kmax) % span);
    for (int q = 0; q < g->size; q++) {
        far[q] = q != g->rank && (crux_tl_pair_far(g->rs[q]) || crux_tl_pair_far(g->ag[q]));
        p.any_far |= far[q];
    }
    crux_status_t st = crux_pipe_run(&p);
    if (st != CRUX_OK) {
        abandon(g);
    }
    return st;
}

/* Host calls over the engine's lanes (part of the Allreduce data movement
 * of crux_dev_allreduce.c), when every pair has shm-direct.
 *
 * Each member keeps a shared stage (crux_tl_shared_alloc): a ring of
 * 'window' rows, a row holding one place per member of host_chunk_size
 * bytes.  Row k of a call (the rows go on from call to call, as rewriting
 * lines a peer has just read is slow): a member copies its input's chunk k
 * of every other member's shard into that member's place and posts it on
 * the reduce-scatter lane to it; the owner, once every peer's piece of its
 * chunk k is posted, reduces them with its own input in rank order (x0 op
 * x1 op ..., so every member gets the same bits) straight from its
 * mappings into its result and into its own place of the row, consumes
 * the pieces and posts the result on the allgather lane to every peer,
 * which copies it out.  Every piece and result moves in one copy by its
 * receiver, and a result written once serves every peer.  Copy-in,
 * reduction and copy-out of different chunks overlap across members; each
 * member does whichever step is ready.
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
 * Hierarchically (crux_dev_allreduce_hier), a reduced chunk goes to the
 * caller's inter-group step first, in our result; once that is done, in
 * chunk order, it is copied into our place and posted, as the staged
 * algorithm's three stages go.
 *
 * What a far peer reads of the stage (crux_tl_pair_far) is written with
 * streaming stores, fenced before it is posted.  Every post carries the
 * call's shape (its bytes and element size): a member that finds a peer's
 * shape or a piece's size different from its own (the members passed
 * different counts or datatype sizes), or a peer gone or giving up while
 * a post it still needs from it is missing (a peer that did its part may
 * leave), abandons the lanes; the peers find that in their waits, and the
 * group's later host calls fail with CRUX_ERR_PEER. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/crux_copy.h"
#include "coll/crux_dev_call.h"
#include "coll/crux_reduce_chain.h"

#define CHECK_POLLS  4096u      /* idle polls between checks that the peers live */
#define ROTATE_BYTES (1u << 20) /* stage rows successive calls rotate over, at most */
#define YIELDS       8u         /* idle polls that yield the core before sleeping */
#define SLEEP_S      1e-3       /* a sleep ends after this long at most ... */
#define CHECK_SLEEPS 32u        /* ... and the peers' lives are checked every so many */

enum { NEED_RS, NEED_AG };

static int all_direct(const crux_dev_group_t *g)
{
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && !(crux_tl_pair_direct(g->rs[q]) && crux_tl_pair_direct(g->ag[q]))) {
            return 0;
        }
    }
    return 1;
}

static int peer_lives(crux_dev_group_t *g, int q)
{
    return crux_tl_lane_check(g->rs[q]) == CRUX_OK && crux_tl_lane_check(g->ag[q]) == CRUX_OK;
}

static void abandon(crux_dev_group_t *g)
{
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank) {
            crux_tl_lane_abandon(g->rs[q]);
            crux_tl_lane_abandon(g->ag[q]);
        }
    }
    g->lanes_broken = 1;
}

crux_status_t crux_dev_lanes_reserve(crux_dev_group_t *g)
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
static void drain(crux_dev_group_t *g)
{
    for (unsigned idle = 1;; idle++) {
        int left = 0;
        for (int q = 0; q < g->size; q++) {
            left |= q != g->rank &&
                    (!crux_tl_lane_consumed(g->rs[q], crux_tl_lane_posted(g->rs[q])) ||
                     !crux_tl_lane_consumed(g->ag[q], crux_tl_lane_posted(g->ag[q]))) &&
                    (idle % CHECK_POLLS != 0 || peer_lives(g, q));
        }
        if (!left) {
            return;
        }
        sched_yield();
    }
}

void crux_dev_lanes_release(crux_dev_group_t *g)
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

static unsigned row_of(const crux_dev_call_t *c, unsigned k)
{
    return (c->row0 + k) % c->g->config.window;
}

static uint8_t *place(const crux_dev_call_t *c, int p, unsigned k)
{
    size_t index = (size_t)row_of(c, k) * (size_t)c->g->size + (size_t)p;
    return c->g->stage + index * c->g->config.host_chunk_size;
}

static uint64_t *need(const crux_dev_call_t *c, unsigned k, int q, int lane)
{
    size_t index = ((size_t)row_of(c, k) * (size_t)c->g->size + (size_t)q) * 2 + (size_t)lane;
    return &c->g->lane_need[index];
}

/* Every post on 'lane' from row k's places at their last use is consumed. */
static int consumed(const crux_dev_call_t *c, unsigned k, int lane)
{
    const crux_dev_group_t *g = c->g;
    for (int q = 0; q < g->size; q++) {
        crux_tl_pair_t *pair = lane == NEED_RS ? g->rs[q] : g->ag[q];
        if (q != g->rank && !crux_tl_lane_consumed(pair, *need(c, k, q, lane))) {
            return 0;
        }
    }
    return 1;
}

static int row_free(const crux_dev_call_t *c, unsigned k)
{
    return consumed(c, k, NEED_RS) && consumed(c, k, NEED_AG);
}

static void post(crux_dev_call_t *c, crux_tl_pair_t *pair, const uint8_t *from, size_t bytes,
                 unsigned k, int q, int lane)
{
    crux_status_t st = crux_tl_lane_post(pair, from, bytes, c->tag);
    if (st != CRUX_OK && c->status == CRUX_OK) {
        c->status = st; /* cannot happen while the group keeps to its window */
    }
    *need(c, k, q, lane) = crux_tl_lane_posted(pair);
}

static void fence(const crux_dev_call_t *c)
{
    if (c->any_far) {
        crux_copy_fence(); /* streamed places before the posts that name them */
    }
}

/* --- the steps -------------------------------------------------------------------- */

/* Copy our input's chunk k of every other shard into the stage and post it
 * (a whole call's: our own input, once, to every peer). */
static int copy_in(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned k = c->staged;
    if (!c->do_rs || k >= c->kmax || !row_free(c, k)) {
        return 0;
    }
    const uint8_t *whole = NULL;
    if (c->whole) {
        uint8_t *to = place(c, g->rank, k);
        crux_copy_to(to, c->src + crux_dev_chunk_first(c, g->rank, k) * c->esize,
                     crux_dev_chunk_count(c, g->rank, k) * c->esize, c->any_far);
        whole = to;
    }
    for (int q = 0; !c->whole && q < g->size; q++) {
        if (q != g->rank && k < c->chunks[q]) {
            crux_copy_to(place(c, q, k), c->src + crux_dev_chunk_first(c, q, k) * c->esize,
                         crux_dev_chunk_count(c, q, k) * c->esize, c->far[q]);
        }
    }
    fence(c);
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && k < c->chunks[q]) {
            post(c, g->rs[q], whole != NULL ? whole : place(c, q, k),
                 crux_dev_chunk_count(c, q, k) * c->esize, k, q, NEED_RS);
        }
    }
    c->staged++;
    return 1;
}

/* Every peer's piece of our chunk k, into inputs[] (ours: our input);
 * 0 while one is missing.  A piece of another size ends the call. */
static int pieces(crux_dev_call_t *c, unsigned k, const void **inputs)
{
    crux_dev_group_t *g = c->g;
    size_t at = crux_dev_chunk_first(c, g->rank, k) * c->esize;
    size_t bytes = crux_dev_chunk_count(c, g->rank, k) * c->esize;
    crux_status_t st;
    for (int q = 0; q < g->size; q++) {
        size_t got = 0;
        uint64_t tag = 0;
        if (q == g->rank) {
            inputs[q] = c->src + at;
        } else if ((st = crux_tl_lane_peek(g->rs[q], &inputs[q], &got, &tag)) != CRUX_OK) {
            if (st != CRUX_INPROGRESS && c->status == CRUX_OK) {
                c->status = st; /* its buffer cannot be mapped */
            }
            return 0;
        } else if ((got != bytes || tag != c->tag) && c->status == CRUX_OK) {
            c->status = CRUX_ERR_INVALID; /* the members disagree on the call */
        }
    }
    return 1;
}

/* The inter-group step of the chunk just reduced; sequentially, of the
 * whole shard once its last chunk is. */
static void start_inter(crux_dev_call_t *c)
{
    unsigned k = c->reduced - 1, mine = c->chunks[c->g->rank];
    if (c->depth == 0 && c->reduced < mine) {
        return;
    }
    unsigned first = c->depth > 0 ? k : 0;
    size_t at = crux_dev_chunk_first(c, c->g->rank, first);
    size_t n = crux_dev_chunk_first(c, c->g->rank, k) + crux_dev_chunk_count(c, c->g->rank, k) - at;
    crux_status_t st = c->inter->start(c->inter->arg, c->dst + at * c->esize, n,
                                       &c->requests[first % CRUX_DEV_MAX_DEPTH]);
    if (st != CRUX_OK && c->status == CRUX_OK) {
        c->status = st;
    }
}

/* Retire finished inter-group steps in order, then put their chunks in our
 * places and post them, as the places free up. */
static int finish_inter(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    int moved = 0;
    while (c->status == CRUX_OK && c->inter_done < c->reduced &&
           (c->depth > 0 || c->reduced == c->chunks[g->rank])) {
        int done = 0;
        crux_status_t st = c->inter->test(
            c->inter->arg, c->requests[(c->depth > 0 ? c->inter_done : 0) % CRUX_DEV_MAX_DEPTH],
            &done);
        if (st != CRUX_OK) {
            c->status = st;
        }
        if (st != CRUX_OK || !done) {
            break;
        }
        c->inter_done = c->depth > 0 ? c->inter_done + 1 : c->reduced;
        moved = 1;
    }
    while (c->status == CRUX_OK && c->final < c->inter_done && consumed(c, c->final, NEED_AG)) {
        unsigned k = c->final;
        size_t bytes = crux_dev_chunk_count(c, g->rank, k) * c->esize;
        uint8_t *mine = place(c, g->rank, k);
        crux_copy_to(mine, c->dst + crux_dev_chunk_first(c, g->rank, k) * c->esize, bytes,
                     c->any_far);
        fence(c);
        for (int q = 0; q < g->size; q++) {
            if (q != g->rank) {
                post(c, g->ag[q], mine, bytes, k, q, NEED_AG);
            }
        }
        c->final++;
        moved = 1;
    }
    return moved;
}

/* Reduce our next chunk once its pieces are in; send the result on. */
static int reduce(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned k = c->reduced;
    const void *inputs[g->size];
    /* Our place of row k takes the result: free of the row's pieces since
     * our copy-in checked it, but our result from the row's last use may
     * have gone out after that check (copy-in runs ahead of reductions).
     * Hierarchically the result goes to our buffer first, while the
     * inter-group step has room. */
    int inter = c->inter != NULL;
    if (!c->do_rs || k >= c->chunks[g->rank] || k >= c->staged ||
        (inter && c->depth > 0 && k - c->inter_done >= c->depth) ||
        (c->do_ag && !inter && !consumed(c, k, NEED_AG)) || !pieces(c, k, inputs) ||
        c->status != CRUX_OK) {
        return 0;
    }
    size_t at = crux_dev_chunk_first(c, g->rank, k) * c->esize;
    size_t bytes = crux_dev_chunk_count(c, g->rank, k) * c->esize;
    uint8_t *dst = c->dst + at, *mine = place(c, g->rank, k);
    /* in place past rank 1, the result must not overwrite our input before
     * the chain has read it */
    int direct = !c->in_place || g->rank < 2;
    if (!c->do_ag || inter) { /* the inter-group step reads it next: not streamed */
        crux_reduce_chain(c->cpu, direct ? dst : NULL, direct ? NULL : dst, inputs, g->size, bytes,
                          c->esize, c->stream && !inter);
    } else if (direct && crux_copy_streams_to(c->any_far, bytes)) {
        /* for far peers the stage's copy is the streamed one */
        crux_reduce_chain(c->cpu, dst, mine, inputs, g->size, bytes, c->esize, 1);
    } else {
        crux_reduce_chain(c->cpu, mine, dst, inputs, g->size, bytes, c->esize, c->stream);
    }
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank) {
            crux_tl_lane_consume(g->rs[q]);
        }
    }
    c->reduced++;
    if (inter) {
        start_inter(c);
        return 1;
    }
    fence(c);
    for (int q = 0; c->do_ag && q < g->size; q++) {
        if (q != g->rank) {
            post(c, g->ag[q], mine, bytes, k, q, NEED_AG);
        }
    }
    c->final = c->reduced;
    return 1;
}

/* A gather alone sends our shard as it is, through the stage. */
static int send_shard(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned k = c->reduced;
    if (c->do_rs || k >= c->chunks[g->rank] || !row_free(c, k)) {
        return 0;
    }
    size_t bytes = crux_dev_chunk_count(c, g->rank, k) * c->esize;
    uint8_t *mine = place(c, g->rank, k);
    crux_copy_to(mine, c->dst + crux_dev_chunk_first(c, g->rank, k) * c->esize, bytes, c->any_far);
    fence(c);
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank) {
            post(c, g->ag[q], mine, bytes, k, q, NEED_AG);
        }
    }
    c->reduced++;
    c->final = c->reduced;
    return 1;
}

/* Copy out every result member q has posted. */
static int copy_out(crux_dev_call_t *c, int q)
{
    unsigned *k = &c->gathered[q];
    int moved = 0;
    const void *from;
    size_t got;
    uint64_t tag;
    crux_status_t st = CRUX_OK;
    while (*k < c->chunks[q] &&
           (st = crux_tl_lane_peek(c->g->ag[q], &from, &got, &tag)) == CRUX_OK) {
        size_t bytes = crux_dev_chunk_count(c, q, *k) * c->esize;
        if (got != bytes || tag != c->tag) {
            c->status = c->status == CRUX_OK ? CRUX_ERR_INVALID : c->status;
            return moved;
        }
        uint8_t *to = c->dst + crux_dev_chunk_first(c, q, *k) * c->esize;
        if (c->stream) {
            crux_copy_stream(to, from, bytes);
        } else {
            memcpy(to, from, bytes);
        }
        crux_tl_lane_consume(c->g->ag[q]);
        (*k)++;
        moved = 1;
    }
    if (st != CRUX_OK && st != CRUX_INPROGRESS && c->status == CRUX_OK) {
        c->status = st; /* its buffer cannot be mapped */
    }
    return moved;
}

static int complete(const crux_dev_call_t *c)
{
    const crux_dev_group_t *g = c->g;
    if (c->final < c->chunks[g->rank] || (c->do_rs && c->staged < c->kmax)) {
        return 0;
    }
    for (int q = 0; c->do_ag && q < g->size; q++) {
        if (q != g->rank && c->gathered[q] < c->chunks[q]) {
            return 0;
        }
    }
    return 1;
}

/* A peer that went away or gave up fails the call only if something we
 * still need from it is not posted: members that finished their part
 * leave, as the last posts of a call are consumed by then. */
static crux_status_t check_peers(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    for (int q = 0; q < g->size; q++) {
        if (q == g->rank || peer_lives(g, q)) {
            continue;
        }
        unsigned pieces_left = c->do_rs ? c->chunks[g->rank] - c->reduced : 0;
        unsigned results_left = c->do_ag ? c->chunks[q] - c->gathered[q] : 0;
        if (!crux_tl_lane_ready(g->rs[q], pieces_left > CRUX_TL_LANE_DEPTH ? CRUX_TL_LANE_DEPTH + 1
                                                                           : pieces_left) ||
            !crux_tl_lane_ready(g->ag[q], results_left > CRUX_TL_LANE_DEPTH ? CRUX_TL_LANE_DEPTH + 1
                                                                            : results_left)) {
            return CRUX_ERR_PEER;
        }
    }
    return CRUX_OK;
}

/* --- a call --------------------------------------------------------------------------- */

void crux_dev_lanes_setup(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    /* Successive calls start at the next row, so a member does not rewrite
     * lines its peers have just read; but every row in the rotation stays
     * in the members' caches, so calls rotate over as many rows as fit in
     * ROTATE_BYTES, at least two (a call of more chunks uses every row
     * anyway): at 4 ranks on 2 cores, 1 MiB calls over four rows of 1 MiB
     * took 1.3x their time over two. */
    size_t row_bytes = (size_t)g->size * crux_dev_chunk_count(c, 0, 0) * c->esize;
    size_t span = ROTATE_BYTES / row_bytes;
    span = span < 2 ? 2 : span;
    span = span > g->config.window ? g->config.window : span;
    c->row0 = g->stage_row;
    /* esize at most 32; the caller's word tells calls of communicators apart */
    c->tag = ((uint64_t)(c->count * c->esize) << 8 | c->esize) ^ g->caller;
    g->stage_row = (unsigned)((g->stage_row + c->kmax) % span);
    for (int q = 0; q < g->size; q++) {
        c->far[q] = q != g->rank && (crux_tl_pair_far(g->rs[q]) || crux_tl_pair_far(g->ag[q]));
        c->any_far |= c->far[q];
    }
}

/* One pass over the steps; 1 if one moved. */
static int pass(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    int moved = copy_in(c);
    moved |= c->do_rs ? reduce(c) : send_shard(c);
    if (c->inter != NULL) {
        moved |= finish_inter(c);
    }
    for (int i = 1; c->do_ag && i < g->size; i++) {
        moved |= copy_out(c, (g->rank + i) % g->size);
    }
    return moved;
}

/* Nothing moved: spin (a member with a core of its own), yield a few
 * times, then sleep on the doorbell until a peer acts; 1 if the last look
 * before sleeping moved after all. */
static int wait(crux_dev_call_t *c, unsigned idle)
{
    crux_dev_group_t *g = c->g;
    if (idle <= g->spins) {
        return 0;
    }
    /* an inter-group step in flight moves only when polled: no sleep */
    if (idle <= g->spins + YIELDS || c->inter_done < c->reduced) {
        sched_yield();
        return 0;
    }
    uint32_t ticket = crux_tl_engine_doze(g->engine);
    int moved = pass(c);
    crux_tl_engine_sleep(g->engine, ticket, moved ? 0 : SLEEP_S);
    return moved;
}

crux_status_t crux_dev_lanes_run(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    if (g->lanes_broken) {
        return CRUX_ERR_PEER;
    }
    unsigned idle = 0;
    while (!complete(c)) {
        int moved = pass(c) || (++idle > g->spins && wait(c, idle));
        crux_status_t st = c->status;
        if (moved) {
            idle = 0;
        } else if (st == CRUX_OK && (idle % CHECK_POLLS == 0 ||
                                     (idle > g->spins + YIELDS && idle % CHECK_SLEEPS == 0))) {
            st = check_peers(c);
        }
        if (st != CRUX_OK) {
            abandon(g);
            return st;
        }
    }
    if (c->stream) {
        crux_copy_fence(); /* the caller reads the result next */
    }
    return CRUX_OK;
}

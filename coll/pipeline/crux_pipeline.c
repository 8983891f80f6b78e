/* The reduce-scatter + allgather pipeline for host buffers (crux_pipeline_internal.h),
 * over either hand-off backend.
 *
 * Each step goes chunk by chunk, and a member does whichever step is ready,
 * so the copy-in of one chunk overlaps the reduction and copy-out of
 * earlier ones across members.  The reduction is the same on every member,
 * x0 op x1 op ... in rank order, so every member gets the same bits.
 *
 * What a far peer reads of our staging places is written with streaming
 * stores, fenced before it is handed over.
 *
 * A whole call (cut.whole) is one exchange: every member hands its whole
 * input to every peer and reduces every member's input itself, with no
 * gather.  A reduce-scatter alone leaves the result of our shard in place;
 * an allgather alone hands our shard over as it is.
 *
 * Nothing to do: the wait loop's policy (common/crux_idle.h), sleeping in
 * the backend; an inter-group step in flight moves only while polled, so
 * then the loop never sleeps. */
#include <string.h>

#include "coll/pipeline/crux_pipeline_internal.h"
#include "common/crux_idle.h"

static size_t chunk_at(const crux_pipe_t *p, int q, unsigned k)
{
    return crux_chunk_offset(&p->cut, q, k);
}

static size_t chunk_bytes(const crux_pipe_t *p, int q, unsigned k)
{
    return crux_chunk_bytes(&p->cut, q, k);
}

static unsigned chunks(const crux_pipe_t *p, int q)
{
    return crux_shard_chunks(&p->cut, q);
}

static void fence(const crux_pipe_t *p)
{
    if (p->any_far) {
        crux_copy_fence(); /* streamed places before the hand-off that names them */
    }
}

static void fail(crux_pipe_t *p, crux_status_t st)
{
    if (st != CRUX_OK && p->status == CRUX_OK) {
        p->status = st;
    }
}

void crux_pipe_start(crux_pipe_t *p)
{
    p->kmax = chunks(p, 0); /* shard 0 is the longest */
    p->copied = p->reduced = p->inter_done = p->final = 0;
    memset(p->gathered, 0, (size_t)p->size * sizeof(*p->gathered));
    p->status = CRUX_OK;
}

/* Copy our input's chunk k of every other shard into the stage and hand it
 * over (a whole call's: our own input, once, for every peer). */
static int copy_in(crux_pipe_t *p)
{
    unsigned k = p->copied;
    if (!p->do_rs || k >= p->kmax || !p->ops->stage_free(p, k)) {
        return 0;
    }
    if (p->cut.whole) {
        crux_copy_to(p->ops->piece(p, p->rank, k), p->src + chunk_at(p, p->rank, k),
                     chunk_bytes(p, p->rank, k), p->any_far);
    }
    for (int i = 1; !p->cut.whole && i < p->size; i++) {
        int q = (p->rank + i) % p->size;
        if (k < chunks(p, q)) {
            crux_copy_to(p->ops->piece(p, q, k), p->src + chunk_at(p, q, k), chunk_bytes(p, q, k),
                         p->far[q]);
        }
    }
    fence(p);
    p->ops->post_pieces(p, k);
    p->copied++;
    return 1;
}

/* The inter-group step of the chunk just reduced; sequentially, of the
 * whole shard once its last chunk is. */
static void start_inter(crux_pipe_t *p)
{
    unsigned k = p->reduced - 1, mine = chunks(p, p->rank);
    if (p->depth == 0 && p->reduced < mine) {
        return;
    }
    unsigned first = p->depth > 0 ? k : 0;
    size_t at = chunk_at(p, p->rank, first);
    size_t end = chunk_at(p, p->rank, k) + chunk_bytes(p, p->rank, k);
    fail(p, p->inter->start(p->inter->arg, p->dst + at, (end - at) / p->cut.esize,
                            &p->requests[first % CRUX_HIER_MAX_DEPTH]));
}

/* Retire finished inter-group steps in order, then stage their chunks and
 * hand them over, as the places free up. */
static int finish_inter(crux_pipe_t *p)
{
    int moved = 0;
    while (p->status == CRUX_OK && p->inter_done < p->reduced &&
           (p->depth > 0 || p->reduced == chunks(p, p->rank))) {
        int done = 0;
        crux_status_t st = p->inter->test(
            p->inter->arg, p->requests[(p->depth > 0 ? p->inter_done : 0) % CRUX_HIER_MAX_DEPTH],
            &done);
        fail(p, st);
        if (st != CRUX_OK || !done) {
            break;
        }
        p->inter_done = p->depth > 0 ? p->inter_done + 1 : p->reduced;
        moved = 1;
    }
    while (p->status == CRUX_OK && p->final < p->inter_done && p->ops->result_free(p, p->final)) {
        unsigned k = p->final;
        crux_copy_to(p->ops->result(p, k), p->dst + chunk_at(p, p->rank, k),
                     chunk_bytes(p, p->rank, k), p->any_far);
        fence(p);
        p->ops->post_result(p, k);
        p->final++;
        moved = 1;
    }
    return moved;
}

/* Reduce our next chunk once its pieces are in; hand the result over. */
static int reduce(crux_pipe_t *p)
{
    unsigned k = p->reduced;
    int inter = p->inter != NULL;
    /* our staging place of chunk k was free of pieces when our copy-in
     * checked it, but our result from its last use may have gone out after
     * that (copy-in runs ahead of reductions); hierarchically the result
     * goes to our buffer first, while the inter-group step has room */
    if (k >= chunks(p, p->rank) || k >= p->copied ||
        (inter && p->depth > 0 && k - p->inter_done >= p->depth) ||
        (p->do_ag && !inter && !p->ops->result_free(p, k))) {
        return 0;
    }
    const void *inputs[p->size];
    if (!p->ops->pieces(p, k, inputs) || p->status != CRUX_OK) {
        return 0;
    }
    size_t at = chunk_at(p, p->rank, k), bytes = chunk_bytes(p, p->rank, k);
    inputs[p->rank] = p->src + at;
    uint8_t *dst = p->dst + at;
    /* in place past rank 1, the result must not overwrite our input before
     * the chain has read it: then blocks are formed aside and copied */
    int direct = p->src != p->dst || p->rank < 2;
    if (!p->do_ag || inter) { /* the inter-group step reads it next: not streamed */
        crux_reduce_chain(p->reduce, direct ? dst : NULL, direct ? NULL : dst, inputs, p->size,
                          bytes, p->cut.esize, p->stream && !inter);
    } else if (direct && crux_copy_streams_to(p->any_far, bytes)) {
        /* for far peers the stage's copy is the streamed one */
        crux_reduce_chain(p->reduce, dst, p->ops->result(p, k), inputs, p->size, bytes,
                          p->cut.esize, 1);
    } else {
        crux_reduce_chain(p->reduce, p->ops->result(p, k), dst, inputs, p->size, bytes,
                          p->cut.esize, p->stream);
    }
    p->ops->consume_pieces(p, k);
    p->reduced++;
    if (inter) {
        start_inter(p);
        return 1;
    }
    if (p->do_ag) {
        fence(p);
        p->ops->post_result(p, k);
    }
    p->final = p->reduced;
    return 1;
}

/* An allgather alone hands our shard over as it is. */
static int send_shard(crux_pipe_t *p)
{
    unsigned k = p->reduced;
    if (k >= chunks(p, p->rank) || !p->ops->stage_free(p, k)) {
        return 0;
    }
    crux_copy_to(p->ops->result(p, k), p->dst + chunk_at(p, p->rank, k), chunk_bytes(p, p->rank, k),
                 p->any_far);
    fence(p);
    p->ops->post_result(p, k);
    p->reduced++;
    p->final = p->reduced;
    return 1;
}

/* Copy out every result member q has handed over. */
static int copy_out(crux_pipe_t *p, int q)
{
    unsigned *k = &p->gathered[q], n;
    const void *from;
    int moved = 0;
    while (*k < chunks(p, q) && (n = p->ops->gathered(p, q, *k, &from)) > 0) {
        size_t at = chunk_at(p, q, *k);
        size_t end = chunk_at(p, q, *k + n - 1) + chunk_bytes(p, q, *k + n - 1);
        if (p->stream) {
            crux_copy_stream(p->dst + at, from, end - at);
        } else {
            memcpy(p->dst + at, from, end - at);
        }
        p->ops->consume_gathered(p, q, n);
        *k += n;
        moved = 1;
    }
    return moved;
}

static int complete(const crux_pipe_t *p)
{
    if (p->final < chunks(p, p->rank) || (p->do_rs && p->copied < p->kmax)) {
        return 0;
    }
    for (int q = 0; p->do_ag && q < p->size; q++) {
        if (q != p->rank && p->gathered[q] < chunks(p, q)) {
            return 0;
        }
    }
    return 1;
}

/* One pass over the steps; 1 if one moved. */
static int pass(crux_pipe_t *p)
{
    int moved = copy_in(p);
    moved |= p->do_rs ? reduce(p) : send_shard(p);
    if (p->inter != NULL) {
        moved |= finish_inter(p);
    }
    for (int i = 1; p->do_ag && i < p->size; i++) {
        moved |= copy_out(p, (p->rank + i) % p->size);
    }
    return moved;
}

crux_status_t crux_pipe_run(crux_pipe_t *p)
{
    crux_idle_t idle = crux_idle_start(p->spins);
    while (!complete(p) && p->status == CRUX_OK) {
        int moved = pass(p);
        /* steps between groups move only while we poll them, unless their
         * channel can wake us */
        int crossing = p->inter != NULL && p->inter_done < p->reduced;
        if (!moved && p->status == CRUX_OK &&
            crux_idle_poll(&idle, !crossing || p->inter->wait != NULL) == CRUX_IDLE_SLEEP) {
            if (crossing) {
                /* the group's hand-offs are looked at again after at most
                 * as long as a doze lasts */
                p->inter->wait(p->inter->arg, CRUX_IDLE_SLEEP_NS / 1000000);
                moved = pass(p);
            } else {
                p->ops->doze(p);
                moved = pass(p);
                p->ops->sleep(p, moved);
            }
            crux_idle_slept(&idle);
        }
        if (moved) {
            crux_idle_reset(&idle);
        } else if (p->status == CRUX_OK && crux_idle_check_due(&idle)) {
            /* a peer may hand over its last piece and exit between our pass
             * and the check: what it handed over before it went still
             * counts, so look once more before giving up */
            crux_status_t st = p->ops->check(p);
            if (st != CRUX_OK && !pass(p) && !complete(p)) {
                fail(p, st);
            }
        }
    }
    if (p->status == CRUX_OK && p->stream) {
        crux_copy_fence(); /* the caller reads the result next */
    }
    return p->status;
}

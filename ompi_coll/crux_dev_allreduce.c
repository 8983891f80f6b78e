/* Reduce-scatter and allgather over the multipath engine, pipelined.
 *
 * Member r owns shard r, cut in chunks.  Reduce-scatter: every peer sends
 * its input's chunk k of shard r to r, where it lands in one of 'window'
 * scratch slots; once all pieces of chunk k are in, r reduces them with its
 * own input in rank order (x0 op x1 op ... , so every member gets the same
 * bits) into its result.  Allgather: r sends each reduced chunk to every
 * peer, straight into the peer's result buffer.  In an allreduce a chunk is
 * gathered as soon as it is reduced.
 *
 * In place (sbuf NULL), a member's result buffer is also its input.  A
 * gathered chunk of shard q may land on our input of it at any time: q sends
 * it only after reducing it, so after our input of it has reached q.  Our
 * own chunks are reduced into a scratch slot and copied back, as the chain
 * reads our input after other members' pieces.
 *
 * Host buffers fold instead (crux_dev_fold.c), when the pairs allow it:
 * the owner's receives of a chunk's pieces reduce on landing, one peer after
 * the other in rank order, into the chunk's accumulator (the result itself,
 * or a scratch slot in place past rank 1), so no piece is stored before it
 * is reduced: the same bytes move as in the staged algorithm.  A chunk's
 * receives are posted at once, each chained after the one before it
 * (crux_tl_reduce_t.after), so peers stage their pieces concurrently and
 * the engine applies them in order; only a member's own input, reduced by
 * the member itself, waits for the landing before it.
 *
 * Host buffers go through a shared stage when every pair has shm-direct:
 * a member copies its pieces of row k (chunk k of every other shard) into
 * the stage and sends them from there, and the fold writes the chunk's
 * result into the stage as well (crux_tl_reduce_t.also), where the gather
 * sends it from: every piece and result then travels in one copy by its
 * receiver, and a result is written once for all peers, as in the staged
 * algorithm.  The stage is a ring of 'window' rows; row k is copied in
 * once row k - window's transfers are done.
 *
 * A failed transfer does not stop the exchange: the member goes on posting
 * what the protocol expects (skipping reductions) so no peer waits forever,
 * then reports the error. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_coll/crux_dev_call.h"


crux_status_t crux_dev_scratch(crux_dev_group_t *g, int device, size_t bytes)
{
    if (g->scratch != NULL && g->scratch_device == device && g->scratch_size >= bytes) {
        return CRUX_OK;
    }
    crux_dev_release_scratch(g);
    crux_status_t st = CRUX_OK;
    if (device < 0) {
        g->scratch = malloc(bytes > 0 ? bytes : 1);
        st = g->scratch != NULL ? CRUX_OK : CRUX_ERR_NO_MEMORY;
    } else {
        st = crux_dev_alloc(device, bytes, &g->scratch);
        if (st == CRUX_OK) {
            st = crux_dev_queue_create(device, g->config.window, &g->queue);
        }
    }
    g->scratch_device = device;
    g->scratch_size = bytes;
    if (st != CRUX_OK) {
        crux_dev_release_scratch(g);
    }
    return st;
}

crux_status_t crux_dev_stage(crux_dev_group_t *g, size_t bytes)
{
    if (g->stage != NULL && g->stage_size >= bytes) {
        return CRUX_OK;
    }
    if (g->stage != NULL) {
        crux_tl_shared_free(g->engine, g->stage);
        g->stage = NULL;
        g->stage_size = 0;
    }
    crux_status_t st = crux_tl_shared_alloc(g->engine, bytes, &g->stage);
    g->stage_size = st == CRUX_OK ? bytes : 0;
    return st;
}

void crux_dev_release_scratch(crux_dev_group_t *g)
{
    if (g->scratch_device < 0) {
        free(g->scratch);
    } else {
        crux_dev_free(g->scratch_device, g->scratch);
    }
    crux_dev_queue_destroy(g->queue);
    g->queue = NULL;
    g->scratch = NULL;
    g->scratch_size = 0;
}

/* --- where things are ---------------------------------------------------------- */

size_t crux_dev_chunk_first(const crux_dev_call_t *c, int p, unsigned k)
{
    size_t first, length;
    crux_dev_shard(c->g, c->count, p, &first, &length);
    return first + (size_t)k * c->chunk;
}

size_t crux_dev_chunk_count(const crux_dev_call_t *c, int p, unsigned k)
{
    size_t first, length;
    crux_dev_shard(c->g, c->count, p, &first, &length);
    size_t left = length - (size_t)k * c->chunk;
    return left < c->chunk ? left : c->chunk;
}

/* Scratch slot of chunk k: one piece per peer, then an accumulator. */
static uint8_t *piece(const crux_dev_call_t *c, unsigned k, int q)
{
    int size = c->g->size;
    size_t index = (size_t)(k % c->g->config.window) * (size_t)size +
                   (size_t)(q < c->g->rank ? q : q - 1);
    return (uint8_t *)c->g->scratch + index * c->chunk * c->esize;
}

uint8_t *crux_dev_accumulator(const crux_dev_call_t *c, unsigned k)
{
    return piece(c, k, c->g->size);   /* the slot's last place */
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
static int row_free(const crux_dev_call_t *c, crux_tl_xfer_t *const *sends, unsigned k)
{
    unsigned window = c->g->config.window;
    for (int q = 0; k >= window && q < c->g->size; q++) {
        if (sends[(size_t)q * c->kmax + (k - window)] != NULL) {
            return 0;
        }
    }
    return 1;
}

/* --- transfers ---------------------------------------------------------------- */

void crux_dev_post(crux_dev_call_t *c, crux_status_t st, crux_tl_xfer_t **slot, crux_tl_xfer_t *x)
{
    if (st != CRUX_OK) {
        if (c->status == CRUX_OK) {
            c->status = st;
        }
        return;
    }
    *slot = x;
    c->pending++;
}

/* Send chunk k of member p's shard from 'from'. */
static void send_chunk(crux_dev_call_t *c, crux_tl_pair_t *pair, crux_tl_xfer_t **slot,
                       const uint8_t *from, int p, unsigned k)
{
    crux_tl_xfer_t *x = NULL;
    crux_status_t st = crux_tl_send(pair, from, crux_dev_chunk_count(c, p, k) * c->esize, NULL, &x);
    crux_dev_post(c, st, slot, x);
}

void crux_dev_recv_chunk(crux_dev_call_t *c, crux_tl_pair_t *pair, crux_tl_xfer_t **slot,
                         uint8_t *to, int p, unsigned k)
{
    crux_tl_xfer_t *x = NULL;
    crux_tl_xfer_params_t params = { .stream = c->stream && p != c->g->rank };
    size_t bytes = crux_dev_chunk_count(c, p, k) * c->esize;
    crux_status_t st = crux_tl_recv(pair, to, bytes, &params, &x);
    crux_dev_post(c, st, slot, x);
}

/* Retire finished transfers; 1 when the slot holds none (any more). */
int crux_dev_finished(crux_dev_call_t *c, crux_tl_xfer_t **slot)
{
    if (*slot == NULL) {
        return 1;
    }
    if (!crux_tl_xfer_done(*slot)) {
        return 0;
    }
    crux_status_t st = crux_tl_xfer_status(*slot);
    if (st != CRUX_OK && c->status == CRUX_OK) {
        c->status = st;
    }
    crux_tl_xfer_release(*slot);
    *slot = NULL;
    c->pending--;
    return 1;
}

/* --- the reduction of one chunk of our shard ----------------------------------- */

static crux_status_t reduce_chunk(crux_dev_call_t *c, unsigned k)
{
    crux_dev_group_t *g = c->g;
    size_t n = crux_dev_chunk_count(c, g->rank, k);
    size_t at = crux_dev_chunk_first(c, g->rank, k) * c->esize;
    uint8_t *out = c->in_place ? crux_dev_accumulator(c, k) : c->dst + at;
    const uint8_t *x[2];
    for (int p = 0, step = 0; p < g->size; p++) {
        const uint8_t *input = p == g->rank ? c->src + at : piece(c, k, p);
        if (p == 0) {
            x[0] = input;
            continue;
        }
        x[1] = input;
        const uint8_t *a = step++ == 0 ? x[0] : out;
        crux_status_t st = c->device < 0 ? CRUX_OK
                         : crux_dev_queue_reduce(g->queue, out, a, x[1], n, c->dtype, c->op);
        if (st != CRUX_OK) {
            return st;
        }
        if (c->device < 0) {
            c->cpu(out, a, x[1], n);
        }
    }
    if (c->in_place) {
        if (c->device < 0) {
            memcpy(c->dst + at, out, n * c->esize);
        } else {
            crux_status_t st = crux_dev_queue_copy(g->queue, c->dst + at, out, n * c->esize);
            if (st != CRUX_OK) {
                return st;
            }
        }
    }
    return c->device < 0 ? CRUX_OK : crux_dev_queue_mark(g->queue, k);
}

/* --- one step of the state machine -------------------------------------------------- */

/* Staged: copy row 'staged' of our pieces into the stage and send them. */
static unsigned stage_row(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned k = c->staged;
    if (c->stage == NULL || !c->do_rs || k >= c->kmax || !row_free(c, c->rs_send, k)) {
        return 0;
    }
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank && k < c->chunks[q]) {
            uint8_t *to = crux_dev_stage_at(c, q, k);
            memcpy(to, c->src + crux_dev_chunk_first(c, q, k) * c->esize,
                   crux_dev_chunk_count(c, q, k) * c->esize);
            send_chunk(c, g->rs[q], &c->rs_send[q * c->kmax + k], to, q, k);
        }
    }
    c->staged++;
    return 1;
}

static unsigned post_scatter_receives(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned events = 0;
    /* staged: a chunk's pieces come once its row is staged, and its result
     * goes to the row's place of ours, free once the gather from it before
     * is done (posted: reduced is past it) */
    while (c->do_rs && c->rs_posted < c->chunks[g->rank] &&
           c->rs_posted < c->reduced + g->config.window &&
           (c->stage == NULL ||
            (c->rs_posted < c->staged && row_free(c, c->ag_send, c->rs_posted)))) {
        for (int q = 0; !c->fold && q < g->size; q++) {   /* folds post step by step */
            if (q != g->rank) {
                crux_dev_recv_chunk(c, g->rs[q], &c->rs_recv[q * c->kmax + c->rs_posted],
                           piece(c, c->rs_posted, q), g->rank, c->rs_posted);
            }
        }
        c->rs_posted++;
        events++;
    }
    return events;
}

static unsigned launch_reductions(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned events = 0;
    while (c->launched < c->rs_posted) {
        int ready = 1;
        for (int q = 0; q < g->size; q++) {
            ready &= q == g->rank || crux_dev_finished(c, &c->rs_recv[q * c->kmax + c->launched]);
        }
        if (!ready) {
            break;
        }
        if (c->status == CRUX_OK) {
            crux_status_t st = reduce_chunk(c, c->launched);
            if (st != CRUX_OK) {
                c->status = st;
            }
        }
        c->launched++;
        events++;
    }
    return events;
}

/* Chunks whose reduction finished go out to every peer. */
static unsigned send_reduced(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned events = 0;
    while (c->reduced < c->launched && (c->stage == NULL || row_free(c, c->ag_send, c->reduced))) {
        if (c->do_rs && c->device >= 0 && c->status == CRUX_OK) {
            int done = crux_dev_queue_done(g->queue, c->reduced);
            if (done == 0) {
                break;
            }
            if (done < 0) {
                c->status = (crux_status_t)done;
            }
        }
        const uint8_t *from = c->dst + crux_dev_chunk_first(c, g->rank, c->reduced) * c->esize;
        if (c->do_ag && c->stage != NULL) {
            uint8_t *to = crux_dev_stage_at(c, g->rank, c->reduced);
            if (!(c->fold && c->do_rs)) {   /* a fold wrote it there already */
                memcpy(to, from, crux_dev_chunk_count(c, g->rank, c->reduced) * c->esize);
            }
            from = to;
        }
        for (int q = 0; c->do_ag && q < g->size; q++) {
            if (q != g->rank) {
                send_chunk(c, g->ag[q], &c->ag_send[q * c->kmax + c->reduced], from, g->rank,
                           c->reduced);
            }
        }
        c->reduced++;
        events++;
    }
    return events;
}

/* Gathered chunks land straight in the result, in each peer's order. */
static void post_gather_receives(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    for (int q = 0; c->do_ag && q < g->size; q++) {
        for (unsigned k = 0; q != g->rank && k < c->chunks[q]; k++) {
            crux_dev_recv_chunk(c, g->ag[q], &c->ag_recv[q * c->kmax + k],
                       c->dst + crux_dev_chunk_first(c, q, k) * c->esize, q, k);
        }
    }
}

/* Done once our result is: every transfer finished, or, with a stage,
 * every receive finished and every send left to its receiver: sends from
 * the stage touch nothing of the caller's, and the next call (or the
 * group's end) finishes them before the stage is written again. */
static int complete(const crux_dev_call_t *c)
{
    if (c->reduced < c->chunks[c->g->rank]) {
        return 0;
    }
    if (c->pending == 0) {
        return 1;
    }
    if (c->stage == NULL || (c->do_rs && c->staged < c->kmax)) {
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

static unsigned step(crux_dev_call_t *c);

/* Hand the sends still in flight to the group, which finishes them before
 * the stage is written again; wait for them here if it has no room. */
static void leave_sends(crux_dev_call_t *c)
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
    while (c->pending > 0) {
        step(c);
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

static unsigned step(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned events = crux_tl_engine_progress(g->engine);
    events += stage_row(c);
    events += post_scatter_receives(c);
    events += c->fold ? crux_dev_fold_chunks(c) : launch_reductions(c);
    events += send_reduced(c);
    for (size_t i = 0; i < (size_t)g->size * c->kmax; i++) {
        crux_dev_finished(c, &c->rs_send[i]);
        crux_dev_finished(c, &c->ag_send[i]);
        crux_dev_finished(c, &c->ag_recv[i]);
    }
    return events;
}

/* --- a call --------------------------------------------------------------------------- */

static crux_status_t check(crux_dev_call_t *c, const void *sbuf, void *rbuf)
{
    crux_tl_mem_t d = crux_tl_mem_query(rbuf), s = crux_tl_mem_query(c->src);
    if (c->esize == 0) {
        return CRUX_ERR_INVALID;
    }
    if (d.type != s.type || d.device != s.device) {
        return CRUX_ERR_UNSUPPORTED;
    }
    c->device = d.type == CRUX_TL_MEM_CUDA ? d.device : -1;
    if (c->do_rs) {
        c->cpu = crux_reduce_lookup(c->dtype, c->op);
        if (c->device >= 0 ? !crux_dev_reduce_supported(c->dtype, c->op) : c->cpu == NULL) {
            return CRUX_ERR_UNSUPPORTED;
        }
    }
    size_t stream_from = c->g->config.stream_min_bytes;
    c->stream = c->device < 0 && stream_from > 0 && c->count * c->esize >= stream_from;
    (void)sbuf;
    return CRUX_OK;
}

/* The call's arrays, zeroed, carved from memory the group keeps (calls
 * are many and small ones showed their allocations in profiles): chunks
 * per shard, the four transfer tables, and the fold's steps per chunk. */
static crux_status_t call_arrays(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    size_t size = (size_t)g->size, slots = size * c->kmax;
    size_t counts = (size + c->kmax + 1) * sizeof(unsigned);
    size_t bytes = 4 * slots * sizeof(crux_tl_xfer_t *) + counts;
    if (g->call_mem_size < bytes) {
        void *mem = realloc(g->call_mem, bytes);
        if (mem == NULL) {
            return CRUX_ERR_NO_MEMORY;
        }
        g->call_mem = mem;
        g->call_mem_size = bytes;
    }
    memset(g->call_mem, 0, bytes);
    crux_tl_xfer_t **tables = g->call_mem;   /* pointers first: aligned */
    c->rs_send = tables;
    c->rs_recv = tables + slots;
    c->ag_send = tables + 2 * slots;
    c->ag_recv = tables + 3 * slots;
    c->chunks = (unsigned *)(tables + 4 * slots);
    c->folded = c->chunks + size;
    return CRUX_OK;
}

/* Host buffers between members that all have shm-direct get the shared
 * stage (none when the shared memory domain has no room: then the pairs'
 * other channels carry private buffers); folding needs it, or pairs with
 * channels that reduce whatever the sender's buffer. */
static void host_channels(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    int direct = 1, reduces = 1;
    for (int q = 0; q < g->size; q++) {
        if (q != g->rank) {
            direct &= crux_tl_pair_direct(g->rs[q]) && crux_tl_pair_direct(g->ag[q]);
            reduces &= crux_tl_pair_reduces(g->rs[q]);
        }
    }
    size_t rows = g->config.window;
    size_t largest = c->count / (size_t)g->size + (c->count % (size_t)g->size != 0);
    c->slot_elems = largest < c->chunk ? largest : c->chunk;
    if (direct && crux_dev_stage(g, rows * (size_t)g->size * c->slot_elems * c->esize) == CRUX_OK) {
        c->stage = g->stage;
        c->row0 = g->stage_row;
        g->stage_row = (g->stage_row + c->kmax) % g->config.window;
    }
    c->fold = c->do_rs && 64 % c->esize == 0 && (c->stage != NULL || reduces);
}

static crux_status_t setup(crux_dev_call_t *c)
{
    crux_dev_group_t *g = c->g;
    size_t chunk = c->device < 0 ? g->config.host_chunk_size : g->config.chunk_size;
    c->chunk = chunk / c->esize > 0 ? chunk / c->esize : 1;
    size_t first, length;
    crux_dev_shard(g, c->count, 0, &first, &length);   /* the largest shard */
    c->kmax = (unsigned)((length + c->chunk - 1) / c->chunk);
    if (call_arrays(c) != CRUX_OK) {
        return CRUX_ERR_NO_MEMORY;
    }
    for (int p = 0; p < g->size; p++) {
        crux_dev_shard(g, c->count, p, &first, &length);
        c->chunks[p] = (unsigned)((length + c->chunk - 1) / c->chunk);
    }
    if (c->device < 0) {
        host_channels(c);
    }
    if (c->do_rs) {
        size_t bytes = (size_t)g->config.window * (size_t)g->size * c->chunk * c->esize;
        crux_status_t st = crux_dev_scratch(g, c->device, bytes);
        if (st != CRUX_OK && c->device >= 0) {
            /* No device memory left: land in host memory instead, which the
             * CUDA channels refuse on both sides, so every peer learns of the
             * failure instead of waiting for us. */
            c->status = st;
            st = crux_dev_scratch(g, -1, bytes);
        }
        if (st != CRUX_OK) {
            return st;
        }
    } else {
        c->launched = c->chunks[g->rank];   /* a gather sends our shard as it is */
    }
    return CRUX_OK;
}


static crux_status_t run(crux_dev_group_t *g, const void *sbuf, void *rbuf, size_t count,
                         crux_dtype_t dtype, crux_op_t op, int do_rs, int do_ag)
{
    crux_dev_call_t c = {
        .g = g, .esize = crux_dtype_size(dtype), .dtype = dtype, .op = op, .count = count,
        .src = sbuf != NULL ? sbuf : rbuf, .dst = rbuf, .do_rs = do_rs, .do_ag = do_ag,
    };
    c.in_place = c.src == c.dst;
    /* the last call's sends failing shows only now; its stage rows are free after */
    crux_status_t tail = crux_dev_finish_sends(g);
    crux_status_t st = check(&c, sbuf, rbuf);
    if (st != CRUX_OK || count == 0) {
        return st != CRUX_OK ? st : tail;
    }
    if (g->size == 1) {
        return c.in_place || !do_rs ? CRUX_OK : crux_dev_copy(rbuf, c.src, count * c.esize);
    }
    st = setup(&c);
    if (st != CRUX_OK) {
        return st;
    }
    for (int q = 0; do_rs && c.stage == NULL && q < g->size; q++) {   /* staged: stage_row */
        for (unsigned k = 0; q != g->rank && k < c.chunks[q]; k++) {
            send_chunk(&c, g->rs[q], &c.rs_send[q * c.kmax + k],
                       c.src + crux_dev_chunk_first(&c, q, k) * c.esize, q, k);
        }
    }
    post_gather_receives(&c);
    unsigned idle = 0;
    while (!complete(&c)) {
        if (step(&c) > 0) {
            idle = 0;
        } else if (++idle > g->spins) {
            sched_yield();   /* what we wait for needs a peer to run */
        }
    }
    leave_sends(&c);
    return c.status != CRUX_OK ? c.status : tail;
}

crux_status_t crux_dev_reduce_scatter(crux_dev_group_t *g, const void *sbuf, void *rbuf,
                                      size_t count, crux_dtype_t dtype, crux_op_t op)
{
    return run(g, sbuf, rbuf, count, dtype, op, 1, 0);
}

crux_status_t crux_dev_allgather(crux_dev_group_t *g, void *rbuf, size_t count, crux_dtype_t dtype)
{
    return run(g, NULL, rbuf, count, dtype, CRUX_OP_SUM, 0, 1);
}

crux_status_t crux_dev_allreduce(crux_dev_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                 crux_dtype_t dtype, crux_op_t op)
{
    return run(g, sbuf, rbuf, count, dtype, op, 1, 1);
}

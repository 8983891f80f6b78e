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
 * Host buffers go over the engine's lanes instead when every pair has
 * shm-direct: the host pipeline's lanes backend (crux_engine_lanes.c).
 *
 * A failed transfer does not stop the exchange: the member goes on posting
 * what the protocol expects (skipping reductions) so no peer waits forever,
 * then reports the error. */
#include <stdlib.h>
#include <string.h>

#include "common/crux_idle.h"
#include "coll/engine/crux_engine_call.h"
#include "coll/oob/crux_oob_internal.h"

crux_status_t crux_engine_scratch(crux_engine_group_t *g, int device, size_t bytes)
{
    if (g->scratch != NULL && g->scratch_device == device && g->scratch_size >= bytes) {
        return CRUX_OK;
    }
    crux_engine_release_scratch(g);
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
        crux_engine_release_scratch(g);
    }
    return st;
}

void crux_engine_release_scratch(crux_engine_group_t *g)
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

static size_t chunk_first(const crux_engine_call_t *c, int p, unsigned k)
{
    return crux_chunk_offset(&c->cut, p, k) / c->esize;
}

static size_t chunk_count(const crux_engine_call_t *c, int p, unsigned k)
{
    return crux_chunk_bytes(&c->cut, p, k) / c->esize;
}

/* Scratch slot of chunk k: one piece per peer, then an accumulator. */
static uint8_t *piece(const crux_engine_call_t *c, unsigned k, int q)
{
    int size = c->g->size;
    size_t index =
        (size_t)(k % c->g->config.window) * (size_t)size + (size_t)(q < c->g->rank ? q : q - 1);
    return (uint8_t *)c->g->scratch + index * c->chunk * c->esize;
}

static uint8_t *accumulator(const crux_engine_call_t *c, unsigned k)
{
    return piece(c, k, c->g->size); /* the slot's last place */
}

/* --- transfers ---------------------------------------------------------------- */

static void posted(crux_engine_call_t *c, crux_status_t st, crux_tl_xfer_t **slot,
                   crux_tl_xfer_t *x)
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

static void send_chunk(crux_engine_call_t *c, crux_tl_pair_t *pair, crux_tl_xfer_t **slot,
                       const uint8_t *from, int p, unsigned k)
{
    crux_tl_xfer_t *x = NULL;
    crux_status_t st = crux_tl_send(pair, from, chunk_count(c, p, k) * c->esize, NULL, &x);
    posted(c, st, slot, x);
}

static void recv_chunk(crux_engine_call_t *c, crux_tl_pair_t *pair, crux_tl_xfer_t **slot,
                       uint8_t *to, int p, unsigned k)
{
    crux_tl_xfer_t *x = NULL;
    crux_tl_xfer_params_t params = { .stream = c->stream && p != c->g->rank };
    size_t bytes = chunk_count(c, p, k) * c->esize;
    crux_status_t st = crux_tl_recv(pair, to, bytes, &params, &x);
    posted(c, st, slot, x);
}

/* Retire finished transfers; 1 when the slot holds none (any more). */
static int finished(crux_engine_call_t *c, crux_tl_xfer_t **slot)
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

static crux_status_t reduce_chunk(crux_engine_call_t *c, unsigned k)
{
    crux_engine_group_t *g = c->g;
    size_t n = chunk_count(c, g->rank, k);
    size_t at = chunk_first(c, g->rank, k) * c->esize;
    uint8_t *out = c->in_place ? accumulator(c, k) : c->dst + at;
    const uint8_t *x[2];
    for (int p = 0, step = 0; p < g->size; p++) {
        const uint8_t *input = p == g->rank ? c->src + at : piece(c, k, p);
        if (p == 0) {
            x[0] = input;
            continue;
        }
        x[1] = input;
        const uint8_t *a = step++ == 0 ? x[0] : out;
        crux_status_t st = c->device < 0
                               ? CRUX_OK
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

static unsigned post_scatter_receives(crux_engine_call_t *c)
{
    crux_engine_group_t *g = c->g;
    unsigned events = 0;
    while (c->do_rs && c->rs_posted < c->chunks[g->rank] &&
           c->rs_posted < c->reduced + g->config.window) {
        for (int q = 0; q < g->size; q++) {
            if (q != g->rank) {
                recv_chunk(c, g->rs[q], &c->rs_recv[q * c->kmax + c->rs_posted],
                           piece(c, c->rs_posted, q), g->rank, c->rs_posted);
            }
        }
        c->rs_posted++;
        events++;
    }
    return events;
}

static unsigned launch_reductions(crux_engine_call_t *c)
{
    crux_engine_group_t *g = c->g;
    unsigned events = 0;
    while (c->launched < c->rs_posted) {
        int ready = 1;
        for (int q = 0; q < g->size; q++) {
            ready &= q == g->rank || finished(c, &c->rs_recv[q * c->kmax + c->launched]);
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
static unsigned send_reduced(crux_engine_call_t *c)
{
    crux_engine_group_t *g = c->g;
    unsigned events = 0;
    while (c->reduced < c->launched) {
        if (c->do_rs && c->device >= 0 && c->status == CRUX_OK) {
            int done = crux_dev_queue_done(g->queue, c->reduced);
            if (done == 0) {
                break;
            }
            if (done < 0) {
                c->status = (crux_status_t)done;
            }
        }
        const uint8_t *from = c->dst + chunk_first(c, g->rank, c->reduced) * c->esize;
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
static void post_gather_receives(crux_engine_call_t *c)
{
    crux_engine_group_t *g = c->g;
    for (int q = 0; c->do_ag && q < g->size; q++) {
        for (unsigned k = 0; q != g->rank && k < c->chunks[q]; k++) {
            recv_chunk(c, g->ag[q], &c->ag_recv[q * c->kmax + k],
                       c->dst + chunk_first(c, q, k) * c->esize, q, k);
        }
    }
}

/* Done once every transfer finished. */
static int complete(const crux_engine_call_t *c)
{
    return c->reduced >= c->chunks[c->g->rank] && c->pending == 0;
}

static unsigned step(crux_engine_call_t *c)
{
    crux_engine_group_t *g = c->g;
    unsigned events = crux_tl_engine_progress(g->engine);
    events += post_scatter_receives(c);
    events += launch_reductions(c);
    events += send_reduced(c);
    for (size_t i = 0; i < (size_t)g->size * c->kmax; i++) {
        finished(c, &c->rs_send[i]);
        finished(c, &c->ag_send[i]);
        finished(c, &c->ag_recv[i]);
    }
    return events;
}

/* --- a call --------------------------------------------------------------------------- */

static crux_status_t check(crux_engine_call_t *c, const void *sbuf, void *rbuf)
{
    crux_tl_mem_t d = crux_tl_mem_query(rbuf), s = crux_tl_mem_query(c->src);
    /* any device memory makes it a device call, agreed by every member */
    c->device = d.type == CRUX_TL_MEM_CUDA ? d.device : s.type == CRUX_TL_MEM_CUDA ? s.device : -1;
    if (c->esize == 0) {
        return CRUX_ERR_INVALID;
    }
    if (d.type != s.type || d.device != s.device) {
        return CRUX_ERR_UNSUPPORTED;
    }
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
 * per shard and the four transfer tables. */
static crux_status_t call_arrays(crux_engine_call_t *c)
{
    crux_engine_group_t *g = c->g;
    size_t size = (size_t)g->size, slots = size * c->kmax;
    size_t counts = size * sizeof(unsigned);
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
    crux_tl_xfer_t **tables = g->call_mem; /* pointers first: aligned */
    c->rs_send = tables;
    c->rs_recv = tables + slots;
    c->ag_send = tables + 2 * slots;
    c->ag_recv = tables + 3 * slots;
    c->chunks = (unsigned *)(tables + 4 * slots);
    return CRUX_OK;
}

static crux_status_t setup(crux_engine_call_t *c)
{
    crux_engine_group_t *g = c->g;
    size_t chunk = c->device < 0 ? g->config.host_chunk_size : g->config.chunk_size;
    c->cut = crux_cut(c->count, c->esize, chunk, g->size);
    c->chunk = c->cut.chunk;
    c->kmax = crux_shard_chunks(&c->cut, 0); /* the largest shard */
    if (call_arrays(c) != CRUX_OK) {
        return CRUX_ERR_NO_MEMORY;
    }
    for (int p = 0; p < g->size; p++) {
        c->chunks[p] = crux_shard_chunks(&c->cut, p);
    }
    if (c->do_rs) {
        size_t bytes = (size_t)g->config.window * (size_t)g->size * c->chunk * c->esize;
        /* device memory short: the members agree on the fallback (run) */
        crux_status_t st = crux_engine_scratch(g, c->device, bytes);
        if (st != CRUX_OK) {
            return st;
        }
    } else {
        c->launched = c->chunks[g->rank]; /* a gather sends our shard as it is */
    }
    return CRUX_OK;
}

static crux_status_t run(crux_engine_group_t *g, const void *sbuf, void *rbuf, size_t count,
                         crux_dtype_t dtype, crux_op_t op, int do_rs, int do_ag,
                         const crux_coll_inter_t *inter, unsigned depth)
{
    crux_engine_call_t c = {
        .g = g,
        .esize = crux_dtype_size(dtype),
        .dtype = dtype,
        .op = op,
        .count = count,
        .src = sbuf != NULL ? sbuf : rbuf,
        .dst = rbuf,
        .do_rs = do_rs,
        .do_ag = do_ag,
        .inter = inter,
        .depth = depth,
    };
    c.in_place = c.src == c.dst;
    crux_status_t st = check(&c, sbuf, rbuf);
    if (st == CRUX_OK && inter != NULL && (c.device >= 0 || !g->lanes)) {
        st = CRUX_ERR_UNSUPPORTED;
    }
    /* count and the group are the same on every member: so are these */
    if (count == 0 || g->size == 1 || (st != CRUX_OK && c.device < 0)) {
        if (st != CRUX_OK || count == 0 || c.in_place || !do_rs) {
            return st;
        }
        return crux_dev_copy(rbuf, c.src, count * c.esize);
    }
    if (st == CRUX_OK && c.device < 0 && g->lanes) {
        return crux_lanes_run(&c); /* the same on every member: the group agreed on it */
    }
    if (st == CRUX_OK) {
        st = setup(&c);
    }
    if (c.device >= 0) {
        /* Whether each member can take part is its own (its memory, its
         * scratch, its GPU's reach): all go ahead, or all fall back before
         * any byte moved. */
        if (st == CRUX_OK && !(crux_dev_exportable(c.src) && crux_dev_exportable(rbuf))) {
            st = CRUX_ERR_UNSUPPORTED; /* stream-ordered (pool) or VMM memory */
        }
        /* a kernel on a misaligned element faults, and the fault is sticky:
         * it would take the application's CUDA context down with it */
        if (st == CRUX_OK && ((uintptr_t)c.src % c.esize != 0 || (uintptr_t)rbuf % c.esize != 0)) {
            st = CRUX_ERR_UNSUPPORTED;
        }
        st = crux_engine_agree(&c, st);
        if (st != CRUX_OK) {
            return st == CRUX_ERR_PEER ? st : CRUX_ERR_UNSUPPORTED;
        }
    }
    if (st != CRUX_OK) {
        return st;
    }
    for (int q = 0; do_rs && q < g->size; q++) {
        for (unsigned k = 0; q != g->rank && k < c.chunks[q]; k++) {
            send_chunk(&c, g->rs[q], &c.rs_send[q * c.kmax + k],
                       c.src + chunk_first(&c, q, k) * c.esize, q, k);
        }
    }
    post_gather_receives(&c);
    /* what we wait for moves only while we poll: the wait loop yields, never sleeps */
    crux_idle_t idle = crux_idle_start(g->spins);
    while (!complete(&c)) {
        if (step(&c) > 0) {
            crux_idle_reset(&idle);
        } else {
            (void)crux_idle_poll(&idle, 0);
        }
    }
    if (c.device < 0) {
        return c.status;
    }
    /* Every member ends with the same status.  A pair that turned out unable
     * to map the other's memory leaves the inputs intact out of place, so
     * all fall back; in place, gathered chunks may have overwritten them. */
    st = crux_oob_agree(&g->oob, c.status, 1, NULL);
    return st == CRUX_ERR_UNSUPPORTED && c.in_place ? CRUX_ERR_IO : st;
}

crux_status_t crux_engine_reduce_scatter(crux_engine_group_t *g, const void *sbuf, void *rbuf,
                                         size_t count, crux_dtype_t dtype, crux_op_t op)
{
    return run(g, sbuf, rbuf, count, dtype, op, 1, 0, NULL, 0);
}

crux_status_t crux_engine_allgather(crux_engine_group_t *g, void *rbuf, size_t count,
                                    crux_dtype_t dtype)
{
    return run(g, NULL, rbuf, count, dtype, CRUX_OP_SUM, 0, 1, NULL, 0);
}

crux_status_t crux_engine_allreduce(crux_engine_group_t *g, const void *sbuf, void *rbuf,
                                    size_t count, crux_dtype_t dtype, crux_op_t op)
{
    return run(g, sbuf, rbuf, count, dtype, op, 1, 1, NULL, 0);
}

crux_status_t crux_engine_allreduce_hier(crux_engine_group_t *g, const crux_coll_inter_t *inter,
                                         unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                         crux_dtype_t dtype, crux_op_t op)
{
    return run(g, sbuf, rbuf, count, dtype, op, 1, 1, inter, depth);
}

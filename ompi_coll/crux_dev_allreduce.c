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
 * Host buffers fold instead, when the pairs allow it (crux_tl_recv_reduce):
 * the owner's receives of a chunk's pieces reduce on landing, one peer after
 * the other in rank order, into the chunk's accumulator (the result itself,
 * or a scratch slot in place past rank 1), so no piece is stored before it
 * is reduced: the same bytes move as in the staged algorithm.  A chunk's
 * receives are posted at once, each chained after the one before it
 * (crux_tl_reduce_t.after), so peers stage their pieces concurrently and
 * the engine applies them in order; only a member's own input, reduced by
 * the member itself, waits for the landing before it.
 *
 * A failed transfer does not stop the exchange: the member goes on posting
 * what the protocol expects (skipping reductions) so no peer waits forever,
 * then reports the error. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_coll/crux_dev_group.h"

typedef struct {
    crux_dev_group_t *g;
    int           device;        /* -1: host memory */
    size_t        esize, chunk;  /* chunk: elements */
    crux_dtype_t  dtype;
    crux_op_t     op;
    crux_reduce_fn_t cpu;        /* host memory */
    int           fold;          /* host: receives reduce on landing */
    int           stream;        /* host: gathered chunks bypass the cache */
    unsigned     *folded;        /* fold: [chunk of our shard] steps issued */
    const uint8_t *src;
    uint8_t      *dst;
    int           in_place, do_rs, do_ag;
    size_t        count;
    unsigned      kmax;          /* chunks of the largest shard */
    unsigned     *chunks;        /* [size] chunks of each shard */
    /* transfers, [peer * kmax + chunk] */
    crux_tl_xfer_t **rs_send, **rs_recv, **ag_send, **ag_recv;
    unsigned      rs_posted;     /* chunks of our shard whose pieces are posted */
    unsigned      launched;      /* chunks whose reduction is enqueued */
    unsigned      reduced;       /* chunks reduced (and sent on) */
    unsigned      pending;       /* transfers not yet finished */
    crux_status_t status;
} call_t;

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

static size_t chunk_first(const call_t *c, int p, unsigned k)
{
    size_t first, length;
    crux_dev_shard(c->g, c->count, p, &first, &length);
    return first + (size_t)k * c->chunk;
}

static size_t chunk_count(const call_t *c, int p, unsigned k)
{
    size_t first, length;
    crux_dev_shard(c->g, c->count, p, &first, &length);
    size_t left = length - (size_t)k * c->chunk;
    return left < c->chunk ? left : c->chunk;
}

/* Scratch slot of chunk k: one piece per peer, then an accumulator. */
static uint8_t *piece(const call_t *c, unsigned k, int q)
{
    int size = c->g->size;
    size_t index = (size_t)(k % c->g->config.window) * (size_t)size +
                   (size_t)(q < c->g->rank ? q : q - 1);
    return (uint8_t *)c->g->scratch + index * c->chunk * c->esize;
}

static uint8_t *accumulator(const call_t *c, unsigned k)
{
    return piece(c, k, c->g->size);   /* the slot's last place */
}

/* --- transfers ---------------------------------------------------------------- */

static void post(call_t *c, crux_status_t st, crux_tl_xfer_t **slot, crux_tl_xfer_t *x)
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

static void send_chunk(call_t *c, crux_tl_pair_t *pair, crux_tl_xfer_t **slot, const uint8_t *base,
                       int p, unsigned k)
{
    crux_tl_xfer_t *x = NULL;
    crux_status_t st = crux_tl_send(pair, base + chunk_first(c, p, k) * c->esize,
                                    chunk_count(c, p, k) * c->esize, NULL, &x);
    post(c, st, slot, x);
}

static void recv_chunk(call_t *c, crux_tl_pair_t *pair, crux_tl_xfer_t **slot, uint8_t *to,
                       int p, unsigned k)
{
    crux_tl_xfer_t *x = NULL;
    crux_tl_xfer_params_t params = { .stream = c->stream && p != c->g->rank };
    crux_status_t st = crux_tl_recv(pair, to, chunk_count(c, p, k) * c->esize, &params, &x);
    post(c, st, slot, x);
}

/* Retire finished transfers; 1 when the slot holds none (any more). */
static int finished(call_t *c, crux_tl_xfer_t **slot)
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

static crux_status_t reduce_chunk(call_t *c, unsigned k)
{
    crux_dev_group_t *g = c->g;
    size_t n = chunk_count(c, g->rank, k), at = chunk_first(c, g->rank, k) * c->esize;
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

/* --- folding: host pieces reduced as they land --------------------------------------- */

/* Chunk k's pieces fold into its accumulator in rank order.  Steps: member
 * 0 folds peer 1 into its input, then peers 2, 3 ... into the result;
 * member 1 folds its input into peer 0's piece, then peers 2, 3 ...; a
 * member r past 1 receives peer 0's piece as it is, folds peer 1, and
 * when its own turn comes reduces its input in itself (no transfer). */
static unsigned fold_steps(const call_t *c)
{
    return c->g->rank < 2 ? (unsigned)c->g->size - 1 : (unsigned)c->g->size;
}

/* The peer whose piece step i brings (our own rank: the local step). */
static int fold_peer(const call_t *c, unsigned i)
{
    int r = c->g->rank;
    return r == 0 ? (int)i + 1 : r == 1 ? (i == 0 ? 0 : (int)i + 1) : (int)i;
}

static uint8_t *fold_target(const call_t *c, unsigned k)
{
    size_t at = chunk_first(c, c->g->rank, k) * c->esize;
    return c->in_place && c->g->rank >= 2 ? accumulator(c, k) : c->dst + at;
}

/* Step i's transfer of chunk k (NULL for the local step, or once released). */
static crux_tl_xfer_t **fold_slot(call_t *c, unsigned k, unsigned i)
{
    int q = fold_peer(c, i);
    return q == c->g->rank ? NULL : &c->rs_recv[(size_t)q * c->kmax + k];
}

/* Issue step i of chunk k; 'before' is step i-1's transfer, if it had one:
 * the engine lands this step's piece only once that one is done. */
static void fold_step(call_t *c, unsigned k, unsigned i, const crux_tl_xfer_t *before)
{
    crux_dev_group_t *g = c->g;
    int r = g->rank;
    int q = fold_peer(c, i);
    size_t at = chunk_first(c, r, k) * c->esize, n = chunk_count(c, r, k);
    uint8_t *acc = fold_target(c, k);
    if (q == r) {
        c->cpu(acc, acc, c->src + at, n);
        return;
    }
    crux_tl_xfer_t **slot = fold_slot(c, k, i);
    if (r >= 2 && i == 0) {
        recv_chunk(c, g->rs[q], slot, acc, r, k);
        return;
    }
    crux_tl_reduce_t red = {
        .fn = c->cpu, .esize = c->esize, .incoming_first = i == 0 && r == 1,
        .local = i == 0 ? c->src + at : acc, .after = before,
    };
    crux_tl_xfer_t *x = NULL;
    crux_status_t st = crux_tl_recv_reduce(g->rs[q], acc, n * c->esize, &red, NULL, &x);
    post(c, st, slot, x);
}

/* 1 once every step of chunk k is issued and landed; its transfers are
 * then retired together (a chained step refers to the one before it). */
static int fold_done(call_t *c, unsigned k)
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
            finished(c, x);
        }
    }
    return 1;
}

/* Issue what every started chunk can: a chunk's steps go out at once,
 * chained, except the local step, which waits for the landing before it.
 * A chunk issues a step only after the chunk before it did, so each pair's
 * receives are posted in chunk order (the i-th receive matches the peer's
 * i-th send). */
static unsigned fold_chunks(call_t *c)
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
            memcpy(c->dst + chunk_first(c, c->g->rank, k) * c->esize, fold_target(c, k),
                   chunk_count(c, c->g->rank, k) * c->esize);
        }
        events++;
    }
    return events;
}

/* --- one step of the state machine -------------------------------------------------- */

static unsigned post_scatter_receives(call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned events = 0;
    while (c->do_rs && c->rs_posted < c->chunks[g->rank] &&
           c->rs_posted < c->reduced + g->config.window) {
        for (int q = 0; !c->fold && q < g->size; q++) {   /* folds post step by step */
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

static unsigned launch_reductions(call_t *c)
{
    crux_dev_group_t *g = c->g;
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
static unsigned send_reduced(call_t *c)
{
    crux_dev_group_t *g = c->g;
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
        for (int q = 0; c->do_ag && q < g->size; q++) {
            if (q != g->rank) {
                send_chunk(c, g->ag[q], &c->ag_send[q * c->kmax + c->reduced], c->dst, g->rank,
                           c->reduced);
            }
        }
        c->reduced++;
        events++;
    }
    return events;
}

/* Gathered chunks land straight in the result, in each peer's order. */
static void post_gather_receives(call_t *c)
{
    crux_dev_group_t *g = c->g;
    for (int q = 0; c->do_ag && q < g->size; q++) {
        for (unsigned k = 0; q != g->rank && k < c->chunks[q]; k++) {
            recv_chunk(c, g->ag[q], &c->ag_recv[q * c->kmax + k],
                       c->dst + chunk_first(c, q, k) * c->esize, q, k);
        }
    }
}

static int complete(const call_t *c)
{
    return c->reduced >= c->chunks[c->g->rank] && c->pending == 0;
}

static unsigned step(call_t *c)
{
    crux_dev_group_t *g = c->g;
    unsigned events = crux_tl_engine_progress(g->engine);
    events += post_scatter_receives(c);
    events += c->fold ? fold_chunks(c) : launch_reductions(c);
    events += send_reduced(c);
    for (size_t i = 0; i < (size_t)g->size * c->kmax; i++) {
        finished(c, &c->rs_send[i]);
        finished(c, &c->ag_send[i]);
        finished(c, &c->ag_recv[i]);
    }
    return events;
}

/* --- a call --------------------------------------------------------------------------- */

static crux_status_t check(call_t *c, const void *sbuf, void *rbuf)
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
        c->fold = c->device < 0 && 64 % c->esize == 0;
        for (int q = 0; c->fold && q < c->g->size; q++) {
            c->fold = q == c->g->rank || crux_tl_pair_reduces(c->g->rs[q]);
        }
    }
    size_t stream_from = c->g->config.stream_min_bytes;
    c->stream = c->device < 0 && stream_from > 0 && c->count * c->esize >= stream_from;
    (void)sbuf;
    return CRUX_OK;
}

static crux_status_t setup(call_t *c)
{
    crux_dev_group_t *g = c->g;
    c->chunk = g->config.chunk_size / c->esize > 0 ? g->config.chunk_size / c->esize : 1;
    c->chunks = calloc((size_t)g->size, sizeof(*c->chunks));
    if (c->chunks == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    for (int p = 0; p < g->size; p++) {
        size_t first, length;
        crux_dev_shard(g, c->count, p, &first, &length);
        c->chunks[p] = (unsigned)((length + c->chunk - 1) / c->chunk);
        c->kmax = c->chunks[p] > c->kmax ? c->chunks[p] : c->kmax;
    }
    size_t slots = (size_t)g->size * c->kmax;
    c->rs_send = calloc(slots, sizeof(*c->rs_send));
    c->rs_recv = calloc(slots, sizeof(*c->rs_recv));
    c->ag_send = calloc(slots, sizeof(*c->ag_send));
    c->ag_recv = calloc(slots, sizeof(*c->ag_recv));
    if (c->rs_send == NULL || c->rs_recv == NULL || c->ag_send == NULL || c->ag_recv == NULL) {
        return CRUX_ERR_NO_MEMORY;
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
    if (c->fold) {
        c->folded = calloc(c->chunks[g->rank] + 1u, sizeof(*c->folded));
        if (c->folded == NULL) {
            return CRUX_ERR_NO_MEMORY;
        }
    }
    return CRUX_OK;
}

static void teardown(call_t *c)
{
    free(c->chunks);
    free(c->rs_send);
    free(c->rs_recv);
    free(c->ag_send);
    free(c->ag_recv);
    free(c->folded);
}

static crux_status_t run(crux_dev_group_t *g, const void *sbuf, void *rbuf, size_t count,
                         crux_dtype_t dtype, crux_op_t op, int do_rs, int do_ag)
{
    call_t c = {
        .g = g, .esize = crux_dtype_size(dtype), .dtype = dtype, .op = op, .count = count,
        .src = sbuf != NULL ? sbuf : rbuf, .dst = rbuf, .do_rs = do_rs, .do_ag = do_ag,
    };
    c.in_place = c.src == c.dst;
    crux_status_t st = check(&c, sbuf, rbuf);
    if (st != CRUX_OK || count == 0) {
        return st;
    }
    if (g->size == 1) {
        return c.in_place || !do_rs ? CRUX_OK : crux_dev_copy(rbuf, c.src, count * c.esize);
    }
    st = setup(&c);
    if (st != CRUX_OK) {
        teardown(&c);
        return st;
    }
    for (int q = 0; do_rs && q < g->size; q++) {
        for (unsigned k = 0; q != g->rank && k < c.chunks[q]; k++) {
            send_chunk(&c, g->rs[q], &c.rs_send[q * c.kmax + k], c.src, q, k);
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
    teardown(&c);
    return c.status;
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

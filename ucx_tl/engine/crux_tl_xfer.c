/* Transfers: posting, the sender's side of the protocol, completion, the
 * peer gone, the progress of every pair, and the caller's view of a
 * transfer.  The receiver's matching and planning are in crux_tl_match.c, the
 * staged slots in crux_tl_shm_slots.c, issuing chunks and landing in core/crux_tl_issue.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crux_copy.h"
#include "common/crux_idle.h"
#include "common/crux_proc.h"
#include "ucx_tl/cuda/crux_tl_cuda_internal.h"
#include "ucx_tl/engine/crux_tl_engine_internal.h"

#define WAIT_SPINS 64u /* crux_tl_xfer_wait's idle polls before it yields the core */

static crux_status_t post(crux_tl_pair_t *pair, int is_send, void *buffer, size_t bytes,
                          const crux_tl_xfer_params_t *params, crux_tl_xfer_t **xfer_p)
{
    if (buffer == NULL && bytes > 0) {
        return CRUX_ERR_INVALID;
    }
    crux_tl_xfer_t *x = crux_tl_xfer_get(pair->engine);
    if (x == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    x->pair = pair;
    x->is_send = is_send;
    x->buffer = buffer;
    x->bytes = bytes;
    x->mem = bytes > 0 ? crux_tl_mem_query(buffer)
                       : (crux_tl_mem_t){ .type = CRUX_TL_MEM_HOST, .device = -1 };
    if (params != NULL) {
        x->params = *params;
    }
    x->seq = is_send ? pair->next_send++ : pair->next_recv++;
    x->state = XFER_QUEUED;
    x->status = CRUX_INPROGRESS;
    crux_tl_xfer_t **tail = is_send ? &pair->sends : &pair->recvs;
    while (*tail != NULL) {
        tail = &(*tail)->next;
    }
    *tail = x;
    *xfer_p = x;
    return CRUX_OK;
}

crux_status_t crux_tl_send(crux_tl_pair_t *pair, const void *buffer, size_t bytes,
                           const crux_tl_xfer_params_t *params, crux_tl_xfer_t **xfer_p)
{
    return post(pair, 1, (void *)buffer, bytes, params, xfer_p);
}

crux_status_t crux_tl_recv(crux_tl_pair_t *pair, void *buffer, size_t bytes,
                           const crux_tl_xfer_params_t *params, crux_tl_xfer_t **xfer_p)
{
    return post(pair, 0, buffer, bytes, params, xfer_p);
}

/* --- the sender ------------------------------------------------------------ */

/* A small host send goes out eagerly when the pair has shm slots: one
 * stripe over shm, staged from now on. */
static int start_eager(crux_tl_pair_t *pair, crux_tl_xfer_t *x)
{
    if (crux_tl_pair_channel(pair, CRUX_TL_CHAN_SHM) < 0 || x->bytes == 0 ||
        x->bytes > pair->engine->config.eager_max || x->mem.type != CRUX_TL_MEM_HOST) {
        return 0;
    }
    crux_tl_shm_eager_run(pair, x->bytes, &x->run[x->nruns++]);
    return 1;
}

static void publish_send(crux_tl_pair_t *pair, crux_tl_xfer_t *x)
{
    unsigned k = (unsigned)(x->seq % CRUX_TL_RING);
    crux_tl_wire_send_t *w = &pair->mine->send[k];
    memset(&w->buf, 0, sizeof(w->buf));
    w->buf.addr = (uintptr_t)x->buffer;
    w->buf.bytes = x->bytes;
    w->buf.mem_type = (int32_t)x->mem.type;
    w->buf.device = x->mem.device;
    if (x->mem.type == CRUX_TL_MEM_CUDA &&
        crux_tl_cuda_export(pair->engine, x->buffer, &w->buf) != CRUX_OK) {
        w->buf.mem_type = -1; /* the receiver refuses it */
    }
    /* another process's receive may have our cuda-host stripes staged by us */
    w->dstage = (uint32_t)(w->buf.mem_type == CRUX_TL_MEM_CUDA &&
                           crux_tl_dstage_offer(pair, x->mem.device));
    /* a shared buffer goes in one copy by the receiver: staging it eagerly
     * would copy twice */
    int shared = x->mem.type == CRUX_TL_MEM_HOST && x->bytes > 0 &&
                 crux_tl_shared_describe(pair->engine, x->buffer, x->bytes, &w->buf);
    w->eager = (uint32_t)(!shared && start_eager(pair, x));
    pair->send_busy[k] = 1;
    mp_store(&w->seq, x->seq + 1);
    /* the receiver pulls a shared buffer itself (crux_tl_match.c): no plan
     * to wait for, nothing to push; the receiver's done word completes it */
    x->state = w->eager || shared ? XFER_ACTIVE : XFER_PUBLISHED;
}

/* Take the receiver's plan: the stripes this side pushes become its runs. */
static int take_plan(crux_tl_pair_t *pair, crux_tl_xfer_t *x)
{
    const crux_tl_wire_recv_t *w = &pair->theirs->recv[x->seq % CRUX_TL_RING];
    if (mp_load(&w->seq) != x->seq + 1) {
        return 0;
    }
    x->peer_addr = w->buf.addr;
    x->state = XFER_ACTIVE;
    if (w->status != CRUX_OK) {
        crux_tl_xfer_fail(x, (crux_status_t)w->status);
        return 1;
    }
    int pushes = 0;
    for (unsigned i = 0; i < w->nstripes && i < CRUX_TL_MAX_PATHS; i++) {
        pushes |= w->stripe[i].kind == CRUX_TL_CHAN_CMA_PUT ||
                  w->stripe[i].kind == CRUX_TL_CHAN_SHM ||
                  crux_tl_dstage_kind(pair, (crux_tl_chan_kind_t)w->stripe[i].kind);
    }
    uint64_t open_claim = CLAIM_OPEN;
    if (pushes && !__atomic_compare_exchange_n((uint64_t *)&w->claim, &open_claim, CLAIM_SENDER, 0,
                                               __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        return 1; /* the receiver took our stripes over: nothing to push */
    }
    for (unsigned i = 0; i < w->nstripes && i < CRUX_TL_MAX_PATHS; i++) {
        const crux_tl_wire_stripe_t *s = &w->stripe[i];
        int staged = crux_tl_dstage_kind(pair, (crux_tl_chan_kind_t)s->kind);
        if (s->kind != CRUX_TL_CHAN_CMA_PUT && s->kind != CRUX_TL_CHAN_SHM && !staged) {
            continue; /* the receiver's */
        }
        crux_tl_run_t *run = &x->run[x->nruns++];
        memset(run, 0, sizeof(*run));
        run->kind = (crux_tl_chan_kind_t)s->kind;
        int put = crux_tl_pair_channel(pair, CRUX_TL_CHAN_CMA_PUT);
        run->chan = s->kind == CRUX_TL_CHAN_CMA_PUT && put >= 0 ? pair->chan[put] : NULL;
        run->offset = s->offset;
        run->bytes = s->bytes;
        run->chunk = s->chunk;
        run->depth = s->depth;
        if ((s->kind == CRUX_TL_CHAN_CMA_PUT && (run->chan == NULL || !run->chan->usable)) ||
            (staged && !crux_tl_dstage_run_ok(pair, x, run))) {
            crux_tl_xfer_fail(x, CRUX_ERR_INVALID); /* a plan this side cannot follow */
        }
    }
    return 1;
}

static int runs_drained(const crux_tl_xfer_t *x)
{
    for (unsigned i = 0; i < x->nruns; i++) {
        const crux_tl_run_t *run = &x->run[i];
        if (run->inflight > 0) {
            return 0;
        }
        if (run->kind == CRUX_TL_CHAN_SHM) {
            /* every staged chunk, even after a failure: the slots are a FIFO */
            if (run->landed < run->bytes) {
                return 0;
            }
        } else if (x->is_send && crux_tl_dstage_kind(x->pair, run->kind)) {
            /* staged through our pinned stage: every chunk copied in, or
             * a failure (what was in flight went out: inflight above) */
            if (run->landed < run->bytes && !x->failed) {
                return 0;
            }
        } else if (run->chan != NULL && run->landed < run->bytes && !x->failed) {
            return 0;
        }
        /* a put seen from the receiver: the sender's send_done tells */
    }
    return 1;
}

static void finish(crux_tl_pair_t *pair, crux_tl_xfer_t *x, crux_status_t status)
{
    unsigned k = (unsigned)(x->seq % CRUX_TL_RING);
    crux_tl_xfer_t **list = x->is_send ? &pair->sends : &pair->recvs;
    while (*list != x) {
        list = &(*list)->next;
    }
    *list = x->next;
    if (x->is_send) {
        pair->send_busy[k] = 0;
    } else {
        pair->recv_busy[k] = 0;
        x->stats.elapsed = crux_tl_now() - x->t_matched;
        for (unsigned i = 0; i < x->nruns; i++) {
            if (x->run[i].kind != CRUX_TL_CHAN_CMA_PUT) {
                x->stats.stripe[i].bytes = x->run[i].landed;
                x->stats.stripe[i].chunks = x->run[i].chunks;
            } else if (status == CRUX_OK) {
                x->stats.stripe[i].bytes = x->run[i].bytes; /* landed by the sender */
            }
        }
    }
    x->status = status;
    x->state = XFER_DONE;
    crux_tl_cuda_import_done(x->import); /* the mapping may be evicted now */
    x->import = NULL;
    if (x->released) {
        crux_tl_xfer_put(pair->engine, x);
    }
}

static unsigned sender_complete(crux_tl_pair_t *pair, crux_tl_xfer_t *x)
{
    unsigned k = (unsigned)(x->seq % CRUX_TL_RING);
    if (!x->done_published) {
        if (!runs_drained(x)) {
            return 0;
        }
        crux_tl_wire_done_t *d = &pair->mine->send_done[k];
        d->status = x->failed ? x->status : CRUX_OK;
        mp_store(&d->seq, x->seq + 1);
        x->done_published = 1;
    }
    const crux_tl_wire_done_t *r = &pair->theirs->recv_done[k];
    if (mp_load(&r->seq) < x->seq + 1) {
        return 0;
    }
    finish(pair, x, x->failed ? x->status : (crux_status_t)r->status);
    return 1;
}

/* --- the receiver ------------------------------------------------------------ */

static unsigned receiver_complete(crux_tl_pair_t *pair, crux_tl_xfer_t *x)
{
    unsigned k = (unsigned)(x->seq % CRUX_TL_RING);
    if (!runs_drained(x)) {
        return 0;
    }
    crux_status_t status = x->failed ? x->status : CRUX_OK;
    if (x->peer_pushes) {
        const crux_tl_wire_done_t *s = &pair->theirs->send_done[k];
        if (mp_load(&s->seq) < x->seq + 1) {
            return 0;
        }
        if (status == CRUX_OK) {
            status = (crux_status_t)s->status;
        }
    }
    if (x->params.stream) {
        crux_copy_fence(); /* the landed bytes before the word that says so */
    }
    crux_tl_wire_done_t *d = &pair->mine->recv_done[k];
    d->status = status;
    mp_store(&d->seq, x->seq + 1);
    finish(pair, x, status);
    return 1;
}

/* The sender has not taken its stripes although ours are done and twice
 * the predicted time has passed: take them over as cma gets. */
static unsigned steal(crux_tl_pair_t *pair, crux_tl_xfer_t *x)
{
    if (x->sender_runs == 0 || x->steal_index < 0 || x->failed ||
        crux_tl_now() - x->t_matched < 2 * x->stats.predicted + 20e-6) {
        return 0;
    }
    for (unsigned i = 0; i < x->nruns; i++) {
        if (x->run[i].chan != NULL &&
            (x->run[i].inflight > 0 || x->run[i].landed < x->run[i].bytes)) {
            return 0;
        }
    }
    uint64_t open_claim = CLAIM_OPEN;
    if (!__atomic_compare_exchange_n(&pair->mine->recv[x->seq % CRUX_TL_RING].claim, &open_claim,
                                     CLAIM_RECEIVER, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        x->sender_runs = 0; /* the sender is on it */
        return 0;
    }
    crux_tl_chan_t *get = pair->chan[x->steal_index];
    for (unsigned i = 0; i < x->nruns; i++) {
        crux_tl_run_t *run = &x->run[i];
        if (run->chan == NULL) { /* a put or shm stripe: nothing of it was copied */
            run->kind = CRUX_TL_CHAN_CMA_GET;
            run->chan = get;
            run->index = (unsigned)x->steal_index;
            run->depth = get->attr.max_depth;
            run->chunk = run->chunk < get->attr.max_chunk ? run->chunk : get->attr.max_chunk;
            run->issued = run->landed = run->chunks = 0;
            x->stats.stripe[i].channel = run->index;
        }
    }
    x->sender_runs = 0;
    x->peer_pushes = 0;
    return 1;
}

/* The peer is gone: everything pending on the pair fails once nothing of
 * ours is in flight any more (chunks still reference the transfers). */
static unsigned peer_gone(crux_tl_pair_t *pair)
{
    unsigned events = 0;
    crux_tl_xfer_t *lists[2] = { pair->sends, pair->recvs };
    for (int l = 0; l < 2; l++) {
        for (crux_tl_xfer_t *x = lists[l], *next; x != NULL; x = next) {
            next = x->next;
            int inflight = 0;
            for (unsigned i = 0; i < x->nruns; i++) {
                inflight += (int)x->run[i].inflight;
            }
            crux_tl_xfer_fail(x, CRUX_ERR_PEER);
            if (!inflight) {
                finish(pair, x, CRUX_ERR_PEER);
                events++;
            }
        }
    }
    return events;
}

/* --- progress ------------------------------------------------------------------ */

/* One look at every transfer of the pair and its channels. */
static unsigned poll_pair(crux_tl_pair_t *pair)
{
    unsigned events = 0;
    for (crux_tl_xfer_t *x = pair->sends; x != NULL; x = x->next) {
        if (x->state == XFER_QUEUED && !pair->send_busy[x->seq % CRUX_TL_RING]) {
            publish_send(pair, x);
            events++;
        }
        if (x->state == XFER_PUBLISHED) {
            events += (unsigned)take_plan(pair, x);
        }
        if (x->state == XFER_ACTIVE) {
            events += crux_tl_xfer_issue(pair, x);
        }
    }
    for (crux_tl_xfer_t *x = pair->recvs; x != NULL; x = x->next) {
        if (x->state == XFER_QUEUED) {
            crux_tl_match(pair, x);
            events += x->state != XFER_QUEUED;
        }
        if (x->state == XFER_ACTIVE) {
            events += steal(pair, x);
            events += crux_tl_xfer_issue(pair, x);
        }
    }
    for (unsigned i = 0; i < pair->nhost; i++) {
        if (pair->chan[i]->head != NULL) {
            events += crux_tl_chan_poll(pair->chan[i]);
        }
    }
    events += crux_tl_shm_stage(pair) + crux_tl_shm_drain(pair);
    events += crux_tl_dstage_push(pair) + crux_tl_dstage_pull(pair);
    for (crux_tl_xfer_t *x = pair->sends, *next; x != NULL; x = next) {
        next = x->next;
        if (x->state == XFER_ACTIVE) {
            events += sender_complete(pair, x);
        }
    }
    for (crux_tl_xfer_t *x = pair->recvs, *next; x != NULL; x = next) {
        next = x->next;
        if (x->state == XFER_ACTIVE) {
            events += receiver_complete(pair, x);
        }
    }
    return events;
}

unsigned crux_tl_pair_progress(crux_tl_pair_t *pair)
{
    if (pair->sends == NULL && pair->recvs == NULL) {
        return 0;
    }
    unsigned events = poll_pair(pair);
    if (events > 0) {
        pair->idle_polls = 0;
    } else if (++pair->idle_polls % CRUX_IDLE_CHECK_POLLS == 0 && !crux_tl_peer_alive(pair)) {
        /* what the peer published before it exited (possibly since our
         * look) still counts: one more look before its transfers fail */
        events = poll_pair(pair);
        if (events == 0) {
            events = peer_gone(pair);
        }
    }
    return events;
}

unsigned crux_tl_engine_progress(crux_tl_engine_t *e)
{
    unsigned events = 0;
    for (crux_tl_pair_t *pair = e->pairs; pair != NULL; pair = pair->next) {
        events += crux_tl_pair_progress(pair);
    }
    return events + crux_tl_cuda_progress(e);
}

/* --- the caller's view ------------------------------------------------------------ */

int crux_tl_xfer_done(const crux_tl_xfer_t *x)
{
    return x->state == XFER_DONE;
}

crux_status_t crux_tl_xfer_status(const crux_tl_xfer_t *x)
{
    return x->state == XFER_DONE ? x->status : CRUX_INPROGRESS;
}

int crux_tl_xfer_left_to_peer(const crux_tl_xfer_t *x)
{
    return x->state == XFER_DONE || (x->is_send && x->state == XFER_ACTIVE && x->nruns == 0 &&
                                     x->mem.type == CRUX_TL_MEM_HOST);
}

/* The wait loops' policy (common/crux_idle.h), never sleeping: a
 * transfer's chunks ring no doorbell (only lane posts do), so a sleep would
 * end only at its timeout.  After a few idle spins the core is yielded, as
 * the peer may share it.  A peer that died fails the transfer from the
 * progress (crux_tl_pair_progress checks its liveness every
 * CRUX_IDLE_CHECK_POLLS idle polls). */
crux_status_t crux_tl_xfer_wait(crux_tl_xfer_t *x)
{
    crux_idle_t idle = crux_idle_start(WAIT_SPINS);
    while (x->state != XFER_DONE) {
        if (crux_tl_engine_progress(x->pair->engine) > 0) {
            crux_idle_reset(&idle);
        } else {
            (void)crux_idle_poll(&idle, 0);
        }
    }
    return x->status;
}

void crux_tl_xfer_release(crux_tl_xfer_t *x)
{
    if (x == NULL) {
        return;
    }
    if (x->state == XFER_DONE) {
        crux_tl_xfer_put(x->pair->engine, x);
    } else {
        x->released = 1; /* freed by the engine when done */
    }
}
const crux_tl_xfer_stats_t *crux_tl_xfer_stats(const crux_tl_xfer_t *x)
{
    return &x->stats;
}

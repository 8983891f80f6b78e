/* cuda-host between two processes, staged by the sender: the sender's GPU
 * copies each chunk of the stripe into a slot of the sender's stage (pinned
 * host memory in a shared segment), the receiver's GPU copies it out into
 * the receiver's buffer.  Each process issues the copy of its own GPU, so
 * neither needs the other's visible (one GPU per rank through
 * CUDA_VISIBLE_DEVICES), and each GPU's link carries the stripe once.
 *
 * The slots of one direction form a FIFO shared by the pair's device sends,
 * as the shm channel's do (crux_tl_shm_slots.c): chunk n goes to slot
 * n % CRUX_TL_DSTAGE_SLOTS once the receiver acknowledged chunk n - slots;
 * the sender publishes a slot (dslot[k].full = n + 1) once its copy into it
 * is done, naming the transfer and the place, and the receiver acknowledges
 * it (dack[k].consumed = n + 1) once its copy out of it is done.  Both
 * sides publish in chunk order: the copies of one direction run on one
 * stream of a device (crux_tl_cuda_copy_channel), in order, and the words
 * advance over the chunks that are done.
 *
 * The stage is made by the sender at its first device send to the peer
 * (CRUX_TL_DSTAGE_SLOTS slots of CRUX_TL_DSTAGE_SLOT bytes) and offered in
 * the send's ring entry; the receiver maps and pins it when it plans a
 * transfer that offers it, and plans a cuda-host stripe only then.  What
 * the receiver reads of the sender's words is checked before use: the slot
 * must name a place inside the stripe, next after what landed.  A sender
 * that fails stops staging and says so in its send_done, which fails the
 * receive; one that dies fails it through the pair's liveness check. */
#include <string.h>

#include "ucx_tl/cuda/crux_tl_cuda_internal.h"
#include "ucx_tl/engine/crux_tl_engine_internal.h"

#define SLOTS       CRUX_TL_DSTAGE_SLOTS
#define SLOT        ((size_t)CRUX_TL_DSTAGE_SLOT)
#define STAGE_BYTES ((size_t)SLOTS * SLOT)

int crux_tl_dstage_kind(const crux_tl_pair_t *pair, crux_tl_chan_kind_t kind)
{
    return !pair->loopback && kind == CRUX_TL_CHAN_CUDA_HOST;
}

/* The receiver's run of a sender-staged stripe holding byte 'at': its
 * table entry issues nothing (crux_tl_cuda_chan.c, make_staged_entry). */
static crux_tl_run_t *pulled_run(crux_tl_xfer_t *x, uint64_t at, unsigned *index)
{
    for (unsigned i = 0; i < x->nruns; i++) {
        crux_tl_run_t *run = &x->run[i];
        if (crux_tl_dstage_kind(x->pair, run->kind) && run->chan != NULL &&
            run->chan->ops->issue == NULL && at >= run->offset && at - run->offset < run->bytes) {
            *index = i;
            return run;
        }
    }
    return NULL;
}

static int has_pulled_run(crux_tl_xfer_t *x)
{
    for (unsigned i = 0; i < x->nruns; i++) {
        if (crux_tl_dstage_kind(x->pair, x->run[i].kind) && x->run[i].chan != NULL) {
            return 1;
        }
    }
    return 0;
}

/* --- the stage ------------------------------------------------------------------ */

int crux_tl_dstage_offer(crux_tl_pair_t *pair, int device)
{
    crux_tl_engine_t *e = pair->engine;
    if (pair->loopback || !(e->config.kinds & CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_HOST))) {
        return 0;
    }
    if (pair->dstage_seg != NULL || pair->dstage_device < 0) {
        return pair->dstage_seg != NULL;
    }
    crux_tl_seg_t *seg = NULL;
    pair->dstage_device = -1; /* unless all goes well: not tried again */
    if (crux_tl_seg_key_size(e->context) > CRUX_TL_SHARED_KEY_MAX ||
        crux_tl_seg_alloc(e->context, STAGE_BYTES, &seg) != CRUX_OK) {
        return 0;
    }
    if (crux_tl_seg_key_pack(seg, pair->mine->dstage_key) != CRUX_OK ||
        crux_tl_cuda_pin(device, crux_tl_seg_ptr(seg), STAGE_BYTES) != CRUX_OK) {
        crux_tl_seg_free(seg);
        return 0;
    }
    pair->dstage_seg = seg;
    pair->dstage_base = crux_tl_seg_ptr(seg);
    pair->dstage_device = device;
    mp_store(&pair->mine->dstage_ready, 1); /* the key first, then the send that offers it */
    return 1;
}

int crux_tl_dstage_attach(crux_tl_pair_t *pair, int device)
{
    crux_tl_context_t *ctx = pair->engine->context;
    if (pair->dstage_rseg != NULL || pair->dstage_peer_device < 0) {
        return pair->dstage_rseg != NULL;
    }
    if (mp_load(&pair->theirs->dstage_ready) != 1 ||
        crux_tl_seg_key_size(ctx) > CRUX_TL_SHARED_KEY_MAX) {
        return 0;
    }
    uint8_t key[CRUX_TL_SHARED_KEY_MAX];
    memcpy(key, pair->theirs->dstage_key, sizeof(key)); /* the peer's words: copied once */
    crux_tl_rseg_t *rseg = NULL;
    pair->dstage_peer_device = -1; /* unless all goes well: not tried again */
    if (crux_tl_rseg_attach(ctx, key, &rseg) != CRUX_OK) {
        return 0;
    }
    if (crux_tl_rseg_length(rseg) < STAGE_BYTES ||
        crux_tl_cuda_pin(device, crux_tl_rseg_ptr(rseg), STAGE_BYTES) != CRUX_OK) {
        crux_tl_rseg_detach(rseg);
        return 0;
    }
    pair->dstage_rseg = rseg;
    pair->dstage_peer = crux_tl_rseg_ptr(rseg);
    pair->dstage_peer_device = device;
    return 1;
}

void crux_tl_dstage_release(crux_tl_pair_t *pair)
{
    if (pair->dstage_seg != NULL) {
        mp_store(&pair->mine->dstage_ready, 0);
        crux_tl_cuda_unpin(pair->dstage_device, pair->dstage_base);
        crux_tl_seg_free(pair->dstage_seg);
        pair->dstage_seg = NULL;
    }
    if (pair->dstage_rseg != NULL) {
        crux_tl_cuda_unpin(pair->dstage_peer_device, (void *)pair->dstage_peer);
        crux_tl_rseg_detach(pair->dstage_rseg);
        pair->dstage_rseg = NULL;
    }
}

int crux_tl_dstage_run_ok(const crux_tl_pair_t *pair, const crux_tl_xfer_t *x,
                          const crux_tl_run_t *run)
{
    return pair->dstage_seg != NULL && x->mem.type == CRUX_TL_MEM_CUDA && run->chunk > 0 &&
           run->chunk <= SLOT && run->offset <= x->bytes && run->bytes <= x->bytes - run->offset;
}

/* --- the sender ------------------------------------------------------------------ */

/* A chunk's copy into its slot is done: publish the slots done, in order. */
static void staged(crux_tl_chunk_t *c)
{
    crux_tl_pair_t *pair = c->xfer->pair;
    crux_tl_chunk_settle(c); /* a failure is said in send_done; the slot still goes */
    pair->dtx_done[c->staged % SLOTS] = c->staged + 1;
    while (pair->dfull_tx < pair->dstaged_tx &&
           pair->dtx_done[pair->dfull_tx % SLOTS] == pair->dfull_tx + 1) {
        mp_store(&pair->mine->dslot[pair->dfull_tx % SLOTS].full, pair->dfull_tx + 1);
        pair->dfull_tx++;
    }
    crux_tl_chunk_put(pair->engine, c);
}

static const crux_tl_chunk_owner_t stage_owner = { NULL, staged }; /* no landing here */

/* Copy what the FIFO has room for of the run; 0 when it (or the copy
 * channel) is full. */
static int stage_run(crux_tl_pair_t *pair, crux_tl_xfer_t *x, unsigned i, unsigned *events)
{
    crux_tl_run_t *run = &x->run[i];
    crux_tl_chan_t *copy = crux_tl_cuda_copy_channel(pair->engine, x->mem.device, 1);
    if (copy == NULL) {
        crux_tl_xfer_fail(x, CRUX_ERR_NO_RESOURCE);
        return 1;
    }
    while (run->issued < run->bytes && !x->failed) {
        uint64_t n = pair->dstaged_tx;
        unsigned k = (unsigned)(n % SLOTS);
        if ((n >= SLOTS && mp_load(&pair->theirs->dack[k].consumed) < n - SLOTS + 1) ||
            copy->inflight >= copy->attr.max_depth) {
            return 0;
        }
        crux_tl_chunk_t *c = crux_tl_chunk_get(pair->engine);
        if (c == NULL) {
            crux_tl_xfer_fail(x, CRUX_ERR_NO_MEMORY);
            return 1;
        }
        size_t at = run->offset + run->issued;
        c->owner = &stage_owner;
        c->xfer = x;
        c->run = i;
        c->length = run->bytes - run->issued < run->chunk ? run->bytes - run->issued : run->chunk;
        c->src = x->buffer + at;
        c->dst = pair->dstage_base + (size_t)k * SLOT;
        c->staged = n;
        /* the slot is free (acknowledged): its words are read after full */
        crux_tl_wire_slot_t *slot = &pair->mine->dslot[k];
        slot->seq = x->seq;
        slot->offset = at;
        slot->bytes = c->length;
        crux_status_t st = crux_tl_chan_start(copy, c);
        if (st != CRUX_OK) {
            crux_tl_chunk_put(pair->engine, c);
            crux_tl_xfer_fail(x, st);
            return 1;
        }
        pair->dstaged_tx++;
        run->issued += c->length;
        run->inflight++;
        (*events)++;
    }
    return 1;
}

unsigned crux_tl_dstage_push(crux_tl_pair_t *pair)
{
    unsigned events = 0;
    for (crux_tl_xfer_t *x = pair->dstage_seg != NULL ? pair->sends : NULL; x != NULL;
         x = x->next) {
        for (unsigned i = 0; x->state == XFER_ACTIVE && i < x->nruns && !x->failed; i++) {
            crux_tl_run_t *run = &x->run[i];
            if (crux_tl_dstage_kind(pair, run->kind) && run->issued < run->bytes &&
                !stage_run(pair, x, i, &events)) {
                return events; /* full: later sends wait their turn */
            }
        }
    }
    return events;
}

/* --- the receiver ------------------------------------------------------------------ */

/* Acknowledge the slots landed (or dropped), in order. */
static void acknowledge(crux_tl_pair_t *pair)
{
    while (pair->dconsumed_rx < pair->ddrained_rx &&
           pair->drx_done[pair->dconsumed_rx % SLOTS] == pair->dconsumed_rx + 1) {
        mp_store(&pair->mine->dack[pair->dconsumed_rx % SLOTS].consumed, pair->dconsumed_rx + 1);
        pair->dconsumed_rx++;
    }
}

static void landed(crux_tl_chunk_t *c)
{
    crux_tl_pair_t *pair = c->xfer->pair;
    crux_tl_chunk_settle(c);
    pair->drx_done[c->staged % SLOTS] = c->staged + 1;
    acknowledge(pair);
    crux_tl_chunk_put(pair->engine, c);
}

static const crux_tl_chunk_owner_t land_owner = { NULL, landed }; /* the GPU lands it */

/* Start the copy of slot k (chunk n) into the receive; 0 when the copy
 * channel is full (try again later), 1 when started, -1 when the slot is
 * to be dropped (the receive failed). */
static int land_slot(crux_tl_pair_t *pair, crux_tl_xfer_t *x, uint64_t n, uint64_t offset,
                     uint64_t bytes)
{
    unsigned i;
    crux_tl_run_t *run = pulled_run(x, offset, &i);
    if (run == NULL || offset != run->offset + run->issued || bytes == 0 || bytes > SLOT ||
        bytes > run->bytes - run->issued) {
        crux_tl_xfer_fail(x, CRUX_ERR_INVALID); /* not the next piece of a staged stripe */
        return -1;
    }
    crux_tl_chan_t *copy = crux_tl_cuda_copy_channel(pair->engine, x->mem.device, 0);
    if (copy == NULL) {
        crux_tl_xfer_fail(x, CRUX_ERR_NO_RESOURCE);
        return -1;
    }
    if (copy->inflight >= copy->attr.max_depth) {
        return 0;
    }
    crux_tl_chunk_t *c = crux_tl_chunk_get(pair->engine);
    if (c == NULL) {
        crux_tl_xfer_fail(x, CRUX_ERR_NO_MEMORY);
        return -1;
    }
    c->owner = &land_owner;
    c->xfer = x;
    c->run = i;
    c->length = (size_t)bytes;
    c->src = pair->dstage_peer + (size_t)(n % SLOTS) * SLOT;
    c->dst = x->buffer + offset;
    c->staged = n;
    crux_status_t st = crux_tl_chan_start(copy, c);
    if (st != CRUX_OK) {
        crux_tl_chunk_put(pair->engine, c);
        crux_tl_xfer_fail(x, st);
        return -1;
    }
    run->issued += c->length;
    run->inflight++;
    return 1;
}

unsigned crux_tl_dstage_pull(crux_tl_pair_t *pair)
{
    unsigned events = 0;
    /* a sender that failed stops staging: its send_done says so */
    for (crux_tl_xfer_t *x = pair->recvs; x != NULL; x = x->next) {
        const crux_tl_wire_done_t *d = &pair->theirs->send_done[x->seq % CRUX_TL_RING];
        if (x->state == XFER_ACTIVE && !x->failed && has_pulled_run(x) &&
            mp_load(&d->seq) >= x->seq + 1 && d->status != CRUX_OK) {
            crux_tl_xfer_fail(x, d->status < 0 ? (crux_status_t)d->status : CRUX_ERR_PEER);
            events++;
        }
    }
    while (pair->dstage_rseg != NULL) {
        uint64_t n = pair->ddrained_rx;
        const crux_tl_wire_slot_t *slot = &pair->theirs->dslot[n % SLOTS];
        if (mp_load(&slot->full) != n + 1) {
            break;
        }
        uint64_t seq = slot->seq, offset = slot->offset, bytes = slot->bytes;
        crux_tl_xfer_t *x = pair->recvs;
        while (x != NULL && x->seq != seq) {
            x = x->next;
        }
        /* a slot of a receive that failed (or finished failing) lands nowhere */
        int started = x != NULL && x->state == XFER_ACTIVE && !x->failed
                          ? land_slot(pair, x, n, offset, bytes)
                          : -1;
        if (started == 0) {
            break;
        }
        if (started < 0) {
            pair->drx_done[n % SLOTS] = n + 1;
        }
        pair->ddrained_rx++;
        acknowledge(pair);
        events++;
    }
    return events;
}

/* The receiver's side of a match: once the sender's buffer is published,
 * pick the channels that fit both buffers, plan the transfer over them
 * (plans are cached per size), and publish the plan with our buffer. */
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/cuda/crux_tl_cuda_internal.h"
#include "ucx_tl/engine/crux_tl_engine_internal.h"

enum { RES_TX, RES_RX }; /* planner resource indices of the two CPUs */

static int receiver_acts(crux_tl_chan_kind_t kind)
{
    return kind != CRUX_TL_CHAN_CMA_PUT && kind != CRUX_TL_CHAN_SHM;
}

/* Host and model channels usable for a host to host transfer. */
static unsigned host_candidates(crux_tl_pair_t *pair, unsigned *index)
{
    unsigned n = 0;
    int peer_cma = (mp_load(&pair->theirs->caps) & CAP_CMA) != 0;
    for (unsigned i = 0; i < pair->nhost && n < CRUX_TL_MAX_PATHS; i++) {
        const crux_tl_chan_t *c = pair->chan[i];
        if ((c->attr.kind == CRUX_TL_CHAN_CMA_GET && !c->usable) ||
            (c->attr.kind == CRUX_TL_CHAN_CMA_PUT && !peer_cma) ||
            c->attr.kind == CRUX_TL_CHAN_SHM_DIRECT) { /* shared buffers only: plan_direct */
            continue;
        }
        index[n++] = i;
    }
    return n;
}

static void plan_input(const crux_tl_pair_t *pair, const unsigned *index, unsigned n,
                       unsigned max_paths, crux_tl_plan_input_t *in)
{
    memset(in, 0, sizeof(*in));
    in->npaths = n;
    in->path_cost = pair->engine->config.path_cost;
    in->granule = CRUX_TL_GRANULE;
    in->max_paths = max_paths;
    for (unsigned j = 0; j < n; j++) {
        const crux_tl_chan_attr_t *a = &pair->chan[index[j]]->attr;
        crux_tl_path_model_t *p = &in->path[j];
        p->bandwidth = a->bandwidth;
        p->latency = a->latency;
        p->chunk_cost = a->chunk_cost;
        p->hops = a->hops;
        p->max_depth = a->max_depth;
        p->max_chunk = a->max_chunk;
        /* On a loopback pair both CPUs are the same one. */
        if (a->resources & CRUX_TL_RES_TX_CPU) {
            p->resources |= 1u << RES_TX;
        }
        if (a->resources & CRUX_TL_RES_RX_CPU) {
            p->resources |= 1u << (pair->loopback ? RES_TX : RES_RX);
        }
        /* a CPU copies at the rate of the fastest channel it drives alone */
        for (unsigned r = RES_TX; r <= RES_RX; r++) {
            if ((p->resources & (1u << r)) && a->bandwidth > in->resource_rate[r]) {
                in->resource_rate[r] = a->bandwidth;
            }
        }
    }
}

static const crux_tl_plan_entry_t *plan_cached(crux_tl_pair_t *pair, const crux_tl_xfer_t *x,
                                               const unsigned *index, unsigned n,
                                               crux_status_t *status)
{
    uint32_t channels = 0;
    for (unsigned j = 0; j < n; j++) {
        channels |= 1u << index[j];
    }
    for (unsigned i = 0; i < CRUX_TL_PLAN_CACHE; i++) {
        const crux_tl_plan_entry_t *e = &pair->plans[i];
        if (e->npaths > 0 && e->bytes == x->bytes && e->channels == channels &&
            e->max_paths == x->params.max_paths && e->chunk == x->params.chunk &&
            e->generation == pair->generation) {
            return e;
        }
    }
    crux_tl_plan_entry_t *e = &pair->plans[pair->plan_next++ % CRUX_TL_PLAN_CACHE];
    crux_tl_plan_input_t in;
    plan_input(pair, index, n, x->params.max_paths, &in);
    e->npaths = 0;
    *status = crux_tl_plan(&in, x->bytes, &e->plan);
    if (*status != CRUX_OK) {
        return NULL;
    }
    for (unsigned j = 0; j < n; j++) {
        crux_tl_stripe_t *s = &e->plan.stripe[j];
        if (s->bytes > 0 && x->params.chunk > 0) {
            s->chunk =
                x->params.chunk < in.path[j].max_chunk ? x->params.chunk : in.path[j].max_chunk;
            s->depth = in.path[j].max_depth;
        }
        e->index[j] = index[j];
    }
    e->npaths = n;
    e->bytes = x->bytes;
    e->chunk = x->params.chunk;
    e->channels = channels;
    e->max_paths = x->params.max_paths;
    e->generation = pair->generation;
    return e;
}

/* A plan of the one run in x->run[0], and its stats. */
static void one_stripe(crux_tl_xfer_t *x)
{
    const crux_tl_run_t *run = &x->run[0];
    x->nruns = 1;
    x->stats.nstripes = 1;
    x->stats.stripe[0].channel = run->index;
    x->stats.stripe[0].chunk = run->chunk;
    x->stats.stripe[0].depth = run->depth;
}

/* The sender's buffer is shared: the receiver copies it out of its own
 * mapping, one copy, which no other host channel beats (they copy as much
 * or more, through the kernel or twice), so it goes over shm-direct alone.
 * 0 when that is not asked, or not possible here: then the receiver still
 * pulls it alone (cma get, model), as the sender of a shared buffer does
 * not wait for a plan. */
static int plan_direct(crux_tl_pair_t *pair, crux_tl_xfer_t *x, const crux_tl_wire_buf_t *sbuf,
                       crux_status_t *status)
{
    int index = crux_tl_pair_channel(pair, CRUX_TL_CHAN_SHM_DIRECT);
    uint32_t asked = x->params.channels;
    if (sbuf->shared_id == 0 || index < 0 || (asked != 0 && !(asked & (1u << index)))) {
        return 0;
    }
    *status = crux_tl_shared_import(pair, sbuf, &x->peer_mapped);
    if (*status != CRUX_OK) {
        return 1;
    }
    crux_tl_chan_t *chan = pair->chan[index];
    size_t chunk = x->params.chunk > 0 && x->params.chunk < chan->attr.max_chunk
                       ? x->params.chunk
                       : chan->attr.max_chunk;
    crux_tl_run_t *run = &x->run[0];
    memset(run, 0, sizeof(*run));
    run->kind = CRUX_TL_CHAN_SHM_DIRECT;
    run->chan = chan;
    run->index = (unsigned)index;
    run->bytes = x->bytes;
    run->chunk = chunk;
    run->depth = chan->attr.max_depth;
    one_stripe(x);
    x->stats.predicted = chan->attr.latency + (double)x->bytes / chan->attr.bandwidth;
    return 1;
}

/* Choose the channels and plan; fills the transfer's runs.  'dstage': the
 * sender offers to stage cuda-host stripes (crux_tl_dstage.c). */
static crux_status_t plan_transfer(crux_tl_pair_t *pair, crux_tl_xfer_t *x,
                                   const crux_tl_wire_buf_t *sbuf, int dstage)
{
    if (sbuf->bytes != x->bytes) {
        return CRUX_ERR_INVALID;
    }
    if (x->bytes == 0) {
        return CRUX_OK;
    }
    unsigned candidates[CRUX_TL_MAX_PATHS], index[CRUX_TL_MAX_PATHS], n = 0, all;
    if (sbuf->mem_type == CRUX_TL_MEM_HOST && x->mem.type == CRUX_TL_MEM_HOST) {
        crux_status_t st = CRUX_OK;
        if (plan_direct(pair, x, sbuf, &st)) {
            return st;
        }
        x->peer_mapped = (void *)(uintptr_t)sbuf->addr; /* for model channels */
        all = host_candidates(pair, candidates);
    } else if (sbuf->mem_type == CRUX_TL_MEM_CUDA && x->mem.type == CRUX_TL_MEM_CUDA) {
        crux_status_t st =
            crux_tl_cuda_import(pair, sbuf, x->mem.device, &x->peer_mapped, &x->import);
        if (st != CRUX_OK) {
            return st;
        }
        /* between processes, cuda-host only as the sender's stage */
        int staged = dstage && !pair->loopback && crux_tl_dstage_attach(pair, x->mem.device);
        all = crux_tl_cuda_channels(pair, sbuf->device_name, x->mem.device, staged, candidates);
    } else {
        return CRUX_ERR_UNSUPPORTED; /* mixed host and device, or no IPC handle */
    }
    /* A streamed landing needs a channel the receiver lands itself; without
     * one the transfer goes on with ordinary stores.  Channels whose figures
     * are a guess join only when nothing else may carry the transfer (the
     * configured kinds leave no other). */
    int streaming = x->params.stream, sure = 1;
    for (int pass = 0; pass < 3 && n == 0; pass++, streaming = 0, sure = pass < 2) {
        for (unsigned j = 0; j < all; j++) {
            const crux_tl_chan_t *c = pair->chan[candidates[j]];
            int kind_on = c->attr.kind == CRUX_TL_CHAN_MODEL ||
                          (pair->engine->config.kinds & CRUX_TL_KIND(c->attr.kind)) != 0;
            kind_on &= !streaming || crux_tl_chan_lands_by_receiver(c->attr.kind);
            kind_on &= sbuf->shared_id == 0 || receiver_acts(c->attr.kind); /* see publish_send */
            uint32_t asked = x->params.channels;
            kind_on &= !sure || asked != 0 || !c->attr.guessed || c->attr.calibrated;
            if (kind_on && (asked == 0 || (asked & (1u << candidates[j])))) {
                index[n++] = candidates[j];
            }
        }
    }
    if (n == 0) {
        return CRUX_ERR_UNSUPPORTED;
    }
    for (unsigned j = 0; j < n; j++) {
        if (pair->chan[index[j]]->attr.kind == CRUX_TL_CHAN_CMA_GET) {
            x->steal_index = (int)index[j]; /* host_candidates kept it: usable */
        }
    }
    crux_status_t status = CRUX_OK;
    const crux_tl_plan_entry_t *e = plan_cached(pair, x, index, n, &status);
    if (e == NULL) {
        return status;
    }
    x->stats.predicted = e->plan.makespan;
    for (unsigned j = 0; j < e->npaths; j++) {
        const crux_tl_stripe_t *s = &e->plan.stripe[j];
        if (s->bytes == 0) {
            continue;
        }
        crux_tl_chan_t *chan = pair->chan[e->index[j]];
        crux_tl_run_t *run = &x->run[x->nruns];
        memset(run, 0, sizeof(*run));
        run->kind = chan->attr.kind;
        run->chan = receiver_acts(run->kind) ? chan : NULL;
        run->index = e->index[j];
        run->offset = s->offset;
        run->bytes = s->bytes;
        run->chunk = s->chunk;
        run->depth = s->depth;
        /* the sender's copies: its send_done says how they went */
        x->peer_pushes |= run->kind == CRUX_TL_CHAN_CMA_PUT || crux_tl_dstage_kind(pair, run->kind);
        x->sender_runs += !receiver_acts(run->kind);
        x->stats.stripe[x->nruns].channel = e->index[j];
        x->stats.stripe[x->nruns].chunk = run->chunk;
        x->stats.stripe[x->nruns].depth = s->depth;
        x->nruns++;
    }
    x->stats.nstripes = x->nruns;
    return CRUX_OK;
}

/* An eager send's bytes are on their way through the shm slots already: the
 * plan is that one stripe, kept even when the receive cannot take them, so
 * the slots are drained (landing nothing) and the sender is not stuck. */
static crux_status_t plan_eager(crux_tl_pair_t *pair, crux_tl_xfer_t *x,
                                const crux_tl_wire_buf_t *sbuf)
{
    crux_tl_shm_eager_run(pair, sbuf->bytes, &x->run[0]);
    one_stripe(x);
    if (sbuf->bytes != x->bytes) {
        return CRUX_ERR_INVALID;
    }
    return x->mem.type == CRUX_TL_MEM_HOST ? CRUX_OK : CRUX_ERR_UNSUPPORTED;
}

void crux_tl_match(crux_tl_pair_t *pair, crux_tl_xfer_t *x)
{
    unsigned k = (unsigned)(x->seq % CRUX_TL_RING);
    const crux_tl_wire_send_t *w = &pair->theirs->send[k];
    /* one receive in CRUX_REACH_EVERY times its looks at the entry: the one
     * that finds it published brought the line from the peer's cache */
    int timed = !pair->loopback && x->seq % CRUX_REACH_EVERY == 0;
    uint64_t reach = 0;
    uint64_t seq = timed ? crux_reach_load(&w->seq, &reach) : mp_load(&w->seq);
    if (seq != x->seq + 1 || pair->recv_busy[k]) {
        return;
    }
    /* the entry's previous transfer: the sender must be done reading it */
    if (x->seq >= CRUX_TL_RING &&
        mp_load(&pair->theirs->send_done[k].seq) < x->seq + 1 - CRUX_TL_RING) {
        return;
    }
    if (timed) {
        crux_reach_sample(&pair->reach, reach, pair->engine->config.far_latency);
    }
    /* read in place: the sender rewrites the entry only once we are done
     * (recv_done), and the fields a plan needs share the seq's cache line */
    const crux_tl_wire_buf_t *sbuf = &w->buf;
    x->peer_addr = sbuf->addr;
    x->steal_index = -1;
    x->t_matched = crux_tl_now();
    int eager = w->eager != 0;
    crux_status_t status =
        eager ? plan_eager(pair, x, sbuf) : plan_transfer(pair, x, sbuf, w->dstage == 1);
    if (status != CRUX_OK) {
        x->failed = 1;
        x->status = status;
        x->nruns = eager ? x->nruns : 0;
        x->peer_pushes = 0;
    }

    crux_tl_wire_recv_t *r = &pair->mine->recv[k];
    memset(&r->buf, 0, sizeof(r->buf));
    r->buf.addr = (uintptr_t)x->buffer;
    r->buf.bytes = x->bytes;
    r->buf.mem_type = (int32_t)x->mem.type;
    r->buf.device = x->mem.device;
    r->status = status;
    r->nstripes = x->nruns;
    for (unsigned i = 0; i < x->nruns; i++) {
        r->stripe[i] = (crux_tl_wire_stripe_t){
            .kind = x->run[i].kind,
            .depth = x->run[i].depth,
            .offset = x->run[i].offset,
            .bytes = x->run[i].bytes,
            .chunk = x->run[i].chunk,
        };
    }
    r->claim = CLAIM_OPEN;
    pair->recv_busy[k] = 1;
    mp_store(&r->seq, x->seq + 1);
    x->state = XFER_ACTIVE;
}

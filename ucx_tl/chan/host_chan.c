/* A pair's host and model channels, and the channel machinery they share.
 *
 * Nominal figures are what this kind of channel does on a typical two-socket
 * server with one process per core; crux_tl_pair_calibrate replaces them by
 * measured ones.  cma moves data with process_vm_readv/writev (a kernel copy
 * by the actor's CPU); a put is issued by the sender once it has seen the
 * receiver's plan, hence its higher latency.  The shm channel copies twice,
 * once on each side, and pipelines the two copies through its slots.  The
 * shm-direct channel copies once, by the receiver, out of its mapping of
 * the sender's buffer, which must be a shared buffer (crux_tl_shared.c).
 * The channels that the receiver copies out of memory it addresses (shm,
 * shm-direct, model) can also reduce on landing (crux_tl_land). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/core/core_internal.h"

static const char *const kind_names[CRUX_TL_CHAN_KIND_COUNT] = {
    "cma-get", "cma-put", "shm", "shm-direct", "model", "cuda-ipc", "cuda-peer", "cuda-host",
};

const char *crux_tl_chan_kind_name(crux_tl_chan_kind_t kind)
{
    return (unsigned)kind < CRUX_TL_CHAN_KIND_COUNT ? kind_names[kind] : "unknown";
}

void crux_tl_chan_init(crux_tl_chan_t *chan, const crux_tl_chan_ops_t *ops,
                       crux_tl_chan_kind_t kind, const char *name)
{
    chan->ops = ops;
    chan->attr.kind = kind;
    snprintf(chan->attr.name, sizeof(chan->attr.name), "%s", name);
    chan->usable = 1;
}

unsigned crux_tl_chan_poll(crux_tl_chan_t *chan)
{
    unsigned done = 0;
    chan->moved = 0;
    crux_tl_chunk_t **link = &chan->head, *prev = NULL;
    uint32_t blocked = 0, all = chan->ordered_queues > 0 && chan->ordered_queues < 32
                                    ? (1u << chan->ordered_queues) - 1
                                    : 0;
    while (*link != NULL && (all == 0 || blocked != all)) {
        crux_tl_chunk_t *c = *link;
        uint32_t queue = all != 0 ? 1u << c->queue : 0;
        if ((blocked & queue) != 0 || !chan->ops->test(chan, c)) {
            blocked |= queue; /* later chunks of its queue are not done either */
            prev = c;
            link = &c->next;
            continue;
        }
        *link = c->next;
        if (chan->tail == c) {
            chan->tail = prev;
        }
        chan->inflight--;
        done++;
        crux_tl_xfer_finish_chunk(c);
    }
    return done + chan->moved;
}

static void plain_destroy(crux_tl_chan_t *chan)
{
    free(chan);
}

/* --- cma ------------------------------------------------------------------ */

static crux_status_t cma_get_issue(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    return crux_tl_get_nb(chan->pair->ep, c->dst, c->remote, c->length, &c->comp);
}

static crux_status_t cma_put_issue(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    return crux_tl_put_nb(chan->pair->ep, c->src, c->remote, c->length, &c->comp);
}

static int cma_test(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    if (c->comp.pending > 0) {
        crux_tl_progress(chan->pair->engine->context);
        if (c->comp.pending > 0) {
            return 0;
        }
    }
    c->status = c->comp.status;
    return 1;
}

static const crux_tl_chan_ops_t cma_get_ops = { cma_get_issue, cma_test, plain_destroy };
static const crux_tl_chan_ops_t cma_put_ops = { cma_put_issue, cma_test, plain_destroy };

/* The shm channel's chunks go through the slots (crux_tl_shm.c), not
 * through issue and test. */
static const crux_tl_chan_ops_t shm_ops = { NULL, NULL, plain_destroy };

/* --- shm-direct ------------------------------------------------------------ */

static crux_status_t direct_issue(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    (void)chan;
    (void)c;
    return CRUX_OK; /* the copy is made when polled, once the chunk may land */
}

static int direct_test(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    const crux_tl_xfer_t *x = c->xfer;
    (void)chan;
    if (!crux_tl_may_land(x)) {
        return 0; /* a chained reduction: its turn has not come */
    }
    crux_tl_land(x, (size_t)((uint8_t *)c->dst - x->buffer), c->src, c->length);
    c->status = CRUX_OK;
    return 1;
}

static const crux_tl_chan_ops_t direct_ops = { direct_issue, direct_test, plain_destroy };

/* --- model ----------------------------------------------------------------- */

typedef struct {
    crux_tl_chan_t chan;
    crux_tl_model_t model;
    double busy_until; /* when the modelled link has carried what it was given */
} model_chan_t;

static crux_status_t model_issue(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    model_chan_t *m = (model_chan_t *)chan;
    double now = crux_tl_now();
    c->start = (now > m->busy_until ? now : m->busy_until) + m->model.chunk_cost;
    m->busy_until = c->start + (double)c->length / m->model.bandwidth;
    c->due = m->busy_until + m->model.latency;
    c->copied = 0;
    return CRUX_OK;
}

/* The bytes move as the modelled link would stream them: each poll copies
 * what the link has carried by now, so the copies of concurrent channels
 * interleave like DMA engines working side by side (as far as one CPU can
 * copy that fast). */
static int model_test(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    model_chan_t *m = (model_chan_t *)chan;
    double now = crux_tl_now();
    if (!crux_tl_may_land(c->xfer)) {
        return 0; /* a chained reduction: its turn has not come */
    }
    if (c->copied < c->length && now > c->start) {
        double carried = (now - c->start) * m->model.bandwidth;
        size_t upto = carried >= (double)c->length ? c->length : (size_t)carried;
        const crux_tl_xfer_t *x = c->xfer;
        if (x->reduce.fn != NULL && upto < c->length) {
            upto -= upto % x->reduce.esize; /* reduce whole elements */
        }
        if (upto > c->copied) {
            crux_tl_land(x, (size_t)((uint8_t *)c->dst - x->buffer) + c->copied,
                         (const uint8_t *)c->src + c->copied, upto - c->copied);
            c->copied = upto;
            chan->moved++;
        }
    }
    if (c->copied < c->length || now < c->due) {
        return 0;
    }
    c->status = CRUX_OK;
    return 1;
}

static const crux_tl_chan_ops_t model_ops = { model_issue, model_test, plain_destroy };

int crux_tl_chan_lands_by_receiver(crux_tl_chan_kind_t kind)
{
    return kind == CRUX_TL_CHAN_SHM || kind == CRUX_TL_CHAN_SHM_DIRECT ||
           kind == CRUX_TL_CHAN_MODEL;
}

int crux_tl_pair_channel(const crux_tl_pair_t *pair, crux_tl_chan_kind_t kind)
{
    for (unsigned i = 0; i < pair->nhost; i++) {
        if (pair->chan[i]->attr.kind == kind) {
            return (int)i;
        }
    }
    return -1;
}

int crux_tl_pair_reduces(const crux_tl_pair_t *pair)
{
    for (unsigned i = 0; i < pair->nhost; i++) {
        crux_tl_chan_kind_t kind = pair->chan[i]->attr.kind;
        if (kind != CRUX_TL_CHAN_SHM_DIRECT && crux_tl_chan_lands_by_receiver(kind)) {
            return 1;
        }
    }
    return 0;
}

/* --- the table ------------------------------------------------------------- */

static crux_status_t add(crux_tl_pair_t *pair, crux_tl_chan_t *chan)
{
    if (chan == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    if (pair->nchan == CRUX_TL_MAX_CHANS) {
        chan->ops->destroy(chan);
        return CRUX_ERR_INVALID;
    }
    chan->pair = pair;
    pair->chan[pair->nchan] = chan;
    pair->chan_owned[pair->nchan] = 1;
    pair->nchan++;
    crux_tl_calib_lookup(pair->engine, chan);
    return CRUX_OK;
}

static crux_tl_chan_t *cma_chan(crux_tl_pair_t *pair, crux_tl_chan_kind_t kind)
{
    crux_tl_chan_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    crux_tl_chan_init(c, kind == CRUX_TL_CHAN_CMA_GET ? &cma_get_ops : &cma_put_ops, kind,
                      crux_tl_chan_kind_name(kind));
    snprintf(c->signature, sizeof(c->signature), "%s", c->attr.name);
    c->attr.bandwidth = 6e9;
    c->attr.latency = kind == CRUX_TL_CHAN_CMA_GET ? 1e-6 : 3e-6;
    c->attr.chunk_cost = 1e-6;
    c->attr.hops = 1;
    c->attr.max_depth = 4;
    c->attr.max_chunk = 4u << 20;
    c->attr.resources = kind == CRUX_TL_CHAN_CMA_GET ? CRUX_TL_RES_RX_CPU : CRUX_TL_RES_TX_CPU;
    c->usable = pair->ep != NULL; /* this side's copies; the peer's are in its caps */
    return c;
}

static crux_tl_chan_t *shm_chan(crux_tl_pair_t *pair)
{
    const crux_tl_engine_config_t *cfg = &pair->engine->config;
    crux_tl_chan_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    crux_tl_chan_init(c, &shm_ops, CRUX_TL_CHAN_SHM, "shm");
    snprintf(c->signature, sizeof(c->signature), "shm:%s:%zux%u",
             crux_tl_context_shm_name(pair->engine->context), cfg->shm_slot_size, cfg->shm_slots);
    c->attr.bandwidth = 6e9;
    c->attr.latency = 2e-6;
    c->attr.chunk_cost = 0.3e-6;
    c->attr.hops = 2;
    c->attr.max_depth = cfg->shm_slots;
    c->attr.max_chunk = cfg->shm_slot_size / CRUX_TL_GRANULE * CRUX_TL_GRANULE;
    c->attr.resources = CRUX_TL_RES_TX_CPU | CRUX_TL_RES_RX_CPU;
    return c;
}

/* Chunks keep a landing's source and destination within L2 and let a
 * chained reduction behind it start early. */
static crux_tl_chan_t *direct_chan(void)
{
    crux_tl_chan_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    crux_tl_chan_init(c, &direct_ops, CRUX_TL_CHAN_SHM_DIRECT, "shm-direct");
    c->attr.bandwidth = 10e9;
    c->attr.latency = 0.2e-6;
    c->attr.chunk_cost = 0.1e-6;
    c->attr.hops = 1;
    c->attr.max_depth = 4;
    c->attr.max_chunk = 256u << 10;
    c->attr.resources = CRUX_TL_RES_RX_CPU;
    return c;
}

static crux_tl_chan_t *model_chan(const crux_tl_model_t *model, unsigned i)
{
    model_chan_t *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return NULL;
    }
    char name[32];
    snprintf(name, sizeof(name), "model%u", i);
    crux_tl_chan_init(&m->chan, &model_ops, CRUX_TL_CHAN_MODEL, name);
    m->model = *model;
    m->chan.attr.bandwidth = model->bandwidth;
    m->chan.attr.latency = model->latency;
    m->chan.attr.chunk_cost = model->chunk_cost;
    m->chan.attr.hops = 1;
    m->chan.attr.max_depth = model->max_depth > 0 ? model->max_depth : 8;
    m->chan.attr.max_chunk = model->max_chunk > 0 ? model->max_chunk : 4u << 20;
    m->chan.attr.calibrated = 1; /* its figures are exact by construction */
    return &m->chan;
}

crux_status_t crux_tl_host_channels(crux_tl_pair_t *pair)
{
    const crux_tl_engine_config_t *cfg = &pair->engine->config;
    crux_status_t st = CRUX_OK;
    if (cfg->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_CMA_GET)) {
        st = add(pair, cma_chan(pair, CRUX_TL_CHAN_CMA_GET));
    }
    if (st == CRUX_OK && (cfg->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_CMA_PUT))) {
        st = add(pair, cma_chan(pair, CRUX_TL_CHAN_CMA_PUT));
    }
    if (st == CRUX_OK && (cfg->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_SHM))) {
        st = add(pair, shm_chan(pair));
    }
    if (st == CRUX_OK && (cfg->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_SHM_DIRECT))) {
        st = add(pair, direct_chan());
    }
    for (unsigned i = 0; st == CRUX_OK && i < cfg->nmodels; i++) {
        st = add(pair, model_chan(&cfg->models[i], i));
    }
    pair->nhost = pair->nchan;
    return st;
}

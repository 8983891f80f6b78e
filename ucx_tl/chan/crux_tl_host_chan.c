/* The host and model channels.
 *
 * Nominal figures are what this kind of channel does on a typical two-socket
 * server with one process per core; crux_tl_pair_calibrate replaces them by
 * measured ones.  cma moves data with process_vm_readv/writev (a kernel copy
 * by the actor's CPU); a put is issued by the sender once it has seen the
 * receiver's plan, hence its higher latency.  The shm channel copies twice,
 * once on each side, and pipelines the two copies through its slots.  The
 * shm-direct channel copies once, by the receiver, out of its mapping of
 * the sender's buffer, which must be a shared buffer (engine/crux_tl_shared_buffer.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/chan/crux_tl_chan_internal.h"

static void plain_destroy(crux_tl_chan_t *chan)
{
    free(chan);
}

/* --- cma ------------------------------------------------------------------ */

static crux_status_t cma_get_issue(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    return crux_tl_get_nb(chan->ep, c->dst, c->remote, c->length, &c->comp);
}

static crux_status_t cma_put_issue(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    return crux_tl_put_nb(chan->ep, c->src, c->remote, c->length, &c->comp);
}

static int cma_test(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    if (c->comp.pending > 0) {
        crux_tl_progress(chan->context);
        if (c->comp.pending > 0) {
            return 0;
        }
    }
    c->status = c->comp.status;
    return 1;
}

static const crux_tl_chan_ops_t cma_get_ops = { cma_get_issue, cma_test, plain_destroy };
static const crux_tl_chan_ops_t cma_put_ops = { cma_put_issue, cma_test, plain_destroy };

/* The shm channel's chunks go through the slots (engine/crux_tl_shm_slots.c), not
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
    (void)chan;
    c->owner->land(c, 0, c->src, c->length);
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
    if (c->copied < c->length && now > c->start) {
        double carried = (now - c->start) * m->model.bandwidth;
        size_t upto = carried >= (double)c->length ? c->length : (size_t)carried;
        if (upto > c->copied) {
            c->owner->land(c, c->copied, (const uint8_t *)c->src + c->copied, upto - c->copied);
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

crux_tl_chan_t *crux_tl_chan_cma(crux_tl_chan_kind_t kind, crux_tl_ep_t *ep,
                                 crux_tl_context_t *context)
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
    c->ep = ep;
    c->context = context;
    c->usable = ep != NULL; /* this side's copies; the peer's are in its caps */
    return c;
}

crux_tl_chan_t *crux_tl_chan_shm(const char *shm_name, size_t slot_size, unsigned slots,
                                 size_t granule)
{
    crux_tl_chan_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    crux_tl_chan_init(c, &shm_ops, CRUX_TL_CHAN_SHM, "shm");
    snprintf(c->signature, sizeof(c->signature), "shm:%s:%zux%u", shm_name, slot_size, slots);
    c->attr.bandwidth = 6e9;
    c->attr.latency = 2e-6;
    c->attr.chunk_cost = 0.3e-6;
    c->attr.hops = 2;
    c->attr.max_depth = slots;
    c->attr.max_chunk = slot_size / granule * granule;
    c->attr.resources = CRUX_TL_RES_TX_CPU | CRUX_TL_RES_RX_CPU;
    return c;
}

/* Chunks keep a landing's source and destination within L2. */
crux_tl_chan_t *crux_tl_chan_shm_direct(void)
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

crux_tl_chan_t *crux_tl_chan_model(const crux_tl_model_t *model, unsigned i)
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

/* The multipath engine: its shared segment of control areas, cards, pairs,
 * and the progress entry point.  The protocol is described in crux_tl_mp.h. */
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ucx_tl/core/core_internal.h"

#define PAGE              4096u
#define ROUND_PAGE(x)     (((x) + PAGE - 1) / PAGE * PAGE)
#define SPIN_BEFORE_YIELD 64u

double crux_tl_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

crux_tl_area_t *crux_tl_area(crux_tl_engine_t *engine, uint8_t *base, int rank)
{
    return (crux_tl_area_t *)(base + (size_t)rank * engine->area_size);
}

crux_tl_bell_t *crux_tl_bell(const crux_tl_engine_t *engine, uint8_t *base)
{
    return (crux_tl_bell_t *)(base + engine->area_size * (size_t)engine->config.max_peers);
}

crux_tl_chunk_t *crux_tl_chunk_get(crux_tl_engine_t *engine)
{
    crux_tl_chunk_t *c = engine->free_chunks;
    if (c != NULL) {
        engine->free_chunks = c->next;
    } else if ((c = malloc(sizeof(*c))) == NULL) {
        return NULL;
    }
    memset(c, 0, sizeof(*c));
    c->comp.status = CRUX_OK;
    c->status = CRUX_OK;
    return c;
}

void crux_tl_chunk_put(crux_tl_engine_t *engine, crux_tl_chunk_t *c)
{
    c->next = engine->free_chunks;
    engine->free_chunks = c;
}

/* Transfers are kept for reuse: a collective posts several per call, and
 * allocating and freeing them showed in small calls' profiles. */
crux_tl_xfer_t *crux_tl_xfer_get(crux_tl_engine_t *engine)
{
    crux_tl_xfer_t *x = engine->free_xfers;
    if (x != NULL) {
        engine->free_xfers = x->next;
        memset(x, 0, offsetof(crux_tl_xfer_t, run));
        return x;
    }
    return calloc(1, sizeof(*x));
}

void crux_tl_xfer_put(crux_tl_engine_t *engine, crux_tl_xfer_t *x)
{
    x->next = engine->free_xfers;
    engine->free_xfers = x;
}

crux_status_t crux_tl_engine_create(crux_tl_context_t *context,
                                    const crux_tl_engine_config_t *config,
                                    crux_tl_engine_t **engine_p)
{
    const crux_tl_engine_config_t defaults = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    if (config == NULL) {
        config = &defaults;
    }
    int shm = (config->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_SHM)) != 0;
    if (config->max_peers < 1 ||
        (shm && (config->shm_slots < 1 || config->shm_slots > CRUX_TL_MAX_SLOTS ||
                 config->shm_slot_size < CRUX_TL_GRANULE))) {
        return CRUX_ERR_INVALID;
    }
    for (unsigned i = 0; i < config->nmodels; i++) {
        if (!(config->models[i].bandwidth > 0) || config->models[i].latency < 0 ||
            config->models[i].chunk_cost < 0) {
            return CRUX_ERR_INVALID;
        }
    }
    crux_tl_engine_t *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    e->context = context;
    e->config = *config;
    e->config.calib_path = NULL;

    if (config->nmodels > 0) {
        e->models = calloc(config->nmodels, sizeof(*e->models));
        if (e->models == NULL) {
            free(e);
            return CRUX_ERR_NO_MEMORY;
        }
        memcpy(e->models, config->models, config->nmodels * sizeof(*e->models));
    }
    e->config.models = e->models;
    crux_tl_calib_path(e, config->calib_path);
    /* Slot data is only touched when used, so unused areas cost address
     * space, not memory (shared memory pages are allocated on first touch). */
    e->area_size = ROUND_PAGE(sizeof(crux_tl_area_t)) +
                   (shm ? ROUND_PAGE(config->shm_slots * config->shm_slot_size) : 0);
    crux_status_t st = crux_tl_seg_alloc(
        context, e->area_size * (size_t)config->max_peers + sizeof(crux_tl_bell_t), &e->seg);
    if (st != CRUX_OK) {
        free(e->models);
        free(e);
        return st;
    }
    uint8_t *base = crux_tl_seg_ptr(e->seg);
    e->bell = crux_tl_bell(e, base);
    memset(e->bell, 0, sizeof(*e->bell));
    for (int r = 0; r < config->max_peers; r++) {
        crux_tl_area_t *a = crux_tl_area(e, base, r);
        memset(a, 0, sizeof(*a));
        a->pid = getpid();
        mp_store(&a->magic, CRUX_TL_AREA_MAGIC);
    }
    *engine_p = e;
    return CRUX_OK;
}

void crux_tl_engine_destroy(crux_tl_engine_t *e)
{
    if (e == NULL) {
        return;
    }
    while (e->pairs != NULL) {
        crux_tl_pair_disconnect(e->pairs);
    }
    crux_tl_cuda_destroy(e);
    crux_tl_shared_free_all(e);
    while (e->free_chunks != NULL) {
        crux_tl_chunk_t *c = e->free_chunks;
        e->free_chunks = c->next;
        free(c);
    }
    while (e->free_xfers != NULL) {
        crux_tl_xfer_t *x = e->free_xfers;
        e->free_xfers = x->next;
        free(x);
    }
    crux_tl_seg_free(e->seg);
    free(e->models);
    free(e);
}

size_t crux_tl_engine_card_size(const crux_tl_engine_t *e)
{
    return sizeof(crux_tl_card_t) + sizeof(uint64_t) + crux_tl_address_size(e->context) +
           crux_tl_seg_key_size(e->context);
}

crux_status_t crux_tl_engine_card_pack(const crux_tl_engine_t *e, void *buffer)
{
    crux_tl_card_t card = {
        .magic = CRUX_TL_CARD_MAGIC,
        .pid = getpid(),
        .area_size = e->area_size,
        .max_peers = (uint32_t)e->config.max_peers,
        .address_len = (uint32_t)crux_tl_address_size(e->context),
        .key_len = (uint32_t)crux_tl_seg_key_size(e->context),
    };
    uint8_t *p = buffer;
    uint64_t base = (uintptr_t)crux_tl_seg_ptr(e->seg);
    memcpy(p, &card, sizeof(card));
    memcpy(p + sizeof(card), &base, sizeof(base));
    p += sizeof(card) + sizeof(base);
    crux_status_t st = CRUX_OK;
    if (card.address_len > 0) {
        st = crux_tl_address_pack(e->context, p);
    }
    return st != CRUX_OK ? st : crux_tl_seg_key_pack(e->seg, p + card.address_len);
}

/* cma works toward the peer if a read of its area's magic number returns it. */
static int cma_works(crux_tl_pair_t *pair, uint64_t peer_base)
{
    uint64_t magic = 0;
    uint64_t remote = peer_base + (uint64_t)pair->rank * pair->engine->area_size +
                      offsetof(crux_tl_area_t, magic);
    return crux_tl_get(pair->ep, &magic, remote, sizeof(magic)) == CRUX_OK &&
           magic == CRUX_TL_AREA_MAGIC;
}

static crux_status_t attach_peer(crux_tl_pair_t *pair, const void *peer_card, uint64_t *base_p)
{
    crux_tl_engine_t *e = pair->engine;
    crux_tl_card_t card;
    const uint8_t *p = peer_card;
    memcpy(&card, p, sizeof(card));
    memcpy(base_p, p + sizeof(card), sizeof(*base_p));
    if (card.magic != CRUX_TL_CARD_MAGIC || card.area_size != e->area_size ||
        card.max_peers != (uint32_t)e->config.max_peers ||
        card.address_len != crux_tl_address_size(e->context) ||
        card.key_len != crux_tl_seg_key_size(e->context)) {
        return CRUX_ERR_INVALID; /* another configuration, or not a card */
    }
    p += sizeof(card) + sizeof(uint64_t);
    crux_status_t st = crux_tl_rseg_attach(e->context, p + card.address_len, &pair->rseg);
    if (st != CRUX_OK) {
        return st;
    }
    pair->theirs = crux_tl_area(e, crux_tl_rseg_ptr(pair->rseg), pair->rank);
    pair->bell = crux_tl_bell(e, crux_tl_rseg_ptr(pair->rseg));
    pair->peer_pid = (pid_t)card.pid;
    if (card.address_len > 0 &&
        (e->config.kinds &
         (CRUX_TL_KIND(CRUX_TL_CHAN_CMA_GET) | CRUX_TL_KIND(CRUX_TL_CHAN_CMA_PUT))) &&
        crux_tl_ep_create(e->context, p, &pair->ep) != CRUX_OK) {
        pair->ep = NULL;
    }
    return mp_load(&pair->theirs->magic) == CRUX_TL_AREA_MAGIC ? CRUX_OK : CRUX_ERR_INVALID;
}

crux_status_t crux_tl_pair_connect(crux_tl_engine_t *e, int rank, int peer_rank,
                                   const void *peer_card, crux_tl_pair_t **pair_p)
{
    if (rank < 0 || peer_rank < 0 || rank >= e->config.max_peers ||
        peer_rank >= e->config.max_peers) {
        return CRUX_ERR_INVALID;
    }
    for (crux_tl_pair_t *q = e->pairs; q != NULL; q = q->next) {
        if (q->peer == peer_rank) {
            return CRUX_ERR_INVALID; /* one pair per peer for an engine's life */
        }
    }
    crux_tl_pair_t *pair = calloc(1, sizeof(*pair));
    if (pair == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    pair->engine = e;
    pair->rank = rank;
    pair->peer = peer_rank;
    pair->loopback = rank == peer_rank;
    uint8_t *base = crux_tl_seg_ptr(e->seg);
    pair->mine = crux_tl_area(e, base, peer_rank);
    pair->my_slots = (uint8_t *)pair->mine + ROUND_PAGE(sizeof(crux_tl_area_t));

    crux_status_t st = CRUX_OK;
    uint64_t peer_base = (uintptr_t)base;
    if (pair->loopback) {
        pair->theirs = pair->mine;
        pair->bell = e->bell;
        pair->peer_pid = getpid();
        unsigned char address[512];
        if (crux_tl_address_size(e->context) > 0 &&
            crux_tl_address_size(e->context) <= sizeof(address) &&
            (e->config.kinds &
             (CRUX_TL_KIND(CRUX_TL_CHAN_CMA_GET) | CRUX_TL_KIND(CRUX_TL_CHAN_CMA_PUT))) &&
            (crux_tl_address_pack(e->context, address) != CRUX_OK ||
             crux_tl_ep_create(e->context, address, &pair->ep) != CRUX_OK)) {
            pair->ep = NULL;
        }
    } else {
        st = attach_peer(pair, peer_card, &peer_base);
    }
    if (st == CRUX_OK) {
        pair->their_slots = (const uint8_t *)pair->theirs + ROUND_PAGE(sizeof(crux_tl_area_t));
        if (pair->ep != NULL && !cma_works(pair, peer_base)) {
            crux_tl_ep_destroy(pair->ep);
            pair->ep = NULL;
        }
        st = crux_tl_host_channels(pair);
    }
    if (st != CRUX_OK) {
        crux_tl_pair_disconnect(pair); /* not linked yet: just frees it */
        return st;
    }
    mp_store(&pair->mine->caps, CAP_CONNECTED | (pair->ep != NULL ? CAP_CMA : 0));
    pair->next = e->pairs;
    e->pairs = pair;
    *pair_p = pair;
    return CRUX_OK;
}

void crux_tl_pair_disconnect(crux_tl_pair_t *pair)
{
    if (pair == NULL) {
        return;
    }
    crux_tl_engine_t *e = pair->engine;
    for (crux_tl_pair_t **p = &e->pairs; *p != NULL; p = &(*p)->next) {
        if (*p == pair) {
            *p = pair->next;
            break;
        }
    }
    for (unsigned i = 0; i < pair->nchan; i++) {
        if (pair->chan_owned[i]) {
            pair->chan[i]->ops->destroy(pair->chan[i]);
        }
    }
    crux_tl_shared_unmap_all(pair);
    crux_tl_lane_unmap(pair);
    crux_tl_ep_destroy(pair->ep);
    crux_tl_rseg_detach(pair->rseg);
    free(pair);
}

unsigned crux_tl_pair_channels(const crux_tl_pair_t *pair, crux_tl_chan_attr_t *attrs, unsigned max)
{
    for (unsigned i = 0; i < pair->nchan && i < max; i++) {
        attrs[i] = pair->chan[i]->attr;
    }
    return pair->nchan;
}

unsigned crux_tl_engine_progress(crux_tl_engine_t *e)
{
    unsigned events = 0;
    for (crux_tl_pair_t *pair = e->pairs; pair != NULL; pair = pair->next) {
        events += crux_tl_pair_progress(pair);
    }
    return events + crux_tl_cuda_progress(e);
}

int crux_tl_pair_far(const crux_tl_pair_t *pair)
{
    return pair->reach.far;
}

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

crux_status_t crux_tl_xfer_wait(crux_tl_xfer_t *x)
{
    unsigned idle = 0;
    while (x->state != XFER_DONE) {
        /* the peer may share our core: let it run when nothing moves */
        if (crux_tl_engine_progress(x->pair->engine) > 0) {
            idle = 0;
        } else if (++idle > SPIN_BEFORE_YIELD) {
            sched_yield();
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

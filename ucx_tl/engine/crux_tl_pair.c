/* Pairs: connecting to a peer (its card, its control area, a cma endpoint
 * that really works), the pair's table of host and model channels, and
 * disconnecting. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucx_tl/engine/crux_tl_engine_internal.h"

int crux_tl_pair_channel(const crux_tl_pair_t *pair, crux_tl_chan_kind_t kind)
{
    for (unsigned i = 0; i < pair->nhost; i++) {
        if (pair->chan[i]->attr.kind == kind) {
            return (int)i;
        }
    }
    return -1;
}

int crux_tl_pair_direct(const crux_tl_pair_t *pair)
{
    return crux_tl_pair_channel(pair, CRUX_TL_CHAN_SHM_DIRECT) >= 0;
}

/* --- the table ------------------------------------------------------------- */

/* Figures from the calibration cache replace a channel's nominal ones. */
static crux_status_t add(crux_tl_pair_t *pair, crux_tl_chan_t *chan)
{
    if (chan == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    if (pair->nchan == CRUX_TL_MAX_CHANS) {
        chan->ops->destroy(chan);
        return CRUX_ERR_INVALID;
    }
    pair->chan[pair->nchan] = chan;
    pair->chan_owned[pair->nchan] = 1;
    pair->nchan++;
    crux_tl_calib_lookup(pair->engine, chan);
    return CRUX_OK;
}

static crux_status_t host_channels(crux_tl_pair_t *pair)
{
    const crux_tl_engine_config_t *cfg = &pair->engine->config;
    crux_tl_context_t *ctx = pair->engine->context;
    crux_status_t st = CRUX_OK;
    if (cfg->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_CMA_GET)) {
        st = add(pair, crux_tl_chan_cma(CRUX_TL_CHAN_CMA_GET, pair->ep, ctx));
    }
    if (st == CRUX_OK && (cfg->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_CMA_PUT))) {
        st = add(pair, crux_tl_chan_cma(CRUX_TL_CHAN_CMA_PUT, pair->ep, ctx));
    }
    if (st == CRUX_OK && (cfg->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_SHM))) {
        st = add(pair, crux_tl_chan_shm(crux_tl_context_shm_name(ctx), cfg->shm_slot_size,
                                        cfg->shm_slots, CRUX_TL_GRANULE));
    }
    if (st == CRUX_OK && (cfg->kinds & CRUX_TL_KIND(CRUX_TL_CHAN_SHM_DIRECT))) {
        st = add(pair, crux_tl_chan_shm_direct());
    }
    for (unsigned i = 0; st == CRUX_OK && i < cfg->nmodels; i++) {
        st = add(pair, crux_tl_chan_model(&cfg->models[i], i));
    }
    pair->nhost = pair->nchan;
    return st;
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
    pair->my_slots = (uint8_t *)pair->mine + CRUX_TL_ROUND_PAGE(sizeof(crux_tl_area_t));

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
        pair->their_slots =
            (const uint8_t *)pair->theirs + CRUX_TL_ROUND_PAGE(sizeof(crux_tl_area_t));
        if (pair->ep != NULL && !cma_works(pair, peer_base)) {
            crux_tl_ep_destroy(pair->ep);
            pair->ep = NULL;
        }
        st = host_channels(pair);
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
    crux_tl_dstage_release(pair);
    crux_tl_rseg_detach(pair->lane_rseg); /* the peer's buffer its lane posts are in */
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

int crux_tl_pair_far(const crux_tl_pair_t *pair)
{
    return pair->reach.far;
}

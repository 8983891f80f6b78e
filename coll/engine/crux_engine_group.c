/* An engine group: the engine and its pairs to every other member.  Each
 * member has two pairs to every peer, one for reduce-scatter traffic and one
 * for allgather traffic: a pair's transfers match in posting order, and a
 * receiver posts its reduce-scatter receives only as scratch frees up, so
 * on a single pair the gathers would queue behind them.  The second pair
 * uses the engine's control areas of ranks size .. 2 size - 1. */
#include <stdlib.h>
#include <string.h>

#include "common/crux_idle.h"
#include "coll/engine/crux_engine_group.h"
#include "coll/group/crux_group_shard.h"
#include "coll/oob/crux_oob_internal.h"

static crux_status_t exchange_cards(crux_engine_group_t *g, const crux_coll_oob_t *oob,
                                    uint8_t **cards_p, size_t *size_p)
{
    size_t size = crux_tl_engine_card_size(g->engine);
    uint8_t *mine = malloc(size), *all = malloc(size * (size_t)g->size);
    crux_status_t st = mine != NULL && all != NULL ? crux_tl_engine_card_pack(g->engine, mine)
                                                   : CRUX_ERR_NO_MEMORY;
    /* every member takes part in the allgather, whatever happened here */
    int rc = oob->allgather(st == CRUX_OK ? mine : all, all, size, oob->arg);
    free(mine);
    if (st != CRUX_OK || rc != 0) {
        free(all);
        return st != CRUX_OK ? st : CRUX_ERR_PEER;
    }
    *cards_p = all;
    *size_p = size;
    return CRUX_OK;
}

static crux_status_t connect_all(crux_engine_group_t *g, crux_tl_pair_t **pairs, int shift,
                                 const uint8_t *cards, size_t card_size)
{
    for (int q = 0; q < g->size; q++) {
        if (q == g->rank) {
            continue;
        }
        crux_status_t st = crux_tl_pair_connect(g->engine, g->rank + shift, q + shift,
                                                cards + (size_t)q * card_size, &pairs[q]);
        if (st != CRUX_OK) {
            return st;
        }
    }
    return CRUX_OK;
}

crux_status_t crux_engine_group_create(const crux_coll_oob_t *oob,
                                       const crux_engine_group_config_t *config,
                                       crux_engine_group_t **group_p)
{
    const crux_engine_group_config_t defaults = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    crux_engine_group_t *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    g->config = config != NULL ? *config : defaults;
    if (g->config.chunk_size == 0) {
        g->config.chunk_size = defaults.chunk_size;
    }
    if (g->config.host_chunk_size == 0) {
        g->config.host_chunk_size = defaults.host_chunk_size;
    }
    if (g->config.window == 0) {
        g->config.window = defaults.window;
    }
    g->rank = oob->rank;
    g->size = oob->size;
    unsigned local =
        g->config.local_procs > 0 ? (unsigned)g->config.local_procs : (unsigned)g->size;
    g->spins = crux_idle_spins(local, g->config.shared_cores);
    g->oob = *oob;
    g->rs = calloc((size_t)g->size, sizeof(*g->rs));
    g->ag = calloc((size_t)g->size, sizeof(*g->ag));
    g->agree_cards = calloc((size_t)g->size, sizeof(*g->agree_cards));
    g->peer_ids = calloc((size_t)g->size, CRUX_DEV_ID_SIZE);
    g->order_device = -1;
    g->order_peer = calloc((size_t)g->size * CRUX_ENGINE_ORDER_EVENTS, sizeof(void *));
    g->order_peer_handle =
        calloc((size_t)g->size * CRUX_ENGINE_ORDER_EVENTS, sizeof(*g->order_peer_handle));
    crux_tl_engine_config_t ecfg = g->config.engine;
    ecfg.max_peers = 2 * g->size;
    ecfg.eager_max = ecfg.shm_slot_size; /* small pieces and chunks skip the plan's round trip */
    crux_status_t st = g->rs != NULL && g->ag != NULL && g->agree_cards != NULL &&
                               g->peer_ids != NULL && g->order_peer != NULL &&
                               g->order_peer_handle != NULL
                           ? CRUX_OK
                           : CRUX_ERR_NO_MEMORY;
    if (st == CRUX_OK) {
        st = crux_tl_context_open(&g->config.tl, &g->ctx);
    }
    if (st == CRUX_OK) {
        st = crux_tl_engine_create(g->ctx, &ecfg, &g->engine);
    }
    /* After each crux_oob_agree() every member holds the same status, so all take
     * the same branches and call the allgather the same number of times. */
    st = crux_oob_agree(oob, st, 1, NULL);
    uint8_t *cards = NULL;
    size_t card_size = 0;
    if (st == CRUX_OK) {
        st = crux_oob_agree(oob, exchange_cards(g, oob, &cards, &card_size), 1, NULL);
    }
    if (st == CRUX_OK) {
        st = crux_oob_agree(oob, connect_all(g, g->rs, 0, cards, card_size), 1, NULL);
    }
    /* Peers in increasing order on every member cannot wait in a cycle.  The
     * allgather pairs connect afterwards, so they find the figures the
     * calibration left in the cache. */
    if (st == CRUX_OK && g->config.calibrate) {
        for (int q = 0; st == CRUX_OK && q < g->size; q++) {
            if (q != g->rank) {
                st = crux_tl_pair_calibrate(g->rs[q], 0);
            }
        }
        st = crux_oob_agree(oob, st, 1, NULL);
    }
    if (st == CRUX_OK) {
        st = crux_oob_agree(oob, connect_all(g, g->ag, g->size, cards, card_size), 1, NULL);
    }
    /* a member without the lanes' stage keeps every member from them */
    if (st == CRUX_OK) {
        g->lanes = crux_oob_agree(oob, crux_engine_lanes_reserve(g), 1, NULL) == CRUX_OK;
        g->whole = g->lanes && g->config.whole_max_bytes > 0;
        if (!g->lanes) {
            crux_engine_lanes_release(g);
        }
    }
    free(cards);
    if (st != CRUX_OK) {
        crux_engine_group_destroy(g);
        return st;
    }
    *group_p = g;
    return CRUX_OK;
}

void crux_engine_group_destroy(crux_engine_group_t *g)
{
    if (g == NULL) {
        return;
    }
    crux_engine_release_scratch(g);
    crux_engine_lanes_release(g);
    crux_engine_order_release(g);
    crux_tl_engine_destroy(g->engine); /* disconnects every pair */
    crux_tl_context_close(g->ctx);
    free(g->call_mem);
    free(g->rs);
    free(g->ag);
    free(g->agree_cards);
    free(g->peer_ids);
    free(g->order_peer);
    free(g->order_peer_handle);
    free(g);
}

crux_tl_engine_t *crux_engine_group_engine(crux_engine_group_t *g)
{
    return g->engine;
}

int crux_engine_group_lanes(const crux_engine_group_t *g)
{
    return g->lanes;
}

void crux_engine_group_set_caller(crux_engine_group_t *g, uint64_t caller)
{
    g->caller = crux_caller_word(caller);
}

void crux_engine_group_set_oob(crux_engine_group_t *g, const crux_coll_oob_t *oob)
{
    g->oob = *oob;
}

int crux_engine_group_broken(const crux_engine_group_t *g)
{
    return g->lanes_broken;
}

void crux_engine_shard(const crux_engine_group_t *g, size_t count, int p, size_t *first,
                       size_t *length)
{
    crux_cut_t cut = crux_cut(count, 1, 1, g->size);
    *first = crux_shard_first(&cut, p);
    *length = crux_shard_length(&cut, p);
}

crux_engine_group_config_t crux_engine_group_config(const crux_coll_config_t *host)
{
    crux_engine_group_config_t config = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    config.tl = host->tl;
    config.stream_min_bytes = host->stream_min_bytes;
    config.engine.far_latency = host->far_latency;
    config.local_procs = host->local_procs;
    config.shared_cores = host->shared_cores;
    return config;
}

/* The multipath engine: its shared segment of control areas, its card,
 * and the progress entry point.  The protocol is described in core/crux_tl_wire.h. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ucx_tl/cuda/crux_tl_cuda_internal.h"
#include "ucx_tl/engine/crux_tl_engine_internal.h"

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
    e->area_size = CRUX_TL_ROUND_PAGE(sizeof(crux_tl_area_t)) +
                   (shm ? CRUX_TL_ROUND_PAGE(config->shm_slots * config->shm_slot_size) : 0);
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

const char *crux_tl_engine_calib_path(const crux_tl_engine_t *e)
{
    return e->calib_path;
}

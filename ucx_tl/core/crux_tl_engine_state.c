/* The engine's state that every part of it uses: the pools of chunks and
 * transfers, where control areas lie in a segment, the liveness of a pair's
 * peer, the generation of a pair's plans, and the engine's calibration
 * cache (the file itself: plan/crux_tl_calib_cache.c). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/crux_proc.h"
#include "ucx_tl/core/crux_tl_core_internal.h"
#include "ucx_tl/plan/crux_tl_plan_internal.h"

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

int crux_tl_peer_alive(const crux_tl_pair_t *pair)
{
    return pair->loopback || crux_proc_alive(pair->peer_pid);
}

void crux_tl_plan_invalidate(crux_tl_pair_t *pair)
{
    pair->generation++;
}

void crux_tl_calib_path(crux_tl_engine_t *e, const char *path)
{
    crux_tl_calib_default_path(e->calib_path, sizeof(e->calib_path), path);
}

int crux_tl_calib_lookup(crux_tl_engine_t *e, crux_tl_chan_t *chan)
{
    return e->calib_path[0] != '\0' && chan->signature[0] != '\0' &&
           crux_tl_calib_read(e->calib_path, chan->signature, &chan->attr);
}

void crux_tl_calib_store(crux_tl_engine_t *e, crux_tl_chan_t *const *chans, unsigned count)
{
    const char *signatures[CRUX_TL_MAX_CHANS];
    const crux_tl_chan_attr_t *attrs[CRUX_TL_MAX_CHANS];
    unsigned n = 0;
    for (unsigned i = 0; i < count && n < CRUX_TL_MAX_CHANS; i++) {
        if (chans[i]->signature[0] != '\0') {
            signatures[n] = chans[i]->signature;
            attrs[n++] = &chans[i]->attr;
        }
    }
    if (e->calib_path[0] != '\0') {
        crux_tl_calib_write(e->calib_path, signatures, attrs, n);
    }
}

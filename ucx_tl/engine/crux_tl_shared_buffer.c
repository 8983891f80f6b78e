/* Shared buffers: host memory in segments of the shared memory domain that
 * peers map, so a send from one travels in a single copy by the receiver
 * (the shm-direct channel, chan/crux_tl_host_chan.c).  A send names its buffer's
 * segment in its wire entry (number, offset, key); the receiver maps the
 * segment the first time it sees the number and keeps the mapping, with a
 * few others per pair, dropping the least recently used. */
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/engine/crux_tl_engine_internal.h"

crux_status_t crux_tl_shared_alloc(crux_tl_engine_t *e, size_t bytes, void **ptr_p)
{
    if (!(e->config.kinds & CRUX_TL_KIND(CRUX_TL_CHAN_SHM_DIRECT)) ||
        crux_tl_seg_key_size(e->context) > CRUX_TL_SHARED_KEY_MAX) {
        return CRUX_ERR_UNSUPPORTED;
    }
    if (bytes == 0 || ptr_p == NULL) {
        return CRUX_ERR_INVALID;
    }
    crux_tl_shared_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    crux_status_t st = crux_tl_seg_alloc(e->context, bytes, &s->seg);
    if (st == CRUX_OK) {
        st = crux_tl_seg_key_pack(s->seg, s->key);
        if (st != CRUX_OK) {
            crux_tl_seg_free(s->seg);
        }
    }
    if (st != CRUX_OK) {
        free(s);
        return st == CRUX_ERR_INVALID ? CRUX_ERR_NO_MEMORY : st;
    }
    s->id = ++e->shared_ids;
    s->base = crux_tl_seg_ptr(s->seg);
    s->bytes = bytes;
    s->next = e->shared;
    e->shared = s;
    *ptr_p = s->base;
    return CRUX_OK;
}

void crux_tl_shared_free(crux_tl_engine_t *e, void *ptr)
{
    for (crux_tl_shared_t **link = &e->shared; *link != NULL; link = &(*link)->next) {
        crux_tl_shared_t *s = *link;
        if (s->base == ptr) {
            *link = s->next;
            crux_tl_seg_free(s->seg);
            free(s);
            return;
        }
    }
}

void crux_tl_shared_free_all(crux_tl_engine_t *e)
{
    while (e->shared != NULL) {
        crux_tl_shared_free(e, e->shared->base);
    }
}

const crux_tl_shared_t *crux_tl_shared_find(const crux_tl_engine_t *e, const void *ptr,
                                            size_t bytes)
{
    const uint8_t *p = ptr;
    for (const crux_tl_shared_t *s = e->shared; s != NULL; s = s->next) {
        if (p >= s->base && bytes <= s->bytes && (size_t)(p - s->base) <= s->bytes - bytes) {
            return s;
        }
    }
    return NULL;
}

int crux_tl_shared_describe(const crux_tl_engine_t *e, const void *ptr, size_t bytes,
                            crux_tl_wire_buf_t *wire)
{
    const crux_tl_shared_t *s = crux_tl_shared_find(e, ptr, bytes);
    if (s == NULL) {
        return 0;
    }
    wire->shared_id = s->id;
    wire->shared_offset = (uint64_t)((const uint8_t *)ptr - s->base);
    memcpy(wire->shared_key, s->key, crux_tl_seg_key_size(e->context));
    return 1;
}

crux_status_t crux_tl_shared_import(crux_tl_pair_t *pair, const crux_tl_wire_buf_t *wire,
                                    void **ptr_p)
{
    if (pair->loopback) { /* our own buffer, at its own address */
        *ptr_p = (void *)(uintptr_t)wire->addr;
        return CRUX_OK;
    }
    crux_tl_shared_map_t *use = &pair->shared_maps[0];
    for (unsigned i = 0; i < CRUX_TL_SHARED_MAPS; i++) {
        crux_tl_shared_map_t *m = &pair->shared_maps[i];
        if (m->id == wire->shared_id) {
            use = m;
            break;
        }
        if (m->last_use < use->last_use) {
            use = m; /* free slots have last_use 0 */
        }
    }
    if (use->id != wire->shared_id) {
        crux_tl_rseg_detach(use->rseg);
        use->rseg = NULL;
        use->id = 0;
        crux_status_t st = crux_tl_rseg_attach(pair->engine->context, wire->shared_key, &use->rseg);
        if (st != CRUX_OK) {
            return st;
        }
        use->id = wire->shared_id;
    }
    use->last_use = ++pair->shared_uses;
    *ptr_p = (uint8_t *)crux_tl_rseg_ptr(use->rseg) + wire->shared_offset;
    return CRUX_OK;
}

void crux_tl_shared_unmap_all(crux_tl_pair_t *pair)
{
    for (unsigned i = 0; i < CRUX_TL_SHARED_MAPS; i++) {
        crux_tl_rseg_detach(pair->shared_maps[i].rseg);
        pair->shared_maps[i] = (crux_tl_shared_map_t){ 0 };
    }
}

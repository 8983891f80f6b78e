/* Lanes: persistent transfers out of shared buffers (crux_tl_multipath.h).
 *
 * The sender's post k goes to slot k % CRUX_TL_LANE_DEPTH of its lane
 * entries in the pair's control area (a cache line each: sequence, buffer
 * number, place), and the buffer's segment key to the same slot of a table
 * apart, written only when the slot last held another buffer's.  The
 * receiver counts the posts it consumed in its own area, one word the
 * sender reads before it reuses a slot.  The slots are ordered by the
 * sequence word alone: written after the place (release), read before it
 * (acquire).  Every post, consume and abandon rings the peer's doorbell
 * if it sleeps (engine/crux_tl_doorbell.c). */
#include <string.h>

#include "ucx_tl/engine/crux_tl_engine_internal.h"

static int abandoned(const crux_tl_pair_t *pair)
{
    return mp_load(&pair->mine->lane_abandoned) != 0 || mp_load(&pair->theirs->lane_abandoned) != 0;
}

crux_status_t crux_tl_lane_post(crux_tl_pair_t *pair, const void *ptr, size_t bytes, uint64_t tag)
{
    const crux_tl_shared_t *s = crux_tl_shared_find(pair->engine, ptr, bytes);
    if (s == NULL || !crux_tl_pair_direct(pair)) {
        return CRUX_ERR_INVALID;
    }
    if (abandoned(pair)) {
        return CRUX_ERR_PEER;
    }
    uint64_t n = pair->lane_posted;
    if (n >= CRUX_TL_LANE_DEPTH && !crux_tl_lane_consumed(pair, n + 1 - CRUX_TL_LANE_DEPTH)) {
        return CRUX_ERR_NO_RESOURCE;
    }
    unsigned k = (unsigned)(n % CRUX_TL_LANE_DEPTH);
    if (pair->lane_key_id[k] != s->id) {
        memcpy(pair->mine->lane_key[k].key, s->key, crux_tl_seg_key_size(pair->engine->context));
        pair->lane_key_id[k] = s->id;
    }
    crux_tl_wire_lane_t *w = &pair->mine->lane[k];
    w->shared_id = s->id;
    w->offset = (uint64_t)((const uint8_t *)ptr - s->base);
    w->bytes = bytes;
    w->tag = tag;
    __atomic_store_n(&w->seq, n + 1, __ATOMIC_SEQ_CST); /* before the doorbell's look */
    pair->lane_posted = n + 1;
    crux_tl_ring(pair);
    return CRUX_OK;
}

uint64_t crux_tl_lane_posted(const crux_tl_pair_t *pair)
{
    return pair->lane_posted;
}

/* The peer's word is a line it rewrites at every consume: looked at only
 * when what was seen before does not answer. */
int crux_tl_lane_consumed(crux_tl_pair_t *pair, uint64_t upto)
{
    if (pair->lane_seen < upto) {
        pair->lane_seen = mp_load(&pair->theirs->lane_consumed);
    }
    return pair->lane_seen >= upto;
}

/* Map the peer's shared buffer 'id', whose key is in slot k. */
static crux_status_t map_buffer(crux_tl_pair_t *pair, uint64_t id, unsigned k)
{
    crux_tl_rseg_detach(pair->lane_rseg);
    pair->lane_rseg = NULL;
    pair->lane_map_id = 0;
    if (pair->loopback) { /* our own buffer */
        for (const crux_tl_shared_t *s = pair->engine->shared; s != NULL; s = s->next) {
            if (s->id == id) {
                pair->lane_base = s->base;
                pair->lane_map_id = id;
                return CRUX_OK;
            }
        }
        return CRUX_ERR_NO_RESOURCE;
    }
    crux_status_t st =
        crux_tl_rseg_attach(pair->engine->context, pair->theirs->lane_key[k].key, &pair->lane_rseg);
    if (st != CRUX_OK) {
        return CRUX_ERR_NO_RESOURCE;
    }
    pair->lane_base = crux_tl_rseg_ptr(pair->lane_rseg);
    pair->lane_map_id = id;
    return CRUX_OK;
}

crux_status_t crux_tl_lane_peek(crux_tl_pair_t *pair, const void **ptr_p, size_t *bytes_p,
                                uint64_t *tag_p)
{
    uint64_t n = pair->lane_received;
    unsigned k = (unsigned)(n % CRUX_TL_LANE_DEPTH);
    const crux_tl_wire_lane_t *w = &pair->theirs->lane[k];
    /* One post in CRUX_REACH_EVERY times the look that first finds it: that
     * look brought the line from the peer's cache, whether earlier looks
     * found the slot short or none looked since its last use (later looks
     * at a post found read our own cache).  The loopback has no distance. */
    int timed = !pair->loopback && n % CRUX_REACH_EVERY == 0 && pair->lane_timed != n + 1;
    uint64_t ticks = 0;
    if ((timed ? crux_reach_load(&w->seq, &ticks) : mp_load(&w->seq)) < n + 1) {
        return CRUX_INPROGRESS;
    }
    if (timed) {
        crux_reach_sample(&pair->reach, ticks, pair->engine->config.far_latency);
        pair->lane_timed = n + 1;
    }
    if (w->shared_id != pair->lane_map_id) {
        crux_status_t st = map_buffer(pair, w->shared_id, k);
        if (st != CRUX_OK) {
            return st;
        }
    }
    *ptr_p = pair->lane_base + w->offset;
    *bytes_p = (size_t)w->bytes;
    *tag_p = w->tag;
    return CRUX_OK;
}

int crux_tl_lane_ready(const crux_tl_pair_t *pair, unsigned count)
{
    uint64_t last = pair->lane_received + count; /* posts are written in order */
    return count == 0 ||
           (count <= CRUX_TL_LANE_DEPTH &&
            mp_load(&pair->theirs->lane[(last - 1) % CRUX_TL_LANE_DEPTH].seq) >= last);
}

void crux_tl_lane_consume(crux_tl_pair_t *pair)
{
    __atomic_store_n(&pair->mine->lane_consumed, ++pair->lane_received, __ATOMIC_SEQ_CST);
    crux_tl_ring(pair);
}

void crux_tl_lane_abandon(crux_tl_pair_t *pair)
{
    __atomic_store_n(&pair->mine->lane_abandoned, 1, __ATOMIC_SEQ_CST);
    crux_tl_ring(pair);
}

crux_status_t crux_tl_lane_check(crux_tl_pair_t *pair)
{
    return abandoned(pair) || !crux_tl_peer_alive(pair) ? CRUX_ERR_PEER : CRUX_OK;
}

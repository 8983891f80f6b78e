/* The one place an Allreduce algorithm is chosen (crux_coll.h): from the
 * buffers' memory, the call's size against the caller's sizes, the
 * communicator's shape, what the caller can have (asked lazily: having a
 * group may mean building it) and what the user asked for along each axis,
 * to an algorithm and the reason for a fallback; and what runs after an
 * algorithm that could not take the call.
 *
 * Every member must choose alike, so every input is one that all members
 * share: the same arguments, the same parameters, capabilities agreed when
 * the groups were built. */
#include <stdint.h>

#include "coll/crux_coll.h"

static int has(const crux_select_query_t *q, crux_select_cap_t cap)
{
    return q->has != NULL && q->has(q->arg, cap);
}

/* Device buffers never reach the caller's own implementation (it may not
 * be CUDA-aware): on the GPU over the engine, else through host memory. */
static crux_alg_t select_device(const crux_select_query_t *q, const char **why)
{
    const crux_request_t *r = &q->request;
    if (r->memory_path == CRUX_MEMORY_PATH_HOST_STAGED || r->fallback) {
        return CRUX_ALG_HOST_STAGED;
    }
    if (r->topology == CRUX_TOPOLOGY_HIER || r->topology == CRUX_TOPOLOGY_HIER_SEQUENTIAL) {
        *why = "the device algorithm is flat";
    } else if (!q->all_local) {
        *why = "the device algorithm needs every rank on one node";
    } else if (!has(q, CRUX_CAP_DEVICE_KERNEL)) {
        *why = "no GPU kernel for this datatype and op";
    } else if (!has(q, CRUX_CAP_ENGINE)) {
        *why = "no multipath engine";
    } else {
        return CRUX_ALG_DEVICE;
    }
    return CRUX_ALG_HOST_STAGED;
}

crux_select_bounds_t crux_select_bounds(const crux_request_t *r, int all_local,
                                        const crux_select_sizes_t *sizes)
{
    crux_select_bounds_t b = { 0, 0, 0 };
    if (r->fallback) {
        b.fallback_below = SIZE_MAX;
        return b;
    }
    if (crux_request_forced(r)) {
        return b; /* the forced pipeline at every size, no small Allreduce */
    }
    b.fallback_below = sizes->min_bytes;
    b.small_max = all_local ? sizes->small_max_bytes : sizes->hier_small_max_bytes;
    b.hier_from = all_local ? 0 : sizes->hier_min_bytes;
    return b;
}

/* Small calls take the small Allreduce when nothing is forced (the bounds
 * give none then): a forced topology or hand-off runs its pipeline at
 * every size. */
static int small(const crux_select_query_t *q, crux_select_cap_t cap)
{
    crux_select_bounds_t b = crux_select_bounds(&q->request, q->all_local, &q->sizes);
    return b.small_max != 0 && q->bytes <= b.small_max && has(q, cap);
}

static crux_alg_t select_hier(const crux_select_query_t *q, crux_alg_t alg, const char **why)
{
    if (alg == CRUX_ALG_HIER && small(q, CRUX_CAP_LAYOUT_SMALL)) {
        return CRUX_ALG_HIER_SMALL;
    }
    if (!has(q, CRUX_CAP_LAYOUT)) {
        *why = "no usable rank groups";
        return CRUX_ALG_FALLBACK;
    }
    if (q->request.handoff == CRUX_HANDOFF_LANES && !has(q, CRUX_CAP_LAYOUT_LANES)) {
        *why = "the rank groups have no lanes";
        return CRUX_ALG_FALLBACK;
    }
    return alg;
}

static crux_alg_t select_flat(const crux_select_query_t *q, const char **why)
{
    crux_handoff_t handoff = q->request.handoff;
    if (!q->all_local) {
        *why = "the flat algorithm needs every rank on one node";
        return CRUX_ALG_FALLBACK;
    }
    if (small(q, CRUX_CAP_SMALL)) {
        return CRUX_ALG_SMALL;
    }
    /* auto: the lanes where every pair has them (measured alike, and they
     * carry device buffers too), else flags in a shared-memory group */
    if (handoff != CRUX_HANDOFF_FLAGS && has(q, CRUX_CAP_LANES)) {
        return CRUX_ALG_LANES;
    }
    if (handoff == CRUX_HANDOFF_LANES) {
        *why = "no lanes between these ranks";
        return CRUX_ALG_FALLBACK;
    }
    if (!has(q, CRUX_CAP_GROUP)) {
        *why = "no shared memory";
        return CRUX_ALG_FALLBACK;
    }
    return CRUX_ALG_FLAGS;
}

crux_alg_t crux_allreduce_select(const crux_select_query_t *q, const char **why)
{
    *why = "";
    if (q->device) {
        return select_device(q, why);
    }
    if (q->request.fallback) {
        return CRUX_ALG_FALLBACK;
    }
    crux_select_bounds_t b = crux_select_bounds(&q->request, q->all_local, &q->sizes);
    if (q->bytes < b.fallback_below) {
        *why = "smaller than crux's smallest size";
        return CRUX_ALG_FALLBACK;
    }
    if (q->bytes > b.small_max && q->bytes < b.hier_from) {
        *why = "between the small Allreduce's sizes and the hierarchical pipeline's";
        return CRUX_ALG_FALLBACK;
    }
    switch (q->request.topology) {
    case CRUX_TOPOLOGY_HIER: return select_hier(q, CRUX_ALG_HIER, why);
    case CRUX_TOPOLOGY_HIER_SEQUENTIAL: return select_hier(q, CRUX_ALG_HIER_SEQUENTIAL, why);
    case CRUX_TOPOLOGY_FLAT: return select_flat(q, why);
    default: /* one node: flat; across nodes: three stages */
        return q->all_local ? select_flat(q, why) : select_hier(q, CRUX_ALG_HIER, why);
    }
}

crux_alg_t crux_allreduce_next(crux_alg_t alg, crux_status_t status, const char **why)
{
    *why = "";
    if (status != CRUX_ERR_UNSUPPORTED || alg == CRUX_ALG_FALLBACK || alg == CRUX_ALG_HOST_STAGED ||
        (int)alg < 0 || alg >= CRUX_ALG_COUNT) {
        return CRUX_ALG_COUNT;
    }
    if (alg == CRUX_ALG_DEVICE) {
        *why = "the engine cannot move these buffers";
        return CRUX_ALG_HOST_STAGED;
    }
    *why = "the algorithm cannot take this call";
    return CRUX_ALG_FALLBACK;
}

const char *crux_alg_name(crux_alg_t alg)
{
    static const char *const names[CRUX_ALG_COUNT] = {
        [CRUX_ALG_FALLBACK] = "fallback",
        [CRUX_ALG_FLAGS] = "flags",
        [CRUX_ALG_LANES] = "lanes",
        [CRUX_ALG_HIER] = "hier",
        [CRUX_ALG_HIER_SEQUENTIAL] = "hier-sequential",
        [CRUX_ALG_DEVICE] = "device",
        [CRUX_ALG_HOST_STAGED] = "device staged through host",
        [CRUX_ALG_SMALL] = "small",
        [CRUX_ALG_HIER_SMALL] = "hier-small",
    };
    return (int)alg >= 0 && alg < CRUX_ALG_COUNT ? names[alg] : "?";
}

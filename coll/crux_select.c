/* The one place an Allreduce algorithm is chosen (crux_coll.h): from the
 * buffers' memory, the communicator's shape, what the caller can have
 * (asked lazily: having a group may mean building it) and what the user
 * asked for along each axis, to an algorithm and the reason for a
 * fallback.
 *
 * Every member must choose alike, so every input is one that all members
 * share: the same arguments, the same parameters, capabilities agreed when
 * the groups were built. */
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

/* Small calls take the small Allreduce when nothing is forced: a forced
 * topology or hand-off runs its pipeline at every size. */
static int small(const crux_select_query_t *q, crux_select_cap_t cap)
{
    return !crux_request_forced(&q->request) && has(q, cap);
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
    return CRUX_ALG_STAGED;
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
    switch (q->request.topology) {
    case CRUX_TOPOLOGY_HIER: return select_hier(q, CRUX_ALG_HIER, why);
    case CRUX_TOPOLOGY_HIER_SEQUENTIAL: return select_hier(q, CRUX_ALG_HIER_SEQUENTIAL, why);
    case CRUX_TOPOLOGY_FLAT: return select_flat(q, why);
    default: /* one node: flat; across nodes: three stages */
        return q->all_local ? select_flat(q, why) : select_hier(q, CRUX_ALG_HIER, why);
    }
}

const char *crux_alg_name(crux_alg_t alg)
{
    static const char *const names[CRUX_ALG_COUNT] = {
        [CRUX_ALG_FALLBACK] = "fallback",
        [CRUX_ALG_STAGED] = "staged",
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

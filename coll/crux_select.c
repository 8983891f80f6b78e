/* The one place an Allreduce algorithm is chosen (crux_coll.h): from the
 * buffers' memory, the communicator's shape, the message size, what the
 * caller can have (asked lazily: having a group may mean building it) and
 * what the user forced, to an algorithm and the reason for a fallback.
 *
 * Every member must choose alike, so every input is one that all members
 * share: the same arguments, the same parameters, capabilities agreed when
 * the groups were built. */
#include "coll/crux_coll.h"
#include "coll/crux_group_internal.h"

static int has(const crux_select_query_t *q, crux_select_cap_t cap)
{
    return q->has != NULL && q->has(q->arg, cap);
}

/* Single copy pays only from cma_min_bytes up, when set: on the machines
 * measured so far staging won at every size, so it is opt-in. */
static int cma_wins(int has_cma, size_t cma_min_bytes, size_t bytes)
{
    return has_cma && cma_min_bytes > 0 && bytes >= cma_min_bytes;
}

static crux_alg_t select_device(const crux_select_query_t *q, const char **why)
{
    if (!q->all_local) {
        *why = "the device algorithm needs every rank on one node";
    } else if (!has(q, CRUX_CAP_DEVICE_KERNEL)) {
        *why = "no GPU kernel for this datatype and op";
    } else if (!has(q, CRUX_CAP_ENGINE)) {
        *why = "no multipath engine";
    } else {
        return CRUX_ALG_DEVICE;
    }
    return CRUX_ALG_DEVICE_STAGED;
}

crux_alg_t crux_allreduce_select(const crux_select_query_t *q, const char **why)
{
    *why = "";
    if (q->device) {
        return select_device(q, why);
    }
    crux_alg_t alg = q->forced;
    if (alg == CRUX_ALG_FALLBACK) {
        return alg;
    }
    if (alg == CRUX_ALG_AUTO) {
        /* one node: flat, over the engine's lanes (staged in shared memory
         * when they cannot be had, or single copy is asked for); across
         * nodes: three stages */
        alg = !q->all_local                                     ? CRUX_ALG_HIER
              : q->cma_min_bytes == 0 && has(q, CRUX_CAP_LANES) ? CRUX_ALG_ENGINE
                                                                : CRUX_ALG_FLAT;
    }
    if (alg == CRUX_ALG_HIER || alg == CRUX_ALG_HIER_SEQUENTIAL) {
        if (!has(q, CRUX_CAP_LAYOUT)) {
            *why = "no usable groups";
            return CRUX_ALG_FALLBACK;
        }
        return alg;
    }
    if (!q->all_local) {
        *why = "the flat algorithm needs every rank on one node";
        return CRUX_ALG_FALLBACK;
    }
    if (alg == CRUX_ALG_ENGINE) {
        if (!has(q, CRUX_CAP_ENGINE)) {
            *why = "no multipath engine";
            return CRUX_ALG_FALLBACK;
        }
        return alg;
    }
    if (!has(q, CRUX_CAP_GROUP)) {
        *why = "no shared memory";
        return CRUX_ALG_FALLBACK;
    }
    if (alg == CRUX_ALG_FLAT) {
        return cma_wins(has(q, CRUX_CAP_CMA), q->cma_min_bytes, q->bytes) ? CRUX_ALG_CMA
                                                                          : CRUX_ALG_STAGED;
    }
    if (alg == CRUX_ALG_CMA && !has(q, CRUX_CAP_CMA)) {
        *why = "cma does not work here";
        return CRUX_ALG_FALLBACK;
    }
    return alg;
}

crux_allreduce_alg_t crux_coll_allreduce_choice(const crux_coll_group_t *g, size_t bytes)
{
    return cma_wins(g->has_cma, g->config.cma_min_bytes, bytes) ? CRUX_ALLREDUCE_CMA
                                                                : CRUX_ALLREDUCE_STAGED;
}

const char *crux_alg_name(crux_alg_t alg)
{
    static const char *const names[CRUX_ALG_COUNT] = {
        [CRUX_ALG_AUTO] = "auto",
        [CRUX_ALG_STAGED] = "staged",
        [CRUX_ALG_CMA] = "cma",
        [CRUX_ALG_FALLBACK] = "fallback",
        [CRUX_ALG_FLAT] = "flat",
        [CRUX_ALG_HIER] = "hier",
        [CRUX_ALG_HIER_SEQUENTIAL] = "hier-sequential",
        [CRUX_ALG_DEVICE] = "device",
        [CRUX_ALG_DEVICE_STAGED] = "device staged through host",
        [CRUX_ALG_ENGINE] = "engine",
    };
    return (int)alg >= 0 && alg < CRUX_ALG_COUNT ? names[alg] : "?";
}

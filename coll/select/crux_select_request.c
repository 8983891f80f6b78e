/* What a user asks of the Allreduce selection, by name: the three axes
 * (topology, hand-off, memory path) and the older single knob, whose
 * values each name a point on the axes.  The names are the MCA
 * parameters' and the info keys' values (ompi_coll/coll_crux_component.c). */
#include <string.h>

#include "coll/crux_coll.h"

static const char *const topologies[] = { "auto", "flat", "hier", "hier-sequential", NULL };
static const char *const handoffs[] = { "auto", "flags", "lanes", NULL };
static const char *const memory_paths[] = { "auto", "device", "host-staged", NULL };

/* The older knob (coll_crux_allreduce_algorithm), each value a point on
 * the axes: the one table of the names it still takes, retired ones
 * included (docs/usage/component.md, "The older single knob").  "flat",
 * "staged" and "cma" all name the flat algorithm with the flags hand-off
 * (CRUX_ALG_FLAGS): "staged" was its name, retired since the word means
 * device buffers through host memory only (docs/design/glossary.md), "cma"
 * single copy, removed as slower than it (docs/results/allreduce.md).  "engine" is the flat
 * algorithm over the lanes. */
static const char *const algorithms[] = {
    "auto", "staged", "cma", "fallback", "flat", "hier", "hier-sequential", "engine", NULL,
};
static const crux_request_t algorithm_points[] = {
    CRUX_REQUEST_AUTO,
    { .topology = CRUX_TOPOLOGY_FLAT, .handoff = CRUX_HANDOFF_FLAGS },
    { .topology = CRUX_TOPOLOGY_FLAT, .handoff = CRUX_HANDOFF_FLAGS },
    { .fallback = 1 },
    { .topology = CRUX_TOPOLOGY_FLAT, .handoff = CRUX_HANDOFF_FLAGS },
    { .topology = CRUX_TOPOLOGY_HIER },
    { .topology = CRUX_TOPOLOGY_HIER_SEQUENTIAL },
    { .topology = CRUX_TOPOLOGY_FLAT, .handoff = CRUX_HANDOFF_LANES },
};
_Static_assert(sizeof(algorithm_points) / sizeof(algorithm_points[0]) ==
                   sizeof(algorithms) / sizeof(algorithms[0]) - 1,
               "a point on the axes for every value of the older knob");
_Static_assert(sizeof(topologies) / sizeof(topologies[0]) == CRUX_TOPOLOGY_COUNT + 1, "names");
_Static_assert(sizeof(handoffs) / sizeof(handoffs[0]) == CRUX_HANDOFF_COUNT + 1, "names");
_Static_assert(sizeof(memory_paths) / sizeof(memory_paths[0]) == CRUX_MEMORY_PATH_COUNT + 1,
               "names");

const char *const *crux_request_values(const char *axis)
{
    if (axis == NULL) {
        return NULL;
    }
    return strcmp(axis, "topology") == 0      ? topologies
           : strcmp(axis, "handoff") == 0     ? handoffs
           : strcmp(axis, "memory_path") == 0 ? memory_paths
           : strcmp(axis, "algorithm") == 0   ? algorithms
                                              : NULL;
}

static int find(const char *const *names, const char *value)
{
    for (int i = 0; names != NULL && value != NULL && names[i] != NULL; i++) {
        if (strcmp(names[i], value) == 0) {
            return i;
        }
    }
    return -1;
}

crux_status_t crux_request_set(crux_request_t *request, const char *axis, const char *value)
{
    const char *const *names = crux_request_values(axis);
    int i = find(names, value);
    if (i < 0) {
        return CRUX_ERR_INVALID;
    }
    if (names == topologies) {
        request->topology = (crux_topology_t)i;
    } else if (names == handoffs) {
        request->handoff = (crux_handoff_t)i;
    } else if (names == memory_paths) {
        request->memory_path = (crux_memory_path_t)i;
    } else {
        *request = algorithm_points[i];
    }
    return CRUX_OK;
}

const char *crux_request_axis(int axis)
{
    static const char *const axes[CRUX_REQUEST_AXES] = { "algorithm", "topology", "handoff",
                                                         "memory_path" };
    return axis >= 0 && axis < CRUX_REQUEST_AXES ? axes[axis] : NULL;
}

crux_request_t crux_request_from_values(const int values[CRUX_REQUEST_AXES])
{
    crux_request_t r = CRUX_REQUEST_AUTO;
    for (int a = 0; a < CRUX_REQUEST_AXES; a++) {
        const char *const *names = crux_request_values(crux_request_axis(a));
        int n = 0;
        while (names[n] != NULL) {
            n++;
        }
        int v = values[a] >= 0 && values[a] < n ? values[a] : 0;
        /* an axis left at auto keeps what the older knob set */
        if (a == 0 || v != 0) {
            (void)crux_request_set(&r, crux_request_axis(a), names[v]);
        }
    }
    return r;
}

int crux_request_forced(const crux_request_t *request)
{
    return request->fallback || request->topology != CRUX_TOPOLOGY_AUTO ||
           request->handoff != CRUX_HANDOFF_AUTO;
}

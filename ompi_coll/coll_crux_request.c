/* What a communicator asks of the Allreduce selection (crux_request_t):
 * the selection's axes, each an MCA parameter coll_crux_allreduce_<axis>
 * (registered by coll_crux_component.c) and an info key
 * crux_allreduce_<axis>, with the values libcrux_coll names
 * (crux_request_values), the older single knob first.  Read by the module
 * at enable; the component only registers the parameters, so neither file
 * calls the other's functions but through the component's table. */
#include <stdio.h>
#include <string.h>

#include "ompi_config.h"

#include "opal/util/info.h"

#include "ompi_coll/coll_crux.h"

static const char *const axes[COLL_CRUX_AXES] = { "algorithm", "topology", "handoff",
                                                  "memory_path" };

const char *coll_crux_axis_name(int axis)
{
    return axes[axis];
}

int *coll_crux_axis_storage(int axis)
{
    mca_coll_crux_component_t *c = &mca_coll_crux_component;
    int *storage[COLL_CRUX_AXES] = { &c->allreduce_algorithm, &c->allreduce_topology,
                                     &c->allreduce_handoff, &c->allreduce_memory_path };
    return storage[axis];
}

static void request_set(crux_request_t *r, int axis, const char *value, int from_mca)
{
    /* an axis parameter left at auto keeps what the older knob set */
    if (!(from_mca && axis > 0 && strcmp(value, "auto") == 0)) {
        (void)crux_request_set(r, axes[axis], value);
    }
}

static crux_request_t mca_request(void)
{
    crux_request_t r = CRUX_REQUEST_AUTO;
    for (int a = 0; a < COLL_CRUX_AXES; a++) {
        const char *const *names = crux_request_values(axes[a]);
        int v = *coll_crux_axis_storage(a), n = 0;
        while (names[n] != NULL) {
            n++;
        }
        /* the enumeration admits only its own values; auto otherwise */
        request_set(&r, a, names[v >= 0 && v < n ? v : 0], 1);
    }
    return r;
}

crux_request_t coll_crux_comm_request(ompi_communicator_t *comm)
{
    crux_request_t r = mca_request();
    for (int a = 0; comm->super.s_info != NULL && a < COLL_CRUX_AXES; a++) {
        char key[40], value[32];
        int flag = 0;
        snprintf(key, sizeof(key), "crux_allreduce_%s", axes[a]);
        if (opal_info_get(comm->super.s_info, key, sizeof(value) - 1, value, &flag) !=
                OPAL_SUCCESS ||
            !flag) {
            continue;
        }
        if (crux_request_set(&r, axes[a], value) != CRUX_OK) {
            COLL_CRUX_VERBOSE(1, "communicator %s: unknown %s \"%s\" ignored", comm->c_name, key,
                              value);
        }
    }
    return r;
}

/* What a communicator asks of the Allreduce selection (crux_request_t):
 * the selection's axes, each an MCA parameter coll_crux_allreduce_<axis>
 * (registered by coll_crux_component.c) and an info key
 * crux_allreduce_<axis>, with the values libcrux_coll names
 * (crux_request_axis, crux_request_values).  The parameters combine as
 * crux_request_from_values has them; a communicator's info keys go on top,
 * the older single knob first.  Read by the module at enable; the
 * component only registers the parameters, so neither file calls the
 * other's functions but through the component's table. */
#include <stdio.h>

#include "ompi_config.h"

#include "opal/util/info.h"

#include "ompi_coll/coll_crux.h"

int *coll_crux_axis_storage(int axis)
{
    mca_coll_crux_component_t *c = &mca_coll_crux_component;
    int *storage[CRUX_REQUEST_AXES] = { &c->allreduce_algorithm, &c->allreduce_topology,
                                        &c->allreduce_handoff, &c->allreduce_memory_path };
    return storage[axis];
}

crux_request_t coll_crux_comm_request(ompi_communicator_t *comm)
{
    int values[CRUX_REQUEST_AXES];
    for (int a = 0; a < CRUX_REQUEST_AXES; a++) {
        values[a] = *coll_crux_axis_storage(a);
    }
    crux_request_t r = crux_request_from_values(values);
    for (int a = 0; comm->super.s_info != NULL && a < CRUX_REQUEST_AXES; a++) {
        char key[40], value[32];
        int flag = 0;
        snprintf(key, sizeof(key), "crux_allreduce_%s", crux_request_axis(a));
        if (opal_info_get(comm->super.s_info, key, sizeof(value) - 1, value, &flag) !=
                OPAL_SUCCESS ||
            !flag) {
            continue;
        }
        if (crux_request_set(&r, crux_request_axis(a), value) != CRUX_OK) {
            COLL_CRUX_VERBOSE(1, "communicator %s: unknown %s \"%s\" ignored", comm->c_name, key,
                              value);
        }
    }
    return r;
}

/* The host names of a cross communicator's ranks, for libcrux_coll's
 * reading of the job's "route" (crux_net_open_t's hosts,
 * crux_net_route_paths). */
#include <stdlib.h>

#include "ompi_config.h"

#include "ompi/proc/proc.h"
#include "opal/util/proc.h"

#include "ompi_coll/coll_crux.h"

static const char *host_of(ompi_communicator_t *comm, int rank)
{
    const char *name = opal_get_proc_hostname(&ompi_comm_peer_lookup(comm, rank)->super);
    return name != NULL ? name : "";
}

const char **coll_crux_route_hosts(ompi_communicator_t *cross)
{
    int size = ompi_comm_size(cross);
    const char **hosts = malloc((size_t)size * sizeof(*hosts));
    for (int p = 0; hosts != NULL && p < size; p++) {
        hosts[p] = host_of(cross, p);
    }
    return hosts;
}

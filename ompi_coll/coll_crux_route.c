/* The planned paths of a cross communicator's TCP connections: the
 * members' host names, for libcrux_coll's reading of the job's "route"
 * (crux_net_route_paths). */
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

crux_net_path_t *coll_crux_route_paths(ompi_communicator_t *cross, const char *route, int rail)
{
    int size = ompi_comm_size(cross);
    if (route[0] == '\0') {
        return NULL;
    }
    const char **hosts = malloc((size_t)size * sizeof(*hosts));
    if (hosts == NULL) {
        return NULL;
    }
    for (int p = 0; p < size; p++) {
        hosts[p] = host_of(cross, p);
    }
    crux_net_path_t *paths = crux_net_route_paths(route, hosts, size, ompi_comm_rank(cross), rail);
    free(hosts);
    return paths;
}

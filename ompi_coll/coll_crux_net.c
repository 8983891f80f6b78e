/* The channel of the hierarchical Allreduce's step between nodes
 * (libcrux_coll's crux_net.h), opened by crux_net_open over the cross
 * communicator: crux's UCX channel (on RDMA hosts, or forced with ucx),
 * crux's own TCP connections, marked with the job's level, or the PML
 * (Open MPI's point-to-point layer, which marks nothing); the fallbacks
 * and their agreement are the library's.  This file gives it the
 * parameters, the job's level and planned paths, and says the outcome.
 *
 * The marking follows the priority file: before each hierarchical
 * Allreduce the channel takes the level the job last read (the UCX
 * channel: the level of the cross communicator's rank 0, and that level's
 * context), so a level change applies from the next call, never inside
 * one.
 *
 * Paths: the TCP channel's connections take the paths the priority file's
 * "route" plans for this host's flows (coll_crux_route.c,
 * crux_net_route_paths).  When a job reads a priority file, before each
 * hierarchical Allreduce the cross communicator's ranks compare the route
 * each last read (crux_net_route_changed); once all read the same route
 * and it differs from the one the connections took, they all make the
 * channel again on it, between calls as for the levels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"

#include "ompi_coll/coll_crux.h"

static int cross_allgather(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    ompi_communicator_t *comm = arg;
    return comm->c_coll->coll_allgather(sbuf, (int)length, MPI_BYTE, rbuf, (int)length, MPI_BYTE,
                                        comm, comm->c_coll->coll_allgather_module) == OMPI_SUCCESS
               ? 0
               : -1;
}

/* "", or with verbosity 2 the pinned source ports, to say. */
static void pinned_ports(const crux_net_t *net, char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    for (int p = 0; net != NULL && p < 4096 && used + 32 < size; p++) {
        int port = crux_net_pinned_port(net, p);
        if (port >= 0) {
            used += (size_t)snprintf(text + used, size - used, "%s member %d from port %d",
                                     used ? "," : ", pinned to the planned path:", p, port);
        }
    }
}

/* What crux_net_open takes for this layout: the parameters, the job's
 * level and the route's paths (free them). */
static crux_net_open_t open_args(const mca_coll_crux_layout_t *l, const char *route, int rdma)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    int rail = ompi_comm_rank(l->local_comm);
    return (crux_net_open_t){
        .asked = (crux_net_kind_t)c->net,
        .rdma = rdma,
        .where = c->net_if,
        .rail = rail,
        .setup_timeout_ms = c->net_setup_timeout_ms,
        .level = coll_crux_job_net_level(),
        .paths = coll_crux_route_paths(l->cross_comm, route, rail),
    };
}

static crux_coll_oob_t cross_oob(const mca_coll_crux_layout_t *l)
{
    return (crux_coll_oob_t){
        .allgather = cross_allgather,
        .arg = l->cross_comm,
        .rank = ompi_comm_rank(l->cross_comm),
        .size = ompi_comm_size(l->cross_comm),
    };
}

void coll_crux_net_open(mca_coll_crux_layout_t *l, ompi_communicator_t *comm)
{
    if (l->cross_local) {
        return; /* the step stays on this node, in shared memory */
    }
    char rdma_why[128], why[512], route[COLL_CRUX_ROUTE_MAX];
    int rdma = crux_net_rdma_available(rdma_why, sizeof(rdma_why)); /* said below */
    coll_crux_job_route(route, sizeof(route));
    crux_net_open_t args = open_args(l, route, rdma);
    crux_coll_oob_t oob = cross_oob(l);
    crux_net_kind_t kind = crux_net_open(&oob, &args, &l->net, why, sizeof(why));
    free((void *)args.paths);
    l->route = crux_net_route_hash(route);
    if (why[0]) {
        COLL_CRUX_VERBOSE(1, "communicator %s: %s", comm->c_name, why);
    }
    char marks[128] = "", pinned[256];
    int sl, tc;
    crux_net_rdma_marks(&args.level, &sl, &tc);
    if (kind == CRUX_NET_TCP) {
        snprintf(marks, sizeof(marks), ", listening on %s, marked TOS %d, socket priority %d",
                 crux_net_address(l->net), crux_net_tos(&args.level),
                 crux_net_socket_priority(&args.level));
    } else if (kind == CRUX_NET_UCX) {
        snprintf(marks, sizeof(marks), ", context of SL %d, traffic class %d", sl, tc);
    }
    pinned_ports(l->net, pinned, sizeof(pinned));
    COLL_CRUX_VERBOSE(2, "communicator %s: step between nodes over %s (coll_crux_net %s; %s)%s%s",
                      comm->c_name, crux_net_kind_name(kind), crux_net_kind_name(args.asked),
                      rdma_why, marks, pinned);
}

/* The TCP channel made again on a new route, once every rank of the cross
 * communicator read it (see the top). */
static void follow_route(mca_coll_crux_layout_t *l, ompi_communicator_t *comm)
{
    char route[COLL_CRUX_ROUTE_MAX];
    if (!coll_crux_job_route(route, sizeof(route))) {
        return; /* no priority file: nothing to follow (alike on every rank) */
    }
    crux_coll_oob_t oob = cross_oob(l);
    if (!crux_net_route_changed(&oob, crux_net_route_hash(route), l->route)) {
        return;
    }
    crux_net_destroy(l->net);
    l->net = NULL;
    char why[512], pinned[256];
    crux_net_open_t args = open_args(l, route, 0);
    args.asked = CRUX_NET_TCP;
    crux_net_kind_t kind = crux_net_open(&oob, &args, &l->net, why, sizeof(why));
    free((void *)args.paths);
    l->route = crux_net_route_hash(route);
    if (kind != CRUX_NET_TCP) {
        COLL_CRUX_VERBOSE(1, "communicator %s: tcp channel not made again on the new route (%s)",
                          comm->c_name, why);
        return;
    }
    pinned_ports(l->net, pinned, sizeof(pinned));
    COLL_CRUX_VERBOSE(2, "communicator %s: tcp channel made again on a new route%s", comm->c_name,
                      pinned);
}

void coll_crux_net_mark(mca_coll_crux_layout_t *l, ompi_communicator_t *comm)
{
    if (l->net == NULL) {
        return;
    }
    if (crux_net_kind(l->net) == CRUX_NET_TCP) {
        follow_route(l, comm);
        if (l->net == NULL) {
            return;
        }
    }
    crux_net_level_t level = coll_crux_job_net_level();
    int rc = crux_net_set_level(l->net, &level);
    if (rc == 0) {
        return;
    }
    /* said at most once per change of level */
    if (crux_net_kind(l->net) == CRUX_NET_TCP) {
        COLL_CRUX_VERBOSE(2, "communicator %s: tcp channel re-marked TOS %d, socket priority %d%s",
                          comm->c_name, crux_net_tos(&level), crux_net_socket_priority(&level),
                          rc < 0 ? " (the socket priority was refused)" : "");
        return;
    }
    int index, contexts, sl, tc;
    if (rc > 0 && crux_net_ucx_context(l->net, &index, &contexts, &sl, &tc) == CRUX_OK) {
        COLL_CRUX_VERBOSE(
            2, "communicator %s: ucx channel on context %d of %d (SL %d, traffic class %d)",
            comm->c_name, index, contexts, sl, tc);
    } else if (rc < 0) {
        COLL_CRUX_VERBOSE(1, "communicator %s: ucx channel stays on its context: %s", comm->c_name,
                          crux_status_string(rc));
    }
}

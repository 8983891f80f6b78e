/* The channel of the hierarchical Allreduce's step between nodes
 * (libcrux_coll's crux_net.h): opened by crux_net_open over the cross
 * communicator, which decides it (none when the cross communicator's
 * ranks share this node; else crux's UCX channel on RDMA hosts or forced
 * with ucx, crux's own TCP connections, or the PML, and the fallbacks
 * and their agreement).  This file gives it the parameters, the job's
 * level and route and the ranks' host names, and says the outcome.
 *
 * Before each hierarchical Allreduce, between calls so a change applies
 * from the next call and never inside one, libcrux_coll follows the route
 * the job last read (crux_net_follow_route: the TCP channel made again
 * once every rank of the cross communicator read the same new route) and
 * marks the channel with the level the job last read (crux_net_mark; the
 * UCX channel: the level of the cross communicator's rank 0, and that
 * level's context); this file says what they did. */
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
 * level, the route ('route' as coll_crux_job_route read it, 'read' its
 * answer) and the ranks' host names. */
static crux_net_open_t open_args(const mca_coll_crux_layout_t *l, const char *route, bool read)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    return (crux_net_open_t){
        .asked = (crux_net_kind_t)c->net,
        .rdma = -1,
        .local = l->super.cross_local,
        .where = c->net_if,
        .rail = ompi_comm_rank(l->local_comm),
        .setup_timeout_ms = c->net_setup_timeout_ms,
        .level = coll_crux_job_net_level(),
        .route = read ? route : NULL,
        .hosts = l->hosts,
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
    char why[512], route[COLL_CRUX_ROUTE_MAX];
    l->hosts = coll_crux_route_hosts(l->cross_comm);
    bool read = coll_crux_job_route(route, sizeof(route));
    crux_net_open_t args = open_args(l, route, read);
    crux_coll_oob_t oob = cross_oob(l);
    crux_net_kind_t kind = crux_net_open(&oob, &args, &l->super.net, why, sizeof(why));
    l->super.route = crux_net_route_hash(route);
    if (kind == CRUX_NET_NONE) {
        return; /* nothing crosses a node */
    }
    if (why[0]) {
        COLL_CRUX_VERBOSE(1, "communicator %s: %s", comm->c_name, why);
    }
    char rdma_why[128], marks[128] = "", pinned[256];
    crux_net_rdma_available(rdma_why, sizeof(rdma_why));
    int sl, tc;
    crux_net_rdma_marks(&args.level, &sl, &tc);
    if (kind == CRUX_NET_TCP) {
        snprintf(marks, sizeof(marks), ", listening on %s, marked TOS %d, socket priority %d",
                 crux_net_address(l->super.net), crux_net_tos(&args.level),
                 crux_net_socket_priority(&args.level));
    } else if (kind == CRUX_NET_UCX) {
        snprintf(marks, sizeof(marks), ", context of SL %d, traffic class %d", sl, tc);
    }
    pinned_ports(l->super.net, pinned, sizeof(pinned));
    COLL_CRUX_VERBOSE(2, "communicator %s: step between nodes over %s (coll_crux_net %s; %s)%s%s",
                      comm->c_name, crux_net_kind_name(kind), crux_net_kind_name(args.asked),
                      rdma_why, marks, pinned);
}

void coll_crux_net_mark(mca_coll_crux_layout_t *l, ompi_communicator_t *comm)
{
    char route[COLL_CRUX_ROUTE_MAX], why[512], pinned[256];
    bool read = coll_crux_job_route(route, sizeof(route));
    crux_net_open_t args = open_args(l, route, read);
    crux_coll_oob_t oob = cross_oob(l);
    switch (crux_net_follow_route(&oob, &l->super.net, &args, &l->super.route, why, sizeof(why))) {
    case CRUX_NET_ROUTE_KEPT: break;
    case CRUX_NET_ROUTE_REMADE:
        pinned_ports(l->super.net, pinned, sizeof(pinned));
        COLL_CRUX_VERBOSE(2, "communicator %s: tcp channel made again on a new route%s",
                          comm->c_name, pinned);
        break;
    case CRUX_NET_ROUTE_LOST:
        COLL_CRUX_VERBOSE(1, "communicator %s: tcp channel not made again on the new route (%s)",
                          comm->c_name, why);
        break;
    }
    crux_net_marking_t m = crux_net_mark(l->super.net, &args.level);
    switch (m.outcome) {
    case CRUX_NET_MARK_SAME: break;
    case CRUX_NET_MARK_TCP:
        COLL_CRUX_VERBOSE(2, "communicator %s: tcp channel re-marked TOS %d, socket priority %d%s",
                          comm->c_name, m.tos, m.priority,
                          m.status != CRUX_OK ? " (the socket priority was refused)" : "");
        break;
    case CRUX_NET_MARK_UCX:
        COLL_CRUX_VERBOSE(
            2, "communicator %s: ucx channel on context %d of %d (SL %d, traffic class %d)",
            comm->c_name, m.context, m.contexts, m.sl, m.traffic_class);
        break;
    case CRUX_NET_MARK_UCX_KEPT:
        COLL_CRUX_VERBOSE(1, "communicator %s: ucx channel stays on its context: %s", comm->c_name,
                          crux_status_string(m.status));
        break;
    }
}

/* The channel of the hierarchical Allreduce's step between nodes
 * (libcrux_coll's crux_net.h), chosen by coll_crux_net: crux's UCX channel
 * (on RDMA hosts, or forced with ucx), crux's own TCP connections among the
 * cross communicator's ranks, marked with the job's level, or the PML (Open
 * MPI's point-to-point layer, which marks nothing).
 *
 * Set-up is collective over the cross communicator and its outcome agreed
 * there: every rank of it uses the same channel, and one that fails falls
 * back to the next (UCX, TCP, PML) alike on all.  The marking follows the
 * priority file: before each hierarchical Allreduce the channel takes the
 * level the job last read (the UCX channel: the level of the cross
 * communicator's rank 0, and that level's context), so a level change
 * applies from the next call, never inside one.
 *
 * Paths: the TCP channel's connections take the paths the priority file's
 * "route" plans for this host's flows (coll_crux_route.c,
 * crux_net_tcp_create_pinned).  When a job reads a priority file, before
 * each hierarchical Allreduce the cross communicator's ranks compare the
 * route each last read (a hash of it, 8 bytes each); once all read the
 * same route and it differs from the one the connections took, they all
 * make the channel again on it, between calls as for the levels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"

#include "ompi_coll/coll_crux.h"

/* Entry 'index' (modulo their number) of the comma-separated list 'list':
 * local rank i of every node listens on the i-th, so the ranks of a node
 * spread over its NICs as rails. */
static void rail_entry(const char *list, int index, char *entry, size_t size)
{
    int n = 1;
    for (const char *p = list; *p; p++) {
        n += *p == ',';
    }
    const char *start = list;
    for (int skip = index % n; skip > 0; skip--) {
        start = strchr(start, ',') + 1;
    }
    size_t len = strcspn(start, ",");
    snprintf(entry, size, "%.*s", (int)(len < size ? len : size - 1), start);
}

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

/* The TCP channel over the cross communicator on the route's paths. */
static crux_status_t open_tcp(crux_layout_t *l, const crux_coll_oob_t *oob,
                              const crux_net_level_t *level, const char *route, char *err,
                              size_t errlen)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    char where[128];
    rail_entry(c->net_if != NULL ? c->net_if : "", ompi_comm_rank(l->local_comm), where,
               sizeof(where));
    crux_net_path_t *paths =
        coll_crux_route_paths(l->cross_comm, route, ompi_comm_rank(l->local_comm));
    crux_status_t status = crux_net_tcp_create_pinned(oob, where, c->net_setup_timeout_ms, level,
                                                      paths, &l->net, err, errlen);
    free(paths);
    l->route = coll_crux_route_hash(route);
    return status;
}

static crux_coll_oob_t cross_oob(const crux_layout_t *l)
{
    return (crux_coll_oob_t){
        .allgather = cross_allgather,
        .arg = l->cross_comm,
        .rank = ompi_comm_rank(l->cross_comm),
        .size = ompi_comm_size(l->cross_comm),
    };
}

void coll_crux_net_open(crux_layout_t *l, ompi_communicator_t *comm)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    if (l->cross_local) {
        return; /* the step stays on this node, in shared memory */
    }
    char why[128];
    int rdma = crux_net_rdma_available(why, sizeof(why)); /* said below */
    crux_net_kind_t asked = (crux_net_kind_t)c->net;
    crux_net_kind_t kind = crux_net_choose(asked, rdma, 1);
    crux_net_level_t level = coll_crux_job_net_level();
    crux_coll_oob_t oob = cross_oob(l);
    char err[256], route[CRUX_PRIO_ROUTE_MAX];
    coll_crux_job_route(route, sizeof(route));
    if (kind == CRUX_NET_RDMA || kind == CRUX_NET_UCX) {
        crux_status_t status = crux_net_ucx_create(&oob, &level, &l->net, err, sizeof(err));
        if (status != CRUX_OK) {
            CRUX_VERBOSE(1, "communicator %s: no ucx channel between nodes (%s%s%s): tcp",
                         comm->c_name, crux_status_string(status), err[0] ? ": " : "", err);
            kind = CRUX_NET_TCP;
        }
    }
    if (kind == CRUX_NET_TCP) {
        crux_status_t status = open_tcp(l, &oob, &level, route, err, sizeof(err));
        if (status != CRUX_OK) {
            CRUX_VERBOSE(1, "communicator %s: no tcp channel between nodes (%s%s%s): the PML",
                         comm->c_name, crux_status_string(status), err[0] ? ": " : "", err);
            kind = CRUX_NET_PML;
        }
    }
    char marks[128] = "", pinned[256];
    int sl, tc;
    crux_net_rdma_marks(&level, &sl, &tc);
    if (l->net != NULL && crux_net_kind(l->net) == CRUX_NET_TCP) {
        snprintf(marks, sizeof(marks), ", listening on %s, marked TOS %d, socket priority %d",
                 crux_net_address(l->net), crux_net_tos(&level), crux_net_socket_priority(&level));
    } else if (l->net != NULL) {
        snprintf(marks, sizeof(marks), ", context of SL %d, traffic class %d", sl, tc);
    }
    pinned_ports(l->net, pinned, sizeof(pinned));
    CRUX_VERBOSE(2, "communicator %s: step between nodes over %s (coll_crux_net %s; %s)%s%s",
                 comm->c_name, crux_net_kind_name(kind), crux_net_kind_name(asked), why, marks,
                 pinned);
}

/* The TCP channel made again on a new route, once every rank of the cross
 * communicator read it (see the top). */
static void follow_route(crux_layout_t *l, ompi_communicator_t *comm)
{
    char route[CRUX_PRIO_ROUTE_MAX];
    if (!coll_crux_job_route(route, sizeof(route))) {
        return; /* no priority file: nothing to follow (alike on every rank) */
    }
    /* each rank's route now, and the one its connections took (ranks may
     * have read different files when they made them) */
    int size = ompi_comm_size(l->cross_comm);
    uint64_t mine[2] = { coll_crux_route_hash(route), l->route };
    uint64_t *all = malloc((size_t)size * sizeof(mine));
    crux_coll_oob_t oob = cross_oob(l);
    bool same = all != NULL && oob.allgather(mine, all, sizeof(mine), oob.arg) == 0, stale = false;
    for (int p = 0; same && p < size; p++) {
        same = all[2 * p] == all[0];
        stale |= all[2 * p + 1] != all[0];
    }
    /* every rank saw the same answers, so all take the same branch; a
     * failed allgather (or no memory) leaves the channel as it is */
    free(all);
    if (!same || !stale) {
        return;
    }
    crux_net_destroy(l->net);
    l->net = NULL;
    crux_net_level_t level = coll_crux_job_net_level();
    char err[256], pinned[256];
    crux_status_t status = open_tcp(l, &oob, &level, route, err, sizeof(err));
    if (status != CRUX_OK) {
        CRUX_VERBOSE(1,
                     "communicator %s: tcp channel not made again on the new route (%s%s%s): "
                     "the PML",
                     comm->c_name, crux_status_string(status), err[0] ? ": " : "", err);
        return;
    }
    pinned_ports(l->net, pinned, sizeof(pinned));
    CRUX_VERBOSE(2, "communicator %s: tcp channel made again on a new route%s", comm->c_name,
                 pinned);
}

void coll_crux_net_mark(crux_layout_t *l, ompi_communicator_t *comm)
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
        CRUX_VERBOSE(2, "communicator %s: tcp channel re-marked TOS %d, socket priority %d%s",
                     comm->c_name, crux_net_tos(&level), crux_net_socket_priority(&level),
                     rc < 0 ? " (the socket priority was refused)" : "");
        return;
    }
    int index, contexts, sl, tc;
    if (rc > 0 && crux_net_ucx_context(l->net, &index, &contexts, &sl, &tc) == CRUX_OK) {
        CRUX_VERBOSE(2,
                     "communicator %s: ucx channel on context %d of %d (SL %d, traffic class %d)",
                     comm->c_name, index, contexts, sl, tc);
    } else if (rc < 0) {
        CRUX_VERBOSE(1, "communicator %s: ucx channel stays on its context: %s", comm->c_name,
                     crux_status_string(rc));
    }
}

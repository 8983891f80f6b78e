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
 * applies from the next call, never inside one. */
#include <stdio.h>
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
    crux_coll_oob_t oob = {
        .allgather = cross_allgather,
        .arg = l->cross_comm,
        .rank = ompi_comm_rank(l->cross_comm),
        .size = ompi_comm_size(l->cross_comm),
    };
    char err[256];
    if (kind == CRUX_NET_RDMA || kind == CRUX_NET_UCX) {
        crux_status_t status = crux_net_ucx_create(&oob, &level, &l->net, err, sizeof(err));
        if (status != CRUX_OK) {
            CRUX_VERBOSE(1, "communicator %s: no ucx channel between nodes (%s%s%s): tcp",
                         comm->c_name, crux_status_string(status), err[0] ? ": " : "", err);
            kind = CRUX_NET_TCP;
        }
    }
    if (kind == CRUX_NET_TCP) {
        char where[128];
        rail_entry(c->net_if != NULL ? c->net_if : "", ompi_comm_rank(l->local_comm), where,
                   sizeof(where));
        crux_status_t status = crux_net_tcp_create(&oob, where, c->net_setup_timeout_ms, &level,
                                                   &l->net, err, sizeof(err));
        if (status != CRUX_OK) {
            CRUX_VERBOSE(1, "communicator %s: no tcp channel between nodes (%s%s%s): the PML",
                         comm->c_name, crux_status_string(status), err[0] ? ": " : "", err);
            kind = CRUX_NET_PML;
        }
    }
    char marks[128] = "";
    int sl, tc;
    crux_net_rdma_marks(&level, &sl, &tc);
    if (l->net != NULL && crux_net_kind(l->net) == CRUX_NET_TCP) {
        snprintf(marks, sizeof(marks), ", listening on %s, marked TOS %d, socket priority %d",
                 crux_net_address(l->net), crux_net_tos(&level), crux_net_socket_priority(&level));
    } else if (l->net != NULL) {
        snprintf(marks, sizeof(marks), ", context of SL %d, traffic class %d", sl, tc);
    }
    CRUX_VERBOSE(2, "communicator %s: step between nodes over %s (coll_crux_net %s; %s)%s",
                 comm->c_name, crux_net_kind_name(kind), crux_net_kind_name(asked), why, marks);
}

void coll_crux_net_mark(const crux_layout_t *l, ompi_communicator_t *comm)
{
    if (l->net == NULL) {
        return;
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

/* Opening the channel between nodes (crux_net.h): none for members that
 * share a node; else the kind asked where it is available, else down the
 * order UCX (on RDMA), TCP, none (the caller's own point-to-point layer).
 * Every channel's creation agrees its outcome among the members, so each
 * step down is taken by all of them alike, and they all end on the same
 * kind.  Following a new route between collectives: the TCP channel made
 * again on it, once every member read it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/crux_net.h"

void crux_net_rail_entry(const char *list, int rail, char *entry, size_t size)
{
    if (size == 0) {
        return;
    }
    int n = 1;
    for (const char *p = list != NULL ? list : ""; *p; p++) {
        n += *p == ',';
    }
    const char *start = list != NULL ? list : "";
    for (int skip = (rail < 0 ? 0 : rail) % n; skip > 0; skip--) {
        start = strchr(start, ',') + 1;
    }
    size_t len = strcspn(start, ",");
    snprintf(entry, size, "%.*s", (int)(len < size ? len : size - 1), start);
}

/* Append "no <kind> channel (<status>[: <err>]): <next>" to 'why'. */
static void say_step(char *why, size_t len, crux_net_kind_t kind, crux_status_t status,
                     const char *err, crux_net_kind_t next)
{
    size_t used = strlen(why);
    if (used + 1 >= len) {
        return;
    }
    snprintf(why + used, len - used, "%sno %s channel (%s%s%s): %s", used ? "; " : "",
             crux_net_kind_name(kind), crux_status_string(status), err[0] ? ": " : "", err,
             next == CRUX_NET_PML ? "the PML" : crux_net_kind_name(next));
}

crux_net_kind_t crux_net_open(const crux_coll_oob_t *oob, const crux_net_open_t *o,
                              crux_net_t **net_p, char *why, size_t len)
{
    char err[256] = "";
    *net_p = NULL;
    if (len > 0) {
        why[0] = '\0';
    }
    if (o->local) {
        return CRUX_NET_NONE; /* the step stays on this node, in shared memory */
    }
    int rdma = o->rdma;
    if (rdma < 0) {
        /* only AUTO and RDMA choose by it */
        rdma = (o->asked == CRUX_NET_AUTO || o->asked == CRUX_NET_RDMA) &&
               crux_net_rdma_available(err, sizeof(err));
        err[0] = '\0';
    }
    crux_net_kind_t kind = crux_net_choose(o->asked, rdma, 1);
    if (kind == CRUX_NET_RDMA || kind == CRUX_NET_UCX) {
        crux_status_t status = crux_net_ucx_create(oob, &o->level, net_p, err, sizeof(err));
        if (status == CRUX_OK) {
            return CRUX_NET_UCX;
        }
        say_step(why, len, CRUX_NET_UCX, status, err, CRUX_NET_TCP);
        kind = CRUX_NET_TCP;
    }
    if (kind == CRUX_NET_TCP) {
        char where[128];
        crux_net_rail_entry(o->where, o->rail, where, sizeof(where));
        err[0] = '\0';
        crux_net_path_t *paths =
            o->route != NULL && o->hosts != NULL
                ? crux_net_route_paths(o->route, o->hosts, oob->size, oob->rank, o->rail)
                : NULL;
        crux_status_t status = crux_net_tcp_create_pinned(
            oob, where, o->setup_timeout_ms, &o->level, paths, net_p, err, sizeof(err));
        free(paths);
        if (status == CRUX_OK) {
            return CRUX_NET_TCP;
        }
        say_step(why, len, CRUX_NET_TCP, status, err, CRUX_NET_PML);
    }
    return CRUX_NET_PML;
}

int crux_net_route_changed(const crux_coll_oob_t *oob, uint64_t now, uint64_t took)
{
    uint64_t mine[2] = { now, took };
    uint64_t *all = malloc((size_t)oob->size * sizeof(mine));
    /* every member saw the same answers, so all take the same branch; a
     * failed exchange (or no memory) leaves the channel as it is */
    int same = all != NULL && oob->allgather(mine, all, sizeof(mine), oob->arg) == 0, stale = 0;
    for (int p = 0; same && p < oob->size; p++) {
        same = all[2 * p] == all[0];
        stale |= all[2 * p + 1] != all[0];
    }
    free(all);
    return same && stale;
}

crux_net_route_outcome_t crux_net_follow_route(const crux_coll_oob_t *oob, crux_net_t **net_p,
                                               const crux_net_open_t *open, uint64_t *took,
                                               char *why, size_t len)
{
    if (len > 0) {
        why[0] = '\0';
    }
    /* no priority file, or a channel that pins no paths: alike on every
     * member (the kind is agreed at opening), so none exchanges */
    if (open->route == NULL || *net_p == NULL || crux_net_kind(*net_p) != CRUX_NET_TCP) {
        return CRUX_NET_ROUTE_KEPT;
    }
    uint64_t now = crux_net_route_hash(open->route);
    if (!crux_net_route_changed(oob, now, *took)) {
        return CRUX_NET_ROUTE_KEPT;
    }
    crux_net_destroy(*net_p);
    crux_net_open_t tcp = *open;
    tcp.asked = CRUX_NET_TCP;
    tcp.local = 0;
    crux_net_kind_t kind = crux_net_open(oob, &tcp, net_p, why, len);
    *took = now;
    return kind == CRUX_NET_TCP ? CRUX_NET_ROUTE_REMADE : CRUX_NET_ROUTE_LOST;
}

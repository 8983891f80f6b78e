/* The planned paths of a cross group's TCP connections, from a job's
 * "route" in the priority file (crux_net.h): "SRC>DST:INDEX/COUNT,..."
 * (host names as crux-sched's cluster file has them, which are the hosts'
 * names here), one entry per flow between two hosts with more than one
 * candidate path.  The connection from this member to a member on host
 * DST takes the path of this host's entry to DST; crux_net_tcp_create_pinned
 * pins it.  Several entries of one pair are its rails, NIC 0's first: the
 * member on rail i takes the i-th. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/crux_net.h"

#define CRUX_ROUTE_RAILS 64 /* entries of one pair told apart */

uint64_t crux_net_route_hash(const char *route)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const char *p = route; *p; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    }
    return h;
}

/* The path of the rail-th entry "from>to:i/n" of route (modulo their
 * number: a flow per rail, NIC 0's first), or none. */
static crux_net_path_t route_entry(const char *route, const char *from, const char *to, int rail)
{
    crux_net_path_t found[CRUX_ROUTE_RAILS];
    int n = 0;
    size_t lf = strlen(from), lt = strlen(to);
    for (const char *e = route; e != NULL && *e && n < CRUX_ROUTE_RAILS;
         e = strchr(e, ',') ? strchr(e, ',') + 1 : NULL) {
        if (strncmp(e, from, lf) != 0 || e[lf] != '>' || strncmp(e + lf + 1, to, lt) != 0 ||
            e[lf + 1 + lt] != ':') {
            continue;
        }
        int index, count, used = 0;
        const char *v = e + lf + lt + 2;
        if (sscanf(v, "%d/%d%n", &index, &count, &used) == 2 &&
            (v[used] == ',' || v[used] == '\0') && count >= 2 && index >= 0 && index < count) {
            found[n++] = (crux_net_path_t){ index, count };
        } else {
            found[n++] = (crux_net_path_t){ -1, 0 };
        }
    }
    return n > 0 ? found[(rail < 0 ? 0 : rail) % n] : (crux_net_path_t){ -1, 0 };
}

crux_net_path_t *crux_net_route_paths(const char *route, const char *const *hosts, int size, int me,
                                      int rail)
{
    int any = 0;
    if (route == NULL || route[0] == '\0' || size <= 0 || me < 0 || me >= size) {
        return NULL;
    }
    crux_net_path_t *paths = calloc((size_t)size, sizeof(*paths));
    if (paths == NULL) {
        return NULL;
    }
    const char *mine = hosts[me] != NULL ? hosts[me] : "";
    for (int p = 0; p < size; p++) {
        paths[p] = p == me ? (crux_net_path_t){ -1, 0 }
                           : route_entry(route, mine, hosts[p] != NULL ? hosts[p] : "", rail);
        any |= paths[p].count >= 2;
    }
    if (!any) {
        free(paths);
        return NULL;
    }
    return paths;
}

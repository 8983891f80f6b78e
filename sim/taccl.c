/* TACCL* as the Crux paper ran it: each job on its least congested paths
 * in arrival order (policy.c), and priority to traffic with the longer
 * transmission distance.  A job's distance is the hop count of its longest
 * flow; the distinct distances of the running jobs take the levels from
 * the top down (the longest on level K-1), those past the K-th share
 * level 0. */
#include <stdlib.h>

#include "sim/sim_internal.h"

#define MAX_HOPS 64 /* longer flows count as this long */

crux_status_t sim_taccl_levels(sim_t *s, const crux_sched_plan_t *plan, const int *jobs, int n)
{
    int present[MAX_HOPS + 1] = { 0 }, *dist = malloc((size_t)(n ? n : 1) * sizeof(int));
    if (dist == NULL)
        return CRUX_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++) {
        dist[i] = 0;
        for (int f = 0; f < crux_sched_plan_flows(plan, i); f++) {
            crux_sched_flow_t fl;
            crux_sched_plan_flow(plan, i, f, &fl);
            if (fl.nlinks > dist[i])
                dist[i] = fl.nlinks > MAX_HOPS ? MAX_HOPS : fl.nlinks;
        }
        present[dist[i]] = 1;
    }
    int level_of[MAX_HOPS + 1], level = s->cfg.levels - 1;
    for (int h = MAX_HOPS; h >= 0; h--) {
        level_of[h] = level;
        if (present[h] && level > 0)
            level--;
    }
    for (int i = 0; i < n; i++)
        s->jobs[jobs[i]].next.level = level_of[dist[i]];
    free(dist);
    return CRUX_OK;
}

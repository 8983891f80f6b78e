/* The policies that decide a plan's paths and levels: Crux, its ablation and
 * the baselines that fit in a priority file (TACCL*, fair sharing), written
 * once for crux-sched daemon and crux-sim.  The names are crux-sim's. */
#include <stdlib.h>
#include <string.h>

#include "common/crux_keyed.h"
#include "sched/plan/crux_sched_plan.h"

static const char *const policy_names[CRUX_SCHED_POLICIES] = {
    "none",    "taccl",       "crux-pa",        "crux-ps-pa",     "crux-full",
    "crux-ps", "crux-pa-net", "crux-ps-pa-net", "crux-full-paper"
};

const char *crux_sched_policy_name(crux_sched_policy_t policy)
{
    return policy >= 0 && policy < CRUX_SCHED_POLICIES ? policy_names[policy] : "?";
}

int crux_sched_policy_from_name(const char *name)
{
    for (int p = 0; name != NULL && p < CRUX_SCHED_POLICIES; p++)
        if (strcmp(name, policy_names[p]) == 0)
            return p;
    return -1;
}

/* Every job on one level: fair sharing among them. */
static void one_level(crux_sched_plan_t *p, int level)
{
    for (int i = 0; i < p->njobs; i++)
        p->jobs[i].level = level;
    p->stage = PLAN_LEVELS;
}

crux_status_t crux_sched_plan_rank_levels(crux_sched_plan_t *p, int levels)
{
    if (p == NULL || p->stage < PLAN_PRIORITIES || levels < 1 || levels > CRUX_SCHED_MAX_LEVELS)
        return CRUX_ERR_INVALID;
    crux_keyed_t *k = malloc((size_t)(p->njobs ? p->njobs : 1) * sizeof(*k));
    if (k == NULL)
        return CRUX_ERR_NO_MEMORY;
    int m = 0;
    for (int i = 0; i < p->njobs; i++) {
        p->jobs[i].level = levels - 1;
        if (p->jobs[i].nflows > 0)
            k[m++] = (crux_keyed_t){ p->jobs[i].priority, i };
    }
    qsort(k, (size_t)m, sizeof(*k), crux_keyed_desc);
    for (int r = 0; r < m; r++)
        p->jobs[k[r].job].level = levels - 1 - (int)((long)r * levels / m);
    free(k);
    p->stage = PLAN_LEVELS;
    return CRUX_OK;
}

#define TACCL_MAX_HOPS 64 /* longer flows count as this long */

crux_status_t crux_sched_plan_taccl_levels(crux_sched_plan_t *p, int levels)
{
    if (p == NULL || p->stage < PLAN_PATHS || levels < 1 || levels > CRUX_SCHED_MAX_LEVELS)
        return CRUX_ERR_INVALID;
    int present[TACCL_MAX_HOPS + 1] = { 0 },
                                 *dist = malloc((size_t)(p->njobs ? p->njobs : 1) * sizeof(int));
    if (dist == NULL)
        return CRUX_ERR_NO_MEMORY;
    for (int i = 0; i < p->njobs; i++) {
        const plan_job_t *j = &p->jobs[i];
        dist[i] = 0;
        for (int f = j->flow_off; f < j->flow_off + j->nflows; f++) {
            int hops = p->flows[f].path_len;
            if (hops > dist[i])
                dist[i] = hops > TACCL_MAX_HOPS ? TACCL_MAX_HOPS : hops;
        }
        present[dist[i]] = 1;
    }
    int level_of[TACCL_MAX_HOPS + 1], level = levels - 1;
    for (int h = TACCL_MAX_HOPS; h >= 0; h--) {
        level_of[h] = level;
        if (present[h] && level > 0)
            level--;
    }
    for (int i = 0; i < p->njobs; i++)
        p->jobs[i].level = level_of[dist[i]];
    free(dist);
    p->stage = PLAN_LEVELS;
    return CRUX_OK;
}

/* The path selection each policy makes. */
static crux_status_t policy_paths(crux_sched_plan_t *p, crux_sched_policy_t policy, uint64_t seed)
{
    switch (policy) {
    case CRUX_SCHED_POLICY_CRUX_PS:
    case CRUX_SCHED_POLICY_CRUX_PS_PA:
    case CRUX_SCHED_POLICY_CRUX_PS_PA_NET:
    case CRUX_SCHED_POLICY_CRUX_FULL:
    case CRUX_SCHED_POLICY_CRUX_FULL_PAPER:
        return crux_sched_plan_select_paths(p, CRUX_SCHED_PATHS_CRUX, seed);
    case CRUX_SCHED_POLICY_TACCL: {
        /* least congested paths in the plan's order (arrival order) */
        int *order = malloc((size_t)(p->njobs ? p->njobs : 1) * sizeof(int));
        if (order == NULL)
            return CRUX_ERR_NO_MEMORY;
        for (int i = 0; i < p->njobs; i++)
            order[i] = i;
        crux_status_t st = crux_sched_plan_select_paths_ordered(p, order, p->njobs);
        free(order);
        return st;
    }
    default: return crux_sched_plan_select_paths(p, CRUX_SCHED_PATHS_ECMP, seed);
    }
}

crux_status_t crux_sched_plan_policy(crux_sched_plan_t *p, crux_sched_policy_t policy,
                                     const crux_sched_options_t *opts)
{
    if (p == NULL || opts == NULL || policy < 0 || policy >= CRUX_SCHED_POLICIES ||
        opts->levels < 1 || opts->levels > CRUX_SCHED_MAX_LEVELS || opts->reserve < 0 ||
        opts->reserve >= opts->levels)
        return CRUX_ERR_INVALID;
    crux_sched_options_t o = *opts;
    o.priorities = policy == CRUX_SCHED_POLICY_CRUX_FULL ||
                           policy == CRUX_SCHED_POLICY_CRUX_PA_NET ||
                           policy == CRUX_SCHED_POLICY_CRUX_PS_PA_NET
                       ? CRUX_SCHED_PRIORITIES_NETWORK
                       : CRUX_SCHED_PRIORITIES_PAPER;
    int jobs_levels = o.levels - o.reserve; /* the top ones are kept for other traffic */
    crux_status_t st = policy_paths(p, policy, o.seed);
    if (st != CRUX_OK)
        return st;
    switch (policy) {
    case CRUX_SCHED_POLICY_TACCL: return crux_sched_plan_taccl_levels(p, jobs_levels);
    case CRUX_SCHED_POLICY_CRUX_PA:
    case CRUX_SCHED_POLICY_CRUX_PS_PA:
    case CRUX_SCHED_POLICY_CRUX_PA_NET:
    case CRUX_SCHED_POLICY_CRUX_PS_PA_NET:
        st = crux_sched_plan_order(p, &o);
        return st == CRUX_OK ? crux_sched_plan_rank_levels(p, jobs_levels) : st;
    case CRUX_SCHED_POLICY_CRUX_FULL:
    case CRUX_SCHED_POLICY_CRUX_FULL_PAPER:
        st = crux_sched_plan_order(p, &o);
        return st == CRUX_OK ? crux_sched_plan_levels(p, &o) : st;
    default: /* none, Crux's path selection alone: one level */ one_level(p, 0); return CRUX_OK;
    }
}

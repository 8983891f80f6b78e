/* The policies, behind one entry point run on every arrival and
 * departure: each chooses the running jobs' paths and levels (and CASSINI
 * its time shifts), into the jobs' next decisions. */
#include <stdlib.h>
#include <string.h>

#include "sched/plan/keyed.h"
#include "sim/sim_internal.h"

static const char *const policy_names[CRUX_SIM_POLICIES] = {
    "none",      "sincronia", "taccl",   "cassini",     "crux-pa",        "crux-ps-pa",
    "crux-full", "fixed",     "crux-ps", "crux-pa-net", "crux-ps-pa-net", "crux-full-paper"
};

const char *crux_sim_policy_name(crux_sim_policy_t p)
{
    return p >= 0 && p < CRUX_SIM_POLICIES ? policy_names[p] : "?";
}

int crux_sim_policy_from_name(const char *name)
{
    for (int p = 0; p < CRUX_SIM_POLICIES; p++)
        if (strcmp(name, policy_names[p]) == 0)
            return p;
    return -1;
}

/* Crux priorities onto K levels by rank, without Algorithm 1: the jobs
 * sorted by priority cut into K groups of equal size (the compression a
 * scheduler without one would do). */
static crux_status_t rank_levels(sim_t *s, const crux_sched_plan_t *plan, const int *jobs, int n)
{
    sched_keyed_t *k = malloc((size_t)(n ? n : 1) * sizeof(*k));
    if (k == NULL)
        return CRUX_ERR_NO_MEMORY;
    int m = 0, K = s->cfg.levels;
    for (int i = 0; i < n; i++) {
        crux_sched_job_result_t r;
        crux_sched_plan_job(plan, i, &r);
        s->jobs[jobs[i]].next.level = K - 1;
        if (r.nflows > 0)
            k[m++] = (sched_keyed_t){ r.priority, i };
    }
    qsort(k, (size_t)m, sizeof(*k), sched_keyed_desc);
    for (int r = 0; r < m; r++)
        s->jobs[jobs[k[r].job]].next.level = K - 1 - (int)((long)r * K / m);
    free(k);
    return CRUX_OK;
}

static crux_status_t plan_levels(sim_t *s, const crux_sched_plan_t *plan, const int *jobs, int n)
{
    for (int i = 0; i < n; i++) {
        crux_sched_job_result_t r;
        crux_sched_plan_job(plan, i, &r);
        s->jobs[jobs[i]].next.level = r.level;
    }
    return CRUX_OK;
}

static crux_status_t choose_paths(sim_t *s, crux_sched_plan_t *plan, int n)
{
    switch (s->cfg.policy) {
    case CRUX_SIM_CRUX_PS:
    case CRUX_SIM_CRUX_PS_PA:
    case CRUX_SIM_CRUX_PS_PA_NET:
    case CRUX_SIM_CRUX_FULL:
    case CRUX_SIM_CRUX_FULL_PAPER:
        return crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_CRUX, s->cfg.seed);
    case CRUX_SIM_TACCL: {
        /* the running list is in arrival order, as plan indices */
        int *order = malloc((size_t)(n ? n : 1) * sizeof(int));
        if (order == NULL)
            return CRUX_ERR_NO_MEMORY;
        for (int i = 0; i < n; i++)
            order[i] = i;
        crux_status_t st = crux_sched_plan_select_paths_ordered(plan, order, n);
        free(order);
        return st;
    }
    default: return crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_ECMP, s->cfg.seed);
    }
}

/* The planner's options for Crux's policies: the run's levels, orders and
 * seed; the network model for those that see the network (the others:
 * P = k I). */
static crux_sched_options_t crux_options(const sim_t *s)
{
    crux_sim_policy_t p = s->cfg.policy;
    crux_sched_options_t o;
    crux_sched_options_defaults(&o);
    o.levels = s->cfg.levels;
    o.reserve = 0;
    o.orders = s->cfg.orders;
    o.seed = s->cfg.seed;
    o.priorities =
        p == CRUX_SIM_CRUX_FULL || p == CRUX_SIM_CRUX_PA_NET || p == CRUX_SIM_CRUX_PS_PA_NET
            ? CRUX_SCHED_PRIORITIES_NETWORK
            : CRUX_SCHED_PRIORITIES_PAPER;
    return o;
}

static crux_status_t choose_levels(sim_t *s, crux_sched_plan_t *plan, const int *jobs, int n)
{
    int K = s->cfg.levels;
    crux_status_t st = CRUX_OK;
    crux_sched_options_t o = crux_options(s);
    switch (s->cfg.policy) {
    case CRUX_SIM_SINCRONIA: return sim_sincronia_levels(s, jobs, n);
    case CRUX_SIM_TACCL: return sim_taccl_levels(s, plan, jobs, n);
    case CRUX_SIM_CRUX_PA:
    case CRUX_SIM_CRUX_PS_PA:
    case CRUX_SIM_CRUX_PA_NET:
    case CRUX_SIM_CRUX_PS_PA_NET:
        st = crux_sched_plan_order(plan, &o);
        return st == CRUX_OK ? rank_levels(s, plan, jobs, n) : st;
    case CRUX_SIM_CRUX_FULL:
    case CRUX_SIM_CRUX_FULL_PAPER:
        st = crux_sched_plan_order(plan, &o);
        if (st == CRUX_OK)
            st = crux_sched_plan_levels(plan, &o);
        return st == CRUX_OK ? plan_levels(s, plan, jobs, n) : st;
    case CRUX_SIM_FIXED:
        for (int i = 0; i < n; i++) {
            int l = s->jobs[jobs[i]].spec->level;
            s->jobs[jobs[i]].next.level = l < K ? l : K - 1;
        }
        return CRUX_OK;
    default: /* none, CASSINI, Crux path selection alone: one level, fair sharing */
        for (int i = 0; i < n; i++)
            s->jobs[jobs[i]].next.level = 0;
        return CRUX_OK;
    }
}

/* The policies that route by ECMP and need no priorities from a plan. */
static int ecmp_only(crux_sim_policy_t p)
{
    return p == CRUX_SIM_NONE || p == CRUX_SIM_SINCRONIA || p == CRUX_SIM_CASSINI ||
           p == CRUX_SIM_FIXED;
}

crux_status_t sim_policy_run(sim_t *s)
{
    const int *jobs = s->running;
    int n = s->nrunning;
    crux_status_t st = CRUX_OK;
    crux_sched_plan_t *plan = NULL;
    if (ecmp_only(s->cfg.policy)) {
        for (int i = 0; i < n && st == CRUX_OK; i++)
            st = sim_decision_copy(&s->jobs[jobs[i]].next, &s->jobs[jobs[i]].ecmp);
    } else {
        plan = sim_plan_build(s, jobs, n);
        if (plan == NULL)
            return CRUX_ERR_NO_MEMORY;
        st = choose_paths(s, plan, n);
        if (st == CRUX_OK)
            st = sim_plan_extract(s, plan, jobs, n);
    }
    if (st == CRUX_OK)
        st = choose_levels(s, plan, jobs, n);
    if (st == CRUX_OK && s->cfg.policy == CRUX_SIM_CASSINI)
        st = sim_cassini_shifts(s, jobs, n);
    crux_sched_plan_free(plan);
    if (st != CRUX_OK && s->err && s->err[0] == '\0')
        crux_errf(s->err, s->errlen, "policy %s failed: %s", crux_sim_policy_name(s->cfg.policy),
                  crux_status_string(st));
    return st;
}

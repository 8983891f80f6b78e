/* The policies, behind one entry point run on every arrival and
 * departure: each chooses the running jobs' paths and levels (and CASSINI
 * its time shifts), into the jobs' next decisions. */
#include <string.h>

#include "sim/crux_sim_internal.h"

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

static void plan_levels(sim_t *s, const crux_sched_plan_t *plan, const int *jobs, int n)
{
    for (int i = 0; i < n; i++) {
        crux_sched_job_result_t r;
        crux_sched_plan_job(plan, i, &r);
        s->jobs[jobs[i]].next.level = r.level;
    }
}

/* The planner's policy of the same name (crux_sched_plan_policy), or -1
 * for those only the simulator has. */
static int sched_policy(crux_sim_policy_t p)
{
    return p == CRUX_SIM_SINCRONIA || p == CRUX_SIM_CASSINI || p == CRUX_SIM_FIXED
               ? -1
               : crux_sched_policy_from_name(crux_sim_policy_name(p));
}

/* Sincronia, CASSINI and fixed levels: on the jobs' ECMP paths. */
static crux_status_t own_levels(sim_t *s, const int *jobs, int n)
{
    int K = s->cfg.levels;
    switch (s->cfg.policy) {
    case CRUX_SIM_SINCRONIA: return sim_sincronia_levels(s, jobs, n);
    case CRUX_SIM_FIXED:
        for (int i = 0; i < n; i++) {
            int l = s->jobs[jobs[i]].spec->level;
            s->jobs[jobs[i]].next.level = l < K ? l : K - 1;
        }
        return CRUX_OK;
    default: /* none, CASSINI: one level, fair sharing */
        for (int i = 0; i < n; i++)
            s->jobs[jobs[i]].next.level = 0;
        return CRUX_OK;
    }
}

/* The policies that route by ECMP and need no priorities from a plan:
 * each job keeps the ECMP paths it was given at its start. */
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
    if (ecmp_only(s->cfg.policy)) {
        for (int i = 0; i < n && st == CRUX_OK; i++)
            st = sim_decision_copy(&s->jobs[jobs[i]].next, &s->jobs[jobs[i]].ecmp);
        if (st == CRUX_OK)
            st = own_levels(s, jobs, n);
    } else {
        crux_sched_plan_t *plan = sim_plan_build(s, jobs, n);
        if (plan == NULL)
            return CRUX_ERR_NO_MEMORY;
        crux_sched_options_t o;
        crux_sched_options_defaults(&o);
        o.levels = s->cfg.levels;
        o.reserve = 0;
        o.orders = s->cfg.orders;
        o.seed = s->cfg.seed;
        st = crux_sched_plan_policy(plan, (crux_sched_policy_t)sched_policy(s->cfg.policy), &o);
        if (st == CRUX_OK)
            st = sim_plan_extract(s, plan, jobs, n);
        if (st == CRUX_OK)
            plan_levels(s, plan, jobs, n);
        crux_sched_plan_free(plan);
    }
    if (st == CRUX_OK && s->cfg.policy == CRUX_SIM_CASSINI)
        st = sim_cassini_shifts(s, jobs, n);
    if (st != CRUX_OK && s->err && s->err[0] == '\0')
        crux_errf(s->err, s->errlen, "policy %s failed: %s", crux_sim_policy_name(s->cfg.policy),
                  crux_status_string(st));
    return st;
}

/* libcrux_sched plans of the running jobs: the traffic of a job (its ring
 * Allreduce flows and M_{j,e} on the chosen paths) always comes from the
 * scheduler library, whatever the policy, so every policy is measured on
 * the same traffic model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_internal.h"

static crux_status_t add_job(crux_sched_plan_t *plan, const sim_job_t *j, char *err, size_t len)
{
    crux_sched_job_t job = { .id = j->spec->id,
                             .placement = j->place,
                             .nplacement = j->nplace,
                             .compute_s = j->spec->compute_s,
                             .work = j->work,
                             .overlap = j->spec->overlap,
                             .allreduce_bytes = j->spec->bytes };
    return crux_sched_plan_add_job(plan, &job, NULL, err, len);
}

crux_sched_plan_t *sim_plan_build(sim_t *s, const int *jobs, int n)
{
    crux_sched_plan_t *plan = crux_sched_plan_new(s->c);
    if (plan == NULL)
        return NULL;
    for (int i = 0; i < n; i++)
        if (add_job(plan, &s->jobs[jobs[i]], s->err, s->errlen) != CRUX_OK) {
            crux_sched_plan_free(plan);
            return NULL;
        }
    return plan;
}

static int decision_fit(sim_decision_t *d, int n)
{
    if (n <= d->cap)
        return 0;
    int *l = realloc(d->links, (size_t)n * sizeof(int));
    if (l != NULL)
        d->links = l;
    double *m = realloc(d->mbytes, (size_t)n * sizeof(double));
    if (m != NULL)
        d->mbytes = m;
    if (l == NULL || m == NULL)
        return -1;
    d->cap = n;
    return 0;
}

static crux_status_t decision_set(sim_decision_t *d, const int *links, const double *bytes, int n)
{
    if (decision_fit(d, n) != 0)
        return CRUX_ERR_NO_MEMORY;
    d->nlinks = n;
    memcpy(d->links, links, (size_t)n * sizeof(int));
    memcpy(d->mbytes, bytes, (size_t)n * sizeof(double));
    return CRUX_OK;
}

crux_status_t sim_decision_copy(sim_decision_t *to, const sim_decision_t *from)
{
    return decision_set(to, from->links, from->mbytes, from->nlinks);
}

/* The plan's paths into each job's next decision (plan job i is jobs[i]). */
crux_status_t sim_plan_extract(sim_t *s, const crux_sched_plan_t *plan, const int *jobs, int n)
{
    for (int i = 0; i < n; i++) {
        const int *links;
        const double *bytes;
        int nl = crux_sched_plan_job_links(plan, i, &links, &bytes);
        if (decision_set(&s->jobs[jobs[i]].next, links, bytes, nl) != CRUX_OK)
            return CRUX_ERR_NO_MEMORY;
    }
    return CRUX_OK;
}

/* A job's traffic, its iteration alone (on its placement, no other job,
 * on its least congested paths) and its ECMP paths. */
crux_status_t sim_job_profile(sim_t *s, sim_job_t *j)
{
    crux_sched_plan_t *plan = crux_sched_plan_new(s->c);
    if (plan == NULL)
        return CRUX_ERR_NO_MEMORY;
    crux_status_t st = add_job(plan, j, s->err, s->errlen);
    if (st == CRUX_OK)
        st = crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_CRUX, 1);
    crux_sched_job_result_t r;
    if (st == CRUX_OK)
        st = crux_sched_plan_job(plan, 0, &r);
    if (st != CRUX_OK) {
        crux_sched_plan_free(plan);
        return st;
    }
    int g = j->spec->gpus, hosts = j->nplace;
    j->net = r.nflows > 0;
    j->bytes_iter = r.bytes;
    j->flow_bytes = 0;
    for (int f = 0; f < r.nflows; f++) {
        crux_sched_flow_t fl;
        crux_sched_plan_flow(plan, 0, f, &fl);
        if (fl.bytes > j->flow_bytes)
            j->flow_bytes = fl.bytes;
    }
    /* alpha per ring step; a single-host job's Allreduce runs over the
     * GPUs' own links, which no other job uses */
    j->fixed_s = g > 1 ? s->cfg.alpha_s * 2 * (g - 1) : 0;
    if (hosts == 1 && g > 1)
        j->fixed_s += 2.0 * (g - 1) / g * j->spec->bytes / (s->cfg.intra_gbps * 1e9 / 8);
    crux_sched_timing_t t = { j->work, j->spec->compute_s, j->fixed_s + r.comm_s,
                              j->spec->overlap };
    j->alone_period = crux_sched_period(&t);
    /* ECMP hashes (job id, flow): the same paths in any plan */
    st = crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_ECMP, 1);
    if (st == CRUX_OK) {
        const int *links;
        const double *bytes;
        int nl = crux_sched_plan_job_links(plan, 0, &links, &bytes);
        st = decision_set(&j->ecmp, links, bytes, nl);
    }
    crux_sched_plan_free(plan);
    return st;
}

static int uf_find(int *uf, int x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

/* group[i]: the smallest i of the jobs (next decisions) linked to job i by
 * shared links, directly or not. */
void sim_share_groups(sim_t *s, const int *jobs, int n, int *group)
{
    s->stamp++;
    for (int i = 0; i < n; i++)
        group[i] = i;
    for (int i = 0; i < n; i++) {
        const sim_decision_t *d = &s->jobs[jobs[i]].next;
        for (int k = 0; k < d->nlinks; k++) {
            int l = d->links[k];
            if (s->link_stamp[l] != s->stamp) {
                s->link_stamp[l] = s->stamp;
                s->link_slot[l] = i;
                continue;
            }
            int a = uf_find(group, i), b = uf_find(group, s->link_slot[l]);
            if (a != b)
                group[a > b ? a : b] = a < b ? a : b;
        }
    }
    for (int i = 0; i < n; i++)
        group[i] = uf_find(group, i);
}

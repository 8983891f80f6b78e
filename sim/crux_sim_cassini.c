/* CASSINI (NSDI 2024) as the Crux paper ran it: jobs that share links get
 * time shifts so that their communication phases interleave; paths are
 * ECMP and bandwidth is shared fairly.
 *
 * When jobs start, each group of jobs sharing links that they joined is
 * laid out on a common timeline: a job's communication is an arc of d_j
 * (its comm time alone on its paths) every P_j (its iteration alone),
 * starting at its next communication.  The jobs already running keep their
 * schedule; each new job, from the longest arc down, picks among SHIFTS
 * delays spread over its period the one whose arcs overlap least with the
 * arcs of the jobs placed before it that share a link with it, over
 * HORIZON times the longest period (CASSINI's unified circle, cut to a
 * window when the periods have no small common multiple).  The delay is
 * applied once, before the job's first communication; afterwards jobs run
 * freely, so jobs whose periods differ drift apart again, as under
 * CASSINI.  Re-shifting the running jobs on every arrival would idle them
 * each time; leaving them be is the kinder reading of the baseline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_internal.h"

#define SHIFTS  32
#define HORIZON 4

typedef struct {
    int job;   /* index into s->jobs */
    int fresh; /* just started: it gets a shift */
    double period, arc, next, shift;
} member_t;

/* The running jobs first, then the new ones; each by arc, longest first. */
static int by_arc_desc(const void *a, const void *b)
{
    const member_t *x = a, *y = b;
    if (x->fresh != y->fresh)
        return x->fresh - y->fresh;
    if (x->arc != y->arc)
        return x->arc > y->arc ? -1 : 1;
    return x->job - y->job;
}

/* Seconds until the job's next communication phase starts, from its
 * current phase (the comm time alone stands for the rest of a transfer). */
static double next_comm(const sim_job_t *j, double arc)
{
    double pre = (1 - j->spec->overlap) * j->spec->compute_s;
    switch (j->phase) {
    case PH_COMPUTE: return j->compute_left + j->hold;
    case PH_HOLD: return j->hold_left;
    default: {
        double comm = j->fixed_left + j->comm_left * (arc - j->fixed_s);
        return (j->compute_left > comm ? j->compute_left : comm) + pre + j->hold;
    }
    }
}

/* Total overlap of two arc trains over [0, horizon). */
static double overlap(const member_t *a, double sa, const member_t *b, double horizon)
{
    double total = 0, ta = a->next + sa, tb = b->next + b->shift;
    while (ta < horizon && tb < horizon) {
        double lo = ta > tb ? ta : tb, hi = ta + a->arc < tb + b->arc ? ta + a->arc : tb + b->arc;
        if (hi > lo)
            total += hi - lo;
        if (ta + a->arc < tb + b->arc)
            ta += a->period;
        else
            tb += b->period;
    }
    return total;
}

static int shares_link(sim_t *s, const sim_job_t *a, const sim_job_t *b)
{
    int stamp = ++s->stamp;
    for (int k = 0; k < a->next.nlinks; k++)
        s->link_mark[a->next.links[k]] = stamp;
    for (int k = 0; k < b->next.nlinks; k++)
        if (s->link_mark[b->next.links[k]] == stamp)
            return 1;
    return 0;
}

static int place_group(sim_t *s, member_t *m, int n)
{
    char *near = malloc((size_t)n);
    if (near == NULL)
        return -1;
    qsort(m, (size_t)n, sizeof(*m), by_arc_desc);
    double horizon = 0;
    for (int i = 0; i < n; i++)
        if (HORIZON * m[i].period > horizon)
            horizon = HORIZON * m[i].period;
    for (int i = 0; i < n; i++) {
        m[i].shift = 0;
        if (i == 0 || !m[i].fresh || !(m[i].arc > 0))
            continue;
        for (int k = 0; k < i; k++)
            near[k] = (char)shares_link(s, &s->jobs[m[i].job], &s->jobs[m[k].job]);
        double best = INFINITY;
        for (int c = 0; c < SHIFTS; c++) {
            double sh = c * m[i].period / SHIFTS, cost = 0;
            for (int k = 0; k < i; k++)
                if (near[k])
                    cost += overlap(&m[i], sh, &m[k], horizon);
            if (cost < best - 1e-12) {
                best = cost;
                m[i].shift = sh;
            }
        }
    }
    for (int i = 0; i < n; i++)
        if (m[i].fresh)
            s->jobs[m[i].job].shift = m[i].shift;
    free(near);
    return 0;
}

/* Its transfer time alone on its paths: the most loaded link. */
static double comm_time(const sim_t *s, const sim_job_t *j)
{
    double t = 0;
    for (int k = 0; k < j->next.nlinks; k++)
        if (j->next.mbytes[k] / s->link_bw[j->next.links[k]] > t)
            t = j->next.mbytes[k] / s->link_bw[j->next.links[k]];
    return t;
}

crux_status_t sim_cassini_shifts(sim_t *s, const int *jobs, int n)
{
    int *group = malloc((size_t)(n ? n : 1) * sizeof(int));
    char *redo = calloc((size_t)(n ? n : 1), 1);
    member_t *m = malloc((size_t)(n ? n : 1) * sizeof(*m));
    if (group == NULL || redo == NULL || m == NULL) {
        free(group);
        free(redo);
        free(m);
        return CRUX_ERR_NO_MEMORY;
    }
    sim_share_groups(s, jobs, n, group);
    for (int i = 0; i < n; i++)
        if (s->fresh[jobs[i]])
            redo[group[i]] = 1;
    crux_status_t st = CRUX_OK;
    for (int g = 0; g < n && st == CRUX_OK; g++) {
        if (!redo[g])
            continue;
        int k = 0;
        for (int i = 0; i < n; i++)
            if (group[i] == g && s->jobs[jobs[i]].net)
                m[k++] = (member_t){ jobs[i], s->fresh[jobs[i]], 0, 0, 0, 0 };
        if (k < 2)
            continue;
        for (int i = 0; i < k; i++) {
            sim_job_t *j = &s->jobs[m[i].job];
            if (j->comp >= 0)
                sim_comp_materialize(s, j->comp, s->now); /* phases as of now */
            crux_sched_timing_t t = { j->work, j->spec->compute_s, j->fixed_s + comm_time(s, j),
                                      j->spec->overlap };
            m[i].arc = t.comm_s;
            m[i].period = crux_sched_period(&t);
            m[i].next = next_comm(j, m[i].arc);
        }
        if (place_group(s, m, k) != 0)
            st = CRUX_ERR_NO_MEMORY;
    }
    free(group);
    free(redo);
    free(m);
    return st;
}

/* What the links can carry: the jobs whose average traffic fits, the most
 * GPU-intensive first, above the jobs it does not.
 *
 * Why.  Over time job j moves M_{j,e} bytes over link e every period_j,
 * a rate a_{j,e} = M_{j,e} / period_j at its pace alone.  Where the users
 * of a link ask more than it carries on average, no order of transfers
 * gives every one of them its pace: some must slow down, and the most
 * computation is kept when those that slow down have the least computation
 * per byte on such links (the paper's Theorem 1 over every overfilled link
 * at once: a packing problem, whose optimum on one link keeps the most
 * intensive jobs whole; the rule below is its greedy).  Levels merged for sharing, or a model that looks at two
 * jobs or at one ring's hops, leave the links to share fairly, and a ring
 * at the pace of its slowest hop then loses on every overfilled link it
 * crosses, whatever its intensity.
 *
 * The rule.  A link is overfilled when the sum of its users' a_{j,e}
 * exceeds its bandwidth.  A job on no overfilled link is carried.  The
 * others, by their GPU intensity on the overfilled links they cross
 * (W_j / max_e M_{j,e} / B_e; ties by priority, then index), are carried
 * in turn while their rates fit, with those of the jobs carried before,
 * into every overfilled link they cross; the rest are not.  Priorities:
 * every carried job above every other, the carried in the order they had,
 * the others by that intensity.  Levels: the levels the carried jobs use
 * move, in their order, to the top; the others take the levels below, cut
 * by intensity into groups of equal size.  Where nothing is overfilled on
 * average (the paper's Examples: transfers that collide in time only),
 * priorities and levels stay as they were. */
#include <stdlib.h>

#include "sched/plan/crux_sched_plan.h"

#define OVER 1e-9 /* relative margin: a link filled exactly is not overfilled */

typedef struct {
    double key, priority;
    int job;
} ranked_t;

/* Descending key, then descending priority, then ascending index. */
static int ranked_desc(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return x->job - y->job;
}

/* a_{j,e} of the k-th link of job j */
static double rate_on(const crux_sched_plan_t *p, const plan_job_t *j, int k)
{
    return j->period > 0 ? p->jl_bytes[j->link_off + (size_t)k] / j->period : 0;
}

static int overfilled(const crux_sched_plan_t *p, const double *load, int l)
{
    return load[l] > p->c->links[l].bw * (1 + OVER);
}

/* The jobs in their new order, highest first, into out[]: the carried by
 * priority, then the others by intensity; returns how many are carried,
 * -1 out of memory. */
static int carry(const crux_sched_plan_t *p, ranked_t *out)
{
    const crux_sched_cluster_t *c = p->c;
    int n = p->njobs, m = 0, ncar = 0;
    double *load = calloc((size_t)c->nlinks + 1, sizeof(double));
    double *taken = calloc((size_t)c->nlinks + 1, sizeof(double));
    ranked_t *cand = malloc(((size_t)n + 1) * sizeof(*cand));
    char *carried = calloc((size_t)n + 1, 1);
    if (!load || !taken || !cand || !carried) {
        ncar = -1;
        goto out;
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < p->jobs[i].nlinks; k++)
            load[p->jl_link[p->jobs[i].link_off + (size_t)k]] += rate_on(p, &p->jobs[i], k);
    for (int i = 0; i < n; i++) {
        const plan_job_t *j = &p->jobs[i];
        double worst = 0; /* max M_{j,e} / B_e over its overfilled links */
        for (int k = 0; k < j->nlinks; k++) {
            int l = p->jl_link[j->link_off + (size_t)k];
            double t = p->jl_bytes[j->link_off + (size_t)k] / c->links[l].bw;
            if (overfilled(p, load, l) && t > worst)
                worst = t;
        }
        if (worst > 0)
            cand[m++] = (ranked_t){ j->work / worst, j->priority, i };
        else
            carried[i] = 1;
    }
    qsort(cand, (size_t)m, sizeof(*cand), ranked_desc);
    for (int r = 0; r < m; r++) {
        const plan_job_t *j = &p->jobs[cand[r].job];
        int fits = 1;
        for (int k = 0; k < j->nlinks && fits; k++) {
            int l = p->jl_link[j->link_off + (size_t)k];
            fits = !overfilled(p, load, l) ||
                   taken[l] + rate_on(p, j, k) <= c->links[l].bw * (1 + OVER);
        }
        if (!fits)
            continue;
        carried[cand[r].job] = 1;
        for (int k = 0; k < j->nlinks; k++)
            taken[p->jl_link[j->link_off + (size_t)k]] += rate_on(p, j, k);
    }
    for (int i = 0; i < n; i++)
        if (carried[i])
            out[ncar++] = (ranked_t){ 0, p->jobs[i].priority, i };
    qsort(out, (size_t)ncar, sizeof(*out), ranked_desc);
    for (int r = 0, k = ncar; r < m; r++)
        if (!carried[cand[r].job])
            out[k++] = cand[r];
out:
    free(load);
    free(taken);
    free(cand);
    free(carried);
    return ncar;
}

/* The new order into *order (freed by the caller) and the number carried. */
static crux_status_t ordered(const crux_sched_plan_t *p, ranked_t **order, int *ncar)
{
    *order = malloc(((size_t)p->njobs + 1) * sizeof(**order));
    *ncar = *order ? carry(p, *order) : -1;
    return *ncar < 0 ? CRUX_ERR_NO_MEMORY : CRUX_OK;
}

crux_status_t crux_sched_plan_carry_priorities(crux_sched_plan_t *p)
{
    if (p == NULL || p->stage < PLAN_PRIORITIES)
        return CRUX_ERR_INVALID;
    int n = p->njobs, ncar;
    ranked_t *order;
    crux_status_t st = ordered(p, &order, &ncar);
    if (st == CRUX_OK &&
        ncar < n) /* the place from the bottom (1 = lowest), as the network order counts */
        for (int r = 0; r < n; r++)
            p->jobs[order[r].job].priority = n - r;
    free(order);
    return st;
}

crux_status_t crux_sched_plan_carry_levels(crux_sched_plan_t *p, int levels)
{
    if (p == NULL || p->stage < PLAN_LEVELS || levels < 1 || levels > CRUX_SCHED_MAX_LEVELS)
        return CRUX_ERR_INVALID;
    int n = p->njobs, ncar;
    for (int i = 0; i < n; i++)
        if (p->jobs[i].level < 0 || p->jobs[i].level >= levels)
            return CRUX_ERR_INVALID; /* compressed onto other levels */
    ranked_t *order;
    crux_status_t st = ordered(p, &order, &ncar);
    if (st == CRUX_OK && ncar < n) {
        /* the carried jobs' levels, in their order, onto the top ones; when
         * they use every level, squeezed into all but the lowest */
        int used[CRUX_SCHED_MAX_LEVELS] = { 0 }, to[CRUX_SCHED_MAX_LEVELS], d = 0;
        for (int r = 0; r < ncar; r++)
            used[p->jobs[order[r].job].level] = 1;
        for (int l = 0; l < levels; l++)
            d += used[l];
        int below = levels - d > 0 ? levels - d : 1, above = levels - below;
        for (int l = levels - 1, k = 0; l >= 0; l--)
            if (used[l]) {
                to[l] = levels - 1 - k * above / d;
                k++;
            }
        for (int r = 0; r < ncar; r++)
            p->jobs[order[r].job].level = to[p->jobs[order[r].job].level];
        for (int r = ncar; r < n; r++) /* below them, cut by intensity */
            p->jobs[order[r].job].level = below - 1 - (int)((long)(r - ncar) * below / (n - ncar));
    }
    free(order);
    return st;
}

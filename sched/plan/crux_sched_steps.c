/* Priority assignment (P_j = k_j I_j against the reference job) and
 * priority compression of a plan onto its contention DAG. */
#include <stdlib.h>
#include <string.h>

#include "common/crux_keyed.h"
#include "sched/plan/crux_sched_plan.h"

crux_status_t crux_sched_plan_assign_priorities(crux_sched_plan_t *p, double horizon_iters)
{
    if (p == NULL || p->stage < PLAN_PATHS || !(horizon_iters > 0))
        return CRUX_ERR_INVALID;
    /* the reference job: the most bytes into the network per iteration */
    p->reference = -1;
    for (int i = 0; i < p->njobs; i++)
        if (plan_has_network(&p->jobs[i]) &&
            (p->reference < 0 || p->jobs[i].bytes > p->jobs[p->reference].bytes))
            p->reference = i;
    crux_sched_timing_t ref = { 0, 0, 0, 0 };
    if (p->reference >= 0)
        ref = plan_timing(&p->jobs[p->reference]);
    for (int i = 0; i < p->njobs; i++) {
        plan_job_t *j = &p->jobs[i];
        if (!plan_has_network(j)) {
            j->correction = 1.0;
            j->priority = 0.0;
            continue;
        }
        crux_sched_timing_t t = plan_timing(j);
        j->correction = i == p->reference ? 1.0 : crux_sched_correction(&ref, &t, horizon_iters);
        j->priority = j->correction * j->intensity;
    }
    p->stage = PLAN_PRIORITIES;
    return CRUX_OK;
}

/* The contention DAG: an edge j1 -> j2, weight I_j1, when the two share a
 * link and j1 ranks higher (priority, then index).  Sharing is found
 * through per-link job lists; a stamp per job keeps one edge per pair. */
static crux_status_t build_dag(crux_sched_plan_t *p, sched_dag_t *g)
{
    const crux_sched_cluster_t *c = p->c;
    int n = p->njobs, nl = c->nlinks;
    size_t sz = (size_t)n + 1;
    int *rank = malloc(sz * sizeof(int)), *mark = malloc(sz * sizeof(int));
    crux_keyed_t *keyed = malloc(sz * sizeof(*keyed));
    int *link_off = calloc((size_t)nl + 1, sizeof(int));
    int *link_jobs = malloc((p->njl ? p->njl : 1) * sizeof(int));
    /* cursors, per link while grouping jobs by link, then per job while
     * grouping edges by head: sized for whichever is larger */
    int *fill = malloc(((size_t)(n > nl ? n : nl) + 1) * sizeof(int));
    size_t cap = 1024, ne = 0;
    int *to = malloc(cap * sizeof(int));
    g->n = n;
    g->out_off = calloc(sz, sizeof(int));
    crux_status_t st = CRUX_ERR_NO_MEMORY;
    if (!rank || !mark || !keyed || !link_off || !link_jobs || !fill || !to || !g->out_off)
        goto out;
    for (int i = 0; i < n; i++) {
        keyed[i] = (crux_keyed_t){ p->jobs[i].priority, i };
        mark[i] = -1;
    }
    qsort(keyed, (size_t)n, sizeof(*keyed), crux_keyed_desc);
    for (int r = 0; r < n; r++)
        rank[keyed[r].job] = r;
    for (size_t k = 0; k < p->njl; k++)
        link_off[p->jl_link[k] + 1]++;
    for (int l = 0; l < nl; l++)
        link_off[l + 1] += link_off[l];
    memcpy(fill, link_off, (size_t)nl * sizeof(int));
    for (int i = 0; i < n; i++)
        for (int k = 0; k < p->jobs[i].nlinks; k++)
            link_jobs[fill[p->jl_link[p->jobs[i].link_off + (size_t)k]]++] = i;
    for (int a = 0; a < n; a++) {
        const plan_job_t *ja = &p->jobs[a];
        for (int k = 0; k < ja->nlinks; k++) {
            int l = p->jl_link[ja->link_off + (size_t)k];
            for (int q = link_off[l]; q < link_off[l + 1]; q++) {
                int b = link_jobs[q];
                if (rank[b] <= rank[a] || mark[b] == a)
                    continue;
                mark[b] = a;
                if (ne == cap) {
                    int *nt = realloc(to, 2 * cap * sizeof(int));
                    if (nt == NULL)
                        goto out;
                    to = nt;
                    cap *= 2;
                }
                to[ne++] = b;
            }
        }
        g->out_off[a + 1] = (int)ne;
    }
    g->out_to = to;
    to = NULL;
    g->in_off = calloc(sz, sizeof(int));
    g->in_from = malloc((ne ? ne : 1) * sizeof(int));
    g->in_w = malloc((ne ? ne : 1) * sizeof(double));
    if (!g->in_off || !g->in_from || !g->in_w)
        goto out;
    for (size_t e = 0; e < ne; e++)
        g->in_off[g->out_to[e] + 1]++;
    for (int v = 0; v < n; v++)
        g->in_off[v + 1] += g->in_off[v];
    memcpy(fill, g->in_off, (size_t)n * sizeof(int));
    for (int a = 0; a < n; a++)
        for (int e = g->out_off[a]; e < g->out_off[a + 1]; e++) {
            int b = g->out_to[e];
            g->in_from[fill[b]] = a;
            g->in_w[fill[b]++] = p->jobs[a].intensity;
        }
    st = CRUX_OK;
out:
    free(rank);
    free(mark);
    free(keyed);
    free(link_off);
    free(link_jobs);
    free(fill);
    free(to);
    return st;
}

crux_status_t crux_sched_plan_compress(crux_sched_plan_t *p, int levels, int reserve, int orders,
                                       uint64_t seed)
{
    if (p == NULL || p->stage < PLAN_PRIORITIES || levels < 1 || levels > CRUX_SCHED_MAX_LEVELS ||
        reserve < 0 || reserve >= levels || orders < 1)
        return CRUX_ERR_INVALID;
    plan_dag_free(&p->dag);
    crux_status_t st = build_dag(p, &p->dag);
    int *level = malloc((size_t)(p->njobs ? p->njobs : 1) * sizeof(int));
    if (st == CRUX_OK && level == NULL)
        st = CRUX_ERR_NO_MEMORY;
    if (st == CRUX_OK)
        st = sched_dag_compress(&p->dag, levels - reserve, orders, seed, level, &p->cut);
    if (st == CRUX_OK) {
        p->cut_total = 0.0;
        for (int v = 0; v < p->njobs; v++) {
            p->jobs[v].level = level[v];
            for (int e = p->dag.in_off[v]; e < p->dag.in_off[v + 1]; e++)
                p->cut_total += p->dag.in_w[e];
        }
        p->stage = PLAN_LEVELS;
    } else {
        plan_dag_free(&p->dag);
    }
    free(level);
    return st;
}

void crux_sched_plan_cut(const crux_sched_plan_t *p, double *cut, double *total)
{
    int ok = p->stage >= PLAN_LEVELS;
    if (cut)
        *cut = ok ? p->cut : 0.0;
    if (total)
        *total = ok ? p->cut_total : 0.0;
}

crux_status_t crux_sched_plan_check_levels(const crux_sched_plan_t *p)
{
    if (p->stage < PLAN_LEVELS)
        return CRUX_ERR_INVALID;
    for (int a = 0; a < p->njobs; a++) {
        for (int e = p->dag.out_off[a]; e < p->dag.out_off[a + 1]; e++) {
            const plan_job_t *hi = &p->jobs[a], *lo = &p->jobs[p->dag.out_to[e]];
            if (hi->level < lo->level || hi->priority < lo->priority)
                return CRUX_ERR_INVALID;
        }
    }
    return CRUX_OK;
}

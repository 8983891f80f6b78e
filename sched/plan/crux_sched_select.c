/* Path selection (paper section 4.1) and what follows from the chosen
 * paths: M_{j,e}, t_j, I_j, link loads.
 *
 * Jobs go from the most to the least GPU-intensive; each flow takes its
 * least congested candidate given the load already placed, congestion of a
 * link being its utilisation: the rates (bytes per iteration / iteration
 * time) of the flows on it over its bandwidth.  The order needs intensities
 * before paths exist, so it uses t from the NICs alone (every candidate
 * path starts and ends on them); once paths are chosen, t_j and I_j are
 * recomputed from them.  Rates use the iteration time with that NIC-bound
 * t, so a link's load depends on the path choice only, and the objective
 * (crux_sched_plan_path_cost) cannot be lowered by making jobs slower. */
#include <stdlib.h>
#include <string.h>

#include "common/crux_keyed.h"
#include "sched/plan/crux_sched_plan.h"

/* t from the job's bytes through each of its NICs (all ports together). */
static void edge_times(crux_sched_plan_t *p)
{
    const crux_sched_cluster_t *c = p->c;
    double *out = calloc((size_t)c->nnics, sizeof(double));
    double *in = calloc((size_t)c->nnics, sizeof(double));
    for (int i = 0; i < p->njobs; i++) {
        plan_job_t *j = &p->jobs[i];
        j->t_edge = 0.0;
        if (out == NULL || in == NULL)
            continue;
        for (int f = j->flow_off; f < j->flow_off + j->nflows; f++) {
            out[p->flows[f].src] += p->flows[f].bytes;
            in[p->flows[f].dst] += p->flows[f].bytes;
        }
        for (int f = j->flow_off; f < j->flow_off + j->nflows; f++) {
            int a = p->flows[f].src, b = p->flows[f].dst;
            double ta = out[a] / c->nics[a].bytes_per_s, tb = in[b] / c->nics[b].bytes_per_s;
            if (ta > j->t_edge)
                j->t_edge = ta;
            if (tb > j->t_edge)
                j->t_edge = tb;
        }
        for (int f = j->flow_off; f < j->flow_off + j->nflows; f++)
            out[p->flows[f].src] = in[p->flows[f].dst] = 0.0;
    }
    free(out);
    free(in);
}

static uint64_t id_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int push_links(crux_sched_plan_t *p, const int *links, int n)
{
    if (p->npath + (size_t)n > p->cap_path) {
        size_t ncap = p->cap_path ? 2 * p->cap_path : 4096;
        while (ncap < p->npath + (size_t)n)
            ncap *= 2;
        int *q = realloc(p->path_links, ncap * sizeof(int));
        if (q == NULL)
            return -1;
        p->path_links = q;
        p->cap_path = ncap;
    }
    memcpy(p->path_links + p->npath, links, (size_t)n * sizeof(int));
    p->npath += (size_t)n;
    return 0;
}

static double timing_period(const plan_job_t *j, double t)
{
    crux_sched_timing_t tm = { j->work, j->compute_s, t, j->overlap };
    return crux_sched_period(&tm);
}

/* Symmetric paths: when an earlier flow of job j went from this flow's
 * destination to its source, the reverse of that path (every cable is two
 * links with consecutive ids, 2k and 2k + 1), with its index among this
 * flow's candidates; -1 when there is none, or it is not a candidate (or
 * lies beyond the first SYMMETRIC_SCAN of them). */
#define SYMMETRIC_SCAN 4096
static int reverse_of_earlier(crux_sched_plan_t *p, sched_scratch_t *s, const plan_job_t *j, int f,
                              int *links)
{
    const crux_sched_cluster_t *c = p->c;
    plan_flow_t *fl = &p->flows[f];
    for (int g = j->flow_off; g < f; g++) {
        const plan_flow_t *back = &p->flows[g];
        if (back->src != fl->dst || back->dst != fl->src)
            continue;
        int want[SCHED_MAX_HOPS], cand[SCHED_MAX_HOPS], n = back->path_len;
        for (int h = 0; h < n; h++)
            want[h] = p->path_links[back->path_off + (size_t)(n - 1 - h)] ^ 1;
        uint64_t count = sched_path_count(c, s, fl->src, fl->dst);
        for (uint64_t i = 0; i < count && i < SYMMETRIC_SCAN; i++) {
            if (sched_path_unrank(c, s, fl->src, fl->dst, i, cand, SCHED_MAX_HOPS) == n &&
                memcmp(cand, want, (size_t)n * sizeof(int)) == 0) {
                memcpy(links, want, (size_t)n * sizeof(int));
                fl->index = i;
                fl->count = count;
                return n;
            }
        }
        return -1;
    }
    return -1;
}

static crux_status_t choose(crux_sched_plan_t *p, const int *order, int n,
                            crux_sched_path_mode_t mode, uint64_t seed)
{
    const crux_sched_cluster_t *c = p->c;
    sched_scratch_t s;
    crux_rng_t rng;
    if (sched_scratch_init(&s, c) != 0)
        return CRUX_ERR_NO_MEMORY;
    crux_rng_seed(&rng, seed);
    memset(p->load, 0, (size_t)c->nlinks * sizeof(double));
    p->npath = 0;
    crux_status_t st = CRUX_OK;
    for (int k = 0; k < n && st == CRUX_OK; k++) {
        plan_job_t *j = &p->jobs[order[k]];
        double period = timing_period(j, j->t_edge);
        uint64_t h = id_hash(j->id);
        for (int f = j->flow_off; f < j->flow_off + j->nflows && st == CRUX_OK; f++) {
            plan_flow_t *fl = &p->flows[f];
            int links[SCHED_MAX_HOPS], hops;
            double rate = fl->bytes / period;
            if (c->symmetric && (hops = reverse_of_earlier(p, &s, j, f, links)) >= 0) {
                /* the reverse of the job's path the other way (its index set) */
            } else if (mode == CRUX_SCHED_PATHS_CRUX) {
                hops = sched_path_best(c, &s, fl->src, fl->dst, p->load, rate, links,
                                       SCHED_MAX_HOPS, &fl->index, &fl->count);
            } else {
                fl->count = sched_path_count(c, &s, fl->src, fl->dst);
                if (fl->count == 0) {
                    st = CRUX_ERR_INVALID;
                    break;
                }
                fl->index = mode == CRUX_SCHED_PATHS_ECMP
                                ? crux_hash64(h ^ (uint64_t)(f - j->flow_off)) % fl->count
                                : crux_rng_below(&rng, fl->count);
                hops = sched_path_unrank(c, &s, fl->src, fl->dst, fl->index, links, SCHED_MAX_HOPS);
            }
            if (hops < 0) {
                st = CRUX_ERR_INVALID; /* longer than SCHED_MAX_HOPS */
                break;
            }
            fl->path_off = p->npath;
            fl->path_len = hops;
            if (push_links(p, links, hops) != 0)
                st = CRUX_ERR_NO_MEMORY;
            for (int i = 0; i < hops; i++)
                p->load[links[i]] += rate;
        }
    }
    sched_scratch_free(&s);
    return st;
}

/* M_{j,e}, t_j, I_j, iteration time; each job's most loaded link. */
static crux_status_t measure(crux_sched_plan_t *p)
{
    const crux_sched_cluster_t *c = p->c;
    double *acc = calloc((size_t)c->nlinks, sizeof(double));
    int *mark = malloc((size_t)c->nlinks * sizeof(int));
    int *touched = malloc((size_t)c->nlinks * sizeof(int));
    if (acc == NULL || mark == NULL || touched == NULL) {
        free(acc);
        free(mark);
        free(touched);
        return CRUX_ERR_NO_MEMORY;
    }
    for (int l = 0; l < c->nlinks; l++)
        mark[l] = -1;
    p->njl = 0;
    crux_status_t st = CRUX_OK;
    for (int i = 0; i < p->njobs && st == CRUX_OK; i++) {
        plan_job_t *j = &p->jobs[i];
        int nt = 0;
        for (int f = j->flow_off; f < j->flow_off + j->nflows; f++) {
            const plan_flow_t *fl = &p->flows[f];
            for (int h = 0; h < fl->path_len; h++) {
                int l = p->path_links[fl->path_off + (size_t)h];
                if (mark[l] != i) {
                    mark[l] = i;
                    acc[l] = 0.0;
                    touched[nt++] = l;
                }
                acc[l] += fl->bytes;
            }
        }
        if (p->njl + (size_t)nt > p->cap_jl) {
            size_t ncap = p->cap_jl ? 2 * p->cap_jl : 4096;
            while (ncap < p->njl + (size_t)nt)
                ncap *= 2;
            int *nl = realloc(p->jl_link, ncap * sizeof(int));
            if (nl != NULL)
                p->jl_link = nl;
            double *nb = realloc(p->jl_bytes, ncap * sizeof(double));
            if (nb != NULL)
                p->jl_bytes = nb;
            if (nl == NULL || nb == NULL) {
                st = CRUX_ERR_NO_MEMORY;
                break;
            }
            p->cap_jl = ncap;
        }
        j->link_off = p->njl;
        j->nlinks = nt;
        j->comm_s = 0.0;
        for (int k = 0; k < nt; k++) {
            int l = touched[k];
            p->jl_link[p->njl] = l;
            p->jl_bytes[p->njl++] = acc[l];
            if (acc[l] / c->links[l].bw > j->comm_s)
                j->comm_s = acc[l] / c->links[l].bw;
        }
        j->period = timing_period(j, j->comm_s);
        j->intensity = j->comm_s > 0 ? j->work / j->comm_s : 0.0;
    }
    for (int i = 0; i < p->njobs && st == CRUX_OK; i++) {
        plan_job_t *j = &p->jobs[i];
        j->bottleneck = 0.0;
        for (int k = 0; k < j->nlinks; k++) {
            int l = p->jl_link[j->link_off + (size_t)k];
            double u = p->load[l] / c->links[l].bw;
            if (u > j->bottleneck)
                j->bottleneck = u;
        }
    }
    free(acc);
    free(mark);
    free(touched);
    return st;
}

crux_status_t crux_sched_plan_select_paths(crux_sched_plan_t *p, crux_sched_path_mode_t mode,
                                           uint64_t seed)
{
    if (p == NULL || (mode != CRUX_SCHED_PATHS_CRUX && mode != CRUX_SCHED_PATHS_ECMP &&
                      mode != CRUX_SCHED_PATHS_RANDOM))
        return CRUX_ERR_INVALID;
    edge_times(p);
    size_t sz = (size_t)(p->njobs ? p->njobs : 1);
    crux_keyed_t *keyed = malloc(sz * sizeof(*keyed));
    int *order = malloc(sz * sizeof(int)), n = 0;
    if (keyed == NULL || order == NULL) {
        free(keyed);
        free(order);
        return CRUX_ERR_NO_MEMORY;
    }
    for (int i = 0; i < p->njobs; i++)
        if (plan_has_network(&p->jobs[i]))
            keyed[n++] = (crux_keyed_t){ p->jobs[i].work / p->jobs[i].t_edge, i };
    qsort(keyed, (size_t)n, sizeof(*keyed), crux_keyed_desc);
    for (int k = 0; k < n; k++)
        order[k] = keyed[k].job;
    crux_status_t st = choose(p, order, n, mode, seed);
    free(keyed);
    free(order);
    if (st == CRUX_OK)
        st = measure(p);
    p->stage = st == CRUX_OK ? PLAN_PATHS : PLAN_ADDED;
    return st;
}

crux_status_t crux_sched_plan_select_paths_ordered(crux_sched_plan_t *p, const int *order, int n)
{
    if (p == NULL || (n > 0 && order == NULL) || n != p->njobs)
        return CRUX_ERR_INVALID;
    char *seen = calloc((size_t)(n ? n : 1), 1);
    int *net = malloc((size_t)(n ? n : 1) * sizeof(int)), nn = 0;
    crux_status_t st = seen && net ? CRUX_OK : CRUX_ERR_NO_MEMORY;
    for (int k = 0; k < n && st == CRUX_OK; k++) {
        if (order[k] < 0 || order[k] >= n || seen[order[k]]) {
            st = CRUX_ERR_INVALID; /* not a permutation: the plan is left as it was */
            break;
        }
        seen[order[k]] = 1;
        if (plan_has_network(&p->jobs[order[k]]))
            net[nn++] = order[k];
    }
    if (st == CRUX_OK) {
        edge_times(p);
        st = choose(p, net, nn, CRUX_SCHED_PATHS_CRUX, 0);
        if (st == CRUX_OK)
            st = measure(p);
        p->stage = st == CRUX_OK ? PLAN_PATHS : PLAN_ADDED;
    }
    free(seen);
    free(net);
    return st;
}

double crux_sched_plan_path_cost(const crux_sched_plan_t *p)
{
    double cost = 0.0;
    for (int i = 0; i < p->njobs; i++)
        if (p->jobs[i].t_edge > 0)
            cost += p->jobs[i].work / p->jobs[i].t_edge * p->jobs[i].bottleneck;
    return cost;
}

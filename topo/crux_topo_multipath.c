/* The multipath step: for every ordered pair of GPUs, the set of pairwise
 * disjoint paths (no directed link in common, see crux_topo.h) with the
 * largest aggregate bandwidth.
 *
 * The candidates are few (one direct, one NVSwitch, one PCIe and one host
 * path, and the NVLink chains through at most two relays), so the set is
 * found exactly by branch and bound: candidates are tried widest first and
 * a branch is cut when even all the remaining candidates could not beat the
 * best set, or when the best set already fills the source's outgoing (or
 * the destination's incoming) links.  A step budget bounds the search on
 * unusually dense NVLink meshes; the best set found by then is kept. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

#define SEARCH_BUDGET 200000
#define EPS           1e-9

struct candidates {
    int n, cap;
    crux_topo_path_t *paths;
    uint64_t *bits; /* per path: its directed links, words per path */
    int words;
    int oom;
};

static void add_candidate(void *arg, const crux_topo_path_t *p)
{
    struct candidates *c = arg;
    if (p->gbps <= 0 || c->oom)
        return; /* a path of unknown bandwidth adds nothing to a set */
    if (c->n == c->cap) {
        int ncap = c->cap ? 2 * c->cap : 16;
        crux_topo_path_t *np = realloc(c->paths, sizeof(*np) * (size_t)ncap);
        if (np)
            c->paths = np;
        uint64_t *nb = realloc(c->bits, sizeof(*nb) * (size_t)ncap * (size_t)c->words);
        if (nb)
            c->bits = nb;
        if (!np || !nb) {
            c->oom = 1;
            return;
        }
        c->cap = ncap;
    }
    c->paths[c->n] = *p;
    uint64_t *bits = c->bits + (size_t)c->n * c->words;
    memset(bits, 0, sizeof(*bits) * (size_t)c->words);
    for (int i = 0; i < p->nlinks; i++) {
        unsigned key = (unsigned)(p->links[i].link * 2 + p->links[i].reverse);
        bits[key / 64] |= UINT64_C(1) << (key % 64);
    }
    c->n++;
}

static void gather(const struct crux_topo *t, int a, int b, struct candidates *c)
{
    crux_topo_path_t p;
    if (crux_topo_route_nvlink(t, a, b, &p))
        add_candidate(c, &p);
    if (crux_topo_route_nvswitch(t, a, b, &p))
        add_candidate(c, &p);
    crux_topo_route_multihop(t, a, b, add_candidate, c);
    /* CUDA sends peer traffic over NVLink when there is one: PCIe
     * peer-to-peer is then not a separate path */
    if (!crux_topo_nvlink_connected(t, a, b) && crux_topo_route_pcie_p2p(t, a, b, &p))
        add_candidate(c, &p);
    if (crux_topo_route_host(t, a, b, &p))
        add_candidate(c, &p);
}

/* Widest first, then shorter, then by kind. */
static int order(const crux_topo_path_t *p, const crux_topo_path_t *q)
{
    if (p->gbps != q->gbps)
        return p->gbps > q->gbps ? -1 : 1;
    if (p->hops != q->hops)
        return p->hops < q->hops ? -1 : 1;
    return (int)p->kind - (int)q->kind;
}

static void sort_candidates(struct candidates *c, int *idx)
{
    for (int i = 0; i < c->n; i++)
        idx[i] = i;
    for (int i = 1; i < c->n; i++) {
        int v = idx[i], j = i;
        for (; j > 0 && order(&c->paths[idx[j - 1]], &c->paths[v]) > 0; j--)
            idx[j] = idx[j - 1];
        idx[j] = v;
    }
}

struct search {
    const struct candidates *c;
    const int *idx; /* candidates, widest first */
    double *rest;   /* [i]: sum of the bandwidths of candidates i.. */
    uint64_t *used; /* directed links used by the current set */
    int *cur, ncur, cur_hops;
    double cur_gbps;
    int *best, nbest, best_hops;
    double best_gbps;
    double limit; /* no set can carry more */
    long steps;
};

static int conflicts(const struct search *s, int cand)
{
    const uint64_t *bits = s->c->bits + (size_t)cand * s->c->words;
    for (int w = 0; w < s->c->words; w++)
        if (bits[w] & s->used[w])
            return 1;
    return 0;
}

static void toggle(struct search *s, int cand)
{
    const uint64_t *bits = s->c->bits + (size_t)cand * s->c->words;
    for (int w = 0; w < s->c->words; w++)
        s->used[w] ^= bits[w];
}

static void explore(struct search *s, int i)
{
    if (s->cur_gbps > s->best_gbps + EPS ||
        (s->cur_gbps > s->best_gbps - EPS && s->cur_hops < s->best_hops)) {
        memcpy(s->best, s->cur, sizeof(int) * (size_t)s->ncur);
        s->nbest = s->ncur;
        s->best_gbps = s->cur_gbps;
        s->best_hops = s->cur_hops;
    }
    if (i == s->c->n || ++s->steps > SEARCH_BUDGET || s->best_gbps > s->limit - EPS ||
        s->cur_gbps + s->rest[i] < s->best_gbps - EPS)
        return;
    int cand = s->idx[i];
    const crux_topo_path_t *p = &s->c->paths[cand];
    if (!conflicts(s, cand)) {
        toggle(s, cand);
        s->cur[s->ncur++] = cand;
        s->cur_gbps += p->gbps;
        s->cur_hops += p->hops;
        explore(s, i + 1);
        s->cur_hops -= p->hops;
        s->cur_gbps -= p->gbps;
        s->ncur--;
        toggle(s, cand);
    }
    explore(s, i + 1);
}

/* Total bandwidth of the links at a device: no set of disjoint paths from
 * (or to) it can carry more. */
static double link_capacity(const struct crux_topo *t, int dev)
{
    double sum = 0;
    for (int l = 0; l < t->nlinks; l++)
        if (t->links[l].a == dev || t->links[l].b == dev)
            sum += t->links[l].gbps;
    return sum;
}

static crux_status_t best_set(const struct crux_topo *t, struct candidates *c,
                              crux_topo_pathset_t *set)
{
    int n = c->n;
    int *ints = malloc(sizeof(int) * (size_t)(3 * n + 1));
    double *rest = malloc(sizeof(double) * (size_t)(n + 1));
    uint64_t *used = calloc((size_t)c->words, sizeof(uint64_t));
    crux_status_t st = CRUX_ERR_NO_MEMORY;
    if (!ints || !rest || !used)
        goto out;

    struct search s = { .c = c,
                        .idx = ints,
                        .rest = rest,
                        .used = used,
                        .cur = ints + n,
                        .best = ints + 2 * n,
                        .best_hops = 0 };
    sort_candidates(c, ints);
    rest[n] = 0;
    for (int i = n - 1; i >= 0; i--)
        rest[i] = rest[i + 1] + c->paths[ints[i]].gbps;
    double out_cap = link_capacity(t, set->src), in_cap = link_capacity(t, set->dst);
    s.limit = out_cap < in_cap ? out_cap : in_cap;
    explore(&s, 0);

    crux_topo_path_t *paths = malloc(sizeof(*paths) * (size_t)(s.nbest ? s.nbest : 1));
    if (!paths)
        goto out;
    /* s.best follows the candidate order: widest first */
    for (int i = 0; i < s.nbest; i++)
        paths[i] = c->paths[s.best[i]];
    set->paths = paths;
    set->npaths = s.nbest;
    set->gbps = s.best_gbps;
    st = CRUX_OK;
out:
    free(ints);
    free(rest);
    free(used);
    return st;
}

crux_status_t crux_topo_build_multipath(struct crux_topo *t)
{
    int ngpus = t->ntype[CRUX_TOPO_DEV_GPU];
    t->sets = calloc((size_t)ngpus * ngpus + 1, sizeof(*t->sets));
    if (!t->sets)
        return CRUX_ERR_NO_MEMORY;

    for (int i = 0; i < ngpus; i++) {
        for (int j = 0; j < ngpus; j++) {
            crux_topo_pathset_t *set = &t->sets[i * ngpus + j];
            struct candidates c = { .words = (2 * t->nlinks + 63) / 64 + 1 };
            set->src = t->type_ids[CRUX_TOPO_DEV_GPU][i];
            set->dst = t->type_ids[CRUX_TOPO_DEV_GPU][j];
            if (i == j)
                continue;
            gather(t, set->src, set->dst, &c);
            crux_status_t st = c.oom ? CRUX_ERR_NO_MEMORY : best_set(t, &c, set);
            free(c.paths);
            free(c.bits);
            if (st != CRUX_OK)
                return st;
        }
    }
    return CRUX_OK;
}

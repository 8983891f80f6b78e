/* Priority compression: the max K-cut of the contention DAG by Algorithm 1
 * of the paper.  For each of m random BFS topological orders a_1..a_n,
 *   f(i,k) = max_{j<i} f(j,k-1) + C(j,i),
 * C(j,i) = weight of edges from {a_1..a_j} into {a_j+1..a_i}; the best of
 * the m orders wins.
 *
 * Instead of the paper's n x n prefix-sum matrix (200 MB for 5,000 jobs)
 * each layer k is one sweep over i keeping g(j) = f(j,k-1) + C(j,i) for all
 * candidates j < i.  Going from i-1 to i adds the weight of each in-edge
 * u -> a_i to every g(j) with j >= pos(u): a suffix add.  A later j gains
 * at least as much as an earlier one from every such add, so once
 * g(j2) >= g(j1) with j1 < j2, j1 never wins again (this is the
 * monotonicity the paper cites).  The live candidates therefore form a list
 * with strictly decreasing g, its head the maximum; a suffix add only
 * shrinks one gap and may drop candidates before it.  A layer costs
 * O((n + E) alpha(n)), an order O(K (n + E)), with O(n) memory. */
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_internal.h"

/* The candidate list of one layer: values are implicit, kept as the head
 * and tail values and the gaps d[j] = g(j) - g(next(j)) > 0. */
typedef struct {
    int *parent; /* union-find: first live candidate >= j */
    int *prev, *next;
    double *d;
    int head, tail;
    double vhead, vtail;
} mono_t;

static int mono_find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void mono_append(mono_t *m, int j, double x)
{
    while (m->tail >= 0 && m->vtail <= x) { /* dominated by the newcomer */
        int t = m->tail, pt = m->prev[t];
        m->parent[t] = t + 1;
        if (pt >= 0) {
            m->vtail += m->d[pt];
            m->next[pt] = -1;
        } else {
            m->head = -1;
        }
        m->tail = pt;
    }
    m->parent[j] = j;
    m->prev[j] = m->tail;
    m->next[j] = -1;
    if (m->tail >= 0) {
        m->d[m->tail] = m->vtail - x;
        m->next[m->tail] = j;
    } else {
        m->head = j;
        m->vhead = x;
    }
    m->tail = j;
    m->vtail = x;
}

/* g(j) += w for every candidate j >= p. */
static void mono_suffix_add(mono_t *m, int p, double w)
{
    int s = mono_find(m->parent, p);
    m->vtail += w;
    if (s == m->head) {
        m->vhead += w;
        return;
    }
    int q = m->prev[s];
    m->d[q] -= w;
    while (m->d[q] <= 0) { /* q is now dominated: drop it */
        int pq = m->prev[q], nq = m->next[q];
        m->parent[q] = q + 1;
        m->prev[nq] = pq;
        if (pq < 0) {
            m->vhead -= m->d[q];
            m->head = nq;
            break;
        }
        m->d[pq] += m->d[q];
        m->next[pq] = nq;
        q = pq;
    }
}

typedef struct {
    const sched_dag_t *dag;
    int levels;
    int *order, *pos, *indeg, *queue;
    double *fprev, *fcur;
    int *arg; /* arg[k * (n+1) + i] */
    mono_t m;
    crux_rng_t rng;
} ctx_t;

static void shuffle(crux_rng_t *r, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)crux_rng_below(r, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* A random BFS topological order of the n nodes in comp: sources first in
 * random order, then each node's newly freed successors in random order.
 * Returns how many nodes it ordered: fewer than n on a cycle. */
static int random_order(ctx_t *x, const int *comp, int n)
{
    const sched_dag_t *g = x->dag;
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        int v = comp[i];
        x->indeg[v] = g->in_off[v + 1] - g->in_off[v];
        if (x->indeg[v] == 0)
            x->queue[tail++] = v;
    }
    shuffle(&x->rng, x->queue, tail);
    while (head < tail) {
        int v = x->queue[head++];
        int first = tail;
        for (int k = g->out_off[v]; k < g->out_off[v + 1]; k++)
            if (--x->indeg[g->out_to[k]] == 0)
                x->queue[tail++] = g->out_to[k];
        shuffle(&x->rng, x->queue + first, tail - first);
    }
    memcpy(x->order, x->queue, (size_t)tail * sizeof(int));
    return tail;
}

/* Max K-cut of the current order (order[0..n-1]) into x->levels segments. */
static double cut_order(ctx_t *x, int n)
{
    const sched_dag_t *g = x->dag;
    int L = x->levels;
    for (int i = 0; i < n; i++)
        x->pos[x->order[i]] = i + 1;
    for (int i = 0; i <= n; i++) {
        x->fprev[i] = 0.0; /* f(i,1) = 0: one segment cuts nothing */
        x->arg[1 * (n + 1) + i] = 0;
    }
    for (int k = 2; k <= L; k++) {
        mono_t *m = &x->m;
        m->head = m->tail = -1;
        x->fcur[0] = 0.0;
        x->arg[k * (n + 1)] = 0;
        for (int i = 1; i <= n; i++) {
            mono_append(m, i - 1, x->fprev[i - 1]);
            int v = x->order[i - 1];
            for (int e = g->in_off[v]; e < g->in_off[v + 1]; e++)
                mono_suffix_add(m, x->pos[g->in_from[e]], g->in_w[e]);
            x->fcur[i] = m->vhead;
            x->arg[k * (n + 1) + i] = m->head;
        }
        double *t = x->fprev;
        x->fprev = x->fcur;
        x->fcur = t;
    }
    return x->fprev[n];
}

/* Levels from the DP's segments: the non-empty segments, in order, get
 * levels L-1, L-2, ... */
static void assign_levels(ctx_t *x, int n, int *level_out)
{
    int L = x->levels, bound[CRUX_SCHED_MAX_LEVELS + 1], nb = 0;
    int i = n;
    for (int k = L; k >= 1 && i > 0; k--) {
        int j = k == 1 ? 0 : x->arg[k * (n + 1) + i];
        bound[nb++] = i; /* segment (j, i] */
        i = j;
    }
    /* bound[nb-1] ends the first segment; walk segments front to back */
    int level = L - 1, start = 0;
    for (int s = nb - 1; s >= 0; s--) {
        for (int p = start; p < bound[s]; p++)
            level_out[x->order[p]] = level;
        start = bound[s];
        level--;
    }
}

static int find_root(int *uf, int x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

crux_status_t sched_dag_compress(const sched_dag_t *g, int levels, int orders, uint64_t seed,
                                 int *level_out, double *cut_out)
{
    int n = g->n;
    if (levels < 1 || levels > CRUX_SCHED_MAX_LEVELS || orders < 1 || n < 0)
        return CRUX_ERR_INVALID;
    size_t sz = (size_t)n + 1;
    ctx_t x = { .dag = g, .levels = levels };
    int *uf = malloc(sz * sizeof(int)), *comp_off = calloc(sz + 1, sizeof(int));
    int *comp = malloc(sz * sizeof(int)), *fill = malloc(sz * sizeof(int));
    int *best = malloc(sz * sizeof(int));
    x.order = malloc(sz * sizeof(int));
    x.pos = malloc(sz * sizeof(int));
    x.indeg = malloc(sz * sizeof(int));
    x.queue = malloc(sz * sizeof(int));
    x.fprev = malloc(sz * sizeof(double));
    x.fcur = malloc(sz * sizeof(double));
    x.arg = malloc((size_t)(levels + 1) * sz * sizeof(int));
    x.m.parent = malloc(sz * sizeof(int));
    x.m.prev = malloc(sz * sizeof(int));
    x.m.next = malloc(sz * sizeof(int));
    x.m.d = malloc(sz * sizeof(double));
    crux_status_t st = CRUX_ERR_NO_MEMORY;
    if (!uf || !comp_off || !comp || !fill || !best || !x.order || !x.pos || !x.indeg || !x.queue ||
        !x.fprev || !x.fcur || !x.arg || !x.m.parent || !x.m.prev || !x.m.next || !x.m.d)
        goto out;
    crux_rng_seed(&x.rng, seed);

    /* weakly connected components: each gets all the levels */
    for (int v = 0; v < n; v++)
        uf[v] = v;
    for (int v = 0; v < n; v++)
        for (int k = g->out_off[v]; k < g->out_off[v + 1]; k++) {
            int a = find_root(uf, v), b = find_root(uf, g->out_to[k]);
            if (a != b)
                uf[a < b ? b : a] = a < b ? a : b;
        }
    for (int v = 0; v < n; v++)
        comp_off[find_root(uf, v) + 1]++;
    for (int v = 0; v < n; v++)
        comp_off[v + 1] += comp_off[v];
    memcpy(fill, comp_off, (size_t)n * sizeof(int));
    for (int v = 0; v < n; v++)
        comp[fill[find_root(uf, v)]++] = v;

    double total_cut = 0.0;
    for (int r = 0; r < n; r++) {
        int *nodes = comp + comp_off[r], cn = comp_off[r + 1] - comp_off[r];
        if (cn == 0)
            continue;
        if (cn == 1) { /* no contention: nothing is lost at the top */
            level_out[nodes[0]] = levels - 1;
            continue;
        }
        double best_cut = -1.0;
        for (int o = 0; o < orders; o++) {
            if (random_order(&x, nodes, cn) < cn) { /* a node never freed: a cycle */
                st = CRUX_ERR_INVALID;
                goto out;
            }
            double cut = cut_order(&x, cn);
            if (cut > best_cut) {
                best_cut = cut;
                assign_levels(&x, cn, best);
                for (int i = 0; i < cn; i++)
                    level_out[nodes[i]] = best[nodes[i]];
            }
        }
        total_cut += best_cut;
    }
    if (cut_out)
        *cut_out = total_cut;
    st = CRUX_OK;
out:
    free(uf);
    free(comp_off);
    free(comp);
    free(fill);
    free(best);
    free(x.order);
    free(x.pos);
    free(x.indeg);
    free(x.queue);
    free(x.fprev);
    free(x.fcur);
    free(x.arg);
    free(x.m.parent);
    free(x.m.prev);
    free(x.m.next);
    free(x.m.d);
    return st;
}

crux_status_t crux_sched_compress_dag(int n, const crux_sched_edge_t *edges, int nedges, int levels,
                                      int orders, uint64_t seed, int *level_out, double *cut_out)
{
    if (n < 0 || nedges < 0 || (nedges > 0 && edges == NULL) || (n > 0 && level_out == NULL))
        return CRUX_ERR_INVALID;
    for (int e = 0; e < nedges; e++)
        if (edges[e].from < 0 || edges[e].from >= n || edges[e].to < 0 || edges[e].to >= n ||
            edges[e].from == edges[e].to || !(edges[e].weight >= 0))
            return CRUX_ERR_INVALID;
    size_t sz = (size_t)n + 1, ne = (size_t)(nedges ? nedges : 1);
    sched_dag_t g = { .n = n };
    g.out_off = calloc(sz, sizeof(int));
    g.in_off = calloc(sz, sizeof(int));
    g.out_to = malloc(ne * sizeof(int));
    g.in_from = malloc(ne * sizeof(int));
    g.in_w = malloc(ne * sizeof(double));
    int *fo = malloc(sz * sizeof(int)), *fi = malloc(sz * sizeof(int));
    crux_status_t st = CRUX_ERR_NO_MEMORY;
    if (g.out_off && g.in_off && g.out_to && g.in_from && g.in_w && fo && fi) {
        for (int e = 0; e < nedges; e++) {
            g.out_off[edges[e].from + 1]++;
            g.in_off[edges[e].to + 1]++;
        }
        for (int v = 0; v < n; v++) {
            g.out_off[v + 1] += g.out_off[v];
            g.in_off[v + 1] += g.in_off[v];
        }
        memcpy(fo, g.out_off, sz * sizeof(int));
        memcpy(fi, g.in_off, sz * sizeof(int));
        for (int e = 0; e < nedges; e++) {
            g.out_to[fo[edges[e].from]++] = edges[e].to;
            g.in_from[fi[edges[e].to]] = edges[e].from;
            g.in_w[fi[edges[e].to]++] = edges[e].weight;
        }
        st = sched_dag_compress(&g, levels, orders, seed, level_out, cut_out);
    }
    free(g.out_off);
    free(g.in_off);
    free(g.out_to);
    free(g.in_from);
    free(g.in_w);
    free(fo);
    free(fi);
    return st;
}

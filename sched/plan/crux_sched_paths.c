/* Candidate (ECMP) paths between two NICs: all shortest paths, counted,
 * numbered in a canonical order and searched for the least congested one.
 * The shortest-path DAG is walked with one memo per switch, so a query
 * costs the links on shortest paths, never the (exponential) path count. */
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_internal.h"

int sched_scratch_init(sched_scratch_t *s, const crux_sched_cluster_t *c)
{
    size_t n = (size_t)(c->nsw ? c->nsw : 1);
    s->nsw = c->nsw;
    s->stamp = 0;
    s->seen = calloc(n, sizeof(*s->seen));
    s->count = malloc(n * sizeof(*s->count));
    s->best = malloc(n * sizeof(*s->best));
    s->best_link = malloc(n * sizeof(*s->best_link));
    if (s->seen == NULL || s->count == NULL || s->best == NULL || s->best_link == NULL) {
        sched_scratch_free(s);
        return -1;
    }
    return 0;
}

void sched_scratch_free(sched_scratch_t *s)
{
    free(s->seen);
    free(s->count);
    free(s->best);
    free(s->best_link);
    memset(s, 0, sizeof(*s));
}

static void next_stamp(sched_scratch_t *s)
{
    if (++s->stamp == 0) { /* wrapped: forget every memo */
        memset(s->seen, 0, (size_t)(s->nsw ? s->nsw : 1) * sizeof(*s->seen));
        s->stamp = 1;
    }
}

/* The distances from every switch to NIC nic. */
static const int16_t *dist_row(const crux_sched_cluster_t *c, int nic)
{
    return c->nic_dist + (size_t)c->nic_group[nic] * (size_t)c->nsw;
}

int sched_dist_sw_nic(const crux_sched_cluster_t *c, int sw, int nic)
{
    return dist_row(c, nic)[sw];
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* A query: walk the shortest-path DAG towards NIC `dst`, scoring links by
 * (load + rate) / bw when load is given. */
typedef struct {
    const crux_sched_cluster_t *c;
    sched_scratch_t *s;
    int dst;
    const double *load;
    double rate;
    const int16_t *dist; /* from every switch to dst */
} walk_t;

static double link_cost(const walk_t *w, int l)
{
    return w->load ? (w->load[l] + w->rate) / w->c->links[l].bw : 0.0;
}

/* Calls fn(w, link, next_switch_or_-1, arg) for each next hop from switch
 * u (at distance d from dst) on a shortest path, by ascending link id. */
typedef int (*hop_fn)(walk_t *w, int link, int next, void *arg);

static int for_each_hop(walk_t *w, int u, int d, hop_fn fn, void *arg)
{
    const crux_sched_cluster_t *c = w->c;
    if (d == 1) {
        const sched_nic_t *n = &c->nics[w->dst];
        int order[CRUX_SCHED_MAX_PORTS], k = 0;
        for (int p = 0; p < n->nports; p++)
            if (n->port_sw[p] == u)
                order[k++] = n->port_down[p];
        for (int i = 1; i < k; i++) /* insertion sort by link id */
            for (int j = i; j > 0 && order[j] < order[j - 1]; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        for (int i = 0; i < k; i++)
            if (fn(w, order[i], -1, arg))
                return 1;
        return 0;
    }
    for (int r = c->sw_run_off[u]; r < c->sw_run_off[u + 1]; r++) {
        int v = c->run_to[r];
        if (w->dist[v] != d - 1)
            continue;
        for (int k = c->run_lo[r]; k < c->run_lo[r + 1]; k++)
            if (fn(w, c->sw_out[k], v, arg))
                return 1;
    }
    return 0;
}

static void visit(walk_t *w, int u);

typedef struct {
    uint64_t count;
    double best, best_hop;
    int best_link;
} acc_t;

static int visit_hop(walk_t *w, int l, int v, void *arg)
{
    acc_t *a = arg;
    double cost = link_cost(w, l), below = 0.0;
    uint64_t n = 1;
    if (v >= 0) {
        visit(w, v);
        n = w->s->count[v];
        below = w->s->best[v];
    }
    a->count = sat_add(a->count, n);
    double m = cost > below ? cost : below;
    if (a->best_link < 0 || m < a->best || (m == a->best && cost < a->best_hop)) {
        a->best = m;
        a->best_hop = cost;
        a->best_link = l;
    }
    return 0;
}

/* Memoised: count of paths from switch u to dst, best bottleneck cost and
 * the first link of the best path. */
static void visit(walk_t *w, int u)
{
    sched_scratch_t *s = w->s;
    if (s->seen[u] == s->stamp)
        return;
    acc_t a = { 0, 0.0, 0.0, -1 };
    for_each_hop(w, u, w->dist[u], visit_hop, &a);
    s->seen[u] = s->stamp;
    s->count[u] = a.count;
    s->best[u] = a.best;
    s->best_link[u] = a.best_link;
}

/* The first hops from NIC src on shortest paths, by ascending link id. */
static int first_hops(const crux_sched_cluster_t *c, int src, int dst, int *links, int *sws)
{
    const sched_nic_t *n = &c->nics[src];
    int best = INT16_MAX, k = 0;
    for (int p = 0; p < n->nports; p++) {
        int d = sched_dist_sw_nic(c, n->port_sw[p], dst);
        if (d < best)
            best = d;
    }
    if (best == INT16_MAX)
        return 0;
    for (int p = 0; p < n->nports; p++) /* ports were cabled in link-id order */
        if (sched_dist_sw_nic(c, n->port_sw[p], dst) == best) {
            links[k] = n->port_up[p];
            sws[k++] = n->port_sw[p];
        }
    return k;
}

static int valid_pair(const crux_sched_cluster_t *c, int src, int dst)
{
    return c->sealed && src >= 0 && src < c->nnics && dst >= 0 && dst < c->nnics && src != dst;
}

uint64_t sched_path_count(const crux_sched_cluster_t *c, sched_scratch_t *s, int src, int dst)
{
    if (!valid_pair(c, src, dst))
        return 0;
    walk_t w = { c, s, dst, NULL, 0.0, dist_row(c, dst) };
    int links[CRUX_SCHED_MAX_PORTS], sws[CRUX_SCHED_MAX_PORTS];
    int k = first_hops(c, src, dst, links, sws);
    next_stamp(s);
    uint64_t total = 0;
    for (int i = 0; i < k; i++) {
        visit(&w, sws[i]);
        total = sat_add(total, s->count[sws[i]]);
    }
    return total;
}

typedef struct {
    uint64_t index; /* left to skip */
    int link, next;
} pick_t;

static int pick_hop(walk_t *w, int l, int v, void *arg)
{
    pick_t *p = arg;
    uint64_t n = v >= 0 ? w->s->count[v] : 1;
    if (p->index < n) {
        p->link = l;
        p->next = v;
        return 1;
    }
    p->index -= n;
    return 0;
}

int sched_path_unrank(const crux_sched_cluster_t *c, sched_scratch_t *s, int src, int dst,
                      uint64_t index, int *links, int max)
{
    walk_t w = { c, s, dst, NULL, 0.0, dist_row(c, dst) };
    int first[CRUX_SCHED_MAX_PORTS], sws[CRUX_SCHED_MAX_PORTS];
    int k = first_hops(c, src, dst, first, sws), hops = 0, u = -1;
    for (int i = 0; i < k; i++) {
        if (index < s->count[sws[i]]) {
            u = sws[i];
            links[hops++] = first[i];
            break;
        }
        index -= s->count[sws[i]];
    }
    if (u < 0) /* index is not below the count */
        return -1;
    while (u >= 0) {
        if (hops == max)
            return -1;
        pick_t p = { index, -1, -1 };
        for_each_hop(&w, u, w.dist[u], pick_hop, &p);
        links[hops++] = p.link;
        index = p.index;
        u = p.next;
    }
    return hops;
}

typedef struct {
    int target;
    uint64_t before; /* paths through earlier siblings */
    int done;
} rank_t;

static int rank_hop(walk_t *w, int l, int v, void *arg)
{
    rank_t *r = arg;
    if (l == r->target) {
        r->done = 1;
        return 1;
    }
    r->before = sat_add(r->before, v >= 0 ? w->s->count[v] : 1);
    return 0;
}

int sched_path_best(const crux_sched_cluster_t *c, sched_scratch_t *s, int src, int dst,
                    const double *load, double rate, int *links, int max, uint64_t *index,
                    uint64_t *count)
{
    if (!valid_pair(c, src, dst) || max < 1)
        return -1;
    walk_t w = { c, s, dst, load, rate, dist_row(c, dst) };
    int first[CRUX_SCHED_MAX_PORTS], sws[CRUX_SCHED_MAX_PORTS];
    int k = first_hops(c, src, dst, first, sws);
    next_stamp(s);
    int pick = -1;
    double pick_max = 0.0, pick_hop_cost = 0.0;
    for (int i = 0; i < k; i++) {
        visit(&w, sws[i]);
        double cost = link_cost(&w, first[i]);
        double m = cost > s->best[sws[i]] ? cost : s->best[sws[i]];
        if (pick < 0 || m < pick_max || (m == pick_max && cost < pick_hop_cost)) {
            pick = i;
            pick_max = m;
            pick_hop_cost = cost;
        }
    }
    if (pick < 0)
        return -1;
    uint64_t total = 0;
    for (int i = 0; i < k; i++)
        total = sat_add(total, s->count[sws[i]]);
    *count = total;
    uint64_t idx = 0;
    for (int i = 0; i < pick; i++)
        idx = sat_add(idx, s->count[sws[i]]);
    int hops = 0, u = sws[pick];
    links[hops++] = first[pick];
    while (u >= 0) {
        if (hops == max)
            return -1;
        int l = s->best_link[u];
        rank_t r = { l, 0, 0 };
        for_each_hop(&w, u, w.dist[u], rank_hop, &r);
        idx = sat_add(idx, r.before);
        links[hops++] = l;
        u = SCHED_IS_SW(c->links[l].dst) ? SCHED_SW_OF(c->links[l].dst) : -1;
    }
    *index = idx;
    return hops;
}

/* Public wrappers with their own scratch. */
static int nic_id(const crux_sched_cluster_t *c, int host, int nic)
{
    if (host < 0 || host >= c->nhosts || nic < 0 || nic >= c->hosts[host].nics)
        return -1;
    return c->hosts[host].first_nic + nic;
}

uint64_t crux_sched_path_count(const crux_sched_cluster_t *c, int src_host, int src_nic,
                               int dst_host, int dst_nic)
{
    sched_scratch_t s;
    int a = nic_id(c, src_host, src_nic), b = nic_id(c, dst_host, dst_nic);
    if (a < 0 || b < 0 || sched_scratch_init(&s, c) != 0)
        return 0;
    uint64_t n = sched_path_count(c, &s, a, b);
    sched_scratch_free(&s);
    return n;
}

int crux_sched_path_links(const crux_sched_cluster_t *c, int src_host, int src_nic, int dst_host,
                          int dst_nic, uint64_t index, int *links, int max)
{
    sched_scratch_t s;
    int a = nic_id(c, src_host, src_nic), b = nic_id(c, dst_host, dst_nic);
    if (a < 0 || b < 0 || sched_scratch_init(&s, c) != 0)
        return -1;
    int n = sched_path_count(c, &s, a, b) > index
                ? sched_path_unrank(c, &s, a, b, index, links, max)
                : -1;
    sched_scratch_free(&s);
    return n;
}

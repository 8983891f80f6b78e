/* Sincronia (SIGCOMM 2018) as the Crux paper ran it: coflows ordered by
 * Bottleneck-Select-Scale-Iterate, then its own compression: in each group
 * of jobs sharing links, the first job of the order high, the rest low.
 *
 * A job's coflow is one iteration's traffic, M_{j,e} on every link it
 * crosses (all weights 1).  BSSI fills the order from the back: take the
 * most loaded link b; among the unordered jobs on b the one with the
 * largest M_{j,b} / w_j goes last; the others on b pay for it in weight,
 * w_j -= w_last * M_{j,b} / M_{last,b}; repeat without it.  The most
 * loaded link comes from a max-heap of link loads (negated into the
 * simulator's min-heap) whose stale entries carry an old version. */
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_internal.h"

typedef struct {
    sim_linkset_t ls; /* the jobs' links and their users, M of each */
    double *load;
    int *alive_users;
    uint64_t *ver;
    sim_heap_t heap;
} bssi_t;

static void bssi_free(bssi_t *b)
{
    sim_linkset_free(&b->ls);
    free(b->load);
    free(b->alive_users);
    free(b->ver);
    sim_heap_free(&b->heap);
}

/* Local link numbers (s->link_slot under a fresh stamp), users and loads. */
static int bssi_init(sim_t *s, bssi_t *b, const int *jobs, int n)
{
    memset(b, 0, sizeof(*b));
    if (sim_linkset_build(s, jobs, n, NULL, &b->ls) != 0)
        return -1;
    size_t nl = (size_t)b->ls.nlinks + 1;
    b->load = calloc(nl, sizeof(double));
    b->alive_users = calloc(nl, sizeof(int));
    b->ver = calloc(nl, sizeof(uint64_t));
    if (!b->load || !b->alive_users || !b->ver)
        return -1;
    for (int e = 0; e < b->ls.nlinks; e++) {
        for (int u = b->ls.off[e]; u < b->ls.off[e + 1]; u++)
            b->load[e] += b->ls.mb[u];
        b->alive_users[e] = b->ls.off[e + 1] - b->ls.off[e];
        if (sim_heap_push(&b->heap, -b->load[e], 0, e, 0) != 0)
            return -1;
    }
    return 0;
}

/* The most loaded link with unordered users, or -1. */
static int bottleneck(bssi_t *b)
{
    sim_event_t ev;
    while (sim_heap_pop(&b->heap, &ev))
        if (ev.gen == b->ver[ev.id] && b->alive_users[ev.id] > 0)
            return ev.id;
    return -1;
}

static int bssi_order(sim_t *s, bssi_t *b, const int *jobs, int n, int *rank)
{
    double *w = malloc((size_t)(n ? n : 1) * sizeof(double));
    char *left = malloc((size_t)(n ? n : 1));
    if (w == NULL || left == NULL) {
        free(w);
        free(left);
        return -1;
    }
    int pos = 0;
    for (int i = 0; i < n; i++) {
        w[i] = 1;
        left[i] = s->jobs[jobs[i]].next.nlinks > 0;
        pos += left[i];
        rank[i] = -1;
    }
    int rc = 0;
    while (pos > 0) {
        int e = bottleneck(b);
        if (e < 0)
            break;
        int last = -1;
        double best = 0, mlast = 0;
        for (int u = b->ls.off[e]; u < b->ls.off[e + 1]; u++) {
            int i = b->ls.user[u];
            double ratio = w[i] / b->ls.mb[u];
            if (left[i] && (last < 0 || ratio <= best)) { /* ties: the later job last */
                last = i;
                best = ratio;
                mlast = b->ls.mb[u];
            }
        }
        if (last < 0) /* cannot happen: alive users are unordered jobs */
            break;
        rank[last] = --pos;
        left[last] = 0;
        for (int u = b->ls.off[e]; u < b->ls.off[e + 1]; u++) {
            int i = b->ls.user[u];
            if (left[i]) {
                w[i] -= w[last] * b->ls.mb[u] / mlast;
                if (w[i] < 0)
                    w[i] = 0;
            }
        }
        const sim_decision_t *d = &s->jobs[jobs[last]].next;
        for (int k = 0; k < d->nlinks && rc == 0; k++) {
            int f = s->link_slot[d->links[k]];
            b->alive_users[f]--;
            b->load[f] = b->alive_users[f] > 0 ? b->load[f] - d->mbytes[k] : 0;
            b->ver[f]++;
            if (b->alive_users[f] > 0)
                rc = sim_heap_push(&b->heap, -b->load[f], 0, f, b->ver[f]);
        }
        if (rc != 0)
            break;
    }
    free(w);
    free(left);
    return rc;
}

crux_status_t sim_sincronia_levels(sim_t *s, const int *jobs, int n)
{
    bssi_t b;
    memset(&b, 0, sizeof(b));
    int *rank = malloc((size_t)(n ? n : 1) * sizeof(int));
    int *group = malloc((size_t)(n ? n : 1) * sizeof(int));
    int *top = malloc((size_t)(n ? n : 1) * sizeof(int));
    crux_status_t st = CRUX_ERR_NO_MEMORY;
    if (rank && group && top && bssi_init(s, &b, jobs, n) == 0 &&
        bssi_order(s, &b, jobs, n, rank) == 0) {
        sim_share_groups(s, jobs, n, group);
        for (int i = 0; i < n; i++)
            top[i] = -1;
        for (int i = 0; i < n; i++)
            if (rank[i] >= 0 && (top[group[i]] < 0 || rank[i] < rank[top[group[i]]]))
                top[group[i]] = i;
        int K = s->cfg.levels;
        for (int i = 0; i < n; i++)
            s->jobs[jobs[i]].next.level = rank[i] < 0 || top[group[i]] == i ? K - 1 : 0;
        st = CRUX_OK;
    }
    bssi_free(&b);
    free(rank);
    free(group);
    free(top);
    return st;
}

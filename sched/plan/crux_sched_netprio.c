/* Priorities that see the network: an order of the jobs built from the
 * bottom by how much computation each loses when every job still above it
 * may block it, on every hop of its ring.
 *
 * Why.  P = k I compares two jobs on one link.  A job whose ring crosses 8
 * to 16 hosts meets a different higher-priority job on nearly every hop,
 * and a ring moves at its slowest hop: it transfers only while none of them
 * does.  Wide jobs that hide their communication behind computation get a
 * small k (each two-job comparison says they lose little), land on the
 * lowest levels, and then lose much more than any one comparison shows.
 *
 * The model.  A link is contended when its users together could overfill
 * it: the sum of their shares u = M / (t B), each at its pace alone, the
 * load L, exceeds 1.  Job a holds job b on a contended link both cross
 * while a transfers (a fraction d_a = t_a / period_a of the time), the more
 * so the more of the overfilled link a takes: by min(1, u_a L).  With the
 * set H of jobs above b, b's ring is free a fraction
 * f_b = prod over a in H of (1 - d_a min(1, u_a L)) of the time, so its
 * transfer takes t_b / f_b, and it completes W_b / period(t_b / f_b)
 * instead of W_b / period(t_b) computation per second: its loss.  Overlap counts:
 * a transfer hidden behind computation loses nothing until it outgrows the
 * slack.
 *
 * The order.  Start with every job above every other; repeatedly put at
 * the bottom the job that loses least there (ties: the lower P = k I), and
 * take it out of its neighbours' H.  The priority of a job is its place,
 * counted from the bottom, so compression (Algorithm 1) keeps the order.
 *
 * The levels.  Every strict level compounds for a ring: a job pushed down
 * waits behind each level above it on its own hops.  After compression,
 * a run of neighbouring levels of a group of jobs that share links is
 * merged into one while the same model, with a same-level neighbour
 * counted as sharing instead of blocking (below), predicts that their jobs
 * lose less computation together; the merge that gains most goes first. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_plan.h"

#define DUTY_MAX 0.95 /* a job always transferring would block forever */
#define FREE_MIN 1e-3 /* the least share of time a ring is assumed free */

typedef struct {
    double loss, tie;
    int job;
    unsigned ver;
} heap_item_t;

typedef struct {
    heap_item_t *a;
    size_t n, cap;
} minheap_t;

static int item_less(const heap_item_t *x, const heap_item_t *y)
{
    if (x->loss != y->loss)
        return x->loss < y->loss;
    if (x->tie != y->tie)
        return x->tie < y->tie;
    return x->job < y->job;
}

static int heap_push(minheap_t *h, heap_item_t it)
{
    if (h->n == h->cap) {
        size_t ncap = h->cap ? 2 * h->cap : 256;
        heap_item_t *na = realloc(h->a, ncap * sizeof(*na));
        if (na == NULL)
            return -1;
        h->a = na;
        h->cap = ncap;
    }
    size_t i = h->n++;
    while (i > 0 && item_less(&it, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = it;
    return 0;
}

static heap_item_t heap_pop(minheap_t *h)
{
    heap_item_t top = h->a[0], last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= h->n)
            break;
        if (k + 1 < h->n && item_less(&h->a[k + 1], &h->a[k]))
            k++;
        if (!item_less(&h->a[k], &last))
            break;
        h->a[i] = h->a[k];
        i = k;
    }
    if (h->n > 0)
        h->a[i] = last;
    return top;
}

/* Computation per second job j loses when its ring is free a share
 * exp(logf) of the time. */
static double loss(const plan_job_t *j, double logf)
{
    double f = exp(logf);
    if (f < FREE_MIN)
        f = FREE_MIN;
    crux_sched_timing_t t = plan_timing(j);
    double alone = crux_sched_period(&t);
    t.comm_s = j->comm_s / f;
    return j->work / alone - j->work / crux_sched_period(&t);
}

/* The share of its time job j transfers, alone. */
static double duty_of(const plan_job_t *j)
{
    double d = plan_has_network(j) && j->period > 0 ? j->comm_s / j->period : 0;
    return d < DUTY_MAX ? d : DUTY_MAX;
}

/* Who can hold whom: for each job b, the jobs a that share a contended
 * link with it, each with x_ab = d_a min(1, u_a L) on the worst such link
 * (u_a: a's share of it, L: its load), the share of time a keeps b off
 * that link when a is above it. */
typedef struct {
    int n;
    int *off; /* n + 1 */
    int *nb;
    double *x;
} nbr_t;

static void nbr_free(nbr_t *g)
{
    free(g->off);
    free(g->nb);
    free(g->x);
}

static crux_status_t nbr_build(const crux_sched_plan_t *p, nbr_t *g)
{
    const crux_sched_cluster_t *c = p->c;
    int n = p->njobs, nl = c->nlinks;
    size_t sz = (size_t)n + 1, cap = 1024, nn = 0;
    crux_status_t st = CRUX_ERR_NO_MEMORY;
    int *link_off = calloc((size_t)nl + 1, sizeof(int));
    int *link_jobs = malloc((p->njl ? p->njl : 1) * sizeof(int));
    double *link_use = malloc((p->njl ? p->njl : 1) * sizeof(double));
    double *load = calloc((size_t)nl + 1, sizeof(double));
    int *fill = malloc(((size_t)nl + 1) * sizeof(int));
    int *mark = malloc(sz * sizeof(int));
    double *best = malloc(sz * sizeof(double)), *duty = malloc(sz * sizeof(double));
    g->n = n;
    g->off = calloc(sz, sizeof(int));
    g->nb = malloc(cap * sizeof(int));
    g->x = malloc(cap * sizeof(double));
    if (!link_off || !link_jobs || !link_use || !load || !fill || !mark || !best || !duty ||
        !g->off || !g->nb || !g->x)
        goto out;
    for (int i = 0; i < n; i++) {
        mark[i] = -1;
        duty[i] = duty_of(&p->jobs[i]);
    }
    /* users of each link with their share of it at their pace alone */
    for (size_t k = 0; k < p->njl; k++)
        link_off[p->jl_link[k] + 1]++;
    for (int l = 0; l < nl; l++)
        link_off[l + 1] += link_off[l];
    memcpy(fill, link_off, (size_t)nl * sizeof(int));
    for (int i = 0; i < n; i++) {
        const plan_job_t *j = &p->jobs[i];
        for (int k = 0; k < j->nlinks; k++) {
            size_t x = j->link_off + (size_t)k;
            int l = p->jl_link[x], at = fill[l]++;
            link_jobs[at] = i;
            link_use[at] = j->comm_s > 0 ? p->jl_bytes[x] / (j->comm_s * c->links[l].bw) : 0;
        }
    }
    /* each link's load: its users' shares together; above 1 it is
     * contended (they could overfill it) */
    for (int l = 0; l < nl; l++)
        for (int q = link_off[l]; q < link_off[l + 1]; q++)
            load[l] += link_use[q];
    for (int b = 0; b < n; b++) {
        const plan_job_t *jb = &p->jobs[b];
        int first = (int)nn;
        for (int k = 0; k < jb->nlinks; k++) {
            int l = p->jl_link[jb->link_off + (size_t)k];
            if (load[l] <= 1 + 1e-9)
                continue;
            for (int q = link_off[l]; q < link_off[l + 1]; q++) {
                int a = link_jobs[q];
                if (a == b || duty[a] <= 0)
                    continue;
                double hold = link_use[q] * load[l];
                double x = duty[a] * (hold < 1 ? hold : 1);
                if (mark[a] == b) {
                    if (x > best[a])
                        best[a] = x;
                    continue;
                }
                mark[a] = b;
                best[a] = x;
                if (nn == cap) {
                    int *nt = realloc(g->nb, 2 * cap * sizeof(int));
                    if (nt == NULL)
                        goto out;
                    g->nb = nt;
                    double *nx = realloc(g->x, 2 * cap * sizeof(double));
                    if (nx == NULL)
                        goto out;
                    g->x = nx;
                    cap *= 2;
                }
                g->nb[nn++] = a;
            }
        }
        for (size_t e = (size_t)first; e < nn; e++)
            g->x[e] = best[g->nb[e]];
        g->off[b + 1] = (int)nn;
    }
    st = CRUX_OK;
out:
    free(link_off);
    free(link_jobs);
    free(link_use);
    free(load);
    free(fill);
    free(mark);
    free(best);
    free(duty);
    return st;
}

crux_status_t crux_sched_plan_network_priorities(crux_sched_plan_t *p)
{
    if (p == NULL || p->stage < PLAN_PRIORITIES)
        return CRUX_ERR_INVALID;
    int n = p->njobs;
    size_t sz = (size_t)n + 1;
    nbr_t g = { 0, NULL, NULL, NULL };
    crux_status_t st = nbr_build(p, &g);
    size_t nn = st == CRUX_OK ? (size_t)g.off[n] : 0;
    double *logf = calloc(sz, sizeof(double));
    unsigned *ver = calloc(sz, sizeof(unsigned));
    char *placed = calloc(sz, 1);
    int *rev_off = calloc(sz + 1, sizeof(int)), *fill = malloc(sz * sizeof(int));
    int *rev = malloc((nn ? nn : 1) * sizeof(int));
    double *revw = malloc((nn ? nn : 1) * sizeof(double));
    minheap_t h = { NULL, 0, 0 };
    if (st != CRUX_OK)
        goto out;
    st = CRUX_ERR_NO_MEMORY;
    if (!logf || !ver || !placed || !rev_off || !fill || !rev || !revw)
        goto out;
    /* with every job above b: b's ring is free prod (1 - x_ab) of the time */
    for (int b = 0; b < n; b++)
        for (int e = g.off[b]; e < g.off[b + 1]; e++)
            logf[b] += log(1 - g.x[e]);
    /* from the bottom: the job that loses least below all the others */
    int m = 0;
    for (int i = 0; i < n; i++)
        if (plan_has_network(&p->jobs[i])) {
            m++;
            if (heap_push(&h, (heap_item_t){ loss(&p->jobs[i], logf[i]), p->jobs[i].priority, i,
                                             0 }) != 0)
                goto out;
        }
    /* who each job blocks: the neighbour lists turned around */
    for (size_t e = 0; e < nn; e++)
        rev_off[g.nb[e] + 1]++;
    for (int a = 0; a < n; a++)
        rev_off[a + 1] += rev_off[a];
    memcpy(fill, rev_off, (size_t)n * sizeof(int));
    for (int b = 0; b < n; b++)
        for (int e = g.off[b]; e < g.off[b + 1]; e++) {
            rev[fill[g.nb[e]]] = b;
            revw[fill[g.nb[e]]++] = log(1 - g.x[e]);
        }
    for (int place = 1; place <= m && h.n > 0;) {
        heap_item_t it = heap_pop(&h);
        if (placed[it.job] || it.ver != ver[it.job])
            continue;
        placed[it.job] = 1;
        p->jobs[it.job].priority = place++;
        /* below every job left, it blocks none of them any more */
        for (int e = rev_off[it.job]; e < rev_off[it.job + 1]; e++) {
            int b = rev[e];
            if (placed[b])
                continue;
            logf[b] -= revw[e];
            if (heap_push(&h, (heap_item_t){ loss(&p->jobs[b], logf[b]), p->jobs[b].priority, b,
                                             ++ver[b] }) != 0)
                goto out;
        }
    }
    st = CRUX_OK;
out:
    nbr_free(&g);
    free(logf);
    free(ver);
    free(placed);
    free(rev_off);
    free(fill);
    free(rev);
    free(revw);
    free(h.a);
    return st;
}

/* Levels are a maximum, not a target (crux_sched_plan_merge_levels).  Above
 * b, every job holds b's ring on its own hop while it transfers and a ring
 * moves only when all its hops are free: the free shares multiply,
 * prod (1 - x_ab).  On b's own level the jobs split the links instead, and
 * transfers that share a link fairly fall into step (each stretches the
 * other's until they start together; strict priority lets them interleave
 * instead): a neighbour a on b's level halves b's rate on their link
 * whenever b transfers, as far as a can take it, SHARE min(1, u_a L), not
 * only while a happens to transfer.  A ring at its slowest hop's pace is
 * slowed by the worst such neighbour, not by all.  So on one link sharing
 * never beats strict order (the paper's Examples keep their order), and it
 * pays for a ring held by many jobs on many hops. */
#define SHARE 0.5

static int uf_find(int *uf, int x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

typedef struct {
    double held;  /* sum of log(1 - x_ab) over the jobs a above b */
    double worst; /* max min(1, u_a L) over the jobs a on b's level */
} hold_t;

static double hold_logf(hold_t h)
{
    return h.held + log(1 - SHARE * h.worst);
}

/* j's hold after merging the levels lo..hi of its component into one: a
 * neighbour in that range on another level shares j's level from then on. */
static hold_t merged_hold(const crux_sched_plan_t *p, const nbr_t *g, hold_t h, int j, int hi,
                          int lo)
{
    int mine = p->jobs[j].level;
    for (int e = g->off[j]; e < g->off[j + 1]; e++) {
        int l = p->jobs[g->nb[e]].level;
        if (l < lo || l > hi || l == mine)
            continue;
        double share = g->x[e] / duty_of(&p->jobs[g->nb[e]]);
        if (share > h.worst)
            h.worst = share;
        if (l > mine) /* it was above j */
            h.held -= log(1 - g->x[e]);
    }
    return h;
}

crux_status_t crux_sched_plan_merge_levels(crux_sched_plan_t *p)
{
    if (p == NULL || p->stage < PLAN_LEVELS)
        return CRUX_ERR_INVALID;
    int n = p->njobs;
    size_t sz = (size_t)n + 1;
    nbr_t g = { 0, NULL, NULL, NULL };
    crux_status_t st = nbr_build(p, &g);
    hold_t *hold = calloc(sz, sizeof(*hold)), *next = malloc(sz * sizeof(*next));
    double *lost = calloc(sz, sizeof(double));
    int *uf = malloc(sz * sizeof(int)), *memb = malloc(sz * sizeof(int));
    int *off = calloc(sz + 1, sizeof(int)), *fill = malloc(sz * sizeof(int));
    if (st != CRUX_OK)
        goto out;
    st = CRUX_ERR_NO_MEMORY;
    if (!hold || !next || !lost || !uf || !memb || !off || !fill)
        goto out;
    /* components of the contention DAG: levels only matter inside one */
    for (int v = 0; v < n; v++)
        uf[v] = v;
    for (int v = 0; v < n; v++)
        for (int k = p->dag.out_off[v]; k < p->dag.out_off[v + 1]; k++) {
            int a = uf_find(uf, v), b = uf_find(uf, p->dag.out_to[k]);
            if (a != b)
                uf[a < b ? b : a] = a < b ? a : b;
        }
    for (int v = 0; v < n; v++)
        off[uf_find(uf, v) + 1]++;
    for (int v = 0; v < n; v++)
        off[v + 1] += off[v];
    memcpy(fill, off, (size_t)n * sizeof(int));
    for (int v = 0; v < n; v++)
        memb[fill[uf_find(uf, v)]++] = v;
    /* what holds each job with the levels as compressed */
    for (int b = 0; b < n; b++) {
        for (int e = g.off[b]; e < g.off[b + 1]; e++) {
            int la = p->jobs[g.nb[e]].level, lb = p->jobs[b].level;
            if (la > lb)
                hold[b].held += log(1 - g.x[e]);
            else if (la == lb && g.x[e] / duty_of(&p->jobs[g.nb[e]]) > hold[b].worst)
                hold[b].worst = g.x[e] / duty_of(&p->jobs[g.nb[e]]);
        }
        lost[b] = plan_has_network(&p->jobs[b]) ? loss(&p->jobs[b], hold_logf(hold[b])) : 0;
    }
    for (int r = 0; r < n; r++) {
        const int *m = memb + off[r];
        int cn = off[r + 1] - off[r], lev[CRUX_SCHED_MAX_LEVELS], nlev = 0;
        if (cn < 2)
            continue;
        /* the levels the component uses, highest first */
        for (int l = CRUX_SCHED_MAX_LEVELS - 1; l >= 0; l--)
            for (int i = 0; i < cn; i++)
                if (p->jobs[m[i]].level == l) {
                    lev[nlev++] = l;
                    break;
                }
        /* merge the run of neighbouring levels whose merge the model says
         * gains most, while one gains (a run, not only a pair: a ring held
         * on each hop by jobs of several levels gains only when it shares
         * with all of them) */
        while (nlev > 1) {
            double best = 0, total = 0;
            int at = -1, to = -1;
            for (int i = 0; i < cn; i++)
                total += lost[m[i]];
            for (int k = 0; k + 1 < nlev; k++)
                for (int q = k + 1; q < nlev; q++) {
                    double delta = 0;
                    for (int i = 0; i < cn; i++) {
                        int j = m[i], l = p->jobs[j].level;
                        if (l > lev[k] || l < lev[q] || !plan_has_network(&p->jobs[j]))
                            continue;
                        hold_t h = merged_hold(p, &g, hold[j], j, lev[k], lev[q]);
                        delta += loss(&p->jobs[j], hold_logf(h)) - lost[j];
                    }
                    if (delta < best - 1e-12 * (total + 1)) {
                        best = delta;
                        at = k;
                        to = q;
                    }
                }
            if (at < 0)
                break;
            int hi = lev[at], lo = lev[to];
            /* every new hold first, from the levels before the merge */
            for (int i = 0; i < cn; i++) {
                int j = m[i], l = p->jobs[j].level;
                if (l <= hi && l >= lo)
                    next[j] = merged_hold(p, &g, hold[j], j, hi, lo);
            }
            for (int i = 0; i < cn; i++) {
                int j = m[i], l = p->jobs[j].level;
                if (l > hi || l < lo)
                    continue;
                hold[j] = next[j];
                lost[j] = plan_has_network(&p->jobs[j]) ? loss(&p->jobs[j], hold_logf(hold[j])) : 0;
                p->jobs[j].level = hi;
            }
            int gone = to - at;
            for (int k = at + 1; k + gone < nlev; k++)
                lev[k] = lev[k + gone];
            nlev -= gone;
        }
    }
    st = CRUX_OK;
out:
    nbr_free(&g);
    free(hold);
    free(next);
    free(lost);
    free(uf);
    free(memb);
    free(off);
    free(fill);
    return st;
}

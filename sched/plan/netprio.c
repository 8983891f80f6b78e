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
 * counted from the bottom, so compression (Algorithm 1) keeps the order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/plan/sched_plan.h"

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

crux_status_t crux_sched_plan_network_priorities(crux_sched_plan_t *p)
{
    if (p == NULL || p->stage < PLAN_PRIORITIES)
        return CRUX_ERR_INVALID;
    const crux_sched_cluster_t *c = p->c;
    int n = p->njobs, nl = c->nlinks;
    size_t sz = (size_t)n + 1;
    crux_status_t st = CRUX_ERR_NO_MEMORY;
    int *link_off = calloc((size_t)nl + 1, sizeof(int));
    int *link_jobs = malloc((p->njl ? p->njl : 1) * sizeof(int));
    double *link_use = malloc((p->njl ? p->njl : 1) * sizeof(double));
    int *fill = malloc(((size_t)nl + 1) * sizeof(int));
    int *mark = malloc(sz * sizeof(int)), *nb_off = calloc(sz, sizeof(int));
    double *best = malloc(sz * sizeof(double)), *duty = malloc(sz * sizeof(double));
    double *logf = calloc(sz, sizeof(double));
    unsigned *ver = calloc(sz, sizeof(unsigned));
    char *placed = calloc(sz, 1);
    size_t cap = 1024, nn = 0;
    int *nb = malloc(cap * sizeof(int));
    double *nbw = malloc(cap * sizeof(double));
    minheap_t h = { NULL, 0, 0 };
    if (!link_off || !link_jobs || !link_use || !fill || !mark || !nb_off || !best || !duty ||
        !logf || !ver || !placed || !nb || !nbw)
        goto out;
    for (int i = 0; i < n; i++) {
        const plan_job_t *j = &p->jobs[i];
        mark[i] = -1;
        double d = plan_has_network(j) && j->period > 0 ? j->comm_s / j->period : 0;
        duty[i] = d < DUTY_MAX ? d : DUTY_MAX;
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
    double *load = calloc((size_t)nl + 1, sizeof(double));
    if (load == NULL)
        goto out;
    for (int l = 0; l < nl; l++)
        for (int q = link_off[l]; q < link_off[l + 1]; q++)
            load[l] += link_use[q];
    /* neighbours: for job b, each job a that holds it somewhere, with
     * log(1 - d_a min(1, u_a L)) over the worst contended link they share
     * (u_a: a's share of it, L: its load) */
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
                double w = log(1 - duty[a] * (hold < 1 ? hold : 1));
                if (mark[a] == b) {
                    if (w < best[a])
                        best[a] = w;
                    continue;
                }
                mark[a] = b;
                best[a] = w;
                if (nn == cap) {
                    int *nt = realloc(nb, 2 * cap * sizeof(int));
                    if (nt != NULL)
                        nb = nt;
                    double *nw = realloc(nbw, 2 * cap * sizeof(double));
                    if (nw != NULL)
                        nbw = nw;
                    if (nt == NULL || nw == NULL) {
                        free(load);
                        goto out;
                    }
                    cap *= 2;
                }
                nb[nn++] = a;
            }
        }
        for (size_t e = (size_t)first; e < nn; e++) {
            nbw[e] = best[nb[e]];
            logf[b] += nbw[e];
        }
        nb_off[b + 1] = (int)nn;
    }
    free(load);
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
    int *rev_off = calloc(sz, sizeof(int)), *rev = malloc((nn ? nn : 1) * sizeof(int));
    double *revw = malloc((nn ? nn : 1) * sizeof(double));
    if (!rev_off || !rev || !revw) {
        free(rev_off);
        free(rev);
        free(revw);
        goto out;
    }
    for (size_t e = 0; e < nn; e++)
        rev_off[nb[e] + 1]++;
    for (int a = 0; a < n; a++)
        rev_off[a + 1] += rev_off[a];
    memcpy(fill, rev_off, (size_t)n * sizeof(int));
    for (int b = 0; b < n; b++)
        for (int e = nb_off[b]; e < nb_off[b + 1]; e++) {
            rev[fill[nb[e]]] = b;
            revw[fill[nb[e]]++] = nbw[e];
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
                                             ++ver[b] }) != 0) {
                free(rev_off);
                free(rev);
                free(revw);
                goto out;
            }
        }
    }
    free(rev_off);
    free(rev);
    free(revw);
    st = CRUX_OK;
out:
    free(link_off);
    free(link_jobs);
    free(link_use);
    free(fill);
    free(mark);
    free(nb_off);
    free(best);
    free(duty);
    free(logf);
    free(ver);
    free(placed);
    free(nb);
    free(nbw);
    free(h.a);
    return st;
}

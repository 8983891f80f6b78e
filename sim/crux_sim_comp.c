/* Components: after a policy ran, the running jobs are regrouped into sets
 * that can slow each other down.
 *
 * A link is contended when its users, each at the most its private links
 * (links nobody else uses) allow, could send more than it carries; a link
 * that cannot fill never limits anyone, so it is left out.  Jobs joined by
 * contended links form a component; its water-filling sees the contended
 * links as slots (crux_sim_slots.c).  A component whose jobs, order of levels,
 * links and weights are exactly as before keeps its state, frozen or not;
 * every other one is brought up to date and rebuilt from its jobs' current
 * phases. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/crux_keyed.h"
#include "sim/crux_sim_advance.h"

static void comp_arrays_free(sim_comp_t *c)
{
    free(c->jobs);
    free(c->level);
    free(c->slot_link);
    free(c->slot_bw);
    free(c->off);
    free(c->slot);
    free(c->w);
    free(c->rcap);
    free(c->su_off);
    free(c->su);
    free(c->sa);
    free(c->supos);
    free(c->suk);
    free(c->heap);
    free(c->sf);
    free(c->slot_used);
    free(c->rate);
    free(c->brk);
    free(c->live);
    free(c->job_full);
    free(c->cand);
    free(c->touched);
    free(c->sslot);
    free(c->jcap);
    free(c->job_mark);
    free(c->set);
    free(c->act);
    free(c->snap);
    free(c->delta);
    free(c->contended);
}

void sim_comp_release(sim_t *s, int ci)
{
    sim_comp_t *c = &s->comps[ci];
    comp_arrays_free(c);
    uint64_t gen = c->gen + 1;
    memset(c, 0, sizeof(*c));
    c->gen = gen; /* its heap entries are now stale */
    s->free_comps[s->nfree_comps++] = ci;
}

/* Zeroed memory; sets *bad when there is none. */
static void *grab(size_t bytes, int *bad)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (p == NULL)
        *bad = 1;
    return p;
}

/* A component slot for n jobs with nraw links in all, nslots slots and nw
 * weights; -1 when out of memory. */
static int comp_new(sim_t *s, int n, int nraw, int nslots, int nw)
{
    int ci;
    if (s->nfree_comps > 0) {
        ci = s->free_comps[--s->nfree_comps];
    } else {
        if (s->ncomps == s->cap_comps) {
            int ncap = s->cap_comps ? 2 * s->cap_comps : 64;
            sim_comp_t *nc = realloc(s->comps, (size_t)ncap * sizeof(*nc));
            int *nf = realloc(s->free_comps, (size_t)ncap * sizeof(int));
            if (nc != NULL)
                s->comps = nc;
            if (nf != NULL)
                s->free_comps = nf;
            if (nc == NULL || nf == NULL)
                return -1;
            s->cap_comps = ncap;
        }
        ci = s->ncomps++;
        memset(&s->comps[ci], 0, sizeof(sim_comp_t));
    }
    sim_comp_t *c = &s->comps[ci];
    size_t sn = (size_t)n, se = (size_t)nslots, sw = (size_t)nw;
    size_t snap = (size_t)(SIM_SNAPS + 2) * (1 + sn * (size_t)sim_comp_snapshot_vals());
    int bad = 0;
    c->alive = 1;
    c->n = n;
    c->nslots = nslots;
    c->jobs = grab(sn * sizeof(int), &bad);
    c->level = grab(sn * sizeof(int), &bad);
    c->off = grab((sn + 1) * sizeof(int), &bad);
    c->rcap = grab(sn * sizeof(double), &bad);
    c->rate = grab(sn * sizeof(double), &bad);
    c->brk = grab((sn + 1) * sizeof(*c->brk), &bad); /* + 1: the job itself */
    c->heap = grab(sn * sizeof(int), &bad);
    c->job_mark = grab(sn * sizeof(int), &bad);
    c->set = grab(sn * sizeof(int), &bad);
    c->act = grab(sn * sizeof(int), &bad);
    c->delta = grab(3 * sn * sizeof(double), &bad);
    c->slot_link = grab(se * sizeof(int), &bad);
    c->slot_bw = grab(se * sizeof(double), &bad);
    c->sf = grab(se * sizeof(*c->sf), &bad);
    c->slot_used = grab(se * sizeof(double), &bad);
    c->live = grab(se * sizeof(int), &bad);
    c->job_full = grab(sn * sizeof(int), &bad);
    c->cand = grab((se + 1) * sizeof(int), &bad);
    c->touched = grab((se + 1) * sizeof(int), &bad);
    c->sslot = grab((se + 1) * sizeof(int), &bad);
    c->jcap = grab(sn * sizeof(double), &bad);
    c->su_off = grab((se + 1) * sizeof(int), &bad);
    c->sa = grab(se * sizeof(int), &bad);
    c->slot = grab(sw * sizeof(int), &bad);
    c->w = grab(sw * sizeof(double), &bad);
    c->su = grab(sw * sizeof(int), &bad);
    c->supos = grab(sw * sizeof(int), &bad);
    c->suk = grab(sw * sizeof(int), &bad);
    c->snap = grab(snap * sizeof(double), &bad);
    c->contended = grab((size_t)nraw, &bad);
    if (bad) {
        sim_comp_release(s, ci);
        return -1;
    }
    return ci;
}

typedef struct {
    sim_t *s;
    double *xcap; /* per running position */
    int *uf;
} regroup_t;

static int uf_find(int *uf, int x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

static int contended(const sim_t *s, int l)
{
    return s->link_users[l] >= 2 && s->link_demand[l] > s->link_bw[l] * (1 + 1e-9);
}

/* Link users, private caps, demands, and the union of jobs over contended
 * links (positions in s->running). */
static void regroup(regroup_t *g)
{
    sim_t *s = g->s;
    int n = s->nrunning;
    s->stamp++;
    for (int p = 0; p < n; p++) {
        const sim_decision_t *d = &s->jobs[s->running[p]].next;
        for (int k = 0; k < d->nlinks; k++) {
            int l = d->links[k];
            if (s->link_stamp[l] != s->stamp) {
                s->link_stamp[l] = s->stamp;
                s->link_users[l] = 0;
                s->link_demand[l] = 0;
                s->link_slot[l] = -1; /* here: the first user's position */
            }
            s->link_users[l]++;
        }
    }
    for (int p = 0; p < n; p++) {
        const sim_decision_t *d = &s->jobs[s->running[p]].next;
        g->xcap[p] = INFINITY;
        for (int k = 0; k < d->nlinks; k++) {
            double cap = s->link_bw[d->links[k]] / d->mbytes[k];
            if (s->link_users[d->links[k]] == 1 && cap < g->xcap[p])
                g->xcap[p] = cap;
        }
    }
    for (int p = 0; p < n; p++) {
        const sim_decision_t *d = &s->jobs[s->running[p]].next;
        for (int k = 0; k < d->nlinks; k++)
            if (s->link_users[d->links[k]] >= 2)
                s->link_demand[d->links[k]] += g->xcap[p] * d->mbytes[k];
    }
    for (int p = 0; p < n; p++)
        g->uf[p] = p;
    for (int p = 0; p < n; p++) {
        const sim_decision_t *d = &s->jobs[s->running[p]].next;
        for (int k = 0; k < d->nlinks; k++) {
            int l = d->links[k];
            if (!contended(s, l))
                continue;
            if (s->link_slot[l] < 0) {
                s->link_slot[l] = p;
            } else {
                int a = uf_find(g->uf, p), b = uf_find(g->uf, s->link_slot[l]);
                if (a != b)
                    g->uf[a > b ? a : b] = a < b ? a : b;
            }
        }
    }
}

/* What a job's private links allow it (bytes/s per flow byte, 0 without
 * network traffic): its cap in the filling. */
static double job_rcap(const regroup_t *g, int p)
{
    const sim_job_t *j = &g->s->jobs[g->s->running[p]];
    return j->net ? g->xcap[p] * j->flow_bytes : 0;
}

typedef struct {
    int root, level, job, pos;
} member_t;

/* Components in order of their root; in each, jobs by level (highest
 * first), then index. */
static int by_comp_level(const void *x, const void *y)
{
    const member_t *a = x, *b = y;
    if (a->root != b->root)
        return a->root - b->root;
    if (a->level != b->level)
        return b->level - a->level;
    return a->job - b->job;
}

/* The component of the running positions pos[0..n-1]; -1 out of memory. */
static int build(regroup_t *g, const int *pos, int n)
{
    sim_t *s = g->s;
    sim_linkset_t ls;
    int ci = -1;
    int *jobs = malloc((size_t)(n ? n : 1) * sizeof(int));
    if (jobs == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        jobs[i] = s->running[pos[i]];
    /* link_users and link_demand keep what regroup() found for every link
     * of a running job, so contended() still holds */
    int rc = sim_linkset_build(s, jobs, n, contended, &ls);
    double *bw = malloc((size_t)(ls.nlinks ? ls.nlinks : 1) * sizeof(double));
    int *slot_of = malloc((size_t)(ls.nlinks ? ls.nlinks : 1) * sizeof(int));
    int *first = malloc((size_t)(ls.nlinks ? ls.nlinks : 1) * sizeof(int));
    char *dominated = NULL;
    int *newid = NULL;
    if (rc != 0 || !bw || !slot_of || !first)
        goto out;
    for (int e = 0; e < ls.nlinks; e++)
        bw[e] = s->link_bw[ls.link[e]];
    int nslots = sim_link_slots(ls.off, ls.user, ls.mb, bw, ls.nlinks, slot_of, first);
    dominated = malloc((size_t)(nslots > 0 ? nslots : 1));
    newid = malloc((size_t)(nslots > 0 ? nslots : 1) * sizeof(int));
    if (nslots < 0 || dominated == NULL || newid == NULL ||
        sim_slots_dominated(ls.off, ls.user, ls.mb, bw, first, nslots, n, dominated) < 0)
        goto out;
    int kept = 0, nw = 0; /* the slots left, renumbered in order */
    for (int x = 0; x < nslots; x++) {
        newid[x] = dominated[x] ? -1 : kept++;
        nw += dominated[x] ? 0 : ls.off[first[x] + 1] - ls.off[first[x]];
    }
    int nraw = 0;
    for (int i = 0; i < n; i++)
        nraw += s->jobs[jobs[i]].next.nlinks;
    ci = comp_new(s, n, nraw, kept, nw);
    if (ci < 0)
        goto out;
    sim_comp_t *c = &s->comps[ci];
    int w = 0, raw = 0;
    c->off[0] = 0;
    for (int i = 0; i < n; i++) {
        const sim_job_t *j = &s->jobs[jobs[i]];
        c->jobs[i] = jobs[i];
        if (i > 0)
            c->level[i] = c->level[i - 1] + (j->next.level != s->jobs[c->jobs[i - 1]].next.level);
        c->rcap[i] = job_rcap(g, pos[i]);
        for (int k = 0; k < j->next.nlinks; k++) {
            int l = j->next.links[k];
            c->contended[raw++] = (char)contended(s, l);
            if (!contended(s, l))
                continue;
            int e = s->link_slot[l], x = newid[slot_of[e]];
            if (first[slot_of[e]] != e || x < 0) /* its slot's first link stands for it */
                continue;
            c->slot[w] = x;
            c->w[w++] = j->next.mbytes[k] / j->flow_bytes;
            c->slot_link[x] = l;
            c->slot_bw[x] = s->link_bw[l];
        }
        c->off[i + 1] = w;
    }
    /* the users of each slot, for the water-filling of a set; none
     * transferring yet (sim_rates marks them as rates are set) */
    for (int k = 0; k < w; k++)
        c->su_off[c->slot[k] + 1]++;
    for (int e = 0; e < kept; e++)
        c->su_off[e + 1] += c->su_off[e];
    for (int e = 0; e < kept; e++)
        c->sf[e].mark = c->su_off[e]; /* fill cursors, reset below */
    for (int i = 0; i < n; i++)
        for (int k = c->off[i]; k < c->off[i + 1]; k++) {
            int idx = c->sf[c->slot[k]].mark++;
            c->su[idx] = i;
            c->suk[idx] = k;
            c->supos[k] = idx;
        }
    for (int e = 0; e < kept; e++)
        c->sf[e].mark = 0;
out:
    sim_linkset_free(&ls);
    free(jobs);
    free(bw);
    free(slot_of);
    free(first);
    free(dominated);
    free(newid);
    return ci;
}

static int same_decision(const sim_decision_t *a, const sim_decision_t *b)
{
    return a->nlinks == b->nlinks &&
           memcmp(a->links, b->links, (size_t)a->nlinks * sizeof(int)) == 0 &&
           memcmp(a->mbytes, b->mbytes, (size_t)a->nlinks * sizeof(double)) == 0;
}

/* Whether old component o was built from what build() would now be given
 * for the running positions pos[0..n-1]: the same jobs in the same order,
 * order of levels, caps, decisions (in force and next) and contended
 * links.  It then evolves exactly as the new one would, and checking costs
 * less than building: most components are unchanged at a replan. */
static int built_from(const regroup_t *g, const sim_comp_t *o, const int *pos, int n)
{
    const sim_t *s = g->s;
    if (o->n != n)
        return 0;
    int raw = 0;
    for (int i = 0; i < n; i++) {
        const sim_job_t *j = &s->jobs[s->running[pos[i]]];
        int rank = i == 0 ? 0
                          : o->level[i - 1] +
                                (j->next.level != s->jobs[s->running[pos[i - 1]]].next.level);
        double rcap = job_rcap(g, pos[i]);
        if (o->jobs[i] != s->running[pos[i]] || o->level[i] != rank ||
            memcmp(&o->rcap[i], &rcap, sizeof(rcap)) != 0 || j->shift > 0 ||
            !same_decision(&j->dec, &j->next))
            return 0;
        for (int k = 0; k < j->next.nlinks; k++)
            if (o->contended[raw++] != contended(s, j->next.links[k]))
                return 0;
    }
    return 1;
}

/* Whether old component o evolves exactly as new component c would. */
static int unchanged(const sim_t *s, const sim_comp_t *o, const sim_comp_t *c)
{
    if (o->n != c->n || o->nslots != c->nslots || o->off[o->n] != c->off[c->n])
        return 0;
    size_t n = (size_t)c->n, nw = (size_t)c->off[c->n], ns = (size_t)c->nslots;
    if (memcmp(o->jobs, c->jobs, n * sizeof(int)) || memcmp(o->level, c->level, n * sizeof(int)) ||
        memcmp(o->off, c->off, (n + 1) * sizeof(int)) ||
        memcmp(o->rcap, c->rcap, n * sizeof(double)) ||
        memcmp(o->slot, c->slot, nw * sizeof(int)) || memcmp(o->w, c->w, nw * sizeof(double)) ||
        memcmp(o->slot_link, c->slot_link, ns * sizeof(int)))
        return 0;
    for (size_t q = 0; q < n; q++) {
        const sim_job_t *j = &s->jobs[c->jobs[q]];
        if (j->shift > 0 || !same_decision(&j->dec, &j->next))
            return 0;
    }
    return 1;
}

/* The anchor of steady-state detection: the job with the median iteration
 * alone (the upper one of two), or, when that job is not of the highest
 * level, the job of the highest level nearest to it in that order, above
 * first.  Its iterations set the averaging window, long enough for most
 * jobs to complete several, short enough that a large component is not
 * stepped through for many iterations of its slowest job after every change
 * (crux_sim_step.c).  Highest level: no priority starves it.  A lower anchor can wait
 * through the higher transfers and finish no iteration, and the component
 * is then stepped until another job takes over (a handover after
 * 1000 + 100 n events). */
static int median_period(const sim_t *s, const sim_comp_t *c)
{
    int top = 1; /* jobs are by level, highest first; there is one */
    while (top < c->n && c->level[top] == 0)
        top++;
    crux_keyed_t *p = malloc((size_t)c->n * sizeof(*p));
    if (p == NULL)
        return 0;
    for (int q = 0; q < c->n; q++)
        p[q] = (crux_keyed_t){ s->jobs[c->jobs[q]].alone_period, q };
    qsort(p, (size_t)c->n, sizeof(*p), crux_keyed_asc);
    int a = -1;
    for (int i = c->n / 2; i < c->n && a < 0; i++)
        if (p[i].job < top)
            a = p[i].job;
    for (int i = c->n / 2 - 1; i >= 0 && a < 0; i--)
        if (p[i].job < top)
            a = p[i].job;
    free(p);
    return a;
}

/* A rebuilt component starts from its jobs' current phases. */
static void start(sim_t *s, int ci)
{
    sim_comp_t *c = &s->comps[ci];
    c->now = s->now;
    for (int q = 0; q < c->n; q++) {
        sim_job_t *j = &s->jobs[c->jobs[q]];
        sim_job_bring(s, j, s->now);
        j->comp = ci;
        j->xfer = 0; /* nothing listed as transferring here yet */
        j->shared |= c->n > 1;
        j->hold += j->shift;
        j->shift = 0;
    }
    c->anchor = median_period(s, c);
    int *all = malloc((size_t)(c->n ? c->n : 1) * sizeof(int));
    if (all == NULL) {
        s->failed = 1;
        return;
    }
    for (int q = 0; q < c->n; q++)
        all[q] = q;
    sim_rates(s, c, all, c->n, s->now);
    free(all);
    sim_comp_heap_init(s, c);
    sim_comp_schedule(s, ci);
}

int sim_comps_rebuild(sim_t *s)
{
    int n = s->nrunning, old_count = s->ncomps, rc = -1;
    regroup_t g = { s, malloc((size_t)(n + 1) * sizeof(double)),
                    malloc((size_t)(n + 1) * sizeof(int)) };
    int *pos = malloc((size_t)(n + 1) * sizeof(int));
    member_t *m = malloc((size_t)(n + 1) * sizeof(member_t));
    int *fresh = malloc((size_t)(n + 1) * sizeof(int)), nfresh = 0;
    char *keep = calloc((size_t)old_count + 1, 1), *was = calloc((size_t)old_count + 1, 1);
    if (!g.xcap || !g.uf || !pos || !m || !fresh || !keep || !was)
        goto out;
    for (int ci = 0; ci < old_count; ci++)
        was[ci] = (char)s->comps[ci].alive;
    regroup(&g);
    for (int p = 0; p < n; p++)
        m[p] = (member_t){ uf_find(g.uf, p), s->jobs[s->running[p]].next.level, s->running[p], p };
    qsort(m, (size_t)n, sizeof(*m), by_comp_level);
    for (int p = 0; p < n; p++)
        pos[p] = m[p].pos;
    for (int a = 0; a < n;) {
        int b = a + 1;
        while (b < n && m[b].root == m[a].root)
            b++;
        int old = s->jobs[s->running[pos[a]]].comp;
        if (old >= 0 && old < old_count && was[old] &&
            built_from(&g, &s->comps[old], pos + a, b - a)) {
            keep[old] = 1;
            a = b;
            continue;
        }
        int ci = build(&g, pos + a, b - a);
        if (ci < 0)
            goto out;
        if (old >= 0 && old < old_count && was[old] &&
            unchanged(s, &s->comps[old], &s->comps[ci])) {
            keep[old] = 1;
            sim_comp_release(s, ci);
        } else {
            fresh[nfresh++] = ci;
        }
        a = b;
    }
    /* bring the dissolved components up to date under the old decisions */
    for (int ci = 0; ci < old_count; ci++)
        if (was[ci] && !keep[ci])
            sim_comp_materialize(s, ci, s->now);
    for (int ci = 0; ci < old_count; ci++)
        if (was[ci] && !keep[ci])
            sim_comp_release(s, ci);
    for (int p = 0; p < n; p++) {
        sim_job_t *j = &s->jobs[s->running[p]];
        if (!same_decision(&j->dec, &j->next))
            sim_flush_links(s, j);
        sim_decision_t t = j->dec;
        j->dec = j->next;
        j->next = t;
    }
    for (int f = 0; f < nfresh; f++)
        start(s, fresh[f]);
    rc = 0;
out:
    free(g.xcap);
    free(g.uf);
    free(pos);
    free(m);
    free(fresh);
    free(keep);
    free(was);
    return rc;
}

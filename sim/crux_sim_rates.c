/* Transfer rates: strict priority between levels, max-min fairness
 * between flows within a level (progressive filling), recomputed only for
 * the jobs a change can reach.
 *
 * A job's flows form a ring and move at one pace, so the filling raises a
 * per-flow rate r for every unfrozen job of the level at once; job j then
 * uses r * w_{j,e} of each contended link e (w = its flows on e, counted as
 * M_{j,e} / its largest flow's bytes) and cannot exceed rcap_j, what its
 * private links allow.  The link or cap reached first freezes the jobs it
 * limits; the level's leftover capacity goes to the levels below.
 * Non-contended links are left out: their users together cannot fill them;
 * contended links that carry the same flows are one slot, and a slot
 * another always fills first is left out (crux_sim_slots.c).
 *
 * When jobs start or stop transferring, the jobs of higher levels keep
 * their rates (strict priority), so the filling runs on the jobs of their
 * level and below (collect()); and when one job's change provably moves
 * no other rate (shortcut()), not at all.  When one job starts or stops,
 * the jobs of its level that the filling froze below the level where the
 * change can first show (sim_rates_first_change()) keep their rates too:
 * the filling runs on the others.  --check verifies every transferring job
 * of the seeds' level and below. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_advance.h"

/* Shared slots whose fill levels are this close (relative) saturate in one
 * round: rounding must not split them into two. */
#define TIE 1e-12
/* A slot whose rising weights sum to at most this has none left: the rest
 * is rounding from taking frozen users' weights off. */
#define WEIGHT_MIN 1e-12
/* Rates, loads and capacities this close (relative) may be equal but for
 * their last bits: a first change is taken this much lower, a shortcut
 * wants this much room, and the checks allow this much. */
#define MARGIN 1e-9

/* The set: the seeds and every transferring job of their level or below,
 * in position order (levels, highest first).  Every job whose transferring
 * state changed since its rate was set is a seed, so the transferring users
 * listed per slot are the others.  Jobs above every seed keep their rates
 * (strict priority: what happens below them cannot slow them down), so they
 * are left out and what they use of each slot is taken off its capacity
 * instead: a change then costs the levels it can reach, not the whole
 * contended component.  So are the jobs of the seeds' level whose rates
 * are below `lim` (sim_rates_first_change()).  A job below that no slot
 * joins to a seed keeps its rate too, but finding those costs a scan of
 * every member's slots' users and leaves out almost none (Lingjun random,
 * Crux-PA: 0.2 of 48 jobs a set), so the set takes them all and the
 * filling gives them their rates again.  The set's slots are listed in
 * c->sslot (c->nsslot of them), each with what the jobs kept out use of it
 * taken off its capacity. */
static int collect(sim_t *s, sim_comp_t *c, const int *seeds, int nseeds, double lim)
{
    int n = 0, mark = ++c->mark, top = INT_MAX;
    for (int i = 0; i < nseeds; i++) {
        if (c->level[seeds[i]] < top)
            top = c->level[seeds[i]];
        c->job_mark[seeds[i]] = mark;
    }
    int v = 0;
    while (v < c->n && c->level[v] < top)
        v++;
    int below = v; /* the first position below the seeds' level */
    while (below < c->n && c->level[below] == top)
        below++;
    /* only jobs above the seeds' level, or of it with rates below lim, are
     * kept out: the users listed before the first member's position */
    int stop = lim > 0 ? below : v;
    for (; v < c->n; v++) {
        int in = c->job_mark[v] == mark ||
                 (s->jobs[c->jobs[v]].xfer && (c->level[v] > top || !(c->rate[v] < lim)));
        c->job_mark[v] = in ? mark : c->job_mark[v];
        c->set[n] = v;
        n += in;
    }
    /* Whether a slot is new is data-dependent and would be mispredicted
     * half the time, so it is counted without a branch: the candidate is
     * written, then kept by advancing the count. */
    int ns = 0;
    for (int i = 0; i < n; i++) {
        int q = c->set[i];
        for (int k = c->off[q]; k < c->off[q + 1]; k++) {
            int e = c->slot[k];
            c->sslot[ns] = e;
            ns += c->sf[e].mark != mark;
            c->sf[e].mark = mark;
        }
    }
    for (int x = 0; x < ns; x++) {
        int e = c->sslot[x];
        double rem = c->slot_bw[e];
        for (int u = c->su_off[e]; u < c->su_off[e] + c->sa[e] && c->su[u] < stop; u++) {
            int v = c->su[u];
            int kept = c->job_mark[v] != mark;
            rem -= kept ? c->rate[v] * c->w[c->suk[u]] : 0.0; /* x - 0.0 is x */
        }
        c->sf[e].sum = 0;
        c->sf[e].rem = rem > 0 ? rem : 0;
    }
    c->nsslot = ns;
    return n;
}

/* Moves the su entry at idx to position `to` of its slot's region. */
static void su_swap(sim_comp_t *c, int idx, int to)
{
    int q = c->su[idx], k = c->suk[idx];
    c->su[idx] = c->su[to];
    c->suk[idx] = c->suk[to];
    c->supos[c->suk[idx]] = idx;
    c->su[to] = q;
    c->suk[to] = k;
    c->supos[k] = to;
}

/* Job q starts (on) or stops transferring: its entries join or leave the
 * transferring prefix of each of its slots, which is kept in position
 * order (levels, highest first): collect() then reads only the users above
 * the set, and every sum over a slot's users is taken in one order, not in
 * the order jobs happened to start. */
static void list_transferring(sim_comp_t *c, int q, int on)
{
    for (int k = c->off[q]; k < c->off[q + 1]; k++) {
        int e = c->slot[k], at;
        if (on) {
            at = c->su_off[e] + c->sa[e]++;
            su_swap(c, c->supos[k], at);
            for (; at > c->su_off[e] && c->su[at - 1] > q; at--)
                su_swap(c, at - 1, at);
        } else {
            int end = c->su_off[e] + --c->sa[e];
            for (at = c->supos[k]; at < end; at++)
                su_swap(c, at, at + 1);
        }
    }
}

/* Progressive filling of set members [a, b), all of one level.  A slot
 * that only one of them uses is just a cap on that job (what the levels
 * above left of it over the job's weight), so the rounds look at shared
 * slots only: each finds the fill level r where the next shared slot
 * saturates or a cap binds, then freezes the jobs it limits.  The rounds
 * scan only the jobs still rising (act) and the shared slots one of them
 * still uses, both in their first order, so every sum and comparison is
 * the one a scan of all of them would make.  The scan that finds r also
 * keeps the few slots that may saturate at it (cand), and those that do
 * flag their users (job_full), so freezing reads one flag per rising job
 * rather than each of its slots. */
static void fill_level(sim_t *s, sim_comp_t *c, int a, int b)
{
    int nact = 0, ntouched = 0, ns = 0;
    for (int i = a; i < b; i++) {
        int q = c->set[i];
        c->rate[q] = 0;
        if (!sim_transferring(&s->jobs[c->jobs[q]]))
            continue;
        c->act[nact++] = q;
        c->jcap[q] = c->rcap[q];
        for (int k = c->off[q]; k < c->off[q + 1]; k++) {
            sim_slot_fill_t *f = &c->sf[c->slot[k]];
            c->touched[ntouched] = c->slot[k];
            ntouched += f->cnt++ == 0;
            f->sum += c->w[k];
            f->user = k; /* its only one if no other comes */
            f->job = q;
        }
    }
    /* a slot one job uses caps it; the others are shared */
    for (int x = 0; x < ntouched; x++) {
        int e = c->touched[x];
        const sim_slot_fill_t *f = &c->sf[e];
        if (f->cnt > 1)
            c->live[ns++] = e;
        else if (f->rem < c->jcap[f->job] * c->w[f->user])
            c->jcap[f->job] = f->rem / c->w[f->user];
    }
    while (nact > 0) {
        double r = INFINITY;
        for (int x = 0; x < nact; x++)
            if (c->jcap[c->act[x]] < r)
                r = c->jcap[c->act[x]];
        /* One scan finds r, drops the slots no rising job uses any more
         * (only this scan read them, and it skips them while their sum is
         * at most WEIGHT_MIN) and keeps as candidates the slots within the
         * margin of the lowest level seen so far.  That level only falls
         * towards r, so every slot within the margin of r is among them. */
        double lim = r * (1 + TIE);
        int live = 0, ncand = 0;
        for (int x = 0; x < ns; x++) {
            int e = c->live[x];
            double sum = c->sf[e].sum;
            if (c->sf[e].cnt == 0 && !(sum > WEIGHT_MIN))
                continue;
            c->live[live++] = e;
            if (!(sum > WEIGHT_MIN))
                continue;
            if (c->sf[e].rem < r * sum) {
                r = c->sf[e].rem / sum;
                lim = r * (1 + TIE);
            }
            c->cand[ncand] = e;
            ncand += c->sf[e].rem <= lim * sum;
        }
        ns = live;
        if (!(r > 0) || !isfinite(r)) { /* infinite cannot happen: all have caps */
            r = 0;
            ncand = 0;
            for (int x = 0; x < ns; x++)
                c->cand[ncand++] = c->live[x];
        }
        lim = r * (1 + TIE);
        int nfull = 0;
        for (int x = 0; x < ncand; x++) { /* saturated shared slots bind their users */
            int e = c->cand[x];
            if (c->sf[e].sum > WEIGHT_MIN && c->sf[e].rem <= lim * c->sf[e].sum) {
                c->cand[nfull++] = e;
                for (int u = c->su_off[e]; u < c->su_off[e + 1]; u++)
                    c->job_full[c->su[u]] = 1;
            }
        }
        int kept = 0;
        for (int x = 0; x < nact; x++) {
            int q = c->act[x];
            if (!c->job_full[q] && !(c->jcap[q] <= lim)) {
                c->act[kept++] = q;
                continue;
            }
            c->rate[q] = r;
            for (int k = c->off[q]; k < c->off[q + 1]; k++) {
                int e = c->slot[k];
                double rem = c->sf[e].rem - c->w[k] * r;
                c->sf[e].rem = rem < 0 ? 0 : rem;
                c->sf[e].sum -= c->w[k];
                c->sf[e].cnt--;
            }
        }
        nact = kept;
        for (int x = 0; x < nfull; x++)
            for (int u = c->su_off[c->cand[x]]; u < c->su_off[c->cand[x] + 1]; u++)
                c->job_full[c->su[u]] = 0;
    }
    for (int x = 0; x < ntouched; x++) { /* the next level starts afresh */
        c->sf[c->touched[x]].sum = 0;
        c->sf[c->touched[x]].cnt = 0;
    }
}

static int by_freeze_level(const void *x, const void *y)
{
    double a = ((const sim_freeze_t *)x)->at, b = ((const sim_freeze_t *)y)->at;
    return (a > b) - (a < b);
}

double sim_rates_first_change(sim_comp_t *c, int q, int starts)
{
    if (!starts)
        return c->rate[q] * (1 - MARGIN);
    double first = INFINITY;
    for (int k = c->off[q]; k < c->off[q + 1]; k++) {
        int e = c->slot[k], nb = 0;
        double rem = c->slot_bw[e], slope = c->w[k];
        sim_freeze_t *b = c->brk;
        b[nb++] = (sim_freeze_t){ c->rcap[q], c->w[k] };
        for (int u = c->su_off[e]; u < c->su_off[e] + c->sa[e]; u++) {
            int v = c->su[u];
            double w = c->w[c->suk[u]];
            if (c->level[v] < c->level[q]) {
                rem -= c->rate[v] * w;
            } else if (c->level[v] == c->level[q]) {
                b[nb++] = (sim_freeze_t){ c->rate[v], w };
                slope += w;
            }
        }
        if (nb > 16) { /* by freeze level */
            qsort(b, (size_t)nb, sizeof(*b), by_freeze_level);
        } else {
            for (int i = 1; i < nb; i++) {
                sim_freeze_t x = b[i];
                int m = i;
                while (m > 0 && b[m - 1].at > x.at) {
                    b[m] = b[m - 1];
                    m--;
                }
                b[m] = x;
            }
        }
        /* the users' load at level r: base + slope r, all frozen below r
         * in base, the rising ones in slope */
        double base = 0;
        for (int i = 0; i < nb && slope > 0; i++) {
            if (base + slope * b[i].at >= rem) {
                double r = (rem - base) / slope;
                if (r < first)
                    first = r;
                break;
            }
            base += b[i].w * b[i].at;
            slope -= b[i].w;
        }
    }
    return first > 0 ? first * (1 - MARGIN) : 0;
}

/* Job q's rate as a shortcut when one job's change cannot move any other
 * rate (1), else 0 and the filling runs.  A job that stops transferring
 * while no slot it uses is saturated frees capacity nobody is limited by;
 * a job that starts while every slot it uses has room for it at its own
 * cap takes that cap and limits nobody (the unique allocation with it is
 * the one without it plus it at its cap).  "Saturated" and "room" keep a
 * relative margin of 1e-9 of the slot's capacity, so what is taken for
 * unsaturated is so beyond rounding and the shortcut gives what the
 * filling would, up to rounding. */
static int shortcut(sim_t *s, sim_comp_t *c, int q, double now)
{
    sim_job_t *j = &s->jobs[c->jobs[q]];
    int on = sim_transferring(j);
    if (on == j->xfer)
        return 0;
    double r = on ? c->rcap[q] : c->rate[q];
    if (on && !(r > 0 && isfinite(r)))
        return 0;
    for (int k = c->off[q]; k < c->off[q + 1]; k++) {
        int e = c->slot[k];
        double room = c->slot_bw[e] * (1 - MARGIN) - c->slot_used[e];
        if (on ? !(r * c->w[k] <= room) : !(room > 0))
            return 0;
    }
    sim_job_bring(s, j, now);
    for (int k = c->off[q]; k < c->off[q + 1]; k++)
        c->slot_used[c->slot[k]] += (on ? r : -r) * c->w[k];
    list_transferring(c, q, on);
    j->xfer = on;
    c->rate[q] = on ? r : 0;
    j->x = on ? r / j->flow_bytes : 0;
    return 1;
}

static void fill_all(sim_t *s, sim_comp_t *c, int n)
{
    for (int a = 0; a < n;) {
        int b = a + 1;
        while (b < n && c->level[c->set[b]] == c->level[c->set[a]])
            b++;
        fill_level(s, c, a, b);
        a = b;
    }
}

/* With cfg.check: the filling from job q gives every job it reaches the
 * rate it has after q's shortcut, to 1e-9 of the larger or of the job's cap
 * (a starved job's rate is 0 or rounding noise of its links' capacity).  The rates are
 * put back after; the filling's other arrays are scratch. */
static void check_shortcut(sim_t *s, sim_comp_t *c, int q, double now)
{
    double *had = malloc((size_t)c->n * sizeof(double));
    if (had == NULL) {
        s->failed = 1;
        return;
    }
    memcpy(had, c->rate, (size_t)c->n * sizeof(double));
    int n = collect(s, c, &q, 1, 0);
    fill_all(s, c, n);
    for (int i = 0; i < n; i++) {
        int v = c->set[i];
        double full = c->rate[v];
        double scale = fmax(fmax(fabs(had[v]), fabs(full)), c->rcap[v]);
        if (fabs(had[v] - full) > MARGIN * scale && !s->failed) {
            crux_errf(s->err, s->errlen,
                      "job %s: rate %.17g after a shortcut at %.17g s, %.17g by the filling",
                      s->jobs[c->jobs[v]].spec->id, had[v], now, full);
            s->failed = SIM_BROKEN;
        }
    }
    memcpy(c->rate, had, (size_t)c->n * sizeof(double));
    free(had);
}

const char *sim_rates_unfair(const sim_comp_t *c, int q)
{
    double r = c->rate[q];
    if (r > c->rcap[q] * (1 + MARGIN))
        return "above its cap";
    int bound = r >= c->rcap[q] * (1 - MARGIN);
    for (int k = c->off[q]; k < c->off[q + 1]; k++) {
        int e = c->slot[k], top = 1;
        double use = 0, below = 0;
        for (int u = c->su_off[e]; u < c->su_off[e] + c->sa[e]; u++) {
            int v = c->su[u];
            double x = c->rate[v] * c->w[c->suk[u]];
            use += x;
            if (c->level[v] > c->level[q])
                below += x;
            else if (c->level[v] == c->level[q] &&
                     c->rate[v] - r > MARGIN * fmax(fmax(r, c->rate[v]), c->rcap[q]))
                top = 0;
        }
        if (use > c->slot_bw[e] * (1 + MARGIN))
            return "on a link over its capacity";
        if (top && use >= c->slot_bw[e] * (1 - MARGIN) && below <= MARGIN * c->slot_bw[e])
            bound = 1;
    }
    return bound ? NULL : "below its cap without a bottleneck";
}

/* With cfg.check, after a filling of n jobs: every transferring job of the
 * seeds' level and below has the strict priority max-min fair rate
 * (sim_rates_unfair), checked by the certificate rather than by filling
 * again; those of the seeds' level kept out of the filling too.  The set is
 * put back after (collect() rebuilds it with nobody kept out). */
static void check_filling(sim_t *s, sim_comp_t *c, const int *seeds, int nseeds, int n, double now)
{
    int *had = malloc((size_t)(n ? n : 1) * sizeof(int));
    if (had == NULL) {
        s->failed = 1;
        return;
    }
    memcpy(had, c->set, (size_t)n * sizeof(int));
    int all = collect(s, c, seeds, nseeds, 0);
    for (int i = 0; i < all && !s->failed; i++) {
        int q = c->set[i];
        if (!sim_transferring(&s->jobs[c->jobs[q]]))
            continue;
        const char *why = sim_rates_unfair(c, q);
        if (why != NULL) {
            crux_errf(s->err, s->errlen, "job %s: rate %.17g at %.17g s, %s",
                      s->jobs[c->jobs[q]].spec->id, c->rate[q], now, why);
            s->failed = SIM_BROKEN;
        }
    }
    memcpy(c->set, had, (size_t)n * sizeof(int));
    free(had);
}

int sim_rates(sim_t *s, sim_comp_t *c, const int *seeds, int nseeds, double now)
{
    if (nseeds == 1 && shortcut(s, c, seeds[0], now)) {
        if (s->cfg.check)
            check_shortcut(s, c, seeds[0], now);
        c->set[0] = seeds[0];
        return 1;
    }
    double lim = 0;
    if (nseeds == 1) {
        const sim_job_t *j = &s->jobs[c->jobs[seeds[0]]];
        if (sim_transferring(j) != j->xfer)
            lim = sim_rates_first_change(c, seeds[0], !j->xfer);
    }
    int n = collect(s, c, seeds, nseeds, lim);
    for (int i = 0; i < n; i++) /* up to now at the old rates */
        sim_job_bring(s, &s->jobs[c->jobs[c->set[i]]], now);
    fill_all(s, c, n);
    /* what is left of the set's slots now is their capacity less what
     * every transferring user takes */
    for (int x = 0; x < c->nsslot; x++)
        c->slot_used[c->sslot[x]] = c->slot_bw[c->sslot[x]] - c->sf[c->sslot[x]].rem;
    for (int i = 0; i < n; i++) {
        int q = c->set[i];
        sim_job_t *j = &s->jobs[c->jobs[q]];
        int on = sim_transferring(j);
        if (on != j->xfer)
            list_transferring(c, q, on);
        j->xfer = on;
        j->x = on ? c->rate[q] / j->flow_bytes : 0;
        if (s->cfg.check && on && !(j->x > 0) && j->comm_left <= SIM_EPS && !s->failed) {
            crux_errf(s->err, s->errlen,
                      "job %s: waits at %.17g s with a transfer done but for %g of it", j->spec->id,
                      now, j->comm_left);
            s->failed = SIM_BROKEN;
        }
    }
    if (s->cfg.check)
        check_filling(s, c, seeds, nseeds, n, now);
    return n;
}

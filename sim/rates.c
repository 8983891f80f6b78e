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
 * another always fills first is left out (slots.c).
 *
 * When jobs start or stop transferring, only the transferring jobs
 * connected to them through shared contended links can see their rates
 * change (the water-filling of the others is a separate problem), so the
 * filling runs on that set alone; and when one job's change provably moves
 * no other rate (shortcut()), not at all.  When one job starts or stops,
 * the jobs of its level that the filling froze below the level where the
 * change can first show (sim_rates_first_change()) keep their rates too:
 * the filling runs on the others (Lingjun random, no scheduling: 13 of the
 * 49 jobs a set reached).  --check verifies every job the set reached. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"

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

/* The set: the seeds, then every transferring job of their level or below
 * sharing a slot with a member, in position order (levels, highest first).
 * Every job whose transferring state changed since its rate was set is a
 * seed, so the transferring users listed per slot are the others.  Jobs
 * above every seed keep their rates (strict priority: what happens below
 * them cannot slow them down), so they are left out and what they use of
 * each slot is taken off its capacity instead: a change then costs the
 * jobs it can reach downwards, not the whole contended component.  So are
 * the jobs of the seeds' level whose rates are below `lim` (sim_rates_first_change()),
 * and the set grows only through the others. */
static int collect(sim_comp_t *c, const int *seeds, int nseeds, double lim)
{
    int n = 0, mark = ++c->mark, top = INT_MAX;
    for (int i = 0; i < nseeds; i++) {
        if (c->level[seeds[i]] < top)
            top = c->level[seeds[i]];
        if (c->job_mark[seeds[i]] != mark) {
            c->job_mark[seeds[i]] = mark;
            c->set[n++] = seeds[i];
        }
    }
    /* Whether a slot or a user is new is data-dependent and would be
     * mispredicted half the time, so both are counted without a branch:
     * the candidate is written, then kept by advancing the count. */
    int *fresh = c->touched; /* fill_level()'s slot list, unused until it runs */
    for (int i = 0; i < n; i++) {
        int q = c->set[i], nnew = 0;
        for (int k = c->off[q]; k < c->off[q + 1]; k++) {
            int e = c->slot[k];
            fresh[nnew] = e;
            nnew += c->sf[e].mark != mark;
            c->sf[e].mark = mark;
        }
        for (int x = 0; x < nnew; x++) {
            int e = fresh[x];
            double rem = c->slot_bw[e];
            c->sf[e].sum = 0;
            for (int u = c->su_off[e]; u < c->su_off[e] + c->sa[e]; u++) {
                int v = c->su[u];
                int kept = (c->level[v] < top) | ((c->level[v] == top) & (c->rate[v] < lim));
                double use = c->rate[v] * c->w[c->suk[u]];
                rem -= kept ? use : 0.0; /* x - 0.0 is x */
                c->set[n] = v;
                n += !kept & (c->job_mark[v] != mark);
                c->job_mark[v] = kept ? c->job_mark[v] : mark;
            }
            c->sf[e].rem = rem > 0 ? rem : 0;
        }
    }
    if (n > 16) { /* in position order: reading the marks beats sorting */
        n = 0;
        for (int v = 0; v < c->n; v++) {
            c->set[n] = v;
            n += c->job_mark[v] == mark;
        }
        return n;
    }
    for (int i = 1; i < n; i++) { /* insertion sort: the set is small */
        int v = c->set[i], k = i;
        while (k > 0 && c->set[k - 1] > v) {
            c->set[k] = c->set[k - 1];
            k--;
        }
        c->set[k] = v;
    }
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
 * transferring prefix of each of its slots. */
static void list_transferring(sim_comp_t *c, int q, int on)
{
    for (int k = c->off[q]; k < c->off[q + 1]; k++) {
        int e = c->slot[k];
        if (on)
            su_swap(c, c->supos[k], c->su_off[e] + c->sa[e]++);
        else
            su_swap(c, c->supos[k], c->su_off[e] + --c->sa[e]);
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
        for (int k = c->off[q]; k < c->off[q + 1]; k++) {
            int e = c->slot[k];
            c->touched[ntouched] = e;
            ntouched += c->sf[e].cnt++ == 0;
            c->sf[e].sum += c->w[k];
        }
    }
    for (int x = 0; x < ntouched; x++) {
        int e = c->touched[x];
        if (c->sf[e].cnt > 1)
            c->live[ns++] = e;
    }
    for (int x = 0; x < nact; x++) {
        int q = c->act[x];
        c->jcap[q] = c->rcap[q];
        for (int k = c->off[q]; k < c->off[q + 1]; k++)
            if (c->sf[c->slot[k]].cnt == 1 && c->sf[c->slot[k]].rem < c->jcap[q] * c->w[k])
                c->jcap[q] = c->sf[c->slot[k]].rem / c->w[k];
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
                c->sf[e].rem -= c->w[k] * r;
                if (c->sf[e].rem < 0)
                    c->sf[e].rem = 0;
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
    int n = collect(c, &q, 1, 0);
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

/* With cfg.check, after a filling of n jobs: every transferring job the
 * seeds reach has the strict priority max-min fair rate
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
    int all = collect(c, seeds, nseeds, 0);
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
    int n = collect(c, seeds, nseeds, lim);
    for (int i = 0; i < n; i++) /* up to now at the old rates */
        sim_job_bring(s, &s->jobs[c->jobs[c->set[i]]], now);
    fill_all(s, c, n);
    /* every slot of the set was marked in collect() and what is left of it
     * now is its capacity less what every transferring user takes */
    for (int i = 0; i < n; i++) {
        int q = c->set[i];
        for (int k = c->off[q]; k < c->off[q + 1]; k++)
            c->slot_used[c->slot[k]] = c->slot_bw[c->slot[k]] - c->sf[c->slot[k]].rem;
    }
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

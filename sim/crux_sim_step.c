/* Simulating one component from event to event, and skipping its steady
 * periods.
 *
 * Events.  Each job's state (phase and what remains of it) is brought up
 * to date lazily, when it changes or its rate does; the component keeps
 * its jobs in a heap by the time of their next state change (compute end,
 * hold end, fixed latency end, transfer end at the current rate).  An
 * event touches one job, plus, when the set of transferring jobs changed,
 * the transferring jobs of its level and below (crux_sim_rates.c).
 *
 * Fast-forward.  At every iteration end of an anchor job (the one with the
 * median iteration time alone, or the nearest of the highest level) the
 * state of every job of the component is recorded.  When it equals one of
 * the last SIM_SNAPS recorded (phases and remaining amounts within 1e-9),
 * the component is periodic: the same interval repeats until something
 * outside changes it, so whole periods are credited at once (busy time,
 * bytes, iterations) and the clock jumps.
 * Jobs whose periods drift against each other never recur exactly; after
 * SIM_SNAPS anchor iterations, or a budget of events that grows with the
 * component, the window since the first anchor iteration (the warm-up) is
 * taken as the period: each job is credited at its mean iteration time
 * over the iterations it completed in the window (at its busy share of the
 * window when it completed fewer than two).  A component frozen on an exact
 * period thaws two periods before a job's last iteration and steps through
 * the end; one frozen on an averaged period runs straight to the first
 * job's last iteration, which ends there (stepping it would cost as many
 * events as the window the average came from).  A global event (arrival,
 * departure) that touches a frozen component brings it up to date. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_advance.h"

#define EPS       SIM_EPS
#define SNAP_VALS 9 /* values per job in a snapshot */
#define WARMUP    1 /* anchor iterations before the window opens */

/* Events a component may take to recur before its window is averaged:
 * about three iterations per job (four events each), at least a few
 * hundred events.  Longer windows were measured no more accurate: the
 * error of an average is the drift inside it, not its length. */
static uint64_t event_budget(const sim_comp_t *c)
{
    return 400 + 12 * (uint64_t)c->n;
}

int sim_comp_snapshot_vals(void)
{
    return SNAP_VALS;
}

/* Time from j->t until the job's next state change (0 when one is due). */
static double job_dt(const sim_job_t *j)
{
    if (j->state != JOB_RUNNING)
        return INFINITY;
    switch (j->phase) {
    case PH_COMPUTE: return j->compute_left;
    case PH_HOLD: return j->hold_left;
    default: {
        double dt = j->compute_left > 0 ? j->compute_left : INFINITY;
        if (j->fixed_left > 0) {
            if (j->fixed_left < dt)
                dt = j->fixed_left;
        } else if (j->comm_left > 0) {
            if (j->x > 0 && j->comm_left / j->x < dt)
                dt = j->comm_left / j->x;
        } else if (j->compute_left <= 0) {
            dt = 0;
        }
        return dt;
    }
    }
}

/* ---- the component's heap of its jobs' next events (ties by position,
 * so runs are reproducible) */

static int earlier(const sim_t *s, const sim_comp_t *c, int a, int b)
{
    double ta = s->jobs[c->jobs[a]].next_t, tb = s->jobs[c->jobs[b]].next_t;
    return ta < tb || (ta == tb && a < b);
}

static void heap_put(const sim_t *s, sim_comp_t *c, int i, int q)
{
    c->heap[i] = q;
    s->jobs[c->jobs[q]].hpos = i;
}

static void sift_down(sim_t *s, sim_comp_t *c, int i, int q)
{
    for (;;) {
        int k = 2 * i + 1;
        if (k >= c->n)
            break;
        if (k + 1 < c->n && earlier(s, c, c->heap[k + 1], c->heap[k]))
            k++;
        if (!earlier(s, c, c->heap[k], q))
            break;
        heap_put(s, c, i, c->heap[k]);
        i = k;
    }
    heap_put(s, c, i, q);
}

/* After job q's next_t changed. */
static void heap_fix(sim_t *s, sim_comp_t *c, int q)
{
    int i = s->jobs[c->jobs[q]].hpos;
    while (i > 0 && earlier(s, c, q, c->heap[(i - 1) / 2])) {
        heap_put(s, c, i, c->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    sift_down(s, c, i, q);
}

static void set_next(sim_t *s, sim_comp_t *c, int q)
{
    sim_job_t *j = &s->jobs[c->jobs[q]];
    j->next_t = j->t + job_dt(j);
    heap_fix(s, c, q);
}

void sim_comp_heap_init(sim_t *s, sim_comp_t *c)
{
    for (int q = 0; q < c->n; q++) {
        sim_job_t *j = &s->jobs[c->jobs[q]];
        j->next_t = j->t + job_dt(j);
        heap_put(s, c, q, q);
    }
    for (int i = c->n / 2 - 1; i >= 0; i--)
        sift_down(s, c, i, c->heap[i]);
}

void sim_comp_schedule(sim_t *s, int ci)
{
    sim_comp_t *c = &s->comps[ci];
    c->gen++;
    double t = c->n > 0 ? s->jobs[c->jobs[c->heap[0]]].next_t : INFINITY;
    if (isfinite(t) && sim_heap_push(&s->heap, t, EV_COMP, ci, c->gen) != 0)
        s->failed = 1;
}

/* ---- one job */

static void start_comm(sim_job_t *j)
{
    j->phase = PH_COMM;
    j->compute_left = j->spec->overlap * j->spec->compute_s;
    j->fixed_left = j->fixed_s;
    j->comm_left = j->net ? 1 : 0;
    j->begun += j->net;
}

static void snapshot(sim_t *s, int ci);

/* Job q of the component has done its last iteration: it leaves at its
 * clock, with the departures the run handles after this event. */
static void leave(sim_t *s, const sim_comp_t *c, int q)
{
    sim_job_t *j = &s->jobs[c->jobs[q]];
    j->state = JOB_DONE;
    j->end = j->t;
    s->departed[s->ndeparted++] = c->jobs[q];
}

/* An iteration of job q is over: count it; the job leaves after its last. */
static void iteration_end(sim_t *s, int ci, int q)
{
    sim_comp_t *c = &s->comps[ci];
    sim_job_t *j = &s->jobs[c->jobs[q]];
    j->iters += 1;
    if (j->spec->iterations > 0 && j->iters >= (double)j->spec->iterations - 1e-6) {
        leave(s, c, q);
        return;
    }
    j->phase = PH_COMPUTE;
    j->compute_left = (1 - j->spec->overlap) * j->spec->compute_s;
    if (!s->cfg.fast_forward || c->catching_up || s->ndeparted > 0)
        return;
    if (c->window) {
        if (j->win_count++ == 0)
            j->win_first = j->t;
        j->win_last = j->t;
    }
    if (c->anchor < 0) { /* the first job to finish an iteration */
        c->anchor = q;
        c->since_reset = c->snaps = c->window = 0;
    }
    if (q == c->anchor)
        snapshot(s, ci);
}

/* Job q's due state changes; returns whether it started or stopped
 * transferring (its rate is then stale, and its neighbours' too). */
static int transitions(sim_t *s, int ci, int q)
{
    sim_job_t *j = &s->jobs[s->comps[ci].jobs[q]];
    while (j->state == JOB_RUNNING) {
        if (j->phase == PH_COMPUTE && j->compute_left <= EPS) {
            j->compute_left = 0;
            if (j->hold > 0) {
                j->phase = PH_HOLD;
                j->hold_left = j->hold;
                j->hold = 0;
            } else {
                start_comm(j);
            }
        } else if (j->phase == PH_HOLD && j->hold_left <= EPS) {
            j->hold_left = 0;
            start_comm(j);
        } else if (j->phase == PH_COMM) {
            if (j->fixed_left <= EPS)
                j->fixed_left = 0;
            if (j->comm_left <= EPS)
                j->comm_left = 0;
            if (j->compute_left <= EPS)
                j->compute_left = 0;
            if (j->fixed_left > 0 || j->comm_left > 0 || j->compute_left > 0)
                break;
            iteration_end(s, ci, q);
        } else {
            break;
        }
    }
    return sim_transferring(j) != j->xfer;
}

/* The component's next event: one job's state change. */
static void process(sim_t *s, int ci)
{
    sim_comp_t *c = &s->comps[ci];
    int q = c->heap[0];
    sim_job_t *j = &s->jobs[c->jobs[q]];
    double t = j->next_t;
    c->now = t;
    /* by its own remaining amounts, not t - j->t: the change that is due
     * then lands on exactly zero whatever the magnitude of t */
    sim_advance(s, j, job_dt(j), t);
    s->sum.events++;
    c->events_since_snap++;
    c->events_since_reset++;
    if (transitions(s, ci, q)) {
        c = &s->comps[ci];
        int n = sim_rates(s, c, &q, 1, t);
        for (int i = 0; i < n; i++)
            set_next(s, c, c->set[i]);
    } else {
        set_next(s, &s->comps[ci], q);
    }
    c = &s->comps[ci];
    /* an anchor that stopped finishing iterations (starved) hands over */
    if (c->events_since_snap > 1000 + 100 * (uint64_t)c->n) {
        c->anchor = -1;
        c->events_since_snap = 0;
    }
}

void sim_comp_step(sim_t *s, int ci)
{
    process(s, ci);
    if (!s->comps[ci].frozen)
        sim_comp_schedule(s, ci);
}

/* ---- fast-forward */

static double *snap_at(const sim_comp_t *c, int k)
{
    return c->snap + (size_t)k * (size_t)(1 + c->n * SNAP_VALS);
}

static void bring_all(sim_t *s, sim_comp_t *c, double t)
{
    for (int q = 0; q < c->n; q++)
        sim_job_bring(s, &s->jobs[c->jobs[q]], t);
}

static void record(const sim_t *s, const sim_comp_t *c, double *v)
{
    v[0] = c->now;
    for (int q = 0; q < c->n; q++) {
        const sim_job_t *j = &s->jobs[c->jobs[q]];
        double *p = v + 1 + q * SNAP_VALS;
        p[0] = j->phase;
        p[1] = j->compute_left;
        p[2] = j->hold_left;
        p[3] = j->fixed_left;
        p[4] = j->comm_left;
        p[5] = j->hold;
        p[6] = j->busy;
        p[7] = j->units;
        p[8] = j->begun;
    }
}

static int same_state(const sim_comp_t *c, const double *a, const double *b, double tol)
{
    for (int q = 0; q < c->n; q++) {
        const double *x = a + 1 + q * SNAP_VALS, *y = b + 1 + q * SNAP_VALS;
        if (x[0] != y[0] || fabs(x[1] - y[1]) > tol || fabs(x[2] - y[2]) > tol ||
            fabs(x[3] - y[3]) > tol || fabs(x[4] - y[4]) > 1e-9 || fabs(x[5] - y[5]) > tol)
            return 0;
    }
    return 1;
}

/* Per period, what each job does: from two snapshots one exact period
 * apart, or averaged over the window (base = its start). */
static void deltas(sim_t *s, sim_comp_t *c, const double *base, const double *cur, int exact)
{
    double period = cur[0] - base[0];
    for (int q = 0; q < c->n; q++) {
        const sim_job_t *j = &s->jobs[c->jobs[q]];
        const double *x = cur + 1 + q * SNAP_VALS, *y = base + 1 + q * SNAP_VALS;
        double *d = c->delta + 3 * q;
        if (exact) {
            d[0] = x[6] - y[6];
            d[1] = x[7] - y[7];
            d[2] = x[8] - y[8];
        } else if (j->win_count >= 2 && j->win_last > j->win_first) {
            double iters = (j->win_count - 1) / (j->win_last - j->win_first) * period;
            d[0] = iters * j->spec->compute_s;
            d[1] = d[2] = iters * j->net;
        } else {
            /* averaged periods credit what was delivered as sent, so
             * in-flight bytes at the window's ends do not pile up */
            d[0] = x[6] - y[6];
            d[1] = d[2] = x[7] - y[7];
        }
    }
}

/* Freeze with `base` (an earlier snapshot) one period back from `cur`. */
static void freeze(sim_t *s, int ci, const double *base, const double *cur, int exact)
{
    sim_comp_t *c = &s->comps[ci];
    double period = cur[0] - base[0];
    if (!(period > 0))
        return;
    deltas(s, c, base, cur, exact);
    double m_max = 1e18;
    int last = -1;
    for (int q = 0; q < c->n; q++) {
        const sim_job_t *j = &s->jobs[c->jobs[q]];
        double di = c->delta[3 * q] / j->spec->compute_s;
        if (j->spec->iterations > 0 && di > 1e-12) {
            double left = (double)j->spec->iterations - j->iters;
            /* exact: two periods and two iterations are left to step
             * through; averaged: up to the last iteration's end */
            double m = exact ? floor((left - 2 * di - 2) / di) : left / di;
            if (m < m_max) {
                m_max = m;
                last = q;
            }
        }
    }
    if (m_max < 1)
        return;
    c->frozen = 1;
    c->exact = exact;
    if (exact)
        s->sum.freezes_exact++;
    else
        s->sum.freezes_averaged++;
    c->last = last;
    c->freeze_t = c->now;
    c->period = period;
    c->thaw_m = m_max;
    c->gen++;
    if (m_max < 1e17 && sim_heap_push(&s->heap, c->now + m_max * period, EV_THAW, ci, c->gen))
        s->failed = 1;
}

static void open_window(sim_t *s, sim_comp_t *c, const double *cur, int anchor)
{
    memcpy(snap_at(c, SIM_SNAPS + 1), cur, (size_t)(1 + c->n * SNAP_VALS) * sizeof(double));
    for (int q = 0; q < c->n; q++)
        s->jobs[c->jobs[q]].win_count = 0;
    sim_job_t *a = &s->jobs[c->jobs[anchor]];
    a->win_count = 1; /* its iteration that ends now opens it */
    a->win_first = a->win_last = a->t;
    c->window = 1;
}

/* Whether a one-time delay (CASSINI) is still to come or under way: no
 * period may contain it, or every skipped period would repeat it. */
static int holding(const sim_t *s, const sim_comp_t *c)
{
    for (int q = 0; q < c->n; q++) {
        const sim_job_t *j = &s->jobs[c->jobs[q]];
        if (j->hold > 0 || j->phase == PH_HOLD)
            return 1;
    }
    return 0;
}

static void snapshot(sim_t *s, int ci)
{
    sim_comp_t *c = &s->comps[ci];
    c->events_since_snap = 0;
    if (holding(s, c)) {
        c->snaps = c->since_reset = c->window = 0;
        return;
    }
    bring_all(s, c, c->now);
    double *cur = snap_at(c, SIM_SNAPS); /* the scratch slot */
    record(s, c, cur);
    const sim_job_t *a = &s->jobs[c->jobs[c->anchor]];
    double tol = 1e-9 * (1 + a->alone_period);
    int stored = c->snaps < SIM_SNAPS ? c->snaps : SIM_SNAPS;
    for (int k = 1; k <= stored; k++) { /* most recent first */
        const double *old = snap_at(c, (c->snaps - k) % SIM_SNAPS);
        if (same_state(c, cur, old, tol)) {
            freeze(s, ci, old, cur, 1);
            return;
        }
    }
    memcpy(snap_at(c, c->snaps % SIM_SNAPS), cur, (size_t)(1 + c->n * SNAP_VALS) * sizeof(double));
    c->snaps++;
    if (++c->since_reset == WARMUP)
        open_window(s, c, cur, c->anchor);
    else if (c->since_reset > WARMUP + 1 &&
             (c->since_reset >= SIM_SNAPS || c->events_since_reset >= event_budget(c)))
        freeze(s, ci, snap_at(c, SIM_SNAPS + 1), cur, 0);
}

/* Credit m whole periods of a frozen component and move its clock on. */
static void jump(sim_t *s, sim_comp_t *c, double m)
{
    if (!(m > 0))
        return;
    double shift = m * c->period, busy_gpu_s = 0;
    for (int q = 0; q < c->n; q++) {
        sim_job_t *j = &s->jobs[c->jobs[q]];
        const double *d = c->delta + 3 * q;
        double iters = m * d[0] / j->spec->compute_s;
        j->busy += m * d[0];
        j->units += m * d[1];
        j->begun += m * d[2];
        j->iters += iters;
        j->t += shift;
        j->next_t += shift;
        s->sum.iterations_skipped += iters;
        busy_gpu_s += m * d[0] * j->spec->gpus;
        if (s->link_check)
            for (int k = 0; k < j->dec.nlinks; k++)
                s->link_check[j->dec.links[k]] += m * d[1] * j->dec.mbytes[k];
    }
    if (sim_bins_add(s, c->freeze_t, c->freeze_t + shift, busy_gpu_s, 0) != 0)
        s->failed = 1;
    c->freeze_t += shift;
    c->now = c->freeze_t;
    c->thaw_m -= m;
}

static void unfreeze(sim_comp_t *c)
{
    c->frozen = 0;
    c->snaps = c->since_reset = c->window = 0;
    c->events_since_snap = c->events_since_reset = 0;
}

/* A frozen component reached its thawing time.  Exact: it steps on
 * through its jobs' last periods.  Averaged: the run has reached the end
 * of the first job's last iteration, which is over with the transfer under
 * way delivered in full; the job leaves, and the replan that follows
 * rebuilds the component from its jobs' states. */
void sim_comp_thaw(sim_t *s, int ci)
{
    sim_comp_t *c = &s->comps[ci];
    jump(s, c, c->thaw_m);
    unfreeze(c);
    if (c->exact || c->last < 0) {
        sim_comp_schedule(s, ci);
        return;
    }
    bring_all(s, c, c->now);
    sim_job_t *j = &s->jobs[c->jobs[c->last]];
    if (j->phase == PH_COMM && j->comm_left > 0)
        sim_deliver(s, j, j->comm_left);
    j->iters = (double)j->spec->iterations;
    leave(s, c, c->last);
}

void sim_comp_materialize(sim_t *s, int ci, double t)
{
    sim_comp_t *c = &s->comps[ci];
    if (c->frozen) {
        double m = floor((t - c->freeze_t) / c->period);
        jump(s, c, m < c->thaw_m ? m : c->thaw_m);
        unfreeze(c);
        c->catching_up = 1; /* less than a period: step through it */
        while (c->n > 0 && s->jobs[c->jobs[c->heap[0]]].next_t < t) {
            process(s, ci);
            c = &s->comps[ci];
        }
        c->catching_up = 0;
    }
    bring_all(s, c, t);
    if (t > c->now)
        c->now = t;
    unfreeze(c);
    sim_comp_schedule(s, ci);
}

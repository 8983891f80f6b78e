/* The simulator against an exact reference, and rounding noise that must
 * not stall a transfer.
 *
 * The reference: jobs of two hosts each, one in ToR 0 and one in ToR 1, so
 * every job crosses the same 1 GB/s uplink and nothing else limits them
 * (sched_test_uplink_cluster).  Then the network is one link: the highest
 * level with transferring jobs shares it equally, the levels below wait.
 * A small event-driven simulation of that in exact rational arithmetic
 * gives each job's busy time, which the simulator must match within 0.1%,
 * stepping and fast-forwarding.
 *
 * The stall: a transfer whose remainder is rounding noise (rates such as
 * 1/3 are not exact in binary) at the instant a higher-priority job starts
 * must finish then, not wait through the higher job's transfer.  With
 * cfg.check the simulator fails a run in which a transfer waits with a
 * remainder at or below its EPS; random cases whose events coincide
 * (thirds, equal periods) must all run clean.
 *
 * The end of an averaged window: two jobs on the cable whose periods
 * drift never recur exactly, so fast-forward averages a window and runs
 * it to the first job's last iteration, where that job must leave, with
 * every iteration counted, close to when stepping has it leave.
 *
 * The anchor of the fast-forward: jobs that starve under a higher one
 * never finish an iteration, so a median job below the highest level hands
 * the anchor to the nearest job of that level, and a component whose high
 * job recurs freezes at once.
 *
 * Where a filling can first change when one job starts or stops: below
 * it, the jobs of its level keep their rates and are not filled again
 * (sim_rates_first_change, on hand-made rates).
 *
 * Slots: links with the same capacity, users and bytes are one slot of
 * the filling (the reference cases above run on one: a job's two hosts
 * cross four such links, up and down, both directions); links that differ
 * in any of the three stay apart. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim.h"
#include "sim/crux_sim_internal.h"
#include "tests/unit/check_main.h"
#include "tests/unit/sched_test_util.h"

/* ---- exact rationals (denominators stay small: checked) */

typedef struct {
    __int128 n, d; /* d > 0, reduced */
} q_t;

static __int128 gcd128(__int128 a, __int128 b)
{
    if (a < 0)
        a = -a;
    while (b != 0) {
        __int128 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static q_t qmake(__int128 n, __int128 d)
{
    if (d < 0) {
        n = -n;
        d = -d;
    }
    __int128 g = gcd128(n, d);
    if (g > 1) {
        n /= g;
        d /= g;
    }
    ck_assert_msg(d < ((__int128)1 << 80), "reference: denominators grew too large");
    return (q_t){ n, d };
}
static q_t qadd(q_t a, q_t b)
{
    return qmake(a.n * b.d + b.n * a.d, a.d * b.d);
}
static q_t qsub(q_t a, q_t b)
{
    return qmake(a.n * b.d - b.n * a.d, a.d * b.d);
}
static q_t qmul(q_t a, q_t b)
{
    return qmake(a.n * b.n, a.d * b.d);
}
static q_t qdiv(q_t a, q_t b)
{
    return qmake(a.n * b.d, a.d * b.n);
}
static int qlt(q_t a, q_t b)
{
    return a.n * b.d < b.n * a.d;
}
static int qzero(q_t a)
{
    return a.n == 0;
}
static double qd(q_t a)
{
    return (double)a.n / (double)a.d;
}
#define Q(n, d) qmake((n), (d))

/* ---- the reference: one shared link of capacity 1 (link-seconds/s) */

typedef struct {
    q_t c, o, t; /* compute per iteration, overlap, link-seconds per iteration */
    int level;   /* higher wins */
} ref_job_t;

enum { R_COMPUTE, R_COMM };

/* Each job's busy seconds over [0, T). */
static void reference(const ref_job_t *jobs, int n, q_t T, double *busy)
{
    int phase[4];
    q_t comp[4], comm[4], b[4], now = Q(0, 1);
    for (int i = 0; i < n; i++) {
        phase[i] = R_COMPUTE;
        comp[i] = qmul(qsub(Q(1, 1), jobs[i].o), jobs[i].c);
        comm[i] = Q(0, 1);
        b[i] = Q(0, 1);
    }
    for (int guard = 0; guard < 100000; guard++) {
        /* due transitions, until none */
        for (int changed = 1; changed;) {
            changed = 0;
            for (int i = 0; i < n; i++) {
                if (phase[i] == R_COMPUTE && qzero(comp[i])) {
                    phase[i] = R_COMM;
                    comp[i] = qmul(jobs[i].o, jobs[i].c);
                    comm[i] = jobs[i].t;
                    changed = 1;
                } else if (phase[i] == R_COMM && qzero(comp[i]) && qzero(comm[i])) {
                    phase[i] = R_COMPUTE;
                    comp[i] = qmul(qsub(Q(1, 1), jobs[i].o), jobs[i].c);
                    changed = 1;
                }
            }
        }
        /* rates: the top level among transferring jobs shares the link */
        int top = -1, k = 0;
        for (int i = 0; i < n; i++)
            if (phase[i] == R_COMM && !qzero(comm[i]) && jobs[i].level > top)
                top = jobs[i].level;
        for (int i = 0; i < n; i++)
            k += phase[i] == R_COMM && !qzero(comm[i]) && jobs[i].level == top;
        q_t rate[4], dt = qsub(T, now);
        for (int i = 0; i < n; i++) {
            int on = phase[i] == R_COMM && !qzero(comm[i]) && jobs[i].level == top;
            rate[i] = on ? Q(1, k) : Q(0, 1);
            if (!qzero(comp[i]) && qlt(comp[i], dt))
                dt = comp[i];
            if (on && qlt(qdiv(comm[i], rate[i]), dt))
                dt = qdiv(comm[i], rate[i]);
        }
        for (int i = 0; i < n; i++) {
            if (!qzero(comp[i])) {
                comp[i] = qsub(comp[i], dt);
                b[i] = qadd(b[i], dt);
            }
            comm[i] = qsub(comm[i], qmul(rate[i], dt));
        }
        now = qadd(now, dt);
        if (!qlt(now, T))
            break;
    }
    for (int i = 0; i < n; i++)
        busy[i] = qd(b[i]);
}

/* ---- the same jobs in the simulator */

static void add_job(crux_sim_workload_t *w, const crux_sched_cluster_t *c, int i,
                    const ref_job_t *r)
{
    char a[16], b[16], id[16];
    snprintf(a, sizeof(a), "h%d", i);
    snprintf(b, sizeof(b), "h%d", 4 + i);
    snprintf(id, sizeof(id), "j%d", i);
    crux_sched_place_t pl[2] = { { crux_sched_cluster_find_host(c, a), 0xff },
                                 { crux_sched_cluster_find_host(c, b), 0xff } };
    /* a ring of 16 GPUs sends 2 (G - 1) / G of its bytes per hop */
    crux_sim_job_t j = { .id = id,
                         .gpus = 16,
                         .compute_s = qd(r->c),
                         .overlap = qd(r->o),
                         .bytes = qd(r->t) * 1e9 * 16 / 30.0,
                         .iterations = 1000000,
                         .level = r->level,
                         .placement = pl,
                         .nplacement = 2 };
    char err[256];
    ck_assert_msg(crux_sim_workload_add(w, c, &j, err, sizeof(err)) == CRUX_OK, "%s", err);
}

/* The jobs simulated on the uplink cluster up to T: each job's busy time
 * must be within 0.1% of want; the run's summary. */
static crux_sim_summary_t run_against(const ref_job_t *jobs, int n, int T, int ff,
                                      const double *want)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    crux_sim_workload_t *w = crux_sim_workload_new();
    for (int i = 0; i < n; i++)
        add_job(w, c, i, &jobs[i]);
    crux_sim_config_t cfg;
    crux_sim_config_defaults(&cfg);
    cfg.policy = CRUX_SIM_FIXED;
    cfg.alpha_s = 0;
    cfg.until_s = T;
    cfg.fast_forward = ff;
    cfg.check = 1;
    crux_sim_result_t *r = sim_test_run(c, w, &cfg);
    for (int i = 0; i < n; i++) {
        crux_sim_job_result_t jr;
        ck_assert_int_eq(crux_sim_result_job(r, i, &jr), CRUX_OK);
        ck_assert_msg(fabs(jr.busy_s - want[i]) <= 1e-3 * want[i],
                      "job %d (fast-forward %d): busy %.9g s, exactly %.9g s", i, ff, jr.busy_s,
                      want[i]);
    }
    crux_sim_summary_t m;
    crux_sim_summary(r, &m);
    crux_sim_result_free(r);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
    return m;
}

static void against_reference(const ref_job_t *jobs, int n, int T)
{
    double want[4];
    reference(jobs, n, Q(T, 1), want);
    for (int ff = 0; ff <= 1; ff++)
        run_against(jobs, n, T, ff, want);
}

START_TEST(two_jobs_exact)
{
    /* strict priority, the higher job's transfer starting as the lower
     * one's ends (the stall's shape); then one level shared, overlap */
    const ref_job_t prio[] = { { Q(1, 1), Q(0, 1), Q(1, 1), 1 }, { Q(1, 1), Q(0, 1), Q(3, 1), 0 } };
    against_reference(prio, 2, 200);
    const ref_job_t fair[] = { { Q(1, 1), Q(0, 1), Q(2, 1), 0 }, { Q(3, 2), Q(1, 2), Q(1, 1), 0 } };
    against_reference(fair, 2, 200);
    const ref_job_t thirds[] = { { Q(2, 3), Q(1, 3), Q(1, 3), 1 },
                                 { Q(1, 3), Q(0, 1), Q(5, 3), 0 } };
    against_reference(thirds, 2, 200);
}
END_TEST

START_TEST(three_jobs_exact)
{
    /* one high job over two sharing a level; then three sharing one (rates
     * of 1/3, not exact in binary) */
    const ref_job_t mixed[] = { { Q(1, 1), Q(0, 1), Q(1, 2), 1 },
                                { Q(2, 3), Q(1, 4), Q(1, 1), 0 },
                                { Q(1, 1), Q(0, 1), Q(4, 3), 0 } };
    against_reference(mixed, 3, 200);
    const ref_job_t shared[] = { { Q(1, 1), Q(0, 1), Q(5, 3), 0 },
                                 { Q(1, 2), Q(0, 1), Q(1, 1), 0 },
                                 { Q(2, 1), Q(1, 2), Q(1, 3), 0 } };
    against_reference(shared, 3, 200);
    const ref_job_t levels[] = { { Q(1, 1), Q(0, 1), Q(1, 3), 2 },
                                 { Q(1, 1), Q(0, 1), Q(2, 3), 1 },
                                 { Q(1, 1), Q(0, 1), Q(1, 1), 0 } };
    against_reference(levels, 3, 200);
}
END_TEST

START_TEST(starved_job_is_no_anchor)
{
    /* A high job transfers without a break (its compute overlaps its
     * transfer), so the two low ones starve after their first compute,
     * the median of them all by iteration time among them.  The anchor of
     * the fast-forward is then the nearest job of the highest level: the
     * high job's iterations recur at once, where an anchor that never finishes an
     * iteration left the component stepped through 1,300 events first. */
    const ref_job_t jobs[] = { { Q(1, 1), Q(1, 1), Q(1, 1), 1 },
                               { Q(2, 1), Q(0, 1), Q(1, 1), 0 },
                               { Q(3, 1), Q(0, 1), Q(1, 1), 0 } };
    double want[3];
    reference(jobs, 3, Q(20000, 1), want);
    crux_sim_summary_t m = run_against(jobs, 3, 20000, 1, want);
    ck_assert_uint_eq(m.freezes_exact, 1);
    ck_assert_msg(m.events < 100, "%llu events", (unsigned long long)m.events);
}
END_TEST

/* Two rings of two hosts, one 72 Gbps cable between the ToRs, hosts at
 * 800 Gbps: a 1 s compute and a 1 s (high) or 3 s (low) transfer, the
 * rates 9e9 / 10 GPUs' ring not exact in binary. */
static crux_sched_cluster_t *cable_cluster(void)
{
    crux_sched_cluster_t *c = crux_sched_cluster_new();
    ck_assert_ptr_nonnull(c);
    int t0 = -1, t1 = -1;
    ck_assert_int_eq(crux_sched_cluster_add_switch(c, "t0", 0, &t0), CRUX_OK);
    ck_assert_int_eq(crux_sched_cluster_add_switch(c, "t1", 0, &t1), CRUX_OK);
    static const char *const names[] = { "a0", "b0", "a1", "b1" };
    for (int h = 0; h < 4; h++) {
        int id = -1;
        ck_assert_int_eq(crux_sched_cluster_add_host(c, names[h], 8, 1, &id), CRUX_OK);
        ck_assert_int_eq(crux_sched_cluster_link_nic(c, id, 0, h < 2 ? t0 : t1, 800e9 / 8),
                         CRUX_OK);
    }
    ck_assert_int_eq(crux_sched_cluster_link_switches(c, t0, t1, 72e9 / 8, 1), CRUX_OK);
    char err[256];
    ck_assert_msg(crux_sched_cluster_seal(c, err, sizeof(err)) == CRUX_OK, "%s", err);
    return c;
}

static void cable_job(crux_sim_workload_t *w, const crux_sched_cluster_t *c, const char *id,
                      const char *x, const char *y, double compute, double bytes, int level)
{
    crux_sched_place_t pl[2] = { { crux_sched_cluster_find_host(c, x), 0x1f },
                                 { crux_sched_cluster_find_host(c, y), 0x1f } };
    crux_sim_job_t j = { .id = id,
                         .gpus = 10,
                         .compute_s = compute,
                         .bytes = bytes,
                         .duration_s = 1200,
                         .level = level,
                         .placement = pl,
                         .nplacement = 2 };
    char err[256];
    ck_assert_msg(crux_sim_workload_add(w, c, &j, err, sizeof(err)) == CRUX_OK, "%s", err);
}

START_TEST(rounding_noise_does_not_stall)
{
    /* lo sends 1.5e10 bytes (3 s on the cable): it must do as well as with
     * a hair less, 200 busy seconds of 1200 (1/3 with hi) */
    crux_sched_cluster_t *c = cable_cluster();
    const double bytes[] = { 1.5e10, 1.4999e10 };
    for (int k = 0; k < 2; k++)
        for (int p = 0; p < 2; p++) {
            crux_sim_workload_t *w = crux_sim_workload_new();
            cable_job(w, c, "hi", "a0", "a1", 1, 5e9, 1);
            cable_job(w, c, "lo", "b0", "b1", 1, bytes[k], 0);
            crux_sim_config_t cfg;
            crux_sim_config_defaults(&cfg);
            cfg.policy = p ? CRUX_SIM_CRUX_FULL : CRUX_SIM_FIXED;
            cfg.alpha_s = 0;
            cfg.check = 1;
            crux_sim_result_t *r = sim_test_run(c, w, &cfg);
            crux_sim_job_result_t lo;
            ck_assert_int_eq(crux_sim_result_job(r, 1, &lo), CRUX_OK);
            ck_assert_msg(fabs(lo.busy_s - 200) < 0.01, "bytes %g: lo busy %.6f s", bytes[k],
                          lo.busy_s);
            crux_sim_summary_t m;
            crux_sim_summary(r, &m);
            ck_assert_double_eq_tol(m.utilization, 1.0 / 3, 1e-5);
            crux_sim_result_free(r);
            crux_sim_workload_free(w);
        }
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(no_transfer_waits_on_noise)
{
    /* random cases on the cable: computes and transfers in thirds of a
     * second (events coincide, rates inexact), random levels, overlaps
     * and arrivals; cfg.check fails any run in which a transfer waits
     * with a remainder at or below EPS */
    crux_sched_cluster_t *c = cable_cluster();
    uint64_t x = 12345;
    for (int k = 0; k < 60; k++) {
        crux_sim_workload_t *w = crux_sim_workload_new();
        static const char *const ids[] = { "p", "q" };
        for (int i = 0; i < 2; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            double compute = (double)(1 + (x >> 33) % 6) / 3;
            double t = (double)(1 + (x >> 41) % 9) / 3; /* seconds on the cable */
            crux_sched_place_t pl[2] = { { crux_sched_cluster_find_host(c, i ? "b0" : "a0"), 0x1f },
                                         { crux_sched_cluster_find_host(c, i ? "b1" : "a1"),
                                           0x1f } };
            crux_sim_job_t j = { .id = ids[i],
                                 .gpus = 10,
                                 .arrival_s = (double)((x >> 50) % 4) / 3,
                                 .compute_s = compute,
                                 .overlap = (double)((x >> 20) % 3) / 3,
                                 .bytes = t * 9e9 * 10 / 18.0,
                                 .duration_s = 60,
                                 .level = (int)((x >> 55) % 3),
                                 .placement = pl,
                                 .nplacement = 2 };
            char err[256];
            ck_assert_msg(crux_sim_workload_add(w, c, &j, err, sizeof(err)) == CRUX_OK, "%s", err);
        }
        for (int ff = 0; ff <= 1; ff++) {
            crux_sim_config_t cfg;
            crux_sim_config_defaults(&cfg);
            cfg.policy = CRUX_SIM_FIXED;
            cfg.alpha_s = 0;
            cfg.fast_forward = ff;
            cfg.check = 1;
            crux_sim_result_free(sim_test_run(c, w, &cfg));
        }
        crux_sim_workload_free(w);
    }
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(averaged_window_ends_the_first_job)
{
    crux_sched_cluster_t *c = cable_cluster();
    crux_sim_workload_t *w = crux_sim_workload_new();
    /* compute times in the ratio sqrt(2): the pair never recurs */
    const char *ids[2] = { "short", "long" };
    const double compute[2] = { 0.1, 0.1 * M_SQRT2 };
    const long iters[2] = { 4000, 6000 };
    const char *hosts[2][2] = { { "a0", "a1" }, { "b0", "b1" } };
    for (int i = 0; i < 2; i++) {
        crux_sched_place_t pl[2] = { { crux_sched_cluster_find_host(c, hosts[i][0]), 0x1f },
                                     { crux_sched_cluster_find_host(c, hosts[i][1]), 0x1f } };
        crux_sim_job_t j = { .id = ids[i],
                             .gpus = 10,
                             .compute_s = compute[i],
                             .bytes = 5e8,
                             .iterations = iters[i],
                             .placement = pl,
                             .nplacement = 2 };
        char err[256];
        ck_assert_msg(crux_sim_workload_add(w, c, &j, err, sizeof(err)) == CRUX_OK, "%s", err);
    }
    crux_sim_result_t *r[2];
    for (int ff = 0; ff < 2; ff++) {
        crux_sim_config_t cfg;
        crux_sim_config_defaults(&cfg);
        cfg.policy = CRUX_SIM_NONE;
        cfg.fast_forward = ff;
        cfg.check = 1;
        r[ff] = sim_test_run(c, w, &cfg);
        crux_sim_summary_t m;
        crux_sim_summary(r[ff], &m);
        ck_assert_int_eq(m.jobs_done, 2);
        if (ff) { /* the pair skipped on its average; once the short job
                   * has left, the long one alone recurs exactly */
            ck_assert_msg(m.iterations_skipped > 1000, "%g skipped", m.iterations_skipped);
            ck_assert_uint_gt(m.freezes_averaged, 0);
            ck_assert_uint_eq(m.freezes_exact, 1);
        } else {
            ck_assert_uint_eq(m.freezes_averaged + m.freezes_exact, 0);
        }
    }
    for (int i = 0; i < 2; i++) {
        crux_sim_job_result_t st, fw;
        ck_assert_int_eq(crux_sim_result_job(r[0], i, &st), CRUX_OK);
        ck_assert_int_eq(crux_sim_result_job(r[1], i, &fw), CRUX_OK);
        ck_assert_msg(fabs(fw.end_s - st.end_s) < 0.01 * st.end_s,
                      "%s: ends at %.3f s, stepped %.3f s", ids[i], fw.end_s, st.end_s);
        ck_assert_double_eq(st.iterations, (double)iters[i]);
        if (i == 0) /* the averaged window's end: exactly its last iteration */
            ck_assert_double_eq(fw.iterations, (double)iters[i]);
    }
    crux_sim_result_free(r[0]);
    crux_sim_result_free(r[1]);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(identical_links_are_one_slot)
{
    /* links 1 and 7 are link 0 again; 2 differs from it in capacity, 3 in
     * a weight, 4 in a user, 5 in length; 6 is link 3 again */
    const double bw[] = { 10, 10, 20, 10, 10, 10, 10, 10 };
    const int off[] = { 0, 2, 4, 6, 8, 10, 11, 13, 15 };
    const int upos[] = { 0, 1, 0, 1, 0, 1, 0, 1, 0, 2, 0, 0, 1, 0, 1 };
    const double mb[] = { 4, 2, 4, 2, 4, 2, 4, 3, 4, 2, 4, 4, 3, 4, 2 };
    const int want_slot[] = { 0, 0, 1, 2, 3, 4, 2, 0 };
    const int want_first[] = { 0, 2, 3, 4, 5 };
    int slot_of[8], first[8];
    ck_assert_int_eq(sim_link_slots(off, upos, mb, bw, 8, slot_of, first), 5);
    for (int e = 0; e < 8; e++)
        ck_assert_msg(slot_of[e] == want_slot[e], "link %d: slot %d, not %d", e, slot_of[e],
                      want_slot[e]);
    for (int x = 0; x < 5; x++)
        ck_assert_int_eq(first[x], want_first[x]);
    /* the same users in another order are another slot: the filling sums
     * in user order */
    const int off2[] = { 0, 2, 4 };
    const int upos2[] = { 0, 1, 1, 0 };
    const double mb2[] = { 4, 4, 4, 4 };
    ck_assert_int_eq(sim_link_slots(off2, upos2, mb2, bw, 2, slot_of, first), 2);
    ck_assert_int_eq(sim_link_slots(off2, upos2, mb2, bw, 0, slot_of, first), 0);

    /* 600 links drawn from 40 shapes, against comparing each with every
     * earlier one: the hash table's probing finds every repeat */
    enum { NL = 600, MAXU = 3 };
    static int boff[NL + 1], bpos[NL * MAXU], bslot[NL], bfirst[NL];
    static double bmb[NL * MAXU], bbw[NL];
    uint64_t r = 12345;
    for (int e = 0; e < NL; e++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        int shape = (int)((r >> 33) % 40), len = 1 + shape % MAXU;
        boff[e + 1] = boff[e] + len;
        bbw[e] = 10 + shape % 2;
        for (int x = 0; x < len; x++) {
            bpos[boff[e] + x] = x + shape / 8;
            bmb[boff[e] + x] = 1 + shape % 5;
        }
    }
    int nslots = sim_link_slots(boff, bpos, bmb, bbw, NL, bslot, bfirst), want = 0;
    for (int e = 0; e < NL; e++) {
        int f = 0;
        while (f < e && !(bbw[f] == bbw[e] && boff[f + 1] - boff[f] == boff[e + 1] - boff[e] &&
                          memcmp(bpos + boff[f], bpos + boff[e],
                                 (size_t)(boff[e + 1] - boff[e]) * sizeof(int)) == 0 &&
                          memcmp(bmb + boff[f], bmb + boff[e],
                                 (size_t)(boff[e + 1] - boff[e]) * sizeof(double)) == 0))
            f++;
        int expect = f < e ? bslot[f] : want++;
        ck_assert_msg(bslot[e] == expect, "link %d: slot %d, not %d", e, bslot[e], expect);
        if (f == e)
            ck_assert_int_eq(bfirst[expect], e);
    }
    ck_assert_int_eq(nslots, want);
}
END_TEST

/* Whether slot y dominates slot x by the definition (crux_sim_internal.h), by
 * comparing every user of x with every user of y. */
static int dominates(const int *off, const int *upos, const double *mb, const double *bw, int y,
                     int x)
{
    if (!(bw[y] <= bw[x]))
        return 0;
    for (int i = off[x]; i < off[x + 1]; i++) {
        int found = 0;
        for (int k = off[y]; k < off[y + 1]; k++)
            found |= upos[k] == upos[i] && mb[k] >= mb[i];
        if (!found)
            return 0;
    }
    return 1;
}

START_TEST(dominated_slots_are_left_out)
{
    /* slot 1 dominates 0 (one more user, the same weights) and 4 (a subset
     * of its users); 2 and 3 cover 0 as well (3 with less capacity) but
     * nothing covers them; user 0 sends more on 5 than anywhere else; 6
     * and 7 are equal: the first stays */
    const double bw[] = { 10, 10, 10, 5, 10, 10, 5, 5 };
    const int off[] = { 0, 2, 5, 7, 9, 11, 13, 15, 17 };
    const int upos[] = { 0, 1, 0, 1, 2, 0, 1, 0, 1, 1, 2, 0, 2, 0, 2, 0, 2 };
    const double mb[] = { 4, 2, 4, 2, 1, 4, 3, 4, 2, 2, 1, 5, 1, 1, 9, 1, 9 };
    const int first[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    const char want[] = { 1, 0, 0, 0, 1, 0, 0, 1 };
    char dom[8];
    ck_assert_int_eq(sim_slots_dominated(off, upos, mb, bw, first, 8, 3, dom), 3);
    for (int x = 0; x < 8; x++)
        ck_assert_msg(dom[x] == want[x], "slot %d: dominated %d, not %d", x, dom[x], want[x]);
    ck_assert_int_eq(sim_slots_dominated(off, upos, mb, bw, first, 0, 3, dom), 0);

    /* 300 slots, each a random set of 6 users with weights 1-3 and a
     * capacity of 1 or 2, against the definition: a slot is left out when
     * another dominates it, unless that one is equal to it and comes later */
    enum { NS = 300, NU = 6 };
    static int boff[NS + 1], bpos[NS * NU], bfirst[NS];
    static double bmb[NS * NU], bbw[NS];
    static char bdom[NS];
    uint64_t r = 777;
    for (int e = 0; e < NS; e++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        int mask = 1 + (int)((r >> 33) % 63), len = 0; /* users ascending */
        for (int u = 0; u < NU; u++)
            if (mask & (1 << u)) {
                bpos[boff[e] + len] = u;
                bmb[boff[e] + len++] = 1 + (double)((r >> (40 + 3 * u)) % 3);
            }
        boff[e + 1] = boff[e] + len;
        bbw[e] = 1 + (double)((r >> 62) & 1);
        bfirst[e] = e;
    }
    int ndom = sim_slots_dominated(boff, bpos, bmb, bbw, bfirst, NS, NU, bdom), count = 0;
    for (int x = 0; x < NS; x++) {
        int expect = 0;
        for (int y = 0; y < NS && !expect; y++)
            expect = y != x && dominates(boff, bpos, bmb, bbw, y, x) &&
                     !(y > x && dominates(boff, bpos, bmb, bbw, x, y));
        ck_assert_msg(bdom[x] == expect, "slot %d: dominated %d, not %d", x, bdom[x], expect);
        count += expect;
    }
    ck_assert_int_eq(ndom, count);
    ck_assert_int_gt(count, 0);
    ck_assert_int_lt(count, NS);
}
END_TEST

/* A component of n jobs on two slots, from hand-made arrays. */
typedef struct {
    int *off, *slot, *level, *su_off, *su, *suk, *sa;
    double *w, *bw, *rate, *rcap;
} hand_t;

static sim_comp_t hand_comp(int n, const hand_t *h)
{
    sim_comp_t c;
    memset(&c, 0, sizeof(c));
    c.n = n;
    c.nslots = 2;
    c.off = h->off;
    c.slot = h->slot;
    c.level = h->level;
    c.su_off = h->su_off;
    c.su = h->su;
    c.suk = h->suk;
    c.sa = h->sa;
    c.w = h->w;
    c.slot_bw = h->bw;
    c.rate = h->rate;
    c.rcap = h->rcap;
    return c;
}

/* The scratch a filling of a hand-made component (up to 8 jobs on 2
 * slots) works in, and its jobs' positions. */
typedef struct {
    sim_freeze_t brk[9];
    sim_slot_fill_t sf[2];
    int set[8], job_mark[8], touched[3], sslot[3], live[2], cand[3], job_full[8], act[8], jobs[8];
    double jcap[8];
} hand_scratch_t;

static void hand_scratch(sim_comp_t *c, hand_scratch_t *x)
{
    memset(x, 0, sizeof(*x));
    for (int q = 0; q < c->n; q++)
        x->jobs[q] = q;
    c->brk = x->brk;
    c->sf = x->sf;
    c->set = x->set;
    c->job_mark = x->job_mark;
    c->touched = x->touched;
    c->sslot = x->sslot;
    c->live = x->live;
    c->cand = x->cand;
    c->job_full = x->job_full;
    c->jcap = x->jcap;
    c->act = x->act;
    c->jobs = x->jobs;
}

/* The jobs H, A, B, D and q of the hand-made components below, each in
 * the middle of a transfer at rate[i] (listed as transferring where
 * xfer[i]), and a run over them with --check on. */
static const char *const hand_ids[] = { "H", "A", "B", "D", "q" };

typedef struct {
    crux_sim_job_t spec[5];
    sim_job_t job[5];
    char err[256];
    sim_t s;
} hand_run_t;

static void hand_run(hand_run_t *h, const double *rate, const int *xfer)
{
    memset(h, 0, sizeof(*h));
    for (int i = 0; i < 5; i++) {
        h->spec[i].id = hand_ids[i];
        h->job[i] = (sim_job_t){ .spec = &h->spec[i],
                                 .state = JOB_RUNNING,
                                 .phase = PH_COMM,
                                 .comm_left = 1,
                                 .flow_bytes = 1,
                                 .x = rate[i],
                                 .xfer = xfer[i] };
    }
    h->s.jobs = h->job;
    h->s.cfg.check = 1;
    h->s.err = h->err;
    h->s.errlen = sizeof(h->err);
}

/* The five jobs' component of the tests below: H on level 0, A, B, D and q
 * on level 1; H, A, B and q cross slot X, B and D slot Y.  The caller
 * gives each slot's users (su, suk, the transferring count sa), the slots'
 * capacities, the rates and caps, and, for a filling, the users' positions
 * and the slots' use (NULL otherwise). */
typedef struct {
    int *su, *suk, *sa, *supos;
    double *bw, *rate, *rcap, *used;
} five_t;

static sim_comp_t five_comp(const five_t *f)
{
    static int off[] = { 0, 1, 2, 4, 5, 6 }, slot[] = { 0, 0, 0, 1, 1, 0 };
    static int level[] = { 0, 1, 1, 1, 1 }, su_off[] = { 0, 4, 6 };
    static double w[] = { 1, 1, 1, 1, 1, 1 };
    sim_comp_t c = hand_comp(
        5, &(hand_t){ off, slot, level, su_off, f->su, f->suk, f->sa, w, f->bw, f->rate, f->rcap });
    c.supos = f->supos;
    c.slot_used = f->used;
    return c;
}

/* Where a filling can first change when job q starts, on hand-made rates:
 * job H (the level above, rate h) and, on the level below, A (capped at
 * 0.2), B and q share slot X; B and D share slot Y (0.8: B and D at 0.4).
 * With q rising too, X fills at (capX - h - 0.2) / 2 while that is below
 * B's 0.4, else at capX - h - 0.6 (B keeps its rate). */
static double first_change(double cap_x, double h, int starts)
{
    static int su[] = { 0, 1, 2, 4, 2, 3 }, suk[] = { 0, 1, 2, 5, 3, 4 };
    int sa[] = { starts ? 3 : 4, 2 }; /* q transferring when it stops */
    double bw[] = { cap_x, 0.8 }, rate[] = { h, 0.2, 0.4, 0.4, 0.398 },
           rcap[] = { 100, 0.2, 100, 100, 100 };
    sim_comp_t c = five_comp(&(five_t){ su, suk, sa, NULL, bw, rate, rcap, NULL });
    hand_scratch_t scratch;
    hand_scratch(&c, &scratch);
    return sim_rates_first_change(&c, 4, starts);
}

START_TEST(first_change_of_a_filling)
{
    /* B's rate falls to 0.398: A alone (0.2) keeps its rate */
    ck_assert_double_eq_tol(first_change(0.996, 0, 1), 0.398, 1e-9);
    /* the level above takes 0.1 of X: the same */
    ck_assert_double_eq_tol(first_change(1.096, 0.1, 1), 0.398, 1e-9);
    /* X has room for q up to 0.6: A and B keep theirs */
    ck_assert_double_eq_tol(first_change(1.2, 0, 1), 0.6, 1e-9);
    /* q at its cap (100) does not fill X: nobody of its level changes */
    ck_assert(isinf(first_change(1000, 0, 1)));
    /* X already full with the level above */
    ck_assert_double_eq(first_change(1, 1.5, 1), 0);
    /* q stops: below its rate, nothing changes */
    ck_assert_double_eq_tol(first_change(0.996, 0, 0), 0.398, 1e-9);
    ck_assert(first_change(0.996, 0, 0) < 0.398);
}
END_TEST

/* The filling when q starts, on the component of first_change() with H at
 * 0.1 (its cap) and X at 1.096: A (0.2, its cap) is frozen below the first
 * change (0.398) and keeps its rate without being filled again; B and q
 * freeze at 0.398 on X, and D takes the rest of Y (0.402).  The run's
 * check certifies every transferring job. */
START_TEST(filling_keeps_rates_below_the_first_change)
{
    int su[] = { 0, 1, 2, 4, 2, 3 }, suk[] = { 0, 1, 2, 5, 3, 4 };
    int sa[] = { 3, 2 }, supos[] = { 0, 1, 2, 4, 5, 3 };
    double bw[] = { 1.096, 0.8 }, used[] = { 0.7, 0.8 };
    double rate[] = { 0.1, 0.2, 0.4, 0.4, 0 }, rcap[] = { 0.1, 0.2, 100, 100, 100 };
    sim_comp_t c = five_comp(&(five_t){ su, suk, sa, supos, bw, rate, rcap, used });
    hand_scratch_t scratch;
    hand_scratch(&c, &scratch);
    hand_run_t h;
    hand_run(&h, rate, (int[]){ 1, 1, 1, 1, 0 });
    int n = sim_rates(&h.s, &c, &(int){ 4 }, 1, 0);
    ck_assert_msg(h.s.failed == 0, "%s", h.err);
    ck_assert_int_eq(n, 3); /* B, D and q; A kept */
    ck_assert_int_eq(c.set[0], 2);
    ck_assert_int_eq(c.set[1], 3);
    ck_assert_int_eq(c.set[2], 4);
    const double want[] = { 0.1, 0.2, 0.398, 0.402, 0.398 };
    for (int i = 0; i < 5; i++)
        ck_assert_msg(fabs(rate[i] - want[i]) < 1e-12, "%s: rate %.17g, not %g", hand_ids[i],
                      rate[i], want[i]);
    ck_assert_int_eq(sa[0], 4); /* q is listed as transferring on X */
    ck_assert_double_eq_tol(used[0], 1.096, 1e-12);
    ck_assert_double_eq_tol(used[1], 0.8, 1e-12);
}
END_TEST

/* A slot's transferring users stay in position order as jobs start and
 * stop, on the component of first_change(): H (level 0) starts after A
 * and B, through the shortcut (X has room for its cap, 0.1); then q
 * starts beside D, both seeds, so nothing of level 1 is kept and collect()
 * reads X's users only up to the first of level 1; then A stops.  Were H
 * listed after A and B, that read would miss H's 0.1 and give B and q
 * 0.448 on a full X. */
START_TEST(transferring_users_stay_in_position_order)
{
    /* X: A and B transferring, then H and q; Y: B and D */
    int su[] = { 1, 2, 0, 4, 2, 3 }, suk[] = { 1, 2, 0, 5, 3, 4 };
    int sa[] = { 2, 2 }, supos[] = { 2, 0, 1, 4, 5, 3 };
    double bw[] = { 1.096, 0.8 }, used[] = { 0.6, 0.8 };
    double rate[] = { 0, 0.2, 0.4, 0.4, 0 }, rcap[] = { 0.1, 0.2, 100, 100, 100 };
    sim_comp_t c = five_comp(&(five_t){ su, suk, sa, supos, bw, rate, rcap, used });
    hand_scratch_t scratch;
    hand_scratch(&c, &scratch);
    hand_run_t h;
    hand_run(&h, rate, (int[]){ 0, 1, 1, 1, 0 });
    h.job[4].phase = PH_COMPUTE; /* q not yet */

    ck_assert_int_eq(sim_rates(&h.s, &c, &(int){ 0 }, 1, 0), 1); /* H starts: the shortcut */
    ck_assert_msg(h.s.failed == 0, "%s", h.err);
    ck_assert_double_eq_tol(rate[0], 0.1, 1e-12);
    ck_assert_int_eq(sa[0], 3);
    ck_assert_int_eq(su[0], 0);
    ck_assert_int_eq(su[1], 1);
    ck_assert_int_eq(su[2], 2);

    h.job[4].phase = PH_COMM;                                        /* q starts */
    ck_assert_int_eq(sim_rates(&h.s, &c, (int[]){ 3, 4 }, 2, 0), 4); /* A, B, D, q */
    ck_assert_msg(h.s.failed == 0, "%s", h.err);
    const double want[] = { 0.1, 0.2, 0.398, 0.402, 0.398 };
    for (int i = 0; i < 5; i++)
        ck_assert_msg(fabs(rate[i] - want[i]) < 1e-12, "%s: rate %.17g, not %g", hand_ids[i],
                      rate[i], want[i]);
    ck_assert_int_eq(sa[0], 4);
    for (int u = 1; u < 4; u++)
        ck_assert_int_lt(su[u - 1], su[u]);

    h.job[1].phase = PH_COMPUTE; /* A stops: B and D at 0.4 on Y, q the rest of X */
    sim_rates(&h.s, &c, &(int){ 1 }, 1, 0);
    ck_assert_msg(h.s.failed == 0, "%s", h.err);
    ck_assert_int_eq(sa[0], 3);
    ck_assert_int_eq(su[0], 0);
    ck_assert_int_eq(su[1], 2);
    ck_assert_int_eq(su[2], 4);
    ck_assert_double_eq_tol(rate[2], 0.4, 1e-12);
    ck_assert_double_eq_tol(rate[4], 0.596, 1e-12);
    ck_assert_double_eq_tol(used[0], 1.096, 1e-12);
}
END_TEST

/* The fairness certificate on hand-made rates: jobs 0 and 1 on level 0
 * share slot 0 (10 a flow-second), jobs 1 and 2 (level 1) slot 1 (4); each
 * may send 100.  The fair rates are 6, 4 and 0 (job 1 is held by slot 1,
 * job 0 takes the rest of slot 0, job 2 gets nothing under job 1); every
 * other allocation below breaks one of the certificate's conditions. */
static const char *unfair(double r0, double r1, double r2, double cap0, int q)
{
    static int off[] = { 0, 1, 3, 4 }, slot[] = { 0, 0, 1, 1 }, level[] = { 0, 0, 1 };
    static int su_off[] = { 0, 2, 4 }, su[] = { 0, 1, 1, 2 }, suk[] = { 0, 1, 2, 3 },
               sa[] = { 2, 2 };
    static double w[] = { 1, 1, 1, 1 }, bw[] = { 10, 4 };
    double rate[] = { r0, r1, r2 }, rcap[] = { cap0, 100, 100 };
    sim_comp_t c =
        hand_comp(3, &(hand_t){ off, slot, level, su_off, su, suk, sa, w, bw, rate, rcap });
    return sim_rates_unfair(&c, q);
}

START_TEST(fairness_certificate)
{
    for (int q = 0; q < 3; q++)
        ck_assert_ptr_null(unfair(6, 4, 0, 100, q));
    /* at its own cap, below the link's share */
    ck_assert_ptr_null(unfair(5, 4, 0, 5, 0));
    ck_assert_str_eq(unfair(6, 4, 0, 5, 0), "above its cap");
    ck_assert_str_eq(unfair(7, 4, 0, 100, 0), "on a link over its capacity");
    ck_assert_str_eq(unfair(5, 5, 0, 100, 1), "on a link over its capacity");
    /* slot 0 has room left */
    ck_assert_str_eq(unfair(5, 4, 0, 100, 0), "below its cap without a bottleneck");
    /* slot 1 is full, but partly with the level below */
    ck_assert_str_eq(unfair(6, 3, 1, 100, 1), "below its cap without a bottleneck");
    /* slot 0 is full, but job 0 of the same level gets more on it */
    ck_assert_str_eq(unfair(8, 2, 0, 100, 1), "below its cap without a bottleneck");
    /* the level below may get nothing on a slot the level above fills */
    ck_assert_ptr_null(unfair(6, 4, 0, 100, 2));
    ck_assert_str_eq(unfair(6, 2, 1, 100, 2), "below its cap without a bottleneck");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sim_exact");
    TCase *t = tcase_create("exact");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, two_jobs_exact);
    tcase_add_test(t, three_jobs_exact);
    tcase_add_test(t, rounding_noise_does_not_stall);
    tcase_add_test(t, no_transfer_waits_on_noise);
    tcase_add_test(t, averaged_window_ends_the_first_job);
    tcase_add_test(t, starved_job_is_no_anchor);
    tcase_add_test(t, identical_links_are_one_slot);
    tcase_add_test(t, dominated_slots_are_left_out);
    tcase_add_test(t, fairness_certificate);
    tcase_add_test(t, first_change_of_a_filling);
    tcase_add_test(t, filling_keeps_rates_below_the_first_change);
    tcase_add_test(t, transferring_users_stay_in_position_order);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

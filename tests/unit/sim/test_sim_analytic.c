/* The simulator on cases whose answer is known exactly: one job alone,
 * two jobs under strict priority, the Crux paper's Examples 1 and 2, and
 * CASSINI's interleaving of two identical jobs.
 *
 * The cluster: two ToRs under one aggregation switch, one NIC per host
 * (serving all 8 GPUs) ten times faster than the ToR uplinks (1 GB/s), so
 * a job from a host of ToR 0 to a host of ToR 1 has the uplink as its
 * bottleneck and t = its bytes per ring hop / 1 GB/s; jobs crossing share
 * it.  Latency per ring step is 0 here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim.h"
#include "tests/unit/check_main.h"
#include "tests/unit/sched_test_util.h"

/* A job on `g` GPUs of host a and of host b (ring of two hosts) whose
 * iteration sends t seconds' worth of the 1 GB/s uplink per ring hop. */
static void add_job(crux_sim_workload_t *w, const crux_sched_cluster_t *c, const char *id,
                    const char *a, const char *b, int g, double arrival, double compute,
                    double overlap, double t, double work, long iters, int level)
{
    crux_sched_place_t pl[2] = { { crux_sched_cluster_find_host(c, a), (1ULL << g) - 1 },
                                 { crux_sched_cluster_find_host(c, b), (1ULL << g) - 1 } };
    int G = 2 * g;
    crux_sim_job_t j = { .id = id,
                         .arrival_s = arrival,
                         .gpus = G,
                         .compute_s = compute,
                         .overlap = overlap,
                         .bytes = t * 1e9 * G / (2.0 * (G - 1)),
                         .work = work,
                         .iterations = iters,
                         .level = level,
                         .placement = pl,
                         .nplacement = 2 };
    char err[256];
    ck_assert_msg(crux_sim_workload_add(w, c, &j, err, sizeof(err)) == CRUX_OK, "%s", err);
}

static crux_sim_config_t config(crux_sim_policy_t policy, int ff)
{
    crux_sim_config_t cfg;
    crux_sim_config_defaults(&cfg);
    cfg.policy = policy;
    cfg.alpha_s = 0;
    cfg.bin_s = 1;
    cfg.fast_forward = ff;
    cfg.check = 1;
    return cfg;
}

static crux_sim_job_result_t job(const crux_sim_result_t *r, int i)
{
    crux_sim_job_result_t j;
    ck_assert_int_eq(crux_sim_result_job(r, i, &j), CRUX_OK);
    return j;
}

/* GPU-busy seconds over [t0, t1) from the 1-second bins (exact when the
 * run was stepped through). */
static double busy_between(const crux_sim_result_t *r, double t0, double t1)
{
    double sum = 0;
    for (int k = 0; k < crux_sim_result_bins(r); k++) {
        crux_sim_bin_t b;
        crux_sim_result_bin(r, k, &b);
        if (b.start_s >= t0 && b.end_s <= t1)
            sum += b.busy_gpu_s;
    }
    return sum;
}

START_TEST(one_job_alone)
{
    /* utilisation = compute / (compute + exposed comm), iteration
     * (1-o) c + max(o c, t): exposed 0.5 s of 2.5, and fully hidden */
    static const struct {
        double c, o, t, util;
    } cases[] = { { 2, 0.5, 1.5, 0.8 }, { 2, 0.8, 1, 1.0 }, { 1, 0, 3, 0.25 } };
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
        for (int ff = 0; ff <= 1; ff++) {
            crux_sim_workload_t *w = crux_sim_workload_new();
            add_job(w, c, "a", "h0", "h4", 8, 0, cases[k].c, cases[k].o, cases[k].t, 0, 200, 0);
            crux_sim_config_t cfg = config(CRUX_SIM_NONE, ff);
            crux_sim_result_t *r = sim_test_run(c, w, &cfg);
            crux_sim_summary_t m;
            crux_sim_summary(r, &m);
            ck_assert_double_eq_tol(m.utilization, cases[k].util, 1e-9);
            double period = cases[k].c / cases[k].util;
            ck_assert_double_eq_tol(job(r, 0).jct_s, 200 * period, 1e-7);
            ck_assert_double_eq_tol(job(r, 0).alone_period_s, period, 1e-12);
            ck_assert_double_eq_tol(job(r, 0).slowdown, 1, 1e-9);
            if (ff) { /* periodic at once: nearly all skipped, exactly */
                ck_assert(m.iterations_skipped > 190);
                ck_assert_uint_gt(m.freezes_exact, 0);
                ck_assert_uint_eq(m.freezes_averaged, 0);
            }
            crux_sim_result_free(r);
            crux_sim_workload_free(w);
        }
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(two_jobs_strict_priority)
{
    /* compute 1 s each, no overlap; t = 2 s and 1 s on the shared uplink.
     * Long job high: it never waits (iteration k ends at 3k); the short
     * one sends in its compute gaps: [3,4], then [6,7], ... so its
     * iteration k ends at 3k + 1.  Short job high: it ends at 2k; the long
     * one gets the odd seconds [2,3] and [4,5], then [6,7] and [8,9]: its
     * iteration k ends at 4k + 1.  The high job runs 100 iterations, the
     * low one 40, so the low one never runs alone. */
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    for (int order = 0; order < 2; order++)
        for (int ff = 0; ff <= 1; ff++) {
            crux_sim_workload_t *w = crux_sim_workload_new();
            add_job(w, c, "long", "h0", "h4", 8, 0, 1, 0, 2, 0, order == 0 ? 100 : 40,
                    order == 0 ? 1 : 0);
            add_job(w, c, "short", "h1", "h5", 8, 0, 1, 0, 1, 0, order == 0 ? 40 : 100,
                    order == 0 ? 0 : 1);
            crux_sim_config_t cfg = config(CRUX_SIM_FIXED, ff);
            crux_sim_result_t *r = sim_test_run(c, w, &cfg);
            double jct_long = order == 0 ? 3 * 100 : 4 * 40 + 1;
            double jct_short = order == 0 ? 3 * 40 + 1 : 2 * 100;
            ck_assert_double_eq_tol(job(r, 0).jct_s, jct_long, 1e-7);
            ck_assert_double_eq_tol(job(r, 1).jct_s, jct_short, 1e-7);
            ck_assert_int_eq(job(r, 0).shared, 1);
            crux_sim_result_free(r);
            crux_sim_workload_free(w);
        }
    crux_sched_cluster_free(c);
}
END_TEST

/* Example 1 (Figure 11): W 10 and 5, compute 2 s and 1 s, t 2 s and 1 s,
 * no overlap, equal GPU counts; both ready to communicate at 2 s (arrival
 * + compute), measured over the next 12 s. */
static double example1(crux_sim_policy_t policy, int first_high, int *level2_higher)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    crux_sim_workload_t *w = crux_sim_workload_new();
    add_job(w, c, "job1", "h0", "h4", 8, 0, 2, 0, 2, 10, 1000, first_high);
    add_job(w, c, "job2", "h1", "h5", 8, 1, 1, 0, 1, 5, 1000, !first_high);
    crux_sim_config_t cfg = config(policy, 0);
    cfg.until_s = 14;
    crux_sim_result_t *r = sim_test_run(c, w, &cfg);
    double util = busy_between(r, 2, 14) / (32 * 12.0);
    *level2_higher = job(r, 1).level > job(r, 0).level;
    crux_sim_result_free(r);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
    return util;
}

START_TEST(paper_example1)
{
    int l2;
    ck_assert_double_eq_tol(example1(CRUX_SIM_FIXED, 1, &l2), 0.375, 1e-9);
    ck_assert_double_eq_tol(example1(CRUX_SIM_FIXED, 0, &l2), 10.0 / 24, 1e-9);
    /* Crux puts job 2 first (k2 = 1.5): 41.7% */
    ck_assert_double_eq_tol(example1(CRUX_SIM_CRUX_FULL, 0, &l2), 10.0 / 24, 1e-9);
    ck_assert(l2);
}
END_TEST

/* Example 2 (Figure 12): job 1 on 2 GPUs, W 10, compute 4 s, t 1 s; job 2
 * on 12 GPUs, W 30, compute 2 s, t 3 s; communication starts after half
 * the compute.  Returns job 2's idle GPU-seconds per GPU over [2, 14). */
static double example2_idle(crux_sim_policy_t policy, int job1_high, int *level2_higher)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    crux_sim_workload_t *w = crux_sim_workload_new();
    add_job(w, c, "job1", "h0", "h4", 1, 0, 4, 0.5, 1, 10, 1000, job1_high);
    add_job(w, c, "job2", "h1", "h5", 6, 1, 2, 0.5, 3, 30, 1000, !job1_high);
    crux_sim_config_t cfg = config(policy, 0);
    cfg.until_s = 14;
    crux_sim_result_t *r = sim_test_run(c, w, &cfg);
    /* job 2 computed [1, 2) before the window */
    double idle = 12 - (job(r, 1).busy_s - 1);
    *level2_higher = job(r, 1).level > job(r, 0).level;
    crux_sim_result_free(r);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
    return idle;
}

START_TEST(paper_example2)
{
    int l2;
    ck_assert_double_eq_tol(example2_idle(CRUX_SIM_FIXED, 1, &l2), 7, 1e-9);
    ck_assert_double_eq_tol(example2_idle(CRUX_SIM_FIXED, 0, &l2), 6, 1e-9);
    ck_assert_double_eq_tol(example2_idle(CRUX_SIM_CRUX_FULL, 0, &l2), 6, 1e-9);
    ck_assert(l2); /* Crux prioritizes job 2 */
}
END_TEST

START_TEST(fair_sharing_and_cassini)
{
    /* two identical jobs, compute 1 s, t 0.5 s, arriving together: shared
     * fairly they always collide (iteration 2 s, utilisation 1/2); CASSINI
     * delays one once so their transfers interleave (1.5 s, 2/3) */
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    double util[2];
    for (int k = 0; k < 2; k++) {
        crux_sim_workload_t *w = crux_sim_workload_new();
        add_job(w, c, "a", "h0", "h4", 8, 0, 1, 0, 0.5, 0, 400, 0);
        add_job(w, c, "b", "h1", "h5", 8, 0, 1, 0, 0.5, 0, 400, 0);
        crux_sim_config_t cfg = config(k ? CRUX_SIM_CASSINI : CRUX_SIM_NONE, 1);
        crux_sim_result_t *r = sim_test_run(c, w, &cfg);
        crux_sim_summary_t m;
        crux_sim_summary(r, &m);
        util[k] = m.utilization;
        if (k == 0) {
            ck_assert_double_eq_tol(job(r, 0).jct_s, 800, 1e-6);
            ck_assert_double_eq_tol(job(r, 1).jct_s, 800, 1e-6);
        }
        crux_sim_result_free(r);
        crux_sim_workload_free(w);
    }
    ck_assert_double_eq_tol(util[0], 0.5, 1e-9);
    ck_assert(util[1] > 0.66 && util[1] < 2.0 / 3 + 1e-9);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sim_analytic");
    TCase *t = tcase_create("analytic");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, one_job_alone);
    tcase_add_test(t, two_jobs_strict_priority);
    tcase_add_test(t, paper_example1);
    tcase_add_test(t, paper_example2);
    tcase_add_test(t, fair_sharing_and_cassini);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* Priority assignment: the paper's Examples 1 and 2 (Figures 11, 12) and
 * the Figure 13 compression case, on the model alone and through plans. */
#include <math.h>
#include <stdio.h>

#include "sched/crux_sched.h"
#include "tests/unit/check_main.h"
#include "tests/unit/sched_test_util.h"

/* Example 1: W 10 and 5 GFLOP, t 2 s and 1 s, compute 2 s and 1 s, 10 GPUs
 * each, no overlap. */
static const crux_sched_timing_t ex1_job1 = { 10, 2, 2, 0 }, ex1_job2 = { 5, 1, 1, 0 };
/* Example 2: job 1 W 10, t 1 s, 2 GPUs, 4 s compute; job 2 W 30, t 3 s, 12
 * GPUs, 2 s compute; communication starts after 50% of the compute. */
static const crux_sched_timing_t ex2_job1 = { 10, 4, 1, 0.5 }, ex2_job2 = { 30, 2, 3, 0.5 };

START_TEST(example1_figure11)
{
    crux_sched_contend_t a, b;
    ck_assert_int_eq(crux_sched_contend(&ex1_job1, &ex1_job2, 12, &a), CRUX_OK);
    ck_assert_int_eq(crux_sched_contend(&ex1_job2, &ex1_job1, 12, &b), CRUX_OK);
    /* job 1 first: 6 s and 3 s of transmission, utilisation 37.5% */
    ck_assert_double_eq_tol(a.sent_s[0], 6, 1e-9);
    ck_assert_double_eq_tol(a.sent_s[1], 3, 1e-9);
    ck_assert_double_eq_tol((10 * a.busy_s[0] + 10 * a.busy_s[1]) / (20 * 12), 0.375, 1e-9);
    /* job 2 first: 6 s for job 2, 4 s for job 1, utilisation 41.7% */
    ck_assert_double_eq_tol(b.sent_s[0], 6, 1e-9);
    ck_assert_double_eq_tol(b.sent_s[1], 4, 1e-9);
    ck_assert_double_eq_tol((10 * b.busy_s[0] + 10 * b.busy_s[1]) / (20 * 12), 10.0 / 24, 1e-9);
}
END_TEST

START_TEST(example1_correction)
{
    /* job 1 (the most traffic) is the reference: k2 = 3 s / 2 s = 1.5 */
    ck_assert_double_eq_tol(crux_sched_correction(&ex1_job1, &ex1_job2, 3), 1.5, 1e-9);
    /* from job 2's side the same comparison gives the inverse */
    ck_assert_double_eq_tol(crux_sched_correction(&ex1_job2, &ex1_job1, 3), 1 / 1.5, 1e-9);
}
END_TEST

START_TEST(example2_figure12)
{
    crux_sched_contend_t a, b;
    ck_assert_int_eq(crux_sched_contend(&ex2_job1, &ex2_job2, 12, &a), CRUX_OK);
    ck_assert_int_eq(crux_sched_contend(&ex2_job2, &ex2_job1, 12, &b), CRUX_OK);
    /* job 1 first: job 2's 12 GPUs idle 7 s; job 2 first: 6 s */
    ck_assert_double_eq_tol(12 - a.busy_s[1], 7, 1e-9);
    ck_assert_double_eq_tol(12 - b.busy_s[0], 6, 1e-9);
    /* and fewer GPU-seconds are lost overall with job 2 first */
    double lost_1first = 2 * (12 - a.busy_s[0]) + 12 * (12 - a.busy_s[1]);
    double lost_2first = 12 * (12 - b.busy_s[0]) + 2 * (12 - b.busy_s[1]);
    ck_assert(lost_2first < lost_1first);
}
END_TEST

START_TEST(example2_job2_prioritized)
{
    /* equal intensities (10/1 = 30/3), yet job 2 must come first, whichever
     * job is the reference */
    double i1 = ex2_job1.work / ex2_job1.comm_s, i2 = ex2_job2.work / ex2_job2.comm_s;
    ck_assert_double_eq(i1, i2);
    double k1 = crux_sched_correction(&ex2_job2, &ex2_job1, 3); /* job 2 reference */
    ck_assert(k1 * i1 < 1.0 * i2);
    double k2 = crux_sched_correction(&ex2_job1, &ex2_job2, 3); /* job 1 reference */
    ck_assert(k2 * i2 > 1.0 * i1);
}
END_TEST

START_TEST(correction_neutral_cases)
{
    /* identical jobs: no reason to prefer either */
    ck_assert_double_eq_tol(crux_sched_correction(&ex1_job1, &ex1_job1, 3), 1, 1e-9);
    /* communication hidden behind long compute on both sides: k = 1 */
    crux_sched_timing_t a = { 10, 10, 0.1, 1.0 }, b = { 5, 8, 0.2, 1.0 };
    ck_assert_double_eq_tol(crux_sched_correction(&a, &b, 3), 1, 1e-9);
    /* a job without network traffic is not compared */
    crux_sched_timing_t none = { 5, 1, 0, 0 };
    ck_assert_double_eq(crux_sched_correction(&a, &none, 3), 1);
    crux_sched_contend_t out;
    crux_sched_timing_t bad = { 1, 0, 1, 0 };
    ck_assert_int_eq(crux_sched_contend(&bad, &a, 1, &out), CRUX_ERR_INVALID);
}
END_TEST

/* A job from host a to host b (explicit flow of `bytes`). */
static int add_flow_job(crux_sched_plan_t *plan, const crux_sched_cluster_t *c, const char *id,
                        const char *a, const char *b, double bytes, double work, double compute,
                        double overlap)
{
    int ha = crux_sched_cluster_find_host(c, a), hb = crux_sched_cluster_find_host(c, b), idx;
    crux_sched_place_t pl[2] = { { ha, 0 }, { hb, 0 } };
    crux_sched_flow_spec_t f = { ha, 0, hb, 0, bytes };
    crux_sched_job_t j = { .id = id,
                           .placement = pl,
                           .nplacement = 2,
                           .compute_s = compute,
                           .work = work,
                           .overlap = overlap,
                           .flows = &f,
                           .nflows = 1 };
    char err[256];
    ck_assert_msg(crux_sched_plan_add_job(plan, &j, &idx, err, sizeof(err)) == CRUX_OK, "%s", err);
    return idx;
}

START_TEST(example1_through_a_plan)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    /* tor0 hosts h0..h3, tor1 hosts h4..h7 */
    int j1 = add_flow_job(plan, c, "job1", "h0", "h4", 2e9, 10, 2, 0);
    int j2 = add_flow_job(plan, c, "job2", "h1", "h5", 1e9, 5, 1, 0);
    ck_assert_int_eq(crux_sched_plan_run(plan, NULL), CRUX_OK);
    crux_sched_job_result_t r1, r2;
    crux_sched_plan_job(plan, j1, &r1);
    crux_sched_plan_job(plan, j2, &r2);
    ck_assert_double_eq_tol(r1.comm_s, 2, 1e-9);
    ck_assert_double_eq_tol(r2.comm_s, 1, 1e-9);
    ck_assert_double_eq_tol(r1.intensity, r2.intensity, 1e-9);
    ck_assert_int_eq(crux_sched_plan_reference(plan), j1);
    ck_assert_double_eq(r1.correction, 1);
    ck_assert_double_eq_tol(r2.correction, 1.5, 1e-9);
    ck_assert(r2.level > r1.level); /* they share tor0 -> agg0 */
    ck_assert_int_eq(crux_sched_plan_check_levels(plan), CRUX_OK);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(example2_through_a_plan)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    int j1 = add_flow_job(plan, c, "job1", "h0", "h4", 1e9, 10, 4, 0.5);
    int j2 = add_flow_job(plan, c, "job2", "h1", "h5", 3e9, 30, 2, 0.5);
    ck_assert_int_eq(crux_sched_plan_run(plan, NULL), CRUX_OK);
    crux_sched_job_result_t r1, r2;
    crux_sched_plan_job(plan, j1, &r1);
    crux_sched_plan_job(plan, j2, &r2);
    ck_assert_int_eq(crux_sched_plan_reference(plan), j2);
    ck_assert(r2.priority > r1.priority);
    ck_assert(r2.level > r1.level);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(figure13_dag)
{
    /* jobs 1-4 in decreasing priority; 1-2 share a link, 3-4 another */
    crux_sched_edge_t e[2] = { { 0, 1, 4 }, { 2, 3, 2 } };
    int level[4];
    double cut;
    ck_assert_int_eq(crux_sched_compress_dag(4, e, 2, 2, 10, 1, level, &cut), CRUX_OK);
    ck_assert_int_eq(level[0], 1);
    ck_assert_int_eq(level[1], 0);
    ck_assert_int_eq(level[2], 1);
    ck_assert_int_eq(level[3], 0);
    ck_assert_double_eq(cut, 6);
}
END_TEST

START_TEST(figure13_through_a_plan)
{
    /* jobs 1, 2 from tor0 to tor1; jobs 3, 4 from tor2 to tor3; decreasing W */
    crux_sched_cluster_t *c = sched_test_uplink_cluster(4);
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    int j[4];
    j[0] = add_flow_job(plan, c, "job1", "h0", "h4", 1e9, 40, 1, 0);
    j[1] = add_flow_job(plan, c, "job2", "h1", "h5", 1e9, 30, 1, 0);
    j[2] = add_flow_job(plan, c, "job3", "h8", "h12", 1e9, 20, 1, 0);
    j[3] = add_flow_job(plan, c, "job4", "h9", "h13", 1e9, 10, 1, 0);
    crux_sched_options_t o;
    crux_sched_options_defaults(&o);
    o.levels = 2;
    ck_assert_int_eq(crux_sched_plan_run(plan, &o), CRUX_OK);
    int lv[4];
    double prio[4];
    for (int i = 0; i < 4; i++) {
        crux_sched_job_result_t r;
        crux_sched_plan_job(plan, j[i], &r);
        lv[i] = r.level;
        prio[i] = r.priority;
    }
    ck_assert(prio[0] > prio[1] && prio[1] > prio[2] && prio[2] > prio[3]);
    ck_assert_int_eq(lv[0], 1);
    ck_assert_int_eq(lv[1], 0);
    ck_assert_int_eq(lv[2], 1);
    ck_assert_int_eq(lv[3], 0);
    double cut, total;
    crux_sched_plan_cut(plan, &cut, &total);
    ck_assert_double_eq(cut, total); /* every contention is separated */
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(reserved_levels_are_not_used)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    add_flow_job(plan, c, "a", "h0", "h4", 1e9, 40, 1, 0);
    add_flow_job(plan, c, "b", "h1", "h5", 1e9, 30, 1, 0);
    add_flow_job(plan, c, "c", "h2", "h6", 1e9, 20, 1, 0);
    ck_assert_int_eq(crux_sched_plan_compress(plan, 8, 2, 10, 1), CRUX_ERR_INVALID); /* no
                                                                                    priorities yet */
    crux_sched_options_t o;
    crux_sched_options_defaults(&o);
    o.levels = 8;
    o.reserve = 6;
    ck_assert_int_eq(crux_sched_plan_run(plan, &o), CRUX_OK);
    int seen[2] = { 0, 0 };
    for (int i = 0; i < 3; i++) {
        crux_sched_job_result_t r;
        crux_sched_plan_job(plan, i, &r);
        ck_assert(r.level >= 0 && r.level < 2);
        seen[r.level] = 1;
    }
    ck_assert(seen[0] && seen[1]);
    ck_assert_int_eq(crux_sched_plan_check_levels(plan), CRUX_OK);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

/* A wide ring that hides its communication (compute 4 s, 30% overlap,
 * 1 s per hop) across 4 ToRs, and on each of its 4 hops a small job with
 * nothing to hide (compute 1 s, 1 s on the same uplink).  Each two-job
 * comparison says the wide job loses little, so P = k I puts it lowest;
 * but below all four its ring is free only when none of them transfers
 * (1/16 of the time) and its iteration grows from 4 s to about 19 s, while
 * a small job below it waits a quarter of the time: priorities that see
 * the network put the wide job on top. */
/* The default level table leaves CS6 and CS7 (DSCP 48..63) to network
 * control, for every level count; higher levels get higher code points,
 * each level its own, all standard classes up to 8 levels. */
/* What the links carry.  Jobs from ToR 0 to ToR 1 over one uplink of 1e9
 * bytes/s, each with its bytes per period alone (its share of the uplink
 * on average) and its intensity W / t: the most intensive are carried while
 * their shares fit, the others go below every carried job, in priority and
 * level, by intensity; a job that does not fit is passed over and a less
 * intensive one that does is carried.  An uplink filled exactly is not
 * overfilled: the plan is the network model's as it was. */
static void plan_network(crux_sched_plan_t *plan, int carry)
{
    crux_sched_options_t o;
    crux_sched_options_defaults(&o);
    o.priorities = CRUX_SCHED_PRIORITIES_NETWORK;
    ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_CRUX, 1), CRUX_OK);
    if (carry) {
        ck_assert_int_eq(crux_sched_plan_order(plan, &o), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_levels(plan, &o), CRUX_OK);
    } else {
        ck_assert_int_eq(crux_sched_plan_assign_priorities(plan, o.horizon_iters), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_network_priorities(plan), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_compress(plan, o.levels, 0, o.orders, o.seed), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_merge_levels(plan), CRUX_OK);
    }
    ck_assert_int_eq(crux_sched_plan_check_levels(plan), CRUX_OK);
}

static crux_sched_job_result_t result(const crux_sched_plan_t *plan, int j)
{
    crux_sched_job_result_t r;
    crux_sched_plan_job(plan, j, &r);
    return r;
}

/* hi above lo in priority and at least as high in level (strictly when
 * `strict`) */
static void assert_above(const crux_sched_plan_t *plan, int hi, int lo, int strict)
{
    crux_sched_job_result_t a = result(plan, hi), b = result(plan, lo);
    ck_assert_msg(a.priority > b.priority && (strict ? a.level > b.level : a.level >= b.level),
                  "%s (priority %g, level %d) not above %s (%g, %d)", a.id, a.priority, a.level,
                  b.id, b.priority, b.level);
}

START_TEST(carry_keeps_the_most_intensive_whole)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(2);
    /* shares 0.5, 0.5, 0.25, 0.25 (1.5 in all); intensities 40, 20, 10, 5 */
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    int a = add_flow_job(plan, c, "a", "h0", "h4", 1e9, 40, 1, 0);
    int b = add_flow_job(plan, c, "b", "h1", "h5", 1e9, 20, 1, 0);
    int x = add_flow_job(plan, c, "x", "h2", "h6", 0.5e9, 5, 1.5, 0);
    int y = add_flow_job(plan, c, "y", "h3", "h7", 0.5e9, 2.5, 1.5, 0);
    plan_network(plan, 1);
    assert_above(plan, a, x, 1);
    assert_above(plan, b, x, 1);
    assert_above(plan, a, y, 1);
    assert_above(plan, b, y, 1);
    assert_above(plan, x, y, 1); /* cut by intensity, not one level for both */
    /* levels fewer than the plan was compressed onto: refused, nothing moved */
    int had = result(plan, a).level;
    ck_assert_int_eq(crux_sched_plan_carry_levels(plan, 1), CRUX_ERR_INVALID);
    ck_assert_int_eq(result(plan, a).level, had);
    crux_sched_plan_free(plan);

    /* shares 0.5, 2/3, 0.25: "b" (intensity 20) does not fit after "a" (40),
     * "x" (8) does */
    plan = crux_sched_plan_new(c);
    a = add_flow_job(plan, c, "a", "h0", "h4", 1e9, 40, 1, 0);
    b = add_flow_job(plan, c, "b", "h1", "h5", 1e9, 20, 0.5, 0);
    x = add_flow_job(plan, c, "x", "h2", "h6", 0.5e9, 4, 1.5, 0);
    plan_network(plan, 1);
    assert_above(plan, a, b, 1);
    assert_above(plan, x, b, 1);
    crux_sched_plan_free(plan);

    /* shares 0.5 and 0.5: filled exactly, the network model's plan stays */
    crux_sched_plan_t *with = crux_sched_plan_new(c), *without = crux_sched_plan_new(c);
    crux_sched_plan_t *both[2] = { with, without };
    for (int k = 0; k < 2; k++) {
        add_flow_job(both[k], c, "a", "h0", "h4", 1e9, 40, 1, 0);
        add_flow_job(both[k], c, "b", "h1", "h5", 1e9, 20, 1, 0);
        add_flow_job(both[k], c, "z", "h2", "h3", 1e9, 1, 1, 0); /* inside ToR 0 */
        plan_network(both[k], k == 0);
    }
    for (int j = 0; j < 3; j++) {
        crux_sched_job_result_t r1 = result(with, j), r2 = result(without, j);
        ck_assert_double_eq(r1.priority, r2.priority);
        ck_assert_int_eq(r1.level, r2.level);
    }
    crux_sched_plan_free(with);
    crux_sched_plan_free(without);
    ck_assert_int_eq(crux_sched_plan_carry_priorities(NULL), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_carry_levels(NULL, 8), CRUX_ERR_INVALID);
    plan = crux_sched_plan_new(c); /* not compressed yet */
    add_flow_job(plan, c, "a", "h0", "h4", 1e9, 40, 1, 0);
    ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_CRUX, 1), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_carry_priorities(plan), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_assign_priorities(plan, 3.0), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_carry_priorities(plan), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_carry_levels(plan, 8), CRUX_ERR_INVALID);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(default_table_leaves_cs6_cs7)
{
    static const int standard[] = { 0, 10, 18, 26, 32, 34, 40, 46 }; /* CS0 AF11 .. EF */
    for (int k = 1; k <= CRUX_SCHED_MAX_LEVELS; k++) {
        crux_sched_nettable_t t;
        crux_sched_nettable_default(&t, k);
        ck_assert_int_eq(t.levels, k);
        ck_assert_int_eq(crux_sched_nettable_check(&t), CRUX_OK);
        for (int l = 0; l < k; l++) {
            ck_assert_msg(t.cls[l].dscp >= 0 && t.cls[l].dscp < 48, "%d levels: level %d dscp %d",
                          k, l, t.cls[l].dscp);
            ck_assert_int_eq(t.cls[l].sl, l);
            if (l > 0)
                ck_assert_int_gt(t.cls[l].dscp, t.cls[l - 1].dscp);
            if (k <= 8) {
                int known = 0;
                for (int i = 0; i < 8; i++)
                    known |= t.cls[l].dscp == standard[i];
                ck_assert_msg(known, "%d levels: level %d dscp %d", k, l, t.cls[l].dscp);
            }
        }
    }
    crux_sched_nettable_t t;
    crux_sched_nettable_default(&t, 8);  /* the default K */
    ck_assert_int_eq(t.cls[0].dscp, 0);  /* CS0, best effort */
    ck_assert_int_eq(t.cls[7].dscp, 46); /* EF */
}
END_TEST

/* On sched_test_uplink_cluster(4): a ring "wide" over h0, h4, h8, h12 (one
 * host per ToR; compute 4 s, 'overlap' of it hiding communication) and on
 * each of its hops a small job s<k> from h<4k+1> to h<4k+5> (1 GB of work
 * 'weight'); their indices in *w and small[]. */
static void add_ring_over_hops(crux_sched_plan_t *plan, crux_sched_cluster_t *c, double overlap,
                               double weight, int *w, int small[4])
{
    crux_sched_place_t ring[4];
    for (int k = 0; k < 4; k++) {
        char h[8];
        snprintf(h, sizeof(h), "h%d", 4 * k);
        ring[k] = (crux_sched_place_t){ crux_sched_cluster_find_host(c, h), 0 };
    }
    crux_sched_job_t wide = { .id = "wide",
                              .placement = ring,
                              .nplacement = 4,
                              .compute_s = 4,
                              .overlap = overlap,
                              .allreduce_bytes = 1e9 * 32 / 62.0 };
    char err[256];
    *w = -1;
    ck_assert_msg(crux_sched_plan_add_job(plan, &wide, w, err, sizeof(err)) == CRUX_OK, "%s", err);
    for (int k = 0; k < 4; k++) {
        char id[8], a[8], b[8];
        snprintf(id, sizeof(id), "s%d", k);
        snprintf(a, sizeof(a), "h%d", 4 * k + 1);
        snprintf(b, sizeof(b), "h%d", (4 * k + 5) % 16);
        small[k] = add_flow_job(plan, c, id, a, b, 1e9, weight, 1, 0);
    }
}

START_TEST(network_priorities_lift_a_wide_ring)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(4);
    for (int net = 0; net <= 1; net++) {
        crux_sched_plan_t *plan = crux_sched_plan_new(c);
        int w, small[4];
        add_ring_over_hops(plan, c, 0.3, 40, &w, small);
        ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_CRUX, 1), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_assign_priorities(plan, 3.0), CRUX_OK);
        if (net)
            ck_assert_int_eq(crux_sched_plan_network_priorities(plan), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_compress(plan, 8, 0, 10, 1), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_check_levels(plan), CRUX_OK);
        crux_sched_job_result_t rw, rs;
        crux_sched_plan_job(plan, w, &rw);
        for (int k = 0; k < 4; k++) {
            crux_sched_plan_job(plan, small[k], &rs);
            if (net)
                ck_assert_msg(rw.priority > rs.priority && rw.level > rs.level,
                              "network: wide %g (level %d), s%d %g (level %d)", rw.priority,
                              rw.level, k, rs.priority, rs.level);
            else
                ck_assert_msg(rw.priority < rs.priority && rw.level < rs.level,
                              "paper: wide %g (level %d), s%d %g (level %d)", rw.priority, rw.level,
                              k, rs.priority, rs.level);
        }
        crux_sched_plan_free(plan);
    }
    ck_assert_int_eq(crux_sched_plan_network_priorities(NULL), CRUX_ERR_INVALID);
    crux_sched_cluster_free(c);
}
END_TEST

/* Levels are a maximum.  A ring across 4 ToRs (compute 4 s, of which 2.4 s
 * can hide its 1 s on each uplink) with a small exposed job on each of its
 * hops (1 s of transfer after 1 s of compute, W 20): P = k I ranks the
 * ring lowest, and in strict order below all four it is free only when
 * none of them transfers, 1/16 of the time (iteration 4 s -> 17.6 s); on
 * their level it is slowed by its worst hop only (an even split: 2 s, still
 * hidden), which costs the small jobs less than the ring gains, so the
 * levels are merged (merging works on any order; with the network order
 * the levels it leaves still follow the priorities).  Two jobs alone on
 * one link keep Algorithm 1's two levels: there sharing never beats
 * strict order. */
START_TEST(network_levels_merge_only_where_sharing_gains)
{
    crux_sched_cluster_t *c = sched_test_uplink_cluster(4);
    for (int net = 0; net <= 1; net++) {
        crux_sched_plan_t *plan = crux_sched_plan_new(c);
        int w, small[4];
        add_ring_over_hops(plan, c, 0.6, 20, &w, small);
        ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_CRUX, 1), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_merge_levels(plan), CRUX_ERR_INVALID); /* not compressed */
        ck_assert_int_eq(crux_sched_plan_assign_priorities(plan, 3.0), CRUX_OK);
        if (net)
            ck_assert_int_eq(crux_sched_plan_network_priorities(plan), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_compress(plan, 8, 0, 10, 1), CRUX_OK);
        crux_sched_job_result_t rw, rs;
        crux_sched_plan_job(plan, w, &rw);
        for (int k = 0; k < 4; k++) {
            crux_sched_plan_job(plan, small[k], &rs);
            if (!net)
                ck_assert_msg(rw.level < rs.level, "paper, compressed: wide level %d, s%d level %d",
                              rw.level, k, rs.level);
        }
        ck_assert_int_eq(crux_sched_plan_merge_levels(plan), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_check_levels(plan), CRUX_OK);
        crux_sched_plan_job(plan, w, &rw);
        for (int k = 0; k < 4; k++) {
            crux_sched_plan_job(plan, small[k], &rs);
            if (!net)
                ck_assert_msg(rw.level == rs.level, "paper, merged: wide level %d, s%d level %d",
                              rw.level, k, rs.level);
        }
        crux_sched_plan_free(plan);
    }
    /* crux_sched_plan_levels (what plan_run, crux-sched and crux-sim use)
     * merges with the network model and not with the paper's, on the
     * paper's order of the same jobs */
    for (int net = 0; net <= 1; net++) {
        crux_sched_plan_t *plan = crux_sched_plan_new(c);
        int w, small[4];
        add_ring_over_hops(plan, c, 0.6, 20, &w, small);
        crux_sched_options_t o;
        crux_sched_options_defaults(&o);
        o.priorities = net ? CRUX_SCHED_PRIORITIES_NETWORK : CRUX_SCHED_PRIORITIES_PAPER;
        ck_assert_int_eq(crux_sched_plan_select_paths(plan, o.paths, o.seed), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_assign_priorities(plan, o.horizon_iters), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_levels(plan, &o), CRUX_OK);
        crux_sched_job_result_t rw, rs;
        crux_sched_plan_job(plan, w, &rw);
        for (int k = 0; k < 4; k++) {
            crux_sched_plan_job(plan, small[k], &rs);
            ck_assert_msg(net ? rw.level == rs.level : rw.level < rs.level,
                          "%s levels: wide level %d, s%d level %d", net ? "network" : "paper",
                          rw.level, k, rs.level);
        }
        crux_sched_plan_free(plan);
    }
    ck_assert_int_eq(crux_sched_plan_levels(NULL, NULL), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_order(NULL, NULL), CRUX_ERR_INVALID);
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    int a = add_flow_job(plan, c, "a", "h0", "h4", 1e9, 10, 1, 0);
    int b = add_flow_job(plan, c, "b", "h1", "h5", 1e9, 10, 1, 0);
    ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_CRUX, 1), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_assign_priorities(plan, 3.0), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_network_priorities(plan), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_compress(plan, 8, 0, 10, 1), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_merge_levels(plan), CRUX_OK);
    crux_sched_job_result_t ra, rb;
    crux_sched_plan_job(plan, a, &ra);
    crux_sched_plan_job(plan, b, &rb);
    ck_assert_int_ne(ra.level, rb.level);
    crux_sched_plan_free(plan);
    ck_assert_int_eq(crux_sched_plan_merge_levels(NULL), CRUX_ERR_INVALID);
    crux_sched_cluster_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sched_priority");
    TCase *t = tcase_create("priority");
    tcase_add_test(t, example1_figure11);
    tcase_add_test(t, example1_correction);
    tcase_add_test(t, example2_figure12);
    tcase_add_test(t, example2_job2_prioritized);
    tcase_add_test(t, correction_neutral_cases);
    tcase_add_test(t, example1_through_a_plan);
    tcase_add_test(t, example2_through_a_plan);
    tcase_add_test(t, figure13_dag);
    tcase_add_test(t, figure13_through_a_plan);
    tcase_add_test(t, reserved_levels_are_not_used);
    tcase_add_test(t, network_priorities_lift_a_wide_ring);
    tcase_add_test(t, network_levels_merge_only_where_sharing_gains);
    tcase_add_test(t, carry_keeps_the_most_intensive_whole);
    tcase_add_test(t, default_table_leaves_cs6_cs7);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

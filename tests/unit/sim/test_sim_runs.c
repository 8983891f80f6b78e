/* Whole runs of the simulator on small generated workloads: conservation
 * of bytes, reproducibility from a seed, fast-forward against stepping
 * through every iteration, and every policy's decisions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim.h"
#include "tests/unit/check_main.h"
#include "tests/unit/sched_test_util.h"

/* 4 ToRs of 4 hosts, 2 aggregation switches, ToR uplinks 4:1
 * oversubscribed: jobs placed at random contend. */
static crux_sched_cluster_t *oversubscribed(void)
{
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p);
    p.uplink_gbps = 400;
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    return c;
}

static crux_sim_workload_t *generated(const crux_sched_cluster_t *c, int jobs, double span_s,
                                      uint64_t seed)
{
    crux_sim_gen_t g;
    crux_sim_gen_defaults(&g);
    g.jobs = jobs;
    g.span_s = span_s;
    g.min_s = 60;
    g.max_s = span_s;
    g.seed = seed;
    crux_sim_workload_t *w = crux_sim_workload_new();
    char err[256];
    ck_assert_msg(crux_sim_generate(&g, c, w, err, sizeof(err)) == CRUX_OK, "%s", err);
    return w;
}

static crux_sim_config_t config(crux_sim_policy_t policy, int ff)
{
    crux_sim_config_t cfg;
    crux_sim_config_defaults(&cfg);
    cfg.policy = policy;
    cfg.placement = CRUX_SIM_PLACE_RANDOM;
    cfg.fast_forward = ff;
    cfg.check = 1;
    return cfg;
}

/* Bytes every NIC's uplink carried: each flow starts on exactly one. */
static double nic_uplink_bytes(const crux_sched_cluster_t *c, const crux_sim_result_t *r)
{
    double sum = 0;
    for (int l = 0; l < crux_sched_cluster_links(c); l++) {
        crux_sched_link_info_t li;
        crux_sched_link_info(c, l, &li);
        if (li.src.host >= 0)
            sum += crux_sim_result_link_bytes(r, l);
    }
    return sum;
}

START_TEST(conservation)
{
    crux_sched_cluster_t *c = oversubscribed();
    crux_sim_workload_t *w = generated(c, 50, 3600, 3);
    for (int ff = 0; ff <= 1; ff++) {
        crux_sim_config_t cfg = config(CRUX_SIM_NONE, ff);
        crux_sim_result_t *r = sim_test_run(c, w, &cfg);
        crux_sim_summary_t m;
        crux_sim_summary(r, &m);
        ck_assert_int_eq(m.jobs_done, 50);
        ck_assert(m.bytes_sent > 1e12);
        ck_assert_double_eq_tol(m.bytes_delivered, m.bytes_sent, 1e-9 * m.bytes_sent);
        ck_assert_double_eq_tol(m.bytes_in_flight, 0, 1e-9 * m.bytes_sent);
        ck_assert_double_eq_tol(nic_uplink_bytes(c, r), m.bytes_sent, 1e-9 * m.bytes_sent);
        if (!ff) {
            /* stepped: each iteration sent its ring Allreduce, counted from
             * the job list alone */
            double expect = 0;
            for (int i = 0; i < crux_sim_result_jobs(r); i++) {
                crux_sim_job_result_t j;
                crux_sim_job_t spec;
                crux_sim_result_job(r, i, &j);
                crux_sim_workload_job(w, i, &spec);
                ck_assert_str_eq(j.id, spec.id);
                ck_assert_double_eq(j.iterations, (double)spec.iterations);
                if (j.hosts > 1)
                    expect += j.iterations * j.hosts * 2.0 * (j.gpus - 1) / j.gpus * spec.bytes;
            }
            ck_assert_double_eq_tol(m.bytes_sent, expect, 1e-9 * expect);
        }
        crux_sim_result_free(r);
    }
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
}
END_TEST

static int same_results(const crux_sim_result_t *a, const crux_sim_result_t *b)
{
    crux_sim_summary_t x, y;
    crux_sim_summary(a, &x);
    crux_sim_summary(b, &y);
    x.wall_s = y.wall_s = x.cpu_s = y.cpu_s = 0;
    if (memcmp(&x, &y, sizeof(x)) != 0 || crux_sim_result_jobs(a) != crux_sim_result_jobs(b))
        return 0;
    for (int i = 0; i < crux_sim_result_jobs(a); i++) {
        crux_sim_job_result_t p, q;
        crux_sim_result_job(a, i, &p);
        crux_sim_result_job(b, i, &q);
        if (p.start_s != q.start_s || p.end_s != q.end_s || p.busy_s != q.busy_s ||
            p.level != q.level || p.hosts != q.hosts)
            return 0;
    }
    return 1;
}

START_TEST(determinism)
{
    crux_sched_cluster_t *c = oversubscribed();
    crux_sim_workload_t *w = generated(c, 50, 3600, 4);
    crux_sim_config_t cfg = config(CRUX_SIM_CRUX_FULL, 1);
    crux_sim_result_t *a = sim_test_run(c, w, &cfg), *b = sim_test_run(c, w, &cfg);
    ck_assert(same_results(a, b));
    cfg.seed = 2; /* another random placement */
    crux_sim_result_t *d = sim_test_run(c, w, &cfg);
    ck_assert(!same_results(a, d));
    crux_sim_result_free(a);
    crux_sim_result_free(b);
    crux_sim_result_free(d);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(fast_forward_periodic_is_exact)
{
    /* three jobs on the shared uplinks of a 2-ToR cluster, fixed levels:
     * after a short transient the pattern repeats, so skipping whole
     * periods must give exactly the stepped results */
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p);
    p.tors = 2;
    p.aggs = 1;
    p.uplink_gbps = 400;
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    crux_sim_workload_t *w = crux_sim_workload_new();
    static const struct {
        const char *id, *a, *b;
        double compute, bytes;
        int level;
    } jobs[] = { { "a", "h0", "h4", 0.2, 4e9, 2 },
                 { "b", "h1", "h5", 0.1, 2e9, 1 },
                 { "c", "h2", "h6", 0.4, 3e9, 0 } };
    for (int k = 0; k < 3; k++) {
        crux_sched_place_t pl[2] = { { crux_sched_cluster_find_host(c, jobs[k].a), 0 },
                                     { crux_sched_cluster_find_host(c, jobs[k].b), 0 } };
        crux_sim_job_t j = { .id = jobs[k].id,
                             .gpus = 16,
                             .compute_s = jobs[k].compute,
                             .overlap = 0.3,
                             .bytes = jobs[k].bytes,
                             .iterations = 20000,
                             .level = jobs[k].level,
                             .placement = pl,
                             .nplacement = 2 };
        ck_assert_int_eq(crux_sim_workload_add(w, c, &j, NULL, 0), CRUX_OK);
    }
    crux_sim_config_t step = config(CRUX_SIM_FIXED, 0), ff = config(CRUX_SIM_FIXED, 1);
    crux_sim_result_t *a = sim_test_run(c, w, &step), *b = sim_test_run(c, w, &ff);
    crux_sim_summary_t sa, sb;
    crux_sim_summary(a, &sa);
    crux_sim_summary(b, &sb);
    ck_assert(sb.iterations_skipped > 0.9 * sb.iterations);
    ck_assert(sb.events < sa.events / 10);
    for (int k = 0; k < 3; k++) {
        crux_sim_job_result_t x, y;
        crux_sim_result_job(a, k, &x);
        crux_sim_result_job(b, k, &y);
        ck_assert_msg(fabs(x.end_s - y.end_s) < 1e-9 * x.end_s, "%s: %.12g vs %.12g", x.id, x.end_s,
                      y.end_s);
    }
    crux_sim_job_result_t low;
    crux_sim_result_job(a, 2, &low);
    ck_assert(low.slowdown > 1.01); /* they do slow each other down */
    ck_assert_double_eq_tol(sa.utilization, sb.utilization, 1e-9);
    crux_sim_result_free(a);
    crux_sim_result_free(b);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(fast_forward_close_to_stepping)
{
    /* jobs whose periods drift against each other are averaged over a
     * window: close to the stepped run, not equal */
    crux_sched_cluster_t *c = oversubscribed();
    for (uint64_t seed = 1; seed <= 3; seed++) {
        crux_sim_workload_t *w = generated(c, 50, 3600, seed);
        for (int pol = 0; pol < 2; pol++) {
            crux_sim_policy_t policy = pol ? CRUX_SIM_CRUX_FULL : CRUX_SIM_NONE;
            crux_sim_config_t step = config(policy, 0), ff = config(policy, 1);
            crux_sim_result_t *a = sim_test_run(c, w, &step), *b = sim_test_run(c, w, &ff);
            crux_sim_summary_t sa, sb;
            crux_sim_summary(a, &sa);
            crux_sim_summary(b, &sb);
            ck_assert(sb.events < sa.events / 3);
            /* every job leaves after its last iteration: exactly when
             * stepped; fast-forwarded, an averaged window credits
             * fractions of iterations, so the iteration that crosses the
             * count ends the job, less than one past it */
            ck_assert_int_eq(sa.jobs_done, sa.jobs);
            ck_assert_int_eq(sb.jobs_done, sb.jobs);
            for (int i = 0; i < crux_sim_result_jobs(b); i++) {
                crux_sim_job_t spec;
                crux_sim_job_result_t ja, jb;
                ck_assert_int_eq(crux_sim_workload_job(w, i, &spec), CRUX_OK);
                ck_assert_int_eq(crux_sim_result_job(a, i, &ja), CRUX_OK);
                ck_assert_int_eq(crux_sim_result_job(b, i, &jb), CRUX_OK);
                ck_assert_msg(ja.iterations == (double)spec.iterations,
                              "job %s stepped: %.9g of %ld iterations", ja.id, ja.iterations,
                              spec.iterations);
                double over = jb.iterations - (double)spec.iterations;
                ck_assert_msg(jb.end_s >= jb.start_s && over > -1e-6 && over < 1,
                              "job %s: %.9g of %ld iterations, ends at %g", jb.id, jb.iterations,
                              spec.iterations, jb.end_s);
            }
            ck_assert_msg(fabs(sa.utilization - sb.utilization) < 0.005,
                          "seed %llu %s: utilisation %.4f stepped, %.4f skipped",
                          (unsigned long long)seed, crux_sim_policy_name(policy), sa.utilization,
                          sb.utilization);
            crux_sim_result_free(a);
            crux_sim_result_free(b);
        }
        crux_sim_workload_free(w);
    }
    crux_sched_cluster_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sim_runs");
    TCase *t = tcase_create("runs");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, conservation);
    tcase_add_test(t, determinism);
    tcase_add_test(t, fast_forward_periodic_is_exact);
    tcase_add_test(t, fast_forward_close_to_stepping);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* Every policy's decisions on one set of placed jobs (crux_sim_decide),
 * checked against what the policy promises and, for Crux, against
 * libcrux_sched itself; then every policy through a whole run with the
 * simulator's invariants checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim.h"
#include "tests/unit/check_main.h"

#define K 8

static crux_sched_cluster_t *cluster(void)
{
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p); /* 4 ToRs x 4 hosts, 2 aggregation switches */
    p.uplink_gbps = 400;
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    return c;
}

static const struct {
    const char *id;
    const char *hosts[4];
    int nhosts;
    double compute, overlap, bytes;
    int level;
} jobs[] = {
    { "bert", { "h0", "h4" }, 2, 0.22, 0.5, 1.34e9, 3 },
    { "gpt", { "h1", "h5", "h9", "h13" }, 4, 0.8, 0.3, 2.6e9, 12 },
    { "ctr", { "h2", "h8" }, 2, 0.08, 0.2, 1.2e9, 0 },
    { "nmt", { "h3", "h12" }, 2, 0.18, 0.5, 8.52e8, 5 },
    { "local", { "h6", "h7" }, 2, 0.1, 0.6, 1.02e8, 1 }, /* one ToR: 2 hops */
    { "single", { "h10" }, 1, 0.1, 0.6, 1.02e8, 2 },     /* no network */
    { "llama", { "h11", "h15", "h14" }, 3, 1.1, 0.7, 21e9, 7 },
};
#define NJOBS ((int)(sizeof(jobs) / sizeof(jobs[0])))

static crux_sim_workload_t *workload(const crux_sched_cluster_t *c)
{
    crux_sim_workload_t *w = crux_sim_workload_new();
    for (int i = 0; i < NJOBS; i++) {
        crux_sched_place_t pl[4];
        for (int k = 0; k < jobs[i].nhosts; k++)
            pl[k] = (crux_sched_place_t){ crux_sched_cluster_find_host(c, jobs[i].hosts[k]), 0 };
        crux_sim_job_t j = { .id = jobs[i].id,
                             .gpus = 8 * jobs[i].nhosts,
                             .compute_s = jobs[i].compute,
                             .overlap = jobs[i].overlap,
                             .bytes = jobs[i].bytes,
                             .iterations = 100,
                             .level = jobs[i].level,
                             .placement = pl,
                             .nplacement = jobs[i].nhosts };
        char err[256];
        ck_assert_msg(crux_sim_workload_add(w, c, &j, err, sizeof(err)) == CRUX_OK, "%s", err);
    }
    return w;
}

static void decide(crux_sim_policy_t policy, int *level)
{
    crux_sched_cluster_t *c = cluster();
    crux_sim_workload_t *w = workload(c);
    crux_sim_config_t cfg;
    crux_sim_config_defaults(&cfg);
    cfg.policy = policy;
    cfg.levels = K;
    char err[256] = "";
    ck_assert_msg(crux_sim_decide(c, w, &cfg, level, err, sizeof(err)) == CRUX_OK, "%s: %s",
                  crux_sim_policy_name(policy), err);
    for (int i = 0; i < NJOBS; i++)
        if (jobs[i].nhosts == 1)
            ck_assert_int_eq(level[i], -1);
        else
            ck_assert(level[i] >= 0 && level[i] < K);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
}

/* libcrux_sched's plan of the same jobs, in the same order. */
static crux_sched_plan_t *plan_of(const crux_sched_cluster_t *c)
{
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    for (int i = 0; i < NJOBS; i++) {
        crux_sched_place_t pl[4];
        for (int k = 0; k < jobs[i].nhosts; k++)
            pl[k] = (crux_sched_place_t){ crux_sched_cluster_find_host(c, jobs[i].hosts[k]), 0 };
        crux_sched_job_t j = { .id = jobs[i].id,
                               .placement = pl,
                               .nplacement = jobs[i].nhosts,
                               .compute_s = jobs[i].compute,
                               .overlap = jobs[i].overlap,
                               .allreduce_bytes = jobs[i].bytes };
        ck_assert_int_eq(crux_sched_plan_add_job(plan, &j, NULL, NULL, 0), CRUX_OK);
    }
    return plan;
}

START_TEST(none_cassini_fixed)
{
    int level[NJOBS];
    crux_sim_policy_t one_level[] = { CRUX_SIM_NONE, CRUX_SIM_CASSINI };
    for (int p = 0; p < 2; p++) {
        decide(one_level[p], level);
        for (int i = 0; i < NJOBS; i++)
            ck_assert(level[i] == 0 || level[i] == -1);
    }
    decide(CRUX_SIM_FIXED, level);
    for (int i = 0; i < NJOBS; i++)
        if (jobs[i].nhosts > 1)
            ck_assert_int_eq(level[i], jobs[i].level < K ? jobs[i].level : K - 1);
}
END_TEST

static int find(int *uf, int x)
{
    while (uf[x] != x)
        x = uf[x] = uf[uf[x]];
    return x;
}

START_TEST(sincronia_top_job_per_group)
{
    int level[NJOBS];
    decide(CRUX_SIM_SINCRONIA, level);
    /* the groups of jobs sharing links on their ECMP paths */
    crux_sched_cluster_t *c = cluster();
    crux_sched_plan_t *plan = plan_of(c);
    ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_ECMP, 1), CRUX_OK);
    int uf[NJOBS], *owner = malloc(sizeof(int) * (size_t)crux_sched_cluster_links(c));
    for (int l = 0; l < crux_sched_cluster_links(c); l++)
        owner[l] = -1;
    for (int i = 0; i < NJOBS; i++)
        uf[i] = i;
    for (int i = 0; i < NJOBS; i++) {
        const int *links;
        const double *bytes;
        int n = crux_sched_plan_job_links(plan, i, &links, &bytes);
        for (int k = 0; k < n; k++) {
            if (owner[links[k]] >= 0)
                uf[find(uf, i)] = find(uf, owner[links[k]]);
            owner[links[k]] = i;
        }
    }
    int tops[NJOBS] = { 0 }, sizes[NJOBS] = { 0 }, shared = 0;
    for (int i = 0; i < NJOBS; i++) {
        if (level[i] < 0)
            continue;
        sizes[find(uf, i)]++;
        tops[find(uf, i)] += level[i] == K - 1;
        ck_assert(level[i] == K - 1 || level[i] == 0); /* its compression: high or low */
    }
    for (int g = 0; g < NJOBS; g++) {
        if (sizes[g] > 0)
            ck_assert_int_eq(tops[g], 1);
        shared |= sizes[g] > 1;
    }
    ck_assert(shared); /* the case does exercise a group */
    free(owner);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(taccl_longer_distance_higher)
{
    int level[NJOBS];
    decide(CRUX_SIM_TACCL, level);
    for (int i = 0; i < NJOBS; i++) {
        if (level[i] < 0)
            continue;
        if (strcmp(jobs[i].id, "local") == 0)
            ck_assert_int_eq(level[i], K - 2); /* 2 hops */
        else
            ck_assert_int_eq(level[i], K - 1); /* across ToRs: 4 hops */
    }
}
END_TEST

START_TEST(crux_full_is_libcrux_sched)
{
    int level[NJOBS];
    decide(CRUX_SIM_CRUX_FULL, level);
    crux_sched_cluster_t *c = cluster();
    crux_sched_plan_t *plan = plan_of(c);
    crux_sched_options_t o;
    crux_sched_options_defaults(&o);
    o.levels = K;
    ck_assert_int_eq(crux_sched_plan_run(plan, &o), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_check_levels(plan), CRUX_OK);
    int distinct = 0, seen[K] = { 0 };
    for (int i = 0; i < NJOBS; i++) {
        crux_sched_job_result_t r;
        crux_sched_plan_job(plan, i, &r);
        if (level[i] < 0)
            continue;
        ck_assert_int_eq(level[i], r.level);
        distinct += !seen[level[i]]++;
    }
    ck_assert(distinct > 1);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(crux_rank_levels_follow_priorities)
{
    crux_sim_policy_t policy[] = { CRUX_SIM_CRUX_PA, CRUX_SIM_CRUX_PS_PA };
    crux_sched_path_mode_t paths[] = { CRUX_SCHED_PATHS_ECMP, CRUX_SCHED_PATHS_CRUX };
    for (int p = 0; p < 2; p++) {
        int level[NJOBS];
        decide(policy[p], level);
        crux_sched_cluster_t *c = cluster();
        crux_sched_plan_t *plan = plan_of(c);
        ck_assert_int_eq(crux_sched_plan_select_paths(plan, paths[p], 1), CRUX_OK);
        ck_assert_int_eq(crux_sched_plan_assign_priorities(plan, 3), CRUX_OK);
        double prio[NJOBS], best = -1;
        for (int i = 0; i < NJOBS; i++) {
            crux_sched_job_result_t r;
            crux_sched_plan_job(plan, i, &r);
            prio[i] = r.priority;
            if (level[i] >= 0 && prio[i] > best)
                best = prio[i];
        }
        for (int i = 0; i < NJOBS; i++) {
            if (level[i] < 0)
                continue;
            if (prio[i] == best)
                ck_assert_int_eq(level[i], K - 1);
            for (int k = 0; k < NJOBS; k++)
                if (level[k] >= 0 && prio[i] > prio[k])
                    ck_assert(level[i] >= level[k]);
        }
        crux_sched_plan_free(plan);
        crux_sched_cluster_free(c);
    }
}
END_TEST

START_TEST(every_policy_runs)
{
    crux_sched_cluster_t *c = cluster();
    crux_sim_gen_t g;
    crux_sim_gen_defaults(&g);
    g.jobs = 30;
    g.span_s = 1800;
    g.min_s = 60;
    g.max_s = 1800;
    crux_sim_workload_t *w = crux_sim_workload_new();
    ck_assert_int_eq(crux_sim_generate(&g, c, w, NULL, 0), CRUX_OK);
    for (int p = 0; p < CRUX_SIM_POLICIES; p++) {
        crux_sim_config_t cfg;
        crux_sim_config_defaults(&cfg);
        cfg.policy = (crux_sim_policy_t)p;
        cfg.placement = CRUX_SIM_PLACE_RANDOM;
        cfg.check = 1;
        crux_sim_result_t *r = NULL;
        char err[512] = "";
        ck_assert_msg(crux_sim_run(c, w, &cfg, &r, err, sizeof(err)) == CRUX_OK, "%s: %s",
                      crux_sim_policy_name(cfg.policy), err);
        crux_sim_summary_t m;
        crux_sim_summary(r, &m);
        ck_assert_int_eq(m.jobs_done, 30);
        ck_assert(m.utilization > 0.3 && m.utilization <= 1 + 1e-12);
        ck_assert(m.replans >= 30); /* on every arrival and departure */
        for (int i = 0; i < 30; i++) {
            crux_sim_job_result_t j;
            crux_sim_result_job(r, i, &j);
            ck_assert(j.level >= 0 && j.level < cfg.levels);
            ck_assert(j.slowdown > 0.99); /* never much faster than alone */
        }
        crux_sim_result_free(r);
    }
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sim_policies");
    TCase *t = tcase_create("policies");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, none_cassini_fixed);
    tcase_add_test(t, sincronia_top_job_per_group);
    tcase_add_test(t, taccl_longer_distance_higher);
    tcase_add_test(t, crux_full_is_libcrux_sched);
    tcase_add_test(t, crux_rank_levels_follow_priorities);
    tcase_add_test(t, every_policy_runs);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

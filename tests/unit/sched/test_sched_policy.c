/* The policies crux-sched daemon and crux-sim share (plan/crux_sched_policy.c), and
 * symmetric paths: names, TACCL*'s levels by distance, levels by rank,
 * every level 0 for fair sharing, the reserve, bad arguments, and a job's
 * reverse flow on the reverse of its path in every selection mode. */
#include <stdio.h>
#include <string.h>

#include "sched/crux_sched.h"
#include "tests/unit/check_main.h"

/* Two ToRs under two aggregation switches, 2 hosts of 8 GPUs (one NIC)
 * each: h0, h1 on tor0, h2, h3 on tor1. */
static crux_sched_cluster_t *two_racks(void)
{
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p);
    p.tors = 2;
    p.aggs = 2;
    p.hosts_per_tor = 2;
    p.gpus_per_nic = 8;
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    return c;
}

static void add(crux_sched_plan_t *plan, const crux_sched_cluster_t *c, const char *id,
                const char *a, const char *b, double compute_s, double bytes)
{
    crux_sched_place_t pl[2] = { { crux_sched_cluster_find_host(c, a), 0 },
                                 { b ? crux_sched_cluster_find_host(c, b) : -1, 0 } };
    crux_sched_job_t job = { .id = id,
                             .placement = pl,
                             .nplacement = b ? 2 : 1,
                             .compute_s = compute_s,
                             .allreduce_bytes = bytes };
    char err[256] = "";
    ck_assert_msg(crux_sched_plan_add_job(plan, &job, NULL, err, sizeof(err)) == CRUX_OK, "%s",
                  err);
}

static int level_of(const crux_sched_plan_t *plan, int job)
{
    crux_sched_job_result_t r;
    ck_assert_int_eq(crux_sched_plan_job(plan, job, &r), CRUX_OK);
    return r.level;
}

static crux_sched_options_t options(int levels, int reserve)
{
    crux_sched_options_t o;
    crux_sched_options_defaults(&o);
    o.levels = levels;
    o.reserve = reserve;
    return o;
}

START_TEST(names)
{
    for (int p = 0; p < CRUX_SCHED_POLICIES; p++)
        ck_assert_int_eq(crux_sched_policy_from_name(crux_sched_policy_name(p)), p);
    ck_assert_int_eq(crux_sched_policy_from_name("taccl"), CRUX_SCHED_POLICY_TACCL);
    ck_assert_int_eq(crux_sched_policy_from_name("sincronia"), -1); /* crux-sim's own */
    ck_assert_int_eq(crux_sched_policy_from_name(""), -1);
    ck_assert_int_eq(crux_sched_policy_from_name(NULL), -1);
    ck_assert_str_eq(crux_sched_policy_name(CRUX_SCHED_POLICIES), "?");
}
END_TEST

START_TEST(taccl_by_distance)
{
    crux_sched_cluster_t *c = two_racks();
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    add(plan, c, "across", "h0", "h2", 1, 1e9); /* 4 hops */
    add(plan, c, "inside", "h1", "h3", 1, 1e9); /* across too */
    add(plan, c, "rack", "h0", "h1", 1, 1e9);   /* 2 hops, under tor0 */
    add(plan, c, "alone", "h3", NULL, 1, 1e9);  /* no network */
    crux_sched_options_t o = options(3, 0);
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_TACCL, &o), CRUX_OK);
    ck_assert_int_eq(level_of(plan, 0), 2);
    ck_assert_int_eq(level_of(plan, 1), 2);
    ck_assert_int_eq(level_of(plan, 2), 1);
    ck_assert_int_eq(level_of(plan, 3), 0);
    /* least congested in arrival order: the two jobs across on different
     * uplinks */
    crux_sched_flow_t f0, f1;
    crux_sched_plan_flow(plan, 0, 0, &f0);
    crux_sched_plan_flow(plan, 1, 0, &f1);
    ck_assert(f0.path_index != f1.path_index);
    /* one level reserved: the jobs share the two below it */
    o = options(3, 1);
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_TACCL, &o), CRUX_OK);
    ck_assert_int_eq(level_of(plan, 0), 1);
    ck_assert_int_eq(level_of(plan, 2), 0);
    ck_assert_int_eq(level_of(plan, 3), 0);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(rank_and_fair)
{
    crux_sched_cluster_t *c = two_racks();
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    /* more compute per byte, more GPU intensive: a > b > d > e */
    add(plan, c, "a", "h0", "h2", 4, 1e9);
    add(plan, c, "b", "h1", "h3", 2, 1e9);
    add(plan, c, "d", "h0", "h3", 1, 1e9);
    add(plan, c, "e", "h1", "h2", 0.5, 1e9);
    add(plan, c, "f", "h2", NULL, 1, 1e9); /* no network: the top level */
    crux_sched_options_t o = options(2, 0);
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_CRUX_PA, &o), CRUX_OK);
    /* by rank: the two of higher priority on level 1, the other two on 0 */
    int top = 0;
    for (int j = 0; j < 4; j++) {
        crux_sched_job_result_t r, q;
        crux_sched_plan_job(plan, j, &r);
        top += r.level == 1;
        for (int k = 0; k < 4; k++) {
            crux_sched_plan_job(plan, k, &q);
            ck_assert(r.priority <= q.priority || r.level >= q.level);
        }
    }
    ck_assert_int_eq(top, 2);
    ck_assert_int_eq(level_of(plan, 4), 1);
    /* fair sharing: one level, the ECMP paths select_paths gives */
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_NONE, &o), CRUX_OK);
    uint64_t none_paths[4];
    for (int j = 0; j < 4; j++) {
        crux_sched_flow_t f;
        ck_assert_int_eq(level_of(plan, j), 0);
        crux_sched_plan_flow(plan, j, 0, &f);
        none_paths[j] = f.path_index;
    }
    ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_ECMP, o.seed), CRUX_OK);
    for (int j = 0; j < 4; j++) {
        crux_sched_flow_t f;
        crux_sched_plan_flow(plan, j, 0, &f);
        ck_assert(f.path_index == none_paths[j]);
    }
    /* Crux's path selection alone: one level as well */
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_CRUX_PS, &o), CRUX_OK);
    ck_assert_int_eq(level_of(plan, 0), 0);
    /* the whole of Crux: the job of highest priority on top, levels in
     * the order of the priorities */
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_CRUX_FULL_PAPER, &o), CRUX_OK);
    int best = 0;
    for (int j = 1; j < 4; j++) {
        crux_sched_job_result_t r, b;
        crux_sched_plan_job(plan, j, &r);
        crux_sched_plan_job(plan, best, &b);
        best = r.priority > b.priority ? j : best;
    }
    ck_assert_int_eq(level_of(plan, best), 1);
    ck_assert_int_eq(crux_sched_plan_check_levels(plan), CRUX_OK);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(bad_arguments)
{
    crux_sched_cluster_t *c = two_racks();
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    add(plan, c, "a", "h0", "h2", 1, 1e9);
    crux_sched_options_t o = options(2, 0);
    ck_assert_int_eq(crux_sched_plan_policy(NULL, CRUX_SCHED_POLICY_NONE, &o), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_NONE, NULL), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICIES, &o), CRUX_ERR_INVALID);
    o = options(0, 0);
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_TACCL, &o), CRUX_ERR_INVALID);
    o = options(2, 2);
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_TACCL, &o), CRUX_ERR_INVALID);
    /* levels by rank need priorities, TACCL*'s need paths */
    ck_assert_int_eq(crux_sched_plan_rank_levels(plan, 2), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_taccl_levels(plan, 2), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_ECMP, 1), CRUX_OK);
    ck_assert_int_eq(crux_sched_plan_taccl_levels(plan, 0), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_taccl_levels(plan, CRUX_SCHED_MAX_LEVELS + 1),
                     CRUX_ERR_INVALID);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

/* Whether flow 1 of job j runs on the reverse of flow 0's path. */
static int mirrored(const crux_sched_plan_t *plan, int j)
{
    crux_sched_flow_t f0, f1;
    crux_sched_plan_flow(plan, j, 0, &f0);
    crux_sched_plan_flow(plan, j, 1, &f1);
    ck_assert(f0.src_host == f1.dst_host && f0.dst_host == f1.src_host);
    if (f0.nlinks != f1.nlinks)
        return 0;
    for (int h = 0; h < f0.nlinks; h++)
        if (f1.links[h] != (f0.links[f0.nlinks - 1 - h] ^ 1))
            return 0;
    return 1;
}

START_TEST(symmetric_paths)
{
    crux_sched_cluster_t *c = two_racks();
    ck_assert_int_eq(crux_sched_cluster_symmetric(c), 0);
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    char id[16];
    for (int j = 0; j < 16; j++) {
        snprintf(id, sizeof(id), "job%d", j);
        add(plan, c, id, j % 2 ? "h1" : "h0", j % 2 ? "h3" : "h2", 1 + j, 1e9);
    }
    /* ECMP hashes each flow alone: some jobs' two directions part */
    ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_ECMP, 1), CRUX_OK);
    int parted = 0;
    for (int j = 0; j < 16; j++)
        parted += !mirrored(plan, j);
    ck_assert(parted > 0);
    crux_sched_cluster_set_symmetric(c, 1);
    ck_assert_int_eq(crux_sched_cluster_symmetric(c), 1);
    const crux_sched_path_mode_t modes[] = { CRUX_SCHED_PATHS_ECMP, CRUX_SCHED_PATHS_RANDOM,
                                             CRUX_SCHED_PATHS_CRUX };
    for (int m = 0; m < 3; m++) {
        ck_assert_int_eq(crux_sched_plan_select_paths(plan, modes[m], 7), CRUX_OK);
        for (int j = 0; j < 16; j++)
            ck_assert_msg(mirrored(plan, j), "mode %d, job %d", m, j);
    }
    /* and with the policies: Crux's paths still spread the jobs */
    crux_sched_options_t o = options(2, 0);
    ck_assert_int_eq(crux_sched_plan_policy(plan, CRUX_SCHED_POLICY_CRUX_FULL, &o), CRUX_OK);
    int on[2] = { 0, 0 };
    for (int j = 0; j < 16; j++) {
        crux_sched_flow_t f;
        ck_assert(mirrored(plan, j));
        crux_sched_plan_flow(plan, j, 0, &f);
        on[f.path_index]++;
    }
    ck_assert(on[0] > 0 && on[1] > 0);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sched_policy");
    TCase *t = tcase_create("policy");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, names);
    tcase_add_test(t, taccl_by_distance);
    tcase_add_test(t, rank_and_fair);
    tcase_add_test(t, bad_arguments);
    tcase_add_test(t, symmetric_paths);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

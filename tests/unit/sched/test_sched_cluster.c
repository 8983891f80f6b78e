/* The cluster model: builders (Lingjun, two-layer Clos, double-sided),
 * ECMP candidate paths, and path selection against random choices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/crux_sched.h"
#include "tests/unit/check_main.h"

#define LINGJUN CRUX_TEST_DATA "/traces/lingjun-2023-topo.csv"

static int count_layer(const crux_sched_cluster_t *c, int layer)
{
    int n = 0;
    for (int s = 0; s < crux_sched_cluster_switches(c); s++) {
        crux_sched_switch_info_t i;
        crux_sched_switch_info(c, s, &i);
        n += i.layer == layer;
    }
    return n;
}

/* The switch NIC 0 of host h is cabled to (its first port). */
static int tor_of(const crux_sched_cluster_t *c, int h)
{
    for (int l = 0; l < crux_sched_cluster_links(c); l++) {
        crux_sched_link_info_t i;
        crux_sched_link_info(c, l, &i);
        if (i.src.host == h && i.src.nic == 0)
            return i.dst.sw;
    }
    return -1;
}

/* The aggregation switch above ToR t (Lingjun: one PSW per ToR). */
static int agg_of(const crux_sched_cluster_t *c, int t)
{
    for (int l = 0; l < crux_sched_cluster_links(c); l++) {
        crux_sched_link_info_t i;
        crux_sched_link_info(c, l, &i);
        if (i.src.host < 0 && i.src.sw == t && i.dst.host < 0)
            return i.dst.sw;
    }
    return -1;
}

/* Every index of a path set expands to a connected path from the source
 * NIC to the destination NIC, and indices name distinct paths. */
static void check_paths(const crux_sched_cluster_t *c, int a, int na, int b, int nb, uint64_t count)
{
    int links[3][32], len[3];
    uint64_t idx[3] = { 0, count / 2, count - 1 };
    for (int k = 0; k < 3; k++) {
        len[k] = crux_sched_path_links(c, a, na, b, nb, idx[k], links[k], 32);
        ck_assert(len[k] >= 2);
        crux_sched_link_info_t first, last;
        crux_sched_link_info(c, links[k][0], &first);
        crux_sched_link_info(c, links[k][len[k] - 1], &last);
        ck_assert(first.src.host == a && first.src.nic == na);
        ck_assert(last.dst.host == b && last.dst.nic == nb);
        for (int h = 1; h < len[k]; h++) {
            crux_sched_link_info_t x, y;
            crux_sched_link_info(c, links[k][h - 1], &x);
            crux_sched_link_info(c, links[k][h], &y);
            ck_assert(x.dst.host < 0 && y.src.host < 0 && x.dst.sw == y.src.sw);
        }
    }
    if (count > 1)
        ck_assert(memcmp(links[0], links[2], sizeof(int) * (size_t)len[0]) != 0);
    ck_assert_int_eq(crux_sched_path_links(c, a, na, b, nb, count, links[0], 32), -1);
}

START_TEST(lingjun_builder)
{
    crux_sched_lingjun_t p;
    crux_sched_lingjun_defaults(&p);
    crux_sched_cluster_t *c = NULL;
    char err[512];
    ck_assert_msg(crux_sched_build_lingjun(LINGJUN, &p, &c, err, sizeof(err)) == CRUX_OK, "%s",
                  err);
    ck_assert_int_eq(crux_sched_cluster_hosts(c), 847);
    ck_assert_int_eq(count_layer(c, 0), 119);
    ck_assert_int_eq(count_layer(c, 1), 3);
    ck_assert_int_eq(count_layer(c, 2), 1);
    /* 4 NICs x 2 directions per host, 8 x 2 per ToR, 32 x 2 per PSW */
    ck_assert_int_eq(crux_sched_cluster_links(c), 847 * 8 + 119 * 16 + 3 * 64);
    crux_sched_host_info_t hi;
    crux_sched_host_info(c, 0, &hi);
    ck_assert_int_eq(hi.gpus, 8);
    ck_assert_int_eq(hi.nics, 4);
    /* find host pairs: same ToR, same PSW, different PSW */
    int t0 = tor_of(c, 0), same_tor = -1, same_psw = -1, other = -1;
    for (int h = 1; h < 847; h++) {
        int t = tor_of(c, h);
        if (t == t0 && same_tor < 0)
            same_tor = h;
        else if (t != t0 && agg_of(c, t) == agg_of(c, t0) && same_psw < 0)
            same_psw = h;
        else if (agg_of(c, t) != agg_of(c, t0) && other < 0)
            other = h;
    }
    ck_assert(same_tor > 0 && same_psw > 0 && other > 0);
    ck_assert_uint_eq(crux_sched_path_count(c, 0, 1, same_tor, 1), 1);
    ck_assert_uint_eq(crux_sched_path_count(c, 0, 1, same_psw, 1), 8 * 8);
    ck_assert_uint_eq(crux_sched_path_count(c, 0, 1, other, 3), 8 * 32 * 32 * 8);
    check_paths(c, 0, 1, same_tor, 1, 1);
    check_paths(c, 0, 1, same_psw, 1, 64);
    check_paths(c, 0, 1, other, 3, 65536);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(lingjun_bad_csv)
{
    char path[] = "/tmp/crux-topo-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "ip,DSW,PSW,ASW\nh1,G6,P1,S1\nh2,G6,P1\n";
    ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    crux_sched_lingjun_t p;
    crux_sched_lingjun_defaults(&p);
    crux_sched_cluster_t *c = NULL;
    char err[512];
    ck_assert_int_eq(crux_sched_build_lingjun(path, &p, &c, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, ":3:") != NULL, "%s", err);
    unlink(path);
    ck_assert_int_eq(crux_sched_build_lingjun("/nonexistent/topo.csv", &p, &c, err, sizeof(err)),
                     CRUX_ERR_NOT_FOUND);
}
END_TEST

START_TEST(clos2_builder)
{
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p);
    p.links_per_agg = 2;
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    ck_assert_int_eq(crux_sched_cluster_hosts(c), p.tors * p.hosts_per_tor);
    ck_assert_int_eq(count_layer(c, 0), p.tors);
    ck_assert_int_eq(count_layer(c, 1), p.aggs);
    /* h0 under tor0, h4 under tor1: up to one of 2 aggs by 2 cables, down by 2 */
    int h4 = crux_sched_cluster_find_host(c, "h4");
    ck_assert_uint_eq(crux_sched_path_count(c, 0, 0, h4, 2), 2 * 2 * 2);
    check_paths(c, 0, 0, h4, 2, 8);
    ck_assert_uint_eq(crux_sched_path_count(c, 0, 0, 1, 0), 1);
    ck_assert_uint_eq(crux_sched_path_count(c, 0, 0, 0, 0), 0); /* a NIC to itself */
    crux_sched_cluster_free(c);
    p.tors = 0;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_ERR_INVALID);
}
END_TEST

/* Other names of hosts: aliases, and names with a domain */
START_TEST(host_aliases)
{
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p);
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    int h3 = crux_sched_cluster_find_host(c, "h3");
    ck_assert_int_ge(h3, 0);
    ck_assert_int_eq(crux_sched_cluster_add_alias(c, "gpu004", h3), CRUX_OK);
    ck_assert_int_eq(crux_sched_cluster_find_host(c, "gpu004"), h3);
    ck_assert_int_eq(crux_sched_cluster_find_host(c, "gpu004.cluster.example"), h3);
    ck_assert_int_eq(crux_sched_cluster_find_host(c, "h3.cluster.example"), h3);
    ck_assert_int_eq(crux_sched_cluster_find_host(c, "gpu005"), -1);
    ck_assert_int_eq(crux_sched_cluster_find_host(c, ".h3"), -1);
    /* refused: a host's name, a taken alias, empty, no such host */
    ck_assert_int_eq(crux_sched_cluster_add_alias(c, "h1", h3), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_cluster_add_alias(c, "gpu004", 0), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_cluster_add_alias(c, "", 0), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_cluster_add_alias(c, "x", crux_sched_cluster_hosts(c)),
                     CRUX_ERR_INVALID);
    /* many: the table grows */
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "node%d", i);
        ck_assert_int_eq(crux_sched_cluster_add_alias(c, name, i % crux_sched_cluster_hosts(c)),
                         CRUX_OK);
    }
    ck_assert_int_eq(crux_sched_cluster_find_host(c, "node999"), 999 % crux_sched_cluster_hosts(c));
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(double_sided_builder)
{
    crux_sched_double_sided_t p;
    crux_sched_double_sided_defaults(&p);
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_double_sided(&p, &c), CRUX_OK);
    ck_assert_int_eq(crux_sched_cluster_hosts(c), 264);
    ck_assert_int_eq(count_layer(c, 0), 6);
    ck_assert_int_eq(count_layer(c, 1), 12);
    ck_assert_int_eq(count_layer(c, 2), 32);
    /* every host has 8 links up: 4 NICs x 2 ports, on two ToRs */
    int up = 0, tors[2] = { -1, -1 };
    for (int l = 0; l < crux_sched_cluster_links(c); l++) {
        crux_sched_link_info_t i;
        crux_sched_link_info(c, l, &i);
        if (i.src.host == 0) {
            up++;
            if (tors[0] < 0 || tors[0] == i.dst.sw)
                tors[0] = i.dst.sw;
            else
                tors[1] = i.dst.sw;
        }
    }
    ck_assert_int_eq(up, 8);
    ck_assert(tors[1] >= 0 && tors[1] != tors[0]);
    /* same pod: through either ToR */
    ck_assert_uint_eq(crux_sched_path_count(c, 0, 0, 1, 0), 2);
    check_paths(c, 0, 0, 1, 0, 2);
    /* other pod: 2 ports x 4 aggs x 8 cables x 8 cores of the plane x
     * (2 ToRs x 8 cables) down */
    int far = crux_sched_cluster_find_host(c, "h100");
    ck_assert_uint_eq(crux_sched_path_count(c, 0, 0, far, 0), 2 * 4 * 8 * 8 * 2 * 8);
    check_paths(c, 0, 0, far, 0, 8192);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(seal_checks)
{
    crux_sched_cluster_t *c = crux_sched_cluster_new();
    int h, s1, s2;
    char err[256];
    ck_assert_int_eq(crux_sched_cluster_add_host(c, "a", 8, 4, &h), CRUX_OK);
    ck_assert_int_eq(crux_sched_cluster_add_host(c, "a", 8, 4, NULL), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_cluster_add_host(c, "bad name", 8, 4, NULL), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_cluster_add_host(c, "b", 8, 3, NULL), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_cluster_add_switch(c, "t1", 0, &s1), CRUX_OK);
    ck_assert_int_eq(crux_sched_cluster_add_switch(c, "t2", 0, &s2), CRUX_OK);
    for (int n = 0; n < 3; n++)
        ck_assert_int_eq(crux_sched_cluster_link_nic(c, h, n, s1, 1e9), CRUX_OK);
    ck_assert_int_eq(crux_sched_cluster_seal(c, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "NIC 3") != NULL, "%s", err);
    crux_sched_cluster_free(c);
    /* two islands: t1 and t2 not connected */
    c = crux_sched_cluster_new();
    crux_sched_cluster_add_switch(c, "t1", 0, &s1);
    crux_sched_cluster_add_switch(c, "t2", 0, &s2);
    crux_sched_cluster_add_host(c, "a", 2, 1, &h);
    crux_sched_cluster_link_nic(c, h, 0, s1, 1e9);
    crux_sched_cluster_add_host(c, "b", 2, 1, &h);
    crux_sched_cluster_link_nic(c, h, 0, s2, 1e9);
    ck_assert_int_eq(crux_sched_cluster_seal(c, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "cannot reach") != NULL, "%s", err);
    crux_sched_cluster_free(c);
}
END_TEST

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t xorshift(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Five jobs of 2-4 whole hosts on a small two-layer Clos, as the paper's
 * validation cases (2-4 ToRs, 2 aggregation switches, <= 20 hosts). */
static crux_sched_plan_t *random_case(crux_sched_cluster_t **cp)
{
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p);
    p.tors = 2 + (int)(xorshift() % 3);
    p.hosts_per_tor = 5;
    crux_sched_build_clos2(&p, cp);
    crux_sched_plan_t *plan = crux_sched_plan_new(*cp);
    int nh = p.tors * p.hosts_per_tor;
    for (int j = 0; j < 5; j++) {
        crux_sched_place_t pl[4];
        int n = 2 + (int)(xorshift() % 3);
        for (int k = 0; k < n; k++) {
            int h, dup;
            do {
                h = (int)(xorshift() % (uint64_t)nh);
                dup = 0;
                for (int q = 0; q < k; q++)
                    dup |= pl[q].host == h;
            } while (dup);
            pl[k] = (crux_sched_place_t){ h, 0 };
        }
        char id[16];
        snprintf(id, sizeof(id), "j%d", j);
        crux_sched_job_t job = { .id = id,
                                 .placement = pl,
                                 .nplacement = n,
                                 .compute_s = 0.05 + (double)(xorshift() % 100) / 100,
                                 .overlap = 0,
                                 .allreduce_bytes = 1e8 * (1 + xorshift() % 20) };
        ck_assert_int_eq(crux_sched_plan_add_job(plan, &job, NULL, NULL, 0), CRUX_OK);
    }
    return plan;
}

START_TEST(path_selection_not_worse_than_random)
{
    for (int trial = 0; trial < 200; trial++) {
        crux_sched_cluster_t *c;
        crux_sched_plan_t *plan = random_case(&c);
        ck_assert_int_eq(crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_CRUX, 1), CRUX_OK);
        double crux = crux_sched_plan_path_cost(plan), sum = 0;
        int runs = 20;
        for (int r = 0; r < runs; r++) {
            ck_assert_int_eq(
                crux_sched_plan_select_paths(plan, CRUX_SCHED_PATHS_RANDOM, (uint64_t)r + 1),
                CRUX_OK);
            sum += crux_sched_plan_path_cost(plan);
        }
        ck_assert_msg(crux <= sum / runs * (1 + 1e-12), "trial %d: crux %g, random mean %g", trial,
                      crux, sum / runs);
        crux_sched_plan_free(plan);
        crux_sched_cluster_free(c);
    }
}
END_TEST

START_TEST(selected_paths_are_candidates)
{
    crux_sched_cluster_t *c;
    crux_sched_plan_t *plan = random_case(&c);
    ck_assert_int_eq(crux_sched_plan_run(plan, NULL), CRUX_OK);
    for (int j = 0; j < crux_sched_plan_jobs(plan); j++)
        for (int f = 0; f < crux_sched_plan_flows(plan, j); f++) {
            crux_sched_flow_t fl;
            int links[32];
            ck_assert_int_eq(crux_sched_plan_flow(plan, j, f, &fl), CRUX_OK);
            ck_assert(fl.path_index < fl.path_count);
            int n = crux_sched_path_links(c, fl.src_host, fl.src_nic, fl.dst_host, fl.dst_nic,
                                          fl.path_index, links, 32);
            ck_assert_int_eq(n, fl.nlinks);
            ck_assert(memcmp(links, fl.links, sizeof(int) * (size_t)n) == 0);
        }
    /* M_{j,e}: ring Allreduce over whole hosts: each NIC uplink carries
     * 2(G-1)/G * B / 4 of the job's bytes */
    crux_sched_job_result_t r;
    crux_sched_plan_job(plan, 0, &r);
    const int *links;
    const double *bytes;
    int n = crux_sched_plan_job_links(plan, 0, &links, &bytes);
    ck_assert(n > 0);
    double per_nic = r.bytes / (r.hosts * 4);
    for (int k = 0; k < n; k++) {
        crux_sched_link_info_t li;
        crux_sched_link_info(c, links[k], &li);
        if (li.src.host >= 0)
            ck_assert_double_eq_tol(bytes[k], per_nic, per_nic * 1e-9);
    }
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

/* The uplink (ToR -> aggregation) that flow 0 of a job takes. */
static int flow0_uplink(const crux_sched_plan_t *plan, const crux_sched_cluster_t *c, int job)
{
    crux_sched_flow_t fl;
    ck_assert_int_eq(crux_sched_plan_flow(plan, job, 0, &fl), CRUX_OK);
    for (int k = 0; k < fl.nlinks; k++) {
        crux_sched_link_info_t li;
        crux_sched_link_info(c, fl.links[k], &li);
        if (li.src.host < 0 && li.dst.host < 0)
            return fl.links[k];
    }
    return -1;
}

START_TEST(ordered_selection)
{
    /* two ToRs under two aggregation switches; jobs a and b each from a
     * host of tor0 to a host of tor1 (one NIC each): the first in the
     * order takes the least congested uplink, the second the other one */
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p);
    p.tors = 2;
    p.hosts_per_tor = 2;
    p.gpus_per_nic = 8;
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    const char *ends[2][2] = { { "h0", "h2" }, { "h1", "h3" } };
    for (int j = 0; j < 2; j++) {
        crux_sched_place_t pl[2] = { { crux_sched_cluster_find_host(c, ends[j][0]), 0 },
                                     { crux_sched_cluster_find_host(c, ends[j][1]), 0 } };
        crux_sched_job_t job = { .id = j ? "b" : "a",
                                 .placement = pl,
                                 .nplacement = 2,
                                 .compute_s = 1,
                                 .allreduce_bytes = 1e9 };
        ck_assert_int_eq(crux_sched_plan_add_job(plan, &job, NULL, NULL, 0), CRUX_OK);
    }
    int ab[2] = { 0, 1 }, ba[2] = { 1, 0 };
    ck_assert_int_eq(crux_sched_plan_select_paths_ordered(plan, ab, 2), CRUX_OK);
    int a_first = flow0_uplink(plan, c, 0), b_second = flow0_uplink(plan, c, 1);
    ck_assert(a_first >= 0 && b_second >= 0 && a_first != b_second);
    ck_assert_int_eq(crux_sched_plan_select_paths_ordered(plan, ba, 2), CRUX_OK);
    ck_assert_int_eq(flow0_uplink(plan, c, 1), a_first); /* b now first: b gets it */
    ck_assert_int_eq(flow0_uplink(plan, c, 0), b_second);
    /* not a permutation of the jobs: refused, the last selection stays */
    int dup[2] = { 1, 1 }, out[2] = { 0, 2 };
    ck_assert_int_eq(crux_sched_plan_select_paths_ordered(plan, dup, 2), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_select_paths_ordered(plan, out, 2), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_sched_plan_select_paths_ordered(plan, ab, 1), CRUX_ERR_INVALID);
    ck_assert_int_eq(flow0_uplink(plan, c, 1), a_first);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sched_cluster");
    TCase *t = tcase_create("cluster");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, lingjun_builder);
    tcase_add_test(t, lingjun_bad_csv);
    tcase_add_test(t, clos2_builder);
    tcase_add_test(t, host_aliases);
    tcase_add_test(t, double_sided_builder);
    tcase_add_test(t, seal_checks);
    tcase_add_test(t, path_selection_not_worse_than_random);
    tcase_add_test(t, selected_paths_are_candidates);
    tcase_add_test(t, ordered_selection);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

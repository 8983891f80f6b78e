/* Priority compression (Algorithm 1) against brute-force enumeration. */
#include <stdlib.h>

#include "sched/crux_sched.h"
#include "tests/unit/check_main.h"

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t xorshift(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A random contention DAG: nodes 0..n-1 in decreasing priority, an edge
 * i -> j (i < j) with probability p, weight the intensity of i. */
static int random_dag(int n, double p, crux_sched_edge_t *e)
{
    double w[64];
    for (int i = 0; i < n; i++)
        w[i] = 1 + (double)(xorshift() % 1000);
    int m = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if ((double)(xorshift() % 1000) < p * 1000)
                e[m++] = (crux_sched_edge_t){ i, j, w[i] };
    return m;
}

/* Cut weight of an assignment, or -1 when an edge points upward. */
static double cut_of(const crux_sched_edge_t *e, int m, const int *level)
{
    double cut = 0;
    for (int k = 0; k < m; k++) {
        if (level[e[k].from] < level[e[k].to])
            return -1;
        if (level[e[k].from] > level[e[k].to])
            cut += e[k].weight;
    }
    return cut;
}

static double brute_force(int n, int K, const crux_sched_edge_t *e, int m)
{
    int level[8] = { 0 };
    double best = 0;
    for (;;) {
        double c = cut_of(e, m, level);
        if (c > best)
            best = c;
        int i = 0;
        while (i < n && ++level[i] == K)
            level[i++] = 0;
        if (i == n)
            return best;
    }
}

START_TEST(against_brute_force)
{
    crux_sched_edge_t e[64];
    int cases = 0;
    double ratio_sum = 0;
    for (int trial = 0; trial < 600; trial++) {
        int n = 2 + (int)(xorshift() % 7); /* 2..8 jobs */
        int K = 2 + (int)(xorshift() % 2); /* 2 or 3 levels */
        double p = 0.2 + 0.6 * (double)(xorshift() % 100) / 100;
        int m = random_dag(n, p, e), level[8];
        double cut;
        ck_assert_int_eq(crux_sched_compress_dag(n, e, m, K, 10, (uint64_t)trial, level, &cut),
                         CRUX_OK);
        double mine = cut_of(e, m, level);
        ck_assert_msg(mine >= 0, "trial %d: an edge points to a higher level", trial);
        for (int i = 0; i < n; i++)
            ck_assert(level[i] >= 0 && level[i] < K);
        ck_assert_double_eq_tol(mine, cut, 1e-6); /* the reported cut is the real one */
        double opt = brute_force(n, K, e, m);
        ck_assert(mine <= opt + 1e-9);
        if (opt > 0) {
            ratio_sum += mine / opt;
            cases++;
        }
    }
    double mean = ratio_sum / cases;
    ck_assert_msg(mean >= 0.97, "mean %.4f of the optimum over %d cases", mean, cases);
}
END_TEST

START_TEST(large_dag_valid_and_reproducible)
{
    int n = 3000, m = 0;
    crux_sched_edge_t *e = malloc(sizeof(*e) * 60000);
    for (int k = 0; k < 60000; k++) {
        int a = (int)(xorshift() % n), b = (int)(xorshift() % n);
        if (a == b)
            continue;
        if (a > b) {
            int t = a;
            a = b;
            b = t;
        }
        e[m++] = (crux_sched_edge_t){ a, b, 1 + (double)(a % 17) };
    }
    int *l1 = malloc(sizeof(int) * n), *l2 = malloc(sizeof(int) * n);
    double c1, c2, c3;
    ck_assert_int_eq(crux_sched_compress_dag(n, e, m, 8, 10, 42, l1, &c1), CRUX_OK);
    ck_assert_int_eq(crux_sched_compress_dag(n, e, m, 8, 10, 42, l2, &c2), CRUX_OK);
    ck_assert_double_eq_tol(cut_of(e, m, l1), c1, 1e-6 * c1);
    ck_assert_double_eq(c1, c2);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(l1[i], l2[i]);
    /* more orders never do worse than the first of them */
    ck_assert_int_eq(crux_sched_compress_dag(n, e, m, 8, 1, 42, l2, &c3), CRUX_OK);
    ck_assert(c1 >= c3);
    free(e);
    free(l1);
    free(l2);
}
END_TEST

START_TEST(edge_cases)
{
    int level[4];
    double cut;
    crux_sched_edge_t cyc[2] = { { 0, 1, 1 }, { 1, 0, 1 } };
    ck_assert_int_eq(crux_sched_compress_dag(2, cyc, 2, 2, 10, 1, level, &cut), CRUX_ERR_INVALID);
    crux_sched_edge_t self[1] = { { 1, 1, 1 } };
    ck_assert_int_eq(crux_sched_compress_dag(2, self, 1, 2, 10, 1, level, NULL), CRUX_ERR_INVALID);
    /* no edges: everyone at the top level */
    ck_assert_int_eq(crux_sched_compress_dag(3, NULL, 0, 4, 10, 1, level, &cut), CRUX_OK);
    ck_assert_int_eq(level[0], 3);
    ck_assert_int_eq(level[2], 3);
    ck_assert_double_eq(cut, 0);
    /* one level: nothing can be cut */
    crux_sched_edge_t chain[2] = { { 0, 1, 5 }, { 1, 2, 3 } };
    ck_assert_int_eq(crux_sched_compress_dag(3, chain, 2, 1, 10, 1, level, &cut), CRUX_OK);
    ck_assert_double_eq(cut, 0);
    /* enough levels: a chain is cut everywhere, in order */
    ck_assert_int_eq(crux_sched_compress_dag(3, chain, 2, 3, 10, 1, level, &cut), CRUX_OK);
    ck_assert_double_eq(cut, 8);
    ck_assert(level[0] > level[1] && level[1] > level[2]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sched_compress");
    TCase *t = tcase_create("compress");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, against_brute_force);
    tcase_add_test(t, large_dag_valid_and_reproducible);
    tcase_add_test(t, edge_cases);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* The multipath planner against brute force: on random sets of two and three
 * paths (bandwidth, latency, per-chunk cost, hops, depth, chunk limits,
 * shared resources, a per-path start cost), its makespan is within 2% of
 * the best split found on a fine grid, each split costed with the best chunk
 * count; and the degenerate cases: one path, paths without bandwidth, empty
 * messages, messages smaller than a chunk. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/check_main.h"
#include "ucx_tl/crux_tl.h"
#include "ucx_tl/plan/crux_tl_simplex.h"

static uint64_t rng_state = 88172645463325252ull;

static double uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static crux_tl_path_model_t random_path(void)
{
    crux_tl_path_model_t p = {
        .bandwidth = pow(10, uniform(8.5, 10.5)),
        .latency = uniform(0, 20e-6),
        .chunk_cost = uniform(0, 5e-6),
        .hops = uniform(0, 1) < 0.6 ? 1 : 2,
        .max_depth = (unsigned)uniform(1, 9),
        .max_chunk = uniform(0, 1) < 0.5 ? 0 : (size_t)1 << (int)uniform(12, 23),
    };
    return p;
}

static void random_input(crux_tl_plan_input_t *in, unsigned npaths)
{
    memset(in, 0, sizeof(*in));
    in->npaths = npaths;
    in->granule = 1;
    in->path_cost = uniform(0, 1) < 0.5 ? 0 : uniform(0, 3e-6);
    for (unsigned i = 0; i < npaths; i++) {
        in->path[i] = random_path();
    }
    if (uniform(0, 1) < 0.4) { /* the first two paths share a resource */
        in->path[0].resources = in->path[1].resources = 1u << 3;
        in->resource_rate[3] =
            uniform(0.6, 1.2) * fmax(in->path[0].bandwidth, in->path[1].bandwidth);
    }
}

/* The best makespan over splits on a grid of 'steps' parts. */
static double brute_force(const crux_tl_plan_input_t *in, size_t bytes, unsigned steps)
{
    double best = INFINITY;
    size_t split[3] = { 0 };
    for (unsigned a = 0; a <= steps; a++) {
        unsigned b_max = in->npaths > 2 ? steps - a : 0;
        for (unsigned b = 0; b <= b_max; b++) {
            split[0] = (size_t)((double)bytes * a / steps);
            if (in->npaths == 2) {
                split[1] = bytes - split[0];
            } else {
                split[1] = (size_t)((double)bytes * b / steps);
                if (split[0] + split[1] > bytes) {
                    continue;
                }
                split[2] = bytes - split[0] - split[1];
            }
            best = fmin(best, crux_tl_plan_makespan(in, split));
        }
    }
    return best;
}

static void check_layout(const crux_tl_plan_input_t *in, const crux_tl_plan_t *plan, size_t bytes)
{
    size_t at = 0, shares[CRUX_TL_MAX_PATHS];
    unsigned used = 0;
    for (unsigned i = 0; i < in->npaths; i++) {
        const crux_tl_stripe_t *s = &plan->stripe[i];
        ck_assert_uint_eq(s->offset, at);
        at += s->bytes;
        shares[i] = s->bytes;
        if (s->bytes > 0) {
            used++;
            ck_assert_uint_gt(s->chunk, 0);
            ck_assert_uint_ge(s->depth, 1);
            ck_assert(in->path[i].max_chunk == 0 || s->chunk <= in->path[i].max_chunk);
            ck_assert(s->depth <= (in->path[i].max_depth > 0 ? in->path[i].max_depth : 1));
        }
    }
    ck_assert_uint_eq(at, bytes);
    ck_assert_uint_eq(used, plan->used);
    ck_assert_double_eq_tol(plan->makespan, crux_tl_plan_makespan(in, shares), 1e-15);
}

static void against_brute_force(unsigned npaths, unsigned cases, unsigned steps)
{
    double worst = 1.0;
    for (unsigned c = 0; c < cases; c++) {
        crux_tl_plan_input_t in;
        random_input(&in, npaths);
        size_t bytes = (size_t)pow(2, uniform(6, 27));
        crux_tl_plan_t plan;
        ck_assert_int_eq(crux_tl_plan(&in, bytes, &plan), CRUX_OK);
        check_layout(&in, &plan, bytes);
        double best = brute_force(&in, bytes, steps);
        double ratio = plan.makespan / best;
        worst = fmax(worst, ratio);
        ck_assert_msg(ratio <= 1.02, "case %u: %zu bytes, planner %.9g s, brute force %.9g s", c,
                      bytes, plan.makespan, best);
    }
    fprintf(stderr, "# %u paths, %u cases: worst planner/brute-force ratio %.4f\n", npaths, cases,
            worst);
}

START_TEST(test_two_paths_within_two_percent)
{
    against_brute_force(2, 200, 2000);
}
END_TEST

START_TEST(test_three_paths_within_two_percent)
{
    against_brute_force(3, 40, 250);
}
END_TEST

/* The model as crux_tl.h documents it, for k chunks of ceil(n / k) bytes. */
static double documented_time(const crux_tl_path_model_t *p, size_t n, size_t k)
{
    double s = p->chunk_cost + ceil((double)n / (double)k) / p->bandwidth;
    double period = fmax(s, (p->latency + p->hops * s) / p->max_depth);
    return p->latency + (double)(k - 1) * period + p->hops * s;
}

/* The path time is the minimum over every chunk count, not a local one. */
START_TEST(test_path_time_is_the_best_chunk_count)
{
    for (int c = 0; c < 300; c++) {
        crux_tl_path_model_t p = random_path();
        p.max_chunk = (size_t)uniform(16, 600);
        size_t bytes = (size_t)uniform(1, 5000), k_best;
        double t = crux_tl_path_time(&p, bytes, &k_best);
        ck_assert_double_eq_tol(t, documented_time(&p, bytes, k_best), 1e-15);
        ck_assert_uint_le((bytes + k_best - 1) / k_best, p.max_chunk);
        size_t k = (bytes + p.max_chunk - 1) / p.max_chunk;
        while (k <= bytes && t <= documented_time(&p, bytes, k) * (1 + 1e-12)) {
            k++;
        }
        ck_assert_msg(k > bytes, "%zu chunks beat the chosen %zu", k, k_best);
    }
}
END_TEST

START_TEST(test_one_path_takes_everything)
{
    crux_tl_plan_input_t in = { .npaths = 1, .granule = 64, .path_cost = 1e-6 };
    in.path[0] = (crux_tl_path_model_t){ .bandwidth = 5e9,
                                         .latency = 2e-6,
                                         .chunk_cost = 1e-6,
                                         .hops = 2,
                                         .max_depth = 4,
                                         .max_chunk = 1 << 20 };
    crux_tl_plan_t plan;
    ck_assert_int_eq(crux_tl_plan(&in, 10000001, &plan), CRUX_OK);
    ck_assert_uint_eq(plan.stripe[0].bytes, 10000001);
    ck_assert_uint_eq(plan.used, 1);
    ck_assert_double_eq_tol(plan.makespan, 1e-6 + crux_tl_path_time(&in.path[0], 10000001, NULL),
                            1e-15);
    /* staged: more than one chunk so the two hops overlap */
    ck_assert_uint_gt(10000001 / plan.stripe[0].chunk, 4);
}
END_TEST

START_TEST(test_zero_bandwidth_paths_are_never_used)
{
    crux_tl_plan_input_t in = { .npaths = 3, .granule = 1 };
    in.path[0] = (crux_tl_path_model_t){ .bandwidth = 0, .hops = 1, .max_depth = 4 };
    in.path[1] =
        (crux_tl_path_model_t){ .bandwidth = 1e9, .latency = 1e-6, .hops = 1, .max_depth = 4 };
    in.path[2] = (crux_tl_path_model_t){ .bandwidth = 0, .latency = 0, .hops = 1, .max_depth = 4 };
    crux_tl_plan_t plan;
    for (size_t bytes = 1; bytes < (1u << 26); bytes *= 7) {
        ck_assert_int_eq(crux_tl_plan(&in, bytes, &plan), CRUX_OK);
        ck_assert_uint_eq(plan.stripe[0].bytes, 0);
        ck_assert_uint_eq(plan.stripe[2].bytes, 0);
        ck_assert_uint_eq(plan.stripe[1].bytes, bytes);
    }
    in.path[1].bandwidth = 0;
    ck_assert_int_eq(crux_tl_plan(&in, 100, &plan), CRUX_ERR_NO_RESOURCE);
    size_t some[3] = { 0, 5, 0 };
    ck_assert(isinf(crux_tl_plan_makespan(&in, some)));
}
END_TEST

START_TEST(test_small_messages_use_one_path)
{
    crux_tl_plan_input_t in = { .npaths = 3, .granule = 64, .path_cost = 0.5e-6 };
    for (unsigned i = 0; i < 3; i++) {
        in.path[i] = (crux_tl_path_model_t){ .bandwidth = 10e9 / (1 << i),
                                             .latency = 2e-6,
                                             .chunk_cost = 1e-6,
                                             .hops = 1,
                                             .max_depth = 8,
                                             .max_chunk = 1 << 20 };
    }
    crux_tl_plan_t plan;
    /* smaller than a chunk: one path, one chunk */
    for (size_t bytes = 1; bytes <= 4096; bytes *= 4) {
        ck_assert_int_eq(crux_tl_plan(&in, bytes, &plan), CRUX_OK);
        ck_assert_uint_eq(plan.used, 1);
        ck_assert_uint_eq(plan.stripe[0].bytes, bytes); /* the fastest */
        ck_assert_uint_ge(plan.stripe[0].chunk, bytes);
    }
    ck_assert_int_eq(crux_tl_plan(&in, 0, &plan), CRUX_OK);
    ck_assert_uint_eq(plan.used, 0);
    ck_assert_double_eq(plan.makespan, 0.0);
    /* large: all three, in proportion to bandwidth (4:2:1) */
    ck_assert_int_eq(crux_tl_plan(&in, 256u << 20, &plan), CRUX_OK);
    ck_assert_uint_eq(plan.used, 3);
    double total = 256.0 * (1 << 20);
    ck_assert_double_eq_tol(plan.stripe[0].bytes / total, 4.0 / 7, 0.01);
    ck_assert_double_eq_tol(plan.stripe[1].bytes / total, 2.0 / 7, 0.01);
    ck_assert_double_eq_tol(plan.stripe[2].bytes / total, 1.0 / 7, 0.01);
    for (unsigned i = 0; i < 3; i++) {
        ck_assert_uint_eq(plan.stripe[i].offset % 64, 0);
    }
    /* limited to one path: the fastest, alone */
    in.max_paths = 1;
    ck_assert_int_eq(crux_tl_plan(&in, 256u << 20, &plan), CRUX_OK);
    ck_assert_uint_eq(plan.used, 1);
    ck_assert_uint_eq(plan.stripe[0].bytes, 256u << 20);
}
END_TEST

/* Two fast paths that share a resource as slow as one of them are worth one
 * path, and a third independent path takes its proportional share. */
START_TEST(test_shared_resource_caps_its_paths)
{
    crux_tl_plan_input_t in = { .npaths = 3, .granule = 1 };
    for (unsigned i = 0; i < 3; i++) {
        in.path[i] = (crux_tl_path_model_t){
            .bandwidth = 4e9, .hops = 1, .max_depth = 4, .max_chunk = 1 << 20
        };
    }
    in.path[0].resources = in.path[1].resources = 1u << 0;
    in.resource_rate[0] = 4e9;
    crux_tl_plan_t plan;
    const size_t bytes = 64u << 20;
    ck_assert_int_eq(crux_tl_plan(&in, bytes, &plan), CRUX_OK);
    ck_assert_double_eq_tol((double)(plan.stripe[0].bytes + plan.stripe[1].bytes) / bytes, 0.5,
                            0.01);
    ck_assert_double_eq_tol((double)plan.stripe[2].bytes / bytes, 0.5, 0.01);
    ck_assert_double_eq_tol(plan.makespan, bytes / 2 / 4e9, 0.01 * bytes / 2 / 4e9);
}
END_TEST

START_TEST(test_packing_lp)
{
    /* max x0 + x1 + x2: x0 <= 3, x1 <= 2, x2 <= 5, x0 + x1 <= 4, x1 + x2 <= 6 */
    const double A[] = { 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1 };
    const double b[] = { 3, 2, 5, 4, 6 };
    double x[3];
    ck_assert_double_eq_tol(crux_tl_simplex_pack(5, 3, A, b, x), 9.0, 1e-12);
    ck_assert_double_eq_tol(x[0], 3.0, 1e-12);
    ck_assert_double_eq_tol(x[1], 1.0, 1e-12);
    ck_assert_double_eq_tol(x[2], 5.0, 1e-12);
}
END_TEST

START_TEST(test_too_many_paths_is_invalid)
{
    crux_tl_plan_input_t in = { .npaths = CRUX_TL_MAX_PATHS + 1 };
    crux_tl_plan_t plan;
    ck_assert_int_eq(crux_tl_plan(&in, 100, &plan), CRUX_ERR_INVALID);
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("tl_plan");
    TCase *tc = tcase_create("plan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_two_paths_within_two_percent);
    tcase_add_test(tc, test_three_paths_within_two_percent);
    tcase_add_test(tc, test_path_time_is_the_best_chunk_count);
    tcase_add_test(tc, test_one_path_takes_everything);
    tcase_add_test(tc, test_zero_bandwidth_paths_are_never_used);
    tcase_add_test(tc, test_small_messages_use_one_path);
    tcase_add_test(tc, test_shared_resource_caps_its_paths);
    tcase_add_test(tc, test_packing_lp);
    tcase_add_test(tc, test_too_many_paths_is_invalid);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(plan_suite)

/* libcrux_common's one random generator: splitmix64's published sequence
 * (so a seed means the same workload and plan everywhere), crux_hash64 as
 * its first output from that state, draws below n always in range and
 * covering every value, uniforms in [0, 1). */
#include <stdint.h>

#include "common/crux_rng.h"
#include "tests/unit/check_main.h"

START_TEST(test_the_sequence_is_splitmix64)
{
    /* the reference implementation's first outputs from seed 0 */
    crux_rng_t r;
    crux_rng_seed(&r, 0);
    ck_assert_uint_eq(crux_rng_next(&r), 0xe220a8397b1dcdafULL);
    ck_assert_uint_eq(crux_rng_next(&r), 0x6e789e6aa1b965f4ULL);
    ck_assert_uint_eq(crux_rng_next(&r), 0x06c45d188009454fULL);
    ck_assert_uint_eq(crux_hash64(0), 0xe220a8397b1dcdafULL);
    crux_rng_seed(&r, 12345);
    uint64_t first = crux_rng_next(&r);
    ck_assert_uint_eq(crux_hash64(12345), first);
}
END_TEST

START_TEST(test_below_stays_in_range_and_covers_it)
{
    crux_rng_t r;
    crux_rng_seed(&r, 7);
    const uint64_t ns[] = { 1, 2, 3, 7, 10, 1000 };
    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
        /* one assertion after the loop: each Check assertion that passes
         * still writes to the runner's pipe, 200,000 of them outlast the
         * test's timeout on a loaded machine */
        int seen[1000] = { 0 };
        uint64_t outside = 0;
        for (int i = 0; i < 200000; i++) {
            uint64_t x = crux_rng_below(&r, ns[k]);
            if (x < ns[k]) {
                seen[x] = 1;
            } else {
                outside++;
            }
        }
        ck_assert_msg(outside == 0, "%llu draws outside [0, %llu)", (unsigned long long)outside,
                      (unsigned long long)ns[k]);
        for (uint64_t v = 0; v < ns[k]; v++) {
            ck_assert_msg(seen[v], "value %llu of [0, %llu) never drawn", (unsigned long long)v,
                          (unsigned long long)ns[k]);
        }
    }
    /* near 2^64 the rejection path is taken and the result still fits */
    uint64_t big = UINT64_MAX / 3 * 2, outside = 0;
    for (int i = 0; i < 1000; i++) {
        outside += crux_rng_below(&r, big) >= big;
    }
    ck_assert_uint_eq(outside, 0);
}
END_TEST

START_TEST(test_uniform_is_in_the_unit_interval)
{
    crux_rng_t r;
    crux_rng_seed(&r, 99);
    double sum = 0;
    int outside = 0;
    for (int i = 0; i < 100000; i++) {
        double u = crux_rng_uniform(&r);
        outside += !(u >= 0.0 && u < 1.0);
        sum += u;
    }
    ck_assert_int_eq(outside, 0);
    ck_assert(sum / 100000 > 0.49 && sum / 100000 < 0.51);
}
END_TEST

static Suite *rng_suite(void)
{
    Suite *s = suite_create("common_rng");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_the_sequence_is_splitmix64);
    tcase_add_test(tc, test_below_stays_in_range_and_covers_it);
    tcase_add_test(tc, test_uniform_is_in_the_unit_interval);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(rng_suite)

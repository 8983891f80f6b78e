/* libcrux_common's copies for peers and its cache-distance verdicts:
 * streamed copies land exactly (any alignment, any length, nothing past the
 * end); a copy streams only for a far peer and from 4 KiB; a window of
 * samples decides by its median against the threshold, only once the
 * counter's rate is known, and anew for each window; about one turn (a
 * wait, a look) in CRUX_REACH_EVERY is drawn for timing. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common/crux_copy.h"
#include "common/crux_reach.h"
#include "tests/unit/check_main.h"

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 131 + 7 + (i >> 8));
}

START_TEST(test_streamed_copies_land_exactly)
{
    static unsigned char src[70000], dst[70000 + 128];
    for (size_t i = 0; i < sizeof(src); i++) {
        src[i] = pattern(i);
    }
    const size_t lengths[] = { 0, 1, 15, 16, 63, 64, 65, 4095, 4096, 4097, 65536 + 3 };
    for (size_t d = 0; d < 20; d++) {
        for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
            for (int far = 0; far < 2; far++) {
                size_t n = lengths[l], from = (d * 7) % 64;
                memset(dst, 0xee, n + d + 1);
                crux_copy_to(dst + d, src + from, n, far);
                crux_copy_fence();
                ck_assert_msg(memcmp(dst + d, src + from, n) == 0, "offset %zu length %zu far %d",
                              d, n, far);
                ck_assert_msg(dst[d + n] == 0xee && (d == 0 || dst[d - 1] == 0xee),
                              "offset %zu length %zu: written outside", d, n);
            }
        }
    }
}
END_TEST

START_TEST(test_only_far_peers_and_not_tiny_writes_stream)
{
    ck_assert(!crux_copy_streams_to(0, 1u << 20));
    ck_assert(!crux_copy_streams_to(1, 4095));
    ck_assert(crux_copy_streams_to(1, 4096));
    ck_assert(crux_copy_streams_to(1, 1u << 30));
}
END_TEST

static void window(crux_reach_t *r, unsigned slow, uint64_t slow_ticks, double far_latency)
{
    for (unsigned i = 0; i < CRUX_REACH_SAMPLES; i++) {
        crux_reach_sample(r, i < slow ? slow_ticks : 1, far_latency);
    }
}

START_TEST(test_a_window_decides_by_its_median)
{
    crux_reach_t r = { 0 };
    const uint64_t slow = 1000000000; /* a billion ticks: far past any threshold */
    window(&r, CRUX_REACH_SAMPLES, slow, 0);
    ck_assert_int_eq(r.far, 0); /* the first window came too soon to know the rate */
    usleep(2000);
    window(&r, CRUX_REACH_SAMPLES / 2 + 1, slow, 0);
    ck_assert_int_eq(r.far, 1); /* most samples slow: the median is */
    window(&r, CRUX_REACH_SAMPLES / 2, slow, 0);
    ck_assert_int_eq(r.far, 0); /* most fast: near again, the window decides anew */
    crux_reach_sample(&r, slow, 0);
    ck_assert_int_eq(r.far, 0); /* a sample alone decides nothing */
    r = (crux_reach_t){ 0 };
    window(&r, 0, 0, 1e-15); /* a threshold below one tick: every sample is far */
    ck_assert_int_eq(r.far, 1);
    window(&r, CRUX_REACH_SAMPLES, slow, 1e6); /* one of a million seconds: none is */
    ck_assert_int_eq(r.far, 0);
}
END_TEST

START_TEST(test_about_one_turn_in_every_is_timed)
{
    crux_reach_t r = { 0 };
    unsigned timed = 0, draws = 80000, run = 0, longest = 0;
    for (unsigned i = 0; i < draws; i++) {
        int t = crux_reach_turn(&r);
        timed += (unsigned)t;
        run = t ? 0 : run + 1;
        longest = run > longest ? run : longest;
    }
    double share = (double)timed / draws;
    ck_assert_msg(share > 0.8 / CRUX_REACH_EVERY && share < 1.2 / CRUX_REACH_EVERY, "share %f",
                  share);
    ck_assert_msg(longest < 30 * CRUX_REACH_EVERY, "%u turns in a row untimed", longest);
}
END_TEST

START_TEST(test_a_timed_load_reads_the_word)
{
    uint64_t word = 42, ticks = 0;
    ck_assert_uint_eq(crux_reach_load(&word, &ticks), 42);
    ck_assert_uint_gt(ticks, 0);
}
END_TEST

static Suite *copy_reach_suite(void)
{
    Suite *s = suite_create("common_copy_reach");
    TCase *tc = tcase_create("common");
    tcase_add_test(tc, test_streamed_copies_land_exactly);
    tcase_add_test(tc, test_only_far_peers_and_not_tiny_writes_stream);
    tcase_add_test(tc, test_a_window_decides_by_its_median);
    tcase_add_test(tc, test_about_one_turn_in_every_is_timed);
    tcase_add_test(tc, test_a_timed_load_reads_the_word);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(copy_reach_suite)

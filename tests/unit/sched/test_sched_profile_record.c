/* libcrux_prio's recorder of a job's collective calls (crux_recorder_t):
 * the iteration period found in the sequence of sizes (and not found
 * where there is none), through the ring's wrap; the windows' figures
 * (calls, bytes, time inside and between, the period's time) from calls
 * at known times, a window ending at the interval, and the next one
 * starting where the last ended. */
#include <math.h>
#include <stdlib.h>

#include "sched/crux_profile.h"
#include "tests/unit/check_main.h"

static crux_recorder_t rec;

/* 'n' calls of the sizes in 'pattern' (of 'len') over and over, one every
 * 'step' seconds from 't', each 'inside' long; returns the next start. */
static double feed(const size_t *pattern, int len, int n, double t, double step, double inside,
                   double interval, int *due)
{
    for (int i = 0; i < n; i++, t += step) {
        int d = crux_recorder_add(&rec, pattern[i % len], t, t + inside, interval);
        if (due != NULL) {
            *due += d;
        }
    }
    return t;
}

START_TEST(period)
{
    static const size_t three[] = { 100, 2000, 30 };
    static const size_t one[] = { 64 };
    static const size_t five[] = { 1, 2, 3, 4, 5 };
    crux_recorder_init(&rec);
    ck_assert_uint_eq(crux_recorder_period_calls(&rec), 0); /* nothing yet */
    feed(three, 3, 8, 0, 1, 0.1, 1e9, NULL);                /* under three repeats */
    ck_assert_uint_eq(crux_recorder_period_calls(&rec), 0);
    crux_recorder_init(&rec);
    feed(three, 3, 9, 0, 1, 0.1, 1e9, NULL); /* three repeats */
    ck_assert_uint_eq(crux_recorder_period_calls(&rec), 3);
    crux_recorder_init(&rec);
    feed(one, 1, 3, 0, 1, 0.1, 1e9, NULL);
    ck_assert_uint_eq(crux_recorder_period_calls(&rec), 1);
    /* past the ring's end, the last calls decide */
    crux_recorder_init(&rec);
    feed(five, 5, CRUX_RECORDER_HISTORY * 3 + 2, 0, 1, 0.1, 1e9, NULL);
    ck_assert_uint_eq(crux_recorder_period_calls(&rec), 5);
    /* no pattern: none */
    crux_recorder_init(&rec);
    srand(44);
    for (int i = 0; i < 600; i++) {
        crux_recorder_add(&rec, (size_t)rand(), i, i + 0.5, 1e9);
    }
    ck_assert_uint_eq(crux_recorder_period_calls(&rec), 0);
    /* a pattern broken by one odd call at the end: none, until it repeats */
    crux_recorder_init(&rec);
    feed(three, 3, 30, 0, 1, 0.1, 1e9, NULL);
    crux_recorder_add(&rec, 7, 30, 30.1, 1e9);
    ck_assert_uint_eq(crux_recorder_period_calls(&rec), 0);
}
END_TEST

/* Three calls per iteration of 3 s (at 0, 1 and 2 s of it), each 0.25 s
 * long; windows of 10 s. */
START_TEST(windows)
{
    static const size_t three[] = { 100, 2000, 30 };
    crux_recorder_init(&rec);
    int due = 0;
    /* calls start at 0, 1, ..., 9: the one starting at 10 ends at 10.25,
     * past the interval from the first call's start */
    double t = feed(three, 3, 10, 0, 1, 0.25, 10, &due);
    ck_assert_int_eq(due, 0);
    ck_assert_int_eq(crux_recorder_add(&rec, three[10 % 3], t, t + 0.25, 10), 1);
    crux_profile_t p = { 0 };
    crux_recorder_close(&rec, 10.25, &p);
    ck_assert_uint_eq(p.collectives, 11);
    ck_assert(fabs(p.window_s - 10.25) < 1e-9);
    ck_assert(fabs(p.coll_s - 11 * 0.25) < 1e-9);
    ck_assert(fabs(p.gap_s - 10 * 0.75) < 1e-9); /* between the 11 calls */
    ck_assert(fabs(p.bytes - (4 * 100 + 4 * 2000 + 3 * 30)) < 1e-9);
    ck_assert(fabs(p.period_s - 3.0) < 1e-9); /* three calls, one second apart */
    /* the next window starts where the last ended (10.25), with the gap
     * before its first call at 11 */
    crux_recorder_add(&rec, 30, 11, 11.25, 10); /* the pattern goes on */
    crux_recorder_add(&rec, 100, 12, 12.25, 10);
    crux_recorder_close(&rec, 12.25, &p);
    ck_assert_uint_eq(p.collectives, 2);
    ck_assert(fabs(p.window_s - 2.0) < 1e-9);
    ck_assert(fabs(p.gap_s - 1.5) < 1e-9);
    ck_assert(fabs(p.period_s - 3.0) < 1e-9); /* the history spans windows */
    /* without a pattern, the window over its calls */
    crux_recorder_init(&rec);
    crux_recorder_add(&rec, 1, 0, 1, 100);
    crux_recorder_add(&rec, 2, 2, 3, 100);
    crux_recorder_close(&rec, 3, &p);
    ck_assert(fabs(p.period_s - 1.5) < 1e-9);
    ck_assert(fabs(p.gap_s - 1.0) < 1e-9);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("profile_record");
    TCase *t = tcase_create("recorder");
    tcase_add_test(t, period);
    tcase_add_test(t, windows);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* libcrux_common's wait-loop policy, seen through the phase each idle poll
 * returns (what the loops themselves act on): an idle poll spins within the
 * spin budget, then yields CRUX_IDLE_YIELDS times, then asks for a sleep
 * (never when sleeping is not allowed: it yields); something that moved
 * starts it over; a liveness check falls due once every
 * CRUX_IDLE_CHECK_POLLS idle polls and once every CRUX_IDLE_CHECK_SLEEPS
 * sleeps, and only once each time.  The spin budget every group takes:
 * CRUX_IDLE_SPINS while each process of the node can have a core, none
 * past that. */
#include "common/crux_cpus.h"
#include "common/crux_idle.h"
#include "tests/unit/check_main.h"

/* The phase idle poll number 'poll' (from 1) should be in. */
static crux_idle_phase_t expected(unsigned spins, unsigned poll, int may_sleep)
{
    if (poll <= spins) {
        return CRUX_IDLE_SPIN;
    }
    return !may_sleep || poll <= spins + CRUX_IDLE_YIELDS ? CRUX_IDLE_YIELD : CRUX_IDLE_SLEEP;
}

START_TEST(test_spins_then_yields_then_sleeps)
{
    const unsigned budgets[] = { 0, 1, 7, 64, CRUX_IDLE_SPINS };
    for (unsigned b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++) {
        unsigned spins = budgets[b];
        crux_idle_t idle = crux_idle_start(spins);
        unsigned seen[3] = { 0, 0, 0 };
        crux_idle_phase_t last = CRUX_IDLE_SPIN;
        for (unsigned poll = 1; poll <= spins + CRUX_IDLE_YIELDS + 5; poll++) {
            crux_idle_phase_t phase = crux_idle_poll(&idle, 1);
            ck_assert_msg(phase == expected(spins, poll, 1), "spins %u poll %u: phase %d", spins,
                          poll, (int)phase);
            ck_assert_msg(phase >= last, "phases never go back without a reset");
            last = phase;
            seen[phase]++;
        }
        ck_assert_uint_eq(seen[CRUX_IDLE_SPIN], spins);
        ck_assert_uint_eq(seen[CRUX_IDLE_YIELD], CRUX_IDLE_YIELDS);
        ck_assert_uint_eq(seen[CRUX_IDLE_SLEEP], 5);
        /* may not sleep: it yields, however long it has been idle */
        ck_assert_int_eq(crux_idle_poll(&idle, 0), CRUX_IDLE_YIELD);
        ck_assert_int_eq(crux_idle_poll(&idle, 1), CRUX_IDLE_SLEEP);
        /* something moved: the sequence starts over */
        crux_idle_reset(&idle);
        for (unsigned poll = 1; poll <= spins + CRUX_IDLE_YIELDS + 1; poll++) {
            ck_assert_int_eq(crux_idle_poll(&idle, 1), expected(spins, poll, 1));
        }
    }
}
END_TEST

START_TEST(test_without_sleep_spins_then_yields_for_good)
{
    crux_idle_t idle = crux_idle_start(64);
    for (unsigned poll = 1; poll <= 3 * CRUX_IDLE_CHECK_POLLS; poll++) {
        ck_assert_int_eq(crux_idle_poll(&idle, 0), poll <= 64 ? CRUX_IDLE_SPIN : CRUX_IDLE_YIELD);
    }
}
END_TEST

START_TEST(test_spins_only_with_a_core_each)
{
    unsigned cpus = crux_cpus_online();
    ck_assert_uint_ge(cpus, 1);
    ck_assert_uint_eq(crux_idle_spins(1, 0), CRUX_IDLE_SPINS);
    ck_assert_uint_eq(crux_idle_spins(cpus, 0), CRUX_IDLE_SPINS);
    ck_assert_uint_eq(crux_idle_spins(cpus + 1, 0), 0);
    /* told that processes share cores (fake nodes, a runtime that yields
     * when idle): never spin, however few they seem */
    ck_assert_uint_eq(crux_idle_spins(1, 1), 0);
    /* a spin outlasts the yields that follow it by far: a sleep is dear */
    ck_assert_uint_gt(CRUX_IDLE_SPINS, 64 * CRUX_IDLE_YIELDS);
}
END_TEST

START_TEST(test_liveness_checks_fall_due_once_per_period)
{
    /* polls only (a loop that never sleeps), through every phase */
    crux_idle_t idle = crux_idle_start(CRUX_IDLE_CHECK_POLLS + 10);
    unsigned due = 0;
    for (unsigned poll = 1; poll <= 3 * CRUX_IDLE_CHECK_POLLS; poll++) {
        crux_idle_poll(&idle, 0);
        if (crux_idle_check_due(&idle)) {
            ck_assert_uint_eq(poll % CRUX_IDLE_CHECK_POLLS, 0);
            due++;
        }
        ck_assert(!crux_idle_check_due(&idle)); /* once */
    }
    ck_assert_uint_eq(due, 3);
    /* a reset restarts the count: nothing falls due one period after the
     * last check unless the polls since the reset make a period */
    crux_idle_reset(&idle);
    for (unsigned poll = 1; poll < CRUX_IDLE_CHECK_POLLS; poll++) {
        crux_idle_poll(&idle, 0);
        ck_assert(!crux_idle_check_due(&idle));
    }
    crux_idle_poll(&idle, 0);
    ck_assert(crux_idle_check_due(&idle));
    /* sleeps only */
    crux_idle_reset(&idle);
    due = 0;
    for (unsigned sleep = 1; sleep <= 2 * CRUX_IDLE_CHECK_SLEEPS; sleep++) {
        crux_idle_slept(&idle);
        for (int look = 0; look < 2; look++) {
            if (crux_idle_check_due(&idle)) {
                ck_assert_uint_eq(sleep % CRUX_IDLE_CHECK_SLEEPS, 0);
                ck_assert_int_eq(look, 0);
                due++;
            }
        }
    }
    ck_assert_uint_eq(due, 2);
}
END_TEST

/* A loop as crux's wait loops run it: poll, sleep when told, look whether
 * liveness is due.  Checks fall due on every CRUX_IDLE_CHECK_SLEEPS-th
 * sleep and every CRUX_IDLE_CHECK_POLLS-th poll, and at no other poll. */
START_TEST(test_loop_cadence)
{
    const unsigned spins = 5, awake = spins + CRUX_IDLE_YIELDS;
    crux_idle_t idle = crux_idle_start(spins);
    unsigned sleeps = 0, due = 0;
    for (unsigned poll = 1; poll <= 2 * CRUX_IDLE_CHECK_POLLS; poll++) {
        crux_idle_phase_t phase = crux_idle_poll(&idle, 1);
        ck_assert_int_eq(phase, expected(spins, poll, 1));
        if (phase == CRUX_IDLE_SLEEP) {
            crux_idle_slept(&idle);
            sleeps++;
        }
        int want = poll % CRUX_IDLE_CHECK_POLLS == 0 ||
                   (phase == CRUX_IDLE_SLEEP && sleeps % CRUX_IDLE_CHECK_SLEEPS == 0);
        ck_assert_msg(crux_idle_check_due(&idle) == want, "poll %u sleeps %u", poll, sleeps);
        due += want;
    }
    ck_assert_uint_eq(sleeps, 2 * CRUX_IDLE_CHECK_POLLS - awake);
    /* the two poll periods, and the sleep periods not on them */
    unsigned by_sleeps = sleeps / CRUX_IDLE_CHECK_SLEEPS, both = 0;
    for (unsigned k = 1; k <= by_sleeps; k++) {
        both += (awake + k * CRUX_IDLE_CHECK_SLEEPS) % CRUX_IDLE_CHECK_POLLS == 0;
    }
    ck_assert_uint_eq(due, 2 + by_sleeps - both);
}
END_TEST

static Suite *idle_suite(void)
{
    Suite *s = suite_create("common_idle");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_spins_then_yields_then_sleeps);
    tcase_add_test(tc, test_spins_only_with_a_core_each);
    tcase_add_test(tc, test_without_sleep_spins_then_yields_for_good);
    tcase_add_test(tc, test_liveness_checks_fall_due_once_per_period);
    tcase_add_test(tc, test_loop_cadence);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(idle_suite)

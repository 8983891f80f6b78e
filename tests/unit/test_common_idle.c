/* libcrux_common's wait-loop policy: an idle poll spins within the spin
 * budget, then yields CRUX_IDLE_YIELDS times, then asks for a sleep (never
 * when sleeping is not allowed); something that moved starts it over; a
 * liveness check falls due once every CRUX_IDLE_CHECK_POLLS idle polls and
 * once every CRUX_IDLE_CHECK_SLEEPS sleeps, and only once each time.  The
 * spin budget every group takes: CRUX_IDLE_SPINS while each process of the
 * node can have a core, none past that. */
#include "check_main.h"
#include "common/crux_cpus.h"
#include "common/crux_idle.h"

START_TEST(test_spins_then_yields_then_sleeps)
{
    for (unsigned spins = 0; spins < 3; spins++) {
        crux_idle_t idle = crux_idle_start(spins);
        for (unsigned poll = 1; poll <= spins + CRUX_IDLE_YIELDS; poll++) {
            ck_assert_msg(crux_idle_poll(&idle, 1) == 0, "spins %u poll %u", spins, poll);
        }
        ck_assert(crux_idle_poll(&idle, 1) == 1);
        ck_assert(crux_idle_poll(&idle, 1) == 1);
        ck_assert(crux_idle_poll(&idle, 0) == 0); /* may not sleep: yields */
        crux_idle_reset(&idle);
        ck_assert(spins == 0 || crux_idle_poll(&idle, 1) == 0);
        ck_assert_uint_eq(idle.polls, spins == 0 ? 0 : 1);
    }
}
END_TEST

START_TEST(test_spins_only_with_a_core_each)
{
    unsigned cpus = crux_cpus_online();
    ck_assert_uint_ge(cpus, 1);
    ck_assert_uint_eq(crux_idle_spins(1), CRUX_IDLE_SPINS);
    ck_assert_uint_eq(crux_idle_spins(cpus), CRUX_IDLE_SPINS);
    ck_assert_uint_eq(crux_idle_spins(cpus + 1), 0);
    /* a spin outlasts the yields that follow it by far: a sleep is dear */
    ck_assert_uint_gt(CRUX_IDLE_SPINS, 64 * CRUX_IDLE_YIELDS);
}
END_TEST

START_TEST(test_liveness_checks_fall_due_once_per_period)
{
    crux_idle_t idle = crux_idle_start(0);
    unsigned due = 0;
    for (unsigned poll = 1; poll <= 3 * CRUX_IDLE_CHECK_POLLS; poll++) {
        crux_idle_poll(&idle, 0);
        if (crux_idle_check_due(&idle)) {
            ck_assert_uint_eq(poll % CRUX_IDLE_CHECK_POLLS, 0);
            due++;
        }
    }
    ck_assert_uint_eq(due, 3);
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

static Suite *idle_suite(void)
{
    Suite *s = suite_create("common_idle");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_spins_then_yields_then_sleeps);
    tcase_add_test(tc, test_spins_only_with_a_core_each);
    tcase_add_test(tc, test_liveness_checks_fall_due_once_per_period);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(idle_suite)

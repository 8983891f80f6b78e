/* libcrux_common's process liveness: a live process is alive and known by
 * its start time, a pid whose start time differs is taken as reused (gone),
 * a zombie and a reaped child are gone, an unknown start time falls back
 * to the plain check. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crux_proc.h"
#include "tests/unit/check_main.h"

START_TEST(test_a_live_process_is_known_by_its_start_time)
{
    pid_t me = getpid();
    uint64_t start = crux_proc_start_time(me);
    ck_assert_uint_ne(start, 0);
    ck_assert_int_eq(crux_proc_alive(me), 1);
    ck_assert_int_eq(crux_proc_alive_since(me, start), 1);
    ck_assert_int_eq(crux_proc_alive_since(me, start + 1), 0); /* a reused pid */
    ck_assert_int_eq(crux_proc_alive_since(me, 0), 1);
}
END_TEST

START_TEST(test_a_zombie_and_a_reaped_child_are_gone)
{
    pid_t kid = fork();
    ck_assert_int_ge(kid, 0);
    if (kid == 0) {
        pause();
        _exit(0);
    }
    uint64_t start = crux_proc_start_time(kid);
    ck_assert_uint_ne(start, 0);
    ck_assert_int_eq(crux_proc_alive_since(kid, start), 1);
    kill(kid, SIGKILL);
    siginfo_t info;
    /* wait until it is a zombie, without reaping it */
    ck_assert_int_eq(waitid(P_PID, (id_t)kid, &info, WEXITED | WNOWAIT), 0);
    ck_assert_int_eq(crux_proc_alive(kid), 0);
    ck_assert_int_eq(crux_proc_alive_since(kid, start), 0);
    ck_assert_int_eq(crux_proc_alive_since(kid, 0), 0);
    ck_assert_int_eq(waitpid(kid, NULL, 0), kid);
    ck_assert_int_eq(crux_proc_alive(kid), 0);
    ck_assert_int_eq(crux_proc_alive_since(kid, start), 0);
}
END_TEST

static Suite *proc_suite(void)
{
    Suite *s = suite_create("common_proc");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_a_live_process_is_known_by_its_start_time);
    tcase_add_test(tc, test_a_zombie_and_a_reaped_child_are_gone);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(proc_suite)

/* The intra-host arbitration table: a lower level waits while a higher one
 * transfers, the wait is bounded, dead holders are reclaimed, and a job
 * stopped while it holds the table's lock holds no one. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/crux_arb.h"
#include "sched/runtime/crux_arb_table.h"
#include "tests/unit/check_main.h"

static char path[64];

static void setup(void)
{
    snprintf(path, sizeof(path), "/tmp/crux-arb-test-XXXXXX");
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    unlink(path); /* crux_arb_open creates it */
}

static void teardown(void)
{
    unlink(path);
}

static crux_arb_t *open_arb(int *res)
{
    crux_arb_t *a;
    ck_assert_int_eq(crux_arb_open(path, 0, &a, NULL, 0), CRUX_OK);
    ck_assert_int_eq(crux_arb_resource(a, "pcie:0", res), CRUX_OK);
    return a;
}

/* The state of pid's entry in the table, 0 when it has none. */
static int state_of(crux_arb_t *a, pid_t pid)
{
    crux_arb_entry_t e[CRUX_ARB_MAX_ENTRIES];
    int n;
    crux_arb_snapshot(a, e, CRUX_ARB_MAX_ENTRIES, &n);
    for (int i = 0; i < n; i++)
        if (e[i].pid == pid)
            return e[i].state;
    return 0;
}

/* Poll the table until pid's entry is in `state` (10 s at most: a hang
 * guard, not a timing check). */
static int wait_state(crux_arb_t *a, pid_t pid, int state)
{
    for (int i = 0; i < 10000; i++) {
        if (state_of(a, pid) == state)
            return 1;
        usleep(1000);
    }
    return 0;
}

/* Child: acquire at `level` waiting at most max_ns, report
 * waited/timed_out through the exit status, release. */
static pid_t child_acquire(int level, uint64_t max_ns)
{
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        int res;
        crux_arb_t *a = open_arb(&res);
        crux_arb_ticket_t t;
        if (crux_arb_acquire(a, res, level, "low", max_ns, &t) != CRUX_OK)
            _exit(100);
        crux_arb_release(a, &t);
        _exit((t.waited ? 1 : 0) | (t.timed_out ? 2 : 0));
    }
    return pid;
}

static int child_result(pid_t pid)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

START_TEST(lower_waits_while_higher_holds)
{
    int res;
    crux_arb_t *a = open_arb(&res);
    crux_arb_ticket_t t;
    ck_assert_int_eq(crux_arb_acquire(a, res, 5, "high", 0, &t), CRUX_OK);
    ck_assert_int_eq(t.waited, 0);
    ck_assert_int_eq(state_of(a, getpid()), CRUX_ARB_ACTIVE);
    pid_t kid = child_acquire(2, 60ULL * 1000000000ULL);
    ck_assert_msg(wait_state(a, kid, CRUX_ARB_WAITING), "the lower job never waited");
    ck_assert_int_eq(state_of(a, kid), CRUX_ARB_WAITING); /* still waiting */
    crux_arb_release(a, &t);
    ck_assert_int_eq(child_result(kid), 1); /* waited, not timed out */
    ck_assert_int_eq(state_of(a, kid), 0);
    crux_arb_close(a);
}
END_TEST

START_TEST(equal_or_higher_does_not_wait)
{
    int res;
    crux_arb_t *a = open_arb(&res);
    crux_arb_ticket_t t;
    ck_assert_int_eq(crux_arb_acquire(a, res, 3, "mid", 0, &t), CRUX_OK);
    ck_assert_int_eq(child_result(child_acquire(3, 60ULL * 1000000000ULL)), 0);
    ck_assert_int_eq(child_result(child_acquire(6, 60ULL * 1000000000ULL)), 0);
    /* another resource is not held */
    int other;
    ck_assert_int_eq(crux_arb_resource(a, "hostmem", &other), CRUX_OK);
    ck_assert_int_ne(other, res);
    crux_arb_release(a, &t);
    crux_arb_close(a);
}
END_TEST

START_TEST(bounded_wait_expires)
{
    int res;
    crux_arb_t *a = open_arb(&res);
    crux_arb_ticket_t t;
    ck_assert_int_eq(crux_arb_acquire(a, res, 7, "high", 0, &t), CRUX_OK);
    ck_assert_int_eq(child_result(child_acquire(1, 50ULL * 1000000)), 3); /* waited, expired */
    crux_arb_release(a, &t);
    crux_arb_close(a);
}
END_TEST

/* A holder killed with SIGKILL, reaped (reap = 1) or left a zombie. */
static void killed_holder(int reap)
{
    int res, fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t kid = fork();
    ck_assert(kid >= 0);
    if (kid == 0) {
        crux_arb_t *a = open_arb(&res);
        crux_arb_ticket_t t;
        crux_arb_acquire(a, res, 7, "doomed", 0, &t);
        char c = 'x';
        if (write(fds[1], &c, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c;
    ck_assert_int_eq(read(fds[0], &c, 1), 1);
    crux_arb_t *a = open_arb(&res);
    ck_assert_int_eq(state_of(a, kid), CRUX_ARB_ACTIVE);
    ck_assert_int_eq(kill(kid, SIGKILL), 0);
    if (reap) {
        ck_assert_int_eq(waitpid(kid, NULL, 0), kid);
    } else {
        for (int i = 0; i < 10000 && state_of(a, kid) != 0; i++) /* until it is a zombie */
            usleep(1000);
    }
    crux_arb_ticket_t t;
    ck_assert_int_eq(crux_arb_acquire(a, res, 0, "next", 60ULL * 1000000000ULL, &t), CRUX_OK);
    ck_assert_int_eq(t.timed_out, 0);
    ck_assert_int_eq(state_of(a, kid), 0);
    crux_arb_release(a, &t);
    if (!reap)
        waitpid(kid, NULL, 0);
    crux_arb_close(a);
    close(fds[0]);
    close(fds[1]);
}

START_TEST(killed_holder_is_reclaimed)
{
    killed_holder(1);
}
END_TEST

START_TEST(zombie_holder_is_reclaimed)
{
    killed_holder(0);
}
END_TEST

/* A job stopped (SIGSTOP) while it holds the table's lock: another opens
 * the table, its acquire waits for the lock at most the lock wait and names
 * the stopped holder, its next calls do not wait at all, and a release
 * that could not lock is done once the lock is free again (here: its
 * holder killed). */
START_TEST(stopped_lock_holder)
{
    int res, fds[2];
    crux_arb_t *a = open_arb(&res);
    crux_arb_set_lock_wait(a, 100ULL * 1000000);
    crux_arb_ticket_t t, u;
    ck_assert_int_eq(crux_arb_acquire(a, res, 3, "mine", 0, &t), CRUX_OK);
    ck_assert_int_eq(pipe(fds), 0);
    pid_t kid = fork();
    ck_assert(kid >= 0);
    if (kid == 0) {
        int r;
        crux_arb_t *k = open_arb(&r);
        pthread_mutex_lock(&k->t->lock);
        if (write(fds[1], "x", 1) != 1)
            _exit(1);
        raise(SIGSTOP);
        _exit(0);
    }
    char c;
    int status;
    ck_assert_int_eq(read(fds[0], &c, 1), 1);
    ck_assert_int_eq(waitpid(kid, &status, WUNTRACED), kid);
    ck_assert(WIFSTOPPED(status));
    crux_arb_t *b;
    ck_assert_int_eq(crux_arb_open(path, 0, &b, NULL, 0), CRUX_OK);
    crux_arb_close(b);
    crux_arb_release(a, &t); /* cannot lock: done later */
    ck_assert_int_eq(t.entry, -1);
    ck_assert_int_eq(crux_arb_acquire(a, res, 0, "next", 60ULL * 1000000000ULL, &u),
                     CRUX_ERR_TIMEOUT);
    ck_assert_int_eq(u.entry, -1);
    int stopped = 0;
    ck_assert_int_eq(crux_arb_holder(a, &stopped), kid);
    ck_assert_int_eq(stopped, 1);
    ck_assert_int_eq(crux_arb_acquire(a, res, 0, "next", 60ULL * 1000000000ULL, &u),
                     CRUX_ERR_TIMEOUT);
    int id, n;
    ck_assert_int_eq(crux_arb_resource(a, "hostmem", &id), CRUX_ERR_TIMEOUT);
    crux_arb_entry_t e[CRUX_ARB_MAX_ENTRIES];
    ck_assert_int_eq(crux_arb_snapshot(a, e, CRUX_ARB_MAX_ENTRIES, &n), CRUX_ERR_TIMEOUT);
    /* the holder dies: the robust lock is recovered, and the release that
     * could not be done is */
    ck_assert_int_eq(kill(kid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(kid, NULL, 0), kid);
    ck_assert_int_eq(crux_arb_acquire(a, res, 0, "after", 60ULL * 1000000000ULL, &u), CRUX_OK);
    ck_assert_int_eq(u.waited, 0);
    ck_assert_int_eq(crux_arb_snapshot(a, e, CRUX_ARB_MAX_ENTRIES, &n), CRUX_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(e[0].job, "after");
    crux_arb_release(a, &u);
    crux_arb_close(a);
    close(fds[0]);
    close(fds[1]);
}
END_TEST

START_TEST(table_checks)
{
    crux_arb_t *a;
    int id;
    ck_assert_int_eq(crux_arb_open(path, 0, &a, NULL, 0), CRUX_OK);
    char name[CRUX_ARB_NAME_LEN + 8];
    memset(name, 'x', sizeof(name));
    name[sizeof(name) - 1] = '\0';
    ck_assert_int_eq(crux_arb_resource(a, name, &id), CRUX_ERR_INVALID);
    for (int i = 0; i < CRUX_ARB_MAX_RESOURCES; i++) {
        snprintf(name, sizeof(name), "r%d", i);
        ck_assert_int_eq(crux_arb_resource(a, name, &id), CRUX_OK);
        ck_assert_int_eq(id, i);
    }
    ck_assert_int_eq(crux_arb_resource(a, "one-more", &id), CRUX_ERR_NO_RESOURCE);
    crux_arb_ticket_t t;
    ck_assert_int_eq(crux_arb_acquire(a, CRUX_ARB_MAX_RESOURCES, 0, NULL, 0, &t), CRUX_ERR_INVALID);
    crux_arb_close(a);
    /* a file that is not a table is refused */
    FILE *f = fopen(path, "w");
    fputs("not a table", f);
    fclose(f);
    ck_assert_int_eq(crux_arb_open(path, 0, &a, NULL, 0), CRUX_ERR_INVALID);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("arb");
    TCase *t = tcase_create("arb");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, lower_waits_while_higher_holds);
    tcase_add_test(t, equal_or_higher_does_not_wait);
    tcase_add_test(t, bounded_wait_expires);
    tcase_add_test(t, killed_holder_is_reclaimed);
    tcase_add_test(t, zombie_holder_is_reclaimed);
    tcase_add_test(t, stopped_lock_holder);
    tcase_add_test(t, table_checks);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* A job's place in the schedule (libcrux_job): no priority file costs
 * nothing; a file gives the job its level, network settings and route,
 * followed as it changes and kept when it turns malformed; no job id is
 * said and ignored; jobs of two levels on one host take turns through a
 * private arbitration table, the lower waiting at most its bound; a table
 * whose lock a stopped process holds leaves the job unarbitrated, said
 * once. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/crux_job.h"
#include "sched/crux_prio.h"
#include "sched/runtime/crux_arb_table.h"
#include "tests/unit/check_main.h"

static char dir[64], prio[128], arb[128];
static char said[1 << 16]; /* every message, one a line */

static void log_line(void *arg, const char *message)
{
    size_t n = strlen(said);
    snprintf(said + n, sizeof(said) - n, "%s\n", message);
}

/* How many messages held `text`. */
static int times_said(const char *text)
{
    int n = 0;
    for (const char *p = said; (p = strstr(p, text)) != NULL; p += strlen(text)) {
        n++;
    }
    return n;
}

static const char *const id_variables[] = {
    "CRUX_JOB_ID", "SLURM_JOB_ID",           "PBS_JOBID", "LSB_JOBID", "JOB_ID",
    "FLUX_JOB_ID", "OMPI_MCA_orte_ess_jobid"
};

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/crux-job-XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(prio, sizeof(prio), "%s/prio", dir);
    snprintf(arb, sizeof(arb), "%s/arb", dir);
    said[0] = '\0';
    unsetenv("CRUX_PRIORITY_FILE");
    unsetenv("CRUX_PRIORITY_LEVEL");
    for (size_t i = 0; i < sizeof(id_variables) / sizeof(id_variables[0]); i++) {
        unsetenv(id_variables[i]);
    }
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *text)
{
    ck_assert_int_eq(crux_prio_atomic_write(prio, text, strlen(text), 0644, NULL, 0), CRUX_OK);
}

/* A job of id `id` (NULL: the environment's) reading the test's file and
 * table. */
static crux_job_t *open_job(const char *id, unsigned max_wait_us)
{
    crux_job_config_t config = {
        .priority_file = prio,
        .job_id = id,
        .poll_ms = 0,
        .arb_path = arb,
        .arb_max_wait_us = max_wait_us,
        .names = "coll_crux_",
        .log = log_line,
    };
    crux_job_t *job;
    ck_assert_int_eq(crux_job_open(&config, &job), CRUX_OK);
    return job;
}

static void ck_net(const crux_job_t *job, int sl, int tc, int dscp)
{
    int s, t, d;
    crux_job_net(job, &s, &t, &d);
    ck_assert_int_eq(s, sl);
    ck_assert_int_eq(t, tc);
    ck_assert_int_eq(d, dscp);
}

START_TEST(no_priority_file)
{
    crux_job_config_t config = { .job_id = "j", .arb_path = arb, .log = log_line };
    crux_job_t *job;
    ck_assert_int_eq(crux_job_open(&config, &job), CRUX_OK);
    ck_assert_str_eq(crux_job_id(job), "j");
    ck_assert_int_eq(crux_job_level(job), 0);
    ck_net(job, -1, -1, -1);
    char route[64];
    ck_assert_int_eq(crux_job_route(job, route, sizeof(route)), 0);
    ck_assert_str_eq(route, "");
    crux_job_ticket_t t;
    crux_job_enter(job, &t);
    ck_assert_int_eq(t.held, 0);
    crux_job_exit(job, &t);
    crux_job_counters_t c;
    crux_job_counters(job, &c);
    ck_assert_int_eq(c.transfers + c.unarbitrated, 0);
    crux_job_close(job);
    /* nothing said, no table made, nothing in the environment */
    ck_assert_str_eq(said, "");
    ck_assert_int_ne(access(arb, F_OK), 0);
    ck_assert_ptr_null(getenv("CRUX_PRIORITY_LEVEL"));
    /* a NULL job (crux_job_open out of memory) is one without a file */
    crux_job_enter(NULL, &t);
    ck_assert_int_eq(t.held, 0);
    ck_assert_ptr_null(crux_job_id(NULL));
    ck_net(NULL, -1, -1, -1);
}
END_TEST

START_TEST(listed_job)
{
    put("crux-priorities 1\nlevels 8\njob other level 7\n"
        "job j level 5 sl 3 tc 96 dscp 24 route h1,h2:0\n");
    setenv("CRUX_PRIORITY_FILE", prio, 1);
    crux_job_config_t config = {
        .job_id = "j", .arb_path = arb, .export_level = 1, .log = log_line
    };
    crux_job_t *job;
    ck_assert_int_eq(crux_job_open(&config, &job), CRUX_OK); /* the file from the environment */
    ck_assert_int_eq(crux_job_level(job), 5);
    ck_net(job, 3, 96, 24);
    ck_assert_msg(times_said("job j: level 5 of 8 (from the priority file), service level 3, "
                             "traffic class 96, dscp 24") == 1,
                  "%s", said);
    ck_assert_str_eq(getenv("CRUX_PRIORITY_LEVEL"), "5");
    char route[64], small[4];
    ck_assert_int_eq(crux_job_route(job, route, sizeof(route)), 1);
    ck_assert_str_eq(route, "h1,h2:0");
    ck_assert_int_eq(crux_job_route(job, small, sizeof(small)), 1); /* too long: none */
    ck_assert_str_eq(small, "");
    crux_job_ticket_t t;
    crux_job_enter(job, &t);
    ck_assert_int_eq(t.held, 1);
    crux_job_exit(job, &t);
    ck_assert_int_eq(t.held, 0);
    crux_job_close(job);
    ck_assert_msg(times_said("job j at level 5: 1 transfers, 0 waited for a higher level (0.0 ms), "
                             "0 gave up waiting, 0 without arbitration") == 1,
                  "%s", said);
}
END_TEST

START_TEST(file_changes)
{
    put("crux-priorities 1\nlevels 8\njob j level 5 tc 160\n");
    crux_job_t *job = open_job("j", 1000);
    crux_job_ticket_t t;
    ck_assert_int_eq(crux_job_level(job), 5);
    put("crux-priorities 1\nlevels 8\njob j level 2 sl 1\n");
    ck_assert_int_eq(crux_job_level(job), 5); /* looked at as transfers enter */
    crux_job_enter(job, &t);
    crux_job_exit(job, &t);
    ck_assert_int_eq(crux_job_level(job), 2);
    ck_net(job, 1, -1, -1);
    ck_assert_msg(times_said("job j: level 2 of 8 (from the priority file)") == 1, "%s", said);
    /* malformed: the last good state stays, said once */
    put("crux-priorities 1\nlevels 8\njob j level 1"); /* truncated */
    for (int i = 0; i < 3; i++) {
        crux_job_enter(job, &t);
        crux_job_exit(job, &t);
    }
    ck_assert_int_eq(crux_job_level(job), 2);
    ck_net(job, 1, -1, -1);
    ck_assert_msg(times_said("keeping the last good priorities") == 1, "%s", said);
    /* not listed, then gone: the default level */
    put("crux-priorities 1\nlevels 8\njob other level 7\n");
    crux_job_enter(job, &t);
    crux_job_exit(job, &t);
    ck_assert_int_eq(crux_job_level(job), 0);
    ck_assert_msg(times_said("job j: level 0 of 8 (default)") == 1, "%s", said);
    ck_assert_int_eq(unlink(prio), 0);
    crux_job_enter(job, &t);
    crux_job_exit(job, &t);
    ck_assert_msg(times_said("job j: level 0 of 0 (default)") == 1, "%s", said);
    ck_net(job, -1, -1, -1);
    crux_job_close(job);
}
END_TEST

START_TEST(no_job_id)
{
    put("crux-priorities 1\nlevels 8\njob j level 5\n");
    crux_job_t *job = open_job(NULL, 1000);
    ck_assert_ptr_null(crux_job_id(job));
    ck_assert_int_eq(crux_job_level(job), 0);
    crux_job_ticket_t t;
    crux_job_enter(job, &t);
    ck_assert_int_eq(t.held, 0);
    crux_job_close(job);
    char want[256];
    snprintf(want, sizeof(want),
             "priority file %s but no usable job id (none of coll_crux_job_id, CRUX_JOB_ID, "
             "SLURM_JOB_ID, ... set): ignored",
             prio);
    ck_assert_msg(times_said(want) == 1, "%s", said);
    ck_assert_int_ne(access(arb, F_OK), 0);
    /* an id that is not one: said why */
    said[0] = '\0';
    setenv("CRUX_JOB_ID", "a b", 1);
    crux_job_close(open_job(NULL, 1000));
    ck_assert_msg(times_said("(CRUX_JOB_ID has a blank at byte 2): ignored") == 1, "%s", said);
    /* a bad explicit id skipped for the environment's: said, and the
     * environment's taken */
    said[0] = '\0';
    setenv("CRUX_JOB_ID", "j", 1);
    job = open_job("a b", 1000);
    ck_assert_str_eq(crux_job_id(job), "j");
    ck_assert_int_eq(crux_job_level(job), 5);
    ck_assert_msg(times_said(": skipped; the job id is CRUX_JOB_ID's") == 1, "%s", said);
    crux_job_close(job);
}
END_TEST

/* Jobs "hi" (level 7) and "lo" (level 1) on one private table: while hi
 * transfers, lo waits, gives up at its bound and goes on; hi never waits
 * for lo. */
START_TEST(two_levels_take_turns)
{
    put("crux-priorities 1\nlevels 8\njob hi level 7\njob lo level 1\n");
    crux_job_t *hi = open_job("hi", 20000);
    crux_job_ticket_t t;
    crux_job_enter(hi, &t);
    ck_assert_int_eq(t.held, 1);
    pid_t kid = fork();
    ck_assert(kid >= 0);
    if (kid == 0) {
        crux_job_t *lo = open_job("lo", 20000);
        crux_job_ticket_t u;
        crux_job_enter(lo, &u);
        crux_job_counters_t c;
        crux_job_counters(lo, &c);
        int ok = u.held && u.arb.waited && u.arb.timed_out && c.transfers == 1 && c.waits == 1 &&
                 c.timeouts == 1 && c.wait_ns > 0;
        crux_job_exit(lo, &u);
        crux_job_close(lo);
        _exit(ok && times_said("job lo at level 1: 1 transfers, 1 waited for a higher level") == 1
                  ? 0
                  : 1);
    }
    int status;
    ck_assert_int_eq(waitpid(kid, &status, 0), kid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lo did not wait for hi");
    crux_job_exit(hi, &t);
    /* lo holds (in a stopped child, so it stays): hi does not wait */
    kid = fork();
    ck_assert(kid >= 0);
    if (kid == 0) {
        crux_job_t *lo = open_job("lo", 20000);
        crux_job_ticket_t u;
        crux_job_enter(lo, &u);
        raise(SIGSTOP);
        _exit(0);
    }
    ck_assert_int_eq(waitpid(kid, &status, WUNTRACED), kid);
    ck_assert(WIFSTOPPED(status));
    crux_job_enter(hi, &t);
    ck_assert_int_eq(t.held, 1);
    ck_assert_int_eq(t.arb.waited, 0);
    crux_job_exit(hi, &t);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    crux_job_counters_t c;
    crux_job_counters(hi, &c);
    ck_assert_int_eq(c.transfers, 2);
    ck_assert_int_eq(c.waits, 0);
    crux_job_close(hi);
}
END_TEST

/* A process of the user's stopped while it holds the table's lock: a job
 * opened meanwhile waits for the lock at most its bound, transfers without
 * arbitration and says so once, naming the holder; arbitration is back once
 * the holder is gone. */
START_TEST(stopped_lock_holder)
{
    put("crux-priorities 1\nlevels 8\njob j level 4\n");
    crux_job_close(open_job("j", 20000)); /* the table made */
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t kid = fork();
    ck_assert(kid >= 0);
    if (kid == 0) {
        crux_arb_t *a;
        if (crux_arb_open(arb, 0, &a, NULL, 0) != CRUX_OK) {
            _exit(1);
        }
        pthread_mutex_lock(&a->t->lock);
        if (write(fds[1], "x", 1) != 1) {
            _exit(1);
        }
        raise(SIGSTOP);
        _exit(0);
    }
    char x;
    int status;
    ck_assert_int_eq(read(fds[0], &x, 1), 1);
    ck_assert_int_eq(waitpid(kid, &status, WUNTRACED), kid);
    ck_assert(WIFSTOPPED(status));
    said[0] = '\0';
    crux_job_t *job = open_job("j", 20000);
    ck_assert_msg(times_said("no intra-host arbitration table") == 0, "%s", said);
    crux_job_ticket_t t;
    for (int i = 0; i < 3; i++) {
        crux_job_enter(job, &t);
        ck_assert_int_eq(t.held, 0);
        crux_job_exit(job, &t);
    }
    char want[256];
    snprintf(want, sizeof(want),
             "job j: the arbitration table's lock was held past coll_crux_arb_max_wait_us (20000 "
             "us) by pid %d, a stopped process: transfers go on without arbitration while it is",
             (int)kid);
    ck_assert_msg(times_said(want) == 1, "%s", said);
    ck_assert_msg(times_said("the arbitration table's lock was held past") == 1, "%s", said);
    ck_assert_int_eq(kill(kid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(kid, NULL, 0), kid);
    crux_job_enter(job, &t);
    ck_assert_int_eq(t.held, 1);
    crux_job_exit(job, &t);
    crux_job_close(job);
    ck_assert_msg(times_said("job j at level 4: 1 transfers, 0 waited for a higher level (0.0 ms), "
                             "0 gave up waiting, 3 without arbitration") == 1,
                  "%s", said);
    close(fds[0]);
    close(fds[1]);
}
END_TEST

/* A table that is not one: the job runs at its level, unarbitrated, and
 * says why. */
START_TEST(refused_table)
{
    put("crux-priorities 1\nlevels 8\njob j level 4\n");
    FILE *f = fopen(arb, "w");
    ck_assert_ptr_nonnull(f);
    fputs("not a table", f);
    fclose(f);
    crux_job_t *job = open_job("j", 20000);
    ck_assert_int_eq(crux_job_level(job), 4);
    crux_job_ticket_t t;
    crux_job_enter(job, &t);
    ck_assert_int_eq(t.held, 0);
    crux_job_close(job);
    ck_assert_msg(times_said("no intra-host arbitration table: ") == 1 &&
                      times_said(": levels are not enforced on this host") == 1,
                  "%s", said);
    ck_assert_msg(times_said(" transfers, ") == 0, "no summary without a table: %s", said);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("job");
    TCase *t = tcase_create("job");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, no_priority_file);
    tcase_add_test(t, listed_job);
    tcase_add_test(t, file_changes);
    tcase_add_test(t, no_job_id);
    tcase_add_test(t, two_levels_take_turns);
    tcase_add_test(t, stopped_lock_holder);
    tcase_add_test(t, refused_table);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

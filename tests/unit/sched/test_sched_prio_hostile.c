/* The priority file as every job reads it, under hostile or careless
 * writers: other jobs' bad lines cost nothing, the job's own bad line keeps
 * its last good level, 200,000-job files parse with O(n log n) id
 * comparisons, a symbolic link loop is said once, and an unusable job id is
 * described precisely. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched/crux_prio.h"
#include "tests/unit/check_main.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/crux-prioh-XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *in_dir(const char *name)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

static void put(const char *name, const char *text, size_t len)
{
    ck_assert_int_eq(crux_prio_atomic_write(in_dir(name), text, len, 0644, NULL, 0), CRUX_OK);
}

static int logged;
static char last_log[1024];

static void count_log(void *arg, const char *msg)
{
    (void)arg;
    logged++;
    snprintf(last_log, sizeof(last_log), "%s", msg);
}

START_TEST(other_jobs_bad_lines_ignored)
{
    crux_prio_reader_t *r;
    const char *good = "crux-priorities 1\nlevels 8\njob me level 5\n";
    put("prio", good, strlen(good));
    ck_assert_int_eq(crux_prio_reader_open(in_dir("prio"), "me", 0, 0, &r), CRUX_OK);
    crux_prio_reader_set_log(r, count_log, NULL);
    ck_assert_int_eq(crux_prio_reader_level(r), 5);
    logged = 0;
    /* another job's line is bad (level 9 of 8): this job takes the file */
    const char *t = "crux-priorities 1\nlevels 8\njob other level 9\njob me level 6\n"
                    "job x level 1 sl 99999999999 tc -5\n";
    put("prio", t, strlen(t));
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_level(r), 6);
    ck_assert_int_eq(crux_prio_reader_stale(r), 0);
    ck_assert_int_eq(crux_prio_reader_skipped(r), 2);
    ck_assert_int_eq(logged, 1);
    ck_assert_msg(strstr(last_log, "2 malformed lines of other jobs") && strstr(last_log, ":3:"),
                  "%s", last_log);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 1); /* said once */
    /* this job's own line is bad: its last good level stays, said once */
    t = "crux-priorities 1\nlevels 8\njob other level 2\njob me level 1 sl 16\n";
    put("prio", t, strlen(t));
    ck_assert_int_eq(crux_prio_reader_poll(r), 0);
    ck_assert_int_eq(crux_prio_reader_level(r), 6);
    ck_assert_int_eq(crux_prio_reader_stale(r), 1);
    ck_assert_int_eq(logged, 2);
    ck_assert_msg(strstr(last_log, ":4: the line of job me is malformed; keeping level 6"), "%s",
                  last_log);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 2);
    /* listed twice counts as bad for it too */
    t = "crux-priorities 1\nlevels 8\njob me level 1\njob me level 2\n";
    put("prio", t, strlen(t));
    ck_assert_int_eq(crux_prio_reader_poll(r), 0);
    ck_assert_int_eq(crux_prio_reader_level(r), 6);
    /* fixed: taken */
    t = "crux-priorities 1\nlevels 8\njob me level 3 sl 15 tc 255\n";
    put("prio", t, strlen(t));
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_level(r), 3);
    ck_assert_str_eq(crux_prio_reader_get(r, "sl"), "15");
    ck_assert_int_eq(crux_prio_reader_stale(r), 0);
    crux_prio_reader_close(r);
}
END_TEST

/* A file of n jobs "job-<i> level <i % 8>", with `extra` lines appended. */
static char *big_file(int n, const char *extra, size_t *len)
{
    size_t cap = (size_t)n * 40 + 4096, k = 0;
    char *t = malloc(cap);
    ck_assert_ptr_nonnull(t);
    k += (size_t)snprintf(t + k, cap - k, "crux-priorities 1\nlevels 8\n");
    for (int i = 0; i < n; i++)
        k +=
            (size_t)snprintf(t + k, cap - k, "job job-%d level %d tc %d\n", i, i % 8, (i % 8) * 32);
    k += (size_t)snprintf(t + k, cap - k, "%s", extra);
    *len = k;
    return t;
}

START_TEST(many_jobs_linear)
{
    enum { N = 200000 };
    size_t len;
    /* other jobs' bad lines and a duplicated id among 200,000 */
    char *t = big_file(N, "job job-7 level 1\njob bad level 8\nnonsense\n", &len);
    crux_prio_file_t *f;
    ck_assert_int_eq(crux_prio_parse(t, len, "big", &f, NULL, 0), CRUX_OK);
    ck_assert_int_eq(f->njobs, N - 1); /* job-7 listed twice: both lines out */
    ck_assert_int_eq(f->skipped, 4);
    ck_assert_ptr_null(crux_prio_find(f, "job-7"));
    ck_assert_int_eq(crux_prio_find(f, "job-199999")->level, 199999 % 8);
    ck_assert_int_eq(crux_prio_find(f, "job-0")->level, 0);
    /* merge sort: at most n log2 n comparisons of ids (the former pairwise
     * check made n^2 / 2, 2e10 here) */
    double bound = (double)N * ceil(log2((double)N)) + 64;
    ck_assert_msg((double)f->compares <= bound, "%llu comparisons",
                  (unsigned long long)f->compares);
    crux_prio_file_free(f);
    /* the reader a job keeps, on the same file */
    put("prio", t, len);
    crux_prio_reader_t *r;
    ck_assert_int_eq(crux_prio_reader_open(in_dir("prio"), "job-199998", 0, 0, &r), CRUX_OK);
    crux_prio_reader_set_log(r, count_log, NULL);
    ck_assert_int_eq(crux_prio_reader_state(r), CRUX_PRIO_LISTED);
    ck_assert_int_eq(crux_prio_reader_level(r), 199998 % 8);
    ck_assert_str_eq(crux_prio_reader_get(r, "tc"), "192");
    crux_prio_reader_close(r);
    free(t);
    /* all ids equal: every line skipped, still O(n log n) */
    size_t cap = (size_t)N * 24 + 64, k = 0;
    t = malloc(cap);
    k += (size_t)snprintf(t + k, cap - k, "crux-priorities 1\nlevels 8\n");
    for (int i = 0; i < N; i++)
        k += (size_t)snprintf(t + k, cap - k, "job same level 1\n");
    ck_assert_int_eq(crux_prio_parse(t, k, "same", &f, NULL, 0), CRUX_OK);
    ck_assert_int_eq(f->njobs, 0);
    ck_assert_int_eq(f->skipped, N);
    ck_assert_int_eq(crux_prio_skipped(f, "same") > 0, 1);
    ck_assert((double)f->compares <= 2 * bound);
    crux_prio_file_free(f);
    free(t);
}
END_TEST

START_TEST(symlink_loop_said_once)
{
    char a[256], b[256];
    snprintf(a, sizeof(a), "%s", in_dir("a"));
    snprintf(b, sizeof(b), "%s", in_dir("b"));
    ck_assert_int_eq(symlink(a, b), 0);
    ck_assert_int_eq(symlink(b, a), 0);
    crux_prio_reader_t *r;
    ck_assert_int_eq(crux_prio_reader_open(a, "me", 2, 0, &r), CRUX_OK);
    logged = 0;
    crux_prio_reader_set_log(r, count_log, NULL);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 1);
    ck_assert_msg(strstr(last_log, "symbolic link loop") && strstr(last_log, "default level"), "%s",
                  last_log);
    crux_prio_reader_poll(r);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 1);
    ck_assert_int_eq(crux_prio_reader_level(r), 2);
    crux_prio_reader_close(r);
}
END_TEST

START_TEST(job_id_problems_described)
{
    static const char *const vars[] = {
        "CRUX_JOB_ID", "SLURM_JOB_ID",           "PBS_JOBID", "LSB_JOBID", "JOB_ID",
        "FLUX_JOB_ID", "OMPI_MCA_orte_ess_jobid"
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    char why[160];
    crux_prio_job_id_skipped(NULL, why, sizeof(why));
    ck_assert_str_eq(why, "");
    setenv("CRUX_JOB_ID", "my job", 1);
    ck_assert_ptr_null(crux_prio_job_id(NULL, NULL));
    crux_prio_job_id_skipped(NULL, why, sizeof(why));
    ck_assert_str_eq(why, "CRUX_JOB_ID has a blank at byte 3");
    char *huge = malloc(10241);
    memset(huge, 'x', 10240);
    huge[10240] = '\0';
    setenv("CRUX_JOB_ID", huge, 1);
    crux_prio_job_id_skipped(NULL, why, sizeof(why));
    ck_assert_str_eq(why, "CRUX_JOB_ID is 10240 bytes, longer than 4096");
    crux_prio_job_id_skipped("a#b", why, sizeof(why));
    ck_assert_str_eq(why, "the job id given (coll_crux_job_id) has '#' at byte 2");
    free(huge);
    setenv("CRUX_JOB_ID", "fine-1", 1);
    crux_prio_job_id_skipped(NULL, why, sizeof(why));
    ck_assert_str_eq(why, "");
    unsetenv("CRUX_JOB_ID");
}
END_TEST

/* The writer's temporary is made O_EXCL with mode 0600 (mkstemp) and only
 * then opened to readers: a link planted at the file's name is replaced,
 * never followed, and a planted temporary name is never written through. */
START_TEST(writer_never_follows_links)
{
    char target[256], prio[256];
    snprintf(target, sizeof(target), "%s", in_dir("victim"));
    snprintf(prio, sizeof(prio), "%s", in_dir("prio"));
    ck_assert_int_eq(symlink(target, prio), 0);
    const char *t = "crux-priorities 1\nlevels 8\njob me level 1\n";
    ck_assert_int_eq(crux_prio_atomic_write(prio, t, strlen(t), 0644, NULL, 0), CRUX_OK);
    ck_assert_int_eq(access(target, F_OK), -1);
    struct stat sb;
    ck_assert_int_eq(lstat(prio, &sb), 0);
    ck_assert(S_ISREG(sb.st_mode));
    ck_assert_uint_eq(sb.st_mode & 0777, 0644); /* every job reads it */
    ck_assert_uint_eq(sb.st_uid, geteuid());
}
END_TEST

/* A device, FIFO or directory at the name is refused and left as it was:
 * `--out /dev/null` once replaced the machine's /dev/null with a file. */
START_TEST(writer_never_replaces_special_files)
{
    char fifo[256];
    snprintf(fifo, sizeof(fifo), "%s", in_dir("fifo"));
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    const char *t = "crux-priorities 1\nlevels 8\njob me level 1\n";
    char err[256] = "";
    ck_assert_int_eq(crux_prio_atomic_write(fifo, t, strlen(t), 0644, err, sizeof(err)),
                     CRUX_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
    struct stat sb;
    ck_assert_int_eq(lstat(fifo, &sb), 0);
    ck_assert(S_ISFIFO(sb.st_mode));
    ck_assert_int_eq(mkdir(in_dir("d"), 0700), 0);
    ck_assert_int_eq(crux_prio_atomic_write(in_dir("d"), t, strlen(t), 0644, NULL, 0),
                     CRUX_ERR_INVALID);
    ck_assert_int_eq(lstat(in_dir("d"), &sb), 0);
    ck_assert(S_ISDIR(sb.st_mode));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("prio_hostile");
    TCase *t = tcase_create("prio_hostile");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, other_jobs_bad_lines_ignored);
    tcase_add_test(t, many_jobs_linear);
    tcase_add_test(t, symlink_loop_said_once);
    tcase_add_test(t, job_id_problems_described);
    tcase_add_test(t, writer_never_follows_links);
    tcase_add_test(t, writer_never_replaces_special_files);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* The priority file (round trip, malformed files, the job's reader,
 * replacement under concurrent readers), job id resolution and profiles. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/crux_prio.h"
#include "sched/crux_profile.h"
#include "tests/unit/check_main.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/crux-prio-XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static void put(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    ck_assert_int_eq(crux_prio_atomic_write(path, text, strlen(text), 0644, NULL, 0), CRUX_OK);
}

static const char *in_dir(const char *name)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return path;
}

START_TEST(round_trip)
{
    crux_prio_kv_t kv_a[] = { { "intensity", "12.5" }, { "paths", "3,0,7" }, { "sl", "5" } };
    crux_prio_entry_t e[] = { { "job-a", 5, 3, kv_a }, { "1234", 0, 0, NULL } };
    crux_prio_file_t f = { 8, 2, e, NULL };
    char err[256];
    ck_assert_int_eq(crux_prio_write(in_dir("p"), &f, "two\nlines", err, sizeof(err)), CRUX_OK);
    crux_prio_file_t *g;
    ck_assert_int_eq(crux_prio_load(in_dir("p"), &g, err, sizeof(err)), CRUX_OK);
    ck_assert_int_eq(g->levels, 8);
    ck_assert_int_eq(g->njobs, 2);
    const crux_prio_entry_t *a = crux_prio_find(g, "job-a");
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(a->level, 5);
    ck_assert_str_eq(crux_prio_get(a, "paths"), "3,0,7");
    ck_assert_str_eq(crux_prio_get(a, "sl"), "5");
    ck_assert_ptr_null(crux_prio_get(a, "tc"));
    ck_assert_int_eq(crux_prio_find(g, "1234")->level, 0);
    ck_assert_ptr_null(crux_prio_find(g, "nope"));
    crux_prio_file_free(g);
    /* no temporary file left behind */
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) -eq 1", dir);
    ck_assert_int_eq(system(cmd), 0);
    /* bad entries are refused before anything is written */
    crux_prio_entry_t bad[] = { { "has space", 1, 0, NULL } };
    crux_prio_file_t fb = { 8, 1, bad, NULL };
    ck_assert_int_eq(crux_prio_write(in_dir("q"), &fb, NULL, NULL, 0), CRUX_ERR_INVALID);
    ck_assert_int_ne(access(in_dir("q"), F_OK), 0);
}
END_TEST

START_TEST(writer_refuses_what_readers_would)
{
    /* a table past CRUX_PRIO_MAX_FILE_BYTES: every job's reader would refuse
     * the file, so the writer must keep the last good one instead */
    put("p", "crux-priorities 1\nlevels 8\njob kept level 3\n");
    static char value[4000];
    memset(value, 'v', sizeof(value) - 1);
    crux_prio_kv_t kv[] = { { "note", value } };
    int n = (int)(CRUX_PRIO_MAX_FILE_BYTES / sizeof(value)) + 2;
    crux_prio_entry_t *e = calloc((size_t)n, sizeof(*e));
    char(*ids)[16] = calloc((size_t)n, sizeof(*ids));
    ck_assert(e != NULL && ids != NULL);
    for (int i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "job%d", i);
        e[i] = (crux_prio_entry_t){ ids[i], 1, 1, kv };
    }
    crux_prio_file_t f = { 8, n, e, NULL };
    char err[256];
    ck_assert_int_eq(crux_prio_write(in_dir("p"), &f, NULL, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "a job reads at most"));
    crux_prio_file_t *g;
    ck_assert_int_eq(crux_prio_load(in_dir("p"), &g, err, sizeof(err)), CRUX_OK);
    ck_assert_int_eq(crux_prio_find(g, "kept")->level, 3);
    crux_prio_file_free(g);
    free(e);
    free(ids);
}
END_TEST

START_TEST(parse_accepts_comments_and_unknown_keys)
{
    const char *t = "# made by hand\ncrux-priorities 1   # header\n\nlevels 4\n"
                    "job x level 3 future-key 42 tc 96\n  \tjob y level 0\n";
    crux_prio_file_t *f;
    char err[256];
    ck_assert_int_eq(crux_prio_parse(t, strlen(t), "t", &f, err, sizeof(err)), CRUX_OK);
    ck_assert_int_eq(f->njobs, 2);
    ck_assert_str_eq(crux_prio_get(crux_prio_find(f, "x"), "tc"), "96");
    crux_prio_file_free(f);
}
END_TEST

START_TEST(malformed_files)
{
    static const struct {
        const char *text, *where;
    } bad[] = {
        { "", "t:1:" },
        { "crux-priorities 2\nlevels 8\n", "t:1:" },
        { "levels 8\ncrux-priorities 1\n", "t:1:" },
        { "crux-priorities 1\nlevels 0\n", "t:2:" },
        { "crux-priorities 1\nlevels 8\njob a level 1", "t:3:" }, /* truncated */
        { "crux-priorities 1\n", "levels" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        crux_prio_file_t *f = NULL;
        char err[256] = "";
        ck_assert_int_eq(
            crux_prio_parse(bad[i].text, strlen(bad[i].text), "t", &f, err, sizeof(err)),
            CRUX_ERR_INVALID);
        ck_assert_msg(strstr(err, bad[i].where) != NULL, "case %zu: %s", i, err);
    }
    static const char nul[] = "crux-priorities 1\nlevels 8\njob a level 1\0\n";
    crux_prio_file_t *f = NULL;
    char err[256] = "";
    ck_assert_int_eq(crux_prio_parse(nul, sizeof(nul) - 1, "t", &f, err, sizeof(err)),
                     CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "NUL") != NULL, "%s", err);
}
END_TEST

/* A malformed job line costs that line only: skipped, counted, and the
 * first one described; the other jobs stay. */
START_TEST(malformed_job_lines_skipped)
{
    static const struct {
        const char *line, *where;
        int skipped;
    } bad[] = {
        { "job a level 8\n", "t:4:", 1 },
        { "job a level 1 key\n", "t:4:", 1 },
        { "job a lvl 1\n", "t:4:", 1 },
        { "job a level x\n", "t:4:", 1 },
        { "bogus\n", "t:4:", 1 },
        { "job a level 1\njob a level 2\n", "job a listed 2 times", 2 },
        /* found by fuzz_prio: a job id the writer would refuse (control
         * character) was accepted */
        { "job job-\022 level 0 sl 0\n", "t:4:", 1 },
        { "job a level 0 sl\v 0\n", "t:4:", 1 },
        /* the network settings crux acts on, range-checked */
        { "job a level 0 sl 16\n", "sl '16' not an integer in 0..15", 1 },
        { "job a level 0 sl 99999999999\n", "sl '99999999999'", 1 },
        { "job a level 0 sl -1\n", "sl '-1'", 1 },
        { "job a level 0 tc -5\n", "tc '-5' not an integer in 0..255", 1 },
        { "job a level 0 tc 256\n", "tc '256'", 1 },
        { "job a level 0 dscp 64\n", "dscp '64' not an integer in 0..63", 1 },
        { "job a level 0 sl 1x\n", "sl '1x'", 1 },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text),
                 "crux-priorities 1\nlevels 8\njob z level 7\n%sjob y level 2\n", bad[i].line);
        crux_prio_file_t *f = NULL;
        char err[256] = "";
        ck_assert_int_eq(crux_prio_parse(text, strlen(text), "t", &f, err, sizeof(err)), CRUX_OK);
        ck_assert_int_eq(f->skipped, bad[i].skipped);
        ck_assert_msg(strstr(f->skipped_why, bad[i].where) != NULL, "case %zu: %s", i,
                      f->skipped_why);
        ck_assert_int_eq(f->njobs, 2);
        ck_assert_int_eq(crux_prio_find(f, "z")->level, 7);
        ck_assert_int_eq(crux_prio_find(f, "y")->level, 2);
        ck_assert_ptr_null(crux_prio_find(f, "a"));
        /* the line of one of a's lines (4, or 5 for the second copy) */
        int line = crux_prio_skipped(f, "a");
        ck_assert_int_eq(line >= 4 && line <= 5, strstr(bad[i].line, "job a") != NULL);
        ck_assert_int_eq(crux_prio_skipped(f, "z"), 0);
        crux_prio_file_free(f);
    }
    /* the top of each range is accepted */
    const char *ok = "crux-priorities 1\nlevels 8\njob a level 0 sl 15 tc 255 dscp 63\n"
                     "job b level 0 sl 0 tc 0 dscp 0\n";
    crux_prio_file_t *f;
    ck_assert_int_eq(crux_prio_parse(ok, strlen(ok), "t", &f, NULL, 0), CRUX_OK);
    ck_assert_int_eq(f->skipped, 0);
    ck_assert_ptr_null(f->skipped_why);
    ck_assert_int_eq(f->njobs, 2);
    crux_prio_file_free(f);
}
END_TEST

static int logged;
static char last_log[512];

static void count_log(void *arg, const char *msg)
{
    (void)arg;
    logged++;
    snprintf(last_log, sizeof(last_log), "%s", msg);
}

START_TEST(reader_follows_the_file)
{
    crux_prio_reader_t *r;
    ck_assert_int_eq(crux_prio_reader_open(in_dir("prio"), "j7", 3, 0, &r), CRUX_OK);
    crux_prio_reader_set_log(r, count_log, NULL);
    logged = 0;
    /* missing file: the default level */
    ck_assert_int_eq(crux_prio_reader_state(r), CRUX_PRIO_NO_FILE);
    ck_assert_int_eq(crux_prio_reader_level(r), 3);
    ck_assert_int_eq(crux_prio_reader_poll(r), 0);
    put("prio", "crux-priorities 1\nlevels 8\njob j7 level 6 tc 192\n");
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_level(r), 6);
    ck_assert_int_eq(crux_prio_reader_levels(r), 8);
    ck_assert_str_eq(crux_prio_reader_get(r, "tc"), "192");
    ck_assert_int_eq(crux_prio_reader_poll(r), 0); /* nothing new */
    /* a malformed file: last good state kept, said once */
    put("prio", "crux-priorities 1\nlevels 8\njob j7 level 99\n");
    ck_assert_int_eq(crux_prio_reader_poll(r), 0);
    ck_assert_int_eq(crux_prio_reader_level(r), 6);
    ck_assert_int_eq(crux_prio_reader_stale(r), 1);
    ck_assert_int_eq(logged, 1);
    ck_assert_msg(strstr(last_log, ":3:") != NULL, "%s", last_log);
    crux_prio_reader_poll(r);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 1);
    /* a new bad version is reported again */
    put("prio", "crux-priorities 1\nlevels 8\njob j7 level 1");
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 2);
    ck_assert_int_eq(crux_prio_reader_level(r), 6);
    /* listed elsewhere only: default level */
    put("prio", "crux-priorities 1\nlevels 8\njob other level 7\n");
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_state(r), CRUX_PRIO_NOT_LISTED);
    ck_assert_int_eq(crux_prio_reader_level(r), 3);
    ck_assert_int_eq(crux_prio_reader_stale(r), 0);
    put("prio", "crux-priorities 1\nlevels 8\njob j7 level 2\n");
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_level(r), 2);
    ck_assert_int_eq(unlink(in_dir("prio")), 0);
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_state(r), CRUX_PRIO_NO_FILE);
    ck_assert_int_eq(crux_prio_reader_level(r), 3);
    crux_prio_reader_close(r);
}
END_TEST

/* Found by tests/mpi/faults.sh: a job's reader read a 1 GiB (sparse) file
 * put in the priority file's place whole, from inside a collective, every
 * time it changed; and a FIFO there would have blocked it for good.  Now
 * such files are refused unread, like malformed ones: the last good state
 * kept, said once per version. */
START_TEST(reader_refuses_huge_and_special_files)
{
    crux_prio_reader_t *r;
    put("prio", "crux-priorities 1\nlevels 8\njob j level 5\n");
    ck_assert_int_eq(crux_prio_reader_open(in_dir("prio"), "j", 0, 0, &r), CRUX_OK);
    crux_prio_reader_set_log(r, count_log, NULL);
    logged = 0;
    ck_assert_int_eq(crux_prio_reader_level(r), 5);
    /* huge and sparse: refused without reading */
    int fd = open(in_dir("prio"), O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)1 << 30), 0);
    close(fd);
    ck_assert_int_eq(crux_prio_reader_poll(r), 0);
    ck_assert_int_eq(crux_prio_reader_level(r), 5);
    ck_assert_int_eq(crux_prio_reader_stale(r), 1);
    ck_assert_int_eq(logged, 1);
    ck_assert_msg(strstr(last_log, "read at most") != NULL, "%s", last_log);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 1); /* said once */
    /* just over the limit, and just at it (a malformed one then) */
    fd = open(in_dir("prio"), O_WRONLY | O_TRUNC);
    ck_assert_int_eq(ftruncate(fd, (off_t)CRUX_PRIO_MAX_FILE_BYTES + 1), 0);
    close(fd);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 2);
    ck_assert_msg(strstr(last_log, "read at most") != NULL, "%s", last_log);
    crux_prio_file_t *f;
    ck_assert_int_eq(crux_prio_load(in_dir("prio"), &f, NULL, 0), CRUX_ERR_INVALID);
    /* a FIFO: must not block */
    ck_assert_int_eq(unlink(in_dir("prio")), 0);
    ck_assert_int_eq(mkfifo(in_dir("prio"), 0600), 0);
    alarm(10); /* a hang fails the test */
    ck_assert_int_eq(crux_prio_reader_poll(r), 0);
    alarm(0);
    ck_assert_int_eq(crux_prio_reader_level(r), 5);
    ck_assert_msg(strstr(last_log, "not a regular file") != NULL, "%s", last_log);
    /* a directory */
    ck_assert_int_eq(unlink(in_dir("prio")), 0);
    ck_assert_int_eq(mkdir(in_dir("prio"), 0700), 0);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(crux_prio_reader_level(r), 5);
    ck_assert_msg(strstr(last_log, "not a regular file") != NULL, "%s", last_log);
    /* good again: followed */
    ck_assert_int_eq(rmdir(in_dir("prio")), 0);
    put("prio", "crux-priorities 1\nlevels 8\njob j level 2\n");
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_level(r), 2);
    ck_assert_int_eq(crux_prio_reader_stale(r), 0);
    crux_prio_reader_close(r);
}
END_TEST

START_TEST(reader_checks_at_most_every_interval)
{
    put("prio", "crux-priorities 1\nlevels 8\njob j level 4\n");
    crux_prio_reader_t *r;
    ck_assert_int_eq(crux_prio_reader_open(in_dir("prio"), "j", 0, 3600 * 1000, &r), CRUX_OK);
    ck_assert_int_eq(crux_prio_reader_level(r), 4);
    uint64_t loads = crux_prio_reader_loads(r);
    put("prio", "crux-priorities 1\nlevels 8\njob j level 5\n");
    int looked = 0; /* one assertion: each passing one costs a write to Check's pipe */
    for (int i = 0; i < 100000; i++)
        looked += crux_prio_reader_poll(r) != 0; /* within the hour: no look */
    ck_assert_int_eq(looked, 0);
    ck_assert_int_eq(crux_prio_reader_level(r), 4);
    ck_assert_uint_eq(crux_prio_reader_loads(r), loads);
    crux_prio_reader_close(r);
    ck_assert_int_eq(crux_prio_reader_open(in_dir("prio"), "j", 0, 1, &r), CRUX_OK);
    ck_assert_int_eq(crux_prio_reader_level(r), 5);
    crux_prio_reader_close(r);
}
END_TEST

/* Version v of the test file: (v % 50) + 1 jobs, every line naming v. */
static void write_version(int v)
{
    char *text = malloc(64 * 1024), *p = text;
    int n = v % 50 + 1;
    p += sprintf(p, "crux-priorities 1\n# version %d\nlevels 8\n", v);
    for (int j = 0; j < n; j++)
        p += sprintf(p, "job j%d level %d version %d count %d pad %0*d\n", j, (v + j) % 8, v, n,
                     200, 0);
    ck_assert_int_eq(
        crux_prio_atomic_write(in_dir("prio"), text, (size_t)(p - text), 0644, NULL, 0), CRUX_OK);
    free(text);
}

/* A reader process: loads the file until `stop` exists; exits 1 when a
 * file is torn or inconsistent, 2 when it never read one. */
static void reader_loop(void)
{
    int good = 0;
    for (;;) {
        int last = access(in_dir("stop"), F_OK) == 0;
        crux_prio_file_t *f;
        crux_status_t st = crux_prio_load(in_dir("prio"), &f, NULL, 0);
        if (st != CRUX_OK)
            _exit(1);
        const char *v = crux_prio_get(&f->jobs[0], "version");
        int n = atoi(crux_prio_get(&f->jobs[0], "count"));
        if (v == NULL || f->njobs != n)
            _exit(1);
        for (int j = 0; j < f->njobs; j++)
            if (strcmp(crux_prio_get(&f->jobs[j], "version"), v) != 0 ||
                f->jobs[j].level != (atoi(v) + j) % 8)
                _exit(1);
        crux_prio_file_free(f);
        good++;
        if (last)
            _exit(good > 0 ? 0 : 2);
    }
}

START_TEST(no_torn_reads_while_replaced)
{
    write_version(0);
    pid_t kids[4];
    for (int i = 0; i < 4; i++) {
        kids[i] = fork();
        ck_assert(kids[i] >= 0);
        if (kids[i] == 0)
            reader_loop();
    }
    for (int v = 1; v <= 400; v++)
        write_version(v);
    put("stop", "");
    for (int i = 0; i < 4; i++) {
        int status;
        ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader %d saw a bad file", i);
    }
    /* and a reader handle sees whole versions too */
    crux_prio_reader_t *r;
    ck_assert_int_eq(crux_prio_reader_open(in_dir("prio"), "j0", 0, 0, &r), CRUX_OK);
    ck_assert_str_eq(crux_prio_reader_get(r, "version"), "400");
    crux_prio_reader_close(r);
}
END_TEST

START_TEST(job_id_resolution)
{
    static const char *const vars[] = {
        "CRUX_JOB_ID", "SLURM_JOB_ID",           "PBS_JOBID", "LSB_JOBID", "JOB_ID",
        "FLUX_JOB_ID", "OMPI_MCA_orte_ess_jobid"
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        unsetenv(vars[i]);
    const char *src;
    ck_assert_ptr_null(crux_prio_job_id(NULL, &src));
    setenv("OMPI_MCA_orte_ess_jobid", "3735879681", 1);
    ck_assert_str_eq(crux_prio_job_id("", &src), "3735879681");
    ck_assert_str_eq(src, "OMPI_MCA_orte_ess_jobid");
    setenv("PBS_JOBID", "77.server", 1);
    setenv("SLURM_JOB_ID", "4242", 1);
    ck_assert_str_eq(crux_prio_job_id(NULL, &src), "4242");
    ck_assert_str_eq(src, "SLURM_JOB_ID");
    setenv("CRUX_JOB_ID", "not a token", 1); /* skipped */
    ck_assert_str_eq(crux_prio_job_id(NULL, NULL), "4242");
    setenv("CRUX_JOB_ID", "train-7", 1);
    ck_assert_str_eq(crux_prio_job_id(NULL, &src), "train-7");
    ck_assert_str_eq(crux_prio_job_id("mine", &src), "mine");
    ck_assert_str_eq(src, "explicit");
}
END_TEST

START_TEST(profile_round_trip)
{
    char *hosts[] = { "hostA", "hostB" };
    int ranks[] = { 8, 4 };
    crux_profile_t p = { .job = "job-9",
                         .ranks = 12,
                         .nhosts = 2,
                         .hosts = hosts,
                         .host_ranks = ranks,
                         .window_s = 30,
                         .bytes = 6e10,
                         .coll_s = 6,
                         .gap_s = 27,
                         .period_s = 0.5,
                         .collectives = 600 };
    char err[256];
    ck_assert_int_eq(crux_profile_write(in_dir("job-9.profile"), &p, err, sizeof(err)), CRUX_OK);
    crux_profile_t q;
    ck_assert_int_eq(crux_profile_load(in_dir("job-9.profile"), &q, err, sizeof(err)), CRUX_OK);
    ck_assert_str_eq(q.job, "job-9");
    ck_assert_int_eq(q.ranks, 12);
    ck_assert_int_eq(q.nhosts, 2);
    ck_assert_str_eq(q.hosts[1], "hostB");
    ck_assert_int_eq(q.host_ranks[1], 4);
    ck_assert_double_eq(q.bytes, 6e10);
    ck_assert_uint_eq(q.collectives, 600);
    crux_profile_iter_t it;
    ck_assert_int_eq(crux_profile_per_iteration(&q, &it), CRUX_OK);
    ck_assert_double_eq_tol(it.iterations, 60, 1e-9);
    ck_assert_double_eq_tol(it.bytes, 1e9, 1e-3);
    ck_assert_double_eq_tol(it.compute_s, 0.45, 1e-12);
    ck_assert_double_eq_tol(it.comm_s, 0.1, 1e-12);
    ck_assert_double_eq_tol(it.overlap, 0.05 / 0.45, 1e-12); /* 0.55 s of work in 0.5 s */
    ck_assert_double_eq_tol(it.bytes_per_collective, 1e8, 1e-3);
    crux_profile_clear(&q);
}
END_TEST

/* A line bound to a uid is applied only by that user's processes: another
 * user's job of the same id gets the default level, said once per version
 * of the file; an unbound line, or one of this uid, is applied; a uid that
 * is not one costs the line. */
START_TEST(reader_applies_only_its_users_line)
{
    crux_prio_reader_t *r;
    char line[160];
    ck_assert_int_eq(crux_prio_reader_open(in_dir("prio"), "j7", 1, 0, &r), CRUX_OK);
    crux_prio_reader_set_log(r, count_log, NULL);
    logged = 0;
    snprintf(line, sizeof(line), "crux-priorities 1\nlevels 8\njob j7 level 6 dscp 46 uid %u\n",
             (unsigned)getuid() + 1);
    put("prio", line);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(crux_prio_reader_state(r), CRUX_PRIO_NOT_LISTED);
    ck_assert_int_eq(crux_prio_reader_level(r), 1);
    ck_assert_ptr_null(crux_prio_reader_get(r, "dscp"));
    ck_assert_int_eq(logged, 1);
    ck_assert_msg(strstr(last_log, "belongs to uid") != NULL, "%s", last_log);
    crux_prio_reader_poll(r);
    ck_assert_int_eq(logged, 1);
    snprintf(line, sizeof(line), "crux-priorities 1\nlevels 8\njob j7 level 6 dscp 46 uid %u\n",
             (unsigned)getuid());
    put("prio", line);
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_level(r), 6);
    put("prio", "crux-priorities 1\nlevels 8\njob j7 level 5\n");
    ck_assert_int_eq(crux_prio_reader_poll(r), 1);
    ck_assert_int_eq(crux_prio_reader_level(r), 5);
    put("prio", "crux-priorities 1\nlevels 8\njob j7 level 4 uid me\n");
    crux_prio_reader_poll(r);
    ck_assert_int_eq(crux_prio_reader_level(r), 5); /* its own line malformed: kept */
    crux_prio_reader_close(r);
}
END_TEST

/* A profile tells how a job runs: its owner's alone (0600), or also the
 * group's of a set-group-ID directory (0640, the scheduler's group there);
 * a symbolic link in a profile's place is refused, not followed. */
START_TEST(profile_modes)
{
    char *hosts[] = { "hostA" };
    int ranks[] = { 1 };
    crux_profile_t p = { .job = "j",
                         .ranks = 1,
                         .nhosts = 1,
                         .hosts = hosts,
                         .host_ranks = ranks,
                         .window_s = 1,
                         .period_s = 1 };
    char err[256], path[300];
    struct stat sb;
    ck_assert_int_eq(crux_profile_write(in_dir("j.profile"), &p, err, sizeof(err)), CRUX_OK);
    ck_assert_int_eq(stat(in_dir("j.profile"), &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0600);
    ck_assert_int_eq(mkdir(in_dir("sgid"), 0700), 0);
    ck_assert_int_eq(chmod(in_dir("sgid"), 02770), 0);
    snprintf(path, sizeof(path), "%s/j.profile", in_dir("sgid"));
    ck_assert_int_eq(crux_profile_write(path, &p, err, sizeof(err)), CRUX_OK);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0640);
    crux_profile_t q;
    ck_assert_int_eq(symlink(path, in_dir("link.profile")), 0);
    ck_assert_int_eq(crux_profile_load(in_dir("link.profile"), &q, err, sizeof(err)),
                     CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "a symbolic link") != NULL, "%s", err);
}
END_TEST

START_TEST(profile_malformed)
{
    static const char *const bad[] = {
        "crux-profile 2\n",
        "crux-profile 1\njob a\nranks 2\nhosts h:1,g:1\nwindow_s 1\ncollectives 1\nbytes 1\n"
        "coll_s 1\ngap_s 1\n", /* no period_s */
        "crux-profile 1\njob a\nranks 3\nhosts h:1,g:1\nwindow_s 1\ncollectives 1\nbytes 1\n"
        "coll_s 1\ngap_s 1\nperiod_s 1\n", /* ranks != sum */
        "crux-profile 1\njob a\nranks 2\nhosts h:1,h:1\nwindow_s 1\ncollectives 1\nbytes 1\n"
        "coll_s 1\ngap_s 1\nperiod_s 1\n", /* host twice */
        "crux-profile 1\njob a\nranks 2\nhosts h:1,g:1\nwindow_s -1\ncollectives 1\nbytes 1\n"
        "coll_s 1\ngap_s 1\nperiod_s 1\n",
        "crux-profile 1\njob a b\n",
        /* found by fuzz_profile: counts beyond uint64_t were converted
         * (undefined behaviour) instead of refused */
        "crux-profile 1\njob a\nranks 2\nhosts h:2\nwindow_s 1\ncollectives 3e115\nbytes 1\n"
        "coll_s 1\ngap_s 1\nperiod_s 1\n",
        "crux-profile 1\njob a\nranks 2\nhosts h:2\nwindow_s 1\ncollectives -5\nbytes 1\n"
        "coll_s 1\ngap_s 1\nperiod_s 1\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        crux_profile_t p;
        char err[256] = "";
        ck_assert_int_eq(crux_profile_parse(bad[i], strlen(bad[i]), "pf", &p, err, sizeof(err)),
                         CRUX_ERR_INVALID);
        ck_assert_msg(strncmp(err, "pf", 2) == 0, "case %zu: %s", i, err);
    }
    const char *ok = "crux-profile 1\njob a\nranks 2\nhosts h:1,g:1\nwindow_s 1\n"
                     "collectives 1\nbytes 1\ncoll_s 1\ngap_s 1\nperiod_s 1\nnew_key 5\n";
    crux_profile_t p;
    ck_assert_int_eq(crux_profile_parse(ok, strlen(ok), "pf", &p, NULL, 0), CRUX_OK);
    crux_profile_clear(&p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("prio");
    TCase *t = tcase_create("prio");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, round_trip);
    tcase_add_test(t, parse_accepts_comments_and_unknown_keys);
    tcase_add_test(t, malformed_files);
    tcase_add_test(t, malformed_job_lines_skipped);
    tcase_add_test(t, reader_follows_the_file);
    tcase_add_test(t, reader_refuses_huge_and_special_files);
    tcase_add_test(t, writer_refuses_what_readers_would);
    tcase_add_test(t, reader_checks_at_most_every_interval);
    tcase_add_test(t, no_torn_reads_while_replaced);
    tcase_add_test(t, job_id_resolution);
    tcase_add_test(t, profile_round_trip);
    tcase_add_test(t, profile_malformed);
    tcase_add_test(t, reader_applies_only_its_users_line);
    tcase_add_test(t, profile_modes);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

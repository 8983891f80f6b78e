/* The arbitration table as attack surface: what another local user can put
 * under its name (a link, their own file, a FIFO) and hostile contents are
 * refused before use, by crux_arb_open and by crux-sched status, without a
 * crash.  The cases with a second user run as root: a user made for the
 * test (useradd, removed at the end) plants the files, both in a
 * world-writable directory without the sticky bit (where the kernel's
 * fs.protected_symlinks/protected_regular never apply, so crux's own checks
 * are what refuses) and in /dev/shm. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/runtime/crux_arb_table.h"
#include "sched/crux_arb.h"
#include "tests/unit/check_main.h"
#include "tests/unit/other_user.h"

static char dir[64], path[128];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/crux-arbf-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    /* world-writable, no sticky bit: the second user can plant files */
    ck_assert_int_eq(chmod(dir, 0777), 0);
    snprintf(path, sizeof(path), "%s/arb", dir);
}

static void teardown(void)
{
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Run `what` as the second user in a child; 1 when it succeeded. */
static int as_other(int (*what)(const char *a, const char *b), const char *a, const char *b)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (other_user_become() != 0)
            _exit(3);
        _exit(what(a, b) == 0 ? 0 : 4);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int plant_link(const char *target, const char *at)
{
    return symlink(target, at);
}

/* The other user's own table, open to everyone (as crux made it, then
 * widened: a table a job would otherwise adopt). */
static int plant_table(const char *at, const char *unused)
{
    (void)unused;
    crux_arb_t *a;
    if (crux_arb_open(at, 0, &a, NULL, 0) != CRUX_OK)
        return -1;
    crux_arb_close(a);
    return chmod(at, 0666);
}

/* crux-sched status --arb p [--json], stdout into out (may be NULL): its
 * exit status, or 128 + signal. */
static int status_out(const char *p, const char *json, const char *out)
{
    const char *b = getenv("CRUX_BUILDDIR");
    char tool[PATH_MAX];
    snprintf(tool, sizeof(tool), "%s/sched/crux-sched", b ? b : "..");
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        int o = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600) : null;
        dup2(o, 1);
        dup2(null, 2);
        execl(tool, tool, "status", "--arb", p, json, (char *)NULL);
        _exit(127);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

static int status_tool(const char *p)
{
    return status_out(p, NULL, NULL);
}

/* The first line of a file, into line. */
static void first_line(const char *file, char *line, size_t len)
{
    FILE *f = fopen(file, "r");
    ck_assert_ptr_nonnull(f);
    if (fgets(line, (int)len, f) == NULL)
        line[0] = '\0';
    fclose(f);
}

static crux_status_t try_open(const char *p, char *err, size_t errlen)
{
    crux_arb_t *a = NULL;
    crux_status_t st = crux_arb_open(p, 0, &a, err, errlen);
    if (st == CRUX_OK)
        crux_arb_close(a);
    return st;
}

START_TEST(created_0600_exclusive)
{
    mode_t old = umask(0); /* the umask cannot widen it */
    crux_arb_t *a;
    ck_assert_int_eq(crux_arb_open(path, 0, &a, NULL, 0), CRUX_OK);
    umask(old);
    struct stat sb;
    ck_assert_int_eq(lstat(path, &sb), 0);
    ck_assert(S_ISREG(sb.st_mode));
    ck_assert_uint_eq(sb.st_mode & 07777, 0600);
    ck_assert_uint_eq(sb.st_uid, geteuid());
    crux_arb_close(a);
    /* and reopened as it is */
    ck_assert_int_eq(try_open(path, NULL, 0), CRUX_OK);
    char out[160], line[256], want[200];
    snprintf(out, sizeof(out), "%s/out", dir);
    ck_assert_int_eq(status_out(path, NULL, out), 0);
    first_line(out, line, sizeof(line));
    snprintf(want, sizeof(want), "%s: 0 entries\n", path);
    ck_assert_str_eq(line, want);
    ck_assert_int_eq(status_out(path, "--json", out), 0);
    first_line(out, line, sizeof(line));
    ck_assert_str_eq(line, "[\n");
}
END_TEST

START_TEST(status_never_creates)
{
    crux_arb_t *a;
    char err[256] = "";
    ck_assert_int_eq(crux_arb_open(path, CRUX_ARB_NO_CREATE, &a, err, sizeof(err)),
                     CRUX_ERR_NOT_FOUND);
    ck_assert_int_eq(status_tool(path), 1);
    ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

/* The whole file, for comparing before and after. */
static void slurp(const char *p, char *buf, size_t len, size_t *got)
{
    int fd = open(p, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ssize_t n = read(fd, buf, len);
    ck_assert_int_ge(n, 0);
    *got = (size_t)n;
    close(fd);
}

START_TEST(read_only_writes_nothing)
{
    crux_arb_t *a;
    char err[256] = "";
    /* an empty file (its creator died before sizing it) stays empty */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(crux_arb_open(path, CRUX_ARB_READ_ONLY, &a, err, sizeof(err)),
                     CRUX_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err, "never initialised") != NULL, "%s", err);
    ck_assert_int_eq(status_tool(path), 1);
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_size, 0);
    /* sized but all zero: not initialised by a reader */
    ck_assert_int_eq(truncate(path, sizeof(arb_table_t)), 0);
    ck_assert_int_eq(crux_arb_open(path, CRUX_ARB_READ_ONLY, &a, NULL, 0), CRUX_ERR_NOT_FOUND);
    ck_assert_int_eq(status_tool(path), 1);
    static char before[sizeof(arb_table_t) + 1], after[sizeof(arb_table_t) + 1];
    size_t nb, na;
    slurp(path, after, sizeof(after), &na);
    ck_assert_uint_eq(na, sizeof(arb_table_t));
    for (size_t i = 0; i < na; i++)
        ck_assert_int_eq(after[i], 0);
    unlink(path);
    /* a live table with an active entry of ours and one of a dead process */
    crux_arb_t *w;
    int id;
    crux_arb_ticket_t tk;
    ck_assert_int_eq(crux_arb_open(path, 0, &w, NULL, 0), CRUX_OK);
    ck_assert_int_eq(crux_arb_resource(w, "hostmem", &id), CRUX_OK);
    ck_assert_int_eq(crux_arb_acquire(w, id, 3, "job-a", 1000000, &tk), CRUX_OK);
    pid_t dead = fork();
    ck_assert_int_ge(dead, 0);
    if (dead == 0)
        _exit(0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    fd = open(path, O_RDWR);
    arb_table_t *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ck_assert_ptr_ne(t, MAP_FAILED);
    close(fd);
    t->e[9] = (arb_entry_t){ CRUX_ARB_ACTIVE, id, 5, dead, 0, 0, "gone" };
    slurp(path, before, sizeof(before), &nb);
    ck_assert_int_eq(crux_arb_open(path, CRUX_ARB_READ_ONLY, &a, err, sizeof(err)), CRUX_OK);
    crux_arb_entry_t e[CRUX_ARB_MAX_ENTRIES];
    int n = -1;
    ck_assert_int_eq(crux_arb_snapshot(a, e, CRUX_ARB_MAX_ENTRIES, &n), CRUX_OK);
    ck_assert_int_eq(n, 1); /* the dead one is skipped */
    ck_assert_str_eq(e[0].job, "job-a");
    ck_assert_int_eq(e[0].level, 3);
    /* a read-only handle takes no part in arbitration */
    ck_assert_int_eq(crux_arb_resource(a, "pcie:0", &id), CRUX_ERR_INVALID);
    crux_arb_ticket_t tk2;
    ck_assert_int_eq(crux_arb_acquire(a, 0, 1, "x", 1000, &tk2), CRUX_ERR_INVALID);
    crux_arb_close(a);
    ck_assert_int_eq(status_tool(path), 0);
    slurp(path, after, sizeof(after), &na);
    ck_assert_uint_eq(na, nb);
    ck_assert(memcmp(before, after, nb) == 0); /* the dead entry is still there */
    ck_assert_int_eq(t->e[9].state, CRUX_ARB_ACTIVE);
    munmap(t, sizeof(*t));
    crux_arb_release(w, &tk);
    crux_arb_close(w);
}
END_TEST

START_TEST(links_and_odd_files_refused)
{
    char target[160], err[256] = "";
    snprintf(target, sizeof(target), "%s/pwned", dir);
    /* a dangling link: following it would create the target */
    ck_assert_int_eq(symlink(target, path), 0);
    ck_assert_int_eq(try_open(path, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "symbolic link") != NULL, "%s", err);
    ck_assert_int_eq(access(target, F_OK), -1);
    ck_assert_int_eq(status_tool(path), 2);
    ck_assert_int_eq(access(target, F_OK), -1);
    /* a link to a good table of ours */
    ck_assert_int_eq(try_open(target, NULL, 0), CRUX_OK);
    ck_assert_int_eq(try_open(path, NULL, 0), CRUX_ERR_INVALID);
    ck_assert_int_eq(status_tool(path), 2);
    unlink(path);
    /* a second hard link to it */
    ck_assert_int_eq(link(target, path), 0);
    ck_assert_int_eq(try_open(path, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "hard links") != NULL, "%s", err);
    unlink(path);
    unlink(target);
    /* a FIFO (must not block) and a directory */
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(try_open(path, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);
    ck_assert_int_eq(status_tool(path), 2);
    unlink(path);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_ne(try_open(path, NULL, 0), CRUX_OK);
    rmdir(path);
    /* our own table with a wider mode */
    ck_assert_int_eq(try_open(path, NULL, 0), CRUX_OK);
    ck_assert_int_eq(chmod(path, 0644), 0);
    ck_assert_int_eq(try_open(path, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "mode 0644") != NULL, "%s", err);
    ck_assert_int_eq(status_tool(path), 2);
    /* another size */
    ck_assert_int_eq(chmod(path, 0600), 0);
    ck_assert_int_eq(truncate(path, 4096), 0);
    ck_assert_int_eq(try_open(path, NULL, 0), CRUX_ERR_INVALID);
}
END_TEST

/* Damage one field of a fresh table through a mapping. */
typedef void (*damage_fn)(arb_table_t *t);
static void nres_max(arb_table_t *t)
{
    t->nres = INT32_MAX;
}
static void nres_neg(arb_table_t *t)
{
    t->nres = -5;
}
static void far_resource(arb_table_t *t)
{
    t->e[7] = (arb_entry_t){ CRUX_ARB_ACTIVE, 1000000, 3, getpid(), 0, 0, "evil" };
}
static void neg_resource(arb_table_t *t)
{
    t->e[0] = (arb_entry_t){ CRUX_ARB_WAITING, -1, 3, getpid(), 0, 0, "evil" };
}
static void bad_level(arb_table_t *t)
{
    t->e[255] = (arb_entry_t){ CRUX_ARB_ACTIVE, 0, -7, getpid(), 0, 0, "evil" };
}
static void huge_level(arb_table_t *t)
{
    t->e[3] = (arb_entry_t){ CRUX_ARB_ACTIVE, 0, INT32_MAX, getpid(), 0, 0, "evil" };
}
static void bad_pid(arb_table_t *t)
{
    t->e[3] = (arb_entry_t){ CRUX_ARB_ACTIVE, 0, 1, -1, 0, 0, "evil" };
}
static void bad_state(arb_table_t *t)
{
    t->e[3] = (arb_entry_t){ 77, 0, 1, getpid(), 0, 0, "evil" };
}
static void unterminated_job(arb_table_t *t)
{
    t->e[3] = (arb_entry_t){ CRUX_ARB_ACTIVE, 0, 1, getpid(), 0, 0, "" };
    memset(t->e[3].job, 'j', sizeof(t->e[3].job));
}
static void unterminated_name(arb_table_t *t)
{
    memset(t->res[0], 'r', sizeof(t->res[0]));
}
static void bad_version(arb_table_t *t)
{
    t->version = 99;
}

START_TEST(hostile_contents_refused)
{
    static const struct {
        damage_fn fn;
        const char *why;
    } cases[] = {
        { nres_max, "resource count 2147483647" },
        { nres_neg, "resource count -5" },
        { far_resource, "resource 1000000" },
        { neg_resource, "resource -1" },
        { bad_level, "level -7" },
        { huge_level, "level 2147483647" },
        { bad_pid, "pid -1" },
        { bad_state, "state 77" },
        { unterminated_job, "job name" },
        { unterminated_name, "resource 0 has no valid name" },
        { bad_version, "not a crux arbitration table" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unlink(path);
        crux_arb_t *a;
        int id;
        ck_assert_int_eq(crux_arb_open(path, 0, &a, NULL, 0), CRUX_OK);
        ck_assert_int_eq(crux_arb_resource(a, "hostmem", &id), CRUX_OK);
        crux_arb_close(a);
        int fd = open(path, O_RDWR);
        ck_assert_int_ge(fd, 0);
        arb_table_t *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ck_assert_ptr_ne(t, MAP_FAILED);
        close(fd);
        cases[i].fn(t);
        munmap(t, sizeof(*t));
        char err[256] = "";
        ck_assert_int_eq(try_open(path, err, sizeof(err)), CRUX_ERR_INVALID);
        ck_assert_msg(strstr(err, cases[i].why) != NULL, "case %zu: %s", i, err);
        ck_assert_int_eq(status_tool(path), 2);
    }
}
END_TEST

/* A second user plants the table's name in `where`; root's job refuses it
 * and creates nothing through it. */
static void foreign_plants(const char *where)
{
    if (other_user[0] == '\0') {
        printf("# skipped: needs root and useradd for a second user\n");
        return;
    }
    char at[160], target[160], err[256] = "";
    snprintf(at, sizeof(at), "%s/crux-arb-test-%d", where, (int)getpid());
    snprintf(target, sizeof(target), "%s/crux-pwned-%d", dir, (int)getpid());
    unlink(at);
    /* a link to where root would create a file */
    ck_assert(as_other(plant_link, target, at));
    ck_assert_int_eq(try_open(at, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_int_eq(access(target, F_OK), -1);
    ck_assert_int_eq(status_tool(at), 2);
    ck_assert_int_eq(access(target, F_OK), -1);
    ck_assert_int_eq(unlink(at), 0);
    /* their own table, readable and writable by all */
    ck_assert(as_other(plant_table, at, NULL));
    ck_assert_int_eq(try_open(at, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "owned by uid") != NULL, "%s", err);
    ck_assert_int_eq(status_tool(at), 2);
    /* and in the default place too: $CRUX_ARB_PATH at it */
    setenv("CRUX_ARB_PATH", at, 1);
    crux_arb_t *a = NULL;
    ck_assert_int_eq(crux_arb_open(NULL, 0, &a, NULL, 0), CRUX_ERR_INVALID);
    unsetenv("CRUX_ARB_PATH");
    unlink(at);
}

START_TEST(foreign_user_in_plain_dir)
{
    foreign_plants(dir);
}
END_TEST

START_TEST(foreign_user_in_dev_shm)
{
    foreign_plants("/dev/shm");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("arb_files");
    TCase *t = tcase_create("arb_files");
    tcase_add_unchecked_fixture(t, other_user_make, other_user_remove);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, created_0600_exclusive);
    tcase_add_test(t, status_never_creates);
    tcase_add_test(t, read_only_writes_nothing);
    tcase_add_test(t, links_and_odd_files_refused);
    tcase_add_test(t, hostile_contents_refused);
    tcase_add_test(t, foreign_user_in_plain_dir);
    tcase_add_test(t, foreign_user_in_dev_shm);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* The calibration cache as attack surface: its default place is
 * /tmp/crux-<uid>/, which another local user can make first.  crux must not
 * write through their directory or their links, nor read their figures.
 * The second user is made for the test (useradd, removed at the end; root
 * only); the cases that need no second user run everywhere. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crux_file.h"
#include "tests/unit/check_main.h"
#include "tests/unit/other_user.h"
#include "ucx_tl/plan/crux_tl_plan_internal.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/crux-calibf-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chmod(dir, 0777), 0); /* no sticky bit: others can plant */
}

static void teardown(void)
{
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Runs a shell command as the second user; 1 when it succeeded. */
static int as_other(const char *command)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (other_user_become() != 0)
            _exit(3);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Stores one channel's figures under path. */
static void store(const char *path, double bandwidth)
{
    const char *signature = "cma-get";
    crux_tl_chan_attr_t attr = { .bandwidth = bandwidth, .latency = 1e-6, .chunk_cost = 1e-7 };
    const crux_tl_chan_attr_t *attrs[] = { &attr };
    crux_tl_calib_write(path, &signature, attrs, 1);
}

/* Looks the channel up; returns what the lookup found (1) or not (0). */
static int lookup(const char *path, crux_tl_chan_attr_t *attr)
{
    memset(attr, 0, sizeof(*attr));
    return crux_tl_calib_read(path, "cma-get", attr);
}

/* Stores one channel's figures under path, then looks them up; returns
 * what the lookup found (1) or not (0). */
static int store_and_lookup(const char *path, double bandwidth)
{
    crux_tl_chan_attr_t attr;
    store(path, bandwidth);
    int found = lookup(path, &attr);
    ck_assert(!found || attr.bandwidth == bandwidth);
    return found;
}

START_TEST(private_dir_round_trip)
{
    char sub[128], path[160];
    snprintf(sub, sizeof(sub), "%s/mine", dir);
    snprintf(path, sizeof(path), "%s/calibration-h", sub);
    ck_assert_int_eq(store_and_lookup(path, 5e9), 1);
    struct stat sb;
    ck_assert_int_eq(stat(sub, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0700);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0077, 0);
}
END_TEST

START_TEST(links_and_open_dirs_refused)
{
    char sub[128], path[160], lock[170], target[160];
    snprintf(sub, sizeof(sub), "%s/mine", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(path, sizeof(path), "%s/calibration-h", sub);
    snprintf(lock, sizeof(lock), "%s.lock", path);
    snprintf(target, sizeof(target), "%s/victim", dir);
    /* a link in place of the lock file: not followed, nothing stored */
    ck_assert_int_eq(symlink(target, lock), 0);
    ck_assert_int_eq(store_and_lookup(path, 5e9), 0);
    ck_assert_int_eq(access(target, F_OK), -1);
    unlink(lock);
    /* a link in place of the cache: figures behind it are not read */
    FILE *f = fopen(target, "w");
    fputs("crux-calibration 1\ncma-get 1e3 1 1\n", f);
    fclose(f);
    chmod(target, 0600);
    ck_assert_int_eq(symlink(target, path), 0);
    crux_tl_chan_attr_t attr;
    ck_assert_int_eq(lookup(path, &attr), 0);
    unlink(path);
    /* a directory writable by others (the test's own, 0777 without the
     * sticky bit) is neither written nor read */
    char open_path[160];
    snprintf(open_path, sizeof(open_path), "%s/calibration-h", dir);
    ck_assert_int_eq(store_and_lookup(open_path, 5e9), 0);
    ck_assert_int_eq(access(open_path, F_OK), -1);
    char why[256];
    ck_assert_int_eq(crux_dir_safe(dir, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "writable by other users") != NULL, "%s", why);
    ck_assert_int_eq(crux_dir_safe("/tmp", NULL, 0), 0); /* root's, sticky */
    /* a FIFO in the cache's place does not block the lookup */
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(lookup(path, &attr), 0);
}
END_TEST

START_TEST(foreign_directory_in_tmp)
{
    if (other_user[0] == '\0') {
        printf("# skipped: needs root and useradd for a second user\n");
        return;
    }
    /* the other user makes the cache directory first, open to all, with a
     * link where the lock goes and their own figures as the cache */
    char theirs[128], path[160], target[160], cmd[1024];
    snprintf(theirs, sizeof(theirs), "%s/crux-0", dir);
    snprintf(path, sizeof(path), "%s/calibration-h", theirs);
    snprintf(target, sizeof(target), "%s/pwned", dir);
    snprintf(cmd, sizeof(cmd),
             "mkdir -m 0777 %s && ln -s %s %s.lock && "
             "printf 'crux-calibration 1\\ncma-get 1e3 1 1\\n' >%s && chmod 0666 %s",
             theirs, target, path, path, path);
    ck_assert(as_other(cmd));
    crux_tl_chan_attr_t attr;
    ck_assert_int_eq(lookup(path, &attr), 0); /* their figures unread */
    store(path, 5e9);
    ck_assert_int_eq(access(target, F_OK), -1); /* nothing created through the link */
    char why[256];
    ck_assert_int_eq(crux_dir_safe(theirs, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "owned by another user") != NULL, "%s", why);
    /* their file, even in a safe directory, is not ours to open */
    char mine[128], their_file[160];
    snprintf(mine, sizeof(mine), "%s/mine", dir);
    ck_assert_int_eq(mkdir(mine, 0755), 0);
    snprintf(their_file, sizeof(their_file), "%s/f", mine);
    ck_assert_int_eq(close(open(their_file, O_CREAT | O_WRONLY, 0600)), 0);
    ck_assert_int_eq(chown(their_file, other_uid, other_gid), 0);
    ck_assert_int_eq(crux_open_own(their_file, O_RDONLY, 0), -1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("calib_files");
    TCase *t = tcase_create("calib_files");
    tcase_add_unchecked_fixture(t, other_user_make, other_user_remove);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, private_dir_round_trip);
    tcase_add_test(t, links_and_open_dirs_refused);
    tcase_add_test(t, foreign_directory_in_tmp);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

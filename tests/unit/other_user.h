/* A second local user for tests of files in shared places: made for the
 * test run with useradd (root only; other_user[0] stays '\0' elsewhere, or
 * when useradd fails) and removed at its end.  Header-only, for Check's
 * unchecked fixtures. */
#ifndef CRUX_TESTS_OTHER_USER_H
#define CRUX_TESTS_OTHER_USER_H

#define _GNU_SOURCE /* setresuid, setgroups */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* the user's name: this prefix and the test's pid */
#ifndef OTHER_USER_PREFIX
#define OTHER_USER_PREFIX "cruxo"
#endif

static char other_user[32];
static uid_t other_uid;
static gid_t other_gid;

/* `id -OPT USER`'s number, 0 when it cannot be had. */
static unsigned other_user_id(const char *opt)
{
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "id %s %s", opt, other_user);
    FILE *p = popen(cmd, "r");
    unsigned u = 0;
    if (p == NULL || fscanf(p, "%u", &u) != 1) {
        u = 0;
    }
    if (p != NULL) {
        pclose(p);
    }
    return u;
}

static void other_user_make(void)
{
    if (geteuid() != 0) {
        return;
    }
    snprintf(other_user, sizeof(other_user), OTHER_USER_PREFIX "%d", (int)getpid());
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "useradd -M -N -s /bin/false %s 2>/dev/null", other_user);
    if (system(cmd) != 0) {
        other_user[0] = '\0';
        return;
    }
    other_uid = (uid_t)other_user_id("-u");
    other_gid = (gid_t)other_user_id("-g");
}

static void other_user_remove(void)
{
    if (other_user[0] == '\0') {
        return;
    }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "userdel %s 2>/dev/null", other_user);
    if (system(cmd) != 0) {
        fprintf(stderr, "# could not remove user %s\n", other_user);
    }
}

/* In a child: become the second user, with umask 0; 0 on success. */
static int other_user_become(void)
{
    if (setgroups(0, NULL) != 0 || setresgid(other_gid, other_gid, other_gid) != 0 ||
        setresuid(other_uid, other_uid, other_uid) != 0) {
        return -1;
    }
    umask(0);
    return 0;
}

#endif

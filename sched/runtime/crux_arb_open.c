/* Opening the arbitration table.  It lives in a shared, world-writable
 * place (/dev/shm), so another local user may have put anything under its
 * name: a symbolic link to a file of ours, their own file, a FIFO, a table
 * with hostile counts.  It is created exclusively without following links
 * (mode 0600), and an existing one is used only when it is a regular file of
 * ours with mode 0600, the exact size, and a header and entries that all
 * validate; anything else is refused before a byte of it is trusted. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crux_err.h"
#include "sched/runtime/crux_arb_table.h"
#include "sched/crux_arb.h"

const char *crux_arb_default_path(char *buf, size_t len)
{
    const char *env = getenv("CRUX_ARB_PATH");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else
        snprintf(buf, len, "/dev/shm/crux-arb-%u", (unsigned)geteuid());
    return buf;
}

static int init_table(arb_table_t *t)
{
    memset(t, 0, sizeof(*t));
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    int rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) ||
             pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) ||
             pthread_mutex_init(&t->lock, &a);
    pthread_mutexattr_destroy(&a);
    if (rc)
        return -1;
    t->version = ARB_VERSION;
    t->size = sizeof(*t);
    t->magic = ARB_MAGIC; /* last: marks the table initialised */
    return 0;
}

/* A NUL within the first len bytes. */
static int terminated(const char *s, size_t len)
{
    return memchr(s, '\0', len) != NULL;
}

/* The file is a regular file of ours, mode 0600, one link. */
static int file_ok(const struct stat *sb, char *why, size_t len)
{
    if (!S_ISREG(sb->st_mode))
        snprintf(why, len, "not a regular file");
    else if (sb->st_uid != geteuid())
        snprintf(why, len, "owned by uid %u, not %u", (unsigned)sb->st_uid, (unsigned)geteuid());
    else if ((sb->st_mode & 07777) != 0600)
        snprintf(why, len, "mode %04o, not 0600", (unsigned)(sb->st_mode & 07777));
    else if (sb->st_nlink != 1)
        snprintf(why, len, "%u hard links, not 1", (unsigned)sb->st_nlink);
    else
        return 0;
    return -1;
}

#define REFUSE(...)                                   \
    do {                                              \
        char why_[400];                               \
        snprintf(why_, sizeof(why_), __VA_ARGS__);    \
        crux_errf(err, errlen, "%s: %s", path, why_); \
        st = CRUX_ERR_INVALID;                        \
        goto out;                                     \
    } while (0)

/* The header is ours in layout: checked first, without the lock, since a
 * table that is not ours has no usable mutex either. */
static int header_ok(const arb_table_t *t, char *why, size_t len)
{
    if (t->magic != ARB_MAGIC || t->version != ARB_VERSION || t->size != sizeof(*t)) {
        snprintf(why, len, "not a crux arbitration table of version %d", ARB_VERSION);
        return -1;
    }
    return 0;
}

int arb_check_entries(const arb_table_t *t, char *why, size_t len)
{
    int32_t nres = t->nres;
    if (nres < 0 || nres > CRUX_ARB_MAX_RESOURCES) {
        snprintf(why, len, "resource count %d not in 0..%d", (int)nres, CRUX_ARB_MAX_RESOURCES);
        return -1;
    }
    for (int i = 0; i < nres; i++)
        if (!terminated(t->res[i], CRUX_ARB_NAME_LEN) || t->res[i][0] == '\0') {
            snprintf(why, len, "resource %d has no valid name", i);
            return -1;
        }
    for (int i = 0; i < CRUX_ARB_MAX_ENTRIES; i++) {
        const arb_entry_t *e = &t->e[i];
        if (e->state == 0)
            continue;
        if (e->state != CRUX_ARB_ACTIVE && e->state != CRUX_ARB_WAITING)
            snprintf(why, len, "entry %d: state %d", i, (int)e->state);
        else if (e->resource < 0 || e->resource >= nres)
            snprintf(why, len, "entry %d: resource %d not in 0..%d", i, (int)e->resource,
                     (int)nres - 1);
        else if (e->level < 0 || e->level > CRUX_ARB_MAX_LEVEL)
            snprintf(why, len, "entry %d: level %d not in 0..%d", i, (int)e->level,
                     CRUX_ARB_MAX_LEVEL);
        else if (e->pid <= 0)
            snprintf(why, len, "entry %d: pid %d", i, (int)e->pid);
        else if (!terminated(e->job, CRUX_ARB_JOB_LEN))
            snprintf(why, len, "entry %d: job name not terminated", i);
        else
            continue;
        return -1;
    }
    return 0;
}

/* Every field in range, on a stable copy: not under the table's lock, whose
 * holder may be stopped; on failure `why` says which field. */
static int validate(const arb_table_t *t, char *why, size_t len)
{
    arb_table_t *copy = malloc(sizeof(*copy));
    if (copy == NULL) {
        snprintf(why, len, "out of memory");
        return -1;
    }
    arb_copy_stable(t, copy);
    int rc = header_ok(copy, why, len) != 0 || arb_check_entries(copy, why, len) != 0 ? -1 : 0;
    free(copy);
    return rc;
}

/* flock, waiting at most CRUX_ARB_LOCK_WAIT_NS: a job stopped while it
 * initialises the table must not hold the next one's open. */
static int flock_bounded(int fd, int op)
{
    for (int ms = 0; ms < (int)(CRUX_ARB_LOCK_WAIT_NS / 1000000); ms++) {
        if (flock(fd, op | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        usleep(1000);
    }
    errno = ETIMEDOUT;
    return -1;
}

void arb_copy_stable(const arb_table_t *t, arb_table_t *out)
{
    /* Without the lock a reader may catch a holder between two stores:
     * copy until two copies of the contents agree (at most a few tries;
     * the last copy is validated field by field all the same). */
    const size_t from = offsetof(arb_table_t, nres), n = sizeof(*t) - from;
    for (int tries = 0; tries < 16; tries++) {
        memcpy(out, t, sizeof(*t));
        if (memcmp((const char *)out + from, (const char *)t + from, n) == 0)
            break;
    }
}

/* Why open(PATH, ...|O_NOFOLLOW) failed, said in ERR; errno is its error. */
static crux_status_t open_failed(const char *path, char *err, size_t errlen)
{
    int e = errno;
    if (e == ELOOP || e == EMLINK) {
        crux_errf(err, errlen, "%s: a symbolic link: refused", path);
        return CRUX_ERR_INVALID;
    }
    crux_errf(err, errlen, "%s: %s", path, strerror(e));
    return e == ENOENT ? CRUX_ERR_NOT_FOUND : CRUX_ERR_IO;
}

/* Read-only: crux-sched status looks without writing a byte, so it neither
 * creates, sizes nor initialises a table, nor takes its lock (which would
 * need write access); it reads stable copies instead. */
static crux_status_t open_read_only(const char *path, crux_arb_t **out, char *err, size_t errlen)
{
    char why[160];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return open_failed(path, err, errlen);
    struct stat sb;
    crux_status_t st = CRUX_ERR_IO;
    arb_table_t *t = MAP_FAILED, *copy = NULL;
    crux_arb_t *a = NULL;
    if (fstat(fd, &sb) != 0) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (file_ok(&sb, why, sizeof(why)) != 0)
        REFUSE("%s: refused", why);
    /* a shared lock waits out a job that is initialising the table */
    if (flock_bounded(fd, LOCK_SH) != 0 || fstat(fd, &sb) != 0) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (sb.st_size == 0) { /* its creator died before sizing it */
        crux_errf(err, errlen, "%s: empty, never initialised", path);
        st = CRUX_ERR_NOT_FOUND;
        goto out;
    }
    if (sb.st_size != (off_t)sizeof(arb_table_t))
        REFUSE("%lld bytes, not %zu: refused", (long long)sb.st_size, sizeof(arb_table_t));
    t = mmap(NULL, sizeof(*t), PROT_READ, MAP_SHARED, fd, 0);
    copy = malloc(sizeof(*copy));
    a = malloc(sizeof(*a));
    if (t == MAP_FAILED || copy == NULL || a == NULL) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    arb_copy_stable(t, copy);
    if (copy->magic == 0) { /* sized, never initialised */
        crux_errf(err, errlen, "%s: empty, never initialised", path);
        st = CRUX_ERR_NOT_FOUND;
        goto out;
    }
    if (header_ok(copy, why, sizeof(why)) != 0 || arb_check_entries(copy, why, sizeof(why)) != 0)
        REFUSE("%s: refused", why);
    memset(a, 0, sizeof(*a));
    a->t = t;
    a->read_only = 1;
    pthread_mutex_init(&a->mine, NULL);
    *out = a;
    a = NULL;
    t = MAP_FAILED;
    st = CRUX_OK;
out:
    free(a);
    free(copy);
    if (t != MAP_FAILED)
        munmap(t, sizeof(*t));
    close(fd);
    return st;
}

crux_status_t crux_arb_open(const char *path, int flags, crux_arb_t **out, char *err, size_t errlen)
{
    char def[256], why[160];
    if (path == NULL)
        path = crux_arb_default_path(def, sizeof(def));
    if (flags & CRUX_ARB_READ_ONLY)
        return open_read_only(path, out, err, errlen);
    /* O_NONBLOCK: a FIFO in the table's place must not block the open */
    const int base = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    int fd = -1;
    if (!(flags & CRUX_ARB_NO_CREATE)) {
        fd = open(path, base | O_CREAT | O_EXCL, 0600);
        /* the umask may have narrowed it; anything else is refused */
        if (fd >= 0 && fchmod(fd, 0600) != 0) {
            crux_errf(err, errlen, "%s: %s", path, strerror(errno));
            close(fd);
            unlink(path);
            return CRUX_ERR_IO;
        }
    }
    if (fd < 0 && ((flags & CRUX_ARB_NO_CREATE) || errno == EEXIST))
        fd = open(path, base);
    if (fd < 0)
        return open_failed(path, err, errlen);
    struct stat sb;
    crux_status_t st = CRUX_ERR_IO;
    arb_table_t *t = MAP_FAILED;
    if (fstat(fd, &sb) != 0) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (file_ok(&sb, why, sizeof(why)) != 0)
        REFUSE("%s: refused", why);
    /* flock serialises initialisation and is dropped if the creator dies */
    if (flock_bounded(fd, LOCK_EX) != 0 || fstat(fd, &sb) != 0) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    /* empty: ours, created by us or by a job that died before filling it */
    if (sb.st_size == 0 && ftruncate(fd, sizeof(arb_table_t)) != 0) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    if (sb.st_size != 0 && sb.st_size != (off_t)sizeof(arb_table_t))
        REFUSE("%lld bytes, not %zu: refused", (long long)sb.st_size, sizeof(arb_table_t));
    t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (t == MAP_FAILED) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    /* all zero: sized but never initialised (its creator died in between) */
    if (t->magic == 0 && init_table(t) != 0) {
        crux_errf(err, errlen, "%s: cannot initialise its lock", path);
        goto out;
    }
    if (validate(t, why, sizeof(why)) != 0)
        REFUSE("%s: refused", why);
    crux_arb_t *a = malloc(sizeof(*a));
    if (a == NULL) {
        crux_errf(err, errlen, "%s: out of memory", path);
        st = CRUX_ERR_NO_MEMORY;
        goto out;
    }
    memset(a, 0, sizeof(*a));
    a->t = t;
    a->my_pid = getpid();
    a->my_start = crux_proc_start_time(a->my_pid);
    a->lock_wait_ns = CRUX_ARB_LOCK_WAIT_NS;
    pthread_mutex_init(&a->mine, NULL);
    t = MAP_FAILED;
    *out = a;
    st = CRUX_OK;
out:
    if (t != MAP_FAILED)
        munmap(t, sizeof(*t));
    flock(fd, LOCK_UN);
    close(fd);
    return st;
}

void crux_arb_close(crux_arb_t *a)
{
    if (a == NULL)
        return;
    munmap(a->t, sizeof(*a->t));
    pthread_mutex_destroy(&a->mine);
    free(a);
}

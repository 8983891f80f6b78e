/* The intra-host arbitration table.  One mmap'ed file holds a robust
 * process-shared mutex, the resource names and a fixed array of entries.
 * Waiters sleep on a futex word that every release bumps; they also wake
 * every ARB_RECHECK_NS to reclaim holders that died without releasing. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sched/crux_arb.h"

#define ARB_MAGIC      0x63727578617262ULL /* "cruxarb" */
#define ARB_VERSION    1
#define ARB_RECHECK_NS 10000000ULL /* 10 ms */

typedef struct {
    int32_t state; /* 0 free, crux_arb_state_t */
    int32_t resource, level;
    pid_t pid;
    uint64_t start_time; /* of pid, in clock ticks since boot */
    uint64_t since_ns;
    char job[CRUX_ARB_JOB_LEN];
} arb_entry_t;

typedef struct {
    uint64_t magic;
    uint32_t version, size;
    pthread_mutex_t lock;
    _Atomic uint32_t seq; /* futex: bumped on every release */
    int32_t nres;
    char res[CRUX_ARB_MAX_RESOURCES][CRUX_ARB_NAME_LEN];
    arb_entry_t e[CRUX_ARB_MAX_ENTRIES];
} arb_table_t;

struct crux_arb {
    arb_table_t *t;
    uint64_t my_start;
    pid_t my_pid;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Field 22 of /proc/PID/stat (start time); 0 when the process is gone or a
 * zombie, which counts as dead. */
static uint64_t proc_start(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold blanks */
    if (p == NULL || p[1] != ' ')
        return 0;
    char state = p[2];
    if (state == 'Z' || state == 'X' || state == 'x')
        return 0;
    p += 2;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p)
            p++;
    }
    return p ? strtoull(p, NULL, 10) : 0;
}

static int entry_alive(const arb_entry_t *e)
{
    if (kill(e->pid, 0) != 0 && errno == ESRCH)
        return 0;
    if (e->start_time == 0) /* /proc was unreadable: trust kill() alone */
        return 1;
    return proc_start(e->pid) == e->start_time;
}

static void arb_lock(arb_table_t *t)
{
    if (pthread_mutex_lock(&t->lock) == EOWNERDEAD) /* the holder died inside */
        pthread_mutex_consistent(&t->lock);
}

static void wake_all(arb_table_t *t)
{
    atomic_fetch_add(&t->seq, 1);
    syscall(SYS_futex, &t->seq, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* Free the entries of dead processes; wakes waiters if any was active. */
static void reclaim(arb_table_t *t)
{
    int freed = 0;
    for (int i = 0; i < CRUX_ARB_MAX_ENTRIES; i++)
        if (t->e[i].state != 0 && !entry_alive(&t->e[i])) {
            freed |= t->e[i].state == CRUX_ARB_ACTIVE;
            t->e[i].state = 0;
        }
    if (freed)
        wake_all(t);
}

const char *crux_arb_default_path(char *buf, size_t len)
{
    const char *env = getenv("CRUX_ARB_PATH");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else
        snprintf(buf, len, "/dev/shm/crux-arb-%u", (unsigned)getuid());
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

crux_status_t crux_arb_open(const char *path, crux_arb_t **out)
{
    char def[256];
    if (path == NULL)
        path = crux_arb_default_path(def, sizeof(def));
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return CRUX_ERR_IO;
    /* flock serialises initialisation and is dropped if the creator dies */
    struct stat sb;
    crux_status_t st = CRUX_ERR_IO;
    arb_table_t *t = MAP_FAILED;
    if (flock(fd, LOCK_EX) != 0 || fstat(fd, &sb) != 0)
        goto out;
    if (sb.st_size == 0 && ftruncate(fd, sizeof(arb_table_t)) != 0)
        goto out;
    if (sb.st_size != 0 && sb.st_size != (off_t)sizeof(arb_table_t)) {
        st = CRUX_ERR_INVALID;
        goto out;
    }
    t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (t == MAP_FAILED)
        goto out;
    if (t->magic == 0 && init_table(t) != 0)
        goto out;
    if (t->magic != ARB_MAGIC || t->version != ARB_VERSION || t->size != sizeof(*t)) {
        st = CRUX_ERR_INVALID;
        goto out;
    }
    crux_arb_t *a = malloc(sizeof(*a));
    if (a == NULL) {
        st = CRUX_ERR_NO_MEMORY;
        goto out;
    }
    a->t = t;
    a->my_pid = getpid();
    a->my_start = proc_start(a->my_pid);
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
    free(a);
}

crux_status_t crux_arb_resource(crux_arb_t *a, const char *name, int *id)
{
    if (name == NULL || *name == '\0' || strlen(name) >= CRUX_ARB_NAME_LEN)
        return CRUX_ERR_INVALID;
    arb_table_t *t = a->t;
    crux_status_t st = CRUX_ERR_NO_RESOURCE;
    arb_lock(t);
    for (int i = 0; i < t->nres; i++)
        if (strcmp(t->res[i], name) == 0) {
            *id = i;
            st = CRUX_OK;
        }
    if (st != CRUX_OK && t->nres < CRUX_ARB_MAX_RESOURCES) {
        snprintf(t->res[t->nres], CRUX_ARB_NAME_LEN, "%s", name);
        *id = t->nres++;
        st = CRUX_OK;
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

/* A live active entry of another process above `level` on the resource?
 * Dead holders found on the way are reclaimed. */
static int higher_active(crux_arb_t *a, int resource, int level)
{
    arb_table_t *t = a->t;
    int found = 0;
    for (int i = 0; i < CRUX_ARB_MAX_ENTRIES; i++) {
        arb_entry_t *e = &t->e[i];
        if (e->state != CRUX_ARB_ACTIVE || e->resource != resource || e->level <= level ||
            e->pid == a->my_pid)
            continue;
        if (!entry_alive(e)) {
            e->state = 0;
            continue;
        }
        found = 1;
    }
    return found;
}

crux_status_t crux_arb_acquire(crux_arb_t *a, int resource, int level, const char *job,
                               uint64_t max_wait_ns, crux_arb_ticket_t *tk)
{
    arb_table_t *t = a->t;
    *tk = (crux_arb_ticket_t){ -1, 0, 0, 0 };
    if (resource < 0 || resource >= CRUX_ARB_MAX_RESOURCES || level < 0)
        return CRUX_ERR_INVALID;
    if (getpid() != a->my_pid) { /* opened before a fork */
        a->my_pid = getpid();
        a->my_start = proc_start(a->my_pid);
    }
    uint64_t start = mono_ns();
    arb_lock(t);
    if (resource >= t->nres) {
        pthread_mutex_unlock(&t->lock);
        return CRUX_ERR_INVALID;
    }
    int slot = -1;
    for (int pass = 0; pass < 2 && slot < 0; pass++) {
        for (int i = 0; i < CRUX_ARB_MAX_ENTRIES && slot < 0; i++)
            if (t->e[i].state == 0)
                slot = i;
        if (slot < 0)
            reclaim(t);
    }
    if (slot < 0) {
        pthread_mutex_unlock(&t->lock);
        return CRUX_ERR_NO_RESOURCE;
    }
    arb_entry_t *e = &t->e[slot];
    *e = (arb_entry_t){ CRUX_ARB_WAITING, resource, level, a->my_pid, a->my_start, start, "" };
    snprintf(e->job, sizeof(e->job), "%s", job ? job : "");
    while (higher_active(a, resource, level)) {
        uint64_t now = mono_ns();
        if (now - start >= max_wait_ns) {
            tk->timed_out = 1;
            break;
        }
        tk->waited = 1;
        uint64_t left = max_wait_ns - (now - start);
        if (left > ARB_RECHECK_NS)
            left = ARB_RECHECK_NS;
        uint32_t seen = atomic_load(&t->seq);
        pthread_mutex_unlock(&t->lock);
        struct timespec ts = { (time_t)(left / 1000000000ULL), (long)(left % 1000000000ULL) };
        syscall(SYS_futex, &t->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
        arb_lock(t);
        if (e->pid != a->my_pid || e->state != CRUX_ARB_WAITING) {
            /* taken from us (only if /proc lied about our start time) */
            pthread_mutex_unlock(&t->lock);
            return CRUX_ERR_PEER;
        }
    }
    e->state = CRUX_ARB_ACTIVE;
    e->since_ns = mono_ns();
    pthread_mutex_unlock(&t->lock);
    tk->entry = slot;
    tk->wait_ns = e->since_ns - start;
    return CRUX_OK;
}

void crux_arb_release(crux_arb_t *a, crux_arb_ticket_t *tk)
{
    if (tk == NULL || tk->entry < 0 || tk->entry >= CRUX_ARB_MAX_ENTRIES)
        return;
    arb_table_t *t = a->t;
    arb_lock(t);
    arb_entry_t *e = &t->e[tk->entry];
    if (e->pid == a->my_pid && e->state == CRUX_ARB_ACTIVE)
        e->state = 0;
    wake_all(t);
    pthread_mutex_unlock(&t->lock);
    tk->entry = -1;
}

crux_status_t crux_arb_snapshot(crux_arb_t *a, crux_arb_entry_t *out, int max, int *n)
{
    arb_table_t *t = a->t;
    int k = 0;
    arb_lock(t);
    reclaim(t);
    for (int i = 0; i < CRUX_ARB_MAX_ENTRIES; i++) {
        const arb_entry_t *e = &t->e[i];
        if (e->state == 0)
            continue;
        if (k < max) {
            crux_arb_entry_t *o = &out[k];
            o->pid = e->pid;
            o->level = e->level;
            o->state = (crux_arb_state_t)e->state;
            o->since_ns = e->since_ns;
            snprintf(o->resource, sizeof(o->resource), "%s", t->res[e->resource]);
            snprintf(o->job, sizeof(o->job), "%s", e->job);
        }
        k++;
    }
    pthread_mutex_unlock(&t->lock);
    *n = k;
    return CRUX_OK;
}

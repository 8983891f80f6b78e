/* The intra-host arbitration table.  One mmap'ed file holds a robust
 * process-shared mutex, the resource names and a fixed array of entries.
 * Waiters sleep on a futex word that every release bumps; they also wake
 * every ARB_RECHECK_NS to reclaim holders that died without releasing.
 *
 * The mutex is held for a few loads and stores only, but a holder can be
 * stopped there (SIGSTOP, a debugger): every wait for it is timed, a
 * holder that died is detected by the robust mutex, and after a wait that
 * ran out the lock is only tried until it is free again, so a stopped job
 * costs another job one bounded wait, then nothing (it goes on without
 * arbitration). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/crux_futex.h"
#include "sched/runtime/crux_arb_table.h"
#include "sched/crux_arb.h"

#define ARB_RECHECK_NS 10000000ULL /* 10 ms */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int entry_alive(const arb_entry_t *e)
{
    return crux_proc_alive_since(e->pid, e->start_time);
}

int arb_lock(arb_table_t *t, uint64_t max_wait_ns)
{
    /* pthread_mutex_timedlock counts on CLOCK_REALTIME, which can be set
     * back: waits of at most ARB_RECHECK_NS each, until the monotonic
     * deadline (ThreadSanitizer knows timedlock, not clocklock) */
    uint64_t deadline = mono_ns() + max_wait_ns;
    int rc = pthread_mutex_trylock(&t->lock);
    while (rc == EBUSY) {
        uint64_t now = mono_ns();
        if (now >= deadline)
            break;
        uint64_t slice = deadline - now < ARB_RECHECK_NS ? deadline - now : ARB_RECHECK_NS;
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        uint64_t ns = (uint64_t)at.tv_nsec + slice;
        at.tv_sec += (time_t)(ns / 1000000000ULL);
        at.tv_nsec = (long)(ns % 1000000000ULL);
        rc = pthread_mutex_timedlock(&t->lock, &at);
        rc = rc == ETIMEDOUT ? EBUSY : rc;
    }
    if (rc == EOWNERDEAD) /* the holder died inside */
        rc = pthread_mutex_consistent(&t->lock);
    return rc == EBUSY ? ETIMEDOUT : rc;
}

pid_t crux_arb_holder(const crux_arb_t *a, int *stopped)
{
    pid_t tid = 0;
#ifdef __GLIBC__
    /* glibc keeps the owner's thread id in a robust mutex's word */
    if (a != NULL && !a->read_only)
        tid = (pid_t)(__atomic_load_n(&a->t->lock.__data.__lock, __ATOMIC_RELAXED) & 0x3fffffff);
#endif
    if (stopped != NULL)
        *stopped = tid > 0 && crux_proc_stopped(tid);
    return tid;
}

/* The table's lock for one of a's operations, at most max_wait_ns (none
 * while the lock is stuck); 0 or ETIMEDOUT.  Having it, frees what this
 * process could not release. */
static int lock_for(crux_arb_t *a, uint64_t max_wait_ns)
{
    arb_table_t *t = a->t;
    int rc = arb_lock(t, atomic_load(&a->lock_stuck) ? 0 : max_wait_ns);
    if (rc != 0) {
        atomic_store(&a->lock_stuck, 1);
        return ETIMEDOUT;
    }
    atomic_store(&a->lock_stuck, 0);
    pthread_mutex_lock(&a->mine);
    for (int i = 0; i < CRUX_ARB_MAX_ENTRIES; i++) {
        if (a->unreleased[i] && t->e[i].pid == a->my_pid) {
            t->e[i].state = 0;
        }
        a->unreleased[i] = 0;
    }
    pthread_mutex_unlock(&a->mine);
    return 0;
}

static void wake_all(arb_table_t *t)
{
    atomic_fetch_add(&t->seq, 1);
    crux_futex_wake((const uint32_t *)&t->seq);
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

/* The resource count, checked at open; clamped here too, so that a table of
 * ours damaged since (by a job of the same user) cannot index out of it. */
static int table_nres(const arb_table_t *t)
{
    int32_t n = t->nres;
    return n < 0 ? 0 : n > CRUX_ARB_MAX_RESOURCES ? CRUX_ARB_MAX_RESOURCES : n;
}

crux_status_t crux_arb_resource(crux_arb_t *a, const char *name, int *id)
{
    if (a->read_only || name == NULL || *name == '\0' || strlen(name) >= CRUX_ARB_NAME_LEN)
        return CRUX_ERR_INVALID;
    arb_table_t *t = a->t;
    crux_status_t st = CRUX_ERR_NO_RESOURCE;
    if (lock_for(a, a->lock_wait_ns) != 0)
        return CRUX_ERR_TIMEOUT;
    int nres = table_nres(t);
    for (int i = 0; i < nres; i++)
        if (strncmp(t->res[i], name, CRUX_ARB_NAME_LEN) == 0) {
            *id = i;
            st = CRUX_OK;
        }
    if (st != CRUX_OK && nres < CRUX_ARB_MAX_RESOURCES) {
        snprintf(t->res[nres], CRUX_ARB_NAME_LEN, "%s", name);
        *id = nres;
        t->nres = nres + 1;
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
    *tk = (crux_arb_ticket_t){ .entry = -1 };
    if (a->read_only || resource < 0 || resource >= CRUX_ARB_MAX_RESOURCES || level < 0 ||
        level > CRUX_ARB_MAX_LEVEL)
        return CRUX_ERR_INVALID;
    if (getpid() != a->my_pid) { /* opened before a fork */
        a->my_pid = getpid();
        a->my_start = crux_proc_start_time(a->my_pid);
    }
    uint64_t start = mono_ns();
    if (lock_for(a, a->lock_wait_ns) != 0)
        return CRUX_ERR_TIMEOUT;
    if (resource >= table_nres(t)) { /* not registered */
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
        crux_futex_wait((const uint32_t *)&t->seq, seen, (long)left);
        if (lock_for(a, a->lock_wait_ns) != 0) {
            /* the entry waits to be freed with the lock */
            pthread_mutex_lock(&a->mine);
            a->unreleased[slot] = 1;
            pthread_mutex_unlock(&a->mine);
            return CRUX_ERR_TIMEOUT;
        }
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

void crux_arb_set_lock_wait(crux_arb_t *a, uint64_t max_wait_ns)
{
    if (a != NULL)
        a->lock_wait_ns = max_wait_ns;
}

void crux_arb_release(crux_arb_t *a, crux_arb_ticket_t *tk)
{
    if (a->read_only || tk == NULL || tk->entry < 0 || tk->entry >= CRUX_ARB_MAX_ENTRIES)
        return;
    arb_table_t *t = a->t;
    if (lock_for(a, a->lock_wait_ns) != 0) {
        pthread_mutex_lock(&a->mine);
        a->unreleased[tk->entry] = 1;
        pthread_mutex_unlock(&a->mine);
        tk->entry = -1;
        return;
    }
    arb_entry_t *e = &t->e[tk->entry];
    if (e->pid == a->my_pid && e->state == CRUX_ARB_ACTIVE)
        e->state = 0;
    wake_all(t);
    pthread_mutex_unlock(&t->lock);
    tk->entry = -1;
}

/* The live entries of t (a copy when read-only, the table under its lock
 * otherwise). */
static int list_entries(const arb_table_t *t, crux_arb_entry_t *out, int max)
{
    int k = 0;
    for (int i = 0; i < CRUX_ARB_MAX_ENTRIES; i++) {
        const arb_entry_t *e = &t->e[i];
        if (e->state == 0 || !entry_alive(e))
            continue;
        if (k < max) {
            crux_arb_entry_t *o = &out[k];
            o->pid = e->pid;
            o->level = e->level;
            o->state = (crux_arb_state_t)e->state;
            o->since_ns = e->since_ns;
            int r = e->resource;
            snprintf(o->resource, sizeof(o->resource), "%.*s", CRUX_ARB_NAME_LEN - 1,
                     r >= 0 && r < table_nres(t) ? t->res[r] : "?");
            snprintf(o->job, sizeof(o->job), "%.*s", CRUX_ARB_JOB_LEN - 1, e->job);
        }
        k++;
    }
    return k;
}

crux_status_t crux_arb_snapshot(crux_arb_t *a, crux_arb_entry_t *out, int max, int *n)
{
    *n = 0;
    if (a->read_only) {
        arb_table_t *copy = malloc(sizeof(*copy));
        char why[160];
        if (copy == NULL)
            return CRUX_ERR_NO_MEMORY;
        arb_copy_stable(a->t, copy);
        crux_status_t st = CRUX_ERR_INVALID;
        if (arb_check_entries(copy, why, sizeof(why)) == 0) {
            *n = list_entries(copy, out, max);
            st = CRUX_OK;
        }
        free(copy);
        return st;
    }
    arb_table_t *t = a->t;
    if (lock_for(a, a->lock_wait_ns) != 0)
        return CRUX_ERR_TIMEOUT;
    reclaim(t);
    *n = list_entries(t, out, max);
    pthread_mutex_unlock(&t->lock);
    return CRUX_OK;
}

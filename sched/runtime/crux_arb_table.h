/* The layout of the arbitration table file (private to libcrux_arb and its
 * tests, which write hostile tables by hand). */
#ifndef CRUX_ARB_TABLE_H
#define CRUX_ARB_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/crux_proc.h"
#include "sched/crux_arb.h"

#define ARB_MAGIC   0x63727578617262ULL /* "cruxarb" */
#define ARB_VERSION 1

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
    arb_table_t *t; /* mapped read-only when read_only */
    uint64_t my_start;
    pid_t my_pid;
    int read_only;
    uint64_t lock_wait_ns; /* the longest wait for the table's lock (crux_arb_set_lock_wait) */
    /* Set when a wait for the table's lock ran out: until the lock is had
     * again, it is only tried, never waited for. */
    _Atomic int lock_stuck;
    /* This process's entries whose release could not take the lock: freed
     * the next time it has it.  Guarded by 'mine' (never held while waiting
     * for the table's lock). */
    pthread_mutex_t mine;
    unsigned char unreleased[CRUX_ARB_MAX_ENTRIES];
};

/* Lock the table's robust mutex (a dead holder's lock is made consistent),
 * waiting at most max_wait_ns (0: only when it is free now); 0 when locked,
 * ETIMEDOUT when the wait ran out, another error when the mutex is
 * unusable. */
int arb_lock(arb_table_t *t, uint64_t max_wait_ns);
/* Every resource and entry in range (nonzero and why otherwise); without
 * the lock, on a table or a copy of one. */
int arb_check_entries(const arb_table_t *t, char *why, size_t len);
/* A copy of a table read without its lock, taken until two reads agree. */
void arb_copy_stable(const arb_table_t *t, arb_table_t *out);

#endif

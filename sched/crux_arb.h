/* libcrux_arb: intra-host priority, as the paper's daemons did with PCIe
 * semaphores.  Jobs on one host share a small table in shared memory
 * (default /dev/shm/crux-arb-<uid>); for each shared resource (host memory
 * bandwidth, a PCIe switch by id) it records who is transferring and at
 * which level.  Before a transfer a job acquires the resource: it waits
 * while a job of a higher level is active on it, but never longer than its
 * bounded wait, so nothing starves.  Entries carry the pid (and its start
 * time, against pid reuse); entries of dead processes are reclaimed, and
 * the table's lock is a robust mutex, so a job that dies leaves nothing
 * locked; every wait for that lock is bounded, so a job stopped while
 * holding it holds no one else.  Pure C and Linux (futex), no MPI. */
#ifndef CRUX_ARB_H
#define CRUX_ARB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/crux_status.h"

#define CRUX_ARB_MAX_RESOURCES 32
#define CRUX_ARB_MAX_ENTRIES   256
#define CRUX_ARB_NAME_LEN      48
#define CRUX_ARB_JOB_LEN       64
#define CRUX_ARB_MAX_LEVEL     255 /* levels 0..255 */

typedef struct crux_arb crux_arb_t;

/* crux_arb_open's flags */
#define CRUX_ARB_NO_CREATE 1 /* open an existing table only (CRUX_ERR_NOT_FOUND) */
/* Look only (crux-sched status): an existing, initialised table, mapped
 * read-only; nothing is ever written to it (no lock taken, dead entries
 * skipped, not reclaimed).  CRUX_ERR_NOT_FOUND when it is missing or was
 * never initialised.  Such a handle takes snapshots only. */
#define CRUX_ARB_READ_ONLY 2

/* path NULL: $CRUX_ARB_PATH, else /dev/shm/crux-arb-<euid>.  Created with
 * O_EXCL|O_NOFOLLOW, mode 0600, when missing.  An existing one is used only
 * if it is a regular file (not a link) owned by the effective user, mode
 * 0600, of the exact size, whose header and every entry validate;
 * otherwise CRUX_ERR_INVALID and err (may be NULL) says why, in one line
 * that names the path. */
crux_status_t crux_arb_open(const char *path, int flags, crux_arb_t **out, char *err,
                            size_t errlen);
void crux_arb_close(crux_arb_t *arb);
/* The path crux_arb_open(NULL) uses, into buf. */
const char *crux_arb_default_path(char *buf, size_t len);

/* The id of a resource by name ("hostmem", "pcie:0000:3a"), registered on
 * first use; CRUX_ERR_NO_RESOURCE when the table's resources are full,
 * CRUX_ERR_TIMEOUT when its lock could not be had. */
crux_status_t crux_arb_resource(crux_arb_t *arb, const char *name, int *id);

/* The longest wait for the table's lock in every call on this handle
 * (CRUX_ARB_LOCK_WAIT_NS after crux_arb_open).  The lock is held for a few
 * loads and stores, but its holder may be stopped there: a call whose wait
 * runs out returns CRUX_ERR_TIMEOUT, and later calls only try the lock
 * until it is free again. */
#define CRUX_ARB_LOCK_WAIT_NS 1000000000ULL
void crux_arb_set_lock_wait(crux_arb_t *arb, uint64_t max_wait_ns);

/* The thread holding the table's lock now (0: none, or unknown), and in
 * *stopped (may be NULL) whether it is stopped: what a CRUX_ERR_TIMEOUT
 * waited for. */
pid_t crux_arb_holder(const crux_arb_t *arb, int *stopped);

typedef struct {
    int entry;     /* slot in the table, -1 when not held */
    int waited;    /* 1 if it had to wait for a higher level */
    int timed_out; /* 1 if the bounded wait ran out */
    uint64_t wait_ns;
} crux_arb_ticket_t;

/* Wait while a job of a higher level (another process) is active on the
 * resource, at most max_wait_ns, then become active.  Returns CRUX_OK with
 * the ticket held even when the wait timed out (ticket->timed_out): the
 * caller transfers and releases in every case.  CRUX_ERR_TIMEOUT, with no
 * ticket held, when the table's lock could not be had in time (see
 * crux_arb_set_lock_wait, crux_arb_holder): the caller goes on
 * without arbitration.  `job` (may be NULL) is shown by status. */
crux_status_t crux_arb_acquire(crux_arb_t *arb, int resource, int level, const char *job,
                               uint64_t max_wait_ns, crux_arb_ticket_t *ticket);
void crux_arb_release(crux_arb_t *arb, crux_arb_ticket_t *ticket);

typedef enum { CRUX_ARB_ACTIVE = 1, CRUX_ARB_WAITING = 2 } crux_arb_state_t;
typedef struct {
    pid_t pid;
    int level;
    crux_arb_state_t state;
    char resource[CRUX_ARB_NAME_LEN];
    char job[CRUX_ARB_JOB_LEN];
    uint64_t since_ns; /* CLOCK_MONOTONIC */
} crux_arb_entry_t;
/* Who is active and who is waiting (dead processes' entries are reclaimed
 * first; on a read-only handle, skipped).  Writes at most max entries; *n
 * gets how many there are.  CRUX_ERR_INVALID when a read-only handle finds
 * the table damaged since it was opened, CRUX_ERR_TIMEOUT when the lock
 * could not be had. */
crux_status_t crux_arb_snapshot(crux_arb_t *arb, crux_arb_entry_t *out, int max, int *n);

#endif

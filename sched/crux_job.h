/* libcrux_job: a job's place in the cluster schedule, as each of its
 * processes keeps it: its id, its level in the priority file crux-sched
 * publishes (libcrux_prio's reader), the network settings and the route the
 * file gives that level, and the host's intra-host arbitration at that
 * level (libcrux_arb).  No MPI: the Open MPI component fills the
 * configuration from its parameters and calls this.  Programs link
 * libcrux_job with libcrux_prio, libcrux_arb and libcrux_common.
 *
 * With no priority file nothing here costs more than a branch.  With one,
 * the file is read at crux_job_open, looked at again at most every poll_ms
 * (a clock read between looks) as transfers enter, and a malformed file
 * keeps the last good state and is said once.  Before a transfer the job
 * acquires the host's shared "hostmem" resource at its level: while a job
 * of a higher level transfers on this host it waits, at most
 * arb_max_wait_us, so nothing starves; the table's lock is waited for at
 * most as long, so a job of the user's stopped while holding it costs this
 * one that wait once: it then transfers without arbitration (and says so
 * once) until the lock is free again. */
#ifndef CRUX_JOB_H
#define CRUX_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "common/crux_status.h"
#include "sched/crux_arb.h"

typedef struct crux_job crux_job_t;

/* One message, one line without its end (the job's level, a malformed
 * priority file, why arbitration is off, the closing summary). */
typedef void (*crux_job_log_fn)(void *arg, const char *message);

typedef struct {
    /* NULL or "": $CRUX_PRIORITY_FILE; neither: no levels, no arbitration */
    const char *priority_file;
    const char *job_id;       /* NULL or "": the environment's (crux_prio_job_id) */
    unsigned poll_ms;         /* the file looked at again at most this often (0: every entry) */
    const char *arb_path;     /* NULL or "": crux_arb_open's default */
    unsigned arb_max_wait_us; /* the longest wait for a higher level, and for the table's lock */
    /* how messages name the settings above to the user: this, then the
     * field's name ("coll_crux_": "coll_crux_arb_max_wait_us"); NULL: "" */
    const char *names;
    int export_level;    /* 1: the first level read goes into CRUX_PRIORITY_LEVEL */
    crux_job_log_fn log; /* NULL: "crux: MESSAGE" on stderr */
    void *log_arg;
} crux_job_config_t;

/* Resolves the job's id and, with a priority file and an id, reads the file
 * and opens the host's arbitration table (a table that cannot be had, or no
 * id, is said and leaves the job at the default level or unarbitrated:
 * never an error).  CRUX_ERR_NO_MEMORY is the only failure.  Setting
 * CRUX_PRIORITY_LEVEL (export_level) is for a process's one job, before its
 * other threads read the environment. */
crux_status_t crux_job_open(const crux_job_config_t *config, crux_job_t **out);
/* Says the closing summary when the job was arbitrated, then frees it. */
void crux_job_close(crux_job_t *job);
/* Every call below takes a NULL job (crux_job_open failed) as one without
 * a priority file. */

/* The job's id, NULL when none is set or usable. */
const char *crux_job_id(const crux_job_t *job);
/* The level as the file last gave it (0 without a file, or when it does
 * not list the job). */
int crux_job_level(const crux_job_t *job);
/* The level's network settings, the file's keys sl, tc and dscp (-1 each
 * when absent or without a file); safe from any thread. */
void crux_job_net(const crux_job_t *job, int *sl, int *tc, int *dscp);
/* The job's "route" as last read into out ("" when absent or longer than
 * size); 0 when the job reads no priority file. */
int crux_job_route(crux_job_t *job, char *out, size_t size);

/* Enter before the job moves data over the host's shared resources, exit
 * after; between them this process holds the host's arbitration at the
 * job's level.  Entering also looks at the priority file again (at most
 * every poll_ms).  Thread-safe; a ticket is the caller's. */
typedef struct {
    int held;
    crux_arb_ticket_t arb;
} crux_job_ticket_t;
void crux_job_enter(crux_job_t *job, crux_job_ticket_t *ticket);
void crux_job_exit(crux_job_t *job, crux_job_ticket_t *ticket);

/* What arbitration cost this job's process so far. */
typedef struct {
    uint64_t transfers;    /* entered with the resource held */
    uint64_t waits;        /* of them, waited for a higher level */
    uint64_t timeouts;     /* of them, gave up waiting at the bound */
    uint64_t wait_ns;      /* time waited */
    uint64_t unarbitrated; /* entered without arbitration: the table's lock held past the bound */
} crux_job_counters_t;
void crux_job_counters(const crux_job_t *job, crux_job_counters_t *out);

#endif

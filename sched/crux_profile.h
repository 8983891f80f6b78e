/* Job communication profiles: what a job's leader measured, written to the
 * scheduler's spool so crux-sched can compute W and t for jobs it was not
 * told about.  Part of libcrux_prio (no dependencies).
 *
 * Format (version 1, one "key value" per line, '#' comments, unknown keys
 * ignored, all keys below required):
 *     crux-profile 1
 *     job <id>
 *     ranks <R>
 *     hosts <host>:<ranks>,<host>:<ranks>,...   ring order, one entry per host
 *     window_s <seconds measured>
 *     collectives <collective calls in the window>
 *     bytes <payload bytes the leader passed to collectives in the window>
 *     coll_s <seconds inside collectives in the window>
 *     gap_s <seconds between collectives in the window>
 *     period_s <iteration period, seconds>
 */
#ifndef CRUX_PROFILE_H
#define CRUX_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/crux_status.h"

typedef struct {
    char *job;
    int ranks;
    int nhosts;
    char **hosts;
    int *host_ranks;
    double window_s, bytes, coll_s, gap_s, period_s;
    uint64_t collectives;
} crux_profile_t;

/* Written atomically (temporary file and rename), mode 0600, or 0640 in a
 * set-group-ID directory (the file takes the directory's group). */
crux_status_t crux_profile_write(const char *path, const crux_profile_t *p, char *err,
                                 size_t errlen);
/* Fill *p (free it with crux_profile_clear); messages name "name:LINE". */
crux_status_t crux_profile_parse(const char *text, size_t len, const char *name, crux_profile_t *p,
                                 char *err, size_t errlen);
crux_status_t crux_profile_load(const char *path, crux_profile_t *p, char *err, size_t errlen);
void crux_profile_clear(crux_profile_t *p);

/* Per iteration, as the scheduler models a job: iterations in the window
 * = window_s / period_s; bytes = the Allreduce payload per iteration;
 * compute_s = the time between collectives per iteration; comm_s = the
 * time inside them; overlap = the part of compute_s + comm_s beyond the
 * period, over compute_s (0..1): communication hidden behind computation. */
typedef struct {
    double iterations, bytes, compute_s, comm_s, overlap, bytes_per_collective;
} crux_profile_iter_t;
crux_status_t crux_profile_per_iteration(const crux_profile_t *p, crux_profile_iter_t *out);

/* --- recording: what a job's leader measures ------------------------------
 *
 * Windows: the first starts with the first call; each later one where the
 * last ended (at the last call's exit), so it holds the gap before its
 * first call: as many gaps as calls, and window / period counts its
 * iterations without a missing gap.  A window ends at the first call that
 * ends interval_s or more after the window's last write.
 *
 * The period: training repeats the same sequence of collective sizes every
 * iteration (a framework's fused gradient buffers), so it is the shortest
 * lag L at which the recent sizes repeat (at least three times over), and
 * the time L calls take; a job without such a pattern counts each call as
 * an iteration.  Not locked: one caller at a time. */
#define CRUX_RECORDER_HISTORY 512 /* calls remembered for the period */
typedef struct {
    double window_start, last_exit, last_write;
    uint64_t calls; /* in the open window */
    double bytes, inside, between;
    size_t sizes[CRUX_RECORDER_HISTORY];
    double starts[CRUX_RECORDER_HISTORY];
    uint64_t recorded; /* calls ever recorded, the ring's head */
} crux_recorder_t;

void crux_recorder_init(crux_recorder_t *r);
/* Record one call of 'bytes' from 'start' to 'end' (seconds, one clock);
 * 1 when its window is now over: close it (crux_recorder_close) and write
 * the profile. */
int crux_recorder_add(crux_recorder_t *r, size_t bytes, double start, double end,
                      double interval_s);
/* The open window's figures, as of 'now', into *p (window_s, bytes,
 * coll_s, gap_s, period_s, collectives; the rest untouched); the next call
 * opens a fresh window. */
void crux_recorder_close(crux_recorder_t *r, double now, crux_profile_t *p);
/* The smallest lag at which the last calls' sizes repeat, or 0. */
unsigned crux_recorder_period_calls(const crux_recorder_t *r);

#endif

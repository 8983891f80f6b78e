/* libcrux_prio: the shared priority file that crux-sched writes and every
 * crux-enabled job reads, and job id resolution.  Small and dependency-free
 * (no json-c, no planner) so the Open MPI component can link it.
 *
 * Format (version 1, line-oriented text; '#' starts a comment):
 *     crux-priorities 1
 *     levels K
 *     job <id> level <0..K-1> [<key> <value>]...
 * Level K-1 is the highest priority.  Tokens are separated by blanks;
 * readers ignore keys they do not know.  The key "uid" binds a line to the
 * job's owner: a reader of another uid does not apply it.  A file must end with a newline
 * (a missing one means a truncated file).  Writers replace the file
 * atomically (temporary file in the same directory, then rename). */
#ifndef CRUX_PRIO_H
#define CRUX_PRIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/crux_status.h"

#define CRUX_PRIO_MAX_LEVELS 64
#define CRUX_PRIO_MAX_TOKEN  4096 /* longest id, key or value */
/* The largest priority file read: a bigger one is refused like a malformed
 * one, without reading it (jobs poll the file from their collectives). */
#define CRUX_PRIO_MAX_FILE_BYTES ((size_t)16 << 20)

typedef struct {
    const char *key, *value;
} crux_prio_kv_t;

typedef struct {
    const char *job;
    int level;
    int nkv;
    const crux_prio_kv_t *kv;
} crux_prio_entry_t;

typedef struct {
    int levels;
    int njobs;
    const crux_prio_entry_t *jobs;
    void *storage; /* owned by a parsed file; NULL when built by hand */
    /* set by the parser: */
    int skipped;             /* malformed job lines left out */
    const char *skipped_why; /* the first of them ("name:LINE: why"), or NULL */
    uint64_t compares;       /* id comparisons made (O(n log n)) */
} crux_prio_file_t;

/* Parse a whole file; `name` is used in messages ("name:LINE: why").  A
 * file with a bad header or levels line, a NUL byte or no final newline is
 * refused.  A malformed job line is skipped and counted: an unknown line, a
 * level out of range, a token that is not one, a value of sl (0..15), tc
 * (0..255), dscp (0..63) or uid (0..2^31-1) out of range or not an integer,
 * and every line of an id listed more than once.  Linear in the size plus
 * O(n log n) comparisons of ids. */
crux_status_t crux_prio_parse(const char *text, size_t len, const char *name,
                              crux_prio_file_t **out, char *err, size_t errlen);
/* Read and parse; CRUX_ERR_NOT_FOUND when the file does not exist. */
crux_status_t crux_prio_load(const char *path, crux_prio_file_t **out, char *err, size_t errlen);
void crux_prio_file_free(crux_prio_file_t *file);
const crux_prio_entry_t *crux_prio_find(const crux_prio_file_t *file, const char *job);
/* The line of a skipped line that named this job (its own entry was bad),
 * else 0. */
int crux_prio_skipped(const crux_prio_file_t *file, const char *job);
const char *crux_prio_get(const crux_prio_entry_t *entry, const char *key);

/* Write `file` (with optional comment lines) to path atomically.  A table
 * larger than CRUX_PRIO_MAX_FILE_BYTES, which no reader would take, is
 * refused (CRUX_ERR_INVALID) and the file left as it was. */
crux_status_t crux_prio_write(const char *path, const crux_prio_file_t *file, const char *comment,
                              char *err, size_t errlen);
/* Replace path with data atomically: a hidden temporary file in the same
 * directory (".NAME.XXXXXX", made mode 0600), fsync, the mode asked for
 * (the priority file: 0644), rename. */
crux_status_t crux_prio_atomic_write(const char *path, const void *data, size_t len, mode_t mode,
                                     char *err, size_t errlen);
/* A token of the format: non-empty, printable, no blank, no '#'. */
int crux_prio_token_ok(const char *s);

/* ---- the reader a job keeps ---- */

typedef struct crux_prio_reader crux_prio_reader_t;
typedef void (*crux_prio_log_fn)(void *arg, const char *message);

typedef enum {
    CRUX_PRIO_NO_FILE,    /* no file: the default level */
    CRUX_PRIO_NOT_LISTED, /* a file without this job: the default level */
    CRUX_PRIO_LISTED      /* the level the file gives */
} crux_prio_state_t;

/* Reads the file at once (a missing file is fine).  poll() looks at the
 * file again at most every interval_ms milliseconds of the monotonic
 * clock (0: every call); between those it costs one clock read. */
crux_status_t crux_prio_reader_open(const char *path, const char *job_id, int default_level,
                                    unsigned interval_ms, crux_prio_reader_t **out);
void crux_prio_reader_close(crux_prio_reader_t *reader);
/* Where "malformed file" messages go, once per bad version of the file
 * (default: one line on stderr).  A message of the first read, in
 * crux_prio_reader_open, goes to the log set next (or out at the first
 * poll). */
void crux_prio_reader_set_log(crux_prio_reader_t *reader, crux_prio_log_fn fn, void *arg);
/* 1 when this job's level or keys changed since the last call; a
 * malformed file, or one whose line for this job is malformed, changes
 * nothing (the last good state stays); other jobs' malformed lines are
 * ignored.  Each is said once through the log. */
int crux_prio_reader_poll(crux_prio_reader_t *reader);
int crux_prio_reader_level(const crux_prio_reader_t *reader);
int crux_prio_reader_levels(const crux_prio_reader_t *reader); /* K; 0 without a file */
const char *crux_prio_reader_get(const crux_prio_reader_t *reader, const char *key);
crux_prio_state_t crux_prio_reader_state(const crux_prio_reader_t *reader);
/* 1 while the newest file is malformed and the last good state is used. */
int crux_prio_reader_stale(const crux_prio_reader_t *reader);
/* How many times the file was parsed (successfully or not). */
uint64_t crux_prio_reader_loads(const crux_prio_reader_t *reader);
/* Other jobs' malformed lines left out of the file in use (said once). */
int crux_prio_reader_skipped(const crux_prio_reader_t *reader);

/* ---- job id ---- */

/* The job's id: `explicit_id` when non-empty, else the first set of
 * CRUX_JOB_ID, SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, JOB_ID (SGE),
 * FLUX_JOB_ID, OMPI_MCA_orte_ess_jobid (Open MPI's mpirun).  A value that
 * is not a token is skipped.  *source (may be NULL) gets "explicit" or the
 * variable's name.  NULL when none. */
const char *crux_prio_job_id(const char *explicit_id, const char **source);
/* Why the first id that is set was not usable, in one line ("CRUX_JOB_ID
 * has a blank at byte 6", "... is 10240 bytes, longer than 4096"); an empty
 * string when it was usable or none is set. */
void crux_prio_job_id_skipped(const char *explicit_id, char *why, size_t len);

#endif

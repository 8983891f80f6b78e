/* crux-sched internals: JSON inputs with line-numbered errors, option
 * values, and the subcommands.  Exit codes: 0 success, 1 runtime failure
 * (a file that cannot be read or written, a failed run), 2 usage or input
 * error; every error is one stderr line naming the option, or the file
 * and line. */
#ifndef CRUX_SCHED_TOOL_H
#define CRUX_SCHED_TOOL_H

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

#include "sched/crux_sched.h"
#include "sched/crux_schedtool.h"

enum { TOOL_OK = 0, TOOL_RUNTIME = 1, TOOL_INPUT = 2 };

/* A JSON document and where it came from. */
typedef struct {
    const char *path;
    char *text;
    size_t len;
    json_object *root;
} tool_doc_t;

/* Read and parse; on failure prints "path: why" and returns TOOL_RUNTIME
 * when the file cannot be read, "path:line: why" and TOOL_INPUT when its
 * contents are wrong. */
int tool_doc_load(tool_doc_t *doc, const char *path);
/* The same from text in memory (copied), `name` standing for the path. */
int tool_doc_parse(tool_doc_t *doc, const char *name, const char *text, size_t len);
void tool_doc_free(tool_doc_t *doc);
/* The line where element `index` of the top-level array member `key`
 * starts (1 when it cannot be told). */
int tool_doc_line(const tool_doc_t *doc, const char *key, int index);
/* Print "path:line: message" on stderr ("path: message" when line <= 0:
 * about the file as a whole, e.g. it cannot be opened). */
void tool_error(const char *path, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Print one line on stderr. */
void tool_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on, start every line of tool_error and tool_log with the time:
 * "2026-12-01T18:40:00.123Z " (UTC). */
void tool_log_timestamps(int on);
/* Between tool_round_begin() and tool_round_end() (one pass of the
 * daemon), a line of tool_error or tool_log that was said in the previous
 * round is not said again: a file refused for the same reason is named
 * once, however many passes find it. */
void tool_round_begin(void);
void tool_round_end(void);

/* Typed members of a JSON object, with unknown keys refused. */
typedef enum { F_INT, F_DOUBLE, F_STRING } tool_ftype_t;
typedef struct {
    const char *key;
    tool_ftype_t type;
    void *out;  /* int *, double *, const char ** */
    int *given; /* may be NULL: set to 1 when present */
} tool_field_t;
/* 0, or -1 with err set; keys in `ignore` (NULL-terminated, may be NULL)
 * are allowed and skipped. */
int tool_fields(json_object *obj, const tool_field_t *fields, int n, const char *const *ignore,
                char *err, size_t errlen);

/* Option errors, each one stderr line "crux-sched CMD: ..." naming the
 * option and its value; the parsers return 0, or -1 after saying why. */
void tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After getopt_long (optstring starting with ':') returned '?' or ':'. */
int tool_bad_option(const char *cmd, int opt, char **argv);
int tool_int_opt(const char *cmd, const char *name, const char *s, long lo, long hi, int *out);
int tool_double_opt(const char *cmd, const char *name, const char *s, double lo, double hi,
                    double *out);
int tool_seed_opt(const char *cmd, const char *s, uint64_t *out);
/* *out = the index of s in choices (NULL-terminated). */
int tool_choice_opt(const char *cmd, const char *name, const char *s, const char *const *choices,
                    int *out);
/* --priorities paper|network, for plan and daemon alike. */
int tool_priorities_opt(const char *cmd, const char *s, crux_sched_priorities_t *out);
/* --policy NAME (crux_sched_policy_from_name's names): *out its value. */
int tool_policy_opt(const char *cmd, const char *s, int *out);

/* Cluster file (crux_sched_cluster_load, sched/crux_schedtool.h), from a
 * parsed document. */
int tool_cluster_from_doc(const tool_doc_t *doc, crux_sched_cluster_t **out,
                          crux_sched_nettable_t *table, int levels);

/* One job from its JSON object, with the storage its pointers use. */
typedef struct {
    char id[256];
    crux_sched_place_t *place;
    crux_sched_flow_spec_t *flows;
    crux_sched_job_t job;
    int has_compute, has_overlap, has_bytes;
    int uid, has_uid; /* the job's owner, when given */
} tool_job_t;
/* 0, or -1 with err set.  With `partial` the figures may be missing (the
 * daemon completes them from a profile). */
int tool_job_parse(json_object *obj, const crux_sched_cluster_t *c, int partial, tool_job_t *job,
                   char *err, size_t errlen);
void tool_job_free(tool_job_t *job);
/* A jobs file ({"jobs": [JOB, ...]}): every job added to the plan. */
int tool_jobs_from_doc(const tool_doc_t *doc, const crux_sched_cluster_t *c,
                       crux_sched_plan_t *plan);

/* Write the priority file and the report of a planned plan; uids (may be
 * NULL) gives each job's owner in the plan's order (-1: none), written as
 * the line's "uid". */
int tool_write_priorities(const crux_sched_plan_t *plan, const crux_sched_nettable_t *table,
                          int levels, int reserve, const int *uids, const char *out,
                          const char *comment);
/* `who` ("crux-sched plan", "crux-sched daemon") heads the text report. */
int tool_write_report(const crux_sched_plan_t *plan, const crux_sched_cluster_t *c,
                      const crux_sched_nettable_t *table, int levels, int reserve, const char *out,
                      int json, const char *who);

int tool_plan(int argc, char **argv);
int tool_daemon(int argc, char **argv);
int tool_status(int argc, char **argv);
int tool_gen_jobs(int argc, char **argv);

#endif

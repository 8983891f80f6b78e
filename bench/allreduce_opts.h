/* crux-bench-allreduce's command line, without MPI: the options, their
 * checks (an error names the option and the value), the usage text, and
 * the selections that can be compared. */
#ifndef CRUX_BENCH_ALLREDUCE_OPTS_H
#define CRUX_BENCH_ALLREDUCE_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "bench/allreduce_check.h"

#define BENCH_MAX_VARIANTS 8
#define BENCH_MAX_REPS     101

/* A selection to compare: a communicator duplicated with an info key
 * (none: the job's normal selection), valid only when the job has the
 * component it needs. */
typedef struct {
    const char *name;
    const char *key, *value; /* info key; NULL: the normal selection */
    const char *needs;       /* the coll component it measures */
    const char *what;        /* for the usage text */
} bench_variant_t;

extern const bench_variant_t bench_variants[];
extern const int bench_num_variants;

typedef enum { BENCH_RUN, BENCH_HELP, BENCH_VERSION } bench_action_t;

typedef struct {
    bench_action_t action;
    size_t min_bytes, max_bytes;
    unsigned factor;
    int types[BENCH_NUM_TYPES], ntypes;
    int ops[BENCH_NUM_OPS], nops;
    int iters;  /* 0: sized from the message (see the usage text) */
    int warmup; /* -1: sized from -n */
    int reps;
    int check;
    int cuda; /* device buffers */
    int csv;
    int variants[BENCH_MAX_VARIANTS], nvariants; /* indices into bench_variants */
} bench_options_t;

/* Parse ARGV into O: 0, or -1 with a one-line message (no newline) in ERR. */
int bench_parse(int argc, char **argv, bench_options_t *o, char *err, size_t errlen);

void bench_usage(FILE *out);

#endif

/* libcrux_schedtool: the readers of crux-sched's input files, which crux-sim
 * and the fuzzing harnesses link too (docs/usage/crux-sched.md).  Errors go
 * to stderr, one line each, naming the file and line at fault. */
#ifndef CRUX_SCHEDTOOL_H
#define CRUX_SCHEDTOOL_H

#include "sched/crux_sched.h"

/* Read the cluster file at 'path' (a builder or an explicit list) into *out,
 * and, when 'table' is not NULL, its level table for 'levels' levels.
 * Returns an exit code of the tools: 0, 1 when the file cannot be read, 2
 * when its contents are wrong. */
int crux_sched_cluster_load(const char *path, crux_sched_cluster_t **out,
                            crux_sched_nettable_t *table, int levels);

#endif

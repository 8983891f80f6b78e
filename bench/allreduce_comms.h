/* crux-bench-allreduce: one communicator per selection the job can run. */
#ifndef CRUX_BENCH_ALLREDUCE_COMMS_H
#define CRUX_BENCH_ALLREDUCE_COMMS_H

#include <mpi.h>

#include "bench/allreduce_opts.h"

#define BENCH_WHY_LEN 200

typedef struct {
    int n;                           /* selections that run */
    int variant[BENCH_MAX_VARIANTS]; /* indices into bench_variants */
    MPI_Comm comm[BENCH_MAX_VARIANTS];
    char how[BENCH_MAX_VARIANTS][BENCH_WHY_LEN]; /* "" or how a selection is reached */
    int nskipped;
    int skipped[BENCH_MAX_VARIANTS];
    char why[BENCH_MAX_VARIANTS][BENCH_WHY_LEN];
} bench_comms_t;

/* Collective over MPI_COMM_WORLD: the same selections on every rank.  A
 * selection is skipped, with the reason, when the job lacks the coll
 * component it measures (Open MPI 4.1 crashes in MPI_Comm_dup_with_info
 * when an info key leaves a communicator no component at all, as "^crux"
 * does under --mca coll crux), when its buffers would be device memory
 * that the component cannot take, or when Open MPI refuses the
 * communicator.  Under --mca coll crux, where coll/tuned is not in the
 * job, 'tuned' is measured as the module crux fills Allreduce from
 * (coll/tuned, unless coll_crux_fill_components leaves it out), and HOW
 * says so. */
void bench_comms_open(const bench_options_t *o, bench_comms_t *c);
void bench_comms_close(bench_comms_t *c);

#endif

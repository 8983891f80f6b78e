/* crux-bench-coll: libcrux_coll's Allreduce in forked processes, without MPI,
 * next to a bare single-copy loop (process_vm_readv reduce-scatter +
 * allgather with no crux machinery) as a floor to compare with. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>

#include "tests/unit/fork_group.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct {
    size_t bytes;
    int    iters;
    crux_allreduce_alg_t alg;
    double *result;   /* shared: seconds per call, per rank */
} bench_arg_t;

static int run_crux(fork_group_member_t *m, void *argp)
{
    bench_arg_t *a = argp;
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, NULL, &g) != CRUX_OK) {
        return 1;
    }
    size_t n = a->bytes / sizeof(float);
    float *s = malloc(a->bytes), *r = malloc(a->bytes);
    for (size_t i = 0; i < n; i++) {
        s[i] = (float)(i % 7);
        r[i] = 0;
    }
    for (int i = 0; i < 3; i++) {
        crux_coll_allreduce(g, s, r, n, CRUX_DT_FLOAT, CRUX_OP_SUM, a->alg);
    }
    fork_group_barrier(m);
    double t0 = now();
    for (int i = 0; i < a->iters; i++) {
        crux_coll_allreduce(g, s, r, n, CRUX_DT_FLOAT, CRUX_OP_SUM, a->alg);
    }
    a->result[m->rank] = (now() - t0) / a->iters;
    crux_coll_group_destroy(g);
    return 0;
}

int main(int argc, char **argv)
{
    int size = argc > 1 ? atoi(argv[1]) : 2;
    double *result = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    printf("%10s %12s %12s\n", "bytes", "staged us", "cma us");
    for (size_t bytes = 4096; bytes <= (64u << 20); bytes *= 2) {
        double t[2];
        for (int alg = 0; alg < 2; alg++) {
            bench_arg_t a = { bytes, (int)(256e6 / bytes) < 5 ? 5 : (int)(256e6 / bytes) > 2000 ? 2000 : (int)(256e6 / bytes),
                              alg == 0 ? CRUX_ALLREDUCE_STAGED : CRUX_ALLREDUCE_CMA, result };
            fork_group_run(size, run_crux, &a);
            t[alg] = 0;
            for (int r = 0; r < size; r++) {
                t[alg] = result[r] > t[alg] ? result[r] : t[alg];
            }
        }
        printf("%10zu %12.1f %12.1f\n", bytes, t[0] * 1e6, t[1] * 1e6);
    }
    return 0;
}

/* A training-like job for the scheduler tests: for SECONDS, an iteration of
 * "compute" (a short sleep) and Allreduces of a fixed pattern of sizes, as a
 * framework's fused gradient buffers give; checks every result.
 * Usage: test_job SECONDS [MIB]   (the largest Allreduce, default 4 MiB) */
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "tap_mpi.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double seconds = argc > 1 ? atof(argv[1]) : 2;
    size_t big = (argc > 2 ? (size_t)atoi(argv[2]) : 4) << 20;
    const size_t pattern[] = { big, big / 4, big / 2 };
    float *buf = malloc(big);
    bool ok = buf != NULL;
    long calls = 0;
    double start = MPI_Wtime();
    int go = 1;
    while (ok && go) {
        struct timespec compute = { 0, 2000000 };
        nanosleep(&compute, NULL);
        for (size_t p = 0; p < sizeof(pattern) / sizeof(pattern[0]) && ok; p++) {
            size_t n = pattern[p] / sizeof(float);
            for (size_t i = 0; i < n; i++) {
                buf[i] = (float)(rank + 1);
            }
            ok = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
                     MPI_SUCCESS &&
                 buf[0] == (float)(size * (size + 1) / 2) &&
                 buf[n - 1] == (float)(size * (size + 1) / 2);
            calls++;
        }
        go = MPI_Wtime() - start < seconds;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD); /* stop together */
    }
    tap_check(ok, "%ld Allreduces over %.0f s, all correct", calls, seconds);
    free(buf);
    MPI_Finalize();
    return 0;
}

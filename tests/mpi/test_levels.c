/* Phases of large Allreduces with a pause between them, for tests and
 * benchmarks that look at the network from outside (tests/mpi/levels.sh,
 * bench/levels_bench.sh):
 *
 *   test_levels MIB CALLS PHASES DIR
 *
 * Each phase makes CALLS in-place float Allreduces of MIB MiB, checked
 * exact (small integers), and prints one TAP line with its mean time per
 * call.  After each phase but the last, rank 0 creates DIR/phase<N>.done
 * and waits (at most 120 s) for DIR/go<N>, while the other ranks wait in a
 * barrier: whoever runs the job reads counters and changes the priority
 * file in between.  With PHASES 0 the job runs until DIR/stop exists,
 * printing each call's start (seconds of the realtime clock) and time on
 * rank 0 ("# call N START T"): for benchmarks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int exists(const char *dir, const char *name, int n)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s%d", dir, name, n);
    return stat(path, &st) == 0;
}

static void touch(const char *dir, const char *name, int n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s%d.done", dir, name, n);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5) {
        if (rank == 0) {
            fprintf(stderr, "usage: test_levels MIB CALLS PHASES DIR\n");
        }
        MPI_Finalize();
        return 2;
    }
    size_t n = ((size_t)atoi(argv[1]) << 20) / sizeof(float);
    int calls = atoi(argv[2]), phases = atoi(argv[3]);
    const char *dir = argv[4];
    float *buf = malloc(n * sizeof(float));
    int failed = 0;
    for (int phase = 0; phases == 0 || phase < phases; phase++) {
        double total = 0;
        int bad = 0;
        for (int c = 0; c < calls || phases == 0; c++) {
            for (size_t i = 0; i < n; i++) {
                buf[i] = (float)((i + (size_t)rank) % 7);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            double t = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            t = MPI_Wtime() - t;
            total += t;
            for (size_t i = 0; i < n; i += 4093) {
                float want = 0;
                for (int r = 0; r < size; r++) {
                    want += (float)((i + (size_t)r) % 7);
                }
                bad += buf[i] != want;
            }
            if (phases == 0) {
                int stop = rank == 0 && exists(dir, "stop", 0);
                MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
                if (rank == 0) {
                    printf("# call %d %.6f %.6f\n", c,
                           (double)now.tv_sec + 1e-9 * (double)now.tv_nsec, t);
                    fflush(stdout);
                }
                if (stop) {
                    phases = -1;
                    break;
                }
            }
        }
        int all_bad = 0;
        MPI_Reduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && phases > 0) {
            printf("%s - phase %d: %d Allreduces of %s MiB exact (%.1f ms each)\n",
                   all_bad ? "not ok" : "ok", phase, calls, argv[1], 1e3 * total / calls);
            fflush(stdout);
        }
        failed |= all_bad != 0;
        if (phases < 0 || phase == phases - 1) {
            break;
        }
        if (rank == 0) {
            touch(dir, "phase", phase);
            for (int waited = 0; !exists(dir, "go", phase) && waited < 12000; waited++) {
                usleep(10000);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
    MPI_Finalize();
    return failed;
}

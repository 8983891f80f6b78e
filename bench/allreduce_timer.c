/* A PMPI layer, preloaded into an MPI program (bench/horovod_keras.sh):
 * the time each process spends in MPI_Allreduce, by message size, printed
 * as one JSON line per process at MPI_Finalize.  What a training framework
 * spends on its small control Allreduces (Horovod's coordinator reduces a
 * bit vector of ready tensors every cycle) is seen apart from its
 * gradients this way, whichever coll component runs them.
 *
 *   mpicc -shared -fPIC -o allreduce_timer.so bench/allreduce_timer.c
 *   mpirun -x LD_PRELOAD=$PWD/allreduce_timer.so ./app */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* size classes: up to 64 B, 4 KiB, 64 KiB, 1 MiB, 16 MiB, larger */
#define CLASSES 6
static const char *const names[CLASSES] = { "le64B",  "le4KiB",  "le64KiB",
                                            "le1MiB", "le16MiB", "gt16MiB" };
static const long long limits[CLASSES - 1] = { 64, 4096, 65536, 1 << 20, 16 << 20 };

static long long calls[CLASSES];
static double seconds[CLASSES];

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                  MPI_Comm comm)
{
    int size = 0;
    PMPI_Type_size(dtype, &size);
    long long bytes = (long long)count * size;
    int c = 0;
    while (c < CLASSES - 1 && bytes > limits[c]) {
        c++;
    }
    double t0 = now();
    int rc = PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm);
    /* Horovod calls from its one background thread: no two calls race */
    seconds[c] += now() - t0;
    calls[c]++;
    return rc;
}

int MPI_Finalize(void)
{
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char line[1024];
    int used = snprintf(line, sizeof(line), "{\"allreduce_timer\": %d", rank);
    for (int c = 0; c < CLASSES && used < (int)sizeof(line); c++) {
        used += snprintf(line + used, sizeof(line) - (size_t)used,
                         ", \"%s_calls\": %lld, \"%s_us\": %.1f", names[c], calls[c], names[c],
                         seconds[c] * 1e6);
    }
    if (used < (int)sizeof(line)) {
        snprintf(line + used, sizeof(line) - (size_t)used, "}\n");
        (void)!write(STDOUT_FILENO, line, strlen(line));
    }
    return PMPI_Finalize();
}

/* Faults a training job meets, for tests/mpi/faults.sh:
 *   kill MIB      large crux Allreduces (MIB MiB of floats) in a loop; the
 *                 last rank SIGKILLs itself from a thread while its main
 *                 thread is inside the third one (the job must end non-zero,
 *                 soon, leaving nothing behind: checked by the script);
 *   commfree N    one thread allreduces on a communicator of its own all
 *                 along while the main thread creates, uses and frees N
 *                 communicators (crux modules and groups come and go under
 *                 the other thread's feet); exact results;
 *   run SECONDS   Allreduces of several sizes for that long, exact results
 *                 (the script meanwhile deletes, truncates and replaces the
 *                 job's priority file);
 *   comms N       N communicators created, given one crux Allreduce (so
 *                 crux sets up its group and segments) and freed, one after
 *                 the other: run under valgrind by tests/leaks.sh, whose
 *                 leaks must not grow with N.
 * Usage: test_faults kill MIB | commfree N | run SECONDS | comms N */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tap_mpi.h"

static int rank, size;

/* Element i of rank r in call c: small integers, sums exact in float. */
static float input(int r, size_t i, int c)
{
    return (float)((r * 5 + i * 3 + (size_t)c) % 13);
}

static bool allreduce_checked(MPI_Comm comm, float *buf, size_t n, int c)
{
    int csize, crank;
    MPI_Comm_size(comm, &csize);
    MPI_Comm_rank(comm, &crank);
    for (size_t i = 0; i < n; i++) {
        buf[i] = input(crank, i, c);
    }
    if (MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, comm) != MPI_SUCCESS) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < csize; r++) {
            want += input(r, i, c);
        }
        if (buf[i] != want) {
            return false;
        }
    }
    return true;
}

/* ---- kill ---------------------------------------------------------------- */

static atomic_int in_call; /* the call number the main thread is inside */
static int victim_call;    /* the call the victim dies in */

static void *killer(void *arg)
{
    size_t mib = *(const size_t *)arg;
    while (atomic_load(&in_call) < victim_call) {
        usleep(100);
    }
    if (mib > 0) {
        usleep(2000); /* well inside the call: it moves MIB MiB */
    }                 /* else the main thread does nothing but small Allreduces */
    fprintf(stderr, "# rank %d: SIGKILL inside Allreduce %d\n", rank, atomic_load(&in_call));
    raise(SIGKILL);
    return NULL;
}

/* MIB 0: small Allreduces of 16 floats, the victim dies in one of them
 * past the 1000th */
static int do_kill(size_t mib)
{
    size_t n = mib > 0 ? (mib << 20) / sizeof(float) : 16;
    int calls = mib > 0 ? 1000 : 100000000;
    victim_call = mib > 0 ? 3 : 1000;
    float *buf = malloc(n * sizeof(float));
    pthread_t thread;
    bool victim = rank == size - 1;
    if (victim) {
        pthread_create(&thread, NULL, killer, &mib);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_name(comm, "faults-kill");
    for (int c = 1; c <= calls; c++) {
        atomic_store(&in_call, c);
        if (rank == 0 && c == 3) {
            fprintf(stderr, "# rank 0: inside Allreduce 3\n");
        }
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, comm);
    }
    /* not reached: the job ends with the victim */
    printf("not ok - the job went on past a killed rank\n");
    return 1;
}

/* ---- commfree ------------------------------------------------------------ */

typedef struct {
    MPI_Comm comm;
    atomic_bool stop;
    long calls;
    bool ok;
} other_t;

static void *other_thread(void *arg)
{
    other_t *o = arg;
    size_t n = (1 << 20) / sizeof(float); /* 1 MiB: crux's */
    float *buf = malloc(n * sizeof(float));
    int go = 1;
    for (int c = 0; go; c++) {
        o->ok &= allreduce_checked(o->comm, buf, n, c);
        o->calls++;
        /* every rank's thread stops after the same call: rank 0's decides */
        go = !atomic_load(&o->stop) || c < 4;
        MPI_Bcast(&go, 1, MPI_INT, 0, o->comm);
    }
    free(buf);
    return NULL;
}

static int do_commfree(int count)
{
    other_t o = { .ok = true };
    MPI_Comm_dup(MPI_COMM_WORLD, &o.comm);
    MPI_Comm_set_name(o.comm, "faults-other");
    pthread_t thread;
    pthread_create(&thread, NULL, other_thread, &o);
    size_t n = (256 << 10) / sizeof(float);
    float *buf = malloc(n * sizeof(float));
    bool ok = true;
    for (int i = 0; i < count; i++) {
        MPI_Comm comm;
        if (i % 2) {
            MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comm); /* reordered */
        } else {
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        }
        MPI_Comm_set_name(comm, "faults-churn");
        ok &= allreduce_checked(comm, buf, n, i);
        if (i % 3 == 0) { /* sometimes freed right after its creation */
            MPI_Comm_free(&comm);
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        }
        MPI_Comm_free(&comm);
    }
    atomic_store(&o.stop, true);
    pthread_join(thread, NULL);
    tap_check(ok, "%d communicators created, used and freed by one thread, all exact", count);
    tap_check(o.ok && o.calls >= 4,
              "another thread's Allreduces on its own communicator meanwhile, all exact");
    MPI_Comm_free(&o.comm);
    free(buf);
    return 0;
}

/* ---- run ----------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int do_run(double seconds)
{
    static const size_t sizes[] = { 64 << 10, 1 << 20, 4 << 20 };
    float *buf = malloc(sizes[2]);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_name(comm, "faults-run");
    bool ok = true;
    long calls = 0;
    int go = 1;
    double end = now() + seconds;
    for (int c = 0; go; c++) {
        ok &= allreduce_checked(comm, buf, sizes[c % 3] / sizeof(float), c);
        calls++;
        go = now() < end;
        /* every rank stops after the same call: rank 0's clock decides */
        MPI_Bcast(&go, 1, MPI_INT, 0, comm);
    }
    tap_check(ok, "%ld Allreduces in %.0f s while the priority file came and went, all exact",
              calls, seconds);
    MPI_Comm_free(&comm);
    free(buf);
    return 0;
}

/* ---- comms --------------------------------------------------------------- */

static int do_comms(int count)
{
    size_t n = (64 << 10) / sizeof(float); /* above allreduce_min_bytes */
    float *buf = malloc(n * sizeof(float));
    bool ok = true;
    for (int i = 0; i < count; i++) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        MPI_Comm_set_name(comm, "faults-comms");
        ok &= allreduce_checked(comm, buf, n, i);
        MPI_Comm_free(&comm);
    }
    tap_check(ok, "%d communicators created, used by crux and freed, all exact", count);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    const char *arg = argc > 2 ? argv[2] : "1";
    int rc;
    if (strcmp(mode, "kill") == 0) {
        rc = do_kill((size_t)atoi(arg));
    } else if (strcmp(mode, "commfree") == 0) {
        if (provided < MPI_THREAD_MULTIPLE) {
            tap_check(0, "MPI_THREAD_MULTIPLE provided");
            MPI_Finalize();
            return 1;
        }
        rc = do_commfree(atoi(arg));
    } else if (strcmp(mode, "comms") == 0) {
        rc = do_comms(atoi(arg));
    } else if (strcmp(mode, "run") == 0) {
        rc = do_run(atof(arg));
    } else {
        if (rank == 0) {
            fprintf(stderr, "usage: test_faults kill MIB | commfree N | run SECONDS | comms N\n");
        }
        rc = 2;
    }
    MPI_Finalize();
    return rc || tap_failures;
}

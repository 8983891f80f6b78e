/* MPI_THREAD_MULTIPLE: 4 threads, each running Allreduces on a communicator
 * of its own at the same time (sizes crux takes, float, int and double, in
 * and out of place, exact results), one communicator per algorithm crux
 * has; meanwhile thread 0 keeps creating, using and freeing communicators
 * (dup and split of its own), so communicators come and go while the other
 * threads use theirs.  Meant to run under ThreadSanitizer too.
 * Usage: test_threads [ROUNDS]   (default 12) */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tap_mpi.h"

enum { THREADS = 4 };

static int rank, size, rounds;

typedef struct {
    int id;
    MPI_Comm comm;
    long calls, churned;
    bool ok;
} worker_t;

/* Element i of rank r in call c: small integers, exact in every type. */
static int input(int r, size_t i, int c)
{
    return (int)((r * 5 + i * 3 + (size_t)c) % 13);
}

static bool allreduce_checked(MPI_Comm comm, MPI_Datatype type, size_t count, bool in_place, int c)
{
    int n, me, esize;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Type_size(type, &esize);
    char *in = malloc(count * (size_t)esize), *out = malloc(count * (size_t)esize);
    if (in == NULL || out == NULL) {
        abort(); /* the other ranks would wait for this one */
    }
    bool ok = true;
    for (size_t i = 0; i < count; i++) {
        char *p = (in_place ? out : in) + i * (size_t)esize;
        if (type == MPI_FLOAT)
            *(float *)p = (float)input(me, i, c);
        else if (type == MPI_DOUBLE)
            *(double *)p = (double)input(me, i, c);
        else
            *(int *)p = input(me, i, c);
    }
    ok = MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int)count, type, MPI_SUM, comm) ==
         MPI_SUCCESS;
    for (size_t i = 0; ok && i < count; i++) {
        int want = 0;
        for (int r = 0; r < n; r++) {
            want += input(r, i, c);
        }
        const char *p = out + i * (size_t)esize;
        ok = type == MPI_FLOAT    ? *(const float *)p == (float)want
             : type == MPI_DOUBLE ? *(const double *)p == (double)want
                                  : *(const int *)p == want;
        if (!ok) {
            tap_diag("rank %d: element %zu of %zu wrong", rank, i, count);
        }
    }
    free(in);
    free(out);
    return ok;
}

/* One round: a few sizes above crux's threshold, up to a few stages.  A
 * failure stops nothing: every rank makes the same calls. */
static bool round_of(MPI_Comm comm, int id, int round)
{
    static const size_t counts[] = { 2053, 65537, 262147, 1048573 };
    const MPI_Datatype types[] = { MPI_FLOAT, MPI_INT, MPI_DOUBLE };
    bool ok = true;
    for (int k = 0; k < 4; k++) {
        size_t count = counts[(k + id + round) % 4];
        ok = allreduce_checked(comm, types[(k + round) % 3], count, (k + id) % 2 == 0,
                               round * 4 + k) &&
             ok;
    }
    return ok;
}

/* Thread 0's extra: a communicator made from its own, used, freed. */
static bool churn(worker_t *w, int round)
{
    MPI_Comm tmp;
    int rc = round % 2 ? MPI_Comm_dup(w->comm, &tmp)
                       : MPI_Comm_split(w->comm, 0, size - rank, &tmp); /* reversed order */
    if (rc != MPI_SUCCESS) {
        return false;
    }
    MPI_Comm_set_errhandler(tmp, MPI_ERRORS_RETURN);
    bool ok = allreduce_checked(tmp, MPI_FLOAT, 100003, round % 3 == 0, round);
    w->churned++;
    return MPI_Comm_free(&tmp) == MPI_SUCCESS && ok;
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    w->ok = true;
    for (int round = 0; round < rounds; round++) {
        w->ok = round_of(w->comm, w->id, round) && w->ok;
        w->calls += 4;
        if (w->id == 0) {
            w->ok = churn(w, round) && w->ok;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rounds = argc > 1 ? atoi(argv[1]) : 12;
    tap_check(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");

    /* one communicator per thread; two ask for an algorithm of crux's, the
     * others take coll_crux_allreduce_algorithm */
    static const char *const algorithms[THREADS] = { NULL, "flat", "engine", NULL };
    worker_t w[THREADS];
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) {
        MPI_Info info;
        MPI_Info_create(&info);
        if (algorithms[t] != NULL) {
            MPI_Info_set(info, "crux_allreduce_algorithm", algorithms[t]);
        }
        memset(&w[t], 0, sizeof(w[t]));
        w[t].id = t;
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &w[t].comm);
        MPI_Info_free(&info);
        char name[32];
        snprintf(name, sizeof(name), "thread-%d", t);
        MPI_Comm_set_name(w[t].comm, name);
        MPI_Comm_set_errhandler(w[t].comm, MPI_ERRORS_RETURN);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_create(&threads[t], NULL, worker, &w[t]);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
    }
    for (int t = 0; t < THREADS; t++) {
        tap_check(w[t].ok, "thread %d (%s): %ld Allreduces on its own communicator, all exact", t,
                  algorithms[t] ? algorithms[t] : "default", w[t].calls);
    }
    tap_check(w[0].ok && w[0].churned == rounds,
              "thread 0 created, used and freed %ld communicators meanwhile", w[0].churned);
    for (int t = 0; t < THREADS; t++) {
        MPI_Comm_free(&w[t].comm);
    }
    MPI_Finalize();
    return 0;
}

/* TAP from MPI tests: every rank reports whether a check passed, rank 0
 * prints one "ok"/"not ok" line.  The verdict is combined with MPI_Reduce
 * (never MPI_Allreduce, the collective under test).  Test numbers and the
 * plan are added by tests/mpi/mpi-common.sh, which runs several mpiruns per
 * test script. */
#ifndef CRUX_TAP_MPI_H
#define CRUX_TAP_MPI_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>

static int tap_failures;

__attribute__((format(printf, 2, 3))) static void tap_check(int local_ok, const char *fmt, ...)
{
    int rank, all_ok = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        printf("%s - ", all_ok ? "ok" : "not ok");
        vprintf(fmt, ap);
        printf("\n");
        fflush(stdout);
        va_end(ap);
        tap_failures += !all_ok;
    }
}

/* A check that cannot be made here: one "ok ... # SKIP why" line. */
__attribute__((unused)) static void tap_skip(const char *what, const char *why)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        printf("ok - %s # SKIP %s\n", what, why);
        fflush(stdout);
    }
}

__attribute__((format(printf, 1, 2), unused)) static void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "# ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

#endif

/* The three forms of an MPI collective (blocking, nonblocking, persistent)
 * and one way to call and finish any of them, for the MPI tests that run
 * every collective in every form. */
#ifndef CRUX_TESTS_COLL_MODES_H
#define CRUX_TESTS_COLL_MODES_H

#include <stdbool.h>

#include <mpi.h>

typedef enum { BLOCKING, NONBLOCKING, PERSISTENT } mode_t_;
static const char *const mode_names[] = { "blocking", "nonblocking", "persistent" };

/* Finish a nonblocking or persistent call: persistent ones are started
 * twice, to check they can be reused. */
static bool finish(mode_t_ mode, MPI_Request *req)
{
    if (mode == BLOCKING) {
        return true;
    }
    if (mode == PERSISTENT) {
        if (MPI_Start(req) != MPI_SUCCESS || MPI_Wait(req, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
            MPI_Start(req) != MPI_SUCCESS) {
            return false;
        }
    }
    bool ok = MPI_Wait(req, MPI_STATUS_IGNORE) == MPI_SUCCESS;
    if (mode == PERSISTENT) {
        ok = MPI_Request_free(req) == MPI_SUCCESS && ok;
    }
    return ok;
}

/* Call the blocking, nonblocking or persistent form of a collective. */
#define CALL(mode, req, blocking, nonblocking, persistent)                       \
    ((mode) == BLOCKING      ? (blocking) == MPI_SUCCESS                         \
     : (mode) == NONBLOCKING ? (nonblocking) == MPI_SUCCESS && finish(mode, req) \
                             : (persistent) == MPI_SUCCESS && finish(mode, req))

#endif

/* Every MPI collective, blocking, nonblocking and persistent (MPIX_*_init),
 * on every kind of communicator Open MPI creates: MPI_COMM_WORLD,
 * MPI_COMM_SELF, a split, a dup, an intercommunicator and a cartesian one
 * (neighbourhood collectives).  Run with `--mca coll crux` it proves crux
 * leaves no collective slot empty; in the default mix that crux chains
 * correctly to the modules selected before it. */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "coll_modes.h"
#include "tap_mpi.h"

#define N 5 /* elements per block */

static int val(int rank, int i)
{
    return rank * 100 + i;
}

static void intracomm_suite(MPI_Comm comm, const char *name, mode_t_ mode)
{
    int n, r;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    MPI_Request req;
    MPI_Info info = MPI_INFO_NULL;
    int *s = malloc(sizeof(int) * N * n), *d = malloc(sizeof(int) * N * n);
    int *counts = malloc(sizeof(int) * n), *displs = malloc(sizeof(int) * n);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * n);
    for (int p = 0; p < n; p++) {
        counts[p] = N;
        displs[p] = p * N;
        types[p] = MPI_INT;
    }
    const char *m = mode_names[mode];
    bool ok;

#define RESET()                       \
    for (int k = 0; k < N * n; k++) { \
        s[k] = val(r, k);             \
        d[k] = -1;                    \
    }

    ok = CALL(mode, &req, MPI_Barrier(comm), MPI_Ibarrier(comm, &req),
              MPIX_Barrier_init(comm, info, &req));
    tap_check(ok, "%s %s barrier", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Bcast(s, N, MPI_INT, n - 1, comm),
              MPI_Ibcast(s, N, MPI_INT, n - 1, comm, &req),
              MPIX_Bcast_init(s, N, MPI_INT, n - 1, comm, info, &req));
    for (int i = 0; i < N; i++)
        ok = ok && s[i] == val(n - 1, i);
    tap_check(ok, "%s %s bcast", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Reduce(s, d, N, MPI_INT, MPI_SUM, 0, comm),
              MPI_Ireduce(s, d, N, MPI_INT, MPI_SUM, 0, comm, &req),
              MPIX_Reduce_init(s, d, N, MPI_INT, MPI_SUM, 0, comm, info, &req));
    for (int i = 0; r == 0 && i < N; i++)
        ok = ok && d[i] == 100 * n * (n - 1) / 2 + n * i;
    tap_check(ok, "%s %s reduce", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Allreduce(s, d, N, MPI_INT, MPI_MAX, comm),
              MPI_Iallreduce(s, d, N, MPI_INT, MPI_MAX, comm, &req),
              MPIX_Allreduce_init(s, d, N, MPI_INT, MPI_MAX, comm, info, &req));
    for (int i = 0; i < N; i++)
        ok = ok && d[i] == val(n - 1, i);
    tap_check(ok, "%s %s allreduce", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Gather(s, N, MPI_INT, d, N, MPI_INT, 0, comm),
              MPI_Igather(s, N, MPI_INT, d, N, MPI_INT, 0, comm, &req),
              MPIX_Gather_init(s, N, MPI_INT, d, N, MPI_INT, 0, comm, info, &req));
    for (int k = 0; r == 0 && k < N * n; k++)
        ok = ok && d[k] == val(k / N, k % N);
    tap_check(ok, "%s %s gather", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Gatherv(s, N, MPI_INT, d, counts, displs, MPI_INT, 0, comm),
              MPI_Igatherv(s, N, MPI_INT, d, counts, displs, MPI_INT, 0, comm, &req),
              MPIX_Gatherv_init(s, N, MPI_INT, d, counts, displs, MPI_INT, 0, comm, info, &req));
    for (int k = 0; r == 0 && k < N * n; k++)
        ok = ok && d[k] == val(k / N, k % N);
    tap_check(ok, "%s %s gatherv", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Scatter(s, N, MPI_INT, d, N, MPI_INT, 0, comm),
              MPI_Iscatter(s, N, MPI_INT, d, N, MPI_INT, 0, comm, &req),
              MPIX_Scatter_init(s, N, MPI_INT, d, N, MPI_INT, 0, comm, info, &req));
    for (int i = 0; i < N; i++)
        ok = ok && d[i] == val(0, r * N + i);
    tap_check(ok, "%s %s scatter", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Scatterv(s, counts, displs, MPI_INT, d, N, MPI_INT, 0, comm),
              MPI_Iscatterv(s, counts, displs, MPI_INT, d, N, MPI_INT, 0, comm, &req),
              MPIX_Scatterv_init(s, counts, displs, MPI_INT, d, N, MPI_INT, 0, comm, info, &req));
    for (int i = 0; i < N; i++)
        ok = ok && d[i] == val(0, r * N + i);
    tap_check(ok, "%s %s scatterv", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Allgather(s, N, MPI_INT, d, N, MPI_INT, comm),
              MPI_Iallgather(s, N, MPI_INT, d, N, MPI_INT, comm, &req),
              MPIX_Allgather_init(s, N, MPI_INT, d, N, MPI_INT, comm, info, &req));
    for (int k = 0; k < N * n; k++)
        ok = ok && d[k] == val(k / N, k % N);
    tap_check(ok, "%s %s allgather", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Allgatherv(s, N, MPI_INT, d, counts, displs, MPI_INT, comm),
              MPI_Iallgatherv(s, N, MPI_INT, d, counts, displs, MPI_INT, comm, &req),
              MPIX_Allgatherv_init(s, N, MPI_INT, d, counts, displs, MPI_INT, comm, info, &req));
    for (int k = 0; k < N * n; k++)
        ok = ok && d[k] == val(k / N, k % N);
    tap_check(ok, "%s %s allgatherv", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Alltoall(s, N, MPI_INT, d, N, MPI_INT, comm),
              MPI_Ialltoall(s, N, MPI_INT, d, N, MPI_INT, comm, &req),
              MPIX_Alltoall_init(s, N, MPI_INT, d, N, MPI_INT, comm, info, &req));
    for (int k = 0; k < N * n; k++)
        ok = ok && d[k] == val(k / N, r * N + k % N);
    tap_check(ok, "%s %s alltoall", name, m);

    RESET();
    ok = CALL(mode, &req,
              MPI_Alltoallv(s, counts, displs, MPI_INT, d, counts, displs, MPI_INT, comm),
              MPI_Ialltoallv(s, counts, displs, MPI_INT, d, counts, displs, MPI_INT, comm, &req),
              MPIX_Alltoallv_init(s, counts, displs, MPI_INT, d, counts, displs, MPI_INT, comm,
                                  info, &req));
    for (int k = 0; k < N * n; k++)
        ok = ok && d[k] == val(k / N, r * N + k % N);
    tap_check(ok, "%s %s alltoallv", name, m);

    int *bdispls = malloc(sizeof(int) * n);
    for (int p = 0; p < n; p++)
        bdispls[p] = p * N * (int)sizeof(int);
    RESET();
    ok = CALL(mode, &req, MPI_Alltoallw(s, counts, bdispls, types, d, counts, bdispls, types, comm),
              MPI_Ialltoallw(s, counts, bdispls, types, d, counts, bdispls, types, comm, &req),
              MPIX_Alltoallw_init(s, counts, bdispls, types, d, counts, bdispls, types, comm, info,
                                  &req));
    for (int k = 0; k < N * n; k++)
        ok = ok && d[k] == val(k / N, r * N + k % N);
    tap_check(ok, "%s %s alltoallw", name, m);
    free(bdispls);

    RESET();
    ok = CALL(mode, &req, MPI_Reduce_scatter(s, d, counts, MPI_INT, MPI_SUM, comm),
              MPI_Ireduce_scatter(s, d, counts, MPI_INT, MPI_SUM, comm, &req),
              MPIX_Reduce_scatter_init(s, d, counts, MPI_INT, MPI_SUM, comm, info, &req));
    for (int i = 0; i < N; i++)
        ok = ok && d[i] == 100 * n * (n - 1) / 2 + n * (r * N + i);
    tap_check(ok, "%s %s reduce_scatter", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Reduce_scatter_block(s, d, N, MPI_INT, MPI_SUM, comm),
              MPI_Ireduce_scatter_block(s, d, N, MPI_INT, MPI_SUM, comm, &req),
              MPIX_Reduce_scatter_block_init(s, d, N, MPI_INT, MPI_SUM, comm, info, &req));
    for (int i = 0; i < N; i++)
        ok = ok && d[i] == 100 * n * (n - 1) / 2 + n * (r * N + i);
    tap_check(ok, "%s %s reduce_scatter_block", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Scan(s, d, N, MPI_INT, MPI_SUM, comm),
              MPI_Iscan(s, d, N, MPI_INT, MPI_SUM, comm, &req),
              MPIX_Scan_init(s, d, N, MPI_INT, MPI_SUM, comm, info, &req));
    for (int i = 0; i < N; i++)
        ok = ok && d[i] == 100 * r * (r + 1) / 2 + (r + 1) * i;
    tap_check(ok, "%s %s scan", name, m);

    RESET();
    ok = CALL(mode, &req, MPI_Exscan(s, d, N, MPI_INT, MPI_SUM, comm),
              MPI_Iexscan(s, d, N, MPI_INT, MPI_SUM, comm, &req),
              MPIX_Exscan_init(s, d, N, MPI_INT, MPI_SUM, comm, info, &req));
    for (int i = 0; r > 0 && i < N; i++)
        ok = ok && d[i] == 100 * r * (r - 1) / 2 + r * i;
    tap_check(ok, "%s %s exscan", name, m);
#undef RESET
    free(s);
    free(d);
    free(counts);
    free(displs);
    free(types);
}

static void intercomm_suite(MPI_Comm inter, int local_rank, int remote_size, int low)
{
    int x = low ? 7 : 0, y[64] = { 0 }, z[64], one = 1 + local_rank;
    bool ok = MPI_Barrier(inter) == MPI_SUCCESS;
    tap_check(ok, "intercommunicator barrier");

    /* rank 0 of the low group broadcasts to the high group */
    int root = low ? (local_rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    ok = MPI_Bcast(&x, 1, MPI_INT, root, inter) == MPI_SUCCESS && x == 7;
    tap_check(ok, "intercommunicator bcast");

    ok = MPI_Allreduce(&one, z, 1, MPI_INT, MPI_SUM, inter) == MPI_SUCCESS &&
         z[0] == remote_size * (remote_size + 1) / 2; /* sum over the remote group */
    tap_check(ok, "intercommunicator allreduce");

    ok = MPI_Allgather(&one, 1, MPI_INT, y, 1, MPI_INT, inter) == MPI_SUCCESS;
    for (int i = 0; i < remote_size; i++)
        ok = ok && y[i] == i + 1;
    tap_check(ok, "intercommunicator allgather");

    MPI_Request req;
    ok = MPI_Iallreduce(&one, z, 1, MPI_INT, MPI_MAX, inter, &req) == MPI_SUCCESS &&
         MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && z[0] == remote_size;
    tap_check(ok, "intercommunicator iallreduce");
}

static void neighbor_suite(MPI_Comm cart, int n, int r)
{
    int left = (r - 1 + n) % n, right = (r + 1) % n, s[2] = { r, r }, d[2] = { -1, -1 };
    bool ok = MPI_Neighbor_allgather(s, 1, MPI_INT, d, 1, MPI_INT, cart) == MPI_SUCCESS &&
              d[0] == left && d[1] == right;
    tap_check(ok, "cartesian neighbor_allgather");
    MPI_Request req;
    ok = MPI_Ineighbor_alltoall(s, 1, MPI_INT, d, 1, MPI_INT, cart, &req) == MPI_SUCCESS &&
         MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && d[0] == left && d[1] == right;
    tap_check(ok, "cartesian ineighbor_alltoall");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n, r;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm split, dup;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, n - r, &split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (int mode = BLOCKING; mode <= PERSISTENT; mode++) {
        intracomm_suite(MPI_COMM_WORLD, "MPI_COMM_WORLD", (mode_t_)mode);
        intracomm_suite(MPI_COMM_SELF, "MPI_COMM_SELF", (mode_t_)mode);
        intracomm_suite(split, "split", (mode_t_)mode);
        intracomm_suite(dup, "dup", (mode_t_)mode);
    }
    if (n >= 2) {
        int low = r < n / 2;
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, low, r, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, low ? n / 2 : 0, 42, &inter);
        int local_rank, remote_size;
        MPI_Comm_rank(half, &local_rank);
        MPI_Comm_remote_size(inter, &remote_size);
        intercomm_suite(inter, local_rank, remote_size, low);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Comm cart;
    int dims[1] = { n }, periods[1] = { 1 };
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    neighbor_suite(cart, n, r);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&split);
    MPI_Finalize();
    return 0;
}

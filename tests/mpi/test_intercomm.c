/* Every collective defined on intercommunicators (MPI-3.1 5.2.2), blocking,
 * nonblocking and persistent (MPIX_*_init), on intercommunicators between
 * groups of equal and unequal sizes, every result checked.  Rooted
 * collectives run twice, with the root in one group then in the other.
 * Run with `--mca coll crux` it proves crux alone fills the intercommunicator
 * slots with working functions (Open MPI 4.1.4's coll/basic Scatter on an
 * intercommunicator crashes; stock selection takes coll/inter's). */
#include <mpi.h>
#include <mpi-ext.h>
#include <stdbool.h>
#include <stdlib.h>

#include "coll_modes.h"
#include "tap_mpi.h"

#define N 5  /* elements per block */
#define T 60 /* reduce_scatter length: divisible by every group size up to 6 */

/* One side of an intercommunicator. */
typedef struct {
    MPI_Comm comm;
    const char *name;
    int g, og;    /* this group's number (1 or 2) and the other's */
    int me, L, R; /* local rank, local and remote group sizes */
} side_t;

/* What process `rank` of group g holds at index i. */
static int src(int g, int rank, int i)
{
    return g * 10000 + rank * 100 + i;
}

/* Per-process counts of the v collectives (1..3, at most N). */
static int vcount(int rank)
{
    return 1 + rank % 3;
}

static int pair_count(int sender, int receiver)
{
    return 1 + (sender + receiver) % 3;
}

/* Sum over a group of `size` processes of src(g, k, i). */
static int group_sum(int g, int size, int i)
{
    return size * g * 10000 + 100 * size * (size - 1) / 2 + size * i;
}

static int s[T * 8], d[T * 8];

static void reset(const side_t *x)
{
    for (int k = 0; k < T * 8; k++) {
        s[k] = src(x->g, x->me, k);
        d[k] = -1;
    }
}

/* The root argument of a rooted collective whose root is the last process
 * of group rg, and whether this process is that root. */
static int root_arg(const side_t *x, int rg, bool *is_root)
{
    *is_root = x->g == rg && x->me == x->L - 1;
    if (x->g != rg) {
        return x->R - 1;
    }
    return *is_root ? MPI_ROOT : MPI_PROC_NULL;
}

/* The rooted collectives, once with the root in each group. */
static void rooted(const side_t *x, mode_t_ mode)
{
    const char *m = mode_names[mode];
    MPI_Info info = MPI_INFO_NULL;
    MPI_Request req;
    int counts[8], displs[8];
    bool ok_bcast = true, ok_reduce = true, ok_gather = true, ok_gatherv = true, ok_scatter = true,
         ok_scatterv = true;
    for (int rg = 1; rg <= 2; rg++) {
        bool is_root;
        int root = root_arg(x, rg, &is_root);
        bool in_root_group = x->g == rg;
        int rootr = in_root_group ? x->L - 1 : x->R - 1; /* root's rank in its group */
        for (int k = 0; k < x->R; k++) {
            counts[k] = vcount(k);
            displs[k] = k * N;
        }

        reset(x);
        ok_bcast = ok_bcast && CALL(mode, &req, MPI_Bcast(s, N, MPI_INT, root, x->comm),
                                    MPI_Ibcast(s, N, MPI_INT, root, x->comm, &req),
                                    MPIX_Bcast_init(s, N, MPI_INT, root, x->comm, info, &req));
        for (int i = 0; i < N; i++) /* the root group's buffers are left alone */
            ok_bcast =
                ok_bcast && s[i] == (in_root_group ? src(x->g, x->me, i) : src(rg, rootr, i));

        reset(x);
        ok_reduce = ok_reduce &&
                    CALL(mode, &req, MPI_Reduce(s, d, N, MPI_INT, MPI_SUM, root, x->comm),
                         MPI_Ireduce(s, d, N, MPI_INT, MPI_SUM, root, x->comm, &req),
                         MPIX_Reduce_init(s, d, N, MPI_INT, MPI_SUM, root, x->comm, info, &req));
        for (int i = 0; is_root && i < N; i++)
            ok_reduce = ok_reduce && d[i] == group_sum(x->og, x->R, i);

        reset(x);
        ok_gather = ok_gather &&
                    CALL(mode, &req, MPI_Gather(s, N, MPI_INT, d, N, MPI_INT, root, x->comm),
                         MPI_Igather(s, N, MPI_INT, d, N, MPI_INT, root, x->comm, &req),
                         MPIX_Gather_init(s, N, MPI_INT, d, N, MPI_INT, root, x->comm, info, &req));
        for (int k = 0; is_root && k < N * x->R; k++)
            ok_gather = ok_gather && d[k] == src(x->og, k / N, k % N);

        reset(x);
        int mine = vcount(x->me);
        ok_gatherv =
            ok_gatherv &&
            CALL(mode, &req,
                 MPI_Gatherv(s, mine, MPI_INT, d, counts, displs, MPI_INT, root, x->comm),
                 MPI_Igatherv(s, mine, MPI_INT, d, counts, displs, MPI_INT, root, x->comm, &req),
                 MPIX_Gatherv_init(s, mine, MPI_INT, d, counts, displs, MPI_INT, root, x->comm,
                                   info, &req));
        for (int k = 0; is_root && k < N * x->R; k++)
            ok_gatherv =
                ok_gatherv && d[k] == (k % N < vcount(k / N) ? src(x->og, k / N, k % N) : -1);

        reset(x);
        ok_scatter =
            ok_scatter &&
            CALL(mode, &req, MPI_Scatter(s, N, MPI_INT, d, N, MPI_INT, root, x->comm),
                 MPI_Iscatter(s, N, MPI_INT, d, N, MPI_INT, root, x->comm, &req),
                 MPIX_Scatter_init(s, N, MPI_INT, d, N, MPI_INT, root, x->comm, info, &req));
        for (int i = 0; !in_root_group && i < N; i++)
            ok_scatter = ok_scatter && d[i] == src(rg, rootr, x->me * N + i);

        reset(x);
        ok_scatterv =
            ok_scatterv &&
            CALL(mode, &req,
                 MPI_Scatterv(s, counts, displs, MPI_INT, d, mine, MPI_INT, root, x->comm),
                 MPI_Iscatterv(s, counts, displs, MPI_INT, d, mine, MPI_INT, root, x->comm, &req),
                 MPIX_Scatterv_init(s, counts, displs, MPI_INT, d, mine, MPI_INT, root, x->comm,
                                    info, &req));
        for (int i = 0; !in_root_group && i < N; i++)
            ok_scatterv = ok_scatterv && d[i] == (i < mine ? src(rg, rootr, x->me * N + i) : -1);
    }
    tap_check(ok_bcast, "%s %s bcast", x->name, m);
    tap_check(ok_reduce, "%s %s reduce", x->name, m);
    tap_check(ok_gather, "%s %s gather", x->name, m);
    tap_check(ok_gatherv, "%s %s gatherv", x->name, m);
    tap_check(ok_scatter, "%s %s scatter", x->name, m);
    tap_check(ok_scatterv, "%s %s scatterv", x->name, m);
}

/* The collectives where every process sends and receives. */
static void all_to_all(const side_t *x, mode_t_ mode)
{
    const char *m = mode_names[mode];
    MPI_Info info = MPI_INFO_NULL;
    MPI_Request req;
    int rcounts[8], rdispls[8], scounts[8], sdispls[8], sbytes[8], rbytes[8];
    MPI_Datatype types[8];
    for (int k = 0; k < x->R; k++) {
        rcounts[k] = vcount(k);
        rdispls[k] = k * N;
    }
    bool ok;

    ok = CALL(mode, &req, MPI_Barrier(x->comm), MPI_Ibarrier(x->comm, &req),
              MPIX_Barrier_init(x->comm, info, &req));
    tap_check(ok, "%s %s barrier", x->name, m);

    reset(x);
    ok = CALL(mode, &req, MPI_Allreduce(s, d, N, MPI_INT, MPI_SUM, x->comm),
              MPI_Iallreduce(s, d, N, MPI_INT, MPI_SUM, x->comm, &req),
              MPIX_Allreduce_init(s, d, N, MPI_INT, MPI_SUM, x->comm, info, &req));
    for (int i = 0; i < N; i++)
        ok = ok && d[i] == group_sum(x->og, x->R, i);
    tap_check(ok, "%s %s allreduce", x->name, m);

    reset(x);
    ok = CALL(mode, &req, MPI_Allgather(s, N, MPI_INT, d, N, MPI_INT, x->comm),
              MPI_Iallgather(s, N, MPI_INT, d, N, MPI_INT, x->comm, &req),
              MPIX_Allgather_init(s, N, MPI_INT, d, N, MPI_INT, x->comm, info, &req));
    for (int k = 0; k < N * x->R; k++)
        ok = ok && d[k] == src(x->og, k / N, k % N);
    tap_check(ok, "%s %s allgather", x->name, m);

    reset(x);
    int mine = vcount(x->me);
    ok = CALL(
        mode, &req, MPI_Allgatherv(s, mine, MPI_INT, d, rcounts, rdispls, MPI_INT, x->comm),
        MPI_Iallgatherv(s, mine, MPI_INT, d, rcounts, rdispls, MPI_INT, x->comm, &req),
        MPIX_Allgatherv_init(s, mine, MPI_INT, d, rcounts, rdispls, MPI_INT, x->comm, info, &req));
    for (int k = 0; k < N * x->R; k++)
        ok = ok && d[k] == (k % N < vcount(k / N) ? src(x->og, k / N, k % N) : -1);
    tap_check(ok, "%s %s allgatherv", x->name, m);

    /* block k of the send buffer goes to remote process k */
    reset(x);
    ok = CALL(mode, &req, MPI_Alltoall(s, N, MPI_INT, d, N, MPI_INT, x->comm),
              MPI_Ialltoall(s, N, MPI_INT, d, N, MPI_INT, x->comm, &req),
              MPIX_Alltoall_init(s, N, MPI_INT, d, N, MPI_INT, x->comm, info, &req));
    for (int k = 0; k < N * x->R; k++)
        ok = ok && d[k] == src(x->og, k / N, x->me * N + k % N);
    tap_check(ok, "%s %s alltoall", x->name, m);

    for (int k = 0; k < x->R; k++) {
        scounts[k] = pair_count(x->me, k);
        rcounts[k] = pair_count(k, x->me);
        sdispls[k] = rdispls[k] = k * N;
        sbytes[k] = rbytes[k] = k * N * (int)sizeof(int);
        types[k] = MPI_INT;
    }
    reset(x);
    ok = CALL(
        mode, &req,
        MPI_Alltoallv(s, scounts, sdispls, MPI_INT, d, rcounts, rdispls, MPI_INT, x->comm),
        MPI_Ialltoallv(s, scounts, sdispls, MPI_INT, d, rcounts, rdispls, MPI_INT, x->comm, &req),
        MPIX_Alltoallv_init(s, scounts, sdispls, MPI_INT, d, rcounts, rdispls, MPI_INT, x->comm,
                            info, &req));
    for (int k = 0; k < N * x->R; k++)
        ok = ok && d[k] == (k % N < rcounts[k / N] ? src(x->og, k / N, x->me * N + k % N) : -1);
    tap_check(ok, "%s %s alltoallv", x->name, m);

    reset(x);
    ok = CALL(mode, &req,
              MPI_Alltoallw(s, scounts, sbytes, types, d, rcounts, rbytes, types, x->comm),
              MPI_Ialltoallw(s, scounts, sbytes, types, d, rcounts, rbytes, types, x->comm, &req),
              MPIX_Alltoallw_init(s, scounts, sbytes, types, d, rcounts, rbytes, types, x->comm,
                                  info, &req));
    for (int k = 0; k < N * x->R; k++)
        ok = ok && d[k] == (k % N < rcounts[k / N] ? src(x->og, k / N, x->me * N + k % N) : -1);
    tap_check(ok, "%s %s alltoallw", x->name, m);

    /* Both groups reduce vectors of T elements; the other group's sum is
     * scattered over this group, in uneven pieces (reduce_scatter) or even
     * ones (reduce_scatter_block: T / local size each). */
    int pieces[8], offset = 0;
    for (int k = 0; k < x->L; k++) {
        pieces[k] = T / x->L + (x->L > 1 ? (k == 0 ? -1 : k == x->L - 1 ? 1 : 0) : 0);
        offset += k < x->me ? pieces[k] : 0;
    }
    reset(x);
    ok = CALL(mode, &req, MPI_Reduce_scatter(s, d, pieces, MPI_INT, MPI_SUM, x->comm),
              MPI_Ireduce_scatter(s, d, pieces, MPI_INT, MPI_SUM, x->comm, &req),
              MPIX_Reduce_scatter_init(s, d, pieces, MPI_INT, MPI_SUM, x->comm, info, &req));
    for (int i = 0; i < pieces[x->me]; i++)
        ok = ok && d[i] == group_sum(x->og, x->R, offset + i);
    ok = ok && d[pieces[x->me]] == -1;
    tap_check(ok, "%s %s reduce_scatter", x->name, m);

    int block = T / x->L;
    reset(x);
    ok = CALL(mode, &req, MPI_Reduce_scatter_block(s, d, block, MPI_INT, MPI_SUM, x->comm),
              MPI_Ireduce_scatter_block(s, d, block, MPI_INT, MPI_SUM, x->comm, &req),
              MPIX_Reduce_scatter_block_init(s, d, block, MPI_INT, MPI_SUM, x->comm, info, &req));
    for (int i = 0; i < block; i++)
        ok = ok && d[i] == group_sum(x->og, x->R, x->me * block + i);
    ok = ok && d[block] == -1;
    tap_check(ok, "%s %s reduce_scatter_block", x->name, m);
}

/* An intercommunicator between the processes with in_first set (group 1,
 * which holds world rank 0) and the others (group 2). */
static void suite(const char *name, bool in_first)
{
    int n, r;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    /* the other group's leader: its lowest world rank (through Gather and
     * Bcast on MPI_COMM_WORLD, not an intercommunicator's collectives) */
    int flags[8], mine = in_first, leader = -1;
    MPI_Gather(&mine, 1, MPI_INT, flags, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(flags, n, MPI_INT, 0, MPI_COMM_WORLD);
    for (int k = 0; k < n && leader < 0; k++)
        if (flags[k] != in_first)
            leader = k;

    MPI_Comm local;
    side_t x = { .name = name, .g = in_first ? 1 : 2, .og = in_first ? 2 : 1 };
    MPI_Comm_split(MPI_COMM_WORLD, x.g, r, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, leader, 42, &x.comm);
    MPI_Comm_rank(x.comm, &x.me);
    MPI_Comm_size(x.comm, &x.L);
    MPI_Comm_remote_size(x.comm, &x.R);
    for (int mode = BLOCKING; mode <= PERSISTENT; mode++) {
        rooted(&x, (mode_t_)mode);
        all_to_all(&x, (mode_t_)mode);
    }
    MPI_Comm_free(&x.comm);
    MPI_Comm_free(&local);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n, r;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (n < 2 || n > 7) {
        if (r == 0)
            printf("not ok - needs 2 to 7 processes, not %d\n", n);
        MPI_Finalize();
        return 1;
    }
    suite("halves", r < n / 2);
    suite("one-vs-rest", r == 0);
    suite("every-third", r % 3 == 0);
    MPI_Finalize();
    return 0;
}

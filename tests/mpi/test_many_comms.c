/* Many live communicators: what crux costs a process does not grow with
 * their number (docs/design/resources.md).
 *
 *   test_many_comms [multiple] COUNT SHM_BOUND_MIB
 *   test_many_comms cross
 *
 * Under a descriptor limit of 1024 (set here, before MPI_Init), COUNT
 * communicators are created and kept alive (duplicates of MPI_COMM_WORLD,
 * and every fourth a split with the ranks in reverse order, so the same
 * processes in another order), each runs a 1 MiB Allreduce whose result
 * is checked exactly, then a second round runs on every one of them again
 * (the communicators share what crux set up).  Then the application must
 * still be able to open 50 files, and the shared memory in use on the node
 * (the used space of /dev/shm: run inside a private tmpfs, so it is this
 * job's alone) must stay under SHM_BOUND_MIB.  Rank 0 prints what it
 * measured as TAP comments.  'multiple': with MPI_THREAD_MULTIPLE (crux
 * shares nothing there: past its limit of groups, communicators get the
 * previous module's Allreduce), the calls still from one thread.
 *
 * 'turns COUNT ROUNDS SHM_BOUND_MIB': COUNT communicators, each over all
 * ranks in another order (the COUNT first permutations of the ranks), so
 * none can share what another set up; then ROUNDS rounds in which each in
 * turn runs a 1 MiB Allreduce, checked exactly.  With more of them than
 * crux's limit of groups, crux releases the least recently used group to
 * make room; the shared memory in use, measured after every round, must
 * stay under SHM_BOUND_MIB.  'skew': rank 0 frees the first communicator
 * before the last one's turn, the others after it (erroneous, as
 * MPI_Comm_free is collective, but Open MPI frees at once): the members
 * then disagree on which group to release, and the last communicator
 * must still get an exact result, and nothing may hang.
 *
 * 'cross': two duplicates of MPI_COMM_WORLD (sharing crux's group) each
 * run a correct Allreduce, then rank 0 calls Allreduce on the first and
 * then the second while the others call them the other way round
 * (erroneous in MPI: it may deadlock); no call may return wrong data, and
 * none may hang: crux tells the communicators' calls apart and fails
 * them. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tap_mpi.h"

#define COUNT_INTS (1u << 18) /* 1 MiB of int */
#define FILES      50
#define FD_LIMIT   1024

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (d == NULL) {
        return -1;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1; /* the directory's own */
}

static double shm_used_mib(void)
{
    struct statvfs s;
    if (statvfs("/dev/shm", &s) != 0) {
        return -1;
    }
    return (double)(s.f_blocks - s.f_bfree) * (double)s.f_frsize / (1024.0 * 1024.0);
}

/* Each rank's input depends on the communicator, the round and the
 * element; the sum over ranks is known exactly. */
static int value(int comm, int round, int rank, size_t j)
{
    return (int)((j * 7u + (unsigned)comm * 13u + (unsigned)round) % 1000u) * (rank + 1);
}

static int check_comm(MPI_Comm comm, int index, int round, int *buf)
{
    int rank, size, world_rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    for (size_t j = 0; j < COUNT_INTS; j++) {
        buf[j] = value(index, round, world_rank, j);
    }
    if (MPI_Allreduce(MPI_IN_PLACE, buf, COUNT_INTS, MPI_INT, MPI_SUM, comm) != MPI_SUCCESS) {
        return 0;
    }
    int factor = size * (size + 1) / 2; /* world ranks 0..size-1, each once */
    for (size_t j = 0; j < COUNT_INTS; j++) {
        if (buf[j] != value(index, round, 0, j) * factor) {
            return 0;
        }
    }
    return 1;
}

/* A correct call on each, then the crossed calls: each must return an
 * error (the group shared, the calls told apart), never a wrong result. */
static void cross(void)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm comm[2];
    int *buf = malloc(COUNT_INTS * sizeof(int));
    MPI_Comm_dup(MPI_COMM_WORLD, &comm[0]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm[1]);
    tap_check(buf != NULL && check_comm(comm[0], 0, 0, buf) && check_comm(comm[1], 1, 0, buf),
              "two duplicates, one Allreduce each in the same order, exact");
    int errors = 0, wrong = 0, factor = size * (size + 1) / 2;
    for (int k = 0; buf != NULL && k < 2; k++) {
        int c = rank == 0 ? k : 1 - k;
        for (size_t j = 0; j < COUNT_INTS; j++) {
            buf[j] = value(c, 1, rank, j);
        }
        if (MPI_Allreduce(MPI_IN_PLACE, buf, COUNT_INTS, MPI_INT, MPI_SUM, comm[c]) !=
            MPI_SUCCESS) {
            errors++;
            continue;
        }
        for (size_t j = 0; j < COUNT_INTS; j++) {
            wrong += buf[j] != value(c, 1, 0, j) * factor;
        }
    }
    tap_check(wrong == 0, "crossed Allreduces on two communicators: no wrong result");
    tap_check(errors == 2, "... both crossed calls fail on every rank");
    MPI_Comm_free(&comm[0]);
    MPI_Comm_free(&comm[1]);
    free(buf);
}

/* The ranks 0..n-1 in the order of permutation 'index' (its factorial
 * digits), so rank r's key is order[r]. */
static void permutation(int index, int n, int *order)
{
    int left[64];
    for (int i = 0; i < n; i++) {
        left[i] = i;
    }
    for (int i = n; i > 0; i--) {
        int pick = index % i;
        index /= i;
        order[n - i] = left[pick];
        memmove(&left[pick], &left[pick + 1], (size_t)(i - pick - 1) * sizeof(*left));
    }
}

static void turns(int count, int rounds, double bound, int skew)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm *comms = calloc((size_t)count, sizeof(*comms));
    int *buf = malloc(COUNT_INTS * sizeof(int)), order[64];
    int exact = comms != NULL && buf != NULL && size <= 64, wrong_at = -1;
    double most = 0;
    for (int i = 0; exact && i < count; i++) {
        permutation(i, size, order);
        MPI_Comm_split(MPI_COMM_WORLD, 0, order[rank], &comms[i]);
    }
    double start = MPI_Wtime();
    for (int round = 0; exact && round < rounds; round++) {
        for (int i = 0; exact && i < count; i++) {
            if (skew && rank == 0 && i == count - 1 && comms[0] != MPI_COMM_NULL) {
                MPI_Comm_free(&comms[0]);
            }
            if (comms[i] != MPI_COMM_NULL && !check_comm(comms[i], i, round, buf)) {
                exact = 0;
                wrong_at = round * count + i;
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double used = shm_used_mib();
        most = used > most || used < 0 ? used : most;
    }
    tap_check(exact,
              "%d communicators in %d orders of the ranks, %d rounds in turns, each "
              "Allreduce exact (first wrong: call %d)",
              count, count, rounds, wrong_at);
    tap_check(most >= 0 && most <= bound,
              "shared memory in use after every round at most %.0f MiB (most: %.1f)", bound, most);
    if (rank == 0) {
        printf("# %d processes, %d communicators in turns: /dev/shm in use at most %.1f MiB, "
               "%d rounds in %.2f s\n",
               size, count, most, rounds, MPI_Wtime() - start);
    }
    for (int i = 0; comms != NULL && i < count; i++) {
        if (comms[i] != MPI_COMM_NULL) {
            MPI_Comm_free(&comms[i]);
        }
    }
    free(comms);
    free(buf);
}

int main(int argc, char **argv)
{
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "turns") == 0) {
        MPI_Init(&argc, &argv);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        turns(atoi(argv[2]), atoi(argv[3]), atof(argv[4]),
              argc == 6 && strcmp(argv[5], "skew") == 0);
        MPI_Finalize();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "cross") == 0) {
        MPI_Init(&argc, &argv);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        cross();
        MPI_Finalize();
        return 0;
    }
    int multiple = argc == 4 && strcmp(argv[1], "multiple") == 0;
    if (argc != 3 + multiple) {
        fprintf(stderr, "usage: %s [multiple] COUNT SHM_BOUND_MIB\n", argv[0]);
        return 2;
    }
    int count = atoi(argv[1 + multiple]);
    double bound = atof(argv[2 + multiple]);
    struct rlimit lim;
    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max < FD_LIMIT ? lim.rlim_max : FD_LIMIT;
    setrlimit(RLIMIT_NOFILE, &lim);

    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* inherited */
    int fds_before = open_fds();
    MPI_Comm *comms = calloc((size_t)count, sizeof(*comms));
    int *buf = malloc(COUNT_INTS * sizeof(int));
    int made = comms != NULL && buf != NULL, exact = made, failed_at = -1;
    double start = MPI_Wtime();
    for (int i = 0; made && i < count; i++) {
        int rc = i % 4 == 3 ? MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comms[i])
                            : MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        if (rc != MPI_SUCCESS) {
            made = 0;
            failed_at = i;
            break;
        }
        if (exact && !check_comm(comms[i], i, 0, buf)) {
            exact = 0;
            failed_at = i;
        }
    }
    double setup = MPI_Wtime() - start;
    tap_check(made, "%d communicators created and kept alive", count);
    tap_check(exact, "a 1 MiB Allreduce on each, exact (first wrong at %d)", failed_at);
    int again = made && exact;
    for (int i = 0; again && i < count; i++) {
        again = check_comm(comms[i], i, 1, buf);
    }
    tap_check(again, "a second round on every communicator, exact");

    int fds_after = open_fds(), opened = 0, fd[FILES];
    for (int i = 0; i < FILES; i++) {
        fd[i] = open("/dev/null", O_RDONLY);
        opened += fd[i] >= 0;
    }
    for (int i = 0; i < FILES; i++) {
        if (fd[i] >= 0) {
            close(fd[i]);
        }
    }
    tap_check(opened == FILES, "the application opens %d files after that", FILES);
    MPI_Barrier(MPI_COMM_WORLD);
    double used = shm_used_mib();
    tap_check(used >= 0 && used <= bound, "shared memory in use on the node at most %.0f MiB",
              bound);
    int fds_max = 0;
    int growth = fds_after - fds_before;
    MPI_Reduce(&growth, &fds_max, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# %d processes, %d communicators: /dev/shm in use %.1f MiB, descriptors "
               "%d before, %d after (most added by a rank: %d), set-up and first round %.2f s\n",
               size, count, used, fds_before, fds_after, fds_max, setup);
    }
    for (int i = 0; made && i < count; i++) {
        MPI_Comm_free(&comms[i]);
    }
    free(comms);
    free(buf);
    MPI_Finalize();
    return 0;
}

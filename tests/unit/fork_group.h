/* Test and benchmark support: run a function in N forked processes that form
 * a libcrux_coll group, with an out-of-band allgather over an anonymous
 * shared mapping and a process-shared barrier (no MPI). */
#ifndef CRUX_TESTS_FORK_GROUP_H
#define CRUX_TESTS_FORK_GROUP_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/crux_coll.h"

#define FORK_GROUP_MAX  16
#define FORK_GROUP_SLOT 4096

typedef struct {
    pthread_barrier_t barrier;
    unsigned char slots[FORK_GROUP_MAX][FORK_GROUP_SLOT];
} fork_group_shared_t;

typedef struct {
    fork_group_shared_t *shared;
    int rank;
    int size;
} fork_group_member_t;

static inline int fork_group_allgather(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    fork_group_member_t *m = arg;
    if (length > FORK_GROUP_SLOT) {
        return -1;
    }
    memcpy(m->shared->slots[m->rank], sbuf, length);
    pthread_barrier_wait(&m->shared->barrier);
    for (int p = 0; p < m->size; p++) {
        memcpy((unsigned char *)rbuf + (size_t)p * length, m->shared->slots[p], length);
    }
    pthread_barrier_wait(&m->shared->barrier);
    return 0;
}

/* An out-of-band exchange among a subset of the members, every member
 * calling it at once: members with the same 'color' form a subgroup, ranked
 * by 'key'.  Built on the allgather over everyone. */
typedef struct {
    fork_group_member_t *all;
    int color;
    int members[FORK_GROUP_MAX]; /* ranks in 'all', subgroup order */
    int size;
    int rank;
} fork_subgroup_t;

static inline int fork_subgroup_allgather(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    fork_subgroup_t *sub = arg;
    unsigned char *everyone = malloc(length * (size_t)sub->all->size);
    if (everyone == NULL || fork_group_allgather(sbuf, everyone, length, sub->all) != 0) {
        free(everyone);
        return -1;
    }
    for (int i = 0; i < sub->size; i++) {
        memcpy((unsigned char *)rbuf + (size_t)i * length,
               everyone + (size_t)sub->members[i] * length, length);
    }
    free(everyone);
    return 0;
}

/* Every member calls this at once with its color and key. */
static inline int fork_subgroup_init(fork_subgroup_t *sub, fork_group_member_t *m, int color,
                                     int key)
{
    int mine[2] = { color, key }, all[2 * FORK_GROUP_MAX];
    if (fork_group_allgather(mine, all, sizeof(mine), m) != 0) {
        return -1;
    }
    sub->all = m;
    sub->color = color;
    sub->size = 0;
    for (int k = 0; k <= 2 * FORK_GROUP_MAX; k++) { /* members in key order */
        for (int p = 0; p < m->size; p++) {
            if (all[2 * p] == color && all[2 * p + 1] == k) {
                if (p == m->rank) {
                    sub->rank = sub->size;
                }
                sub->members[sub->size++] = p;
            }
        }
    }
    return 0;
}

static inline crux_coll_oob_t fork_subgroup_oob(fork_subgroup_t *sub)
{
    return (crux_coll_oob_t){
        .allgather = fork_subgroup_allgather, .arg = sub, .rank = sub->rank, .size = sub->size
    };
}

static inline void fork_group_barrier(fork_group_member_t *m)
{
    pthread_barrier_wait(&m->shared->barrier);
}

static inline crux_coll_oob_t fork_group_oob(fork_group_member_t *m)
{
    return (crux_coll_oob_t){
        .allgather = fork_group_allgather, .arg = m, .rank = m->rank, .size = m->size
    };
}

/* Run body(member, arg) in 'size' processes; returns the number of members
 * that exited with a non-zero status or were killed, each named on stderr
 * with its status (the body's return value tells where it failed). */
static inline int fork_group_run(int size, int (*body)(fork_group_member_t *, void *), void *arg)
{
    fork_group_shared_t *shared =
        mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED || size > FORK_GROUP_MAX) {
        return size;
    }
    pthread_barrierattr_t attr;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&shared->barrier, &attr, (unsigned)size);
    pid_t pids[FORK_GROUP_MAX];
    for (int r = 0; r < size; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            fork_group_member_t m = { shared, r, size };
            int rc = body(&m, arg);
            _exit(rc < 0 || rc > 255 ? 255 : rc);
        }
    }
    int failed = 0;
    for (int r = 0; r < size; r++) {
        int status;
        if (pids[r] < 0 || waitpid(pids[r], &status, 0) < 0) {
            fprintf(stderr, "fork_group: member %d of %d was not started or not reaped\n", r, size);
            failed++;
        } else if (WIFSIGNALED(status)) {
            fprintf(stderr, "fork_group: member %d of %d killed by signal %d\n", r, size,
                    WTERMSIG(status));
            failed++;
        } else if (WEXITSTATUS(status) != 0) {
            fprintf(stderr, "fork_group: member %d of %d returned %d\n", r, size,
                    WEXITSTATUS(status));
            failed++;
        }
    }
    pthread_barrier_destroy(&shared->barrier);
    munmap(shared, sizeof(*shared));
    return failed;
}

#endif

/* crux-bench-coll: libcrux_coll's Allreduce in forked processes, without MPI,
 * next to a bare single-copy loop: process_vm_readv reduce-scatter into a
 * cache-sized scratch, then process_vm_readv allgather, synchronised by
 * process-shared barriers, with none of crux's machinery: the floor a
 * single-copy Allreduce would be measured against.
 *
 * usage: crux-bench-coll [RANKS [MIN_BYTES [MAX_BYTES]]]  (default 2 64K 64M; K, M, G
 * suffixes accepted) */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <time.h>

#include "tests/unit/fork_group.h"

#define REPS       7
#define BARE_CHUNK (256u << 10)

enum { BARE, CRUX, NUM_WAYS };
static const char *const way_names[NUM_WAYS] = { "bare cma", "crux" };

typedef struct {
    size_t bytes;
    int iters;
    int way;
    double *seconds; /* shared, one per rank */
} bench_arg_t;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sum_floats(float *out, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = a[i] + b[i];
    }
}

typedef struct {
    pid_t pid;
    uint64_t sbuf, rbuf;
} bare_card_t;

/* One bare Allreduce (float sum) of n elements. */
static void bare_allreduce(fork_group_member_t *m, const bare_card_t *cards, const float *s,
                           float *r, float *scratch, size_t n)
{
    size_t shard = (n + (size_t)m->size - 1) / (size_t)m->size;
    size_t first = shard * (size_t)m->rank;
    size_t mine = first >= n ? 0 : (n - first < shard ? n - first : shard);
    fork_group_barrier(m);
    for (size_t off = 0; off < mine; off += BARE_CHUNK / sizeof(float)) {
        size_t len =
            mine - off < BARE_CHUNK / sizeof(float) ? mine - off : BARE_CHUNK / sizeof(float);
        const float *acc = s + first + off;
        for (int p = 0; p < m->size; p++) {
            if (p == m->rank) {
                continue;
            }
            struct iovec local = { scratch, len * sizeof(float) };
            struct iovec remote = { (void *)(uintptr_t)(cards[p].sbuf +
                                                        (first + off) * sizeof(float)),
                                    len * sizeof(float) };
            process_vm_readv(cards[p].pid, &local, 1, &remote, 1, 0);
            sum_floats(r + first + off, acc, scratch, len);
            acc = r + first + off;
        }
    }
    fork_group_barrier(m);
    for (int p = 0; p < m->size; p++) {
        size_t pf = shard * (size_t)p;
        size_t plen = pf >= n ? 0 : (n - pf < shard ? n - pf : shard);
        if (p == m->rank || plen == 0) {
            continue;
        }
        struct iovec local = { r + pf, plen * sizeof(float) };
        struct iovec remote = { (void *)(uintptr_t)(cards[p].rbuf + pf * sizeof(float)),
                                plen * sizeof(float) };
        process_vm_readv(cards[p].pid, &local, 1, &remote, 1, 0);
    }
    fork_group_barrier(m);
}

static int run(fork_group_member_t *m, void *argp)
{
    bench_arg_t *a = argp;
    size_t n = a->bytes / sizeof(float);
    float *s = malloc(a->bytes), *r = malloc(a->bytes), *scratch = malloc(BARE_CHUNK);
    for (size_t i = 0; i < n; i++) {
        s[i] = (float)(i % 7);
        r[i] = 0;
    }
    crux_coll_group_t *g = NULL;
    bare_card_t cards[FORK_GROUP_MAX], mine = { getpid(), (uintptr_t)s, (uintptr_t)r };
    if (a->way == BARE) {
        fork_group_allgather(&mine, cards, sizeof(mine), m);
    } else {
        crux_coll_oob_t oob = fork_group_oob(m);
        if (crux_coll_group_create(&oob, NULL, &g) != CRUX_OK) {
            return 1;
        }
    }
    for (int i = -2; i < a->iters; i++) { /* two warm-up calls */
        if (i == 0) {
            fork_group_barrier(m);
            a->seconds[m->rank] = now();
        }
        if (a->way == BARE) {
            bare_allreduce(m, cards, s, r, scratch, n);
        } else if (crux_coll_allreduce(g, s, r, n, CRUX_DT_FLOAT, CRUX_OP_SUM) != CRUX_OK) {
            return 1;
        }
    }
    a->seconds[m->rank] = (now() - a->seconds[m->rank]) / a->iters;
    crux_coll_group_destroy(g);
    free(s);
    free(r);
    free(scratch);
    return 0;
}

/* A byte count with an optional K, M or G suffix. */
static size_t parse_bytes(const char *text)
{
    char *end;
    size_t v = strtoul(text, &end, 0);
    switch (*end) {
    case 'k':
    case 'K': return v << 10;
    case 'm':
    case 'M': return v << 20;
    case 'g':
    case 'G': return v << 30;
    }
    return v;
}

static int compare(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    int ranks = argc > 1 ? atoi(argv[1]) : 2;
    size_t min = argc > 2 ? parse_bytes(argv[2]) : 64u << 10;
    size_t max = argc > 3 ? parse_bytes(argv[3]) : 64u << 20;
    if (ranks < 1 || ranks > FORK_GROUP_MAX || min < 4 || max < min) {
        fprintf(stderr, "usage: %s [RANKS [MIN_BYTES [MAX_BYTES]]]\n", argv[0]);
        return 2;
    }
    double *seconds = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    printf("# libcrux_coll Allreduce, float sum, %d forked processes: median of %d alternating\n"
           "# runs of the slowest process's time per call; ratio = crux / bare cma loop\n",
           ranks, REPS);
    printf("%12s", "bytes");
    for (int w = 0; w < NUM_WAYS; w++) {
        printf(" %12s", way_names[w]);
    }
    printf(" %10s\n", "crux/bare");
    for (size_t bytes = min; bytes <= max; bytes *= 2) {
        double samples[NUM_WAYS][REPS], us[NUM_WAYS];
        int iters = (int)(256e6 / (double)bytes);
        iters = iters < 5 ? 5 : iters > 2000 ? 2000 : iters;
        for (int rep = 0; rep < REPS; rep++) {
            for (int k = 0; k < NUM_WAYS; k++) {
                int w = (k + rep) % NUM_WAYS;
                bench_arg_t a = { bytes, iters, w, seconds };
                if (fork_group_run(ranks, run, &a) != 0) {
                    fprintf(stderr, "%s failed at %zu bytes\n", way_names[w], bytes);
                    return 1;
                }
                samples[w][rep] = 0;
                for (int r = 0; r < ranks; r++) {
                    samples[w][rep] = seconds[r] > samples[w][rep] ? seconds[r] : samples[w][rep];
                }
            }
        }
        printf("%12zu", bytes);
        for (int w = 0; w < NUM_WAYS; w++) {
            qsort(samples[w], REPS, sizeof(double), compare);
            us[w] = samples[w][REPS / 2] * 1e6;
            printf(" %9.1f us", us[w]);
        }
        printf(" %9.2fx\n", us[CRUX] / us[BARE]);
        fflush(stdout);
    }
    return 0;
}

/* crux-bench-rtt: how far two CPUs' caches are from each other.
 *
 * Two threads, pinned to the CPUs given (default 0 and 1), pass a cache line
 * back and forth; the round trip is two cache-to-cache transfers: about
 * 55 ns within one chiplet of this VM's EPYC, 330 ns across two.  That is
 * the distance crux measures on its flags to decide whether a peer is far
 * (common/crux_reach.h).  On a VM whose vCPUs move
 * between chiplets, run it before and after a benchmark to know which
 * state the benchmark saw.
 *
 *   crux-bench-rtt [CPU_A CPU_B]      prints "rtt_ns N" */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/crux_version.h"

#define USAGE                                                                     \
    "usage: crux-bench-rtt [CPU_A CPU_B]   (default CPUs 0 and 1)\n"              \
    "Prints \"rtt_ns N\": the round trip of a cache line between the two CPUs.\n" \
    "Exit status: 0 success, 1 a CPU it cannot run on, 2 a bad argument.\n"

#define ROUNDS 100000

static _Alignas(64) volatile uint64_t line;
static volatile int peer_state; /* 1: pinned and ready, -1: could not pin */

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *answer(void *arg)
{
    if (pin(*(int *)arg) != 0) {
        peer_state = -1;
        return NULL;
    }
    peer_state = 1;
    for (uint64_t i = 1; i < 2 * ROUNDS; i += 2) {
        while (line != i) {
        }
        line = i + 1;
    }
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int cpus[2] = { 0, 1 };
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf(USAGE);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        crux_version_print(stdout, "crux-bench-rtt");
        return 0;
    }
    if (argc != 1 && argc != 3) {
        if (argc == 2 && argv[1][0] == '-') {
            fprintf(stderr, "crux-bench-rtt: unknown option '%s' (see --help)\n", argv[1]);
        } else {
            fprintf(stderr, "crux-bench-rtt: give two CPUs or none (see --help)\n");
        }
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        char *end;
        long cpu = strtol(argv[i], &end, 10);
        if (end == argv[i] || *end != '\0' || cpu < 0 || cpu >= CPU_SETSIZE) {
            fprintf(stderr, "crux-bench-rtt: bad CPU '%s' (0 to %d)\n", argv[i], CPU_SETSIZE - 1);
            return 2;
        }
        cpus[i - 1] = (int)cpu;
    }
    pthread_t peer;
    if (pin(cpus[0]) != 0 || pthread_create(&peer, NULL, answer, &cpus[1]) != 0) {
        fprintf(stderr, "%s: cannot run on CPUs %d and %d\n", argv[0], cpus[0], cpus[1]);
        return 1;
    }
    while (peer_state == 0) {
    }
    if (peer_state < 0) {
        pthread_join(peer, NULL);
        fprintf(stderr, "%s: cannot run on CPU %d\n", argv[0], cpus[1]);
        return 1;
    }
    double start = now();
    for (uint64_t i = 0; i < 2 * ROUNDS; i += 2) {
        line = i + 1;
        while (line != i + 2) {
        }
    }
    double elapsed = now() - start;
    pthread_join(peer, NULL);
    printf("rtt_ns %.0f\n", elapsed / ROUNDS * 1e9);
    return 0;
}

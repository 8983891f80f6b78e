/* Waiting on a peer's progress word.  Peers may share cores (oversubscribed
 * nodes are common in tests and CI), so a wait spins only briefly before it
 * yields, and it watches for a peer that failed or died so a collective never
 * hangs on a dead process. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "ompi_coll/crux_group_internal.h"

#define CRUX_LIVENESS_POLLS 4096u   /* polls between checks that the peer lives */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A process that exited but was not reaped yet still answers kill(pid, 0);
 * its state in /proc tells it is a zombie. */
static int process_alive(pid_t pid)
{
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        return 0;
    }
    char path[64], stat[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return errno != ENOENT;
    }
    size_t n = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *end = strrchr(stat, ')');   /* the command name may hold spaces */
    return end == NULL || end[1] == '\0' || (end[2] != 'Z' && end[2] != 'X');
}

crux_status_t crux_wait(crux_coll_group_t *group, int peer, size_t offset, uint64_t target)
{
    const uint64_t *word = (const uint64_t *)((const uint8_t *)group->ctrl[peer] + offset);
    for (unsigned polls = 1;; polls++) {
        if (crux_load(word) >= target) {
            return CRUX_OK;
        }
        if (crux_load(&group->ctrl[peer]->failed) >= group->seq) {
            return CRUX_ERR_PEER;
        }
        if (polls % CRUX_LIVENESS_POLLS == 0 && !process_alive(group->pids[peer])) {
            return CRUX_ERR_PEER;
        }
        if (polls > group->spin) {
            sched_yield();
        } else {
            cpu_relax();
        }
    }
}

/* Waiting on a peer's progress word, and publishing one's own.
 *
 * Peers may share cores (oversubscribed nodes are common in tests and CI), so
 * a wait spins only when every process of the node has a core, then yields a
 * few times, then sleeps on the word with a futex until the peer publishes:
 * a sleeping waiter leaves its core to the process it waits for.  A
 * publisher wakes sleepers only when some are counted, so the common case
 * costs no system call.  Waits also watch for a peer that failed or died, so
 * a collective never hangs on a dead process. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "coll/crux_group_internal.h"

#define CRUX_YIELDS         8u       /* yields before sleeping */
#define CRUX_SLEEP_NS       1000000L /* a sleep ends after this long at most */
#define CRUX_LIVENESS_POLLS 4096u    /* polls between checks that the peer lives */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The futex is the word's low half, which changes on every publish: a
 * progress word's chunk count, or the low bits of a sequence number. */
static uint32_t *futex_word(const uint64_t *word)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (uint32_t *)word;
#else
    return (uint32_t *)word + 1;
#endif
}

void crux_publish(crux_coll_group_t *group, uint64_t *word, uint64_t value)
{
    /* sequentially consistent, so the store is seen before the sleeper count
     * is read; a waiter counts itself before its last look at the word */
    __atomic_store_n(word, value, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&group->ctrl[group->rank]->sleepers, __ATOMIC_SEQ_CST) > 0) {
        syscall(SYS_futex, futex_word(word), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
}

static void sleep_on(crux_ctrl_t *peer, const uint64_t *word, uint64_t target)
{
    __atomic_add_fetch(&peer->sleepers, 1, __ATOMIC_SEQ_CST);
    uint64_t seen = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    if (seen < target) {
        struct timespec timeout = { 0, CRUX_SLEEP_NS };
        syscall(SYS_futex, futex_word(word), FUTEX_WAIT, (uint32_t)seen, &timeout, NULL, 0);
    }
    __atomic_sub_fetch(&peer->sleepers, 1, __ATOMIC_SEQ_CST);
}

void crux_yield(crux_coll_group_t *group)
{
    if (group->spin == 0) {
        sched_yield();
    } else {
        cpu_relax();
    }
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
    const char *end = strrchr(stat, ')'); /* the command name may hold spaces */
    return end == NULL || end[1] == '\0' || (end[2] != 'Z' && end[2] != 'X');
}

crux_status_t crux_wait(crux_coll_group_t *group, int peer, size_t offset, uint64_t target)
{
    crux_ctrl_t *ctrl = group->ctrl[peer];
    const uint64_t *word = (const uint64_t *)((const uint8_t *)ctrl + offset);
    unsigned checks = 0;
    for (unsigned polls = 1;; polls++) {
        if (crux_look(group, peer, offset, target)) {
            return CRUX_OK;
        }
        if (crux_load(&ctrl->failed) >= group->seq) {
            return CRUX_ERR_PEER;
        }
        if (polls <= group->spin) {
            cpu_relax();
            continue;
        }
        if (polls <= group->spin + CRUX_YIELDS) {
            sched_yield();
            continue;
        }
        sleep_on(ctrl, word, target);
        /* a sleep lasts up to CRUX_SLEEP_NS: check liveness every few dozen */
        if (++checks % 32 == 0 && !process_alive(group->pids[peer])) {
            return CRUX_ERR_PEER;
        }
    }
}

/* Waiting on a peer's progress word, and publishing one's own.
 *
 * Peers may share cores (oversubscribed nodes are common in tests and CI), so
 * a wait spins only when every process of the node has a core, then yields a
 * few times, then sleeps on the word with a futex until the peer publishes:
 * a sleeping waiter leaves its core to the process it waits for.  A
 * publisher wakes sleepers only when some are counted, so the common case
 * costs no system call.  Waits also watch for a peer that failed or died, so
 * a collective never hangs on a dead process. */
#include <sched.h>
#include <stddef.h>

#include "coll/crux_group_internal.h"
#include "common/crux_futex.h"
#include "common/crux_proc.h"

#define CRUX_YIELDS         8u       /* yields before sleeping */
#define CRUX_SLEEP_NS       1000000L /* a sleep ends after this long at most */
#define CRUX_LIVENESS_POLLS 4096u    /* polls between checks that the peer lives */

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
        crux_futex_wake(futex_word(word));
    }
}

static void sleep_on(crux_ctrl_t *peer, const uint64_t *word, uint64_t target)
{
    __atomic_add_fetch(&peer->sleepers, 1, __ATOMIC_SEQ_CST);
    uint64_t seen = __atomic_load_n(word, __ATOMIC_SEQ_CST);
    if (seen < target) {
        crux_futex_wait(futex_word(word), (uint32_t)seen, CRUX_SLEEP_NS);
    }
    __atomic_sub_fetch(&peer->sleepers, 1, __ATOMIC_SEQ_CST);
}

void crux_yield(crux_coll_group_t *group)
{
    if (group->spin == 0) {
        sched_yield();
    } else {
        crux_cpu_relax();
    }
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
            crux_cpu_relax();
            continue;
        }
        if (polls <= group->spin + CRUX_YIELDS) {
            sched_yield();
            continue;
        }
        sleep_on(ctrl, word, target);
        /* a sleep lasts up to CRUX_SLEEP_NS: check liveness every few dozen */
        if (++checks % 32 == 0 && !crux_proc_alive(group->pids[peer])) {
            return CRUX_ERR_PEER;
        }
    }
}

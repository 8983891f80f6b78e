/* Waiting on a peer's progress word, and publishing one's own.
 *
 * Peers may share cores (oversubscribed nodes are common in tests and CI), so
 * a wait follows the wait loops' policy (common/crux_idle.h): it spins only
 * when every process of the node has a core, then yields a few times, then
 * sleeps on the word with a futex until the peer publishes.  A publisher
 * wakes sleepers only when some are counted, so the common case costs no
 * system call.  Waits also watch for a peer that failed or died, so a
 * collective never hangs on a dead process. */
#include <stddef.h>

#include "coll/group/crux_group_internal.h"
#include "common/crux_futex.h"
#include "common/crux_idle.h"
#include "common/crux_proc.h"

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

void crux_raise(crux_coll_group_t *group, uint64_t *word, uint64_t value)
{
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
    if (__atomic_load_n(&group->ctrl[group->rank]->sleepers, __ATOMIC_RELAXED) > 0) {
        crux_futex_wake(futex_word(word));
    }
}

void crux_sleep_begin(crux_coll_group_t *group, int peer, size_t offset, crux_sleep_t *sleep)
{
    crux_ctrl_t *ctrl = group->ctrl[peer];
    sleep->ctrl = ctrl;
    sleep->word = (const uint64_t *)((const uint8_t *)ctrl + offset);
    __atomic_add_fetch(&ctrl->sleepers, 1, __ATOMIC_SEQ_CST);
    sleep->seen = __atomic_load_n(sleep->word, __ATOMIC_SEQ_CST);
}

void crux_sleep_end(crux_sleep_t *sleep, int moved)
{
    if (!moved && __atomic_load_n(sleep->word, __ATOMIC_SEQ_CST) == sleep->seen) {
        crux_futex_wait(futex_word(sleep->word), (uint32_t)sleep->seen, CRUX_IDLE_SLEEP_NS);
    }
    __atomic_sub_fetch(&sleep->ctrl->sleepers, 1, __ATOMIC_SEQ_CST);
}

crux_status_t crux_wait_after(crux_coll_group_t *group, int peer, size_t offset, uint64_t target,
                              unsigned looked)
{
    crux_ctrl_t *ctrl = group->ctrl[peer];
    crux_idle_t idle = crux_idle_start(group->spins);
    idle.polls = looked; /* the looks already made count as polls that looked */
    for (;;) {
        if (crux_look(group, peer, offset, target)) {
            return CRUX_OK;
        }
        if (crux_load(&ctrl->failed) == CRUX_ABANDONED) {
            return CRUX_ERR_PEER;
        }
        if (crux_idle_poll(&idle, 1) == CRUX_IDLE_SLEEP) {
            crux_sleep_t sleep;
            crux_sleep_begin(group, peer, offset, &sleep);
            crux_sleep_end(&sleep, crux_load(sleep.word) >= target);
            crux_idle_slept(&idle);
        }
        if (crux_idle_check_due(&idle) && !crux_proc_alive(group->pids[peer])) {
            /* it may have published and exited since our last look */
            return crux_look(group, peer, offset, target) ? CRUX_OK : CRUX_ERR_PEER;
        }
    }
}

crux_status_t crux_wait(crux_coll_group_t *group, int peer, size_t offset, uint64_t target)
{
    return crux_wait_after(group, peer, offset, target, 0);
}

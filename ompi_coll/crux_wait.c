/* Waiting on a peer's progress word.  Peers may share cores (oversubscribed
 * nodes are common in tests and CI), so a wait spins only briefly before it
 * yields, and it watches for a peer that failed or died so a collective never
 * hangs on a dead process. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>

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
        if (polls % CRUX_LIVENESS_POLLS == 0 && kill(group->pids[peer], 0) != 0 &&
            errno == ESRCH) {
            return CRUX_ERR_PEER;
        }
        if (polls > group->spin) {
            sched_yield();
        } else {
            cpu_relax();
        }
    }
}

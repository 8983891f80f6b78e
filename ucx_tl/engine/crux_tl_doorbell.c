/* The engine's doorbell, one futex word after its control areas: a
 * process that found nothing to do for a while on an oversubscribed node
 * sleeps on it (crux_tl_engine_doze, _sleep), and a peer that acts on a
 * lane (posts, consumes, abandons) looks whether it sleeps (a load of a
 * line it seldom writes) and rings it then.  Both sides' store, then look,
 * are sequentially consistent, so either the sleeper's last look finds the
 * peer's store or the peer finds it dozing. */
#include "common/crux_futex.h"
#include "ucx_tl/engine/crux_tl_engine_internal.h"

void crux_tl_ring(crux_tl_pair_t *pair)
{
    if (__atomic_load_n(&pair->bell->sleeping, __ATOMIC_SEQ_CST)) {
        __atomic_add_fetch(&pair->bell->ring, 1, __ATOMIC_SEQ_CST);
        crux_futex_wake(&pair->bell->ring);
    }
}

uint32_t crux_tl_engine_doze(crux_tl_engine_t *e)
{
    __atomic_store_n(&e->bell->sleeping, 1, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&e->bell->ring, __ATOMIC_SEQ_CST);
}

void crux_tl_engine_sleep(crux_tl_engine_t *e, uint32_t ticket, double seconds)
{
    crux_futex_wait(&e->bell->ring, ticket, (long)(seconds * 1e9));
    __atomic_store_n(&e->bell->sleeping, 0, __ATOMIC_RELAXED);
}

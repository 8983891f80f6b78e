/* How far the peer's caches are from ours, measured on the pair's traffic.
 *
 * The look of a receive at the peer's ring entry that finds it published
 * is a load of a line the peer has written since we last read it: the line
 * comes from the peer's cache, and the load takes about one cache-to-cache
 * transfer.  One receive in CRUX_TL_REACH_EVERY times its looks.
 * Within one last-level cache that is some 50 ns; across chiplets or
 * sockets three to four times as much, and then every line the peer reads
 * from our caches costs as much, which streaming stores (to memory) avoid.
 * The median over a window of such loads decides, so the odd load that
 * found the line already here, or was preempted, does not; each window
 * decides anew, as processes that are not bound may move. */
#include <stdlib.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "ucx_tl/crux_tl_mp.h"

/* The time-stamp counter where there is one (a few cycles to read), else
 * the monotonic clock in nanoseconds. */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_lfence();   /* after the loads before it completed ... */
    uint64_t t = __rdtsc();
    _mm_lfence();   /* ... and before the ones after it start */
    return t;
#else
    return (uint64_t)(crux_tl_now() * 1e9);
#endif
}

void crux_tl_reach_init(crux_tl_engine_t *e)
{
    e->tick0 = ticks();
    e->time0 = crux_tl_now();
}

uint64_t crux_tl_reach_load(const uint64_t *word, uint64_t *t)
{
    uint64_t start = ticks();
    uint64_t value = mp_load(word);
    *t = ticks() - start;
    return value;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void crux_tl_reach_sample(crux_tl_pair_t *pair, uint64_t t)
{
    if (pair->loopback) {
        return;
    }
    pair->reach[pair->nreach++] = t;
    if (pair->nreach < CRUX_TL_REACH_SAMPLES) {
        return;
    }
    pair->nreach = 0;
    crux_tl_engine_t *e = pair->engine;
    double elapsed = crux_tl_now() - e->time0;
    if (elapsed < 1e-3) {
        return;   /* too soon to know the counter's rate well */
    }
    double per_second = (double)(ticks() - e->tick0) / elapsed;
    qsort(pair->reach, CRUX_TL_REACH_SAMPLES, sizeof(pair->reach[0]), by_value);
    double median = (double)pair->reach[CRUX_TL_REACH_SAMPLES / 2] / per_second;
    pair->far = median > e->config.far_latency;
}

int crux_tl_pair_far(const crux_tl_pair_t *pair)
{
    return pair->far;
}

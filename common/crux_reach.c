/* The measurement behind crux_reach.h. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "common/crux_reach.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The time-stamp counter where there is one (a few cycles to read), else
 * the monotonic clock in nanoseconds. */
static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_lfence(); /* after the loads before it completed ... */
    uint64_t t = __rdtsc();
    _mm_lfence(); /* ... and before the ones after it start */
    return t;
#else
    return (uint64_t)(now() * 1e9);
#endif
}

uint64_t crux_reach_load(const uint64_t *word, uint64_t *t)
{
    uint64_t start = ticks();
    uint64_t value = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    *t = ticks() - start;
    return value;
}

/* The counter and the clock at the process's first sample (any thread's). */
static uint64_t tick0;
static double time0;
static pthread_once_t first_sample = PTHREAD_ONCE_INIT;

static void note_first_sample(void)
{
    tick0 = ticks();
    time0 = now();
}

/* Ticks per second, measured since the first sample (0 while that was
 * under a millisecond ago: too soon to know the counter's rate well). */
static double tick_rate(void)
{
    pthread_once(&first_sample, note_first_sample);
    uint64_t t = ticks();
    double s = now();
    return s - time0 < 1e-3 ? 0 : (double)(t - tick0) / (s - time0);
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void crux_reach_sample(crux_reach_t *r, uint64_t t, double far_latency)
{
    double rate = tick_rate();
    r->sample[r->n++] = t;
    if (r->n < CRUX_REACH_SAMPLES) {
        return;
    }
    r->n = 0;
    if (rate == 0) {
        return;
    }
    qsort(r->sample, CRUX_REACH_SAMPLES, sizeof(r->sample[0]), by_value);
    double median = (double)r->sample[CRUX_REACH_SAMPLES / 2] / rate;
    r->far = median > (far_latency > 0 ? far_latency : CRUX_REACH_FAR);
}

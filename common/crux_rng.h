/* Seeded random numbers, the one generator every crux library uses (the
 * planner's tie-breaks and compression, the simulator's workloads and
 * placements, crux-sched gen-jobs).
 *
 * splitmix64: one 64-bit state, equidistributed, the same on every
 * platform, so a seed reproduces a workload, a placement or a plan exactly.
 * Not for anything secret. */
#ifndef CRUX_RNG_H
#define CRUX_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s;
} crux_rng_t;

static inline void crux_rng_seed(crux_rng_t *r, uint64_t seed)
{
    r->s = seed;
}

uint64_t crux_rng_next(crux_rng_t *r);
double crux_rng_uniform(crux_rng_t *r);             /* [0, 1) */
uint64_t crux_rng_below(crux_rng_t *r, uint64_t n); /* [0, n), n > 0, unbiased */

/* A well-mixed hash of one 64-bit value (splitmix64's finaliser). */
uint64_t crux_hash64(uint64_t x);

#endif

/* Small helpers of the simulator: random numbers, GPU masks. */

#include "sim/sim_internal.h"

/* splitmix64: one 64-bit state, equidistributed, the same on every
 * platform, so a seed reproduces a workload and a run exactly. */
uint64_t sim_rng_next(sim_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double sim_rng_uniform(sim_rng_t *r)
{
    return (double)(sim_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t sim_rng_below(sim_rng_t *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
    do
        x = sim_rng_next(r);
    while (x >= limit);
    return x % n;
}

uint64_t sim_all_gpus(int gpus)
{
    return gpus >= 64 ? ~0ULL : (1ULL << gpus) - 1;
}

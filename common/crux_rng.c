#include "common/crux_rng.h"

uint64_t crux_rng_next(crux_rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

double crux_rng_uniform(crux_rng_t *r)
{
    return (double)(crux_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t crux_rng_below(crux_rng_t *r, uint64_t n)
{
    /* rejection keeps it unbiased */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
    do
        x = crux_rng_next(r);
    while (x >= limit);
    return x % n;
}

uint64_t crux_hash64(uint64_t x)
{
    crux_rng_t r = { x };
    return crux_rng_next(&r);
}

/* GPU allocation and the placement policies.  A job of up to one host's
 * GPUs gets GPUs of one host; a larger one whole idle hosts (all GPUs
 * free).  The hosts of a job are put in ring order: by ToR, then host. */
#include <stdlib.h>
#include <string.h>

#include "sim/crux_sim_internal.h"

static const char *const place_names[CRUX_SIM_PLACEMENTS] = { "packed", "random", "spread",
                                                              "first-fit" };

const char *crux_sim_placement_name(crux_sim_placement_t p)
{
    return p >= 0 && p < CRUX_SIM_PLACEMENTS ? place_names[p] : "?";
}

int crux_sim_placement_from_name(const char *name)
{
    for (int p = 0; p < CRUX_SIM_PLACEMENTS; p++)
        if (strcmp(name, place_names[p]) == 0)
            return p;
    return -1;
}

/* The switch NIC 0 of each host is cabled to first: its ToR. */
static int host_tors(const crux_sched_cluster_t *c, int *tor_sw)
{
    for (int h = 0; h < crux_sched_cluster_hosts(c); h++)
        tor_sw[h] = -1;
    for (int l = 0; l < crux_sched_cluster_links(c); l++) {
        crux_sched_link_info_t li;
        crux_sched_link_info(c, l, &li);
        if (li.src.host >= 0 && li.src.nic == 0 && tor_sw[li.src.host] < 0)
            tor_sw[li.src.host] = li.dst.sw;
    }
    return 0;
}

crux_status_t sim_alloc_init(sim_alloc_t *a, const crux_sched_cluster_t *c, uint64_t seed)
{
    memset(a, 0, sizeof(*a));
    int nh = crux_sched_cluster_hosts(c), nsw = crux_sched_cluster_switches(c);
    a->nhosts = nh;
    a->rng.s = seed;
    a->tor_of = malloc((size_t)nh * sizeof(int));
    a->free = malloc((size_t)nh * sizeof(uint64_t));
    a->full = malloc((size_t)nh * sizeof(uint64_t));
    a->tor_hosts = malloc((size_t)nh * sizeof(int));
    int *tor_sw = malloc((size_t)nh * sizeof(int)), *sw_tor = malloc((size_t)nsw * sizeof(int));
    if (!a->tor_of || !a->free || !a->full || !a->tor_hosts || !tor_sw || !sw_tor) {
        free(tor_sw);
        free(sw_tor);
        sim_alloc_free(a);
        return CRUX_ERR_NO_MEMORY;
    }
    host_tors(c, tor_sw);
    for (int s = 0; s < nsw; s++)
        sw_tor[s] = -1;
    for (int h = 0; h < nh; h++) { /* ToRs numbered by first host */
        if (sw_tor[tor_sw[h]] < 0)
            sw_tor[tor_sw[h]] = a->ntors++;
        a->tor_of[h] = sw_tor[tor_sw[h]];
        crux_sched_host_info_t hi;
        crux_sched_host_info(c, h, &hi);
        if (a->host_gpus == 0 || hi.gpus < a->host_gpus)
            a->host_gpus = hi.gpus;
        a->free[h] = a->full[h] = sim_all_gpus(hi.gpus);
        a->total_gpus += hi.gpus;
    }
    free(tor_sw);
    free(sw_tor);
    a->tor_off = calloc((size_t)a->ntors + 1, sizeof(int));
    a->tor_idle = calloc((size_t)a->ntors, sizeof(int));
    int *fill = malloc((size_t)a->ntors * sizeof(int) + 1);
    if (!a->tor_off || !a->tor_idle || !fill) {
        free(fill);
        sim_alloc_free(a);
        return CRUX_ERR_NO_MEMORY;
    }
    for (int h = 0; h < nh; h++)
        a->tor_off[a->tor_of[h] + 1]++;
    for (int t = 0; t < a->ntors; t++)
        a->tor_off[t + 1] += a->tor_off[t];
    memcpy(fill, a->tor_off, (size_t)a->ntors * sizeof(int));
    for (int h = 0; h < nh; h++) {
        a->tor_hosts[fill[a->tor_of[h]]++] = h;
        a->tor_idle[a->tor_of[h]]++;
    }
    free(fill);
    return CRUX_OK;
}

void sim_alloc_free(sim_alloc_t *a)
{
    free(a->tor_of);
    free(a->tor_off);
    free(a->tor_hosts);
    free(a->free);
    free(a->full);
    free(a->tor_idle);
    memset(a, 0, sizeof(*a));
}

int sim_alloc_fits_ever(const sim_alloc_t *a, int gpus)
{
    if (gpus <= a->host_gpus)
        return 1;
    return gpus % a->host_gpus == 0 && gpus / a->host_gpus <= a->nhosts;
}

static int idle(const sim_alloc_t *a, int h)
{
    uint64_t all = a->full[h];
    return (a->free[h] & all) == all;
}

static void take_gpus(sim_alloc_t *a, int h, uint64_t mask)
{
    int was_idle = idle(a, h);
    a->free[h] &= ~mask;
    if (was_idle && !idle(a, h))
        a->tor_idle[a->tor_of[h]]--;
}

/* The `need` lowest free GPUs of a host. */
static uint64_t lowest_free(uint64_t f, int need)
{
    uint64_t take = 0;
    for (int g = 0; g < need; g++) {
        uint64_t low = f & -f;
        take |= low;
        f &= f - 1;
    }
    return take;
}

/* Small jobs: one host with room.  packed: the fullest that fits (keeps
 * idle hosts for large jobs); spread: the emptiest; random: any;
 * first-fit: the first in rack order. */
static int place_small(sim_alloc_t *a, crux_sim_placement_t how, int gpus, crux_sched_place_t *out)
{
    int best = -1, bestfree = 0, fits = 0;
    for (int i = 0; i < a->nhosts && how == CRUX_SIM_PLACE_FIRST_FIT && best < 0; i++)
        if (__builtin_popcountll(a->free[a->tor_hosts[i]]) >= gpus)
            best = a->tor_hosts[i];
    for (int h = 0; h < a->nhosts && how != CRUX_SIM_PLACE_FIRST_FIT; h++) {
        int f = __builtin_popcountll(a->free[h]);
        if (f < gpus)
            continue;
        fits++;
        if (best < 0 || (how == CRUX_SIM_PLACE_PACKED && f < bestfree) ||
            (how == CRUX_SIM_PLACE_SPREAD && f > bestfree)) {
            best = h;
            bestfree = f;
        }
    }
    if (best < 0)
        return 0;
    if (how == CRUX_SIM_PLACE_RANDOM) {
        uint64_t k = crux_rng_below(&a->rng, (uint64_t)fits);
        for (int h = 0; h < a->nhosts; h++)
            if (__builtin_popcountll(a->free[h]) >= gpus && k-- == 0) {
                best = h;
                break;
            }
    }
    out[0] = (crux_sched_place_t){ best, lowest_free(a->free[best], gpus) };
    take_gpus(a, best, out[0].gpus);
    return 1;
}

typedef struct {
    int tor, host;
    uint64_t gpus;
} ring_key_t;

static int by_ring(const void *x, const void *y)
{
    const ring_key_t *a = x, *b = y;
    return a->tor != b->tor ? a->tor - b->tor : a->host - b->host;
}

/* Hosts of a job in ring order: by ToR, then host. */
static int ring_order(const sim_alloc_t *a, crux_sched_place_t *p, int n)
{
    ring_key_t *k = malloc((size_t)(n > 0 ? n : 1) * sizeof(*k));
    if (k == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        k[i] = (ring_key_t){ a->tor_of[p[i].host], p[i].host, p[i].gpus };
    qsort(k, (size_t)n, sizeof(*k), by_ring);
    for (int i = 0; i < n; i++)
        p[i] = (crux_sched_place_t){ k[i].host, k[i].gpus };
    free(k);
    return n;
}

/* The idle hosts of ToR t, up to `need`, appended to out. */
static int take_from_tor(sim_alloc_t *a, int t, int need, crux_sched_place_t *out, int n)
{
    for (int i = a->tor_off[t]; i < a->tor_off[t + 1] && need > 0; i++) {
        int h = a->tor_hosts[i];
        if (idle(a, h)) {
            out[n] = (crux_sched_place_t){ h, lowest_free(a->full[h], a->host_gpus) };
            take_gpus(a, h, out[n++].gpus);
            need--;
        }
    }
    return n;
}

/* packed: the ToR with the fewest idle hosts that still holds the job;
 * else ToRs from the most idle hosts down (the fewest ToRs). */
static int place_packed(sim_alloc_t *a, int nh, crux_sched_place_t *out)
{
    int best = -1;
    for (int t = 0; t < a->ntors; t++)
        if (a->tor_idle[t] >= nh && (best < 0 || a->tor_idle[t] < a->tor_idle[best]))
            best = t;
    if (best >= 0)
        return take_from_tor(a, best, nh, out, 0);
    int n = 0;
    while (n < nh) {
        int most = -1;
        for (int t = 0; t < a->ntors; t++)
            if (a->tor_idle[t] > 0 && (most < 0 || a->tor_idle[t] > a->tor_idle[most]))
                most = t;
        n = take_from_tor(a, most, nh - n, out, n);
    }
    return n;
}

typedef struct {
    int idle, tor;
} idle_key_t;

static int by_idle_desc(const void *x, const void *y)
{
    const idle_key_t *a = x, *b = y;
    return a->idle != b->idle ? b->idle - a->idle : a->tor - b->tor;
}

/* spread: passes over the ToRs with idle hosts, the most idle first, one
 * host from each per pass. */
static int place_spread(sim_alloc_t *a, int nh, crux_sched_place_t *out)
{
    idle_key_t *tors = malloc((size_t)a->ntors * sizeof(*tors));
    int n = 0;
    if (tors == NULL)
        return -1;
    while (n < nh) {
        int k = 0;
        for (int t = 0; t < a->ntors; t++)
            if (a->tor_idle[t] > 0)
                tors[k++] = (idle_key_t){ a->tor_idle[t], t };
        qsort(tors, (size_t)k, sizeof(*tors), by_idle_desc);
        for (int i = 0; i < k && n < nh; i++)
            n = take_from_tor(a, tors[i].tor, 1, out, n);
    }
    free(tors);
    return n;
}

/* first-fit: the first idle hosts in rack order (ToR by ToR), as a batch
 * scheduler's linear allocator takes them: whatever arrivals and departures
 * left free, so a job lands in the holes of several ToRs once the cluster
 * is fragmented. */
static int place_first_fit(sim_alloc_t *a, int nh, crux_sched_place_t *out)
{
    int n = 0;
    for (int t = 0; t < a->ntors && n < nh; t++)
        if (a->tor_idle[t] > 0)
            n = take_from_tor(a, t, nh - n, out, n);
    return n;
}

static int place_random(sim_alloc_t *a, int nh, int idle_hosts, crux_sched_place_t *out)
{
    int *pool = malloc((size_t)idle_hosts * sizeof(int)), k = 0;
    if (pool == NULL)
        return -1;
    for (int h = 0; h < a->nhosts; h++)
        if (idle(a, h))
            pool[k++] = h;
    for (int i = 0; i < nh; i++) { /* partial Fisher-Yates */
        int r = i + (int)crux_rng_below(&a->rng, (uint64_t)(k - i));
        int t = pool[i];
        pool[i] = pool[r];
        pool[r] = t;
        out[i] = (crux_sched_place_t){ pool[i], lowest_free(a->full[pool[i]], a->host_gpus) };
        take_gpus(a, pool[i], out[i].gpus);
    }
    free(pool);
    return nh;
}

int sim_alloc_place(sim_alloc_t *a, crux_sim_placement_t how, int gpus, crux_sched_place_t *out)
{
    if (gpus <= a->host_gpus)
        return place_small(a, how, gpus, out);
    int nh = gpus / a->host_gpus, idle_hosts = 0;
    for (int t = 0; t < a->ntors; t++)
        idle_hosts += a->tor_idle[t];
    if (idle_hosts < nh)
        return 0;
    int n = how == CRUX_SIM_PLACE_PACKED      ? place_packed(a, nh, out)
            : how == CRUX_SIM_PLACE_SPREAD    ? place_spread(a, nh, out)
            : how == CRUX_SIM_PLACE_FIRST_FIT ? place_first_fit(a, nh, out)
                                              : place_random(a, nh, idle_hosts, out);
    if (n != nh)
        return n < 0 ? -1 : 0;
    return ring_order(a, out, n);
}

int sim_alloc_take(sim_alloc_t *a, const crux_sched_place_t *p, int n)
{
    for (int i = 0; i < n; i++) {
        uint64_t m = p[i].gpus ? p[i].gpus : a->full[p[i].host];
        if ((a->free[p[i].host] & m) != m)
            return 0;
    }
    for (int i = 0; i < n; i++)
        take_gpus(a, p[i].host, p[i].gpus ? p[i].gpus : a->full[p[i].host]);
    return 1;
}

void sim_alloc_release(sim_alloc_t *a, const crux_sched_place_t *p, int n)
{
    for (int i = 0; i < n; i++) {
        int h = p[i].host, was_idle = idle(a, h);
        a->free[h] |= p[i].gpus ? p[i].gpus : a->full[h];
        if (!was_idle && idle(a, h))
            a->tor_idle[a->tor_of[h]]++;
    }
}

/* crux_allreduce_select: every point of the three axes against every set
 * of capabilities, the refusals and their reasons, and that a capability
 * is asked for only when the choice needs it (asking may build a group,
 * which is collective and costly); the sizes that give calls to the
 * caller's own (crux_select_bounds) against what the selection answers at
 * and around each of them; what runs after an algorithm refused a call
 * (crux_allreduce_next); crux_request_set: every name of every axis, the
 * older single knob's points, and names that are refused. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "coll/crux_coll.h"
#include "tests/unit/check_main.h"

typedef struct {
    unsigned have;  /* bit per crux_select_cap_t */
    unsigned asked; /* bits asked for */
} caps_t;

static int has(void *arg, crux_select_cap_t cap)
{
    caps_t *c = arg;
    c->asked |= 1u << cap;
    return (c->have >> cap) & 1u;
}

#define BIT(cap)   (1u << (cap))
#define SMALL_CAPS (BIT(CRUX_CAP_SMALL) | BIT(CRUX_CAP_LAYOUT_SMALL))
/* every capability of a call too large for the small Allreduce */
#define ALL (((1u << CRUX_CAP_COUNT) - 1) & ~SMALL_CAPS)

/* The size of the calls pick() asks about: by default one too large for
 * the small Allreduce, past every threshold of the default sizes. */
static size_t call_bytes = 1u << 20;

static crux_alg_t pick(int device, int all_local, crux_request_t r, caps_t *c, const char **why)
{
    crux_select_query_t q = {
        .device = device,
        .all_local = all_local,
        .bytes = call_bytes,
        .sizes = CRUX_SELECT_SIZES_DEFAULT,
        .request = r,
        .has = has,
        .arg = c,
    };
    return crux_allreduce_select(&q, why);
}

static crux_request_t req(crux_topology_t t, crux_handoff_t h)
{
    crux_request_t r = CRUX_REQUEST_AUTO;
    r.topology = t;
    r.handoff = h;
    return r;
}

/* Host buffers, every capability there: each (topology, hand-off) on one
 * node and across nodes. */
START_TEST(every_point)
{
    enum { A = CRUX_TOPOLOGY_AUTO, F = CRUX_TOPOLOGY_FLAT, H = CRUX_TOPOLOGY_HIER };
    enum { S = CRUX_TOPOLOGY_HIER_SEQUENTIAL };
    static const struct {
        int topology, handoff, local;
        crux_alg_t alg;
    } rows[] = {
        { A, CRUX_HANDOFF_AUTO, 1, CRUX_ALG_LANES },
        { A, CRUX_HANDOFF_FLAGS, 1, CRUX_ALG_FLAGS },
        { A, CRUX_HANDOFF_LANES, 1, CRUX_ALG_LANES },
        { F, CRUX_HANDOFF_AUTO, 1, CRUX_ALG_LANES },
        { F, CRUX_HANDOFF_FLAGS, 1, CRUX_ALG_FLAGS },
        { F, CRUX_HANDOFF_LANES, 1, CRUX_ALG_LANES },
        { H, CRUX_HANDOFF_AUTO, 1, CRUX_ALG_HIER },
        { H, CRUX_HANDOFF_FLAGS, 1, CRUX_ALG_HIER },
        { H, CRUX_HANDOFF_LANES, 1, CRUX_ALG_HIER },
        { S, CRUX_HANDOFF_AUTO, 1, CRUX_ALG_HIER_SEQUENTIAL },
        { S, CRUX_HANDOFF_FLAGS, 1, CRUX_ALG_HIER_SEQUENTIAL },
        { S, CRUX_HANDOFF_LANES, 1, CRUX_ALG_HIER_SEQUENTIAL },
        { A, CRUX_HANDOFF_AUTO, 0, CRUX_ALG_HIER },
        { A, CRUX_HANDOFF_FLAGS, 0, CRUX_ALG_HIER },
        { A, CRUX_HANDOFF_LANES, 0, CRUX_ALG_HIER },
        { F, CRUX_HANDOFF_AUTO, 0, CRUX_ALG_FALLBACK },
        { F, CRUX_HANDOFF_FLAGS, 0, CRUX_ALG_FALLBACK },
        { F, CRUX_HANDOFF_LANES, 0, CRUX_ALG_FALLBACK },
        { H, CRUX_HANDOFF_AUTO, 0, CRUX_ALG_HIER },
        { H, CRUX_HANDOFF_FLAGS, 0, CRUX_ALG_HIER },
        { H, CRUX_HANDOFF_LANES, 0, CRUX_ALG_HIER },
        { S, CRUX_HANDOFF_AUTO, 0, CRUX_ALG_HIER_SEQUENTIAL },
        { S, CRUX_HANDOFF_FLAGS, 0, CRUX_ALG_HIER_SEQUENTIAL },
        { S, CRUX_HANDOFF_LANES, 0, CRUX_ALG_HIER_SEQUENTIAL },
    };
    ck_assert_int_eq(sizeof(rows) / sizeof(rows[0]),
                     2 * CRUX_TOPOLOGY_COUNT * (CRUX_HANDOFF_COUNT - 0));
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *why;
        caps_t c = { ALL, 0 };
        crux_alg_t alg = pick(0, rows[i].local, req(rows[i].topology, rows[i].handoff), &c, &why);
        ck_assert_msg(alg == rows[i].alg, "row %zu: %s, not %s", i, crux_alg_name(alg),
                      crux_alg_name(rows[i].alg));
        ck_assert(alg == CRUX_ALG_FALLBACK ? strcmp(why, "the flat algorithm needs every rank "
                                                         "on one node") == 0
                                           : why[0] == '\0');
        /* nothing flat is built for the hierarchical algorithm, no lanes
         * when flags are asked for, no group when the lanes take it */
        if (alg == CRUX_ALG_HIER || alg == CRUX_ALG_HIER_SEQUENTIAL) {
            ck_assert_uint_eq(c.asked & (BIT(CRUX_CAP_GROUP) | BIT(CRUX_CAP_LANES)), 0);
        }
        if (rows[i].handoff == CRUX_HANDOFF_FLAGS) {
            ck_assert_uint_eq(c.asked & (BIT(CRUX_CAP_LANES) | BIT(CRUX_CAP_LAYOUT_LANES)), 0);
        }
        if (alg == CRUX_ALG_LANES) {
            ck_assert_uint_eq(c.asked & BIT(CRUX_CAP_GROUP), 0);
        }
    }
}
END_TEST

/* A call that fits the small Allreduce takes it when nothing is forced:
 * flat on one node, across groups across nodes; a forced topology or
 * hand-off runs its pipeline at every size; without it the choice is the
 * one for larger calls. */
START_TEST(small_calls)
{
    enum { A = CRUX_TOPOLOGY_AUTO, F = CRUX_TOPOLOGY_FLAT, H = CRUX_TOPOLOGY_HIER };
    enum { S = CRUX_TOPOLOGY_HIER_SEQUENTIAL };
    static const struct {
        int topology, handoff, local;
        crux_alg_t alg;
    } rows[] = {
        { A, CRUX_HANDOFF_AUTO, 1, CRUX_ALG_SMALL },
        { A, CRUX_HANDOFF_FLAGS, 1, CRUX_ALG_FLAGS },
        { A, CRUX_HANDOFF_LANES, 1, CRUX_ALG_LANES },
        { F, CRUX_HANDOFF_AUTO, 1, CRUX_ALG_LANES },
        { H, CRUX_HANDOFF_AUTO, 1, CRUX_ALG_HIER },
        { S, CRUX_HANDOFF_AUTO, 1, CRUX_ALG_HIER_SEQUENTIAL },
        { A, CRUX_HANDOFF_AUTO, 0, CRUX_ALG_HIER_SMALL },
        { A, CRUX_HANDOFF_FLAGS, 0, CRUX_ALG_HIER },
        { A, CRUX_HANDOFF_LANES, 0, CRUX_ALG_HIER },
        { H, CRUX_HANDOFF_FLAGS, 0, CRUX_ALG_HIER },
        { S, CRUX_HANDOFF_AUTO, 0, CRUX_ALG_HIER_SEQUENTIAL },
        { F, CRUX_HANDOFF_AUTO, 0, CRUX_ALG_FALLBACK },
    };
    call_bytes = 64;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *why;
        caps_t c = { ALL | SMALL_CAPS, 0 };
        crux_alg_t alg = pick(0, rows[i].local, req(rows[i].topology, rows[i].handoff), &c, &why);
        ck_assert_msg(alg == rows[i].alg, "row %zu: %s, not %s", i, crux_alg_name(alg),
                      crux_alg_name(rows[i].alg));
        /* anything forced: no small group built for nothing */
        if (rows[i].handoff != CRUX_HANDOFF_AUTO || rows[i].topology != A) {
            ck_assert_uint_eq(c.asked & SMALL_CAPS, 0);
        }
    }
    const char *why;
    caps_t c = { ALL | BIT(CRUX_CAP_LAYOUT_SMALL), 0 }; /* a call too large for one node's */
    ck_assert_int_eq(pick(0, 1, req(CRUX_TOPOLOGY_AUTO, CRUX_HANDOFF_AUTO), &c, &why),
                     CRUX_ALG_LANES);
    c = (caps_t){ ALL | BIT(CRUX_CAP_SMALL), 0 };
    ck_assert_int_eq(pick(0, 0, req(CRUX_TOPOLOGY_AUTO, CRUX_HANDOFF_AUTO), &c, &why),
                     CRUX_ALG_HIER);
    ck_assert_str_eq(crux_alg_name(CRUX_ALG_SMALL), "small");
    ck_assert_str_eq(crux_alg_name(CRUX_ALG_HIER_SMALL), "hier-small");
    call_bytes = 1u << 20;
}
END_TEST

/* The bounds of each request and shape, from the sizes. */
START_TEST(bounds)
{
    const crux_select_sizes_t sizes = { .min_bytes = 100,
                                        .small_max_bytes = 4096,
                                        .hier_small_max_bytes = 65536,
                                        .hier_min_bytes = 262144 };
    crux_request_t r = CRUX_REQUEST_AUTO;
    crux_select_bounds_t b = crux_select_bounds(&r, 1, &sizes);
    ck_assert_uint_eq(b.fallback_below, 100);
    ck_assert_uint_eq(b.small_max, 4096);
    ck_assert_uint_eq(b.hier_from, 0); /* one node: no gap */
    b = crux_select_bounds(&r, 0, &sizes);
    ck_assert_uint_eq(b.fallback_below, 100);
    ck_assert_uint_eq(b.small_max, 65536);
    ck_assert_uint_eq(b.hier_from, 262144);
    ck_assert_int_eq(crux_select_size_falls_back(&b, 99), 1);
    ck_assert_int_eq(crux_select_size_falls_back(&b, 100), 0);
    ck_assert_int_eq(crux_select_size_falls_back(&b, 65536), 0);
    ck_assert_int_eq(crux_select_size_falls_back(&b, 65537), 1);
    ck_assert_int_eq(crux_select_size_falls_back(&b, 262143), 1);
    ck_assert_int_eq(crux_select_size_falls_back(&b, 262144), 0);
    /* a forced topology or hand-off: every size, no small Allreduce; the
     * memory path alone forces nothing */
    for (int local = 0; local <= 1; local++) {
        crux_request_t f = CRUX_REQUEST_AUTO;
        f.handoff = CRUX_HANDOFF_FLAGS;
        b = crux_select_bounds(&f, local, &sizes);
        ck_assert(b.fallback_below == 0 && b.small_max == 0 && b.hier_from == 0);
        ck_assert_int_eq(crux_select_size_falls_back(&b, 0), 0);
        f = (crux_request_t)CRUX_REQUEST_AUTO;
        f.topology = CRUX_TOPOLOGY_HIER;
        b = crux_select_bounds(&f, local, &sizes);
        ck_assert(b.fallback_below == 0 && b.small_max == 0 && b.hier_from == 0);
        f = (crux_request_t)CRUX_REQUEST_AUTO;
        f.memory_path = CRUX_MEMORY_PATH_HOST_STAGED;
        b = crux_select_bounds(&f, local, &sizes);
        ck_assert_uint_eq(b.fallback_below, 100);
        /* fallback: every size to the caller's own */
        f = (crux_request_t)CRUX_REQUEST_AUTO;
        f.fallback = 1;
        b = crux_select_bounds(&f, local, &sizes);
        ck_assert_uint_eq(b.fallback_below, SIZE_MAX);
        ck_assert_int_eq(crux_select_size_falls_back(&b, SIZE_MAX - 1), 1);
    }
}
END_TEST

/* The selection at and around every bound agrees with
 * crux_select_size_falls_back, says why it hands a call on, and asks for
 * nothing then (no group built for a call that does not use it). */
START_TEST(sizes_select)
{
    const crux_select_sizes_t sizes = { .min_bytes = 100,
                                        .small_max_bytes = 4096,
                                        .hier_small_max_bytes = 65536,
                                        .hier_min_bytes = 262144 };
    static const size_t at[] = { 1,     99,    100,   101,    4095,   4096,   4097,
                                 65535, 65536, 65537, 262143, 262144, 262145, (size_t)1 << 30 };
    static const crux_request_t requests[] = {
        CRUX_REQUEST_AUTO,
        { 0, CRUX_TOPOLOGY_FLAT, CRUX_HANDOFF_AUTO, 0 },
        { 0, CRUX_TOPOLOGY_HIER, CRUX_HANDOFF_AUTO, 0 },
        { 0, CRUX_TOPOLOGY_AUTO, CRUX_HANDOFF_FLAGS, 0 },
    };
    for (size_t ri = 0; ri < sizeof(requests) / sizeof(requests[0]); ri++) {
        for (int local = 0; local <= 1; local++) {
            crux_select_bounds_t b = crux_select_bounds(&requests[ri], local, &sizes);
            for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
                caps_t c = { ALL | SMALL_CAPS, 0 };
                crux_select_query_t q = { .all_local = local,
                                          .bytes = at[i],
                                          .sizes = sizes,
                                          .request = requests[ri],
                                          .has = has,
                                          .arg = &c };
                const char *why;
                crux_alg_t alg = crux_allreduce_select(&q, &why);
                if (crux_select_size_falls_back(&b, at[i])) {
                    ck_assert_msg(alg == CRUX_ALG_FALLBACK, "request %zu local %d at %zu", ri,
                                  local, at[i]);
                    ck_assert_uint_eq(c.asked, 0);
                    ck_assert_int_gt((int)strlen(why), 0);
                    continue;
                }
                int small = alg == CRUX_ALG_SMALL || alg == CRUX_ALG_HIER_SMALL;
                /* the small Allreduce exactly up to its bound, by shape */
                ck_assert_int_eq(small, at[i] <= b.small_max && b.small_max != 0 &&
                                            (local || requests[ri].topology == 0));
                ck_assert(alg != CRUX_ALG_SMALL || local);
                ck_assert(alg != CRUX_ALG_HIER_SMALL || !local);
            }
        }
    }
    /* auto across nodes, defaults: no gap, the hierarchical pipeline right
     * above the small Allreduce */
    caps_t c = { ALL | SMALL_CAPS, 0 };
    crux_select_query_t q = { .bytes = 100000,
                              .sizes = CRUX_SELECT_SIZES_DEFAULT,
                              .request = CRUX_REQUEST_AUTO,
                              .has = has,
                              .arg = &c };
    const char *why;
    ck_assert_int_ne(crux_allreduce_select(&q, &why), CRUX_ALG_FALLBACK);
    /* a gap left by the sizes is the caller's, with the reason */
    q.sizes.hier_min_bytes = 256u << 10;
    ck_assert_int_eq(crux_allreduce_select(&q, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "between the small Allreduce's sizes and the hierarchical pipeline's");
    q.sizes.min_bytes = 1u << 20;
    ck_assert_int_eq(crux_allreduce_select(&q, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "smaller than crux's smallest size");
    /* sizes do not apply to device buffers: staged, then asked again */
    q.device = 1;
    ck_assert_int_ne(crux_allreduce_select(&q, &why), CRUX_ALG_FALLBACK);
}
END_TEST

/* After an algorithm: over when done or failed; a refused call (nothing
 * moved) goes on through host memory (device) or to the caller's own. */
START_TEST(after_refusal)
{
    const char *why;
    for (int a = 0; a < CRUX_ALG_COUNT; a++) {
        static const crux_status_t over[] = { CRUX_OK, CRUX_ERR_PEER, CRUX_ERR_INVALID, CRUX_ERR_IO,
                                              CRUX_ERR_NO_RESOURCE };
        for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
            ck_assert_int_eq(crux_allreduce_next((crux_alg_t)a, over[i], &why), CRUX_ALG_COUNT);
            ck_assert_str_eq(why, "");
        }
        crux_alg_t next = crux_allreduce_next((crux_alg_t)a, CRUX_ERR_UNSUPPORTED, &why);
        switch (a) {
        case CRUX_ALG_DEVICE:
            ck_assert_int_eq(next, CRUX_ALG_HOST_STAGED);
            ck_assert_str_eq(why, "the engine cannot move these buffers");
            break;
        case CRUX_ALG_FALLBACK:
        case CRUX_ALG_HOST_STAGED: /* its host call decided for itself */
            ck_assert_int_eq(next, CRUX_ALG_COUNT);
            break;
        default: ck_assert_int_eq(next, CRUX_ALG_FALLBACK); ck_assert_int_gt((int)strlen(why), 0);
        }
    }
    ck_assert_int_eq(crux_allreduce_next(CRUX_ALG_COUNT, CRUX_ERR_UNSUPPORTED, &why),
                     CRUX_ALG_COUNT);
}
END_TEST

/* What cannot run as asked goes to the caller's own, with the reason. */
START_TEST(refusals)
{
    const char *why;
    caps_t c = { ALL & ~BIT(CRUX_CAP_LANES), 0 };
    /* auto without lanes: flags, never the engine's transfers */
    ck_assert_int_eq(pick(0, 1, req(0, CRUX_HANDOFF_AUTO), &c, &why), CRUX_ALG_FLAGS);
    ck_assert_str_eq(why, "");
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_LANES), 0 };
    ck_assert_int_eq(pick(0, 1, req(0, CRUX_HANDOFF_LANES), &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "no lanes between these ranks");
    ck_assert_uint_eq(c.asked & BIT(CRUX_CAP_GROUP), 0); /* nothing built for nothing */
    c = (caps_t){ 0, 0 };
    ck_assert_int_eq(pick(0, 1, req(0, CRUX_HANDOFF_AUTO), &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "no shared memory");
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_GROUP), 0 };
    ck_assert_int_eq(pick(0, 1, req(CRUX_TOPOLOGY_FLAT, CRUX_HANDOFF_FLAGS), &c, &why),
                     CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "no shared memory");
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_LAYOUT), 0 };
    ck_assert_int_eq(pick(0, 0, req(0, 0), &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "no usable rank groups");
    ck_assert_uint_eq(c.asked & ~SMALL_CAPS, BIT(CRUX_CAP_LAYOUT));
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_LAYOUT_LANES), 0 };
    ck_assert_int_eq(pick(0, 0, req(CRUX_TOPOLOGY_HIER_SEQUENTIAL, CRUX_HANDOFF_LANES), &c, &why),
                     CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "the rank groups have no lanes");
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_LAYOUT_LANES), 0 };
    ck_assert_int_eq(pick(0, 0, req(CRUX_TOPOLOGY_HIER, CRUX_HANDOFF_AUTO), &c, &why),
                     CRUX_ALG_HIER);
    /* fallback asks for nothing and needs no reason */
    crux_request_t r = CRUX_REQUEST_AUTO;
    r.fallback = 1;
    c = (caps_t){ ALL, 0 };
    ck_assert_int_eq(pick(0, 1, r, &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_uint_eq(c.asked, 0);
    ck_assert_str_eq(why, "");
}
END_TEST

/* Device buffers never fall back to a module that is not CUDA-aware; the
 * device path only where it can run, on one node, flat. */
START_TEST(device)
{
    const char *why;
    for (int fb = 0; fb <= 1; fb++) {
        for (int t = 0; t < CRUX_TOPOLOGY_COUNT; t++) {
            for (int h = 0; h < CRUX_HANDOFF_COUNT; h++) {
                for (int p = 0; p < CRUX_MEMORY_PATH_COUNT; p++) {
                    for (unsigned have = 0; have <= ALL; have++) {
                        for (int local = 0; local <= 1; local++) {
                            crux_request_t r = { fb, t, h, p };
                            caps_t c = { have, 0 };
                            crux_alg_t alg = pick(1, local, r, &c, &why);
                            int can = local && !fb && p != CRUX_MEMORY_PATH_HOST_STAGED &&
                                      t != CRUX_TOPOLOGY_HIER &&
                                      t != CRUX_TOPOLOGY_HIER_SEQUENTIAL &&
                                      (have & BIT(CRUX_CAP_DEVICE_KERNEL)) &&
                                      (have & BIT(CRUX_CAP_ENGINE));
                            ck_assert_int_eq(alg, can ? CRUX_ALG_DEVICE : CRUX_ALG_HOST_STAGED);
                            /* a reason only where the device path was wanted */
                            ck_assert(why[0] == '\0' || (!fb && p != CRUX_MEMORY_PATH_HOST_STAGED));
                            if (p == CRUX_MEMORY_PATH_HOST_STAGED) {
                                ck_assert_uint_eq(c.asked, 0);
                            }
                        }
                    }
                }
            }
        }
    }
    caps_t c = { ALL & ~BIT(CRUX_CAP_DEVICE_KERNEL), 0 };
    ck_assert_int_eq(pick(1, 1, req(0, 0), &c, &why), CRUX_ALG_HOST_STAGED);
    ck_assert_str_eq(why, "no GPU kernel for this datatype and op");
    c = (caps_t){ ALL, 0 };
    ck_assert_int_eq(pick(1, 1, req(CRUX_TOPOLOGY_HIER, 0), &c, &why), CRUX_ALG_HOST_STAGED);
    ck_assert_str_eq(why, "the device algorithm is flat");
}
END_TEST

/* Host buffers, every request against every set of capabilities: an
 * algorithm whose needs were there, a reason for every fallback. */
START_TEST(every_request)
{
    const char *why;
    for (int fb = 0; fb <= 1; fb++) {
        for (int t = 0; t < CRUX_TOPOLOGY_COUNT; t++) {
            for (int h = 0; h < CRUX_HANDOFF_COUNT; h++) {
                for (unsigned have = 0; have <= ALL; have++) {
                    for (int local = 0; local <= 1; local++) {
                        crux_request_t r = { fb, t, h, CRUX_MEMORY_PATH_AUTO };
                        caps_t c = { have, 0 };
                        crux_alg_t alg = pick(0, local, r, &c, &why);
                        ck_assert(alg < CRUX_ALG_COUNT && alg != CRUX_ALG_DEVICE &&
                                  alg != CRUX_ALG_HOST_STAGED);
                        ck_assert(alg != CRUX_ALG_FALLBACK || why[0] != '\0' || fb);
                        ck_assert(alg == CRUX_ALG_FALLBACK || !fb);
                        ck_assert(alg != CRUX_ALG_LANES || (have & BIT(CRUX_CAP_LANES)));
                        ck_assert(alg != CRUX_ALG_LANES || h != CRUX_HANDOFF_FLAGS);
                        ck_assert(alg != CRUX_ALG_FLAGS || (have & BIT(CRUX_CAP_GROUP)));
                        ck_assert(alg != CRUX_ALG_FLAGS || h != CRUX_HANDOFF_LANES);
                        ck_assert(alg != CRUX_ALG_HIER || (have & BIT(CRUX_CAP_LAYOUT)));
                        ck_assert((alg != CRUX_ALG_LANES && alg != CRUX_ALG_FLAGS) || local);
                        ck_assert(alg != CRUX_ALG_HIER_SEQUENTIAL ||
                                  t == CRUX_TOPOLOGY_HIER_SEQUENTIAL);
                        ck_assert_str_ne(crux_alg_name(alg), "?");
                    }
                }
            }
        }
    }
    ck_assert_str_eq(crux_alg_name((crux_alg_t)-1), "?");
    ck_assert_str_eq(crux_alg_name(CRUX_ALG_COUNT), "?");
}
END_TEST

/* Every name of every axis sets that axis alone. */
START_TEST(axis_names)
{
    static const char *const axes[] = { "topology", "handoff", "memory_path" };
    static const int counts[] = { CRUX_TOPOLOGY_COUNT, CRUX_HANDOFF_COUNT, CRUX_MEMORY_PATH_COUNT };
    for (int a = 0; a < 3; a++) {
        const char *const *names = crux_request_values(axes[a]);
        ck_assert_ptr_nonnull(names);
        int n = 0;
        for (; names[n] != NULL; n++) {
            crux_request_t r = CRUX_REQUEST_AUTO;
            ck_assert_int_eq(crux_request_set(&r, axes[a], names[n]), CRUX_OK);
            int got[3] = { (int)r.topology, (int)r.handoff, (int)r.memory_path };
            for (int b = 0; b < 3; b++) {
                ck_assert_int_eq(got[b], b == a ? n : 0);
            }
            ck_assert_int_eq(r.fallback, 0);
        }
        ck_assert_int_eq(n, counts[a]);
    }
    ck_assert_str_eq(crux_request_values("topology")[3], "hier-sequential");
    ck_assert_str_eq(crux_request_values("handoff")[1], "flags");
    ck_assert_str_eq(crux_request_values("memory_path")[2], "host-staged");
}
END_TEST

/* The older single knob: each of its documented values is a point. */
START_TEST(older_knob)
{
    static const struct {
        const char *name;
        crux_request_t point;
    } rows[] = {
        { "auto", CRUX_REQUEST_AUTO },
        { "flat", { 0, CRUX_TOPOLOGY_FLAT, CRUX_HANDOFF_FLAGS, 0 } },
        { "staged", { 0, CRUX_TOPOLOGY_FLAT, CRUX_HANDOFF_FLAGS, 0 } },
        { "cma", { 0, CRUX_TOPOLOGY_FLAT, CRUX_HANDOFF_FLAGS, 0 } },
        { "engine", { 0, CRUX_TOPOLOGY_FLAT, CRUX_HANDOFF_LANES, 0 } },
        { "hier", { 0, CRUX_TOPOLOGY_HIER, CRUX_HANDOFF_AUTO, 0 } },
        { "hier-sequential", { 0, CRUX_TOPOLOGY_HIER_SEQUENTIAL, CRUX_HANDOFF_AUTO, 0 } },
        { "fallback", { 1, CRUX_TOPOLOGY_AUTO, CRUX_HANDOFF_AUTO, 0 } },
    };
    int n = 0;
    while (crux_request_values("algorithm")[n] != NULL) {
        n++;
    }
    ck_assert_int_eq(n, sizeof(rows) / sizeof(rows[0])); /* every value in the table */
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        /* a point replaces every axis, whatever was set before */
        crux_request_t r = { 1, CRUX_TOPOLOGY_HIER, CRUX_HANDOFF_LANES,
                             CRUX_MEMORY_PATH_HOST_STAGED };
        ck_assert_int_eq(crux_request_set(&r, "algorithm", rows[i].name), CRUX_OK);
        ck_assert_msg(memcmp(&r, &rows[i].point, sizeof(r)) == 0, "%s", rows[i].name);
        ck_assert_int_eq(crux_request_forced(&r), strcmp(rows[i].name, "auto") != 0);
    }
}
END_TEST

/* A name an axis does not have changes nothing. */
START_TEST(bad_names)
{
    static const char *const bad[][2] = {
        { "topology", "ring" },    { "topology", "" },       { "topology", "FLAT" },
        { "handoff", "staged" },   { "handoff", "cma" },     { "memory_path", "gpu" },
        { "algorithm", "device" }, { "algorithm", "flat " }, { "no-such-axis", "auto" },
        { "algorithm", NULL },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        crux_request_t r = { 0, CRUX_TOPOLOGY_FLAT, CRUX_HANDOFF_LANES, CRUX_MEMORY_PATH_DEVICE };
        crux_request_t before = r;
        ck_assert_int_eq(crux_request_set(&r, bad[i][0], bad[i][1]), CRUX_ERR_INVALID);
        ck_assert(memcmp(&r, &before, sizeof(r)) == 0);
    }
    ck_assert_ptr_null(crux_request_values("no-such-axis"));
    ck_assert_ptr_null(crux_request_values(NULL));
    crux_request_t r = CRUX_REQUEST_AUTO;
    ck_assert_int_eq(crux_request_forced(&r), 0);
    r.memory_path = CRUX_MEMORY_PATH_DEVICE; /* device buffers only: sizes unchanged */
    ck_assert_int_eq(crux_request_forced(&r), 0);
    r.handoff = CRUX_HANDOFF_FLAGS;
    ck_assert_int_eq(crux_request_forced(&r), 1);
}
END_TEST

/* What each algorithm takes from a caller's targets, and which the job's
 * arbitration orders. */
START_TEST(needs)
{
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_SMALL), CRUX_NEEDS_GROUP);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_FLAGS), CRUX_NEEDS_GROUP);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_LANES), CRUX_NEEDS_ENGINE);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_DEVICE), CRUX_NEEDS_ENGINE);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_HIER), CRUX_NEEDS_LAYOUT | CRUX_NEEDS_CHANNEL);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_HIER_SEQUENTIAL),
                      CRUX_NEEDS_LAYOUT | CRUX_NEEDS_CHANNEL);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_HIER_SMALL), CRUX_NEEDS_LAYOUT);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_FALLBACK), 0);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_HOST_STAGED), 0);
    ck_assert_uint_eq(crux_alg_needs(CRUX_ALG_COUNT), 0);
    ck_assert_uint_eq(crux_alg_needs((crux_alg_t)-1), 0);
    for (int a = 0; a < CRUX_ALG_COUNT; a++) {
        int small = a == CRUX_ALG_SMALL || a == CRUX_ALG_HIER_SMALL || a == CRUX_ALG_FALLBACK;
        ck_assert_int_eq(crux_alg_arbitrated((crux_alg_t)a), !small);
    }
}
END_TEST

/* The memo: a small call's algorithm kept for the next call of the same
 * handles, none for another datatype or op, a size past the small
 * Allreduce's, or bounds that give none; handles without a translation
 * remembered as the caller's own. */
START_TEST(memo)
{
    static const int dt1, dt2, op1, op2; /* the caller's handles */
    crux_select_memo_t m = CRUX_SELECT_MEMO_INIT;
    crux_select_bounds_t b = { 0, 4096, 0 }, none = { 0, 0, 0 };
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 8, &dt1, &op1), CRUX_ALG_COUNT);
    crux_select_memo_note(&m, &b, 8, &dt1, &op1, CRUX_DT_FLOAT, CRUX_OP_SUM, CRUX_ALG_SMALL);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 8, &dt1, &op1), CRUX_ALG_SMALL);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 4096, &dt1, &op1), CRUX_ALG_SMALL);
    ck_assert_int_eq(m.dtype, CRUX_DT_FLOAT);
    ck_assert_int_eq(m.op, CRUX_OP_SUM);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 4097, &dt1, &op1), CRUX_ALG_COUNT);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 8, &dt2, &op1), CRUX_ALG_COUNT);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 8, &dt1, &op2), CRUX_ALG_COUNT);
    ck_assert_int_eq(crux_select_memo_alg(&m, &none, 8, &dt1, &op1), CRUX_ALG_COUNT);
    /* a large call leaves the memo as it was; so does an empty one */
    crux_select_memo_note(&m, &b, 8192, &dt2, &op2, CRUX_DT_INT32, CRUX_OP_MAX, CRUX_ALG_FLAGS);
    crux_select_memo_note(&m, &b, 0, &dt2, &op2, CRUX_DT_INT32, CRUX_OP_MAX, CRUX_ALG_FLAGS);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 8, &dt1, &op1), CRUX_ALG_SMALL);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 8, &dt2, &op2), CRUX_ALG_COUNT);
    /* the last small call's handles replace the earlier ones */
    crux_select_memo_note(&m, &b, 64, &dt2, &op2, CRUX_DT_COUNT, CRUX_OP_COUNT, CRUX_ALG_FALLBACK);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 8, &dt2, &op2), CRUX_ALG_FALLBACK);
    ck_assert_int_eq(crux_select_memo_alg(&m, &b, 8, &dt1, &op1), CRUX_ALG_COUNT);
}
END_TEST

/* crux_coll_check: the defaults pass; every value out of range is named,
 * all in one pass; a chunk is judged against a stage that is in range
 * only; a stage larger than the node's processes can map in the
 * directory's free space is refused, saying so, and not checked where the
 * directory cannot be looked at. */
typedef struct {
    char names[256];
    char last_why[256];
    int count;
} refused_t;

static void refuse(void *arg, const char *name, const char *value, const char *why)
{
    refused_t *r = arg;
    (void)value;
    r->count++;
    strncat(r->names, name, sizeof(r->names) - strlen(r->names) - 2);
    strcat(r->names, " ");
    snprintf(r->last_why, sizeof(r->last_why), "%s", why);
}

START_TEST(check)
{
    crux_coll_config_t c = CRUX_COLL_CONFIG_DEFAULT;
    const crux_coll_config_t defaults = CRUX_COLL_CONFIG_DEFAULT;
    crux_select_sizes_t z = CRUX_SELECT_SIZES_DEFAULT;
    refused_t r = { "", "", 0 };
    ck_assert_int_eq(crux_coll_check(&c, &z, CRUX_HIER_DEPTH_DEFAULT, 0, NULL, refuse, &r), 1);
    ck_assert_int_eq(r.count, 0);
    ck_assert_int_eq(crux_coll_check(&c, &z, CRUX_HIER_MAX_DEPTH, 5, "/nonexistent", refuse, &r),
                     1);
    c.chunk_size = 63;
    c.small_max_bytes = CRUX_SMALL_MAX_BYTES + 1;
    c.small_whole_max_bytes = CRUX_SMALL_MAX_BYTES + 1;
    z.hier_small_max_bytes = CRUX_SMALL_MAX_BYTES + 1;
    ck_assert_int_eq(crux_coll_check(&c, &z, CRUX_HIER_MAX_DEPTH + 1, -1, NULL, refuse, &r), 0);
    ck_assert_str_eq(r.names, "chunk_size small_max_bytes hier_small_max_bytes "
                              "small_whole_max_bytes group_size hier_depth ");
    c = defaults;
    z = (crux_select_sizes_t)CRUX_SELECT_SIZES_DEFAULT;
    r = (refused_t){ "", "", 0 };
    c.stage_size = 65536;
    c.chunk_size = 65537; /* above the stage */
    ck_assert_int_eq(crux_coll_check(&c, &z, 0, 0, NULL, refuse, &r), 0);
    ck_assert_str_eq(r.names, "chunk_size ");
    r = (refused_t){ "", "", 0 };
    c.stage_size = 100; /* the stage's fault alone: the chunk not blamed */
    c.chunk_size = defaults.chunk_size;
    ck_assert_int_eq(crux_coll_check(&c, &z, 0, 0, NULL, refuse, &r), 0);
    ck_assert_str_eq(r.names, "stage_size ");
    r = (refused_t){ "", "", 0 };
    c.stage_size = (size_t)1 << 40;
    c.local_procs = 1 << 30;
    ck_assert_int_eq(crux_coll_check(&c, &z, 0, 0, "/tmp", refuse, &r), 0);
    ck_assert_str_eq(r.names, "stage_size ");
    ck_assert_ptr_nonnull(strstr(r.last_why, "1073741824 processes on this node need"));
    ck_assert_ptr_nonnull(strstr(r.last_why, "/tmp has"));
    r = (refused_t){ "", "", 0 };
    ck_assert_int_eq(crux_coll_check(&c, &z, 0, 0, "/nonexistent", refuse, &r), 1);
}
END_TEST

/* The axes by index, and a request from one value per axis: the older
 * knob's point, the axes not left at auto on top; values out of range
 * count as auto. */
START_TEST(from_values)
{
    static const char *const axes[] = { "algorithm", "topology", "handoff", "memory_path" };
    for (int a = 0; a < CRUX_REQUEST_AXES; a++) {
        ck_assert_str_eq(crux_request_axis(a), axes[a]);
        ck_assert_ptr_nonnull(crux_request_values(crux_request_axis(a)));
    }
    ck_assert_ptr_null(crux_request_axis(-1));
    ck_assert_ptr_null(crux_request_axis(CRUX_REQUEST_AXES));
    const crux_request_t autos = CRUX_REQUEST_AUTO;
    int v[CRUX_REQUEST_AXES] = { 0, 0, 0, 0 };
    crux_request_t r = crux_request_from_values(v);
    ck_assert(memcmp(&r, &autos, sizeof(r)) == 0);
    v[0] = 7; /* engine: flat over the lanes; the axes at auto keep it */
    r = crux_request_from_values(v);
    ck_assert_int_eq(r.topology, CRUX_TOPOLOGY_FLAT);
    ck_assert_int_eq(r.handoff, CRUX_HANDOFF_LANES);
    v[2] = 1; /* ... the hand-off set on its own goes on top */
    v[3] = 2;
    r = crux_request_from_values(v);
    ck_assert_int_eq(r.topology, CRUX_TOPOLOGY_FLAT);
    ck_assert_int_eq(r.handoff, CRUX_HANDOFF_FLAGS);
    ck_assert_int_eq(r.memory_path, CRUX_MEMORY_PATH_HOST_STAGED);
    int junk[CRUX_REQUEST_AXES] = { -1, 99, 3, -5 };
    r = crux_request_from_values(junk);
    ck_assert(memcmp(&r, &autos, sizeof(r)) == 0);
    int fallback[CRUX_REQUEST_AXES] = { 3, 0, 0, 0 };
    ck_assert_int_eq(crux_request_from_values(fallback).fallback, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coll_select");
    TCase *tc = tcase_create("select");
    tcase_add_test(tc, every_point);
    tcase_add_test(tc, small_calls);
    tcase_add_test(tc, bounds);
    tcase_add_test(tc, sizes_select);
    tcase_add_test(tc, after_refusal);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, device);
    tcase_add_test(tc, every_request);
    tcase_add_test(tc, axis_names);
    tcase_add_test(tc, older_knob);
    tcase_add_test(tc, bad_names);
    tcase_add_test(tc, needs);
    tcase_add_test(tc, memo);
    tcase_add_test(tc, check);
    tcase_add_test(tc, from_values);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(suite)

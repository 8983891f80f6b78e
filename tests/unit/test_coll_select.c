/* crux_allreduce_select: every request against every set of capabilities,
 * and that a capability is asked for only when the choice needs it (asking
 * may build a group, which is collective and costly). */
#include <string.h>

#include "check_main.h"
#include "coll/crux_coll.h"

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

#define BIT(cap) (1u << (cap))
#define ALL                                                                                 \
    (BIT(CRUX_CAP_GROUP) | BIT(CRUX_CAP_CMA) | BIT(CRUX_CAP_ENGINE) | BIT(CRUX_CAP_LANES) | \
     BIT(CRUX_CAP_LAYOUT) | BIT(CRUX_CAP_DEVICE_KERNEL))

static crux_alg_t pick(int device, int all_local, crux_alg_t forced, size_t cma_min, size_t bytes,
                       caps_t *c, const char **why)
{
    crux_select_query_t q = {
        .device = device,
        .all_local = all_local,
        .bytes = bytes,
        .forced = forced,
        .cma_min_bytes = cma_min,
        .has = has,
        .arg = c,
    };
    return crux_allreduce_select(&q, why);
}

START_TEST(auto_one_node)
{
    const char *why;
    caps_t c = { ALL, 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_AUTO, 0, 1 << 20, &c, &why), CRUX_ALG_ENGINE);
    ck_assert_str_eq(why, "");
    /* no lanes: the staged algorithm, never the engine's transfers */
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_LANES), 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_AUTO, 0, 1 << 20, &c, &why), CRUX_ALG_STAGED);
    /* single copy asked for from 64 KiB: lanes are not even asked for */
    c = (caps_t){ ALL, 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_AUTO, 65536, 1 << 20, &c, &why), CRUX_ALG_CMA);
    ck_assert_uint_eq(c.asked & BIT(CRUX_CAP_LANES), 0);
    c = (caps_t){ ALL, 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_AUTO, 65536, 4096, &c, &why), CRUX_ALG_STAGED);
    /* no shared memory at all: fall back, and say why */
    c = (caps_t){ 0, 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_AUTO, 0, 1 << 20, &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "no shared memory");
}
END_TEST

START_TEST(auto_across_nodes)
{
    const char *why;
    caps_t c = { ALL, 0 };
    ck_assert_int_eq(pick(0, 0, CRUX_ALG_AUTO, 0, 1 << 20, &c, &why), CRUX_ALG_HIER);
    ck_assert_uint_eq(c.asked, BIT(CRUX_CAP_LAYOUT)); /* nothing flat is built */
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_LAYOUT), 0 };
    ck_assert_int_eq(pick(0, 0, CRUX_ALG_AUTO, 0, 1 << 20, &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "no usable groups");
}
END_TEST

START_TEST(forced)
{
    const char *why;
    caps_t c = { ALL, 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_FALLBACK, 0, 1 << 20, &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_uint_eq(c.asked, 0);
    c = (caps_t){ ALL, 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_HIER_SEQUENTIAL, 0, 64, &c, &why),
                     CRUX_ALG_HIER_SEQUENTIAL);
    c = (caps_t){ ALL, 0 };
    ck_assert_int_eq(pick(0, 0, CRUX_ALG_STAGED, 0, 64, &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "the flat algorithm needs every rank on one node");
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_CMA), 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_CMA, 0, 64, &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "cma does not work here");
    /* forcing the engine needs the engine, not its lanes */
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_LANES), 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_ENGINE, 0, 64, &c, &why), CRUX_ALG_ENGINE);
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_ENGINE), 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_ENGINE, 0, 64, &c, &why), CRUX_ALG_FALLBACK);
    ck_assert_str_eq(why, "no multipath engine");
    /* flat: single copy only from cma_min_bytes up, and only where it works */
    c = (caps_t){ ALL, 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_FLAT, 0, 1 << 20, &c, &why), CRUX_ALG_STAGED);
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_CMA), 0 };
    ck_assert_int_eq(pick(0, 1, CRUX_ALG_FLAT, 1, 1 << 20, &c, &why), CRUX_ALG_STAGED);
}
END_TEST

/* Device buffers never fall back to a module that is not CUDA-aware. */
START_TEST(device)
{
    const char *why;
    caps_t c = { ALL, 0 };
    ck_assert_int_eq(pick(1, 1, CRUX_ALG_AUTO, 0, 1 << 20, &c, &why), CRUX_ALG_DEVICE);
    for (crux_alg_t forced = 0; forced < CRUX_ALG_COUNT; forced++) {
        for (unsigned have = 0; have <= ALL; have++) {
            for (int local = 0; local <= 1; local++) {
                c = (caps_t){ have, 0 };
                crux_alg_t alg = pick(1, local, forced, 0, 1 << 20, &c, &why);
                ck_assert(alg == CRUX_ALG_DEVICE || alg == CRUX_ALG_DEVICE_STAGED);
                ck_assert(alg == CRUX_ALG_DEVICE_STAGED || local);
            }
        }
    }
    c = (caps_t){ ALL & ~BIT(CRUX_CAP_DEVICE_KERNEL), 0 };
    ck_assert_int_eq(pick(1, 1, CRUX_ALG_AUTO, 0, 1 << 20, &c, &why), CRUX_ALG_DEVICE_STAGED);
    ck_assert_str_eq(why, "no GPU kernel for this datatype and op");
}
END_TEST

/* Host buffers: never AUTO or FLAT, whatever is asked and available. */
START_TEST(always_concrete)
{
    const char *why;
    for (crux_alg_t forced = 0; forced < CRUX_ALG_COUNT; forced++) {
        for (unsigned have = 0; have <= ALL; have++) {
            for (int local = 0; local <= 1; local++) {
                caps_t c = { have, 0 };
                crux_alg_t alg = pick(0, local, forced, 4096, 1 << 20, &c, &why);
                ck_assert(alg != CRUX_ALG_AUTO && alg != CRUX_ALG_FLAT && alg < CRUX_ALG_COUNT);
                ck_assert(alg != CRUX_ALG_FALLBACK || why[0] != '\0' ||
                          forced == CRUX_ALG_FALLBACK);
                ck_assert_str_ne(crux_alg_name(alg), "?");
            }
        }
    }
    ck_assert_str_eq(crux_alg_name((crux_alg_t)-1), "?");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coll_select");
    TCase *tc = tcase_create("select");
    tcase_add_test(tc, auto_one_node);
    tcase_add_test(tc, auto_across_nodes);
    tcase_add_test(tc, forced);
    tcase_add_test(tc, device);
    tcase_add_test(tc, always_concrete);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(suite)

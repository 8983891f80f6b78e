/* Helpers for the multipath transport tests: engines, patterns, and a check
 * that a transfer landed every byte exactly once. */
#ifndef CRUX_TESTS_TL_TEST_UTIL_H
#define CRUX_TESTS_TL_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/fork_group.h"
#include "ucx_tl/crux_tl.h"

typedef struct {
    crux_tl_context_t *ctx;
    crux_tl_engine_t *engine;
} tl_engine_t;

static int tl_engine_open(tl_engine_t *t, unsigned kinds, const crux_tl_model_t *models,
                          unsigned nmodels, const char *calib_path)
{
    crux_tl_engine_config_t cfg = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    cfg.max_peers = 4;
    cfg.kinds = kinds;
    cfg.models = models;
    cfg.nmodels = nmodels;
    cfg.calib_path = calib_path;
    if (crux_tl_context_open(NULL, &t->ctx) != CRUX_OK) {
        return -1;
    }
    if (crux_tl_engine_create(t->ctx, &cfg, &t->engine) != CRUX_OK) {
        crux_tl_context_close(t->ctx);
        return -1;
    }
    return 0;
}

static void tl_engine_close(tl_engine_t *t)
{
    crux_tl_engine_destroy(t->engine);
    crux_tl_context_close(t->ctx);
}

/* Connect the two members of a forked group to each other. */
static crux_tl_pair_t *tl_connect(fork_group_member_t *m, tl_engine_t *t)
{
    unsigned char card[FORK_GROUP_SLOT], cards[2][FORK_GROUP_SLOT];
    size_t size = crux_tl_engine_card_size(t->engine);
    crux_tl_pair_t *pair = NULL;
    if (size > FORK_GROUP_SLOT || crux_tl_engine_card_pack(t->engine, card) != CRUX_OK ||
        fork_group_allgather(card, cards, FORK_GROUP_SLOT, m) != 0 ||
        crux_tl_pair_connect(t->engine, m->rank, 1 - m->rank, cards[1 - m->rank], &pair) !=
            CRUX_OK) {
        return NULL;
    }
    fork_group_barrier(m); /* both connected before either sends */
    return pair;
}

static inline unsigned char tl_pattern(size_t i, unsigned salt)
{
    return (unsigned char)((i * 2654435761u) >> 13 ^ salt ^ (i >> 8));
}

static void tl_fill(unsigned char *p, size_t n, unsigned salt)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = tl_pattern(i, salt);
    }
}

/* The destination held the complement of the source's pattern, so a byte
 * that holds the pattern was written; the channels' landed bytes sum to
 * the size, so no byte was written twice (by pigeonhole).  Returns 0 when
 * all is well, else a code saying what was not. */
static int tl_landed_once(const unsigned char *dst, size_t n, unsigned salt,
                          const crux_tl_xfer_t *recv)
{
    for (size_t i = 0; i < n; i++) {
        if (dst[i] != tl_pattern(i, salt)) {
            fprintf(stderr, "# byte %zu of %zu wrong\n", i, n);
            return 1;
        }
    }
    const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(recv);
    size_t sum = 0;
    for (unsigned s = 0; s < st->nstripes; s++) {
        sum += st->stripe[s].bytes;
    }
    if (sum != n) {
        fprintf(stderr, "# %zu bytes landed for %zu\n", sum, n);
        return 2;
    }
    return 0;
}

static void tl_prepare_dst(unsigned char *dst, size_t n, unsigned salt)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = (unsigned char)~tl_pattern(i, salt);
    }
}

#endif

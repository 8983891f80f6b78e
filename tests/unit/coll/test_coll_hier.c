/* The hierarchical three-step Allreduce in forked processes, over
 * libcrux_coll's shared-memory group and over its engine group's lanes: G groups of L
 * members; member i of every group forms a "cross" group, and the
 * inter-group step is a flat Allreduce over it.  Every layout, pipelined
 * and sequential, in and out of place, against the exact sum; identical bits
 * everywhere; and an inter-group step that fails. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/crux_coll.h"
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

typedef struct {
    int groups, per_group;
    unsigned depth;
    size_t count;
    int in_place;
    int fail_inter;   /* the inter-group step of member 0 fails */
    uint64_t *hashes; /* shared, one per member, or NULL */
    int lanes;        /* within groups over the engine group's lanes */
} hier_case_t;

typedef struct {
    crux_coll_group_t *cross;
    int fail;
    int pending; /* a started step not yet tested */
} inter_state_t;

static crux_status_t inter_start(void *arg, void *buf, size_t count, void **request)
{
    inter_state_t *st = arg;
    *request = st;
    st->pending = 1;
    if (st->fail) {
        return CRUX_ERR_IO;
    }
    return crux_coll_allreduce(st->cross, NULL, buf, count, CRUX_DT_FLOAT, CRUX_OP_SUM);
}

/* Reports "not yet" once per step, to exercise the polling path. */
static crux_status_t inter_test(void *arg, void *request, int *done)
{
    inter_state_t *st = request;
    *done = !st->pending;
    st->pending = 0;
    return CRUX_OK;
}

static float value(int member, size_t i)
{
    return (float)((member * 5 + (int)(i % 997)) % 11) - 5.0f;
}

static int run_hier(fork_group_member_t *m, void *arg)
{
    hier_case_t *c = arg;
    int group = m->rank / c->per_group, local = m->rank % c->per_group;
    fork_subgroup_t local_sub, cross_sub;
    if (fork_subgroup_init(&local_sub, m, group, local) != 0 ||
        fork_subgroup_init(&cross_sub, m, local, group) != 0) {
        return 2;
    }
    crux_coll_config_t config = CRUX_COLL_CONFIG_DEFAULT;
    config.stage_size = 128u << 10; /* several rounds */
    config.chunk_size = 8192;       /* several chunks per shard */
    crux_coll_oob_t local_oob = fork_subgroup_oob(&local_sub);
    crux_coll_group_t *g = NULL, *cross;
    crux_engine_group_t *dg = NULL;
    crux_engine_group_config_t engine_config = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    engine_config.host_chunk_size = 8192; /* several chunks per shard */
    engine_config.calibrate = 0;
    engine_config.engine.kinds = CRUX_TL_KINDS_HOST;
    engine_config.engine.calib_path = "";
    if (c->lanes ? crux_engine_group_create(&local_oob, &engine_config, &dg) != CRUX_OK
                 : crux_coll_group_create(&local_oob, &config, &g) != CRUX_OK) {
        return 3;
    }
    crux_coll_oob_t cross_oob = fork_subgroup_oob(&cross_sub);
    if (crux_coll_group_create(&cross_oob, NULL, &cross) != CRUX_OK) {
        return 4;
    }
    inter_state_t st = { cross, c->fail_inter && m->rank == 0, 0 };
    crux_coll_inter_t inter = { inter_start, inter_test, &st };

    float *s = malloc((c->count + 1) * sizeof(float)), *r = malloc((c->count + 1) * sizeof(float));
    for (size_t i = 0; i <= c->count; i++) {
        s[i] = value(m->rank, i);
        r[i] = c->in_place ? s[i] : -77.0f;
    }
    crux_status_t status =
        c->lanes ? crux_engine_allreduce_hier(dg, &inter, c->depth, c->in_place ? NULL : s, r,
                                              c->count, CRUX_DT_FLOAT, CRUX_OP_SUM)
                 : crux_coll_allreduce_hier(g, &inter, c->depth, c->in_place ? NULL : s, r,
                                            c->count, CRUX_DT_FLOAT, CRUX_OP_SUM);
    if (c->lanes && c->per_group == 1) {
        /* a group of one has no lanes: refused, nothing done */
        return status == CRUX_ERR_UNSUPPORTED && r[0] == (c->in_place ? s[0] : -77.0f) ? 0 : 9;
    }
    if (c->fail_inter) {
        /* the failing member reports its own error; the others must not hang */
        return status == CRUX_OK ? 5 : 0;
    }
    if (status != CRUX_OK) {
        fprintf(stderr, "member %d: status %d (%s)\n", m->rank, (int)status,
                crux_status_string(status));
        return 6;
    }
    int size = c->groups * c->per_group;
    for (size_t i = 0; i < c->count; i++) {
        float e = 0;
        for (int p = 0; p < size; p++) {
            e += value(p, i);
        }
        if (r[i] != e) {
            return 7;
        }
    }
    if (r[c->count] != (c->in_place ? s[c->count] : -77.0f)) {
        return 8;
    }
    if (c->hashes != NULL) {
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < c->count * sizeof(float); i++) {
            h = (h ^ ((unsigned char *)r)[i]) * 1099511628211ull;
        }
        c->hashes[m->rank] = h;
    }
    crux_coll_group_destroy(cross);
    crux_coll_group_destroy(g);
    crux_engine_group_destroy(dg);
    free(s);
    free(r);
    return 0;
}

static const int layouts[][2] = { { 2, 2 }, { 3, 2 }, { 2, 3 }, { 4, 1 }, { 1, 4 } };

/* _i: the layout, then staging (even) or lanes (odd); every depth, count
 * and placement. */
START_TEST(test_hier_every_layout)
{
    const unsigned depths[] = { 0, 1, 4 };
    const size_t counts[] = { 1, 5, 1000, 40009, 200003 };
    int layout = _i / 2, lanes = _i % 2;
    for (size_t d = 0; d < 3; d++) {
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            for (int in_place = 0; in_place < 2; in_place++) {
                hier_case_t c = { layouts[layout][0],
                                  layouts[layout][1],
                                  depths[d],
                                  counts[k],
                                  in_place,
                                  0,
                                  NULL,
                                  lanes };
                ck_assert_msg(fork_group_run(c.groups * c.per_group, run_hier, &c) == 0,
                              "%d x %d depth %u count %zu %s%s", c.groups, c.per_group, c.depth,
                              c.count, in_place ? "in place" : "", lanes ? " over lanes" : "");
            }
        }
    }
}
END_TEST

/* _i: staging or lanes */
START_TEST(test_hier_identical_bits)
{
    uint64_t *hashes = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    hier_case_t c = { 3, 2, 4, 300007, 0, 0, hashes, _i };
    ck_assert_int_eq(fork_group_run(6, run_hier, &c), 0);
    for (int i = 1; i < 6; i++) {
        ck_assert_msg(hashes[i] == hashes[0], "member %d differs", i);
    }
    munmap(hashes, 4096);
}
END_TEST

START_TEST(test_hier_failing_inter_step_is_an_error)
{
    hier_case_t c = { 2, 2, 2, 100000, 0, 1, NULL, _i };
    ck_assert_int_eq(fork_group_run(4, run_hier, &c), 0);
}
END_TEST

static Suite *hier_suite(void)
{
    Suite *s = suite_create("coll_hier");
    TCase *tc = tcase_create("hier");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_hier_every_layout, 0, 2 * sizeof(layouts) / sizeof(layouts[0]));
    tcase_add_loop_test(tc, test_hier_identical_bits, 0, 2);
    tcase_add_loop_test(tc, test_hier_failing_inter_step_is_an_error, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(hier_suite)

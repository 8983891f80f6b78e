/* The hierarchical Allreduce over a layout (crux_layout_t) in forked
 * members, G rank groups of L members, no MPI: which way the inter-group
 * step goes (crux_layout_step: the channel between nodes when the layout
 * has one, else the caller's blocking Allreduce when the cross group
 * shares this node, else its nonblocking one), seen from which of the
 * caller's operations ran, over a shared-memory group and over the
 * engine's lanes, against the exact sum; the small Allreduce's step, the
 * caller's blocking one always; and a layout broken when its group is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/crux_coll.h"
#include "coll/crux_net.h"
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

typedef struct {
    crux_layout_step_t step; /* the layout's: a TCP channel, cross_local, or neither */
    int lanes;               /* within the rank groups over the engine's lanes */
} step_case_t;

/* The caller's own Allreduce over the cross group (a shared-memory group
 * of its members), counting which of its operations ran. */
typedef struct {
    crux_coll_group_t *cross;
    int reduces, starts, tests;
} cross_state_t;

static crux_status_t cross_reduce(void *arg, void *buf, size_t count)
{
    cross_state_t *st = arg;
    st->reduces++;
    return crux_coll_allreduce(st->cross, NULL, buf, count, CRUX_DT_INT32, CRUX_OP_SUM);
}

static crux_status_t cross_start(void *arg, void *buf, size_t count, void **request)
{
    cross_state_t *st = arg;
    st->starts++;
    *request = st;
    return crux_coll_allreduce(st->cross, NULL, buf, count, CRUX_DT_INT32, CRUX_OP_SUM);
}

/* "not yet" at every other test, to exercise the polling */
static crux_status_t cross_test(void *arg, void *request, int *done)
{
    cross_state_t *st = arg;
    (void)request;
    *done = st->tests++ % 2;
    return CRUX_OK;
}

static int32_t value(int member, size_t i)
{
    return (int32_t)((member * 7 + (int)(i % 1009)) % 13) - 6;
}

/* The exact sum of every member's input in r[0..count). */
static int sums(const int32_t *r, size_t count, int size)
{
    for (size_t i = 0; i < count; i++) {
        int32_t e = 0;
        for (int p = 0; p < size; p++) {
            e += value(p, i);
        }
        if (r[i] != e) {
            return 0;
        }
    }
    return 1;
}

enum { GROUPS = 2, PER_GROUP = 2, COUNT = 50021, SMALL = 37 };

static int step_body(fork_group_member_t *m, void *arg)
{
    const step_case_t *c = arg;
    alarm(60);
    int group = m->rank / PER_GROUP, local = m->rank % PER_GROUP;
    fork_subgroup_t local_sub, cross_sub;
    if (fork_subgroup_init(&local_sub, m, group, local) != 0 ||
        fork_subgroup_init(&cross_sub, m, local, group) != 0) {
        return 2;
    }
    crux_coll_oob_t local_oob = fork_subgroup_oob(&local_sub);
    crux_coll_oob_t cross_oob = fork_subgroup_oob(&cross_sub);
    crux_layout_t l = { .groups = GROUPS, .per_group = PER_GROUP };
    crux_coll_config_t config = CRUX_COLL_CONFIG_DEFAULT;
    config.stage_size = 64u << 10;
    config.chunk_size = 8192;
    config.small_max_bytes = 1024;
    crux_engine_group_config_t engine_config = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    engine_config.host_chunk_size = 8192;
    engine_config.calibrate = 0;
    engine_config.engine.kinds = CRUX_TL_KINDS_HOST;
    engine_config.engine.calib_path = "";
    crux_coll_group_t *g;
    if (crux_coll_group_create(&local_oob, &config, &g) != CRUX_OK ||
        (c->lanes && crux_engine_group_create(&local_oob, &engine_config, &l.lanes) != CRUX_OK)) {
        return 3;
    }
    l.small = g;
    l.group = c->lanes ? NULL : g;
    cross_state_t st = { 0 };
    char err[256];
    if (crux_coll_group_create(&cross_oob, NULL, &st.cross) != CRUX_OK ||
        (c->step == CRUX_LAYOUT_STEP_NET &&
         crux_net_tcp_create(&cross_oob, "lo", 5000, NULL, (crux_net_t **)&l.net, err,
                             sizeof(err)) != CRUX_OK)) {
        return 4;
    }
    l.cross_local = c->step == CRUX_LAYOUT_STEP_BLOCKING;
    if (crux_layout_step(&l) != c->step || crux_layout_broken(&l)) {
        return 5;
    }
    const crux_layout_cross_t cross = { cross_reduce, cross_start, cross_test, &st };
    int32_t *s = malloc(COUNT * sizeof(*s)), *r = malloc(COUNT * sizeof(*r));
    for (size_t i = 0; i < COUNT; i++) {
        s[i] = value(m->rank, i);
    }
    crux_status_t status =
        crux_layout_allreduce(&l, &cross, 2, s, r, COUNT, CRUX_DT_INT32, CRUX_OP_SUM);
    if (status != CRUX_OK || !sums(r, COUNT, m->size)) {
        fprintf(stderr, "member %d: %s\n", m->rank, crux_status_string(status));
        return 6;
    }
    /* the way chosen, and no other */
    int want_reduces = c->step == CRUX_LAYOUT_STEP_BLOCKING,
        want_starts = c->step == CRUX_LAYOUT_STEP_NONBLOCKING;
    if ((st.reduces > 0) != want_reduces || (st.starts > 0) != want_starts) {
        fprintf(stderr, "member %d: %d blocking, %d nonblocking\n", m->rank, st.reduces, st.starts);
        return 7;
    }
    /* the small Allreduce: member 0 of each rank group steps, blocking */
    st.reduces = st.starts = 0;
    fork_group_barrier(m);
    status = crux_layout_allreduce_small(&l, &cross, s, r, SMALL, CRUX_DT_INT32, CRUX_OP_SUM);
    if (status != CRUX_OK || !sums(r, SMALL, m->size) || st.reduces != (local == 0 ? 1 : 0) ||
        st.starts != 0) {
        return 8;
    }
    /* without a small group: refused, nothing done */
    crux_layout_t none = l;
    none.small = NULL;
    if (crux_layout_allreduce_small(&none, &cross, s, r, SMALL, CRUX_DT_INT32, CRUX_OP_SUM) !=
        CRUX_ERR_UNSUPPORTED) {
        return 9;
    }
    crux_net_destroy(l.net);
    crux_coll_group_destroy(st.cross);
    crux_engine_group_destroy(l.lanes);
    crux_coll_group_destroy(g);
    free(s);
    free(r);
    return 0;
}

/* _i: the step (channel, blocking, nonblocking), then staging (even) or
 * lanes (odd). */
START_TEST(step_chosen)
{
    static const crux_layout_step_t steps[] = { CRUX_LAYOUT_STEP_NET, CRUX_LAYOUT_STEP_BLOCKING,
                                                CRUX_LAYOUT_STEP_NONBLOCKING };
    step_case_t c = { steps[_i / 2], _i % 2 };
    ck_assert_msg(fork_group_run(GROUPS * PER_GROUP, step_body, &c) == 0, "step %d%s", c.step,
                  c.lanes ? " over lanes" : "");
}
END_TEST

/* The choice on its own: the channel first, whatever else is so. */
START_TEST(step_order)
{
    crux_layout_t l = { 0 };
    ck_assert_int_eq(crux_layout_step(&l), CRUX_LAYOUT_STEP_NONBLOCKING);
    l.cross_local = 1;
    ck_assert_int_eq(crux_layout_step(&l), CRUX_LAYOUT_STEP_BLOCKING);
    l.net = (struct crux_net *)&l; /* never entered */
    ck_assert_int_eq(crux_layout_step(&l), CRUX_LAYOUT_STEP_NET);
    l.cross_local = 0;
    ck_assert_int_eq(crux_layout_step(&l), CRUX_LAYOUT_STEP_NET);
    ck_assert_int_eq(crux_layout_broken(&(crux_layout_t){ 0 }), 0);
}
END_TEST

/* A layout whose group a call of another shape broke: broken on every
 * member; before, not. */
static int broken_body(fork_group_member_t *m, void *arg)
{
    (void)arg;
    alarm(30);
    crux_coll_config_t config = CRUX_COLL_CONFIG_DEFAULT;
    config.stage_size = 64u << 10;
    config.small_max_bytes = 1024;
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, &config, &g) != CRUX_OK) {
        return 2;
    }
    crux_layout_t l = { .group = g, .small = g, .cross_local = 1, .groups = 2, .per_group = 3 };
    int32_t x[8] = { 0 };
    if (crux_layout_broken(&l) ||
        crux_coll_allreduce_small(g, NULL, x, 4, CRUX_DT_INT32, CRUX_OP_SUM) != CRUX_OK ||
        crux_layout_broken(&l)) {
        return 3;
    }
    (void)crux_coll_allreduce_small(g, NULL, x, m->rank == 1 ? 5 : 4, CRUX_DT_INT32, CRUX_OP_SUM);
    if (crux_coll_allreduce_small(g, NULL, x, 4, CRUX_DT_INT32, CRUX_OP_SUM) != CRUX_ERR_PEER ||
        !crux_layout_broken(&l)) {
        return 4;
    }
    crux_coll_group_destroy(g);
    return 0;
}

START_TEST(broken)
{
    ck_assert_int_eq(fork_group_run(3, broken_body, NULL), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("layout_step");
    TCase *t = tcase_create("layout_step");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, step_order);
    tcase_add_loop_test(t, step_chosen, 0, 6);
    tcase_add_test(t, broken);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* The hierarchical Allreduce's layout, planned and chosen in forked
 * members with no MPI: the rank groups crux_layout_plan makes from where
 * each member runs (node and CPU package, or rank / N), numbered alike on
 * every member, and whether they allow the algorithm (two or more, equal,
 * of more than one); and the hand-off crux_layout_handoff picks within
 * them (lanes where every group has them, else shared memory, never when a
 * member's rank groups are not ready), with what each member is asked to
 * build and to give up. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll/crux_coll.h"
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

typedef struct {
    int group, group_rank, per_group, groups, smallest, largest, usable;
    int status;
} seen_t;

typedef struct {
    int group_size;
    int node[FORK_GROUP_MAX], package[FORK_GROUP_MAX];
    seen_t *seen; /* shared, per member */
} plan_case_t;

static int plan_body(fork_group_member_t *m, void *arg)
{
    plan_case_t *c = arg;
    alarm(30);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_layout_plan_t p;
    crux_status_t st = crux_layout_plan(
        &oob, c->group_size, (crux_layout_place_t){ c->node[m->rank], c->package[m->rank] }, &p);
    c->seen[m->rank] = (seen_t){ p.group,    p.group_rank, p.per_group, p.groups,
                                 p.smallest, p.largest,    p.usable,    st };
    return 0;
}

static seen_t *plan(plan_case_t *c, int size)
{
    c->seen = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(c->seen, MAP_FAILED);
    ck_assert_int_eq(fork_group_run(size, plan_body, c), 0);
    for (int r = 0; r < size; r++) {
        ck_assert_int_eq(c->seen[r].status, CRUX_OK);
        /* the same groups and verdict on every member */
        ck_assert_int_eq(c->seen[r].groups, c->seen[0].groups);
        ck_assert_int_eq(c->seen[r].usable, c->seen[0].usable);
        ck_assert_int_eq(c->seen[r].smallest, c->seen[0].smallest);
        ck_assert_int_eq(c->seen[r].largest, c->seen[0].largest);
        /* no two members in one place of one group */
        for (int q = 0; q < r; q++) {
            ck_assert(c->seen[q].group != c->seen[r].group ||
                      c->seen[q].group_rank != c->seen[r].group_rank);
        }
    }
    return c->seen;
}

/* Two nodes (named by their lowest rank) of two packages, ranks in node
 * order: four groups of two, numbered by their first rank. */
START_TEST(nodes_and_packages)
{
    plan_case_t c = { .node = { 0, 0, 0, 0, 4, 4, 4, 4 }, .package = { 0, 0, 1, 1, 0, 0, 1, 1 } };
    seen_t *s = plan(&c, 8);
    for (int r = 0; r < 8; r++) {
        ck_assert_int_eq(s[r].group, r / 2);
        ck_assert_int_eq(s[r].group_rank, r % 2);
        ck_assert_int_eq(s[r].per_group, 2);
    }
    ck_assert(s[0].groups == 4 && s[0].usable);
    munmap(s, 4096);
    /* ranks dealt round-robin over two nodes, packages not told apart:
     * two groups of four, member i of each in cross group i */
    plan_case_t rr = { .node = { 0, 1, 0, 1, 0, 1, 0, 1 } };
    s = plan(&rr, 8);
    for (int r = 0; r < 8; r++) {
        ck_assert_int_eq(s[r].group, r % 2);
        ck_assert_int_eq(s[r].group_rank, r / 2);
    }
    ck_assert(s[0].groups == 2 && s[0].usable && s[0].smallest == 4);
    munmap(s, 4096);
    /* group numbers follow first ranks, not node numbers */
    plan_case_t rev = { .node = { 9, 9, 3, 3, 9, 3 } };
    s = plan(&rev, 6);
    ck_assert(s[0].group == 0 && s[2].group == 1 && s[4].group == 0 && s[5].group == 1);
    ck_assert(s[4].group_rank == 2 && s[5].group_rank == 2);
    munmap(s, 4096);
}
END_TEST

/* By rank / N, whatever the places say. */
START_TEST(by_rank)
{
    plan_case_t c = { .group_size = 2, .node = { 5, 6, 7, 8, 9, 10 } };
    seen_t *s = plan(&c, 6);
    for (int r = 0; r < 6; r++) {
        ck_assert(s[r].group == r / 2 && s[r].group_rank == r % 2);
    }
    ck_assert(s[0].groups == 3 && s[0].usable);
    munmap(s, 4096);
    /* 7 ranks by 3: groups of 3, 3 and 1: not usable, and said so */
    plan_case_t odd = { .group_size = 3 };
    s = plan(&odd, 7);
    ck_assert(s[0].groups == 3 && !s[0].usable && s[0].smallest == 1 && s[0].largest == 3);
    ck_assert(s[6].group == 2 && s[6].per_group == 1);
    munmap(s, 4096);
}
END_TEST

/* What the algorithm cannot run over: one group, groups of one, unequal
 * groups (5 ranks over two nodes), a communicator of one. */
START_TEST(unusable)
{
    plan_case_t one = { .node = { 0, 0, 0, 0 } };
    seen_t *s = plan(&one, 4);
    ck_assert(s[0].groups == 1 && !s[0].usable);
    munmap(s, 4096);
    plan_case_t singles = { .node = { 0, 1, 2, 3 } };
    s = plan(&singles, 4);
    ck_assert(s[0].groups == 4 && !s[0].usable && s[0].largest == 1);
    munmap(s, 4096);
    plan_case_t uneven = { .node = { 0, 0, 0, 3, 3 } };
    s = plan(&uneven, 5);
    ck_assert(s[0].groups == 2 && !s[0].usable && s[0].smallest == 2 && s[0].largest == 3);
    munmap(s, 4096);
    plan_case_t alone = { .node = { 0 } };
    s = plan(&alone, 1);
    ck_assert(s[0].groups == 1 && !s[0].usable);
    munmap(s, 4096);
}
END_TEST

/* ---- the hand-off ---------------------------------------------------- */

typedef struct {
    crux_handoff_t asked;
    int ready[FORK_GROUP_MAX];     /* 0: this member's rank groups could not be made */
    int no_lanes[FORK_GROUP_MAX];  /* 1: its engine group has no lanes */
    int no_shared[FORK_GROUP_MAX]; /* 1: its shared-memory group cannot be had */
    int no_small[FORK_GROUP_MAX];  /* 1: nor the small Allreduce's beside the lanes */
    struct {
        int status, lanes, small;
        int asked_lanes, dropped, asked_shared, asked_small;
    } * seen;
} handoff_case_t;

typedef struct {
    handoff_case_t *c;
    int rank;
} member_t;

static int fake_lanes(void *arg)
{
    member_t *m = arg;
    m->c->seen[m->rank].asked_lanes++;
    return !m->c->no_lanes[m->rank];
}

static void fake_drop(void *arg)
{
    member_t *m = arg;
    m->c->seen[m->rank].dropped++;
}

static int fake_shared(void *arg, int small_only)
{
    member_t *m = arg;
    if (small_only) {
        m->c->seen[m->rank].asked_small++;
        return !m->c->no_small[m->rank];
    }
    m->c->seen[m->rank].asked_shared++;
    return !m->c->no_shared[m->rank];
}

static int handoff_body(fork_group_member_t *fm, void *arg)
{
    handoff_case_t *c = arg;
    alarm(30);
    member_t me = { c, fm->rank };
    crux_coll_oob_t oob = fork_group_oob(fm);
    crux_layout_build_t b = { fake_lanes, fake_drop, fake_shared, &me };
    int lanes = -1, small = -1;
    crux_status_t st =
        crux_layout_handoff(&oob, !c->ready[fm->rank] ? 0 : 1, c->asked, &b, &lanes, &small);
    c->seen[fm->rank].status = st;
    c->seen[fm->rank].lanes = lanes;
    c->seen[fm->rank].small = small;
    return 0;
}

static void handoff(handoff_case_t *c, int size)
{
    c->seen = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(c->seen, MAP_FAILED);
    memset(c->seen, 0, 4096);
    ck_assert_int_eq(fork_group_run(size, handoff_body, c), 0);
    for (int r = 1; r < size; r++) { /* alike on every member */
        ck_assert_int_eq(c->seen[r].status, c->seen[0].status);
        ck_assert_int_eq(c->seen[r].lanes, c->seen[0].lanes);
        ck_assert_int_eq(c->seen[r].small, c->seen[0].small);
    }
}

#define READY .ready = { 1, 1, 1, 1 }

START_TEST(handoffs)
{
    /* every group has lanes: lanes, the small group beside them */
    handoff_case_t c = { CRUX_HANDOFF_AUTO, READY };
    handoff(&c, 4);
    ck_assert(c.seen[0].status == CRUX_OK && c.seen[0].lanes == 1 && c.seen[0].small == 1);
    for (int r = 0; r < 4; r++) {
        ck_assert(c.seen[r].asked_lanes == 1 && c.seen[r].asked_small == 1);
        ck_assert(c.seen[r].dropped == 0 && c.seen[r].asked_shared == 0);
    }
    munmap(c.seen, 4096);
    /* one member without lanes: every member gives up what it built and
     * takes shared memory */
    c = (handoff_case_t){ CRUX_HANDOFF_LANES, READY, .no_lanes = { 0, 0, 1, 0 } };
    handoff(&c, 4);
    ck_assert(c.seen[0].status == CRUX_OK && c.seen[0].lanes == 0 && c.seen[0].small == 0);
    for (int r = 0; r < 4; r++) {
        ck_assert(c.seen[r].dropped == 1 && c.seen[r].asked_shared == 1);
        ck_assert_int_eq(c.seen[r].asked_small, 0);
    }
    munmap(c.seen, 4096);
    /* the flags asked: no engine group built for nothing */
    c = (handoff_case_t){ CRUX_HANDOFF_FLAGS, READY };
    handoff(&c, 4);
    ck_assert(c.seen[0].status == CRUX_OK && c.seen[0].lanes == 0);
    for (int r = 0; r < 4; r++) {
        ck_assert(c.seen[r].asked_lanes == 0 && c.seen[r].asked_shared == 1);
    }
    munmap(c.seen, 4096);
    /* beside the lanes, one member without the small group: none use it */
    c = (handoff_case_t){ CRUX_HANDOFF_AUTO, READY, .no_small = { 0, 0, 0, 1 } };
    handoff(&c, 4);
    ck_assert(c.seen[0].status == CRUX_OK && c.seen[0].lanes == 1 && c.seen[0].small == 0);
    munmap(c.seen, 4096);
}
END_TEST

START_TEST(handoff_refusals)
{
    /* one member's rank groups not made: nothing built anywhere */
    handoff_case_t c = { CRUX_HANDOFF_AUTO, .ready = { 1, 0, 1, 1 } };
    handoff(&c, 4);
    ck_assert_int_eq(c.seen[0].status, CRUX_ERR_UNSUPPORTED);
    for (int r = 0; r < 4; r++) {
        ck_assert(c.seen[r].asked_lanes == 0 && c.seen[r].asked_shared == 0);
    }
    munmap(c.seen, 4096);
    /* no lanes, and one member without shared memory: no hand-off */
    c = (handoff_case_t){ CRUX_HANDOFF_AUTO, READY, .no_lanes = { 1, 1, 1, 1 },
                          .no_shared = { 0, 1, 0, 0 } };
    handoff(&c, 4);
    ck_assert_int_eq(c.seen[0].status, CRUX_ERR_NO_RESOURCE);
    munmap(c.seen, 4096);
    c = (handoff_case_t){ CRUX_HANDOFF_FLAGS, READY, .no_shared = { 0, 0, 0, 1 } };
    handoff(&c, 4);
    ck_assert_int_eq(c.seen[0].status, CRUX_ERR_NO_RESOURCE);
    munmap(c.seen, 4096);
}
END_TEST

/* A rank group's shared-memory group: the caller's configuration with the
 * small Allreduce's slots for the sizes across nodes, no staging area
 * beside the lanes; and a layout built for the flags hand-off is never
 * shared with one that may have lanes. */
START_TEST(group_config)
{
    crux_coll_config_t base = CRUX_COLL_CONFIG_DEFAULT;
    base.small_max_bytes = 1024;
    base.stage_size = 1u << 20;
    crux_select_sizes_t sizes = CRUX_SELECT_SIZES_DEFAULT;
    sizes.hier_small_max_bytes = 32768;
    crux_coll_config_t c = crux_layout_group_config(&base, &sizes, 0);
    ck_assert_uint_eq(c.small_max_bytes, 32768);
    ck_assert_uint_eq(c.stage_size, 1u << 20);
    ck_assert_uint_eq(c.chunk_size, base.chunk_size);
    c = crux_layout_group_config(&base, &sizes, 1);
    ck_assert_uint_eq(c.small_max_bytes, 32768);
    ck_assert_uint_eq(c.stage_size, 0);
    ck_assert_int_ne(crux_layout_variant(CRUX_HANDOFF_FLAGS),
                     crux_layout_variant(CRUX_HANDOFF_AUTO));
    ck_assert_int_eq(crux_layout_variant(CRUX_HANDOFF_LANES),
                     crux_layout_variant(CRUX_HANDOFF_AUTO));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coll_layout");
    TCase *t = tcase_create("layout");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, nodes_and_packages);
    tcase_add_test(t, by_rank);
    tcase_add_test(t, unusable);
    tcase_add_test(t, handoffs);
    tcase_add_test(t, handoff_refusals);
    tcase_add_test(t, group_config);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

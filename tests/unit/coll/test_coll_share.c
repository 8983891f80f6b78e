/* Groups shared between communicators (crux_share_acquire), in forked
 * members with no MPI: the same processes in the same order share one
 * group and build it once; another order, another variant, a member that
 * dropped its group, a broken group or threads calling at once ('alone')
 * build anew, alike on every member; at the limit of CRUX_SHARE_MAX the
 * least recently used group over the same set of processes is released
 * (and its references find it gone), but never a pinned one nor one over
 * another set: then the acquisition fails on every member. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/crux_coll.h"
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

typedef struct {
    int serial; /* agreed by the members at build */
    int broken;
} token_t;

static int builds, destroys; /* this process's */

/* Collective like a real group: the members agree on a serial. */
static crux_status_t build(void *arg, const crux_coll_oob_t *oob, void **group)
{
    (void)arg;
    int mine = ++builds, all[FORK_GROUP_MAX];
    if (oob->allgather(&mine, all, sizeof(mine), oob->arg) != 0) {
        return CRUX_ERR_PEER;
    }
    token_t *t = calloc(1, sizeof(*t));
    t->serial = all[0];
    *group = t;
    return CRUX_OK;
}

static void destroy(void *group)
{
    destroys++;
    free(group);
}

static int is_broken(void *group)
{
    return ((token_t *)group)->broken;
}

static uint64_t names[FORK_GROUP_MAX], reversed[FORK_GROUP_MAX];

static crux_share_request_t request(const crux_coll_oob_t *oob, int kind, int variant)
{
    for (int r = 0; r < oob->size; r++) {
        names[r] = 1000 + (uint64_t)r;
        reversed[r] = 1000 + (uint64_t)(oob->size - 1 - r);
    }
    return (crux_share_request_t){ .oob = oob,
                                   .names = names,
                                   .kind = kind,
                                   .variant = variant,
                                   .build = build,
                                   .destroy = destroy,
                                   .broken = is_broken };
}

/* Acquire; 0 when the status and how are as wanted. */
static int take(const crux_share_request_t *r, crux_share_t **s, crux_status_t want,
                crux_share_how_t want_how)
{
    crux_share_how_t how;
    crux_status_t st = crux_share_acquire(r, s, &how);
    return st != want || how != want_how;
}

#define CHECK(cond, code) \
    if (!(cond)) {        \
        return (code);    \
    }

static int shared_body(fork_group_member_t *m, void *arg)
{
    (void)arg;
    alarm(30);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_share_request_t r = request(&oob, 0, 0);
    crux_share_t *a, *b, *c, *d;
    CHECK(take(&r, &a, CRUX_OK, CRUX_SHARE_BUILT) == 0, 2);
    CHECK(take(&r, &b, CRUX_OK, CRUX_SHARE_SHARED) == 0, 3);
    CHECK(a == b && builds == 1 && crux_share_use(a) == crux_share_use(b), 4);
    /* another order of the same processes, another variant: their own */
    r.names = reversed;
    CHECK(take(&r, &c, CRUX_OK, CRUX_SHARE_BUILT) == 0, 5);
    r.names = names;
    r.variant = 1;
    CHECK(take(&r, &d, CRUX_OK, CRUX_SHARE_BUILT) == 0, 6);
    CHECK(builds == 3 && crux_share_use(c) != crux_share_use(a), 7);
    /* the group goes with its last reference */
    crux_share_release(a, 0);
    CHECK(destroys == 0 && crux_share_use(b) != NULL, 8);
    crux_share_release(b, 0);
    CHECK(destroys == 1, 9);
    crux_share_release(c, 0);
    crux_share_release(d, 0);
    CHECK(destroys == 3, 10);
    /* a kind out of range is refused, alike */
    r.kind = CRUX_SHARE_KINDS;
    crux_share_how_t how;
    CHECK(crux_share_acquire(&r, &a, &how) == CRUX_ERR_INVALID, 11);
    return 0;
}

/* A member that dropped its group proposes none: a new one for all; a
 * broken group is never taken again. */
static int dropped_body(fork_group_member_t *m, void *arg)
{
    (void)arg;
    alarm(30);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_share_request_t r = request(&oob, 1, 0);
    crux_share_t *a, *b, *c, *d;
    CHECK(take(&r, &a, CRUX_OK, CRUX_SHARE_BUILT) == 0, 2);
    if (m->rank == 1) {
        crux_share_release(a, 0);
    }
    CHECK(take(&r, &b, CRUX_OK, CRUX_SHARE_BUILT) == 0, 3);
    CHECK(crux_share_use(b) != (m->rank == 1 ? NULL : crux_share_use(a)), 4);
    /* b broken: the others propose a again, which member 1 dropped: a new
     * one, which is then the one shared */
    ((token_t *)crux_share_use(b))->broken = 1;
    CHECK(take(&r, &c, CRUX_OK, CRUX_SHARE_BUILT) == 0, 5);
    CHECK(take(&r, &d, CRUX_OK, CRUX_SHARE_SHARED) == 0, 6);
    CHECK(c == d, 7);
    /* threads calling at once: nothing shared */
    r.alone = 1;
    crux_share_t *e;
    CHECK(take(&r, &e, CRUX_OK, CRUX_SHARE_BUILT) == 0, 8);
    CHECK(e != c, 9);
    return 0;
}

/* The limit: CRUX_SHARE_MAX groups of a kind; one more releases the least
 * recently used over the same set of processes. */
static int limit_body(fork_group_member_t *m, void *arg)
{
    (void)arg;
    alarm(30);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_share_t *s[CRUX_SHARE_MAX + 2];
    for (int v = 0; v < CRUX_SHARE_MAX; v++) {
        crux_share_request_t r = request(&oob, 2, v);
        CHECK(take(&r, &s[v], CRUX_OK, CRUX_SHARE_BUILT) == 0, 2);
    }
    CHECK(crux_share_use(s[0]) != NULL, 3); /* s[1] is now the least recently used */
    crux_share_request_t r = request(&oob, 2, CRUX_SHARE_MAX);
    r.names = reversed; /* the same set in another order: may be released for it */
    CHECK(take(&r, &s[CRUX_SHARE_MAX], CRUX_OK, CRUX_SHARE_MADE_ROOM) == 0, 4);
    CHECK(crux_share_use(s[1]) == NULL && destroys == 1, 5);
    CHECK(crux_share_use(s[0]) != NULL && crux_share_use(s[2]) != NULL, 6);
    /* the released group's reference is dropped, and another goes next */
    crux_share_release(s[1], 0);
    CHECK(destroys == 1, 7);
    r = request(&oob, 2, CRUX_SHARE_MAX + 1);
    CHECK(take(&r, &s[1], CRUX_OK, CRUX_SHARE_MADE_ROOM) == 0, 8);
    CHECK(crux_share_use(s[3]) == NULL, 9); /* s[2] was used above, s[3] was not */
    return 0;
}

/* Pinned groups, and groups over another set, are never released to
 * make room: the acquisition fails on every member. */
static int full_body(fork_group_member_t *m, void *arg)
{
    (void)arg;
    alarm(30);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_share_t *s;
    for (int v = 0; v < CRUX_SHARE_MAX; v++) {
        crux_share_request_t r = request(&oob, 3, v);
        r.pin = 1;
        CHECK(take(&r, &s, CRUX_OK, CRUX_SHARE_BUILT) == 0, 2);
    }
    crux_share_request_t r = request(&oob, 3, CRUX_SHARE_MAX);
    CHECK(take(&r, &s, CRUX_ERR_NO_RESOURCE, CRUX_SHARE_FULL) == 0, 3);
    CHECK(destroys == 0, 4);
    /* kind 0 full over members 0 and 1 alone; the three then find no room
     * on two of them and nothing of their set to release */
    fork_subgroup_t sub;
    CHECK(fork_subgroup_init(&sub, m, m->rank < 2, m->rank) == 0, 5);
    crux_coll_oob_t pair = fork_subgroup_oob(&sub);
    if (m->rank < 2) {
        for (int v = 0; v < CRUX_SHARE_MAX; v++) {
            crux_share_request_t p = request(&pair, 0, v);
            CHECK(take(&p, &s, CRUX_OK, CRUX_SHARE_BUILT) == 0, 6);
        }
    } else {
        /* every exchange of the pair is one over all three: keep in step
         * (two per acquisition: the offers, then the build) */
        int out[FORK_GROUP_MAX];
        for (int v = 0; v < 2 * CRUX_SHARE_MAX; v++) {
            CHECK(fork_subgroup_allgather(&v, out, sizeof(v), &sub) == 0, 8);
        }
    }
    r = request(&oob, 0, 99);
    CHECK(take(&r, &s, CRUX_ERR_NO_RESOURCE, CRUX_SHARE_FULL) == 0, 7);
    return 0;
}

/* A caller's slot: acquired at the first need and kept; released to make
 * room by another caller's acquisition, acquired again at the next need;
 * a failed acquisition said once, the slot then empty for good. */
typedef struct {
    crux_share_request_t r;
    int acquisitions;
    int fail;
} slot_arg_t;

static crux_status_t slot_acquire(void *argp, crux_share_t **share)
{
    slot_arg_t *a = argp;
    crux_share_how_t how;
    a->acquisitions++;
    return a->fail ? CRUX_ERR_NO_RESOURCE : crux_share_acquire(&a->r, share, &how);
}

static int slot_body(fork_group_member_t *m, void *arg)
{
    (void)arg;
    alarm(30);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_share_slot_t slot = CRUX_SHARE_SLOT_INIT, failed = CRUX_SHARE_SLOT_INIT;
    slot_arg_t a = { .r = request(&oob, 1, 0) };
    crux_status_t st;
    CHECK(crux_share_slot_peek(&slot) == NULL, 2);
    void *g = crux_share_slot_get(&slot, slot_acquire, &a, &st);
    CHECK(g != NULL && st == CRUX_OK && a.acquisitions == 1, 3);
    CHECK(crux_share_slot_get(&slot, slot_acquire, &a, &st) == g && a.acquisitions == 1, 4);
    CHECK(crux_share_slot_peek(&slot) == g, 5);
    /* fill the kind: the slot's group, least recently used, goes */
    crux_share_t *s[CRUX_SHARE_MAX];
    for (int v = 1; v <= CRUX_SHARE_MAX; v++) {
        crux_share_request_t r = request(&oob, 1, v);
        crux_share_how_t how;
        CHECK(crux_share_acquire(&r, &s[v - 1], &how) == CRUX_OK, 6);
    }
    CHECK(crux_share_slot_peek(&slot) == NULL, 7);
    g = crux_share_slot_get(&slot, slot_acquire, &a, &st);
    CHECK(g != NULL && st == CRUX_OK && a.acquisitions == 2, 8);
    crux_share_slot_release(&slot);
    CHECK(crux_share_slot_peek(&slot) == NULL, 9);
    /* cannot be had: said once, then nothing is tried again */
    slot_arg_t f = { .fail = 1 };
    CHECK(crux_share_slot_get(&failed, slot_acquire, &f, &st) == NULL && st == CRUX_ERR_NO_RESOURCE,
          10);
    CHECK(crux_share_slot_get(&failed, slot_acquire, &f, &st) == NULL && st == CRUX_OK &&
              f.acquisitions == 1,
          11);
    return 0;
}

START_TEST(slot)
{
    ck_assert_int_eq(fork_group_run(2, slot_body, NULL), 0);
}
END_TEST

START_TEST(shared)
{
    ck_assert_int_eq(fork_group_run(3, shared_body, NULL), 0);
    ck_assert_int_eq(fork_group_run(2, shared_body, NULL), 0);
}
END_TEST

START_TEST(dropped)
{
    ck_assert_int_eq(fork_group_run(3, dropped_body, NULL), 0);
}
END_TEST

START_TEST(limit)
{
    ck_assert_int_eq(fork_group_run(3, limit_body, NULL), 0);
}
END_TEST

START_TEST(full)
{
    ck_assert_int_eq(fork_group_run(3, full_body, NULL), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("coll_share");
    TCase *t = tcase_create("share");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, shared);
    tcase_add_test(t, dropped);
    tcase_add_test(t, limit);
    tcase_add_test(t, full);
    tcase_add_test(t, slot);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

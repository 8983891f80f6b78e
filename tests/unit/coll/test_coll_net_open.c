/* Opening the channel between nodes (crux_net_open): every step of its
 * fallback chain in forked members, each ending with the same kind on
 * every member and the reason for each step down: the kind asked where it
 * is available, UCX that cannot reach the peers falling to TCP, TCP that
 * cannot listen falling to the PML, both in a row, RDMA asked on a host
 * without it, the PML asked; the listening address each member takes
 * from a list of rails; the planned paths read from a route
 * (crux_net_route_paths), the agreement to follow a new route
 * (crux_net_route_changed), and following it (crux_net_follow_route: the
 * TCP channel made again once every member read the same new route); no
 * channel for members that share a node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll/crux_net.h"
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

typedef struct {
    crux_net_kind_t asked;
    int rdma;
    const char *where;   /* a list of rails */
    const char *ucx_tls; /* UCX_TLS in the members; NULL: unset */
    crux_net_kind_t want;
    const char *why[2]; /* what the reason must say ("": nothing at all) */
} open_case_t;

/* Each member: open, check the kind and reason, then a step over the
 * channel (member order, exact) when there is one.  Kinds land in the
 * shared page at the member's index. */
static int open_body(fork_group_member_t *m, void *arg)
{
    const open_case_t *c = arg;
    alarm(60);
    if (c->ucx_tls != NULL) {
        setenv("UCX_TLS", c->ucx_tls, 1);
    }
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_net_open_t o = {
        .asked = c->asked,
        .rdma = c->rdma,
        .where = c->where,
        .rail = m->rank,
        .setup_timeout_ms = 5000,
        .level = (crux_net_level_t)CRUX_NET_LEVEL_NONE,
    };
    crux_net_t *net = (crux_net_t *)&o; /* must be set */
    char why[512];
    crux_net_kind_t kind = crux_net_open(&oob, &o, &net, why, sizeof(why));
    if (kind != c->want) {
        fprintf(stderr, "member %d: %s, not %s (%s)\n", m->rank, crux_net_kind_name(kind),
                crux_net_kind_name(c->want), why);
        return 2;
    }
    if ((kind == CRUX_NET_PML) != (net == NULL)) {
        return 3;
    }
    if (net != NULL && crux_net_kind(net) != kind) {
        return 4;
    }
    for (int i = 0; i < 2; i++) {
        if (c->why[i] != NULL && (c->why[i][0] ? strstr(why, c->why[i]) == NULL : why[0] != 0)) {
            fprintf(stderr, "member %d: \"%s\" does not say \"%s\"\n", m->rank, why, c->why[i]);
            return 5;
        }
    }
    if (net != NULL) {
        int x[3] = { m->rank, 1, -m->rank };
        void *req;
        int done = 0;
        if (crux_net_start(net, x, 3, CRUX_DT_INT32, CRUX_OP_SUM, &req) != CRUX_OK) {
            return 6;
        }
        while (!done) {
            if (crux_net_test(net, req, &done) != CRUX_OK) {
                return 7;
            }
        }
        int n = m->size;
        if (x[0] != n * (n - 1) / 2 || x[1] != n || x[2] != -n * (n - 1) / 2) {
            return 8;
        }
        crux_net_destroy(net);
    }
    return 0;
}

static void run_case(const open_case_t *c)
{
    for (int size = 2; size <= 3; size++) {
        ck_assert_msg(fork_group_run(size, open_body, (void *)c) == 0, "asked %s, want %s",
                      crux_net_kind_name(c->asked), crux_net_kind_name(c->want));
    }
}

/* What is asked and can be had is what every member gets, nothing said. */
START_TEST(asked_and_had)
{
    static const open_case_t cases[] = {
        { CRUX_NET_TCP, 0, "127.0.0.0/8", NULL, CRUX_NET_TCP, { "", NULL } },
        { CRUX_NET_TCP, 1, "lo,127.0.0.0/8", NULL, CRUX_NET_TCP, { "", NULL } },
        { CRUX_NET_PML, 1, "127.0.0.0/8", NULL, CRUX_NET_PML, { "", NULL } },
        { CRUX_NET_UCX, 0, NULL, "tcp", CRUX_NET_UCX, { "", NULL } },
        /* RDMA there (as the caller found): the UCX channel */
        { CRUX_NET_AUTO, 1, NULL, "tcp", CRUX_NET_UCX, { "", NULL } },
        /* RDMA asked, none here: TCP straight away, no step down to say */
        { CRUX_NET_RDMA, 0, "lo", NULL, CRUX_NET_TCP, { "", NULL } },
        { CRUX_NET_AUTO, 0, "lo", NULL, CRUX_NET_TCP, { "", NULL } },
    };
    run_case(&cases[_i]);
}
END_TEST

/* Each step down, alike on every member, with its reason. */
START_TEST(steps_down)
{
    static const open_case_t cases[] = {
        /* UCX that reaches no peer (its loopback transport only): TCP */
        { CRUX_NET_UCX, 0, "lo", "self", CRUX_NET_TCP, { "no ucx channel (", "): tcp" } },
        { CRUX_NET_AUTO, 1, "lo", "self", CRUX_NET_TCP, { "no ucx channel (", "): tcp" } },
        /* TCP with nowhere to listen: the PML */
        { CRUX_NET_TCP,
          0,
          "crux-no-such-if44",
          NULL,
          CRUX_NET_PML,
          { "no tcp channel (", "crux-no-such-if44" } },
        { CRUX_NET_AUTO, 0, "10.0.0.0/33", NULL, CRUX_NET_PML, { "no tcp channel (", "the PML" } },
        /* both in a row */
        { CRUX_NET_RDMA,
          1,
          "crux-no-such-if44",
          "self",
          CRUX_NET_PML,
          { "no ucx channel (", "; no tcp channel (" } },
    };
    run_case(&cases[_i]);
}
END_TEST

/* The rails: member i takes entry i of the list, modulo their number; a
 * member whose entry names nothing fails the channel for all of them. */
START_TEST(rails)
{
    char e[16];
    crux_net_rail_entry("eth0,eth1,10.0.0.0/8", 0, e, sizeof(e));
    ck_assert_str_eq(e, "eth0");
    crux_net_rail_entry("eth0,eth1,10.0.0.0/8", 2, e, sizeof(e));
    ck_assert_str_eq(e, "10.0.0.0/8");
    crux_net_rail_entry("eth0,eth1,10.0.0.0/8", 4, e, sizeof(e));
    ck_assert_str_eq(e, "eth1");
    crux_net_rail_entry("eth0", 7, e, sizeof(e));
    ck_assert_str_eq(e, "eth0");
    crux_net_rail_entry("", 3, e, sizeof(e));
    ck_assert_str_eq(e, "");
    crux_net_rail_entry(NULL, 3, e, sizeof(e));
    ck_assert_str_eq(e, "");
    crux_net_rail_entry("a,,b", 1, e, sizeof(e));
    ck_assert_str_eq(e, "");
    crux_net_rail_entry("a-very-long-interface-name,b", 0, e, 5);
    ck_assert_str_eq(e, "a-ve");
    crux_net_rail_entry("a,b", -1, e, sizeof(e)); /* no rail: the first */
    ck_assert_str_eq(e, "a");
    /* member 1's rail names no interface: nobody has a TCP channel */
    open_case_t c = { CRUX_NET_TCP,           0,
                      "lo,crux-no-such-if44", NULL,
                      CRUX_NET_PML,           { "no tcp channel (", NULL } };
    ck_assert_int_eq(fork_group_run(2, open_body, &c), 0);
}
END_TEST

/* A route's planned paths: this host's entries to each peer's host, its
 * rail's entry of several, nothing planned for itself or for entries
 * that are malformed or plan one path. */
START_TEST(route_paths)
{
    const char *hosts[4] = { "n0", "n1", "n2", "n1" };
    const char *route = "n0>n1:1/2,n0>n2:0/4,n1>n0:3/4,n0>n1:0/2,n0>n2:5/4,n0>n2:x/y";
    crux_net_path_t *p = crux_net_route_paths(route, hosts, 4, 0, 0);
    ck_assert_ptr_nonnull(p);
    ck_assert(p[0].count < 2);                     /* itself */
    ck_assert(p[1].index == 1 && p[1].count == 2); /* rail 0: the first n0>n1 */
    ck_assert(p[2].index == 0 && p[2].count == 4); /* rail 0 of n0>n2 */
    ck_assert(p[3].index == 1 && p[3].count == 2); /* n1 again, same entry */
    free(p);
    p = crux_net_route_paths(route, hosts, 4, 0, 1); /* rail 1 */
    ck_assert(p[1].index == 0 && p[1].count == 2);
    ck_assert(p[2].count < 2); /* 5/4: out of range, no path */
    free(p);
    p = crux_net_route_paths(route, hosts, 4, 0, 2); /* rail 2: x/y, none */
    ck_assert(p[1].index == 1 && p[1].count == 2);   /* two entries: rail 2 is the first */
    ck_assert(p[2].count < 2);
    free(p);
    p = crux_net_route_paths(route, hosts, 4, 1, 0); /* from n1 */
    ck_assert(p[0].index == 3 && p[0].count == 4);
    ck_assert(p[2].count < 2 && p[3].count < 2); /* nothing planned to n2, n1 is itself's host */
    free(p);
    /* nothing planned from n2: no paths at all */
    ck_assert_ptr_null(crux_net_route_paths(route, hosts, 4, 2, 0));
    ck_assert_ptr_null(crux_net_route_paths("", hosts, 4, 0, 0));
    ck_assert_ptr_null(crux_net_route_paths(NULL, hosts, 4, 0, 0));
    ck_assert_ptr_null(crux_net_route_paths(route, hosts, 4, 4, 0));
    ck_assert_ptr_null(crux_net_route_paths("n0>n1:1/1", hosts, 4, 0, 0)); /* one path */
    /* a host name that is a prefix of another's is not it */
    const char *prefix[2] = { "n0", "n1x" };
    ck_assert_ptr_null(crux_net_route_paths("n0>n1:1/2", prefix, 2, 0, 0));
    ck_assert_uint_eq(crux_net_route_hash("a"), crux_net_route_hash("a"));
    ck_assert_uint_ne(crux_net_route_hash("n0>n1:1/2"), crux_net_route_hash("n0>n1:0/2"));
}
END_TEST

typedef struct {
    int *answers; /* shared, per member */
    int round;
} route_case_t;

/* Round 0: all read route A, connections on B: changed.  Round 1: all on
 * A already: not.  Round 2: one member read another route: not (until
 * all read it).  Round 3: one member's connections on another: changed. */
static int route_body(fork_group_member_t *m, void *arg)
{
    route_case_t *c = arg;
    alarm(30);
    crux_coll_oob_t oob = fork_group_oob(m);
    uint64_t a = 11, b = 22;
    uint64_t now[4] = { a, a, m->rank == 1 ? b : a, a };
    uint64_t took[4] = { b, a, a, m->rank == m->size - 1 ? b : a };
    c->answers[m->rank] = crux_net_route_changed(&oob, now[c->round], took[c->round]);
    return 0;
}

START_TEST(route_changed)
{
    int *answers = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(answers, MAP_FAILED);
    static const int want[4] = { 1, 0, 0, 1 };
    for (int round = 0; round < 4; round++) {
        route_case_t c = { answers, round };
        for (int i = 0; i < 3; i++) {
            answers[i] = -1;
        }
        ck_assert_int_eq(fork_group_run(3, route_body, &c), 0);
        for (int i = 0; i < 3; i++) {
            ck_assert_msg(answers[i] == want[round], "round %d member %d: %d", round, i,
                          answers[i]);
        }
    }
    munmap(answers, 4096);
}
END_TEST

/* A step over the channel: the members' sum, exact. */
static int step_sums(crux_net_t *net, fork_group_member_t *m)
{
    int x[2] = { m->rank, 1 };
    void *req;
    int done = 0;
    if (crux_net_start(net, x, 2, CRUX_DT_INT32, CRUX_OP_SUM, &req) != CRUX_OK) {
        return 0;
    }
    while (!done) {
        if (crux_net_test(net, req, &done) != CRUX_OK) {
            return 0;
        }
    }
    return x[0] == m->size * (m->size - 1) / 2 && x[1] == m->size;
}

/* Following the route, round after round on one channel: the route its
 * connections took (nothing); one member reading another route (nothing
 * until all read it); all reading it (made again over TCP, though UCX is
 * asked); no priority file (nothing); a new route where TCP cannot be
 * made (lost: no channel, as for the PML); with no channel (nothing).
 * Each outcome alike on every member, and the channel steps after each. */
static int follow_body(fork_group_member_t *m, void *arg)
{
    (void)arg;
    alarm(60);
    crux_coll_oob_t oob = fork_group_oob(m);
    static const char *const hosts[3] = { "h0", "h1", "h2" };
    crux_net_open_t o = {
        .asked = CRUX_NET_TCP,
        .rdma = -1, /* TCP asked: never probed */
        .where = "lo",
        .rail = m->rank,
        .setup_timeout_ms = 5000,
        .level = (crux_net_level_t)CRUX_NET_LEVEL_NONE,
        .route = "h0>h1:0/2",
        .hosts = hosts,
    };
    crux_net_t *net;
    char why[512];
    if (crux_net_open(&oob, &o, &net, why, sizeof(why)) != CRUX_NET_TCP) {
        return 2;
    }
    uint64_t took = crux_net_route_hash(o.route), first = took;
    const crux_net_t *was = net;
    /* the same route: nothing */
    if (crux_net_follow_route(&oob, &net, &o, &took, why, sizeof(why)) != CRUX_NET_ROUTE_KEPT ||
        net != was || took != first || !step_sums(net, m)) {
        return 3;
    }
    /* member 1 read a new route, the others not yet: nothing */
    o.route = m->rank == 1 ? "h0>h1:1/2" : "h0>h1:0/2";
    if (crux_net_follow_route(&oob, &net, &o, &took, why, sizeof(why)) != CRUX_NET_ROUTE_KEPT ||
        net != was || took != first || !step_sums(net, m)) {
        return 4;
    }
    /* all read it: made again, over TCP whatever is asked */
    o.route = "h0>h1:1/2";
    o.asked = CRUX_NET_UCX;
    if (crux_net_follow_route(&oob, &net, &o, &took, why, sizeof(why)) != CRUX_NET_ROUTE_REMADE ||
        net == NULL || crux_net_kind(net) != CRUX_NET_TCP || why[0] != '\0' ||
        took != crux_net_route_hash("h0>h1:1/2") || !step_sums(net, m)) {
        return 5;
    }
    /* no priority file read: nothing to follow */
    was = net;
    o.route = NULL;
    if (crux_net_follow_route(&oob, &net, &o, &took, why, sizeof(why)) != CRUX_NET_ROUTE_KEPT ||
        net != was || !step_sums(net, m)) {
        return 6;
    }
    /* a new route, TCP with nowhere to listen: lost, no channel left */
    o.route = "h0>h2:1/2";
    o.where = "crux-no-such-if44";
    if (crux_net_follow_route(&oob, &net, &o, &took, why, sizeof(why)) != CRUX_NET_ROUTE_LOST ||
        net != NULL || strstr(why, "no tcp channel (") == NULL ||
        took != crux_net_route_hash("h0>h2:1/2")) {
        return 7;
    }
    /* no channel: nothing to follow, nothing exchanged */
    o.route = "h1>h2:1/2";
    if (crux_net_follow_route(&oob, &net, &o, &took, why, sizeof(why)) != CRUX_NET_ROUTE_KEPT ||
        net != NULL) {
        return 8;
    }
    return 0;
}

START_TEST(follow_route)
{
    for (int size = 2; size <= 3; size++) {
        ck_assert_int_eq(fork_group_run(size, follow_body, NULL), 0);
    }
}
END_TEST

/* Members that share a node: no channel, whatever is asked, nothing
 * exchanged (the oob is never called) and nothing to say. */
static int never(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    (void)sbuf, (void)rbuf, (void)length;
    (*(int *)arg)++;
    return -1;
}

START_TEST(local)
{
    static const crux_net_kind_t asked[] = { CRUX_NET_AUTO, CRUX_NET_RDMA, CRUX_NET_TCP,
                                             CRUX_NET_PML, CRUX_NET_UCX };
    for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
        int calls = 0;
        crux_coll_oob_t oob = { never, &calls, 0, 2 };
        crux_net_open_t o = { .asked = asked[i], .rdma = -1, .local = 1 };
        crux_net_t *net = (crux_net_t *)&o;
        char why[64] = "x";
        ck_assert_int_eq(crux_net_open(&oob, &o, &net, why, sizeof(why)), CRUX_NET_NONE);
        ck_assert_ptr_null(net);
        ck_assert_str_eq(why, "");
        ck_assert_int_eq(calls, 0);
    }
    ck_assert_str_eq(crux_net_kind_name(CRUX_NET_NONE), "none");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("net_open");
    TCase *t = tcase_create("net_open");
    tcase_set_timeout(t, 120);
    tcase_add_loop_test(t, asked_and_had, 0, 7);
    tcase_add_loop_test(t, steps_down, 0, 5);
    tcase_add_test(t, rails);
    tcase_add_test(t, route_paths);
    tcase_add_test(t, route_changed);
    tcase_add_test(t, follow_route);
    tcase_add_test(t, local);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

/* libcrux_coll's channels between nodes (crux_net.h): a level's marks (TOS,
 * socket priority, InfiniBand SL and RoCE traffic class), the choice of
 * channel with its fallbacks, the RDMA probe against the kernel's devices,
 * and both channels in forked members (TCP over the loopback, UCX with
 * UCX_TLS=tcp, as there is no RDMA device here): exact results in member
 * order for every (type, op) with a kernel, several steps in flight, the
 * marking changed between steps (TCP: read back from the kernel; UCX: the
 * context each level gets, with the SL and traffic class read back from
 * its configuration, member 0's level taken by all; what crux_net_mark
 * reports of each change), and a member killed
 * in a step failing the others' steps instead of hanging them; and the
 * source port that pins a connection to a planned path (root only). */
#define _GNU_SOURCE /* unshare */
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "coll/crux_net.h"
#include "coll/net/crux_net_internal.h"
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

START_TEST(test_marks)
{
    crux_net_level_t none = CRUX_NET_LEVEL_NONE;
    ck_assert_int_eq(crux_net_tos(&none), 0);
    ck_assert_int_eq(crux_net_tos(NULL), 0);
    ck_assert_int_eq(crux_net_socket_priority(&none), 0);
    crux_net_level_t ef = { .sl = 3, .tc = 7, .dscp = 46 }; /* dscp wins over tc */
    ck_assert_int_eq(crux_net_tos(&ef), 184);
    ck_assert_int_eq(crux_net_socket_priority(&ef), 5);
    crux_net_level_t tc_only = { .sl = -1, .tc = 0x63, .dscp = -1 }; /* ECN bits dropped */
    ck_assert_int_eq(crux_net_tos(&tc_only), 0x60);
    ck_assert_int_eq(crux_net_socket_priority(&tc_only), 3);
    crux_net_level_t cs7 = { .sl = -1, .tc = -1, .dscp = 56 };
    ck_assert_int_eq(crux_net_socket_priority(&cs7), 7);
    int sl, tc;
    crux_net_rdma_marks(&ef, &sl, &tc);
    ck_assert_int_eq(sl, 3);
    ck_assert_int_eq(tc, 7); /* tc as given on RDMA */
    crux_net_rdma_marks(&cs7, &sl, &tc);
    ck_assert_int_eq(sl, 7);
    ck_assert_int_eq(tc, 224);
    crux_net_rdma_marks(&none, &sl, &tc);
    ck_assert_int_eq(sl, 0);
    ck_assert_int_eq(tc, 0);
}
END_TEST

START_TEST(test_choose)
{
    ck_assert_int_eq(crux_net_choose(CRUX_NET_AUTO, 1, 1), CRUX_NET_RDMA);
    ck_assert_int_eq(crux_net_choose(CRUX_NET_AUTO, 0, 1), CRUX_NET_TCP);
    ck_assert_int_eq(crux_net_choose(CRUX_NET_AUTO, 0, 0), CRUX_NET_PML);
    ck_assert_int_eq(crux_net_choose(CRUX_NET_RDMA, 0, 1), CRUX_NET_TCP);
    ck_assert_int_eq(crux_net_choose(CRUX_NET_RDMA, 0, 0), CRUX_NET_PML);
    ck_assert_int_eq(crux_net_choose(CRUX_NET_TCP, 1, 1), CRUX_NET_TCP);
    ck_assert_int_eq(crux_net_choose(CRUX_NET_TCP, 1, 0), CRUX_NET_PML);
    ck_assert_int_eq(crux_net_choose(CRUX_NET_PML, 1, 1), CRUX_NET_PML);
    ck_assert_int_eq(crux_net_choose(CRUX_NET_UCX, 0, 1), CRUX_NET_UCX); /* forced */
    ck_assert_int_eq(crux_net_choose(CRUX_NET_UCX, 0, 0), CRUX_NET_UCX);
    ck_assert_str_eq(crux_net_kind_name(CRUX_NET_TCP), "tcp");
    ck_assert_str_eq(crux_net_kind_name(CRUX_NET_UCX), "ucx");
}
END_TEST

/* The RDMA probe agrees with the kernel's list of RDMA devices, and without
 * one the choice falls back to TCP. */
START_TEST(test_rdma_probe)
{
    char why[128] = "";
    int rdma = crux_net_rdma_available(why, sizeof(why));
    ck_assert_int_gt((int)strlen(why), 0);
    DIR *d = opendir("/sys/class/infiniband");
    int devices = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        devices += e->d_name[0] != '.';
    }
    if (d != NULL) {
        closedir(d);
    }
    if (devices == 0) {
        ck_assert_int_eq(rdma, 0);
        ck_assert_ptr_nonnull(strstr(why, "no RDMA"));
        ck_assert_int_eq(crux_net_choose(CRUX_NET_AUTO, rdma, 1), CRUX_NET_TCP);
        ck_assert_int_eq(crux_net_choose(CRUX_NET_RDMA, rdma, 1), CRUX_NET_TCP);
    } else {
        ck_assert_int_eq(rdma, 1);
    }
}
END_TEST

/* Member p's element i: small integers (exact in every type) that differ
 * per member, and for floating point fractions of different magnitudes, so
 * the order of a sum shows in the bits. */
static void fill(unsigned char *buf, crux_dtype_t dt, int member, size_t count)
{
    static const float scale[3] = { 1.0f, 3e3f, 1e-3f };
    for (size_t i = 0; i < count; i++) {
        int v = (int)((i * 7 + (size_t)member * 3) % 5) + 1;
        void *e = buf + i * crux_dtype_size(dt);
        switch (dt) {
        case CRUX_DT_INT8: *(int8_t *)e = (int8_t)v; break;
        case CRUX_DT_UINT8: *(uint8_t *)e = (uint8_t)v; break;
        case CRUX_DT_INT32: *(int32_t *)e = v - 3; break;
        case CRUX_DT_UINT64: *(uint64_t *)e = (uint64_t)v << 40; break;
        case CRUX_DT_FLOAT: *(float *)e = (float)v / 3.0f * scale[member % 3]; break;
        case CRUX_DT_DOUBLE: *(double *)e = (double)v / 7.0 * scale[member % 3] * 1e6; break;
        default: memset(e, v, crux_dtype_size(dt)); break;
        }
    }
}

typedef struct {
    crux_dtype_t dt;
    crux_op_t op;
    size_t count;
    int steps;    /* in flight at once */
    int kill;     /* the last member kills itself: 1 as its step starts, 2 in its step */
    int relevel;  /* change the marking between rounds of steps */
    int ucx;      /* the UCX channel, else TCP */
    int *results; /* shared, per member */
    int round;    /* of a case run several times */
} net_case_t;

/* The UCX channel's context in use is number 'index' of 'contexts', with
 * this SL and traffic class in its configuration. */
static int ucx_context_is(const crux_net_t *net, int index, int contexts, int sl, int tc)
{
    int i, n, s, t;
    return crux_net_ucx_context(net, &i, &n, &s, &t) == CRUX_OK && i == index && n == contexts &&
           s == sl && t == tc;
}

/* Round 1 moves to DSCP 46 (SL 5, traffic class 184: a new context); with
 * UCX the other members ask for another level, and member 0's wins.  Round
 * 2 goes back to DSCP 10: TCP re-marks, UCX takes its first context again.
 * crux_net_mark (crux_net_set_level, and what it did, as the component
 * says it) reports each change, then nothing for the same level again.
 * 0 when the channel did so. */
static int relevel(crux_net_t *net, const net_case_t *c, int round, int rank)
{
    crux_net_level_t high = { .sl = -1, .tc = -1, .dscp = 46 };
    crux_net_level_t other = { .sl = 2, .tc = 64, .dscp = -1 };
    crux_net_level_t low = { .sl = -1, .tc = -1, .dscp = 10 };
    const crux_net_level_t *want = round == 1 ? &high : &low;
    int tos, prio;
    if (!c->ucx) {
        crux_net_marking_t m = crux_net_mark(net, want);
        return m.outcome != CRUX_NET_MARK_TCP || m.status != CRUX_OK ||
               m.tos != crux_net_tos(want) || m.priority != crux_net_socket_priority(want) ||
               crux_net_marks_in_force(net, &tos, &prio) || tos != m.tos || prio != m.priority ||
               crux_net_mark(net, want).outcome != CRUX_NET_MARK_SAME ||
               crux_net_set_level(net, want) != 0;
    }
    crux_net_marking_t m = crux_net_mark(net, rank == 0 ? want : &other);
    if (m.outcome != CRUX_NET_MARK_UCX || m.status != CRUX_OK) {
        return 1;
    }
    int ok = round == 1 ? ucx_context_is(net, 1, 2, 5, 184) && m.context == 1 && m.sl == 5 &&
                              m.traffic_class == 184
                        : ucx_context_is(net, 0, 2, 1, 40) && m.context == 0 && m.sl == 1 &&
                              m.traffic_class == 40;
    return !ok || m.contexts != 2 ||
           crux_net_mark(net, rank == 0 ? want : &other).outcome != CRUX_NET_MARK_SAME ||
           crux_net_mark(NULL, want).outcome != CRUX_NET_MARK_SAME ||
           crux_net_marks_in_force(net, &tos, &prio) != CRUX_ERR_UNSUPPORTED;
}

static void die(int sig)
{
    (void)sig;
    raise(SIGKILL);
}

static int body(fork_group_member_t *m, void *arg)
{
    net_case_t *c = arg;
    alarm(60); /* a hang fails the test instead of blocking it */
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_net_level_t level = { .sl = -1, .tc = -1, .dscp = 10 };
    crux_net_t *net;
    char err[256];
    if (c->ucx) {
        setenv("UCX_TLS", "tcp", 1); /* no RDMA device here: UCX's tcp carries it */
        if (crux_net_ucx_create(&oob, &level, &net, err, sizeof(err)) != CRUX_OK) {
            fprintf(stderr, "member %d: %s\n", m->rank, err);
            return 2;
        }
        if (crux_net_kind(net) != CRUX_NET_UCX || !ucx_context_is(net, 0, 1, 1, 40)) {
            return 3;
        }
    } else {
        if (crux_net_tcp_create(&oob, "127.0.0.0/8", CRUX_NET_SETUP_TIMEOUT_MS, &level, &net, err,
                                sizeof(err)) != CRUX_OK) {
            return 2;
        }
        int tos, prio, i, n, sl, tc;
        if (crux_net_marks_in_force(net, &tos, &prio) != CRUX_OK || tos != 40 || prio != 1 ||
            crux_net_ucx_context(net, &i, &n, &sl, &tc) != CRUX_ERR_UNSUPPORTED) {
            return 3;
        }
    }
    size_t es = crux_dtype_size(c->dt), bytes = c->count * es;
    crux_reduce_fn_t fn = crux_reduce_lookup(c->dt, c->op);
    unsigned char *buf = malloc(bytes * (size_t)c->steps), *want = malloc(bytes),
                  *other = malloc(bytes);
    void *req[8];
    for (int round = 0; round < (c->relevel ? 3 : 1); round++) {
        if (round > 0 && relevel(net, c, round, m->rank) != 0) {
            return 4;
        }
        for (int s = 0; s < c->steps; s++) {
            fill(buf + (size_t)s * bytes, c->dt, m->rank + s, c->count);
            if (c->kill == 1 && m->rank == m->size - 1) {
                raise(SIGKILL); /* in the middle of everyone's step */
            }
            if (crux_net_start(net, buf + (size_t)s * bytes, c->count, c->dt, c->op, &req[s]) !=
                CRUX_OK) {
                return 5;
            }
            if (c->kill == 2 && m->rank == m->size - 1) {
                /* at an instant inside the step, whatever UCX or the
                 * channel is doing then: a step of this size takes far
                 * longer than the wait */
                signal(SIGALRM, die);
                struct itimerval at = { { 0, 0 }, { 0, 250L * c->round } };
                setitimer(ITIMER_REAL, &at, NULL);
                for (int done = 0; !done;) {
                    if (crux_net_test(net, req[s], &done) != CRUX_OK) {
                        return 9;
                    }
                }
                pause();
            }
        }
        /* test the later steps first: completion must still come in order */
        int left = c->steps;
        int done[8] = { 0 };
        while (left > 0) {
            for (int s = c->steps - 1; s >= 0; s--) {
                if (done[s]) {
                    continue;
                }
                crux_status_t st = crux_net_test(net, req[s], &done[s]);
                if (st != CRUX_OK) {
                    c->results[m->rank] = st;
                    crux_net_destroy(net);
                    return c->kill ? 0 : 6;
                }
                left -= done[s];
            }
        }
        for (int s = 0; s < c->steps; s++) {
            /* the expected bits: contributions in member order */
            fill(want, c->dt, s, c->count);
            for (int p = 1; p < m->size; p++) {
                fill(other, c->dt, p + s, c->count);
                fn(want, want, other, c->count);
            }
            if (memcmp(want, buf + (size_t)s * bytes, bytes) != 0) {
                return 7;
            }
        }
    }
    c->results[m->rank] = CRUX_OK;
    crux_net_destroy(net);
    free(buf);
    free(want);
    free(other);
    return c->kill ? 8 : 0; /* a kill case must not end well */
}

static int *shared_results(void)
{
    int *r = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(r, MAP_FAILED);
    for (int i = 0; i < 16; i++) {
        r[i] = 99;
    }
    return r;
}

static const struct {
    crux_dtype_t dt;
    crux_op_t op;
} pairs[] = {
    { CRUX_DT_FLOAT, CRUX_OP_SUM },  { CRUX_DT_DOUBLE, CRUX_OP_SUM },
    { CRUX_DT_FLOAT, CRUX_OP_MAX },  { CRUX_DT_INT32, CRUX_OP_PROD },
    { CRUX_DT_INT8, CRUX_OP_MIN },   { CRUX_DT_UINT8, CRUX_OP_BXOR },
    { CRUX_DT_UINT64, CRUX_OP_BOR }, { CRUX_DT_INT32, CRUX_OP_LAND },
};

/* _i: a (type, op) pair over 2 and 3 members; odd counts, one step and
 * several in flight; large enough to fill the sockets' buffers. */
static void exact(int ucx, int pair)
{
    int *results = shared_results();
    for (int size = 2; size <= 3; size++) {
        net_case_t c = { pairs[pair].dt, pairs[pair].op, 1, 1, 0, 0, ucx, results };
        ck_assert_int_eq(fork_group_run(size, body, &c), 0);
        c.count = 300007;
        c.steps = 3;
        ck_assert_int_eq(fork_group_run(size, body, &c), 0);
        c.count = 17;
        c.steps = 8;
        ck_assert_int_eq(fork_group_run(size, body, &c), 0);
    }
    munmap(results, 4096);
}

START_TEST(test_tcp_exact)
{
    exact(0, _i);
}
END_TEST

START_TEST(test_ucx_exact)
{
    exact(1, _i);
}
END_TEST

static void relevels(int ucx)
{
    int *results = shared_results();
    net_case_t c = { CRUX_DT_FLOAT, CRUX_OP_SUM, 4099, 2, 0, 1, ucx, results };
    ck_assert_int_eq(fork_group_run(3, body, &c), 0);
    munmap(results, 4096);
}

START_TEST(test_tcp_relevel)
{
    relevels(0);
}
END_TEST

START_TEST(test_ucx_relevel)
{
    relevels(1);
}
END_TEST

/* A member killed as its step starts, then several times inside a step at
 * different moments: the moment decides whether the survivors learn of it
 * on a send or on a receive. */
static void peer_killed(int ucx)
{
    int *results = shared_results();
    for (int round = 0; round < 9; round++) {
        net_case_t c = { CRUX_DT_FLOAT, CRUX_OP_SUM, 1u << 24, 1, round == 0 ? 1 : 2, 0,
                         ucx,           results,     round };
        results[0] = results[1] = 99;
        /* only the killed member fails; the others saw their step fail */
        ck_assert_int_eq(fork_group_run(3, body, &c), 1);
        ck_assert_int_eq(results[0], CRUX_ERR_PEER);
        ck_assert_int_eq(results[1], CRUX_ERR_PEER);
    }
    munmap(results, 4096);
}

START_TEST(test_tcp_peer_killed)
{
    peer_killed(0);
}
END_TEST

START_TEST(test_ucx_peer_killed)
{
    peer_killed(1);
}
END_TEST

static int alone(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    memcpy(rbuf, sbuf, length);
    return 0;
}

/* Addresses that name nothing are refused with the reason; a channel of one
 * member reduces to its own buffer. */
START_TEST(test_tcp_where)
{
    crux_coll_oob_t oob = { alone, NULL, 0, 1 };
    crux_net_t *net;
    char err[256];
    ck_assert_int_eq(crux_net_tcp_create(&oob, "no-such-if0", CRUX_NET_SETUP_TIMEOUT_MS, NULL, &net,
                                         err, sizeof(err)),
                     CRUX_ERR_NOT_FOUND);
    ck_assert_ptr_null(net);
    ck_assert_ptr_nonnull(strstr(err, "no-such-if0"));
    ck_assert_int_eq(crux_net_tcp_create(&oob, "10.0.0.0/33", CRUX_NET_SETUP_TIMEOUT_MS, NULL, &net,
                                         err, sizeof(err)),
                     CRUX_ERR_INVALID);
    ck_assert_int_eq(
        crux_net_tcp_create(&oob, "lo", CRUX_NET_SETUP_TIMEOUT_MS, NULL, &net, err, sizeof(err)),
        CRUX_OK);
    ck_assert_str_eq(
        strstr(crux_net_address(net), "127.0.0.1:") == crux_net_address(net) ? "y" : "n", "y");
    float x[3] = { 1, 2, 3 };
    void *req;
    int done = 0;
    ck_assert_int_eq(crux_net_start(net, x, 3, CRUX_DT_FLOAT, CRUX_OP_SUM, &req), CRUX_OK);
    ck_assert_int_eq(crux_net_test(net, req, &done), CRUX_OK);
    ck_assert_int_eq(done, 1);
    ck_assert(x[0] == 1 && x[2] == 3);
    ck_assert_int_eq(crux_net_start(net, x, 3, CRUX_DT_FLOAT, CRUX_OP_BXOR, &req),
                     CRUX_ERR_UNSUPPORTED);
    crux_net_destroy(net);
}
END_TEST

/* The next hop `ip route get` gives this 5-tuple ("" when none). */
static void route_get(const char *dst, const char *src, int sport, int dport, char *via, size_t n)
{
    char cmd[256], line[512];
    snprintf(cmd, sizeof(cmd), "ip route get %s from %s ipproto tcp sport %d dport %d 2>/dev/null",
             dst, src, sport, dport);
    via[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (p != NULL && fgets(line, sizeof(line), p) != NULL) {
        const char *v = strstr(line, " via ");
        if (v != NULL) {
            sscanf(v + 5, "%63s", via);
        }
    }
    if (p != NULL) {
        pclose(p);
    }
    (void)n;
}

static struct sockaddr_storage in4(const char *ip, int port)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, ip, &a->sin_addr);
    return ss;
}

/* A source port that takes a planned path: in a network namespace of its
 * own (root only), a host routing 10.98.0.0/24 over two next hops with the
 * L4 hash; path i of 2 is the i-th next hop in address order.  A route of
 * one next hop, or a path count it does not have, pins nothing. */
START_TEST(test_path_pin)
{
    if (geteuid() != 0 || unshare(CLONE_NEWNET) != 0) {
        return; /* needs root: the testbed test covers it on the wire */
    }
    ck_assert_int_eq(
        system("ip link set lo up && ip link add name pa type veth peer name pb && "
               "ip addr add 10.99.0.1/24 dev pa && ip link set pa up && "
               "ip link set pb up && sysctl -qw net.ipv4.fib_multipath_hash_policy=1 && "
               "ip route add 10.98.0.0/24 nexthop via 10.99.0.251 dev pa "
               "nexthop via 10.99.0.250 dev pa && "
               "ip route add 10.97.0.0/24 via 10.99.0.250 dev pa"),
        0);
    struct sockaddr_storage local = in4("10.99.0.1", 0), remote = in4("10.98.0.5", 5000);
    const char *want[2] = { "10.99.0.250", "10.99.0.251" }; /* address order */
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 8; k++) {
            int pinned = -2;
            int fd =
                crux_net_path_socket(AF_INET, &local, &remote, (crux_net_path_t){ i, 2 }, &pinned);
            ck_assert_int_ge(fd, 0);
            ck_assert_int_gt(pinned, 0);
            char via[64];
            route_get("10.98.0.5", "10.99.0.1", pinned, 5000, via, sizeof(via));
            ck_assert_str_eq(via, want[i]);
            close(fd);
        }
    }
    int pinned = -2, fd;
    /* three paths planned, two next hops: another fabric, nothing pinned */
    fd = crux_net_path_socket(AF_INET, &local, &remote, (crux_net_path_t){ 2, 3 }, &pinned);
    ck_assert(fd >= 0 && pinned == -1);
    close(fd);
    /* one next hop */
    struct sockaddr_storage single = in4("10.97.0.5", 5000);
    fd = crux_net_path_socket(AF_INET, &local, &single, (crux_net_path_t){ 1, 2 }, &pinned);
    ck_assert(fd >= 0 && pinned == -1);
    close(fd);
    /* no route at all, and no path asked */
    struct sockaddr_storage nowhere = in4("10.96.0.5", 5000);
    fd = crux_net_path_socket(AF_INET, &local, &nowhere, (crux_net_path_t){ 0, 2 }, &pinned);
    ck_assert(fd >= 0 && pinned == -1);
    close(fd);
    fd = crux_net_path_socket(AF_INET, &local, &remote, (crux_net_path_t){ -1, 0 }, &pinned);
    ck_assert(fd >= 0 && pinned == -1);
    close(fd);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("net");
    TCase *t = tcase_create("net");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_marks);
    tcase_add_test(t, test_choose);
    tcase_add_test(t, test_rdma_probe);
    tcase_add_loop_test(t, test_tcp_exact, 0, sizeof(pairs) / sizeof(pairs[0]));
    tcase_add_test(t, test_tcp_relevel);
    tcase_add_test(t, test_tcp_peer_killed);
    tcase_add_test(t, test_tcp_where);
    tcase_add_loop_test(t, test_ucx_exact, 0, sizeof(pairs) / sizeof(pairs[0]));
    tcase_add_test(t, test_ucx_relevel);
    tcase_add_test(t, test_ucx_peer_killed);
    /* last: without fork mode its network namespace stays for what follows */
    tcase_add_test(t, test_path_pin);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

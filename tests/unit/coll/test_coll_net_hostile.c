/* The TCP channel's set-up (crux_net.h) against another local user, made
 * for the test, who connects to the members' listeners while they are up
 * (the test tells the attacker their ports, as a watcher of the kernel's
 * socket table would learn them, and holds the members' address exchange
 * until the attacker's connections are made): connections that send
 * nothing, many of them, ones that dribble a plausible hello a byte a
 * second, forged hellos and garbage.  Each time the channel is set up as
 * fast as without the attacker (a bound far above that, so that load cannot
 * trip it), reduces exactly, and every attacker's connection is closed by
 * the time set-up ends.  Also: the first member never listens, no listener
 * outlives set-up, and a member that arrives past the set-up deadline
 * fails every member alike, within the deadline. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "coll/crux_net.h"
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"
#define OTHER_USER_PREFIX "crux41n"
#include "tests/unit/other_user.h"

#define MEMBERS     3
#define MAX_CONNS   256
#define COUNT       4099
#define ATTACK_WAIT 20 /* seconds the members wait for the attacker, at most */

typedef enum { NONE, HOLD, FLOOD, DRIBBLE, FORGED, GARBAGE } attack_t;
static const char *const attack_name[] = {
    "none", "hold", "flood", "dribble", "forged", "garbage"
};

typedef struct {
    attack_t attack;
    int delay_rank; /* sleeps delay_s after the exchange; -1: none */
    int delay_s;
    int timeout_ms;             /* the set-up deadline */
    _Atomic int ports[MEMBERS]; /* each member's listening port (0: none), once known */
    _Atomic int reported;       /* members that gave their port */
    _Atomic int attacked;       /* 1: the attacker's connections are made; -1: it failed */
    _Atomic int members_done;
    int failed;      /* members whose body failed */
    int established; /* the attacker's connections made */
    int closed;      /* ... and closed by the members, by set-up's end plus a grace */
    int status[MEMBERS];
    double setup_s[MEMBERS]; /* from the exchange to the channel */
    int listeners_after[MEMBERS];
    char err[MEMBERS][256];
} shared_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This process's listening TCP sockets: how many, and the port of one. */
static int listening(int *port)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name), on = 0;
        socklen_t len = sizeof(on);
        struct sockaddr_in a;
        socklen_t alen = sizeof(a);
        if (e->d_name[0] == '.' || fd == dirfd(d) ||
            getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) != 0 || !on ||
            getsockname(fd, (struct sockaddr *)&a, &alen) != 0 || a.sin_family != AF_INET) {
            continue;
        }
        *port = ntohs(a.sin_port);
        n++;
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

typedef struct {
    fork_group_member_t *m;
    shared_t *sh;
    int calls;
    double exchanged; /* when the address exchange ended */
} member_t;

static int wait_for(_Atomic int *what, int want, double seconds)
{
    for (double end = now_s() + seconds; now_s() < end; usleep(1000)) {
        if (atomic_load(what) >= want) {
            return 1;
        }
    }
    return 0;
}

/* The members' exchange: the first time (the channel's address exchange),
 * each member first reports its listener and waits for the attacker. */
static int exchange(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    member_t *mb = arg;
    shared_t *sh = mb->sh;
    if (mb->calls++ == 0) {
        int port = 0;
        listening(&port);
        atomic_store(&sh->ports[mb->m->rank], port);
        atomic_fetch_add(&sh->reported, 1);
        if (sh->attack != NONE && !wait_for(&sh->attacked, 1, ATTACK_WAIT)) {
            return -1;
        }
    }
    int rc = fork_group_allgather(sbuf, rbuf, length, mb->m);
    if (mb->calls == 1) {
        mb->exchanged = now_s();
        if (mb->m->rank == sh->delay_rank) {
            sleep((unsigned)sh->delay_s);
        }
    }
    return rc;
}

static int member(fork_group_member_t *m, void *arg)
{
    shared_t *sh = arg;
    alarm(240); /* a hang fails the test instead of blocking it */
    member_t mb = { m, sh, 0, 0 };
    crux_coll_oob_t oob = { exchange, &mb, m->rank, m->size };
    crux_net_t *net = NULL;
    int r = m->rank;
    sh->status[r] = crux_net_tcp_create(&oob, "127.0.0.0/8", sh->timeout_ms, NULL, &net, sh->err[r],
                                        sizeof(sh->err[r]));
    sh->setup_s[r] = now_s() - mb.exchanged;
    int port;
    sh->listeners_after[r] = listening(&port);
    int bad = 0;
    if (net != NULL) {
        float x[COUNT];
        for (int i = 0; i < COUNT; i++) {
            x[i] = (float)(r + i % 7);
        }
        void *req;
        int done = 0;
        bad = crux_net_start(net, x, COUNT, CRUX_DT_FLOAT, CRUX_OP_SUM, &req) != CRUX_OK;
        while (!bad && !done) {
            bad = crux_net_test(net, req, &done) != CRUX_OK;
        }
        for (int i = 0; i < COUNT && !bad; i++) {
            bad = x[i] != (float)(MEMBERS * (MEMBERS - 1) / 2 + MEMBERS * (i % 7));
        }
        crux_net_destroy(net);
    }
    atomic_fetch_add(&sh->members_done, 1);
    return bad;
}

/* ---- the attacker, as the other user ---- */

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Wait for the connections to be made (or to fail); keep those made. */
static int settle_connects(int *fds, int n)
{
    struct pollfd p[MAX_CONNS];
    double end = now_s() + 5;
    for (int left = n; left > 0 && now_s() < end;) {
        for (int i = 0; i < n; i++) {
            p[i] = (struct pollfd){ .fd = fds[i], .events = POLLOUT };
        }
        if (poll(p, (nfds_t)n, 100) < 0) {
            break;
        }
        left = 0;
        for (int i = 0; i < n; i++) {
            left += fds[i] >= 0 && p[i].revents == 0;
        }
    }
    int made = 0;
    for (int i = 0; i < n; i++) {
        int error = 1;
        socklen_t len = sizeof(error);
        if (fds[i] >= 0 && getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &error, &len) == 0 &&
            error == 0 && send(fds[i], "", 0, MSG_NOSIGNAL) == 0) {
            fds[made++] = fds[i];
        } else if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    return made;
}

static void attacker(shared_t *sh)
{
    if (other_user_become() != 0 || !wait_for(&sh->reported, MEMBERS, ATTACK_WAIT)) {
        atomic_store(&sh->attacked, -1);
        _exit(1);
    }
    int per = sh->attack == FLOOD ? 32 : 2, fds[MAX_CONNS], n = 0;
    for (int r = 0; r < MEMBERS; r++) {
        for (int k = 0; atomic_load(&sh->ports[r]) != 0 && k < per; k++) {
            fds[n++] = connect_to(atomic_load(&sh->ports[r]));
        }
    }
    n = settle_connects(fds, n);
    /* a hello's first bytes, as a peer's would be, then nothing */
    static const unsigned char magic[4] = { 0x78, 0x75, 0x72, 0x63 };
    unsigned char forged[16] = { 0x78, 0x75, 0x72, 0x63, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8 };
    for (int i = 0; i < n; i++) {
        if (sh->attack == FORGED) {
            (void)!send(fds[i], forged, sizeof(forged), MSG_NOSIGNAL);
        } else if (sh->attack == GARBAGE) {
            (void)!send(fds[i], "GET / HTTP/1.0\r\n", 16, MSG_NOSIGNAL);
        }
    }
    sh->established = n;
    atomic_store(&sh->attacked, 1);
    /* dribble and watch until the members are done, then a grace for the
     * closes to arrive */
    int closed[MAX_CONNS] = { 0 }, nclosed = 0, sent = 0;
    double grace_end = 0, next_byte = now_s() + 1;
    while (nclosed < n) {
        if (grace_end == 0 && atomic_load(&sh->members_done) == MEMBERS) {
            grace_end = now_s() + 5;
        }
        if (grace_end != 0 && now_s() > grace_end) {
            break;
        }
        if (sh->attack == DRIBBLE && sent < 4 && now_s() >= next_byte) {
            for (int i = 0; i < n; i++) {
                if (!closed[i]) {
                    (void)!send(fds[i], &magic[sent], 1, MSG_NOSIGNAL);
                }
            }
            sent++;
            next_byte = now_s() + 1;
        }
        struct pollfd p[MAX_CONNS];
        for (int i = 0; i < n; i++) {
            p[i] = (struct pollfd){ .fd = closed[i] ? -1 : fds[i], .events = POLLIN };
        }
        if (poll(p, (nfds_t)n, 50) <= 0) {
            continue;
        }
        for (int i = 0; i < n; i++) {
            char c[64];
            if (p[i].revents != 0 && recv(fds[i], c, sizeof(c), MSG_DONTWAIT) <= 0) {
                closed[i] = 1;
                nclosed++;
            }
        }
    }
    sh->closed = nclosed;
    _exit(0);
}

/* One set-up of MEMBERS members under an attack; the shared results. */
static shared_t *run(attack_t attack, int timeout_ms, int delay_rank, int delay_s)
{
    shared_t *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(sh, MAP_FAILED);
    memset(sh, 0, sizeof(*sh));
    sh->attack = attack;
    sh->timeout_ms = timeout_ms;
    sh->delay_rank = delay_rank;
    sh->delay_s = delay_s;
    pid_t pid = -1;
    if (attack != NONE) {
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            attacker(sh);
        }
    }
    sh->failed = fork_group_run(MEMBERS, member, sh);
    if (pid > 0) {
        int status;
        waitpid(pid, &status, 0);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the attacker failed");
    }
    for (int r = 0; r < MEMBERS; r++) {
        if (sh->err[r][0]) {
            printf("# %s: member %d: %s\n", attack_name[attack], r, sh->err[r]);
        }
    }
    return sh;
}

static double slowest(const shared_t *sh)
{
    double s = 0;
    for (int r = 0; r < MEMBERS; r++) {
        s = sh->setup_s[r] > s ? sh->setup_s[r] : s;
    }
    return s;
}

/* The set-up's time without an attacker, on this machine now. */
static double baseline(void)
{
    shared_t *sh = run(NONE, CRUX_NET_SETUP_TIMEOUT_MS, -1, 0);
    ck_assert_int_eq(sh->failed, 0);
    for (int r = 0; r < MEMBERS; r++) {
        ck_assert_int_eq(sh->status[r], CRUX_OK);
    }
    double s = slowest(sh);
    munmap(sh, sizeof(*sh));
    return s;
}

START_TEST(test_attacks)
{
    if (other_user[0] == '\0') {
        printf("# SKIP: needs root and useradd for a second user\n");
        return;
    }
    attack_t attack = (attack_t)(_i + HOLD);
    double base = baseline();
    shared_t *sh = run(attack, CRUX_NET_SETUP_TIMEOUT_MS, -1, 0);
    ck_assert_msg(sh->established > 0, "%s: the attacker made no connection", attack_name[attack]);
    ck_assert_msg(sh->failed == 0, "%s: %d members failed", attack_name[attack], sh->failed);
    for (int r = 0; r < MEMBERS; r++) {
        ck_assert_msg(sh->status[r] == CRUX_OK, "%s: member %d: %s", attack_name[attack], r,
                      sh->err[r]);
        ck_assert_int_eq(sh->listeners_after[r], 0);
    }
    double took = slowest(sh);
    printf("# %s: %d connections, set-up %.3f s (%.3f s without the attacker), %d closed\n",
           attack_name[attack], sh->established, took, base, sh->closed);
    /* the members closed every connection of the attacker's */
    ck_assert_int_eq(sh->closed, sh->established);
    /* a held connection cost 60 s each before; far above the usual time */
    ck_assert_msg(took <= 10 * base + 5, "%s: set-up took %.1f s, %.3f s without the attacker",
                  attack_name[attack], took, base);
    munmap(sh, sizeof(*sh));
}
END_TEST

/* The first member accepts no one: it never listens. */
START_TEST(test_first_never_listens)
{
    shared_t *sh = run(NONE, CRUX_NET_SETUP_TIMEOUT_MS, -1, 0);
    ck_assert_int_eq(sh->ports[0], 0);
    for (int r = 1; r < MEMBERS; r++) {
        ck_assert_int_ne(sh->ports[r], 0);
    }
    munmap(sh, sizeof(*sh));
}
END_TEST

/* Member 0 connects 3 s after the exchange; with a 300 ms deadline the
 * others give up then, and all fail alike. */
START_TEST(test_deadline)
{
    shared_t *sh = run(NONE, 300, 0, 3);
    for (int r = 0; r < MEMBERS; r++) {
        ck_assert_int_eq(sh->status[r], CRUX_ERR_PEER);
    }
    ck_assert_ptr_nonnull(strstr(sh->err[1], "timed out after 300 ms"));
    ck_assert_ptr_nonnull(strstr(sh->err[2], "timed out after 300 ms"));
    munmap(sh, sizeof(*sh));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("net_hostile");
    TCase *t = tcase_create("net_hostile");
    tcase_set_timeout(t, 300);
    tcase_add_unchecked_fixture(t, other_user_make, other_user_remove);
    tcase_add_loop_test(t, test_attacks, 0, GARBAGE - HOLD + 1);
    tcase_add_test(t, test_first_never_listens);
    tcase_add_test(t, test_deadline);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

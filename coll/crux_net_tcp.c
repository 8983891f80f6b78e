/* The TCP channel between nodes (crux_net.h).
 *
 * Set-up: every member listens on its chosen address, the addresses and a
 * random token per member go round the out-of-band allgather, each member
 * connects to every higher-ranked one (the listener's backlog completes
 * those connections before anyone accepts, so the order cannot deadlock)
 * and accepts the lower-ranked ones, which prove who they are with their
 * rank and token.
 *
 * Steps (their list and reduction: crux_net_step.c): each connection
 * carries the steps' bytes in the order they were started, one stream each
 * way; each peer's send and receive cursor walks the list of steps, and a
 * step whose cursors have all passed is reduced.  Nothing blocks: a test
 * moves what the sockets take and give. */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coll/crux_net_internal.h"
#include "coll/crux_oob.h"

#define NET_MAGIC 0x63727578u /* "crux" */
/* How long set-up waits for a peer's connection or hello. */
#define NET_SETUP_TIMEOUT_MS 60000

typedef struct {
    int fd;
    crux_net_op_t *send, *recv; /* the step each stream is at; NULL: none started */
    size_t send_off, recv_off;
    int pinned_port; /* the source port that pins its path (crux_net_path.c), or -1 */
} net_peer_t;

typedef struct {
    crux_net_t base;
    net_peer_t *peers; /* peers[rank].fd is -1 */
    int family;
    int tos, priority;            /* the marking in force */
    const crux_net_path_t *paths; /* during set-up: the path to take to each member, or NULL */
} net_tcp_t;

/* What each member tells the others. */
typedef struct {
    struct sockaddr_storage addr;
    uint32_t len;
    int32_t status;
    uint64_t token;
} net_card_t;

typedef struct {
    uint32_t magic;
    int32_t rank;
    uint64_t token;
} net_hello_t;

static int mark_socket(int fd, int family, int tos, int priority)
{
    int rc = family == AF_INET6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos))
                                : setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
    if (rc != 0) {
        return CRUX_ERR_IO;
    }
    /* after IP_TOS, which on IPv4 resets the priority from the TOS */
    return setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &priority, sizeof(priority)) == 0
               ? CRUX_OK
               : CRUX_ERR_NO_RESOURCE;
}

static int tcp_set_level(crux_net_t *base, const crux_net_level_t *level)
{
    net_tcp_t *net = (net_tcp_t *)base;
    int tos = crux_net_tos(level), priority = crux_net_socket_priority(level);
    if (tos == net->tos && priority == net->priority) {
        return 0;
    }
    int status = CRUX_OK;
    for (int p = 0; p < net->base.size; p++) {
        if (net->peers[p].fd >= 0) {
            int rc = mark_socket(net->peers[p].fd, net->family, tos, priority);
            status = status != CRUX_OK ? status : rc;
        }
    }
    net->tos = tos;
    net->priority = priority;
    return status != CRUX_OK ? status : 1;
}

crux_status_t crux_net_marks_in_force(const crux_net_t *base, int *tos, int *priority)
{
    if (base->kind != CRUX_NET_TCP) {
        return CRUX_ERR_UNSUPPORTED;
    }
    const net_tcp_t *net = (const net_tcp_t *)base;
    *tos = *priority = -1;
    for (int p = 0; p < net->base.size; p++) {
        int fd = net->peers[p].fd, t = -1, prio = -1;
        socklen_t len = sizeof(t), plen = sizeof(prio);
        if (fd < 0) {
            continue;
        }
        int rc = net->family == AF_INET6 ? getsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &t, &len)
                                         : getsockopt(fd, IPPROTO_IP, IP_TOS, &t, &len);
        if (rc != 0 || getsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, &plen) != 0) {
            return CRUX_ERR_IO;
        }
        if ((*tos >= 0 && t != *tos) || (*priority >= 0 && prio != *priority)) {
            return CRUX_ERR_INVALID;
        }
        *tos = t;
        *priority = prio;
    }
    return CRUX_OK;
}

/* Wait for 'events' on fd; 0 when ready, -1 on timeout or error. */
static int wait_fd(int fd, short events)
{
    struct pollfd p = { .fd = fd, .events = events };
    int rc;
    do {
        rc = poll(&p, 1, NET_SETUP_TIMEOUT_MS);
    } while (rc < 0 && errno == EINTR);
    return rc == 1 ? 0 : -1;
}

static int read_full(int fd, void *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        if (wait_fd(fd, POLLIN) != 0) {
            return -1;
        }
        ssize_t n = recv(fd, (char *)buf + got, len - got, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            return -1;
        }
        got += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
    size_t put = 0;
    while (put < len) {
        if (wait_fd(fd, POLLOUT) != 0) {
            return -1;
        }
        ssize_t n = send(fd, (const char *)buf + put, len - put, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return -1;
        }
        put += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

static int tune_socket(int fd, int family, int tos, int priority)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        return -1;
    }
    mark_socket(fd, family, tos, priority); /* refusals show at the first set_level */
    return 0;
}

/* Listen on the chosen address, marked (the handshake's replies take the
 * listener's marking); fills *card. */
static crux_status_t listen_on(const net_tcp_t *net, const char *where, net_card_t *card, int *fd_p,
                               char *err, size_t errlen)
{
    socklen_t len;
    crux_status_t status = crux_net_local_address(where, &card->addr, &len, err, errlen);
    if (status != CRUX_OK) {
        return status;
    }
    int fd = socket(card->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        mark_socket(fd, card->addr.ss_family, net->tos, net->priority);
    }
    if (fd < 0 || bind(fd, (struct sockaddr *)&card->addr, len) != 0 ||
        listen(fd, net->base.size) != 0 ||
        getsockname(fd, (struct sockaddr *)&card->addr, &len) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot listen on a TCP socket: %s", strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return CRUX_ERR_IO;
    }
    card->len = len;
    *fd_p = fd;
    return CRUX_OK;
}

static crux_status_t connect_up(net_tcp_t *net, const net_card_t *cards, const net_card_t *mine,
                                char *err, size_t errlen)
{
    for (int p = net->base.rank + 1; p < net->base.size; p++) {
        const net_card_t *c = &cards[p];
        if (c->len == 0 || c->len > sizeof(c->addr) || c->addr.ss_family != net->family) {
            snprintf(err, errlen, "member %d gave an unusable address", p);
            return CRUX_ERR_PEER;
        }
        int fd = net->paths != NULL
                     ? crux_net_path_socket(net->family, &mine->addr, &c->addr, net->paths[p],
                                            &net->peers[p].pinned_port)
                     : socket(net->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        net->peers[p].fd = fd;
        net_hello_t hello = { NET_MAGIC, net->base.rank, mine->token };
        /* marked before connecting, so the handshake already is */
        if (fd < 0 || tune_socket(fd, net->family, net->tos, net->priority) != 0) {
            snprintf(err, errlen, "cannot make a TCP socket: %s", strerror(errno));
            return CRUX_ERR_IO;
        }
        int rc = connect(fd, (const struct sockaddr *)&c->addr, c->len);
        int error = 0;
        socklen_t elen = sizeof(error);
        if (rc != 0 && errno == EINPROGRESS && wait_fd(fd, POLLOUT) == 0 &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &elen) == 0 && error == 0) {
            rc = 0;
        }
        if (rc != 0 || write_full(fd, &hello, sizeof(hello)) != 0) {
            char text[64];
            crux_net_format_address(&c->addr, text, sizeof(text));
            snprintf(err, errlen, "cannot connect to member %d at %s: %s", p, text,
                     strerror(error ? error : errno));
            return CRUX_ERR_PEER;
        }
    }
    return CRUX_OK;
}

static crux_status_t accept_down(net_tcp_t *net, int lfd, const net_card_t *cards, char *err,
                                 size_t errlen)
{
    for (int n = 0; n < net->base.rank; n++) {
        int fd = -1;
        while (fd < 0) {
            if (wait_fd(lfd, POLLIN) != 0) {
                snprintf(err, errlen, "members below %d did not all connect within %d s",
                         net->base.rank, NET_SETUP_TIMEOUT_MS / 1000);
                return CRUX_ERR_PEER;
            }
            fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0 && errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
                snprintf(err, errlen, "accept: %s", strerror(errno));
                return CRUX_ERR_IO;
            }
        }
        net_hello_t hello;
        int ok = tune_socket(fd, net->family, net->tos, net->priority) == 0 &&
                 read_full(fd, &hello, sizeof(hello)) == 0 && hello.magic == NET_MAGIC &&
                 hello.rank >= 0 && hello.rank < net->base.rank && net->peers[hello.rank].fd < 0 &&
                 hello.token == cards[hello.rank].token;
        if (!ok) {
            /* a stray or forged connection: not counted */
            close(fd);
            n--;
            continue;
        }
        net->peers[hello.rank].fd = fd;
    }
    return CRUX_OK;
}

static const crux_net_ops_t tcp_ops;

crux_status_t crux_net_tcp_create(const crux_coll_oob_t *oob, const char *where,
                                  const crux_net_level_t *level, crux_net_t **net_p, char *err,
                                  size_t errlen)
{
    return crux_net_tcp_create_pinned(oob, where, level, NULL, net_p, err, errlen);
}

int crux_net_pinned_port(const crux_net_t *base, int member)
{
    const net_tcp_t *net = (const net_tcp_t *)base;
    return base->kind == CRUX_NET_TCP && member >= 0 && member < base->size
               ? net->peers[member].pinned_port
               : -1;
}

crux_status_t crux_net_tcp_create_pinned(const crux_coll_oob_t *oob, const char *where,
                                         const crux_net_level_t *level,
                                         const crux_net_path_t *paths, crux_net_t **net_p,
                                         char *err, size_t errlen)
{
    *net_p = NULL;
    err[0] = '\0';
    net_tcp_t *net = calloc(1, sizeof(*net));
    net_card_t *all = calloc((size_t)oob->size, sizeof(*all));
    if (net == NULL || all == NULL ||
        (net->peers = calloc((size_t)oob->size, sizeof(*net->peers))) == NULL) {
        snprintf(err, errlen, "out of memory");
        free(all);
        free(net);
        return CRUX_ERR_NO_MEMORY;
    }
    crux_net_init(&net->base, &tcp_ops, CRUX_NET_TCP, oob->rank, oob->size);
    net->tos = crux_net_tos(level);
    net->priority = crux_net_socket_priority(level);
    for (int p = 0; p < oob->size; p++) {
        net->peers[p].fd = -1;
        net->peers[p].pinned_port = -1;
    }
    net->paths = paths;
    net_card_t mine = { .status = CRUX_OK };
    int lfd = -1;
    if (getrandom(&mine.token, sizeof(mine.token), 0) != (ssize_t)sizeof(mine.token)) {
        mine.status = CRUX_ERR_IO;
        snprintf(err, errlen, "no random token");
    } else {
        mine.status = listen_on(net, where, &mine, &lfd, err, errlen);
    }
    /* everyone's card, and the first failure among them */
    crux_status_t status = CRUX_ERR_PEER;
    if (oob->allgather(&mine, all, sizeof(mine), oob->arg) == 0) {
        status = CRUX_OK;
        for (int p = 0; p < oob->size && status == CRUX_OK; p++) {
            status = (crux_status_t)all[p].status;
        }
    }
    if (status == CRUX_OK) {
        net->family = mine.addr.ss_family;
        crux_net_format_address(&mine.addr, net->base.address, sizeof(net->base.address));
        status = connect_up(net, all, &mine, err, errlen);
        if (status == CRUX_OK) {
            status = accept_down(net, lfd, all, err, errlen);
        }
        status = crux_oob_agree(oob, status, 1, NULL);
    }
    free(all);
    net->paths = NULL;
    if (lfd >= 0) {
        close(lfd);
    }
    if (status != CRUX_OK) {
        crux_net_destroy(&net->base);
        return status;
    }
    *net_p = &net->base;
    return CRUX_OK;
}

static void tcp_close(crux_net_t *base)
{
    net_tcp_t *net = (net_tcp_t *)base;
    for (int p = 0; net->peers != NULL && p < base->size; p++) {
        if (net->peers[p].fd >= 0) {
            close(net->peers[p].fd);
        }
    }
    free(net->peers);
    net->peers = NULL;
}

/* error 0: the peer closed its end */
static void fail(crux_net_t *net, int error)
{
    net->failed = error == 0 || error == ECONNRESET || error == EPIPE || error == ETIMEDOUT ||
                          error == EHOSTUNREACH
                      ? CRUX_ERR_PEER
                      : CRUX_ERR_IO;
}

/* Move what the socket of peer p takes and gives now. */
static void progress_peer(net_tcp_t *net, net_peer_t *peer, int p)
{
    crux_net_t *base = &net->base;
    while (peer->send != NULL) {
        crux_net_op_t *op = peer->send;
        ssize_t n = send(peer->fd, op->buf + peer->send_off, op->bytes - peer->send_off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                fail(base, errno);
                return;
            }
            break;
        }
        base->sent += (uint64_t)n;
        peer->send_off += (size_t)n;
        if (peer->send_off == op->bytes) {
            peer->send = op->next;
            peer->send_off = 0;
            crux_net_passed(base, op);
        }
    }
    while (peer->recv != NULL) {
        crux_net_op_t *op = peer->recv;
        ssize_t n = recv(peer->fd, crux_net_slot(op, p) + peer->recv_off,
                         op->bytes - peer->recv_off, MSG_DONTWAIT);
        if (n <= 0) {
            if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                fail(base, n == 0 ? 0 : errno);
            }
            return;
        }
        peer->recv_off += (size_t)n;
        if (peer->recv_off == op->bytes) {
            peer->recv = op->next;
            peer->recv_off = 0;
            crux_net_passed(base, op);
        }
    }
}

static void tcp_progress(crux_net_t *base)
{
    net_tcp_t *net = (net_tcp_t *)base;
    for (int p = 0; p < base->size && base->failed == CRUX_OK; p++) {
        if (p != base->rank) {
            progress_peer(net, &net->peers[p], p);
        }
    }
}

static crux_status_t tcp_post(crux_net_t *base, crux_net_op_t *op)
{
    net_tcp_t *net = (net_tcp_t *)base;
    for (int p = 0; p < base->size; p++) {
        net_peer_t *peer = &net->peers[p];
        if (p == base->rank) {
            continue;
        }
        /* a stream past every step so far takes this one next */
        if (peer->send == NULL) {
            peer->send = op;
        }
        if (peer->recv == NULL) {
            peer->recv = op;
        }
    }
    return CRUX_OK;
}

/* Until a socket with a step on it is ready (or the time is up). */
static void tcp_wait(crux_net_t *base, int timeout_ms)
{
    net_tcp_t *net = (net_tcp_t *)base;
    struct pollfd fds[64];
    int n = 0;
    for (int p = 0; p < base->size; p++) {
        const net_peer_t *peer = &net->peers[p];
        if (p == base->rank || peer->fd < 0 || (peer->send == NULL && peer->recv == NULL)) {
            continue;
        }
        if (n == (int)(sizeof(fds) / sizeof(fds[0]))) {
            return; /* more peers than one poll looks at: the caller polls */
        }
        fds[n++] = (struct pollfd){ .fd = peer->fd,
                                    .events = (short)((peer->send != NULL ? POLLOUT : 0) |
                                                      (peer->recv != NULL ? POLLIN : 0)) };
    }
    if (n > 0) {
        (void)poll(fds, (nfds_t)n, timeout_ms);
    }
}

static const crux_net_ops_t tcp_ops = {
    .post = tcp_post,
    .progress = tcp_progress,
    .set_level = tcp_set_level,
    .close = tcp_close,
    .wait = tcp_wait,
};

/* The TCP channel between nodes (crux_net.h).
 *
 * Set-up: every member but the first listens on its chosen address, the
 * addresses and a random token per member go round the out-of-band
 * allgather, each member connects to every higher-ranked one and accepts
 * the lower-ranked ones, which prove who they are with their rank and
 * token.  Anyone on the network can connect to a listener, so set-up never
 * waits on one connection: it polls the listener, its own connections and
 * every accepted one at once, under one deadline counted from the
 * allgather (when the last member has arrived), drops a connection as soon
 * as a byte of it is not a peer's hello, and closes the listener, with
 * whatever it still holds, the moment the last lower-ranked member is in.
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
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "coll/net/crux_net_internal.h"
#include "coll/oob/crux_oob_internal.h"

#define NET_MAGIC 0x63727578u /* "crux" */
/* Connections accepted but not yet proven a peer's, at most (beyond it the
 * oldest is dropped: a peer's hello comes with its connection). */
#define NET_MAX_PENDING 64

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
    /* the first member accepts no one: it binds (for its address) but never
     * listens; the others queue as many connections as the host allows, so
     * that strangers' connections do not crowd the peers' out */
    if (fd < 0 || bind(fd, (struct sockaddr *)&card->addr, len) != 0 ||
        (net->base.rank > 0 && listen(fd, SOMAXCONN) != 0) ||
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

/* ---- set-up: one deadline, nothing waited on alone ---- */

typedef struct {
    int fd;
    size_t got;
    net_hello_t hello;
} net_pending_t;

typedef struct {
    net_tcp_t *net;
    const net_card_t *cards;
    uint64_t token;     /* this member's */
    int lfd;            /* -1 once every lower-ranked member is in */
    int lower_missing;  /* lower-ranked members not yet in */
    int upper_missing;  /* higher-ranked members not yet sent a whole hello */
    size_t *hello_sent; /* bytes of the hello sent to each member */
    net_pending_t pending[NET_MAX_PENDING];
    int npending;
} net_setup_t;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Start a non-blocking connection to higher-ranked member p. */
static crux_status_t start_connect(net_setup_t *st, int p, char *err, size_t errlen)
{
    net_tcp_t *net = st->net;
    const net_card_t *c = &st->cards[p];
    if (c->len == 0 || c->len > sizeof(c->addr) || c->addr.ss_family != net->family) {
        snprintf(err, errlen, "member %d gave an unusable address", p);
        return CRUX_ERR_PEER;
    }
    const net_card_t *mine = &st->cards[net->base.rank];
    int fd = net->paths != NULL ? crux_net_path_socket(net->family, &mine->addr, &c->addr,
                                                       net->paths[p], &net->peers[p].pinned_port)
                                : socket(net->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    net->peers[p].fd = fd;
    /* marked before connecting, so the handshake already is */
    if (fd < 0 || tune_socket(fd, net->family, net->tos, net->priority) != 0) {
        snprintf(err, errlen, "cannot make a TCP socket: %s", strerror(errno));
        return CRUX_ERR_IO;
    }
    if (connect(fd, (const struct sockaddr *)&c->addr, c->len) != 0 && errno != EINPROGRESS) {
        char text[64];
        crux_net_format_address(&c->addr, text, sizeof(text));
        snprintf(err, errlen, "cannot connect to member %d at %s: %s", p, text, strerror(errno));
        return CRUX_ERR_PEER;
    }
    return CRUX_OK;
}

/* Member p's connection can be written: finish connecting, send what is
 * left of the hello. */
static crux_status_t advance_connect(net_setup_t *st, int p, char *err, size_t errlen)
{
    net_tcp_t *net = st->net;
    int fd = net->peers[p].fd, error = 0;
    socklen_t elen = sizeof(error);
    net_hello_t hello = { NET_MAGIC, net->base.rank, st->token };
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &elen) != 0) {
        error = errno;
    }
    if (error == 0) {
        ssize_t n = send(fd, (const char *)&hello + st->hello_sent[p],
                         sizeof(hello) - st->hello_sent[p], MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            st->hello_sent[p] += (size_t)n;
            st->upper_missing -= st->hello_sent[p] == sizeof(hello);
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            error = errno;
        }
    }
    if (error != 0) {
        char text[64];
        crux_net_format_address(&st->cards[p].addr, text, sizeof(text));
        snprintf(err, errlen, "cannot connect to member %d at %s: %s", p, text, strerror(error));
        return CRUX_ERR_PEER;
    }
    return CRUX_OK;
}

static void drop_pending(net_setup_t *st, int i)
{
    close(st->pending[i].fd);
    st->pending[i] = st->pending[--st->npending];
}

/* Read what a pending connection has sent; drop it at the first byte that
 * is not a lower-ranked peer's hello, keep it while its hello is partial,
 * make it the peer's connection once whole. */
static void advance_pending(net_setup_t *st, int i)
{
    net_tcp_t *net = st->net;
    net_pending_t *pc = &st->pending[i];
    ssize_t n =
        recv(pc->fd, (char *)&pc->hello + pc->got, sizeof(pc->hello) - pc->got, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        drop_pending(st, i);
        return;
    }
    pc->got += n > 0 ? (size_t)n : 0;
    const net_hello_t *h = &pc->hello;
    int bad = (pc->got >= sizeof(h->magic) && h->magic != NET_MAGIC) ||
              (pc->got >= offsetof(net_hello_t, token) &&
               (h->rank < 0 || h->rank >= net->base.rank || net->peers[h->rank].fd >= 0)) ||
              (pc->got == sizeof(*h) && h->token != st->cards[h->rank].token);
    if (bad) {
        drop_pending(st, i); /* a stray or forged connection: not counted */
        return;
    }
    if (pc->got == sizeof(*h)) {
        net->peers[h->rank].fd = pc->fd;
        st->pending[i] = st->pending[--st->npending];
        st->lower_missing--;
    }
}

/* Take every connection the listener has queued. */
static crux_status_t accept_all(net_setup_t *st, char *err, size_t errlen)
{
    for (;;) {
        int fd = accept4(st->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
                errno == ECONNABORTED) {
                return CRUX_OK;
            }
            snprintf(err, errlen, "accept: %s", strerror(errno));
            return CRUX_ERR_IO;
        }
        if (tune_socket(fd, st->net->family, st->net->tos, st->net->priority) != 0) {
            close(fd);
            continue;
        }
        if (st->npending == NET_MAX_PENDING) {
            drop_pending(st, 0); /* the oldest: a peer's hello would be in by now */
        }
        st->pending[st->npending++] = (net_pending_t){ .fd = fd };
        advance_pending(st, st->npending - 1); /* a peer's hello is usually there */
    }
}

/* The listener's work is done: close it and whatever it still holds. */
static void stop_listening(net_setup_t *st)
{
    while (st->npending > 0) {
        drop_pending(st, st->npending - 1);
    }
    if (st->lfd >= 0) {
        close(st->lfd);
    }
    st->lfd = -1;
}

/* Connect to every higher-ranked member and accept every lower-ranked one,
 * all at once, until done or timeout_ms have passed. */
static crux_status_t connect_all(net_setup_t *st, int timeout_ms, char *err, size_t errlen)
{
    net_tcp_t *net = st->net;
    int size = net->base.size, rank = net->base.rank;
    int64_t deadline = now_ms() + timeout_ms;
    crux_status_t status = CRUX_OK;
    for (int p = rank + 1; p < size && status == CRUX_OK; p++) {
        status = start_connect(st, p, err, errlen);
    }
    struct pollfd *pfd = calloc((size_t)size + 1 + NET_MAX_PENDING, sizeof(*pfd));
    if (pfd == NULL) {
        snprintf(err, errlen, "out of memory");
        return CRUX_ERR_NO_MEMORY;
    }
    while (status == CRUX_OK && (st->lower_missing > 0 || st->upper_missing > 0)) {
        if (st->lower_missing == 0) {
            stop_listening(st);
        }
        int n = 0, first_pending, first_upper;
        if (st->lfd >= 0) {
            pfd[n++] = (struct pollfd){ .fd = st->lfd, .events = POLLIN };
        }
        first_pending = n;
        for (int i = 0; i < st->npending; i++) {
            pfd[n++] = (struct pollfd){ .fd = st->pending[i].fd, .events = POLLIN };
        }
        first_upper = n;
        for (int p = rank + 1; p < size; p++) {
            pfd[n++] = (struct pollfd){
                .fd = st->hello_sent[p] < sizeof(net_hello_t) ? net->peers[p].fd : -1,
                .events = POLLOUT,
            };
        }
        int64_t left = deadline - now_ms();
        int rc = left > 0 ? poll(pfd, (nfds_t)n, (int)left) : 0;
        if (rc < 0 && errno == EINTR) {
            continue;
        }
        if (rc < 0) {
            snprintf(err, errlen, "poll: %s", strerror(errno));
            status = CRUX_ERR_IO;
            break;
        }
        if (rc == 0) {
            snprintf(err, errlen,
                     "set-up timed out after %d ms: %d lower-ranked members not connected, "
                     "%d higher-ranked ones not reached",
                     timeout_ms, st->lower_missing, st->upper_missing);
            status = CRUX_ERR_PEER;
            break;
        }
        for (int p = rank + 1; p < size && status == CRUX_OK; p++) {
            if (pfd[first_upper + p - rank - 1].revents != 0) {
                status = advance_connect(st, p, err, errlen);
            }
        }
        /* backwards: advancing one may move the last into its place */
        for (int i = first_upper - first_pending - 1; i >= 0 && status == CRUX_OK; i--) {
            if (pfd[first_pending + i].revents != 0) {
                advance_pending(st, i);
            }
        }
        if (status == CRUX_OK && st->lfd >= 0 && (pfd[0].revents & POLLIN)) {
            status = accept_all(st, err, errlen);
        }
    }
    free(pfd);
    return status;
}

static const crux_net_ops_t tcp_ops;

crux_status_t crux_net_tcp_create(const crux_coll_oob_t *oob, const char *where,
                                  int setup_timeout_ms, const crux_net_level_t *level,
                                  crux_net_t **net_p, char *err, size_t errlen)
{
    return crux_net_tcp_create_pinned(oob, where, setup_timeout_ms, level, NULL, net_p, err,
                                      errlen);
}

int crux_net_pinned_port(const crux_net_t *base, int member)
{
    const net_tcp_t *net = (const net_tcp_t *)base;
    return base->kind == CRUX_NET_TCP && member >= 0 && member < base->size
               ? net->peers[member].pinned_port
               : -1;
}

crux_status_t crux_net_tcp_create_pinned(const crux_coll_oob_t *oob, const char *where,
                                         int setup_timeout_ms, const crux_net_level_t *level,
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
        net_setup_t st = { .net = net,
                           .cards = all,
                           .token = mine.token,
                           .lfd = lfd,
                           .lower_missing = oob->rank,
                           .upper_missing = oob->size - 1 - oob->rank,
                           .hello_sent = calloc((size_t)oob->size, sizeof(size_t)) };
        lfd = -1; /* the set-up's now */
        if (st.hello_sent == NULL) {
            snprintf(err, errlen, "out of memory");
            status = CRUX_ERR_NO_MEMORY;
        } else {
            status = connect_all(&st, setup_timeout_ms, err, errlen);
        }
        stop_listening(&st);
        free(st.hello_sent);
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

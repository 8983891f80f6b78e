/* Pinning a TCP connection of the channel between nodes to a planned path
 * (crux_net.h, crux_net_tcp_create_pinned).
 *
 * The Crux paper pins a job's traffic to the path it selected by choosing
 * the UDP source port that the switches' ECMP hash puts on that path.  Here
 * the choice is made where the host routes over several next hops with an
 * L4 hash (a Linux multipath route, fib_multipath_hash_policy 1): the
 * kernel answers which next hop a 5-tuple takes (RTM_GETROUTE with the
 * ports, what `ip route get ... ipproto tcp sport S dport D` asks), so the
 * connection's source port is bound to one whose answer is the planned next
 * hop.  Candidate path i of n (crux-sched's numbering) is the route's i-th
 * next hop in address order; that holds where the fabric numbers its next
 * hops in the order its cluster file lists them (scripts/testbed does).
 * When the route has not exactly n next hops (a single path, or a fabric
 * that hashes where the host cannot ask), nothing is pinned.
 *
 * Only the connecting side chooses: both directions of a connection take
 * one path when the fabric hashes them alike, which Linux's L4 hash does
 * (with the same fib_multipath_hash_seed on every host), and which the
 * planner assumes for clusters with "symmetric_paths". */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "coll/net/crux_net_internal.h"

#define PATH_PROBES     64 /* route questions to find the next hops; tries to bind */
#define PATH_MAX_HOPS   16 /* next hops of one route that are told apart */
#define NETLINK_WAIT_MS 1000

typedef struct {
    struct nlmsghdr h;
    struct rtmsg r;
    char attrs[64];
} route_ask_t;

static void add_attr(route_ask_t *q, unsigned short type, const void *data, size_t len)
{
    struct rtattr *a = (struct rtattr *)((char *)q + NLMSG_ALIGN(q->h.nlmsg_len));
    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(len);
    memcpy(RTA_DATA(a), data, len);
    q->h.nlmsg_len = NLMSG_ALIGN(q->h.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/* The next hop the kernel routes this TCP 5-tuple through: its gateway
 * address (host order), or, for a route without one, 0x100000000 + the
 * output interface; -1 when it cannot be told.  Ports in network order. */
static int64_t next_hop(int nl, const struct sockaddr_in *src, const struct sockaddr_in *dst,
                        uint16_t sport, uint16_t dport)
{
    static uint32_t seq;
    route_ask_t q;
    memset(&q, 0, sizeof(q));
    q.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg));
    q.h.nlmsg_type = RTM_GETROUTE;
    q.h.nlmsg_flags = NLM_F_REQUEST;
    q.h.nlmsg_seq = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
    q.r.rtm_family = AF_INET;
    q.r.rtm_dst_len = 32;
    q.r.rtm_src_len = 32;
    uint8_t proto = IPPROTO_TCP;
    add_attr(&q, RTA_DST, &dst->sin_addr, 4);
    add_attr(&q, RTA_SRC, &src->sin_addr, 4);
    add_attr(&q, RTA_IP_PROTO, &proto, 1);
    add_attr(&q, RTA_SPORT, &sport, 2);
    add_attr(&q, RTA_DPORT, &dport, 2);
    if (send(nl, &q, q.h.nlmsg_len, 0) != (ssize_t)q.h.nlmsg_len) {
        return -1;
    }
    char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
    for (;;) { /* skip answers to earlier questions */
        struct pollfd p = { .fd = nl, .events = POLLIN };
        if (poll(&p, 1, NETLINK_WAIT_MS) != 1) {
            return -1;
        }
        ssize_t n = recv(nl, buf, sizeof(buf), 0);
        if (n < 0) {
            return -1;
        }
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_seq != q.h.nlmsg_seq) {
                continue;
            }
            if (h->nlmsg_type != RTM_NEWROUTE ||
                h->nlmsg_len < NLMSG_LENGTH(sizeof(struct rtmsg))) {
                return -1; /* an error: no route */
            }
            struct rtmsg *r = NLMSG_DATA(h);
            int len = (int)RTM_PAYLOAD(h);
            int64_t oif = -1;
            for (struct rtattr *a = RTM_RTA(r); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
                if (a->rta_type == RTA_GATEWAY && RTA_PAYLOAD(a) == 4) {
                    uint32_t gw;
                    memcpy(&gw, RTA_DATA(a), 4);
                    return (int64_t)ntohl(gw);
                }
                if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) == 4) {
                    uint32_t i;
                    memcpy(&i, RTA_DATA(a), 4);
                    oif = ((int64_t)1 << 32) + i;
                }
            }
            return oif;
        }
    }
}

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The route's next hops, in address order, from up to PATH_PROBES
 * questions with source ports spread over the ephemeral range; stops once
 * `want` are known.  Returns how many were found (0 on failure). */
static int next_hops(int nl, const struct sockaddr_in *src, const struct sockaddr_in *dst, int want,
                     int64_t *hops)
{
    int n = 0;
    for (int i = 0; i < PATH_PROBES && n < want; i++) {
        uint16_t port = htons((uint16_t)(32768 + (i * 7919) % 28000));
        int64_t h = next_hop(nl, src, dst, port, dst->sin_port);
        if (h < 0) {
            return 0;
        }
        int known = 0;
        for (int k = 0; k < n && !known; k++) {
            known = hops[k] == h;
        }
        if (!known && n < PATH_MAX_HOPS) {
            hops[n++] = h;
        }
    }
    qsort(hops, (size_t)n, sizeof(*hops), by_value);
    return n;
}

int crux_net_path_socket(int family, const struct sockaddr_storage *local,
                         const struct sockaddr_storage *remote, crux_net_path_t want, int *pinned)
{
    *pinned = -1;
    if (family != AF_INET || local->ss_family != AF_INET || remote->ss_family != AF_INET ||
        want.count < 2 || want.count > PATH_MAX_HOPS || want.index < 0 ||
        want.index >= want.count) {
        return socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    }
    struct sockaddr_in src = *(const struct sockaddr_in *)local;
    const struct sockaddr_in *dst = (const struct sockaddr_in *)remote;
    src.sin_port = 0;
    int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    int64_t hops[PATH_MAX_HOPS];
    if (nl < 0 || next_hops(nl, &src, dst, want.count, hops) != want.count) {
        if (nl >= 0) {
            close(nl); /* not the fabric the plan knows: nothing pinned */
        }
        return socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    }
    /* bind to ports the kernel picks until one takes the planned hop */
    int fd = -1;
    for (int i = 0; i < PATH_PROBES; i++) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in bound;
        socklen_t len = sizeof(bound);
        if (fd < 0 || bind(fd, (const struct sockaddr *)&src, sizeof(src)) != 0 ||
            getsockname(fd, (struct sockaddr *)&bound, &len) != 0) {
            break;
        }
        if (next_hop(nl, &src, dst, bound.sin_port, dst->sin_port) == hops[want.index]) {
            *pinned = ntohs(bound.sin_port);
            close(nl);
            return fd;
        }
        close(fd);
        fd = -1;
    }
    if (fd >= 0) {
        close(fd);
    }
    close(nl);
    return socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

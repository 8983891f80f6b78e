/* The local address a TCP channel listens on (crux_net_tcp_create's
 * 'where'): the first non-loopback IPv4 address that is up, an interface
 * by name, or the address inside an IPv4 subnet. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/net/crux_net_internal.h"

/* "a.b.c.d/n" into a network and mask; 0 when 'where' is not one. */
static int parse_subnet(const char *where, uint32_t *net, uint32_t *mask)
{
    char text[INET_ADDRSTRLEN + 4];
    const char *slash = strchr(where, '/');
    if (slash == NULL || (size_t)(slash - where) >= INET_ADDRSTRLEN) {
        return 0;
    }
    memcpy(text, where, (size_t)(slash - where));
    text[slash - where] = '\0';
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    struct in_addr a;
    if (*end != '\0' || end == slash + 1 || bits < 0 || bits > 32 ||
        inet_pton(AF_INET, text, &a) != 1) {
        return 0;
    }
    *mask = bits == 0 ? 0 : htonl(~0u << (32 - bits));
    *net = a.s_addr & *mask;
    return 1;
}

crux_status_t crux_net_local_address(const char *where, struct sockaddr_storage *addr,
                                     socklen_t *len, char *err, size_t errlen)
{
    int any = where == NULL || where[0] == '\0';
    uint32_t net = 0, mask = 0;
    int subnet = !any && parse_subnet(where, &net, &mask);
    if (!any && !subnet && strchr(where, '/') != NULL) {
        snprintf(err, errlen, "'%s' is neither an interface nor an IPv4 subnet a.b.c.d/n", where);
        return CRUX_ERR_INVALID;
    }
    struct ifaddrs *list;
    if (getifaddrs(&list) != 0) {
        snprintf(err, errlen, "cannot list the network interfaces");
        return CRUX_ERR_IO;
    }
    int found = 0;
    for (struct ifaddrs *i = list; i != NULL && !found; i = i->ifa_next) {
        if (i->ifa_addr == NULL || !(i->ifa_flags & IFF_UP)) {
            continue;
        }
        int family = i->ifa_addr->sa_family;
        if (family != AF_INET && (family != AF_INET6 || any || subnet)) {
            continue;
        }
        if (any) {
            found = !(i->ifa_flags & IFF_LOOPBACK);
        } else if (subnet) {
            found = (((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr & mask) == net;
        } else {
            found = strcmp(i->ifa_name, where) == 0;
        }
        if (found) {
            *len = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
            memset(addr, 0, sizeof(*addr));
            memcpy(addr, i->ifa_addr, *len);
        }
    }
    freeifaddrs(list);
    if (!found && any) {
        struct sockaddr_in *in = (struct sockaddr_in *)addr;
        memset(addr, 0, sizeof(*addr));
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = sizeof(*in);
        found = 1;
    }
    if (!found) {
        snprintf(err, errlen, "no interface address up matches '%s'", where);
        return CRUX_ERR_NOT_FOUND;
    }
    return CRUX_OK;
}

void crux_net_format_address(const struct sockaddr_storage *addr, char *text, size_t size)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (addr->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
        snprintf(text, size, "%s:%u", host, port);
    } else {
        const struct sockaddr_in6 *in = (const struct sockaddr_in6 *)addr;
        inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof(host));
        port = ntohs(in->sin6_port);
        snprintf(text, size, "[%s]:%u", host, port);
    }
}

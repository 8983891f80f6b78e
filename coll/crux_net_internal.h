/* Internal to libcrux_coll's TCP channel: finding the local address. */
#ifndef CRUX_NET_INTERNAL_H
#define CRUX_NET_INTERNAL_H

#include <sys/socket.h>

#include "coll/crux_net.h"

/* The address (port 0) crux_net_tcp_create's 'where' names. */
crux_status_t crux_net_local_address(const char *where, struct sockaddr_storage *addr,
                                     socklen_t *len, char *err, size_t errlen);
/* "a.b.c.d:port" or "[v6]:port". */
void crux_net_format_address(const struct sockaddr_storage *addr, char *text, size_t size);

#endif

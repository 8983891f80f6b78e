/* Internal to libcrux_coll's channels between nodes (crux_net.h): what
 * every channel shares (the steps in flight, their exact reduction in
 * member order, the public calls) and what each transport provides. */
#ifndef CRUX_NET_INTERNAL_H
#define CRUX_NET_INTERNAL_H

#include <sys/socket.h>

#include "coll/crux_net.h"
#include "coll/crux_reduce.h"

/* One step: this member's buffer and a slot per member for the peers'
 * contributions.  'pending' counts the peers' sends and receives not yet
 * finished; the transport calls crux_net_passed once for each. */
typedef struct crux_net_op {
    struct crux_net_op *prev, *next; /* every live step, in start order */
    unsigned char *buf;
    size_t count, bytes;
    crux_reduce_fn_t fn;
    unsigned char *slots;
    int pending;
    int done;
    void *xport; /* the transport's own state of the step (malloc'd), or NULL */
} crux_net_op_t;

typedef struct {
    /* queue a new step's sends and receives (it is already the list's tail) */
    crux_status_t (*post)(crux_net_t *net, crux_net_op_t *op);
    /* move what can be moved without waiting; failures go to net->failed */
    void (*progress)(crux_net_t *net);
    /* crux_net_set_level's contract */
    int (*set_level)(crux_net_t *net, const crux_net_level_t *level);
    /* release the transport; after it nothing may touch a step any more */
    void (*close)(crux_net_t *net);
    /* crux_net_wait's contract; NULL: return at once */
    void (*wait)(crux_net_t *net, int timeout_ms);
} crux_net_ops_t;

/* The head of every channel's own structure. */
struct crux_net {
    const crux_net_ops_t *ops;
    crux_net_kind_t kind;
    int rank, size;
    crux_net_op_t *head, *tail;
    crux_status_t failed;
    uint64_t sent;
    char address[64];
};

void crux_net_init(crux_net_t *net, const crux_net_ops_t *ops, crux_net_kind_t kind, int rank,
                   int size);
/* One of the step's sends or receives has finished; the last one reduces. */
void crux_net_passed(crux_net_t *net, crux_net_op_t *op);
/* Where member p's contribution to the step lands. */
static inline unsigned char *crux_net_slot(const crux_net_op_t *op, int p)
{
    return op->slots + (size_t)p * op->bytes;
}

/* The address (port 0) crux_net_tcp_create's 'where' names. */
crux_status_t crux_net_local_address(const char *where, struct sockaddr_storage *addr,
                                     socklen_t *len, char *err, size_t errlen);
/* A socket whose connection from `local` (its port is ignored) to `remote`
 * takes candidate path `want` (crux_net_path.c); *pinned is the source
 * port it was bound to, or -1 when nothing was pinned (then it is a plain
 * socket).  -1 with errno when no socket can be made. */
int crux_net_path_socket(int family, const struct sockaddr_storage *local,
                         const struct sockaddr_storage *remote, crux_net_path_t want, int *pinned);
/* "a.b.c.d:port" or "[v6]:port". */
void crux_net_format_address(const struct sockaddr_storage *addr, char *text, size_t size);

#endif

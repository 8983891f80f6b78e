/* libcrux_coll's channel between nodes: how the hierarchical Allreduce's
 * inter-group step (and whatever else crux moves between nodes) reaches
 * the other nodes with its job's priority level on the wire.  Part of
 * libcrux_coll's API, beside crux_coll.h.
 *
 * A channel joins the members of one cross group (member i of every node
 * group).  Creating one is collective over the caller's out-of-band
 * allgather.  There are two: over TCP every pair of members keeps one
 * connection; over UCX (UCP tag messages) each level in use has its own UCX
 * context and worker, whose endpoints reach every other member.  Each step
 * sends this member's shard to every other member, and every member
 * reduces the contributions in member order, so all get the same bits
 * whichever channel carried them.
 * Steps are nonblocking: start them in the same order on every member and
 * test them until done; a peer that dies or closes its end fails the step
 * (CRUX_ERR_PEER), never hangs it.
 *
 * Marking: the level's DSCP goes into the TOS byte of every packet
 * (IP_TOS, IPV6_TCLASS) and its class selector (DSCP >> 3, 0..7) into the
 * socket priority (SO_PRIORITY, what the host's own queueing disciplines
 * see).  On RDMA fabrics the level's InfiniBand service level and RoCE
 * traffic class (DSCP << 2) are what a queue pair carries instead: the UCX
 * channel gives them to the level's context (UCX_IB_SL and
 * UCX_IB_TRAFFIC_CLASS in that context's configuration only).  The
 * values come from the priority file as it is (its sl, tc and dscp keys):
 * crux has no table of its own. */
#ifndef CRUX_NET_H
#define CRUX_NET_H

#include <stddef.h>
#include <stdint.h>

#include "coll/crux_coll.h"

typedef struct crux_net crux_net_t;

/* Which channel a communicator's inter-node step uses; the values but
 * NONE are those of the coll_crux_net MCA parameter. */
typedef enum {
    CRUX_NET_AUTO = 0, /* RDMA when UCX has it, else TCP, else the PML */
    CRUX_NET_RDMA = 1, /* the UCX channel, where UCX has an RDMA transport */
    CRUX_NET_TCP = 2,
    CRUX_NET_PML = 3,  /* the MPI library's own point-to-point layer: unmarked */
    CRUX_NET_UCX = 4,  /* the UCX channel over whatever UCX has (its tcp too) */
    CRUX_NET_NONE = 5, /* no channel: the members share this node (never asked) */
} crux_net_kind_t;

const char *crux_net_kind_name(crux_net_kind_t kind);

/* The network settings of a level, as the priority file gives them; -1 for
 * a key that is absent. */
typedef struct {
    int sl;   /* InfiniBand service level, 0..15 */
    int tc;   /* traffic class byte, 0..255 (RoCE: DSCP << 2) */
    int dscp; /* DiffServ code point, 0..63 */
} crux_net_level_t;

#define CRUX_NET_LEVEL_NONE            \
    {                                  \
        .sl = -1, .tc = -1, .dscp = -1 \
    }

/* What a TCP socket carries for a level: the TOS byte (dscp << 2, else tc
 * without its two ECN bits, else 0) and the socket priority (the TOS's
 * class selector, 0..7). */
int crux_net_tos(const crux_net_level_t *level);
int crux_net_socket_priority(const crux_net_level_t *level);

/* What an RDMA queue pair carries for a level: the service level (sl, else
 * the DSCP's class selector, else 0) and the traffic class (tc, else
 * dscp << 2, else 0). */
void crux_net_rdma_marks(const crux_net_level_t *level, int *sl, int *traffic_class);

/* The channel to use: 'asked' when it is available ('rdma' and 'tcp' say
 * what is), else the next available of RDMA, TCP and the PML in that order
 * (AUTO: the first available).  UCX is taken as asked: it needs no RDMA. */
crux_net_kind_t crux_net_choose(crux_net_kind_t asked, int rdma, int tcp);

/* 1 when UCX has an RDMA device (InfiniBand or RoCE) on this host; 'why'
 * says what was found, or what is missing. */
int crux_net_rdma_available(char *why, size_t len);

/* Create a TCP channel over the members of 'oob'.  'where' picks the local
 * address to listen on and give the peers: NULL or "" for the first
 * non-loopback IPv4 address that is up (else 127.0.0.1), an interface name,
 * or an IPv4 subnet "a.b.c.d/n".  Connections are set up with the first
 * marking (level may be NULL: unmarked), within setup_timeout_ms of the
 * members' exchange of addresses, whatever strangers connect meanwhile.
 * On failure no member has a channel and all return the same status; 'err'
 * says why on this member. */
#define CRUX_NET_SETUP_TIMEOUT_MS 10000 /* the default of setup_timeout_ms */
crux_status_t crux_net_tcp_create(const crux_coll_oob_t *oob, const char *where,
                                  int setup_timeout_ms, const crux_net_level_t *level,
                                  crux_net_t **net_p, char *err, size_t errlen);
/* A planned path of a connection: candidate 'index' of 'count' (crux-sched's
 * numbering of the paths between two hosts); count below 2: none. */
typedef struct {
    int index, count;
} crux_net_path_t;

/* crux_net_tcp_create, with the connection this member makes to each
 * higher-ranked member p taking the path paths[p] where this host routes
 * over exactly paths[p].count next hops with an L4 hash: its source port is
 * one the kernel's multipath route hashes onto the path's next hop, the
 * index-th in address order (crux_net_path.c).  Elsewhere, and for paths[p]
 * of no path, the connection is as crux_net_tcp_create makes it.  'paths'
 * (one per member) may be NULL; it is not kept. */
crux_status_t crux_net_tcp_create_pinned(const crux_coll_oob_t *oob, const char *where,
                                         int setup_timeout_ms, const crux_net_level_t *level,
                                         const crux_net_path_t *paths, crux_net_t **net_p,
                                         char *err, size_t errlen);
/* The source port the TCP channel's connection to 'member' was pinned with,
 * or -1 (not pinned, made by the member, or not a TCP channel). */
int crux_net_pinned_port(const crux_net_t *net, int member);
/* Create a UCX channel over the members of 'oob', whose first context
 * carries 'level' (NULL: SL 0, traffic class 0).  UCX picks its transports
 * as its environment says (UCX_TLS, UCX_NET_DEVICES); the channel keeps
 * 'oob' (and its arg) for the contexts of later levels.  On failure no
 * member has a channel and all return the same status. */
crux_status_t crux_net_ucx_create(const crux_coll_oob_t *oob, const crux_net_level_t *level,
                                  crux_net_t **net_p, char *err, size_t errlen);
void crux_net_destroy(crux_net_t *net);

/* --- opening a channel: the fallbacks ------------------------------------ */

/* What opening the channel between nodes takes (plain data, the same on
 * every member but 'rail'). */
typedef struct {
    crux_net_kind_t asked; /* the coll_crux_net parameter */
    /* UCX has an RDMA device here: 1 or 0, or -1 for crux_net_open to
     * ask crux_net_rdma_available where the choice depends on it */
    int rdma;
    int local; /* the members share this node: no channel (CRUX_NET_NONE) */
    /* where the TCP channel listens: a comma-separated list of
     * crux_net_tcp_create's 'where', of which this member takes entry
     * 'rail' (modulo their number: the members of a node that share rail i
     * spread over its NICs); NULL or "": the first address up */
    const char *where;
    int rail;
    int setup_timeout_ms;   /* the TCP channel's set-up */
    crux_net_level_t level; /* the first marking */
    /* the job's route (crux_net_route_paths: the TCP connections' planned
     * paths), NULL when the job reads no priority file, "" for none; and
     * the members' host names, in member order (NULL: no paths) */
    const char *route;
    const char *const *hosts;
} crux_net_open_t;

/* Open the channel between nodes (collective over 'oob'): none when the
 * members share this node (CRUX_NET_NONE, *net_p NULL, nothing
 * exchanged); else the kind asked where it is available
 * (crux_net_choose), and when the UCX channel cannot be made the TCP
 * channel, and when that cannot either none.  Each creation agrees its
 * outcome, so every member takes the same steps down and all return the
 * same kind: CRUX_NET_UCX or CRUX_NET_TCP with the channel in *net_p, or
 * CRUX_NET_PML (*net_p NULL: the caller's own point-to-point layer).
 * 'why' says why each channel tried was not had, "no ucx channel
 * (<status>: <reason>): tcp; ...", "" when none failed. */
crux_net_kind_t crux_net_open(const crux_coll_oob_t *oob, const crux_net_open_t *open,
                              crux_net_t **net_p, char *why, size_t len);
/* Entry 'rail' (modulo their number) of the comma-separated 'list' into
 * 'entry' (truncated to 'size'); "" for a NULL list. */
void crux_net_rail_entry(const char *list, int rail, char *entry, size_t size);

/* A route of the priority file as a word: equal routes, equal hashes. */
uint64_t crux_net_route_hash(const char *route);
/* The planned paths of this member's connections from a route
 * "SRC>DST:INDEX/COUNT,..." (crux_net_route.c), the members' host names
 * in 'hosts' (this member's at 'me'), the rail-th entry of a pair (modulo
 * their number) for a member on rail 'rail'; one per member, malloc'd;
 * NULL when no entry plans a path for this member. */
crux_net_path_t *crux_net_route_paths(const char *route, const char *const *hosts, int size, int me,
                                      int rail);
/* Whether to make the TCP channel again on a new route (collective over
 * 'oob'): 1 when every member read the same route now (hash 'now') and
 * some member's connections took another ('took'); 0 otherwise, and when
 * the exchange fails.  Every member gets the same answer. */
int crux_net_route_changed(const crux_coll_oob_t *oob, uint64_t now, uint64_t took);

/* What following the route did (crux_net_follow_route), alike on every
 * member. */
typedef enum {
    CRUX_NET_ROUTE_KEPT,   /* nothing to follow: no route read, not a TCP channel,
                            * the route its connections took, or the members
                            * have not all read the same one yet */
    CRUX_NET_ROUTE_REMADE, /* the TCP channel made again on the new route */
    CRUX_NET_ROUTE_LOST,   /* it could not be: no channel now ('why' says why) */
} crux_net_route_outcome_t;

/* Follow the job's route between collectives (collective over 'oob', the
 * channel's members, called before the same collective on each): when
 * *net_p is a TCP channel and every member read the same route
 * (open->route, not NULL) that differs from the one some member's
 * connections took (*took, crux_net_route_hash), the channel is destroyed
 * and opened again over TCP (open->asked is not looked at) on the new
 * route's paths, and *took becomes its hash. */
crux_net_route_outcome_t crux_net_follow_route(const crux_coll_oob_t *oob, crux_net_t **net_p,
                                               const crux_net_open_t *open, uint64_t *took,
                                               char *why, size_t len);

/* CRUX_NET_TCP or CRUX_NET_UCX. */
crux_net_kind_t crux_net_kind(const crux_net_t *net);

/* Mark the channel's traffic with a level's settings from now on.  Call it
 * only when no step is in flight (between collectives), so a message never
 * changes band half way.  Returns 1 when the marking changed, 0 when it was
 * already so, or a negative status when it could not be applied.
 * TCP: local; the TOS byte is set first, and a socket priority above 6
 * needs CAP_NET_ADMIN (the refusal is returned, the TOS stays).
 * UCX: collective over the channel's out-of-band allgather, every member
 * calling it before the same step: all take member 0's level (each member
 * reads the priority file on its own, so they may differ for a call), and
 * the next step goes through that level's context, created (with its
 * endpoints) the first time the level is used.  A failure to create it is
 * agreed and leaves every member on the previous context. */
int crux_net_set_level(crux_net_t *net, const crux_net_level_t *level);

/* What marking the channel with a level did, to be said. */
typedef enum {
    CRUX_NET_MARK_SAME,     /* no channel, or marked so already: nothing to say */
    CRUX_NET_MARK_TCP,      /* the TCP sockets re-marked (tos, priority; status: the
                             * socket priority was refused, the TOS stands) */
    CRUX_NET_MARK_UCX,      /* the UCX channel on another context (context of
                             * contexts, its sl and traffic_class) */
    CRUX_NET_MARK_UCX_KEPT, /* ... kept on its context: status says why */
} crux_net_mark_outcome_t;

typedef struct {
    crux_net_mark_outcome_t outcome;
    crux_status_t status;
    int tos, priority;
    int context, contexts, sl, traffic_class;
} crux_net_marking_t;

/* crux_net_set_level on a channel (NULL: none, nothing done), and what
 * it did: a change of level is reported once, the same level again is
 * CRUX_NET_MARK_SAME. */
crux_net_marking_t crux_net_mark(crux_net_t *net, const crux_net_level_t *level);

/* The marking the kernel holds for the TCP channel's sockets (read back
 * from them): CRUX_OK with the TOS byte and socket priority when every
 * socket agrees, CRUX_ERR_INVALID when they differ, CRUX_ERR_UNSUPPORTED
 * for a UCX channel. */
crux_status_t crux_net_marks_in_force(const crux_net_t *net, int *tos, int *priority);

/* The UCX channel's context in use: its index in order of creation, how
 * many contexts the channel has, and the service level and traffic class
 * that context's UCX configuration holds (UCX_IB_SL, UCX_IB_TRAFFIC_CLASS,
 * read back from the configuration with ucp_config_print; -1 when absent).
 * CRUX_ERR_UNSUPPORTED for a TCP channel. */
crux_status_t crux_net_ucx_context(const crux_net_t *net, int *index, int *contexts, int *sl,
                                   int *traffic_class);

/* Start reducing 'count' elements at 'buf' in place with the same step of
 * every other member.  'buf' must stay untouched until the step is done. */
crux_status_t crux_net_start(crux_net_t *net, void *buf, size_t count, crux_dtype_t dtype,
                             crux_op_t op, void **request);
/* Move what can be moved without waiting; *done when the step 'request'
 * has finished (its request is then freed).  CRUX_ERR_PEER once a peer
 * failed: every step in flight then fails. */
crux_status_t crux_net_test(crux_net_t *net, void *request, int *done);

/* Sleep until the channel may move something of a step in flight (one of
 * its sockets is ready) or 'timeout_ms' passed.  The UCX channel cannot
 * tell and returns at once. */
void crux_net_wait(crux_net_t *net, int timeout_ms);

/* Bytes this member sent over the channel so far. */
uint64_t crux_net_bytes_sent(const crux_net_t *net);
/* The local address the TCP channel listens on ("10.0.0.1:40213"); "ucx"
 * for a UCX channel. */
const char *crux_net_address(const crux_net_t *net);

#endif

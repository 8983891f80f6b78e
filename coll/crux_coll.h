/* libcrux_coll: crux's collective algorithms, free of MPI.
 *
 * This header (with crux_reduce.h, which it includes) is the library's
 * API for collectives; crux_dev.h is its API for device memory and
 * crux_net.h its channel between nodes.  The Open MPI component is a thin
 * adapter over them, and tests drive them from plain forked processes.
 *
 * A group is the set of processes on one node that run a collective
 * together, of one of two kinds.  A shared-memory group
 * (crux_coll_group_t): creating one is collective, members exchange
 * segment keys once through the caller's out-of-band allgather and map
 * each other's control and staging segments; after that, collectives
 * synchronise through flags in shared memory only.  An engine group
 * (crux_engine_group_t, below) runs over the multipath engine instead.
 *
 * A group is used by one thread at a time, and every member calls the same
 * collectives in the same order with matching arguments (as MPI requires). */
#ifndef CRUX_COLL_H
#define CRUX_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "common/crux_status.h"
#include "coll/crux_reduce.h"
#include "ucx_tl/crux_tl.h"

typedef struct crux_coll_group crux_coll_group_t;

/* The caller's allgather among the future group members: gather 'length'
 * bytes from every member into 'rbuf' in rank order.  Returns 0 on success;
 * every member must see the same outcome. */
typedef struct {
    int (*allgather)(const void *sbuf, void *rbuf, size_t length, void *arg);
    void *arg;
    int rank;
    int size;
} crux_coll_oob_t;

typedef struct {
    size_t stage_size;       /* bytes of staging segment per member (0: none: the group
                              * runs only the small Allreduce) */
    size_t chunk_size;       /* pipeline segment of the flags algorithm */
    size_t stream_min_bytes; /* results of messages this large bypass the cache; 0: never */
    int local_procs;         /* processes on this node (0: the group size) */
    int shared_cores;        /* processes share cores whatever their count: waits never spin */
    /* a peer whose progress words take longer than this to reach us (in
     * seconds, common/crux_reach.h; 0: its default) is far: what it reads
     * from our stage is written with streaming stores.  This member's own,
     * not agreed. */
    double far_latency;
    /* the small Allreduce (crux_coll_allreduce_small): messages of at most
     * small_max_bytes (its slots: 4 of that size per member, at most
     * CRUX_SMALL_MAX_BYTES; 0: none), each member reducing all of it up to
     * small_whole_max_bytes, a slice each above */
    size_t small_max_bytes;
    size_t small_whole_max_bytes;
    crux_tl_config_t tl;
} crux_coll_config_t;

#define CRUX_SMALL_MAX_BYTES ((size_t)1 << 20)

#define CRUX_COLL_CONFIG_DEFAULT                                                        \
    {                                                                                   \
        .stage_size = 4u << 20, .chunk_size = 256u << 10, .stream_min_bytes = 8u << 20, \
        .local_procs = 0, .far_latency = 0, .small_max_bytes = 4u << 10,                \
        .small_whole_max_bytes = 256, .tl = CRUX_TL_CONFIG_DEFAULT,                     \
    }

/* Create a group.  On failure no member has a group, and all return the same
 * status: CRUX_ERR_NO_RESOURCE when shared memory could not be set up (no
 * room in /dev/shm, no shared-memory transport).  The configuration of
 * member 0 is the one the group uses. */
crux_status_t crux_coll_group_create(const crux_coll_oob_t *oob, const crux_coll_config_t *config,
                                     crux_coll_group_t **group_p);
void crux_coll_group_destroy(crux_coll_group_t *group);

/* Calls made from now on carry 'caller', a word the same on every member
 * (e.g. the communicator's context id): members of a group shared by
 * several communicators whose calls crossed (entered it in different
 * orders, which MPI forbids) find each other's call of another shape and
 * fail as members that passed different counts do, instead of mixing
 * them.  0 at creation. */
void crux_coll_group_set_caller(crux_coll_group_t *group, uint64_t caller);
/* 1 once this member gave the group up (a call failed halfway or found a
 * peer's call of another shape): its later calls fail */
int crux_coll_group_broken(const crux_coll_group_t *group);

/* Flat two-step Allreduce (reduce-scatter, then allgather), pipelined in
 * chunks.  'sbuf' NULL means in place (the input is in 'rbuf').  Each shard
 * is reduced by one member in rank order, so every member gets the same
 * bits.  Returns CRUX_ERR_UNSUPPORTED (nothing done, on every member alike)
 * for a (dtype, op) pair without a kernel, and CRUX_ERR_PEER when a member
 * failed or died. */
crux_status_t crux_coll_allreduce(crux_coll_group_t *group, const void *sbuf, void *rbuf,
                                  size_t count, crux_dtype_t dtype, crux_op_t op);

/* The small Allreduce, for latency: every member copies its input into a
 * slot of its own segment once and raises the slot's flag (a sequence
 * number in the slot's first cache line, beside inputs of up to 32 bytes);
 * up to the group's small_whole_max_bytes every member then reduces all
 * the slots itself, in rank order; above it each member reduces a slice
 * into a second slot, and every member copies the slices out.  No system
 * call while the peers keep up.  Returns CRUX_ERR_UNSUPPORTED (nothing
 * done, on every member alike) for more than the group's small_max_bytes
 * or a (dtype, op) without a kernel, CRUX_ERR_PEER when a member failed or
 * died, CRUX_ERR_INVALID on the members that found a peer's call of
 * another shape. */
crux_status_t crux_coll_allreduce_small(crux_coll_group_t *group, const void *sbuf, void *rbuf,
                                        size_t count, crux_dtype_t dtype, crux_op_t op);
/* 1 when a call of 'bytes' bytes fits the group's small Allreduce. */
int crux_coll_small_fits(const crux_coll_group_t *group, size_t bytes);

/* The inter-group step of a hierarchical Allreduce, provided by the caller:
 * reduce 'count' elements at 'buf' in place with the members that hold the
 * same shard in the other groups (rail-aligned: member i of every group).
 * 'start' begins it and may finish it at once; 'test' sets *done when it has
 * finished.  Every member starts the same steps in the same order.  'wait'
 * (may be NULL) sleeps until a step may move or 'timeout_ms' passed: with it
 * a member with nothing else to do sleeps while its steps cross the network,
 * without it it yields its core in a loop. */
typedef struct {
    crux_status_t (*start)(void *arg, void *buf, size_t count, void **request);
    crux_status_t (*test)(void *arg, void *request, int *done);
    void *arg;
    void (*wait)(void *arg, int timeout_ms);
} crux_coll_inter_t;

/* Hierarchical three-step Allreduce: reduce-scatter inside the group, the
 * inter-group step on each shard, allgather inside the group; every group
 * must have the same number of members.  Pipelined in chunks, with up to
 * 'depth' chunks in the inter-group step at once; depth 0 runs the three
 * steps one after the other over whole shards. */
#define CRUX_HIER_DEPTH_DEFAULT 4
#define CRUX_HIER_MAX_DEPTH     64 /* inter-group steps in flight at most */
crux_status_t crux_coll_allreduce_hier(crux_coll_group_t *group, const crux_coll_inter_t *inter,
                                       unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                       crux_dtype_t dtype, crux_op_t op);

/* The small Allreduce across groups: the group's member 0 reduces every
 * member's slot, runs the inter-group step on the whole vector (with
 * member 0 of every other group) and puts the result in its second slot,
 * which the others copy out.  Same returns as crux_coll_allreduce_small. */
crux_status_t crux_coll_allreduce_small_hier(crux_coll_group_t *group,
                                             const crux_coll_inter_t *inter, const void *sbuf,
                                             void *rbuf, size_t count, crux_dtype_t dtype,
                                             crux_op_t op);

/* --- engine groups: collectives over the multipath engine ---------------- */

/* An engine group is the set of processes on one node that run collectives
 * over the multipath engine (libcrux_tl): host buffers over its lanes (the
 * pipeline's lanes hand-off), device buffers as transfers between the
 * members' GPUs, reduced by the kernels of crux_dev.h. */

typedef struct crux_engine_group crux_engine_group_t;

typedef struct {
    size_t chunk_size;      /* bytes per pipeline chunk of a shard: device buffers ... */
    size_t host_chunk_size; /* ... and host buffers, whose copies are the CPU's and
                               * pipeline finer (the stage holds window rows of them) */
    unsigned window;        /* chunks of the own shard being gathered at once */
    crux_tl_config_t tl;    /* the transport context */
    /* channels: kinds, model channels (tests), calibration cache;
     * max_peers and eager_max (one shm slot) are set by the group */
    crux_tl_engine_config_t engine;
    int calibrate; /* calibrate host channels at creation (cached per node) */
    /* host buffers: results of at least this many bytes land with streaming
     * stores (0: never) */
    size_t stream_min_bytes;
    /* host Allreduce calls of at most this many bytes go in one exchange:
     * every member sends its whole input to every peer and folds them all in
     * rank order (one hand-off on the critical path instead of two), when
     * every member has the shared stage (0: never) */
    size_t whole_max_bytes;
    /* processes on this node (0: the group size): a member waiting on its
     * peers spins only when each has a core, else yields at once */
    int local_procs;
    int shared_cores; /* processes share cores whatever their count: waits never spin */
} crux_engine_group_config_t;

#define CRUX_ENGINE_GROUP_CONFIG_DEFAULT                                                         \
    {                                                                                            \
        .chunk_size = 4u << 20, .host_chunk_size = 256u << 10, .window = 4,                      \
        .stream_min_bytes = 8u << 20, .whole_max_bytes = 4u << 10, .tl = CRUX_TL_CONFIG_DEFAULT, \
        .engine = CRUX_TL_ENGINE_CONFIG_DEFAULT, .calibrate = 1,                                 \
    }

/* The configuration of an engine group beside shared-memory groups of
 * 'host': the same transport settings, streaming threshold, far latency,
 * local process count and core sharing; the engine's own defaults else. */
crux_engine_group_config_t crux_engine_group_config(const crux_coll_config_t *host);

/* Create a group over the members of 'oob' (collective): an engine, and two
 * pairs to every other member (reduce-scatter and allgather traffic run in
 * separate sequences, so that gathers never wait behind scatters).  The
 * configuration of each member must be the same. */
crux_status_t crux_engine_group_create(const crux_coll_oob_t *oob,
                                       const crux_engine_group_config_t *config,
                                       crux_engine_group_t **group_p);
void crux_engine_group_destroy(crux_engine_group_t *group);
crux_tl_engine_t *crux_engine_group_engine(crux_engine_group_t *group);
/* 1 when host calls go over the engine's lanes: every member has
 * shm-direct to every other and the shared stage (agreed at creation). */
int crux_engine_group_lanes(const crux_engine_group_t *group);
/* As crux_coll_group_set_caller, for the calls over the lanes (their posts'
 * tags); device transfers match by size and order only. */
void crux_engine_group_set_caller(crux_engine_group_t *group, uint64_t caller);
/* The exchange the group's device calls agree through from now on (a copy
 * of *oob: its allgather and arg must stay valid while calls use it): the
 * calling communicator's, since a group shared between callers outlives
 * the one that built it, whose exchange it takes at creation. */
void crux_engine_group_set_oob(crux_engine_group_t *group, const crux_coll_oob_t *oob);
/* 1 once a host call abandoned the lanes: the group's later host calls
 * fail */
int crux_engine_group_broken(const crux_engine_group_t *group);

/* Member p's shard of a buffer of 'count' elements: the same balanced cut as
 * the host algorithms (earlier shards one element longer). */
void crux_engine_shard(const crux_engine_group_t *group, size_t count, int p, size_t *first,
                       size_t *length);

/* The steps, collective (every member, same arguments).  Buffers are all
 * device memory or all host memory; sbuf NULL means in place (input in
 * rbuf).  Each shard is reduced by its owner in rank order, so every member
 * gets the same bits.
 *   reduce_scatter: rbuf's own shard receives the reduction of that shard;
 *                   the rest of rbuf is left as it was (in place: the input);
 *   allgather:      every shard of rbuf receives its owner's shard;
 *   allreduce:      both, pipelined: a chunk goes out to the peers as soon
 *                   as it is reduced.
 * CRUX_ERR_UNSUPPORTED (nothing done, on every member alike) for a (dtype,
 * op) without a kernel for the buffers' memory, or mixed memory; a failed
 * transfer is reported by the members it involved, after every member has
 * finished its part of the exchange. */
crux_status_t crux_engine_reduce_scatter(crux_engine_group_t *group, const void *sbuf, void *rbuf,
                                         size_t count, crux_dtype_t dtype, crux_op_t op);
crux_status_t crux_engine_allgather(crux_engine_group_t *group, void *rbuf, size_t count,
                                    crux_dtype_t dtype);
crux_status_t crux_engine_allreduce(crux_engine_group_t *group, const void *sbuf, void *rbuf,
                                    size_t count, crux_dtype_t dtype, crux_op_t op);

/* The hierarchical Allreduce's three steps with this group as one of its
 * groups (collective over the group): reduce-scatter within the group,
 * the caller's inter-group step on each chunk of each member's shard (the
 * same shard of the other groups, crux_coll_inter_t), then the allgather
 * within the group, pipelined with up to 'depth' chunks in the inter-group
 * step at once (0: the steps one after the other, over whole shards).
 * Host buffers over the lanes only: CRUX_ERR_UNSUPPORTED, nothing done, on
 * a group without them (crux_engine_group_lanes) or for device buffers. */
crux_status_t crux_engine_allreduce_hier(crux_engine_group_t *group, const crux_coll_inter_t *inter,
                                         unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                         crux_dtype_t dtype, crux_op_t op);

/* GPU paths from the node's topology: for every ordered pair of GPUs in
 * 'topo' that the driver shows, its multipath set (crux_topo_multipath)
 * becomes the engine's CUDA channels between the two devices, their
 * bandwidths the channels' figures until calibrated.  Call before device
 * transfers; 'topo' must outlive the group.  Without the driver yet, the
 * paths are given at the group's first device call. */
struct crux_topo;
crux_status_t crux_engine_group_use_topo(crux_engine_group_t *group, const struct crux_topo *topo);

/* --- selection: the one place an Allreduce algorithm is chosen ----------- */

/* What a user may ask for, along three axes that are chosen apart (each
 * AUTO unless forced): where the ranks are (topology), how the ranks of a
 * node tell each other that data is ready (hand-off), and which memory
 * device buffers are reduced in (memory path). */
typedef enum {
    CRUX_TOPOLOGY_AUTO,            /* flat on one node, hierarchical across nodes */
    CRUX_TOPOLOGY_FLAT,            /* two steps over every rank, on one node */
    CRUX_TOPOLOGY_HIER,            /* three steps across rank groups, pipelined */
    CRUX_TOPOLOGY_HIER_SEQUENTIAL, /* the three steps one after the other */
    CRUX_TOPOLOGY_COUNT
} crux_topology_t;

typedef enum {
    CRUX_HANDOFF_AUTO,  /* the lanes where every pair has them, else flags */
    CRUX_HANDOFF_FLAGS, /* progress flags in a shared-memory group */
    CRUX_HANDOFF_LANES, /* posts on the engine's lanes */
    CRUX_HANDOFF_COUNT
} crux_handoff_t;

typedef enum {
    CRUX_MEMORY_PATH_AUTO,        /* device where it can run, else host-staged */
    CRUX_MEMORY_PATH_DEVICE,      /* reduced on the GPU, moved by the engine */
    CRUX_MEMORY_PATH_HOST_STAGED, /* copied through pinned host memory */
    CRUX_MEMORY_PATH_COUNT
} crux_memory_path_t;

typedef struct {
    int fallback; /* every host call to the caller's own implementation */
    crux_topology_t topology;
    crux_handoff_t handoff;
    crux_memory_path_t memory_path; /* device buffers only */
} crux_request_t;

#define CRUX_REQUEST_AUTO                                                            \
    {                                                                                \
        .fallback = 0, .topology = CRUX_TOPOLOGY_AUTO, .handoff = CRUX_HANDOFF_AUTO, \
        .memory_path = CRUX_MEMORY_PATH_AUTO,                                        \
    }

/* The axes' names, and the values each takes, in enum order: "topology"
 * (auto, flat, hier, hier-sequential), "handoff" (auto, flags, lanes),
 * "memory_path" (auto, device, host-staged); and "algorithm", the older
 * single knob, whose values name points on the axes: auto, flat, staged
 * and cma (retired names of flat), fallback, hier, hier-sequential, engine
 * (crux_request_set).
 * NULL-terminated; NULL for an unknown axis. */
const char *const *crux_request_values(const char *axis);
/* Set 'axis' of *request to the value named 'value' (for "algorithm",
 * every axis to the point it names).  CRUX_ERR_INVALID, *request
 * unchanged, for a name the axis does not have. */
crux_status_t crux_request_set(crux_request_t *request, const char *axis, const char *value);
/* The axes' names, the older single knob first ("algorithm", "topology",
 * "handoff", "memory_path"); NULL past them. */
#define CRUX_REQUEST_AXES 4
const char *crux_request_axis(int axis);
/* The request from one value per axis, in crux_request_axis's order, each
 * an index into crux_request_values (out of range: auto): the older knob's
 * point, then every axis not left at auto on top of it (the way a caller's
 * parameters combine; a caller's later crux_request_set calls go on top). */
crux_request_t crux_request_from_values(const int values[CRUX_REQUEST_AXES]);
/* Whether a host call is forced onto crux's own algorithms whatever its
 * size (an axis other than the memory path set). */
int crux_request_forced(const crux_request_t *request);

/* The algorithms a caller runs. */
typedef enum {
    CRUX_ALG_FALLBACK,        /* the caller's own implementation */
    CRUX_ALG_FLAGS,           /* flat, flags hand-off (crux_coll_allreduce) */
    CRUX_ALG_LANES,           /* flat, over the engine's lanes (crux_engine_allreduce) */
    CRUX_ALG_HIER,            /* three steps, pipelined */
    CRUX_ALG_HIER_SEQUENTIAL, /* three steps one after the other */
    CRUX_ALG_DEVICE,          /* device buffers: GPU kernels over the engine */
    CRUX_ALG_HOST_STAGED,     /* device buffers copied through host memory, then
                               * the host selection */
    CRUX_ALG_SMALL,           /* flat, small messages (crux_coll_allreduce_small) */
    CRUX_ALG_HIER_SMALL,      /* across groups, small messages
                               * (crux_coll_allreduce_small_hier) */
    CRUX_ALG_COUNT
} crux_alg_t;

/* What the caller can have.  Asking may build it (collective: every
 * member asks the same questions in the same order, as it chooses alike). */
typedef enum {
    CRUX_CAP_GROUP,         /* a shared-memory group over every member */
    CRUX_CAP_ENGINE,        /* a multipath engine group over every member */
    CRUX_CAP_LANES,         /* ... that carries host calls over its lanes */
    CRUX_CAP_LAYOUT,        /* even rank groups for the hierarchical algorithm,
                             * built with the request's hand-off */
    CRUX_CAP_LAYOUT_LANES,  /* ... whose hand-off within them is the lanes */
    CRUX_CAP_DEVICE_KERNEL, /* a GPU kernel for the call's (dtype, op) */
    CRUX_CAP_SMALL,         /* the call fits the small Allreduce of a
                             * shared-memory group over every member */
    CRUX_CAP_LAYOUT_SMALL,  /* ... of a shared-memory group within each of
                             * the even rank groups */
    CRUX_CAP_COUNT
} crux_select_cap_t;

/* The sizes, in bytes, that divide host calls between crux's algorithms
 * and the caller's own (the caller's parameters). */
typedef struct {
    size_t min_bytes;            /* auto: smaller calls go to the caller's own */
    size_t small_max_bytes;      /* the small Allreduce up to this size on one node ... */
    size_t hier_small_max_bytes; /* ... and across nodes */
    size_t hier_min_bytes;       /* auto across nodes: the hierarchical pipeline from
                                  * this size up; between the small Allreduce's sizes
                                  * and this, the caller's own */
} crux_select_sizes_t;

/* hier_min_bytes: right above the small Allreduce; on 2x2 fake nodes the
 * pipeline was 2-3.6x coll/tuned at 64-256 KiB (docs/results/allreduce.md) */
#define CRUX_SELECT_SIZES_DEFAULT                                                       \
    {                                                                                   \
        .min_bytes = 0, .small_max_bytes = 4u << 10, .hier_small_max_bytes = 64u << 10, \
        .hier_min_bytes = 64u << 10,                                                    \
    }

/* What the sizes mean for one request on one shape of communicator: host
 * calls smaller than fallback_below (SIZE_MAX: all) and those past
 * small_max but smaller than hier_from go to the caller's own; up to
 * small_max a call may take the small Allreduce (0: none).  A forced
 * topology or hand-off runs its pipeline at every size. */
typedef struct {
    size_t fallback_below;
    size_t small_max;
    size_t hier_from;
} crux_select_bounds_t;

crux_select_bounds_t crux_select_bounds(const crux_request_t *request, int all_local,
                                        const crux_select_sizes_t *sizes);
/* 1 when a host call of 'bytes' goes to the caller's own by its size
 * alone: what crux_allreduce_select answers for it, in one comparison or
 * two, for callers that keep the bounds to hand calls on early. */
static inline int crux_select_size_falls_back(const crux_select_bounds_t *bounds, size_t bytes)
{
    return bytes < bounds->fallback_below ||
           (bytes > bounds->small_max && bytes < bounds->hier_from);
}

typedef struct {
    int device;                /* the buffers are device memory */
    int all_local;             /* every member on this node */
    size_t bytes;              /* the call's size */
    crux_select_sizes_t sizes; /* the sizes that divide host calls */
    crux_request_t request;    /* what the user asked for */
    int (*has)(void *arg, crux_select_cap_t cap);
    void *arg;
} crux_select_query_t;

/* The algorithm to run.  For host buffers FALLBACK, with the reason in
 * *why, when crux's own cannot run as asked or the sizes give the call to
 * the caller's own; device buffers always get DEVICE or HOST_STAGED (they
 * must never reach a module that is not CUDA-aware; once staged they are
 * host buffers, asked about again).  *why is "" when nothing needs
 * saying. */
crux_alg_t crux_allreduce_select(const crux_select_query_t *query, const char **why);
/* What runs next after 'alg' returned 'status': CRUX_ALG_COUNT when the
 * call is over (done, or a failure the caller reports).  After
 * CRUX_ERR_UNSUPPORTED (nothing moved, on every member alike) device
 * buffers go through host memory (HOST_STAGED) and host buffers to the
 * caller's own (FALLBACK), with the reason in *why. */
crux_alg_t crux_allreduce_next(crux_alg_t alg, crux_status_t status, const char **why);
const char *crux_alg_name(crux_alg_t alg);

/* --- the ranges of what a caller gives ---------------------------------- */

/* Whether a caller's values are in range: its groups' configuration, the
 * sizes of the selection, the hierarchical Allreduce's depth and the rank
 * groups' size (crux_layout_plan).  Each value out of range is named to
 * 'refuse' (by its field: "stage_size", "chunk_size", "small_max_bytes",
 * "hier_small_max_bytes", "small_whole_max_bytes", "hier_depth",
 * "group_size"), with its value and why; every check runs, so one pass
 * names them all.  The staging area is also checked against the free
 * space of 'shm_dir' (NULL: not checked; a directory that cannot be
 * looked at neither), where each of the node's config->local_procs
 * processes maps one per group.  Returns 1 when every value is in range. */
typedef void (*crux_refuse_fn)(void *arg, const char *name, const char *value, const char *why);
int crux_coll_check(const crux_coll_config_t *config, const crux_select_sizes_t *sizes,
                    int hier_depth, int group_size, const char *shm_dir, crux_refuse_fn refuse,
                    void *arg);

/* --- layout: the rank groups of the hierarchical Allreduce -------------- */

/* Where a member runs: 'node' the same number for the members of one node
 * (e.g. the lowest rank there), 'package' the CPU package it is bound
 * inside, or CRUX_LAYOUT_UNBOUND: the members of a node not bound inside
 * one package form a group of their own (never one with the members bound
 * in a package). */
#define CRUX_LAYOUT_UNBOUND (-1)
typedef struct {
    int node;
    int package;
} crux_layout_place_t;

/* A communicator's rank groups, as one member sees them. */
typedef struct {
    int group;             /* this member's rank group, numbered in order of the
                            * groups' lowest ranks */
    int group_rank;        /* its rank in it, in rank order: its cross group */
    int per_group;         /* members of its rank group */
    int groups;            /* rank groups */
    int smallest, largest; /* their sizes */
    int usable;            /* the hierarchical Allreduce can run over them: at least
                            * two, all of the same size, of more than one member */
} crux_layout_plan_t;

/* The rank groups of the members of 'oob' (collective; every member gets
 * the same groups): with group_size > 0 the members r with the same
 * r / group_size, else the members with the same place (node and CPU
 * package).  The caller makes the groups' communicators from it: the rank
 * group by 'group', the cross group (member i of every rank group) by
 * 'group_rank', ordered by 'group'. */
crux_status_t crux_layout_plan(const crux_coll_oob_t *oob, int group_size,
                               crux_layout_place_t place, crux_layout_plan_t *plan);

/* How the members of each rank group hand data on; the caller builds the
 * groups, each collective within this member's rank group, and says
 * whether it has one. */
typedef struct {
    /* an engine group: 1 when it has the lanes */
    int (*lanes)(void *arg);
    /* not every rank group has lanes: give up whatever 'lanes' built */
    void (*drop_lanes)(void *arg);
    /* a shared-memory group: 1 when had; 'small_only': the small
     * Allreduce's slots alone (beside the lanes) */
    int (*shared)(void *arg, int small_only);
    void *arg;
} crux_layout_build_t;

/* Choose and build the hand-off within the rank groups (collective over
 * every member of the communicator, 'oob'; every member gets the same
 * answer): first agree that every member's rank groups are 'ready'
 * (CRUX_ERR_UNSUPPORTED, nothing built, when one is not); then, unless
 * 'asked' is the flags, the engine's lanes when every rank group has them
 * (*lanes; else every member drops what it built for them); else a shared-memory group in every rank group
 * (CRUX_ERR_NO_RESOURCE when one could not be had).  Beside the lanes,
 * *small when every rank group has the small Allreduce's shared-memory
 * group. */
crux_status_t crux_layout_handoff(const crux_coll_oob_t *oob, int ready, crux_handoff_t asked,
                                  const crux_layout_build_t *build, int *lanes, int *small);

/* The configuration of a shared-memory group within a rank group, from
 * the caller's for groups over every member: slots for the small
 * Allreduce's sizes across nodes (sizes->hier_small_max_bytes); with
 * 'small_only' (beside the lanes) those slots alone, no staging area. */
crux_coll_config_t crux_layout_group_config(const crux_coll_config_t *base,
                                            const crux_select_sizes_t *sizes, int small_only);
/* What else a shared-memory group must match to be shared
 * (crux_share_request_t.variant): one over every member of a caller, one
 * within a rank group, one within a rank group with the small Allreduce's
 * slots alone. */
enum { CRUX_SHARE_FLAT, CRUX_SHARE_RANK_GROUP, CRUX_SHARE_RANK_GROUP_SMALL };
/* ... and a layout: one built to hand data on with 'asked' (a layout
 * built without lanes differs from one that may have them). */
int crux_layout_variant(crux_handoff_t asked);

struct crux_net; /* crux_net.h */

/* A layout as one member holds it once built (plain data: the caller keeps
 * the communicators and the references that hold the groups beside it). */
typedef struct {
    crux_coll_group_t *group;   /* shared memory within the rank group ... */
    crux_engine_group_t *lanes; /* ... or, where every rank group has them, the lanes */
    /* the small Allreduce's shared-memory group: 'group', or beside the
     * lanes one of its own (NULL: none could be had) */
    crux_coll_group_t *small;
    int cross_local;      /* the cross group's members share this node */
    struct crux_net *net; /* the channel between nodes (crux_net_open); NULL: none */
    uint64_t route;       /* the hash of the route its TCP connections took */
    int groups, per_group;
} crux_layout_t;

/* 1 when a layout's groups within the rank group are broken (a member
 * failed or died): no new caller may take the layout. */
int crux_layout_broken(const crux_layout_t *layout);

/* The caller's own Allreduce over the cross group (e.g. MPI's on a
 * communicator over member i of every rank group), in place on 'count'
 * elements at 'buf': 'reduce' blocking; 'start' nonblocking, then 'test'
 * until *done. */
typedef struct {
    crux_status_t (*reduce)(void *arg, void *buf, size_t count);
    crux_status_t (*start)(void *arg, void *buf, size_t count, void **request);
    crux_status_t (*test)(void *arg, void *request, int *done);
    void *arg;
} crux_layout_cross_t;

/* How a layout's inter-group step goes. */
typedef enum {
    CRUX_LAYOUT_STEP_NET,         /* over the channel between nodes; over TCP a member
                                   * with nothing else to do sleeps on its sockets */
    CRUX_LAYOUT_STEP_BLOCKING,    /* the caller's blocking Allreduce: the cross group
                                   * shares this node (crux's own, in shared memory) */
    CRUX_LAYOUT_STEP_NONBLOCKING, /* the caller's nonblocking Allreduce, polled while
                                   * the rank group goes on */
} crux_layout_step_t;
crux_layout_step_t crux_layout_step(const crux_layout_t *layout);

/* The hierarchical Allreduce over a layout: crux_engine_allreduce_hier
 * over its lanes, else crux_coll_allreduce_hier over its group, the
 * inter-group step as crux_layout_step says. */
crux_status_t crux_layout_allreduce(const crux_layout_t *layout, const crux_layout_cross_t *cross,
                                    unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                    crux_dtype_t dtype, crux_op_t op);
/* The small Allreduce across the rank groups over a layout's small group
 * (crux_coll_allreduce_small_hier; CRUX_ERR_UNSUPPORTED without one): its
 * inter-group step is the caller's blocking Allreduce, always (for a few
 * cache lines a nonblocking one's schedule costs more than it overlaps). */
crux_status_t crux_layout_allreduce_small(const crux_layout_t *layout,
                                          const crux_layout_cross_t *cross, const void *sbuf,
                                          void *rbuf, size_t count, crux_dtype_t dtype,
                                          crux_op_t op);

/* --- running the chosen algorithm ------------------------------------ */

/* What a caller holds to run the algorithms: its groups over every member,
 * and its layout with the cross group's Allreduces (NULL where it has
 * none).  crux_alg_needs says which of them an algorithm takes. */
typedef struct {
    uint64_t caller;                  /* crux_coll_group_set_caller's word, set on
                                       * the groups a call uses */
    const crux_coll_oob_t *oob;       /* the caller's exchange, set on the engine
                                       * group for its device calls' agreement */
    crux_coll_group_t *group;         /* FLAGS, SMALL */
    crux_engine_group_t *engine;      /* LANES, DEVICE */
    const crux_layout_t *layout;      /* HIER*, HIER_SMALL */
    const crux_layout_cross_t *cross; /* ... and the cross group's Allreduces */
    unsigned depth;                   /* HIER's chunks in the inter-group step at once */
} crux_allreduce_targets_t;

/* What an algorithm takes from crux_allreduce_targets_t. */
enum {
    CRUX_NEEDS_GROUP = 1,   /* group */
    CRUX_NEEDS_ENGINE = 2,  /* engine */
    CRUX_NEEDS_LAYOUT = 4,  /* the layout's groups and inter-group steps */
    CRUX_NEEDS_CHANNEL = 8, /* the inter-group step's channel between nodes,
                             * marked with the job's level before the call */
};
/* (inline: a small call's whole cost is a few hundred nanoseconds) */
static inline unsigned crux_alg_needs(crux_alg_t alg)
{
    switch (alg) {
    case CRUX_ALG_FLAGS:
    case CRUX_ALG_SMALL: return CRUX_NEEDS_GROUP;
    case CRUX_ALG_LANES:
    case CRUX_ALG_DEVICE: return CRUX_NEEDS_ENGINE;
    case CRUX_ALG_HIER:
    case CRUX_ALG_HIER_SEQUENTIAL: return CRUX_NEEDS_LAYOUT | CRUX_NEEDS_CHANNEL;
    /* its step is the cross communicator's own small Allreduce */
    case CRUX_ALG_HIER_SMALL: return CRUX_NEEDS_LAYOUT;
    default: return 0;
    }
}
/* 1 for an algorithm that moves bulk data, which the job's arbitration
 * orders: not the small ones (waiting on arbitration would cost a few
 * cache lines' call more than it takes from anyone). */
static inline int crux_alg_arbitrated(crux_alg_t alg)
{
    return alg != CRUX_ALG_SMALL && alg != CRUX_ALG_HIER_SMALL && alg != CRUX_ALG_FALLBACK;
}

/* Run 'alg' (one of crux's, not FALLBACK or HOST_STAGED) over the targets
 * it needs.  CRUX_ERR_NOT_FOUND, nothing done, when they lack one: the
 * caller selects again, acquiring what is missing (alike on every member,
 * since a group goes only when all agree).  Otherwise the algorithm's own
 * returns (crux_allreduce_next says what follows; a call too large for a
 * small algorithm's slots is CRUX_ERR_UNSUPPORTED). */
crux_status_t crux_allreduce_run(const crux_allreduce_targets_t *targets, crux_alg_t alg,
                                 const void *sbuf, void *rbuf, size_t count, crux_dtype_t dtype,
                                 crux_op_t op);

/* A caller's memory of its small host calls: the last one's datatype and
 * op (the caller's handles), their translation and the algorithm it was
 * given, so that a repeat skips the translation and the selection (a few
 * hundred nanoseconds are a small call's whole cost). */
typedef struct {
    const void *dtype_key, *op_key;
    crux_dtype_t dtype;
    crux_op_t op;
    crux_alg_t alg; /* CRUX_ALG_COUNT: none yet; FALLBACK for handles without a
                     * translation */
} crux_select_memo_t;

#define CRUX_SELECT_MEMO_INIT                                    \
    {                                                            \
        NULL, NULL, CRUX_DT_COUNT, CRUX_OP_COUNT, CRUX_ALG_COUNT \
    }

/* The algorithm for a host call of 'bytes' (more than 0) in the datatype
 * and op of those handles: the memo's, or CRUX_ALG_COUNT when the call
 * must be selected. */
static inline crux_alg_t crux_select_memo_alg(const crux_select_memo_t *memo,
                                              const crux_select_bounds_t *bounds, size_t bytes,
                                              const void *dtype_key, const void *op_key)
{
    if (bytes > bounds->small_max || dtype_key != memo->dtype_key || op_key != memo->op_key) {
        return CRUX_ALG_COUNT;
    }
    return memo->alg;
}
/* Remember a host call that was selected ('dtype' CRUX_DT_COUNT and 'alg'
 * FALLBACK for handles without a translation); only calls the memo
 * serves (up to the bounds' small_max) are kept. */
void crux_select_memo_note(crux_select_memo_t *memo, const crux_select_bounds_t *bounds,
                           size_t bytes, const void *dtype_key, const void *op_key,
                           crux_dtype_t dtype, crux_op_t op, crux_alg_t alg);

/* --- sharing groups between communicators ------------------------------ */

/* A group of any kind (a shared-memory group, an engine group, a caller's
 * layout) shared by the callers over the same processes in the same order
 * and counted (crux_layout_share.c, docs/design/resources.md).  At most
 * CRUX_SHARE_MAX groups of each of CRUX_SHARE_KINDS kinds live in a
 * process; past it, the least recently used group over the same set of
 * processes is released when every member proposes the same one. */
#define CRUX_SHARE_MAX   16
#define CRUX_SHARE_KINDS 4
typedef struct crux_share crux_share_t; /* a reference to a shared group */

typedef struct {
    const crux_coll_oob_t *oob; /* over the members (never entering the groups) */
    const uint64_t *names;      /* the members' process names, in rank order */
    int kind;                   /* 0 .. CRUX_SHARE_KINDS - 1 */
    /* what else a group of the kind must match to be shared */
    int variant;
    int pin; /* the reference keeps its group from being released early */
    /* this process's threads call collectives at once: share nothing,
     * release nothing early (each caller builds its own) */
    int alone;
    /* builds a group over the members, collectively, exchanging through
     * oob; destroys one once its last reference is gone or to make room;
     * 'broken' (may be NULL): 1 for a group no new caller may take */
    crux_status_t (*build)(void *arg, const crux_coll_oob_t *oob, void **group);
    void (*destroy)(void *group);
    int (*broken)(void *group);
    void *arg;
} crux_share_request_t;

/* How an acquisition went, alike on every member. */
typedef enum {
    CRUX_SHARE_NONE,      /* the members' exchange failed (CRUX_ERR_IO) */
    CRUX_SHARE_SHARED,    /* the group the members agreed on was taken */
    CRUX_SHARE_BUILT,     /* one was built (build's status is returned) */
    CRUX_SHARE_MADE_ROOM, /* ... after the least recently used was released */
    CRUX_SHARE_FULL,      /* a member is at its limit, nothing could be
                           * released: CRUX_ERR_NO_RESOURCE */
} crux_share_how_t;

/* A reference to a group of the kind (collective over 'oob'): the one the
 * members agree on, or one built with 'build'; *how says which. */
crux_status_t crux_share_acquire(const crux_share_request_t *request, crux_share_t **share,
                                 crux_share_how_t *how);
/* The group of a reference, its use noted (the least recently used goes
 * first); NULL when it was released to make room: drop the reference and
 * acquire again, in the same call on every member. */
void *crux_share_use(crux_share_t *share);
/* Drop a reference ('pin' as it was acquired); the group goes with the
 * last one. */
void crux_share_release(crux_share_t *share, int pin);

/* A caller's hold on one kind of group, had the first time it is needed
 * (every member needs it in the same call): a reference once acquired; if
 * the group cannot be had, the caller does without it for good; a group
 * released to make room is acquired again at the next need. */
enum { CRUX_SHARE_SLOT_UNTRIED, CRUX_SHARE_SLOT_HELD, CRUX_SHARE_SLOT_FAILED };
typedef struct {
    int state; /* CRUX_SHARE_SLOT_* */
    crux_share_t *share;
} crux_share_slot_t;
#define CRUX_SHARE_SLOT_INIT          \
    {                                 \
        CRUX_SHARE_SLOT_UNTRIED, NULL \
    }

/* The slot's group, its use noted; acquired through 'acquire' (collective)
 * when the slot has none yet or its group was released; NULL when it
 * cannot be had.  *status: the acquisition's outcome when one ran, else
 * CRUX_OK (so a failure is reported once). */
void *crux_share_slot_get(crux_share_slot_t *slot,
                          crux_status_t (*acquire)(void *arg, crux_share_t **share), void *arg,
                          crux_status_t *status);
/* The slot's group without acquiring (NULL when it has none, or its group
 * was released), its use noted. */
static inline void *crux_share_slot_peek(crux_share_slot_t *slot)
{
    return slot->state == CRUX_SHARE_SLOT_HELD ? crux_share_use(slot->share) : NULL;
}
/* Drop the slot's reference; it is untried again. */
void crux_share_slot_release(crux_share_slot_t *slot);

#endif

/* libcrux_coll: crux's collective algorithms, free of MPI.
 *
 * This header (with crux_reduce.h, which it includes) is the library's whole
 * public API; the Open MPI component is a thin adapter over it, and tests
 * drive it from plain forked processes.
 *
 * A group is the set of processes on one node that run a collective
 * together.  Creating one is collective: members exchange transport
 * addresses and segment keys once through the caller's out-of-band
 * allgather, map each other's control and staging segments, connect cma
 * endpoints and check that single-copy access really works between them.
 * After that, collectives synchronise through flags in shared memory only.
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
    size_t stage_size;       /* bytes of staging segment per member */
    size_t chunk_size;       /* pipeline segment of the staged algorithm */
    size_t cma_chunk_size;   /* pipeline segment of the single-copy algorithm */
    size_t cma_min_bytes;    /* AUTO uses single copy from this size up; 0: never */
    size_t stream_min_bytes; /* results of messages this large bypass the cache; 0: never */
    int local_procs;         /* processes on this node (0: the group size) */
    /* a peer whose progress words take longer than this to reach us (in
     * seconds, common/crux_reach.h; 0: its default) is far: what it reads
     * from our stage is written with streaming stores.  This member's own,
     * not agreed. */
    double far_latency;
    crux_tl_config_t tl;
} crux_coll_config_t;

#define CRUX_COLL_CONFIG_DEFAULT                                                              \
    {                                                                                         \
        .stage_size = 4u << 20, .chunk_size = 256u << 10, .cma_chunk_size = 256u << 10,       \
        .cma_min_bytes = 0, .stream_min_bytes = 2u << 20, .local_procs = 0, .far_latency = 0, \
        .tl = CRUX_TL_CONFIG_DEFAULT,                                                         \
    }

/* Create a group.  On failure no member has a group, and all return the same
 * status: CRUX_ERR_NO_RESOURCE when shared memory could not be set up (no
 * room in /dev/shm, no shared-memory transport).  Single-copy (cma) access
 * that does not work (e.g. no ptrace permission) is not a failure: the group
 * then stages everything through shared memory; see crux_coll_group_has_cma.
 * The configuration of member 0 is the one the group uses. */
crux_status_t crux_coll_group_create(const crux_coll_oob_t *oob, const crux_coll_config_t *config,
                                     crux_coll_group_t **group_p);
void crux_coll_group_destroy(crux_coll_group_t *group);

int crux_coll_group_rank(const crux_coll_group_t *group);
int crux_coll_group_size(const crux_coll_group_t *group);
int crux_coll_group_has_cma(const crux_coll_group_t *group);
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
const crux_coll_config_t *crux_coll_group_config(const crux_coll_group_t *group);

typedef enum {
    CRUX_ALLREDUCE_AUTO,   /* single copy from cma_min_bytes up (if set), else staged */
    CRUX_ALLREDUCE_STAGED, /* copy into shared segments, reduce, copy out */
    CRUX_ALLREDUCE_CMA,    /* single-copy get from the peers' own buffers */
} crux_allreduce_alg_t;

/* Flat two-stage Allreduce (reduce-scatter, then allgather), pipelined in
 * chunks.  'sbuf' NULL means in place (the input is in 'rbuf').  Each shard
 * is reduced by one member in rank order, so every member gets the same
 * bits.  Returns CRUX_ERR_UNSUPPORTED (nothing done, on every member alike)
 * for a (dtype, op) pair without a kernel or CMA forced where it is not
 * available, and CRUX_ERR_PEER when a member failed or died. */
crux_status_t crux_coll_allreduce(crux_coll_group_t *group, const void *sbuf, void *rbuf,
                                  size_t count, crux_dtype_t dtype, crux_op_t op,
                                  crux_allreduce_alg_t alg);

/* The inter-group step of a hierarchical Allreduce, provided by the caller:
 * reduce 'count' elements at 'buf' in place with the members that hold the
 * same shard in the other groups (rail-aligned: member i of every group).
 * 'start' begins it and may finish it at once; 'test' sets *done when it has
 * finished.  Every member starts the same steps in the same order. */
typedef struct {
    crux_status_t (*start)(void *arg, void *buf, size_t count, void **request);
    crux_status_t (*test)(void *arg, void *request, int *done);
    void *arg;
} crux_coll_inter_t;

/* Hierarchical three-stage Allreduce: reduce-scatter inside the group, the
 * inter-group step on each shard, allgather inside the group; every group
 * must have the same number of members.  Pipelined in chunks, with up to
 * 'depth' chunks in the inter-group step at once; depth 0 runs the three
 * stages one after the other over whole shards.  The group's staging always
 * applies (single copy is for the flat algorithm). */
crux_status_t crux_coll_allreduce_hier(crux_coll_group_t *group, const crux_coll_inter_t *inter,
                                       unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                       crux_dtype_t dtype, crux_op_t op);

/* Which algorithm AUTO picks for a message of 'bytes' (crux_select.c). */
crux_allreduce_alg_t crux_coll_allreduce_choice(const crux_coll_group_t *group, size_t bytes);
const char *crux_allreduce_alg_name(crux_allreduce_alg_t alg);

/* --- selection: the one place an Allreduce algorithm is chosen ----------- */

/* The algorithms a caller runs, and what a user may force (AUTO and FLAT
 * are requests only; the values are coll_crux_allreduce_algorithm's). */
typedef enum {
    CRUX_ALG_AUTO = 0,
    CRUX_ALG_STAGED = 1,          /* flat, shared-memory staging */
    CRUX_ALG_CMA = 2,             /* flat, single copy */
    CRUX_ALG_FALLBACK = 3,        /* the caller's own implementation */
    CRUX_ALG_FLAT = 4,            /* flat, staging or single copy by size */
    CRUX_ALG_HIER = 5,            /* three stages, pipelined */
    CRUX_ALG_HIER_SEQUENTIAL = 6, /* three stages one after the other */
    CRUX_ALG_DEVICE = 7,          /* device buffers: GPU kernels over the engine */
    CRUX_ALG_DEVICE_STAGED = 8,   /* device buffers staged through host memory */
    CRUX_ALG_ENGINE = 9,          /* flat, over the multipath engine (crux_dev.h) */
    CRUX_ALG_COUNT
} crux_alg_t;

/* What the caller can have.  Asking may build it (collective: every
 * member asks the same questions in the same order, as it chooses alike). */
typedef enum {
    CRUX_CAP_GROUP,         /* a shared-memory group over every member */
    CRUX_CAP_CMA,           /* ... in which single copy works */
    CRUX_CAP_ENGINE,        /* a multipath engine group over every member */
    CRUX_CAP_LANES,         /* ... that carries host calls over its lanes */
    CRUX_CAP_LAYOUT,        /* even groups of ranks for the hierarchical algorithm */
    CRUX_CAP_DEVICE_KERNEL, /* a GPU kernel for the call's (dtype, op) */
} crux_select_cap_t;

typedef struct {
    int device;           /* the buffers are device memory */
    int all_local;        /* every member on this node */
    size_t bytes;         /* the message */
    crux_alg_t forced;    /* CRUX_ALG_AUTO or what the user asked for */
    size_t cma_min_bytes; /* single copy from this size up; 0: never */
    int (*has)(void *arg, crux_select_cap_t cap);
    void *arg;
} crux_select_query_t;

/* The algorithm to run: never AUTO or FLAT.  For host buffers FALLBACK, with
 * the reason in *why, when crux's own cannot run; device buffers always
 * get DEVICE or DEVICE_STAGED (they must never reach a module that is not
 * CUDA-aware).  *why is "" when nothing needs saying. */
crux_alg_t crux_allreduce_select(const crux_select_query_t *query, const char **why);
const char *crux_alg_name(crux_alg_t alg);

#endif

/* libcrux_dev: device (CUDA) buffers in crux's collectives, free of MPI.
 *
 * This header is the library's whole public API.  It gives the Open MPI
 * component what MPI_Allreduce on device buffers needs, since Debian's
 * Open MPI is not CUDA-aware and must never see a device pointer:
 *   - detection: is a pointer device memory (CUDA pointer attributes);
 *   - reduction kernels on device buffers for the (dtype, op) pairs of
 *     crux_reduce.h that a GPU handles (sum, prod, min, max and the logical
 *     and bitwise ops on integers; sum, prod, min, max on float16,
 *     bfloat16, float and double), bit for bit what the CPU kernels give;
 *   - staging through pinned host memory, for user-defined ops and the
 *     pairs without a kernel;
 *   - the Allreduce data movement over the multipath engine: reduce-scatter
 *     (pieces of every member's input land in the owner's scratch and are
 *     reduced in rank order) and allgather (each owner's reduced shard goes
 *     straight into every member's result), pipelined chunk by chunk.
 * The data movement also runs on host buffers (reduced by the CPU kernels),
 * which is how it is tested on machines without a GPU (model channels).
 *
 * The CUDA driver is loaded at run time: without it, or without a GPU,
 * every pointer is host memory and the device calls report
 * CRUX_ERR_UNSUPPORTED. */
#ifndef CRUX_DEV_H
#define CRUX_DEV_H

#include <stddef.h>

#include "common/crux_status.h"
#include "coll/crux_coll.h"
#include "ucx_tl/crux_tl.h"

/* --- detection -------------------------------------------------------------- */

/* 1 when 'ptr' is CUDA device memory (not managed memory), else 0. */
int crux_dev_is_device(const void *ptr);
/* Managed (unified) memory takes the host path: its legacy IPC export is
 * refused, and the host reads it in place.  Before the host reads 'ptr',
 * when it is managed memory, wait for the work the application queued on
 * the legacy and per-thread default streams of its device (a kernel still
 * writing it); CRUX_OK at once for other memory. */
crux_status_t crux_dev_host_ready(const void *ptr);
/* CUDA devices usable by this process; 0 without a driver or GPU. */
int crux_dev_count(void);

/* --- reduction kernels -------------------------------------------------------- */

/* 1 when (dtype, op) has a device kernel. */
int crux_dev_reduce_supported(crux_dtype_t dtype, crux_op_t op);

/* out[i] = a[i] op b[i] on the device that holds 'out' (out may be a or b);
 * returns once done.  CRUX_ERR_UNSUPPORTED without a kernel or a GPU. */
crux_status_t crux_dev_reduce(void *out, const void *a, const void *b, size_t count,
                              crux_dtype_t dtype, crux_op_t op);

/* --- staging -------------------------------------------------------------------- */

/* Pinned host buffers kept for reuse (plain host memory without a driver). */
typedef struct crux_dev_stage crux_dev_stage_t;

crux_status_t crux_dev_stage_create(crux_dev_stage_t **stage_p);
void crux_dev_stage_destroy(crux_dev_stage_t *stage);
/* Host buffer number 'slot' (0 or 1) of at least 'bytes', grown as needed;
 * valid until the next call for the same slot or destroy.  NULL when out of
 * memory. */
void *crux_dev_stage_buffer(crux_dev_stage_t *stage, unsigned slot, size_t bytes);

/* Copy between any two of host and device memory; returns once done. */
crux_status_t crux_dev_copy(void *dst, const void *src, size_t bytes);

/* --- Allreduce data movement over the engine -------------------------------------- */

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
} crux_dev_config_t;

#define CRUX_DEV_CONFIG_DEFAULT                                                                  \
    {                                                                                            \
        .chunk_size = 4u << 20, .host_chunk_size = 256u << 10, .window = 4,                      \
        .stream_min_bytes = 2u << 20, .whole_max_bytes = 4u << 10, .tl = CRUX_TL_CONFIG_DEFAULT, \
        .engine = CRUX_TL_ENGINE_CONFIG_DEFAULT, .calibrate = 1,                                 \
    }

/* Create a group over the members of 'oob' (collective): an engine, and two
 * pairs to every other member (reduce-scatter and allgather traffic run in
 * separate sequences, so that gathers never wait behind scatters).  The
 * configuration of each member must be the same. */
crux_status_t crux_engine_group_create(const crux_coll_oob_t *oob, const crux_dev_config_t *config,
                                       crux_engine_group_t **group_p);
void crux_engine_group_destroy(crux_engine_group_t *group);
crux_tl_engine_t *crux_engine_group_engine(crux_engine_group_t *group);
/* 1 when host calls go over the engine's lanes: every member has
 * shm-direct to every other and the shared stage (agreed at creation). */
int crux_engine_group_lanes(const crux_engine_group_t *group);
/* As crux_coll_group_set_caller, for the calls over the lanes (their posts'
 * tags); device transfers match by size and order only. */
void crux_engine_group_set_caller(crux_engine_group_t *group, uint64_t caller);
/* 1 once a host call abandoned the lanes: the group's later host calls
 * fail */
int crux_engine_group_broken(const crux_engine_group_t *group);

/* Member p's shard of a buffer of 'count' elements: the same balanced cut as
 * the host algorithms (earlier shards one element longer). */
void crux_dev_shard(const crux_engine_group_t *group, size_t count, int p, size_t *first,
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
crux_status_t crux_dev_reduce_scatter(crux_engine_group_t *group, const void *sbuf, void *rbuf,
                                      size_t count, crux_dtype_t dtype, crux_op_t op);
crux_status_t crux_dev_allgather(crux_engine_group_t *group, void *rbuf, size_t count,
                                 crux_dtype_t dtype);
crux_status_t crux_engine_allreduce(crux_engine_group_t *group, const void *sbuf, void *rbuf,
                                    size_t count, crux_dtype_t dtype, crux_op_t op);

/* The hierarchical Allreduce's three stages with this group as one of its
 * groups (collective over the group): reduce-scatter within the group,
 * the caller's inter-group step on each chunk of each member's shard (the
 * same shard of the other groups, crux_coll_inter_t), then the allgather
 * within the group, pipelined with up to 'depth' chunks in the inter-group
 * step at once (0: the stages one after the other, over whole shards).
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

#endif

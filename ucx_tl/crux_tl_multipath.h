/* libcrux_tl, second half: the multipath transport.
 *
 * On top of a context (crux_tl_uct.h), an engine moves one buffer from a
 * process to another over several channels at once: host channels (cma,
 * shared segments), CUDA channels (IPC, staged through a peer GPU or pinned
 * host memory) and paced model channels; a planner splits the buffer so
 * that every channel finishes together.  Lanes are its persistent
 * transfers out of shared buffers, for pipelined collectives.
 *
 * An engine, and everything made from it, is used by one thread at a time.
 * Include "ucx_tl/crux_tl.h", the library's public header.
 */
#ifndef CRUX_TL_MULTIPATH_H
#define CRUX_TL_MULTIPATH_H

#include "ucx_tl/crux_tl_uct.h"

/* --- channels -------------------------------------------------------------- */

/* A channel is one way to move bytes from a buffer in one process to a buffer
 * in another (or the same) process.  The process that does the copying is
 * the channel's *actor*: the receiver for pulls, the sender for pushes, both
 * for the staged host channel. */
typedef enum {
    CRUX_TL_CHAN_CMA_GET, /* receiver pulls over cma: single copy by its CPU */
    CRUX_TL_CHAN_CMA_PUT, /* sender pushes over cma: single copy by its CPU */
    CRUX_TL_CHAN_SHM,     /* sender copies into a shared segment's slots, receiver copies out */
    CRUX_TL_CHAN_SHM_DIRECT, /* receiver copies straight out of a shared send buffer (crux_tl_shared_alloc) */
    CRUX_TL_CHAN_MODEL,     /* a paced memcpy by the receiver (see crux_tl_model_t) */
    CRUX_TL_CHAN_CUDA_IPC,  /* receiver copies from the sender's device buffer, mapped by IPC */
    CRUX_TL_CHAN_CUDA_PEER, /* the same, staged through buffers in one or two peer GPUs */
    CRUX_TL_CHAN_CUDA_HOST, /* the same, staged through pinned host memory (D2H then H2D) */
    CRUX_TL_CHAN_KIND_COUNT
} crux_tl_chan_kind_t;

/* Shared resources a channel occupies: channels that occupy the same one are
 * not independent, and the planner caps their sum by the resource's rate. */
enum {
    CRUX_TL_RES_TX_CPU = 1u << 0, /* the sending process's CPU */
    CRUX_TL_RES_RX_CPU = 1u << 1, /* the receiving process's CPU */
};

typedef struct {
    crux_tl_chan_kind_t kind;
    char name[48];      /* "cma-get", "model1", "cuda-peer:0000:41:00.0", ... */
    double bandwidth;   /* bytes per second */
    double latency;     /* seconds from issuing a chunk to its landing, beyond its copy */
    double chunk_cost;  /* seconds a chunk occupies the channel beyond its bytes */
    unsigned hops;      /* copies a chunk goes through one after the other (staged: 2) */
    unsigned max_depth; /* chunks in flight at most (staging slots, streams) */
    size_t max_chunk;   /* bytes per chunk at most (a staging slot) */
    unsigned resources; /* CRUX_TL_RES_* */
    int calibrated;     /* 1: measured (or read from the calibration cache); 0: nominal */
    /* 1: the nominal figures are a guess (no topology said the path exists
     * at that speed): used only when calibrated or asked for by name */
    int guessed;
} crux_tl_chan_attr_t;

const char *crux_tl_chan_kind_name(crux_tl_chan_kind_t kind);

/* A model channel: it really copies the bytes (memcpy by the receiver, so the
 * sender's buffer must be addressable there: the same process, or a shared
 * mapping at the same address) and completes each chunk no earlier than a
 * link of this bandwidth, latency and per-chunk cost would.  For testing and
 * measuring the planner and the engine without GPUs. */
typedef struct {
    double bandwidth;   /* bytes per second, > 0 */
    double latency;     /* seconds */
    double chunk_cost;  /* seconds per chunk */
    unsigned max_depth; /* 0: 8 */
    size_t max_chunk;   /* 0: 4 MiB */
} crux_tl_model_t;

/* --- the planner ----------------------------------------------------------- */

#define CRUX_TL_MAX_PATHS     16
#define CRUX_TL_MAX_RESOURCES 8

/* One path, as the planner sees it.  A path with n bytes cut into k equal
 * chunks of c bytes takes
 *     T = latency + (k - 1) * p + hops * s,   s = chunk_cost + c / bandwidth,
 *     p = max(s, (latency + hops * s) / max_depth)
 * seconds: the chunks stream through 'hops' copy stages of s seconds each,
 * and at most max_depth of them are in flight, each for latency + hops * s. */
typedef struct {
    double bandwidth; /* bytes per second; 0: the path is not used */
    double latency;
    double chunk_cost;
    unsigned hops;      /* >= 1 */
    unsigned max_depth; /* >= 1 */
    size_t max_chunk;   /* 0: unlimited */
    unsigned resources; /* bit r: occupies resource r */
} crux_tl_path_model_t;

typedef struct {
    unsigned npaths;
    crux_tl_path_model_t path[CRUX_TL_MAX_PATHS];
    /* Rate of each resource, bytes per second: the bytes of all paths that
     * occupy resource r take at least their sum / resource_rate[r]. 0: none. */
    double resource_rate[CRUX_TL_MAX_RESOURCES];
    /* Seconds the driving thread spends starting each path it uses: every
     * used path is delayed by this times the number of paths used.  It is
     * what makes small messages go over one path. */
    double path_cost;
    /* Stripes start at multiples of this many bytes (0: 1). */
    size_t granule;
    /* Use at most this many paths (0: no limit). */
    unsigned max_paths;
} crux_tl_plan_input_t;

typedef struct {
    size_t offset;  /* of the stripe in the buffer */
    size_t bytes;   /* 0: the path is not used */
    size_t chunk;   /* bytes per chunk (the last may be shorter) */
    unsigned depth; /* chunks in flight */
} crux_tl_stripe_t;

typedef struct {
    crux_tl_stripe_t stripe[CRUX_TL_MAX_PATHS]; /* one per input path, in input order */
    unsigned used;                              /* paths with bytes */
    double makespan;                            /* predicted seconds */
} crux_tl_plan_t;

/* Split 'bytes' over the input's paths, and choose each path's chunk size and
 * depth, to minimise the makespan (crux_tl_plan_makespan); stripes are laid
 * out in path order.  CRUX_ERR_NO_RESOURCE when no path has bandwidth,
 * CRUX_ERR_INVALID for more than CRUX_TL_MAX_PATHS paths. */
crux_status_t crux_tl_plan(const crux_tl_plan_input_t *input, size_t bytes, crux_tl_plan_t *plan);

/* The planner's cost model: the makespan of moving bytes[i] over path i, each
 * path with its best chunking: the slowest used path (with path_cost times
 * the number of used paths added) or the busiest resource, whichever is
 * later.  Infinity when bytes go to a path without bandwidth. */
double crux_tl_plan_makespan(const crux_tl_plan_input_t *input, const size_t *bytes);

/* The time of 'bytes' over one path alone with its best chunk count, which
 * is stored in *chunks when not NULL. */
double crux_tl_path_time(const crux_tl_path_model_t *path, size_t bytes, size_t *chunks);

/* --- the engine ------------------------------------------------------------ */

typedef struct crux_tl_engine crux_tl_engine_t;
typedef struct crux_tl_pair crux_tl_pair_t; /* this process and one peer */
typedef struct crux_tl_xfer crux_tl_xfer_t; /* one send or receive */

/* Bit (1u << kind) of crux_tl_chan_kind_t. */
#define CRUX_TL_KIND(kind) (1u << (kind))
#define CRUX_TL_KINDS_HOST                                                     \
    (CRUX_TL_KIND(CRUX_TL_CHAN_CMA_GET) | CRUX_TL_KIND(CRUX_TL_CHAN_CMA_PUT) | \
     CRUX_TL_KIND(CRUX_TL_CHAN_SHM) | CRUX_TL_KIND(CRUX_TL_CHAN_SHM_DIRECT))
#define CRUX_TL_KINDS_CUDA                                                        \
    (CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_IPC) | CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_PEER) | \
     CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_HOST))

typedef struct {
    int max_peers;                 /* ranks a pair may name: 0 .. max_peers-1 */
    unsigned kinds;                /* channel kinds to use (CRUX_TL_KIND bits) */
    size_t shm_slot_size;          /* shm channel: bytes per staging slot ... */
    unsigned shm_slots;            /* ... and slots, per pair and direction */
    unsigned nmodels;              /* model channels, added to every pair */
    const crux_tl_model_t *models; /* (copied) */
    double path_cost;              /* planner's crux_tl_plan_input_t.path_cost */
    /* Calibration cache file.  NULL: $XDG_CACHE_HOME/crux/calibration-<host>,
     * else $HOME/.cache/crux/..., else /tmp/crux-<uid>/...; "": no cache. */
    const char *calib_path;
    /* Host sends of at most this many bytes go out eagerly: the sender
     * copies them into its shm slots as it publishes them, before the
     * receiver's plan, which saves a round trip; the receiver lands them
     * over shm whatever its params ask (0: never). */
    size_t eager_max;
    /* A pair is "far" (crux_tl_pair_far) when the median time the peer's
     * ring entries take to reach this process exceeds this many seconds
     * (0: CRUX_REACH_FAR, 90 ns, between a cache line passed within one
     * last-level cache and one passed across chiplets or sockets, measured
     * with the clock reads it includes). */
    double far_latency;
    /* Peers' device allocations kept mapped here, in bytes of the whole
     * allocations (0: CRUX_TL_IPC_CACHE_DEFAULT); least recently used ones
     * are unmapped beyond it, so freed memory of a peer is not held for
     * long (a mapping keeps the exporter's memory allocated). */
    size_t ipc_cache_bytes;
} crux_tl_engine_config_t;

#define CRUX_TL_IPC_CACHE_DEFAULT ((size_t)4 << 30)

#define CRUX_TL_ENGINE_CONFIG_DEFAULT                                              \
    {                                                                              \
        .max_peers = 64, .kinds = CRUX_TL_KINDS_HOST | CRUX_TL_KINDS_CUDA,         \
        .shm_slot_size = 256u << 10, .shm_slots = 8, .nmodels = 0, .models = NULL, \
        .path_cost = 0.5e-6, .calib_path = NULL, .eager_max = 0, .far_latency = 0, \
    }

/* Create an engine on an open context (which must outlive it).  It allocates
 * one shared segment holding a control area for every possible peer. */
crux_status_t crux_tl_engine_create(crux_tl_context_t *context,
                                    const crux_tl_engine_config_t *config,
                                    crux_tl_engine_t **engine_p);
/* Every pair must be disconnected and every transfer released first. */
void crux_tl_engine_destroy(crux_tl_engine_t *engine);

/* This process's card: what peers connect with.  Exchange cards out of band
 * (e.g. an allgather); all engines with the same configuration pack cards of
 * the same size. */
size_t crux_tl_engine_card_size(const crux_tl_engine_t *engine);
crux_status_t crux_tl_engine_card_pack(const crux_tl_engine_t *engine, void *card);

/* Connect this process (rank 'rank') with the peer of rank 'peer_rank' whose
 * card is given.  peer_rank == rank makes a loopback pair (card ignored).
 * Both sides must connect before either sends; they must have the same
 * engine configuration.  Single-copy (cma) channels are used only if a copy
 * to the peer really works (ptrace permission). */
crux_status_t crux_tl_pair_connect(crux_tl_engine_t *engine, int rank, int peer_rank,
                                   const void *peer_card, crux_tl_pair_t **pair_p);
void crux_tl_pair_disconnect(crux_tl_pair_t *pair);

/* The pair's host and model channels, in index order (the bits of
 * crux_tl_xfer_params_t.channels).  CUDA channels follow once a device
 * transfer has used them.  Returns the count, fills at most 'max'. */
unsigned crux_tl_pair_channels(const crux_tl_pair_t *pair, crux_tl_chan_attr_t *attrs,
                               unsigned max);

typedef struct {
    uint32_t channels;  /* receiver: pair channels it may use (bit i = index i); 0: all */
    unsigned max_paths; /* receiver: at most this many channels (0: no limit) */
    size_t chunk;       /* receiver: force this chunk size (0: the planner's) */
    /* receiver, host memory: land with streaming stores, bypassing the
     * cache, for large results the caller does not read again soon.  Only
     * the channels the receiver lands itself can (shm, model: cma copies
     * inside the kernel), so the transfer keeps to those when the pair has
     * one. */
    int stream;
} crux_tl_xfer_params_t;

/* Post a send of 'bytes' from 'buffer' to the peer, or a receive into
 * 'buffer' from it.  The i-th send of one side matches the i-th receive of
 * the other; sizes must agree (else both fail with CRUX_ERR_INVALID).  The
 * receiver plans the transfer from its channels' attributes and the memory
 * types of both buffers (host to host over host and model channels, device
 * to device over CUDA channels).  The buffer must stay untouched until the
 * transfer is done.  params may be NULL.  Any number of transfers may be in
 * flight on a pair, in both directions. */
crux_status_t crux_tl_send(crux_tl_pair_t *pair, const void *buffer, size_t bytes,
                           const crux_tl_xfer_params_t *params, crux_tl_xfer_t **xfer_p);
crux_status_t crux_tl_recv(crux_tl_pair_t *pair, void *buffer, size_t bytes,
                           const crux_tl_xfer_params_t *params, crux_tl_xfer_t **xfer_p);

/* --- shared buffers ---------------------------------------------------------- */

/* Host memory that every peer of the engine reads in place.  A send whose
 * buffer lies within one travels in a single copy: the receiver copies (or
 * streams) straight out of its own mapping of it, over the
 * pair's shm-direct channel, with no staging by the sender and no system
 * call; the sender only publishes it and waits for the receiver's word.  So
 * one shared buffer written once can be sent to every peer (a gather reads
 * it once per peer).
 * The receiver maps a peer's shared buffer the first time a send names it
 * and keeps a few mappings per pair.  CRUX_ERR_UNSUPPORTED when the engine
 * does not use CRUX_TL_CHAN_SHM_DIRECT, CRUX_ERR_NO_MEMORY when the shared
 * memory domain has no room. */
crux_status_t crux_tl_shared_alloc(crux_tl_engine_t *engine, size_t bytes, void **ptr_p);
/* Free a shared buffer; no send from it may be in flight.  Peers' mappings
 * of it stay valid until they drop them. */
void crux_tl_shared_free(crux_tl_engine_t *engine, void *ptr);

/* 1 when sends from shared buffers to the peer go over shm-direct (both
 * sides use the kind). */
int crux_tl_pair_direct(const crux_tl_pair_t *pair);

/* --- lanes: persistent transfers out of shared buffers ---------------------------
 *
 * A pair's lane is a one-way sequence of host transfers out of the sender's
 * shared buffers, pre-matched by position: the sender posts a place of a
 * shared buffer (its bytes written), the receiver reads them in place from
 * its own mapping (copies them out, reduces them: whatever it needs) and
 * consumes the post, which frees the place for the sender.  No plan, no
 * transfer object and no copy by the engine: a hand-off is a store and a
 * load, as in a staging area's flags, which is what a pipelined collective
 * needs between steps of a few microseconds.  The receiver maps each shared
 * buffer once.  A pair has one lane each way, apart from its transfers.
 * Looks at the peer's posts judge its distance (crux_tl_pair_far) as its
 * ring entries do. */

/* Post [ptr, ptr + bytes) of one of this engine's shared buffers to the
 * peer, with 'tag', a word the receiver's peek returns as it is (a
 * collective's description of the call, which the receiver compares with
 * its own: one compare tells that both sides run the same call).
 * CRUX_ERR_INVALID when no shared buffer holds it (or the pair is
 * not direct: crux_tl_pair_direct), CRUX_ERR_NO_RESOURCE when
 * CRUX_TL_LANE_DEPTH posts are not consumed yet, CRUX_ERR_PEER once either
 * side abandoned the lanes. */
#define CRUX_TL_LANE_DEPTH 64
crux_status_t crux_tl_lane_post(crux_tl_pair_t *pair, const void *ptr, size_t bytes, uint64_t tag);
/* Posts made to the peer so far; whether it consumed the first 'upto' of
 * them (a look at its word only when what was seen before falls short). */
uint64_t crux_tl_lane_posted(const crux_tl_pair_t *pair);
int crux_tl_lane_consumed(crux_tl_pair_t *pair, uint64_t upto);
/* The peer's oldest post not consumed yet, mapped here: CRUX_OK with its
 * place and tag, CRUX_INPROGRESS while there is none; CRUX_ERR_NO_RESOURCE when
 * its buffer cannot be mapped.  The place stays the peer's to rewrite once
 * consumed. */
crux_status_t crux_tl_lane_peek(crux_tl_pair_t *pair, const void **ptr_p, size_t *bytes_p,
                                uint64_t *tag_p);
/* 1 when the peer's next 'count' posts (not consumed yet, at most
 * CRUX_TL_LANE_DEPTH) are all there: what a receiver still needs from a
 * peer that went away may have been posted before it did. */
int crux_tl_lane_ready(const crux_tl_pair_t *pair, unsigned count);
/* Consume the post peek returned (after the last read of its bytes). */
void crux_tl_lane_consume(crux_tl_pair_t *pair);
/* Give up the lanes both ways, for good: from then on both sides' posts and
 * checks fail with CRUX_ERR_PEER (a call abandoned halfway); posts made
 * before stay readable. */
void crux_tl_lane_abandon(crux_tl_pair_t *pair);
/* Sleeping until a peer acts on a lane (posts to this process, consumes its
 * posts, abandons), for waits on a node with more processes than cores:
 * doze, look once more at everything the caller waits for, then sleep with
 * the ticket doze returned, for at most 'seconds', or with 0 seconds if
 * that look found something (it only ends the doze).  A peer's act after
 * the doze ends the sleep at once. */
uint32_t crux_tl_engine_doze(crux_tl_engine_t *engine);
void crux_tl_engine_sleep(crux_tl_engine_t *engine, uint32_t ticket, double seconds);
/* CRUX_OK while the peer lives and neither side abandoned the lanes, else
 * CRUX_ERR_PEER.  A system call: for waits that found nothing for long. */
crux_status_t crux_tl_lane_check(crux_tl_pair_t *pair);

/* 1 when the peer is far from this process's caches: the lines it writes
 * reach us slowly (other chiplet or socket).  Measured on the pair's
 * traffic (common/crux_reach.h): one receive in eight times the look that
 * finds the peer's send published, one lane post in eight the first look
 * that finds it posted, and the median of 15 such looks decides, anew for each window (0 until the first one).  Memory the peer
 * reads next is then better written with streaming stores
 * (crux_copy_stream): it goes to memory instead of staying in a cache the
 * peer must snoop, line by line, across the fabric. */
int crux_tl_pair_far(const crux_tl_pair_t *pair);

/* Make progress on every pair's transfers without blocking: publish, plan,
 * issue chunks, retire completed ones.  Both sides of a transfer must
 * progress.  Returns the number of events (a chunk issued or retired,
 * a transfer matched or completed); 0 means nothing could advance. */
unsigned crux_tl_engine_progress(crux_tl_engine_t *engine);

int crux_tl_xfer_done(const crux_tl_xfer_t *xfer);
/* CRUX_INPROGRESS until done; then CRUX_OK or this transfer's error
 * (CRUX_ERR_INVALID size mismatch, CRUX_ERR_IO a copy failed,
 * CRUX_ERR_PEER the peer died, CRUX_ERR_UNSUPPORTED no channel fits the
 * buffers' memory types). */
crux_status_t crux_tl_xfer_status(const crux_tl_xfer_t *xfer);
/* 1 when the rest of a send is up to the receiver: it is published and
 * the sender has nothing to copy (a send from a shared buffer, pulled by
 * the receiver), or it is done.  Its sender may then stop progressing the
 * engine until it wants the send finished. */
int crux_tl_xfer_left_to_peer(const crux_tl_xfer_t *xfer);
/* Progress the engine until the transfer is done; returns its status.  It
 * spins, then yields the core (common/crux_idle.h), never sleeps. */
crux_status_t crux_tl_xfer_wait(crux_tl_xfer_t *xfer);
/* Release a finished transfer. */
void crux_tl_xfer_release(crux_tl_xfer_t *xfer);

typedef struct {
    unsigned nstripes;
    struct {
        unsigned channel; /* index in the receiver's pair channels */
        size_t bytes;     /* landed through this channel */
        size_t chunks;
        size_t chunk; /* planned chunk size */
        unsigned depth;
    } stripe[CRUX_TL_MAX_PATHS];
    double predicted; /* planner's makespan, seconds */
    double elapsed;   /* receiver: from matching to landing, seconds */
} crux_tl_xfer_stats_t;

/* Receiver side: how the transfer was striped (valid once done). */
const crux_tl_xfer_stats_t *crux_tl_xfer_stats(const crux_tl_xfer_t *xfer);

/* --- calibration ----------------------------------------------------------- */

/* Measure the bandwidth, latency and per-chunk cost of the pair's host and
 * model channels with short transfers (about 10 ms per channel), or take
 * them from the calibration cache, and use them in planning instead of the
 * nominal figures.  Collective over the pair: both sides call it.  The rank
 * with the lower number sends, the other measures and publishes; results are
 * cached per node (host channels only: model channels are measured anew).
 * force: measure even when the cache has them. */
crux_status_t crux_tl_pair_calibrate(crux_tl_pair_t *pair, int force);

/* CUDA channels between device src_dev and device dst_dev, measured within
 * this process (device to device copies have the same path whichever process
 * issues them) on buffers it allocates, or read from the cache; then used by
 * every pair of this engine whose transfers go between those two devices. */
crux_status_t crux_tl_engine_calibrate_cuda(crux_tl_engine_t *engine, int src_dev, int dst_dev,
                                            int force);

/* Order every later copy of the engine's CUDA channels after CUDA events
 * (CUevent handles, local or opened from another process's IPC handle): each
 * channel's streams wait on them (cuStreamWaitEvent) before their next copy,
 * as a collective's copies must come after the work the application queued
 * on its default streams.  The set replaces the previous one; the array and
 * the events must stay valid until the next call (n = 0 clears it). */
crux_status_t crux_tl_engine_cuda_order(crux_tl_engine_t *engine, void *const *events, unsigned n);

/* The cache file in use ("" if none). */
const char *crux_tl_engine_calib_path(const crux_tl_engine_t *engine);

/* GPU paths between two devices, e.g. from topo's multipath set: a direct
 * path (kind CUDA_IPC: NVLink, NVSwitch, PCIe peer to peer), a path through
 * relay GPUs (CUDA_PEER) or through host memory (CUDA_HOST), each with its
 * nominal bandwidth.  Devices are named by UUID ("GPU-6f1b2c3d-...", a MIG
 * instance's own; crux_cuda_name), as ordinals differ between processes and
 * MIG instances of one GPU share a PCI bus id.  Without a call, a device
 * pair uses a direct and a host-staged path with nominal figures. */
#define CRUX_TL_DEVICE_NAME_SIZE 48
typedef struct {
    crux_tl_chan_kind_t kind;
    double bandwidth;                        /* bytes per second */
    unsigned nrelays;                        /* CUDA_PEER: 1 or 2 */
    char relay[2][CRUX_TL_DEVICE_NAME_SIZE]; /* CUDA_PEER: the relay GPUs' names, in order */
} crux_tl_gpu_path_t;

#define CRUX_TL_MAX_GPU_PATHS 8
crux_status_t crux_tl_engine_gpu_paths(crux_tl_engine_t *engine, const char *src_name,
                                       const char *dst_name, const crux_tl_gpu_path_t *paths,
                                       unsigned npaths);

#endif

/* Internal to libcrux_tl: the multipath engine's structures.
 *
 * Protocol.  Every engine allocates one shared segment with a control area
 * per possible peer; area q of process P is written only by P and read by
 * its peer q (and by P itself on a loopback pair).  The i-th send of P to Q
 * matches the i-th receive of Q from P (sequence number i):
 *   1. the sender publishes its buffer in its send ring;
 *   2. the receiver, once it has posted the matching receive, plans the
 *      transfer and publishes its own buffer with the plan (stripes) in its
 *      receive ring;
 *   3. each side copies the stripes it is the actor of: the receiver pulls
 *      (cma get, model, CUDA), the sender pushes (cma put) and copies shm
 *      stripes into its slots, which the receiver copies out;
 *   4. the sender publishes send_done when its pushes are finished (always:
 *      it also tells the receiver that the sender stopped reading its plan);
 *      the receiver publishes recv_done when every byte has landed (and after
 *      send_done when the sender pushed), and the sender completes on it.
 * A ring entry is reused only when both sides are done with its transfer.
 * An eager send (small, host memory) skips step 2 for the sender: it stages
 * its bytes into the shm slots at once, and the receiver's plan is that.
 *
 * The sender claims the stripes it pushes when it takes the plan.  If it
 * has not by the time the receiver finished its own stripes and a grace
 * period passed (it may not be running: oversubscribed nodes), the receiver
 * claims them instead and pulls them with cma get.  The claim word is the
 * one word both sides write, with compare-and-swap. */
#ifndef CRUX_TL_MP_H
#define CRUX_TL_MP_H

#include <stdalign.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/crux_reach.h"
#include "ucx_tl/uct/uct_internal.h"

#define CRUX_TL_RING           64  /* transfers in flight per pair and direction */
#define CRUX_TL_MAX_SLOTS      32  /* shm staging slots per direction */
#define CRUX_TL_MAX_CHANS      32  /* channels in a pair's table */
#define CRUX_TL_GRANULE        64  /* stripes start on cache lines */
#define CRUX_TL_SHARED_KEY_MAX 128 /* bytes of a shared buffer's segment key */
#define CRUX_TL_SHARED_MAPS    4   /* peer shared buffers a pair keeps mapped */
#define CRUX_TL_AREA_MAGIC     0x6372757870616972ull /* "cruxpair" */
#define CRUX_TL_CARD_MAGIC     0x6372757863617264ull /* "cruxcard" */

/* ---- shared memory (the "wire") ------------------------------------------ */

typedef struct {
    /* what every match reads first, in one cache line with the entry's seq */
    uint64_t addr; /* in the owner's address space */
    uint64_t bytes;
    int32_t mem_type; /* crux_tl_mem_type_t */
    int32_t device;
    uint64_t shared_id;     /* host memory in a shared buffer: its number (0: private) ... */
    uint64_t shared_offset; /* ... and where in it addr lies (its key is below) */
    /* read only when needed */
    char pci[16];                               /* device's PCI bus id */
    uint64_t alloc_base;                        /* device memory: base of its allocation, and ... */
    uint8_t ipc[64];                            /* ... that allocation's CUDA IPC handle */
    uint8_t shared_key[CRUX_TL_SHARED_KEY_MAX]; /* the shared buffer's segment key */
} crux_tl_wire_buf_t;

typedef struct {
    uint32_t kind; /* crux_tl_chan_kind_t */
    uint32_t depth;
    uint64_t offset, bytes, chunk;
} crux_tl_wire_stripe_t;

typedef struct {
    alignas(64) uint64_t seq; /* sequence + 1 once valid */
    uint32_t eager;           /* 1: staged over shm at once, no plan awaited */
    crux_tl_wire_buf_t buf;
} crux_tl_wire_send_t;

typedef struct {
    alignas(64) uint64_t seq; /* sequence + 1 once buf and the plan are valid */
    int32_t status;           /* not CRUX_OK: refused, no stripes */
    uint32_t nstripes;
    crux_tl_wire_buf_t buf;
    crux_tl_wire_stripe_t stripe[CRUX_TL_MAX_PATHS];
    alignas(64) uint64_t claim; /* CLAIM_*: who copies the sender's stripes */
} crux_tl_wire_recv_t;

#define CLAIM_OPEN     0
#define CLAIM_SENDER   1
#define CLAIM_RECEIVER 2

typedef struct {
    alignas(64) uint64_t seq; /* sequence + 1 */
    int64_t status;
} crux_tl_wire_done_t;

typedef struct {
    alignas(64) uint64_t full;   /* staged chunk number + 1, once the data is in */
    uint64_t seq, offset, bytes; /* the transfer and place it belongs to */
} crux_tl_wire_slot_t;

typedef struct {
    alignas(64) uint64_t consumed; /* staged chunk number + 1, once copied out */
} crux_tl_wire_ack_t;

/* A lane's post (crux_tl_lane_post): a place in one of the sender's shared
 * buffers, and beside it, apart, the segment key the receiver maps that
 * buffer with (read only for a buffer it has not mapped yet). */
typedef struct {
    alignas(64) uint64_t seq; /* post number + 1 once the place is valid */
    uint64_t shared_id;
    uint64_t offset, bytes; /* in the shared buffer */
    uint64_t tag;           /* the sender's word for the receiver (crux_tl_lane_post) */
} crux_tl_wire_lane_t;

typedef struct {
    alignas(64) uint8_t key[CRUX_TL_SHARED_KEY_MAX];
} crux_tl_wire_lane_key_t;

typedef struct {
    double bandwidth, latency, chunk_cost;
    int32_t index; /* channel index, -1: not calibrated */
} crux_tl_wire_calib_t;

typedef struct {
    alignas(64) uint64_t magic;
    int64_t pid;
    alignas(64) uint64_t caps;        /* CAP_* once this side connected */
    alignas(64) uint64_t calib_start; /* round, once calib_count is set */
    uint32_t calib_count;             /* transfers per schedule the sender posts */
    alignas(64) uint64_t calib_done;  /* round, once calib[] holds the results */
    crux_tl_wire_calib_t calib[CRUX_TL_MAX_CHANS];
    crux_tl_wire_send_t send[CRUX_TL_RING];
    crux_tl_wire_recv_t recv[CRUX_TL_RING];
    crux_tl_wire_done_t send_done[CRUX_TL_RING];
    crux_tl_wire_done_t recv_done[CRUX_TL_RING];
    crux_tl_wire_slot_t slot[CRUX_TL_MAX_SLOTS];          /* this side's sends */
    crux_tl_wire_ack_t ack[CRUX_TL_MAX_SLOTS];            /* the peer's sends, consumed here */
    crux_tl_wire_lane_t lane[CRUX_TL_LANE_DEPTH];         /* this side's lane posts */
    crux_tl_wire_lane_key_t lane_key[CRUX_TL_LANE_DEPTH]; /* ... and their buffers' keys */
    alignas(64) uint64_t lane_consumed;                   /* the peer's lane posts consumed here */
    alignas(64) uint64_t lane_abandoned;                  /* 1: this side gave its lanes up */
} crux_tl_area_t;
/* slot data follows the area, page aligned */

/* A process's doorbell, after its areas: it sleeps on 'ring' (a futex) with
 * 'sleeping' set, and a peer that posts to it or consumes its posts rings
 * it then.  The one word of the segment its peers write. */
typedef struct {
    alignas(64) uint32_t ring;
    uint32_t sleeping;
} crux_tl_bell_t;

#define CAP_CONNECTED 1u
#define CAP_CMA       2u /* this side's cma copies to and from the peer work */

typedef struct {
    uint64_t magic;
    int64_t pid;
    uint64_t area_size;
    uint32_t max_peers;
    uint32_t address_len;
    uint32_t key_len;
    uint32_t pad;
    /* then the cma address and the segment key */
} crux_tl_card_t;

static inline uint64_t mp_load(const uint64_t *word)
{
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

static inline void mp_store(uint64_t *word, uint64_t value)
{
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}

/* ---- channels -------------------------------------------------------------- */

typedef struct crux_tl_chan crux_tl_chan_t;
typedef struct crux_tl_chunk crux_tl_chunk_t;

/* One chunk on its way through a channel. */
struct crux_tl_chunk {
    crux_tl_chunk_t *next;
    crux_tl_xfer_t *xfer;
    unsigned run; /* index of the transfer's run it belongs to */
    size_t length;
    void *dst; /* local, or mapped */
    const void *src;
    uint64_t remote; /* cma: the peer's address */
    crux_status_t status;
    double start, due;         /* model: when its bytes start to flow, when it lands */
    size_t copied;             /* model: bytes moved so far */
    crux_tl_completion_t comp; /* cma */
    unsigned slot;             /* CUDA staged: staging slot */
    unsigned queue;            /* ordered channels: the queue it completes in */
};

typedef struct {
    /* Start the chunk; CRUX_OK when it started (or already finished). */
    crux_status_t (*issue)(crux_tl_chan_t *chan, crux_tl_chunk_t *chunk);
    /* 1 when the chunk finished (chunk->status says how), 0 while not. */
    int (*test)(crux_tl_chan_t *chan, crux_tl_chunk_t *chunk);
    void (*destroy)(crux_tl_chan_t *chan);
} crux_tl_chan_ops_t;

struct crux_tl_chan {
    const crux_tl_chan_ops_t *ops;
    crux_tl_chan_attr_t attr;
    crux_tl_pair_t *pair; /* host channels; NULL for engine-wide CUDA channels */
    char signature[96];   /* calibration cache key; "" never cached */
    unsigned inflight;
    unsigned moved;               /* chunks that made headway in the last poll */
    crux_tl_chunk_t *head, *tail; /* in flight, in issue order */
    int usable;                   /* host: cma works in this direction */
    /* 0: chunks may finish in any order, each is tested; n (at most 32):
     * chunks finish in issue order within each of n queues (CUDA streams,
     * chunk->queue), so a poll stops at a queue's first unfinished chunk */
    unsigned ordered_queues;
};

/* ---- transfers ------------------------------------------------------------- */

/* QUEUED: posted, not yet published (sender) or matched (receiver);
 * PUBLISHED: the sender waits for the plan; ACTIVE: copying, or draining
 * after a failure; DONE. */
typedef enum { XFER_QUEUED, XFER_PUBLISHED, XFER_ACTIVE, XFER_DONE } xfer_state_t;

/* One stripe of a transfer, from this side's point of view. */
typedef struct {
    crux_tl_chan_kind_t kind;
    crux_tl_chan_t *chan; /* this side's channel when it is the actor */
    unsigned index;       /* receiver: the channel's index in the pair table */
    size_t offset, bytes, chunk;
    unsigned depth;
    size_t issued; /* bytes handed to the channel (or staged) */
    size_t landed; /* bytes finished */
    size_t chunks;
    unsigned inflight;
} crux_tl_run_t;

struct crux_tl_xfer {
    crux_tl_xfer_t *next; /* in the pair's send or receive list */
    crux_tl_pair_t *pair;
    int is_send;
    uint64_t seq;
    uint8_t *buffer;
    size_t bytes;
    crux_tl_mem_t mem;
    crux_tl_xfer_params_t params;
    crux_tl_reduce_t reduce; /* receiver: fn set for a reducing receive */
    xfer_state_t state;
    crux_status_t status;
    int released;
    int failed;           /* stop issuing; drain what is in flight */
    int peer_pushes;      /* receiver: wait for the sender's send_done */
    unsigned sender_runs; /* receiver: stripes the sender copies (put, shm) */
    int steal_index;      /* receiver: cma-get channel to take them over, -1 none */
    int done_published;   /* sender: send_done written */
    uint64_t peer_addr;   /* the other side's buffer */
    void *peer_mapped;    /* ... usable here (IPC mapping, shared mapping) */
    void *import;         /* the IPC mapping's cache entry, held until done */
    unsigned nruns;
    crux_tl_xfer_stats_t stats;
    double t_matched;
    /* last: a transfer is reused zeroed up to here; each run is set whole
     * when it is added */
    crux_tl_run_t run[CRUX_TL_MAX_PATHS];
};

/* A peer's shared buffer, mapped here. */
typedef struct {
    uint64_t id; /* 0: free */
    crux_tl_rseg_t *rseg;
    uint64_t last_use;
} crux_tl_shared_map_t;

/* One of this engine's shared buffers. */
typedef struct crux_tl_shared {
    struct crux_tl_shared *next;
    crux_tl_seg_t *seg;
    uint64_t id;
    uint8_t *base;
    size_t bytes;
    uint8_t key[CRUX_TL_SHARED_KEY_MAX];
} crux_tl_shared_t;

/* ---- pairs and the engine ---------------------------------------------------- */

typedef struct {
    size_t bytes, chunk;
    uint32_t channels;
    unsigned max_paths;
    uint64_t generation;
    crux_tl_plan_t plan;
    unsigned index[CRUX_TL_MAX_PATHS]; /* pair channel of each plan path */
    unsigned npaths;
} crux_tl_plan_entry_t;

#define CRUX_TL_PLAN_CACHE 8

struct crux_tl_pair {
    crux_tl_engine_t *engine;
    crux_tl_pair_t *next;
    int rank, peer;
    int loopback;
    pid_t peer_pid;
    crux_tl_area_t *mine;
    const crux_tl_area_t *theirs;
    uint8_t *my_slots;
    const uint8_t *their_slots;
    crux_tl_rseg_t *rseg;
    crux_tl_ep_t *ep;
    crux_tl_chan_t *chan[CRUX_TL_MAX_CHANS];
    int chan_owned[CRUX_TL_MAX_CHANS];
    unsigned nchan, nhost; /* host and model channels come first */
    uint64_t next_send, next_recv;
    crux_tl_xfer_t *sends, *recvs; /* not done yet, in sequence order */
    int send_busy[CRUX_TL_RING], recv_busy[CRUX_TL_RING];
    uint64_t staged_tx, staged_rx;
    uint64_t calib_round;
    uint64_t generation; /* bumps when channel figures change */
    crux_tl_plan_entry_t plans[CRUX_TL_PLAN_CACHE];
    unsigned plan_next;
    unsigned idle_polls;
    crux_tl_shared_map_t shared_maps[CRUX_TL_SHARED_MAPS];
    uint64_t shared_uses;
    crux_reach_t reach; /* how far the peer's caches are */
    /* lanes (crux_tl_lane.c) */
    uint64_t lane_posted, lane_received;
    uint64_t lane_seen;                       /* the peer's consumed count, as last looked at */
    uint64_t lane_timed;                      /* post number + 1 of the last one timed */
    uint64_t lane_key_id[CRUX_TL_LANE_DEPTH]; /* buffer whose key our slot holds */
    uint64_t lane_map_id;                     /* the peer's buffer mapped for its posts (0: none) */
    crux_tl_rseg_t *lane_rseg;
    const uint8_t *lane_base;
    crux_tl_bell_t *bell; /* the peer's doorbell, mapped here */
};

typedef struct crux_tl_cuda_state crux_tl_cuda_state_t;

struct crux_tl_engine {
    crux_tl_context_t *context;
    crux_tl_engine_config_t config;
    crux_tl_model_t *models;
    crux_tl_seg_t *seg;
    size_t area_size;
    crux_tl_bell_t *bell; /* ours, after the areas */
    crux_tl_pair_t *pairs;
    crux_tl_chunk_t *free_chunks;
    crux_tl_xfer_t *free_xfers;
    char calib_path[512];
    crux_tl_cuda_state_t *cuda; /* NULL until a device transfer or without CUDA */
    crux_tl_shared_t *shared;   /* shared buffers, newest first */
    uint64_t shared_ids;        /* numbers handed out */
};

/* crux_tl_engine.c */
double crux_tl_now(void);
crux_tl_chunk_t *crux_tl_chunk_get(crux_tl_engine_t *engine);
void crux_tl_chunk_put(crux_tl_engine_t *engine, crux_tl_chunk_t *chunk);
crux_tl_xfer_t *crux_tl_xfer_get(crux_tl_engine_t *engine);
void crux_tl_xfer_put(crux_tl_engine_t *engine, crux_tl_xfer_t *x);
crux_tl_area_t *crux_tl_area(crux_tl_engine_t *engine, uint8_t *base, int rank);
crux_tl_bell_t *crux_tl_bell(const crux_tl_engine_t *engine, uint8_t *base);

/* crux_tl_chan_host.c: cma get/put, shm and model channels of a pair */
crux_status_t crux_tl_host_channels(crux_tl_pair_t *pair);
void crux_tl_chan_init(crux_tl_chan_t *chan, const crux_tl_chan_ops_t *ops,
                       crux_tl_chan_kind_t kind, const char *name);
unsigned crux_tl_chan_poll(crux_tl_chan_t *chan);
/* 1 for the channels whose landings the receiver writes itself, from memory
 * it reads (shm, model): the only ones that can reduce or stream. */
int crux_tl_chan_lands_by_receiver(crux_tl_chan_kind_t kind);
/* Index of the pair's host channel of this kind, -1 if it has none. */
int crux_tl_pair_channel(const crux_tl_pair_t *pair, crux_tl_chan_kind_t kind);

/* crux_tl_xfer.c */
unsigned crux_tl_pair_progress(crux_tl_pair_t *pair);
/* Hand chunks of the transfer's runs to their channels, within depths. */
unsigned crux_tl_xfer_issue(crux_tl_pair_t *pair, crux_tl_xfer_t *x);
int crux_tl_peer_alive(const crux_tl_pair_t *pair);
void crux_tl_xfer_finish_chunk(crux_tl_chunk_t *chunk);
/* Land 'length' bytes that arrived for offset 'at' of the receive's buffer:
 * a copy (streaming if asked) or the reduction of a reducing receive. */
void crux_tl_land(const crux_tl_xfer_t *x, size_t at, const void *src, size_t length);
/* 0 while a reducing receive must wait for the one it comes after. */
int crux_tl_may_land(const crux_tl_xfer_t *x);

/* crux_tl_match.c: the receiver's matching and planning */
void crux_tl_match(crux_tl_pair_t *pair, crux_tl_xfer_t *x);
void crux_tl_plan_invalidate(crux_tl_pair_t *pair);

/* crux_tl_shm.c: the staged slots */
unsigned crux_tl_shm_stage(crux_tl_pair_t *pair);
unsigned crux_tl_shm_drain(crux_tl_pair_t *pair);
/* The one stripe of an eager send of 'bytes', as both sides see it: all of
 * it over the pair's shm channel, a slot per chunk. */
void crux_tl_shm_eager_run(const crux_tl_pair_t *pair, size_t bytes, crux_tl_run_t *run);

/* crux_tl_shared.c: shared buffers */
/* This engine's shared buffer holding [ptr, ptr + bytes), or NULL. */
const crux_tl_shared_t *crux_tl_shared_find(const crux_tl_engine_t *engine, const void *ptr,
                                            size_t bytes);
/* Name the shared buffer holding [ptr, ptr + bytes) in 'wire' (nothing if
 * none does); 1 when one does. */
int crux_tl_shared_describe(const crux_tl_engine_t *engine, const void *ptr, size_t bytes,
                            crux_tl_wire_buf_t *wire);
/* The sender's shared buffer named in 'wire', mapped here: where its addr is. */
crux_status_t crux_tl_shared_import(crux_tl_pair_t *pair, const crux_tl_wire_buf_t *wire,
                                    void **ptr_p);
void crux_tl_shared_unmap_all(crux_tl_pair_t *pair);
void crux_tl_shared_free_all(crux_tl_engine_t *engine);

/* crux_tl_lane.c: ring the peer's doorbell if it sleeps (after a store it
 * should see, sequentially consistent) */
void crux_tl_ring(crux_tl_pair_t *pair);
/* drop the mapping of the peer's lane buffer */
void crux_tl_lane_unmap(crux_tl_pair_t *pair);

/* crux_tl_calib.c: the cache */
void crux_tl_calib_path(crux_tl_engine_t *engine, const char *path);
int crux_tl_calib_lookup(crux_tl_engine_t *engine, crux_tl_chan_t *chan);
void crux_tl_calib_store(crux_tl_engine_t *engine, crux_tl_chan_t *const *chans, unsigned n);
void crux_tl_calib_fit(crux_tl_chan_attr_t *attr, const double *t, const double *k,
                       const double *n);

/* crux_tl_cuda_ipc.c: device buffers across processes (a CUDA build; the
 * stubs of a build without CUDA fail with CRUX_ERR_UNSUPPORTED) */
crux_status_t crux_tl_cuda_export(crux_tl_engine_t *engine, const void *ptr,
                                  crux_tl_wire_buf_t *wire);
/* Map the sender's allocation in 'device''s context (cached: bounded by
 * the engine's ipc_cache_bytes, least recently used first, never while a
 * transfer holds the entry): *import_p holds it until
 * crux_tl_cuda_import_done. */
crux_status_t crux_tl_cuda_import(crux_tl_pair_t *pair, const crux_tl_wire_buf_t *wire, int device,
                                  void **ptr_p, void **import_p);
void crux_tl_cuda_import_done(void *import);
void crux_tl_cuda_ipc_destroy(crux_tl_engine_t *engine);

/* crux_tl_cuda_chan.c: the CUDA channels, one set per device pair, shared
 * by every pair of the engine */
/* The CUDA channels from the sender's device to ours, added to the pair's
 * table; their indices go to index[], their count is returned. */
unsigned crux_tl_cuda_channels(crux_tl_pair_t *pair, const char *src_pci, int dst_device,
                               unsigned *index);
unsigned crux_tl_cuda_progress(crux_tl_engine_t *engine);
void crux_tl_cuda_destroy(crux_tl_engine_t *engine);

#endif

/* Internal to libcrux_tl: the engine's state (the engine, its pairs and
 * transfers) and what every channel kind's transfers share: the pools,
 * issuing a transfer's runs to its channels and landing their bytes
 * (crux_tl_issue.c), the pair's liveness and plan generation, the calibration
 * cache of the engine (crux_tl_engine_state.c).  The protocol that moves a
 * transfer is in engine/, the shared memory it runs on in crux_tl_wire.h. */
#ifndef CRUX_TL_CORE_INTERNAL_H
#define CRUX_TL_CORE_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include "common/crux_reach.h"
#include "ucx_tl/chan/crux_tl_chan_internal.h"
#include "ucx_tl/core/crux_tl_wire.h"

#define CRUX_TL_GRANULE     64 /* stripes start on cache lines */
#define CRUX_TL_SHARED_MAPS 4  /* peer shared buffers a pair keeps mapped */

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
    /* lanes (lane/crux_tl_lane.c) */
    uint64_t lane_posted, lane_received;
    uint64_t lane_seen;                       /* the peer's consumed count, as last looked at */
    uint64_t lane_timed;                      /* post number + 1 of the last one timed */
    uint64_t lane_key_id[CRUX_TL_LANE_DEPTH]; /* buffer whose key our slot holds */
    uint64_t lane_map_id;                     /* the peer's buffer mapped for its posts (0: none) */
    crux_tl_rseg_t *lane_rseg;
    const uint8_t *lane_base;
    crux_tl_bell_t *bell; /* the peer's doorbell, mapped here */
    /* device staging (engine/crux_tl_dstage.c): our stage toward the peer, pinned
     * with device dstage_device's context (no segment and -1: cannot) ... */
    crux_tl_seg_t *dstage_seg;
    uint8_t *dstage_base;
    int dstage_device;
    uint64_t dstaged_tx, dfull_tx;           /* chunks copied into it, published */
    uint64_t dtx_done[CRUX_TL_DSTAGE_SLOTS]; /* chunk + 1 once its copy is done */
    /* ... and the peer's, mapped and pinned here (device as above) */
    crux_tl_rseg_t *dstage_rseg;
    const uint8_t *dstage_peer;
    int dstage_peer_device;
    uint64_t ddrained_rx, dconsumed_rx;      /* chunks taken from it, acknowledged */
    uint64_t drx_done[CRUX_TL_DSTAGE_SLOTS]; /* chunk + 1 once landed (or dropped) */
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

/* crux_tl_engine_state.c */
crux_tl_chunk_t *crux_tl_chunk_get(crux_tl_engine_t *engine);
void crux_tl_chunk_put(crux_tl_engine_t *engine, crux_tl_chunk_t *chunk);
crux_tl_xfer_t *crux_tl_xfer_get(crux_tl_engine_t *engine);
void crux_tl_xfer_put(crux_tl_engine_t *engine, crux_tl_xfer_t *x);
crux_tl_area_t *crux_tl_area(crux_tl_engine_t *engine, uint8_t *base, int rank);
crux_tl_bell_t *crux_tl_bell(const crux_tl_engine_t *engine, uint8_t *base);
int crux_tl_peer_alive(const crux_tl_pair_t *pair);
/* The pair's channel figures changed: plans made before are not used again. */
void crux_tl_plan_invalidate(crux_tl_pair_t *pair);
/* The engine's calibration cache (plan/crux_tl_calib_cache.c): its file ('path'
 * NULL: the default place), and a channel's figures by its signature. */
void crux_tl_calib_path(crux_tl_engine_t *engine, const char *path);
int crux_tl_calib_lookup(crux_tl_engine_t *engine, crux_tl_chan_t *chan);
void crux_tl_calib_store(crux_tl_engine_t *engine, crux_tl_chan_t *const *chans, unsigned n);

/* crux_tl_issue.c */
/* Hand chunks of the transfer's runs to their channels, within depths. */
unsigned crux_tl_xfer_issue(crux_tl_pair_t *pair, crux_tl_xfer_t *x);
/* Stop issuing (what is in flight drains) with this status, the first one. */
void crux_tl_xfer_fail(crux_tl_xfer_t *x, crux_status_t status);
/* A chunk's copy ended: count it in its run (landed, or the transfer fails
 * with its status); the chunk is still the caller's. */
void crux_tl_chunk_settle(const crux_tl_chunk_t *c);
/* Land 'length' bytes that arrived for offset 'at' of the receive's buffer:
 * a copy, streaming if asked. */
void crux_tl_land(const crux_tl_xfer_t *x, size_t at, const void *src, size_t length);

#endif

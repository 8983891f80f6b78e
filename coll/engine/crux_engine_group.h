/* Internal to libcrux_coll: the engine group's structure. */
#ifndef CRUX_ENGINE_GROUP_H
#define CRUX_ENGINE_GROUP_H

#include "coll/crux_coll.h"
#include "coll/dev/crux_dev_internal.h"

#define CRUX_DEV_ID_SIZE 48 /* a device's name: "GPU-" and its UUID (crux_cuda_name) */

/* The events a device call's copies wait on (crux_engine_order.c): one on the
 * legacy, one on the per-thread default stream; IPC handles of 64 bytes. */
#define CRUX_ENGINE_ORDER_EVENTS 2
#define CRUX_ENGINE_ORDER_HANDLE 64

/* A member's card in a device call's agreement (crux_engine_agree.c). */
typedef struct {
    int32_t status;
    int32_t pad;
    uint8_t id[CRUX_DEV_ID_SIZE];
    uint8_t order[CRUX_ENGINE_ORDER_EVENTS][CRUX_ENGINE_ORDER_HANDLE];
} crux_engine_card_t;

struct crux_engine_group {
    int rank, size;
    /* the members' allgather, kept: device calls agree through it */
    crux_coll_oob_t oob;
    crux_engine_card_t *agree_cards; /* [size] */
    /* the members' devices at the last agreement, and whether each reaches
     * every other's (peer access) */
    uint8_t *peer_ids; /* [size][CRUX_DEV_ID_SIZE] */
    int peers_known, peers_reach;
    /* our default streams' events (on order_device, -1: none yet), their IPC
     * handles, and every member's opened here ([size][EVENTS], with the
     * handles they were opened from) */
    int order_device;
    void *order_own[CRUX_ENGINE_ORDER_EVENTS];
    uint8_t order_handle[CRUX_ENGINE_ORDER_EVENTS][CRUX_ENGINE_ORDER_HANDLE];
    void **order_peer;
    uint8_t (*order_peer_handle)[CRUX_ENGINE_ORDER_HANDLE];
    crux_engine_group_config_t config;
    crux_tl_context_t *ctx;
    crux_tl_engine_t *engine;
    crux_tl_pair_t **rs; /* [size]: reduce-scatter pairs, NULL at our rank */
    crux_tl_pair_t **ag; /* [size]: allgather pairs */
    /* landing slots for reduce-scatter pieces, on the buffers' device (or
     * host memory); kept between calls */
    void *scratch;
    size_t scratch_size;
    int scratch_device;      /* -1: host */
    crux_dev_queue_t *queue; /* kernels, on scratch_device */
    unsigned spins;          /* idle polls before yielding the core */
    /* host buffers, when every member has shm-direct to every other: the
     * lanes' shared stage (crux_engine_lanes.c), window rows of a place per
     * member, kept between calls; NULL: none */
    uint8_t *stage;
    /* the row the next call starts at: successive calls write rows the
     * peers read longest ago (writing lines a peer's cache holds is slow) */
    unsigned stage_row;
    /* [row][peer][rs, ag]: lane post numbers to see consumed before the
     * row's places are written again */
    uint64_t *lane_need;
    int lanes;        /* every member has the stage: host calls use lanes */
    int lanes_broken; /* a call abandoned them: host calls fail */
    int whole;        /* lanes, and whole calls are on */
    uint64_t caller;  /* crux_engine_group_set_caller's word, mixed into lane tags */
    void *call_mem;   /* a call's arrays (crux_engine_allreduce.c) */
    /* the node's topology (crux_engine_group_use_topo), and whether its GPU
     * paths went to the engine (they need the driver) */
    const struct crux_topo *topo;
    int topo_applied;
    size_t call_mem_size;
};

/* Reserve the lanes' stage (collective use: every member must have it);
 * CRUX_ERR_UNSUPPORTED when a pair has no shm-direct. */
crux_status_t crux_engine_lanes_reserve(crux_engine_group_t *group);
void crux_engine_lanes_release(crux_engine_group_t *group);

/* Record our default streams' events (on 'device') for a call, make our
 * queue wait on them, and give their IPC handles for our card. */
crux_status_t
crux_engine_order_record(crux_engine_group_t *group, int device,
                         uint8_t handles[CRUX_ENGINE_ORDER_EVENTS][CRUX_ENGINE_ORDER_HANDLE]);
/* Open the members' events named in their cards (those not open yet);
 * CRUX_ERR_UNSUPPORTED when one cannot be. */
crux_status_t crux_engine_order_open(crux_engine_group_t *group, int device,
                                     const crux_engine_card_t *cards);
/* Make the engine's CUDA channels wait on every member's events. */
crux_status_t crux_engine_order_apply(crux_engine_group_t *group);
void crux_engine_order_release(crux_engine_group_t *group);

/* Give the topology's GPU paths to the engine, once, when the driver is
 * there (crux_engine_topo.c); CRUX_OK without a topology or a driver. */
crux_status_t crux_engine_topo_apply(crux_engine_group_t *group);

/* Scratch of at least 'bytes' on 'device' (-1: host), and a queue there. */
crux_status_t crux_engine_scratch(crux_engine_group_t *group, int device, size_t bytes);
void crux_engine_release_scratch(crux_engine_group_t *group);

#endif

/* Internal to libcrux_coll: one call of the engine group's Allreduce data
 * movement, shared by its transfers (crux_engine_allreduce.c) and its lanes
 * (crux_engine_lanes.c). */
#ifndef CRUX_ENGINE_CALL_H
#define CRUX_ENGINE_CALL_H

#include <stdint.h>

#include "coll/engine/crux_engine_group.h"
#include "coll/group/crux_group_shard.h"

typedef struct {
    crux_engine_group_t *g;
    int device;          /* -1: host memory */
    size_t esize, chunk; /* chunk: elements (cut.chunk) */
    crux_cut_t cut;      /* shards and chunks (crux_group_shard.h) */
    crux_dtype_t dtype;
    crux_op_t op;
    crux_reduce_fn_t cpu; /* host memory */
    int stream;           /* host: gathered chunks bypass the cache */
    /* hierarchical (host calls over the lanes only): the inter-group step,
     * up to 'depth' chunks in it (crux_pipeline_internal.h) */
    const crux_coll_inter_t *inter;
    unsigned depth;
    const uint8_t *src;
    uint8_t *dst;
    int in_place, do_rs, do_ag;
    size_t count;
    unsigned kmax;    /* chunks of the largest shard */
    unsigned *chunks; /* [size] chunks of each shard */
    /* transfers, [peer * kmax + chunk] */
    crux_tl_xfer_t **rs_send, **rs_recv, **ag_send, **ag_recv;
    unsigned rs_posted; /* chunks of our shard whose pieces are posted */
    unsigned launched;  /* chunks whose reduction is enqueued */
    unsigned reduced;   /* chunks reduced (and sent on) */
    unsigned pending;   /* transfers not yet finished */
    crux_status_t status;
} crux_engine_call_t;

/* crux_engine_agree.c (collective): a device call goes ahead on every member,
 * CRUX_OK, or on none: CRUX_ERR_UNSUPPORTED when a member cannot take part
 * ('mine' not CRUX_OK) or a pair of the members' devices has no peer
 * access; CRUX_ERR_PEER when the allgather fails. */
crux_status_t crux_engine_agree(crux_engine_call_t *c, crux_status_t mine);

/* crux_engine_lanes.c: a host call over the engine's lanes (when the
 * group has them), run to completion: CRUX_OK, CRUX_ERR_INVALID (the
 * members' calls differ) or CRUX_ERR_PEER (a peer went away or gave up). */
crux_status_t crux_lanes_run(const crux_engine_call_t *c);

#endif

/* Internal to libcrux_dev: one call of the Allreduce data movement, shared
 * by the pipeline (crux_dev_allreduce.c) and the lanes (crux_dev_lanes.c). */
#ifndef CRUX_DEV_CALL_H
#define CRUX_DEV_CALL_H

#include <stdint.h>

#include "coll/crux_dev_group.h"

#define CRUX_DEV_MAX_DEPTH 64 /* inter-group steps in flight at most */

typedef struct {
    crux_dev_group_t *g;
    int device;          /* -1: host memory */
    size_t esize, chunk; /* chunk: elements */
    crux_dtype_t dtype;
    crux_op_t op;
    crux_reduce_fn_t cpu; /* host memory */
    int stream;           /* host: gathered chunks bypass the cache */
    /* host, over the lanes (crux_dev_lanes.c) */
    int lanes;
    unsigned row0;      /* the stage row of chunk 0 */
    unsigned staged;    /* rows whose pieces are copied in and posted */
    unsigned *gathered; /* [size] chunks of each shard copied out */
    /* the call's shape (bytes and element size), on every post: a member
     * whose peer's differs ends the call (mismatched arguments) */
    uint64_t tag;
    /* a peer reading the stage is far (crux_tl_pair_far): what it reads is
     * written with streaming stores, [member] and for what every peer reads */
    uint8_t *far;
    int any_far;
    /* a small allreduce in one exchange: every member's "shard" is the whole
     * buffer, which it reduces from every peer's input; no gather */
    int whole;
    /* hierarchical: the inter-group step between a chunk's reduction and
     * its gather, up to 'depth' chunks in it (0: the whole shard once);
     * chunks of our shard through it, and posted for the gather */
    const crux_coll_inter_t *inter;
    unsigned depth;
    unsigned inter_done, final;
    void *requests[CRUX_DEV_MAX_DEPTH]; /* ring, for chunks [inter_done, reduced) */
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
} crux_dev_call_t;

/* Chunk k of member p's shard: its first element and its element count. */
size_t crux_dev_chunk_first(const crux_dev_call_t *c, int p, unsigned k);
size_t crux_dev_chunk_count(const crux_dev_call_t *c, int p, unsigned k);
/* Account a posted transfer in 'slot', or the error that kept it from posting. */
void crux_dev_post(crux_dev_call_t *c, crux_status_t st, crux_tl_xfer_t **slot, crux_tl_xfer_t *x);
/* Post the receive of chunk k of member p's shard into 'to'. */
void crux_dev_recv_chunk(crux_dev_call_t *c, crux_tl_pair_t *pair, crux_tl_xfer_t **slot,
                         uint8_t *to, int p, unsigned k);
/* Retire a finished transfer; 1 when the slot holds none (any more). */
int crux_dev_finished(crux_dev_call_t *c, crux_tl_xfer_t **slot);

/* Post the send of chunk k of member p's shard from 'from'. */
void crux_dev_send_chunk(crux_dev_call_t *c, crux_tl_pair_t *pair, crux_tl_xfer_t **slot,
                         const uint8_t *from, int p, unsigned k);

/* crux_dev_agree.c (collective): a device call goes ahead on every member,
 * CRUX_OK, or on none: CRUX_ERR_UNSUPPORTED when a member cannot take part
 * ('mine' not CRUX_OK) or a pair of the members' devices has no peer
 * access; CRUX_ERR_PEER when the allgather fails. */
crux_status_t crux_dev_agree(crux_dev_call_t *c, crux_status_t mine);

/* crux_dev_cuda.c: 1 when the driver exports the allocation 'ptr' is in
 * (legacy CUDA IPC; not stream-ordered or VMM memory). */
int crux_dev_exportable(const void *ptr);

/* crux_dev_lanes.c: host calls over the engine's lanes */
/* Start a call over the lanes: its first row, which peers are far. */
void crux_dev_lanes_setup(crux_dev_call_t *c);
/* Run it to completion: CRUX_OK, CRUX_ERR_INVALID (the members' calls
 * differ) or CRUX_ERR_PEER (a peer went away or gave up). */
crux_status_t crux_dev_lanes_run(crux_dev_call_t *c);

#endif

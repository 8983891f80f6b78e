/* Internal to libcrux_tl: what the engine's files (engine/) give each
 * other and the lanes (lane/): the receiver's matching, the shm channel's
 * slots, shared buffers, the pair's channel table and doorbell. */
#ifndef CRUX_TL_ENGINE_INTERNAL_H
#define CRUX_TL_ENGINE_INTERNAL_H

#include "ucx_tl/core/crux_tl_core_internal.h"

/* crux_tl_xfer.c: publish, match, issue, land and complete the pair's transfers */
unsigned crux_tl_pair_progress(crux_tl_pair_t *pair);

/* crux_tl_match.c: the receiver's matching and planning */
void crux_tl_match(crux_tl_pair_t *pair, crux_tl_xfer_t *x);

/* crux_tl_pair.c: index of the pair's host channel of this kind, -1 if it has none */
int crux_tl_pair_channel(const crux_tl_pair_t *pair, crux_tl_chan_kind_t kind);

/* crux_tl_doorbell.c: ring the peer's doorbell if it sleeps (after a store it
 * should see, sequentially consistent) */
void crux_tl_ring(crux_tl_pair_t *pair);

/* crux_tl_shm_slots.c: the shm channel's staging slots */
unsigned crux_tl_shm_stage(crux_tl_pair_t *pair);
unsigned crux_tl_shm_drain(crux_tl_pair_t *pair);
/* The one stripe of an eager send of 'bytes', as both sides see it: all of
 * it over the pair's shm channel, a slot per chunk. */
void crux_tl_shm_eager_run(const crux_tl_pair_t *pair, size_t bytes, crux_tl_run_t *run);

/* crux_tl_dstage.c: cuda-host between two processes, staged by the sender */
/* 1 when stripes of this kind are the sender's to stage on this pair. */
int crux_tl_dstage_kind(const crux_tl_pair_t *pair, crux_tl_chan_kind_t kind);
/* Sender: make the pair's stage (once), pinned with 'device''s context; 1
 * when there is one to offer. */
int crux_tl_dstage_offer(crux_tl_pair_t *pair, int device);
/* Receiver: map and pin the peer's stage (once); 1 when it is. */
int crux_tl_dstage_attach(crux_tl_pair_t *pair, int device);
/* Sender: 1 when a staged run of the receiver's plan fits the send and the
 * stage. */
int crux_tl_dstage_run_ok(const crux_tl_pair_t *pair, const crux_tl_xfer_t *x,
                          const crux_tl_run_t *run);
/* The sender's copies into the stage, the receiver's out of it. */
unsigned crux_tl_dstage_push(crux_tl_pair_t *pair);
unsigned crux_tl_dstage_pull(crux_tl_pair_t *pair);
void crux_tl_dstage_release(crux_tl_pair_t *pair);

/* crux_tl_shared_buffer.c: shared buffers */
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

#endif

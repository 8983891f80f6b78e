/* Internal to libcrux_tl: what the CUDA area (cuda/) gives the engine:
 * device buffers across processes and the CUDA channels.  Without a CUDA
 * build every call is a stub (CRUX_ERR_UNSUPPORTED, or no channel).  The
 * CUDA state these files share is in crux_tl_cuda_state.h. */
#ifndef CRUX_TL_CUDA_INTERNAL_H
#define CRUX_TL_CUDA_INTERNAL_H

#include "ucx_tl/core/crux_tl_core_internal.h"

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
 * table; their indices go to index[], their count is returned.  Between
 * two processes cuda-host is the sender-staged one (engine/crux_tl_dstage.c): its
 * entry only plans (it issues nothing), and only if 'sender_stages'. */
unsigned crux_tl_cuda_channels(crux_tl_pair_t *pair, const char *src_name, int dst_device,
                               int sender_stages, unsigned *index);
/* The engine's channel that copies between pinned host memory and the
 * memory of 'device' in one direction (to_host: device to host), on one
 * stream in that device's context, so its chunks finish in issue order:
 * the sender's and the receiver's hop of sender-staged cuda-host.  NULL
 * when it cannot be made. */
crux_tl_chan_t *crux_tl_cuda_copy_channel(crux_tl_engine_t *engine, int device, int to_host);
/* Pin host memory (a segment shared with a peer) for asynchronous copies
 * from every context (cuMemHostRegister, portable), in the context of
 * 'device'; unpin it in the same. */
crux_status_t crux_tl_cuda_pin(int device, void *ptr, size_t bytes);
void crux_tl_cuda_unpin(int device, void *ptr);
unsigned crux_tl_cuda_progress(crux_tl_engine_t *engine);
void crux_tl_cuda_destroy(crux_tl_engine_t *engine);

#endif
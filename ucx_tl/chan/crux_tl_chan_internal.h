/* Internal to libcrux_tl: channels, the one ops table every kind fills, the
 * chunks they carry, and the host and model channels.
 *
 * A channel moves chunks and knows nothing of transfers: whoever hands it a
 * chunk (core/crux_tl_issue.c) says, in the chunk's owner table, how its bytes land
 * and what is done when it finishes.  The CUDA channels are in cuda/. */
#ifndef CRUX_TL_CHAN_INTERNAL_H
#define CRUX_TL_CHAN_INTERNAL_H

#include "ucx_tl/crux_tl.h"
#include "ucx_tl/plan/crux_tl_plan_internal.h" /* CRUX_TL_SIGNATURE_SIZE */

typedef struct crux_tl_chan crux_tl_chan_t;
typedef struct crux_tl_chunk crux_tl_chunk_t;

/* What a channel asks of the owner of a chunk: the transfer it belongs to. */
typedef struct {
    /* land 'length' bytes from 'src' at byte 'at' of the chunk: a copy,
     * streaming if asked */
    void (*land)(const crux_tl_chunk_t *chunk, size_t at, const void *src, size_t length);
    /* the chunk finished (chunk->status says how): the channel let it go */
    void (*finish)(crux_tl_chunk_t *chunk);
} crux_tl_chunk_owner_t;

/* One chunk on its way through a channel. */
struct crux_tl_chunk {
    crux_tl_chunk_t *next;
    const crux_tl_chunk_owner_t *owner;
    crux_tl_xfer_t *xfer; /* the owner's: never looked into by a channel */
    unsigned run;         /* the owner's: index of the transfer's run */
    size_t length;
    void *dst; /* local, or mapped */
    const void *src;
    uint64_t remote; /* cma: the peer's address */
    crux_status_t status;
    double start, due;         /* model: when its bytes start to flow, when it lands */
    size_t copied;             /* model: bytes moved so far */
    crux_tl_completion_t comp; /* cma */
    unsigned slot;             /* CUDA staged: staging slot */
    uint64_t staged;           /* device staging: the chunk's number in its pair's FIFO */
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
    crux_tl_ep_t *ep;                       /* cma: the endpoint to the peer ... */
    crux_tl_context_t *context;             /* ... and the context that progresses it */
    char signature[CRUX_TL_SIGNATURE_SIZE]; /* calibration cache key; "" never cached */
    unsigned inflight;                      /* chunks */
    unsigned moved;                         /* chunks that made headway in the last poll */
    crux_tl_chunk_t *head, *tail;           /* in flight, in issue order */
    int usable;                             /* host: cma works in this direction */
    /* 0: chunks may finish in any order, each is tested; n (at most 32):
     * chunks finish in issue order within each of n queues (CUDA streams,
     * chunk->queue), so a poll stops at a queue's first unfinished chunk */
    unsigned ordered_queues;
};

/* crux_tl_chan.c: the machinery every kind shares */
/* The channels' clock: seconds, monotonic. */
double crux_tl_now(void);
void crux_tl_chan_init(crux_tl_chan_t *chan, const crux_tl_chan_ops_t *ops,
                       crux_tl_chan_kind_t kind, const char *name);
/* Retire the chunks that finished, through their owners; returns how many,
 * plus the chunks that made headway. */
unsigned crux_tl_chan_poll(crux_tl_chan_t *chan);
/* Issue a chunk and queue it on the channel (its owner, transfer and run
 * set); the channel's status when it refuses, and the chunk is not queued. */
crux_status_t crux_tl_chan_start(crux_tl_chan_t *chan, crux_tl_chunk_t *chunk);
/* 1 for the channels whose landings the receiver writes itself, from memory
 * it reads (shm, shm-direct, model): the only ones that can stream. */
int crux_tl_chan_lands_by_receiver(crux_tl_chan_kind_t kind);

/* crux_tl_host_chan.c: the host and model channels, with nominal figures (NULL
 * without memory) */
/* cma get or put over 'ep' (NULL: not usable from this side) */
crux_tl_chan_t *crux_tl_chan_cma(crux_tl_chan_kind_t kind, crux_tl_ep_t *ep,
                                 crux_tl_context_t *context);
/* shm: its chunks go through the engine's slots, not through issue and
 * test; 'shm_name' is the memory domain, part of its signature */
crux_tl_chan_t *crux_tl_chan_shm(const char *shm_name, size_t slot_size, unsigned slots,
                                 size_t granule);
crux_tl_chan_t *crux_tl_chan_shm_direct(void);
/* model channel number i */
crux_tl_chan_t *crux_tl_chan_model(const crux_tl_model_t *model, unsigned i);

#endif

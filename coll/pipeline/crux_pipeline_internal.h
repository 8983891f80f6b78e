/* Internal to libcrux_coll: the reduce-scatter + allgather pipeline for host
 * buffers (crux_pipeline.c), and the hand-off interface its backends give.
 *
 * Member r owns shard r of the buffer (crux_group_shard.h), cut in chunks.  A
 * member copies its input's chunk k of every other member's shard into a
 * staging place and hands it off; the owner, once every peer's piece of
 * its chunk k is handed over, reduces them with its own input in rank order
 * into its result and into a staging place of its own, and hands that off;
 * every member copies the results out.  Hierarchically, the inter-group
 * step (crux_coll_inter_t) comes between a chunk's reduction and its
 * hand-off.  What moves the pieces and results between members is the
 * backend's:
 *
 *   flags  staging banks in the group's shared segment and progress words
 *          (crux_pipeline_flags.c: the flags Allreduce of crux_coll.h)
 *   lanes  the multipath engine's shared stage and its lanes' posts
 *          (crux_engine_lanes.c: the engine group's host calls)
 */
#ifndef CRUX_PIPELINE_INTERNAL_H
#define CRUX_PIPELINE_INTERNAL_H

#include <stdint.h>

#include "coll/reduce/crux_reduce_chain.h"
#include "coll/group/crux_group_shard.h"

typedef struct crux_pipe crux_pipe_t;

/* The hand-off: how pieces and results reach the members.  Chunk numbers
 * are the call's (or round's); every function may set p->status. */
typedef struct {
    /* the staging places of chunk k are free to be written (their readers
     * from an earlier use are done) */
    int (*stage_free)(crux_pipe_t *p, unsigned k);
    /* where our piece of member q's chunk k is copied in (a whole call: our
     * own input's chunk k, at q == our rank) */
    uint8_t *(*piece)(crux_pipe_t *p, int q, unsigned k);
    /* hand our pieces of chunk k over (they are written and fenced) */
    void (*post_pieces)(crux_pipe_t *p, unsigned k);
    /* every peer's piece of our chunk k into inputs[q] (not ours): 0 while
     * one is missing */
    int (*pieces)(crux_pipe_t *p, unsigned k, const void **inputs);
    /* the peers' pieces of our chunk k are read */
    void (*consume_pieces)(crux_pipe_t *p, unsigned k);
    /* our reduced chunk k may be copied in: its place is free */
    int (*result_free)(crux_pipe_t *p, unsigned k);
    /* where our reduced chunk k is copied in */
    uint8_t *(*result)(crux_pipe_t *p, unsigned k);
    /* hand our reduced chunk k over (written and fenced) */
    void (*post_result)(crux_pipe_t *p, unsigned k);
    /* how many chunks of member q's shard from chunk k on are handed over
     * and lie one after the other from *from (0: none yet) */
    unsigned (*gathered)(crux_pipe_t *p, int q, unsigned k, const void **from);
    /* those 'n' chunks of member q's are copied out */
    void (*consume_gathered)(crux_pipe_t *p, int q, unsigned n);
    /* sleep until a peer hands something over (at most CRUX_IDLE_SLEEP_NS):
     * doze before the pipeline's last look, then sleep unless it 'moved' */
    void (*doze)(crux_pipe_t *p);
    void (*sleep)(crux_pipe_t *p, int moved);
    /* CRUX_OK while the peers live and run the same call */
    crux_status_t (*check)(crux_pipe_t *p);
} crux_handoff_ops_t;

struct crux_pipe {
    const crux_handoff_ops_t *ops;
    void *handoff; /* the backend's state */
    int rank, size;
    crux_cut_t cut;
    const uint8_t *src; /* our input (our result in place) */
    uint8_t *dst;       /* our result */
    crux_reduce_fn_t reduce;
    int do_rs, do_ag; /* reduce-scatter, allgather: either or both */
    int stream;       /* copied-out results bypass the cache */
    /* a member reading the stage is far (common/crux_reach.h): what it
     * reads is written with streaming stores; [size], and any of them */
    const uint8_t *far;
    int any_far;
    unsigned spins; /* idle polls that spin (crux_idle.h) */
    /* hierarchical: the inter-group step between a chunk's reduction and
     * its hand-off, up to 'depth' chunks in it (0: the whole shard once) */
    const crux_coll_inter_t *inter;
    unsigned depth;
    /* progress */
    unsigned kmax;                       /* chunks of the largest shard */
    unsigned copied;                     /* chunks whose pieces are copied in and handed over */
    unsigned reduced;                    /* chunks of our shard reduced */
    unsigned inter_done;                 /* ... through the inter-group step */
    unsigned final;                      /* ... and handed over */
    unsigned *gathered;                  /* [size] chunks of each shard copied out */
    void *requests[CRUX_HIER_MAX_DEPTH]; /* ring, for chunks [inter_done, reduced) */
    crux_status_t status;
};

/* Start a pipeline over 'cut' (fills the progress; p->gathered must hold
 * p->size counters). */
void crux_pipe_start(crux_pipe_t *p);

/* Run it to completion: CRUX_OK, or the first error a step or the
 * backend's check found (the caller gives the group up). */
crux_status_t crux_pipe_run(crux_pipe_t *p);

/* The Allreduce behind crux_coll_allreduce and crux_coll_allreduce_hier,
 * over the flags backend (crux_pipeline_flags.c): flat with inter == NULL;
 * hierarchical with the caller's inter-group step, 'depth' chunks in flight
 * (0: the three steps in sequence).  'sbuf' is NULL in place; count > 0,
 * size > 1. */
crux_status_t crux_allreduce_flags(crux_coll_group_t *group, const crux_coll_inter_t *inter,
                                   unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                   size_t esize, crux_reduce_fn_t reduce);

#endif

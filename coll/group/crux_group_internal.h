/* Internal to libcrux_coll: the group structure, the control block each
 * member keeps in shared memory, and the waits collectives synchronise with. */
#ifndef CRUX_GROUP_INTERNAL_H
#define CRUX_GROUP_INTERNAL_H

#include <stdalign.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/crux_reach.h"
#include "coll/crux_coll.h"

/* Progress words pack a call's sequence number above a chunk count, so a
 * value from an earlier call never satisfies a wait in a later one. */
#define CRUX_SEQ_SHIFT             24
#define CRUX_PROGRESS(seq, chunks) (((uint64_t)(seq) << CRUX_SEQ_SHIFT) | (uint64_t)(chunks))
#define CRUX_MAX_CHUNKS            ((1u << CRUX_SEQ_SHIFT) - 1)

#define CRUX_CTRL_MAGIC 0x6372757863746c31ull /* "cruxctl1" */

/* The head of every member's segment.  Only its owner writes it (release
 * stores after the data they announce, see crux_publish); peers read it
 * (acquire loads), and count themselves in 'sleepers' while they sleep on
 * one of its words.  Each word a peer polls sits on its own cache line. */
typedef struct {
    alignas(64) uint64_t magic;
    int64_t pid;
    alignas(64) uint64_t arrive; /* seq of the call entered; args below are valid */
    uint64_t sbuf;               /* that call's buffers, for single-copy peers */
    uint64_t rbuf;
    alignas(64) uint64_t copied;   /* PROGRESS(seq, steps of input copied into the stage) */
    alignas(64) uint64_t reduced;  /* PROGRESS(seq, chunks of own shard reduced) */
    alignas(64) uint64_t done;     /* seq of the last call finished with all peers' data */
    alignas(64) uint64_t failed;   /* CRUX_ABANDONED once this member gave a call up */
    alignas(64) uint32_t sleepers; /* peers asleep (futex) on this block's words */
    /* [seq % CRUX_SHAPE_SLOTS]: the shape (crux_shape) of the call that
     * round seq belongs to, written before the round's first progress word
     * (or its 'arrive'); a peer is never more than two rounds ahead (the
     * flags algorithm's two banks), so a slot holds until it is read */
    alignas(64) uint64_t shape[4];
} crux_ctrl_t;

#define CRUX_SHAPE_SLOTS 4
#define CRUX_ABANDONED   UINT64_MAX /* 'failed': for good, every later call fails */

#define CRUX_CTRL_BYTES ((sizeof(crux_ctrl_t) + 4095) & ~(size_t)4095)

/* The small Allreduce's slots (crux_allreduce_small.c), between the control block
 * and the stage: each member has two banks (calls alternate) of two slots
 * (its input; its slice of the result, or across groups member 0's whole
 * result).  A slot is a head line, then its body.  Only the slot's owner
 * writes it; 'seq' is the small call whose data the slot holds (release
 * store after the data and 'shape'), so a value from an earlier call never
 * satisfies a wait in a later one.  Data of at most CRUX_SMALL_INLINE
 * bytes lies in the head line itself: a reader's one miss brings flag and
 * data together. */
#define CRUX_SMALL_INLINE 32
typedef struct {
    alignas(64) uint64_t seq;
    uint64_t shape; /* crux_shape of that call */
    alignas(CRUX_SMALL_INLINE) uint8_t data[CRUX_SMALL_INLINE];
} crux_small_head_t;

_Static_assert(sizeof(crux_small_head_t) == 64, "a slot's head is one cache line");

/* Bytes of one slot for messages of at most 'max' bytes, and of a member's
 * four. */
static inline size_t crux_small_slot_bytes(size_t max)
{
    return sizeof(crux_small_head_t) + ((max + 63) & ~(size_t)63);
}

static inline size_t crux_small_area_bytes(size_t max)
{
    return max > 0 ? 4 * crux_small_slot_bytes(max) : 0;
}

/* How far a peer's caches are, from our looks at its words (crux_look):
 * a look that finds a word short arms, one time in CRUX_REACH_EVERY, the
 * next look at that word to time itself; the timed look that finds it
 * reached brought the line from the peer's cache and is a sample.  Every
 * look takes part (a wait's and a poll's alike), so a peer we seldom wait
 * for, but often poll, is judged as well. */
typedef struct {
    crux_reach_t reach;
    size_t timed; /* offset + 1 of the word whose next look is timed; 0: none */
    int arm;      /* the next look that finds a word short arms it */
} crux_peer_reach_t;

struct crux_coll_group {
    int rank;
    int size;
    crux_coll_config_t config;
    unsigned spins;     /* idle polls that spin (crux_idle_spins) */
    uint64_t seq;       /* of the last call started */
    uint64_t small_seq; /* of the last small call started (crux_allreduce_small.c) */
    uint64_t caller;    /* crux_coll_group_set_caller's word, mixed (crux_shape) */

    crux_tl_context_t *tl;
    crux_tl_seg_t *seg;
    crux_ctrl_t **ctrl;     /* [size]: every member's control block */
    uint8_t **stage;        /* [size]: every member's staging area */
    uint8_t **small;        /* [size]: every member's small slots (NULL: none) */
    crux_tl_rseg_t **rsegs; /* [size]: peers' mapped segments */
    pid_t *pids;
    crux_peer_reach_t *reach; /* [size]: how far each peer's caches are (crux_look) */
};

/* A call's shape: its bytes and element size (at most 32), so members that
 * passed different counts or datatype sizes see different shapes, mixed
 * with the caller's word (crux_coll_group_set_caller), so members in calls
 * of different callers of a shared group see different shapes too. */
static inline uint64_t crux_call_shape(uint64_t caller, size_t count, size_t esize)
{
    return ((uint64_t)(count * esize) << 8 | esize) ^ caller;
}

static inline uint64_t crux_shape(const crux_coll_group_t *group, size_t count, size_t esize)
{
    return crux_call_shape(group->caller, count, esize);
}

/* A caller's word, from its id (a communicator's context id): spread over
 * the shape's bits, so nearby ids differ in many. */
static inline uint64_t crux_caller_word(uint64_t caller)
{
    return caller * 0x9e3779b97f4a7c15ull;
}

/* Whether member q reads best what we write for it with streaming stores. */
static inline int crux_far(const crux_coll_group_t *group, int q)
{
    return group->reach[q].reach.far;
}

static inline uint64_t crux_load(const uint64_t *word)
{
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

/* Set one of this member's words to 'value' (after the data it announces)
 * and wake the peers sleeping on it. */
void crux_publish(crux_coll_group_t *group, uint64_t *word, uint64_t value);

/* crux_publish without its full fence, for the small Allreduce's flags,
 * where the fence cost a cross-core round trip of every call (the store
 * waited for the line the peers poll): the store stays in this core's
 * store buffer while the caller goes on.  A peer that counts itself among
 * the sleepers just as the store is made, and whose look and whose
 * futex's own look both miss it (the store would have to stay unseen for
 * a whole system call), sleeps its full CRUX_IDLE_SLEEP_NS: a late call,
 * never a lost one. */
void crux_raise(crux_coll_group_t *group, uint64_t *word, uint64_t value);

#define CRUX_PUBLISH(group, field, value) \
    crux_publish((group), &(group)->ctrl[(group)->rank]->field, (value))

/* Wait until member 'peer's word at 'offset' in its control block reaches
 * 'target'.  Spins (not when the node is oversubscribed), yields the CPU a
 * few times, then sleeps on the word (futex) until the peer publishes;
 * returns CRUX_ERR_PEER if the peer abandoned the group or its process is
 * gone. */
crux_status_t crux_wait(crux_coll_group_t *group, int peer, size_t offset, uint64_t target);
/* ... after the caller looked 'looked' times itself (at most
 * CRUX_IDLE_LOOKS): the wait's own looks without a pause are that many
 * fewer. */
crux_status_t crux_wait_after(crux_coll_group_t *group, int peer, size_t offset, uint64_t target,
                              unsigned looked);

#define CRUX_WAIT(group, peer, field, target) \
    crux_wait((group), (peer), offsetof(crux_ctrl_t, field), (target))

/* Sleeping on member 'peer's word at 'offset' (a futex on its low half,
 * which changes on every publish): crux_sleep_begin counts us among the
 * peer's sleepers and notes the word, the caller looks once more at what it
 * waits for, and crux_sleep_end sleeps unless that look 'moved' or the word
 * changed since (CRUX_IDLE_SLEEP_NS at most), and uncounts us. */
typedef struct {
    crux_ctrl_t *ctrl;
    const uint64_t *word;
    uint64_t seen;
} crux_sleep_t;

void crux_sleep_begin(crux_coll_group_t *group, int peer, size_t offset, crux_sleep_t *sleep);
void crux_sleep_end(crux_sleep_t *sleep, int moved);

/* Test without waiting: one look at member 'peer's word at 'offset'. */
static inline int crux_look(crux_coll_group_t *group, int peer, size_t offset, uint64_t target)
{
    const uint64_t *word = (const uint64_t *)((const uint8_t *)group->ctrl[peer] + offset);
    crux_peer_reach_t *r = &group->reach[peer];
    if (r->timed != offset + 1) {
        if (crux_load(word) >= target) {
            r->arm = r->arm || (r->timed == 0 && crux_reach_turn(&r->reach));
            return 1;
        }
        if (r->arm && r->timed == 0) {
            r->timed = offset + 1;
            r->arm = 0;
        }
        return 0;
    }
    uint64_t ticks = 0;
    if (crux_reach_load(word, &ticks) < target) {
        return 0;
    }
    crux_reach_sample(&r->reach, ticks, group->config.far_latency);
    r->timed = 0;
    return 1;
}

#define CRUX_REACHED(group, peer, field, target) \
    crux_look((group), (peer), offsetof(crux_ctrl_t, field), (target))

/* Tell the peers this member abandons the current call, and with it the
 * group: the members' rounds no longer line up, so every later call of
 * every member fails (CRUX_ERR_PEER) instead of mixing calls. */
static inline void crux_abandon(crux_coll_group_t *group)
{
    CRUX_PUBLISH(group, failed, CRUX_ABANDONED);
}

/* Whether this member gave the group up (its later calls fail at once). */
static inline int crux_abandoned(const crux_coll_group_t *group)
{
    return crux_load(&group->ctrl[group->rank]->failed) == CRUX_ABANDONED;
}

/* This member's shape for round group->seq: before the round's first
 * progress word, whose publication orders it. */
static inline void crux_set_shape(crux_coll_group_t *group, uint64_t shape)
{
    __atomic_store_n(&group->ctrl[group->rank]->shape[group->seq % CRUX_SHAPE_SLOTS], shape,
                     __ATOMIC_RELAXED);
}

/* Member q's shape for round group->seq: valid once one of q's progress
 * words of the round was seen (an acquire load, before this one). */
static inline uint64_t crux_peer_shape(const crux_coll_group_t *group, int q)
{
    return __atomic_load_n(&group->ctrl[q]->shape[group->seq % CRUX_SHAPE_SLOTS], __ATOMIC_RELAXED);
}

#endif

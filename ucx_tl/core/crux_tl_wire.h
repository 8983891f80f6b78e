/* Internal to libcrux_tl: the engine's shared memory, "the wire".
 *
 * Every engine allocates one shared segment with a control area per
 * possible peer; area q of process P is written only by P and read by its
 * peer q (and by P itself on a loopback pair).  The i-th send of P to Q
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
 * one word both sides write, with compare-and-swap.
 *
 * A device send's cuda-host stripe between two processes is the sender's to
 * stage and the receiver's to land (engine/crux_tl_dstage.c): the sender copies
 * chunk n from its GPU into slot n % CRUX_TL_DSTAGE_SLOTS of its stage, a
 * segment of pinned host memory it names once in its area (dstage_key),
 * and publishes the slot (dslot) once the copy is done; the receiver, which
 * mapped and pinned the stage too, copies the slot to its GPU and
 * acknowledges it (dack) once that copy is done.  Both copies are the GPUs'
 * (cuMemcpyAsync), each in its own process, so neither process needs the
 * other's GPU. */
#ifndef CRUX_TL_WIRE_H
#define CRUX_TL_WIRE_H

#include <stdalign.h>
#include <stdint.h>

#include "ucx_tl/crux_tl.h"

#define CRUX_TL_RING           64  /* transfers in flight per pair and direction */
#define CRUX_TL_MAX_SLOTS      32  /* shm staging slots per direction */
#define CRUX_TL_MAX_CHANS      32  /* channels in a pair's table */
#define CRUX_TL_SHARED_KEY_MAX 128 /* bytes of a shared buffer's segment key */
#define CRUX_TL_AREA_MAGIC     0x6372757870616972ull /* "cruxpair" */
#define CRUX_TL_CARD_MAGIC     0x6372757863617264ull /* "cruxcard" */
#define CRUX_TL_PAGE           4096u
#define CRUX_TL_ROUND_PAGE(x)  (((x) + CRUX_TL_PAGE - 1) / CRUX_TL_PAGE * CRUX_TL_PAGE)

/* device staging (cuda-host between processes): slots per pair and
 * direction, and their size, the largest cuda-host chunk */
#define CRUX_TL_DSTAGE_SLOTS 4
#define CRUX_TL_DSTAGE_SLOT  (2u << 20)

typedef struct {
    /* what every match reads first, in one cache line with the entry's seq */
    uint64_t addr; /* in the owner's address space */
    uint64_t bytes;
    int32_t mem_type; /* crux_tl_mem_type_t */
    int32_t device;
    uint64_t shared_id;     /* host memory in a shared buffer: its number (0: private) ... */
    uint64_t shared_offset; /* ... and where in it addr lies (its key is below) */
    /* read only when needed */
    char device_name[CRUX_TL_DEVICE_NAME_SIZE]; /* the device's name (UUID) */
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
    uint32_t dstage;          /* 1: a device send whose cuda-host stripes the sender stages */
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
    crux_tl_wire_slot_t dslot[CRUX_TL_DSTAGE_SLOTS];      /* this side's device sends, staged */
    crux_tl_wire_ack_t dack[CRUX_TL_DSTAGE_SLOTS];        /* the peer's, landed here */
    alignas(64) uint64_t dstage_ready;                    /* 1 once dstage_key is valid */
    uint8_t dstage_key[CRUX_TL_SHARED_KEY_MAX]; /* this side's device stage, to the peer */
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

#endif

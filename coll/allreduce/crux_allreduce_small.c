/* The small Allreduce (crux_coll.h): for messages whose time is latency,
 * the way Open MPI 5's coll/xhc, UCC's tl/shm and NCCL's LL protocol move
 * them: one copy in, one reduction, no matching, no pipeline.
 *
 * Each member's slots lie in its own group segment (crux_group_internal.h),
 * mapped by every peer when the group was built, so a call makes no system
 * call while the peers keep up: a member copies its input into its input
 * slot of the call's bank and raises the slot's flag (the call's number),
 * and
 *   whole (up to small_whole_max_bytes): every member waits for each peer's
 *          flag and reduces every member's slot itself, left to right in
 *          rank order, into its result;
 *   sliced (above): member r reduces its slice (crux_group_shard.h's cut) of
 *          every slot into its result and into its second slot, raises that
 *          slot's flag, and copies the other members' slices out of theirs;
 *   across groups (crux_coll_allreduce_small_hier): member 0 reduces every
 *          slot, runs the inter-group step on the whole vector and puts the
 *          result in its second slot; the others wait for it and copy it.
 * Every member gets the same bits: each element is reduced in rank order,
 * by one member or by each alike.
 *
 * Calls alternate between two banks, and a bank needs no wait before it is
 * written again: a member starts call s + 2 only after every peer raised a
 * flag of call s + 1 (whole, sliced) or member 0 raised its result of call
 * s + 1 (across groups, after reading every input of s + 1), and a peer
 * raises those only after it has finished call s, the last reader of the
 * bank.  The waits are the group's (crux_wait: spin while each process has
 * a core, yield, then sleep on the flag; a peer that abandoned or died
 * fails the call).  Each slot's head carries the call's shape: a member
 * that finds a peer's call of another shape gives the group up. */
#include <string.h>

#include "coll/group/crux_group_internal.h"
#include "coll/reduce/crux_reduce_chain.h"
#include "coll/group/crux_group_shard.h"
#include "common/crux_idle.h"

enum { SLOT_IN, SLOT_OUT };

typedef struct {
    crux_coll_group_t *g;
    uint64_t seq, shape;
    size_t bytes, esize;
    unsigned bank;
} call_t;

static crux_small_head_t *slot(const call_t *c, int q, int which)
{
    size_t per = crux_small_slot_bytes(c->g->config.small_max_bytes);
    return (crux_small_head_t *)(c->g->small[q] + (2 * c->bank + (size_t)which) * per);
}

/* Where a slot's data lies: in its head line when it fits there. */
static uint8_t *data(const call_t *c, crux_small_head_t *head)
{
    return c->bytes <= CRUX_SMALL_INLINE ? head->data : (uint8_t *)(head + 1);
}

/* Raise our slot's flag: the data and the shape before it. */
static void raise_flag(const call_t *c, crux_small_head_t *head)
{
    __atomic_store_n(&head->shape, c->shape, __ATOMIC_RELAXED);
    crux_raise(c->g, &head->seq, c->seq);
}

/* Wait for member q's slot of this call: CRUX_ERR_INVALID when q runs a
 * call of another shape. */
static crux_status_t wait_slot(const call_t *c, int q, int which)
{
    crux_small_head_t *head = slot(c, q, which);
    crux_status_t st = CRUX_OK;
    /* The peer is usually a line's transfer away: look again, without the
     * group's wait (its bookkeeping is most of a small call's time), for
     * as long as the wait would spin without pausing. */
    unsigned looks = c->g->spins > 0 ? CRUX_IDLE_LOOKS : 0, looked = 0;
    while (crux_load(&head->seq) < c->seq && looked < looks) {
        looked++;
    }
    if (crux_load(&head->seq) < c->seq) {
        size_t offset = (size_t)((uint8_t *)&head->seq - (uint8_t *)c->g->ctrl[q]);
        st = crux_wait_after(c->g, q, offset, c->seq, looked);
    }
    if (st == CRUX_OK && __atomic_load_n(&head->shape, __ATOMIC_RELAXED) != c->shape) {
        st = CRUX_ERR_INVALID;
    }
    return st;
}

/* Ask for every line of [p, p + bytes) at once: the reads that follow
 * miss in a peer's cache, and issued together they overlap (the hardware
 * prefetcher ramps up over a page, not a few lines). */
static void prefetch(const uint8_t *p, size_t bytes)
{
    for (size_t at = 0; at < bytes; at += 64) {
        __builtin_prefetch(p + at, 0, 3);
    }
}

static crux_status_t wait_inputs(const call_t *c, const void **inputs, size_t at, size_t bytes)
{
    crux_coll_group_t *g = c->g;
    for (int i = 1; i < g->size; i++) {
        int q = (g->rank + i) % g->size;
        crux_status_t st = wait_slot(c, q, SLOT_IN);
        if (st != CRUX_OK) {
            return st;
        }
        if (c->bytes > CRUX_SMALL_INLINE) {
            prefetch(data(c, slot(c, q, SLOT_IN)) + at, bytes);
        }
    }
    for (int q = 0; q < g->size; q++) {
        inputs[q] = data(c, slot(c, q, SLOT_IN));
    }
    return CRUX_OK;
}

/* Our slice of every input into our result and our second slot; then the
 * others' slices out of theirs. */
static crux_status_t sliced(const call_t *c, const void **inputs, uint8_t *dst,
                            crux_reduce_fn_t reduce)
{
    crux_coll_group_t *g = c->g;
    crux_cut_t cut = crux_cut(c->bytes / c->esize, c->esize, c->bytes, g->size);
    size_t at = crux_chunk_offset(&cut, g->rank, 0), len = crux_shard_length(&cut, g->rank);
    const void *mine[g->size];
    for (int q = 0; q < g->size; q++) {
        mine[q] = (const uint8_t *)inputs[q] + at;
    }
    crux_small_head_t *out = slot(c, g->rank, SLOT_OUT);
    if (len > 0) {
        crux_reduce_chain(reduce, dst + at, data(c, out) + at, mine, g->size, len * c->esize,
                          c->esize, 0);
    }
    raise_flag(c, out);
    for (int i = 1; i < g->size; i++) {
        int q = (g->rank + i) % g->size;
        size_t from = crux_chunk_offset(&cut, q, 0), n = crux_shard_length(&cut, q) * c->esize;
        crux_status_t st = n > 0 ? wait_slot(c, q, SLOT_OUT) : CRUX_OK;
        if (st != CRUX_OK) {
            return st;
        }
        prefetch(data(c, slot(c, q, SLOT_OUT)) + from, n);
        memcpy(dst + from, data(c, slot(c, q, SLOT_OUT)) + from, n);
    }
    return CRUX_OK;
}

/* Member 0 across groups: the inter-group step on the whole vector,
 * polled (it moves only while polled) until it is done. */
static crux_status_t inter_step(const crux_coll_inter_t *inter, void *buf, size_t count)
{
    void *request = NULL;
    crux_status_t st = inter->start(inter->arg, buf, count, &request);
    crux_idle_t idle = crux_idle_start(0);
    for (int done = 0; st == CRUX_OK;) {
        st = inter->test(inter->arg, request, &done);
        if (done) {
            break;
        }
        crux_idle_poll(&idle, 0);
    }
    return st;
}

static crux_status_t run(crux_coll_group_t *g, const crux_coll_inter_t *inter, const void *sbuf,
                         void *rbuf, size_t count, crux_dtype_t dtype, crux_op_t op)
{
    crux_reduce_fn_t reduce = crux_reduce_lookup(dtype, op);
    size_t esize = crux_dtype_size(dtype);
    if (reduce == NULL || !crux_coll_small_fits(g, count * esize)) {
        return CRUX_ERR_UNSUPPORTED;
    }
    if (count == 0 || (g->size == 1 && inter == NULL)) {
        if (count > 0 && sbuf != NULL && sbuf != rbuf) {
            memcpy(rbuf, sbuf, count * esize);
        }
        return CRUX_OK;
    }
    if (crux_abandoned(g)) {
        return CRUX_ERR_PEER;
    }
    call_t c = {
        .g = g,
        .seq = ++g->small_seq,
        .shape = crux_shape(g, count, esize),
        .bytes = count * esize,
        .esize = esize,
    };
    c.bank = (unsigned)(c.seq & 1);
    crux_small_head_t *in = slot(&c, g->rank, SLOT_IN);
    memcpy(data(&c, in), sbuf != NULL ? sbuf : rbuf, c.bytes);
    raise_flag(&c, in);

    const void *inputs[g->size];
    crux_status_t st = CRUX_OK;
    if (inter == NULL && c.bytes <= g->config.small_whole_max_bytes) {
        st = wait_inputs(&c, inputs, 0, c.bytes);
        if (st == CRUX_OK) {
            crux_reduce_chain(reduce, rbuf, NULL, inputs, g->size, c.bytes, esize, 0);
        }
    } else if (inter == NULL) {
        crux_cut_t cut = crux_cut(count, esize, c.bytes, g->size);
        st = wait_inputs(&c, inputs, crux_chunk_offset(&cut, g->rank, 0),
                         crux_shard_length(&cut, g->rank) * esize);
        st = st == CRUX_OK ? sliced(&c, inputs, rbuf, reduce) : st;
    } else if (g->rank == 0) {
        st = wait_inputs(&c, inputs, 0, c.bytes);
        if (st == CRUX_OK) {
            crux_reduce_chain(reduce, rbuf, NULL, inputs, g->size, c.bytes, esize, 0);
            st = inter_step(inter, rbuf, count);
        }
        if (st == CRUX_OK) {
            crux_small_head_t *out = slot(&c, 0, SLOT_OUT);
            memcpy(data(&c, out), rbuf, c.bytes);
            raise_flag(&c, out);
        }
    } else {
        st = wait_slot(&c, 0, SLOT_OUT);
        if (st == CRUX_OK) {
            memcpy(rbuf, data(&c, slot(&c, 0, SLOT_OUT)), c.bytes);
        }
    }
    if (st != CRUX_OK) {
        crux_abandon(g); /* the members' calls no longer line up */
    }
    return st;
}

int crux_coll_small_fits(const crux_coll_group_t *g, size_t bytes)
{
    return g->small[0] != NULL && bytes <= g->config.small_max_bytes;
}

crux_status_t crux_coll_allreduce_small(crux_coll_group_t *g, const void *sbuf, void *rbuf,
                                        size_t count, crux_dtype_t dtype, crux_op_t op)
{
    return run(g, NULL, sbuf, rbuf, count, dtype, op);
}

crux_status_t crux_coll_allreduce_small_hier(crux_coll_group_t *g, const crux_coll_inter_t *inter,
                                             const void *sbuf, void *rbuf, size_t count,
                                             crux_dtype_t dtype, crux_op_t op)
{
    return inter != NULL ? run(g, inter, sbuf, rbuf, count, dtype, op) : CRUX_ERR_UNSUPPORTED;
}

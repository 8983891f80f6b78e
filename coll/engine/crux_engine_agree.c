/* A device call's go-ahead, agreed by every member before any byte moves.
 *
 * Whether a member can take part in a device exchange is its own business
 * (its buffer may be stream-ordered or VMM memory the driver refuses to
 * export, its scratch may not fit on its GPU, its GPU may not reach a
 * peer's), but the choice between the exchange and the host fallback must
 * be the same on every member, or some would wait in one collective while
 * the others run another.  So every member publishes its verdict and its
 * device's identity in one small allgather; a member that cannot go on, or
 * a pair of devices without peer access, sends every member to the
 * fallback.  Peer access is asked of the driver per pair of devices
 * (cuDeviceCanAccessPeer), and devices are told apart by UUID, not PCI bus
 * id, which MIG instances of one GPU share; the answer is kept for as long
 * as the members' devices stay the same, so a steady state costs the one
 * allgather. */
#include <stdlib.h>
#include <string.h>

#include "common/crux_cuda.h"
#include "coll/engine/crux_engine_call.h"
#include "coll/engine/crux_engine_group.h"
#include "coll/oob/crux_oob_internal.h"

#ifdef CRUX_HAVE_CUDA
_Static_assert(CRUX_DEV_ID_SIZE == CRUX_CUDA_NAME_SIZE, "a device's name fits its card");

/* The device's identity: its name (crux_cuda_name: its UUID, a MIG
 * instance's own; the PCI bus id only on drivers before 11.4). */
static int device_id(int device, uint8_t id[CRUX_DEV_ID_SIZE])
{
    memset(id, 0, CRUX_DEV_ID_SIZE);
    return crux_cuda_name(device, (char *)id);
}

/* The ordinal here of the device with that identity, -1 if not visible. */
static int device_here(const uint8_t id[CRUX_DEV_ID_SIZE])
{
    if (memchr(id, '\0', CRUX_DEV_ID_SIZE) == NULL) {
        return -1; /* a peer's card: text bounded before use */
    }
    return crux_cuda_device_named((const char *)id);
}

/* 1 when our device can map the memory of every member's device. */
static int reaches_all(const crux_engine_call_t *c, const crux_engine_card_t *cards)
{
    int mine = c->device;
    for (int q = 0; q < c->g->size; q++) {
        int peer = q == c->g->rank ? mine : device_here(cards[q].id);
        int can = peer == mine;
        if (peer >= 0 && peer != mine &&
            crux_cuda()->DeviceCanAccessPeer(&can, mine, peer) != CUDA_SUCCESS) {
            can = 0;
        }
        if (!can) {
            return 0; /* not visible here (cgroups, VMs), or no P2P between the two */
        }
    }
    return 1;
}
#else
static int device_id(int device, uint8_t id[CRUX_DEV_ID_SIZE])
{
    return -1;
}

static int reaches_all(const crux_engine_call_t *c, const crux_engine_card_t *cards)
{
    return 0;
}
#endif

crux_status_t crux_engine_agree(crux_engine_call_t *c, crux_status_t mine)
{
    crux_engine_group_t *g = c->g;
    crux_engine_card_t me = { .status = mine };
    /* the topology's GPU paths, once the driver is there; without them (no
     * memory) the direct copies carry the bytes */
    (void)crux_engine_topo_apply(g);
    if (mine == CRUX_OK && device_id(c->device, me.id) != 0) {
        me.status = CRUX_ERR_UNSUPPORTED;
    }
    /* our copies and every peer's reads of our buffers come after the work
     * the application queued on our default streams (crux_engine_order.c) */
    if (me.status == CRUX_OK && crux_engine_order_record(g, c->device, me.order) != CRUX_OK) {
        me.status = CRUX_ERR_UNSUPPORTED;
    }
    crux_engine_card_t *all = g->agree_cards; /* kept by the group: no failure here alone */
    if (g->oob.allgather(&me, all, sizeof(me), g->oob.arg) != 0) {
        return CRUX_ERR_PEER;
    }
    crux_status_t st = CRUX_OK;
    for (int q = 0; q < g->size && st == CRUX_OK; q++) {
        st = (crux_status_t)all[q].status;
    }
    if (st == CRUX_OK) {
        /* peer access: every member asks for its own device, then all agree;
         * kept while the devices stay the same (the same table on every
         * member, so all skip this step alike) */
        int same = g->peers_known;
        for (int q = 0; same && q < g->size; q++) {
            same =
                memcmp(g->peer_ids + (size_t)q * CRUX_DEV_ID_SIZE, all[q].id, CRUX_DEV_ID_SIZE) ==
                    0 &&
                (q == g->rank || memcmp(g->order_peer_handle[(size_t)q * CRUX_ENGINE_ORDER_EVENTS],
                                        all[q].order, sizeof(all[q].order)) == 0);
        }
        if (!same) {
            /* and every member opens the others' events, or none goes ahead */
            int all_reach = 0,
                reach = reaches_all(c, all) && crux_engine_order_open(g, c->device, all) == CRUX_OK;
            st = crux_oob_agree(&g->oob, CRUX_OK, reach, &all_reach);
            for (int q = 0; q < g->size; q++) {
                memcpy(g->peer_ids + (size_t)q * CRUX_DEV_ID_SIZE, all[q].id, CRUX_DEV_ID_SIZE);
            }
            g->peers_known = st == CRUX_OK;
            g->peers_reach = all_reach;
        }
        if (st == CRUX_OK && !g->peers_reach) {
            st = CRUX_ERR_UNSUPPORTED;
        }
    }
    if (st == CRUX_OK) {
        st = crux_engine_order_apply(g); /* opened on every member: cannot fail */
    }
    return st;
}

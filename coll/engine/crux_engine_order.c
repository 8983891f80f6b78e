/* A device call's copies and kernels come after the application's work.
 *
 * The application may still have work queued on the default streams when it
 * calls the collective (a kernel writing the input, a copy into the result
 * buffer); crux's streams are non-blocking, so nothing orders them after it.
 * Instead of making the host wait, each member records an event on the
 * legacy and on the per-thread default stream of its device, and crux's
 * streams wait on those events on the GPU (cuStreamWaitEvent): its own
 * queue's, and its engine's CUDA channels' before their next copy.  Peers
 * read a member's buffers from their own streams, so the events are
 * interprocess events: their IPC handles travel in the call's agreement card
 * and every member opens its peers' once (they stay the same while the
 * devices do) and makes its channels wait on them too. */
#include <stdlib.h>
#include <string.h>

#include "common/crux_cuda.h"
#include "coll/engine/crux_engine_call.h"

#ifdef CRUX_HAVE_CUDA
static void destroy_events(int device, void **events, unsigned n);

/* order_peer holds our own events at our rank too: those are order_own's. */
static void destroy_peer_events(crux_engine_group_t *g)
{
    for (unsigned i = 0; i < CRUX_ENGINE_ORDER_EVENTS; i++) {
        g->order_peer[(size_t)g->rank * CRUX_ENGINE_ORDER_EVENTS + i] = NULL;
    }
    destroy_events(g->order_device, g->order_peer, (unsigned)g->size * CRUX_ENGINE_ORDER_EVENTS);
}

static void destroy_events(int device, void **events, unsigned n)
{
    if (crux_cuda() == NULL || crux_cuda_push(device) != CRUX_OK) {
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        if (events[i] != NULL) {
            crux_cuda()->EventDestroy((CUevent)events[i]);
            events[i] = NULL;
        }
    }
    crux_cuda_pop();
}

crux_status_t
crux_engine_order_record(crux_engine_group_t *g, int device,
                         uint8_t handles[CRUX_ENGINE_ORDER_EVENTS][CRUX_ENGINE_ORDER_HANDLE])
{
    const crux_cuda_api_t *cu = crux_cuda();
    static const CUstream defaults[CRUX_ENGINE_ORDER_EVENTS] = { CU_STREAM_LEGACY,
                                                                 CU_STREAM_PER_THREAD };
    if (g->order_device != device) { /* the events belong to a device's context */
        crux_tl_engine_cuda_order(g->engine, NULL, 0);
        if (g->order_device >= 0) {
            destroy_peer_events(g);
            destroy_events(g->order_device, g->order_own, CRUX_ENGINE_ORDER_EVENTS);
        }
        g->order_device = -1;
    }
    crux_status_t st = crux_cuda_push(device);
    if (st != CRUX_OK) {
        return st;
    }
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < CRUX_ENGINE_ORDER_EVENTS && r == CUDA_SUCCESS; i++) {
        if (g->order_own[i] == NULL) {
            r = cu->EventCreate((CUevent *)&g->order_own[i],
                                CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING);
            if (r == CUDA_SUCCESS) {
                r = cu->IpcGetEventHandle((CUipcEventHandle *)g->order_handle[i],
                                          (CUevent)g->order_own[i]);
            }
        }
        if (r == CUDA_SUCCESS) {
            r = cu->EventRecord((CUevent)g->order_own[i], defaults[i]);
        }
        memcpy(handles[i], g->order_handle[i], CRUX_ENGINE_ORDER_HANDLE);
    }
    crux_cuda_pop();
    g->order_device = device;
    st = crux_cuda_status(r);
    for (unsigned i = 0; i < CRUX_ENGINE_ORDER_EVENTS && st == CRUX_OK && g->queue != NULL; i++) {
        st = crux_dev_queue_wait(g->queue, g->order_own[i]);
    }
    return st;
}

crux_status_t crux_engine_order_open(crux_engine_group_t *g, int device,
                                     const crux_engine_card_t *cards)
{
    const crux_cuda_api_t *cu = crux_cuda();
    crux_status_t st = crux_cuda_push(device);
    if (st != CRUX_OK) {
        return CRUX_ERR_UNSUPPORTED;
    }
    for (int q = 0; q < g->size && st == CRUX_OK; q++) {
        for (unsigned i = 0; i < CRUX_ENGINE_ORDER_EVENTS && st == CRUX_OK; i++) {
            void **ev = &g->order_peer[(size_t)q * CRUX_ENGINE_ORDER_EVENTS + i];
            uint8_t *known = g->order_peer_handle[(size_t)q * CRUX_ENGINE_ORDER_EVENTS + i];
            if (q == g->rank ||
                (*ev != NULL && memcmp(known, cards[q].order[i], CRUX_ENGINE_ORDER_HANDLE) == 0)) {
                continue;
            }
            if (*ev != NULL) {
                cu->EventDestroy((CUevent)*ev);
                *ev = NULL;
            }
            CUipcEventHandle h;
            memcpy(h.reserved, cards[q].order[i], CRUX_ENGINE_ORDER_HANDLE);
            st = crux_cuda_status(cu->IpcOpenEventHandle((CUevent *)ev, h));
            if (st == CRUX_OK) {
                memcpy(known, cards[q].order[i], CRUX_ENGINE_ORDER_HANDLE);
            } else {
                *ev = NULL;
            }
        }
    }
    crux_cuda_pop();
    return st == CRUX_OK ? CRUX_OK : CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_engine_order_apply(crux_engine_group_t *g)
{
    /* the peers' events are in order_peer at their ranks, ours at ours */
    for (unsigned i = 0; i < CRUX_ENGINE_ORDER_EVENTS; i++) {
        g->order_peer[(size_t)g->rank * CRUX_ENGINE_ORDER_EVENTS + i] = g->order_own[i];
    }
    unsigned n = (unsigned)g->size * CRUX_ENGINE_ORDER_EVENTS;
    for (unsigned i = 0; i < n; i++) {
        if (g->order_peer[i] == NULL) {
            return CRUX_ERR_UNSUPPORTED; /* not opened: the agreement said no */
        }
    }
    return crux_tl_engine_cuda_order(g->engine, g->order_peer, n);
}

void crux_engine_order_release(crux_engine_group_t *g)
{
    if (g->engine != NULL) {
        crux_tl_engine_cuda_order(g->engine, NULL, 0);
    }
    if (g->order_device >= 0 && g->order_peer != NULL) {
        destroy_peer_events(g);
        destroy_events(g->order_device, g->order_own, CRUX_ENGINE_ORDER_EVENTS);
    }
}
#else
crux_status_t
crux_engine_order_record(crux_engine_group_t *g, int device,
                         uint8_t handles[CRUX_ENGINE_ORDER_EVENTS][CRUX_ENGINE_ORDER_HANDLE])
{
    return CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_engine_order_open(crux_engine_group_t *g, int device,
                                     const crux_engine_card_t *cards)
{
    return CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_engine_order_apply(crux_engine_group_t *g)
{
    return CRUX_ERR_UNSUPPORTED;
}

void crux_engine_order_release(crux_engine_group_t *g)
{
}
#endif

/* CUDA channels.  The receiver drives every device byte but those of
 * cuda-host between two processes: from the sender's buffer (mapped by IPC)
 * straight into its own (direct), or through staging slots in one or two
 * relay GPUs, or within one process in pinned host memory, one copy per hop.
 * Each hop has its own stream; a chunk's copy on hop h waits for its copy on
 * hop h - 1 through an event, so hops of consecutive chunks overlap (with
 * two or more slots, the staging is double buffered).  A direct channel
 * spreads its chunks over two streams so that copy engines can overlap them.
 *
 * Each hop runs in the primary context of the GPU that holds its source,
 * which pushes the bytes out over its own links: the direct copy in the
 * receiving device's (the sender's buffer mapped there); the first hop of a
 * staged channel in the sending device's (the sender's buffer mapped in
 * that context too), so a stripe through host memory crosses the sender's
 * link once and the receiver's once, not the receiver's twice; each relay
 * hop in its relay GPU's.  A relay channel needs the sender's GPU and the
 * relay's visible in this process (it is not built otherwise), and peer
 * access from each hop's GPU to the next one's (a refusal is no channel).
 *
 * Between two processes, cuda-host is staged by the sender instead
 * (engine/crux_tl_dstage.c): its entry in the receiver's table carries the path's
 * figures and issues nothing, and the two hops run on the copy channels
 * here, device to host in the sender's process, host to device in the
 * receiver's, so each process needs its own GPU only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/cuda/crux_tl_cuda_internal.h"
#include "ucx_tl/cuda/crux_tl_cuda_state.h"
#include "ucx_tl/plan/crux_tl_plan_internal.h"

#ifdef CRUX_HAVE_CUDA
#define SLOTS          4
#define MAX_HOPS       3
#define DIRECT_STREAMS 2

_Static_assert(CRUX_CUDA_NAME_SIZE == CRUX_TL_DEVICE_NAME_SIZE, "one device name size");

typedef struct {
    crux_tl_chan_t chan;
    int device; /* receiving device */
    unsigned hops;
    unsigned nstreams;
    int hop_device[MAX_HOPS]; /* whose context runs each hop (its stream's, its events') */
    CUstream stream[MAX_HOPS];
    CUevent event[MAX_HOPS][SLOTS];
    CUdeviceptr stage[MAX_HOPS - 1]; /* device staging areas ... */
    void *host_stage;                /* ... or pinned host memory (CUDA_HOST) */
    int stage_device[MAX_HOPS - 1];
    unsigned free_slot[SLOTS], nfree;
    crux_tl_cuda_state_t *state; /* the engine's: the events to order after */
    uint64_t order_gen;          /* the generation of them waited on */
} cuda_chan_t;

static CUdeviceptr slot_ptr(const cuda_chan_t *c, unsigned hop, unsigned slot)
{
    size_t at = (size_t)slot * c->chan.attr.max_chunk;
    return c->host_stage != NULL ? (CUdeviceptr)(uintptr_t)c->host_stage + at : c->stage[hop] + at;
}

static CUstream hop_stream(const cuda_chan_t *c, unsigned hop, unsigned slot)
{
    return c->stream[c->hops == 1 ? slot % c->nstreams : hop];
}

/* New events to come after (the application's work): every stream of the
 * channel waits on them, on the GPU, before its next copy. */
static CUresult wait_order(cuda_chan_t *c)
{
    const crux_cuda_api_t *cu = crux_cuda();
    CUresult r = CUDA_SUCCESS;
    for (unsigned i = 0; i < c->nstreams && r == CUDA_SUCCESS; i++) {
        int device = c->hop_device[c->hops == 1 ? 0 : i];
        if (crux_cuda_push(device) != CRUX_OK) {
            return CUDA_ERROR_INVALID_CONTEXT;
        }
        for (unsigned k = 0; k < c->state->norder && r == CUDA_SUCCESS; k++) {
            r = cu->StreamWaitEvent(c->stream[i], (CUevent)c->state->order[k], 0);
        }
        crux_cuda_pop();
    }
    if (r == CUDA_SUCCESS) {
        c->order_gen = c->state->order_gen;
    }
    return r;
}

static crux_status_t cuda_issue(crux_tl_chan_t *chan, crux_tl_chunk_t *chunk)
{
    cuda_chan_t *c = (cuda_chan_t *)chan;
    const crux_cuda_api_t *cu = crux_cuda();
    if (c->nfree == 0) {
        return CRUX_ERR_NO_RESOURCE;
    }
    CUresult r = c->order_gen != c->state->order_gen ? wait_order(c) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
        return crux_cuda_status(r);
    }
    CUdeviceptr from = (CUdeviceptr)(uintptr_t)chunk->src;
    if (c->hop_device[0] != c->device) {
        /* the first hop reads the sender's buffer in its own device's context */
        crux_status_t st = crux_tl_cuda_at_home(c->state, from, c->device, c->hop_device[0], &from);
        if (st != CRUX_OK) {
            return st;
        }
    }
    unsigned s = c->free_slot[--c->nfree];
    for (unsigned h = 0; h < c->hops && r == CUDA_SUCCESS; h++) {
        CUstream stream = hop_stream(c, h, s);
        CUdeviceptr to = h + 1 == c->hops ? (CUdeviceptr)(uintptr_t)chunk->dst : slot_ptr(c, h, s);
        if (crux_cuda_push(c->hop_device[h]) != CRUX_OK) {
            r = CUDA_ERROR_INVALID_CONTEXT;
            break;
        }
        if (h > 0) {
            r = cu->StreamWaitEvent(stream, c->event[h - 1][s], 0);
        }
        if (r == CUDA_SUCCESS) {
            r = cu->MemcpyAsync(to, from, chunk->length, stream);
        }
        if (r == CUDA_SUCCESS) {
            r = cu->EventRecord(c->event[h][s], stream);
        }
        crux_cuda_pop();
        from = to;
    }
    if (r != CUDA_SUCCESS) {
        c->free_slot[c->nfree++] = s;
        return crux_cuda_status(r);
    }
    chunk->slot = s;
    chunk->queue = c->hops == 1 ? s % c->nstreams : 0; /* the stream of its last hop */
    return CRUX_OK;
}

static int cuda_test(crux_tl_chan_t *chan, crux_tl_chunk_t *chunk)
{
    cuda_chan_t *c = (cuda_chan_t *)chan;
    if (crux_cuda_push(c->hop_device[c->hops - 1]) != CRUX_OK) {
        chunk->status = CRUX_ERR_IO;
    } else {
        CUresult r = crux_cuda()->EventQuery(c->event[c->hops - 1][chunk->slot]);
        crux_cuda_pop();
        if (r == CUDA_ERROR_NOT_READY) {
            return 0;
        }
        chunk->status = crux_cuda_status(r);
    }
    c->free_slot[c->nfree++] = chunk->slot;
    return 1;
}

static void cuda_destroy(crux_tl_chan_t *chan)
{
    cuda_chan_t *c = (cuda_chan_t *)chan;
    const crux_cuda_api_t *cu = crux_cuda();
    for (unsigned i = 0; i < MAX_HOPS; i++) {
        int device = c->hop_device[c->hops == 1 ? 0 : i];
        if ((c->stream[i] == NULL && c->event[i][0] == NULL) || crux_cuda_push(device) != CRUX_OK) {
            continue;
        }
        if (c->stream[i] != NULL) {
            cu->StreamSynchronize(c->stream[i]);
            cu->StreamDestroy(c->stream[i]);
        }
        for (unsigned s = 0; s < SLOTS; s++) {
            if (c->event[i][s] != NULL) {
                cu->EventDestroy(c->event[i][s]);
            }
        }
        crux_cuda_pop();
    }
    if (c->host_stage != NULL && crux_cuda_push(c->device) == CRUX_OK) {
        cu->MemFreeHost(c->host_stage);
        crux_cuda_pop();
    }
    for (unsigned h = 0; h + 1 < MAX_HOPS; h++) {
        if (c->stage[h] != 0 && crux_cuda_push(c->stage_device[h]) == CRUX_OK) {
            cu->MemFree(c->stage[h]);
            crux_cuda_pop();
        }
    }
    free(c);
}

static const crux_tl_chan_ops_t cuda_ops = { cuda_issue, cuda_test, cuda_destroy };

/* Nominal figures until calibrated: a copy call and its event cost a few
 * microseconds; staged hops go through slots of a few MiB. */
static void nominal(cuda_chan_t *c, const crux_tl_gpu_path_t *p)
{
    crux_tl_chan_attr_t *a = &c->chan.attr;
    a->bandwidth = p->bandwidth;
    a->hops = c->hops;
    a->max_depth = SLOTS;
    a->latency = 5e-6 * c->hops;
    a->chunk_cost = 3e-6 + 2e-6 * (c->hops - 1);
    a->max_chunk = c->hops == 1 ? 16u << 20 : 2u << 20;
    a->resources = 0; /* the paths of a device pair are disjoint (topo) */
}

/* Let the context of 'from' write to the memory of 'to'; already enabled is
 * fine.  Refused (no P2P between the two, 217): no such channel, the pair's
 * other paths carry the bytes. */
static crux_status_t peer_access(int from, int to)
{
    CUcontext to_ctx;
    if (from == to) {
        return CRUX_OK;
    }
    crux_status_t st = crux_cuda_push(to);
    if (st != CRUX_OK) {
        return st;
    }
    crux_cuda()->CtxPopCurrent(&to_ctx);
    if ((st = crux_cuda_push(from)) == CRUX_OK) {
        CUresult r = crux_cuda()->CtxEnablePeerAccess(to_ctx, 0);
        crux_cuda_pop();
        st = r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? CRUX_OK : crux_cuda_status(r);
    }
    return st;
}

static crux_status_t make_staging(cuda_chan_t *c, const crux_tl_gpu_path_t *p)
{
    const crux_cuda_api_t *cu = crux_cuda();
    size_t bytes = (size_t)SLOTS * c->chan.attr.max_chunk;
    if (p->kind == CRUX_TL_CHAN_CUDA_HOST) {
        /* pinned memory belongs to a context: the driver refuses it without
         * one; portable, so that the sender's context reaches it too */
        crux_status_t st = crux_cuda_push(c->device);
        if (st == CRUX_OK) {
            st =
                crux_cuda_status(cu->MemHostAlloc(&c->host_stage, bytes, CU_MEMHOSTALLOC_PORTABLE));
            crux_cuda_pop();
        }
        return st;
    }
    for (unsigned h = 0; h + 1 < c->hops; h++) {
        int relay = c->hop_device[h + 1];
        crux_status_t st = crux_cuda_push(relay);
        if (st != CRUX_OK) {
            return st;
        }
        st = crux_cuda_status(cu->MemAlloc(&c->stage[h], bytes));
        crux_cuda_pop();
        if (st != CRUX_OK) {
            return st;
        }
        c->stage_device[h] = relay;
        /* hop h writes the relay's memory from the context of its source */
        if ((st = peer_access(c->hop_device[h], relay)) != CRUX_OK) {
            return st;
        }
    }
    /* and the last relay writes the receiver's buffer */
    return peer_access(c->hop_device[c->hops - 1], c->device);
}

/* Each hop's device: the sender's for the first hop of a staged channel,
 * the relay's for a relay hop, the receiver's for the direct copy and the
 * host stage's second hop; -1 when one is not visible here, or this
 * process has no context on it: a relay or the sender's GPU that only
 * another rank uses is left alone (a context costs that GPU hundreds of MB). */
static int hop_devices(cuda_chan_t *c, const crux_tl_dpair_t *dp, const crux_tl_gpu_path_t *p)
{
    c->hop_device[0] = c->hops == 1 ? c->device : crux_cuda_device_named(dp->src);
    for (unsigned h = 1; h < c->hops; h++) {
        char relay[CRUX_CUDA_NAME_SIZE];
        if (p->kind == CRUX_TL_CHAN_CUDA_PEER) {
            memcpy(relay, p->relay[h - 1], sizeof(relay));
            relay[sizeof(relay) - 1] = '\0';
        }
        c->hop_device[h] =
            p->kind == CRUX_TL_CHAN_CUDA_PEER ? crux_cuda_device_named(relay) : c->device;
    }
    for (unsigned h = 0; h < c->hops; h++) {
        if (c->hop_device[h] < 0 ||
            (c->hop_device[h] != c->device && !crux_cuda_context_active(c->hop_device[h]))) {
            return -1;
        }
    }
    return 0;
}

/* Each stream in its hop's context, with its events (and the free slots). */
static crux_status_t make_streams(cuda_chan_t *c)
{
    const crux_cuda_api_t *cu = crux_cuda();
    crux_status_t st = CRUX_OK;
    for (unsigned s = 0; s < SLOTS; s++) {
        c->free_slot[c->nfree++] = s;
    }
    for (unsigned i = 0; i < c->nstreams && st == CRUX_OK; i++) {
        int on = c->hop_device[c->hops == 1 ? 0 : i];
        if ((st = crux_cuda_push(on)) != CRUX_OK) {
            break;
        }
        st = crux_cuda_status(cu->StreamCreate(&c->stream[i], CU_STREAM_NON_BLOCKING));
        /* a hop's events are recorded on its stream: the same context */
        for (unsigned s = 0; s < SLOTS && st == CRUX_OK && i < c->hops; s++) {
            st = crux_cuda_status(cu->EventCreate(&c->event[i][s], CU_EVENT_DISABLE_TIMING));
        }
        crux_cuda_pop();
    }
    return st;
}

static crux_tl_chan_t *make_channel(crux_tl_engine_t *e, const crux_tl_dpair_t *dp,
                                    const crux_tl_gpu_path_t *p, int device)
{
    cuda_chan_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->device = device;
    c->state = e->cuda;
    c->order_gen = e->cuda->order_gen - 1; /* waits on the current set first */
    c->hops = p->kind == CRUX_TL_CHAN_CUDA_IPC    ? 1
              : p->kind == CRUX_TL_CHAN_CUDA_HOST ? 2
                                                  : 1 + p->nrelays;
    c->nstreams = c->hops == 1 ? DIRECT_STREAMS : c->hops;
    /* a stream runs its copies in order: a poll tests the oldest chunk of
     * each final stream only, not every chunk in flight */
    c->chan.ordered_queues = c->hops == 1 ? DIRECT_STREAMS : 1;
    char name[48];
    snprintf(name, sizeof(name), "%s%s%.12s", crux_tl_chan_kind_name(p->kind),
             p->kind == CRUX_TL_CHAN_CUDA_PEER ? ":" : "",
             p->kind == CRUX_TL_CHAN_CUDA_PEER ? p->relay[0] : "");
    crux_tl_chan_init(&c->chan, &cuda_ops, p->kind, name);
    /* "kind:src>relay...>dst": the cache key of the path's figures */
    char via[2 * CRUX_CUDA_NAME_SIZE + 2] = "";
    for (unsigned r = 0; p->kind == CRUX_TL_CHAN_CUDA_PEER && r < p->nrelays; r++) {
        size_t at = strlen(via);
        snprintf(via + at, sizeof(via) - at, "%.*s>", CRUX_CUDA_NAME_SIZE - 1, p->relay[r]);
    }
    snprintf(c->chan.signature, sizeof(c->chan.signature), "%s:%s>%s%s",
             crux_tl_chan_kind_name(p->kind), dp->src, via, dp->dst);
    nominal(c, p);
    /* Without the topology's figures, only the direct copy is sure to be a
     * path of its own: staging through host memory at a guessed 12 GB/s took
     * a third of every transfer, even over NVSwitch where it is several
     * times slower than direct.  It joins once calibrated. */
    c->chan.attr.guessed = !dp->from_topo && p->kind != CRUX_TL_CHAN_CUDA_IPC;
    crux_status_t st = hop_devices(c, dp, p) == 0 ? make_staging(c, p) : CRUX_ERR_NO_RESOURCE;
    if (st == CRUX_OK) {
        st = make_streams(c);
    }
    if (st != CRUX_OK) {
        cuda_destroy(&c->chan);
        return NULL;
    }
    return &c->chan;
}

/* The entry of sender-staged cuda-host in a receiver's table: the path's
 * figures, and the signature of the same path within one process (the
 * links are the same), whose calibration it takes. */
static const crux_tl_chan_ops_t staged_ops = { NULL, NULL, cuda_destroy };

static crux_tl_chan_t *make_staged_entry(crux_tl_engine_t *e, const crux_tl_dpair_t *dp,
                                         const crux_tl_gpu_path_t *p)
{
    cuda_chan_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->hops = 2;
    crux_tl_chan_init(&c->chan, &staged_ops, p->kind, crux_tl_chan_kind_name(p->kind));
    snprintf(c->chan.signature, sizeof(c->chan.signature), "%s:%s>%s",
             crux_tl_chan_kind_name(p->kind), dp->src, dp->dst);
    nominal(c, p);
    c->chan.attr.max_depth = CRUX_TL_DSTAGE_SLOTS;
    c->chan.attr.max_chunk = CRUX_TL_DSTAGE_SLOT;
    c->chan.attr.guessed = !dp->from_topo;
    crux_tl_calib_lookup(e, &c->chan);
    return &c->chan;
}

crux_tl_chan_t *crux_tl_cuda_copy_channel(crux_tl_engine_t *e, int device, int to_host)
{
    crux_tl_cuda_state_t *cs = crux_tl_cuda_state(e);
    if (cs == NULL || crux_cuda() == NULL || device < 0 || device >= CRUX_TL_COPY_DEVICES) {
        return NULL;
    }
    crux_tl_chan_t **slot = &cs->copy[device][to_host != 0];
    if (*slot != NULL) {
        return *slot;
    }
    cuda_chan_t *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->device = device;
    c->state = cs;
    c->order_gen = cs->order_gen - 1; /* waits on the current set first */
    c->hops = 1;
    c->nstreams = 1;
    c->hop_device[0] = device;
    c->chan.ordered_queues = 1;
    crux_tl_chan_init(&c->chan, &cuda_ops, CRUX_TL_CHAN_CUDA_HOST,
                      to_host ? "cuda-host:d2h" : "cuda-host:h2d");
    c->chan.attr.hops = 1;
    c->chan.attr.max_depth = SLOTS;
    c->chan.attr.max_chunk = CRUX_TL_DSTAGE_SLOT;
    if (make_streams(c) != CRUX_OK) {
        cuda_destroy(&c->chan);
        return NULL;
    }
    *slot = &c->chan;
    return *slot;
}

crux_status_t crux_tl_cuda_pin(int device, void *ptr, size_t bytes)
{
    crux_status_t st = crux_cuda_push(device);
    if (st == CRUX_OK) {
        st =
            crux_cuda_status(crux_cuda()->MemHostRegister(ptr, bytes, CU_MEMHOSTREGISTER_PORTABLE));
        crux_cuda_pop();
    }
    return st;
}

void crux_tl_cuda_unpin(int device, void *ptr)
{
    if (crux_cuda_push(device) == CRUX_OK) {
        crux_cuda()->MemHostUnregister(ptr);
        crux_cuda_pop();
    }
}

/* --- device pairs --------------------------------------------------------------- */

static crux_tl_dpair_t *dpair_find(crux_tl_engine_t *e, const char *src, const char *dst,
                                   int create)
{
    crux_tl_cuda_state_t *cs = crux_tl_cuda_state(e);
    if (cs == NULL) {
        return NULL;
    }
    for (crux_tl_dpair_t *dp = cs->dpairs; dp != NULL; dp = dp->next) {
        if (strcmp(dp->src, src) == 0 && strcmp(dp->dst, dst) == 0) {
            return dp;
        }
    }
    crux_tl_dpair_t *dp = create ? calloc(1, sizeof(*dp)) : NULL;
    if (dp == NULL) {
        return NULL;
    }
    snprintf(dp->src, sizeof(dp->src), "%s", src);
    snprintf(dp->dst, sizeof(dp->dst), "%s", dst);
    /* Without topology: a direct copy, and staging through host memory.  On
     * one GPU the direct copy stays in its memory, far faster than PCIe. */
    int same = strcmp(src, dst) == 0;
    dp->path[0] =
        (crux_tl_gpu_path_t){ .kind = CRUX_TL_CHAN_CUDA_IPC, .bandwidth = same ? 300e9 : 20e9 };
    dp->path[1] = (crux_tl_gpu_path_t){ .kind = CRUX_TL_CHAN_CUDA_HOST, .bandwidth = 12e9 };
    dp->npaths = 2;
    dp->next = cs->dpairs;
    cs->dpairs = dp;
    return dp;
}

/* 1 when a path between two processes is staged by the sender. */
static int sender_staged(const crux_tl_gpu_path_t *p, int across)
{
    return across && p->kind == CRUX_TL_CHAN_CUDA_HOST;
}

/* The channel of path i for a transfer within one process (across 0) or
 * between two (staged: the sender stages cuda-host), made on first use;
 * NULL when there is none. */
static crux_tl_chan_t *path_channel(crux_tl_engine_t *e, crux_tl_dpair_t *dp, unsigned i,
                                    int across, int staged)
{
    if (sender_staged(&dp->path[i], across)) {
        if (staged && dp->staged[i] == NULL) {
            dp->staged[i] = make_staged_entry(e, dp, &dp->path[i]);
        }
        return staged ? dp->staged[i] : NULL;
    }
    int device = crux_cuda_device_named(dp->dst);
    if (dp->chan[i] == NULL && device >= 0 &&
        (dp->chan[i] = make_channel(e, dp, &dp->path[i], device)) != NULL) {
        crux_tl_calib_lookup(e, dp->chan[i]);
    }
    return dp->chan[i];
}

/* The channels within one process (calibration's). */
static int dpair_ready(crux_tl_engine_t *e, crux_tl_dpair_t *dp)
{
    int ready = 0;
    for (unsigned i = 0; i < dp->npaths; i++) {
        ready += path_channel(e, dp, i, 0, 0) != NULL;
    }
    return ready;
}

unsigned crux_tl_cuda_channels(crux_tl_pair_t *pair, const char *src_name, int dst_device,
                               int sender_stages, unsigned *index)
{
    char dst[CRUX_CUDA_NAME_SIZE], src[CRUX_CUDA_NAME_SIZE];
    if (crux_cuda_name(dst_device, dst) != 0) {
        return 0;
    }
    memcpy(src, src_name, sizeof(src)); /* the peer's text: bounded before use */
    src[sizeof(src) - 1] = '\0';
    crux_tl_dpair_t *dp = dpair_find(pair->engine, src, dst, 1);
    unsigned n = 0;
    for (unsigned i = 0; dp != NULL && i < dp->npaths && n < CRUX_TL_MAX_PATHS; i++) {
        crux_tl_chan_t *chan = path_channel(pair->engine, dp, i, !pair->loopback, sender_stages);
        if (chan == NULL) {
            continue;
        }
        unsigned j = 0;
        while (j < pair->nchan && pair->chan[j] != chan) {
            j++;
        }
        if (j == pair->nchan) {
            if (pair->nchan == CRUX_TL_MAX_CHANS) {
                continue;
            }
            pair->chan[pair->nchan] = chan;
            pair->chan_owned[pair->nchan++] = 0;
        }
        index[n++] = j;
    }
    return n;
}

unsigned crux_tl_cuda_progress(crux_tl_engine_t *e)
{
    unsigned events = 0;
    crux_tl_cuda_state_t *cs = e->cuda;
    for (crux_tl_dpair_t *dp = cs != NULL ? cs->dpairs : NULL; dp != NULL; dp = dp->next) {
        for (unsigned i = 0; i < dp->npaths; i++) {
            if (dp->chan[i] != NULL && dp->chan[i]->head != NULL) {
                events += crux_tl_chan_poll(dp->chan[i]);
            }
        }
    }
    for (unsigned d = 0; cs != NULL && d < CRUX_TL_COPY_DEVICES; d++) {
        for (unsigned k = 0; k < 2; k++) {
            if (cs->copy[d][k] != NULL && cs->copy[d][k]->head != NULL) {
                events += crux_tl_chan_poll(cs->copy[d][k]);
            }
        }
    }
    return events;
}

crux_status_t crux_tl_engine_cuda_order(crux_tl_engine_t *e, void *const *events, unsigned n)
{
    crux_tl_cuda_state_t *cs = crux_tl_cuda_state(e);
    if (cs == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    cs->order = n > 0 ? events : NULL;
    cs->norder = n;
    cs->order_gen++;
    return CRUX_OK;
}

void crux_tl_cuda_destroy(crux_tl_engine_t *e)
{
    crux_tl_cuda_state_t *cs = e->cuda;
    while (cs != NULL && cs->dpairs != NULL) {
        crux_tl_dpair_t *dp = cs->dpairs;
        cs->dpairs = dp->next;
        for (unsigned i = 0; i < dp->npaths; i++) {
            if (dp->chan[i] != NULL) {
                dp->chan[i]->ops->destroy(dp->chan[i]);
            }
            if (dp->staged[i] != NULL) {
                dp->staged[i]->ops->destroy(dp->staged[i]);
            }
        }
        free(dp);
    }
    for (unsigned d = 0; cs != NULL && d < CRUX_TL_COPY_DEVICES; d++) {
        for (unsigned k = 0; k < 2; k++) {
            if (cs->copy[d][k] != NULL) {
                cs->copy[d][k]->ops->destroy(cs->copy[d][k]);
            }
        }
    }
    crux_tl_cuda_ipc_destroy(e);
    free(cs);
    e->cuda = NULL;
}

crux_status_t crux_tl_engine_gpu_paths(crux_tl_engine_t *e, const char *src_name,
                                       const char *dst_name, const crux_tl_gpu_path_t *paths,
                                       unsigned npaths)
{
    if (npaths == 0 || strlen(src_name) >= CRUX_CUDA_NAME_SIZE ||
        strlen(dst_name) >= CRUX_CUDA_NAME_SIZE || npaths > CRUX_TL_MAX_GPU_PATHS) {
        return CRUX_ERR_INVALID;
    }
    for (unsigned i = 0; i < npaths; i++) {
        if (!(paths[i].bandwidth > 0) ||
            (paths[i].kind == CRUX_TL_CHAN_CUDA_PEER &&
             (paths[i].nrelays < 1 || paths[i].nrelays > 2 ||
              memchr(paths[i].relay[0], '\0', CRUX_CUDA_NAME_SIZE) == NULL ||
              (paths[i].nrelays == 2 &&
               memchr(paths[i].relay[1], '\0', CRUX_CUDA_NAME_SIZE) == NULL))) ||
            (paths[i].kind != CRUX_TL_CHAN_CUDA_PEER && paths[i].kind != CRUX_TL_CHAN_CUDA_IPC &&
             paths[i].kind != CRUX_TL_CHAN_CUDA_HOST)) {
            return CRUX_ERR_INVALID;
        }
    }
    if (crux_cuda() == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    crux_tl_dpair_t *dp = dpair_find(e, src_name, dst_name, 1);
    if (dp == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    for (unsigned i = 0; i < dp->npaths; i++) {
        if (dp->chan[i] != NULL || dp->staged[i] != NULL) {
            return CRUX_ERR_INVALID; /* already in use: set paths before transfers */
        }
    }
    memcpy(dp->path, paths, npaths * sizeof(*paths));
    dp->npaths = npaths;
    dp->from_topo = 1;
    return CRUX_OK;
}

/* --- calibration ------------------------------------------------------------------ */

/* Seconds to move n bytes through one channel, outside any pair. */
static double time_stripe(crux_tl_engine_t *e, crux_tl_chan_t *chan, CUdeviceptr dst,
                          CUdeviceptr src, size_t n, size_t chunk)
{
    crux_tl_pair_t host = { .engine = e };
    crux_tl_xfer_t x = { .pair = &host,
                         .buffer = (uint8_t *)(uintptr_t)dst,
                         .peer_mapped = (void *)(uintptr_t)src,
                         .bytes = n,
                         .nruns = 1 };
    x.run[0] = (crux_tl_run_t){ .kind = chan->attr.kind,
                                .chan = chan,
                                .bytes = n,
                                .chunk = chunk,
                                .depth = chan->attr.max_depth };
    double start = crux_tl_now();
    while (x.run[0].inflight > 0 || (x.run[0].landed < n && !x.failed)) {
        crux_tl_xfer_issue(&host, &x);
        crux_tl_chan_poll(chan);
    }
    return x.failed ? -1.0 : crux_tl_now() - start;
}

static crux_status_t measure(crux_tl_engine_t *e, crux_tl_chan_t *chan, CUdeviceptr dst,
                             CUdeviceptr src, size_t bytes)
{
    size_t big = bytes / 4 < chan->attr.max_chunk ? bytes / 4 : chan->attr.max_chunk;
    double n[3] = { 64, (double)bytes, (double)bytes };
    size_t chunk[3] = { 64, big, big / 8 };
    double k[3], t[3];
    for (int s = 0; s < 3; s++) {
        k[s] = ceil(n[s] / (double)chunk[s]);
        t[s] = INFINITY;
        for (int rep = 0; rep < 3; rep++) {
            double took = time_stripe(e, chan, dst, src, (size_t)n[s], chunk[s]);
            if (took < 0) {
                return CRUX_ERR_IO;
            }
            t[s] = fmin(t[s], took);
        }
    }
    crux_tl_calib_fit(&chan->attr, t, k, n);
    return CRUX_OK;
}

static crux_status_t alloc_on(int device, size_t bytes, CUdeviceptr *ptr)
{
    crux_status_t st = crux_cuda_push(device);
    if (st == CRUX_OK) {
        st = crux_cuda_status(crux_cuda()->MemAlloc(ptr, bytes));
        crux_cuda_pop();
    }
    return st;
}

static void free_on(int device, CUdeviceptr ptr)
{
    if (ptr != 0 && crux_cuda_push(device) == CRUX_OK) {
        crux_cuda()->MemFree(ptr);
        crux_cuda_pop();
    }
}

crux_status_t crux_tl_engine_calibrate_cuda(crux_tl_engine_t *e, int src_dev, int dst_dev,
                                            int force)
{
    const size_t bytes = 16u << 20;
    char src[CRUX_CUDA_NAME_SIZE], dst[CRUX_CUDA_NAME_SIZE];
    if (crux_cuda() == NULL || crux_cuda_name(src_dev, src) != 0 ||
        crux_cuda_name(dst_dev, dst) != 0) {
        return CRUX_ERR_UNSUPPORTED;
    }
    crux_tl_dpair_t *dp = dpair_find(e, src, dst, 1);
    if (dp == NULL || dpair_ready(e, dp) == 0) {
        return CRUX_ERR_NO_RESOURCE;
    }
    CUdeviceptr sbuf = 0, rbuf = 0;
    crux_status_t st = alloc_on(src_dev, bytes, &sbuf);
    if (st == CRUX_OK) {
        st = alloc_on(dst_dev, bytes, &rbuf);
    }
    crux_tl_chan_t *measured[CRUX_TL_MAX_GPU_PATHS];
    unsigned count = 0;
    for (unsigned i = 0; st == CRUX_OK && i < dp->npaths; i++) {
        if (dp->chan[i] != NULL && (force || !dp->chan[i]->attr.calibrated)) {
            st = measure(e, dp->chan[i], rbuf, sbuf, bytes);
            measured[count++] = dp->chan[i];
            if (st == CRUX_OK && dp->staged[i] != NULL) {
                /* the same links between two processes */
                crux_tl_chan_attr_t *a = &dp->staged[i]->attr;
                a->bandwidth = dp->chan[i]->attr.bandwidth;
                a->latency = dp->chan[i]->attr.latency;
                a->chunk_cost = dp->chan[i]->attr.chunk_cost;
                a->calibrated = dp->chan[i]->attr.calibrated;
            }
        }
    }
    free_on(src_dev, sbuf);
    free_on(dst_dev, rbuf);
    if (st == CRUX_OK) {
        crux_tl_calib_store(e, measured, count);
        for (crux_tl_pair_t *pair = e->pairs; pair != NULL; pair = pair->next) {
            crux_tl_plan_invalidate(pair);
        }
    }
    return st;
}

#else /* no CUDA toolkit at build time */

unsigned crux_tl_cuda_channels(crux_tl_pair_t *pair, const char *src_name, int dst_device,
                               int sender_stages, unsigned *index)
{
    return 0;
}

crux_tl_chan_t *crux_tl_cuda_copy_channel(crux_tl_engine_t *e, int device, int to_host)
{
    return NULL;
}

crux_status_t crux_tl_cuda_pin(int device, void *ptr, size_t bytes)
{
    return CRUX_ERR_UNSUPPORTED;
}

void crux_tl_cuda_unpin(int device, void *ptr)
{
}

unsigned crux_tl_cuda_progress(crux_tl_engine_t *e)
{
    return 0;
}

crux_status_t crux_tl_engine_cuda_order(crux_tl_engine_t *e, void *const *events, unsigned n)
{
    return CRUX_ERR_UNSUPPORTED;
}

void crux_tl_cuda_destroy(crux_tl_engine_t *e)
{
}

crux_status_t crux_tl_engine_gpu_paths(crux_tl_engine_t *e, const char *src_name,
                                       const char *dst_name, const crux_tl_gpu_path_t *paths,
                                       unsigned npaths)
{
    return CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_tl_engine_calibrate_cuda(crux_tl_engine_t *e, int src_dev, int dst_dev,
                                            int force)
{
    return CRUX_ERR_UNSUPPORTED;
}
#endif

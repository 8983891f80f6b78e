/* CUDA channels.  The receiver moves every device byte: from the sender's
 * buffer (mapped by IPC) straight into its own (direct), or through staging
 * slots in one or two relay GPUs or in pinned host memory, one copy per hop.
 * Each hop has its own stream; a chunk's copy on hop h waits for its copy on
 * hop h - 1 through an event, so hops of consecutive chunks overlap (with
 * two or more slots, the staging is double buffered).  A direct channel
 * spreads its chunks over two streams so that copy engines can overlap them.
 *
 * All of a channel's calls are made in the primary context of the
 * receiving device, where the IPC mappings are opened; relay buffers are
 * allocated on their GPU and reached through peer access. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/cuda/cuda_internal.h"
#include "ucx_tl/cuda/cuda_state.h"
#include "ucx_tl/plan/plan_internal.h"

#ifdef CRUX_HAVE_CUDA
#define SLOTS          4
#define MAX_HOPS       3
#define DIRECT_STREAMS 2

typedef struct {
    crux_tl_chan_t chan;
    int device; /* receiving device: the context of every call */
    unsigned hops;
    unsigned nstreams;
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

static crux_status_t cuda_issue(crux_tl_chan_t *chan, crux_tl_chunk_t *chunk)
{
    cuda_chan_t *c = (cuda_chan_t *)chan;
    const crux_cuda_api_t *cu = crux_cuda();
    if (c->nfree == 0 || crux_cuda_push(c->device) != CRUX_OK) {
        return CRUX_ERR_NO_RESOURCE;
    }
    CUresult r = CUDA_SUCCESS;
    if (c->order_gen != c->state->order_gen) {
        /* new events to come after (the application's work): every stream
         * of the channel waits on them, on the GPU, before its next copy */
        for (unsigned i = 0; i < c->nstreams && r == CUDA_SUCCESS; i++) {
            for (unsigned k = 0; k < c->state->norder && r == CUDA_SUCCESS; k++) {
                r = cu->StreamWaitEvent(c->stream[i], (CUevent)c->state->order[k], 0);
            }
        }
        if (r != CUDA_SUCCESS) {
            crux_cuda_pop();
            return crux_cuda_status(r);
        }
        c->order_gen = c->state->order_gen;
    }
    unsigned s = c->free_slot[--c->nfree];
    CUdeviceptr from = (CUdeviceptr)(uintptr_t)chunk->src;
    for (unsigned h = 0; h < c->hops && r == CUDA_SUCCESS; h++) {
        CUstream stream = c->stream[c->hops == 1 ? s % c->nstreams : h];
        CUdeviceptr to = h + 1 == c->hops ? (CUdeviceptr)(uintptr_t)chunk->dst : slot_ptr(c, h, s);
        if (h > 0) {
            r = cu->StreamWaitEvent(stream, c->event[h - 1][s], 0);
        }
        if (r == CUDA_SUCCESS) {
            r = cu->MemcpyAsync(to, from, chunk->length, stream);
        }
        if (r == CUDA_SUCCESS) {
            r = cu->EventRecord(c->event[h][s], stream);
        }
        from = to;
    }
    crux_cuda_pop();
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
    if (crux_cuda_push(c->device) != CRUX_OK) {
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
    if (crux_cuda_push(c->device) == CRUX_OK) {
        for (unsigned i = 0; i < MAX_HOPS; i++) {
            if (c->stream[i] != NULL) {
                cu->StreamSynchronize(c->stream[i]);
                cu->StreamDestroy(c->stream[i]);
            }
            for (unsigned s = 0; s < SLOTS; s++) {
                if (c->event[i][s] != NULL) {
                    cu->EventDestroy(c->event[i][s]);
                }
            }
        }
        if (c->host_stage != NULL) {
            cu->MemFreeHost(c->host_stage);
        }
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

static crux_status_t make_staging(cuda_chan_t *c, const crux_tl_gpu_path_t *p)
{
    const crux_cuda_api_t *cu = crux_cuda();
    size_t bytes = (size_t)SLOTS * c->chan.attr.max_chunk;
    if (p->kind == CRUX_TL_CHAN_CUDA_HOST) {
        /* pinned memory belongs to a context: the driver refuses it without one */
        crux_status_t st = crux_cuda_push(c->device);
        if (st == CRUX_OK) {
            st =
                crux_cuda_status(cu->MemHostAlloc(&c->host_stage, bytes, CU_MEMHOSTALLOC_PORTABLE));
            crux_cuda_pop();
        }
        return st;
    }
    for (unsigned h = 0; h + 1 < c->hops; h++) {
        int relay = crux_cuda_device_of(p->relay[h]);
        if (relay < 0 || crux_cuda_push(relay) != CRUX_OK) {
            return CRUX_ERR_NO_RESOURCE; /* the relay is not visible to this process */
        }
        CUcontext relay_ctx;
        CUresult r = cu->MemAlloc(&c->stage[h], bytes);
        cu->CtxPopCurrent(&relay_ctx);
        if (r != CUDA_SUCCESS) {
            return crux_cuda_status(r);
        }
        c->stage_device[h] = relay;
        /* Let the receiving device's context reach the relay's memory;
         * already enabled is fine.  Refused (no P2P between the two, 217):
         * no such channel, the pair's other paths carry the bytes. */
        crux_status_t st = crux_cuda_push(c->device);
        if (st == CRUX_OK) {
            r = cu->CtxEnablePeerAccess(relay_ctx, 0);
            crux_cuda_pop();
            st = r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? CRUX_OK : crux_cuda_status(r);
        }
        if (st != CRUX_OK) {
            return st;
        }
    }
    return CRUX_OK;
}

static crux_tl_chan_t *make_channel(crux_tl_engine_t *e, const crux_tl_dpair_t *dp,
                                    const crux_tl_gpu_path_t *p, int device)
{
    const crux_cuda_api_t *cu = crux_cuda();
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
    snprintf(name, sizeof(name), "%s%s%s", crux_tl_chan_kind_name(p->kind),
             p->kind == CRUX_TL_CHAN_CUDA_PEER ? ":" : "",
             p->kind == CRUX_TL_CHAN_CUDA_PEER ? p->relay[0] : "");
    crux_tl_chan_init(&c->chan, &cuda_ops, p->kind, name);
    /* "kind:src>relay...>dst": the cache key of the path's figures */
    char via[40] = "";
    for (unsigned r = 0; p->kind == CRUX_TL_CHAN_CUDA_PEER && r < p->nrelays; r++) {
        size_t at = strlen(via);
        snprintf(via + at, sizeof(via) - at, "%s>", p->relay[r]);
    }
    snprintf(c->chan.signature, sizeof(c->chan.signature), "%s:%s>%s%s",
             crux_tl_chan_kind_name(p->kind), dp->src, via, dp->dst);
    nominal(c, p);
    /* Without the topology's figures, only the direct copy is sure to be a
     * path of its own: staging through host memory at a guessed 12 GB/s took
     * a third of every transfer, even over NVSwitch where it is several
     * times slower than direct.  It joins once calibrated. */
    c->chan.attr.guessed = !dp->from_topo && p->kind != CRUX_TL_CHAN_CUDA_IPC;
    for (unsigned s = 0; s < SLOTS; s++) {
        c->free_slot[c->nfree++] = s;
    }
    crux_status_t st = make_staging(c, p);
    if (st == CRUX_OK && (st = crux_cuda_push(device)) == CRUX_OK) {
        for (unsigned i = 0; i < c->nstreams && st == CRUX_OK; i++) {
            st = crux_cuda_status(cu->StreamCreate(&c->stream[i], CU_STREAM_NON_BLOCKING));
        }
        for (unsigned h = 0; h < c->hops && st == CRUX_OK; h++) {
            for (unsigned s = 0; s < SLOTS && st == CRUX_OK; s++) {
                st = crux_cuda_status(cu->EventCreate(&c->event[h][s], CU_EVENT_DISABLE_TIMING));
            }
        }
        crux_cuda_pop();
    }
    if (st != CRUX_OK) {
        cuda_destroy(&c->chan);
        return NULL;
    }
    return &c->chan;
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

static int dpair_ready(crux_tl_engine_t *e, crux_tl_dpair_t *dp)
{
    int device = crux_cuda_device_of(dp->dst), ready = 0;
    for (unsigned i = 0; i < dp->npaths && device >= 0; i++) {
        if (dp->chan[i] == NULL &&
            (dp->chan[i] = make_channel(e, dp, &dp->path[i], device)) != NULL) {
            crux_tl_calib_lookup(e, dp->chan[i]);
        }
        ready += dp->chan[i] != NULL;
    }
    return ready;
}

unsigned crux_tl_cuda_channels(crux_tl_pair_t *pair, const char *src_pci, int dst_device,
                               unsigned *index)
{
    char dst[16];
    if (crux_cuda_pci(dst_device, dst, sizeof(dst)) != 0) {
        return 0;
    }
    crux_tl_dpair_t *dp = dpair_find(pair->engine, src_pci, dst, 1);
    if (dp == NULL || dpair_ready(pair->engine, dp) == 0) {
        return 0;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < dp->npaths && n < CRUX_TL_MAX_PATHS; i++) {
        if (dp->chan[i] == NULL) {
            continue;
        }
        unsigned j = 0;
        while (j < pair->nchan && pair->chan[j] != dp->chan[i]) {
            j++;
        }
        if (j == pair->nchan) {
            if (pair->nchan == CRUX_TL_MAX_CHANS) {
                continue;
            }
            pair->chan[pair->nchan] = dp->chan[i];
            pair->chan_owned[pair->nchan++] = 0;
        }
        index[n++] = j;
    }
    return n;
}

unsigned crux_tl_cuda_progress(crux_tl_engine_t *e)
{
    unsigned events = 0;
    for (crux_tl_dpair_t *dp = e->cuda != NULL ? e->cuda->dpairs : NULL; dp != NULL;
         dp = dp->next) {
        for (unsigned i = 0; i < dp->npaths; i++) {
            if (dp->chan[i] != NULL && dp->chan[i]->head != NULL) {
                events += crux_tl_chan_poll(dp->chan[i]);
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
        }
        free(dp);
    }
    crux_tl_cuda_ipc_destroy(e);
    free(cs);
    e->cuda = NULL;
}

crux_status_t crux_tl_engine_gpu_paths(crux_tl_engine_t *e, const char *src_pci,
                                       const char *dst_pci, const crux_tl_gpu_path_t *paths,
                                       unsigned npaths)
{
    if (npaths == 0 || npaths > CRUX_TL_MAX_GPU_PATHS) {
        return CRUX_ERR_INVALID;
    }
    for (unsigned i = 0; i < npaths; i++) {
        if (!(paths[i].bandwidth > 0) ||
            (paths[i].kind == CRUX_TL_CHAN_CUDA_PEER &&
             (paths[i].nrelays < 1 || paths[i].nrelays > 2)) ||
            (paths[i].kind != CRUX_TL_CHAN_CUDA_PEER && paths[i].kind != CRUX_TL_CHAN_CUDA_IPC &&
             paths[i].kind != CRUX_TL_CHAN_CUDA_HOST)) {
            return CRUX_ERR_INVALID;
        }
    }
    if (crux_cuda() == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    crux_tl_dpair_t *dp = dpair_find(e, src_pci, dst_pci, 1);
    if (dp == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    for (unsigned i = 0; i < dp->npaths; i++) {
        if (dp->chan[i] != NULL) {
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
    char src[16], dst[16];
    if (crux_cuda() == NULL || crux_cuda_pci(src_dev, src, sizeof(src)) != 0 ||
        crux_cuda_pci(dst_dev, dst, sizeof(dst)) != 0) {
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

unsigned crux_tl_cuda_channels(crux_tl_pair_t *pair, const char *src_pci, int dst_device,
                               unsigned *index)
{
    return 0;
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

crux_status_t crux_tl_engine_gpu_paths(crux_tl_engine_t *e, const char *src_pci,
                                       const char *dst_pci, const crux_tl_gpu_path_t *paths,
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

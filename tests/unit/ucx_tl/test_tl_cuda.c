/* The CUDA pieces, on a machine with a GPU: pointer detection, every device
 * reduction kernel against the CPU one bit for bit, staging, the engine's
 * CUDA channels within a process and between processes (IPC, host staging),
 * the device Allreduce between processes, and CUDA calibration.  Without a
 * GPU each of those is reported "ok N # SKIP no GPU"; the check that a
 * missing driver means host memory everywhere always runs.
 *
 * Plain TAP rather than Check: every test runs in a child process that
 * initialises CUDA itself (CUDA state does not survive fork), and the parent
 * never touches CUDA. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crux_cuda.h"
#include "coll/crux_coll.h"
#include "coll/crux_dev_internal.h"
#include "topo/crux_topo.h"
#include "tests/unit/fork_group.h"

#define FAIL(code)                                                \
    do {                                                          \
        fprintf(stderr, "# %s:%d: failed\n", __FILE__, __LINE__); \
        return (code);                                            \
    } while (0)

static unsigned char pattern(size_t i, unsigned salt)
{
    return (unsigned char)((i * 2654435761u) >> 11 ^ salt);
}

/* --- device buffers with host patterns ---------------------------------------- */

static void *device_pattern(int device, size_t bytes, unsigned salt)
{
    void *d = NULL;
    unsigned char *h = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++) {
        h[i] = pattern(i, salt);
    }
    if (crux_dev_alloc(device, bytes + 1, &d) != CRUX_OK || crux_dev_copy(d, h, bytes) != CRUX_OK) {
        d = NULL;
    }
    free(h);
    return d;
}

static int device_holds(const void *d, size_t bytes, unsigned salt)
{
    unsigned char *h = malloc(bytes + 1);
    int ok = crux_dev_copy(h, d, bytes) == CRUX_OK;
    for (size_t i = 0; ok && i < bytes; i++) {
        ok = h[i] == pattern(i, salt);
    }
    free(h);
    return ok;
}

/* --- the tests ------------------------------------------------------------------- */

static int t_detection(void)
{
    void *d;
    double h = 0;
    if (crux_dev_alloc(0, 4096, &d) != CRUX_OK)
        FAIL(1);
    crux_tl_mem_t m = crux_tl_mem_query((char *)d + 100);
    if (!crux_dev_is_device(d) || crux_dev_is_device(&h) || m.type != CRUX_TL_MEM_CUDA ||
        m.device != 0)
        FAIL(2);
    crux_dev_free(0, d);
    return 0;
}

/* Inputs without NaN or infinity, so the comparison is of rounding only. */
static void random_values(crux_dtype_t t, unsigned char *p, size_t n, unsigned seed)
{
    size_t esize = crux_dtype_size(t);
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        unsigned char *e = p + i * esize;
        if (t == CRUX_DT_FLOAT) {
            float f = (float)(rand() % 20001 - 10000) / 97.0f;
            memcpy(e, &f, 4);
        } else if (t == CRUX_DT_DOUBLE) {
            double f = (double)(rand() % 20001 - 10000) / 97.0;
            memcpy(e, &f, 8);
        } else if (t == CRUX_DT_FLOAT16 || t == CRUX_DT_BFLOAT16) {
            uint16_t exp_bits = t == CRUX_DT_FLOAT16 ? (uint16_t)((rand() % 20 + 5) << 10)
                                                     : (uint16_t)((rand() % 40 + 107) << 7);
            uint16_t h = (uint16_t)((rand() & 1) << 15 | exp_bits |
                                    (rand() & (t == CRUX_DT_FLOAT16 ? 0x3ff : 0x7f)));
            memcpy(e, &h, 2);
        } else if (t == CRUX_DT_BOOL) {
            e[0] = (unsigned char)(rand() & 1);
        } else {
            for (size_t b = 0; b < esize; b++) {
                e[b] = (unsigned char)rand();
            }
        }
    }
}

static int t_kernels(void)
{
    const size_t n = 100003;
    for (int t = 0; t < CRUX_DT_COUNT; t++) {
        size_t bytes = n * crux_dtype_size((crux_dtype_t)t);
        for (int o = 0; o < CRUX_OP_COUNT; o++) {
            if (!crux_dev_reduce_supported((crux_dtype_t)t, (crux_op_t)o)) {
                continue;
            }
            unsigned char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
                          *got = malloc(bytes);
            void *da, *db;
            random_values((crux_dtype_t)t, a, n, (unsigned)(t * 31 + o));
            random_values((crux_dtype_t)t, b, n, (unsigned)(t * 37 + o + 1));
            crux_reduce_lookup((crux_dtype_t)t, (crux_op_t)o)(want, a, b, n);
            if (crux_dev_alloc(0, bytes, &da) != CRUX_OK ||
                crux_dev_alloc(0, bytes, &db) != CRUX_OK ||
                crux_dev_copy(da, a, bytes) != CRUX_OK || crux_dev_copy(db, b, bytes) != CRUX_OK ||
                crux_dev_reduce(da, da, db, n, (crux_dtype_t)t, (crux_op_t)o) != CRUX_OK ||
                crux_dev_copy(got, da, bytes) != CRUX_OK) {
                fprintf(stderr, "# %s %s: CUDA call failed\n", crux_dtype_name(t), crux_op_name(o));
                return 1;
            }
            if (memcmp(got, want, bytes) != 0) {
                fprintf(stderr, "# %s %s: differs from the CPU kernel\n", crux_dtype_name(t),
                        crux_op_name(o));
                return 2;
            }
            crux_dev_free(0, da);
            crux_dev_free(0, db);
            free(a);
            free(b);
            free(want);
            free(got);
        }
    }
    return 0;
}

/* NaN inputs with payloads and signs, NaN with numbers and with infinities:
 * each floating-point kernel gives the CPU kernel's bits, and a NaN result is
 * the type's one quiet NaN (whatever the GPU's own NaN is). */
static int t_kernels_nan(void)
{
    static const uint32_t f32[] = { 0x7fc00001u, 0xffc12345u, 0x7f800001u, 0x3f800000u,
                                    0x7f800000u, 0xff800000u, 0x7fa00000u, 0xc0000000u };
    static const uint64_t f64[] = { 0x7ff8000000000001u, 0xfff8000000001234u, 0x7ff0000000000001u,
                                    0x3ff0000000000000u, 0x7ff0000000000000u, 0xfff0000000000000u,
                                    0x7ff4000000000000u, 0xc000000000000000u };
    static const uint16_t f16[] = { 0x7e01u, 0xfe23u, 0x7c01u, 0x3c00u,
                                    0x7c00u, 0xfc00u, 0x7d00u, 0xc000u };
    static const uint16_t bf16[] = { 0x7fc1u, 0xffc3u, 0x7f81u, 0x3f80u,
                                     0x7f80u, 0xff80u, 0x7fa0u, 0xc000u };
    static const struct {
        crux_dtype_t t;
        const void *v;
        uint64_t canon, inf;
    } types[] = { { CRUX_DT_FLOAT, f32, 0x7fc00000u, 0x7f800000u },
                  { CRUX_DT_DOUBLE, f64, 0x7ff8000000000000u, 0x7ff0000000000000u },
                  { CRUX_DT_FLOAT16, f16, 0x7e00u, 0x7c00u },
                  { CRUX_DT_BFLOAT16, bf16, 0x7fc0u, 0x7f80u } };
    enum { N = 8 };
    for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
        size_t esize = crux_dtype_size(types[k].t), bytes = N * N * esize;
        unsigned char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
                      *got = malloc(bytes);
        for (int i = 0; i < N * N; i++) { /* every ordered pair of the values */
            memcpy(a + i * esize, (const unsigned char *)types[k].v + (i / N) * esize, esize);
            memcpy(b + i * esize, (const unsigned char *)types[k].v + (i % N) * esize, esize);
        }
        for (int o = CRUX_OP_SUM; o <= CRUX_OP_MIN; o++) {
            void *da, *db;
            crux_reduce_lookup(types[k].t, (crux_op_t)o)(want, a, b, N * N);
            if (crux_dev_alloc(0, bytes, &da) != CRUX_OK ||
                crux_dev_alloc(0, bytes, &db) != CRUX_OK ||
                crux_dev_copy(da, a, bytes) != CRUX_OK || crux_dev_copy(db, b, bytes) != CRUX_OK ||
                crux_dev_reduce(da, da, db, N * N, types[k].t, (crux_op_t)o) != CRUX_OK ||
                crux_dev_copy(got, da, bytes) != CRUX_OK)
                FAIL(1);
            for (int i = 0; i < N * N; i++) {
                uint64_t w = 0, g = 0;
                memcpy(&w, want + i * esize, esize);
                memcpy(&g, got + i * esize, esize);
                uint64_t sign = 1ull << (esize * 8 - 1);
                int nan = (w & ~sign) > types[k].inf;
                if (g != w || (nan && w != types[k].canon)) {
                    fprintf(stderr, "# %s %s: element %d: device %#llx, CPU %#llx\n",
                            crux_dtype_name(types[k].t), crux_op_name(o), i, (unsigned long long)g,
                            (unsigned long long)w);
                    FAIL(2);
                }
            }
            crux_dev_free(0, da);
            crux_dev_free(0, db);
        }
        free(a);
        free(b);
        free(want);
        free(got);
    }
    return 0;
}

static int t_staging(void)
{
    const size_t bytes = (8u << 20) + 5;
    crux_dev_pinned_t *pin;
    void *src = device_pattern(0, bytes, 3), *dst;
    if (src == NULL || crux_dev_alloc(0, bytes, &dst) != CRUX_OK ||
        crux_dev_pinned_create(&pin) != CRUX_OK)
        FAIL(1);
    unsigned char *h = crux_dev_pinned_buffer(pin, 0, bytes);
    if (h == NULL || crux_dev_copy(h, src, bytes) != CRUX_OK ||
        h[bytes - 1] != pattern(bytes - 1, 3) || crux_dev_copy(dst, h, bytes) != CRUX_OK ||
        !device_holds(dst, bytes, 3))
        FAIL(2);
    crux_dev_pinned_destroy(pin);
    return 0;
}

static crux_tl_engine_t *cuda_engine_kinds(crux_tl_context_t **ctx, const char *calib_path,
                                           int peers, unsigned kinds)
{
    crux_tl_engine_config_t cfg = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    crux_tl_engine_t *e = NULL;
    cfg.kinds = kinds;
    cfg.max_peers = peers;
    cfg.calib_path = calib_path;
    if (crux_tl_context_open(NULL, ctx) != CRUX_OK ||
        crux_tl_engine_create(*ctx, &cfg, &e) != CRUX_OK) {
        return NULL;
    }
    return e;
}

static crux_tl_engine_t *cuda_engine(crux_tl_context_t **ctx, const char *calib_path, int peers)
{
    return cuda_engine_kinds(ctx, calib_path, peers, CRUX_TL_KINDS_CUDA);
}

/* Send sizes over each of 'nchan' CUDA channels alone and all together. */
static int device_transfers(crux_tl_pair_t *pair, int sends, int receives, int device,
                            uint32_t nchan)
{
    const size_t sizes[] = { 1, 4097, (1u << 20) + 3, (64u << 20) + 1 };
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (uint32_t c = 0; c <= nchan; c++) {
            crux_tl_xfer_params_t params = { .channels = c < nchan ? 1u << c : 0 };
            void *src = sends ? device_pattern(device, sizes[s], (unsigned)(s + c)) : NULL;
            void *dst = receives ? device_pattern(device, sizes[s], 0xff) : NULL;
            crux_tl_xfer_t *x = NULL, *y = NULL;
            if ((receives && crux_tl_recv(pair, dst, sizes[s], &params, &y) != CRUX_OK) ||
                (sends && crux_tl_send(pair, src, sizes[s], NULL, &x) != CRUX_OK) ||
                (y != NULL && crux_tl_xfer_wait(y) != CRUX_OK) ||
                (x != NULL && crux_tl_xfer_wait(x) != CRUX_OK)) {
                fprintf(stderr, "# %zu bytes over %#x failed\n", sizes[s], params.channels);
                return 1;
            }
            if (receives && !device_holds(dst, sizes[s], (unsigned)(s + c))) {
                fprintf(stderr, "# %zu bytes over %#x: wrong data\n", sizes[s], params.channels);
                return 2;
            }
            if (y != NULL && c == nchan && sizes[s] > (16u << 20)) {
                fprintf(stderr, "# %zu bytes: %u stripes, %.2f GB/s\n", sizes[s],
                        crux_tl_xfer_stats(y)->nstripes,
                        sizes[s] / crux_tl_xfer_stats(y)->elapsed / 1e9);
            }
            crux_tl_xfer_release(x);
            crux_tl_xfer_release(y);
            crux_dev_free(device, src);
            crux_dev_free(device, dst);
        }
    }
    return 0;
}

static int t_engine_loopback(void)
{
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_pair_t *pair;
    if (e == NULL || crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK)
        FAIL(1);
    int rc = device_transfers(pair, 1, 1, 0, 2);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

/* Without the topology's figures or a calibration, a transfer takes the
 * direct copy alone: staging through host memory at a guessed speed would
 * take a stripe of it whatever the real links. */
static int t_guessed_paths_unused(void)
{
    const size_t bytes = 64u << 20;
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_pair_t *pair;
    if (e == NULL || crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK)
        FAIL(1);
    void *src = device_pattern(0, bytes, 7), *dst = device_pattern(0, bytes, 0xff);
    crux_tl_xfer_t *x = NULL, *y = NULL;
    int rc = 0;
    if (src == NULL || dst == NULL || crux_tl_recv(pair, dst, bytes, NULL, &y) != CRUX_OK ||
        crux_tl_send(pair, src, bytes, NULL, &x) != CRUX_OK || crux_tl_xfer_wait(y) != CRUX_OK ||
        crux_tl_xfer_wait(x) != CRUX_OK || !device_holds(dst, bytes, 7)) {
        rc = 2;
    } else if (crux_tl_xfer_stats(y)->nstripes != 1) {
        fprintf(stderr, "# %u stripes without figures\n", crux_tl_xfer_stats(y)->nstripes);
        rc = 3;
    }
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    crux_dev_free(0, src);
    crux_dev_free(0, dst);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

/* The engine's kinds decide which CUDA channels a transfer may use. */
static int t_engine_kinds(void)
{
    const size_t bytes = 32u << 20;
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine_kinds(&ctx, "", 2, CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_HOST));
    crux_tl_pair_t *pair;
    void *src = device_pattern(0, bytes, 9), *dst = device_pattern(0, bytes, 0);
    crux_tl_xfer_t *x, *y;
    if (e == NULL || src == NULL || dst == NULL ||
        crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK ||
        crux_tl_recv(pair, dst, bytes, NULL, &y) != CRUX_OK ||
        crux_tl_send(pair, src, bytes, NULL, &x) != CRUX_OK || crux_tl_xfer_wait(y) != CRUX_OK ||
        crux_tl_xfer_wait(x) != CRUX_OK)
        FAIL(1);
    crux_tl_chan_attr_t attrs[4];
    const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(y);
    if (!device_holds(dst, bytes, 9) || st->nstripes != 1 ||
        crux_tl_pair_channels(pair, attrs, 4) < 1 ||
        attrs[st->stripe[0].channel].kind != CRUX_TL_CHAN_CUDA_HOST)
        FAIL(2);
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    crux_dev_free(0, src);
    crux_dev_free(0, dst);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return 0;
}

/* A path staged through a second GPU, next to the direct and host ones. */
#ifdef CRUX_HAVE_CUDA
/* The test is the application: it works on 'device' too (its primary
 * context retained, as the CUDA runtime does on first use), so crux may
 * run a relay hop there. */
static int app_uses(int device)
{
    CUdevice dev;
    CUcontext ctx;
    return crux_cuda()->DeviceGet(&dev, device) == CUDA_SUCCESS &&
           crux_cuda()->DevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS;
}
#endif

static int t_engine_relay(void)
{
#ifdef CRUX_HAVE_CUDA
    char gpu0[CRUX_CUDA_NAME_SIZE], gpu1[CRUX_CUDA_NAME_SIZE];
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_gpu_path_t paths[3] = {
        { .kind = CRUX_TL_CHAN_CUDA_IPC, .bandwidth = 100e9 },
        { .kind = CRUX_TL_CHAN_CUDA_PEER, .bandwidth = 50e9, .nrelays = 1 },
        { .kind = CRUX_TL_CHAN_CUDA_HOST, .bandwidth = 10e9 },
    };
    crux_tl_pair_t *pair;
    if (e == NULL || crux_cuda_name(0, gpu0) != 0 || crux_cuda_name(1, gpu1) != 0 || !app_uses(1))
        FAIL(1);
    memcpy(paths[1].relay[0], gpu1, sizeof(gpu1));
    if (crux_tl_engine_gpu_paths(e, gpu0, gpu0, paths, 3) != CRUX_OK ||
        crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK)
        FAIL(2);
    int rc = device_transfers(pair, 1, 1, 0, 3);
    crux_tl_chan_attr_t attrs[4];
    if (rc == 0 && (crux_tl_pair_channels(pair, attrs, 4) != 3 || attrs[1].hops != 2 ||
                    attrs[1].kind != CRUX_TL_CHAN_CUDA_PEER)) {
        rc = 3;
    }
    /* paths of a device pair in use cannot change */
    if (rc == 0 && crux_tl_engine_gpu_paths(e, gpu0, gpu0, paths, 2) != CRUX_ERR_INVALID) {
        rc = 4;
    }
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
#else
    return 1; /* a build without CUDA sees no GPU: never run */
#endif
}

/* Pinned host memory is made in the context of a GPU the process works on
 * (here GPU 1 alone), none made on GPU 0 for it. */
static int t_pinned_on_a_used_gpu(void)
{
#ifdef CRUX_HAVE_CUDA
    if (crux_cuda_context_active(0)) {
        return 0; /* something works on GPU 0 already: nothing to tell */
    }
    void *p = NULL;
    if (!app_uses(1) || crux_cuda_host_alloc(1u << 20, &p) != CRUX_OK || p == NULL)
        FAIL(1);
    memset(p, 7, 1u << 20);
    crux_cuda_host_free(p);
    if (crux_cuda_context_active(0)) {
        fprintf(stderr, "# a context made on GPU 0 for pinned memory\n");
        return 2;
    }
    return 0;
#else
    return 1; /* a build without CUDA sees no GPU: never run */
#endif
}

/* A relay GPU this process does not work on (another rank's): no relay
 * channel and no context made on it; the other paths carry the bytes. */
static int t_relay_unused(void)
{
#ifdef CRUX_HAVE_CUDA
    char gpu0[CRUX_CUDA_NAME_SIZE], gpu1[CRUX_CUDA_NAME_SIZE];
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_gpu_path_t paths[3] = {
        { .kind = CRUX_TL_CHAN_CUDA_IPC, .bandwidth = 100e9 },
        { .kind = CRUX_TL_CHAN_CUDA_PEER, .bandwidth = 50e9, .nrelays = 1 },
        { .kind = CRUX_TL_CHAN_CUDA_HOST, .bandwidth = 10e9 },
    };
    crux_tl_pair_t *pair;
    if (e == NULL || crux_cuda_name(0, gpu0) != 0 || crux_cuda_name(1, gpu1) != 0)
        FAIL(1);
    if (crux_cuda_context_active(1)) {
        return 0; /* a real driver where something else works on GPU 1 */
    }
    memcpy(paths[1].relay[0], gpu1, sizeof(gpu1));
    if (crux_tl_engine_gpu_paths(e, gpu0, gpu0, paths, 3) != CRUX_OK ||
        crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK)
        FAIL(2);
    int rc = device_transfers(pair, 1, 1, 0, 2);
    crux_tl_chan_attr_t attrs[4];
    for (unsigned i = 0, n = crux_tl_pair_channels(pair, attrs, 4); rc == 0 && i < n; i++) {
        if (attrs[i].kind == CRUX_TL_CHAN_CUDA_PEER) {
            fprintf(stderr, "# a relay channel through a GPU this process does not use\n");
            rc = 3;
        }
    }
    if (rc == 0 && crux_cuda_context_active(1)) {
        fprintf(stderr, "# crux made a context on the relay GPU\n");
        rc = 4;
    }
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
#else
    return 1; /* a build without CUDA sees no GPU: never run */
#endif
}

/* A relay GPU without peer access to the receiving one: the relay channel
 * is not built (a failed cuCtxEnablePeerAccess is not ignored) and the
 * other paths carry the bytes. */
static int t_relay_without_peer_access(void)
{
#ifdef CRUX_HAVE_CUDA
    const size_t bytes = 64u << 20;
    char gpu0[CRUX_CUDA_NAME_SIZE], gpu1[CRUX_CUDA_NAME_SIZE];
    crux_tl_context_t *ctx;
    setenv("MOCK_CUDA_NO_P2P", "0-1", 1); /* the stand-in's; a real driver decides itself */
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_gpu_path_t paths[3] = {
        { .kind = CRUX_TL_CHAN_CUDA_IPC, .bandwidth = 100e9 },
        { .kind = CRUX_TL_CHAN_CUDA_PEER, .bandwidth = 50e9, .nrelays = 1 },
        { .kind = CRUX_TL_CHAN_CUDA_HOST, .bandwidth = 10e9 },
    };
    crux_tl_pair_t *pair;
    int can = 1;
    if (e == NULL || crux_cuda_name(0, gpu0) != 0 || crux_cuda_name(1, gpu1) != 0 || !app_uses(1) ||
        crux_cuda()->DeviceCanAccessPeer(&can, 0, 1) != CUDA_SUCCESS)
        FAIL(1);
    if (can) {
        return 0; /* peer access here: nothing to check */
    }
    memcpy(paths[1].relay[0], gpu1, sizeof(gpu1));
    if (crux_tl_engine_gpu_paths(e, gpu0, gpu0, paths, 3) != CRUX_OK ||
        crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK)
        FAIL(2);
    void *src = device_pattern(0, bytes, 5), *dst = device_pattern(0, bytes, 0xff);
    crux_tl_xfer_t *x = NULL, *y = NULL;
    crux_tl_chan_attr_t attrs[4];
    int rc = 0;
    if (src == NULL || dst == NULL || crux_tl_recv(pair, dst, bytes, NULL, &y) != CRUX_OK ||
        crux_tl_send(pair, src, bytes, NULL, &x) != CRUX_OK || crux_tl_xfer_wait(y) != CRUX_OK ||
        crux_tl_xfer_wait(x) != CRUX_OK || !device_holds(dst, bytes, 5)) {
        rc = 3;
    }
    for (unsigned i = 0, n = crux_tl_pair_channels(pair, attrs, 4); rc == 0 && i < n; i++) {
        if (attrs[i].kind == CRUX_TL_CHAN_CUDA_PEER) {
            fprintf(stderr, "# a relay channel without peer access\n");
            rc = 4;
        }
    }
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    crux_dev_free(0, src);
    crux_dev_free(0, dst);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
#else
    return 1; /* a build without CUDA sees no GPU: never run */
#endif
}

static int two_process_body(fork_group_member_t *m, void *arg)
{
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    unsigned char card[FORK_GROUP_SLOT], cards[2][FORK_GROUP_SLOT];
    crux_tl_pair_t *pair;
    int device = m->rank % crux_dev_count();
    if (e == NULL || crux_tl_engine_card_pack(e, card) != CRUX_OK ||
        fork_group_allgather(card, cards, FORK_GROUP_SLOT, m) != 0 ||
        crux_tl_pair_connect(e, m->rank, 1 - m->rank, cards[1 - m->rank], &pair) != CRUX_OK) {
        return 10;
    }
    fork_group_barrier(m);
    int rc = device_transfers(pair, m->rank == 0, m->rank == 1, device, 2);
    fork_group_barrier(m);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

/* Eight 1 MiB allocations of the sender, kept (as a caching allocator
 * keeps its segments) until all are sent: the receiver, with room for three
 * in its cache, keeps at most three mapped (counted by the stand-in driver;
 * nothing to count on a real one). */
static int (*imports)(void); /* the stand-in's count of mapped imports */

static int cache_body(fork_group_member_t *m, void *arg)
{
    crux_tl_engine_config_t cfg = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    cfg.kinds = CRUX_TL_KINDS_CUDA;
    cfg.max_peers = 2;
    cfg.calib_path = "";
    cfg.ipc_cache_bytes = 3u << 20;
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = NULL;
    unsigned char card[FORK_GROUP_SLOT], cards[2][FORK_GROUP_SLOT];
    crux_tl_pair_t *pair;
    if (crux_tl_context_open(NULL, &ctx) != CRUX_OK ||
        crux_tl_engine_create(ctx, &cfg, &e) != CRUX_OK ||
        crux_tl_engine_card_pack(e, card) != CRUX_OK ||
        fork_group_allgather(card, cards, FORK_GROUP_SLOT, m) != 0 ||
        crux_tl_pair_connect(e, m->rank, 1 - m->rank, cards[1 - m->rank], &pair) != CRUX_OK) {
        return 10;
    }
    int rc = 0, most = 0;
    void *bufs[8] = { NULL };
    for (unsigned i = 0; i < 8; i++) {
        const size_t bytes = 1u << 20;
        void *buf = bufs[i] = device_pattern(0, bytes, m->rank == 0 ? i : 0xff);
        crux_tl_xfer_t *x = NULL;
        crux_status_t st = buf == NULL    ? CRUX_ERR_NO_MEMORY
                           : m->rank == 0 ? crux_tl_send(pair, buf, bytes, NULL, &x)
                                          : crux_tl_recv(pair, buf, bytes, NULL, &x);
        if (st != CRUX_OK || crux_tl_xfer_wait(x) != CRUX_OK ||
            (m->rank == 1 && !device_holds(buf, bytes, i))) {
            rc = 11;
        }
        crux_tl_xfer_release(x);
        fork_group_barrier(m);
        most = imports() > most ? imports() : most;
    }
    fork_group_barrier(m);
    for (unsigned i = 0; i < 8; i++) {
        crux_dev_free(0, bufs[i]);
    }
    if (m->rank == 1 && rc == 0 && most > 3) {
        fprintf(stderr, "# %d of the peer's allocations mapped at once\n", most);
        rc = 12;
    }
    fork_group_barrier(m);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

static int t_import_cache_bounded(void)
{
    const char *path = getenv("CRUX_CUDA_LIBRARY");
    void *lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (lib != NULL) {
        *(void **)&imports = dlsym(lib, "mock_cuda_imports");
    }
    return imports == NULL ? 0 : fork_group_run(2, cache_body, NULL);
}

static int t_engine_two_processes(void)
{
    return fork_group_run(2, two_process_body, NULL);
}

static int allreduce_body(fork_group_member_t *m, void *arg)
{
    int procs = *(int *)arg, device = m->rank % crux_dev_count();
    const size_t n = (4u << 20) + 3;
    crux_engine_group_config_t cfg = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    cfg.calibrate = 0;
    cfg.engine.kinds = CRUX_TL_KINDS_CUDA;
    cfg.engine.calib_path = "";
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_engine_group_t *g;
    if (crux_engine_group_create(&oob, &cfg, &g) != CRUX_OK) {
        return 10;
    }
    float *in = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float)),
          *got = malloc(n * sizeof(float));
    for (int p = 0; p < procs; p++) {
        for (size_t i = 0; i < n; i++) {
            float v = (float)((i * 7 + (size_t)p * 13) % 1000) / 8.0f;
            if (p == m->rank) {
                in[i] = v;
            }
            want[i] = p == 0 ? v : want[i] + v; /* rank order, as the owners reduce */
        }
    }
    void *d;
    int rc = 0;
    for (int in_place = 0; in_place <= 1 && rc == 0; in_place++) {
        void *s = NULL;
        if (crux_dev_alloc(device, n * sizeof(float), &d) != CRUX_OK ||
            (!in_place && crux_dev_alloc(device, n * sizeof(float), &s) != CRUX_OK) ||
            crux_dev_copy(in_place ? d : s, in, n * sizeof(float)) != CRUX_OK ||
            crux_engine_allreduce(g, s, d, n, CRUX_DT_FLOAT, CRUX_OP_SUM) != CRUX_OK ||
            crux_dev_copy(got, d, n * sizeof(float)) != CRUX_OK) {
            rc = 11;
        } else if (memcmp(got, want, n * sizeof(float)) != 0) {
            rc = 12;
        }
        crux_dev_free(device, d);
        crux_dev_free(device, s);
    }
    crux_engine_group_destroy(g);
    free(in);
    free(want);
    free(got);
    return rc;
}

static int t_device_allreduce(void)
{
    for (int procs = 2; procs <= 4; procs++) {
        if (fork_group_run(procs, allreduce_body, &procs) != 0) {
            fprintf(stderr, "# %d processes failed\n", procs);
            return 1;
        }
    }
    return 0;
}

static int t_calibration(void)
{
    char path[64] = "/tmp/crux-cuda-calib-XXXXXX", line[256];
    int fd = mkstemp(path);
    if (fd < 0)
        FAIL(1);
    close(fd);
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, path, 2);
    if (e == NULL || crux_tl_engine_calibrate_cuda(e, 0, 0, 1) != CRUX_OK)
        FAIL(2);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        double bw;
        char sig[128];
        if (sscanf(line, "%127s %lf", sig, &bw) == 2 && bw > 0) {
            found |= strncmp(sig, "cuda-ipc:", 9) == 0     ? 1
                     : strncmp(sig, "cuda-host:", 10) == 0 ? 2
                                                           : 0;
            fprintf(stderr, "# %s", line);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    unlink(path);
    strcat(path, ".lock"); /* the cache's lock file (path has room: mkstemp's name + 5) */
    unlink(path);
    return found == 3 ? 0 : 3;
}

/* A function of the stand-in driver (counters, for tests), NULL on a real one. */
static void *mock_sym(const char *name)
{
    const char *path = getenv("CRUX_CUDA_LIBRARY");
    void *lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    return lib != NULL ? dlsym(lib, name) : NULL;
}

/* Chunks on one stream finish in order: a poll tests the oldest chunk of the
 * stream and stops at the first unfinished one, so over the host-staged
 * channel (one final stream) a transfer makes at most one event query per
 * chunk and one per poll; testing every chunk in flight made up to four per
 * poll. */
static int t_polls_in_order(void)
{
    const size_t bytes = 16u << 20;
    unsigned long (*queries)(void) = mock_sym("mock_cuda_queries");
    if (queries == NULL) {
        return 0; /* a real driver: nothing counts its queries */
    }
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_pair_t *pair;
    if (e == NULL || crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK)
        FAIL(1);
    void *src = device_pattern(0, bytes, 5), *dst = device_pattern(0, bytes, 0xff);
    crux_tl_xfer_params_t params = { .chunk = 64u << 10, .channels = 1u << 1 }; /* cuda-host */
    crux_tl_xfer_t *x = NULL, *y = NULL;
    if (src == NULL || dst == NULL || crux_tl_recv(pair, dst, bytes, &params, &y) != CRUX_OK ||
        crux_tl_send(pair, src, bytes, NULL, &x) != CRUX_OK)
        FAIL(2);
    unsigned long before = queries(), polls = 0;
    while (!crux_tl_xfer_done(x) || !crux_tl_xfer_done(y)) {
        crux_tl_engine_progress(e);
        polls++;
    }
    unsigned long made = queries() - before, chunks = bytes / params.chunk;
    int rc = 0;
    if (crux_tl_xfer_status(y) != CRUX_OK || !device_holds(dst, bytes, 5)) {
        rc = 3;
    } else if (made > chunks + polls) {
        fprintf(stderr, "# %lu event queries for %lu chunks in %lu polls\n", made, chunks, polls);
        rc = 4;
    }
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    crux_dev_free(0, src);
    crux_dev_free(0, dst);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

/* A push is one driver call: each device's primary context is retained
 * once, not on every push (counted by the stand-in driver; nothing to
 * count on a real one). */
static int t_contexts_cached(void)
{
    int (*retains)(int) = mock_sym("mock_cuda_retains");
    if (retains == NULL) {
        return 0;
    }
    for (int i = 0; i < 100; i++) {
        if (crux_cuda_push(0) != CRUX_OK)
            FAIL(1);
        crux_cuda_pop();
    }
    void *d;
    if (crux_dev_alloc(0, 64, &d) != CRUX_OK)
        FAIL(2);
    crux_dev_free(0, d);
    if (retains(0) != 1) {
        fprintf(stderr, "# device 0's primary context retained %d times\n", retains(0));
        return 3;
    }
    return 0;
}

/* One transfer within this process from a buffer on device 'from' to one on
 * device 'to', over the channels in 'channels' (0: the plan's); the share
 * of its bytes each channel kind carried goes to share[kind]. */
static int cross_transfer(crux_tl_engine_t *e, int from, int to, size_t bytes, uint32_t channels,
                          double share[CRUX_TL_CHAN_KIND_COUNT])
{
    crux_tl_pair_t *pair;
    crux_tl_xfer_params_t params = { .channels = channels };
    void *src = device_pattern(from, bytes, 11), *dst = device_pattern(to, bytes, 0xff);
    crux_tl_xfer_t *x = NULL, *y = NULL;
    crux_tl_chan_attr_t attrs[CRUX_TL_MAX_PATHS];
    int rc = 0;
    if (src == NULL || dst == NULL || crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK) {
        return 1;
    }
    if (crux_tl_recv(pair, dst, bytes, &params, &y) != CRUX_OK ||
        crux_tl_send(pair, src, bytes, NULL, &x) != CRUX_OK || crux_tl_xfer_wait(y) != CRUX_OK ||
        crux_tl_xfer_wait(x) != CRUX_OK || !device_holds(dst, bytes, 11)) {
        rc = 2;
    } else {
        const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(y);
        unsigned n = crux_tl_pair_channels(pair, attrs, CRUX_TL_MAX_PATHS);
        for (int k = 0; k < CRUX_TL_CHAN_KIND_COUNT; k++) {
            share[k] = 0;
        }
        for (unsigned i = 0; i < st->nstripes; i++) {
            if (st->stripe[i].channel < n) {
                share[attrs[st->stripe[i].channel].kind] += (double)st->stripe[i].bytes / bytes;
            }
        }
    }
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    crux_dev_free(from, src);
    crux_dev_free(to, dst);
    crux_tl_pair_disconnect(pair);
    return rc;
}

/* Staging through host memory runs its first hop (device to host) in the
 * sending GPU's context, so the bytes cross its link, and its second in the
 * receiving GPU's: both hops on the receiver's streams made its link carry
 * the stripe twice.  The stand-in counts the copies by context. */
static int t_host_hops(void)
{
    unsigned long (*copies)(int, int, int) = mock_sym("mock_cuda_copies");
    double share[CRUX_TL_CHAN_KIND_COUNT];
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine_kinds(&ctx, "", 2, CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_HOST));
    if (e == NULL || cross_transfer(e, 0, 1, 16u << 20, 0, share) != 0 ||
        share[CRUX_TL_CHAN_CUDA_HOST] != 1.0)
        FAIL(1);
    int rc = 0;
    if (copies != NULL &&
        (copies(0, 0, -1) == 0 || copies(1, -1, 1) == 0 || copies(1, 0, -1) != 0)) {
        fprintf(stderr,
                "# device to host by GPU 0 %lu, by GPU 1 %lu; host to device by GPU 1 %lu\n",
                copies(0, 0, -1), copies(1, 0, -1), copies(1, -1, 1));
        rc = 2;
    }
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

/* The same between processes: the sender's process runs the first hop
 * (its GPU into its pinned stage), the receiver's the second, and the
 * receiver copies nothing out of the sender's GPU. */
static int host_hops_body(fork_group_member_t *m, void *arg)
{
    unsigned long (*copies)(int, int, int) = mock_sym("mock_cuda_copies");
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine_kinds(&ctx, "", 2, CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_HOST));
    unsigned char card[FORK_GROUP_SLOT], cards[2][FORK_GROUP_SLOT];
    crux_tl_pair_t *pair;
    const size_t bytes = 8u << 20;
    if (e == NULL || crux_tl_engine_card_pack(e, card) != CRUX_OK ||
        fork_group_allgather(card, cards, FORK_GROUP_SLOT, m) != 0 ||
        crux_tl_pair_connect(e, m->rank, 1 - m->rank, cards[1 - m->rank], &pair) != CRUX_OK) {
        return 10;
    }
    void *buf = device_pattern(m->rank, bytes, m->rank == 0 ? 21 : 0xff);
    crux_tl_xfer_t *x = NULL;
    crux_status_t st = buf == NULL    ? CRUX_ERR_NO_MEMORY
                       : m->rank == 0 ? crux_tl_send(pair, buf, bytes, NULL, &x)
                                      : crux_tl_recv(pair, buf, bytes, NULL, &x);
    int rc = 0;
    if (st != CRUX_OK || crux_tl_xfer_wait(x) != CRUX_OK ||
        (m->rank == 1 && !device_holds(buf, bytes, 21))) {
        rc = 11;
    } else if (m->rank == 1 && copies != NULL &&
               (copies(0, 0, -1) != 0 || copies(1, 0, -1) != 0 || copies(1, -1, 1) == 0)) {
        fprintf(stderr, "# receiver: device to host by GPU 0 %lu, by GPU 1 %lu\n", copies(0, 0, -1),
                copies(1, 0, -1));
        rc = 12;
    } else if (m->rank == 0 && copies != NULL && copies(0, 0, -1) == 0) {
        fprintf(stderr, "# sender: no copy from its GPU to pinned host memory\n");
        rc = 13;
    }
    crux_tl_xfer_release(x);
    fork_group_barrier(m);
    crux_dev_free(m->rank, buf);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

static int t_host_hops_two_processes(void)
{
    return fork_group_run(2, host_hops_body, NULL);
}

/* The index of the pair's channel of that kind, -1 if none. */
static int channel_of_kind(crux_tl_pair_t *pair, crux_tl_chan_kind_t kind)
{
    crux_tl_chan_attr_t attrs[CRUX_TL_MAX_PATHS];
    unsigned n = crux_tl_pair_channels(pair, attrs, CRUX_TL_MAX_PATHS);
    for (unsigned i = 0; i < n && i < CRUX_TL_MAX_PATHS; i++) {
        if (attrs[i].kind == kind) {
            return (int)i;
        }
    }
    return -1;
}

/* One transfer from rank 0 to rank 1, each on its device 0; 0 when it went
 * and the bytes are exact.  'stripes': the receive's, or NULL. */
static int one_way(fork_group_member_t *m, crux_tl_pair_t *pair, size_t bytes, unsigned salt,
                   const crux_tl_xfer_params_t *params, unsigned *stripes)
{
    void *buf = device_pattern(0, bytes, m->rank == 0 ? salt : 0xff);
    crux_tl_xfer_t *x = NULL;
    crux_status_t st = buf == NULL    ? CRUX_ERR_NO_MEMORY
                       : m->rank == 0 ? crux_tl_send(pair, buf, bytes, NULL, &x)
                                      : crux_tl_recv(pair, buf, bytes, params, &x);
    int rc = st != CRUX_OK || crux_tl_xfer_wait(x) != CRUX_OK ||
             (m->rank == 1 && !device_holds(buf, bytes, salt));
    if (rc == 0 && stripes != NULL && m->rank == 1) {
        *stripes = crux_tl_xfer_stats(x)->nstripes;
    }
    if (rc != 0) {
        fprintf(stderr, "# rank %d: %zu bytes, chunk %zu: %s\n", m->rank, bytes,
                params != NULL ? params->chunk : 0,
                st != CRUX_OK ? "not posted" : "failed or wrong");
    }
    crux_tl_xfer_release(x);
    crux_dev_free(0, buf);
    return rc;
}

/* Each process sees only its own GPU (CUDA_VISIBLE_DEVICES, the stand-in's
 * MOCK_CUDA_VISIBLE), the receiver a third one as well, which the
 * topology's paths name as a relay: cuda-host is built, staged by the
 * sender, and carries exact bytes at every size and chunk size, two
 * transfers sharing the stage at once, and beside the direct copy; the
 * relay is not built (its first hop would need the sender's GPU here), and
 * neither process touches the other's GPU. */
static int visible_alone_body(fork_group_member_t *m, void *arg)
{
    setenv("MOCK_CUDA_VISIBLE", m->rank == 0 ? "0" : "1,2", 1); /* before any device is named */
    unsigned long (*copies)(int, int, int) = mock_sym("mock_cuda_copies");
    int (*retains)(int) = mock_sym("mock_cuda_retains");
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    unsigned char card[FORK_GROUP_SLOT], cards[2][FORK_GROUP_SLOT];
    char names[2][CRUX_CUDA_NAME_SIZE], mine[CRUX_CUDA_NAME_SIZE], relay[CRUX_CUDA_NAME_SIZE];
    crux_tl_pair_t *pair;
    if (e == NULL || crux_dev_count() != 1 + m->rank || crux_cuda_name(0, mine) != 0 ||
        fork_group_allgather(mine, names, sizeof(mine), m) != 0 ||
        crux_tl_engine_card_pack(e, card) != CRUX_OK ||
        fork_group_allgather(card, cards, FORK_GROUP_SLOT, m) != 0 ||
        crux_tl_pair_connect(e, m->rank, 1 - m->rank, cards[1 - m->rank], &pair) != CRUX_OK) {
        return 10;
    }
    if (m->rank == 1) {
        crux_tl_gpu_path_t paths[3] = {
            { .kind = CRUX_TL_CHAN_CUDA_IPC, .bandwidth = 10e9 },
            { .kind = CRUX_TL_CHAN_CUDA_PEER, .bandwidth = 10e9, .nrelays = 1 },
            { .kind = CRUX_TL_CHAN_CUDA_HOST, .bandwidth = 10e9 },
        };
        if (crux_cuda_name(1, relay) != 0 || crux_cuda_device_named(names[0]) != -1)
            FAIL(11);
        memcpy(paths[1].relay[0], relay, sizeof(relay));
        if (crux_tl_engine_gpu_paths(e, names[0], names[1], paths, 3) != CRUX_OK)
            FAIL(12);
    }
    /* the topology's figures: half of a large transfer each way */
    unsigned stripes = 0;
    if (one_way(m, pair, (32u << 20) + 5, 1, NULL, &stripes) != 0)
        FAIL(13);
    int host = channel_of_kind(pair, CRUX_TL_CHAN_CUDA_HOST);
    if (m->rank == 1 &&
        (host < 0 || stripes != 2 || channel_of_kind(pair, CRUX_TL_CHAN_CUDA_PEER) >= 0)) {
        fprintf(stderr, "# cuda-host channel %d, %u stripes, relay channel %d\n", host, stripes,
                channel_of_kind(pair, CRUX_TL_CHAN_CUDA_PEER));
        return 14;
    }
    const size_t sizes[] = { 0, 1, 63, 4097, 2u << 20, (2u << 20) + 1, (9u << 20) + 7 };
    const size_t chunks[] = { 0, 65537, 1000003 };
    for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            crux_tl_xfer_params_t params = { .chunk = chunks[c],
                                             .channels = host >= 0 ? 1u << host : 0 };
            if (one_way(m, pair, sizes[s], (unsigned)(2 + s + 7 * c), &params, NULL) != 0)
                FAIL(15);
        }
    }
    /* two transfers in flight at once share the stage's slots */
    const size_t bytes = (5u << 20) + 3;
    crux_tl_xfer_params_t params = { .chunk = 1u << 20, .channels = host >= 0 ? 1u << host : 0 };
    void *buf[2];
    crux_tl_xfer_t *x[2] = { NULL, NULL };
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        buf[i] = device_pattern(0, bytes, m->rank == 0 ? 40u + i : 0xff);
        if (buf[i] == NULL ||
            (m->rank == 0 ? crux_tl_send(pair, buf[i], bytes, NULL, &x[i])
                          : crux_tl_recv(pair, buf[i], bytes, &params, &x[i])) != CRUX_OK) {
            rc = 16;
        }
    }
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (crux_tl_xfer_wait(x[i]) != CRUX_OK ||
            (m->rank == 1 && !device_holds(buf[i], bytes, 40u + i))) {
            rc = 17;
        }
    }
    for (int i = 0; i < 2; i++) {
        crux_tl_xfer_release(x[i]);
        crux_dev_free(0, buf[i]);
    }
    /* which GPU copied what (physical devices): the sender's into pinned
     * host memory in the sender, the receiver's out of it in the receiver */
    if (rc == 0 && copies != NULL && m->rank == 0 && copies(0, 0, -1) == 0) {
        fprintf(stderr, "# sender: no copy from its GPU to pinned host memory\n");
        rc = 18;
    }
    if (rc == 0 && copies != NULL && m->rank == 1 &&
        (copies(1, -1, 1) == 0 || copies(0, 0, -1) != 0 || copies(1, 0, -1) != 0 ||
         retains(0) != 0 || retains(2) != 0)) {
        fprintf(stderr, "# receiver: host to GPU 1 %lu, contexts on GPU 0 %d, on the relay %d\n",
                copies(1, -1, 1), retains(0), retains(2));
        rc = 19;
    }
    fork_group_barrier(m);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

static int t_host_staged_visible_alone(void)
{
    if (mock_sym("mock_cuda_copies") == NULL) {
        return 0; /* a real driver's visible devices are fixed before the test runs */
    }
    setenv("MOCK_CUDA_DEVICES", "3", 1);
    return fork_group_run(2, visible_alone_body, NULL);
}

/* A relay GPU that the receiving process does not see (the sender's GPU
 * it does): the relay channel is not built, the direct copy carries the
 * bytes.  The sender sees the relay GPU, and names it. */
static int relay_unseen_body(fork_group_member_t *m, void *arg)
{
    setenv("MOCK_CUDA_VISIBLE", m->rank == 0 ? "0,2" : "0,1", 1);
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    unsigned char card[FORK_GROUP_SLOT], cards[2][FORK_GROUP_SLOT];
    char names[2][2][CRUX_CUDA_NAME_SIZE], mine[2][CRUX_CUDA_NAME_SIZE];
    crux_tl_pair_t *pair;
    if (e == NULL || crux_cuda_name(0, mine[0]) != 0 || crux_cuda_name(1, mine[1]) != 0 ||
        fork_group_allgather(mine, names, sizeof(mine), m) != 0 ||
        crux_tl_engine_card_pack(e, card) != CRUX_OK ||
        fork_group_allgather(card, cards, FORK_GROUP_SLOT, m) != 0 ||
        crux_tl_pair_connect(e, m->rank, 1 - m->rank, cards[1 - m->rank], &pair) != CRUX_OK) {
        return 10;
    }
    /* rank 0 sends from its ordinal 0 (GPU 0) to rank 1's ordinal 1 (GPU 1),
     * through GPU 2, which only rank 0 sees */
    const size_t bytes = (4u << 20) + 1;
    int device = m->rank == 0 ? 0 : 1;
    if (m->rank == 1) {
        crux_tl_gpu_path_t paths[2] = {
            { .kind = CRUX_TL_CHAN_CUDA_IPC, .bandwidth = 10e9 },
            { .kind = CRUX_TL_CHAN_CUDA_PEER, .bandwidth = 10e9, .nrelays = 1 },
        };
        memcpy(paths[1].relay[0], names[0][1], CRUX_CUDA_NAME_SIZE);
        if (crux_cuda_device_named(names[0][0]) != 0 || crux_cuda_device_named(names[0][1]) != -1 ||
            crux_tl_engine_gpu_paths(e, names[0][0], mine[1], paths, 2) != CRUX_OK)
            FAIL(11);
    }
    void *buf = device_pattern(device, bytes, m->rank == 0 ? 31 : 0xff);
    crux_tl_xfer_t *x = NULL;
    int rc = 0;
    if (buf == NULL ||
        (m->rank == 0 ? crux_tl_send(pair, buf, bytes, NULL, &x)
                      : crux_tl_recv(pair, buf, bytes, NULL, &x)) != CRUX_OK ||
        crux_tl_xfer_wait(x) != CRUX_OK || (m->rank == 1 && !device_holds(buf, bytes, 31))) {
        rc = 12;
    } else if (m->rank == 1 && (channel_of_kind(pair, CRUX_TL_CHAN_CUDA_PEER) >= 0 ||
                                crux_tl_xfer_stats(x)->nstripes != 1)) {
        fprintf(stderr, "# a relay channel through a GPU the receiver does not see\n");
        rc = 13;
    }
    crux_tl_xfer_release(x);
    fork_group_barrier(m);
    crux_dev_free(device, buf);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

static int t_relay_unseen(void)
{
    if (mock_sym("mock_cuda_copies") == NULL) {
        return 0; /* a real driver's visible devices are fixed before the test runs */
    }
    setenv("MOCK_CUDA_DEVICES", "3", 1);
    return fork_group_run(2, relay_unseen_body, NULL);
}

/* The sender dies with its stage half sent: the receiver fails with
 * CRUX_ERR_PEER (it does not wait for the rest forever). */
static int sender_dies_body(fork_group_member_t *m, void *arg)
{
    setenv("MOCK_CUDA_VISIBLE", m->rank == 0 ? "0" : "1", 1);
    unsigned long (*copies)(int, int, int) = mock_sym("mock_cuda_copies");
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine_kinds(&ctx, "", 2, CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_HOST));
    unsigned char card[FORK_GROUP_SLOT], cards[2][FORK_GROUP_SLOT];
    crux_tl_pair_t *pair;
    const size_t bytes = 64u << 20;
    if (e == NULL || crux_tl_engine_card_pack(e, card) != CRUX_OK ||
        fork_group_allgather(card, cards, FORK_GROUP_SLOT, m) != 0 ||
        crux_tl_pair_connect(e, m->rank, 1 - m->rank, cards[1 - m->rank], &pair) != CRUX_OK) {
        return 10;
    }
    void *buf = device_pattern(0, bytes, 3);
    crux_tl_xfer_params_t params = { .chunk = 1u << 20 };
    crux_tl_xfer_t *x = NULL;
    if (buf == NULL || (m->rank == 0 ? crux_tl_send(pair, buf, bytes, NULL, &x)
                                     : crux_tl_recv(pair, buf, bytes, &params, &x)) != CRUX_OK) {
        return 11;
    }
    if (m->rank == 0) {
        /* two chunks on their way into the stage, then gone: a progress
         * call stages at most four of the 64 */
        while (copies(0, 0, -1) < 2 && !crux_tl_xfer_done(x)) {
            crux_tl_engine_progress(e);
        }
        return crux_tl_xfer_done(x) ? 12 : 0;
    }
    crux_status_t st = crux_tl_xfer_wait(x);
    if (st != CRUX_ERR_PEER) {
        fprintf(stderr, "# receiver: %d, not CRUX_ERR_PEER\n", (int)st);
        return 13;
    }
    crux_tl_xfer_release(x);
    crux_dev_free(0, buf);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return 0;
}

static int t_host_staged_sender_dies(void)
{
    if (mock_sym("mock_cuda_copies") == NULL) {
        return 0; /* the stand-in's counters tell when the sender is half done */
    }
    return fork_group_run(2, sender_dies_body, NULL);
}

/* A relay path from GPU 0 to GPU 2 through GPU 1: the first hop runs in
 * GPU 0's context (it pushes to the relay), the relay hop in GPU 1's, and
 * none in the receiver's; with no peer access from the relay to the
 * receiver the channel is not built.  Three devices: the stand-in's (a real
 * machine with fewer has nothing to check). */
static int t_relay_hops(void)
{
#ifdef CRUX_HAVE_CUDA
    unsigned long (*copies)(int, int, int) = mock_sym("mock_cuda_copies");
    if (copies != NULL) {
        setenv("MOCK_CUDA_DEVICES", "3", 1); /* read on every call; names are looked up later */
    }
    if (crux_dev_count() < 3) {
        return copies != NULL ? 1 : 0;
    }
    char gpu[3][CRUX_CUDA_NAME_SIZE];
    for (int d = 0; d < 3; d++) {
        if (crux_cuda_name(d, gpu[d]) != 0 || !app_uses(d))
            FAIL(1);
    }
    crux_tl_gpu_path_t paths[2] = {
        { .kind = CRUX_TL_CHAN_CUDA_IPC, .bandwidth = 100e9 },
        { .kind = CRUX_TL_CHAN_CUDA_PEER, .bandwidth = 50e9, .nrelays = 1 },
    };
    memcpy(paths[1].relay[0], gpu[1], sizeof(gpu[1]));
    double share[CRUX_TL_CHAN_KIND_COUNT];
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    if (e == NULL || crux_tl_engine_gpu_paths(e, gpu[0], gpu[2], paths, 2) != CRUX_OK ||
        cross_transfer(e, 0, 2, 16u << 20, 1u << 1, share) != 0 ||
        share[CRUX_TL_CHAN_CUDA_PEER] != 1.0)
        FAIL(2);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    /* each hop's GPU has peer access to the next one (the relay's to the
     * receiver's too, not only the sender's to the relay) */
    int (*enabled)(int, int) = mock_sym("mock_cuda_peer_enabled");
    if (enabled != NULL && (!enabled(0, 1) || !enabled(1, 2))) {
        fprintf(stderr, "# peer access 0>1 %d, 1>2 %d\n", enabled(0, 1), enabled(1, 2));
        return 6;
    }
    if (copies != NULL && (copies(0, 0, 1) == 0 || copies(1, 1, 2) == 0 || copies(2, 0, 1) != 0 ||
                           copies(2, 1, 2) != 0)) {
        fprintf(stderr, "# 0>1 by GPU 0 %lu, by GPU 2 %lu; 1>2 by GPU 1 %lu, by GPU 2 %lu\n",
                copies(0, 0, 1), copies(2, 0, 1), copies(1, 1, 2), copies(2, 1, 2));
        return 3;
    }
    if (copies == NULL) {
        return 0; /* a real driver decides peer access itself */
    }
    setenv("MOCK_CUDA_NO_P2P", "1-2", 1);
    crux_tl_chan_attr_t attrs[4];
    crux_tl_pair_t *pair;
    e = cuda_engine(&ctx, "", 2);
    if (e == NULL || crux_tl_engine_gpu_paths(e, gpu[0], gpu[2], paths, 2) != CRUX_OK ||
        cross_transfer(e, 0, 2, 16u << 20, 0, share) != 0 ||
        crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK)
        FAIL(4);
    int rc = 0;
    for (unsigned i = 0, n = crux_tl_pair_channels(pair, attrs, 4); i < n; i++) {
        if (attrs[i].kind == CRUX_TL_CHAN_CUDA_PEER) {
            fprintf(stderr, "# a relay channel without peer access from the relay\n");
            rc = 5;
        }
    }
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
#else
    return 1; /* a build without CUDA sees no GPU: never run */
#endif
}

/* Two GPUs joined by NVLink, at the stand-in's PCI bus ids. */
static const char two_gpus_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    " <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\" "
    "allowed_cpuset=\"0x00000003\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
    "allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
    "  <object type=\"Package\" os_index=\"0\" cpuset=\"0x00000003\" "
    "complete_cpuset=\"0x00000003\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"2\">\n"
    "   <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000003\" "
    "complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
    "gp_index=\"3\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"Core\" os_index=\"0\" cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"4\">\n"
    "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"5\"/>\n"
    "    <object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"6\"/>\n"
    "   </object>\n"
    "   <object type=\"Bridge\" gp_index=\"7\" bridge_type=\"0-1\" depth=\"0\" "
    "bridge_pci=\"0000:[00-11]\">\n"
    "    <object type=\"Bridge\" gp_index=\"8\" bridge_type=\"1-1\" depth=\"1\" "
    "bridge_pci=\"0000:[01-11]\" pci_busid=\"0000:00:01.0\" "
    "pci_type=\"0604 [8086:0001] [0000:0000] 00\" pci_link_speed=\"15.753846\">\n"
    "     <object type=\"PCIDev\" gp_index=\"9\" pci_busid=\"0000:10:00.0\" "
    "pci_type=\"0302 [10de:20b0] [10de:134f] a1\" pci_link_speed=\"15.753846\">\n"
    "      <object type=\"OSDev\" gp_index=\"10\" name=\"cuda0\" subtype=\"CUDA\" "
    "osdev_type=\"5\">\n"
    "       <info name=\"GPUModel\" value=\"NVIDIA A100-SXM4-40GB\"/>\n"
    "      </object>\n"
    "     </object>\n"
    "     <object type=\"PCIDev\" gp_index=\"11\" pci_busid=\"0000:11:00.0\" "
    "pci_type=\"0302 [10de:20b0] [10de:134f] a1\" pci_link_speed=\"15.753846\">\n"
    "      <object type=\"OSDev\" gp_index=\"12\" name=\"cuda1\" subtype=\"CUDA\" "
    "osdev_type=\"5\">\n"
    "       <info name=\"GPUModel\" value=\"NVIDIA A100-SXM4-40GB\"/>\n"
    "      </object>\n"
    "     </object>\n"
    "    </object>\n"
    "   </object>\n"
    "  </object>\n"
    " </object>\n"
    " <distances2hetero nbobjs=\"2\" kind=\"25\" name=\"NVLinkBandwidth\">\n"
    "  <indexes length=\"19\">PCIDev:9 PCIDev:11 </indexes>\n"
    "  <u64values length=\"28\">1000000 50000 50000 1000000 </u64values>\n"
    " </distances2hetero>\n"
    "</topology>\n";

static crux_topo_t *two_gpus_topo(void)
{
    crux_topo_options_t opts;
    crux_topo_t *topo = NULL;
    char err[256];
    crux_topo_options_init(&opts);
    opts.xml_text = two_gpus_xml;
    opts.xml_len = sizeof(two_gpus_xml) - 1;
    if (crux_topo_load(&opts, &topo, err, sizeof(err)) != CRUX_OK) {
        fprintf(stderr, "# %s\n", err);
        return NULL;
    }
    return topo;
}

/* An engine group given the topology stripes a transfer between its two
 * GPUs as the topology's figures say: the direct NVLink path and staging
 * through host memory in proportion to their bandwidths (without them, the
 * direct copy carries it all).  Under MIG the two devices share the PCI bus
 * id the topology names them by: no figures, the direct copy alone. */
static int topo_body(fork_group_member_t *m, void *arg)
{
    crux_topo_t *topo = two_gpus_topo();
    const crux_topo_pathset_t *set = topo != NULL ? crux_topo_multipath(topo, 0, 1) : NULL;
    crux_engine_group_config_t cfg = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    cfg.calibrate = 0;
    cfg.engine.calib_path = "";
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_engine_group_t *g;
    if (set == NULL || crux_engine_group_create(&oob, &cfg, &g) != CRUX_OK ||
        crux_engine_group_use_topo(g, topo) != CRUX_OK) {
        return 10;
    }
    double want[CRUX_TL_CHAN_KIND_COUNT] = { 0 }, total = 0, share[CRUX_TL_CHAN_KIND_COUNT];
    for (int i = 0; i < set->npaths; i++) {
        int kind = set->paths[i].kind == CRUX_TOPO_PATH_HOST ? CRUX_TL_CHAN_CUDA_HOST
                                                             : CRUX_TL_CHAN_CUDA_IPC;
        want[kind] += set->paths[i].gbps;
        total += set->paths[i].gbps;
    }
    int mig = *(int *)arg, rc = 0;
    if (cross_transfer(crux_engine_group_engine(g), 0, 1, 64u << 20, 0, share) != 0) {
        rc = 11;
    }
    for (int k = 0; rc == 0 && k < CRUX_TL_CHAN_KIND_COUNT; k++) {
        double expect = mig ? k == CRUX_TL_CHAN_CUDA_IPC : want[k] / total;
        if (fabs(share[k] - expect) > 0.05) {
            fprintf(stderr, "# %s: %.3f of the bytes, %.3f expected\n",
                    crux_tl_chan_kind_name((crux_tl_chan_kind_t)k), share[k], expect);
            rc = 12;
        }
    }
    crux_engine_group_destroy(g);
    crux_topo_free(topo);
    return rc;
}

static int t_topo_figures(void)
{
    int mig = 0;
    if (mock_sym("mock_cuda_copies") == NULL) {
        return 0; /* the topology names the stand-in's GPUs, not a real machine's */
    }
    if (fork_group_run(1, topo_body, &mig) != 0) {
        return 1;
    }
    setenv("MOCK_CUDA_MIG", "1", 1); /* the stand-in's: one PCI bus id for both */
    mig = 1;
    return fork_group_run(1, topo_body, &mig) != 0 ? 2 : 0;
}

/* Two MIG instances of one GPU share a PCI bus id: named by their UUIDs,
 * they are two devices with a pair of channels of their own (by PCI bus id
 * they were one device, with a direct copy at 300 GB/s). */
static int t_mig_names(void)
{
#ifdef CRUX_HAVE_CUDA
    if (mock_sym("mock_cuda_copies") == NULL) {
        return 0; /* a real machine decides whether it has MIG */
    }
    setenv("MOCK_CUDA_MIG", "1", 1);
    char a[CRUX_CUDA_NAME_SIZE], b[CRUX_CUDA_NAME_SIZE], pa[16], pb[16];
    if (crux_cuda_name(0, a) != 0 || crux_cuda_name(1, b) != 0 || crux_cuda_pci(0, pa, 16) != 0 ||
        crux_cuda_pci(1, pb, 16) != 0)
        FAIL(1);
    if (strcmp(pa, pb) != 0 || strcmp(a, b) == 0 || crux_cuda_device_named(b) != 1 ||
        strncmp(a, "GPU-", 4) != 0 || strlen(a) != 40)
        FAIL(2);
    double share[CRUX_TL_CHAN_KIND_COUNT];
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_pair_t *pair;
    crux_tl_chan_attr_t attrs[4];
    if (e == NULL || cross_transfer(e, 0, 1, 1u << 20, 0, share) != 0 ||
        crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK)
        FAIL(3);
    unsigned n = crux_tl_pair_channels(pair, attrs, 4);
    int rc = 0;
    for (unsigned i = 0; i < n; i++) {
        if (attrs[i].kind == CRUX_TL_CHAN_CUDA_IPC && attrs[i].bandwidth >= 300e9) {
            fprintf(stderr, "# two MIG instances taken for one device\n");
            rc = 4;
        }
    }
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
#else
    return 1;
#endif
}

/* Runs without a GPU too. */
static int t_no_driver(void)
{
    setenv("CRUX_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
#ifdef CRUX_HAVE_CUDA
    crux_cuda_load();
#endif
    double h = 1;
    return crux_tl_cuda_devices() == 0 && crux_dev_count() == 0 && !crux_dev_is_device(&h) &&
                   crux_tl_mem_query(&h).type == CRUX_TL_MEM_HOST &&
                   crux_dev_reduce(&h, &h, &h, 1, CRUX_DT_DOUBLE, CRUX_OP_SUM) ==
                       CRUX_ERR_UNSUPPORTED
               ? 0
               : 1;
}

static const struct {
    const char *name;
    int (*fn)(void);
    int gpus; /* needed */
} tests[] = {
    { "device pointers are detected", t_detection, 1 },
    { "every device kernel matches the CPU kernel bit for bit", t_kernels, 1 },
    { "NaN results are the same quiet NaN on the device and the CPU", t_kernels_nan, 1 },
    { "staging through pinned host memory", t_staging, 1 },
    { "engine, one process: each CUDA channel and all of them", t_engine_loopback, 1 },
    { "engine, one process: staged through a relay GPU", t_engine_relay, 2 },
    { "engine: a relay without peer access is not used", t_relay_without_peer_access, 2 },
    { "engine: no relay, and no context, on a GPU the process does not use", t_relay_unused, 2 },
    { "pinned host memory in the context of a GPU the process uses", t_pinned_on_a_used_gpu, 2 },
    { "engine: configured kinds limit the CUDA channels", t_engine_kinds, 1 },
    { "engine: paths with guessed figures carry no stripe", t_guessed_paths_unused, 1 },
    { "engine, two processes: CUDA IPC and host staging", t_engine_two_processes, 1 },
    { "device allreduce, 2 to 4 processes", t_device_allreduce, 1 },
    { "CUDA calibration is measured and cached", t_calibration, 1 },
    { "a primary context is retained once per device", t_contexts_cached, 1 },
    { "a poll tests only the oldest chunk of each stream", t_polls_in_order, 1 },
    { "the IPC import cache is bounded by bytes", t_import_cache_bounded, 1 },
    { "cuda-host: device to host in the sender's GPU context, host to device in the receiver's",
      t_host_hops, 2 },
    { "cuda-host between processes: device to host in the sender, host to device in the receiver",
      t_host_hops_two_processes, 2 },
    { "cuda-host between processes each seeing its own GPU alone: staged by the sender, exact",
      t_host_staged_visible_alone, 2 },
    { "cuda-host: a sender that dies half way fails the receive", t_host_staged_sender_dies, 2 },
    { "cuda-peer: no relay through a GPU the receiving process does not see", t_relay_unseen, 2 },
    { "cuda-peer: each hop in its source GPU's context, peer access refused is no channel",
      t_relay_hops, 2 },
    { "a group given the topology stripes by its figures (MIG: none apply)", t_topo_figures, 2 },
    { "MIG instances are told apart by UUID in the engine", t_mig_names, 2 },
    { "without a driver, all memory is host memory", t_no_driver, 0 },
};

/* fn's result (an exit status) from a child process; 1 if it crashed. */
static int in_child(int (*fn)(void))
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
#ifdef CRUX_HAVE_CUDA
        if (fn != t_no_driver) {
            crux_cuda_load(); /* the test is the application: it loads the driver */
        }
#endif
        _exit(fn());
    }
    int status;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status)
                                                                           : 1;
}

static int count_gpus(void)
{
    return crux_dev_count() < 100 ? crux_dev_count() : 100;
}

int main(void)
{
    int ntests = (int)(sizeof(tests) / sizeof(tests[0]));
    int gpus = in_child(count_gpus);
    printf("1..%d\n", ntests);
    for (int i = 0; i < ntests; i++) {
        if (tests[i].gpus > gpus) {
            printf("ok %d - %s # SKIP %s\n", i + 1, tests[i].name,
                   gpus == 0 ? "no GPU" : "needs 2 GPUs");
        } else {
            printf("%sok %d - %s\n", in_child(tests[i].fn) == 0 ? "" : "not ", i + 1,
                   tests[i].name);
        }
    }
    return 0;
}

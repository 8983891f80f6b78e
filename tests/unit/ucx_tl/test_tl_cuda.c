/* ucx_tl's CUDA channels on a machine with a GPU, and again with the
 * stand-in driver of tests/mock (test_tl_cuda_mock.sh): the engine's
 * channels within a process and between processes (IPC, staging through
 * host memory, a relay GPU), which paths it builds and which it leaves out,
 * its event polls and IPC import cache, CUDA calibration, MIG instances.
 * Without a GPU each test is reported skipped; the check that a missing
 * driver means host memory always runs (tests/unit/cuda_test_util.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crux_cuda.h"
#include "tests/unit/cuda_test_util.h"
#include "tests/unit/fork_group.h"
#include "ucx_tl/crux_tl.h"

/* A forked member's failure: where, on stderr, and the member's status. */
#define FAIL(code)                                                \
    do {                                                          \
        fprintf(stderr, "# %s:%d: failed\n", __FILE__, __LINE__); \
        return (code);                                            \
    } while (0)

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
            cuda_free(device, src);
            cuda_free(device, dst);
        }
    }
    return 0;
}

START_TEST(t_engine_loopback)
{
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_pair_t *pair;
    ck_assert_msg(e != NULL && crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK,
                  "no engine or no pair");
    ck_assert_int_eq(device_transfers(pair, 1, 1, 0, 2), 0);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
}
END_TEST

/* Without the topology's figures or a calibration, a transfer takes the
 * direct copy alone: staging through host memory at a guessed speed would
 * take a stripe of it whatever the real links. */
START_TEST(t_guessed_paths_unused)
{
    const size_t bytes = 64u << 20;
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_pair_t *pair;
    ck_assert_msg(e != NULL && crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK,
                  "no engine or no pair");
    void *src = device_pattern(0, bytes, 7), *dst = device_pattern(0, bytes, 0xff);
    crux_tl_xfer_t *x = NULL, *y = NULL;
    ck_assert_msg(src != NULL && dst != NULL &&
                      crux_tl_recv(pair, dst, bytes, NULL, &y) == CRUX_OK &&
                      crux_tl_send(pair, src, bytes, NULL, &x) == CRUX_OK &&
                      crux_tl_xfer_wait(y) == CRUX_OK && crux_tl_xfer_wait(x) == CRUX_OK &&
                      device_holds(dst, bytes, 7),
                  "the transfer failed or its bytes are wrong");
    ck_assert_msg(crux_tl_xfer_stats(y)->nstripes == 1, "%u stripes without figures",
                  crux_tl_xfer_stats(y)->nstripes);
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    cuda_free(0, src);
    cuda_free(0, dst);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
}
END_TEST

/* The engine's kinds decide which CUDA channels a transfer may use. */
START_TEST(t_engine_kinds)
{
    const size_t bytes = 32u << 20;
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine_kinds(&ctx, "", 2, CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_HOST));
    crux_tl_pair_t *pair;
    void *src = device_pattern(0, bytes, 9), *dst = device_pattern(0, bytes, 0);
    crux_tl_xfer_t *x, *y;
    ck_assert_msg(e != NULL && src != NULL && dst != NULL &&
                      crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK &&
                      crux_tl_recv(pair, dst, bytes, NULL, &y) == CRUX_OK &&
                      crux_tl_send(pair, src, bytes, NULL, &x) == CRUX_OK &&
                      crux_tl_xfer_wait(y) == CRUX_OK && crux_tl_xfer_wait(x) == CRUX_OK,
                  "the transfer failed");
    crux_tl_chan_attr_t attrs[4];
    const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(y);
    ck_assert_msg(device_holds(dst, bytes, 9) && st->nstripes == 1 &&
                      crux_tl_pair_channels(pair, attrs, 4) >= 1 &&
                      attrs[st->stripe[0].channel].kind == CRUX_TL_CHAN_CUDA_HOST,
                  "wrong bytes, or not one stripe over cuda-host alone");
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    cuda_free(0, src);
    cuda_free(0, dst);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
}
END_TEST

/* A path staged through a second GPU, next to the direct and host ones. */
START_TEST(t_engine_relay)
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
    ck_assert_msg(e != NULL && crux_cuda_name(0, gpu0) == 0 && crux_cuda_name(1, gpu1) == 0 &&
                      app_uses(1),
                  "no engine, no names, or GPU 1 not usable");
    memcpy(paths[1].relay[0], gpu1, sizeof(gpu1));
    ck_assert_msg(crux_tl_engine_gpu_paths(e, gpu0, gpu0, paths, 3) == CRUX_OK &&
                      crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK,
                  "paths refused or no pair");
    ck_assert_int_eq(device_transfers(pair, 1, 1, 0, 3), 0);
    crux_tl_chan_attr_t attrs[4];
    ck_assert_msg(crux_tl_pair_channels(pair, attrs, 4) == 3 && attrs[1].hops == 2 &&
                      attrs[1].kind == CRUX_TL_CHAN_CUDA_PEER,
                  "not three channels with the relay second, of two hops");
    /* paths of a device pair in use cannot change */
    ck_assert_int_eq(crux_tl_engine_gpu_paths(e, gpu0, gpu0, paths, 2), CRUX_ERR_INVALID);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

/* A relay GPU this process does not work on (another rank's): no relay
 * channel and no context made on it; the other paths carry the bytes. */
START_TEST(t_relay_unused)
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
    ck_assert_msg(e != NULL && crux_cuda_name(0, gpu0) == 0 && crux_cuda_name(1, gpu1) == 0,
                  "no engine or no names");
    if (crux_cuda_context_active(1)) {
        return; /* a real driver where something else works on GPU 1 */
    }
    memcpy(paths[1].relay[0], gpu1, sizeof(gpu1));
    ck_assert_msg(crux_tl_engine_gpu_paths(e, gpu0, gpu0, paths, 3) == CRUX_OK &&
                      crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK,
                  "paths refused or no pair");
    ck_assert_int_eq(device_transfers(pair, 1, 1, 0, 2), 0);
    crux_tl_chan_attr_t attrs[4];
    for (unsigned i = 0, n = crux_tl_pair_channels(pair, attrs, 4); i < n; i++) {
        ck_assert_msg(attrs[i].kind != CRUX_TL_CHAN_CUDA_PEER,
                      "a relay channel through a GPU this process does not use");
    }
    ck_assert_msg(!crux_cuda_context_active(1), "crux made a context on the relay GPU");
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

/* A relay GPU without peer access to the receiving one: the relay channel
 * is not built (a failed cuCtxEnablePeerAccess is not ignored) and the
 * other paths carry the bytes. */
START_TEST(t_relay_without_peer_access)
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
    ck_assert_msg(e != NULL && crux_cuda_name(0, gpu0) == 0 && crux_cuda_name(1, gpu1) == 0 &&
                      app_uses(1) && crux_cuda()->DeviceCanAccessPeer(&can, 0, 1) == CUDA_SUCCESS,
                  "no engine, no names, or GPU 1 not usable");
    if (can) {
        return; /* peer access here: nothing to check */
    }
    memcpy(paths[1].relay[0], gpu1, sizeof(gpu1));
    ck_assert_msg(crux_tl_engine_gpu_paths(e, gpu0, gpu0, paths, 3) == CRUX_OK &&
                      crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK,
                  "paths refused or no pair");
    void *src = device_pattern(0, bytes, 5), *dst = device_pattern(0, bytes, 0xff);
    crux_tl_xfer_t *x = NULL, *y = NULL;
    crux_tl_chan_attr_t attrs[4];
    ck_assert_msg(src != NULL && dst != NULL &&
                      crux_tl_recv(pair, dst, bytes, NULL, &y) == CRUX_OK &&
                      crux_tl_send(pair, src, bytes, NULL, &x) == CRUX_OK &&
                      crux_tl_xfer_wait(y) == CRUX_OK && crux_tl_xfer_wait(x) == CRUX_OK &&
                      device_holds(dst, bytes, 5),
                  "the transfer failed or its bytes are wrong");
    for (unsigned i = 0, n = crux_tl_pair_channels(pair, attrs, 4); i < n; i++) {
        ck_assert_msg(attrs[i].kind != CRUX_TL_CHAN_CUDA_PEER,
                      "a relay channel without peer access");
    }
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    cuda_free(0, src);
    cuda_free(0, dst);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

static int two_process_body(fork_group_member_t *m, void *arg)
{
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    unsigned char card[FORK_GROUP_SLOT], cards[2][FORK_GROUP_SLOT];
    crux_tl_pair_t *pair;
    int device = m->rank % crux_tl_cuda_devices();
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
        cuda_free(0, bufs[i]);
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

START_TEST(t_import_cache_bounded)
{
    *(void **)&imports = mock_sym("mock_cuda_imports");
    if (imports == NULL) {
        return; /* a real driver: nothing counts its imports */
    }
    ck_assert_int_eq(fork_group_run(2, cache_body, NULL), 0);
}
END_TEST

START_TEST(t_engine_two_processes)
{
    ck_assert_int_eq(fork_group_run(2, two_process_body, NULL), 0);
}
END_TEST

START_TEST(t_calibration)
{
    char path[64] = "/tmp/crux-cuda-calib-XXXXXX", line[256];
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, path, 2);
    ck_assert_msg(e != NULL && crux_tl_engine_calibrate_cuda(e, 0, 0, 1) == CRUX_OK,
                  "no engine or calibration failed");
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
    ck_assert_msg(found == 3, "cached: cuda-ipc %d, cuda-host %d", found & 1, found >> 1);
}
END_TEST

/* Chunks on one stream finish in order: a poll tests the oldest chunk of the
 * stream and stops at the first unfinished one, so over the host-staged
 * channel (one final stream) a transfer makes at most one event query per
 * chunk and one per poll; testing every chunk in flight made up to four per
 * poll. */
START_TEST(t_polls_in_order)
{
    const size_t bytes = 16u << 20;
    unsigned long (*queries)(void) = mock_sym("mock_cuda_queries");
    if (queries == NULL) {
        return; /* a real driver: nothing counts its queries */
    }
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_pair_t *pair;
    ck_assert_msg(e != NULL && crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK,
                  "no engine or no pair");
    void *src = device_pattern(0, bytes, 5), *dst = device_pattern(0, bytes, 0xff);
    crux_tl_xfer_params_t params = { .chunk = 64u << 10, .channels = 1u << 1 }; /* cuda-host */
    crux_tl_xfer_t *x = NULL, *y = NULL;
    ck_assert_msg(src != NULL && dst != NULL &&
                      crux_tl_recv(pair, dst, bytes, &params, &y) == CRUX_OK &&
                      crux_tl_send(pair, src, bytes, NULL, &x) == CRUX_OK,
                  "the transfer was not posted");
    unsigned long before = queries(), polls = 0;
    while (!crux_tl_xfer_done(x) || !crux_tl_xfer_done(y)) {
        crux_tl_engine_progress(e);
        polls++;
    }
    unsigned long made = queries() - before, chunks = bytes / params.chunk;
    ck_assert_msg(crux_tl_xfer_status(y) == CRUX_OK && device_holds(dst, bytes, 5),
                  "the transfer failed or its bytes are wrong");
    ck_assert_msg(made <= chunks + polls, "%lu event queries for %lu chunks in %lu polls", made,
                  chunks, polls);
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    cuda_free(0, src);
    cuda_free(0, dst);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
}
END_TEST

/* Staging through host memory runs its first hop (device to host) in the
 * sending GPU's context, so the bytes cross its link, and its second in the
 * receiving GPU's: both hops on the receiver's streams made its link carry
 * the stripe twice.  The stand-in counts the copies by context. */
START_TEST(t_host_hops)
{
    unsigned long (*copies)(int, int, int) = mock_sym("mock_cuda_copies");
    double share[CRUX_TL_CHAN_KIND_COUNT];
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine_kinds(&ctx, "", 2, CRUX_TL_KIND(CRUX_TL_CHAN_CUDA_HOST));
    ck_assert_msg(e != NULL && cross_transfer(e, 0, 1, 16u << 20, 0, share) == 0 &&
                      share[CRUX_TL_CHAN_CUDA_HOST] == 1.0,
                  "the transfer failed or cuda-host did not carry it all");
    if (copies != NULL) {
        ck_assert_msg(copies(0, 0, -1) != 0 && copies(1, -1, 1) != 0 && copies(1, 0, -1) == 0,
                      "device to host by GPU 0 %lu, by GPU 1 %lu; host to device by GPU 1 %lu",
                      copies(0, 0, -1), copies(1, 0, -1), copies(1, -1, 1));
    }
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
}
END_TEST

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
    cuda_free(m->rank, buf);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

START_TEST(t_host_hops_two_processes)
{
    ck_assert_int_eq(fork_group_run(2, host_hops_body, NULL), 0);
}
END_TEST

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
    cuda_free(0, buf);
    return rc;
}

#ifdef CRUX_HAVE_CUDA
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
    if (e == NULL || crux_tl_cuda_devices() != 1 + m->rank || crux_cuda_name(0, mine) != 0 ||
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
        cuda_free(0, buf[i]);
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
#endif

START_TEST(t_host_staged_visible_alone)
{
#ifdef CRUX_HAVE_CUDA
    if (mock_sym("mock_cuda_copies") == NULL) {
        return; /* a real driver's visible devices are fixed before the test runs */
    }
    setenv("MOCK_CUDA_DEVICES", "3", 1);
    ck_assert_int_eq(fork_group_run(2, visible_alone_body, NULL), 0);
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

#ifdef CRUX_HAVE_CUDA
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
    cuda_free(device, buf);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}
#endif

START_TEST(t_relay_unseen)
{
#ifdef CRUX_HAVE_CUDA
    if (mock_sym("mock_cuda_copies") == NULL) {
        return; /* a real driver's visible devices are fixed before the test runs */
    }
    setenv("MOCK_CUDA_DEVICES", "3", 1);
    ck_assert_int_eq(fork_group_run(2, relay_unseen_body, NULL), 0);
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

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
    cuda_free(0, buf);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return 0;
}

START_TEST(t_host_staged_sender_dies)
{
    if (mock_sym("mock_cuda_copies") == NULL) {
        return; /* the stand-in's counters tell when the sender is half done */
    }
    ck_assert_int_eq(fork_group_run(2, sender_dies_body, NULL), 0);
}
END_TEST

/* A relay path from GPU 0 to GPU 2 through GPU 1: the first hop runs in
 * GPU 0's context (it pushes to the relay), the relay hop in GPU 1's, and
 * none in the receiver's; with no peer access from the relay to the
 * receiver the channel is not built.  Three devices: the stand-in's (a real
 * machine with fewer has nothing to check). */
START_TEST(t_relay_hops)
{
#ifdef CRUX_HAVE_CUDA
    unsigned long (*copies)(int, int, int) = mock_sym("mock_cuda_copies");
    if (copies != NULL) {
        setenv("MOCK_CUDA_DEVICES", "3", 1); /* read on every call; names are looked up later */
    }
    if (crux_tl_cuda_devices() < 3) {
        ck_assert_msg(copies == NULL, "the stand-in shows %d devices, not 3",
                      crux_tl_cuda_devices());
        return;
    }
    char gpu[3][CRUX_CUDA_NAME_SIZE];
    for (int d = 0; d < 3; d++) {
        ck_assert_msg(crux_cuda_name(d, gpu[d]) == 0 && app_uses(d), "GPU %d: no name or unusable",
                      d);
    }
    crux_tl_gpu_path_t paths[2] = {
        { .kind = CRUX_TL_CHAN_CUDA_IPC, .bandwidth = 100e9 },
        { .kind = CRUX_TL_CHAN_CUDA_PEER, .bandwidth = 50e9, .nrelays = 1 },
    };
    memcpy(paths[1].relay[0], gpu[1], sizeof(gpu[1]));
    double share[CRUX_TL_CHAN_KIND_COUNT];
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    ck_assert_msg(e != NULL && crux_tl_engine_gpu_paths(e, gpu[0], gpu[2], paths, 2) == CRUX_OK &&
                      cross_transfer(e, 0, 2, 16u << 20, 1u << 1, share) == 0 &&
                      share[CRUX_TL_CHAN_CUDA_PEER] == 1.0,
                  "the transfer failed or the relay did not carry it all");
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    /* each hop's GPU has peer access to the next one (the relay's to the
     * receiver's too, not only the sender's to the relay) */
    int (*enabled)(int, int) = mock_sym("mock_cuda_peer_enabled");
    if (enabled != NULL) {
        ck_assert_msg(enabled(0, 1) && enabled(1, 2), "peer access 0>1 %d, 1>2 %d", enabled(0, 1),
                      enabled(1, 2));
    }
    if (copies == NULL) {
        return; /* a real driver decides peer access itself */
    }
    ck_assert_msg(copies(0, 0, 1) != 0 && copies(1, 1, 2) != 0 && copies(2, 0, 1) == 0 &&
                      copies(2, 1, 2) == 0,
                  "0>1 by GPU 0 %lu, by GPU 2 %lu; 1>2 by GPU 1 %lu, by GPU 2 %lu", copies(0, 0, 1),
                  copies(2, 0, 1), copies(1, 1, 2), copies(2, 1, 2));
    setenv("MOCK_CUDA_NO_P2P", "1-2", 1);
    crux_tl_chan_attr_t attrs[4];
    crux_tl_pair_t *pair;
    e = cuda_engine(&ctx, "", 2);
    ck_assert_msg(e != NULL && crux_tl_engine_gpu_paths(e, gpu[0], gpu[2], paths, 2) == CRUX_OK &&
                      cross_transfer(e, 0, 2, 16u << 20, 0, share) == 0 &&
                      crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK,
                  "without peer access from the relay: the transfer failed");
    for (unsigned i = 0, n = crux_tl_pair_channels(pair, attrs, 4); i < n; i++) {
        ck_assert_msg(attrs[i].kind != CRUX_TL_CHAN_CUDA_PEER,
                      "a relay channel without peer access from the relay");
    }
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

/* Two MIG instances of one GPU share a PCI bus id: named by their UUIDs,
 * they are two devices with a pair of channels of their own (by PCI bus id
 * they were one device, with a direct copy at 300 GB/s). */
START_TEST(t_mig_names)
{
#ifdef CRUX_HAVE_CUDA
    if (mock_sym("mock_cuda_copies") == NULL) {
        return; /* a real machine decides whether it has MIG */
    }
    setenv("MOCK_CUDA_MIG", "1", 1);
    char a[CRUX_CUDA_NAME_SIZE], b[CRUX_CUDA_NAME_SIZE], pa[16], pb[16];
    ck_assert_msg(crux_cuda_name(0, a) == 0 && crux_cuda_name(1, b) == 0 &&
                      crux_cuda_pci(0, pa, 16) == 0 && crux_cuda_pci(1, pb, 16) == 0,
                  "no names or PCI bus ids");
    ck_assert_msg(strcmp(pa, pb) == 0 && strcmp(a, b) != 0 && crux_cuda_device_named(b) == 1 &&
                      strncmp(a, "GPU-", 4) == 0 && strlen(a) == 40,
                  "names %s and %s at %s and %s", a, b, pa, pb);
    double share[CRUX_TL_CHAN_KIND_COUNT];
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e = cuda_engine(&ctx, "", 2);
    crux_tl_pair_t *pair;
    crux_tl_chan_attr_t attrs[4];
    ck_assert_msg(e != NULL && cross_transfer(e, 0, 1, 1u << 20, 0, share) == 0 &&
                      crux_tl_pair_connect(e, 0, 0, NULL, &pair) == CRUX_OK,
                  "the transfer failed");
    unsigned n = crux_tl_pair_channels(pair, attrs, 4);
    for (unsigned i = 0; i < n; i++) {
        ck_assert_msg(attrs[i].kind != CRUX_TL_CHAN_CUDA_IPC || attrs[i].bandwidth < 300e9,
                      "two MIG instances taken for one device");
    }
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

/* Runs without a GPU too: no driver, no CUDA devices, host memory. */
START_TEST(t_no_driver)
{
    setenv("CRUX_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
#ifdef CRUX_HAVE_CUDA
    crux_cuda_load();
#endif
    double h = 1;
    ck_assert_int_eq(crux_tl_cuda_devices(), 0);
    ck_assert_int_eq(crux_tl_mem_query(&h).type, CRUX_TL_MEM_HOST);
}
END_TEST

int main(void)
{
    const cuda_test_t tests[] = {
        { "engine, one process: each CUDA channel and all of them", t_engine_loopback, 1 },
        { "engine, one process: staged through a relay GPU", t_engine_relay, 2 },
        { "engine: a relay without peer access is not used", t_relay_without_peer_access, 2 },
        { "engine: no relay, and no context, on a GPU the process does not use", t_relay_unused,
          2 },
        { "engine: configured kinds limit the CUDA channels", t_engine_kinds, 1 },
        { "engine: paths with guessed figures carry no stripe", t_guessed_paths_unused, 1 },
        { "engine, two processes: CUDA IPC and host staging", t_engine_two_processes, 1 },
        { "CUDA calibration is measured and cached", t_calibration, 1 },
        { "a poll tests only the oldest chunk of each stream", t_polls_in_order, 1 },
        { "the IPC import cache is bounded by bytes", t_import_cache_bounded, 1 },
        { "cuda-host: device to host in the sender's GPU context, host to device in the "
          "receiver's",
          t_host_hops, 2 },
        { "cuda-host between processes: device to host in the sender, host to device in the "
          "receiver",
          t_host_hops_two_processes, 2 },
        { "cuda-host between processes each seeing its own GPU alone: staged by the sender, exact",
          t_host_staged_visible_alone, 2 },
        { "cuda-host: a sender that dies half way fails the receive", t_host_staged_sender_dies,
          2 },
        { "cuda-peer: no relay through a GPU the receiving process does not see", t_relay_unseen,
          2 },
        { "cuda-peer: each hop in its source GPU's context, peer access refused is no channel",
          t_relay_hops, 2 },
        { "MIG instances are told apart by UUID in the engine", t_mig_names, 2 },
        { "without a driver, the engine sees no device and host memory alone", t_no_driver, 0 },
    };
    return cuda_test_main("ucx_tl CUDA", tests, (int)(sizeof(tests) / sizeof(tests[0])), 300);
}

/* The multipath engine's host channels between two real processes with
 * private buffers: cma get, cma put and shm staging, each alone and all
 * together, both directions at once, unaligned; without cma; calibration
 * and its cache file; a peer that dies; receives that reduce on landing or
 * stream; eager sends.  And sends from shared buffers, in one copy over
 * shm-direct; peers found far. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/check_main.h"
#include "tests/unit/tl_test_util.h"

#define BIG ((16u << 20) + 77)

typedef struct {
    int use_cma;
    const char *calib_path;
} host_arg_t;

/* Send 'n' bytes each way over the channels in 'mask' (0: planner's pick);
 * returns 0 or a failure code; *stripes gets the receive's stripe count. */
static int exchange(fork_group_member_t *m, crux_tl_pair_t *pair, unsigned char *out,
                    unsigned char *in, size_t n, uint32_t mask, unsigned *stripes)
{
    int peer = 1 - m->rank;
    tl_fill(out, n, (unsigned)(m->rank * 11 + n % 7));
    tl_prepare_dst(in, n, (unsigned)(peer * 11 + n % 7));
    in[-1] = 0x5a;
    in[n] = 0xa5;
    crux_tl_xfer_params_t params = { .channels = mask };
    crux_tl_xfer_t *s, *r;
    if (crux_tl_recv(pair, in, n, &params, &r) != CRUX_OK ||
        crux_tl_send(pair, out, n, NULL, &s) != CRUX_OK) {
        return 1;
    }
    crux_status_t rs = crux_tl_xfer_wait(r), ss = crux_tl_xfer_wait(s);
    if (rs != CRUX_OK || ss != CRUX_OK) {
        fprintf(stderr, "# %zu bytes over %#x: recv %d send %d\n", n, mask, rs, ss);
        return 2;
    }
    if (tl_landed_once(in, n, (unsigned)(peer * 11 + n % 7), r) != 0) {
        return 3;
    }
    if (in[-1] != 0x5a || in[n] != 0xa5) {
        return 4;
    }
    *stripes = crux_tl_xfer_stats(r)->nstripes;
    crux_tl_xfer_release(s);
    crux_tl_xfer_release(r);
    return 0;
}

/* 1 when 100 bytes received over the channels in 'mask' fail on both sides
 * as unsupported. */
static int refused_both_sides(crux_tl_pair_t *pair, unsigned char *out, unsigned char *in,
                              uint32_t mask)
{
    crux_tl_xfer_params_t params = { .channels = mask };
    crux_tl_xfer_t *s, *r;
    if (crux_tl_recv(pair, in, 100, &params, &r) != CRUX_OK ||
        crux_tl_send(pair, out, 100, NULL, &s) != CRUX_OK) {
        return 0;
    }
    int refused = crux_tl_xfer_wait(r) == CRUX_ERR_UNSUPPORTED &&
                  crux_tl_xfer_wait(s) == CRUX_ERR_UNSUPPORTED;
    crux_tl_xfer_release(s);
    crux_tl_xfer_release(r);
    return refused;
}

static int every_channel(fork_group_member_t *m, void *argp)
{
    host_arg_t *arg = argp;
    tl_engine_t t;
    crux_tl_engine_config_t cfg = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    crux_tl_config_t tl = CRUX_TL_CONFIG_DEFAULT;
    tl.use_cma = arg->use_cma;
    cfg.max_peers = 2;
    cfg.calib_path = ""; /* nominal figures: the split below is deterministic */
    if (crux_tl_context_open(&tl, &t.ctx) != CRUX_OK ||
        crux_tl_engine_create(t.ctx, &cfg, &t.engine) != CRUX_OK) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL) {
        return 11;
    }
    crux_tl_chan_attr_t attrs[8];
    unsigned nchan = crux_tl_pair_channels(pair, attrs, 8);
    if (nchan != 4 || attrs[0].kind != CRUX_TL_CHAN_CMA_GET ||
        attrs[1].kind != CRUX_TL_CHAN_CMA_PUT || attrs[2].kind != CRUX_TL_CHAN_SHM ||
        attrs[3].kind != CRUX_TL_CHAN_SHM_DIRECT) {
        return 12;
    }
    unsigned char *out = malloc(BIG + 64), *in = malloc(BIG + 64);
    const size_t sizes[] = { 1, 7, 64, 4099, 65536 + 3, (1u << 20) + 1, BIG };
    unsigned stripes;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        /* each channel alone (cma ones only with cma), then the planner's choice */
        for (uint32_t c = 0; c <= 3; c++) {
            uint32_t mask = c < 3 ? 1u << c : 0;
            if (!arg->use_cma && c < 2) {
                continue;
            }
            int rc = exchange(m, pair, out + 3, in + 1 + (i % 5), sizes[i], mask, &stripes);
            if (rc != 0) {
                return 20 + rc;
            }
        }
    }
    /* Nominal figures give cma get (the receiver's CPU) and cma put (the
     * sender's) the same rate: a large message goes over both. */
    if (exchange(m, pair, out, in + 8, BIG, 0, &stripes) != 0 ||
        stripes < (arg->use_cma ? 2u : 1u)) {
        return 30;
    }
    /* without cma, a cma channel forced is refused on both sides; so is
     * shm-direct forced on a private buffer */
    if ((!arg->use_cma && !refused_both_sides(pair, out, in, 1u << 0)) ||
        !refused_both_sides(pair, out, in, 1u << 3)) {
        return 31;
    }
    fork_group_barrier(m);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    free(out);
    free(in);
    return 0;
}

START_TEST(test_host_channels_between_two_processes)
{
    host_arg_t arg = { .use_cma = 1 };
    ck_assert_int_eq(fork_group_run(2, every_channel, &arg), 0);
}
END_TEST

START_TEST(test_without_cma_shm_carries_everything)
{
    host_arg_t arg = { .use_cma = 0 };
    ck_assert_int_eq(fork_group_run(2, every_channel, &arg), 0);
}
END_TEST

/* Calibrate (forced), check both sides agree and the cache holds the
 * figures; then a new engine starts from the cache. */
static int calibrate(fork_group_member_t *m, void *argp)
{
    host_arg_t *arg = argp;
    tl_engine_t t;
    if (tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, arg->calib_path) != 0) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL || crux_tl_pair_calibrate(pair, 1) != CRUX_OK) {
        return 11;
    }
    crux_tl_chan_attr_t mine[3], theirs[2][3];
    if (crux_tl_pair_channels(pair, mine, 3) != 4) { /* shm-direct is not measured */
        return 12;
    }
    for (int i = 0; i < 3; i++) {
        if (!mine[i].calibrated || !(mine[i].bandwidth > 0) || !isfinite(mine[i].bandwidth) ||
            mine[i].latency < 0 || mine[i].chunk_cost < 0) {
            return 13;
        }
    }
    if (fork_group_allgather(mine, theirs, sizeof(mine), m) != 0 ||
        memcmp(theirs[0], theirs[1], sizeof(mine)) != 0) {
        return 14; /* the sender took the measurer's figures */
    }
    /* a transfer planned from measured figures still lands */
    /* exchange() puts guards before and after 'in' (AddressSanitizer found
     * this call writing one before the buffer) */
    unsigned char *out = malloc(BIG + 1), *in = malloc(BIG + 2);
    unsigned stripes;
    if (exchange(m, pair, out, in + 1, BIG, 0, &stripes) != 0) {
        return 15;
    }
    fork_group_barrier(m);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);

    /* a new engine: figures straight from the cache, and calibrate without
     * force measures nothing, so they stay as they were */
    if (tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, arg->calib_path) != 0 ||
        (pair = tl_connect(m, &t)) == NULL) {
        return 16;
    }
    crux_tl_chan_attr_t again[3];
    crux_tl_pair_channels(pair, again, 3);
    for (int i = 0; i < 3; i++) {
        if (!again[i].calibrated ||
            fabs(again[i].bandwidth - mine[i].bandwidth) > 1e-5 * mine[i].bandwidth) {
            return 17;
        }
    }
    if (crux_tl_pair_calibrate(pair, 0) != CRUX_OK) {
        return 18;
    }
    crux_tl_pair_channels(pair, mine, 3);
    if (memcmp(mine, again, sizeof(mine)) != 0) {
        return 19;
    }
    fork_group_barrier(m);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    free(out);
    free(in);
    return 0;
}

START_TEST(test_calibration_and_its_cache)
{
    char dir[] = "/tmp/crux-calib-test-XXXXXX", path[128], line[256];
    ck_assert(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/sub/cache", dir); /* directories are made */
    host_arg_t arg = { .calib_path = path };
    ck_assert_int_eq(fork_group_run(2, calibrate, &arg), 0);
    FILE *f = fopen(path, "r");
    ck_assert(f != NULL);
    ck_assert(fgets(line, sizeof(line), f) != NULL);
    ck_assert_str_eq(line, "crux-calibration 1\n");
    int found = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        double bw, lat, cost;
        char sig[96];
        if (line[0] != '#' && sscanf(line, "%95s %lf %lf %lf", sig, &bw, &lat, &cost) == 4) {
            found |= strcmp(sig, "cma-get") == 0    ? 1
                     : strcmp(sig, "cma-put") == 0  ? 2
                     : strncmp(sig, "shm:", 4) == 0 ? 4
                                                    : 0;
            ck_assert(bw > 0);
        }
    }
    fclose(f);
    ck_assert_int_eq(found, 7);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A sender that publishes its buffer and then does not run for a while (an
 * oversubscribed node): the receiver takes its stripes over and finishes
 * without it; then the sender finds nothing left to push. */
typedef struct {
    double received, sender_back;
} steal_times_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int sleepy_sender(fork_group_member_t *m, void *argp)
{
    steal_times_t *times = argp;
    tl_engine_t t;
    if (tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, "") != 0) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL) {
        return 11;
    }
    const size_t n = 8u << 20;
    unsigned char *buf = malloc(n + 1);
    crux_tl_xfer_t *x;
    int rc = 0;
    for (int round = 0; round < 2; round++) { /* both rounds whatever happens: barriers */
        int sleepy = round == 0;
        if (m->rank == 0) {
            tl_fill(buf, n, (unsigned)round);
            fork_group_barrier(m);
            if (crux_tl_send(pair, buf, n, NULL, &x) != CRUX_OK) {
                return 12;
            }
            crux_tl_engine_progress(t.engine); /* published ... */
            if (sleepy) {
                usleep(300000); /* ... then away */
                times->sender_back = now_s();
            }
            rc = crux_tl_xfer_wait(x) == CRUX_OK ? rc : 13;
        } else {
            tl_prepare_dst(buf, n, (unsigned)round);
            fork_group_barrier(m);
            if (crux_tl_recv(pair, buf, n, NULL, &x) != CRUX_OK ||
                crux_tl_xfer_wait(x) != CRUX_OK) {
                return 14;
            }
            const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(x);
            int pulled_all = 1;
            for (unsigned i = 0; i < st->nstripes; i++) {
                pulled_all &= st->stripe[i].channel == 0; /* cma-get */
            }
            if (sleepy) { /* striped, and all of it taken over while the sender slept */
                times->received = now_s();
                rc = st->nstripes >= 2 && pulled_all ? rc : 15;
            }
            if (tl_landed_once(buf, n, (unsigned)round, x) != 0) {
                rc = 16;
            }
        }
        crux_tl_xfer_release(x);
        fork_group_barrier(m);
    }
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    free(buf);
    return rc;
}

START_TEST(test_receiver_takes_over_from_a_sleeping_sender)
{
    steal_times_t *times =
        mmap(NULL, sizeof(*times), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(times != MAP_FAILED);
    ck_assert_int_eq(fork_group_run(2, sleepy_sender, times), 0);
    ck_assert(times->received > 0 && times->received < times->sender_back);
    munmap(times, sizeof(*times));
}
END_TEST

/* A peer that dies mid-transfer: the survivor's transfers fail with
 * CRUX_ERR_PEER instead of waiting forever. */
static int dies(fork_group_member_t *m, void *argp)
{
    tl_engine_t t;
    if (tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, "") != 0) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL) {
        return 11;
    }
    if (m->rank == 1) {
        _exit(0); /* gone without a word: never posts its send */
    }
    static unsigned char in[1 << 16];
    crux_tl_xfer_t *r;
    if (crux_tl_recv(pair, in, sizeof(in), NULL, &r) != CRUX_OK ||
        crux_tl_xfer_wait(r) != CRUX_ERR_PEER) {
        return 12;
    }
    crux_tl_xfer_release(r);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    return 0;
}

START_TEST(test_dead_peer_fails_the_transfer)
{
    ck_assert_int_eq(fork_group_run(2, dies, NULL), 0);
}
END_TEST

/* Host channels between two processes with private buffers: a streamed
 * receive keeps to the shm slots where there are any. */
static int streams(fork_group_member_t *m, void *argp)
{
    (void)argp;
    const size_t n = (3u << 20) + 5;
    unsigned kinds[2] = { CRUX_TL_KINDS_HOST,
                          CRUX_TL_KIND(CRUX_TL_CHAN_CMA_GET) | CRUX_TL_KIND(CRUX_TL_CHAN_CMA_PUT) };
    unsigned char *out = malloc(n), *in = malloc(n);
    int rc = 0;
    for (int e = 0; e < 2 && rc == 0; e++) {
        tl_engine_t t;
        if (tl_engine_open(&t, kinds[e], NULL, 0, "") != 0) {
            return 10;
        }
        crux_tl_pair_t *pair = tl_connect(m, &t);
        if (pair == NULL) {
            return 11;
        }
        tl_fill(out, n, (unsigned)m->rank);
        crux_tl_xfer_t *s, *r;
        /* a streamed plain receive: over shm alone where there is shm */
        crux_tl_xfer_params_t stream = { .stream = 1 };
        tl_prepare_dst(in, n, (unsigned)(1 - m->rank));
        if (crux_tl_recv(pair, in, n, &stream, &r) != CRUX_OK ||
            crux_tl_send(pair, out, n, NULL, &s) != CRUX_OK) {
            return 17;
        }
        if (crux_tl_xfer_wait(r) != CRUX_OK || crux_tl_xfer_wait(s) != CRUX_OK ||
            tl_landed_once(in, n, (unsigned)(1 - m->rank), r) != 0) {
            rc |= 18;
        }
        const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(r);
        for (unsigned i = 0; e == 0 && i < st->nstripes; i++) {
            rc |= st->stripe[i].channel != 2 ? 19 : 0;
        }
        crux_tl_xfer_release(s);
        crux_tl_xfer_release(r);
        fork_group_barrier(m);
        crux_tl_pair_disconnect(pair);
        tl_engine_close(&t);
    }
    free(out);
    free(in);
    return rc;
}

START_TEST(test_streamed_receives)
{
    ck_assert_int_eq(fork_group_run(2, streams, NULL), 0);
}
END_TEST

/* Eager sends: rank 0 sends and stages before rank 1 has posted anything;
 * up to eager_max they go over shm whatever the receiver asks, past it the
 * receiver's plan rules; a size mismatch fails both sides and the slots are
 * drained for the next transfer. */
static int eager(fork_group_member_t *m, void *argp)
{
    (void)argp;
    tl_engine_t t;
    crux_tl_engine_config_t cfg = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    cfg.max_peers = 2;
    cfg.calib_path = "";
    cfg.eager_max = 64u << 10;
    if (crux_tl_context_open(NULL, &t.ctx) != CRUX_OK ||
        crux_tl_engine_create(t.ctx, &cfg, &t.engine) != CRUX_OK) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL) {
        return 11;
    }
    static unsigned char buf[(64u << 10) + 1];
    const size_t sizes[] = { 1, 4099, 64u << 10, (64u << 10) + 1, 100, 100, 1000 };
    const size_t takes[] = { 1, 4099, 64u << 10, (64u << 10) + 1, 50, 100, 1000 };
    int rc = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && rc == 0; i++) {
        crux_tl_xfer_t *x;
        crux_status_t want_st = sizes[i] == takes[i] ? CRUX_OK : CRUX_ERR_INVALID;
        if (m->rank == 0) {
            tl_fill(buf, sizes[i], (unsigned)i);
            if (crux_tl_send(pair, buf, sizes[i], NULL, &x) != CRUX_OK) {
                return 12;
            }
            for (int polls = 0; polls < 1000; polls++) {
                crux_tl_engine_progress(t.engine); /* stages what it may */
            }
            fork_group_barrier(m);
            rc = crux_tl_xfer_wait(x) != want_st ? 13 : 0;
        } else {
            fork_group_barrier(m); /* the sender has staged before we post */
            crux_tl_xfer_params_t get_only = { .channels = 1u << 0 };
            tl_prepare_dst(buf, takes[i], (unsigned)i);
            crux_status_t st = crux_tl_recv(pair, buf, takes[i], &get_only, &x);
            if (st != CRUX_OK) {
                return 14;
            }
            st = crux_tl_xfer_wait(x);
            const crux_tl_xfer_stats_t *stats = crux_tl_xfer_stats(x);
            unsigned want_channel = sizes[i] <= cfg.eager_max ? 2 : 0; /* shm, else cma-get */
            if (st != want_st || stats->nstripes != 1 || stats->stripe[0].channel != want_channel) {
                rc = 15;
            } else if (st == CRUX_OK && tl_landed_once(buf, takes[i], (unsigned)i, x) != 0) {
                rc = 16;
            }
        }
        crux_tl_xfer_release(x);
    }
    fork_group_barrier(m);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    return rc;
}

START_TEST(test_eager_sends)
{
    ck_assert_int_eq(fork_group_run(2, eager, NULL), 0);
}
END_TEST

/* Sends from shared buffers: one stripe over shm-direct (index 3) at every
 * size and unaligned offset, the same bytes to two receives at once, a
 * streamed receive, cma get forced instead, shm (a push) refused; more
 * shared buffers than a pair keeps mapped, on an engine without shm slots
 * (cma and shm-direct only); and the refusals. */
static int check_direct(const crux_tl_xfer_t *r, unsigned channel)
{
    const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(r);
    return st->nstripes == 1 && st->stripe[0].channel == channel ? 0 : 1;
}

static int shared_plain(fork_group_member_t *m, crux_tl_pair_t *pair, tl_engine_t *t)
{
    const size_t sizes[] = { 1, 63, 4099, (256u << 10) + 1, (5u << 20) + 3 };
    unsigned char *sh, *in = malloc((5u << 20) + 200), *in2 = malloc((5u << 20) + 200);
    if (crux_tl_shared_alloc(t->engine, (5u << 20) + 100, (void **)&sh) != CRUX_OK) {
        return 20;
    }
    int peer = 1 - m->rank, rc = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && rc == 0; i++) {
        size_t n = sizes[i], off = i % 7;
        tl_fill(sh + off, n, (unsigned)(m->rank * 5 + i));
        tl_prepare_dst(in + 1, n, (unsigned)(peer * 5 + i));
        tl_prepare_dst(in2 + 3, n, (unsigned)(peer * 5 + i));
        crux_tl_xfer_params_t stream = { .stream = 1 };
        crux_tl_xfer_t *s1, *s2, *r1, *r2;
        if (crux_tl_send(pair, sh + off, n, NULL, &s1) != CRUX_OK ||
            crux_tl_send(pair, sh + off, n, NULL, &s2) != CRUX_OK ||
            crux_tl_recv(pair, in + 1, n, NULL, &r1) != CRUX_OK ||
            crux_tl_recv(pair, in2 + 3, n, &stream, &r2) != CRUX_OK) {
            return 21;
        }
        if (crux_tl_xfer_wait(r1) != CRUX_OK || crux_tl_xfer_wait(r2) != CRUX_OK ||
            crux_tl_xfer_wait(s1) != CRUX_OK || crux_tl_xfer_wait(s2) != CRUX_OK) {
            rc = 22;
        } else if (tl_landed_once(in + 1, n, (unsigned)(peer * 5 + i), r1) != 0 ||
                   tl_landed_once(in2 + 3, n, (unsigned)(peer * 5 + i), r2) != 0) {
            rc = 23;
        } else if (check_direct(r1, 3) || check_direct(r2, 3)) {
            rc = 24;
        }
        crux_tl_xfer_release(s1);
        crux_tl_xfer_release(s2);
        crux_tl_xfer_release(r1);
        crux_tl_xfer_release(r2);
    }
    /* the receiver may still ask for cma alone: the shared buffer is plain memory to it */
    crux_tl_xfer_params_t get_only = { .channels = 1u << 0 };
    crux_tl_xfer_t *s, *r;
    tl_fill(sh, 70000, 9);
    tl_prepare_dst(in, 70000, 9);
    if (crux_tl_send(pair, sh, 70000, NULL, &s) != CRUX_OK ||
        crux_tl_recv(pair, in, 70000, &get_only, &r) != CRUX_OK ||
        crux_tl_xfer_wait(r) != CRUX_OK || crux_tl_xfer_wait(s) != CRUX_OK ||
        tl_landed_once(in, 70000, 9, r) != 0 || check_direct(r, 0) != 0) {
        rc = rc != 0 ? rc : 25;
    }
    crux_tl_xfer_release(s);
    crux_tl_xfer_release(r);
    /* ... but not over channels the sender would push (shm): it waits for no plan */
    if (rc == 0 && !refused_both_sides(pair, sh, in, 1u << 2)) {
        rc = 26;
    }
    /* before the peer posts anything, a published shared send is up to the
     * receiver; a private one still waits for the plan (eager_max is 0) */
    crux_tl_xfer_t *shs, *prs, *r1, *r2;
    if (crux_tl_send(pair, sh, 70000, NULL, &shs) != CRUX_OK ||
        crux_tl_send(pair, in2, 70000, NULL, &prs) != CRUX_OK) {
        return 27;
    }
    for (int polls = 0; polls < 100; polls++) {
        crux_tl_engine_progress(t->engine);
    }
    if (rc == 0 && (!crux_tl_xfer_left_to_peer(shs) || crux_tl_xfer_left_to_peer(prs))) {
        rc = 28;
    }
    fork_group_barrier(m);
    if (crux_tl_recv(pair, in, 70000, NULL, &r1) != CRUX_OK ||
        crux_tl_recv(pair, in + 70000, 70000, NULL, &r2) != CRUX_OK ||
        crux_tl_xfer_wait(r1) != CRUX_OK || crux_tl_xfer_wait(r2) != CRUX_OK ||
        crux_tl_xfer_wait(shs) != CRUX_OK || crux_tl_xfer_wait(prs) != CRUX_OK) {
        rc = rc != 0 ? rc : 29;
    } else if (rc == 0 && (!crux_tl_xfer_left_to_peer(prs) || check_direct(r1, 3))) {
        rc = 30; /* done is up to the peer too; the shared one went over shm-direct */
    }
    crux_tl_xfer_release(shs);
    crux_tl_xfer_release(prs);
    crux_tl_xfer_release(r1);
    crux_tl_xfer_release(r2);
    fork_group_barrier(m);
    crux_tl_shared_free(t->engine, sh);
    free(in);
    free(in2);
    return rc;
}

/* On an engine with cma and shm-direct only: ten shared buffers in turn,
 * more than the pair keeps mapped. */
static int shared_many(fork_group_member_t *m)
{
    tl_engine_t t;
    unsigned kinds = CRUX_TL_KIND(CRUX_TL_CHAN_CMA_GET) | CRUX_TL_KIND(CRUX_TL_CHAN_CMA_PUT) |
                     CRUX_TL_KIND(CRUX_TL_CHAN_SHM_DIRECT);
    if (tl_engine_open(&t, kinds, NULL, 0, "") != 0) {
        return 30;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL || !crux_tl_pair_direct(pair)) {
        return 31;
    }
    unsigned char *acc = malloc(4000);
    int rc = 0;
    for (unsigned i = 0; i < 10 && rc == 0; i++) {
        unsigned char *b;
        if (crux_tl_shared_alloc(t.engine, 4096 * (i + 1), (void **)&b) != CRUX_OK) {
            return 36;
        }
        tl_fill(b, 4000, i);
        tl_prepare_dst(acc, 4000, i);
        crux_tl_xfer_t *s, *r;
        if (crux_tl_send(pair, b, 4000, NULL, &s) != CRUX_OK ||
            crux_tl_recv(pair, acc, 4000, NULL, &r) != CRUX_OK || crux_tl_xfer_wait(r) != CRUX_OK ||
            crux_tl_xfer_wait(s) != CRUX_OK || tl_landed_once(acc, 4000, i, r) != 0 ||
            check_direct(r, 2) != 0) {
            rc = 37;
        }
        crux_tl_xfer_release(s);
        crux_tl_xfer_release(r);
        fork_group_barrier(m); /* the peer is done with it before it is freed */
        crux_tl_shared_free(t.engine, b);
    }
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    free(acc);
    return rc;
}

static int shared_sends(fork_group_member_t *m, void *argp)
{
    (void)argp;
    tl_engine_t t;
    if (tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, "") != 0) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL || !crux_tl_pair_direct(pair)) {
        return 11;
    }
    int rc = shared_plain(m, pair, &t);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    return rc != 0 ? rc : shared_many(m);
}

START_TEST(test_shared_buffers_go_in_one_copy)
{
    ck_assert_int_eq(fork_group_run(2, shared_sends, NULL), 0);
    /* the refusals */
    tl_engine_t t;
    void *p;
    ck_assert_int_eq(tl_engine_open(&t, CRUX_TL_KIND(CRUX_TL_CHAN_SHM), NULL, 0, ""), 0);
    ck_assert_int_eq(crux_tl_shared_alloc(t.engine, 100, &p), CRUX_ERR_UNSUPPORTED);
    tl_engine_close(&t);
    ck_assert_int_eq(tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, ""), 0);
    ck_assert_int_eq(crux_tl_shared_alloc(t.engine, 0, &p), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_tl_shared_alloc(t.engine, 100, &p), CRUX_OK);
    crux_tl_shared_free(t.engine, (char *)p + 1); /* not one: ignored */
    tl_engine_close(&t);                          /* frees it */
}
END_TEST

/* crux_tl_pair_far follows the measured latency against the threshold:
 * unknown (0) before any traffic, then far past a picosecond and never
 * past ten seconds, with a loopback pair never far. */
static int reach(fork_group_member_t *m, void *argp)
{
    double far_latency = *(const double *)argp;
    tl_engine_t t;
    crux_tl_engine_config_t cfg = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    cfg.max_peers = 2;
    cfg.calib_path = "";
    cfg.far_latency = far_latency;
    if (crux_tl_context_open(NULL, &t.ctx) != CRUX_OK ||
        crux_tl_engine_create(t.ctx, &cfg, &t.engine) != CRUX_OK) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t), *self = NULL;
    if (pair == NULL || crux_tl_pair_connect(t.engine, m->rank, m->rank, NULL, &self) != CRUX_OK) {
        return 11;
    }
    int rc = crux_tl_pair_far(pair) != 0 ? 12 : 0;
    static unsigned char out[4096 + 1], in[4096 + 2];
    unsigned stripes;
    for (int i = 0; i < 400 && rc == 0; i++) { /* 400 receives: 50 timed, three windows */
        if (exchange(m, pair, out, in + 1, 4096, 0, &stripes) != 0) {
            rc = 13;
            break;
        }
        crux_tl_xfer_t *s, *r;
        if (crux_tl_recv(self, in, 64, NULL, &r) != CRUX_OK ||
            crux_tl_send(self, out, 64, NULL, &s) != CRUX_OK) {
            return 14;
        }
        rc = crux_tl_xfer_wait(r) != CRUX_OK || crux_tl_xfer_wait(s) != CRUX_OK ? 14 : 0;
        crux_tl_xfer_release(s);
        crux_tl_xfer_release(r);
    }
    if (rc == 0 && crux_tl_pair_far(pair) != (far_latency < 1e-9)) {
        rc = 15;
    }
    rc = rc == 0 && crux_tl_pair_far(self) ? 16 : rc;
    fork_group_barrier(m);
    crux_tl_pair_disconnect(self);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    return rc;
}

START_TEST(test_far_peers_are_measured)
{
    double latencies[] = { 1e-12, 10.0 };
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(fork_group_run(2, reach, &latencies[i]) == 0, "far_latency %g", latencies[i]);
    }
}
END_TEST

START_TEST(test_bad_cards_and_configurations)
{
    tl_engine_t t;
    ck_assert_int_eq(tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, ""), 0);
    unsigned char card[4096];
    ck_assert_uint_le(crux_tl_engine_card_size(t.engine), sizeof(card));
    memset(card, 0x33, sizeof(card));
    crux_tl_pair_t *pair;
    ck_assert_int_eq(crux_tl_pair_connect(t.engine, 0, 1, card, &pair), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_tl_pair_connect(t.engine, 0, 7, card, &pair), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_tl_pair_connect(t.engine, 0, 0, NULL, &pair), CRUX_OK);
    ck_assert_int_eq(crux_tl_pair_connect(t.engine, 0, 0, NULL, &pair), CRUX_ERR_INVALID);
    tl_engine_close(&t); /* disconnects the pair */

    crux_tl_model_t bad = { .bandwidth = 0 };
    ck_assert_int_ne(tl_engine_open(&t, 0, &bad, 1, ""), 0);
    crux_tl_engine_config_t cfg = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e;
    ck_assert_int_eq(crux_tl_context_open(NULL, &ctx), CRUX_OK);
    cfg.shm_slots = 1000;
    ck_assert_int_eq(crux_tl_engine_create(ctx, &cfg, &e), CRUX_ERR_INVALID);
    cfg.shm_slots = 4;
    cfg.max_peers = 0;
    ck_assert_int_eq(crux_tl_engine_create(ctx, &cfg, &e), CRUX_ERR_INVALID);
    crux_tl_context_close(ctx);
}
END_TEST

/* Lanes, both ways at once.  A full lane refuses a post; posts go out from
 * two shared buffers in turn (the receiver maps each), the receiver reads
 * every place in order, in place, with its size and tag; abandoning the lanes
 * fails them on both sides.  A private buffer cannot be posted. */
static int lane_round(crux_tl_pair_t *pair, unsigned char *const *buf, uint64_t first,
                      uint64_t count, unsigned salt)
{
    for (uint64_t i = first; i < first + count; i++) { /* place i: 100 + i % 900 bytes */
        unsigned char *at = buf[i % 2] + (i % CRUX_TL_LANE_DEPTH) * 1024;
        tl_fill(at, 100 + i % 900, salt + (unsigned)i);
        if (crux_tl_lane_post(pair, at, 100 + i % 900, (uint64_t)salt << 32 | i) != CRUX_OK) {
            return 1;
        }
    }
    for (uint64_t i = first; i < first + count; i++) {
        const void *got;
        size_t bytes;
        uint64_t tag;
        crux_status_t st;
        while ((st = crux_tl_lane_peek(pair, &got, &bytes, &tag)) == CRUX_INPROGRESS) {
        }
        unsigned char want[1024];
        tl_fill(want, 100 + i % 900, (1 - salt) + (unsigned)i);
        if (st != CRUX_OK || bytes != 100 + i % 900 || tag != ((uint64_t)(1 - salt) << 32 | i) ||
            memcmp(got, want, bytes) != 0) {
            return 2;
        }
        crux_tl_lane_consume(pair);
    }
    return 0;
}

static int lanes(fork_group_member_t *m, void *argp)
{
    (void)argp;
    tl_engine_t t;
    if (tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, "") != 0) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    unsigned char *buf[2], priv[64];
    const size_t size = CRUX_TL_LANE_DEPTH * 1024;
    if (pair == NULL || crux_tl_shared_alloc(t.engine, size, (void **)&buf[0]) != CRUX_OK ||
        crux_tl_shared_alloc(t.engine, size, (void **)&buf[1]) != CRUX_OK) {
        return 11;
    }
    const void *got;
    size_t bytes;
    uint64_t tag;
    int rc = 0;
    if (crux_tl_lane_post(pair, priv, sizeof(priv), 0) != CRUX_ERR_INVALID ||
        crux_tl_lane_post(pair, buf[0] + size - 8, 16, 0) != CRUX_ERR_INVALID ||
        crux_tl_lane_peek(pair, &got, &bytes, &tag) != CRUX_INPROGRESS) {
        rc = 12;
    }
    fork_group_barrier(m); /* both looked at an empty lane */
    /* a full lane, then drained */
    unsigned salt = (unsigned)m->rank;
    if (rc == 0) {
        for (uint64_t i = 0; i < CRUX_TL_LANE_DEPTH; i++) {
            rc |= crux_tl_lane_post(pair, buf[0] + i * 1024, 64, 0) != CRUX_OK ? 13 : 0;
        }
        rc |= crux_tl_lane_post(pair, buf[0], 64, 0) != CRUX_ERR_NO_RESOURCE ? 14 : 0;
        rc |= crux_tl_lane_posted(pair) != CRUX_TL_LANE_DEPTH ? 15 : 0;
    }
    while (rc == 0 && !crux_tl_lane_ready(pair, CRUX_TL_LANE_DEPTH)) {
    }
    rc |= rc == 0 &&
                  (!crux_tl_lane_ready(pair, 0) || crux_tl_lane_ready(pair, CRUX_TL_LANE_DEPTH + 1))
              ? 21
              : 0; /* a full lane is there; more than a lane holds never is */
    for (uint64_t i = 0; rc == 0 && i < CRUX_TL_LANE_DEPTH; i++) {
        crux_status_t st;
        while ((st = crux_tl_lane_peek(pair, &got, &bytes, &tag)) == CRUX_INPROGRESS) {
        }
        rc = st != CRUX_OK || bytes != 64 ? 16 : 0;
        crux_tl_lane_consume(pair);
    }
    /* all consumed, and the peer posts again only after the barrier */
    rc |= rc == 0 && crux_tl_lane_ready(pair, 1) ? 22 : 0;
    fork_group_barrier(m);
    rc |= rc == 0 && (!crux_tl_lane_consumed(pair, CRUX_TL_LANE_DEPTH) ||
                      crux_tl_lane_consumed(pair, CRUX_TL_LANE_DEPTH + 1))
              ? 17
              : 0;
    /* rounds from both buffers, written anew each round */
    for (uint64_t round = 0; round < 20 && rc == 0; round++) {
        uint64_t first = CRUX_TL_LANE_DEPTH * (round + 1) + 7 * round;
        rc = lane_round(pair, buf, first, 1 + round * 3 % CRUX_TL_LANE_DEPTH, salt) ? 18 : 0;
        fork_group_barrier(m); /* the peer read our places before we rewrite them */
    }
    rc |= rc == 0 && crux_tl_lane_check(pair) != CRUX_OK ? 19 : 0;
    fork_group_barrier(m);
    if (rc == 0 && m->rank == 0) {
        crux_tl_lane_abandon(pair);
    }
    fork_group_barrier(m);
    if (rc == 0 && (crux_tl_lane_check(pair) != CRUX_ERR_PEER ||
                    crux_tl_lane_post(pair, buf[0], 8, 0) != CRUX_ERR_PEER)) {
        rc = 20;
    }
    fork_group_barrier(m);
    crux_tl_shared_free(t.engine, buf[0]);
    crux_tl_shared_free(t.engine, buf[1]);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    return rc;
}

START_TEST(test_lanes_both_ways)
{
    ck_assert_int_eq(fork_group_run(2, lanes, NULL), 0);
}
END_TEST

/* A peer gone without a word: the survivor's lane check says so. */
static int lane_peer_dies(fork_group_member_t *m, void *argp)
{
    (void)argp;
    tl_engine_t t;
    if (tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, "") != 0) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL || crux_tl_lane_check(pair) != CRUX_OK) {
        return 11;
    }
    fork_group_barrier(m);
    if (m->rank == 1) {
        _exit(0);
    }
    const void *got;
    size_t bytes;
    uint64_t tag;
    double deadline = now_s() + 20;
    while (crux_tl_lane_check(pair) == CRUX_OK && now_s() < deadline) {
        if (crux_tl_lane_peek(pair, &got, &bytes, &tag) != CRUX_INPROGRESS) {
            return 12; /* nothing was posted */
        }
    }
    int rc = crux_tl_lane_check(pair) != CRUX_ERR_PEER ? 13 : 0;
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    return rc;
}

START_TEST(test_lane_peer_dies)
{
    ck_assert_int_eq(fork_group_run(2, lane_peer_dies, NULL), 0);
}
END_TEST

/* A member asleep on its doorbell wakes when its peer posts, long before
 * its sleep's limit; a ticket the peer has rung since doesn't sleep. */
static int doorbell(fork_group_member_t *m, void *argp)
{
    (void)argp;
    tl_engine_t t;
    if (tl_engine_open(&t, CRUX_TL_KINDS_HOST, NULL, 0, "") != 0) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    unsigned char *buf;
    if (pair == NULL || crux_tl_shared_alloc(t.engine, 4096, (void **)&buf) != CRUX_OK) {
        return 11;
    }
    int rc = 0;
    const void *got;
    size_t bytes;
    uint64_t tag;
    for (int round = 0; round < 3 && rc == 0; round++) {
        if (m->rank == 0) {
            uint32_t ticket = crux_tl_engine_doze(t.engine);
            fork_group_barrier(m); /* dozing before the peer posts */
            double start = now_s();
            while (crux_tl_lane_peek(pair, &got, &bytes, &tag) == CRUX_INPROGRESS &&
                   now_s() < start + 30) {
                crux_tl_engine_sleep(t.engine, ticket, 10.0);
                ticket = crux_tl_engine_doze(t.engine);
            }
            crux_tl_engine_sleep(t.engine, ticket, 0);
            rc = now_s() - start > 5.0 || bytes != 64 ? 12 : 0; /* woken, not timed out */
            crux_tl_lane_consume(pair);
        } else {
            fork_group_barrier(m);
            usleep(20000); /* the peer is asleep by now */
            rc = crux_tl_lane_post(pair, buf, 64, 0) != CRUX_OK ? 13 : 0;
        }
        fork_group_barrier(m);
    }
    crux_tl_shared_free(t.engine, buf);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    return rc;
}

START_TEST(test_a_post_rings_a_sleeping_peer)
{
    ck_assert_int_eq(fork_group_run(2, doorbell, NULL), 0);
}
END_TEST

static Suite *host_suite(void)
{
    Suite *s = suite_create("tl_mp_host");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_host_channels_between_two_processes);
    tcase_add_test(tc, test_without_cma_shm_carries_everything);
    tcase_add_test(tc, test_calibration_and_its_cache);
    tcase_add_test(tc, test_receiver_takes_over_from_a_sleeping_sender);
    tcase_add_test(tc, test_dead_peer_fails_the_transfer);
    tcase_add_test(tc, test_bad_cards_and_configurations);
    tcase_add_test(tc, test_streamed_receives);
    tcase_add_test(tc, test_eager_sends);
    tcase_add_test(tc, test_shared_buffers_go_in_one_copy);
    tcase_add_test(tc, test_far_peers_are_measured);
    tcase_add_test(tc, test_lanes_both_ways);
    tcase_add_test(tc, test_lane_peer_dies);
    tcase_add_test(tc, test_a_post_rings_a_sleeping_peer);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(host_suite)

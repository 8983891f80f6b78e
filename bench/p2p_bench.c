/* crux-bench-p2p: point-to-point bandwidth of the multipath transport, one
 * path (the planner's best single channel) against all paths, per message
 * size, measured in alternation within one run.
 *
 *   host   two processes, private buffers: cma get, cma put, shm staging
 *   shared two processes: all host paths from a private buffer (the "one"
 *          columns) against one send from an engine shared buffer, which
 *          goes in one copy over shm-direct (the "all" columns)
 *   model  one process, paced model channels (default 10, 5 and 2.5 GB/s):
 *          striping efficiency against the sum of the channels' bandwidths
 *   cuda   2 or more processes (pairs 0->1, 2->3, ... at once), device
 *          buffers on GPU rank % devices: IPC direct, host and peer staging
 *
 * usage: crux-bench-p2p [--mode host|shared|model|cuda] [--min SIZE] [--max SIZE]
 *          [--rounds N] [--procs N] [--model GBPS[,GBPS...]] [--latency US]
 *          [--chunk-cost US] [--no-calibrate] [--csv] [--help] [--version]
 * SIZE takes K, M and G suffixes.  Times are the best of the rounds; each
 * round measures one path then all paths, a batch of transfers each. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/crux_cuda.h"
#include "common/crux_version.h"
#include "tests/unit/fork_group.h"
#include "ucx_tl/crux_tl.h"

typedef enum { MODE_HOST, MODE_MODEL, MODE_CUDA, MODE_SHARED } bench_mode_t;

typedef struct {
    bench_mode_t mode;
    size_t min, max;
    int rounds, procs, calibrate, csv;
    unsigned nmodels;
    crux_tl_model_t models[8];
} options_t;

/* What a receiver found for one size, written to shared memory. */
typedef struct {
    size_t bytes;
    double one, all; /* best seconds per transfer */
    unsigned one_channel, all_stripes;
    unsigned one_stripes, all_channel; /* shared mode's columns */
    double memcpy_s;                   /* model mode: a plain memcpy of the same size */
} row_t;

#define MAX_ROWS 40

typedef struct {
    options_t opt;
    row_t rows[FORK_GROUP_MAX / 2][MAX_ROWS];
    unsigned nrows;
    char channels[FORK_GROUP_MAX / 2][512];
    int failed;
} shared_t;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Bytes, with an optional K, M or G suffix; 0 when not that. */
static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    double unit = 1;
    switch (*end) {
    case 'k':
    case 'K': unit = 1024; break;
    case 'm':
    case 'M': unit = 1024 * 1024; break;
    case 'g':
    case 'G': unit = 1024.0 * 1024 * 1024; break;
    default: break;
    }
    if (end == s || (unit > 1 ? end[1] : end[0]) != '\0') {
        return 0;
    }
    v *= unit;
    return v >= 1 && v <= 1099511627776.0 ? (size_t)v : 0;
}

static const char *const mode_names[] = { "host", "model", "cuda", "shared" };

static int iterations(size_t bytes)
{
    size_t n = (64u << 20) / (bytes > 0 ? bytes : 1);
    return n < 3 ? 3 : n > 100 ? 100 : (int)n;
}

/* --- memory: host or device ---------------------------------------------- */

static void *alloc_buffer(bench_mode_t mode, size_t bytes, int device)
{
#ifdef CRUX_HAVE_CUDA
    if (mode == MODE_CUDA) {
        CUdeviceptr p = 0;
        if (crux_cuda_push(device) != CRUX_OK) {
            return NULL;
        }
        if (crux_cuda()->MemAlloc(&p, bytes) != CUDA_SUCCESS) {
            p = 0;
        } else {
            crux_cuda()->MemsetD8(p, 1, bytes);
        }
        crux_cuda_pop();
        return (void *)(uintptr_t)p;
    }
#endif
    (void)device;
    void *p = malloc(bytes);
    if (p != NULL) {
        memset(p, 1, bytes);
    }
    return p;
}

static void free_buffer(bench_mode_t mode, void *p, int device)
{
#ifdef CRUX_HAVE_CUDA
    if (mode == MODE_CUDA) {
        if (p != NULL && crux_cuda_push(device) == CRUX_OK) {
            crux_cuda()->MemFree((CUdeviceptr)(uintptr_t)p);
            crux_cuda_pop();
        }
        return;
    }
#endif
    (void)mode;
    (void)device;
    free(p);
}

/* --- one measurement -------------------------------------------------------- */

/* A batch of transfers from sender to receiver; the receiver returns the
 * seconds per transfer and what the last one used. */
static double batch(crux_tl_engine_t *e, crux_tl_pair_t *pair, int sends, int receives, void *sbuf,
                    void *rbuf, size_t bytes, unsigned max_paths, crux_tl_xfer_stats_t *stats)
{
    int iters = iterations(bytes);
    crux_tl_xfer_params_t params = { .max_paths = max_paths };
    double start = now();
    for (int i = 0; i < iters; i++) {
        crux_tl_xfer_t *s = NULL, *r = NULL;
        if ((receives && crux_tl_recv(pair, rbuf, bytes, &params, &r) != CRUX_OK) ||
            (sends && crux_tl_send(pair, sbuf, bytes, NULL, &s) != CRUX_OK) ||
            (r != NULL && crux_tl_xfer_wait(r) != CRUX_OK) ||
            (s != NULL && crux_tl_xfer_wait(s) != CRUX_OK)) {
            return -1;
        }
        if (r != NULL && i == iters - 1) {
            *stats = *crux_tl_xfer_stats(r);
        }
        crux_tl_xfer_release(s);
        crux_tl_xfer_release(r);
    }
    (void)e;
    return (now() - start) / iters;
}

static void describe_channels(crux_tl_pair_t *pair, char *out, size_t len)
{
    crux_tl_chan_attr_t a[16];
    unsigned n = crux_tl_pair_channels(pair, a, 16);
    size_t at = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < n && i < 16 && at < len; i++) {
        at += (size_t)snprintf(out + at, len - at, "%s%u=%s %.2f GB/s %.1f us +%.1f us/chunk%s",
                               i > 0 ? "; " : "", i, a[i].name, a[i].bandwidth / 1e9,
                               a[i].latency * 1e6, a[i].chunk_cost * 1e6,
                               a[i].calibrated ? "" : " (nominal)");
    }
}

static double memcpy_time(size_t bytes)
{
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double best = INFINITY;
    for (int r = 0; r < 5; r++) {
        double t = now();
        memcpy(b, a, bytes);
        __asm__ volatile("" ::"r"(b) : "memory");
        best = fmin(best, now() - t);
    }
    free(a);
    free(b);
    return best;
}

/* Measure every size on one pair; 'slot' is where the receiver reports. */
static int run_pair(shared_t *sh, crux_tl_engine_t *e, crux_tl_pair_t *pair, int sends,
                    int receives, int device, int slot, fork_group_member_t *m)
{
    const options_t *o = &sh->opt;
    void *sbuf = sends ? alloc_buffer(o->mode, o->max, device) : NULL;
    void *rbuf = receives ? alloc_buffer(o->mode, o->max, device) : NULL;
    /* shared mode: the second measurement sends from a shared buffer */
    void *shared = NULL;
    if (sends && o->mode == MODE_SHARED) {
        if (crux_tl_shared_alloc(e, o->max, &shared) != CRUX_OK) {
            return 1;
        }
        memset(shared, 1, o->max);
    }
    if ((sends && sbuf == NULL) || (receives && rbuf == NULL)) {
        return 1;
    }
    unsigned row = 0;
    for (size_t bytes = o->min; bytes <= o->max && row < MAX_ROWS; bytes *= 4, row++) {
        row_t r = { .bytes = bytes, .one = INFINITY, .all = INFINITY };
        crux_tl_xfer_stats_t st = { 0 };
        for (int round = 0; round < o->rounds; round++) {
            for (unsigned paths = 1; paths <= 2; paths++) {
                if (m != NULL) {
                    fork_group_barrier(m);
                }
                int second = paths == 2 && o->mode == MODE_SHARED;
                unsigned max_paths = paths == 1 && o->mode != MODE_SHARED ? 1 : 0;
                double t = batch(e, pair, sends, receives, second ? shared : sbuf, rbuf, bytes,
                                 max_paths, &st);
                if (t < 0) {
                    return 2;
                }
                if (!receives) {
                    continue;
                }
                if (paths == 1 && t < r.one) {
                    r.one = t;
                    r.one_channel = st.nstripes > 0 ? st.stripe[0].channel : 0;
                    r.one_stripes = st.nstripes;
                } else if (paths == 2 && t < r.all) {
                    r.all = t;
                    r.all_stripes = st.nstripes;
                    r.all_channel = st.nstripes > 0 ? st.stripe[0].channel : 0;
                }
            }
        }
        if (receives) {
            if (o->mode == MODE_MODEL) {
                r.memcpy_s = memcpy_time(bytes);
            }
            sh->rows[slot][row] = r;
        }
    }
    if (receives) {
        sh->nrows = row;
        describe_channels(pair, sh->channels[slot], sizeof(sh->channels[slot]));
    }
    if (shared != NULL) {
        crux_tl_shared_free(e, shared);
    }
    free_buffer(o->mode, sbuf, device);
    free_buffer(o->mode, rbuf, device);
    return 0;
}

/* --- modes ------------------------------------------------------------------- */

static int open_engine(const options_t *o, crux_tl_context_t **ctx, crux_tl_engine_t **e)
{
    crux_tl_engine_config_t cfg = CRUX_TL_ENGINE_CONFIG_DEFAULT;
    cfg.max_peers = o->procs;
    cfg.kinds = o->mode == MODE_HOST || o->mode == MODE_SHARED ? CRUX_TL_KINDS_HOST
                : o->mode == MODE_CUDA                         ? CRUX_TL_KINDS_CUDA
                                                               : 0;
    if (o->mode == MODE_MODEL) {
        cfg.models = o->models;
        cfg.nmodels = o->nmodels;
    }
    if (crux_tl_context_open(NULL, ctx) != CRUX_OK) {
        return -1;
    }
    return crux_tl_engine_create(*ctx, &cfg, e) == CRUX_OK ? 0 : -1;
}

static int model_run(shared_t *sh)
{
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e;
    crux_tl_pair_t *pair;
    if (open_engine(&sh->opt, &ctx, &e) != 0 ||
        crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK) {
        return 1;
    }
    int rc = run_pair(sh, e, pair, 1, 1, -1, 0, NULL);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

/* Each even rank sends to the next odd one. */
static int member(fork_group_member_t *m, void *arg)
{
    shared_t *sh = arg;
    const options_t *o = &sh->opt;
    int device = -1;
    if (o->mode == MODE_CUDA) {
#ifdef CRUX_HAVE_CUDA
        crux_cuda_load(); /* the benchmark is the application: it brings the driver */
#endif
        int count = crux_tl_cuda_devices();
        if (count == 0) {
            return 3;
        }
        device = m->rank % count;
    }
    crux_tl_context_t *ctx;
    crux_tl_engine_t *e;
    if (open_engine(o, &ctx, &e) != 0) {
        return 1;
    }
    unsigned char card[FORK_GROUP_SLOT];
    static unsigned char cards[FORK_GROUP_MAX][FORK_GROUP_SLOT];
    crux_tl_pair_t *pair;
    int peer = m->rank ^ 1;
    if (crux_tl_engine_card_size(e) > FORK_GROUP_SLOT ||
        crux_tl_engine_card_pack(e, card) != CRUX_OK ||
        fork_group_allgather(card, cards, FORK_GROUP_SLOT, m) != 0 ||
        crux_tl_pair_connect(e, m->rank, peer, cards[peer], &pair) != CRUX_OK) {
        return 2;
    }
    fork_group_barrier(m);
    int receives = m->rank % 2 == 1;
    if (o->calibrate) {
        crux_status_t st =
            o->mode == MODE_CUDA
                ? (receives ? crux_tl_engine_calibrate_cuda(
                                  e, (m->rank - 1) % crux_tl_cuda_devices(), device, 0)
                            : CRUX_OK)
                : crux_tl_pair_calibrate(pair, 0);
        if (st != CRUX_OK) {
            fprintf(stderr, "crux-bench-p2p: rank %d: calibration failed: %s\n", m->rank,
                    crux_status_string(st));
        }
    }
    int rc = run_pair(sh, e, pair, !receives, receives, device, m->rank / 2, m);
    fork_group_barrier(m);
    crux_tl_pair_disconnect(pair);
    crux_tl_engine_destroy(e);
    crux_tl_context_close(ctx);
    return rc;
}

/* --- output ------------------------------------------------------------------------ */

static void print(const shared_t *sh)
{
    const options_t *o = &sh->opt;
    const char *mode = mode_names[o->mode];
    int sh_mode = o->mode == MODE_SHARED;
    double sum = 0;
    for (unsigned i = 0; i < o->nmodels; i++) {
        sum += o->models[i].bandwidth;
    }
    int pairs = o->mode == MODE_MODEL ? 1 : o->procs / 2;
    for (int p = 0; p < pairs; p++) {
        if (!o->csv) {
            printf("# crux-bench-p2p %s, pair %d (rank %d -> %d); channels: %s\n", mode, p, 2 * p,
                   2 * p + 1, sh->channels[p]);
            printf("%12s %14s %8s %14s %8s %7s", "bytes",
                   sh_mode ? "private GB/s" : "one path GB/s", sh_mode ? "stripes" : "channel",
                   sh_mode ? "shared GB/s" : "all paths GB/s", sh_mode ? "channel" : "stripes",
                   "ratio");
            if (o->mode == MODE_MODEL) {
                printf(" %12s %10s", "% of sum", "memcpy GB/s");
            }
            printf("\n");
        } else if (p == 0) {
            printf("mode,pair,bytes,one_gbps,one_channel,all_gbps,all_stripes,ratio%s\n",
                   o->mode == MODE_MODEL ? ",percent_of_sum,memcpy_gbps" : "");
        }
        for (unsigned i = 0; i < sh->nrows; i++) {
            const row_t *r = &sh->rows[p][i];
            double one = r->bytes / r->one / 1e9, all = r->bytes / r->all / 1e9;
            /* shared mode: the private measurement's stripes, the shared one's channel */
            unsigned one_n = sh_mode ? r->one_stripes : r->one_channel;
            unsigned all_n = sh_mode ? r->all_channel : r->all_stripes;
            if (o->csv) {
                printf("%s,%d,%zu,%.3f,%u,%.3f,%u,%.3f", mode, p, r->bytes, one, one_n, all, all_n,
                       all / one);
                if (o->mode == MODE_MODEL) {
                    printf(",%.1f,%.2f", 100 * all * 1e9 / sum, r->bytes / r->memcpy_s / 1e9);
                }
            } else {
                printf("%12zu %14.2f %8u %14.2f %8u %6.2fx", r->bytes, one, one_n, all, all_n,
                       all / one);
                if (o->mode == MODE_MODEL) {
                    printf(" %11.1f%% %10.2f", 100 * all * 1e9 / sum, r->bytes / r->memcpy_s / 1e9);
                }
            }
            printf("\n");
        }
    }
}

static int usage(FILE *f, int status)
{
    fprintf(f, "usage: crux-bench-p2p [--mode host|shared|model|cuda] [--min SIZE] [--max SIZE] "
               "[--rounds N]\n"
               "         [--procs N] [--model GBPS[,GBPS...]] [--latency US] [--chunk-cost US]\n"
               "         [--no-calibrate] [--csv] [--help] [--version]\n"
               "SIZE takes K, M and G suffixes.  Exit status: 0 success, 1 a failed run,\n"
               "2 a bad option.\n");
    return status;
}

/* A one-line error naming the option; -1. */
static int bad(char *err, size_t len, const char *option, const char *value, const char *want)
{
    snprintf(err, len, "%s: bad value '%s' (%s)", option, value, want);
    return -1;
}

static int number(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        return -1;
    }
    *out = v;
    return 0;
}

static int parse(int argc, char **argv, options_t *o, char *err, size_t len)
{
    double latency = 5e-6, chunk_cost = 1e-6, v;
    const char *model = "10,5,2.5";
    int min_given = 0;
    o->mode = MODE_HOST;
    o->rounds = 5;
    o->procs = 2;
    o->calibrate = 1;
    o->min = 4096;
    o->max = 64u << 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--no-calibrate") == 0) {
            o->calibrate = 0;
            continue;
        }
        if (strcmp(a, "--csv") == 0) {
            o->csv = 1;
            continue;
        }
        static const char *const valued[] = { "--mode",  "--min",   "--max",     "--rounds",
                                              "--procs", "--model", "--latency", "--chunk-cost" };
        int known = 0;
        for (size_t k = 0; k < sizeof(valued) / sizeof(valued[0]); k++) {
            known |= strcmp(a, valued[k]) == 0;
        }
        if (!known) {
            snprintf(err, len, "unknown option '%s' (see --help)", a);
            return -1;
        }
        if (i + 1 == argc) {
            snprintf(err, len, "%s needs a value", a);
            return -1;
        }
        const char *val = argv[++i];
        if (strcmp(a, "--mode") == 0) {
            o->mode = (bench_mode_t)-1;
            for (int m = 0; m < 4; m++) {
                o->mode = strcmp(val, mode_names[m]) == 0 ? (bench_mode_t)m : o->mode;
            }
            if ((int)o->mode < 0) {
                return bad(err, len, a, val, "host, shared, model, cuda");
            }
        } else if (strcmp(a, "--min") == 0 || strcmp(a, "--max") == 0) {
            size_t size = parse_size(val);
            if (size == 0) {
                return bad(err, len, a, val, "bytes, K, M, G");
            }
            *(strcmp(a, "--min") == 0 ? &o->min : &o->max) = size;
            min_given |= strcmp(a, "--min") == 0;
        } else if (strcmp(a, "--rounds") == 0) {
            if (number(val, 1, 1000, &v) != 0 || v != (int)v) {
                return bad(err, len, a, val, "1 to 1000");
            }
            o->rounds = (int)v;
        } else if (strcmp(a, "--procs") == 0) {
            if (number(val, 2, FORK_GROUP_MAX, &v) != 0 || v != (int)v || (int)v % 2 != 0) {
                snprintf(err, len, "--procs: bad value '%s' (an even number, 2 to %d)", val,
                         FORK_GROUP_MAX);
                return -1;
            }
            o->procs = (int)v;
        } else if (strcmp(a, "--model") == 0) {
            model = val;
        } else if (number(val, 0, 1e6, &v) != 0) {
            return bad(err, len, a, val, "microseconds, 0 to 1e6");
        } else {
            *(strcmp(a, "--latency") == 0 ? &latency : &chunk_cost) = v * 1e-6;
        }
    }
    char copy[256];
    snprintf(copy, sizeof(copy), "%s", model);
    for (char *save, *tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->nmodels == 8 || number(tok, 1e-3, 1e4, &v) != 0) {
            return bad(err, len, "--model", model, "up to 8 GB/s figures, 0.001 to 10000");
        }
        o->models[o->nmodels++] =
            (crux_tl_model_t){ .bandwidth = v * 1e9, .latency = latency, .chunk_cost = chunk_cost };
    }
    if (o->nmodels == 0) {
        return bad(err, len, "--model", model, "up to 8 GB/s figures, 0.001 to 10000");
    }
    if (o->mode == MODE_MODEL && !min_given) {
        o->min = 64u << 10; /* below, one model channel's latency dominates */
    }
    if (o->max < o->min) {
        snprintf(err, len, "--min %zu is above --max %zu", o->min, o->max);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return usage(stdout, 0);
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            crux_version_print(stdout, "crux-bench-p2p");
            return 0;
        }
    }
    shared_t *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("crux-bench-p2p: mmap");
        return 1;
    }
    memset(sh, 0, sizeof(*sh));
    char err[256];
    if (parse(argc, argv, &sh->opt, err, sizeof(err)) != 0) {
        fprintf(stderr, "crux-bench-p2p: %s\n", err);
        return 2;
    }
    /* CUDA must not be initialised before fork: children check for GPUs. */
    int failed =
        sh->opt.mode == MODE_MODEL ? model_run(sh) : fork_group_run(sh->opt.procs, member, sh);
    if (failed) {
        fprintf(stderr, "crux-bench-p2p: %s\n",
                sh->opt.mode == MODE_CUDA ? "failed (no GPU, or a CUDA error)" : "failed");
        return 1;
    }
    print(sh);
    return 0;
}

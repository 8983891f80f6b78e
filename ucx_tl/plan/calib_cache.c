/* Calibration: measure a channel's bandwidth, latency and per-chunk cost
 * with a few short transfers, and keep the figures per node in a cache file
 * so that later runs start with them.
 *
 * Each channel is timed (best of three) on a tiny transfer, on a large one in
 * a few chunks and on the same in many chunks.  The planner's model gives,
 * for n bytes in k chunks through h hops with enough depth,
 *     t = latency + (k + h - 1) * chunk_cost + n (k + h - 1) / (k bandwidth)
 * so the three times give three linear equations in (latency, chunk_cost,
 * 1 / bandwidth).
 *
 * Cache file: "crux-calibration 1", then one line per channel signature:
 * "<signature> <bytes per second> <latency s> <chunk cost s>"; '#' starts a
 * comment.  It is rewritten whole under a lock file and replaced by rename,
 * so readers never see half of it.  Its directory must be the user's (or
 * root's and sticky, like /tmp) and the files regular files of the user:
 * anything else is not read nor written (see common/crux_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crux_file.h"
#include "ucx_tl/core/core_internal.h"

#define CALIB_BYTES  (4u << 20)
#define CALIB_TINY   64u
#define CALIB_REPS   3
#define CALIB_STEPS  3 /* tiny, large in few chunks, large in many */
#define CACHE_HEADER "crux-calibration 1"
#define CACHE_LINES  256

void crux_tl_calib_path(crux_tl_engine_t *e, const char *path)
{
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (path != NULL) {
        snprintf(e->calib_path, sizeof(e->calib_path), "%s", path);
    } else if (xdg != NULL && xdg[0] == '/') {
        snprintf(e->calib_path, sizeof(e->calib_path), "%s/crux/calibration-%s", xdg, host);
    } else {
        snprintf(e->calib_path, sizeof(e->calib_path), "/tmp/crux-%u/calibration-%s",
                 (unsigned)geteuid(), host);
    }
}

const char *crux_tl_engine_calib_path(const crux_tl_engine_t *e)
{
    return e->calib_path;
}

/* --- the cache file ------------------------------------------------------------ */

typedef struct {
    char signature[96];
    double bandwidth, latency, chunk_cost;
} cache_line_t;

/* The cache is read only from a safe directory and only if it is a
 * regular file of ours (the default place is in /tmp, where another user
 * may have made the directory or put a link or their own file). */
static unsigned cache_read(const char *path, cache_line_t *lines, unsigned max)
{
    int fd = crux_parent_safe(path, NULL, 0) == 0 ? crux_open_own(path, O_RDONLY, 0) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (f == NULL) {
        if (fd >= 0) {
            close(fd);
        }
        return 0;
    }
    char text[256];
    unsigned n = 0;
    int header = fgets(text, sizeof(text), f) != NULL &&
                 strncmp(text, CACHE_HEADER, strlen(CACHE_HEADER)) == 0;
    while (header && n < max && fgets(text, sizeof(text), f) != NULL) {
        cache_line_t *l = &lines[n];
        if (text[0] != '#' &&
            sscanf(text, "%95s %lf %lf %lf", l->signature, &l->bandwidth, &l->latency,
                   &l->chunk_cost) == 4 &&
            l->bandwidth > 0 && isfinite(l->bandwidth) && l->latency >= 0 && isfinite(l->latency) &&
            l->chunk_cost >= 0 && isfinite(l->chunk_cost)) { /* 1e405 is inf: fuzz_calib */
            n++;
        }
    }
    fclose(f);
    return n;
}

int crux_tl_calib_lookup(crux_tl_engine_t *e, crux_tl_chan_t *chan)
{
    if (e->calib_path[0] == '\0' || chan->signature[0] == '\0') {
        return 0;
    }
    cache_line_t lines[CACHE_LINES];
    unsigned n = cache_read(e->calib_path, lines, CACHE_LINES);
    for (unsigned i = 0; i < n; i++) {
        if (strcmp(lines[i].signature, chan->signature) == 0) {
            chan->attr.bandwidth = lines[i].bandwidth;
            chan->attr.latency = lines[i].latency;
            chan->attr.chunk_cost = lines[i].chunk_cost;
            chan->attr.calibrated = 1;
            return 1;
        }
    }
    return 0;
}

static int make_dirs(char *path)
{
    for (char *p = path + 1; *p != '\0'; p++) {
        if (*p == '/') {
            *p = '\0';
            int bad = mkdir(path, 0700) != 0 && errno != EEXIST;
            *p = '/';
            if (bad) {
                return -1;
            }
        }
    }
    return 0;
}

/* Best effort: a node without a writable cache directory calibrates anew. */
void crux_tl_calib_store(crux_tl_engine_t *e, crux_tl_chan_t *const *chans, unsigned count)
{
    if (e->calib_path[0] == '\0' || count == 0) {
        return;
    }
    char lock_path[540], tmp_path[560];
    snprintf(lock_path, sizeof(lock_path), "%s.lock", e->calib_path);
    snprintf(tmp_path, sizeof(tmp_path), "%s.XXXXXX", e->calib_path);
    /* a directory another user made or can write is not used: calibrate
     * anew next time rather than write through their links */
    if (make_dirs(lock_path) != 0 || crux_parent_safe(lock_path, NULL, 0) != 0) {
        return;
    }
    int lock = crux_open_own(lock_path, O_RDWR | O_CREAT, 0600);
    if (lock < 0) {
        return;
    }
    flock(lock, LOCK_EX);
    cache_line_t lines[CACHE_LINES];
    unsigned n = cache_read(e->calib_path, lines, CACHE_LINES);
    for (unsigned c = 0; c < count; c++) {
        const crux_tl_chan_t *chan = chans[c];
        unsigned i = 0;
        while (i < n && strcmp(lines[i].signature, chan->signature) != 0) {
            i++;
        }
        if (i == n && n == CACHE_LINES) {
            continue;
        }
        n += i == n;
        snprintf(lines[i].signature, sizeof(lines[i].signature), "%s", chan->signature);
        lines[i].bandwidth = chan->attr.bandwidth;
        lines[i].latency = chan->attr.latency;
        lines[i].chunk_cost = chan->attr.chunk_cost;
    }
    int fd = mkstemp(tmp_path); /* O_EXCL, mode 0600: never through a link */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL && fd >= 0) {
        close(fd);
        unlink(tmp_path);
    }
    if (f != NULL) {
        fprintf(f, "%s\n# signature  bytes/s  latency_s  chunk_cost_s\n", CACHE_HEADER);
        for (unsigned i = 0; i < n; i++) {
            fprintf(f, "%s %.6g %.6g %.6g\n", lines[i].signature, lines[i].bandwidth,
                    lines[i].latency, lines[i].chunk_cost);
        }
        if (fclose(f) != 0 || rename(tmp_path, e->calib_path) != 0) {
            unlink(tmp_path);
        }
    }
    flock(lock, LOCK_UN);
    close(lock);
}

/* --- fitting ----------------------------------------------------------------------- */

void crux_tl_calib_fit(crux_tl_chan_attr_t *attr, const double *t, const double *k, const double *n)
{
    double h = attr->hops > 0 ? attr->hops : 1;
    double m[3][4];
    for (int i = 0; i < 3; i++) {
        m[i][0] = 1.0;
        m[i][1] = k[i] + h - 1;
        m[i][2] = n[i] * (k[i] + h - 1) / k[i];
        m[i][3] = t[i];
    }
    for (int c = 0; c < 3; c++) { /* Gaussian elimination, partial pivoting */
        int p = c;
        for (int i = c + 1; i < 3; i++) {
            if (fabs(m[i][c]) > fabs(m[p][c])) {
                p = i;
            }
        }
        for (int j = 0; j < 4; j++) {
            double tmp = m[c][j];
            m[c][j] = m[p][j];
            m[p][j] = tmp;
        }
        for (int i = 0; i < 3; i++) {
            if (i != c && m[c][c] != 0.0) {
                double f = m[i][c] / m[c][c];
                for (int j = c; j < 4; j++) {
                    m[i][j] -= f * m[c][j];
                }
            }
        }
    }
    double latency = m[0][3] / m[0][0], cost = m[1][3] / m[1][1], inv_bw = m[2][3] / m[2][2];
    /* Noise can push a small term below zero; then fall back on the large
     * transfer in few chunks alone for the bandwidth. */
    if (!(inv_bw > 0) || !isfinite(inv_bw)) {
        inv_bw = t[1] / n[1];
    }
    attr->bandwidth = 1.0 / inv_bw;
    attr->latency = isfinite(latency) && latency > 0 ? latency : 0.0;
    attr->chunk_cost = isfinite(cost) && cost > 0 ? cost : 0.0;
    attr->calibrated = 1;
}

/* --- pairs ------------------------------------------------------------------------ */

static crux_status_t wait_word(crux_tl_pair_t *pair, const uint64_t *word, uint64_t target)
{
    for (unsigned polls = 1; mp_load(word) < target; polls++) {
        if (crux_tl_engine_progress(pair->engine) == 0) {
            sched_yield();
        }
        if (polls % 4096 == 0 && !crux_tl_peer_alive(pair)) {
            return CRUX_ERR_PEER;
        }
    }
    return CRUX_OK;
}

static int measurable(const crux_tl_pair_t *pair, const crux_tl_chan_t *c)
{
    switch (c->attr.kind) {
    case CRUX_TL_CHAN_CMA_GET: return c->usable;
    case CRUX_TL_CHAN_CMA_PUT: return (mp_load(&pair->theirs->caps) & CAP_CMA) != 0;
    case CRUX_TL_CHAN_SHM: return 1;
    default: return 0; /* model channels are exact already */
    }
}

typedef struct {
    crux_tl_pair_t *pair;
    int sends, receives;
    uint8_t *sbuf, *rbuf;
} calib_run_t;

/* One transfer of the schedule; the receiver returns its time in *t. */
static crux_status_t one(calib_run_t *r, size_t bytes, unsigned index, size_t chunk, double *t)
{
    crux_tl_xfer_t *s = NULL, *v = NULL;
    crux_tl_xfer_params_t params = { .channels = 1u << index, .chunk = chunk };
    crux_status_t st = CRUX_OK;
    if (r->receives) {
        st = crux_tl_recv(r->pair, r->rbuf, bytes, &params, &v);
    }
    if (st == CRUX_OK && r->sends) {
        st = crux_tl_send(r->pair, r->sbuf, bytes, NULL, &s);
    }
    crux_status_t ss = s != NULL ? crux_tl_xfer_wait(s) : CRUX_OK;
    crux_status_t vs = v != NULL ? crux_tl_xfer_wait(v) : CRUX_OK;
    if (v != NULL && vs == CRUX_OK && crux_tl_xfer_stats(v)->elapsed < *t) {
        *t = crux_tl_xfer_stats(v)->elapsed;
    }
    crux_tl_xfer_release(s);
    crux_tl_xfer_release(v);
    return st != CRUX_OK ? st : ss != CRUX_OK ? ss : vs;
}

/* Sizes and chunk sizes of the three steps for a channel. */
static void steps(const crux_tl_chan_attr_t *a, double *n, double *k, size_t *chunk)
{
    size_t big = CALIB_BYTES / 4 < a->max_chunk ? CALIB_BYTES / 4 : a->max_chunk;
    n[0] = CALIB_TINY;
    chunk[0] = CALIB_TINY;
    n[1] = CALIB_BYTES;
    chunk[1] = big;
    n[2] = CALIB_BYTES;
    chunk[2] = big / 8 >= CRUX_TL_GRANULE ? big / 8 : CRUX_TL_GRANULE;
    for (int i = 0; i < CALIB_STEPS; i++) {
        k[i] = ceil(n[i] / (double)chunk[i]);
    }
}

crux_status_t crux_tl_pair_calibrate(crux_tl_pair_t *pair, int force)
{
    uint64_t round = ++pair->calib_round;
    calib_run_t r = { .pair = pair,
                      .sends = pair->loopback || pair->rank < pair->peer,
                      .receives = pair->loopback || pair->rank > pair->peer };
    crux_tl_chan_t *measured[CRUX_TL_MAX_CHANS];
    unsigned count = 0;
    if (r.receives) {
        for (unsigned i = 0; i < pair->nhost; i++) {
            crux_tl_chan_t *c = pair->chan[i];
            if (measurable(pair, c) && (force || !c->attr.calibrated)) {
                measured[count++] = c;
            }
        }
        pair->mine->calib_count = count;
        mp_store(&pair->mine->calib_start, round);
    } else {
        crux_status_t st = wait_word(pair, &pair->theirs->calib_start, round);
        if (st != CRUX_OK) {
            return st;
        }
        count = pair->theirs->calib_count;
    }
    r.sbuf = calloc(1, CALIB_BYTES);
    r.rbuf = calloc(1, CALIB_BYTES);
    crux_status_t st = r.sbuf != NULL && r.rbuf != NULL ? CRUX_OK : CRUX_ERR_NO_MEMORY;
    for (unsigned c = 0; c < count && st == CRUX_OK; c++) {
        /* the sender only needs the sizes, which do not depend on the channel */
        const crux_tl_chan_attr_t *a = r.receives ? &measured[c]->attr : NULL;
        crux_tl_chan_attr_t any = { .max_chunk = CALIB_BYTES };
        double n[CALIB_STEPS], k[CALIB_STEPS], t[CALIB_STEPS];
        size_t chunk[CALIB_STEPS];
        steps(a != NULL ? a : &any, n, k, chunk);
        unsigned index = 0;
        while (r.receives && pair->chan[index] != measured[c]) {
            index++;
        }
        for (int s = 0; s < CALIB_STEPS && st == CRUX_OK; s++) {
            t[s] = INFINITY;
            for (int rep = 0; rep < CALIB_REPS && st == CRUX_OK; rep++) {
                st = one(&r, (size_t)n[s], index, chunk[s], &t[s]);
            }
        }
        if (st == CRUX_OK && r.receives) {
            crux_tl_calib_fit(&measured[c]->attr, t, k, n);
        }
    }
    free(r.sbuf);
    free(r.rbuf);
    if (st != CRUX_OK) {
        return st;
    }
    if (r.receives) {
        for (unsigned i = 0; i < pair->nhost; i++) {
            const crux_tl_chan_attr_t *a = &pair->chan[i]->attr;
            pair->mine->calib[i] = (crux_tl_wire_calib_t){
                .bandwidth = a->bandwidth,
                .latency = a->latency,
                .chunk_cost = a->chunk_cost,
                .index = a->calibrated ? (int32_t)i : -1,
            };
        }
        /* cached first, so a pair the sender opens next finds the figures */
        crux_tl_calib_store(pair->engine, measured, count);
        mp_store(&pair->mine->calib_done, round);
    } else {
        st = wait_word(pair, &pair->theirs->calib_done, round);
        for (unsigned i = 0; st == CRUX_OK && i < pair->nhost; i++) {
            const crux_tl_wire_calib_t *w = &pair->theirs->calib[i];
            if (w->index == (int32_t)i && pair->chan[i]->attr.kind != CRUX_TL_CHAN_MODEL) {
                pair->chan[i]->attr.bandwidth = w->bandwidth;
                pair->chan[i]->attr.latency = w->latency;
                pair->chan[i]->attr.chunk_cost = w->chunk_cost;
                pair->chan[i]->attr.calibrated = 1;
            }
        }
    }
    crux_tl_plan_invalidate(pair);
    return st;
}

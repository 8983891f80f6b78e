/* Calibration of a pair's host channels: a few short transfers per
 * channel, timed by the receiver, fitted (plan/crux_tl_calib_cache.c) and published
 * to the sender through the control areas. */
#include <math.h>
#include <stdlib.h>

#include "common/crux_idle.h"
#include "ucx_tl/engine/crux_tl_engine_internal.h"
#include "ucx_tl/plan/crux_tl_plan_internal.h"

#define CALIB_BYTES (4u << 20)
#define CALIB_TINY  64u
#define CALIB_REPS  3
#define CALIB_STEPS 3 /* tiny, large in few chunks, large in many */

/* Wait for the peer to bring 'word' to 'target', in the wait loops' policy
 * (common/crux_idle.h): yielding at once, since the peer must run to write
 * it (it may share our core), and never sleeping, since it rings no
 * doorbell; its liveness is checked when the policy says it is due. */
static crux_status_t wait_word(crux_tl_pair_t *pair, const uint64_t *word, uint64_t target)
{
    crux_idle_t idle = crux_idle_start(0);
    while (mp_load(word) < target) {
        if (crux_tl_engine_progress(pair->engine) > 0) {
            crux_idle_reset(&idle);
            continue;
        }
        (void)crux_idle_poll(&idle, 0);
        if (crux_idle_check_due(&idle) && !crux_tl_peer_alive(pair)) {
            /* it may have written the word and exited since our look */
            return mp_load(word) >= target ? CRUX_OK : CRUX_ERR_PEER;
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

/* Issuing a transfer's runs to their channels, and what the channels call
 * back on each chunk: landing its bytes (a copy or a streamed copy), and
 * retiring it. */
#include <string.h>

#include "common/crux_copy.h"
#include "ucx_tl/core/crux_tl_core_internal.h"

void crux_tl_land(const crux_tl_xfer_t *x, size_t at, const void *src, size_t length)
{
    uint8_t *out = x->buffer + at;
    if (x->params.stream) {
        crux_copy_stream(out, src, length);
    } else {
        memcpy(out, src, length);
    }
}

void crux_tl_xfer_fail(crux_tl_xfer_t *x, crux_status_t status)
{
    if (!x->failed) {
        x->failed = 1;
        x->status = status;
    }
}

/* A chunk lands at its place in the transfer's buffer. */
static void chunk_land(const crux_tl_chunk_t *c, size_t at, const void *src, size_t length)
{
    const crux_tl_xfer_t *x = c->xfer;
    crux_tl_land(x, (size_t)((uint8_t *)c->dst - x->buffer) + at, src, length);
}

void crux_tl_chunk_settle(const crux_tl_chunk_t *c)
{
    crux_tl_xfer_t *x = c->xfer;
    crux_tl_run_t *run = &x->run[c->run];
    run->inflight--;
    if (c->status == CRUX_OK) {
        run->landed += c->length;
        run->chunks++;
    } else {
        crux_tl_xfer_fail(x, c->status);
    }
}

static void chunk_finish(crux_tl_chunk_t *c)
{
    crux_tl_chunk_settle(c);
    crux_tl_chunk_put(c->xfer->pair->engine, c);
}

static const crux_tl_chunk_owner_t chunk_owner = { chunk_land, chunk_finish };

unsigned crux_tl_xfer_issue(crux_tl_pair_t *pair, crux_tl_xfer_t *x)
{
    unsigned events = 0;
    for (unsigned i = 0; i < x->nruns && !x->failed; i++) {
        crux_tl_run_t *run = &x->run[i];
        crux_tl_chan_t *chan = run->chan;
        if (chan == NULL || chan->ops->issue == NULL) {
            continue;
        }
        while (run->issued < run->bytes && run->inflight < run->depth &&
               chan->inflight < chan->attr.max_depth) {
            crux_tl_chunk_t *c = crux_tl_chunk_get(pair->engine);
            if (c == NULL) {
                crux_tl_xfer_fail(x, CRUX_ERR_NO_MEMORY);
                return events;
            }
            size_t at = run->offset + run->issued;
            c->owner = &chunk_owner;
            c->xfer = x;
            c->run = i;
            c->length =
                run->bytes - run->issued < run->chunk ? run->bytes - run->issued : run->chunk;
            if (x->is_send) {
                c->src = x->buffer + at;
            } else {
                c->dst = x->buffer + at;
                c->src = (const uint8_t *)x->peer_mapped + at;
            }
            c->remote = x->peer_addr + at;
            crux_status_t st = crux_tl_chan_start(chan, c);
            if (st != CRUX_OK) {
                crux_tl_chunk_put(pair->engine, c);
                crux_tl_xfer_fail(x, st);
                return events;
            }
            run->inflight++;
            run->issued += c->length;
            events++;
        }
    }
    return events;
}

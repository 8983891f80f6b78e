/* The machinery every channel kind shares: names, the clock, and the poll
 * that retires finished chunks through their owners. */
#include <stdio.h>
#include <time.h>

#include "ucx_tl/chan/crux_tl_chan_internal.h"

static const char *const kind_names[CRUX_TL_CHAN_KIND_COUNT] = {
    "cma-get", "cma-put", "shm", "shm-direct", "model", "cuda-ipc", "cuda-peer", "cuda-host",
};

const char *crux_tl_chan_kind_name(crux_tl_chan_kind_t kind)
{
    return (unsigned)kind < CRUX_TL_CHAN_KIND_COUNT ? kind_names[kind] : "unknown";
}

double crux_tl_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void crux_tl_chan_init(crux_tl_chan_t *chan, const crux_tl_chan_ops_t *ops,
                       crux_tl_chan_kind_t kind, const char *name)
{
    chan->ops = ops;
    chan->attr.kind = kind;
    snprintf(chan->attr.name, sizeof(chan->attr.name), "%s", name);
    chan->usable = 1;
}

unsigned crux_tl_chan_poll(crux_tl_chan_t *chan)
{
    unsigned done = 0;
    chan->moved = 0;
    crux_tl_chunk_t **link = &chan->head, *prev = NULL;
    uint32_t blocked = 0, all = chan->ordered_queues > 0 && chan->ordered_queues < 32
                                    ? (1u << chan->ordered_queues) - 1
                                    : 0;
    while (*link != NULL && (all == 0 || blocked != all)) {
        crux_tl_chunk_t *c = *link;
        uint32_t queue = all != 0 ? 1u << c->queue : 0;
        if ((blocked & queue) != 0 || !chan->ops->test(chan, c)) {
            blocked |= queue; /* later chunks of its queue are not done either */
            prev = c;
            link = &c->next;
            continue;
        }
        *link = c->next;
        if (chan->tail == c) {
            chan->tail = prev;
        }
        chan->inflight--;
        done++;
        c->owner->finish(c);
    }
    return done + chan->moved;
}

crux_status_t crux_tl_chan_start(crux_tl_chan_t *chan, crux_tl_chunk_t *c)
{
    crux_status_t st = chan->ops->issue(chan, c);
    if (st != CRUX_OK) {
        return st;
    }
    c->next = NULL;
    if (chan->tail != NULL) {
        chan->tail->next = c;
    } else {
        chan->head = c;
    }
    chan->tail = c;
    chan->inflight++;
    return CRUX_OK;
}

int crux_tl_chan_lands_by_receiver(crux_tl_chan_kind_t kind)
{
    return kind == CRUX_TL_CHAN_SHM || kind == CRUX_TL_CHAN_SHM_DIRECT ||
           kind == CRUX_TL_CHAN_MODEL;
}

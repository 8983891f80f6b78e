/* The shm channel: the sender copies chunks into the slots of its control
 * area, the receiver copies them out.  The slots of one direction form a
 * FIFO shared by every transfer in flight: chunk n goes to slot n % slots,
 * the sender writes it once the receiver has acknowledged chunk n - slots,
 * and each slot names the transfer and offset its chunk belongs to, so the
 * receiver needs no plan to place it. */
#include <string.h>

#include "ucx_tl/engine/crux_tl_engine_internal.h"

static crux_tl_run_t *shm_run(crux_tl_xfer_t *x)
{
    for (unsigned i = 0; i < x->nruns; i++) {
        if (x->run[i].kind == CRUX_TL_CHAN_SHM) {
            return &x->run[i];
        }
    }
    return NULL;
}

void crux_tl_shm_eager_run(const crux_tl_pair_t *pair, size_t bytes, crux_tl_run_t *run)
{
    int index = crux_tl_pair_channel(pair, CRUX_TL_CHAN_SHM);
    memset(run, 0, sizeof(*run));
    run->kind = CRUX_TL_CHAN_SHM;
    run->bytes = bytes;
    if (index >= 0) { /* (a receiver without shm only drains the slots: any figures do) */
        run->index = (unsigned)index;
        run->chunk = pair->chan[index]->attr.max_chunk;
        run->depth = pair->chan[index]->attr.max_depth;
    } else {
        run->chunk = pair->engine->config.shm_slot_size;
        run->depth = 1;
    }
}

unsigned crux_tl_shm_stage(crux_tl_pair_t *pair)
{
    const crux_tl_engine_config_t *cfg = &pair->engine->config;
    unsigned events = 0;
    for (crux_tl_xfer_t *x = pair->sends; x != NULL; x = x->next) {
        crux_tl_run_t *run = x->state == XFER_ACTIVE ? shm_run(x) : NULL;
        while (run != NULL && run->issued < run->bytes) {
            unsigned k = (unsigned)(pair->staged_tx % cfg->shm_slots);
            if (pair->staged_tx >= cfg->shm_slots &&
                mp_load(&pair->theirs->ack[k].consumed) < pair->staged_tx - cfg->shm_slots + 1) {
                return events; /* the FIFO is full */
            }
            size_t length =
                run->bytes - run->issued < run->chunk ? run->bytes - run->issued : run->chunk;
            crux_tl_wire_slot_t *slot = &pair->mine->slot[k];
            memcpy(pair->my_slots + (size_t)k * cfg->shm_slot_size,
                   x->buffer + run->offset + run->issued, length);
            slot->seq = x->seq;
            slot->offset = run->offset + run->issued;
            slot->bytes = length;
            mp_store(&slot->full, ++pair->staged_tx);
            run->issued += length;
            run->landed += length;
            run->chunks++;
            events++;
        }
    }
    return events;
}

unsigned crux_tl_shm_drain(crux_tl_pair_t *pair)
{
    const crux_tl_engine_config_t *cfg = &pair->engine->config;
    unsigned events = 0;
    for (;;) {
        unsigned k = (unsigned)(pair->staged_rx % cfg->shm_slots);
        const crux_tl_wire_slot_t *slot = &pair->theirs->slot[k];
        if (mp_load(&slot->full) != pair->staged_rx + 1) {
            return events;
        }
        crux_tl_xfer_t *x = pair->recvs;
        while (x != NULL && x->seq != slot->seq) {
            x = x->next;
        }
        crux_tl_run_t *run = x != NULL ? shm_run(x) : NULL;
        if (run == NULL) {
            return events; /* an eager send's chunks wait for the receive's match */
        }
        if (!x->failed) {
            crux_tl_land(x, slot->offset, pair->their_slots + (size_t)k * cfg->shm_slot_size,
                         slot->bytes);
        }
        run->landed += slot->bytes;
        run->chunks++;
        mp_store(&pair->mine->ack[k].consumed, ++pair->staged_rx);
        events++;
    }
}

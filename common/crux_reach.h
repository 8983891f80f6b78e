/* How far a peer process's caches are from ours, measured on the words it
 * publishes to us (libcrux_tl's ring entries, libcrux_coll's progress words).
 *
 * A load that finds a word the peer has written since we last read it
 * brings the line from the peer's cache: it takes about one cache-to-cache
 * transfer.  Within one last-level cache that is some 50 ns; across
 * chiplets or sockets three to four times as much, and then every line the
 * peer reads from our caches costs as much, which streaming stores (to
 * memory, crux_copy_stream) avoid.  The median over a window of such loads
 * decides, so the odd load that found the line already here, or was
 * preempted, does not; each window decides anew, as processes that are not
 * bound may move. */
#ifndef CRUX_REACH_H
#define CRUX_REACH_H

#include <stdint.h>

#define CRUX_REACH_SAMPLES 15    /* timed loads per decision */
#define CRUX_REACH_EVERY   8     /* turns per timed one (a timed look costs fences) */
#define CRUX_REACH_FAR     90e-9 /* seconds, clock reads included: past it, far */

typedef struct {
    uint64_t sample[CRUX_REACH_SAMPLES]; /* ticks, this window */
    unsigned n;
    int far;       /* the last window's verdict (0 before) */
    uint64_t draw; /* crux_reach_turn's generator */
} crux_reach_t;

/* Whether this turn (a wait, or a look at a word) on this peer times its
 * looks: one in CRUX_REACH_EVERY, drawn at random, so a fixed pattern of
 * turns per call cannot keep one kind of turn (one that never waits long)
 * always chosen. */
static inline int crux_reach_turn(crux_reach_t *r)
{
    r->draw = r->draw * 6364136223846793005ull + 1442695040888963407ull;
    return (r->draw >> 33) % CRUX_REACH_EVERY == 0; /* the generator's better bits */
}

/* Load a word the peer writes (acquire), and the ticks the load took. */
uint64_t crux_reach_load(const uint64_t *word, uint64_t *ticks);

/* Count a load that found the peer's new value; a full window decides
 * whether the peer is far: its median past 'far_latency' seconds (0: the
 * default, CRUX_REACH_FAR). */
void crux_reach_sample(crux_reach_t *reach, uint64_t ticks, double far_latency);

#endif

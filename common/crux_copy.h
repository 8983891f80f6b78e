/* Copies that bypass the cache, for libcrux_coll's results and libcrux_tl's
 * landings.  A large result written with ordinary stores costs a read of
 * every destination line first (read-for-ownership) and evicts data still
 * needed; streaming stores skip both, which matters once messages outgrow
 * the last-level cache. */
#ifndef CRUX_COPY_H
#define CRUX_COPY_H

#include <stddef.h>
#include <string.h>

/* memcpy with non-temporal stores where the CPU has them (else memcpy).
 * The stores are weakly ordered: call crux_copy_fence() before anyone else
 * may read the destination. */
void crux_copy_stream(void *dst, const void *src, size_t length);
void crux_copy_fence(void);

/* Whether a write of 'length' bytes that a peer process reads next goes
 * with streaming stores: when the peer is 'far' from our caches
 * (common/crux_reach.h), and not for a few lines, which cost little to
 * snoop and more to read back from memory. */
static inline int crux_copy_streams_to(int far, size_t length)
{
    return far && length >= 4096;
}

/* Such a write: streamed or memcpy, as crux_copy_streams_to says (a
 * streamed one needs crux_copy_fence before the peer is told). */
static inline void crux_copy_to(void *dst, const void *src, size_t length, int far)
{
    if (crux_copy_streams_to(far, length)) {
        crux_copy_stream(dst, src, length);
    } else {
        memcpy(dst, src, length);
    }
}

#endif

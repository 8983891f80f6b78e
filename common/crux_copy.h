/* Copies that bypass the cache, for libcrux_coll's results and libcrux_tl's
 * landings.  A large result written with ordinary stores costs a read of
 * every destination line first (read-for-ownership) and evicts data still
 * needed; streaming stores skip both, which matters once messages outgrow
 * the last-level cache. */
#ifndef CRUX_COPY_H
#define CRUX_COPY_H

#include <stddef.h>

/* memcpy with non-temporal stores where the CPU has them (else memcpy).
 * The stores are weakly ordered: call crux_copy_fence() before anyone else
 * may read the destination. */
void crux_copy_stream(void *dst, const void *src, size_t length);
void crux_copy_fence(void);

#endif

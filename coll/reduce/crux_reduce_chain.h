/* Internal to libcrux_coll: a chunk's reduction over every
 * member's input, in rank order, shared by the algorithms that have all the
 * inputs in place at once (the flags Allreduce, the lanes of host calls
 * over the engine). */
#ifndef CRUX_REDUCE_CHAIN_H
#define CRUX_REDUCE_CHAIN_H

#include <string.h>

#include "common/crux_copy.h"
#include "coll/crux_reduce.h"

#define CRUX_REDUCE_BLOCK 4096 /* bytes; a multiple of every element size */

/* result = x[0] op x[1] op ... op x[n-1], left to right (rank order), over
 * 'bytes', block by block so the partial result of a block stays in L1
 * across the n-1 passes.  The result goes to 'out' and, when not NULL, is
 * copied to 'copy' while still in cache (with streaming stores if 'stream').
 * 'out' may be x[0] or x[1] but no other input; with out == NULL each block
 * is formed in a scratch block and only copied, which is what a destination
 * overlapping a later input needs. */
static inline void crux_reduce_chain(crux_reduce_fn_t reduce, void *out, void *copy,
                                     const void *const *x, int n, size_t bytes, size_t esize,
                                     int stream)
{
    _Alignas(64) unsigned char scratch[CRUX_REDUCE_BLOCK];
    for (size_t at = 0; at < bytes; at += CRUX_REDUCE_BLOCK) {
        size_t len = bytes - at < CRUX_REDUCE_BLOCK ? bytes - at : CRUX_REDUCE_BLOCK;
        size_t count = len / esize;
        unsigned char *o = out != NULL ? (unsigned char *)out + at : scratch;
        if (n == 1) {
            memmove(o, (const unsigned char *)x[0] + at, len);
        } else {
            reduce(o, (const unsigned char *)x[0] + at, (const unsigned char *)x[1] + at, count);
        }
        for (int i = 2; i < n; i++) {
            reduce(o, o, (const unsigned char *)x[i] + at, count);
        }
        if (copy != NULL && stream) {
            crux_copy_stream((unsigned char *)copy + at, o, len);
        } else if (copy != NULL) {
            memcpy((unsigned char *)copy + at, o, len);
        }
    }
}

#endif

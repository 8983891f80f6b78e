/* Internal to libcrux_coll: how a buffer is cut into one shard per member
 * and each shard into pipeline chunks.  Every member computes the same cut.
 * Every algorithm of the library cuts this way. */
#ifndef CRUX_GROUP_SHARD_H
#define CRUX_GROUP_SHARD_H

#include <stddef.h>

#include "coll/group/crux_group_internal.h"

typedef struct {
    size_t count; /* elements in the whole buffer */
    size_t esize; /* bytes per element */
    size_t chunk; /* elements per chunk */
    int members;
    int whole; /* every member's "shard" is the whole buffer (crux_cut_whole) */
} crux_cut_t;

static inline crux_cut_t crux_cut(size_t count, size_t esize, size_t chunk_bytes, int members)
{
    size_t chunk = chunk_bytes / esize > 0 ? chunk_bytes / esize : 1;
    size_t largest_shard = (count + (size_t)members - 1) / (size_t)members;
    if (largest_shard / chunk >= CRUX_MAX_CHUNKS) { /* keep chunk counts packable */
        chunk = largest_shard / (CRUX_MAX_CHUNKS - 1) + 1;
    }
    return (crux_cut_t){ .count = count, .esize = esize, .chunk = chunk, .members = members };
}

/* The cut of a whole call: every member reduces the whole buffer. */
static inline crux_cut_t crux_cut_whole(size_t count, size_t esize, size_t chunk_bytes, int members)
{
    crux_cut_t cut = crux_cut(count, esize, chunk_bytes, 1);
    cut.members = members;
    cut.whole = 1;
    return cut;
}

/* First element and length of member p's shard: balanced, earlier shards
 * one element longer when the count does not divide. */
static inline size_t crux_shard_first(const crux_cut_t *cut, int p)
{
    if (cut->whole) {
        return 0;
    }
    size_t base = cut->count / (size_t)cut->members, rem = cut->count % (size_t)cut->members;
    return (size_t)p * base + ((size_t)p < rem ? (size_t)p : rem);
}

static inline size_t crux_shard_length(const crux_cut_t *cut, int p)
{
    if (cut->whole) {
        return cut->count;
    }
    return cut->count / (size_t)cut->members + ((size_t)p < cut->count % (size_t)cut->members);
}

static inline unsigned crux_shard_chunks(const crux_cut_t *cut, int p)
{
    return (unsigned)((crux_shard_length(cut, p) + cut->chunk - 1) / cut->chunk);
}

/* Byte offset and byte length of chunk k of shard p (k < crux_shard_chunks). */
static inline size_t crux_chunk_offset(const crux_cut_t *cut, int p, unsigned k)
{
    return (crux_shard_first(cut, p) + (size_t)k * cut->chunk) * cut->esize;
}

static inline size_t crux_chunk_bytes(const crux_cut_t *cut, int p, unsigned k)
{
    size_t left = crux_shard_length(cut, p) - (size_t)k * cut->chunk;
    return (left < cut->chunk ? left : cut->chunk) * cut->esize;
}

#endif

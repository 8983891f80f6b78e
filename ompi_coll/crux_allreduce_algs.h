/* Internal to libcrux_coll: the flat Allreduce algorithms behind
 * crux_coll_allreduce.  'sbuf' is NULL in place; count > 0, size > 1. */
#ifndef CRUX_ALLREDUCE_ALGS_H
#define CRUX_ALLREDUCE_ALGS_H

#include "ompi_coll/crux_group_internal.h"

crux_status_t crux_allreduce_staged(crux_coll_group_t *group, const void *sbuf, void *rbuf,
                                    size_t count, size_t esize, crux_reduce_fn_t reduce);
crux_status_t crux_allreduce_cma(crux_coll_group_t *group, const void *sbuf, void *rbuf,
                                 size_t count, size_t esize, crux_reduce_fn_t reduce);

/* out = x[0] op x[1] op ... op x[n-1], left to right (rank order), 'bytes'
 * long.  'out' may be x[0]; no other x[i] may overlap it. */
static inline void crux_reduce_chain(crux_reduce_fn_t reduce, void *out, const void *const *x,
                                     int n, size_t bytes, size_t esize)
{
    size_t count = bytes / esize;
    reduce(out, x[0], x[1], count);
    for (int i = 2; i < n; i++) {
        reduce(out, out, x[i], count);
    }
}

#endif

/* Internal to libcrux_coll: the Allreduce algorithm behind
 * crux_coll_allreduce and crux_coll_allreduce_hier.  'sbuf' is NULL in
 * place; count > 0, size > 1. */
#ifndef CRUX_ALLREDUCE_ALGS_H
#define CRUX_ALLREDUCE_ALGS_H

#include "coll/crux_group_internal.h"
#include "coll/crux_reduce_chain.h"

/* Flat with inter == NULL; hierarchical with the caller's inter-group step,
 * 'depth' chunks in flight (0: the three stages in sequence). */
crux_status_t crux_allreduce_staged(crux_coll_group_t *group, const crux_coll_inter_t *inter,
                                    unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                    size_t esize, crux_reduce_fn_t reduce);

#endif

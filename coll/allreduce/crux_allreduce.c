/* Allreduce entry points: checks, and the trivial cases. */
#include <string.h>

#include "coll/pipeline/crux_pipeline_internal.h"

crux_status_t crux_coll_allreduce(crux_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                                  crux_dtype_t dtype, crux_op_t op)
{
    crux_reduce_fn_t reduce = crux_reduce_lookup(dtype, op);
    if (reduce == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    size_t esize = crux_dtype_size(dtype);
    if (g->config.stage_size / 2 < esize) {
        return CRUX_ERR_UNSUPPORTED; /* no stage: the small Allreduce's group */
    }
    if (count == 0) {
        return CRUX_OK;
    }
    if (g->size == 1) {
        if (sbuf != NULL && sbuf != rbuf) {
            memcpy(rbuf, sbuf, count * esize);
        }
        return CRUX_OK;
    }
    if (sbuf == rbuf) {
        sbuf = NULL;
    }
    return crux_allreduce_flags(g, NULL, 0, sbuf, rbuf, count, esize, reduce);
}

crux_status_t crux_coll_allreduce_hier(crux_coll_group_t *g, const crux_coll_inter_t *inter,
                                       unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                       crux_dtype_t dtype, crux_op_t op)
{
    crux_reduce_fn_t reduce = crux_reduce_lookup(dtype, op);
    if (reduce == NULL || inter == NULL || g->config.stage_size / 2 < crux_dtype_size(dtype)) {
        return CRUX_ERR_UNSUPPORTED;
    }
    if (count == 0) {
        return CRUX_OK;
    }
    if (sbuf == rbuf) {
        sbuf = NULL;
    }
    return crux_allreduce_flags(g, inter, depth, sbuf, rbuf, count, crux_dtype_size(dtype), reduce);
}

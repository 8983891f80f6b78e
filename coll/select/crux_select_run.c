/* Running the algorithm crux_allreduce_select chose, over what the caller
 * holds (crux_coll.h, where crux_alg_needs says which groups each
 * algorithm takes), and the memo that lets a repeated small call skip the
 * selection. */
#include "coll/crux_coll.h"

static crux_coll_group_t *caller_of(crux_coll_group_t *g, uint64_t caller)
{
    if (g != NULL) {
        crux_coll_group_set_caller(g, caller);
    }
    return g;
}

static crux_engine_group_t *engine_caller_of(crux_engine_group_t *g, uint64_t caller)
{
    if (g != NULL) {
        crux_engine_group_set_caller(g, caller);
    }
    return g;
}

/* The caller's word on the layout's groups (they may serve other callers
 * too). */
static const crux_layout_t *layout_of(const crux_allreduce_targets_t *t)
{
    const crux_layout_t *l = t->layout;
    if (l == NULL || t->cross == NULL) {
        return NULL;
    }
    caller_of(l->group, t->caller);
    caller_of(l->small, t->caller);
    engine_caller_of(l->lanes, t->caller);
    return l;
}

crux_status_t crux_allreduce_run(const crux_allreduce_targets_t *t, crux_alg_t alg,
                                 const void *sbuf, void *rbuf, size_t count, crux_dtype_t dtype,
                                 crux_op_t op)
{
    crux_coll_group_t *g;
    crux_engine_group_t *e;
    const crux_layout_t *l;
    switch (alg) {
    case CRUX_ALG_SMALL:
        g = t->group;
        if (g == NULL) {
            return CRUX_ERR_NOT_FOUND;
        }
        crux_coll_group_set_caller(g, t->caller);
        return crux_coll_allreduce_small(g, sbuf, rbuf, count, dtype, op);
    case CRUX_ALG_HIER_SMALL:
        l = layout_of(t);
        return l != NULL ? crux_layout_allreduce_small(l, t->cross, sbuf, rbuf, count, dtype, op)
                         : CRUX_ERR_NOT_FOUND;
    case CRUX_ALG_FLAGS:
        g = caller_of(t->group, t->caller);
        return g != NULL ? crux_coll_allreduce(g, sbuf, rbuf, count, dtype, op)
                         : CRUX_ERR_NOT_FOUND;
    case CRUX_ALG_LANES:
    case CRUX_ALG_DEVICE:
        e = engine_caller_of(t->engine, t->caller);
        if (e != NULL && t->oob != NULL) {
            crux_engine_group_set_oob(e, t->oob);
        }
        return e != NULL ? crux_engine_allreduce(e, sbuf, rbuf, count, dtype, op)
                         : CRUX_ERR_NOT_FOUND;
    case CRUX_ALG_HIER:
    case CRUX_ALG_HIER_SEQUENTIAL:
        l = layout_of(t);
        return l != NULL ? crux_layout_allreduce(l, t->cross, alg == CRUX_ALG_HIER ? t->depth : 0,
                                                 sbuf, rbuf, count, dtype, op)
                         : CRUX_ERR_NOT_FOUND;
    default: return CRUX_ERR_INVALID; /* FALLBACK and HOST_STAGED are the caller's */
    }
}

void crux_select_memo_note(crux_select_memo_t *memo, const crux_select_bounds_t *bounds,
                           size_t bytes, const void *dtype_key, const void *op_key,
                           crux_dtype_t dtype, crux_op_t op, crux_alg_t alg)
{
    if (bytes == 0 || bytes > bounds->small_max) {
        return;
    }
    memo->dtype_key = dtype_key;
    memo->op_key = op_key;
    memo->dtype = dtype;
    memo->op = op;
    memo->alg = alg;
}

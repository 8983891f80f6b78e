/* The inter-group step of the hierarchical Allreduce over a layout
 * (crux_coll.h): which way it goes, and the Allreduce that runs it.  Over
 * the channel between nodes when the layout has one; else the caller's
 * own Allreduce over the cross group, blocking when those members share
 * this node (there the caller's Allreduce is crux's own flat one, through
 * shared memory, and done once started), nonblocking otherwise, polled
 * while the rank group goes on.  The small Allreduce's step is the
 * caller's blocking one always.  Whether a layout is broken is its
 * groups'. */
#include <stddef.h>

#include "coll/crux_coll.h"
#include "coll/crux_net.h"

typedef struct {
    const crux_layout_t *layout;
    const crux_layout_cross_t *cross;
    crux_dtype_t dtype;
    crux_op_t op;
} step_arg_t;

int crux_layout_broken(const crux_layout_t *l)
{
    return (l->group != NULL && crux_coll_group_broken(l->group)) ||
           (l->lanes != NULL && crux_engine_group_broken(l->lanes));
}

crux_layout_step_t crux_layout_step(const crux_layout_t *l)
{
    return l->net != NULL   ? CRUX_LAYOUT_STEP_NET
           : l->cross_local ? CRUX_LAYOUT_STEP_BLOCKING
                            : CRUX_LAYOUT_STEP_NONBLOCKING;
}

static crux_status_t net_start(void *argp, void *buf, size_t count, void **request)
{
    step_arg_t *a = argp;
    return crux_net_start(a->layout->net, buf, count, a->dtype, a->op, request);
}

static crux_status_t net_test(void *argp, void *request, int *done)
{
    step_arg_t *a = argp;
    return crux_net_test(a->layout->net, request, done);
}

/* Only the TCP channel can tell when a step may move. */
static void net_wait(void *argp, int timeout_ms)
{
    step_arg_t *a = argp;
    crux_net_wait(a->layout->net, timeout_ms);
}

/* The caller's blocking Allreduce, done once started. */
static crux_status_t blocking_start(void *argp, void *buf, size_t count, void **request)
{
    step_arg_t *a = argp;
    *request = NULL;
    return a->cross->reduce(a->cross->arg, buf, count);
}

static crux_status_t blocking_test(void *argp, void *request, int *done)
{
    (void)argp;
    (void)request;
    *done = 1;
    return CRUX_OK;
}

static crux_status_t nonblocking_start(void *argp, void *buf, size_t count, void **request)
{
    step_arg_t *a = argp;
    *request = NULL;
    return a->cross->start(a->cross->arg, buf, count, request);
}

static crux_status_t nonblocking_test(void *argp, void *request, int *done)
{
    step_arg_t *a = argp;
    return a->cross->test(a->cross->arg, request, done);
}

static crux_coll_inter_t inter_of(crux_layout_step_t step, step_arg_t *arg)
{
    switch (step) {
    case CRUX_LAYOUT_STEP_NET:
        return (crux_coll_inter_t){ net_start, net_test, arg,
                                    crux_net_kind(arg->layout->net) == CRUX_NET_TCP ? net_wait
                                                                                    : NULL };
    case CRUX_LAYOUT_STEP_BLOCKING:
        return (crux_coll_inter_t){ blocking_start, blocking_test, arg };
    case CRUX_LAYOUT_STEP_NONBLOCKING: break;
    }
    return (crux_coll_inter_t){ nonblocking_start, nonblocking_test, arg };
}

crux_status_t crux_layout_allreduce(const crux_layout_t *l, const crux_layout_cross_t *cross,
                                    unsigned depth, const void *sbuf, void *rbuf, size_t count,
                                    crux_dtype_t dtype, crux_op_t op)
{
    step_arg_t arg = { l, cross, dtype, op };
    crux_coll_inter_t inter = inter_of(crux_layout_step(l), &arg);
    return l->lanes != NULL
               ? crux_engine_allreduce_hier(l->lanes, &inter, depth, sbuf, rbuf, count, dtype, op)
               : crux_coll_allreduce_hier(l->group, &inter, depth, sbuf, rbuf, count, dtype, op);
}

crux_status_t crux_layout_allreduce_small(const crux_layout_t *l, const crux_layout_cross_t *cross,
                                          const void *sbuf, void *rbuf, size_t count,
                                          crux_dtype_t dtype, crux_op_t op)
{
    step_arg_t arg = { l, cross, dtype, op };
    crux_coll_inter_t inter = inter_of(CRUX_LAYOUT_STEP_BLOCKING, &arg);
    return l->small != NULL
               ? crux_coll_allreduce_small_hier(l->small, &inter, sbuf, rbuf, count, dtype, op)
               : CRUX_ERR_UNSUPPORTED;
}

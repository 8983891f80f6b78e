/* What every channel between nodes shares (crux_net.h): the list of steps
 * in flight, the reduction of a finished step in member order (so every
 * member gets the same bits whatever the transport), and the public calls,
 * which hand the moving of bytes to the channel's transport. */
#include <stdlib.h>
#include <string.h>

#include "coll/net/crux_net_internal.h"

void crux_net_init(crux_net_t *net, const crux_net_ops_t *ops, crux_net_kind_t kind, int rank,
                   int size)
{
    net->ops = ops;
    net->kind = kind;
    net->rank = rank;
    net->size = size;
    net->failed = CRUX_OK;
}

/* Every contribution in member order, so every member gets the same bits;
 * only once this member's own sends are finished may its buffer change. */
static void finish(crux_net_t *net, crux_net_op_t *op)
{
    unsigned char *acc = net->rank == 0 ? op->buf : op->slots;
    for (int p = 1; p < net->size; p++) {
        const unsigned char *src = p == net->rank ? op->buf : crux_net_slot(op, p);
        op->fn(acc, acc, src, op->count);
    }
    if (acc != op->buf) {
        memcpy(op->buf, acc, op->bytes);
    }
    op->done = 1;
}

void crux_net_passed(crux_net_t *net, crux_net_op_t *op)
{
    if (--op->pending == 0) {
        finish(net, op);
    }
}

static void unlink_op(crux_net_t *net, crux_net_op_t *op)
{
    if (op->prev != NULL) {
        op->prev->next = op->next;
    } else {
        net->head = op->next;
    }
    if (op->next != NULL) {
        op->next->prev = op->prev;
    } else {
        net->tail = op->prev;
    }
    free(op->xport);
    free(op->slots);
    free(op);
}

void crux_net_destroy(crux_net_t *net)
{
    if (net == NULL) {
        return;
    }
    net->ops->close(net);
    while (net->head != NULL) {
        unlink_op(net, net->head);
    }
    free(net);
}

/* The request of a step with nothing to move: done at once, never freed. */
static crux_net_op_t nothing = { .done = 1 };

crux_status_t crux_net_start(crux_net_t *net, void *buf, size_t count, crux_dtype_t dtype,
                             crux_op_t op_kind, void **request)
{
    *request = NULL;
    if (net->failed != CRUX_OK) {
        return net->failed;
    }
    crux_reduce_fn_t fn = crux_reduce_lookup(dtype, op_kind);
    if (fn == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    size_t bytes = count * crux_dtype_size(dtype);
    if (bytes == 0 || net->size == 1) {
        *request = &nothing; /* nothing goes on the wire */
        return CRUX_OK;
    }
    crux_net_op_t *op = calloc(1, sizeof(*op));
    if (op == NULL || (op->slots = malloc(bytes * (size_t)net->size)) == NULL) {
        free(op);
        return CRUX_ERR_NO_MEMORY;
    }
    *op =
        (crux_net_op_t){ .buf = buf, .count = count, .bytes = bytes, .fn = fn, .slots = op->slots };
    op->prev = net->tail;
    if (net->tail != NULL) {
        net->tail->next = op;
    } else {
        net->head = op;
    }
    net->tail = op;
    op->pending = 2 * (net->size - 1);
    crux_status_t status = net->ops->post(net, op);
    if (status != CRUX_OK) {
        /* part of it may be on the wire: the channel cannot go on */
        net->failed = status;
        return status;
    }
    *request = op;
    return CRUX_OK;
}

crux_status_t crux_net_test(crux_net_t *net, void *request, int *done)
{
    crux_net_op_t *op = request;
    *done = 0;
    if (net->failed == CRUX_OK) {
        net->ops->progress(net);
    }
    if (net->failed != CRUX_OK) {
        return net->failed;
    }
    if (op == &nothing) {
        *done = 1;
    } else if (op != NULL && op->done) {
        /* a finished step has none of its transport's sends, receives or
         * cursors left on it */
        unlink_op(net, op);
        *done = 1;
    }
    return CRUX_OK;
}

void crux_net_wait(crux_net_t *net, int timeout_ms)
{
    if (net->failed == CRUX_OK && net->ops->wait != NULL) {
        net->ops->wait(net, timeout_ms);
    }
}

int crux_net_set_level(crux_net_t *net, const crux_net_level_t *level)
{
    return net->ops->set_level(net, level);
}

crux_net_kind_t crux_net_kind(const crux_net_t *net)
{
    return net->kind;
}

uint64_t crux_net_bytes_sent(const crux_net_t *net)
{
    return net->sent;
}

const char *crux_net_address(const crux_net_t *net)
{
    return net->address;
}

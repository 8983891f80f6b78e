/* cma endpoints: single-copy get/put between a local buffer and a peer's
 * memory.  UCT's cma transport completes through worker progress, so each
 * operation carries a small record, recycled through the context. */
#include <stdlib.h>

#include "ucx_tl/uct/crux_tl_uct_internal.h"

crux_status_t crux_tl_ep_create(crux_tl_context_t *ctx, const void *peer_address,
                                crux_tl_ep_t **ep_p)
{
    if (ctx->cma_iface == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    const uint8_t *p = peer_address;
    const uct_device_addr_t *dev_addr = (const uct_device_addr_t *)p;
    const uct_iface_addr_t *iface_addr = (const uct_iface_addr_t *)(p + ctx->cma_dev_addr_len);
    /* A peer on another machine (another boot id) cannot be reached by cma. */
    if (!uct_iface_is_reachable(ctx->cma_iface, dev_addr, iface_addr)) {
        return CRUX_ERR_NO_RESOURCE;
    }

    crux_tl_ep_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    uct_ep_params_t params = {
        .field_mask =
            UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR | UCT_EP_PARAM_FIELD_IFACE_ADDR,
        .iface = ctx->cma_iface,
        .dev_addr = dev_addr,
        .iface_addr = iface_addr,
    };
    ucs_status_t status = uct_ep_create(&params, &ep->uct_ep);
    if (status != UCS_OK) {
        free(ep);
        return crux_tl_status_from_ucs(status);
    }
    ep->context = ctx;
    *ep_p = ep;
    return CRUX_OK;
}

void crux_tl_ep_destroy(crux_tl_ep_t *ep)
{
    if (ep != NULL) {
        uct_ep_destroy(ep->uct_ep);
        free(ep);
    }
}

static void op_done(uct_completion_t *self)
{
    crux_tl_op_t *op = (crux_tl_op_t *)self;
    if (self->status != UCS_OK && op->user->status == CRUX_OK) {
        op->user->status = crux_tl_status_from_ucs(self->status);
    }
    op->user->pending--;
    op->next_free = op->context->free_ops;
    op->context->free_ops = op;
}

static crux_tl_op_t *op_get(crux_tl_context_t *ctx, crux_tl_completion_t *user)
{
    crux_tl_op_t *op = ctx->free_ops;
    if (op != NULL) {
        ctx->free_ops = op->next_free;
    } else if ((op = malloc(sizeof(*op))) == NULL) {
        return NULL;
    }
    op->uct.func = op_done;
    op->uct.count = 1;
    op->uct.status = UCS_OK;
    op->user = user;
    op->context = ctx;
    return op;
}

typedef enum { CRUX_TL_GET, CRUX_TL_PUT } crux_tl_dir_t;

static crux_status_t start(crux_tl_ep_t *ep, crux_tl_dir_t dir, void *local, uint64_t remote,
                           size_t length, crux_tl_completion_t *user)
{
    if (length == 0) {
        return CRUX_OK;
    }
    crux_tl_op_t *op = op_get(ep->context, user);
    if (op == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    uct_iov_t iov = {
        .buffer = local,
        .length = length,
        .memh = UCT_MEM_HANDLE_NULL,
        .stride = 0,
        .count = 1,
    };
    ucs_status_t status;
    for (;;) {
        /* cma has no remote key (see open_cma): the rkey argument is unused. */
        status = dir == CRUX_TL_GET ? uct_ep_get_zcopy(ep->uct_ep, &iov, 1, remote, 0, &op->uct)
                                    : uct_ep_put_zcopy(ep->uct_ep, &iov, 1, remote, 0, &op->uct);
        if (status != UCS_ERR_NO_RESOURCE) {
            break;
        }
        uct_worker_progress(ep->context->worker); /* out of tx descriptors */
    }
    if (status == UCS_INPROGRESS) {
        user->pending++;
        return CRUX_OK;
    }
    op->next_free = ep->context->free_ops; /* finished (or failed) at once */
    ep->context->free_ops = op;
    return crux_tl_status_from_ucs(status);
}

crux_status_t crux_tl_get_nb(crux_tl_ep_t *ep, void *local, uint64_t remote, size_t length,
                             crux_tl_completion_t *completion)
{
    return start(ep, CRUX_TL_GET, local, remote, length, completion);
}

crux_status_t crux_tl_put_nb(crux_tl_ep_t *ep, const void *local, uint64_t remote, size_t length,
                             crux_tl_completion_t *completion)
{
    return start(ep, CRUX_TL_PUT, (void *)local, remote, length, completion);
}

unsigned crux_tl_progress(crux_tl_context_t *ctx)
{
    return uct_worker_progress(ctx->worker);
}

static crux_status_t wait_done(crux_tl_context_t *ctx, crux_tl_completion_t *completion)
{
    while (completion->pending > 0) {
        uct_worker_progress(ctx->worker);
    }
    return completion->status;
}

crux_status_t crux_tl_get(crux_tl_ep_t *ep, void *local, uint64_t remote, size_t length)
{
    crux_tl_completion_t completion = { 0, CRUX_OK };
    crux_status_t status = crux_tl_get_nb(ep, local, remote, length, &completion);
    return status != CRUX_OK ? status : wait_done(ep->context, &completion);
}

crux_status_t crux_tl_put(crux_tl_ep_t *ep, const void *local, uint64_t remote, size_t length)
{
    crux_tl_completion_t completion = { 0, CRUX_OK };
    crux_status_t status = crux_tl_put_nb(ep, local, remote, length, &completion);
    return status != CRUX_OK ? status : wait_done(ep->context, &completion);
}

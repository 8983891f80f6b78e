/* Internal to libcrux_tl: the structures behind the public handles. */
#ifndef CRUX_TL_INTERNAL_H
#define CRUX_TL_INTERNAL_H

#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>

#include "ucx_tl/crux_tl_uct.h"

/* One in-flight UCT operation; returned to the context's free list when done. */
typedef struct crux_tl_op {
    uct_completion_t uct; /* first: UCT hands this pointer back */
    crux_tl_completion_t *user;
    crux_tl_context_t *context;
    struct crux_tl_op *next_free;
} crux_tl_op_t;

struct crux_tl_context {
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_component_h *components;
    unsigned num_components;

    /* cma: single-copy get/put; NULL iface when not opened */
    uct_md_h cma_md;
    uct_iface_h cma_iface;
    size_t cma_dev_addr_len;
    size_t cma_iface_addr_len;
    size_t cma_max_iov;

    /* shared-memory segments */
    uct_component_h shm_component;
    uct_md_h shm_md;
    char shm_name[UCT_COMPONENT_NAME_MAX];
    size_t shm_rkey_size;

    crux_tl_op_t *free_ops;
};

struct crux_tl_ep {
    crux_tl_context_t *context;
    uct_ep_h uct_ep;
};

struct crux_tl_seg {
    crux_tl_context_t *context;
    uct_allocated_memory_t mem;
};

struct crux_tl_rseg {
    crux_tl_context_t *context;
    uct_rkey_bundle_t bundle;
    void *ptr;
    size_t length; /* as the owner's key says */
};

crux_status_t crux_tl_status_from_ucs(ucs_status_t status);

#endif

/* Opening and closing a transport context: find the UCT components, open the
 * cma memory domain and interface and the shared-memory memory domain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/uct/crux_tl_uct_internal.h"

crux_status_t crux_tl_status_from_ucs(ucs_status_t status)
{
    switch (status) {
    case UCS_OK: return CRUX_OK;
    case UCS_INPROGRESS: return CRUX_INPROGRESS;
    case UCS_ERR_NO_MEMORY: return CRUX_ERR_NO_MEMORY;
    case UCS_ERR_INVALID_PARAM: return CRUX_ERR_INVALID;
    case UCS_ERR_UNSUPPORTED: return CRUX_ERR_UNSUPPORTED;
    case UCS_ERR_NO_ELEM: return CRUX_ERR_NOT_FOUND;
    case UCS_ERR_NO_DEVICE:
    case UCS_ERR_NO_RESOURCE:
    case UCS_ERR_UNREACHABLE: return CRUX_ERR_NO_RESOURCE;
    case UCS_ERR_TIMED_OUT: return CRUX_ERR_TIMEOUT;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_CANCELED: return CRUX_ERR_PEER;
    default: return CRUX_ERR_IO;
    }
}

static uct_component_h find_component(crux_tl_context_t *ctx, const char *name)
{
    for (unsigned i = 0; i < ctx->num_components; i++) {
        uct_component_attr_t attr = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };
        if (uct_component_query(ctx->components[i], &attr) == UCS_OK &&
            strcmp(attr.name, name) == 0) {
            return ctx->components[i];
        }
    }
    return NULL;
}

/* Open the memory domain named like its component (true of cma, posix, sysv). */
static ucs_status_t open_md(uct_component_h component, const char *name, uct_md_h *md_p)
{
    uct_md_config_t *config;
    ucs_status_t status = uct_md_config_read(component, NULL, NULL, &config);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_open(component, name, config, md_p);
    uct_config_release(config);
    return status;
}

/* A failed cma copy (bad address, peer gone) is reported through the
 * operation's completion; without a handler UCX would treat it as fatal. */
static ucs_status_t cma_error(void *arg, uct_ep_h ep, ucs_status_t status)
{
    return UCS_OK;
}

/* The job's service level and traffic class, where the transport has them;
 * a transport without these settings (UCS_ERR_NO_ELEM) is left as it is. */
static void apply_network_settings(uct_iface_config_t *config, const crux_tl_config_t *tl)
{
    char value[16];
    if (tl->service_level >= 0) {
        snprintf(value, sizeof(value), "%d", tl->service_level);
        (void)uct_config_modify(config, "SL", value);
    }
    if (tl->traffic_class >= 0) {
        snprintf(value, sizeof(value), "%d", tl->traffic_class);
        (void)uct_config_modify(config, "TRAFFIC_CLASS", value);
    }
}

static crux_status_t open_cma(crux_tl_context_t *ctx, const crux_tl_config_t *tl)
{
    uct_component_h component = find_component(ctx, "cma");
    if (component == NULL) {
        return CRUX_ERR_NO_RESOURCE;
    }
    ucs_status_t status = open_md(component, "cma", &ctx->cma_md);
    if (status != UCS_OK) {
        return crux_tl_status_from_ucs(status);
    }

    /* cma needs no remote key: the peer's pid in its address is the key. */
    uct_md_attr_t md_attr;
    status = uct_md_query(ctx->cma_md, &md_attr);
    if (status != UCS_OK || md_attr.rkey_packed_size != 0) {
        return CRUX_ERR_UNSUPPORTED;
    }

    uct_iface_config_t *config;
    status = uct_md_iface_config_read(ctx->cma_md, "cma", NULL, NULL, &config);
    if (status != UCS_OK) {
        return crux_tl_status_from_ucs(status);
    }
    apply_network_settings(config, tl);
    uct_iface_params_t params = {
        .field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS,
        .open_mode = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device.tl_name = "cma",
        .mode.device.dev_name = "memory",
        .err_handler = cma_error,
        .err_handler_arg = ctx,
        .err_handler_flags = 0,
    };
    status = uct_iface_open(ctx->cma_md, ctx->worker, &params, config, &ctx->cma_iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        ctx->cma_iface = NULL;
        return CRUX_ERR_NO_RESOURCE;
    }

    uct_iface_attr_t attr;
    status = uct_iface_query(ctx->cma_iface, &attr);
    if (status != UCS_OK) {
        return crux_tl_status_from_ucs(status);
    }
    const uint64_t needed =
        UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PUT_ZCOPY | UCT_IFACE_FLAG_CONNECT_TO_IFACE;
    if ((attr.cap.flags & needed) != needed) {
        return CRUX_ERR_UNSUPPORTED;
    }
    ctx->cma_dev_addr_len = attr.device_addr_len;
    ctx->cma_iface_addr_len = attr.iface_addr_len;
    ctx->cma_max_iov = attr.cap.get.max_iov;
    return CRUX_OK;
}

static crux_status_t open_shm(crux_tl_context_t *ctx, const char *md_list)
{
    char *names = strdup(md_list != NULL ? md_list : "posix,sysv");
    if (names == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    crux_status_t result = CRUX_ERR_NO_RESOURCE;
    char *save = NULL;
    for (char *name = strtok_r(names, ",", &save); name != NULL;
         name = strtok_r(NULL, ",", &save)) {
        uct_component_h component = find_component(ctx, name);
        uct_md_h md;
        if (component == NULL || open_md(component, name, &md) != UCS_OK) {
            continue;
        }
        uct_md_attr_t attr;
        const uint64_t needed = UCT_MD_FLAG_ALLOC | UCT_MD_FLAG_RKEY_PTR;
        if (uct_md_query(md, &attr) != UCS_OK || (attr.cap.flags & needed) != needed) {
            uct_md_close(md);
            continue;
        }
        ctx->shm_component = component;
        ctx->shm_md = md;
        ctx->shm_rkey_size = attr.rkey_packed_size;
        snprintf(ctx->shm_name, sizeof(ctx->shm_name), "%s", name);
        result = CRUX_OK;
        break;
    }
    free(names);
    return result;
}

crux_status_t crux_tl_context_open(const crux_tl_config_t *config, crux_tl_context_t **context_p)
{
    const crux_tl_config_t defaults = CRUX_TL_CONFIG_DEFAULT;
    if (config == NULL) {
        config = &defaults;
    }
    crux_tl_context_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }

    crux_status_t result = CRUX_ERR_NO_RESOURCE;
    if (ucs_async_context_create(UCS_ASYNC_MODE_POLL, &ctx->async) != UCS_OK ||
        uct_worker_create(ctx->async, UCS_THREAD_MODE_SINGLE, &ctx->worker) != UCS_OK ||
        uct_query_components(&ctx->components, &ctx->num_components) != UCS_OK) {
        goto fail;
    }
    result = open_shm(ctx, config->shm_mds);
    if (result != CRUX_OK) {
        goto fail;
    }
    if (config->use_cma) {
        result = open_cma(ctx, config);
        if (result != CRUX_OK) {
            goto fail;
        }
    }
    *context_p = ctx;
    return CRUX_OK;

fail:
    crux_tl_context_close(ctx);
    return result;
}

void crux_tl_context_close(crux_tl_context_t *ctx)
{
    if (ctx == NULL) {
        return;
    }
    if (ctx->cma_iface != NULL) {
        uct_iface_close(ctx->cma_iface);
    }
    if (ctx->cma_md != NULL) {
        uct_md_close(ctx->cma_md);
    }
    if (ctx->shm_md != NULL) {
        uct_md_close(ctx->shm_md);
    }
    while (ctx->free_ops != NULL) {
        crux_tl_op_t *op = ctx->free_ops;
        ctx->free_ops = op->next_free;
        free(op);
    }
    if (ctx->components != NULL) {
        uct_release_component_list(ctx->components);
    }
    if (ctx->worker != NULL) {
        uct_worker_destroy(ctx->worker);
    }
    if (ctx->async != NULL) {
        ucs_async_context_destroy(ctx->async);
    }
    free(ctx);
}

const char *crux_tl_context_shm_name(const crux_tl_context_t *ctx)
{
    return ctx->shm_name;
}

size_t crux_tl_address_size(const crux_tl_context_t *ctx)
{
    return ctx->cma_dev_addr_len + ctx->cma_iface_addr_len;
}

crux_status_t crux_tl_address_pack(const crux_tl_context_t *ctx, void *buffer)
{
    if (ctx->cma_iface == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    uint8_t *p = buffer;
    ucs_status_t status = uct_iface_get_device_address(ctx->cma_iface, (uct_device_addr_t *)p);
    if (status == UCS_OK) {
        status =
            uct_iface_get_address(ctx->cma_iface, (uct_iface_addr_t *)(p + ctx->cma_dev_addr_len));
    }
    return crux_tl_status_from_ucs(status);
}

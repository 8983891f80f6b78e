/* Shared segments: allocated from the shared-memory memory domain, mapped by
 * peers through UCT's rkey_ptr.  A packed key is
 *   [u64 owner's address][u64 length][the memory domain's packed rkey]. */
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/uct/crux_tl_uct_internal.h"

typedef struct {
    uint64_t address;
    uint64_t length;
} crux_tl_seg_key_header_t;

crux_status_t crux_tl_seg_alloc(crux_tl_context_t *ctx, size_t length, crux_tl_seg_t **seg_p)
{
    if (length == 0) {
        return CRUX_ERR_INVALID;
    }
    crux_tl_seg_t *seg = calloc(1, sizeof(*seg));
    if (seg == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params = {
        .field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS | UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                      UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE | UCT_MEM_ALLOC_PARAM_FIELD_NAME,
        .flags = UCT_MD_MEM_ACCESS_ALL,
        .mem_type = UCS_MEMORY_TYPE_HOST,
        .mds = { .mds = &ctx->shm_md, .count = 1 },
        .name = "crux segment",
    };
    ucs_status_t status = uct_mem_alloc(length, &method, 1, &params, &seg->mem);
    if (status != UCS_OK) {
        free(seg);
        /* no room in /dev/shm shows up as a failed allocation */
        return status == UCS_ERR_NO_MEMORY ? CRUX_ERR_NO_RESOURCE : crux_tl_status_from_ucs(status);
    }
    seg->context = ctx;
    *seg_p = seg;
    return CRUX_OK;
}

void crux_tl_seg_free(crux_tl_seg_t *seg)
{
    if (seg != NULL) {
        uct_mem_free(&seg->mem);
        free(seg);
    }
}

void *crux_tl_seg_ptr(const crux_tl_seg_t *seg)
{
    return seg->mem.address;
}

size_t crux_tl_seg_length(const crux_tl_seg_t *seg)
{
    return seg->mem.length;
}

size_t crux_tl_seg_key_size(const crux_tl_context_t *ctx)
{
    return sizeof(crux_tl_seg_key_header_t) + ctx->shm_rkey_size;
}

crux_status_t crux_tl_seg_key_pack(const crux_tl_seg_t *seg, void *buffer)
{
    crux_tl_seg_key_header_t header = {
        .address = (uintptr_t)seg->mem.address,
        .length = seg->mem.length,
    };
    memcpy(buffer, &header, sizeof(header));
    return crux_tl_status_from_ucs(
        uct_md_mkey_pack(seg->context->shm_md, seg->mem.memh, (uint8_t *)buffer + sizeof(header)));
}

crux_status_t crux_tl_rseg_attach(crux_tl_context_t *ctx, const void *key, crux_tl_rseg_t **rseg_p)
{
    crux_tl_seg_key_header_t header;
    memcpy(&header, key, sizeof(header));
    crux_tl_rseg_t *rseg = calloc(1, sizeof(*rseg));
    if (rseg == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    ucs_status_t status =
        uct_rkey_unpack(ctx->shm_component, (const uint8_t *)key + sizeof(header), &rseg->bundle);
    if (status != UCS_OK) {
        free(rseg);
        return CRUX_ERR_NO_RESOURCE;
    }
    status = uct_rkey_ptr(ctx->shm_component, &rseg->bundle, header.address, &rseg->ptr);
    if (status != UCS_OK) {
        uct_rkey_release(ctx->shm_component, &rseg->bundle);
        free(rseg);
        return CRUX_ERR_NO_RESOURCE;
    }
    rseg->context = ctx;
    rseg->length = header.length;
    *rseg_p = rseg;
    return CRUX_OK;
}

void crux_tl_rseg_detach(crux_tl_rseg_t *rseg)
{
    if (rseg != NULL) {
        uct_rkey_release(rseg->context->shm_component, &rseg->bundle);
        free(rseg);
    }
}

void *crux_tl_rseg_ptr(const crux_tl_rseg_t *rseg)
{
    return rseg->ptr;
}

size_t crux_tl_rseg_length(const crux_tl_rseg_t *rseg)
{
    return rseg->length;
}

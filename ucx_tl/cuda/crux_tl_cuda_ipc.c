/* Device buffers across processes: the sender publishes its allocation's
 * CUDA IPC handle with the buffer's offset in it, the receiver maps the
 * allocation once and keeps the mapping (the IPC handle cache), within a
 * bound: a mapping keeps the exporter's memory allocated after the exporter
 * frees it (a caching allocator's empty_cache then returns nothing), so
 * idle mappings beyond the engine's ipc_cache_bytes are unmapped, least
 * recently used first. */
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/cuda/crux_tl_cuda_internal.h"
#include "ucx_tl/cuda/crux_tl_cuda_state.h"

#ifdef CRUX_HAVE_CUDA
crux_tl_cuda_state_t *crux_tl_cuda_state(crux_tl_engine_t *e)
{
    if (e->cuda == NULL) {
        e->cuda = calloc(1, sizeof(*e->cuda));
    }
    return e->cuda;
}

crux_status_t crux_tl_cuda_export(crux_tl_engine_t *e, const void *ptr, crux_tl_wire_buf_t *wire)
{
    const crux_cuda_api_t *cu = crux_cuda();
    crux_tl_cuda_state_t *cs = crux_tl_cuda_state(e);
    if (cu == NULL || cs == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    unsigned long long id = 0;
    int ipc_capable = 0;
    CUdeviceptr base = 0;
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR };
    void *data[] = { &id, &ipc_capable, &base };
    if (cu->PointerGetAttributes(3, attrs, data, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS ||
        !ipc_capable || crux_cuda_name(wire->device, wire->device_name) != 0) {
        return CRUX_ERR_UNSUPPORTED; /* e.g. stream-ordered (pool) or VMM memory */
    }
    crux_tl_export_t *x = cs->exports;
    while (x != NULL && x->buffer_id != id) {
        x = x->next;
    }
    if (x == NULL) {
        if ((x = calloc(1, sizeof(*x))) == NULL) {
            return CRUX_ERR_NO_MEMORY;
        }
        crux_status_t st = crux_cuda_push(wire->device);
        if (st == CRUX_OK) {
            st = crux_cuda_status(cu->IpcGetMemHandle(&x->handle, base));
            crux_cuda_pop();
        }
        if (st != CRUX_OK) {
            free(x);
            return st;
        }
        x->buffer_id = id;
        x->base = base;
        x->next = cs->exports;
        cs->exports = x;
    }
    wire->alloc_base = x->base;
    memcpy(wire->ipc, &x->handle, sizeof(wire->ipc));
    return CRUX_OK;
}

static void unmap(crux_tl_cuda_state_t *cs, crux_tl_import_t **link)
{
    crux_tl_import_t *m = *link;
    if (crux_cuda_push(m->device) == CRUX_OK) {
        crux_cuda()->IpcCloseMemHandle(m->mapped);
        crux_cuda_pop();
    }
    if (m->at_home != 0 && crux_cuda_push(m->home) == CRUX_OK) {
        crux_cuda()->IpcCloseMemHandle(m->at_home);
        crux_cuda_pop();
    }
    cs->import_bytes -= m->bytes;
    *link = m->next;
    free(m);
}

/* Unmap idle mappings, least recently used first, down to the bound. */
static void evict(crux_tl_cuda_state_t *cs, size_t limit)
{
    while (cs->import_bytes > limit) {
        crux_tl_import_t **oldest = NULL;
        for (crux_tl_import_t **l = &cs->imports; *l != NULL; l = &(*l)->next) {
            if ((*l)->busy == 0 && (oldest == NULL || (*l)->used < (*oldest)->used)) {
                oldest = l;
            }
        }
        if (oldest == NULL) {
            return; /* every mapping is in use: over the bound until they finish */
        }
        unmap(cs, oldest);
    }
}

static crux_status_t map(crux_tl_pair_t *pair, const crux_tl_wire_buf_t *wire, int device,
                         crux_tl_import_t **m_p)
{
    const crux_cuda_api_t *cu = crux_cuda();
    crux_tl_import_t *m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    memcpy(&m->handle, wire->ipc, sizeof(m->handle));
    crux_status_t st = crux_cuda_push(device);
    if (st == CRUX_OK) {
        st = crux_cuda_status(
            cu->IpcOpenMemHandle(&m->mapped, m->handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        CUdeviceptr base;
        if (st == CRUX_OK && cu->MemGetAddressRange(&base, &m->bytes, m->mapped) != CUDA_SUCCESS) {
            m->bytes = 0;
        }
        crux_cuda_pop();
    }
    if (st != CRUX_OK) {
        free(m);
        return st;
    }
    m->pid = pair->peer_pid;
    m->base = wire->alloc_base;
    m->device = device;
    char name[CRUX_CUDA_NAME_SIZE];
    memcpy(name, wire->device_name, sizeof(name));
    name[sizeof(name) - 1] = '\0'; /* the peer's text: bounded before use */
    m->home = crux_cuda_device_named(name);
    *m_p = m;
    return CRUX_OK;
}

crux_status_t crux_tl_cuda_import(crux_tl_pair_t *pair, const crux_tl_wire_buf_t *wire, int device,
                                  void **ptr_p, void **import_p)
{
    *import_p = NULL;
    if (pair->loopback) {
        *ptr_p = (void *)(uintptr_t)wire->addr; /* our own buffer */
        return CRUX_OK;
    }
    crux_tl_cuda_state_t *cs = crux_tl_cuda_state(pair->engine);
    if (crux_cuda() == NULL || cs == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    /* keyed by the exporter (pid, allocation) and the device mapping it */
    crux_tl_import_t **link = &cs->imports, *m;
    while ((m = *link) != NULL &&
           !(m->pid == pair->peer_pid && m->base == wire->alloc_base && m->device == device)) {
        link = &m->next;
    }
    if (m != NULL && memcmp(&m->handle, wire->ipc, sizeof(m->handle)) != 0) {
        /* the peer freed that allocation and made a new one at the same
         * place: the old mapping goes as soon as no transfer uses it */
        if (m->busy == 0) {
            unmap(cs, link);
        } else {
            m->base = 0;
        }
        m = NULL;
    }
    if (m == NULL) {
        crux_status_t st = map(pair, wire, device, &m);
        if (st != CRUX_OK) {
            return st;
        }
        m->next = cs->imports;
        cs->imports = m;
        cs->import_bytes += m->bytes;
    }
    m->used = ++cs->clock;
    m->busy++;
    size_t limit = pair->engine->config.ipc_cache_bytes;
    evict(cs, limit > 0 ? limit : CRUX_TL_IPC_CACHE_DEFAULT);
    *import_p = m;
    *ptr_p = (void *)(uintptr_t)(m->mapped + (wire->addr - wire->alloc_base));
    return CRUX_OK;
}

crux_status_t crux_tl_cuda_at_home(crux_tl_cuda_state_t *cs, CUdeviceptr ptr, int device, int home,
                                   CUdeviceptr *out)
{
    crux_tl_import_t *m = cs->imports;
    while (m != NULL && !(m->device == device && ptr >= m->mapped && ptr - m->mapped < m->bytes)) {
        m = m->next;
    }
    *out = ptr;
    if (m == NULL || home == device) {
        return CRUX_OK; /* our own buffer, or already there */
    }
    if (m->home != home) {
        return CRUX_ERR_INVALID; /* not the channel's source device */
    }
    if (m->at_home == 0) {
        crux_status_t st = crux_cuda_push(home);
        if (st == CRUX_OK) {
            st = crux_cuda_status(crux_cuda()->IpcOpenMemHandle(&m->at_home, m->handle, 0));
            crux_cuda_pop();
        }
        if (st != CRUX_OK) {
            m->at_home = 0;
            return st;
        }
    }
    *out = m->at_home + (ptr - m->mapped);
    return CRUX_OK;
}

void crux_tl_cuda_import_done(void *import)
{
    crux_tl_import_t *m = import;
    if (m != NULL && m->busy > 0) {
        m->busy--;
    }
}

void crux_tl_cuda_ipc_destroy(crux_tl_engine_t *e)
{
    crux_tl_cuda_state_t *cs = e->cuda;
    while (cs != NULL && cs->imports != NULL) {
        unmap(cs, &cs->imports);
    }
    while (cs != NULL && cs->exports != NULL) {
        crux_tl_export_t *x = cs->exports;
        cs->exports = x->next;
        free(x);
    }
}

#else /* no CUDA toolkit at build time: device memory never shows up */

crux_status_t crux_tl_cuda_export(crux_tl_engine_t *e, const void *ptr, crux_tl_wire_buf_t *wire)
{
    return CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_tl_cuda_import(crux_tl_pair_t *pair, const crux_tl_wire_buf_t *wire, int device,
                                  void **ptr_p, void **import_p)
{
    *import_p = NULL;
    return CRUX_ERR_UNSUPPORTED;
}

void crux_tl_cuda_import_done(void *import)
{
}

void crux_tl_cuda_ipc_destroy(crux_tl_engine_t *e)
{
}
#endif

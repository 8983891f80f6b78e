/* Device memory: detection, copies, pinned host buffers, allocation
 * (UCC's memory components, mc/, as against crux_dev_exec.c's execution). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/crux_cuda.h"
#include "coll/dev/crux_dev_internal.h"
#include "ucx_tl/crux_tl.h"

int crux_dev_is_device(const void *ptr)
{
    return crux_tl_mem_query(ptr).type == CRUX_TL_MEM_CUDA;
}

int crux_dev_count(void)
{
    return crux_tl_cuda_devices();
}

static int seen; /* a device was there once: it stays */

int crux_dev_absent(void)
{
    if (__atomic_load_n(&seen, __ATOMIC_RELAXED)) {
        return 0;
    }
    if (crux_dev_count() > 0) {
        __atomic_store_n(&seen, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return 1;
}

int crux_dev_call_is_device(const void *sbuf, const void *rbuf)
{
    return !crux_dev_absent() &&
           (crux_dev_is_device(rbuf) || (sbuf != NULL && crux_dev_is_device(sbuf)));
}

crux_status_t crux_dev_call_host_ready(const void *sbuf, const void *rbuf)
{
    if (crux_dev_absent()) {
        return CRUX_OK;
    }
    crux_status_t st = crux_dev_host_ready(rbuf);
    return st == CRUX_OK && sbuf != NULL ? crux_dev_host_ready(sbuf) : st;
}

int crux_dev_host_pair(crux_dev_host_pair_t *pair, const void *sbuf, const void *rbuf)
{
    if (sbuf == pair->sbuf && rbuf == pair->rbuf && rbuf != NULL) {
        return 1;
    }
    if (!crux_dev_absent()) {
        return 0;
    }
    pair->sbuf = sbuf;
    pair->rbuf = rbuf;
    return 1;
}

struct crux_dev_pinned {
    void *buf[2];
    size_t size[2];
    int locked[2]; /* page-locked by the driver, else malloc'd */
};

crux_status_t crux_dev_pinned_create(crux_dev_pinned_t **pin_p)
{
    *pin_p = calloc(1, sizeof(**pin_p));
    return *pin_p != NULL ? CRUX_OK : CRUX_ERR_NO_MEMORY;
}

#ifdef CRUX_HAVE_CUDA

crux_status_t crux_dev_copy(void *dst, const void *src, size_t bytes)
{
    crux_tl_mem_t d = crux_tl_mem_query(dst), s = crux_tl_mem_query(src);
    int device = d.type == CRUX_TL_MEM_CUDA ? d.device : s.type == CRUX_TL_MEM_CUDA ? s.device : -1;
    if (device < 0) {
        memcpy(dst, src, bytes);
        return CRUX_OK;
    }
    crux_status_t st = crux_cuda_push(device);
    if (st == CRUX_OK) {
        st = crux_cuda_status(
            crux_cuda()->Memcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes));
        crux_cuda_pop();
    }
    return st;
}

/* The buffers remember whether they are page-locked: the driver may have
 * been loaded (by the application) after they were allocated. */
void *crux_dev_pinned_buffer(crux_dev_pinned_t *pin, unsigned slot, size_t bytes)
{
    if (slot > 1) {
        return NULL;
    }
    if (pin->size[slot] < bytes) {
        if (pin->buf[slot] != NULL) {
            pin->locked[slot] ? crux_cuda_host_free(pin->buf[slot]) : free(pin->buf[slot]);
        }
        pin->buf[slot] = NULL;
        pin->size[slot] = 0;
        /* pinned, so copies to and from the device run at full PCIe speed */
        pin->locked[slot] = crux_cuda() != NULL;
        if (pin->locked[slot] ? crux_cuda_host_alloc(bytes, &pin->buf[slot]) != CRUX_OK
                              : (pin->buf[slot] = malloc(bytes)) == NULL) {
            pin->buf[slot] = NULL;
            return NULL;
        }
        pin->size[slot] = bytes;
    }
    return pin->buf[slot];
}

void crux_dev_pinned_destroy(crux_dev_pinned_t *pin)
{
    for (int i = 0; pin != NULL && i < 2; i++) {
        if (pin->buf[i] != NULL) {
            pin->locked[i] ? crux_cuda_host_free(pin->buf[i]) : free(pin->buf[i]);
        }
    }
    free(pin);
}

int crux_dev_exportable(const void *ptr)
{
    const crux_cuda_api_t *cu = crux_cuda();
    int capable = 0;
    CUpointer_attribute attr = CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE;
    void *data = &capable;
    return cu != NULL &&
           cu->PointerGetAttributes(1, &attr, &data, (CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS &&
           capable;
}

crux_status_t crux_dev_host_ready(const void *ptr)
{
    const crux_cuda_api_t *cu = crux_cuda();
    unsigned managed = 0;
    int device = -1;
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
    void *data[] = { &managed, &device };
    if (cu == NULL || ptr == NULL ||
        cu->PointerGetAttributes(2, attrs, data, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS ||
        !managed) {
        return CRUX_OK;
    }
    /* the host is the reader here: it waits (the legacy stream waits for
     * every blocking stream's earlier work; per-thread code uses the other) */
    crux_status_t st = crux_cuda_push(device >= 0 ? device : 0);
    if (st == CRUX_OK) {
        st = crux_cuda_status(cu->StreamSynchronize(CU_STREAM_LEGACY));
        if (st == CRUX_OK) {
            st = crux_cuda_status(cu->StreamSynchronize(CU_STREAM_PER_THREAD));
        }
        crux_cuda_pop();
    }
    return st;
}

crux_status_t crux_dev_alloc(int device, size_t bytes, void **ptr_p)
{
    CUdeviceptr p = 0;
    crux_status_t st = crux_cuda_push(device);
    if (st == CRUX_OK) {
        st = crux_cuda_status(crux_cuda()->MemAlloc(&p, bytes > 0 ? bytes : 1));
        crux_cuda_pop();
    }
    *ptr_p = (void *)(uintptr_t)p;
    return st;
}

void crux_dev_free(int device, void *ptr)
{
    if (ptr != NULL && crux_cuda_push(device) == CRUX_OK) {
        crux_cuda()->MemFree((CUdeviceptr)(uintptr_t)ptr);
        crux_cuda_pop();
    }
}

#else /* no CUDA toolkit at build time: host memory only */

int crux_dev_exportable(const void *ptr)
{
    return 0;
}

crux_status_t crux_dev_host_ready(const void *ptr)
{
    return CRUX_OK;
}

crux_status_t crux_dev_copy(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return CRUX_OK;
}

void *crux_dev_pinned_buffer(crux_dev_pinned_t *pin, unsigned slot, size_t bytes)
{
    if (slot > 1) {
        return NULL;
    }
    if (pin->size[slot] < bytes) {
        void *p = realloc(pin->buf[slot], bytes);
        if (p == NULL) {
            return NULL;
        }
        pin->buf[slot] = p;
        pin->size[slot] = bytes;
    }
    return pin->buf[slot];
}

void crux_dev_pinned_destroy(crux_dev_pinned_t *pin)
{
    if (pin != NULL) {
        free(pin->buf[0]);
        free(pin->buf[1]);
        free(pin);
    }
}

crux_status_t crux_dev_alloc(int device, size_t bytes, void **ptr_p)
{
    return CRUX_ERR_UNSUPPORTED;
}

void crux_dev_free(int device, void *ptr)
{
}
#endif

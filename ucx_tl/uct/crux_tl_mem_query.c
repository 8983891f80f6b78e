/* Memory types, from the CUDA driver's pointer attributes when there is one. */
#include "common/crux_cuda.h"
#include "ucx_tl/crux_tl_uct.h"

crux_tl_mem_t crux_tl_mem_query(const void *ptr)
{
    crux_tl_mem_t mem = { .type = CRUX_TL_MEM_HOST, .device = -1 };
#ifdef CRUX_HAVE_CUDA
    const crux_cuda_api_t *cu = crux_cuda();
    if (cu == NULL || ptr == NULL) {
        return mem;
    }
    /* Unlike cuPointerGetAttribute, this answers "not CUDA memory" for a
     * plain host pointer instead of failing. */
    unsigned type = 0, managed = 0;
    int device = -1;
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
    void *data[] = { &type, &managed, &device };
    if (cu->PointerGetAttributes(3, attrs, data, (CUdeviceptr)(uintptr_t)ptr) == CUDA_SUCCESS &&
        type == CU_MEMORYTYPE_DEVICE && !managed) {
        mem.type = CRUX_TL_MEM_CUDA;
        mem.device = device;
    }
#else
    (void)ptr;
#endif
    return mem;
}

int crux_tl_cuda_devices(void)
{
#ifdef CRUX_HAVE_CUDA
    int count = 0;
    const crux_cuda_api_t *cu = crux_cuda();
    if (cu != NULL && cu->DeviceGetCount(&count) == CUDA_SUCCESS) {
        return count;
    }
#endif
    return 0;
}

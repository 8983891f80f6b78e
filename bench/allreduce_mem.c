/* crux-bench-allreduce: host or device buffers. */
#include "config.h"

#include "bench/allreduce_mem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crux_cuda.h"

int bench_mem_use_device(int local_rank, char *why, size_t len)
{
#ifdef CRUX_HAVE_CUDA
    /* the benchmark is the application: it brings the driver, which crux
     * itself never loads */
    const crux_cuda_api_t *cu = crux_cuda_load();
    int count = 0;
    if (cu == NULL || cu->DeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
        snprintf(why, len, "-m cuda: no GPU here (the CUDA driver cannot be loaded or sees none)");
        return -1;
    }
    if (crux_cuda_push(local_rank % count) != CRUX_OK) {
        snprintf(why, len, "-m cuda: cannot use GPU %d", local_rank % count);
        return -1;
    }
    return 0;
#else
    snprintf(why, len, "-m cuda: crux was built without CUDA (configure found no toolkit)");
    return -1;
#endif
}

void *bench_mem_alloc(int device, size_t bytes)
{
#ifdef CRUX_HAVE_CUDA
    if (device) {
        CUdeviceptr p = 0;
        return crux_cuda()->MemAlloc(&p, bytes) == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
    }
#endif
    void *p = NULL;
    return posix_memalign(&p, 4096, bytes) == 0 ? p : NULL;
}

void bench_mem_free(int device, void *p)
{
#ifdef CRUX_HAVE_CUDA
    if (device) {
        if (p != NULL) {
            crux_cuda()->MemFree((CUdeviceptr)(uintptr_t)p);
        }
        return;
    }
#endif
    free(p);
}

int bench_mem_copy(int device, void *dst, const void *src, size_t bytes)
{
#ifdef CRUX_HAVE_CUDA
    if (device) {
        return crux_cuda()->Memcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src,
                                   bytes) == CUDA_SUCCESS
                   ? 0
                   : -1;
    }
#endif
    memcpy(dst, src, bytes);
    return 0;
}

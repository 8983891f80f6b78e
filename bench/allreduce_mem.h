/* crux-bench-allreduce: buffers in host memory or on a GPU (CUDA driver
 * loaded at run time, common/crux_cuda.h). */
#ifndef CRUX_BENCH_ALLREDUCE_MEM_H
#define CRUX_BENCH_ALLREDUCE_MEM_H

#include <stddef.h>

/* Make device DEVICE's context current for bench_mem_alloc's device
 * buffers: 0, or -1 with why in WHY (no CUDA in this build, no driver, no
 * GPU). */
int bench_mem_use_device(int local_rank, char *why, size_t len);

/* BYTES of host memory, or of device memory once bench_mem_use_device
 * succeeded; NULL on failure. */
void *bench_mem_alloc(int device, size_t bytes);
void bench_mem_free(int device, void *p);
/* Copies between any two buffers (unified addressing on the device). */
int bench_mem_copy(int device, void *dst, const void *src, size_t bytes);

#endif

/* MPI_Allreduce on CUDA device buffers, through crux: the GPU-kernel path
 * (predefined ops on one node), and staging through host memory (a
 * user-defined op; several nodes).  Then what a member alone may be unable
 * to do, which must send every member to the same host fallback with the
 * right result: one rank's buffer in stream-ordered (pool) memory, one
 * rank's GPU out of memory, no peer access between the GPUs, and MIG
 * instances (the last three with the stand-in driver only, which fakes
 * them).  Before all of it: crux must not have loaded the driver in
 * MPI_Init, which this program loads only afterwards.  The CUDA driver is the one crux loads
 * (CRUX_CUDA_LIBRARY, else libcuda.so.1): on a machine without a GPU the
 * test scripts point it at tests/mock/mock_cuda.c's stand-in, whose device
 * memory only its own calls may read; every check reads results back with
 * cuMemcpy. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tap_mpi.h"

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDeviceGetCount)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuCtxPushCurrent)(CUcontext);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);
static CUresult (*p_cuMemcpy)(CUdeviceptr, CUdeviceptr, size_t);
static CUresult (*p_cuMemAllocAsync)(CUdeviceptr *, size_t, CUstream); /* optional */
static CUresult (*p_cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static bool pool_rank;                         /* this rank's buffers come from cuMemAllocAsync */
static unsigned long (*p_default_syncs)(void); /* the stand-in driver's count */
static CUresult (*p_cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned); /* optional */

static const char *driver_path(void)
{
    const char *path = getenv("CRUX_CUDA_LIBRARY");
    return path != NULL && path[0] ? path : "libcuda.so.1";
}

static bool load_driver(void)
{
    void *lib = dlopen(driver_path(), RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        return false;
    }
    *(void **)&p_cuMemAllocAsync = dlsym(lib, "cuMemAllocAsync");
    *(void **)&p_cuMemcpyAsync = dlsym(lib, "cuMemcpyAsync");
    *(void **)&p_default_syncs = dlsym(lib, "mock_cuda_default_syncs");
    *(void **)&p_cuMemAllocManaged = dlsym(lib, "cuMemAllocManaged");
#define SYM(var, name) (*(void **)&(var) = dlsym(lib, name)) != NULL
    return SYM(p_cuInit, "cuInit") && SYM(p_cuDeviceGetCount, "cuDeviceGetCount") &&
           SYM(p_cuDeviceGet, "cuDeviceGet") &&
           SYM(p_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
           SYM(p_cuCtxPushCurrent, "cuCtxPushCurrent_v2") && SYM(p_cuMemAlloc, "cuMemAlloc_v2") &&
           SYM(p_cuMemFree, "cuMemFree_v2") && SYM(p_cuMemcpy, "cuMemcpy");
#undef SYM
}

static void *dev_alloc(size_t bytes)
{
    CUdeviceptr p = 0;
    CUresult r = pool_rank ? p_cuMemAllocAsync(&p, bytes, NULL) : p_cuMemAlloc(&p, bytes);
    return r == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
}

static void copy(void *dst, const void *src, size_t bytes) /* unified addressing */
{
    p_cuMemcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes);
}

static void add_floats(void *in, void *inout, int *len, MPI_Datatype *type)
{
    for (int i = 0; i < *len; i++) {
        ((float *)inout)[i] += ((float *)in)[i];
    }
}

/* Allreduce of 'count' floats with 'op' on device buffers; the expected
 * result of element i is expect(i). */
static bool device_allreduce_on(MPI_Comm comm, MPI_Op op, size_t count, bool in_place, int rank,
                                int size, const char *oom)
{
    size_t bytes = count * sizeof(float);
    float *host = malloc(bytes), *back = malloc(bytes);
    float *d_in = dev_alloc(bytes), *d_out = dev_alloc(bytes);
    if (host == NULL || back == NULL || d_in == NULL || d_out == NULL) {
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        host[i] = (float)((rank * 3 + (int)(i % 101)) % 7);
    }
    copy(in_place ? d_out : d_in, host, bytes);
    if (oom != NULL) {
        setenv("MOCK_CUDA_OOM_BYTES", oom, 1); /* no more device memory for crux */
    }
    bool ok = MPI_Allreduce(in_place ? MPI_IN_PLACE : d_in, d_out, (int)count, MPI_FLOAT, op,
                            comm) == MPI_SUCCESS;
    unsetenv("MOCK_CUDA_OOM_BYTES");
    copy(back, d_out, bytes);
    for (size_t i = 0; ok && i < count; i++) {
        float e = op == MPI_MAX ? 0.0f : 0.0f;
        for (int r = 0; r < size; r++) {
            float v = (float)((r * 3 + (int)(i % 101)) % 7);
            e = op == MPI_MAX ? (v > e ? v : e) : e + v;
        }
        ok = back[i] == e;
    }
    p_cuMemFree((CUdeviceptr)(uintptr_t)d_in);
    p_cuMemFree((CUdeviceptr)(uintptr_t)d_out);
    free(host);
    free(back);
    return ok;
}

static bool device_allreduce(MPI_Op op, size_t count, bool in_place, int rank, int size)
{
    return device_allreduce_on(MPI_COMM_WORLD, op, count, in_place, rank, size, NULL);
}

/* A sum on a new communicator (an engine group of its own, nothing agreed
 * before), with 'var'=value set in every rank's environment (NULL: none)
 * and rank 1's device memory full when 'oom'.  Communicators over the same
 * processes in the same order share one group, MPI_COMM_WORLD's included;
 * this one has the reverse order, so its group is its own and goes when it
 * is freed. */
static bool fresh_allreduce(const char *var, const char *value, bool oom, bool in_place, int rank,
                            int size)
{
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comm);
    if (var != NULL) {
        setenv(var, value, 1);
    }
    bool ok = device_allreduce_on(comm, MPI_SUM, 1000003, in_place, rank, size,
                                  oom && rank == 1 ? "1" : NULL);
    if (var != NULL) {
        unsetenv(var);
    }
    MPI_Comm_free(&comm);
    return ok;
}

/* Floats one byte off their alignment: a GPU kernel on them would fault
 * and lose the process's CUDA context for good (the stand-in driver makes
 * the fault sticky too), so crux stages them; the device works after. */
static bool misaligned_allreduce(int rank, int size)
{
    const size_t count = 65537, bytes = count * sizeof(float);
    char *d = dev_alloc(bytes + sizeof(float));
    float *host = malloc(bytes), *back = malloc(bytes);
    if (d == NULL || host == NULL || back == NULL) {
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        host[i] = (float)(rank + (int)(i % 13));
    }
    copy(d + 1, host, bytes);
    bool ok = MPI_Allreduce(MPI_IN_PLACE, d + 1, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
              MPI_SUCCESS;
    copy(back, d + 1, bytes);
    for (size_t i = 0; ok && i < count; i++) {
        ok = back[i] == (float)(size * (int)(i % 13) + size * (size - 1) / 2);
    }
    p_cuMemFree((CUdeviceptr)(uintptr_t)d);
    free(host);
    free(back);
    return ok && device_allreduce(MPI_SUM, 1000, false, rank, size);
}

/* The input written by a copy still queued on the default stream when
 * MPI_Allreduce is called: crux must wait for it, not read the old bytes,
 * and wait on the GPU (its streams wait on an event recorded there), not
 * by synchronizing the default stream from the host. */
static bool after_default_stream(CUstream stream, int rank, int size, bool *host_waited)
{
    const size_t count = 1000003, bytes = count * sizeof(float);
    float *host = malloc(bytes), *back = malloc(bytes);
    float *d_in = dev_alloc(bytes), *d_out = dev_alloc(bytes);
    if (host == NULL || back == NULL || d_in == NULL || d_out == NULL || p_cuMemcpyAsync == NULL) {
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        host[i] = (float)(rank + 1);
    }
    unsigned long syncs = p_default_syncs != NULL ? p_default_syncs() : 0;
    bool ok =
        p_cuMemcpyAsync((CUdeviceptr)(uintptr_t)d_in, (CUdeviceptr)(uintptr_t)host, bytes,
                        stream) == CUDA_SUCCESS &&
        MPI_Allreduce(d_in, d_out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
    *host_waited = p_default_syncs != NULL && p_default_syncs() != syncs;
    copy(back, d_out, bytes);
    for (size_t i = 0; ok && i < count; i++) {
        ok = back[i] == (float)(size * (size + 1) / 2);
    }
    p_cuMemFree((CUdeviceptr)(uintptr_t)d_in);
    p_cuMemFree((CUdeviceptr)(uintptr_t)d_out);
    free(host);
    free(back);
    return ok;
}

/* Managed memory takes the host path, which reads it in place: the input
 * written by a copy still queued on a default stream is waited for (the
 * stand-in runs each default stream's work only when that one is waited
 * for). */
static bool managed_allreduce(CUstream stream, int rank, int size)
{
    const size_t count = 100003, bytes = count * sizeof(float);
    CUdeviceptr in = 0, out = 0;
    float *host = malloc(bytes);
    if (p_cuMemAllocManaged == NULL || p_cuMemcpyAsync == NULL || host == NULL ||
        p_cuMemAllocManaged(&in, bytes, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS ||
        p_cuMemAllocManaged(&out, bytes, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS) {
        free(host);
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        host[i] = (float)(rank + 1);
    }
    bool ok = p_cuMemcpyAsync(in, (CUdeviceptr)(uintptr_t)host, bytes, stream) == CUDA_SUCCESS &&
              MPI_Allreduce((void *)(uintptr_t)in, (void *)(uintptr_t)out, (int)count, MPI_FLOAT,
                            MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
    for (size_t i = 0; ok && i < count; i++) {
        ok = ((const float *)(uintptr_t)out)[i] == (float)(size * (size + 1) / 2);
    }
    p_cuMemFree(in);
    p_cuMemFree(out);
    free(host);
    return ok;
}

/* What only some members cannot do leads all of them to the host. */
static void one_member_cannot(int rank, int size)
{
    bool mock = getenv("MOCK_CUDA_DEVICES") != NULL;
    for (int in_place = 0; in_place < 2; in_place++) {
        const char *place = in_place ? "in place" : "out of place";
        if (p_cuMemAllocAsync != NULL) {
            pool_rank = rank == 1;
            tap_check(fresh_allreduce(NULL, NULL, false, in_place, rank, size),
                      "rank 1's buffers in stream-ordered memory: all stage, %s", place);
            pool_rank = false;
        }
        if (!mock) {
            continue;
        }
        tap_check(fresh_allreduce(NULL, NULL, true, in_place, rank, size),
                  "rank 1's GPU out of memory for the scratch: all stage, %s", place);
        tap_check(fresh_allreduce("MOCK_CUDA_NO_P2P", "0-1", false, in_place, rank, size),
                  "no peer access between GPUs 0 and 1: all stage, %s", place);
        tap_check(fresh_allreduce("MOCK_CUDA_MIG", "1", false, in_place, rank, size),
                  "MIG instances of one GPU (one PCI id): all stage, %s", place);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, ndev = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* nothing in this process had loaded the driver: MPI_Init must not have */
    void *before = dlopen(driver_path(), RTLD_NOW | RTLD_NOLOAD);
    /* small host calls before the driver is loaded: the device calls after
     * it must not take their path for host memory */
    float host_one = 1.0f, host_sum = 0.0f;
    MPI_Allreduce(&host_one, &host_sum, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&host_one, &host_sum, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    CUdevice dev;
    CUcontext ctx;
    bool have = load_driver() && p_cuInit(0) == CUDA_SUCCESS &&
                p_cuDeviceGetCount(&ndev) == CUDA_SUCCESS && ndev > 0 &&
                p_cuDeviceGet(&dev, rank % ndev) == CUDA_SUCCESS &&
                p_cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS &&
                p_cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
    int all = 0, mine = have;
    MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0) {
            printf("1..0 # SKIP no CUDA driver or device\n");
        }
        MPI_Finalize();
        return 0;
    }
    tap_check(before == NULL, "MPI_Init left the CUDA driver unloaded");
    tap_check(host_sum == (float)size, "a small host Allreduce before the driver is loaded");
    MPI_Op user_sum;
    MPI_Op_create(add_floats, 1, &user_sum);
    const size_t counts[] = { 1, 1000, 65537, 1000003 };
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            const char *place = in_place ? "in place" : "out of place";
            tap_check(device_allreduce(MPI_SUM, counts[c], in_place, rank, size),
                      "device float sum, %zu elements, %s", counts[c], place);
            tap_check(device_allreduce(MPI_MAX, counts[c], in_place, rank, size),
                      "device float max, %zu elements, %s", counts[c], place);
            tap_check(device_allreduce(user_sum, counts[c], in_place, rank, size),
                      "device float user-defined sum (staged), %zu elements, %s", counts[c], place);
        }
    }
    tap_check(misaligned_allreduce(rank, size),
              "misaligned device floats are staged, and the device still works after");
    static const struct {
        CUstream stream;
        const char *name;
    } defaults[] = { { CU_STREAM_LEGACY, "legacy" }, { CU_STREAM_PER_THREAD, "per-thread" } };
    for (int k = 0; k < 2; k++) {
        bool host_waited = false;
        tap_check(after_default_stream(defaults[k].stream, rank, size, &host_waited),
                  "the input still being written on the %s default stream is waited for",
                  defaults[k].name);
        char what[96];
        snprintf(what, sizeof(what),
                 "the %s default stream is waited for on the GPU, not by the host",
                 defaults[k].name);
        if (p_default_syncs != NULL) {
            tap_check(!host_waited, "%s", what);
        } else { /* only the stand-in driver counts the host's waits */
            tap_skip(what, "no count of the host's waits on this driver");
        }
        tap_check(managed_allreduce(defaults[k].stream, rank, size),
                  "managed memory goes the host path, after the %s default stream's work",
                  defaults[k].name);
    }
    one_member_cannot(rank, size);
    MPI_Op_free(&user_sum);
    MPI_Finalize();
    return 0;
}

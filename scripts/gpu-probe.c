/* gpu-probe: what the CUDA driver of this machine does in the cases crux's
 * device paths depend on, printed one "key value" line each (built and run
 * by scripts/gpu-check; the driver is opened with dlopen, as crux does).
 *
 * usage: gpu-probe FATBIN [DEVICE]
 *   FATBIN  crux's kernels (build/coll/crux_dev_kernels.fatbin)
 *
 * The probes that need a process of their own (a stale IPC import, a
 * misaligned kernel, whose fault loses the context) fork before this
 * process touches the driver. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *lib;
/* the entry point, typed by cuda.h's declaration */
#define CU(name) ((__typeof__(&name))sym(#name))
static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        printf("missing-symbol %s\n", name);
        fflush(stdout);
        exit(1);
    }
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int device = 0;
static CUcontext ctx;

static void init(void)
{
    CUdevice dev;
    CU(cuInit)(0);
    CU(cuDeviceGet)(&dev, device);
    CU(cuDevicePrimaryCtxRetain)(&ctx, dev);
}

static unsigned char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p != NULL && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    return p;
}

/* A stale import: the exporter frees 1 GiB while we still map it. */
static void probe_stale_import(void)
{
    int to_parent[2], to_child[2];
    if (pipe(to_parent) != 0 || pipe(to_child) != 0) {
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        CUdeviceptr p;
        CUipcMemHandle h;
        char go;
        init();
        CU(cuCtxPushCurrent_v2)(ctx);
        if (CU(cuMemAlloc_v2)(&p, (size_t)1 << 30) != CUDA_SUCCESS ||
            CU(cuIpcGetMemHandle)(&h, p) != CUDA_SUCCESS) {
            _exit(1);
        }
        write(to_parent[1], &h, sizeof(h));
        read(to_child[0], &go, 1);
        CU(cuMemFree_v2)(p);
        write(to_parent[1], "f", 1);
        read(to_child[0], &go, 1);
        _exit(0);
    }
    CUipcMemHandle h;
    CUdeviceptr mapped;
    size_t free0, free1, free2, total;
    char c;
    init();
    CU(cuCtxPushCurrent_v2)(ctx);
    if (read(to_parent[0], &h, sizeof(h)) == sizeof(h) &&
        CU(cuIpcOpenMemHandle_v2)(&mapped, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == CUDA_SUCCESS) {
        CU(cuMemGetInfo_v2)(&free0, &total);
        write(to_child[1], "g", 1);
        read(to_parent[0], &c, 1);
        usleep(200000);
        CU(cuMemGetInfo_v2)(&free1, &total);
        CU(cuIpcCloseMemHandle)(mapped);
        usleep(200000);
        CU(cuMemGetInfo_v2)(&free2, &total);
        printf("stale-import-held-MiB %.0f\n", ((double)free2 - (double)free1) / 1048576.0);
        printf("stale-import-free-before-exporter-free-MiB %.0f\n", (double)free0 / 1048576.0);
    } else {
        printf("stale-import failed\n");
    }
    write(to_child[1], "x", 1);
    waitpid(pid, NULL, 0);
    _exit(0);
}

/* A reduction kernel on a misaligned double: the error, and whether the
 * context survives it. */
static void probe_misaligned(const unsigned char *fatbin)
{
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr p;
    init();
    CU(cuCtxPushCurrent_v2)(ctx);
    if (fatbin == NULL || CU(cuModuleLoadData)(&mod, fatbin) != CUDA_SUCCESS ||
        CU(cuModuleGetFunction)(&fn, mod, "crux_double_sum") != CUDA_SUCCESS ||
        CU(cuMemAlloc_v2)(&p, 4096) != CUDA_SUCCESS) {
        printf("misaligned-kernel not-run\n");
        _exit(0);
    }
    void *out = (void *)(uintptr_t)(p + 4), *a = out, *b = out;
    size_t n = 16;
    void *args[] = { &out, &a, &b, &n };
    CUresult launch = CU(cuLaunchKernel)(fn, 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    CUresult sync = CU(cuCtxSynchronize)();
    CUdeviceptr q;
    CUresult after = CU(cuMemAlloc_v2)(&q, 4096);
    printf("misaligned-kernel launch %d sync %d alloc-after %d\n", launch, sync, after);
    _exit(0);
}

static void in_child(void (*fn)(const unsigned char *), const unsigned char *arg)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
}

static void stale(const unsigned char *unused)
{
    (void)unused;
    probe_stale_import();
}

static void attributes(const char *what, CUdeviceptr p, CUresult made)
{
    unsigned type = 0, managed = 0;
    int ordinal = -9, ipc = -1;
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE };
    void *data[] = { &type, &managed, &ordinal, &ipc };
    CUipcMemHandle h;
    if (made != CUDA_SUCCESS) {
        printf("attributes %s not-made %d\n", what, made);
        return;
    }
    CUresult r = CU(cuPointerGetAttributes)(4, attrs, data, p);
    CUresult e = CU(cuIpcGetMemHandle)(&h, p);
    printf("attributes %s query %d type %u managed %u ordinal %d ipc-capable %d ipc-export %d\n",
           what, r, type, managed, ordinal, ipc, e);
}

static void probe_memory(void)
{
    CUdeviceptr p;
    attributes("cuMemAlloc", p, CU(cuMemAlloc_v2)(&p, 1 << 20));
    CUresult r = CU(cuMemAllocAsync)(&p, 1 << 20, NULL);
    CU(cuCtxSynchronize)();
    attributes("cuMemAllocAsync", p, r);
    attributes("cuMemAllocManaged", p, CU(cuMemAllocManaged)(&p, 1 << 20, CU_MEM_ATTACH_GLOBAL));
    void *h = malloc(1 << 20);
    attributes("cuMemHostRegister", (CUdeviceptr)(uintptr_t)h,
               CU(cuMemHostRegister_v2)(h, 1 << 20, 0));
    /* VMM: a physical allocation mapped into a reserved range */
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, device } };
    size_t gran = 0;
    CUmemGenericAllocationHandle mh;
    CUmemAccessDesc access = { .location = prop.location,
                               .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    r = CU(cuMemGetAllocationGranularity)(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (r == CUDA_SUCCESS) {
        r = CU(cuMemCreate)(&mh, gran, &prop, 0ull);
    }
    if (r == CUDA_SUCCESS) {
        r = CU(cuMemAddressReserve)(&p, gran, 0, 0, 0ull);
    }
    if (r == CUDA_SUCCESS) {
        r = CU(cuMemMap)(p, gran, 0, mh, 0ull);
    }
    if (r == CUDA_SUCCESS) {
        r = CU(cuMemSetAccess)(p, gran, &access, 1);
    }
    attributes("cuMemCreate(VMM)", p, r);
}

/* What a push + event query + pop costs, and the older per-call retain. */
static void probe_costs(void)
{
    CUevent ev;
    CUstream st;
    CUdevice dev;
    CU(cuStreamCreate)(&st, CU_STREAM_NON_BLOCKING);
    CU(cuEventCreate)(&ev, CU_EVENT_DISABLE_TIMING);
    CU(cuEventRecord)(ev, st);
    CU(cuCtxPopCurrent_v2)(&ctx);
    const int n = 100000;
    double t0 = now();
    for (int i = 0; i < n; i++) {
        CU(cuCtxPushCurrent_v2)(ctx);
        CU(cuEventQuery)(ev);
        CU(cuCtxPopCurrent_v2)(&ctx);
    }
    double t1 = now();
    for (int i = 0; i < n; i++) {
        CUcontext c;
        CU(cuDeviceGet)(&dev, device);
        CU(cuDevicePrimaryCtxRetain)(&c, dev);
        CU(cuCtxPushCurrent_v2)(c);
        CU(cuEventQuery)(ev);
        CU(cuCtxPopCurrent_v2)(&c);
        CU(cuDevicePrimaryCtxRelease_v2)(dev);
    }
    double t2 = now();
    printf("push-query-pop-ns %.0f\n", (t1 - t0) / n * 1e9);
    printf("get-retain-push-query-pop-release-ns %.0f\n", (t2 - t1) / n * 1e9);
    CU(cuCtxPushCurrent_v2)(ctx);
}

/* crux's float sum kernel against a device copy, 1 GiB each way. */
static void probe_kernel_bandwidth(CUfunction fn)
{
    size_t bytes = (size_t)1 << 30, count = bytes / sizeof(float);
    CUdeviceptr a, b, out;
    CUevent e0, e1;
    if (CU(cuMemAlloc_v2)(&a, bytes) != CUDA_SUCCESS ||
        CU(cuMemAlloc_v2)(&b, bytes) != CUDA_SUCCESS ||
        CU(cuMemAlloc_v2)(&out, bytes) != CUDA_SUCCESS) {
        printf("kernel-vs-copy not-run (memory)\n");
        return;
    }
    CU(cuMemsetD8_v2)(a, 0, bytes);
    CU(cuMemsetD8_v2)(b, 0, bytes);
    CU(cuEventCreate)(&e0, 0);
    CU(cuEventCreate)(&e1, 0);
    size_t blocks = (count + 255) / 256;
    unsigned grid = blocks < 4096 ? (unsigned)blocks : 4096;
    void *args[] = { &out, &a, &b, &count };
    float ms_kernel = 0, ms_copy = 0;
    for (int round = 0; round < 3; round++) {
        CU(cuEventRecord)(e0, NULL);
        CU(cuLaunchKernel)(fn, grid, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
        CU(cuEventRecord)(e1, NULL);
        CU(cuEventSynchronize)(e1);
        CU(cuEventElapsedTime)(&ms_kernel, e0, e1);
        CU(cuEventRecord)(e0, NULL);
        CU(cuMemcpyDtoD_v2)(out, a, bytes);
        CU(cuEventRecord)(e1, NULL);
        CU(cuEventSynchronize)(e1);
        CU(cuEventElapsedTime)(&ms_copy, e0, e1);
    }
    /* the kernel reads two inputs and writes one: 3 GiB of traffic; the copy 2 */
    printf("kernel-float-sum-1GiB-ms %.3f GBps-moved %.0f\n", ms_kernel,
           3.0 * (double)bytes / (ms_kernel * 1e6));
    printf("device-copy-1GiB-ms %.3f GBps-moved %.0f\n", ms_copy,
           2.0 * (double)bytes / (ms_copy * 1e6));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gpu-probe FATBIN [DEVICE]\n");
        return 2;
    }
    device = argc > 2 ? atoi(argv[2]) : 0;
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "gpu-probe: no libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    unsigned char *fatbin = read_file(argv[1]);
    in_child(stale, NULL);
    in_child(probe_misaligned, fatbin);

    int version = 0;
    CU(cuInit)(0);
    CU(cuDriverGetVersion)(&version);
    printf("driver-cuda-version %d.%d\n", version / 1000, version % 1000 / 10);
    void *pinned = NULL;
    printf("host-alloc-without-context %d\n", CU(cuMemHostAlloc)(&pinned, 4096, 0));
    init();
    CU(cuCtxPushCurrent_v2)(ctx);
    probe_memory();
    CUmodule mod;
    CUfunction fn = NULL;
    CUresult r = fatbin != NULL ? CU(cuModuleLoadData)(&mod, fatbin) : CUDA_ERROR_FILE_NOT_FOUND;
    printf("module-load %d\n", r);
    if (r == CUDA_SUCCESS) {
        printf("module-function %d\n", CU(cuModuleGetFunction)(&fn, mod, "crux_float_sum"));
    }
    probe_costs();
    if (fn != NULL) {
        probe_kernel_bandwidth(fn);
    }
    return 0;
}

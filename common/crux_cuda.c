/* The CUDA driver, opened with dlopen once per process. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "common/crux_cuda.h"

#ifdef CRUX_HAVE_CUDA
#include <ctype.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static crux_cuda_api_t api;
static const crux_cuda_api_t *loaded;
static int given_up;        /* the driver was there but unusable: never again */
static int may_load;        /* crux_cuda_load: open it even if nobody else did */
static long seen_adds = -1; /* the loader's count of objects loaded, at the last look */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *library(void)
{
    const char *path = getenv("CRUX_CUDA_LIBRARY");
    return path != NULL && path[0] != '\0' ? path : "libcuda.so.1";
}

static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    *(long *)arg = (long)info->dlpi_adds;
    return 1; /* one is enough: the count is the loader's */
}

/* 1 when the process has loaded the driver.  The loader counts every object
 * it ever loaded: while that count stays put the answer cannot change, so a
 * process without CUDA pays one callback per look, not a dlopen. */
static int driver_present(void)
{
    long adds = -1;
    dl_iterate_phdr(first_object, &adds);
    if (adds == __atomic_load_n(&seen_adds, __ATOMIC_RELAXED)) {
        return 0;
    }
    void *lib = dlopen(library(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (lib == NULL) {
        __atomic_store_n(&seen_adds, adds, __ATOMIC_RELAXED);
        return 0;
    }
    dlclose(lib);
    return 1;
}

/* With load_lock held. */
static void load(void)
{
    void *lib = dlopen(library(), RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        given_up = may_load; /* else it was there a moment ago: look again later */
        return;
    }
    /* the _v2 names are what cuda.h's macros select for these calls */
#define SYM(field, name) (*(void **)&api.field = dlsym(lib, name)) != NULL
    int ok =
        SYM(Init, "cuInit") && SYM(DeviceGetCount, "cuDeviceGetCount") &&
        SYM(DeviceGet, "cuDeviceGet") && SYM(DeviceGetPCIBusId, "cuDeviceGetPCIBusId") &&
        SYM(DeviceGetByPCIBusId, "cuDeviceGetByPCIBusId") &&
        SYM(DeviceCanAccessPeer, "cuDeviceCanAccessPeer") &&
        SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
        SYM(DevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState") &&
        SYM(CtxPushCurrent, "cuCtxPushCurrent_v2") && SYM(CtxPopCurrent, "cuCtxPopCurrent_v2") &&
        SYM(CtxEnablePeerAccess, "cuCtxEnablePeerAccess") &&
        SYM(PointerGetAttributes, "cuPointerGetAttributes") &&
        SYM(MemGetAddressRange, "cuMemGetAddressRange_v2") && SYM(MemAlloc, "cuMemAlloc_v2") &&
        SYM(MemFree, "cuMemFree_v2") && SYM(MemHostAlloc, "cuMemHostAlloc") &&
        SYM(MemFreeHost, "cuMemFreeHost") && SYM(MemHostRegister, "cuMemHostRegister_v2") &&
        SYM(MemHostUnregister, "cuMemHostUnregister") && SYM(Memcpy, "cuMemcpy") &&
        SYM(MemcpyAsync, "cuMemcpyAsync") && SYM(MemsetD8, "cuMemsetD8_v2") &&
        SYM(IpcGetMemHandle, "cuIpcGetMemHandle") &&
        SYM(IpcOpenMemHandle, "cuIpcOpenMemHandle_v2") &&
        SYM(IpcCloseMemHandle, "cuIpcCloseMemHandle") && SYM(StreamCreate, "cuStreamCreate") &&
        SYM(StreamDestroy, "cuStreamDestroy_v2") && SYM(StreamSynchronize, "cuStreamSynchronize") &&
        SYM(StreamWaitEvent, "cuStreamWaitEvent") && SYM(EventCreate, "cuEventCreate") &&
        SYM(EventDestroy, "cuEventDestroy_v2") && SYM(EventRecord, "cuEventRecord") &&
        SYM(EventQuery, "cuEventQuery") && SYM(IpcGetEventHandle, "cuIpcGetEventHandle") &&
        SYM(IpcOpenEventHandle, "cuIpcOpenEventHandle") &&
        SYM(ModuleLoadData, "cuModuleLoadData") && SYM(ModuleGetFunction, "cuModuleGetFunction") &&
        SYM(LaunchKernel, "cuLaunchKernel");
#undef SYM
    /* CUDA 11.4 on: MIG instances have UUIDs of their own (optional) */
    *(void **)&api.DeviceGetUuid = dlsym(lib, "cuDeviceGetUuid_v2");
    int count = 0;
    if (!ok || api.Init(0) != CUDA_SUCCESS || api.DeviceGetCount(&count) != CUDA_SUCCESS ||
        count == 0) {
        dlclose(lib); /* an old driver, or no GPU: as if there were no driver */
        given_up = 1;
        return;
    }
    __atomic_store_n(&loaded, &api, __ATOMIC_RELEASE);
}

const crux_cuda_api_t *crux_cuda(void)
{
    const crux_cuda_api_t *cu = __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
    if (cu != NULL || __atomic_load_n(&given_up, __ATOMIC_RELAXED) ||
        (!__atomic_load_n(&may_load, __ATOMIC_RELAXED) && !driver_present())) {
        return cu;
    }
    pthread_mutex_lock(&load_lock);
    if (loaded == NULL && !given_up) {
        load();
    }
    pthread_mutex_unlock(&load_lock);
    return loaded;
}

const crux_cuda_api_t *crux_cuda_load(void)
{
    __atomic_store_n(&may_load, 1, __ATOMIC_RELAXED);
    return crux_cuda();
}

crux_status_t crux_cuda_status(CUresult result)
{
    switch (result) {
    case CUDA_SUCCESS: return CRUX_OK;
    case CUDA_ERROR_OUT_OF_MEMORY: return CRUX_ERR_NO_MEMORY;
    case CUDA_ERROR_INVALID_VALUE: return CRUX_ERR_INVALID;
    /* "cannot here": the caller takes another path (host staging) */
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: /* 217: no P2P between the devices */
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_INVALID_IMAGE:     /* the kernels' fat binary cannot load: */
    case CUDA_ERROR_NO_BINARY_FOR_GPU: /* no SASS for this GPU, and */
    case CUDA_ERROR_INVALID_PTX:       /* PTX the driver cannot JIT */
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED: return CRUX_ERR_UNSUPPORTED;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE: return CRUX_ERR_NO_RESOURCE;
    default: return CRUX_ERR_IO;
    }
}

/* Each device's primary context, retained once on first use and released
 * when the process exits: a push is then one driver call, not three (the
 * data path pushes around every copy and query). */
#define MAX_CONTEXTS 64
static CUcontext contexts[MAX_CONTEXTS];
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;

static void release_contexts(void)
{
    CUresult (*release)(CUdevice) = NULL;
    void *lib = dlopen(library(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (lib != NULL) {
        *(void **)&release = dlsym(lib, "cuDevicePrimaryCtxRelease_v2");
    }
    for (int d = 0; release != NULL && d < MAX_CONTEXTS; d++) {
        if (contexts[d] != NULL) {
            CUdevice dev;
            if (api.DeviceGet(&dev, d) == CUDA_SUCCESS) {
                release(dev);
            }
            contexts[d] = NULL;
        }
    }
    if (lib != NULL) {
        dlclose(lib);
    }
}

static CUcontext context_of(const crux_cuda_api_t *cu, int device, CUresult *r)
{
    CUcontext ctx = NULL;
    *r = CUDA_ERROR_INVALID_DEVICE;
    if (device < 0 || device >= MAX_CONTEXTS) {
        return NULL;
    }
    ctx = __atomic_load_n(&contexts[device], __ATOMIC_ACQUIRE);
    if (ctx != NULL) {
        *r = CUDA_SUCCESS;
        return ctx;
    }
    static int registered;
    pthread_mutex_lock(&contexts_lock);
    CUdevice dev;
    if ((ctx = contexts[device]) != NULL) {
        *r = CUDA_SUCCESS;
    } else if ((*r = cu->DeviceGet(&dev, device)) == CUDA_SUCCESS &&
               (*r = cu->DevicePrimaryCtxRetain(&ctx, dev)) == CUDA_SUCCESS) {
        __atomic_store_n(&contexts[device], ctx, __ATOMIC_RELEASE);
        if (!registered) {
            registered = atexit(release_contexts) == 0;
        }
    }
    pthread_mutex_unlock(&contexts_lock);
    return ctx;
}

crux_status_t crux_cuda_push(int device)
{
    const crux_cuda_api_t *cu = crux_cuda();
    if (cu == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    CUresult r;
    CUcontext ctx = context_of(cu, device, &r);
    if (r == CUDA_SUCCESS) {
        r = cu->CtxPushCurrent(ctx);
    }
    return crux_cuda_status(r);
}

int crux_cuda_context_active(int device)
{
    const crux_cuda_api_t *cu = crux_cuda();
    if (cu == NULL || device < 0 || device >= MAX_CONTEXTS) {
        return 0;
    }
    if (__atomic_load_n(&contexts[device], __ATOMIC_ACQUIRE) != NULL) {
        return 1;
    }
    CUdevice dev;
    unsigned flags;
    int active = 0;
    return cu->DeviceGet(&dev, device) == CUDA_SUCCESS &&
           cu->DevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && active;
}

void crux_cuda_pop(void)
{
    CUcontext ctx;
    crux_cuda()->CtxPopCurrent(&ctx);
}

/* The device whose context pinned host memory is made and freed in: the
 * first one this process works on (else 0), so that no context is made on
 * another rank's GPU for it; portable memory serves every context alike. */
static int home_device(void)
{
    int count = 0;
    if (crux_cuda()->DeviceGetCount(&count) == CUDA_SUCCESS) {
        for (int d = 0; d < count && d < MAX_CONTEXTS; d++) {
            if (crux_cuda_context_active(d)) {
                return d;
            }
        }
    }
    return 0;
}

crux_status_t crux_cuda_host_alloc(size_t bytes, void **ptr_p)
{
    *ptr_p = NULL;
    if (crux_cuda() == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    crux_status_t st = crux_cuda_push(home_device());
    if (st == CRUX_OK) {
        st = crux_cuda_status(
            crux_cuda()->MemHostAlloc(ptr_p, bytes > 0 ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE));
        crux_cuda_pop();
    }
    return st;
}

void crux_cuda_host_free(void *ptr)
{
    if (ptr != NULL && crux_cuda() != NULL && crux_cuda_push(home_device()) == CRUX_OK) {
        crux_cuda()->MemFreeHost(ptr);
        crux_cuda_pop();
    }
}

int crux_cuda_pci(int device, char *pci, size_t len)
{
    const crux_cuda_api_t *cu = crux_cuda();
    CUdevice dev;
    if (cu == NULL || len < 13 || cu->DeviceGet(&dev, device) != CUDA_SUCCESS ||
        cu->DeviceGetPCIBusId(pci, (int)len, dev) != CUDA_SUCCESS) {
        return -1;
    }
    for (char *p = pci; *p != '\0'; p++) {
        *p = (char)tolower((unsigned char)*p);
    }
    return 0;
}

/* Device names, looked up once: the set of devices of a process does not
 * change once the driver is initialised. */
static char names[MAX_CONTEXTS][CRUX_CUDA_NAME_SIZE];
static int names_known = -1; /* devices named; -1: not yet looked */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

static int look_up_name(const crux_cuda_api_t *cu, int device, char *name)
{
    CUdevice dev;
    CUuuid u;
    if (cu->DeviceGet(&dev, device) != CUDA_SUCCESS) {
        return -1;
    }
    if (cu->DeviceGetUuid == NULL) {
        return crux_cuda_pci(device, name, CRUX_CUDA_NAME_SIZE);
    }
    if (cu->DeviceGetUuid(&u, dev) != CUDA_SUCCESS) {
        return -1;
    }
    const unsigned char *b = (const unsigned char *)u.bytes;
    snprintf(name, CRUX_CUDA_NAME_SIZE,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
    return 0;
}

/* The number of devices named (0 without a driver). */
static int named_devices(void)
{
    const crux_cuda_api_t *cu = crux_cuda();
    int known = __atomic_load_n(&names_known, __ATOMIC_ACQUIRE);
    if (known >= 0 || cu == NULL) {
        return known < 0 ? 0 : known;
    }
    pthread_mutex_lock(&names_lock);
    int count = 0;
    if (names_known < 0 && cu->DeviceGetCount(&count) == CUDA_SUCCESS) {
        int n = 0;
        while (n < count && n < MAX_CONTEXTS && look_up_name(cu, n, names[n]) == 0) {
            n++;
        }
        __atomic_store_n(&names_known, n, __ATOMIC_RELEASE);
    }
    known = names_known < 0 ? 0 : names_known;
    pthread_mutex_unlock(&names_lock);
    return known;
}

int crux_cuda_name(int device, char name[CRUX_CUDA_NAME_SIZE])
{
    if (device < 0 || device >= named_devices()) {
        return -1;
    }
    memcpy(name, names[device], CRUX_CUDA_NAME_SIZE);
    return 0;
}

int crux_cuda_device_named(const char *name)
{
    int n = named_devices();
    for (int d = 0; d < n; d++) {
        if (strncmp(names[d], name, CRUX_CUDA_NAME_SIZE) == 0) {
            return d;
        }
    }
    return -1;
}
#endif

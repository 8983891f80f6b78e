/* A stand-in for the CUDA driver (libcuda.so.1), so that crux's CUDA code
 * paths run on machines without a GPU: tests load it through
 * CRUX_CUDA_LIBRARY.  It implements the driver calls crux uses with host
 * memory playing device memory:
 *   - device memory is a shared-memory file mapped here, so an IPC handle
 *     (the file's name) can be opened by another process; pointer
 *     attributes come from a table of allocations and mappings;
 *   - streams queue their work and run it late (a little per event query,
 *     all of it on synchronous calls), with events and stream waits
 *     ordering it, so a caller that reuses a buffer too early is caught;
 *     the default stream's work runs only on synchronous calls and when a
 *     stream waits on an event recorded there; interprocess events are shared-memory files,
 *     so one process's streams can wait on another's;
 *   - a module must be a fat binary (its magic number), a function must be
 *     named in it, and a launch of "crux_<dtype>_<op>" runs that kernel's
 *     source compiled for the host (mock_cuda_kernels.cc): this checks the
 *     kernels' code, names and arguments, on the CPU's arithmetic.
 * MOCK_CUDA_DEVICES sets the number of devices (default 1), and
 * MOCK_CUDA_VISIBLE="2,0" the ones this process sees, in ordinal order, as
 * CUDA_VISIBLE_DEVICES does (default: all): a CUdevice, a context, the
 * copy counters and MOCK_CUDA_NO_P2P name the physical device, ordinals
 * (cuDeviceGet, the pointer attribute) the visible one.
 *
 * It is strict where the real driver is (each read on every call, so a
 * test can change them in a child process):
 *   - allocations (device and pinned host), host memory registration
 *     (cuMemHostRegister, which makes any host range pinned host memory
 *     here, and once only), streams, modules and launches need a current
 *     context: CUDA_ERROR_INVALID_CONTEXT without one; a device that is not
 *     visible is CUDA_ERROR_INVALID_DEVICE;
 *   - MOCK_CUDA_NO_P2P="a-b,c-d": no peer access between those devices
 *     (either way): cuDeviceCanAccessPeer answers 0, and a handle exported
 *     on one cannot be opened from a context of the other
 *     (CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
 *   - MOCK_CUDA_MIG=1: the devices are MIG instances of one GPU: one PCI
 *     bus id, distinct UUIDs, no peer access between them;
 *   - cuMemAllocAsync gives stream-ordered (pool) memory, which is not
 *     IPC-capable and whose export is refused, as the driver refuses it;
 *     cuMemAllocManaged managed memory (IS_MANAGED), not exportable either;
 *   - MOCK_CUDA_OOM_BYTES=n: device allocations beyond n bytes in all
 *     fail with CUDA_ERROR_OUT_OF_MEMORY;
 *   - a kernel launched on a pointer not aligned to its element size
 *     faults: CUDA_ERROR_MISALIGNED_ADDRESS, sticky (every later call of
 *     the process fails with it, as a real context is lost);
 *   - a stream belongs to the context it was created in: a copy or an
 *     event record on it from another context is CUDA_ERROR_INVALID_HANDLE;
 *     peer access enabled twice is CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED.
 * Counters for tests: asynchronous copies by issuing context and by the
 * devices of their source and destination (mock_cuda_copies), peer access
 * enabled (mock_cuda_peer_enabled), retains, event queries, imports. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "coll/crux_reduce.h"

#define MAX_MAPS     4096
#define FATBIN_MAGIC 0xba55ed50u

typedef struct {
    uintptr_t base;
    size_t size;
    int device;     /* -1: pinned host memory */
    int home;       /* the device whose memory it is (an import: the exporter's) */
    int imported;   /* an IPC mapping of another process's memory */
    int pool;       /* stream-ordered allocation: no legacy IPC */
    int managed;    /* cuMemAllocManaged: the host reads it too, no IPC */
    int registered; /* cuMemHostRegister: the caller's memory, pinned */
    int refs;
    unsigned long long id;
    char name[64];
} map_t;

static map_t maps[MAX_MAPS];
static unsigned long long next_id = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread CUcontext stack[16];
static __thread int depth;

static int physical_devices(void)
{
    const char *env = getenv("MOCK_CUDA_DEVICES");
    return env != NULL ? atoi(env) : 1;
}

/* The physical devices this process sees, in ordinal order (at most 64). */
static int visible(int *list)
{
    const char *env = getenv("MOCK_CUDA_VISIBLE");
    int n = 0;
    if (env == NULL) {
        for (n = 0; n < physical_devices() && n < 64; n++) {
            list[n] = n;
        }
        return n;
    }
    for (const char *p = env; *p != '\0' && n < 64;) {
        int d, used = 0;
        if (sscanf(p, "%d%n", &d, &used) != 1 || d < 0 || d >= physical_devices()) {
            break;
        }
        list[n++] = d;
        p += used;
        p += *p == ',';
    }
    return n;
}

static int devices(void)
{
    int list[64];
    return visible(list);
}

/* The physical device of a visible ordinal, -1 if none. */
static int physical(int ordinal)
{
    int list[64], n = visible(list);
    return ordinal >= 0 && ordinal < n ? list[ordinal] : -1;
}

/* The ordinal of a physical device here, -1 if it is not visible. */
static int ordinal_of(int dev)
{
    int list[64], n = visible(list);
    for (int i = 0; i < n; i++) {
        if (list[i] == dev) {
            return i;
        }
    }
    return -1;
}

static int mig(void)
{
    const char *env = getenv("MOCK_CUDA_MIG");
    return env != NULL && strcmp(env, "1") == 0;
}

/* 0 when MOCK_CUDA_NO_P2P or MIG denies peer access between a and b. */
static int peers(int a, int b)
{
    if (a == b) {
        return 1;
    }
    if (mig()) {
        return 0;
    }
    const char *env = getenv("MOCK_CUDA_NO_P2P");
    for (const char *p = env; p != NULL && *p != '\0';) {
        int x, y, n = 0;
        if (sscanf(p, "%d-%d%n", &x, &y, &n) != 2) {
            break;
        }
        if ((x == a && y == b) || (x == b && y == a)) {
            return 0;
        }
        p += n;
        p += *p == ',';
    }
    return 1;
}

static size_t oom_bytes(void)
{
    const char *env = getenv("MOCK_CUDA_OOM_BYTES");
    return env != NULL ? (size_t)strtoull(env, NULL, 10) : SIZE_MAX;
}

/* The fault that lost the context, reported by every later call. */
static CUresult sticky;

static map_t *find(uintptr_t p)
{
    for (int i = 0; i < MAX_MAPS; i++) {
        if (maps[i].base != 0 && p >= maps[i].base && p < maps[i].base + maps[i].size) {
            return &maps[i];
        }
    }
    return NULL;
}

static map_t *add(uintptr_t base, size_t size, int device, const char *name)
{
    for (int i = 0; i < MAX_MAPS; i++) {
        if (maps[i].base == 0) {
            maps[i] = (map_t){ .base = base,
                               .size = size,
                               .device = device,
                               .home = device,
                               .refs = 1,
                               .id = next_id++ };
            snprintf(maps[i].name, sizeof(maps[i].name), "%s", name);
            return &maps[i];
        }
    }
    return NULL;
}

/* --- devices and contexts ------------------------------------------------------ */

/* Device memory of processes that ended without freeing it (tests exit
 * with _exit) would stay in /dev/shm: the first cuInit of a process
 * removes the files of processes that are gone. */
CUresult cuInit(unsigned flags)
{
    static int swept;
    DIR *dir = swept++ == 0 ? opendir("/dev/shm") : NULL;
    for (struct dirent *d; dir != NULL && (d = readdir(dir)) != NULL;) {
        int pid;
        char path[300];
        if (sscanf(d->d_name, "crux-mock-cuda.%d.", &pid) == 1 && kill(pid, 0) != 0 &&
            errno == ESRCH) {
            snprintf(path, sizeof(path), "/%s", d->d_name);
            shm_unlink(path);
        }
    }
    if (dir != NULL) {
        closedir(dir);
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    *count = devices();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (physical(ordinal) < 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *dev = physical(ordinal);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
    snprintf(id, (size_t)len, "0000:%02X:00.0", 0x10 + (mig() ? 0 : dev));
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *id)
{
    unsigned domain, bus;
    if (sscanf(id, "%x:%x", &domain, &bus) != 2 || bus < 0x10 ||
        ordinal_of((int)(bus - 0x10)) < 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *dev = (CUdevice)(bus - 0x10);
    return CUDA_SUCCESS;
}

/* Distinct per device, also between MIG instances. */
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    if (ordinal_of(dev) < 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    memset(uuid, 0, sizeof(*uuid));
    snprintf(uuid->bytes, sizeof(uuid->bytes), "mockgpu%u", (unsigned char)dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    *can = peers(dev, peer);
    return CUDA_SUCCESS;
}

/* Retains of primary contexts not yet released, per device, for tests
 * (mock_cuda_retains). */
static int retains[64];

CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    if (ordinal_of(dev) < 0 || dev >= 64) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    __atomic_add_fetch(&retains[dev], 1, __ATOMIC_RELAXED);
    *ctx = (CUcontext)(uintptr_t)(0x1000 + dev);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
    if (ordinal_of(dev) < 0 || dev >= 64) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *flags = 0;
    *active = __atomic_load_n(&retains[dev], __ATOMIC_RELAXED) > 0;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    if (ordinal_of(dev) < 0 || dev >= 64 ||
        __atomic_sub_fetch(&retains[dev], 1, __ATOMIC_RELAXED) < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    return CUDA_SUCCESS;
}

int mock_cuda_retains(int dev)
{
    return dev >= 0 && dev < 64 ? __atomic_load_n(&retains[dev], __ATOMIC_RELAXED) : -1;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (depth == 16) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
    if (depth == 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *ctx = stack[--depth];
    return CUDA_SUCCESS;
}

/* The device of the current context: allocations need one, as in CUDA. */
static int current(void)
{
    return depth > 0 ? (int)((uintptr_t)stack[depth - 1] - 0x1000) : -1;
}

/* Peer access enabled, [from][to], for tests (mock_cuda_peer_enabled). */
static int enabled[64][64];

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
    int from = current(), to = (int)((uintptr_t)peer - 0x1000);
    if (from < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (ordinal_of(to) < 0 || to >= 64 || to == from) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!peers(from, to)) {
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    }
    if (__atomic_exchange_n(&enabled[from][to], 1, __ATOMIC_RELAXED)) {
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED; /* as the driver answers */
    }
    return CUDA_SUCCESS;
}

int mock_cuda_peer_enabled(int from, int to)
{
    return from >= 0 && from < 64 && to >= 0 && to < 64 && enabled[from][to];
}

/* --- memory ------------------------------------------------------------------------ */

static size_t device_bytes(void)
{
    size_t sum = 0;
    for (int i = 0; i < MAX_MAPS; i++) {
        sum += maps[i].base != 0 && maps[i].device >= 0 && !maps[i].imported ? maps[i].size : 0;
    }
    return sum;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes)
{
    static unsigned seq;
    char name[64];
    if (sticky != CUDA_SUCCESS) {
        return sticky;
    }
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&lock);
    if (device_bytes() + bytes > oom_bytes()) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    snprintf(name, sizeof(name), "/crux-mock-cuda.%d.%u", (int)getpid(), seq++);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    void *p = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)bytes) == 0) {
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (fd >= 0) {
        close(fd);
    }
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (p != MAP_FAILED && add((uintptr_t)p, bytes, current(), name) != NULL) {
        *ptr = (CUdeviceptr)(uintptr_t)p;
        r = CUDA_SUCCESS;
    } else if (fd >= 0) {
        shm_unlink(name);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static void run_all(void);

/* Stream-ordered memory from the device's pool: not IPC-capable. */
CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t bytes, CUstream stream)
{
    CUresult r = cuMemAlloc_v2(ptr, bytes);
    pthread_mutex_lock(&lock);
    map_t *m = r == CUDA_SUCCESS ? find((uintptr_t)*ptr) : NULL;
    if (m != NULL) {
        m->pool = 1;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Managed memory: the process's own memory, which the host reads and
 * writes directly (late work queued on a stream is still late for it). */
CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned flags)
{
    CUresult r = cuMemAlloc_v2(ptr, bytes);
    pthread_mutex_lock(&lock);
    map_t *m = r == CUDA_SUCCESS ? find((uintptr_t)*ptr) : NULL;
    if (m != NULL) {
        m->managed = 1;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemFree_v2(CUdeviceptr ptr)
{
    pthread_mutex_lock(&lock);
    run_all();
    map_t *m = find((uintptr_t)ptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (m != NULL && m->base == (uintptr_t)ptr && m->device >= 0 && !m->imported) {
        munmap((void *)m->base, m->size);
        shm_unlink(m->name);
        memset(m, 0, sizeof(*m));
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned flags)
{
    if (sticky != CUDA_SUCCESS) {
        return sticky;
    }
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&lock);
    *ptr = malloc(bytes > 0 ? bytes : 1);
    CUresult r = *ptr != NULL && add((uintptr_t)*ptr, bytes, -1, "") != NULL
                     ? CUDA_SUCCESS
                     : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemFreeHost(void *ptr)
{
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&lock);
    map_t *m = find((uintptr_t)ptr);
    int ours = m != NULL && !m->registered && m->base == (uintptr_t)ptr;
    if (ours) {
        memset(m, 0, sizeof(*m));
    }
    pthread_mutex_unlock(&lock);
    if (ours) {
        free(ptr);
    }
    return ours ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The caller's host memory made pinned host memory; a range that overlaps
 * one registered before is refused, as the driver refuses it. */
CUresult cuMemHostRegister_v2(void *ptr, size_t bytes, unsigned flags)
{
    if (sticky != CUDA_SUCCESS) {
        return sticky;
    }
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (ptr == NULL || bytes == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    for (int i = 0; i < MAX_MAPS && r == CUDA_SUCCESS; i++) {
        if (maps[i].base != 0 && maps[i].device < 0 && maps[i].base < (uintptr_t)ptr + bytes &&
            (uintptr_t)ptr < maps[i].base + maps[i].size) {
            r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
        }
    }
    map_t *m = r == CUDA_SUCCESS ? add((uintptr_t)ptr, bytes, -1, "") : NULL;
    if (m != NULL) {
        m->registered = 1;
    } else if (r == CUDA_SUCCESS) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemHostUnregister(void *ptr)
{
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&lock);
    run_all(); /* copies may still read it */
    map_t *m = find((uintptr_t)ptr);
    CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    if (m != NULL && m->registered && m->base == (uintptr_t)ptr) {
        memset(m, 0, sizeof(*m));
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute *attrs, void **data,
                                CUdeviceptr ptr)
{
    pthread_mutex_lock(&lock);
    map_t *m = find((uintptr_t)ptr);
    for (unsigned i = 0; i < n; i++) {
        int device = m != NULL && m->device >= 0;
        switch (attrs[i]) {
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned *)data[i] = device      ? CU_MEMORYTYPE_DEVICE
                                   : m != NULL ? CU_MEMORYTYPE_HOST
                                               : 0;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data[i] = m != NULL && m->managed; break;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *)data[i] = device ? ordinal_of(m->device) : -2;
            break;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            *(unsigned long long *)data[i] = m != NULL ? m->id : 0;
            break;
        case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
            *(int *)data[i] = device && !m->imported && !m->pool && !m->managed;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data[i] = m != NULL ? m->base : 0;
            break;
        default: pthread_mutex_unlock(&lock); return CUDA_ERROR_INVALID_VALUE;
        }
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr ptr)
{
    pthread_mutex_lock(&lock);
    map_t *m = find((uintptr_t)ptr);
    if (m != NULL) {
        *base = m->base;
        *size = m->size;
    }
    pthread_mutex_unlock(&lock);
    return m != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr ptr)
{
    pthread_mutex_lock(&lock);
    map_t *m = find((uintptr_t)ptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (m != NULL && m->base == (uintptr_t)ptr && m->device >= 0 && !m->imported && !m->pool &&
        !m->managed) {
        memset(handle, 0, sizeof(*handle));
        snprintf(handle->reserved, sizeof(handle->reserved) - 1, "%s", m->name);
        handle->reserved[sizeof(handle->reserved) - 1] = (char)m->device; /* the exporter's */
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *ptr, CUipcMemHandle handle, unsigned flags)
{
    char name[64];
    snprintf(name, sizeof(name), "%.62s", handle.reserved);
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (!peers(handle.reserved[sizeof(handle.reserved) - 1], current())) {
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    }
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPS; i++) { /* opened before: count a reference */
        if (maps[i].base != 0 && maps[i].imported && strcmp(maps[i].name, name) == 0) {
            maps[i].refs++;
            *ptr = maps[i].base;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    }
    CUresult r = CUDA_ERROR_INVALID_HANDLE;
    int fd = shm_open(name, O_RDWR, 0);
    off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
    void *p =
        size > 0 ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) {
        close(fd);
    }
    map_t *m = p != MAP_FAILED
                   ? add((uintptr_t)p, (size_t)size, current() < 0 ? 0 : current(), name)
                   : NULL;
    if (m != NULL) {
        m->imported = 1;
        m->home = handle.reserved[sizeof(handle.reserved) - 1];
        *ptr = m->base;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Peers' allocations mapped here now, for tests. */
int mock_cuda_imports(void)
{
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPS; i++) {
        n += maps[i].base != 0 && maps[i].imported;
    }
    pthread_mutex_unlock(&lock);
    return n;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr ptr)
{
    pthread_mutex_lock(&lock);
    map_t *m = find((uintptr_t)ptr);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (m != NULL && m->imported) {
        if (--m->refs == 0) {
            munmap((void *)m->base, m->size);
            memset(m, 0, sizeof(*m));
        }
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* Copies are checked against the memory known here, as a driver would
 * fault on a bad address. */
static CUresult copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    map_t *d = find((uintptr_t)dst), *s = find((uintptr_t)src);
    if ((d != NULL && (uintptr_t)dst + bytes > d->base + d->size) ||
        (s != NULL && (uintptr_t)src + bytes > s->base + s->size)) {
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return CUDA_SUCCESS;
}

/* --- streams and events: work runs late, in stream order -------------------------
 * A stream is a queue of operations that run only when the caller waits: a
 * query of an event runs one operation of every stream, a synchronous call
 * runs everything.  Code that reuses a buffer before the work reading it is
 * done then copies the wrong bytes. */

typedef struct {
    int recorded, done;
    int wanted; /* a stream (of any process) is blocked on it */
} event_t;

typedef enum { OP_COPY, OP_RECORD, OP_WAIT, OP_KERNEL } op_kind_t;

typedef struct op {
    struct op *next;
    op_kind_t kind;
    CUdeviceptr dst, src;
    size_t bytes;
    event_t *event;
    void (*kernel)(void *, const void *, const void *, size_t);
} op_t;

typedef struct stream {
    struct stream *next;
    op_t *head, *tail;
    int device; /* the context it was created in: work on it is issued there */
} stream_t;

static stream_t *streams;

/* The default streams: the legacy one (NULL, CU_STREAM_LEGACY) and the
 * per-thread one (CU_STREAM_PER_THREAD; one queue per process here), whose
 * work runs only when the caller synchronizes (a synchronous call, or a
 * synchronize of that stream), never on another stream's poll, so a library
 * that reads a buffer the application is still writing on a default stream
 * gets the old bytes, and one that synchronizes the other default stream
 * too. */
static stream_t legacy, per_thread;

static stream_t *of(CUstream stream)
{
    return (uintptr_t)stream == (uintptr_t)CU_STREAM_PER_THREAD ? &per_thread
           : (uintptr_t)stream <= 2                             ? &legacy
                                                                : (stream_t *)stream;
}

static void enqueue(stream_t *st, op_t op)
{
    op_t *o = malloc(sizeof(*o));
    *o = op;
    o->next = NULL;
    if (st->tail != NULL) {
        st->tail->next = o;
    } else {
        st->head = o;
    }
    st->tail = o;
}

static int blocked(const op_t *o)
{
    return o->kind == OP_WAIT && __atomic_load_n(&o->event->recorded, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&o->event->done, __ATOMIC_ACQUIRE);
}

/* The default stream with a record of that event still to run, or NULL. */
static stream_t *recorder(const event_t *e)
{
    stream_t *defaults[] = { &legacy, &per_thread };
    for (int i = 0; i < 2; i++) {
        for (const op_t *o = defaults[i]->head; o != NULL; o = o->next) {
            if (o->kind == OP_RECORD && o->event == e) {
                return defaults[i];
            }
        }
    }
    return NULL;
}

/* Run the head operation of a stream; 0 when it is blocked or empty.  A
 * stream waiting on an event the default stream is to record runs the
 * default stream's work up to it: a library whose streams wait on the
 * default stream sees its work done, one that does not sees it undone. */
static int run_one(stream_t *st)
{
    op_t *o = st->head;
    stream_t *q;
    while (o != NULL && st != &legacy && st != &per_thread && blocked(o) &&
           (q = recorder(o->event)) != NULL && run_one(q)) {
    }
    if (o == NULL || blocked(o)) {
        if (o != NULL) {
            __atomic_store_n(&o->event->wanted, 1, __ATOMIC_RELEASE);
        }
        return 0;
    }
    switch (o->kind) {
    case OP_COPY: copy(o->dst, o->src, o->bytes); break;
    case OP_RECORD: __atomic_store_n(&o->event->done, 1, __ATOMIC_RELEASE); break;
    case OP_KERNEL:
        o->kernel((void *)(uintptr_t)o->dst, (const void *)(uintptr_t)o->src,
                  (const void *)(uintptr_t)o->event, o->bytes);
        break;
    case OP_WAIT: break;
    }
    st->head = o->next;
    if (st->head == NULL) {
        st->tail = NULL;
    }
    free(o);
    return 1;
}

static void run_all(void)
{
    for (int progress = 1; progress;) {
        progress = 0;
        while (run_one(&legacy) || run_one(&per_thread)) {
            progress = 1;
        }
        for (stream_t *st = streams; st != NULL; st = st->next) {
            while (run_one(st)) {
                progress = 1;
            }
        }
    }
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    if (sticky != CUDA_SUCCESS) {
        return sticky;
    }
    pthread_mutex_lock(&lock);
    run_all(); /* synchronous: after all earlier work */
    CUresult r = copy(dst, src, bytes);
    pthread_mutex_unlock(&lock);
    return r;
}

/* Asynchronous copies issued so far, by the device of the context that
 * issued them and the devices whose memory they read and write (-1: pinned
 * host memory, -2: memory the driver does not know), for tests
 * (mock_cuda_copies): which GPU's copy engine each hop used. */
#define LOG_DEVICES 8
static unsigned long copies[LOG_DEVICES][LOG_DEVICES + 2][LOG_DEVICES + 2];

static int home_of(const map_t *m)
{
    return m == NULL ? -2 : m->device < 0 ? -1 : m->home;
}

unsigned long mock_cuda_copies(int context, int from, int to)
{
    if (context < 0 || context >= LOG_DEVICES || from < -2 || from >= LOG_DEVICES || to < -2 ||
        to >= LOG_DEVICES) {
        return 0;
    }
    return __atomic_load_n(&copies[context][from + 2][to + 2], __ATOMIC_RELAXED);
}

/* A stream of another context than the current one is refused, as the
 * driver refuses it. */
static int foreign(CUstream stream)
{
    return (uintptr_t)stream > 2 && ((stream_t *)stream)->device != current();
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    if (sticky != CUDA_SUCCESS) {
        return sticky;
    }
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&lock);
    map_t *d = find((uintptr_t)dst), *s = find((uintptr_t)src);
    CUresult r = (d != NULL && (uintptr_t)dst + bytes > d->base + d->size) ||
                         (s != NULL && (uintptr_t)src + bytes > s->base + s->size)
                     ? CUDA_ERROR_INVALID_VALUE
                 : foreign(stream) ? CUDA_ERROR_INVALID_HANDLE
                                   : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        int from = home_of(s), to = home_of(d);
        if (current() < LOG_DEVICES && from < LOG_DEVICES && to < LOG_DEVICES) {
            __atomic_add_fetch(&copies[current()][from + 2][to + 2], 1, __ATOMIC_RELAXED);
        }
        enqueue(of(stream), (op_t){ .kind = OP_COPY, .dst = dst, .src = src, .bytes = bytes });
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemsetD8_v2(CUdeviceptr ptr, unsigned char value, size_t bytes)
{
    pthread_mutex_lock(&lock);
    run_all();
    memset((void *)(uintptr_t)ptr, value, bytes);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *stream, unsigned flags)
{
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&lock);
    stream_t *st = calloc(1, sizeof(*st));
    st->device = current();
    st->next = streams;
    streams = st;
    *stream = (CUstream)st;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream stream)
{
    pthread_mutex_lock(&lock);
    run_all();
    for (stream_t **p = &streams; *p != NULL; p = &(*p)->next) {
        if (*p == (stream_t *)stream) {
            *p = (*p)->next;
            break;
        }
    }
    free(stream);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* Synchronizations of a default stream by the host, for tests
 * (mock_cuda_default_syncs). */
static unsigned long default_syncs;

unsigned long mock_cuda_default_syncs(void)
{
    return __atomic_load_n(&default_syncs, __ATOMIC_RELAXED);
}

CUresult cuStreamSynchronize(CUstream stream)
{
    if ((uintptr_t)stream <= 2) {
        __atomic_add_fetch(&default_syncs, 1, __ATOMIC_RELAXED);
    }
    if (sticky != CUDA_SUCCESS) {
        return sticky;
    }
    pthread_mutex_lock(&lock);
    if ((uintptr_t)stream <= 2) {
        /* that default stream's work, not the other's */
        stream_t *q = of(stream);
        while (run_one(q)) {
        }
        if (q->head != NULL) {
            run_all(); /* it waits on an event of another stream */
        }
    } else {
        run_all();
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned flags)
{
    pthread_mutex_lock(&lock);
    enqueue(of(stream), (op_t){ .kind = OP_WAIT, .event = (event_t *)event });
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* Interprocess events live in a shared-memory file (their IPC handle is its
 * name), so another process's streams can wait on them; the events of this
 * process that are such files, made here or opened from a handle. */
#define MAX_SHARED_EVENTS 1024
static struct {
    event_t *event;
    int owned;
    char name[64];
} shared_events[MAX_SHARED_EVENTS];

/* The GPU runs the default stream's work whether or not its process calls
 * the driver: when another process's stream waits on an interprocess event
 * of ours recorded there, a thread of ours runs the default stream's work
 * up to it (the process that waits cannot: the work is in our memory). */
static void *default_stream_runner(void *arg)
{
    for (;;) {
        usleep(200);
        pthread_mutex_lock(&lock);
        for (int i = 0; i < MAX_SHARED_EVENTS; i++) {
            event_t *e = shared_events[i].event;
            stream_t *q;
            while (e != NULL && shared_events[i].owned &&
                   __atomic_load_n(&e->wanted, __ATOMIC_ACQUIRE) && (q = recorder(e)) != NULL &&
                   run_one(q)) {
            }
        }
        pthread_mutex_unlock(&lock);
    }
    return arg;
}

static void start_runner(void)
{
    static pid_t started; /* threads do not survive fork: one per process */
    if (started != getpid()) {
        pthread_t t;
        started = getpid();
        if (pthread_create(&t, NULL, default_stream_runner, NULL) == 0) {
            pthread_detach(t);
        }
    }
}

static event_t *map_event(const char *name, int flags)
{
    int fd = shm_open(name, flags, 0600);
    void *p = MAP_FAILED;
    if (fd >= 0 && ((flags & O_CREAT) == 0 || ftruncate(fd, sizeof(event_t)) == 0)) {
        p = mmap(NULL, sizeof(event_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (fd >= 0) {
        close(fd);
    }
    for (int i = 0; p != MAP_FAILED && i < MAX_SHARED_EVENTS; i++) {
        if (shared_events[i].event == NULL) {
            shared_events[i].event = p;
            shared_events[i].owned = (flags & O_CREAT) != 0;
            snprintf(shared_events[i].name, sizeof(shared_events[i].name), "%s", name);
            return p;
        }
    }
    return NULL;
}

CUresult cuEventCreate(CUevent *event, unsigned flags)
{
    static unsigned seq;
    if ((flags & CU_EVENT_INTERPROCESS) == 0) {
        *event = (CUevent)calloc(1, sizeof(event_t));
        return CUDA_SUCCESS;
    }
    if ((flags & CU_EVENT_DISABLE_TIMING) == 0) {
        return CUDA_ERROR_INVALID_VALUE; /* as the driver requires */
    }
    char name[64];
    pthread_mutex_lock(&lock);
    snprintf(name, sizeof(name), "/crux-mock-cuda.%d.ev%u", (int)getpid(), seq++);
    event_t *e = map_event(name, O_RDWR | O_CREAT | O_EXCL);
    start_runner();
    pthread_mutex_unlock(&lock);
    *event = (CUevent)e;
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuIpcGetEventHandle(CUipcEventHandle *handle, CUevent event)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE; /* not an interprocess event */
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_SHARED_EVENTS; i++) {
        if (shared_events[i].event == (event_t *)event && shared_events[i].owned) {
            memset(handle, 0, sizeof(*handle));
            snprintf(handle->reserved, sizeof(handle->reserved), "%s", shared_events[i].name);
            r = CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuIpcOpenEventHandle(CUevent *event, CUipcEventHandle handle)
{
    char name[64];
    snprintf(name, sizeof(name), "%.63s", handle.reserved);
    if (current() < 0) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&lock);
    event_t *e = strncmp(name, "/crux-mock-cuda.", 16) == 0 ? map_event(name, O_RDWR) : NULL;
    pthread_mutex_unlock(&lock);
    *event = (CUevent)e;
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventDestroy_v2(CUevent event)
{
    pthread_mutex_lock(&lock);
    run_all(); /* operations may still name it */
    int i = 0;
    while (i < MAX_SHARED_EVENTS && shared_events[i].event != (event_t *)event) {
        i++;
    }
    if (i < MAX_SHARED_EVENTS) {
        munmap(event, sizeof(event_t));
        if (shared_events[i].owned) {
            shm_unlink(shared_events[i].name);
        }
        memset(&shared_events[i], 0, sizeof(shared_events[i]));
    } else {
        free(event);
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream)
{
    event_t *e = (event_t *)event;
    if (foreign(stream)) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&lock);
    __atomic_store_n(&e->done, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&e->wanted, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&e->recorded, 1, __ATOMIC_RELEASE);
    enqueue(of(stream), (op_t){ .kind = OP_RECORD, .event = e });
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* Event queries made so far, for tests (mock_cuda_queries). */
static unsigned long queries;

unsigned long mock_cuda_queries(void)
{
    return __atomic_load_n(&queries, __ATOMIC_RELAXED);
}

CUresult cuEventQuery(CUevent event)
{
    __atomic_add_fetch(&queries, 1, __ATOMIC_RELAXED);
    if (sticky != CUDA_SUCCESS) {
        return sticky;
    }
    event_t *e = (event_t *)event;
    pthread_mutex_lock(&lock);
    if (e->recorded && !e->done) {
        for (stream_t *st = streams; st != NULL; st = st->next) {
            run_one(st); /* a little work per poll: the caller keeps going meanwhile */
        }
    }
    CUresult r = !e->recorded || __atomic_load_n(&e->done, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS
                                                                             : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&lock);
    return r;
}

/* --- modules and kernels --------------------------------------------------------------- */

typedef struct {
    const unsigned char *image;
    size_t size;
} module_t;

typedef struct {
    crux_dtype_t dtype;
    crux_op_t op;
    void (*kernel)(void *, const void *, const void *, size_t);
} function_t;

/* The host build of the kernel of that name in this library. */
static void *host_kernel(const char *name)
{
    Dl_info info;
    void *self =
        dladdr((void *)cuInit, &info) != 0 ? dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    void *fn = self != NULL ? dlsym(self, name) : NULL;
    if (self != NULL) {
        dlclose(self);
    }
    return fn;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    const unsigned char *p = image;
    uint32_t magic;
    uint16_t header;
    uint64_t body;
    memcpy(&magic, p, 4);
    memcpy(&header, p + 6, 2);
    memcpy(&body, p + 8, 8);
    if (magic != FATBIN_MAGIC) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    module_t *m = malloc(sizeof(*m));
    m->image = p;
    m->size = header + body;
    *module = (CUmodule)m;
    return current() < 0 ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *fn, CUmodule module, const char *name)
{
    const module_t *m = (const module_t *)module;
    if (memmem(m->image, m->size, name, strlen(name)) == NULL) {
        return CUDA_ERROR_NOT_FOUND; /* no such kernel in the fat binary */
    }
    for (int t = 0; t < CRUX_DT_COUNT; t++) {
        for (int o = 0; o < CRUX_OP_COUNT; o++) {
            char want[64];
            snprintf(want, sizeof(want), "crux_%s_%s", crux_dtype_name(t), crux_op_name(o));
            void *kernel = strcmp(want, name) == 0 ? host_kernel(name) : NULL;
            if (kernel != NULL) {
                function_t *f = malloc(sizeof(*f));
                f->dtype = t;
                f->op = o;
                f->kernel = (void (*)(void *, const void *, const void *, size_t))kernel;
                *fn = (CUfunction)f;
                return CUDA_SUCCESS;
            }
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream stream, void **params,
                        void **extra)
{
    const function_t *f = (const function_t *)fn;
    if (current() < 0 || gx == 0 || bx == 0 || params == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (sticky != CUDA_SUCCESS) {
        return sticky;
    }
    size_t n = *(size_t *)params[3], esize = crux_dtype_size(f->dtype);
    uintptr_t out = (uintptr_t) * (void **)params[0], a = (uintptr_t) * (void **)params[1],
              b = (uintptr_t) * (void **)params[2];
    if (out % esize != 0 || a % esize != 0 || b % esize != 0) {
        sticky = CUDA_ERROR_MISALIGNED_ADDRESS; /* found by the kernel, reported later */
        return CUDA_SUCCESS;
    }
    if ((size_t)gx * bx < n && gx < 4096) {
        return CUDA_ERROR_INVALID_VALUE; /* a grid that covers neither n nor the stride cap */
    }
    /* the operation's three pointers travel in dst, src and event */
    pthread_mutex_lock(&lock);
    enqueue(of(stream), (op_t){ .kind = OP_KERNEL,
                                .kernel = f->kernel,
                                .dst = (CUdeviceptr)(uintptr_t) * (void **)params[0],
                                .src = (CUdeviceptr)(uintptr_t) * (void **)params[1],
                                .event = *(event_t **)params[2],
                                .bytes = n });
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* Internal to crux: the CUDA driver API, loaded at run time.
 *
 * Nothing in crux links against libcuda or libcudart: the driver
 * (libcuda.so.1, or the file named by CRUX_CUDA_LIBRARY) is opened with
 * dlopen on first use and its entry points are looked up by their versioned
 * names, so every binary runs on a machine without a GPU or driver.  The
 * types come from the toolkit's cuda.h; this header is empty in a build
 * without the toolkit. */
#ifndef CRUX_CUDA_H
#define CRUX_CUDA_H

#include "config.h"

#ifdef CRUX_HAVE_CUDA
#include <cuda.h>

#include "common/crux_status.h"

typedef struct {
    CUresult (*Init)(unsigned flags);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetPCIBusId)(char *id, int len, CUdevice dev);
    CUresult (*DeviceGetByPCIBusId)(CUdevice *dev, const char *id);
    CUresult (*DeviceCanAccessPeer)(int *can, CUdevice dev, CUdevice peer);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*DevicePrimaryCtxGetState)(CUdevice dev, unsigned *flags, int *active);
    CUresult (*CtxPushCurrent)(CUcontext ctx);
    CUresult (*CtxPopCurrent)(CUcontext *ctx);
    CUresult (*CtxEnablePeerAccess)(CUcontext peer, unsigned flags);
    CUresult (*PointerGetAttributes)(unsigned n, CUpointer_attribute *attrs, void **data,
                                     CUdeviceptr ptr);
    CUresult (*MemGetAddressRange)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);
    CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr ptr);
    CUresult (*MemHostAlloc)(void **ptr, size_t bytes, unsigned flags);
    CUresult (*MemFreeHost)(void *ptr);
    CUresult (*MemHostRegister)(void *ptr, size_t bytes, unsigned flags);
    CUresult (*MemHostUnregister)(void *ptr);
    CUresult (*Memcpy)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
    CUresult (*MemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
    CUresult (*MemsetD8)(CUdeviceptr ptr, unsigned char value, size_t bytes);
    CUresult (*IpcGetMemHandle)(CUipcMemHandle *handle, CUdeviceptr ptr);
    CUresult (*IpcOpenMemHandle)(CUdeviceptr *ptr, CUipcMemHandle handle, unsigned flags);
    CUresult (*IpcCloseMemHandle)(CUdeviceptr ptr);
    CUresult (*StreamCreate)(CUstream *stream, unsigned flags);
    CUresult (*StreamDestroy)(CUstream stream);
    CUresult (*StreamSynchronize)(CUstream stream);
    CUresult (*StreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
    CUresult (*EventCreate)(CUevent *event, unsigned flags);
    CUresult (*EventDestroy)(CUevent event);
    CUresult (*EventRecord)(CUevent event, CUstream stream);
    CUresult (*EventQuery)(CUevent event);
    CUresult (*IpcGetEventHandle)(CUipcEventHandle *handle, CUevent event);
    CUresult (*IpcOpenEventHandle)(CUevent *event, CUipcEventHandle handle);
    CUresult (*ModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*ModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name);
    CUresult (*DeviceGetUuid)(CUuuid *uuid, CUdevice dev); /* NULL: driver before 11.4 */
    CUresult (*LaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, CUstream stream,
                             void **params, void **extra);
} crux_cuda_api_t;

/* The driver, or NULL when the process has not loaded it or it cannot be
 * initialised (no GPU).  crux never loads the driver itself: cuInit in
 * crux's setup (MPI_Init) would fix the visible devices before a script sets
 * CUDA_VISIBLE_DEVICES, and a process with device buffers has loaded the
 * driver anyway.  The answer is looked for again on every call until the
 * driver shows up, at the cost of one loader callback while nothing new was
 * loaded. */
const crux_cuda_api_t *crux_cuda(void);
/* The driver, loaded by crux if need be: for tools and tests that are the
 * application themselves. */
const crux_cuda_api_t *crux_cuda_load(void);

/* Make the primary context of a device current (pushed on the calling
 * thread's stack, so the caller's own context comes back with pop). */
crux_status_t crux_cuda_push(int device);
void crux_cuda_pop(void);
/* 1 when this process already has the device's primary context (the
 * application's own, or one crux holds), 0 if not or unknown.  A context
 * costs hundreds of MB of the GPU's memory: crux makes none on a GPU that
 * the process does not use itself (another rank's, a relay's). */
int crux_cuda_context_active(int device);

/* Pinned host memory usable from every context (CU_MEMHOSTALLOC_PORTABLE),
 * allocated and freed with a primary context current (the driver refuses
 * both without one): that of the first device the process works on, else
 * device 0's. */
crux_status_t crux_cuda_host_alloc(size_t bytes, void **ptr_p);
void crux_cuda_host_free(void *ptr);

/* The PCI bus id of a device, "dddd:bb:dd.f" in lower case; 0 on success. */
int crux_cuda_pci(int device, char *pci, size_t len);

/* A device's name, the same in every process of the node (ordinals differ
 * between processes): "GPU-" and its UUID as NVML writes it
 * ("GPU-6f1b2c3d-..."), the MIG instance's own UUID for a MIG instance
 * (cuDeviceGetUuid_v2); its PCI bus id on drivers before 11.4, which cannot
 * tell MIG instances apart.  Not a PCI bus id otherwise: MIG instances of
 * one GPU share that.  0 on success; names are looked up once per device. */
#define CRUX_CUDA_NAME_SIZE 48
int crux_cuda_name(int device, char name[CRUX_CUDA_NAME_SIZE]);
/* The ordinal of the device of that name here, -1 if not visible. */
int crux_cuda_device_named(const char *name);

crux_status_t crux_cuda_status(CUresult result);
#endif

#endif

/* Device execution: reduction kernels and queues (UCC's execution
 * components, ec/, as against crux_dev_mem.c's memory).
 *
 * The kernels come from crux_dev_kernels.cu as a fat binary embedded at
 * build time; each device's module is loaded once, on first use, in the
 * device's primary context, and its functions are looked up by name. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crux_cuda.h"
#include "coll/dev/crux_dev_internal.h"
#include "ucx_tl/crux_tl.h"

#define ARITH (1u << CRUX_OP_SUM | 1u << CRUX_OP_PROD | 1u << CRUX_OP_MAX | 1u << CRUX_OP_MIN)
#define LOGIC (1u << CRUX_OP_LAND | 1u << CRUX_OP_LOR | 1u << CRUX_OP_LXOR)
#define BITS  (1u << CRUX_OP_BAND | 1u << CRUX_OP_BOR | 1u << CRUX_OP_BXOR)

/* The (dtype, op) pairs crux_dev_kernels.cu defines. */
static const unsigned kernel_ops[CRUX_DT_COUNT] = {
    [CRUX_DT_INT8] = ARITH | LOGIC | BITS,
    [CRUX_DT_UINT8] = ARITH | LOGIC | BITS,
    [CRUX_DT_INT16] = ARITH | LOGIC | BITS,
    [CRUX_DT_UINT16] = ARITH | LOGIC | BITS,
    [CRUX_DT_INT32] = ARITH | LOGIC | BITS,
    [CRUX_DT_UINT32] = ARITH | LOGIC | BITS,
    [CRUX_DT_INT64] = ARITH | LOGIC | BITS,
    [CRUX_DT_UINT64] = ARITH | LOGIC | BITS,
    [CRUX_DT_FLOAT16] = ARITH,
    [CRUX_DT_BFLOAT16] = ARITH,
    [CRUX_DT_FLOAT] = ARITH,
    [CRUX_DT_DOUBLE] = ARITH,
    [CRUX_DT_BOOL] = LOGIC,
    [CRUX_DT_LOGICAL32] = LOGIC,
};

int crux_dev_reduce_supported(crux_dtype_t dtype, crux_op_t op)
{
    return (unsigned)dtype < CRUX_DT_COUNT && (unsigned)op < CRUX_OP_COUNT &&
           (kernel_ops[dtype] & (1u << op)) != 0;
}

#ifdef CRUX_HAVE_CUDA
extern const unsigned char crux_dev_fatbin[];

#define MAX_DEVICES 64
#define BLOCK       256u
#define MAX_BLOCKS  4096u /* grid-stride beyond */

static struct {
    CUmodule module;
    crux_status_t failed; /* the module's load, not retried: it fails alike every time */
    CUfunction fn[CRUX_DT_COUNT][CRUX_OP_COUNT];
} modules[MAX_DEVICES];
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;

/* The kernel, with the device's context current. */
static crux_status_t kernel(int device, crux_dtype_t dtype, crux_op_t op, CUfunction *fn)
{
    const crux_cuda_api_t *cu = crux_cuda();
    if (!crux_dev_reduce_supported(dtype, op) || device < 0 || device >= MAX_DEVICES) {
        return CRUX_ERR_UNSUPPORTED;
    }
    crux_status_t st = CRUX_OK;
    pthread_mutex_lock(&modules_lock);
    if (modules[device].module == NULL && modules[device].failed == CRUX_OK) {
        CUresult r = cu->ModuleLoadData(&modules[device].module, crux_dev_fatbin);
        if (r != CUDA_SUCCESS) {
            modules[device].module = NULL;
            /* an old driver or GPU the fat binary has no code for:
             * unsupported, so the caller stages through host memory */
            modules[device].failed = crux_cuda_status(r);
            if (modules[device].failed == CRUX_ERR_IO) {
                modules[device].failed = CRUX_ERR_UNSUPPORTED;
            }
        }
    }
    st = modules[device].failed;
    if (st == CRUX_OK && modules[device].fn[dtype][op] == NULL) {
        char name[64];
        snprintf(name, sizeof(name), "crux_%s_%s", crux_dtype_name(dtype), crux_op_name(op));
        st = crux_cuda_status(
            cu->ModuleGetFunction(&modules[device].fn[dtype][op], modules[device].module, name));
    }
    *fn = modules[device].fn[dtype][op];
    pthread_mutex_unlock(&modules_lock);
    return st;
}

static crux_status_t launch(int device, CUstream stream, void *out, const void *a, const void *b,
                            size_t count, crux_dtype_t dtype, crux_op_t op)
{
    CUfunction fn;
    size_t esize = crux_dtype_size(dtype);
    if (esize == 0 || (uintptr_t)out % esize != 0 || (uintptr_t)a % esize != 0 ||
        (uintptr_t)b % esize != 0) {
        return CRUX_ERR_UNSUPPORTED; /* the kernel's loads would fault, stickily */
    }
    crux_status_t st = kernel(device, dtype, op, &fn);
    if (st != CRUX_OK || count == 0) {
        return st;
    }
    size_t blocks = (count + BLOCK - 1) / BLOCK;
    unsigned grid = blocks < MAX_BLOCKS ? (unsigned)blocks : MAX_BLOCKS;
    void *args[] = { &out, &a, &b, &count };
    return crux_cuda_status(
        crux_cuda()->LaunchKernel(fn, grid, 1, 1, BLOCK, 1, 1, 0, stream, args, NULL));
}

crux_status_t crux_dev_reduce(void *out, const void *a, const void *b, size_t count,
                              crux_dtype_t dtype, crux_op_t op)
{
    crux_tl_mem_t mem = crux_tl_mem_query(out);
    if (mem.type != CRUX_TL_MEM_CUDA) {
        return CRUX_ERR_UNSUPPORTED;
    }
    crux_dev_queue_t *q;
    crux_status_t st = crux_dev_queue_create(mem.device, 1, &q);
    if (st != CRUX_OK) {
        return st;
    }
    st = crux_dev_queue_reduce(q, out, a, b, count, dtype, op);
    if (st == CRUX_OK) {
        st = crux_dev_queue_mark(q, 0);
    }
    int done = 0;
    while (st == CRUX_OK && (done = crux_dev_queue_done(q, 0)) == 0) {
    }
    crux_dev_queue_destroy(q);
    return st != CRUX_OK ? st : done < 0 ? (crux_status_t)done : CRUX_OK;
}

/* --- queues --------------------------------------------------------------------- */

struct crux_dev_queue {
    int device;
    CUstream stream;
    unsigned nmarks;
    CUevent *marks;
};

crux_status_t crux_dev_queue_create(int device, unsigned marks, crux_dev_queue_t **queue_p)
{
    const crux_cuda_api_t *cu = crux_cuda();
    if (cu == NULL) {
        return CRUX_ERR_UNSUPPORTED;
    }
    crux_dev_queue_t *q = calloc(1, sizeof(*q));
    if (q == NULL || (q->marks = calloc(marks, sizeof(CUevent))) == NULL) {
        free(q);
        return CRUX_ERR_NO_MEMORY;
    }
    q->device = device;
    q->nmarks = marks;
    crux_status_t st = crux_cuda_push(device);
    if (st == CRUX_OK) {
        st = crux_cuda_status(cu->StreamCreate(&q->stream, CU_STREAM_NON_BLOCKING));
        for (unsigned i = 0; i < marks && st == CRUX_OK; i++) {
            st = crux_cuda_status(cu->EventCreate(&q->marks[i], CU_EVENT_DISABLE_TIMING));
        }
        crux_cuda_pop();
    }
    if (st != CRUX_OK) {
        crux_dev_queue_destroy(q);
        return st;
    }
    *queue_p = q;
    return CRUX_OK;
}

void crux_dev_queue_destroy(crux_dev_queue_t *q)
{
    const crux_cuda_api_t *cu = crux_cuda();
    if (q == NULL) {
        return;
    }
    if (crux_cuda_push(q->device) == CRUX_OK) {
        if (q->stream != NULL) {
            cu->StreamSynchronize(q->stream);
            cu->StreamDestroy(q->stream);
        }
        for (unsigned i = 0; i < q->nmarks; i++) {
            if (q->marks[i] != NULL) {
                cu->EventDestroy(q->marks[i]);
            }
        }
        crux_cuda_pop();
    }
    free(q->marks);
    free(q);
}

crux_status_t crux_dev_queue_reduce(crux_dev_queue_t *q, void *out, const void *a, const void *b,
                                    size_t count, crux_dtype_t dtype, crux_op_t op)
{
    crux_status_t st = crux_cuda_push(q->device);
    if (st == CRUX_OK) {
        st = launch(q->device, q->stream, out, a, b, count, dtype, op);
        crux_cuda_pop();
    }
    return st;
}

crux_status_t crux_dev_queue_copy(crux_dev_queue_t *q, void *dst, const void *src, size_t bytes)
{
    crux_status_t st = crux_cuda_push(q->device);
    if (st == CRUX_OK) {
        st = crux_cuda_status(crux_cuda()->MemcpyAsync(
            (CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, q->stream));
        crux_cuda_pop();
    }
    return st;
}

crux_status_t crux_dev_queue_wait(crux_dev_queue_t *q, void *event)
{
    crux_status_t st = crux_cuda_push(q->device);
    if (st == CRUX_OK) {
        st = crux_cuda_status(crux_cuda()->StreamWaitEvent(q->stream, (CUevent)event, 0));
        crux_cuda_pop();
    }
    return st;
}

crux_status_t crux_dev_queue_mark(crux_dev_queue_t *q, unsigned mark)
{
    crux_status_t st = crux_cuda_push(q->device);
    if (st == CRUX_OK) {
        st = crux_cuda_status(crux_cuda()->EventRecord(q->marks[mark % q->nmarks], q->stream));
        crux_cuda_pop();
    }
    return st;
}

int crux_dev_queue_done(crux_dev_queue_t *q, unsigned mark)
{
    if (crux_cuda_push(q->device) != CRUX_OK) {
        return CRUX_ERR_IO;
    }
    CUresult r = crux_cuda()->EventQuery(q->marks[mark % q->nmarks]);
    crux_cuda_pop();
    return r == CUDA_SUCCESS ? 1 : r == CUDA_ERROR_NOT_READY ? 0 : (int)crux_cuda_status(r);
}

#else /* no CUDA toolkit at build time: host memory only */

crux_status_t crux_dev_reduce(void *out, const void *a, const void *b, size_t count,
                              crux_dtype_t dtype, crux_op_t op)
{
    return CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_dev_queue_create(int device, unsigned marks, crux_dev_queue_t **queue_p)
{
    return CRUX_ERR_UNSUPPORTED;
}

void crux_dev_queue_destroy(crux_dev_queue_t *queue)
{
}

crux_status_t crux_dev_queue_reduce(crux_dev_queue_t *queue, void *out, const void *a,
                                    const void *b, size_t count, crux_dtype_t dtype, crux_op_t op)
{
    return CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_dev_queue_copy(crux_dev_queue_t *queue, void *dst, const void *src, size_t bytes)
{
    return CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_dev_queue_wait(crux_dev_queue_t *queue, void *event)
{
    return CRUX_ERR_UNSUPPORTED;
}

crux_status_t crux_dev_queue_mark(crux_dev_queue_t *queue, unsigned mark)
{
    return CRUX_ERR_UNSUPPORTED;
}

int crux_dev_queue_done(crux_dev_queue_t *queue, unsigned mark)
{
    return CRUX_ERR_UNSUPPORTED;
}

#endif

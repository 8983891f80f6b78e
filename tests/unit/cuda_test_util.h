/* The CUDA tests' common parts (tests/unit/coll/test_coll_dev.c,
 * tests/unit/ucx_tl/test_tl_cuda.c): device buffers holding a pattern, the
 * stand-in driver's counters, one transfer between two devices, and their
 * runner.  Each test runs in the child process Check forks for it, which
 * loads the driver itself (CUDA state does not survive fork; the parent
 * never touches CUDA); a test that needs more GPUs than the machine has is
 * reported "ok N - name # SKIP no GPU" (or "needs 2 GPUs"), never passed. */
#ifndef CRUX_TESTS_CUDA_TEST_UTIL_H
#define CRUX_TESTS_CUDA_TEST_UTIL_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/crux_cuda.h"
#include "tests/unit/check_main.h"
#include "ucx_tl/crux_tl.h"

static inline unsigned char pattern(size_t i, unsigned salt)
{
    return (unsigned char)((i * 2654435761u) >> 11 ^ salt);
}

/* Device memory and copies through the driver, as the application makes
 * them (libcrux_coll's own allocator is tested in test_coll_dev). */
static inline void *cuda_alloc(int device, size_t bytes)
{
#ifdef CRUX_HAVE_CUDA
    CUdeviceptr p = 0;
    if (crux_cuda_push(device) != CRUX_OK) {
        return NULL;
    }
    CUresult r = crux_cuda()->MemAlloc(&p, bytes > 0 ? bytes : 1);
    crux_cuda_pop();
    return r == CUDA_SUCCESS ? (void *)(uintptr_t)p : NULL;
#else
    (void)device;
    (void)bytes;
    return NULL;
#endif
}

static inline void cuda_free(int device, void *ptr)
{
#ifdef CRUX_HAVE_CUDA
    if (ptr != NULL && crux_cuda_push(device) == CRUX_OK) {
        crux_cuda()->MemFree((CUdeviceptr)(uintptr_t)ptr);
        crux_cuda_pop();
    }
#else
    (void)device;
    (void)ptr;
#endif
}

/* 0 when copied, in the context of the device of dst (or of src). */
static inline int cuda_copy(void *dst, const void *src, size_t bytes)
{
#ifdef CRUX_HAVE_CUDA
    crux_tl_mem_t d = crux_tl_mem_query(dst), s = crux_tl_mem_query(src);
    int device = d.type == CRUX_TL_MEM_CUDA ? d.device : s.type == CRUX_TL_MEM_CUDA ? s.device : 0;
    if (crux_cuda_push(device) != CRUX_OK) {
        return -1;
    }
    CUresult r =
        crux_cuda()->Memcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes);
    crux_cuda_pop();
    return r == CUDA_SUCCESS ? 0 : -1;
#else
    (void)dst;
    (void)src;
    (void)bytes;
    return -1;
#endif
}

/* A device buffer of bytes + 1 holding pattern(i, salt) in its first bytes,
 * NULL on failure. */
static inline void *device_pattern(int device, size_t bytes, unsigned salt)
{
    unsigned char *h = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++) {
        h[i] = pattern(i, salt);
    }
    void *d = cuda_alloc(device, bytes + 1);
    if (d != NULL && cuda_copy(d, h, bytes) != 0) {
        cuda_free(device, d);
        d = NULL;
    }
    free(h);
    return d;
}

static inline int device_holds(const void *d, size_t bytes, unsigned salt)
{
    unsigned char *h = malloc(bytes + 1);
    int ok = cuda_copy(h, d, bytes) == 0;
    for (size_t i = 0; ok && i < bytes; i++) {
        ok = h[i] == pattern(i, salt);
    }
    free(h);
    return ok;
}

/* A function of the stand-in driver (counters, for tests), NULL on a real one. */
static inline void *mock_sym(const char *name)
{
    const char *path = getenv("CRUX_CUDA_LIBRARY");
    void *lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    return lib != NULL ? dlsym(lib, name) : NULL;
}

#ifdef CRUX_HAVE_CUDA
/* The test is the application: it works on 'device' too (its primary
 * context retained, as the CUDA runtime does on first use), so crux may
 * run a relay hop there, or make pinned memory in its context. */
static inline int app_uses(int device)
{
    CUdevice dev;
    CUcontext ctx;
    return crux_cuda()->DeviceGet(&dev, device) == CUDA_SUCCESS &&
           crux_cuda()->DevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS;
}
#endif

/* One transfer within this process from a buffer on device 'from' to one on
 * device 'to', over the channels in 'channels' (0: the plan's); the share
 * of its bytes each channel kind carried goes to share[kind]. */
static inline int cross_transfer(crux_tl_engine_t *e, int from, int to, size_t bytes,
                                 uint32_t channels, double share[CRUX_TL_CHAN_KIND_COUNT])
{
    crux_tl_pair_t *pair;
    crux_tl_xfer_params_t params = { .channels = channels };
    void *src = device_pattern(from, bytes, 11), *dst = device_pattern(to, bytes, 0xff);
    crux_tl_xfer_t *x = NULL, *y = NULL;
    crux_tl_chan_attr_t attrs[CRUX_TL_MAX_PATHS];
    int rc = 0;
    if (src == NULL || dst == NULL || crux_tl_pair_connect(e, 0, 0, NULL, &pair) != CRUX_OK) {
        return 1;
    }
    if (crux_tl_recv(pair, dst, bytes, &params, &y) != CRUX_OK ||
        crux_tl_send(pair, src, bytes, NULL, &x) != CRUX_OK || crux_tl_xfer_wait(y) != CRUX_OK ||
        crux_tl_xfer_wait(x) != CRUX_OK || !device_holds(dst, bytes, 11)) {
        rc = 2;
    } else {
        const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(y);
        unsigned n = crux_tl_pair_channels(pair, attrs, CRUX_TL_MAX_PATHS);
        for (int k = 0; k < CRUX_TL_CHAN_KIND_COUNT; k++) {
            share[k] = 0;
        }
        for (unsigned i = 0; i < st->nstripes; i++) {
            if (st->stripe[i].channel < n) {
                share[attrs[st->stripe[i].channel].kind] += (double)st->stripe[i].bytes / bytes;
            }
        }
    }
    crux_tl_xfer_release(x);
    crux_tl_xfer_release(y);
    cuda_free(from, src);
    cuda_free(to, dst);
    crux_tl_pair_disconnect(pair);
    return rc;
}

/* --- the runner ----------------------------------------------------------------- */

typedef struct {
    const char *name;
    const TTest *test;
    int gpus; /* needed (at most 2); 0: runs without one, the driver not loaded */
} cuda_test_t;

static inline void cuda_test_load(void)
{
#ifdef CRUX_HAVE_CUDA
    crux_cuda_load(); /* the test is the application: it loads the driver */
#endif
}

/* The GPUs the driver shows, counted in a child process; 1 if the count
 * crashed, so that the one-GPU tests run and fail rather than skip. */
static inline int cuda_test_gpus(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        cuda_test_load();
        int n = crux_tl_cuda_devices();
        _exit(n < 100 ? n : 100);
    }
    int status;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status)
                                                                           : 1;
}

/* Run the tests that this machine has the GPUs for, each in a test case of
 * its own named after it, and report the others skipped. */
static inline int cuda_test_main(const char *suite_name, const cuda_test_t *tests, int ntests,
                                 double timeout_s)
{
    int gpus = cuda_test_gpus(), nskips = 0;
    Suite *suite = suite_create(suite_name);
    crux_check_skip_t *skips = calloc((size_t)ntests, sizeof(*skips));
    for (int i = 0; i < ntests; i++) {
        if (tests[i].gpus > gpus) {
            skips[nskips++] =
                (crux_check_skip_t){ tests[i].name, gpus == 0 ? "no GPU" : "needs 2 GPUs" };
            continue;
        }
        TCase *tc = tcase_create(tests[i].name);
        if (tests[i].gpus > 0) {
            tcase_add_checked_fixture(tc, cuda_test_load, NULL);
        }
        tcase_set_timeout(tc, timeout_s);
        tcase_add_test(tc, tests[i].test);
        suite_add_tcase(suite, tc);
    }
    int rc = crux_check_run_skips(suite, skips, nskips);
    free(skips);
    return rc;
}

#endif

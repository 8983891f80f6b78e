/* Helpers for the libcrux_topo tests: test data paths, loading a model,
 * writing variants of a topology file, collecting warnings. */
#ifndef CRUX_TESTS_TOPO_TEST_UTIL_H
#define CRUX_TESTS_TOPO_TEST_UTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/crux_topo.h"

/* $CRUX_TEST_DATA/topologies/<name> (set by tests/Makefile.am). */
static inline const char *topo_data(const char *name)
{
    static char path[4096];
    const char *dir = getenv("CRUX_TEST_DATA");
    ck_assert_msg(dir != NULL, "CRUX_TEST_DATA is not set (run the tests with make check)");
    snprintf(path, sizeof(path), "%s/topologies/%s", dir, name);
    return path;
}

struct topo_warnings {
    int count;
    char last[512];
};

static inline void topo_collect_warning(void *arg, const char *msg)
{
    struct topo_warnings *w = arg;
    w->count++;
    snprintf(w->last, sizeof(w->last), "%s", msg);
}

/* Loads a model from an XML file, failing the test on error. */
static inline crux_topo_t *topo_load_path(const char *path, double smp_gbps,
                                          struct topo_warnings *warnings)
{
    crux_topo_options_t opts;
    crux_topo_t *topo = NULL;
    char err[512];
    crux_topo_options_init(&opts);
    opts.xml_path = path;
    opts.smp_gbps = smp_gbps;
    if (warnings) {
        memset(warnings, 0, sizeof(*warnings));
        opts.warn = topo_collect_warning;
        opts.warn_arg = warnings;
    }
    crux_status_t st = crux_topo_load(&opts, &topo, err, sizeof(err));
    ck_assert_msg(st == CRUX_OK, "loading %s: %s", path, err);
    ck_assert_ptr_nonnull(topo);
    return topo;
}

static inline crux_topo_t *topo_load(const char *name)
{
    return topo_load_path(topo_data(name), 0, NULL);
}

/* The whole of a file, NUL-terminated; *len its length. */
static inline char *topo_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* Writes len bytes of text to a new temporary file; returns its path
 * (static storage, one per call site is enough for these tests). */
static inline char *topo_write_temp(const char *text, size_t len, char *path, size_t pathlen)
{
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, pathlen, "%s/crux-topo-test-XXXXXX", tmp);
    int fd = mkstemp(path);
    ck_assert_msg(fd >= 0, "mkstemp %s", path);
    ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

/* text with every occurrence of from replaced by to (freshly allocated). */
static inline char *topo_replace(const char *text, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), n = 0;
    for (const char *p = strstr(text, from); p; p = strstr(p + fl, from))
        n++;
    char *out = malloc(strlen(text) + n * (tl > fl ? tl - fl : 0) + 1), *o = out;
    ck_assert_ptr_nonnull(out);
    for (const char *p = text, *q;; p = q + fl) {
        q = strstr(p, from);
        size_t chunk = q ? (size_t)(q - p) : strlen(p);
        memcpy(o, p, chunk);
        o += chunk;
        if (!q)
            break;
        memcpy(o, to, tl);
        o += tl;
    }
    *o = '\0';
    return out;
}

/* The device id of a GPU, NIC, NUMA node (by OS number) or package. */
static inline int topo_id(const crux_topo_t *topo, crux_topo_dev_type_t type, int index)
{
    const crux_topo_device_t *d = NULL;
    if (type == CRUX_TOPO_DEV_NUMA) {
        for (int i = 0; i < crux_topo_count(topo, type) && !d; i++)
            if (crux_topo_find(topo, type, i)->os_index == index)
                d = crux_topo_find(topo, type, i);
    } else {
        d = crux_topo_find(topo, type, index);
    }
    ck_assert_msg(d != NULL, "no %s %d", crux_topo_dev_type_name(type), index);
    return d->id;
}

static inline int topo_gpu_id(const crux_topo_t *topo, int gpu)
{
    return topo_id(topo, CRUX_TOPO_DEV_GPU, gpu);
}

/* The NVLink link between two GPUs' bandwidth, 0 if none. */
static inline double topo_nvlink_gbps(const crux_topo_t *topo, int gpu_a, int gpu_b)
{
    const crux_topo_link_t *l =
        crux_topo_link_between(topo, topo_gpu_id(topo, gpu_a), topo_gpu_id(topo, gpu_b));
    return l && l->type == CRUX_TOPO_LINK_NVLINK ? l->gbps : 0.0;
}

static inline const crux_topo_path_t *topo_gpu_path(const crux_topo_t *topo, int a, int b)
{
    const crux_topo_path_t *p = crux_topo_path(topo, topo_gpu_id(topo, a), topo_gpu_id(topo, b));
    ck_assert_msg(p != NULL, "no path from GPU %d to GPU %d", a, b);
    return p;
}

#define TOPO_EPS                        1e-6
#define ck_assert_gbps(value, expected) ck_assert_double_eq_tol((value), (expected), 0.005)

#endif

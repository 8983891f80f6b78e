/* libcrux_coll's device path on a machine with a GPU, and again with the
 * stand-in driver of tests/mock (test_coll_dev_mock.sh): device pointers
 * detected, every device reduction kernel against the CPU one bit for bit,
 * staging through pinned host memory, the engine group's device Allreduce
 * between processes, its transfers striped by the topology's figures, and
 * the driver's contexts and pinned memory as crux uses them.  Without a GPU
 * each test is reported skipped; the check that a missing driver means host
 * memory everywhere always runs (tests/unit/cuda_test_util.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/crux_coll.h"
#include "coll/dev/crux_dev_internal.h"
#include "common/crux_cuda.h"
#include "tests/unit/cuda_test_util.h"
#include "tests/unit/fork_group.h"
#include "topo/crux_topo.h"

START_TEST(t_detection)
{
    void *d;
    double h = 0;
    ck_assert_int_eq(crux_dev_alloc(0, 4096, &d), CRUX_OK);
    crux_tl_mem_t m = crux_tl_mem_query((char *)d + 100);
    ck_assert_msg(crux_dev_is_device(d) && !crux_dev_is_device(&h) && m.type == CRUX_TL_MEM_CUDA &&
                      m.device == 0,
                  "device memory not told from host memory");
    /* a call's buffers: either one on the device makes it a device call;
     * with a device there, no pair of buffers is taken for host memory
     * without a look */
    crux_dev_host_pair_t pair = { &h, &h };
    ck_assert(!crux_dev_absent());
    ck_assert(crux_dev_call_is_device(NULL, d) && crux_dev_call_is_device(d, &h) &&
              crux_dev_call_is_device(&h, d) && !crux_dev_call_is_device(&h, &h) &&
              !crux_dev_call_is_device(NULL, &h));
    ck_assert(crux_dev_host_pair(&pair, &h, &h)); /* found host memory before */
    ck_assert(!crux_dev_host_pair(&pair, NULL, d));
    ck_assert(!crux_dev_host_pair(&pair, NULL, &h));
    ck_assert_int_eq(crux_dev_call_host_ready(NULL, &h), CRUX_OK);
    crux_dev_free(0, d);
}
END_TEST

/* Inputs without NaN or infinity, so the comparison is of rounding only. */
static void random_values(crux_dtype_t t, unsigned char *p, size_t n, unsigned seed)
{
    size_t esize = crux_dtype_size(t);
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        unsigned char *e = p + i * esize;
        if (t == CRUX_DT_FLOAT) {
            float f = (float)(rand() % 20001 - 10000) / 97.0f;
            memcpy(e, &f, 4);
        } else if (t == CRUX_DT_DOUBLE) {
            double f = (double)(rand() % 20001 - 10000) / 97.0;
            memcpy(e, &f, 8);
        } else if (t == CRUX_DT_FLOAT16 || t == CRUX_DT_BFLOAT16) {
            uint16_t exp_bits = t == CRUX_DT_FLOAT16 ? (uint16_t)((rand() % 20 + 5) << 10)
                                                     : (uint16_t)((rand() % 40 + 107) << 7);
            uint16_t h = (uint16_t)((rand() & 1) << 15 | exp_bits |
                                    (rand() & (t == CRUX_DT_FLOAT16 ? 0x3ff : 0x7f)));
            memcpy(e, &h, 2);
        } else if (t == CRUX_DT_BOOL) {
            e[0] = (unsigned char)(rand() & 1);
        } else {
            for (size_t b = 0; b < esize; b++) {
                e[b] = (unsigned char)rand();
            }
        }
    }
}

START_TEST(t_kernels)
{
    const size_t n = 100003;
    for (int t = 0; t < CRUX_DT_COUNT; t++) {
        size_t bytes = n * crux_dtype_size((crux_dtype_t)t);
        for (int o = 0; o < CRUX_OP_COUNT; o++) {
            if (!crux_dev_reduce_supported((crux_dtype_t)t, (crux_op_t)o)) {
                continue;
            }
            unsigned char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
                          *got = malloc(bytes);
            void *da, *db;
            random_values((crux_dtype_t)t, a, n, (unsigned)(t * 31 + o));
            random_values((crux_dtype_t)t, b, n, (unsigned)(t * 37 + o + 1));
            crux_reduce_lookup((crux_dtype_t)t, (crux_op_t)o)(want, a, b, n);
            ck_assert_msg(crux_dev_alloc(0, bytes, &da) == CRUX_OK &&
                              crux_dev_alloc(0, bytes, &db) == CRUX_OK &&
                              crux_dev_copy(da, a, bytes) == CRUX_OK &&
                              crux_dev_copy(db, b, bytes) == CRUX_OK &&
                              crux_dev_reduce(da, da, db, n, (crux_dtype_t)t, (crux_op_t)o) ==
                                  CRUX_OK &&
                              crux_dev_copy(got, da, bytes) == CRUX_OK,
                          "%s %s: CUDA call failed", crux_dtype_name(t), crux_op_name(o));
            ck_assert_msg(memcmp(got, want, bytes) == 0, "%s %s: differs from the CPU kernel",
                          crux_dtype_name(t), crux_op_name(o));
            crux_dev_free(0, da);
            crux_dev_free(0, db);
            free(a);
            free(b);
            free(want);
            free(got);
        }
    }
}
END_TEST

/* NaN inputs with payloads and signs, NaN with numbers and with infinities:
 * each floating-point kernel gives the CPU kernel's bits, and a NaN result is
 * the type's one quiet NaN (whatever the GPU's own NaN is). */
START_TEST(t_kernels_nan)
{
    static const uint32_t f32[] = { 0x7fc00001u, 0xffc12345u, 0x7f800001u, 0x3f800000u,
                                    0x7f800000u, 0xff800000u, 0x7fa00000u, 0xc0000000u };
    static const uint64_t f64[] = { 0x7ff8000000000001u, 0xfff8000000001234u, 0x7ff0000000000001u,
                                    0x3ff0000000000000u, 0x7ff0000000000000u, 0xfff0000000000000u,
                                    0x7ff4000000000000u, 0xc000000000000000u };
    static const uint16_t f16[] = { 0x7e01u, 0xfe23u, 0x7c01u, 0x3c00u,
                                    0x7c00u, 0xfc00u, 0x7d00u, 0xc000u };
    static const uint16_t bf16[] = { 0x7fc1u, 0xffc3u, 0x7f81u, 0x3f80u,
                                     0x7f80u, 0xff80u, 0x7fa0u, 0xc000u };
    static const struct {
        crux_dtype_t t;
        const void *v;
        uint64_t canon, inf;
    } types[] = { { CRUX_DT_FLOAT, f32, 0x7fc00000u, 0x7f800000u },
                  { CRUX_DT_DOUBLE, f64, 0x7ff8000000000000u, 0x7ff0000000000000u },
                  { CRUX_DT_FLOAT16, f16, 0x7e00u, 0x7c00u },
                  { CRUX_DT_BFLOAT16, bf16, 0x7fc0u, 0x7f80u } };
    enum { N = 8 };
    for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
        size_t esize = crux_dtype_size(types[k].t), bytes = N * N * esize;
        unsigned char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
                      *got = malloc(bytes);
        for (int i = 0; i < N * N; i++) { /* every ordered pair of the values */
            memcpy(a + i * esize, (const unsigned char *)types[k].v + (i / N) * esize, esize);
            memcpy(b + i * esize, (const unsigned char *)types[k].v + (i % N) * esize, esize);
        }
        for (int o = CRUX_OP_SUM; o <= CRUX_OP_MIN; o++) {
            void *da, *db;
            crux_reduce_lookup(types[k].t, (crux_op_t)o)(want, a, b, N * N);
            ck_assert_msg(crux_dev_alloc(0, bytes, &da) == CRUX_OK &&
                              crux_dev_alloc(0, bytes, &db) == CRUX_OK &&
                              crux_dev_copy(da, a, bytes) == CRUX_OK &&
                              crux_dev_copy(db, b, bytes) == CRUX_OK &&
                              crux_dev_reduce(da, da, db, N * N, types[k].t, (crux_op_t)o) ==
                                  CRUX_OK &&
                              crux_dev_copy(got, da, bytes) == CRUX_OK,
                          "%s %s: CUDA call failed", crux_dtype_name(types[k].t), crux_op_name(o));
            for (int i = 0; i < N * N; i++) {
                uint64_t w = 0, g = 0;
                memcpy(&w, want + i * esize, esize);
                memcpy(&g, got + i * esize, esize);
                uint64_t sign = 1ull << (esize * 8 - 1);
                int nan = (w & ~sign) > types[k].inf;
                ck_assert_msg(g == w && (!nan || w == types[k].canon),
                              "%s %s: element %d: device %#llx, CPU %#llx",
                              crux_dtype_name(types[k].t), crux_op_name(o), i,
                              (unsigned long long)g, (unsigned long long)w);
            }
            crux_dev_free(0, da);
            crux_dev_free(0, db);
        }
        free(a);
        free(b);
        free(want);
        free(got);
    }
}
END_TEST

START_TEST(t_staging)
{
    const size_t bytes = (8u << 20) + 5;
    crux_dev_pinned_t *pin;
    void *src = device_pattern(0, bytes, 3), *dst;
    ck_assert_msg(src != NULL && crux_dev_alloc(0, bytes, &dst) == CRUX_OK &&
                      crux_dev_pinned_create(&pin) == CRUX_OK,
                  "no device buffers or no pinned memory");
    unsigned char *h = crux_dev_pinned_buffer(pin, 0, bytes);
    ck_assert_msg(h != NULL && crux_dev_copy(h, src, bytes) == CRUX_OK &&
                      h[bytes - 1] == pattern(bytes - 1, 3) &&
                      crux_dev_copy(dst, h, bytes) == CRUX_OK && device_holds(dst, bytes, 3),
                  "the bytes through pinned memory are wrong");
    crux_dev_pinned_destroy(pin);
}
END_TEST

/* The exchange a caller sets on the group (crux_engine_group_set_oob):
 * the one its device calls agree through, counted. */
typedef struct {
    crux_coll_oob_t inner;
    int calls;
} counted_oob_t;

static int counted_allgather(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    counted_oob_t *c = arg;
    c->calls++;
    return c->inner.allgather(sbuf, rbuf, length, c->inner.arg);
}

static int allreduce_body(fork_group_member_t *m, void *arg)
{
    int procs = *(int *)arg, device = m->rank % crux_dev_count();
    const size_t n = (4u << 20) + 3;
    crux_engine_group_config_t cfg = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    cfg.calibrate = 0;
    cfg.engine.kinds = CRUX_TL_KINDS_CUDA;
    cfg.engine.calib_path = "";
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_engine_group_t *g;
    if (crux_engine_group_create(&oob, &cfg, &g) != CRUX_OK) {
        return 10;
    }
    float *in = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float)),
          *got = malloc(n * sizeof(float));
    for (int p = 0; p < procs; p++) {
        for (size_t i = 0; i < n; i++) {
            float v = (float)((i * 7 + (size_t)p * 13) % 1000) / 8.0f;
            if (p == m->rank) {
                in[i] = v;
            }
            want[i] = p == 0 ? v : want[i] + v; /* rank order, as the owners reduce */
        }
    }
    /* the second call agrees through the exchange set on the group, as a
     * communicator sharing a group built by another sets its own */
    counted_oob_t counted = { oob, 0 };
    crux_coll_oob_t caller = { counted_allgather, &counted, oob.rank, oob.size };
    void *d;
    int rc = 0;
    for (int in_place = 0; in_place <= 1 && rc == 0; in_place++) {
        if (in_place) {
            crux_engine_group_set_oob(g, &caller);
        }
        void *s = NULL;
        if (crux_dev_alloc(device, n * sizeof(float), &d) != CRUX_OK ||
            (!in_place && crux_dev_alloc(device, n * sizeof(float), &s) != CRUX_OK) ||
            crux_dev_copy(in_place ? d : s, in, n * sizeof(float)) != CRUX_OK ||
            crux_engine_allreduce(g, s, d, n, CRUX_DT_FLOAT, CRUX_OP_SUM) != CRUX_OK ||
            crux_dev_copy(got, d, n * sizeof(float)) != CRUX_OK) {
            rc = 11;
        } else if (memcmp(got, want, n * sizeof(float)) != 0) {
            rc = 12;
        }
        crux_dev_free(device, d);
        crux_dev_free(device, s);
    }
    if (rc == 0 && counted.calls == 0) {
        rc = 13; /* the call did not agree through the caller's exchange */
    }
    crux_engine_group_destroy(g);
    free(in);
    free(want);
    free(got);
    return rc;
}

START_TEST(t_device_allreduce)
{
    for (int procs = 2; procs <= 4; procs++) {
        ck_assert_msg(fork_group_run(procs, allreduce_body, &procs) == 0, "%d processes failed",
                      procs);
    }
}
END_TEST

/* A push is one driver call: each device's primary context is retained
 * once, not on every push (counted by the stand-in driver; nothing to
 * count on a real one). */
START_TEST(t_contexts_cached)
{
#ifdef CRUX_HAVE_CUDA
    int (*retains)(int) = mock_sym("mock_cuda_retains");
    if (retains == NULL) {
        return;
    }
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(crux_cuda_push(0), CRUX_OK);
        crux_cuda_pop();
    }
    void *d;
    ck_assert_int_eq(crux_dev_alloc(0, 64, &d), CRUX_OK);
    crux_dev_free(0, d);
    ck_assert_msg(retains(0) == 1, "device 0's primary context retained %d times", retains(0));
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

/* Pinned host memory is made in the context of a GPU the process works on
 * (here GPU 1 alone), none made on GPU 0 for it. */
START_TEST(t_pinned_on_a_used_gpu)
{
#ifdef CRUX_HAVE_CUDA
    if (crux_cuda_context_active(0)) {
        return; /* something works on GPU 0 already: nothing to tell */
    }
    void *p = NULL;
    ck_assert_msg(app_uses(1) && crux_cuda_host_alloc(1u << 20, &p) == CRUX_OK && p != NULL,
                  "GPU 1 not usable or no pinned memory");
    memset(p, 7, 1u << 20);
    crux_cuda_host_free(p);
    ck_assert_msg(!crux_cuda_context_active(0), "a context made on GPU 0 for pinned memory");
#else
    ck_abort_msg("a build without CUDA sees no GPU: never run");
#endif
}
END_TEST

/* Two GPUs joined by NVLink, at the stand-in's PCI bus ids. */
static const char two_gpus_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    " <object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\" "
    "allowed_cpuset=\"0x00000003\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
    "allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
    "  <object type=\"Package\" os_index=\"0\" cpuset=\"0x00000003\" "
    "complete_cpuset=\"0x00000003\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"2\">\n"
    "   <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000003\" "
    "complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
    "gp_index=\"3\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"Core\" os_index=\"0\" cpuset=\"0x00000003\" complete_cpuset=\"0x00000003\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"4\">\n"
    "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"5\"/>\n"
    "    <object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"6\"/>\n"
    "   </object>\n"
    "   <object type=\"Bridge\" gp_index=\"7\" bridge_type=\"0-1\" depth=\"0\" "
    "bridge_pci=\"0000:[00-11]\">\n"
    "    <object type=\"Bridge\" gp_index=\"8\" bridge_type=\"1-1\" depth=\"1\" "
    "bridge_pci=\"0000:[01-11]\" pci_busid=\"0000:00:01.0\" "
    "pci_type=\"0604 [8086:0001] [0000:0000] 00\" pci_link_speed=\"15.753846\">\n"
    "     <object type=\"PCIDev\" gp_index=\"9\" pci_busid=\"0000:10:00.0\" "
    "pci_type=\"0302 [10de:20b0] [10de:134f] a1\" pci_link_speed=\"15.753846\">\n"
    "      <object type=\"OSDev\" gp_index=\"10\" name=\"cuda0\" subtype=\"CUDA\" "
    "osdev_type=\"5\">\n"
    "       <info name=\"GPUModel\" value=\"NVIDIA A100-SXM4-40GB\"/>\n"
    "      </object>\n"
    "     </object>\n"
    "     <object type=\"PCIDev\" gp_index=\"11\" pci_busid=\"0000:11:00.0\" "
    "pci_type=\"0302 [10de:20b0] [10de:134f] a1\" pci_link_speed=\"15.753846\">\n"
    "      <object type=\"OSDev\" gp_index=\"12\" name=\"cuda1\" subtype=\"CUDA\" "
    "osdev_type=\"5\">\n"
    "       <info name=\"GPUModel\" value=\"NVIDIA A100-SXM4-40GB\"/>\n"
    "      </object>\n"
    "     </object>\n"
    "    </object>\n"
    "   </object>\n"
    "  </object>\n"
    " </object>\n"
    " <distances2hetero nbobjs=\"2\" kind=\"25\" name=\"NVLinkBandwidth\">\n"
    "  <indexes length=\"19\">PCIDev:9 PCIDev:11 </indexes>\n"
    "  <u64values length=\"28\">1000000 50000 50000 1000000 </u64values>\n"
    " </distances2hetero>\n"
    "</topology>\n";

static crux_topo_t *two_gpus_topo(void)
{
    crux_topo_options_t opts;
    crux_topo_t *topo = NULL;
    char err[256];
    crux_topo_options_init(&opts);
    opts.xml_text = two_gpus_xml;
    opts.xml_len = sizeof(two_gpus_xml) - 1;
    if (crux_topo_load(&opts, &topo, err, sizeof(err)) != CRUX_OK) {
        fprintf(stderr, "# %s\n", err);
        return NULL;
    }
    return topo;
}

/* An engine group given the topology stripes a transfer between its two
 * GPUs as the topology's figures say: the direct NVLink path and staging
 * through host memory in proportion to their bandwidths (without them, the
 * direct copy carries it all).  Under MIG the two devices share the PCI bus
 * id the topology names them by: no figures, the direct copy alone. */
static int topo_body(fork_group_member_t *m, void *arg)
{
    crux_topo_t *topo = two_gpus_topo();
    const crux_topo_pathset_t *set = topo != NULL ? crux_topo_multipath(topo, 0, 1) : NULL;
    crux_engine_group_config_t cfg = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    cfg.calibrate = 0;
    cfg.engine.calib_path = "";
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_engine_group_t *g;
    if (set == NULL || crux_engine_group_create(&oob, &cfg, &g) != CRUX_OK ||
        crux_engine_group_use_topo(g, topo) != CRUX_OK) {
        return 10;
    }
    double want[CRUX_TL_CHAN_KIND_COUNT] = { 0 }, total = 0, share[CRUX_TL_CHAN_KIND_COUNT];
    for (int i = 0; i < set->npaths; i++) {
        int kind = set->paths[i].kind == CRUX_TOPO_PATH_HOST ? CRUX_TL_CHAN_CUDA_HOST
                                                             : CRUX_TL_CHAN_CUDA_IPC;
        want[kind] += set->paths[i].gbps;
        total += set->paths[i].gbps;
    }
    int mig = *(int *)arg, rc = 0;
    if (cross_transfer(crux_engine_group_engine(g), 0, 1, 64u << 20, 0, share) != 0) {
        rc = 11;
    }
    for (int k = 0; rc == 0 && k < CRUX_TL_CHAN_KIND_COUNT; k++) {
        double expect = mig ? k == CRUX_TL_CHAN_CUDA_IPC : want[k] / total;
        if (fabs(share[k] - expect) > 0.05) {
            fprintf(stderr, "# %s: %.3f of the bytes, %.3f expected\n",
                    crux_tl_chan_kind_name((crux_tl_chan_kind_t)k), share[k], expect);
            rc = 12;
        }
    }
    crux_engine_group_destroy(g);
    crux_topo_free(topo);
    return rc;
}

START_TEST(t_topo_figures)
{
    int mig = 0;
    if (mock_sym("mock_cuda_copies") == NULL) {
        return; /* the topology names the stand-in's GPUs, not a real machine's */
    }
    ck_assert_msg(fork_group_run(1, topo_body, &mig) == 0, "without MIG");
    setenv("MOCK_CUDA_MIG", "1", 1); /* the stand-in's: one PCI bus id for both */
    mig = 1;
    ck_assert_msg(fork_group_run(1, topo_body, &mig) == 0, "under MIG");
}
END_TEST

/* Runs without a GPU too: no driver, no device, host memory everywhere. */
START_TEST(t_no_driver)
{
    setenv("CRUX_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
#ifdef CRUX_HAVE_CUDA
    crux_cuda_load();
#endif
    double h = 1;
    ck_assert_int_eq(crux_dev_count(), 0);
    ck_assert(!crux_dev_is_device(&h));
    ck_assert_int_eq(crux_dev_reduce(&h, &h, &h, 1, CRUX_DT_DOUBLE, CRUX_OP_SUM),
                     CRUX_ERR_UNSUPPORTED);
    /* no look at any buffer: every pair is host memory, the last one kept */
    double g = 2;
    crux_dev_host_pair_t pair = { NULL, NULL };
    ck_assert(crux_dev_absent());
    ck_assert(!crux_dev_call_is_device(NULL, &h) && !crux_dev_call_is_device(&g, &h));
    ck_assert_int_eq(crux_dev_call_host_ready(&g, &h), CRUX_OK);
    ck_assert(crux_dev_host_pair(&pair, &g, &h));
    ck_assert(pair.sbuf == &g && pair.rbuf == &h);
    ck_assert(crux_dev_host_pair(&pair, NULL, &g));
    ck_assert(pair.sbuf == NULL && pair.rbuf == &g);
}
END_TEST

int main(void)
{
    const cuda_test_t tests[] = {
        { "device pointers are detected", t_detection, 1 },
        { "every device kernel matches the CPU kernel bit for bit", t_kernels, 1 },
        { "NaN results are the same quiet NaN on the device and the CPU", t_kernels_nan, 1 },
        { "staging through pinned host memory", t_staging, 1 },
        { "pinned host memory in the context of a GPU the process uses", t_pinned_on_a_used_gpu,
          2 },
        { "device allreduce, 2 to 4 processes", t_device_allreduce, 1 },
        { "a primary context is retained once per device", t_contexts_cached, 1 },
        { "a group given the topology stripes by its figures (MIG: none apply)", t_topo_figures,
          2 },
        { "without a driver, all memory is host memory", t_no_driver, 0 },
    };
    return cuda_test_main("coll device", tests, (int)(sizeof(tests) / sizeof(tests[0])), 300);
}

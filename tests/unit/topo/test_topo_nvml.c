/* libcrux_topo's NVML discovery against a stand-in NVML library
 * (tests/mock/mock_nvml.c) describing GPUs that hwloc found in an XML
 * export: NVLink between GPUs, to NVSwitches hwloc does not show, to POWER
 * CPUs; per-link rates by architecture and NVLink version; P2P refusal;
 * links to devices that are not there; no NVML at all. */
#include "config.h" /* LT_OBJDIR: where libtool puts the mock library */

#include "tests/unit/check_main.h"
#include "tests/unit/topo_test_util.h"

#include <dlfcn.h>

#include "tests/mock/mock_nvml.h"
#include "topo/crux_topo_internal.h"

static const char *mock_library(void)
{
    static char path[4096];
    const char *dir = getenv("CRUX_BUILDDIR");
    ck_assert_msg(dir != NULL, "CRUX_BUILDDIR is not set (run the tests with make check)");
    snprintf(path, sizeof(path), "%s/tests/mock/%slibmock_nvml.so", dir, LT_OBJDIR);
    return path;
}

static void configure(int ngpus, const struct mock_nvml_gpu *gpus, const unsigned char *refused)
{
    /* the discovery dlopens the same object: it sees this configuration */
    void *lib = dlopen(mock_library(), RTLD_NOW | RTLD_LOCAL);
    ck_assert_msg(lib != NULL, "%s", dlerror());
    mock_nvml_configure_fn fn;
    *(void **)&fn = dlsym(lib, "mock_nvml_configure");
    ck_assert_ptr_nonnull(fn);
    fn(ngpus, gpus, refused);
}

/* hwloc discovery of an XML file, then NVML (the mock), then the steps. */
static crux_topo_t *discover(const char *xml, struct topo_warnings *w)
{
    struct crux_topo *t = calloc(1, sizeof(*t));
    hwloc_topology_t h;
    char err[512];
    ck_assert_ptr_nonnull(t);
    memset(w, 0, sizeof(*w));
    t->smp_gbps = CRUX_TOPO_SMP_GBPS_DEFAULT;
    t->warn = topo_collect_warning;
    t->warn_arg = w;
    ck_assert_int_eq(crux_topo_hwloc_open(topo_data(xml), NULL, 0, &h, err, sizeof(err)), CRUX_OK);
    ck_assert_int_eq(crux_topo_hwloc_discover(t, h), CRUX_OK);
    hwloc_topology_destroy(h);
    ck_assert_int_eq(crux_topo_nvml_discover(t, mock_library()), CRUX_OK);
    ck_assert_int_eq(crux_topo_build_links(t), CRUX_OK);
    ck_assert_int_eq(crux_topo_build_paths(t), CRUX_OK);
    ck_assert_int_eq(crux_topo_build_multipath(t), CRUX_OK);
    ck_assert_int_eq(crux_topo_build_groups(t), CRUX_OK);
    return t;
}

static struct mock_nvml_gpu gpu(unsigned domain, unsigned bus, const char *name, unsigned arch)
{
    struct mock_nvml_gpu g;
    memset(&g, 0, sizeof(g));
    g.domain = domain;
    g.bus = bus;
    g.name = name;
    g.uuid = "GPU-00000000-1111-2222-3333-444444444444";
    g.architecture = arch;
    return g;
}

static void link_to(struct mock_nvml_gpu *g, int count, unsigned domain, unsigned bus,
                    unsigned pci_device_id, int type, unsigned version)
{
    for (int i = 0; i < count; i++)
        g->links[g->nlinks++] =
            (struct mock_nvml_link){ domain, bus, 0, pci_device_id, type, version };
}

#define REMOTE_GPU    0
#define REMOTE_NPU    1
#define REMOTE_SWITCH 2

/* The DGX-1V hybrid cube-mesh, as NVML on V100s reports it, on the
 * PCI addresses of the synthetic DGX-1 file: the same model as from its
 * hwloc matrix. */
START_TEST(test_cube_mesh_from_nvml)
{
    static const unsigned bus[8] = { 0x18, 0x19, 0x35, 0x36, 0xe7, 0xe8, 0xf4, 0xf5 };
    static const int mesh[16][3] = {
        /* GPU, GPU, links */
        { 0, 1, 2 }, { 0, 2, 1 }, { 0, 3, 1 }, { 0, 4, 2 }, { 1, 2, 1 }, { 1, 3, 2 },
        { 1, 5, 1 }, { 2, 3, 2 }, { 2, 6, 2 }, { 3, 7, 1 }, { 4, 5, 2 }, { 4, 6, 1 },
        { 4, 7, 1 }, { 5, 6, 1 }, { 5, 7, 2 }, { 6, 7, 2 },
    };
    struct mock_nvml_gpu g[8];
    struct topo_warnings w;
    for (int i = 0; i < 8; i++)
        g[i] = gpu(0, bus[i], "Tesla V100-SXM2-32GB", 5 /* Volta */);
    for (int k = 0; k < 16; k++) {
        int a = mesh[k][0], b = mesh[k][1];
        link_to(&g[a], mesh[k][2], 0, bus[b], 0x1db110de, REMOTE_GPU, 2);
        link_to(&g[b], mesh[k][2], 0, bus[a], 0x1db110de, REMOTE_GPU, 2);
    }
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(g[i].nlinks, 6);
    configure(8, g, NULL);

    crux_topo_t *t = discover("synthetic-dgx1-hybrid-cube-mesh.xml", &w);
    ck_assert_int_eq(w.count, 0);
    ck_assert_int_eq(crux_topo_nvlink_source(t), CRUX_TOPO_NVLINK_FROM_NVML);
    ck_assert_str_eq(crux_topo_gpu(t, 0)->model, "Tesla V100-SXM2-32GB");
    ck_assert_str_eq(crux_topo_gpu(t, 3)->uuid, "GPU-00000000-1111-2222-3333-444444444444");
    ck_assert_int_eq(crux_topo_gpu(t, 0)->nvlink_gen, 2);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 1), 50);
    ck_assert_int_eq(crux_topo_link_between(t, topo_gpu_id(t, 0), topo_gpu_id(t, 1))->nvlinks, 2);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 2), 25);
    ck_assert_gbps(topo_nvlink_gbps(t, 7, 5), 50);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 5), 0);
    int nvlinks = 0;
    for (int l = 0; l < crux_topo_num_links(t); l++)
        nvlinks += crux_topo_link(t, l)->type == CRUX_TOPO_LINK_NVLINK;
    ck_assert_int_eq(nvlinks, 16); /* each link counted once, not from both ends */
    ck_assert_int_eq(crux_topo_num_islands(t), 2);
    ck_assert_gbps(crux_topo_multipath(t, 0, 1)->gbps, 140.75);
    crux_topo_free(t);
}
END_TEST

/* An HGX H100-like board: 18 links per GPU spread over 4 NVSwitches that
 * hwloc does not show (their PCI class is filtered out); some drivers call
 * H100 links NVLink 5.0, the architecture says 4.0 at 25 GB/s a link. */
START_TEST(test_nvswitch_from_nvml)
{
    static const int per_switch[4] = { 5, 4, 4, 5 };
    struct mock_nvml_gpu g[2] = { gpu(0, 0x04, "NVIDIA H100 80GB HBM3", 9 /* Hopper */),
                                  gpu(0, 0x07, "NVIDIA H100 80GB HBM3", 9) };
    struct topo_warnings w;
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < 4; s++)
            link_to(&g[i], per_switch[s], 0, 0xc0 + s, 0x22a310de, REMOTE_SWITCH, 7);
    configure(2, g, NULL);

    crux_topo_t *t = discover("cts1-p100-pcie.xml", &w);
    ck_assert_int_eq(w.count, 0);
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_NVSWITCH), 4);
    const crux_topo_device_t *sw = crux_topo_find(t, CRUX_TOPO_DEV_NVSWITCH, 0);
    ck_assert_str_eq(sw->pci, "0000:c0:00.0");
    ck_assert_str_eq(sw->name, "nvswitch0");
    const crux_topo_link_t *l = crux_topo_link_between(t, topo_gpu_id(t, 0), sw->id);
    ck_assert_gbps(l->gbps, 125);
    ck_assert_int_eq(l->nvlinks, 5);
    const crux_topo_path_t *p = topo_gpu_path(t, 0, 1);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_NVSWITCH);
    ck_assert_gbps(p->gbps, 450);
    ck_assert_int_eq(p->nlinks, 8);
    /* NVLink-connected: PCIe peer-to-peer is no separate path */
    const crux_topo_pathset_t *set = crux_topo_multipath(t, 0, 1);
    ck_assert_int_eq(set->npaths, 2);
    ck_assert_int_eq(set->paths[1].kind, CRUX_TOPO_PATH_HOST);
    ck_assert_int_eq(crux_topo_num_islands(t), 1);
    char *json = crux_topo_to_json(t);
    ck_assert_ptr_nonnull(strstr(json, "\"nvlink_source\": \"nvml\""));
    free(json);
    crux_topo_free(t);

    /* without the architecture, the NVLink version decides: 3.0 is 25 GB/s */
    for (int i = 0; i < 2; i++) {
        g[i].architecture = 0;
        g[i].name = "NVIDIA Graphics Device";
        for (int k = 0; k < g[i].nlinks; k++)
            g[i].links[k].version = 4; /* NVML's code for NVLink 3.0 */
    }
    configure(2, g, NULL);
    t = discover("cts1-p100-pcie.xml", &w);
    ck_assert_int_eq(crux_topo_gpu(t, 0)->nvlink_gen, 3);
    ck_assert_gbps(topo_gpu_path(t, 0, 1)->gbps, 450);
    crux_topo_free(t);
}
END_TEST

/* POWER8: NVLink 1.0 pairs, and links to the CPU (an IBM NPU at the far end). */
START_TEST(test_cpu_nvlink_from_nvml)
{
    static const unsigned domain[4] = { 0x2, 0x3, 0xa, 0xb };
    struct mock_nvml_gpu g[4];
    struct topo_warnings w;
    for (int i = 0; i < 4; i++) {
        g[i] = gpu(domain[i], 0x01, "Tesla P100-SXM2-16GB", 4 /* Pascal */);
        link_to(&g[i], 2, domain[i ^ 1], 0x01, 0x15f910de, REMOTE_GPU, 1);
        link_to(&g[i], 2, i < 2 ? 0x4 : 0x5, 0x00, 0x04ea1014, REMOTE_NPU, 1);
    }
    configure(4, g, NULL);

    crux_topo_t *t = discover("power8-minsky-p100-nvlink.xml", &w);
    ck_assert_int_eq(w.count, 0);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 1), 40);
    ck_assert_gbps(topo_nvlink_gbps(t, 2, 3), 40);
    const crux_topo_link_t *cpu =
        crux_topo_link_between(t, topo_gpu_id(t, 2), topo_id(t, CRUX_TOPO_DEV_PACKAGE, 1));
    ck_assert_ptr_nonnull(cpu);
    ck_assert_int_eq(cpu->type, CRUX_TOPO_LINK_NVLINK);
    ck_assert_gbps(cpu->gbps, 40);
    const crux_topo_path_t *p =
        crux_topo_path(t, topo_gpu_id(t, 2), topo_id(t, CRUX_TOPO_DEV_NUMA, 1));
    ck_assert_int_eq(p->hops, 1);
    ck_assert_gbps(p->gbps, 40);
    ck_assert_gbps(crux_topo_multipath(t, 0, 1)->gbps, 80);
    crux_topo_free(t);
}
END_TEST

/* GPUs below one PCIe switch whose peer-to-peer NVML refuses (an IOMMU, a
 * chipset) go through host memory. */
START_TEST(test_p2p_refused)
{
    struct mock_nvml_gpu g[2] = { gpu(0, 0x04, "Tesla P100-PCIE-16GB", 4),
                                  gpu(0, 0x07, "Tesla P100-PCIE-16GB", 4) };
    static const unsigned char refused[4] = { 0, 1, 1, 0 };
    struct topo_warnings w;
    configure(2, g, NULL);
    crux_topo_t *t = discover("cts1-p100-pcie.xml", &w);
    ck_assert_int_eq(crux_topo_nvlink_source(t), CRUX_TOPO_NVLINK_NONE);
    ck_assert_int_eq(topo_gpu_path(t, 0, 1)->kind, CRUX_TOPO_PATH_PCIE_P2P);
    crux_topo_free(t);

    configure(2, g, refused);
    t = discover("cts1-p100-pcie.xml", &w);
    ck_assert_int_eq(topo_gpu_path(t, 0, 1)->kind, CRUX_TOPO_PATH_HOST);
    ck_assert_int_eq(crux_topo_multipath(t, 0, 1)->paths[0].kind, CRUX_TOPO_PATH_HOST);
    crux_topo_free(t);
}
END_TEST

/* NVML naming a GPU, or a link's far end, that hwloc did not find. */
START_TEST(test_unknown_devices)
{
    struct mock_nvml_gpu g[3] = { gpu(0, 0x04, "Tesla V100-PCIE-16GB", 5),
                                  gpu(0, 0x07, "Tesla V100-PCIE-16GB", 5),
                                  gpu(0, 0x98, "Tesla V100-PCIE-16GB", 5) };
    struct topo_warnings w;
    link_to(&g[0], 2, 0, 0x99, 0x1db410de, REMOTE_GPU, 2);
    configure(3, g, NULL);
    crux_topo_t *t = discover("cts1-p100-pcie.xml", &w);
    ck_assert_int_eq(w.count, 3); /* the GPU at 98:00, and both links to 99:00 */
    ck_assert_ptr_nonnull(strstr(w.last, "not in the topology"));
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 2);
    for (int l = 0; l < crux_topo_num_links(t); l++)
        ck_assert_int_ne(crux_topo_link(t, l)->type, CRUX_TOPO_LINK_NVLINK);
    crux_topo_free(t);
}
END_TEST

START_TEST(test_no_nvml)
{
    struct crux_topo t;
    memset(&t, 0, sizeof(t));
    ck_assert_int_eq(crux_topo_nvml_discover(&t, "/nonexistent/libnvidia-ml.so.1"),
                     CRUX_ERR_UNSUPPORTED);
    configure(0, NULL, NULL); /* a driver that sees no GPU */
    ck_assert_int_eq(crux_topo_nvml_discover(&t, mock_library()), CRUX_ERR_UNSUPPORTED);
    ck_assert_int_eq(t.nreports, 0);
}
END_TEST

static Suite *topo_nvml_suite(void)
{
    Suite *s = suite_create("topo_nvml");
    TCase *tc = tcase_create("nvml");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cube_mesh_from_nvml);
    tcase_add_test(tc, test_nvswitch_from_nvml);
    tcase_add_test(tc, test_cpu_nvlink_from_nvml);
    tcase_add_test(tc, test_p2p_refused);
    tcase_add_test(tc, test_unknown_devices);
    tcase_add_test(tc, test_no_nvml);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(topo_nvml_suite)

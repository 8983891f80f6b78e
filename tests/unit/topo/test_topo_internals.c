/* libcrux_topo's building blocks that the XML files cannot reach: link
 * rates by generation, GPU model names, the pre-import XML facts, and the
 * sysfs reader (on a fake sysfs tree). */
#define _GNU_SOURCE /* nftw */
#include "tests/unit/check_main.h"
#include "tests/unit/topo_test_util.h"

#include <ftw.h>
#include <sys/stat.h>

#include "topo/crux_topo_internal.h"

START_TEST(test_pcie_rates)
{
    ck_assert_gbps(crux_topo_pcie_gbps(1, 16), 4.0); /* 2.5 GT/s, 8b/10b */
    ck_assert_gbps(crux_topo_pcie_gbps(2, 8), 4.0);
    ck_assert_gbps(crux_topo_pcie_gbps(3, 16), 15.75); /* 8 GT/s, 128b/130b: hwloc's figure */
    ck_assert_gbps(crux_topo_pcie_gbps(4, 16), 31.51);
    ck_assert_gbps(crux_topo_pcie_gbps(5, 16), 63.02);
    ck_assert_gbps(crux_topo_pcie_gbps(3, 4), 3.94);
    ck_assert_gbps(crux_topo_pcie_gbps(0, 16), 0);
    ck_assert_gbps(crux_topo_pcie_gbps(3, 0), 0);
    ck_assert_gbps(crux_topo_pcie_gbps(7, 16), 0);
}
END_TEST

START_TEST(test_nvlink_models)
{
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("Tesla P100-SXM2-16GB"), 1);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("GV100GL [Tesla V100 SXM2 16GB]"), 2);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("Tesla V100S-PCIE-32GB"), 0); /* no NVLink */
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("GP100GL [Tesla P100 PCIe 16GB]"), 0);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("NVIDIA A100-PCIE-40GB"), 3); /* bridge */
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("A100-SXM4-40GB"), 3);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("NVIDIA A30"), 3);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("NVIDIA H100 80GB HBM3"), 4);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("GH100 [H100 SXM5 80GB]"), 4);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("NVIDIA H200"), 4);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("NVIDIA B200"), 5);
    /* no NVLink, and names that merely contain a token */
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("Tesla T4"), 0);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model("NVIDIA RTX A3000 Laptop GPU"), 0);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model(""), 0);
    ck_assert_int_eq(crux_topo_nvlink_gen_of_model(NULL), 0);
    ck_assert_gbps(crux_topo_nvlink_gbps_per_link(1), 20);
    ck_assert_gbps(crux_topo_nvlink_gbps_per_link(3), 25);
    ck_assert_gbps(crux_topo_nvlink_gbps_per_link(5), 50);
    ck_assert_gbps(crux_topo_nvlink_gbps_per_link(0), 0);
}
END_TEST

START_TEST(test_xml_facts)
{
    struct crux_topo_xml_facts facts;
    char err[256];
    ck_assert_int_eq(
        crux_topo_xml_check(topo_data("dgx2-v100-nvswitch.xml"), NULL, 0, &facts, err, sizeof(err)),
        CRUX_OK);
    ck_assert_int_eq(facts.nmatrices, 1);
    ck_assert_uint_eq(facts.matrix_nbobjs[0], 28);
    ck_assert_int_eq(crux_topo_xml_check(topo_data("synthetic-dgx1-hybrid-cube-mesh.xml"), NULL, 0,
                                         &facts, err, sizeof(err)),
                     CRUX_OK);
    ck_assert_int_eq(facts.nmatrices, 1);
    ck_assert_uint_eq(facts.matrix_nbobjs[0], 8);
    /* the NUMALatency matrix is not an NVLink one */
    ck_assert_int_eq(
        crux_topo_xml_check(topo_data("cts1-p100-pcie.xml"), NULL, 0, &facts, err, sizeof(err)),
        CRUX_OK);
    ck_assert_int_eq(facts.nmatrices, 0);
}
END_TEST

static void write_file(const char *root, const char *rel, const char *text)
{
    char path[1024], *slash;
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        mkdir(path, 0755);
        *slash = '/';
    }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int add_nic(struct crux_topo *t, const char *pci, const char *port, const char *netdev,
                   const char *rdmadev)
{
    int id = crux_topo_add_device(t, CRUX_TOPO_DEV_NIC);
    ck_assert_int_ge(id, 0);
    t->devs[id].parent = 0;
    snprintf(t->devs[id].pci, sizeof(t->devs[id].pci), "%s", pci);
    snprintf(t->pcie_raw[id].port_pci, sizeof(t->pcie_raw[id].port_pci), "%s", port);
    snprintf(t->devs[id].netdev, sizeof(t->devs[id].netdev), "%s", netdev);
    snprintf(t->devs[id].rdmadev, sizeof(t->devs[id].rdmadev), "%s", rdmadev);
    return id;
}

START_TEST(test_sysfs_reader)
{
    char root[512];
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(root, sizeof(root), "%s/crux-topo-sysfs-XXXXXX", tmp);
    ck_assert_ptr_nonnull(mkdtemp(root));
    /* a PCIe 4.0 x16 HCA in a PCIe 3.0 x16 port; a x8 NIC in a x16 port */
    write_file(root, "bus/pci/devices/0000:18:00.0/max_link_speed", "16.0 GT/s PCIe\n");
    write_file(root, "bus/pci/devices/0000:18:00.0/max_link_width", "16\n");
    write_file(root, "bus/pci/devices/0000:17:00.0/max_link_speed", "8.0 GT/s PCIe\n");
    write_file(root, "bus/pci/devices/0000:17:00.0/max_link_width", "16\n");
    write_file(root, "class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n");
    write_file(root, "bus/pci/devices/0000:3b:00.0/max_link_speed", "8 GT/s\n");
    write_file(root, "bus/pci/devices/0000:3b:00.0/max_link_width", "8\n");
    write_file(root, "bus/pci/devices/0000:3a:00.0/max_link_speed", "8 GT/s\n");
    write_file(root, "bus/pci/devices/0000:3a:00.0/max_link_width", "16\n");
    write_file(root, "class/net/eth9/speed", "25000\n");
    write_file(root, "class/net/eth8/speed", "-1\n");

    struct crux_topo t;
    memset(&t, 0, sizeof(t));
    ck_assert_int_eq(crux_topo_add_device(&t, CRUX_TOPO_DEV_PACKAGE), 0);
    int ib = add_nic(&t, "0000:18:00.0", "0000:17:00.0", "ib0", "mlx5_0");
    int eth = add_nic(&t, "0000:3b:00.0", "0000:3a:00.0", "eth9", "");
    int down = add_nic(&t, "0000:5e:00.0", "", "eth8", "");
    crux_topo_sysfs_discover(&t, root);

    ck_assert_int_eq(t.devs[ib].pcie_gen, 3); /* the port's lower generation */
    ck_assert_int_eq(t.devs[ib].pcie_width, 16);
    ck_assert_gbps(t.pcie_raw[ib].cap_gbps, 15.75);
    ck_assert_gbps(t.devs[ib].port_gbit, 100);
    ck_assert_int_eq(t.devs[eth].pcie_gen, 3);
    ck_assert_int_eq(t.devs[eth].pcie_width, 8); /* the device's narrower width */
    ck_assert_gbps(t.pcie_raw[eth].cap_gbps, 7.88);
    ck_assert_gbps(t.devs[eth].port_gbit, 25);
    ck_assert_int_eq(t.devs[down].pcie_gen, 0); /* nothing in sysfs for it */
    ck_assert_gbps(t.pcie_raw[down].cap_gbps, 0);
    ck_assert_gbps(t.devs[down].port_gbit, 0); /* link down */
    free(t.devs);
    free(t.pcie_raw);
    ck_assert_int_eq(nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}
END_TEST

static Suite *topo_internals_suite(void)
{
    Suite *s = suite_create("topo_internals");
    TCase *tc = tcase_create("internals");
    tcase_add_test(tc, test_pcie_rates);
    tcase_add_test(tc, test_nvlink_models);
    tcase_add_test(tc, test_xml_facts);
    tcase_add_test(tc, test_sysfs_reader);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(topo_internals_suite)

/* libcrux_topo on the machine running the tests.  The build machines have
 * no GPU: the model must still hold the packages, NUMA nodes, NICs and
 * host groups.  What the model says is checked against sysfs directly. */
#include "tests/unit/check_main.h"
#include "tests/unit/topo_test_util.h"

#include <dirent.h>

/* NVIDIA display-class PCI functions (GPUs) listed by sysfs. */
static int sysfs_nvidia_gpus(void)
{
    DIR *dir = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    int n = 0;
    if (!dir)
        return 0;
    while ((e = readdir(dir))) {
        char path[512], vendor[32] = "", class[32] = "";
        FILE *f;
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
        if ((f = fopen(path, "r"))) {
            ck_assert_ptr_nonnull(fgets(vendor, sizeof(vendor), f));
            fclose(f);
        }
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", e->d_name);
        if ((f = fopen(path, "r"))) {
            ck_assert_ptr_nonnull(fgets(class, sizeof(class), f));
            fclose(f);
        }
        n += !strncmp(vendor, "0x10de", 6) && !strncmp(class, "0x03", 4);
    }
    closedir(dir);
    return n;
}

static int sysfs_numa_nodes(void)
{
    DIR *dir = opendir("/sys/devices/system/node");
    struct dirent *e;
    int n = 0;
    if (!dir)
        return 1; /* a kernel without NUMA: one node */
    while ((e = readdir(dir)))
        n += !strncmp(e->d_name, "node", 4) && e->d_name[4] >= '0' && e->d_name[4] <= '9';
    closedir(dir);
    return n ? n : 1;
}

static crux_topo_t *load_live(void)
{
    crux_topo_t *t;
    char err[512];
    unsetenv("HWLOC_XMLFILE");
    crux_status_t st = crux_topo_load(NULL, &t, err, sizeof(err));
    ck_assert_msg(st == CRUX_OK, "live machine: %s", err);
    return t;
}

START_TEST(test_live_devices)
{
    crux_topo_t *t = load_live();
    ck_assert_ptr_null(crux_topo_xml_path(t));
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), sysfs_nvidia_gpus());
    ck_assert_int_ge(crux_topo_count(t, CRUX_TOPO_DEV_PACKAGE), 1);
    /* hwloc shows the NUMA nodes this process may use (cgroups may hide some) */
    ck_assert_int_ge(crux_topo_count(t, CRUX_TOPO_DEV_NUMA), 1);
    ck_assert_int_le(crux_topo_count(t, CRUX_TOPO_DEV_NUMA), sysfs_numa_nodes());
    for (int i = 0; i < crux_topo_count(t, CRUX_TOPO_DEV_NUMA); i++) {
        const crux_topo_device_t *n = crux_topo_find(t, CRUX_TOPO_DEV_NUMA, i);
        char path[256];
        ck_assert_int_eq(crux_topo_device(t, n->package)->type, CRUX_TOPO_DEV_PACKAGE);
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", n->os_index);
        ck_assert_msg(sysfs_numa_nodes() == 1 || access(path, F_OK) == 0, "no %s", path);
    }
    for (int i = 0; i < crux_topo_count(t, CRUX_TOPO_DEV_PACKAGE); i++)
        ck_assert(crux_topo_find(t, CRUX_TOPO_DEV_PACKAGE, i)->cpuset[0] != '\0');
    crux_topo_free(t);
}
END_TEST

START_TEST(test_live_nics)
{
    crux_topo_t *t = load_live();
    for (int i = 0; i < crux_topo_count(t, CRUX_TOPO_DEV_NIC); i++) {
        const crux_topo_device_t *n = crux_topo_find(t, CRUX_TOPO_DEV_NIC, i);
        char path[512], line[64];
        ck_assert(n->pci[0] != '\0');
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", n->pci);
        ck_assert_msg(access(path, F_OK) == 0, "NIC %s: no %s", n->name, path);
        ck_assert(n->netdev[0] || n->rdmadev[0]);
        if (!n->netdev[0] || n->rdmadev[0])
            continue;
        /* the port rate is the interface's, in Gbit/s, 0 when unknown or down */
        snprintf(path, sizeof(path), "/sys/class/net/%s/speed", n->netdev);
        FILE *f = fopen(path, "r");
        double mbit = f && fgets(line, sizeof(line), f) ? strtod(line, NULL) : 0;
        if (f)
            fclose(f);
        ck_assert_double_eq_tol(n->port_gbit, mbit > 0 ? mbit / 1000 : 0, TOPO_EPS);
    }
    crux_topo_free(t);
}
END_TEST

START_TEST(test_live_groups_and_paths)
{
    crux_topo_t *t = load_live();
    int ngpus = crux_topo_count(t, CRUX_TOPO_DEV_GPU), in_groups = 0, nics = 0;
    ck_assert_int_eq(crux_topo_num_host_groups(t), crux_topo_count(t, CRUX_TOPO_DEV_PACKAGE));
    for (int i = 0; i < crux_topo_num_host_groups(t); i++) {
        const crux_topo_host_group_t *g = crux_topo_host_group(t, i);
        ck_assert_int_ge(g->nnuma, 1);
        ck_assert_str_eq(g->cpuset, crux_topo_device(t, g->package)->cpuset);
        in_groups += g->ngpus;
        nics += g->nnics;
    }
    ck_assert_int_eq(in_groups, ngpus);
    ck_assert_int_eq(nics, crux_topo_count(t, CRUX_TOPO_DEV_NIC));
    ck_assert_int_le(crux_topo_num_islands(t), ngpus);
    ck_assert_int_ge(crux_topo_num_islands(t), ngpus ? 1 : 0);
    if (ngpus == 0) {
        /* host only: no path, island or multipath set, and no NVLink */
        ck_assert_int_eq(crux_topo_num_paths(t), 0);
        ck_assert_int_eq(crux_topo_nvlink_source(t), CRUX_TOPO_NVLINK_NONE);
        ck_assert_ptr_null(crux_topo_multipath(t, 0, 1));
        ck_assert_ptr_null(crux_topo_gpu(t, 0));
    } else {
        /* every GPU reaches every NUMA node's memory */
        ck_assert_int_ge(crux_topo_num_paths(t), ngpus * crux_topo_count(t, CRUX_TOPO_DEV_NUMA));
    }
    char *json = crux_topo_to_json(t);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_nonnull(strstr(json, "\"source\": \"live\""));
    free(json);
    crux_topo_free(t);
}
END_TEST

static Suite *topo_live_suite(void)
{
    Suite *s = suite_create("topo_live");
    TCase *tc = tcase_create("live");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_live_devices);
    tcase_add_test(tc, test_live_nics);
    tcase_add_test(tc, test_live_groups_and_paths);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(topo_live_suite)

/* libcrux_topo on the real and synthetic hwloc exports of
 * tests/data/topologies/: device counts, NUMA placement, NVLink bandwidths,
 * the paths of GPU pairs with and without NVLink, islands, multipath sets,
 * and the hwloc 2.9 NVLink correction.
 *
 * Expected NVLink figures: hwloc 2.9 counts 20000 MB/s per NVLink 1.0 link
 * (P100) and 25000 per NVLink 2.0 link (V100), which are the true per
 * direction rates, so those matrices are taken as they are: the DGX-1
 * cube-mesh file's 50000 and 25000 are 50 GB/s (a double link) and 25 GB/s
 * (a single one).  Only NVLink 3.0 (A100) figures from hwloc < 2.12 are
 * halved; test_nvlink_correction checks that on an A100 variant. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>

#include "tests/unit/check_main.h"
#include "tests/unit/topo_test_util.h"

static const char *const all_files[] = {
    "dgx2-v100-nvswitch.xml",     "power8-minsky-p100-nvlink.xml",
    "ac922-lassen-v100.xml",      "aws-g4dn-metal-t4-pcie.xml",
    "cts1-p100-pcie.xml",         "synthetic-dgx1-hybrid-cube-mesh.xml",
    "synthetic-ac922-nvlink.xml",
};
static const int all_gpus[] = { 16, 4, 4, 8, 2, 8, 4 };
#define NFILES (int)(sizeof(all_files) / sizeof(all_files[0]))

static int numa_os(const crux_topo_t *topo, int gpu)
{
    const crux_topo_device_t *numa = crux_topo_device(topo, crux_topo_gpu(topo, gpu)->numa);
    ck_assert_msg(numa && numa->type == CRUX_TOPO_DEV_NUMA, "GPU %d has no NUMA node", gpu);
    return numa->os_index;
}

static int has_relay(const crux_topo_path_t *p, int dev)
{
    for (int i = 0; i < p->nrelays; i++)
        if (p->relays[i] == dev)
            return 1;
    return 0;
}

static int count_kind(const crux_topo_pathset_t *set, crux_topo_path_kind_t kind)
{
    int n = 0;
    for (int i = 0; i < set->npaths; i++)
        n += set->paths[i].kind == kind;
    return n;
}

/* ------------------------------------------------------------------ */

START_TEST(test_dgx1_cube_mesh)
{
    crux_topo_t *t = topo_load("synthetic-dgx1-hybrid-cube-mesh.xml");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 8);
    ck_assert_int_eq(crux_topo_nvlink_source(t), CRUX_TOPO_NVLINK_FROM_HWLOC);
    ck_assert_int_eq(crux_topo_nvlink_corrected(t), 0);
    for (int g = 0; g < 8; g++)
        ck_assert_int_eq(numa_os(t, g), g < 4 ? 0 : 1);
    ck_assert_str_eq(crux_topo_gpu(t, 0)->pci, "0000:18:00.0");
    ck_assert_str_eq(crux_topo_gpu(t, 7)->pci, "0000:f5:00.0");

    /* double links 50 GB/s, single 25, none between GPU 0 and 5 */
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 1), 50);
    ck_assert_int_eq(crux_topo_link_between(t, topo_gpu_id(t, 0), topo_gpu_id(t, 1))->nvlinks, 2);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 4), 50);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 2), 25);
    ck_assert_int_eq(crux_topo_link_between(t, topo_gpu_id(t, 0), topo_gpu_id(t, 2))->nvlinks, 1);
    ck_assert_gbps(topo_nvlink_gbps(t, 1, 5), 25);
    ck_assert_gbps(topo_nvlink_gbps(t, 6, 7), 50);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 5), 0);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 6), 0);
    int nvlinks = 0;
    for (int l = 0; l < crux_topo_num_links(t); l++)
        nvlinks += crux_topo_link(t, l)->type == CRUX_TOPO_LINK_NVLINK;
    ck_assert_int_eq(nvlinks, 16); /* 8 GPUs with 4 NVLink neighbours each */

    const crux_topo_path_t *p = topo_gpu_path(t, 0, 1);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_NVLINK);
    ck_assert_int_eq(p->hops, 1);
    ck_assert_gbps(p->gbps, 50);
    /* 0 -> 5: relayed by GPU 4 over two double links */
    p = topo_gpu_path(t, 0, 5);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_NVLINK_MULTIHOP);
    ck_assert_int_eq(p->hops, 2);
    ck_assert_int_eq(p->nrelays, 1);
    ck_assert_int_eq(p->relays[0], topo_gpu_id(t, 4));
    ck_assert_gbps(p->gbps, 50);

    ck_assert_int_eq(crux_topo_num_islands(t), 2);
    for (int i = 0; i < 2; i++) {
        const crux_topo_island_t *isl = crux_topo_island(t, i);
        ck_assert_int_eq(isl->ngpus, 4);
        for (int g = 0; g < 4; g++)
            ck_assert_int_eq(isl->gpus[g], 4 * i + g);
        ck_assert_gbps(isl->min_gbps, 25);
    }

    /* 0 -> 1: the direct double link, the relays through 2, 3 and 4+5
     * (25 each: GPU 0's single links and 5 -> 1 limit them) and the host
     * over PCIe 3.0 x16: 50 + 3 x 25 + 15.75 */
    const crux_topo_pathset_t *set = crux_topo_multipath(t, 0, 1);
    ck_assert_gbps(set->gbps, 140.75);
    ck_assert_int_eq(set->npaths, 5);
    ck_assert_int_eq(set->paths[0].kind, CRUX_TOPO_PATH_NVLINK);
    ck_assert_int_eq(count_kind(set, CRUX_TOPO_PATH_NVLINK_MULTIHOP), 3);
    ck_assert_int_eq(count_kind(set, CRUX_TOPO_PATH_HOST), 1);
    const crux_topo_path_t *host = &set->paths[set->npaths - 1];
    ck_assert_int_eq(host->kind, CRUX_TOPO_PATH_HOST);
    ck_assert_int_eq(host->cross_socket, 0);
    ck_assert_gbps(host->gbps, 15.75);
    ck_assert_int_eq(host->staging_numa, topo_id(t, CRUX_TOPO_DEV_NUMA, 0));
    /* 0 -> 5: no direct link; relays through 4 (50), 1 (25), 2+6, 3+7 and a
     * host path across the sockets */
    set = crux_topo_multipath(t, 0, 5);
    ck_assert_int_eq(count_kind(set, CRUX_TOPO_PATH_NVLINK), 0);
    ck_assert_int_eq(set->paths[0].kind, CRUX_TOPO_PATH_NVLINK_MULTIHOP);
    ck_assert(has_relay(&set->paths[0], topo_gpu_id(t, 4)));
    ck_assert_gbps(set->gbps, 140.75);
    ck_assert(set->paths[set->npaths - 1].cross_socket);
    crux_topo_free(t);
}
END_TEST

START_TEST(test_dgx2_nvswitch)
{
    crux_topo_t *t = topo_load("dgx2-v100-nvswitch.xml");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 16);
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_NVSWITCH), 12);
    for (int g = 0; g < 16; g++)
        ck_assert_int_eq(numa_os(t, g), g < 8 ? 0 : 1);
    /* each V100 has one 25 GB/s link to each of its baseboard's 6 switches */
    for (int g = 0; g < 16; g++) {
        int links = 0, gpu = topo_gpu_id(t, g);
        for (int l = 0; l < crux_topo_num_links(t); l++) {
            const crux_topo_link_t *link = crux_topo_link(t, l);
            if (link->type != CRUX_TOPO_LINK_NVLINK || (link->a != gpu && link->b != gpu))
                continue;
            int other = link->a == gpu ? link->b : link->a;
            ck_assert_int_eq(crux_topo_device(t, other)->type, CRUX_TOPO_DEV_NVSWITCH);
            ck_assert_gbps(link->gbps, 25);
            links++;
        }
        ck_assert_int_eq(links, 6);
    }
    /* across the two baseboards too: the switches form one fabric */
    const crux_topo_path_t *p = topo_gpu_path(t, 0, 15);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_NVSWITCH);
    ck_assert_int_eq(p->hops, 2);
    ck_assert_gbps(p->gbps, 150);
    ck_assert_int_eq(p->nlinks, 12);
    ck_assert_int_eq(crux_topo_num_islands(t), 1);
    ck_assert_int_eq(crux_topo_island(t, 0)->ngpus, 16);
    ck_assert_gbps(crux_topo_island(t, 0)->min_gbps, 150);

    /* NVSwitch plus the host: the 0 -> 8 host path crosses the sockets */
    const crux_topo_pathset_t *set = crux_topo_multipath(t, 0, 8);
    ck_assert_int_eq(set->npaths, 2);
    ck_assert_int_eq(set->paths[0].kind, CRUX_TOPO_PATH_NVSWITCH);
    ck_assert_int_eq(set->paths[1].kind, CRUX_TOPO_PATH_HOST);
    ck_assert(set->paths[1].cross_socket);
    ck_assert_gbps(set->gbps, 150 + set->paths[1].gbps);
    ck_assert(set->paths[1].gbps > 3.0 && set->paths[1].gbps <= CRUX_TOPO_SMP_GBPS_DEFAULT);
    crux_topo_free(t);
}
END_TEST

START_TEST(test_minsky_nvlink_through_cpu)
{
    crux_topo_t *t = topo_load("power8-minsky-p100-nvlink.xml");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 4);
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_PACKAGE), 2);
    for (int g = 0; g < 4; g++)
        ck_assert_int_eq(numa_os(t, g), g < 2 ? 0 : 1);
    /* 40000 MB/s = two NVLink 1.0 links of 20 GB/s */
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 1), 40);
    ck_assert_int_eq(crux_topo_link_between(t, topo_gpu_id(t, 0), topo_gpu_id(t, 1))->nvlinks, 2);
    ck_assert_gbps(topo_nvlink_gbps(t, 2, 3), 40);
    ck_assert_gbps(topo_nvlink_gbps(t, 1, 2), 0);
    const crux_topo_link_t *cpu =
        crux_topo_link_between(t, topo_gpu_id(t, 0), topo_id(t, CRUX_TOPO_DEV_PACKAGE, 0));
    ck_assert_ptr_nonnull(cpu);
    ck_assert_int_eq(cpu->type, CRUX_TOPO_LINK_NVLINK);
    ck_assert_gbps(cpu->gbps, 40);

    /* host memory is reached over the CPU NVLink, in one hop */
    const crux_topo_path_t *p =
        crux_topo_path(t, topo_gpu_id(t, 0), topo_id(t, CRUX_TOPO_DEV_NUMA, 0));
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_HOST);
    ck_assert_int_eq(p->hops, 1);
    ck_assert_gbps(p->gbps, 40);
    /* the islands are joined through the CPUs: limited by the X-bus default */
    p = topo_gpu_path(t, 0, 2);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_HOST);
    ck_assert(p->cross_socket);
    ck_assert_int_eq(p->hops, 3);
    ck_assert_gbps(p->gbps, CRUX_TOPO_SMP_GBPS_DEFAULT);
    ck_assert_int_eq(p->staging_numa, topo_id(t, CRUX_TOPO_DEV_NUMA, 1));
    ck_assert_int_eq(crux_topo_num_islands(t), 2);
    ck_assert_int_eq(crux_topo_island_of(t, 1), crux_topo_island_of(t, 0));
    ck_assert_int_ne(crux_topo_island_of(t, 2), crux_topo_island_of(t, 0));
    /* direct NVLink plus host staging over both GPUs' CPU NVLinks */
    ck_assert_gbps(crux_topo_multipath(t, 0, 1)->gbps, 80);
    crux_topo_free(t);

    /* a faster inter-socket link leaves the GPU-CPU NVLink as bottleneck */
    t = topo_load_path(topo_data("power8-minsky-p100-nvlink.xml"), 64, NULL);
    ck_assert_gbps(crux_topo_smp_gbps(t), 64);
    ck_assert_gbps(topo_gpu_path(t, 0, 2)->gbps, 40);
    crux_topo_free(t);
}
END_TEST

START_TEST(test_ac922_pcie_and_nics)
{
    crux_topo_t *t = topo_load("ac922-lassen-v100.xml");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 4);
    ck_assert_int_eq(crux_topo_nvlink_source(t), CRUX_TOPO_NVLINK_NONE);
    ck_assert_int_eq(numa_os(t, 0), 0);
    ck_assert_int_eq(numa_os(t, 1), 0);
    ck_assert_int_eq(numa_os(t, 2), 8);
    ck_assert_int_eq(numa_os(t, 3), 8);
    ck_assert_str_eq(crux_topo_gpu(t, 0)->model, "Tesla V100-SXM2-16GB");
    ck_assert_int_eq(crux_topo_gpu(t, 0)->nvlink_gen, 2);
    /* no NVLink in this export: GPUs 0 and 1 share a PLX switch, whose
     * downstream ports run PCIe 3.0 x2 (1.97 GB/s) although the V100s could
     * do x16: the narrower end sets the link */
    const crux_topo_path_t *p = topo_gpu_path(t, 0, 1);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_PCIE_P2P);
    ck_assert_int_eq(p->hops, 2);
    ck_assert_gbps(p->gbps, 1.97);
    p = topo_gpu_path(t, 1, 2);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_HOST);
    ck_assert(p->cross_socket);
    ck_assert_gbps(p->gbps, 1.97);
    ck_assert_int_eq(crux_topo_num_islands(t), 4);

    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_NIC), 6);
    const crux_topo_device_t *nic = crux_topo_find(t, CRUX_TOPO_DEV_NIC, 0);
    ck_assert_str_eq(nic->rdmadev, "mlx5_0");
    ck_assert_str_eq(nic->netdev, "hsi0");
    ck_assert_str_eq(nic->pci, "0003:01:00.0");
    ck_assert_int_eq(crux_topo_device(t, nic->numa)->os_index, 0);
    nic = crux_topo_find(t, CRUX_TOPO_DEV_NIC, 4);
    ck_assert_str_eq(nic->rdmadev, "mlx5_2");
    ck_assert_int_eq(crux_topo_device(t, nic->numa)->os_index, 8);
    p = crux_topo_path(t, topo_gpu_id(t, 0), nic->id);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_HOST);
    ck_assert(p->cross_socket);
    crux_topo_free(t);
}
END_TEST

START_TEST(test_synthetic_ac922_nvlink)
{
    crux_topo_t *t = topo_load("synthetic-ac922-nvlink.xml");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 4);
    /* 75000 MB/s: three NVLink 2.0 links */
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 1), 75);
    ck_assert_int_eq(crux_topo_link_between(t, topo_gpu_id(t, 0), topo_gpu_id(t, 1))->nvlinks, 3);
    ck_assert_gbps(topo_nvlink_gbps(t, 2, 3), 75);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 2), 0);
    ck_assert_int_eq(crux_topo_num_islands(t), 2);
    ck_assert_int_eq(crux_topo_island(t, 0)->ngpus, 2);
    ck_assert_int_eq(crux_topo_island(t, 1)->gpus[0], 2);
    /* direct NVLink, and host staging over the CPU NVLinks instead of PCIe */
    const crux_topo_pathset_t *set = crux_topo_multipath(t, 0, 1);
    ck_assert_int_eq(set->npaths, 2);
    ck_assert_int_eq(count_kind(set, CRUX_TOPO_PATH_HOST), 1);
    ck_assert_gbps(set->gbps, 150);
    const crux_topo_path_t *p = topo_gpu_path(t, 1, 3);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_HOST);
    ck_assert(p->cross_socket);
    ck_assert_gbps(p->gbps, CRUX_TOPO_SMP_GBPS_DEFAULT);
    crux_topo_free(t);
}
END_TEST

START_TEST(test_g4dn_pcie_only)
{
    crux_topo_t *t = topo_load("aws-g4dn-metal-t4-pcie.xml");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 8);
    ck_assert_int_eq(crux_topo_nvlink_source(t), CRUX_TOPO_NVLINK_NONE);
    for (int g = 0; g < 8; g++)
        ck_assert_int_eq(numa_os(t, g), g < 4 ? 0 : 1);
    /* each T4 has its own root port: peers go through host memory, at the
     * GPUs' PCIe 3.0 x16 rate (hwloc's idle-lowered root port figures of
     * 2 GB/s are not the link's capability) */
    const crux_topo_path_t *p = topo_gpu_path(t, 0, 1);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_HOST);
    ck_assert_int_eq(p->cross_socket, 0);
    ck_assert_int_eq(p->hops, 4);
    ck_assert_gbps(p->gbps, 15.75);
    p = topo_gpu_path(t, 3, 4);
    ck_assert(p->cross_socket);
    ck_assert_int_eq(p->hops, 5);
    ck_assert_gbps(p->gbps, 15.75);
    ck_assert_int_eq(crux_topo_num_islands(t), 8);
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_NIC), 2);
    const crux_topo_device_t *efa = crux_topo_find(t, CRUX_TOPO_DEV_NIC, 0);
    ck_assert_str_eq(efa->rdmadev, "rdmap197s0");
    ck_assert_int_eq(crux_topo_device(t, efa->numa)->os_index, 1);
    ck_assert(crux_topo_path(t, topo_gpu_id(t, 0), efa->id)->cross_socket);
    ck_assert_int_eq(crux_topo_path(t, topo_gpu_id(t, 5), efa->id)->cross_socket, 0);
    crux_topo_free(t);

    /* a slow inter-socket link becomes the cross-socket bottleneck */
    t = topo_load_path(topo_data("aws-g4dn-metal-t4-pcie.xml"), 10, NULL);
    ck_assert_gbps(topo_gpu_path(t, 0, 4)->gbps, 10);
    ck_assert_gbps(topo_gpu_path(t, 0, 1)->gbps, 15.75);
    crux_topo_free(t);
}
END_TEST

START_TEST(test_cts1_pcie_switch)
{
    crux_topo_t *t = topo_load("cts1-p100-pcie.xml");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 2);
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_PACKAGE), 2);
    ck_assert_int_eq(numa_os(t, 0), 0);
    ck_assert_int_eq(numa_os(t, 1), 0);
    const crux_topo_path_t *p = topo_gpu_path(t, 0, 1);
    ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_PCIE_P2P);
    ck_assert_int_eq(p->hops, 2);
    ck_assert_gbps(p->gbps, 15.75);
    ck_assert_int_eq(crux_topo_device(t, crux_topo_link(t, p->links[0].link)->b)->type,
                     CRUX_TOPO_DEV_PCI_SWITCH);
    /* the ConnectX-5 sits on the GPUs' switch (GPUDirect RDMA below it) */
    const crux_topo_device_t *ib = crux_topo_find(t, CRUX_TOPO_DEV_NIC, 0);
    ck_assert_str_eq(ib->rdmadev, "mlx5_0");
    ck_assert_int_eq(crux_topo_path(t, topo_gpu_id(t, 0), ib->id)->kind, CRUX_TOPO_PATH_PCIE_P2P);
    const crux_topo_device_t *eth = crux_topo_find(t, CRUX_TOPO_DEV_NIC, 1);
    ck_assert_int_eq(crux_topo_path(t, topo_gpu_id(t, 0), eth->id)->kind, CRUX_TOPO_PATH_HOST);
    /* the second package has memory and CPUs but no device */
    const crux_topo_host_group_t *g = crux_topo_host_group(t, 1);
    ck_assert_int_eq(g->ngpus, 0);
    ck_assert_int_eq(g->nnics, 0);
    ck_assert_int_eq(g->nnuma, 1);
    ck_assert_str_eq(g->cpuset, "18-35,54-71");
    ck_assert_int_eq(crux_topo_host_group(t, 0)->ngpus, 2);
    /* a process bound inside one package belongs to its host group */
    ck_assert_int_eq(crux_topo_host_group_of_cpus(t, "20"), 1);
    ck_assert_int_eq(crux_topo_host_group_of_cpus(t, "18-20,54"), 1);
    ck_assert_int_eq(crux_topo_host_group_of_cpus(t, "0-3"), 0);
    ck_assert_int_eq(crux_topo_host_group_of_cpus(t, "17-18"), -1); /* spans both */
    ck_assert_int_eq(crux_topo_host_group_of_cpus(t, "not a list"), -1);
    ck_assert_int_eq(crux_topo_host_group_of_cpus(t, ""), -1);
    /* this process, bound to CPU 0, then to whatever it had: CPU 0 is in
     * package 0; the machine's CPUs in no package of this server's but 0 */
    cpu_set_t had, one;
    ck_assert_int_eq(sched_getaffinity(0, sizeof(had), &had), 0);
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
    ck_assert_int_eq(crux_topo_host_group_of_self(t), 0);
    ck_assert_int_eq(sched_setaffinity(0, sizeof(had), &had), 0);
    /* the CPUs it had in each package (0-17,36-53; 18-35,54-71), and past them */
    int in[3] = { 0, 0, 0 };
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &had)) {
            in[cpu >= 72 ? 2 : (cpu / 18) % 2]++;
        }
    }
    int want = in[2] != 0 ? -1 : in[1] == 0 ? 0 : in[0] == 0 ? 1 : -1;
    ck_assert_int_eq(crux_topo_host_group_of_self(t), want);
    crux_topo_free(t);
}
END_TEST

/* hwloc checks that a matrix row's length attribute is the length of its
 * text: recompute them after editing the values. */
static char *fix_value_lengths(const char *text)
{
    static const char tag[] = "<u64values length=\"";
    char *out = malloc(strlen(text) * 2 + 1), *o = out;
    const char *p = text, *q;
    ck_assert_ptr_nonnull(out);
    while ((q = strstr(p, tag))) {
        const char *content = strchr(q, '>') + 1, *end = strstr(content, "</u64values>");
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        o += sprintf(o, "%s%d\">", tag, (int)(end - content));
        memcpy(o, content, (size_t)(end - content));
        o += end - content;
        p = end;
    }
    strcpy(o, p);
    return out;
}

/* hwloc < 2.12 counts 50000 MB/s per NVLink 3.0 link: an A100 variant of
 * the cube-mesh (what such an hwloc writes for it) must come out as the
 * V100 one, and must be left alone when written by hwloc 2.12. */
START_TEST(test_nvlink_correction)
{
    char *orig = topo_slurp(topo_data("synthetic-dgx1-hybrid-cube-mesh.xml"), NULL);
    char *s1 = topo_replace(orig, "Tesla T4", "A100-SXM4-40GB");
    char *s2 = topo_replace(s1, " 50000", " 100000");
    char *s3 = topo_replace(s2, " 25000", " 50000");
    char *a100 = fix_value_lengths(s3);
    char path[512];
    ck_assert_ptr_null(strstr(a100, " 25000"));

    topo_write_temp(a100, strlen(a100), path, sizeof(path));
    crux_topo_t *t = topo_load_path(path, 0, NULL);
    ck_assert_int_eq(crux_topo_gpu(t, 0)->nvlink_gen, 3);
    ck_assert_int_eq(crux_topo_nvlink_corrected(t), 16);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 1), 50);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 2), 25);
    ck_assert_int_eq(crux_topo_link_between(t, topo_gpu_id(t, 0), topo_gpu_id(t, 1))->nvlinks, 2);
    crux_topo_free(t);
    unlink(path);

    char *fixed = topo_replace(a100, "name=\"hwlocVersion\" value=\"2.8.0\"",
                               "name=\"hwlocVersion\" value=\"2.12.0\"");
    ck_assert_ptr_nonnull(strstr(fixed, "2.12.0"));
    topo_write_temp(fixed, strlen(fixed), path, sizeof(path));
    t = topo_load_path(path, 0, NULL);
    ck_assert_int_eq(crux_topo_nvlink_corrected(t), 0);
    ck_assert_gbps(topo_nvlink_gbps(t, 0, 1), 100);
    ck_assert_int_eq(crux_topo_link_between(t, topo_gpu_id(t, 0), topo_gpu_id(t, 1))->nvlinks, 4);
    crux_topo_free(t);
    unlink(path);
    free(orig);
    free(s1);
    free(s2);
    free(s3);
    free(a100);
    free(fixed);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Properties every file's model must have */

static int shares_directed_link(const crux_topo_path_t *p, const crux_topo_path_t *q)
{
    for (int i = 0; i < p->nlinks; i++)
        for (int j = 0; j < q->nlinks; j++)
            if (p->links[i].link == q->links[j].link && p->links[i].reverse == q->links[j].reverse)
                return 1;
    return 0;
}

START_TEST(test_invariants)
{
    crux_topo_t *t = topo_load(all_files[_i]);
    int ngpus = crux_topo_count(t, CRUX_TOPO_DEV_GPU);
    ck_assert_int_eq(ngpus, all_gpus[_i]);

    for (int a = 0; a < ngpus; a++) {
        const crux_topo_device_t *g = crux_topo_gpu(t, a);
        ck_assert_int_eq(g->index, a);
        ck_assert_int_eq(g->type, CRUX_TOPO_DEV_GPU);
        ck_assert_int_eq(crux_topo_device(t, g->package)->type, CRUX_TOPO_DEV_PACKAGE);
        ck_assert_int_eq(crux_topo_device(t, g->numa)->package, g->package);
        if (a > 0) /* CUDA/NVML order: PCI bus order */
            ck_assert_int_lt(strcmp(crux_topo_gpu(t, a - 1)->pci, g->pci), 0);
        for (int n = 0; n < crux_topo_count(t, CRUX_TOPO_DEV_NUMA); n++) {
            const crux_topo_path_t *p =
                crux_topo_path(t, g->id, crux_topo_find(t, CRUX_TOPO_DEV_NUMA, n)->id);
            ck_assert_ptr_nonnull(p);
            ck_assert_int_eq(p->kind, CRUX_TOPO_PATH_HOST);
            ck_assert(p->gbps >= 1.0);
        }
        for (int b = 0; b < ngpus; b++) {
            if (a == b)
                continue;
            const crux_topo_path_t *best = topo_gpu_path(t, a, b);
            /* every pair has a path, NVLink or not, of a sensible bandwidth */
            ck_assert_msg(best->gbps >= 1.0 && best->gbps <= 1000.0, "%s: GPU %d -> %d: %.2f GB/s",
                          all_files[_i], a, b, best->gbps);
            ck_assert_int_ge(best->hops, 1);
            ck_assert_int_eq(best->src, g->id);
            const crux_topo_pathset_t *set = crux_topo_multipath(t, a, b);
            ck_assert_int_ge(set->npaths, 1);
            double sum = 0;
            for (int i = 0; i < set->npaths; i++) {
                sum += set->paths[i].gbps;
                for (int j = i + 1; j < set->npaths; j++)
                    ck_assert_msg(!shares_directed_link(&set->paths[i], &set->paths[j]),
                                  "%s: GPU %d -> %d: paths %d and %d share a directed link",
                                  all_files[_i], a, b, i, j);
            }
            ck_assert_double_eq_tol(set->gbps, sum, TOPO_EPS);
            ck_assert(set->gbps >= best->gbps - TOPO_EPS);
            ck_assert_double_eq_tol(set->gbps, crux_topo_multipath(t, b, a)->gbps, TOPO_EPS);
        }
    }

    /* islands: a partition of the GPUs into fully NVLink-connected sets */
    int seen = 0;
    for (int i = 0; i < crux_topo_num_islands(t); i++) {
        const crux_topo_island_t *isl = crux_topo_island(t, i);
        for (int x = 0; x < isl->ngpus; x++) {
            ck_assert_int_eq(crux_topo_island_of(t, isl->gpus[x]), i);
            seen++;
            for (int y = 0; y < isl->ngpus; y++)
                if (x != y)
                    ck_assert_int_le(topo_gpu_path(t, isl->gpus[x], isl->gpus[y])->kind,
                                     CRUX_TOPO_PATH_NVSWITCH);
        }
    }
    ck_assert_int_eq(seen, ngpus);

    /* host groups: one per package, every GPU in exactly one */
    ck_assert_int_eq(crux_topo_num_host_groups(t), crux_topo_count(t, CRUX_TOPO_DEV_PACKAGE));
    seen = 0;
    for (int i = 0; i < crux_topo_num_host_groups(t); i++) {
        const crux_topo_host_group_t *g = crux_topo_host_group(t, i);
        ck_assert_int_ge(g->nnuma, 1);
        ck_assert(g->cpuset[0] != '\0');
        for (int k = 0; k < g->ngpus; k++)
            ck_assert_int_eq(crux_topo_gpu(t, g->gpus[k])->package, g->package);
        seen += g->ngpus;
    }
    ck_assert_int_eq(seen, ngpus);

    char *json = crux_topo_to_json(t);
    ck_assert_ptr_nonnull(json);
    ck_assert_ptr_nonnull(strstr(json, "\"islands\""));
    free(json);
    crux_topo_free(t);
}
END_TEST

static Suite *topo_files_suite(void)
{
    Suite *s = suite_create("topo_files");
    TCase *tc = tcase_create("files");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_dgx1_cube_mesh);
    tcase_add_test(tc, test_dgx2_nvswitch);
    tcase_add_test(tc, test_minsky_nvlink_through_cpu);
    tcase_add_test(tc, test_ac922_pcie_and_nics);
    tcase_add_test(tc, test_synthetic_ac922_nvlink);
    tcase_add_test(tc, test_g4dn_pcie_only);
    tcase_add_test(tc, test_cts1_pcie_switch);
    tcase_add_test(tc, test_nvlink_correction);
    tcase_add_loop_test(tc, test_invariants, 0, NFILES);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(topo_files_suite)

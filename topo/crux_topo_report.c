/* crux-topo's text report: the device matrix (as nvidia-smi topo -m prints
 * it, with bandwidths), the NICs, the multipath sets, the islands and the
 * host-memory groups. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "topo/crux_topo_report.h"

/* 15.753846 -> "15.75", 50.0 -> "50" */
static const char *fmt_gbps(double v, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f", v);
    char *end = buf + strlen(buf) - 1;
    while (*end == '0')
        *end-- = '\0';
    if (*end == '.')
        *end = '\0';
    return buf;
}

/* The matrix's short name of a path: NV2, NVS, NVH3, PIX, PHB, SYS. */
static void path_code(const crux_topo_t *topo, const crux_topo_path_t *p, char *buf, size_t len)
{
    const crux_topo_link_t *l;
    switch (p->kind) {
    case CRUX_TOPO_PATH_NVLINK:
        l = crux_topo_link(topo, p->links[0].link);
        if (l->nvlinks)
            snprintf(buf, len, "NV%d", l->nvlinks);
        else
            snprintf(buf, len, "NV");
        break;
    case CRUX_TOPO_PATH_NVSWITCH: snprintf(buf, len, "NVS"); break;
    case CRUX_TOPO_PATH_NVLINK_MULTIHOP: snprintf(buf, len, "NVH%d", p->hops); break;
    case CRUX_TOPO_PATH_PCIE_P2P: snprintf(buf, len, "PIX"); break;
    default: snprintf(buf, len, "%s", p->cross_socket ? "SYS" : "PHB"); break;
    }
}

static void cell(const crux_topo_t *topo, const crux_topo_path_t *p, char *buf, size_t len)
{
    char code[16], num[32];
    if (!p) {
        snprintf(buf, len, "-");
        return;
    }
    path_code(topo, p, code, sizeof(code));
    snprintf(buf, len, "%s %s", code, fmt_gbps(p->gbps, num, sizeof(num)));
}

static const char *numa_cpus(const crux_topo_t *topo, const crux_topo_device_t *d)
{
    const crux_topo_device_t *n = crux_topo_device(topo, d->numa >= 0 ? d->numa : d->package);
    return n && n->cpuset[0] ? n->cpuset : "N/A";
}

static void print_matrix(const crux_topo_t *topo, FILE *out)
{
    int ngpus = crux_topo_count(topo, CRUX_TOPO_DEV_GPU),
        nnics = crux_topo_count(topo, CRUX_TOPO_DEV_NIC);
    char buf[64];
    int w = 6, wcpu = (int)strlen("CPU Affinity") + 2;

    for (int i = 0; i < ngpus; i++)
        for (int j = 0; j < ngpus + nnics; j++) {
            const crux_topo_device_t *dst =
                j < ngpus ? crux_topo_gpu(topo, j)
                          : crux_topo_find(topo, CRUX_TOPO_DEV_NIC, j - ngpus);
            cell(topo, crux_topo_path(topo, crux_topo_gpu(topo, i)->id, dst->id), buf, sizeof(buf));
            if ((int)strlen(buf) + 2 > w)
                w = (int)strlen(buf) + 2;
            if ((int)strlen(numa_cpus(topo, crux_topo_gpu(topo, i))) + 2 > wcpu)
                wcpu = (int)strlen(numa_cpus(topo, crux_topo_gpu(topo, i))) + 2;
        }

    fprintf(out, "%-6s", "");
    for (int j = 0; j < ngpus; j++) {
        snprintf(buf, sizeof(buf), "GPU%d", j);
        fprintf(out, "%-*s", w, buf);
    }
    for (int j = 0; j < nnics; j++) {
        snprintf(buf, sizeof(buf), "NIC%d", j);
        fprintf(out, "%-*s", w, buf);
    }
    fprintf(out, "%-*s%s\n", wcpu, "CPU Affinity", "NUMA");
    for (int i = 0; i < ngpus; i++) {
        const crux_topo_device_t *g = crux_topo_gpu(topo, i);
        snprintf(buf, sizeof(buf), "GPU%d", i);
        fprintf(out, "%-6s", buf);
        for (int j = 0; j < ngpus + nnics; j++) {
            const crux_topo_device_t *dst =
                j < ngpus ? crux_topo_gpu(topo, j)
                          : crux_topo_find(topo, CRUX_TOPO_DEV_NIC, j - ngpus);
            if (j == i)
                snprintf(buf, sizeof(buf), "X");
            else
                cell(topo, crux_topo_path(topo, g->id, dst->id), buf, sizeof(buf));
            fprintf(out, "%-*s", w, buf);
        }
        const crux_topo_device_t *numa = crux_topo_device(topo, g->numa);
        if (numa)
            snprintf(buf, sizeof(buf), "%d", numa->os_index);
        else
            snprintf(buf, sizeof(buf), "N/A");
        fprintf(out, "%-*s%s\n", wcpu, numa_cpus(topo, g), buf);
    }
    fputs("\nLegend:\n"
          "  X     self\n"
          "  NV#   direct NVLink, # bonded links\n"
          "  NVS   NVLink through the NVSwitch fabric\n"
          "  NVH#  NVLink relayed through peer GPUs, # hops\n"
          "  PIX   PCIe peer-to-peer below a common PCIe switch\n"
          "  PHB   through host memory on the same socket\n"
          "  SYS   through host memory across the inter-socket link\n"
          "  The number is the path's bottleneck bandwidth, GB/s per direction.\n",
          out);
}

static void print_nics(const crux_topo_t *topo, FILE *out)
{
    int nnics = crux_topo_count(topo, CRUX_TOPO_DEV_NIC);
    char num[32];
    if (!nnics)
        return;
    fputs("\nNICs:\n", out);
    for (int i = 0; i < nnics; i++) {
        const crux_topo_device_t *n = crux_topo_find(topo, CRUX_TOPO_DEV_NIC, i);
        const crux_topo_device_t *numa = crux_topo_device(topo, n->numa);
        const crux_topo_link_t *up = crux_topo_link(topo, n->uplink);
        fprintf(out, "  NIC%d  %-12s %s", i,
                n->rdmadev[0]  ? n->rdmadev
                : n->netdev[0] ? n->netdev
                               : "-",
                n->pci);
        if (numa)
            fprintf(out, "  NUMA %d", numa->os_index);
        if (up && up->gbps > 0)
            fprintf(out, "  PCIe %s GB/s", fmt_gbps(up->gbps, num, sizeof(num)));
        if (n->port_gbit > 0)
            fprintf(out, "  port %s Gbit/s", fmt_gbps(n->port_gbit, num, sizeof(num)));
        if (n->model[0])
            fprintf(out, "  %s", n->model);
        fputc('\n', out);
    }
}

static void print_set(const crux_topo_t *topo, const crux_topo_pathset_t *set, FILE *out)
{
    char code[16], num[32];
    fprintf(out, "%8s GB/s ", fmt_gbps(set->gbps, num, sizeof(num)));
    for (int k = 0; k < set->npaths; k++) {
        const crux_topo_path_t *p = &set->paths[k];
        path_code(topo, p, code, sizeof(code));
        fprintf(out, "%s%s %s", k ? " + " : " ", code, fmt_gbps(p->gbps, num, sizeof(num)));
        for (int r = 0; r < p->nrelays; r++)
            fprintf(out, "%s%s", r ? "," : " via ", crux_topo_device(topo, p->relays[r])->name);
        if (p->kind == CRUX_TOPO_PATH_HOST && p->staging_numa >= 0)
            fprintf(out, " via %s", crux_topo_device(topo, p->staging_numa)->name);
    }
    fputc('\n', out);
}

static void print_multipath(const crux_topo_t *topo, FILE *out)
{
    int ngpus = crux_topo_count(topo, CRUX_TOPO_DEV_GPU);
    char pair[32];
    if (ngpus < 2)
        return;
    if (!crux_topo_has_multipath(topo)) {
        fprintf(out, "\nMultipath sets: not listed for %d GPUs (crux-topo --paths lists them)\n",
                ngpus);
        return;
    }
    fputs("\nMultipath sets (disjoint paths used at once, aggregate first):\n", out);
    for (int i = 0; i < ngpus; i++)
        for (int j = i + 1; j < ngpus; j++) {
            const crux_topo_pathset_t *fwd = crux_topo_multipath(topo, i, j);
            const crux_topo_pathset_t *rev = crux_topo_multipath(topo, j, i);
            int same = fwd->gbps == rev->gbps && fwd->npaths == rev->npaths;
            snprintf(pair, sizeof(pair), "GPU%d%sGPU%d", i, same ? "<->" : "->", j);
            fprintf(out, "  %-12s", pair);
            print_set(topo, fwd, out);
            if (!same) {
                snprintf(pair, sizeof(pair), "GPU%d->GPU%d", j, i);
                fprintf(out, "  %-12s", pair);
                print_set(topo, rev, out);
            }
        }
}

static void print_groups(const crux_topo_t *topo, FILE *out)
{
    char num[32];
    if (crux_topo_num_islands(topo)) {
        fputs("\nNVLink islands (fully connected GPU sets):", out);
        for (int i = 0; i < crux_topo_num_islands(topo); i++) {
            const crux_topo_island_t *isl = crux_topo_island(topo, i);
            fputs(" [", out);
            for (int g = 0; g < isl->ngpus; g++)
                fprintf(out, "%s%d", g ? " " : "", isl->gpus[g]);
            fputc(']', out);
        }
        fputc('\n', out);
    }
    fputs("\nHost memory groups:\n", out);
    for (int i = 0; i < crux_topo_num_host_groups(topo); i++) {
        const crux_topo_host_group_t *g = crux_topo_host_group(topo, i);
        fprintf(out, "  %s: NUMA", crux_topo_device(topo, g->package)->name);
        for (int k = 0; k < g->nnuma; k++)
            fprintf(out, " %d", crux_topo_device(topo, g->numa[k])->os_index);
        fprintf(out, "%s; CPUs %s; GPUs", g->nnuma ? "" : " -", g->cpuset[0] ? g->cpuset : "-");
        for (int k = 0; k < g->ngpus; k++)
            fprintf(out, " %d", g->gpus[k]);
        fprintf(out, "%s; NICs", g->ngpus ? "" : " -");
        for (int k = 0; k < g->nnics; k++)
            fprintf(out, " %s", crux_topo_device(topo, g->nics[k])->name);
        fprintf(out, "%s\n", g->nnics ? "" : " -");
    }
    fprintf(out, "\nInter-socket link: %s GB/s per direction (%s to change it)\n",
            fmt_gbps(crux_topo_smp_gbps(topo), num, sizeof(num)), CRUX_TOPO_SMP_GBPS_ENV);
}

void crux_topo_print_report(const crux_topo_t *topo, FILE *out)
{
    const char *path = crux_topo_xml_path(topo);
    fprintf(out, "%s: %d GPUs, %d NVSwitches, %d NICs, %d packages, %d NUMA nodes; NVLink from %s",
            path ? path : "live machine", crux_topo_count(topo, CRUX_TOPO_DEV_GPU),
            crux_topo_count(topo, CRUX_TOPO_DEV_NVSWITCH), crux_topo_count(topo, CRUX_TOPO_DEV_NIC),
            crux_topo_count(topo, CRUX_TOPO_DEV_PACKAGE), crux_topo_count(topo, CRUX_TOPO_DEV_NUMA),
            crux_topo_nvlink_source_name(crux_topo_nvlink_source(topo)));
    if (crux_topo_nvlink_corrected(topo))
        fprintf(out, " (%d hwloc figures halved)", crux_topo_nvlink_corrected(topo));
    fputs("\n\n", out);
    if (crux_topo_count(topo, CRUX_TOPO_DEV_GPU)) {
        print_matrix(topo, out);
        print_nics(topo, out);
        print_multipath(topo, out);
    } else {
        fputs("No GPU.\n", out);
        print_nics(topo, out);
    }
    print_groups(topo, out);
}

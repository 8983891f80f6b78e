/* crux-topo's text report: the connection matrix of GPUs and NICs as
 * nvidia-smi topo -m prints it, with crux's best-path bandwidths, relays
 * and each device's CPU and NUMA affinity; the NIC legend; the inter-socket
 * link on machines with several sockets; on request the multipath sets,
 * the NVLink islands and the host-memory groups. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "topo/crux_topo_report.h"

#define CELL_LEN 64

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

/* Whether a path's figure is the assumed inter-socket bandwidth. */
static int rests_on_assumed_smp(const crux_topo_t *topo, const crux_topo_path_t *p)
{
    return p->kind == CRUX_TOPO_PATH_HOST && p->cross_socket && crux_topo_smp_assumed(topo) &&
           p->gbps >= crux_topo_smp_gbps(topo) - 1e-9;
}

struct marks {
    int relay, assumed; /* a cell shows a relay, an assumed figure */
};

/* The matrix's rows and columns: the GPUs, then the NICs. */
static const crux_topo_device_t *member(const crux_topo_t *topo, int i)
{
    int ngpus = crux_topo_count(topo, CRUX_TOPO_DEV_GPU);
    return i < ngpus ? crux_topo_gpu(topo, i) : crux_topo_find(topo, CRUX_TOPO_DEV_NIC, i - ngpus);
}

static void member_name(const crux_topo_device_t *d, char *buf, size_t len)
{
    snprintf(buf, len, "%s%d", d->type == CRUX_TOPO_DEV_GPU ? "GPU" : "NIC", d->index);
}

/* "PIX 15.75", "NV2 50", "SYS 50[4]" (relayed through GPU4), "SYS 20*"
 * (the assumed inter-socket bandwidth), "NODE" (NIC to NIC: no path). */
static void cell(const crux_topo_t *topo, const crux_topo_device_t *a, const crux_topo_device_t *b,
                 struct marks *m, char *buf, size_t len)
{
    int nv;
    crux_topo_conn_t conn = crux_topo_connection(topo, a->id, b->id, &nv);
    char num[32];
    size_t n;

    if (conn == CRUX_TOPO_CONN_NVLINK && nv > 0)
        n = (size_t)snprintf(buf, len, "NV%d", nv);
    else
        n = (size_t)snprintf(buf, len, "%s", crux_topo_conn_name(conn));
    if (conn == CRUX_TOPO_CONN_SELF || n >= len)
        return;
    const crux_topo_path_t *p = a->type == CRUX_TOPO_DEV_GPU ? crux_topo_path(topo, a->id, b->id)
                                                             : crux_topo_path(topo, b->id, a->id);
    if (!p || p->gbps <= 0)
        return;
    n += (size_t)snprintf(buf + n, len - n, " %s", fmt_gbps(p->gbps, num, sizeof(num)));
    for (int r = 0; r < p->nrelays && n < len; r++) {
        n += (size_t)snprintf(buf + n, len - n, "%c%d", r ? ',' : '[',
                              crux_topo_device(topo, p->relays[r])->index);
        m->relay = 1;
    }
    if (p->nrelays && n < len)
        n += (size_t)snprintf(buf + n, len - n, "]");
    if (rests_on_assumed_smp(topo, p) && n < len) {
        snprintf(buf + n, len - n, "*");
        m->assumed = 1;
    }
}

/* A device's CPU affinity: the CPUs of its NUMA node, else of its package. */
static const char *cpu_affinity(const crux_topo_t *topo, const crux_topo_device_t *d)
{
    const crux_topo_device_t *n = crux_topo_device(topo, d->numa >= 0 ? d->numa : d->package);
    return n && n->cpuset[0] ? n->cpuset : "N/A";
}

static void numa_affinity(const crux_topo_t *topo, const crux_topo_device_t *d, char *buf,
                          size_t len)
{
    const crux_topo_device_t *numa = crux_topo_device(topo, d->numa);
    if (numa)
        snprintf(buf, len, "%d", numa->os_index);
    else
        snprintf(buf, len, "N/A");
}

static void print_matrix(const crux_topo_t *topo, FILE *out)
{
    int n = crux_topo_count(topo, CRUX_TOPO_DEV_GPU) + crux_topo_count(topo, CRUX_TOPO_DEV_NIC);
    const char *cpu_head = "CPU Affinity";
    int w = 6, wcpu = (int)strlen(cpu_head) + 2;
    struct marks m = { 0, 0 };
    char buf[CELL_LEN];

    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            cell(topo, member(topo, i), member(topo, j), &m, buf, sizeof(buf));
            if ((int)strlen(buf) + 2 > w)
                w = (int)strlen(buf) + 2;
        }
        if ((int)strlen(cpu_affinity(topo, member(topo, i))) + 2 > wcpu)
            wcpu = (int)strlen(cpu_affinity(topo, member(topo, i))) + 2;
    }

    fprintf(out, "%-7s", "");
    for (int j = 0; j < n; j++) {
        member_name(member(topo, j), buf, sizeof(buf));
        fprintf(out, "%-*s", w, buf);
    }
    fprintf(out, "%-*s%s\n", wcpu, cpu_head, "NUMA Affinity");
    for (int i = 0; i < n; i++) {
        const crux_topo_device_t *a = member(topo, i);
        member_name(a, buf, sizeof(buf));
        fprintf(out, "%-7s", buf);
        for (int j = 0; j < n; j++) {
            cell(topo, a, member(topo, j), &m, buf, sizeof(buf));
            fprintf(out, "%-*s", w, buf);
        }
        numa_affinity(topo, a, buf, sizeof(buf));
        fprintf(out, "%-*s%s\n", wcpu, cpu_affinity(topo, a), buf);
    }

    fputs("\nLegend:\n\n"
          "  X    = self\n"
          "  SYS  = through PCIe and the inter-socket (SMP) link between NUMA nodes\n"
          "  NODE = through PCIe and between the PCIe host bridges of one NUMA node\n"
          "  PHB  = through PCIe and a PCIe host bridge (typically the CPU)\n"
          "  PXB  = through several PCIe switches, not through a host bridge\n"
          "  PIX  = through at most one PCIe switch\n"
          "  NV#  = over a bonded set of # NVLinks (direct, or both GPUs on the NVSwitches)\n"
          "\n"
          "  The number after the code is the bandwidth of crux's best path between the\n"
          "  two, in GB/s per direction: its narrowest link.\n",
          out);
    if (m.relay)
        fputs("  [g] or [g,h]: that path relays over NVLink through GPU g (then h); the code\n"
              "  still names the direct connection.\n",
              out);
    if (m.assumed)
        fputs("  *: that path's figure is the inter-socket bandwidth, which is assumed.\n", out);
}

static void print_nic_legend(const crux_topo_t *topo, FILE *out)
{
    int nnics = crux_topo_count(topo, CRUX_TOPO_DEV_NIC);
    char num[32], numa[16];
    if (!nnics)
        return;
    fputs("\nNIC Legend:\n\n", out);
    for (int i = 0; i < nnics; i++) {
        const crux_topo_device_t *d = crux_topo_find(topo, CRUX_TOPO_DEV_NIC, i);
        const crux_topo_link_t *up = crux_topo_link(topo, d->uplink);
        fprintf(out, "  NIC%d: %s  (", i,
                d->rdmadev[0]  ? d->rdmadev
                : d->netdev[0] ? d->netdev
                               : d->pci);
        if (d->rdmadev[0] && d->netdev[0])
            fprintf(out, "%s, ", d->netdev);
        numa_affinity(topo, d, numa, sizeof(numa));
        fprintf(out, "%s, NUMA %s", d->pci, numa);
        if (up && up->gbps > 0)
            fprintf(out, ", PCIe %s GB/s", fmt_gbps(up->gbps, num, sizeof(num)));
        if (d->port_gbit > 0)
            fprintf(out, ", port %s Gbit/s", fmt_gbps(d->port_gbit, num, sizeof(num)));
        if (d->model[0])
            fprintf(out, ", %s", d->model);
        fputs(")\n", out);
    }
}

static void print_set(const crux_topo_t *topo, const crux_topo_pathset_t *set, FILE *out)
{
    char num[32];
    fprintf(out, "%8s GB/s ", fmt_gbps(set->gbps, num, sizeof(num)));
    for (int k = 0; k < set->npaths; k++) {
        const crux_topo_path_t *p = &set->paths[k];
        fprintf(out, "%s%s %s%s", k ? " + " : " ", crux_topo_path_kind_name(p->kind),
                fmt_gbps(p->gbps, num, sizeof(num)), rests_on_assumed_smp(topo, p) ? "*" : "");
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
    if (ngpus < 2 || !crux_topo_has_multipath(topo))
        return;
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

static int has_nvlink(const crux_topo_t *topo)
{
    for (int l = 0; l < crux_topo_num_links(topo); l++)
        if (crux_topo_link(topo, l)->type == CRUX_TOPO_LINK_NVLINK)
            return 1;
    return 0;
}

static void print_islands(const crux_topo_t *topo, FILE *out)
{
    char num[32];
    if (!has_nvlink(topo)) {
        fputs("\nNVLink islands: none, no GPU has an NVLink\n", out);
        return;
    }
    fputs("\nNVLink islands (fully connected GPU sets, slowest pair in GB/s):", out);
    for (int i = 0; i < crux_topo_num_islands(topo); i++) {
        const crux_topo_island_t *isl = crux_topo_island(topo, i);
        fputs(" [", out);
        for (int g = 0; g < isl->ngpus; g++)
            fprintf(out, "%s%d", g ? " " : "", isl->gpus[g]);
        fputc(']', out);
        if (isl->ngpus > 1)
            fprintf(out, " %s", fmt_gbps(isl->min_gbps, num, sizeof(num)));
    }
    fputc('\n', out);
}

static void print_groups(const crux_topo_t *topo, FILE *out)
{
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
}

/* Only where there is such a link: hwloc does not report it, so its figure
 * is an assumption unless the user gave it. */
static void print_smp(const crux_topo_t *topo, FILE *out)
{
    char num[32];
    if (crux_topo_count(topo, CRUX_TOPO_DEV_PACKAGE) < 2)
        return;
    fmt_gbps(crux_topo_smp_gbps(topo), num, sizeof(num));
    if (crux_topo_smp_assumed(topo))
        fprintf(out,
                "\nInter-socket link: %s GB/s per direction, assumed (hwloc does not report it;"
                " --smp-gbps or %s sets it)\n",
                num, CRUX_TOPO_SMP_GBPS_ENV);
    else
        fprintf(out, "\nInter-socket link: %s GB/s per direction, as given\n", num);
}

void crux_topo_print_report(const crux_topo_t *topo, const crux_topo_report_opts_t *opts, FILE *out)
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
    if (crux_topo_count(topo, CRUX_TOPO_DEV_GPU) + crux_topo_count(topo, CRUX_TOPO_DEV_NIC)) {
        print_matrix(topo, out);
        print_nic_legend(topo, out);
    } else {
        fputs("No GPU or NIC.\n", out);
    }
    print_smp(topo, out);
    if (opts->paths)
        print_multipath(topo, out);
    if (opts->islands)
        print_islands(topo, out);
    if (opts->groups)
        print_groups(topo, out);
}

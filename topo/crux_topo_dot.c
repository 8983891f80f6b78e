/* A Graphviz picture of the model: one cluster per package holding its NUMA
 * nodes and PCIe tree, NVLink edges in green (thicker for bonded links),
 * PCIe in grey, the inter-socket link dashed; edge labels in GB/s.
 *
 * The PCIe trees are laid out left to right, so that their many leaves
 * (GPUs, NICs) stack up instead of making one row thousands of points wide,
 * and the NVSwitches are drawn as one fabric node with one edge per GPU (the
 * model takes them as one non-blocking fabric anyway): a DGX-2's 16 GPUs x
 * 6 switch links would otherwise cross the whole picture. */
#include "config.h"

#include <stdio.h>

#include "topo/crux_topo_internal.h"

/* Writes s as the inside of a double-quoted dot string. */
static void put_escaped(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', out);
        fputc(*s, out);
    }
}

static void put_node(FILE *out, const struct crux_topo *t, const crux_topo_device_t *d)
{
    if (d->type == CRUX_TOPO_DEV_NVSWITCH) /* drawn as the fabric */
        return;
    static const char *const shape[] = {
        [CRUX_TOPO_DEV_PACKAGE] = "box3d",   [CRUX_TOPO_DEV_NUMA] = "cylinder",
        [CRUX_TOPO_DEV_HOST_BRIDGE] = "box", [CRUX_TOPO_DEV_PCI_SWITCH] = "box",
        [CRUX_TOPO_DEV_GPU] = "box",         [CRUX_TOPO_DEV_NVSWITCH] = "diamond",
        [CRUX_TOPO_DEV_NIC] = "ellipse",
    };
    static const char *const fill[] = {
        [CRUX_TOPO_DEV_PACKAGE] = "lightblue",  [CRUX_TOPO_DEV_NUMA] = "lightyellow",
        [CRUX_TOPO_DEV_HOST_BRIDGE] = "gray90", [CRUX_TOPO_DEV_PCI_SWITCH] = "gray90",
        [CRUX_TOPO_DEV_GPU] = "palegreen",      [CRUX_TOPO_DEV_NVSWITCH] = "darkolivegreen3",
        [CRUX_TOPO_DEV_NIC] = "lightpink",
    };
    fprintf(out, "    %s [shape=%s, style=filled, fillcolor=%s, label=\"", d->name, shape[d->type],
            fill[d->type]);
    put_escaped(out, d->name);
    if (d->type == CRUX_TOPO_DEV_NIC && (d->rdmadev[0] || d->netdev[0])) {
        fputs("\\n", out);
        put_escaped(out, d->rdmadev[0] ? d->rdmadev : d->netdev);
    }
    if (d->model[0] && d->type != CRUX_TOPO_DEV_PACKAGE) {
        fputs("\\n", out);
        put_escaped(out, d->model);
    }
    if (d->pci[0])
        fprintf(out, "\\n%s", d->pci);
    if (d->type == CRUX_TOPO_DEV_PACKAGE && d->cpuset[0]) {
        fputs("\\nCPUs ", out);
        put_escaped(out, d->cpuset);
    }
    fputs("\"];\n", out);
    if (d->type == CRUX_TOPO_DEV_NUMA && d->package >= 0) /* memory inside the package */
        fprintf(out, "    %s -- %s [style=dotted];\n", t->devs[d->package].name, d->name);
}

static int is_nvswitch(const struct crux_topo *t, int dev)
{
    return t->devs[dev].type == CRUX_TOPO_DEV_NVSWITCH;
}

static void put_link(FILE *out, const struct crux_topo *t, const crux_topo_link_t *l)
{
    if (is_nvswitch(t, l->a) || is_nvswitch(t, l->b)) /* see put_fabric */
        return;
    fprintf(out, "  %s -- %s [", t->devs[l->a].name, t->devs[l->b].name);
    switch (l->type) {
    case CRUX_TOPO_LINK_NVLINK:
        fprintf(out, "color=\"#76b900\", penwidth=%d, label=\"NV%d %.4g\"",
                1 + (l->nvlinks > 1 ? l->nvlinks : 1), l->nvlinks, l->gbps);
        break;
    case CRUX_TOPO_LINK_PCIE:
        if (l->gbps > 0)
            fprintf(out, "color=gray40, label=\"%.4g\"", l->gbps);
        else
            fputs("color=gray40, label=\"?\"", out); /* hwloc gave no speed */
        break;
    case CRUX_TOPO_LINK_SMP:
        fprintf(out, "color=blue, style=dashed, label=\"SMP %.4g\"", l->gbps);
        break;
    }
    fputs("];\n", out);
}

/* The NVSwitches as one node, and each GPU's links to them as one edge. */
static void put_fabric(FILE *out, const struct crux_topo *t)
{
    int nsw = t->ntype[CRUX_TOPO_DEV_NVSWITCH];
    if (!nsw)
        return;
    fprintf(out,
            "  nvswitch_fabric [shape=hexagon, style=filled, fillcolor=darkolivegreen3, "
            "label=\"NVSwitch fabric\\n%d NVSwitch%s\"];\n",
            nsw, nsw > 1 ? "es" : "");
    for (int i = 0; i < t->ntype[CRUX_TOPO_DEV_GPU]; i++) {
        int gpu = t->type_ids[CRUX_TOPO_DEV_GPU][i], nvlinks = 0, known = 1;
        double gbps = 0;
        for (int l = 0; l < t->nlinks; l++) {
            const crux_topo_link_t *k = &t->links[l];
            if (k->type != CRUX_TOPO_LINK_NVLINK || (k->a != gpu && k->b != gpu) ||
                !is_nvswitch(t, k->a == gpu ? k->b : k->a))
                continue;
            gbps += k->gbps;
            nvlinks += k->nvlinks;
            known = known && k->nvlinks > 0;
        }
        if (gbps <= 0)
            continue;
        fprintf(out, "  %s -- nvswitch_fabric [color=\"#76b900\", penwidth=3, label=\"",
                t->devs[gpu].name);
        if (known)
            fprintf(out, "NV%d ", nvlinks);
        fprintf(out, "%.4g\"];\n", gbps);
    }
}

crux_status_t crux_topo_write_dot(const crux_topo_t *t, FILE *out)
{
    fputs("graph crux_topo {\n", out);
    fputs("  graph [fontname=Helvetica, label=\"", out);
    put_escaped(out, t->xml_path ? t->xml_path : "live machine");
    fputs(" (bandwidths in GB/s per direction)\", rankdir=LR, ranksep=0.4, nodesep=0.15];\n", out);
    fputs("  node [fontname=Helvetica, fontsize=10];\n  edge [fontname=Helvetica, fontsize=9];\n",
          out);

    for (int p = 0; p < t->ntype[CRUX_TOPO_DEV_PACKAGE]; p++) {
        int pkg = t->type_ids[CRUX_TOPO_DEV_PACKAGE][p];
        fprintf(out, "  subgraph cluster_%s {\n    label=\"%s\";\n", t->devs[pkg].name,
                t->devs[pkg].name);
        for (int id = 0; id < t->ndevs; id++)
            if (t->devs[id].package == pkg)
                put_node(out, t, &t->devs[id]);
        fputs("  }\n", out);
    }
    for (int id = 0; id < t->ndevs; id++) /* e.g. NVSwitches only NVML knows of */
        if (t->devs[id].package < 0)
            put_node(out, t, &t->devs[id]);
    for (int l = 0; l < t->nlinks; l++)
        put_link(out, t, &t->links[l]);
    put_fabric(out, t);
    fputs("}\n", out);
    return fflush(out) || ferror(out) ? CRUX_ERR_IO : CRUX_OK;
}

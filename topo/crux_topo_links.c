/* The links step: PCIe links from the PCIe tree, inter-socket links between
 * packages, NVLink links from the NVLink reports. */
#include "config.h"

#include <stdlib.h>

#include "topo/crux_topo_internal.h"

/* A PCIe link's bandwidth.  sysfs gives the capability on the live machine.
 * Otherwise hwloc's speeds are current speeds, lowered when a device idles
 * (while hwloc's NVML backend reports a GPU's maximum), so the larger of the
 * two ends is the better estimate.  0 when neither end has a speed. */
static double pcie_link_gbps(const struct crux_topo_pcie_raw *raw)
{
    if (raw->cap_gbps > 0)
        return raw->cap_gbps;
    return raw->own_gbps > raw->port_gbps ? raw->own_gbps : raw->port_gbps;
}

static crux_status_t add_pcie_links(struct crux_topo *t)
{
    /* devices and switches to the switch, host bridge or package above */
    for (int id = 0; id < t->ndevs; id++) {
        crux_topo_device_t *d = &t->devs[id];
        if (d->parent < 0 || d->type == CRUX_TOPO_DEV_HOST_BRIDGE)
            continue;
        d->uplink = crux_topo_add_link(t, id, d->parent, CRUX_TOPO_LINK_PCIE,
                                       pcie_link_gbps(&t->pcie_raw[id]), 0);
        if (d->uplink < 0)
            return CRUX_ERR_NO_MEMORY;
    }
    /* A host bridge is inside its package: hwloc gives no figure for it, so
     * it is taken to carry all its root ports at full speed at once. */
    for (int id = 0; id < t->ndevs; id++) {
        crux_topo_device_t *d = &t->devs[id];
        if (d->type != CRUX_TOPO_DEV_HOST_BRIDGE || d->parent < 0)
            continue;
        double sum = 0;
        for (int l = 0; l < t->nlinks; l++)
            if (t->links[l].type == CRUX_TOPO_LINK_PCIE && t->links[l].b == id)
                sum += t->links[l].gbps;
        d->uplink = crux_topo_add_link(t, id, d->parent, CRUX_TOPO_LINK_PCIE, sum, 0);
        if (d->uplink < 0)
            return CRUX_ERR_NO_MEMORY;
    }
    return CRUX_OK;
}

/* Every two packages are taken to be directly linked (true of 2-socket
 * machines; 4- and 8-socket ones differ by vendor and are not modelled). */
static crux_status_t add_smp_links(struct crux_topo *t)
{
    int n = t->ntype[CRUX_TOPO_DEV_PACKAGE];
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (crux_topo_add_link(t, t->type_ids[CRUX_TOPO_DEV_PACKAGE][i],
                                   t->type_ids[CRUX_TOPO_DEV_PACKAGE][j], CRUX_TOPO_LINK_SMP,
                                   t->smp_gbps, 0) < 0)
                return CRUX_ERR_NO_MEMORY;
    return CRUX_OK;
}

/* One link per connected pair, adding up the reports (NVML reports each
 * physical link on its own; a link count is known only if every report of
 * the pair knows it). */
static crux_status_t add_nvlink_links(struct crux_topo *t)
{
    for (int r = 0; r < t->nreports; r++) {
        const struct crux_topo_nvlink_report *rep = &t->reports[r];
        int merged = 0;
        for (int l = 0; l < t->nlinks && !merged; l++) {
            crux_topo_link_t *link = &t->links[l];
            if (link->type != CRUX_TOPO_LINK_NVLINK || !((link->a == rep->a && link->b == rep->b) ||
                                                         (link->a == rep->b && link->b == rep->a)))
                continue;
            link->gbps += rep->gbps;
            link->nvlinks = link->nvlinks && rep->nvlinks ? link->nvlinks + rep->nvlinks : 0;
            merged = 1;
        }
        if (!merged && crux_topo_add_link(t, rep->a, rep->b, CRUX_TOPO_LINK_NVLINK, rep->gbps,
                                          rep->nvlinks) < 0)
            return CRUX_ERR_NO_MEMORY;
    }
    return CRUX_OK;
}

crux_status_t crux_topo_build_links(struct crux_topo *t)
{
    crux_status_t st = add_pcie_links(t);
    if (st == CRUX_OK)
        st = add_smp_links(t);
    if (st == CRUX_OK)
        st = add_nvlink_links(t);
    return st;
}

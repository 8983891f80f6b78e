/* The links step: PCIe links from the PCIe tree, inter-socket links between
 * packages, NVLink links from the NVLink reports. */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "topo/crux_topo_internal.h"

/* Whether a speed is that of a 128b/130b-coded link (PCIe 3.0 and later:
 * 0.98 GB/s per 8 GT/s lane), not a multiple of 8b/10b-coded PCIe 1.x and
 * 2.x's 0.25 GB/s. */
static int coded_128b130b(double gbps)
{
    double quarters = gbps / 0.25;
    return gbps > 0 && fabs(quarters - round(quarters)) > 1e-3;
}

/* A PCIe link's bandwidth.  sysfs gives the capability on the live machine.
 * Otherwise hwloc gives the port's current speed, and for a GPU its
 * maximum (hwloc's NVML backend), for other devices their current speed.
 * A link that idles drops to PCIe 1.x or 2.x rates: the port's figure is
 * then not the link's, and the larger end is the better estimate (a T4 at
 * 2 GB/s under its root port is a 15.75 GB/s link resting).  A port at a
 * PCIe 3.0 or later rate is not resting: it is the link's true rate, which
 * the narrower end sets (an AC922 V100 is 15.75 GB/s capable, behind a
 * 1.97 GB/s switch port, gen 3 x2), so the smaller end wins.  0 when neither
 * end has a speed. */
static double pcie_link_gbps(const struct crux_topo_pcie_raw *raw)
{
    double own = raw->own_gbps, port = raw->port_gbps;
    if (raw->cap_gbps > 0)
        return raw->cap_gbps;
    if (own > 0 && port > 0 && coded_128b130b(port))
        return own < port ? own : port;
    return own > port ? own : port;
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

/* Where NVLink is known (hwloc's matrix, NVML), a GPU with no NVLink has
 * no NVLink generation, whatever its model could have. */
static void clear_unlinked_nvlink_gen(struct crux_topo *t)
{
    if (t->nvlink_source == CRUX_TOPO_NVLINK_NONE)
        return;
    for (int i = 0; i < t->ntype[CRUX_TOPO_DEV_GPU]; i++) {
        int gpu = t->type_ids[CRUX_TOPO_DEV_GPU][i], linked = 0;
        for (int l = 0; l < t->nlinks && !linked; l++)
            linked = t->links[l].type == CRUX_TOPO_LINK_NVLINK &&
                     (t->links[l].a == gpu || t->links[l].b == gpu);
        if (!linked)
            t->devs[gpu].nvlink_gen = 0;
    }
}

crux_status_t crux_topo_build_links(struct crux_topo *t)
{
    crux_status_t st = add_pcie_links(t);
    if (st == CRUX_OK)
        st = add_smp_links(t);
    if (st == CRUX_OK)
        st = add_nvlink_links(t);
    if (st == CRUX_OK)
        clear_unlinked_nvlink_gen(t);
    return st;
}

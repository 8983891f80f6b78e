/* What sysfs adds on the live machine: the PCIe generation and width of each
 * link, and the port rate of each NIC.
 *
 * hwloc reports a link's *current* speed, which drops when an idle device
 * saves power; the link's capability is the lower of its two ends' maximum
 * speed and width (max_link_speed, max_link_width), which is what a busy
 * transfer gets. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

/* The first line of a sysfs file; 0 if unreadable. */
static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    return ok;
}

/* "8.0 GT/s PCIe" or "8 GT/s" -> 3 */
static int pcie_gen_of_speed(const char *s)
{
    static const double gtps[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
    double v = strtod(s, NULL);
    for (int g = 0; g < 6; g++)
        if (v > gtps[g] - 0.1 && v < gtps[g] + 0.1)
            return g + 1;
    return 0;
}

/* Maximum generation and width of a PCI function; 0 if unknown. */
static void max_link(const char *root, const char *pci, int *gen, int *width)
{
    char path[512], buf[64];
    *gen = *width = 0;
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/max_link_speed", root, pci);
    if (read_line(path, buf, sizeof(buf)))
        *gen = pcie_gen_of_speed(buf);
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/max_link_width", root, pci);
    if (read_line(path, buf, sizeof(buf)))
        *width = atoi(buf);
}

static void pcie_capability(struct crux_topo *t, const char *root, int id)
{
    crux_topo_device_t *d = &t->devs[id];
    struct crux_topo_pcie_raw *raw = &t->pcie_raw[id];
    int gen, width, pgen, pwidth;

    max_link(root, d->pci, &gen, &width);
    if (!gen || !width)
        return;
    if (raw->port_pci[0]) {
        max_link(root, raw->port_pci, &pgen, &pwidth);
        if (pgen && pgen < gen)
            gen = pgen;
        if (pwidth && pwidth < width)
            width = pwidth;
    }
    d->pcie_gen = gen;
    d->pcie_width = width;
    raw->cap_gbps = crux_topo_pcie_gbps(gen, width);
}

/* InfiniBand "100 Gb/sec (4X EDR)", else the network interface's Mbit/s. */
static double port_rate(const char *root, const crux_topo_device_t *d)
{
    char path[512], buf[64];
    if (d->rdmadev[0]) {
        snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/1/rate", root, d->rdmadev);
        if (read_line(path, buf, sizeof(buf)) && strtod(buf, NULL) > 0)
            return strtod(buf, NULL);
    }
    if (d->netdev[0]) {
        snprintf(path, sizeof(path), "%s/class/net/%s/speed", root, d->netdev);
        if (read_line(path, buf, sizeof(buf)) && strtod(buf, NULL) > 0) /* -1: link down */
            return strtod(buf, NULL) / 1000.0;
    }
    return 0.0;
}

void crux_topo_sysfs_discover(struct crux_topo *t, const char *root)
{
    for (int id = 0; id < t->ndevs; id++) {
        crux_topo_device_t *d = &t->devs[id];
        if (d->pci[0] && d->parent >= 0)
            pcie_capability(t, root, id);
        if (d->type == CRUX_TOPO_DEV_NIC)
            d->port_gbit = port_rate(root, d);
    }
}

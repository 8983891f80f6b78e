/* Growing the model: devices, links, NVLink reports, numbering, warnings. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

const char crux_topo_no_cpuset[] = "";

static int grow(void **array, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*array, (size_t)ncap * elem);
    if (!n)
        return -1;
    *array = n;
    *cap = ncap;
    return 0;
}

int crux_topo_add_device(struct crux_topo *t, crux_topo_dev_type_t type)
{
    int cap = t->devs_cap;
    if (grow((void **)&t->devs, &cap, t->ndevs + 1, sizeof(*t->devs)))
        return -1;
    cap = t->devs_cap;
    if (grow((void **)&t->pcie_raw, &cap, t->ndevs + 1, sizeof(*t->pcie_raw)))
        return -1;
    t->devs_cap = cap;

    int id = t->ndevs++;
    crux_topo_device_t *d = &t->devs[id];
    memset(d, 0, sizeof(*d));
    d->id = id;
    d->type = type;
    d->index = -1;
    d->os_index = -1;
    d->package = -1;
    d->numa = -1;
    d->parent = -1;
    d->uplink = -1;
    d->cpuset = crux_topo_no_cpuset;
    memset(&t->pcie_raw[id], 0, sizeof(t->pcie_raw[id]));
    return id;
}

int crux_topo_add_link(struct crux_topo *t, int a, int b, crux_topo_link_type_t type, double gbps,
                       int nvlinks)
{
    if (grow((void **)&t->links, &t->links_cap, t->nlinks + 1, sizeof(*t->links)))
        return -1;
    int id = t->nlinks++;
    t->links[id] = (crux_topo_link_t){
        .id = id, .a = a, .b = b, .type = type, .gbps = gbps, .nvlinks = nvlinks
    };
    return id;
}

crux_status_t crux_topo_add_nvlink_report(struct crux_topo *t, int a, int b, double gbps,
                                          int nvlinks)
{
    if (grow((void **)&t->reports, &t->reports_cap, t->nreports + 1, sizeof(*t->reports)))
        return CRUX_ERR_NO_MEMORY;
    t->reports[t->nreports++] = (struct crux_topo_nvlink_report){ a, b, gbps, nvlinks };
    return CRUX_OK;
}

/* Sort order within a type: PCI devices by address, NUMA nodes by OS
 * number, the others in discovery order (hwloc's logical order). */
static int cmp_devices(const struct crux_topo *t, int a, int b)
{
    const struct crux_topo_pcie_raw *ra = &t->pcie_raw[a], *rb = &t->pcie_raw[b];
    const crux_topo_device_t *da = &t->devs[a], *db = &t->devs[b];
    unsigned ka[4] = { ra->domain, ra->bus, ra->dev, ra->func };
    unsigned kb[4] = { rb->domain, rb->bus, rb->dev, rb->func };

    if (ra->is_pci != rb->is_pci)
        return ra->is_pci ? -1 : 1;
    if (ra->is_pci) {
        for (int i = 0; i < 4; i++)
            if (ka[i] != kb[i])
                return ka[i] < kb[i] ? -1 : 1;
    }
    if (da->type == CRUX_TOPO_DEV_NUMA && da->os_index != db->os_index)
        return da->os_index < db->os_index ? -1 : 1;
    return a < b ? -1 : a > b;
}

static const char *name_prefix(crux_topo_dev_type_t type)
{
    switch (type) {
    case CRUX_TOPO_DEV_PACKAGE: return "pkg";
    case CRUX_TOPO_DEV_NUMA: return "numa";
    case CRUX_TOPO_DEV_HOST_BRIDGE: return "hostbridge";
    case CRUX_TOPO_DEV_PCI_SWITCH: return "pcisw";
    case CRUX_TOPO_DEV_GPU: return "gpu";
    case CRUX_TOPO_DEV_NVSWITCH: return "nvswitch";
    case CRUX_TOPO_DEV_NIC: return "nic";
    case CRUX_TOPO_DEV_TYPE_COUNT: break;
    }
    return "dev";
}

crux_status_t crux_topo_index_devices(struct crux_topo *t)
{
    for (int type = 0; type < CRUX_TOPO_DEV_TYPE_COUNT; type++) {
        int n = 0;
        free(t->type_ids[type]);
        t->type_ids[type] = malloc(sizeof(int) * (size_t)(t->ndevs ? t->ndevs : 1));
        if (!t->type_ids[type])
            return CRUX_ERR_NO_MEMORY;
        for (int id = 0; id < t->ndevs; id++)
            if (t->devs[id].type == (crux_topo_dev_type_t)type)
                t->type_ids[type][n++] = id;
        /* insertion sort: a few dozen devices, and no global comparator state */
        int *ids = t->type_ids[type];
        for (int i = 1; i < n; i++) {
            int id = ids[i], j = i;
            for (; j > 0 && cmp_devices(t, ids[j - 1], id) > 0; j--)
                ids[j] = ids[j - 1];
            ids[j] = id;
        }
        t->ntype[type] = n;
        for (int i = 0; i < n; i++) {
            crux_topo_device_t *d = &t->devs[t->type_ids[type][i]];
            d->index = i;
            /* NUMA nodes are named by their OS number, as numactl names them */
            snprintf(d->name, sizeof(d->name), "%s%d", name_prefix(d->type),
                     d->type == CRUX_TOPO_DEV_NUMA ? d->os_index : i);
        }
    }
    return CRUX_OK;
}

void crux_topo_warnf(const struct crux_topo *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (t->warn)
        t->warn(t->warn_arg, msg);
    else
        fprintf(stderr, "crux_topo: warning: %s\n", msg);
}

int crux_topo_find_pci(const struct crux_topo *t, unsigned domain, unsigned bus, unsigned dev,
                       unsigned func)
{
    for (int id = 0; id < t->ndevs; id++) {
        const struct crux_topo_pcie_raw *r = &t->pcie_raw[id];
        if (r->is_pci && r->domain == domain && r->bus == bus && r->dev == dev && r->func == func)
            return id;
    }
    return -1;
}

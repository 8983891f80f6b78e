/* Connection classes of two GPUs or NICs, as nvidia-smi topo -m (and NCCL's
 * PATH_PIX ... PATH_SYS) name them, read from the model's PCIe tree and
 * NVLinks: the model folds each PCIe switch's ports into one device, so
 * "one PCIe bridge" is one switch of the model. */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

#define MAX_CHAIN 32

/* The bonded NVLinks from a GPU to the NVSwitches; -1 if any count is
 * unknown, 0 if it has no switch link. */
static int nvswitch_links(const struct crux_topo *t, int gpu)
{
    int n = 0;
    for (int l = 0; l < t->nlinks; l++) {
        const crux_topo_link_t *k = &t->links[l];
        if (k->type != CRUX_TOPO_LINK_NVLINK || (k->a != gpu && k->b != gpu))
            continue;
        if (t->devs[k->a == gpu ? k->b : k->a].type != CRUX_TOPO_DEV_NVSWITCH)
            continue;
        if (k->nvlinks <= 0 || n < 0)
            n = -1;
        else
            n += k->nvlinks;
    }
    return n;
}

static int nvlink_class(const struct crux_topo *t, int a, int b, int *nvlinks)
{
    /* no NVLink report, no NVLink link: spares a scan of the links per pair */
    if (!t->nreports || t->devs[a].type != CRUX_TOPO_DEV_GPU ||
        t->devs[b].type != CRUX_TOPO_DEV_GPU)
        return 0;
    const crux_topo_link_t *direct = crux_topo_link_between(t, a, b);
    if (direct && direct->type == CRUX_TOPO_LINK_NVLINK) {
        *nvlinks = direct->nvlinks;
        return 1;
    }
    int na = nvswitch_links(t, a), nb = nvswitch_links(t, b);
    if (!crux_topo_nvlink_connected(t, a, b) || na == 0 || nb == 0)
        return 0;
    *nvlinks = na < 0 || nb < 0 ? 0 : na < nb ? na : nb;
    return 1;
}

/* The NUMA node a device is local to: its own, else that of the first
 * device above it that has one; -1 if none does. */
static int local_numa(const struct crux_topo *t, int dev)
{
    for (int d = dev, n = 0; d >= 0 && n < MAX_CHAIN; d = t->devs[d].parent, n++)
        if (t->devs[d].numa >= 0)
            return t->devs[d].numa;
    return -1;
}

crux_topo_conn_t crux_topo_connection(const crux_topo_t *t, int a, int b, int *nvlinks)
{
    int dummy, ca[MAX_CHAIN], cb[MAX_CHAIN], na = 0, nb = 0;
    if (!nvlinks)
        nvlinks = &dummy;
    *nvlinks = 0;
    if (a < 0 || b < 0 || a >= t->ndevs || b >= t->ndevs)
        return CRUX_TOPO_CONN_COUNT;
    for (int i = 0; i < 2; i++) {
        crux_topo_dev_type_t type = t->devs[i ? b : a].type;
        if (type != CRUX_TOPO_DEV_GPU && type != CRUX_TOPO_DEV_NIC)
            return CRUX_TOPO_CONN_COUNT;
    }
    if (a == b)
        return CRUX_TOPO_CONN_SELF;
    if (nvlink_class(t, a, b, nvlinks))
        return CRUX_TOPO_CONN_NVLINK;

    for (int d = a; d >= 0 && na < MAX_CHAIN; d = t->devs[d].parent)
        ca[na++] = d;
    for (int d = b; d >= 0 && nb < MAX_CHAIN; d = t->devs[d].parent)
        cb[nb++] = d;
    /* the lowest common ancestor; above a package the NUMA nodes tell */
    int ia = 0, ib = 0;
    for (int i = 1; i < na && !ia; i++)
        for (int j = 1; j < nb && !ia; j++)
            if (ca[i] == cb[j]) {
                ia = i;
                ib = j;
            }
    if (ia && t->devs[ca[ia]].type == CRUX_TOPO_DEV_PCI_SWITCH)
        return ia == 1 && ib == 1 ? CRUX_TOPO_CONN_PIX : CRUX_TOPO_CONN_PXB;
    /* the functions of one device (a dual-port NIC) share their root port:
     * one bridge between them, as below a switch */
    const char *pa = t->pcie_raw[a].port_pci, *pb = t->pcie_raw[b].port_pci;
    if (ia == 1 && ib == 1 && pa[0] && !strcmp(pa, pb))
        return CRUX_TOPO_CONN_PIX;
    if (ia && t->devs[ca[ia]].type == CRUX_TOPO_DEV_HOST_BRIDGE)
        return CRUX_TOPO_CONN_PHB;
    int ma = local_numa(t, a), mb = local_numa(t, b);
    if (ma >= 0 && mb >= 0)
        return ma == mb ? CRUX_TOPO_CONN_NODE : CRUX_TOPO_CONN_SYS;
    return t->devs[a].package >= 0 && t->devs[a].package == t->devs[b].package ? CRUX_TOPO_CONN_NODE
                                                                               : CRUX_TOPO_CONN_SYS;
}

const char *crux_topo_conn_name(crux_topo_conn_t conn)
{
    static const char *const names[] = {
        [CRUX_TOPO_CONN_SELF] = "X",  [CRUX_TOPO_CONN_NVLINK] = "NV",
        [CRUX_TOPO_CONN_PIX] = "PIX", [CRUX_TOPO_CONN_PXB] = "PXB",
        [CRUX_TOPO_CONN_PHB] = "PHB", [CRUX_TOPO_CONN_NODE] = "NODE",
        [CRUX_TOPO_CONN_SYS] = "SYS",
    };
    return (unsigned)conn < CRUX_TOPO_CONN_COUNT ? names[conn] : "?";
}

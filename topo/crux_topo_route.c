/* Single paths of each kind between two devices, from which the paths step
 * picks the best one and the multipath step picks disjoint sets. */
#include "config.h"

#include <string.h>

#include "topo/crux_topo_internal.h"

static void path_init(crux_topo_path_t *p, int src, int dst, crux_topo_path_kind_t kind)
{
    memset(p, 0, sizeof(*p));
    p->src = src;
    p->dst = dst;
    p->kind = kind;
    p->staging_numa = -1;
}

/* Appends the use of link l leaving device from; 0 if the path is full. */
static int use_link(const struct crux_topo *t, crux_topo_path_t *p, int l, int from)
{
    if (p->nlinks >= CRUX_TOPO_PATH_MAX_LINKS)
        return 0;
    p->links[p->nlinks].link = l;
    p->links[p->nlinks].reverse = t->links[l].a != from;
    p->nlinks++;
    return 1;
}

/* Appends link l as the next step of the path, leaving device from. */
static int step(const struct crux_topo *t, crux_topo_path_t *p, int l, int from)
{
    if (!use_link(t, p, l, from))
        return 0;
    if (p->hops == 0 || t->links[l].gbps < p->gbps)
        p->gbps = t->links[l].gbps;
    p->hops++;
    return 1;
}

static int other_end(const crux_topo_link_t *l, int dev)
{
    return l->a == dev ? l->b : l->a;
}

static int is_type(const struct crux_topo *t, int dev, crux_topo_dev_type_t type)
{
    return dev >= 0 && t->devs[dev].type == type;
}

static int link_between(const struct crux_topo *t, int a, int b, crux_topo_link_type_t type)
{
    for (int l = 0; l < t->nlinks; l++)
        if (t->links[l].type == type && ((t->links[l].a == a && t->links[l].b == b) ||
                                         (t->links[l].a == b && t->links[l].b == a)))
            return l;
    return -1;
}

int crux_topo_route_nvlink(const struct crux_topo *t, int a, int b, crux_topo_path_t *p)
{
    int l = link_between(t, a, b, CRUX_TOPO_LINK_NVLINK);
    path_init(p, a, b, CRUX_TOPO_PATH_NVLINK);
    return l >= 0 && step(t, p, l, a);
}

/* A GPU's total NVLink bandwidth to NVSwitches. */
static double nvswitch_gbps(const struct crux_topo *t, int gpu)
{
    double sum = 0;
    for (int l = 0; l < t->nlinks; l++) {
        const crux_topo_link_t *link = &t->links[l];
        if (link->type == CRUX_TOPO_LINK_NVLINK && (link->a == gpu || link->b == gpu) &&
            is_type(t, other_end(link, gpu), CRUX_TOPO_DEV_NVSWITCH))
            sum += link->gbps;
    }
    return sum;
}

/* hwloc and NVML report GPU-NVSwitch links only, not the links between
 * switches (a DGX-2's two baseboards are joined switch to switch), so the
 * NVSwitches of a node are taken to form one non-blocking fabric, as NCCL
 * does: the path uses every switch link of both GPUs, and carries the
 * smaller of the two GPUs' switch bandwidths. */
int crux_topo_route_nvswitch(const struct crux_topo *t, int a, int b, crux_topo_path_t *p)
{
    double ga = nvswitch_gbps(t, a), gb = nvswitch_gbps(t, b);
    path_init(p, a, b, CRUX_TOPO_PATH_NVSWITCH);
    if (a == b || ga <= 0 || gb <= 0)
        return 0;
    for (int l = 0; l < t->nlinks; l++) {
        const crux_topo_link_t *link = &t->links[l];
        if (link->type != CRUX_TOPO_LINK_NVLINK)
            continue;
        int ok = 1;
        if ((link->a == a || link->b == a) &&
            is_type(t, other_end(link, a), CRUX_TOPO_DEV_NVSWITCH))
            ok = use_link(t, p, l, a);
        if ((link->a == b || link->b == b) &&
            is_type(t, other_end(link, b), CRUX_TOPO_DEV_NVSWITCH))
            ok = use_link(t, p, l, other_end(link, b));
        if (!ok)
            return 0;
    }
    p->hops = 2;
    p->gbps = ga < gb ? ga : gb;
    return 1;
}

int crux_topo_nvlink_connected(const struct crux_topo *t, int a, int b)
{
    return link_between(t, a, b, CRUX_TOPO_LINK_NVLINK) >= 0 ||
           (nvswitch_gbps(t, a) > 0 && nvswitch_gbps(t, b) > 0);
}

struct multihop {
    const struct crux_topo *t;
    int src, dst;
    int chain[CRUX_TOPO_MAX_RELAYS + 2]; /* src, relays..., last GPU reached */
    int depth;
    void (*fn)(void *arg, const crux_topo_path_t *p);
    void *arg;
};

static int in_chain(const struct multihop *m, int dev)
{
    for (int i = 0; i <= m->depth; i++)
        if (m->chain[i] == dev)
            return 1;
    return 0;
}

static void emit_multihop(const struct multihop *m)
{
    crux_topo_path_t p;
    path_init(&p, m->src, m->dst, CRUX_TOPO_PATH_NVLINK_MULTIHOP);
    for (int i = 0; i < m->depth; i++)
        if (!step(m->t, &p, link_between(m->t, m->chain[i], m->chain[i + 1], CRUX_TOPO_LINK_NVLINK),
                  m->chain[i]))
            return;
    if (!step(m->t, &p, link_between(m->t, m->chain[m->depth], m->dst, CRUX_TOPO_LINK_NVLINK),
              m->chain[m->depth]))
        return;
    p.nrelays = m->depth;
    memcpy(p.relays, m->chain + 1, sizeof(int) * (size_t)m->depth);
    m->fn(m->arg, &p);
}

/* Extends the chain by one relay GPU over each GPU-GPU NVLink of its end. */
static void extend(struct multihop *m)
{
    const struct crux_topo *t = m->t;
    int end = m->chain[m->depth];
    if (m->depth >= 1 && link_between(t, end, m->dst, CRUX_TOPO_LINK_NVLINK) >= 0)
        emit_multihop(m);
    if (m->depth >= CRUX_TOPO_MAX_RELAYS)
        return;
    for (int l = 0; l < t->nlinks; l++) {
        const crux_topo_link_t *link = &t->links[l];
        if (link->type != CRUX_TOPO_LINK_NVLINK || (link->a != end && link->b != end))
            continue;
        int next = other_end(link, end);
        if (!is_type(t, next, CRUX_TOPO_DEV_GPU) || next == m->dst || in_chain(m, next))
            continue;
        m->chain[++m->depth] = next;
        extend(m);
        m->depth--;
    }
}

void crux_topo_route_multihop(const struct crux_topo *t, int a, int b,
                              void (*fn)(void *arg, const crux_topo_path_t *p), void *arg)
{
    struct multihop m = { .t = t, .src = a, .dst = b, .depth = 0, .fn = fn, .arg = arg };
    m.chain[0] = a;
    extend(&m);
}

/* The devices from dev up to the root of the PCIe tree (a package). */
static int pcie_chain(const struct crux_topo *t, int dev, int *chain, int max)
{
    int n = 0;
    for (int d = dev; d >= 0 && n < max; d = t->devs[d].parent)
        chain[n++] = d;
    return n;
}

#define MAX_CHAIN 32

int crux_topo_route_pcie_p2p(const struct crux_topo *t, int a, int b, crux_topo_path_t *p)
{
    int ca[MAX_CHAIN], cb[MAX_CHAIN];
    int na = pcie_chain(t, a, ca, MAX_CHAIN), nb = pcie_chain(t, b, cb, MAX_CHAIN);
    int ia = -1, ib = -1;

    path_init(p, a, b, CRUX_TOPO_PATH_PCIE_P2P);
    for (int j = 1; j < nb && ia < 0; j++)
        for (int i = 1; i < na; i++)
            if (ca[i] == cb[j]) {
                ia = i;
                ib = j;
                break;
            }
    /* the lowest common ancestor must be a PCIe switch, else the traffic
     * goes through a host bridge: a host path */
    if (ia < 0 || !is_type(t, ca[ia], CRUX_TOPO_DEV_PCI_SWITCH))
        return 0;
    const crux_topo_device_t *da = &t->devs[a], *db = &t->devs[b];
    if (t->p2p_refused && da->type == CRUX_TOPO_DEV_GPU && db->type == CRUX_TOPO_DEV_GPU &&
        t->p2p_refused[da->index * t->ntype[CRUX_TOPO_DEV_GPU] + db->index])
        return 0;
    for (int i = 0; i < ia; i++)
        if (!step(t, p, t->devs[ca[i]].uplink, ca[i]))
            return 0;
    for (int j = ib - 1; j >= 0; j--)
        if (!step(t, p, t->devs[cb[j]].uplink, cb[j + 1]))
            return 0;
    return 1;
}

/* How a device reaches host memory: over an NVLink to a package if it has
 * one (POWER: GPU memory traffic to the host then uses it, not PCIe), else up
 * its PCIe tree.  Fills the links from dev upwards; returns their number and
 * the package reached in *pkg, or -1 if the device reaches none.  A NUMA
 * node reaches its own package with no link. */
static int host_route(const struct crux_topo *t, int dev, int *links, int *from, int *pkg)
{
    const crux_topo_device_t *d = &t->devs[dev];
    if (d->type == CRUX_TOPO_DEV_NUMA) {
        *pkg = d->package;
        return d->package >= 0 ? 0 : -1;
    }
    int best = -1;
    for (int l = 0; l < t->nlinks; l++) {
        const crux_topo_link_t *link = &t->links[l];
        if (link->type == CRUX_TOPO_LINK_NVLINK && (link->a == dev || link->b == dev) &&
            is_type(t, other_end(link, dev), CRUX_TOPO_DEV_PACKAGE) &&
            (best < 0 || link->gbps > t->links[best].gbps))
            best = l;
    }
    if (best >= 0) {
        links[0] = best;
        from[0] = dev;
        *pkg = other_end(&t->links[best], dev);
        return 1;
    }
    int n = 0, cur = dev;
    while (cur >= 0 && !is_type(t, cur, CRUX_TOPO_DEV_PACKAGE)) {
        if (t->devs[cur].uplink < 0 || n >= MAX_CHAIN)
            return -1;
        links[n] = t->devs[cur].uplink;
        from[n++] = cur;
        cur = t->devs[cur].parent;
    }
    *pkg = cur;
    return cur >= 0 ? n : -1;
}

/* The NUMA node a path to dst stages its data in: dst's own (a NUMA node is
 * its own), else the first of the package. */
static int staging_numa(const struct crux_topo *t, int dst, int pkg)
{
    if (t->devs[dst].numa >= 0 && t->devs[t->devs[dst].numa].package == pkg)
        return t->devs[dst].numa;
    for (int i = 0; i < t->ntype[CRUX_TOPO_DEV_NUMA]; i++) {
        int numa = t->type_ids[CRUX_TOPO_DEV_NUMA][i];
        if (t->devs[numa].package == pkg)
            return numa;
    }
    return -1;
}

/* Through host memory: up from a to its package, across to b's package if
 * that is another one, down to b.  The data is staged in b's memory, so
 * that the socket crossing is made by writes. */
int crux_topo_route_host(const struct crux_topo *t, int a, int b, crux_topo_path_t *p)
{
    int la[MAX_CHAIN], fa[MAX_CHAIN], lb[MAX_CHAIN], fb[MAX_CHAIN], pa, pb;
    int na = host_route(t, a, la, fa, &pa), nb = host_route(t, b, lb, fb, &pb);

    path_init(p, a, b, CRUX_TOPO_PATH_HOST);
    if (na < 0 || nb < 0 || a == b)
        return 0;
    for (int i = 0; i < na; i++)
        if (!step(t, p, la[i], fa[i]))
            return 0;
    if (pa != pb) {
        int smp = link_between(t, pa, pb, CRUX_TOPO_LINK_SMP);
        if (smp < 0 || !step(t, p, smp, pa))
            return 0;
        p->cross_socket = 1;
    }
    for (int j = nb - 1; j >= 0; j--)
        if (!step(t, p, lb[j], other_end(&t->links[lb[j]], fb[j])))
            return 0;
    p->staging_numa = staging_numa(t, b, pb);
    return 1;
}

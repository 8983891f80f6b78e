/* The paths step: the best path from every GPU to every other GPU, every NIC
 * and every NUMA node's memory. */
#include "config.h"

#include <stdlib.h>

#include "topo/crux_topo_internal.h"

/* Wider first, then shorter. */
static int better(const crux_topo_path_t *p, const crux_topo_path_t *q)
{
    if (p->gbps != q->gbps)
        return p->gbps > q->gbps;
    return p->hops < q->hops;
}

struct widest {
    crux_topo_path_t *best;
    int found;
};

static void keep_widest(void *arg, const crux_topo_path_t *p)
{
    struct widest *w = arg;
    if (!w->found || better(p, w->best))
        *w->best = *p;
    w->found = 1;
}

/* The first kind that exists, in the order of crux_topo_path_kind_t. */
static int best_path(const struct crux_topo *t, int a, int b, crux_topo_path_t *p)
{
    crux_topo_dev_type_t type = t->devs[b].type;
    if (type == CRUX_TOPO_DEV_GPU) {
        if (crux_topo_route_nvlink(t, a, b, p) || crux_topo_route_nvswitch(t, a, b, p))
            return 1;
        struct widest w = { p, 0 };
        crux_topo_route_multihop(t, a, b, keep_widest, &w);
        if (w.found)
            return 1;
    }
    if (type != CRUX_TOPO_DEV_NUMA && crux_topo_route_pcie_p2p(t, a, b, p))
        return 1;
    return crux_topo_route_host(t, a, b, p);
}

crux_status_t crux_topo_build_paths(struct crux_topo *t)
{
    int ngpus = t->ntype[CRUX_TOPO_DEV_GPU];
    size_t ncells = (size_t)ngpus * (size_t)t->ndevs;

    t->best = malloc(sizeof(int) * (ncells ? ncells : 1));
    t->paths = malloc(sizeof(*t->paths) * (ncells ? ncells : 1));
    if (!t->best || !t->paths)
        return CRUX_ERR_NO_MEMORY;
    for (size_t i = 0; i < ncells; i++)
        t->best[i] = -1;

    /* GPU-GPU paths first, then GPU-NIC, then GPU-NUMA, as the JSON lists them */
    static const crux_topo_dev_type_t dst_types[] = {
        CRUX_TOPO_DEV_GPU,
        CRUX_TOPO_DEV_NIC,
        CRUX_TOPO_DEV_NUMA,
    };
    for (size_t k = 0; k < sizeof(dst_types) / sizeof(dst_types[0]); k++) {
        for (int i = 0; i < ngpus; i++) {
            int a = t->type_ids[CRUX_TOPO_DEV_GPU][i];
            for (int j = 0; j < t->ntype[dst_types[k]]; j++) {
                int b = t->type_ids[dst_types[k]][j];
                if (a != b && best_path(t, a, b, &t->paths[t->npaths]))
                    t->best[(size_t)i * t->ndevs + b] = t->npaths++;
            }
        }
    }
    return CRUX_OK;
}

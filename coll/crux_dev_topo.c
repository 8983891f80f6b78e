/* GPU paths from the node's topology: each ordered GPU pair's multipath set
 * becomes the engine's CUDA channels between the two devices. */
#include <stdio.h>

#include "coll/crux_dev_group.h"
#include "topo/crux_topo.h"

static crux_tl_chan_kind_t kind_of(crux_topo_path_kind_t kind)
{
    switch (kind) {
    case CRUX_TOPO_PATH_NVLINK_MULTIHOP: return CRUX_TL_CHAN_CUDA_PEER;
    case CRUX_TOPO_PATH_HOST: return CRUX_TL_CHAN_CUDA_HOST;
    default: return CRUX_TL_CHAN_CUDA_IPC; /* NVLink, NVSwitch, PCIe P2P */
    }
}

crux_status_t crux_dev_group_use_topo(crux_dev_group_t *g, const crux_topo_t *topo)
{
    int gpus = crux_topo_count(topo, CRUX_TOPO_DEV_GPU);
    for (int a = 0; a < gpus; a++) {
        for (int b = 0; b < gpus; b++) {
            const crux_topo_pathset_t *set = a != b ? crux_topo_multipath(topo, a, b) : NULL;
            if (set == NULL || set->npaths == 0) {
                continue;
            }
            crux_tl_gpu_path_t paths[CRUX_TL_MAX_GPU_PATHS];
            unsigned n = 0;
            for (int i = 0; i < set->npaths && n < CRUX_TL_MAX_GPU_PATHS; i++) {
                const crux_topo_path_t *p = &set->paths[i];
                crux_tl_gpu_path_t *out = &paths[n++];
                *out = (crux_tl_gpu_path_t){ .kind = kind_of(p->kind), .bandwidth = p->gbps * 1e9 };
                for (int r = 0; out->kind == CRUX_TL_CHAN_CUDA_PEER && r < p->nrelays && r < 2;
                     r++) {
                    snprintf(out->relay[r], sizeof(out->relay[r]), "%s",
                             crux_topo_device(topo, p->relays[r])->pci);
                    out->nrelays++;
                }
                if (!(out->bandwidth > 0)) {
                    n--; /* hwloc gave no speed for a link of it */
                }
            }
            crux_status_t st =
                n == 0 ? CRUX_OK
                       : crux_tl_engine_gpu_paths(g->engine, crux_topo_gpu(topo, a)->pci,
                                                  crux_topo_gpu(topo, b)->pci, paths, n);
            if (st != CRUX_OK) {
                return st;
            }
        }
    }
    return CRUX_OK;
}

/* GPU paths from the node's topology: each ordered GPU pair's multipath set
 * becomes the engine's CUDA channels between the two devices, with the
 * topology's bandwidths as their figures (until calibrated), so stripes
 * follow the links the node has rather than nominal guesses.
 *
 * The topology names GPUs by PCI bus id and (from NVML) UUID, the engine by
 * the driver's name (crux_cuda_name), which needs the driver: the paths are
 * given to the engine when the driver is there, at crux_engine_group_use_topo
 * or else at the group's first device call.  A GPU the driver does not show
 * (another process's under CUDA_VISIBLE_DEVICES), or whose PCI bus id more
 * than one device shares (MIG instances), keeps no paths from topology. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "common/crux_cuda.h"
#include "coll/engine/crux_engine_group.h"
#include "topo/crux_topo.h"

#ifdef CRUX_HAVE_CUDA
static crux_tl_chan_kind_t kind_of(crux_topo_path_kind_t kind)
{
    switch (kind) {
    case CRUX_TOPO_PATH_NVLINK_MULTIHOP: return CRUX_TL_CHAN_CUDA_PEER;
    case CRUX_TOPO_PATH_HOST: return CRUX_TL_CHAN_CUDA_HOST;
    default: return CRUX_TL_CHAN_CUDA_IPC; /* NVLink, NVSwitch, PCIe P2P */
    }
}

/* The driver's name of a GPU of the topology; 0 when it has one here. */
static int name_of(const crux_topo_device_t *d, char name[CRUX_CUDA_NAME_SIZE])
{
    char want[CRUX_CUDA_NAME_SIZE];
    snprintf(want, sizeof(want), "%s", d->uuid);
    for (char *p = want + (strncmp(want, "GPU-", 4) == 0 ? 4 : 0); *p != '\0'; p++) {
        *p = (char)tolower((unsigned char)*p); /* crux_cuda_name's hex digits */
    }
    if (want[0] != '\0' && crux_cuda_device_named(want) >= 0) {
        memcpy(name, want, sizeof(want));
        return 0;
    }
    int count = 0, found = -1, n = 0;
    if (d->pci[0] == '\0' || crux_cuda()->DeviceGetCount(&count) != CUDA_SUCCESS) {
        return -1;
    }
    for (int dev = 0; dev < count; dev++) {
        char pci[16];
        if (crux_cuda_pci(dev, pci, sizeof(pci)) == 0 && strcasecmp(pci, d->pci) == 0) {
            found = dev;
            n++;
        }
    }
    return n == 1 ? crux_cuda_name(found, name) : -1; /* MIG instances share one */
}

/* The paths of one ordered pair of the topology's GPUs; their count. */
static unsigned pair_paths(const crux_topo_t *topo, const crux_topo_pathset_t *set,
                           crux_tl_gpu_path_t paths[CRUX_TL_MAX_GPU_PATHS])
{
    unsigned n = 0;
    for (int i = 0; i < set->npaths && n < CRUX_TL_MAX_GPU_PATHS; i++) {
        const crux_topo_path_t *p = &set->paths[i];
        crux_tl_gpu_path_t *out = &paths[n];
        *out = (crux_tl_gpu_path_t){ .kind = kind_of(p->kind), .bandwidth = p->gbps * 1e9 };
        int ok = out->bandwidth > 0; /* hwloc gave a speed for each of its links */
        for (int r = 0; ok && out->kind == CRUX_TL_CHAN_CUDA_PEER && r < p->nrelays; r++) {
            ok = r < 2 && name_of(crux_topo_device(topo, p->relays[r]), out->relay[r]) == 0;
            out->nrelays += ok;
        }
        n += ok;
    }
    return n;
}

crux_status_t crux_engine_topo_apply(crux_engine_group_t *g)
{
    const crux_topo_t *topo = g->topo;
    if (topo == NULL || g->topo_applied || crux_cuda() == NULL) {
        return CRUX_OK;
    }
    g->topo_applied = 1;
    crux_status_t first = CRUX_OK; /* a pair refused keeps its nominal paths, the others go on */
    int gpus = crux_topo_count(topo, CRUX_TOPO_DEV_GPU);
    for (int a = 0; a < gpus; a++) {
        char src[CRUX_CUDA_NAME_SIZE], dst[CRUX_CUDA_NAME_SIZE];
        if (name_of(crux_topo_gpu(topo, a), src) != 0) {
            continue;
        }
        for (int b = 0; b < gpus; b++) {
            const crux_topo_pathset_t *set = a != b ? crux_topo_multipath(topo, a, b) : NULL;
            crux_tl_gpu_path_t paths[CRUX_TL_MAX_GPU_PATHS];
            unsigned n = set != NULL ? pair_paths(topo, set, paths) : 0;
            if (n == 0 || name_of(crux_topo_gpu(topo, b), dst) != 0) {
                continue;
            }
            crux_status_t st = crux_tl_engine_gpu_paths(g->engine, src, dst, paths, n);
            first = first == CRUX_OK ? st : first;
        }
    }
    return first;
}
#else
crux_status_t crux_engine_topo_apply(crux_engine_group_t *g)
{
    return CRUX_OK;
}
#endif

crux_status_t crux_engine_group_use_topo(crux_engine_group_t *g, const crux_topo_t *topo)
{
    g->topo = topo;
    g->topo_applied = 0;
    return crux_engine_topo_apply(g);
}

/* The groups step: fully NVLink-connected GPU islands, and the host-memory
 * group of each package. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "topo/crux_topo_internal.h"

static double best_gbps(const struct crux_topo *t, int gpu_a, int gpu_b)
{
    int b = t->type_ids[CRUX_TOPO_DEV_GPU][gpu_b];
    int k = t->best[(size_t)gpu_a * t->ndevs + b];
    return k >= 0 ? t->paths[k].gbps : 0.0;
}

/* First fit in GPU order: a GPU joins the first island all of whose members
 * it reaches over a direct or NVSwitch NVLink, else starts a new island.
 * On the hybrid cube-mesh this gives the two fully connected quads. */
static crux_status_t build_islands(struct crux_topo *t)
{
    int n = t->ntype[CRUX_TOPO_DEV_GPU];
    const int *gpu = t->type_ids[CRUX_TOPO_DEV_GPU];
    int *island_of = malloc(sizeof(int) * (size_t)(n + 1));
    int *size = calloc((size_t)n + 1, sizeof(int));
    int nislands = 0;
    if (!island_of || !size) {
        free(island_of);
        free(size);
        return CRUX_ERR_NO_MEMORY;
    }

    for (int g = 0; g < n; g++) {
        island_of[g] = -1;
        for (int k = 0; k < nislands && island_of[g] < 0; k++) {
            int all = 1;
            for (int h = 0; h < g && all; h++)
                if (island_of[h] == k && !crux_topo_nvlink_connected(t, gpu[g], gpu[h]))
                    all = 0;
            if (all)
                island_of[g] = k;
        }
        if (island_of[g] < 0)
            island_of[g] = nislands++;
        size[island_of[g]]++;
    }

    t->islands = calloc((size_t)nislands + 1, sizeof(*t->islands));
    t->island_gpus = malloc(sizeof(int) * (size_t)(n + 1));
    if (!t->islands || !t->island_gpus) {
        free(island_of);
        free(size);
        return CRUX_ERR_NO_MEMORY;
    }
    t->island_of = island_of;
    t->nislands = nislands;
    int *next = t->island_gpus;
    for (int k = 0; k < nislands; k++) {
        crux_topo_island_t *isl = &t->islands[k];
        isl->gpus = next;
        for (int g = 0; g < n; g++)
            if (island_of[g] == k)
                next[isl->ngpus++] = g;
        next += isl->ngpus;
        for (int x = 0; x < isl->ngpus; x++)
            for (int y = 0; y < isl->ngpus; y++) {
                double bw = best_gbps(t, isl->gpus[x], isl->gpus[y]);
                if (x != y && (isl->min_gbps == 0 || bw < isl->min_gbps))
                    isl->min_gbps = bw;
            }
    }
    free(size);
    return CRUX_OK;
}

/* One group per package, with the NUMA nodes, GPUs and NICs in it. */
static crux_status_t build_host_groups(struct crux_topo *t)
{
    int npkg = t->ntype[CRUX_TOPO_DEV_PACKAGE];
    int nnuma = t->ntype[CRUX_TOPO_DEV_NUMA], ngpu = t->ntype[CRUX_TOPO_DEV_GPU];
    int nnic = t->ntype[CRUX_TOPO_DEV_NIC];

    t->groups = calloc((size_t)npkg + 1, sizeof(*t->groups));
    t->group_ids = malloc(sizeof(int) * (size_t)(nnuma + ngpu + nnic + 1));
    if (!t->groups || !t->group_ids)
        return CRUX_ERR_NO_MEMORY;
    t->ngroups = npkg;
    int *next = t->group_ids;
    for (int p = 0; p < npkg; p++) {
        crux_topo_host_group_t *g = &t->groups[p];
        int pkg = t->type_ids[CRUX_TOPO_DEV_PACKAGE][p];
        g->package = pkg;
        g->cpuset = t->devs[pkg].cpuset;
        g->numa = next;
        for (int i = 0; i < nnuma; i++)
            if (t->devs[t->type_ids[CRUX_TOPO_DEV_NUMA][i]].package == pkg)
                next[g->nnuma++] = t->type_ids[CRUX_TOPO_DEV_NUMA][i];
        next += g->nnuma;
        g->gpus = next;
        for (int i = 0; i < ngpu; i++)
            if (t->devs[t->type_ids[CRUX_TOPO_DEV_GPU][i]].package == pkg)
                next[g->ngpus++] = i;
        next += g->ngpus;
        g->nics = next;
        for (int i = 0; i < nnic; i++)
            if (t->devs[t->type_ids[CRUX_TOPO_DEV_NIC][i]].package == pkg)
                next[g->nnics++] = t->type_ids[CRUX_TOPO_DEV_NIC][i];
        next += g->nnics;
    }
    return CRUX_OK;
}

int crux_topo_num_host_groups(const crux_topo_t *t)
{
    return t->ngroups;
}

const crux_topo_host_group_t *crux_topo_host_group(const crux_topo_t *t, int i)
{
    return i >= 0 && i < t->ngroups ? &t->groups[i] : NULL;
}

crux_status_t crux_topo_build_groups(struct crux_topo *t)
{
    crux_status_t st = build_islands(t);
    if (st == CRUX_OK)
        st = build_host_groups(t);
    return st;
}

int crux_topo_host_group_of_cpus(const crux_topo_t *t, const char *cpus)
{
    hwloc_bitmap_t want = hwloc_bitmap_alloc(), have = hwloc_bitmap_alloc();
    int found = -1;
    if (want != NULL && have != NULL && cpus != NULL && hwloc_bitmap_list_sscanf(want, cpus) == 0 &&
        !hwloc_bitmap_iszero(want)) {
        for (int i = 0; i < crux_topo_num_host_groups(t) && found < 0; i++) {
            const crux_topo_host_group_t *g = crux_topo_host_group(t, i);
            if (g->cpuset[0] != '\0' && hwloc_bitmap_list_sscanf(have, g->cpuset) == 0 &&
                hwloc_bitmap_isincluded(want, have)) {
                found = i;
            }
        }
    }
    hwloc_bitmap_free(want);
    hwloc_bitmap_free(have);
    return found;
}

int crux_topo_host_group_of_self(const crux_topo_t *t)
{
    cpu_set_t set;
    char list[1024];
    size_t used = 0;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        return -1;
    }
    list[0] = '\0';
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set) || (cpu > 0 && CPU_ISSET(cpu - 1, &set))) {
            continue; /* a range starts at a CPU whose predecessor is not in the set */
        }
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) {
            last++;
        }
        if (used + 24 >= sizeof(list)) {
            return -1; /* a binding this fragmented is no one package's */
        }
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%d-%d", used ? "," : "", cpu,
                                 last);
    }
    return crux_topo_host_group_of_cpus(t, list);
}

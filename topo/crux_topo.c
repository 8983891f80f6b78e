/* Loading a model (the four steps in order), reading it, freeing it. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

void crux_topo_options_init(crux_topo_options_t *opts)
{
    memset(opts, 0, sizeof(*opts));
}

static crux_status_t smp_bandwidth(const crux_topo_options_t *opts, double *gbps, int *assumed,
                                   char *err, size_t errlen)
{
    const char *env = getenv(CRUX_TOPO_SMP_GBPS_ENV);
    *gbps = CRUX_TOPO_SMP_GBPS_DEFAULT;
    *assumed = opts->smp_gbps <= 0 && !(env && *env);
    if (opts->smp_gbps > 0) {
        *gbps = opts->smp_gbps;
    } else if (env && *env) {
        char *end;
        errno = 0;
        double v = strtod(env, &end);
        if (errno || *end || !(v > 0) || !isfinite(v)) {
            snprintf(err, errlen, "%s=%s: not a bandwidth in GB/s greater than 0",
                     CRUX_TOPO_SMP_GBPS_ENV, env);
            return CRUX_ERR_INVALID;
        }
        *gbps = v;
    }
    return CRUX_OK;
}

/* Discovery: hwloc for the devices; NVLink from NVML on the live machine
 * when it sees GPUs, otherwise from hwloc's matrix. */
static crux_status_t discover(struct crux_topo *t, char *err, size_t errlen)
{
    struct crux_topo_xml_facts facts;
    hwloc_topology_t topo;
    crux_status_t st;

    if (t->xml_path && (st = crux_topo_xml_check(t->xml_path, t->xml_text, t->xml_len, &facts, err,
                                                 errlen)) != CRUX_OK)
        return st;
    if (t->xml_path &&
        (st = crux_topo_xml_trial(t->xml_path, t->xml_text, t->xml_len, err, errlen)) != CRUX_OK)
        return st;
    if ((st = crux_topo_hwloc_open(t->xml_path, t->xml_text, t->xml_len, &topo, err, errlen)) !=
        CRUX_OK)
        return st;
    st = crux_topo_hwloc_discover(t, topo);
    if (st == CRUX_OK && !t->xml_path) {
        st = crux_topo_nvml_discover(t, CRUX_TOPO_NVML_LIBRARY);
        if (st == CRUX_ERR_UNSUPPORTED) /* no NVML, or it sees no GPU */
            st = crux_topo_hwloc_nvlink(t, topo, NULL);
        if (st == CRUX_OK)
            crux_topo_sysfs_discover(t, "/sys");
    } else if (st == CRUX_OK) {
        st = crux_topo_hwloc_nvlink(t, topo, &facts);
    }
    hwloc_topology_destroy(topo);
    return st;
}

crux_status_t crux_topo_load(const crux_topo_options_t *opts, crux_topo_t **topo, char *err,
                             size_t errlen)
{
    crux_topo_options_t defaults;
    char dummy[1];
    crux_status_t st;

    if (!errlen) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    err[0] = '\0';
    *topo = NULL;
    if (!opts) {
        crux_topo_options_init(&defaults);
        opts = &defaults;
    }
    struct crux_topo *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return CRUX_ERR_NO_MEMORY;
    }
    t->warn = opts->warn;
    t->warn_arg = opts->warn_arg;

    const char *path = opts->xml_path;
    if (opts->xml_text && !path)
        path = "XML text";
    if (!path && getenv("HWLOC_XMLFILE") && *getenv("HWLOC_XMLFILE"))
        path = getenv("HWLOC_XMLFILE");
    st = CRUX_OK;
    if (path && !(t->xml_path = strdup(path)))
        st = CRUX_ERR_NO_MEMORY;
    if (st == CRUX_OK && opts->xml_text) { /* a copy ending in NUL, as the checks want it */
        if (opts->xml_len > CRUX_TOPO_MAX_XML_BYTES) {
            snprintf(err, errlen, "%s: %zu bytes, more than the %d read at most", path,
                     opts->xml_len, CRUX_TOPO_MAX_XML_BYTES);
            st = CRUX_ERR_IO;
        } else if (!(t->xml_text = malloc(opts->xml_len + 1))) {
            st = CRUX_ERR_NO_MEMORY;
        } else {
            memcpy(t->xml_text, opts->xml_text, opts->xml_len);
            t->xml_text[opts->xml_len] = '\0';
            t->xml_len = opts->xml_len;
        }
    }
    if (st == CRUX_OK)
        st = smp_bandwidth(opts, &t->smp_gbps, &t->smp_assumed, err, errlen);
    if (st == CRUX_OK)
        st = discover(t, err, errlen);
    if (st == CRUX_OK)
        st = crux_topo_build_links(t);
    if (st == CRUX_OK)
        st = crux_topo_build_paths(t);
    if (st == CRUX_OK &&
        (opts->multipath_max_gpus <= 0 || t->ntype[CRUX_TOPO_DEV_GPU] <= opts->multipath_max_gpus))
        st = crux_topo_build_multipath(t);
    if (st == CRUX_OK)
        st = crux_topo_build_groups(t);

    if (st != CRUX_OK) {
        if (!err[0])
            snprintf(err, errlen, "%s: %s", path ? path : "live machine", crux_status_string(st));
        crux_topo_free(t);
        return st;
    }
    *topo = t;
    return CRUX_OK;
}

void crux_topo_free(crux_topo_t *t)
{
    if (!t)
        return;
    for (int id = 0; id < t->ndevs; id++)
        if (t->devs[id].cpuset != crux_topo_no_cpuset)
            free((char *)t->devs[id].cpuset);
    for (int type = 0; type < CRUX_TOPO_DEV_TYPE_COUNT; type++)
        free(t->type_ids[type]);
    if (t->sets)
        for (int i = 0; i < t->ntype[CRUX_TOPO_DEV_GPU] * t->ntype[CRUX_TOPO_DEV_GPU]; i++)
            free((void *)t->sets[i].paths);
    free(t->devs);
    free(t->pcie_raw);
    free(t->reports);
    free(t->p2p_refused);
    free(t->links);
    free(t->paths);
    free(t->best);
    free(t->sets);
    free(t->islands);
    free(t->island_gpus);
    free(t->island_of);
    free(t->groups);
    free(t->group_ids);
    free(t->xml_path);
    free(t->xml_text);
    free(t);
}

const char *crux_topo_xml_path(const crux_topo_t *t)
{
    return t->xml_path;
}

crux_topo_nvlink_source_t crux_topo_nvlink_source(const crux_topo_t *t)
{
    return t->nvlink_source;
}

int crux_topo_nvlink_corrected(const crux_topo_t *t)
{
    return t->nvlink_corrected;
}

double crux_topo_smp_gbps(const crux_topo_t *t)
{
    return t->smp_gbps;
}

int crux_topo_smp_assumed(const crux_topo_t *t)
{
    return t->smp_assumed;
}

int crux_topo_num_devices(const crux_topo_t *t)
{
    return t->ndevs;
}

const crux_topo_device_t *crux_topo_device(const crux_topo_t *t, int id)
{
    return id >= 0 && id < t->ndevs ? &t->devs[id] : NULL;
}

int crux_topo_count(const crux_topo_t *t, crux_topo_dev_type_t type)
{
    return (unsigned)type < CRUX_TOPO_DEV_TYPE_COUNT ? t->ntype[type] : 0;
}

const crux_topo_device_t *crux_topo_find(const crux_topo_t *t, crux_topo_dev_type_t type, int index)
{
    if ((unsigned)type >= CRUX_TOPO_DEV_TYPE_COUNT || index < 0 || index >= t->ntype[type])
        return NULL;
    return &t->devs[t->type_ids[type][index]];
}

const crux_topo_device_t *crux_topo_gpu(const crux_topo_t *t, int index)
{
    return crux_topo_find(t, CRUX_TOPO_DEV_GPU, index);
}

int crux_topo_num_links(const crux_topo_t *t)
{
    return t->nlinks;
}

const crux_topo_link_t *crux_topo_link(const crux_topo_t *t, int id)
{
    return id >= 0 && id < t->nlinks ? &t->links[id] : NULL;
}

const crux_topo_link_t *crux_topo_link_between(const crux_topo_t *t, int a, int b)
{
    for (int l = 0; l < t->nlinks; l++)
        if ((t->links[l].a == a && t->links[l].b == b) ||
            (t->links[l].a == b && t->links[l].b == a))
            return &t->links[l];
    return NULL;
}

const crux_topo_path_t *crux_topo_path(const crux_topo_t *t, int src, int dst)
{
    if (src < 0 || src >= t->ndevs || dst < 0 || dst >= t->ndevs ||
        t->devs[src].type != CRUX_TOPO_DEV_GPU)
        return NULL;
    int k = t->best[(size_t)t->devs[src].index * t->ndevs + dst];
    return k >= 0 ? &t->paths[k] : NULL;
}

int crux_topo_num_paths(const crux_topo_t *t)
{
    return t->npaths;
}

const crux_topo_path_t *crux_topo_path_at(const crux_topo_t *t, int i)
{
    return i >= 0 && i < t->npaths ? &t->paths[i] : NULL;
}

const crux_topo_pathset_t *crux_topo_multipath(const crux_topo_t *t, int src_gpu, int dst_gpu)
{
    int n = t->ntype[CRUX_TOPO_DEV_GPU];
    if (t->sets == NULL || src_gpu < 0 || src_gpu >= n || dst_gpu < 0 || dst_gpu >= n ||
        src_gpu == dst_gpu)
        return NULL;
    return &t->sets[src_gpu * n + dst_gpu];
}

int crux_topo_has_multipath(const crux_topo_t *t)
{
    return t->sets != NULL;
}

int crux_topo_num_islands(const crux_topo_t *t)
{
    return t->nislands;
}

const crux_topo_island_t *crux_topo_island(const crux_topo_t *t, int i)
{
    return i >= 0 && i < t->nislands ? &t->islands[i] : NULL;
}

int crux_topo_island_of(const crux_topo_t *t, int gpu)
{
    return gpu >= 0 && gpu < t->ntype[CRUX_TOPO_DEV_GPU] ? t->island_of[gpu] : -1;
}

const char *crux_topo_dev_type_name(crux_topo_dev_type_t type)
{
    switch (type) {
    case CRUX_TOPO_DEV_PACKAGE: return "package";
    case CRUX_TOPO_DEV_NUMA: return "numa";
    case CRUX_TOPO_DEV_HOST_BRIDGE: return "host-bridge";
    case CRUX_TOPO_DEV_PCI_SWITCH: return "pcie-switch";
    case CRUX_TOPO_DEV_GPU: return "gpu";
    case CRUX_TOPO_DEV_NVSWITCH: return "nvswitch";
    case CRUX_TOPO_DEV_NIC: return "nic";
    case CRUX_TOPO_DEV_TYPE_COUNT: break;
    }
    return "?";
}

const char *crux_topo_link_type_name(crux_topo_link_type_t type)
{
    switch (type) {
    case CRUX_TOPO_LINK_NVLINK: return "nvlink";
    case CRUX_TOPO_LINK_PCIE: return "pcie";
    case CRUX_TOPO_LINK_SMP: return "smp";
    }
    return "?";
}

const char *crux_topo_path_kind_name(crux_topo_path_kind_t kind)
{
    switch (kind) {
    case CRUX_TOPO_PATH_NVLINK: return "nvlink";
    case CRUX_TOPO_PATH_NVSWITCH: return "nvswitch";
    case CRUX_TOPO_PATH_NVLINK_MULTIHOP: return "nvlink-multihop";
    case CRUX_TOPO_PATH_PCIE_P2P: return "pcie-p2p";
    case CRUX_TOPO_PATH_HOST: return "host";
    case CRUX_TOPO_PATH_KIND_COUNT: break;
    }
    return "?";
}

const char *crux_topo_nvlink_source_name(crux_topo_nvlink_source_t source)
{
    switch (source) {
    case CRUX_TOPO_NVLINK_NONE: return "none";
    case CRUX_TOPO_NVLINK_FROM_HWLOC: return "hwloc";
    case CRUX_TOPO_NVLINK_FROM_NVML: return "nvml";
    }
    return "?";
}

/* NVLink from hwloc's NVLinkBandwidth distances matrix.
 *
 * hwloc's NVML backend builds the matrix (MB/s, members: GPUs as nvml OS
 * devices or PCI devices, NVSwitch PCI devices, CPU packages on POWER) by
 * adding a fixed figure per active link, by the version NVML reports:
 *
 *   NVML version         1 (1.0)   2 (2.0)   3 (2.2)   4 (3.0)
 *   hwloc 2.9 counts     20000     25000     50000     50000   MB/s per link
 *   true, per direction  20        25        25        25      GB/s per link
 *
 * so from hwloc before 2.12 an A100's (NVLink 3.0) entries are twice too
 * high; hwloc 2.12 counts 25000 for 2.0 to 3.0.  The correction applied
 * here: when the matrix was written by hwloc older than 2.12 (the XML's
 * hwlocVersion, or this library's version for the live machine) and a GPU
 * of the pair is NVLink 3.0 (A100/A800/A30, from its model name), the entry
 * is halved.  NVLink 1.0 and 2.0 figures (P100, V100) are right as they are.
 * (NVLink 2.2 cannot be told apart by model name and is left as reported.)
 * hwloc 2.9 builds no matrix at all for NVLink 4.0 and later. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

#define HWLOC_FIXED_NVLINK_FIGURES 0x020c00 /* hwloc 2.12 */

static unsigned version_code(const char *v)
{
    unsigned major = 0, minor = 0;
    if (!v || sscanf(v, "%u.%u", &major, &minor) < 1)
        return 0;
    return major << 16 | minor << 8;
}

/* Whether the hwloc that built the matrix counted NVLink 3.0 links twice. */
static int writer_doubles_nvlink3(const struct crux_topo *t, hwloc_topology_t topo)
{
    if (!t->xml_path) /* the hwloc built against (the API version lags releases) */
        return (HWLOC_VERSION_MAJOR << 16 | HWLOC_VERSION_MINOR << 8) < HWLOC_FIXED_NVLINK_FIGURES;
    /* an export without hwlocVersion is from before the fix too */
    unsigned v = version_code(hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), "hwlocVersion"));
    return v < HWLOC_FIXED_NVLINK_FIGURES;
}

/* Number of links making gbps at per_link each; 0 if it is not a multiple. */
static int link_count(double gbps, double per_link)
{
    if (per_link <= 0)
        return 0;
    double n = gbps / per_link;
    return fabs(n - round(n)) < 1e-6 && round(n) >= 1 ? (int)round(n) : 0;
}

static const char *where(const struct crux_topo *t)
{
    return t->xml_path ? t->xml_path : "live machine";
}

static crux_status_t read_matrix(struct crux_topo *t, const struct hwloc_distances_s *m,
                                 int doubled_nvlink3)
{
    unsigned n = m->nbobjs;
    int *dev = malloc(sizeof(int) * n);
    int unusable = 0;
    crux_status_t st = CRUX_OK;

    if (!dev)
        return CRUX_ERR_NO_MEMORY;
    for (unsigned i = 0; i < n; i++) {
        dev[i] = crux_topo_hwloc_device_of(m->objs[i]);
        crux_topo_dev_type_t type = dev[i] >= 0 ? t->devs[dev[i]].type : CRUX_TOPO_DEV_TYPE_COUNT;
        if (type != CRUX_TOPO_DEV_GPU && type != CRUX_TOPO_DEV_NVSWITCH &&
            type != CRUX_TOPO_DEV_PACKAGE) {
            dev[i] = -1;
            unusable++;
        }
    }
    if (unusable)
        crux_topo_warnf(t,
                        "%s: NVLinkBandwidth matrix: %d of its %u members are not a GPU, "
                        "NVSwitch or CPU package; their entries are ignored",
                        where(t), unusable, n);

    for (unsigned i = 0; i < n && st == CRUX_OK; i++) {
        for (unsigned j = i + 1; j < n && st == CRUX_OK; j++) {
            hwloc_uint64_t mbps = m->values[i * n + j] > m->values[j * n + i]
                                      ? m->values[i * n + j]
                                      : m->values[j * n + i];
            int a = dev[i], b = dev[j];
            if (!mbps || a < 0 || b < 0 || a == b)
                continue;
            const crux_topo_device_t *da = &t->devs[a], *db = &t->devs[b];
            if (da->type != CRUX_TOPO_DEV_GPU && db->type != CRUX_TOPO_DEV_GPU)
                continue; /* NVLink always has a GPU at one end */
            int gen = da->nvlink_gen > db->nvlink_gen ? da->nvlink_gen : db->nvlink_gen;
            double gbps = (double)mbps / 1000.0;
            if (doubled_nvlink3 && gen == 3) {
                gbps /= 2;
                t->nvlink_corrected++;
            }
            int nvlinks = link_count(gbps, crux_topo_nvlink_gbps_per_link(gen));
            if (!gen && !nvlinks) /* unknown model: the common 25 GB/s, then NVLink 1.0's 20 */
                nvlinks = link_count(gbps, 25.0) ? link_count(gbps, 25.0) : link_count(gbps, 20.0);
            st = crux_topo_add_nvlink_report(t, a, b, gbps, nvlinks);
        }
    }
    free(dev);
    return st;
}

/* Whether hwloc loaded the matrix with all the members the file declares.
 * hwloc drops the members it cannot find and keeps the rest (or drops the
 * matrix when fewer than two remain), so each loaded matrix is matched with
 * a declared one of the same size; declared is consumed as it is matched. */
static int complete(const struct hwloc_distances_s *m, unsigned *declared, int ndeclared)
{
    for (int j = 0; j < ndeclared; j++)
        if (declared[j] == m->nbobjs) {
            declared[j] = 0;
            return 1;
        }
    return 0;
}

crux_status_t crux_topo_hwloc_nvlink(struct crux_topo *t, hwloc_topology_t topo,
                                     const struct crux_topo_xml_facts *facts)
{
    unsigned nr = 0, declared[CRUX_TOPO_XML_MAX_MATRICES];
    int ndeclared = facts ? facts->nmatrices : 0;

    if (facts)
        memcpy(declared, facts->matrix_nbobjs, sizeof(declared));
    if (hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, NULL, 0) < 0)
        nr = 0;
    struct hwloc_distances_s **dist = calloc(nr ? nr : 1, sizeof(*dist));
    if (!dist)
        return CRUX_ERR_NO_MEMORY;
    if (nr && hwloc_distances_get_by_name(topo, "NVLinkBandwidth", &nr, dist, 0) < 0)
        nr = 0;

    crux_status_t st = CRUX_OK;
    int doubled = writer_doubles_nvlink3(t, topo);
    int before = t->nreports, ignored = 0;
    for (unsigned k = 0; k < nr; k++) {
        /* a matrix that lost members would show their links as missing */
        if (facts && !complete(dist[k], declared, ndeclared))
            ignored++;
        else if (!(dist[k]->kind & HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH))
            crux_topo_warnf(t, "%s: NVLinkBandwidth matrix is not of bandwidths; matrix ignored",
                            where(t));
        else if (st == CRUX_OK)
            st = read_matrix(t, dist[k], doubled);
        hwloc_distances_release(topo, dist[k]);
    }
    free(dist);
    /* the declared matrices not loaded whole were shrunk or dropped by hwloc */
    int bad = ndeclared - ((int)nr - ignored);
    if (bad > 0)
        crux_topo_warnf(t,
                        "%s: %d NVLinkBandwidth matri%s name%s objects that are not in the "
                        "topology; ignored",
                        where(t), bad, bad > 1 ? "ces" : "x", bad > 1 ? "" : "s");
    if (t->nreports > before)
        t->nvlink_source = CRUX_TOPO_NVLINK_FROM_HWLOC;
    return st;
}

/* The model as JSON (json-c).  Devices are named by their unique short name
 * ("gpu0", "pkg1", "numa8"); GPU sets (islands, host groups) list GPU
 * indices; "numa" fields are NUMA OS numbers. */
#include "config.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

/* Bandwidths with two decimals, written as such (15.75, not 15.753846...). */
static json_object *gbps_json(double v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%.2f", v);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot && *end == '0')
            *end-- = '\0';
        if (end == dot)
            *end = '\0';
    }
    return json_object_new_double_s(strtod(buf, NULL), buf);
}

static json_object *name_json(const struct crux_topo *t, int id)
{
    return id >= 0 ? json_object_new_string(t->devs[id].name) : NULL;
}

/* A NUMA node's OS number, null if unknown. */
static json_object *numa_json(const struct crux_topo *t, int numa)
{
    return numa >= 0 ? json_object_new_int(t->devs[numa].os_index) : NULL;
}

static void add(json_object *obj, const char *key, json_object *value)
{
    json_object_object_add(obj, key, value);
}

static void add_str(json_object *obj, const char *key, const char *s)
{
    if (s && *s)
        add(obj, key, json_object_new_string(s));
}

static json_object *device_json(const struct crux_topo *t, const crux_topo_device_t *d)
{
    json_object *o = json_object_new_object();
    if (d->type == CRUX_TOPO_DEV_GPU || d->type == CRUX_TOPO_DEV_NIC ||
        d->type == CRUX_TOPO_DEV_NVSWITCH)
        add(o, "index", json_object_new_int(d->index));
    add(o, "name", json_object_new_string(d->name));
    if (d->os_index >= 0)
        add(o, "os_index", json_object_new_int(d->os_index));
    add_str(o, "pci", d->pci);
    add_str(o, "model", d->model);
    if (d->type != CRUX_TOPO_DEV_PACKAGE)
        add(o, "package", name_json(t, d->package));
    if (d->type != CRUX_TOPO_DEV_PACKAGE && d->type != CRUX_TOPO_DEV_NUMA)
        add(o, "numa", numa_json(t, d->numa));
    if (d->parent >= 0 && d->type != CRUX_TOPO_DEV_NUMA)
        add(o, "parent", name_json(t, d->parent));
    if (d->uplink >= 0 && d->type != CRUX_TOPO_DEV_HOST_BRIDGE)
        add(o, "pcie_gbps", gbps_json(t->links[d->uplink].gbps));
    if (d->pcie_gen) {
        add(o, "pcie_gen", json_object_new_int(d->pcie_gen));
        add(o, "pcie_width", json_object_new_int(d->pcie_width));
    }
    add_str(o, "uuid", d->uuid);
    if (d->type == CRUX_TOPO_DEV_GPU) {
        add(o, "nvlink_gen", json_object_new_int(d->nvlink_gen));
        add(o, "island", json_object_new_int(t->island_of[d->index]));
    }
    add_str(o, "netdev", d->netdev);
    add_str(o, "rdma", d->rdmadev);
    if (d->type == CRUX_TOPO_DEV_NIC)
        add(o, "port_gbit", gbps_json(d->port_gbit));
    if (d->type == CRUX_TOPO_DEV_PACKAGE || d->type == CRUX_TOPO_DEV_NUMA)
        add(o, "cpuset", json_object_new_string(d->cpuset));
    return o;
}

static json_object *devices_json(const struct crux_topo *t, crux_topo_dev_type_t type)
{
    json_object *a = json_object_new_array();
    for (int i = 0; i < t->ntype[type]; i++)
        json_object_array_add(a, device_json(t, &t->devs[t->type_ids[type][i]]));
    return a;
}

static json_object *links_json(const struct crux_topo *t)
{
    json_object *a = json_object_new_array();
    for (int l = 0; l < t->nlinks; l++) {
        const crux_topo_link_t *link = &t->links[l];
        json_object *o = json_object_new_object();
        add(o, "a", name_json(t, link->a));
        add(o, "b", name_json(t, link->b));
        add(o, "type", json_object_new_string(crux_topo_link_type_name(link->type)));
        add(o, "gbps", gbps_json(link->gbps));
        if (link->type == CRUX_TOPO_LINK_NVLINK)
            add(o, "nvlinks", json_object_new_int(link->nvlinks));
        json_object_array_add(a, o);
    }
    return a;
}

static json_object *path_json(const struct crux_topo *t, const crux_topo_path_t *p)
{
    json_object *o = json_object_new_object();
    add(o, "src", name_json(t, p->src));
    add(o, "dst", name_json(t, p->dst));
    add(o, "kind", json_object_new_string(crux_topo_path_kind_name(p->kind)));
    /* nvidia-smi's class of the pair ("NV6", "PIX", "SYS"), for GPUs and NICs */
    int nvlinks;
    crux_topo_conn_t conn = crux_topo_connection(t, p->src, p->dst, &nvlinks);
    if (conn < CRUX_TOPO_CONN_COUNT) {
        char name[16];
        if (conn == CRUX_TOPO_CONN_NVLINK && nvlinks > 0)
            snprintf(name, sizeof(name), "NV%d", nvlinks);
        else
            snprintf(name, sizeof(name), "%s", crux_topo_conn_name(conn));
        add(o, "conn", json_object_new_string(name));
    }
    add(o, "hops", json_object_new_int(p->hops));
    add(o, "gbps", gbps_json(p->gbps));
    if (p->kind == CRUX_TOPO_PATH_NVLINK_MULTIHOP) {
        json_object *via = json_object_new_array();
        for (int i = 0; i < p->nrelays; i++)
            json_object_array_add(via, name_json(t, p->relays[i]));
        add(o, "via", via);
    }
    if (p->kind == CRUX_TOPO_PATH_HOST) {
        add(o, "cross_socket", json_object_new_boolean(p->cross_socket));
        add(o, "staging_numa", numa_json(t, p->staging_numa));
    }
    /* the directed links used, as [from, to] */
    json_object *links = json_object_new_array();
    for (int i = 0; i < p->nlinks; i++) {
        const crux_topo_link_t *link = &t->links[p->links[i].link];
        json_object *pair = json_object_new_array();
        json_object_array_add(pair, name_json(t, p->links[i].reverse ? link->b : link->a));
        json_object_array_add(pair, name_json(t, p->links[i].reverse ? link->a : link->b));
        json_object_array_add(links, pair);
    }
    add(o, "links", links);
    return o;
}

static json_object *multipath_json(const struct crux_topo *t)
{
    json_object *a = json_object_new_array();
    int n = t->ntype[CRUX_TOPO_DEV_GPU];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            const crux_topo_pathset_t *set = &t->sets[i * n + j];
            json_object *o = json_object_new_object(), *paths = json_object_new_array();
            add(o, "src", name_json(t, set->src));
            add(o, "dst", name_json(t, set->dst));
            add(o, "gbps", gbps_json(set->gbps));
            for (int k = 0; k < set->npaths; k++)
                json_object_array_add(paths, path_json(t, &set->paths[k]));
            add(o, "paths", paths);
            json_object_array_add(a, o);
        }
    return a;
}

static json_object *int_array(const int *v, int n)
{
    json_object *a = json_object_new_array();
    for (int i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_int(v[i]));
    return a;
}

static json_object *groups_json(const struct crux_topo *t)
{
    json_object *a = json_object_new_array();
    for (int g = 0; g < t->ngroups; g++) {
        const crux_topo_host_group_t *grp = &t->groups[g];
        json_object *o = json_object_new_object(), *numa = json_object_new_array(),
                    *nics = json_object_new_array();
        add(o, "package", name_json(t, grp->package));
        add(o, "cpuset", json_object_new_string(grp->cpuset));
        for (int i = 0; i < grp->nnuma; i++)
            json_object_array_add(numa, numa_json(t, grp->numa[i]));
        add(o, "numa", numa);
        add(o, "gpus", int_array(grp->gpus, grp->ngpus));
        for (int i = 0; i < grp->nnics; i++)
            json_object_array_add(nics, name_json(t, grp->nics[i]));
        add(o, "nics", nics);
        json_object_array_add(a, o);
    }
    return a;
}

char *crux_topo_to_json(const crux_topo_t *t)
{
    json_object *root = json_object_new_object();
    if (!root)
        return NULL;
    add(root, "source", json_object_new_string(t->xml_path ? t->xml_path : "live"));
    add(root, "nvlink_source",
        json_object_new_string(crux_topo_nvlink_source_name(t->nvlink_source)));
    add(root, "nvlink_corrected", json_object_new_int(t->nvlink_corrected));
    add(root, "smp_gbps", gbps_json(t->smp_gbps));
    add(root, "smp_assumed", json_object_new_boolean(t->smp_assumed));
    add(root, "packages", devices_json(t, CRUX_TOPO_DEV_PACKAGE));
    add(root, "numa_nodes", devices_json(t, CRUX_TOPO_DEV_NUMA));
    add(root, "host_bridges", devices_json(t, CRUX_TOPO_DEV_HOST_BRIDGE));
    add(root, "pcie_switches", devices_json(t, CRUX_TOPO_DEV_PCI_SWITCH));
    add(root, "gpus", devices_json(t, CRUX_TOPO_DEV_GPU));
    add(root, "nvswitches", devices_json(t, CRUX_TOPO_DEV_NVSWITCH));
    add(root, "nics", devices_json(t, CRUX_TOPO_DEV_NIC));
    add(root, "links", links_json(t));
    /* the paths, quadratic in the GPUs, only where the sets were built */
    add(root, "paths_listed", json_object_new_boolean(t->sets != NULL));
    if (t->sets != NULL) {
        json_object *paths = json_object_new_array();
        for (int i = 0; i < t->npaths; i++)
            json_object_array_add(paths, path_json(t, &t->paths[i]));
        add(root, "paths", paths);
        add(root, "multipath", multipath_json(t));
    }
    json_object *islands = json_object_new_array();
    for (int i = 0; i < t->nislands; i++)
        json_object_array_add(islands, int_array(t->islands[i].gpus, t->islands[i].ngpus));
    add(root, "islands", islands);
    add(root, "host_groups", groups_json(t));

    const char *text = json_object_to_json_string_ext(
        root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
    char *copy = text ? strdup(text) : NULL;
    json_object_put(root);
    return copy;
}

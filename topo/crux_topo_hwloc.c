/* Discovery through hwloc: packages, NUMA nodes, and the PCIe tree with its
 * host bridges, PCIe switches, GPUs, NVSwitches and NICs.
 *
 * hwloc shows every PCIe port as a bridge object: the root ports below a
 * host bridge (bridge depth 1), then for each PCIe switch its upstream port
 * (even depth) with one downstream port (odd depth) per child link.  The
 * model folds the root ports into their host bridge and the downstream
 * ports into their switch, so that each PCIe link of the model is a real
 * link: device or switch upstream port to the root or downstream port
 * above it.  The ports' speeds are kept to compute the link bandwidth. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

#define PCI_VENDOR_NVIDIA      0x10de
#define PCI_CLASS_BASE_NETWORK 0x02
#define PCI_CLASS_BASE_DISPLAY 0x03
#define PCI_CLASS_BRIDGE_OTHER 0x0680 /* what an NVSwitch shows as */
#define PCI_CLASS_INFINIBAND   0x0c06 /* old InfiniBand controllers */

static void set_device_of(hwloc_obj_t obj, int id)
{
    obj->userdata = (void *)(intptr_t)(id + 1);
}

int crux_topo_hwloc_device_of(hwloc_obj_t obj)
{
    /* an OS device (nvml0, cuda0, mlx5_0) stands for the PCI device above it */
    while (obj && obj->type == HWLOC_OBJ_OS_DEVICE)
        obj = obj->parent;
    return obj && obj->userdata ? (int)(intptr_t)obj->userdata - 1 : -1;
}

/* hwloc's discovery components that reach outside the process, none of
 * whose objects crux uses: "gl" opens X displays :0.0 to :9.9, which falls
 * back to TCP on 127.0.0.1:6000-6009, where any local user can listen and
 * never answer (every rank on the host then hangs in its first
 * collective); "opencl" loads whatever vendor libraries the ICD list names;
 * "cuda", "rsmi" and "levelzero" start the vendors' run-times (crux reads
 * GPUs by PCI and NVLink through NVML).  Set through the topology, so no
 * environment variable brings them back.  A component this hwloc lacks is
 * refused by hwloc_topology_set_components, which is fine. */
static const char *const outside_components[] = { "gl", "opencl", "cuda", "rsmi", "levelzero" };

static void keep_discovery_inside(hwloc_topology_t topo)
{
    for (size_t i = 0; i < sizeof(outside_components) / sizeof(outside_components[0]); i++)
        (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                                            outside_components[i]);
}

crux_status_t crux_topo_hwloc_open(const char *xml_path, const char *text, size_t len,
                                   hwloc_topology_t *topology, char *err, size_t errlen)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo)) {
        snprintf(err, errlen, "%s: hwloc: %s", xml_path ? xml_path : "live machine",
                 strerror(errno));
        return CRUX_ERR_NO_MEMORY;
    }
    keep_discovery_inside(topo);
    /* Without the I/O objects hwloc drops the GPUs and the NVLink matrix. */
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* hwloc counts the final NUL in a buffer's size, as its export does */
    int bad = text ? len > CRUX_TOPO_MAX_XML_BYTES || text[len] != '\0' ||
                         hwloc_topology_set_xmlbuffer(topo, text, (int)len + 1)
                   : xml_path && hwloc_topology_set_xml(topo, xml_path);
    if (bad) {
        /* hwloc would otherwise go on with the live machine */
        snprintf(err, errlen, "%s: hwloc cannot parse it: malformed XML", xml_path);
        hwloc_topology_destroy(topo);
        return CRUX_ERR_INVALID;
    }
    if (hwloc_topology_load(topo)) {
        if (xml_path)
            snprintf(err, errlen,
                     "%s: hwloc cannot import it: an object or distances matrix it rejects",
                     xml_path);
        else
            snprintf(err, errlen, "live machine: hwloc topology discovery failed: %s",
                     strerror(errno));
        hwloc_topology_destroy(topo);
        return xml_path ? CRUX_ERR_INVALID : CRUX_ERR_IO;
    }
    *topology = topo;
    return CRUX_OK;
}

static char *cpuset_string(hwloc_const_cpuset_t set)
{
    char *s = NULL;
    if (!set || hwloc_bitmap_iszero(set))
        return strdup("");
    if (hwloc_bitmap_list_asprintf(&s, set) < 0)
        return NULL;
    return s;
}

/* The package an object is in; for an object whose locality spans several
 * packages (or none), the first package its CPUs touch, else the first one. */
static int package_of(hwloc_topology_t topo, hwloc_obj_t obj)
{
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj);
    if (pkg && pkg->userdata)
        return crux_topo_hwloc_device_of(pkg);
    hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topo, obj);
    if (!local)
        local = obj;
    for (pkg = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, NULL); pkg;
         pkg = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pkg))
        if (local->cpuset && hwloc_bitmap_intersects(pkg->cpuset, local->cpuset))
            return crux_topo_hwloc_device_of(pkg);
    return 0; /* packages are added first: device 0 is the first package */
}

/* The NUMA node local to an object: the one of its locality when that is a
 * package or smaller (the first one if a package has several); unknown
 * when the locality is the whole machine with several NUMA nodes. */
static int numa_of(hwloc_topology_t topo, hwloc_obj_t obj)
{
    hwloc_obj_t local =
        obj->type == HWLOC_OBJ_NUMANODE ? obj : hwloc_get_non_io_ancestor_obj(topo, obj);
    if (!local || !local->nodeset || hwloc_bitmap_iszero(local->nodeset))
        return -1;
    if (hwloc_bitmap_weight(local->nodeset) > 1 &&
        !hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, local) &&
        local->type != HWLOC_OBJ_PACKAGE)
        return -1;
    hwloc_obj_t numa =
        hwloc_get_numanode_obj_by_os_index(topo, (unsigned)hwloc_bitmap_first(local->nodeset));
    return numa ? crux_topo_hwloc_device_of(numa) : -1;
}

static crux_status_t add_packages_and_numa(struct crux_topo *t, hwloc_topology_t topo)
{
    hwloc_obj_t obj;
    int npkg = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);

    if (npkg <= 0) {
        /* some virtual machines report no package: the machine stands in */
        int id = crux_topo_add_device(t, CRUX_TOPO_DEV_PACKAGE);
        if (id < 0)
            return CRUX_ERR_NO_MEMORY;
        hwloc_obj_t root = hwloc_get_root_obj(topo);
        t->devs[id].package = id;
        if (!(t->devs[id].cpuset = cpuset_string(root->cpuset)))
            return CRUX_ERR_NO_MEMORY;
    }
    for (obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, NULL); obj;
         obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj)) {
        int id = crux_topo_add_device(t, CRUX_TOPO_DEV_PACKAGE);
        if (id < 0)
            return CRUX_ERR_NO_MEMORY;
        t->devs[id].os_index = (int)obj->os_index;
        t->devs[id].package = id;
        const char *model = hwloc_obj_get_info_by_name(obj, "CPUModel");
        snprintf(t->devs[id].model, sizeof(t->devs[id].model), "%s", model ? model : "");
        if (!(t->devs[id].cpuset = cpuset_string(obj->cpuset)))
            return CRUX_ERR_NO_MEMORY;
        set_device_of(obj, id);
    }
    for (obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, NULL); obj;
         obj = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, obj)) {
        int id = crux_topo_add_device(t, CRUX_TOPO_DEV_NUMA);
        if (id < 0)
            return CRUX_ERR_NO_MEMORY;
        t->devs[id].os_index = (int)obj->os_index;
        t->devs[id].package = package_of(topo, obj);
        t->devs[id].numa = id;
        if (!(t->devs[id].cpuset = cpuset_string(obj->cpuset)))
            return CRUX_ERR_NO_MEMORY;
        set_device_of(obj, id);
    }
    return CRUX_OK;
}

static void pci_address(const struct hwloc_pcidev_attr_s *pci, char *out, size_t len)
{
    snprintf(out, len, "%04x:%02x:%02x.%01x", (unsigned)pci->domain, pci->bus, pci->dev, pci->func);
}

/* "GV100GL [Tesla V100 SXM2 16GB]" -> "Tesla V100 SXM2 16GB" */
static void pci_device_name(hwloc_obj_t obj, char *out, size_t len)
{
    const char *name = hwloc_obj_get_info_by_name(obj, "PCIDevice");
    const char *lb = name ? strchr(name, '[') : NULL, *rb = lb ? strchr(lb, ']') : NULL;
    if (rb)
        snprintf(out, len, "%.*s", (int)(rb - lb - 1), lb + 1);
    else
        snprintf(out, len, "%s", name ? name : "");
}

/* An info value from the PCI object or any of its OS devices. */
static const char *io_info(hwloc_obj_t obj, const char *name)
{
    const char *v = hwloc_obj_get_info_by_name(obj, name);
    for (hwloc_obj_t c = obj->io_first_child; c && !v; c = c->next_sibling)
        v = hwloc_obj_get_info_by_name(c, name);
    return v;
}

enum pci_role { PCI_IGNORED, PCI_GPU, PCI_NVSWITCH, PCI_NIC };

static enum pci_role classify(hwloc_obj_t obj)
{
    const struct hwloc_pcidev_attr_s *pci = &obj->attr->pcidev;
    if (pci->vendor_id == PCI_VENDOR_NVIDIA && (pci->class_id >> 8) == PCI_CLASS_BASE_DISPLAY)
        return PCI_GPU;
    if ((obj->subtype && !strcmp(obj->subtype, "NVSwitch")) ||
        (pci->vendor_id == PCI_VENDOR_NVIDIA && pci->class_id == PCI_CLASS_BRIDGE_OTHER))
        return PCI_NVSWITCH;
    if ((pci->class_id >> 8) == PCI_CLASS_BASE_NETWORK || pci->class_id == PCI_CLASS_INFINIBAND)
        return PCI_NIC;
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling)
        if (c->type == HWLOC_OBJ_OS_DEVICE && (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ||
                                               c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS))
            return PCI_NIC;
    return PCI_IGNORED;
}

static void fill_gpu(crux_topo_device_t *d, hwloc_obj_t obj)
{
    const char *model = io_info(obj, "GPUModel"), *uuid = io_info(obj, "NVIDIAUUID");
    char pciname[64];

    pci_device_name(obj, pciname, sizeof(pciname));
    if (model)
        snprintf(d->model, sizeof(d->model), "%s", model);
    else if (pciname[0])
        snprintf(d->model, sizeof(d->model), "%s", pciname);
    else
        snprintf(d->model, sizeof(d->model), "NVIDIA %04x:%04x", d->vendor_id, d->device_id);
    snprintf(d->uuid, sizeof(d->uuid), "%s", uuid ? uuid : "");
    d->nvlink_gen = crux_topo_nvlink_gen_of_model(d->model);
    if (!d->nvlink_gen) /* the chip name, e.g. "GA100", may tell when the model does not */
        d->nvlink_gen = crux_topo_nvlink_gen_of_model(hwloc_obj_get_info_by_name(obj, "PCIDevice"));
}

static void fill_nic(crux_topo_device_t *d, hwloc_obj_t obj)
{
    pci_device_name(obj, d->model, sizeof(d->model));
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name)
            continue;
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !d->netdev[0])
            snprintf(d->netdev, sizeof(d->netdev), "%s", c->name);
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !d->rdmadev[0])
            snprintf(d->rdmadev, sizeof(d->rdmadev), "%s", c->name);
    }
}

/* Adds a PCI function (device or switch upstream port) below parent; port
 * is the root or downstream port between them, NULL if none. */
static int add_pci(struct crux_topo *t, hwloc_topology_t topo, hwloc_obj_t obj,
                   crux_topo_dev_type_t type, int parent, hwloc_obj_t port)
{
    const struct hwloc_pcidev_attr_s *pci =
        obj->type == HWLOC_OBJ_BRIDGE ? &obj->attr->bridge.upstream.pci : &obj->attr->pcidev;
    int id = crux_topo_add_device(t, type);
    if (id < 0)
        return -1;
    crux_topo_device_t *d = &t->devs[id];
    struct crux_topo_pcie_raw *raw = &t->pcie_raw[id];

    d->parent = parent;
    d->package = package_of(topo, obj);
    d->numa = numa_of(topo, obj);
    d->vendor_id = pci->vendor_id;
    d->device_id = pci->device_id;
    pci_address(pci, d->pci, sizeof(d->pci));
    raw->is_pci = 1;
    raw->domain = pci->domain;
    raw->bus = pci->bus;
    raw->dev = pci->dev;
    raw->func = pci->func;
    raw->own_gbps = pci->linkspeed;
    if (port) {
        raw->port_gbps = port->attr->bridge.upstream.pci.linkspeed;
        pci_address(&port->attr->bridge.upstream.pci, raw->port_pci, sizeof(raw->port_pci));
    }
    set_device_of(obj, id);
    return id;
}

/* Drops the last device added: a host bridge or switch with nothing of
 * interest below it. */
static void drop_last_device(struct crux_topo *t, hwloc_obj_t obj)
{
    t->ndevs--;
    obj->userdata = NULL;
}

/* Walks an I/O subtree; attach is the device PCIe objects below hang from,
 * port the root or downstream port passed on the way (NULL if none).
 * Host bridges and switches are kept only if a GPU, NVSwitch or NIC is
 * below them. */
static crux_status_t walk_io(struct crux_topo *t, hwloc_topology_t topo, hwloc_obj_t obj,
                             int attach, hwloc_obj_t port)
{
    int below = attach;
    hwloc_obj_t below_port = NULL;

    if (obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
        below = crux_topo_add_device(t, CRUX_TOPO_DEV_HOST_BRIDGE);
        if (below < 0)
            return CRUX_ERR_NO_MEMORY;
        t->devs[below].parent = attach;
        t->devs[below].package = package_of(topo, obj);
        t->devs[below].numa = numa_of(topo, obj);
        set_device_of(obj, below);
    } else if (obj->type == HWLOC_OBJ_BRIDGE) {
        if (obj->attr->bridge.depth % 2) {
            below_port = obj; /* root or downstream port: folded into attach */
        } else {
            below = add_pci(t, topo, obj, CRUX_TOPO_DEV_PCI_SWITCH, attach, port);
            if (below < 0)
                return CRUX_ERR_NO_MEMORY;
            pci_device_name(obj, t->devs[below].model, sizeof(t->devs[below].model));
        }
    } else if (obj->type == HWLOC_OBJ_PCI_DEVICE) {
        enum pci_role role = classify(obj);
        static const crux_topo_dev_type_t types[] = {
            [PCI_GPU] = CRUX_TOPO_DEV_GPU,
            [PCI_NVSWITCH] = CRUX_TOPO_DEV_NVSWITCH,
            [PCI_NIC] = CRUX_TOPO_DEV_NIC,
        };
        if (role == PCI_IGNORED)
            return CRUX_OK;
        int id = add_pci(t, topo, obj, types[role], attach, port);
        if (id < 0)
            return CRUX_ERR_NO_MEMORY;
        if (role == PCI_GPU)
            fill_gpu(&t->devs[id], obj);
        else if (role == PCI_NVSWITCH)
            pci_device_name(obj, t->devs[id].model, sizeof(t->devs[id].model));
        else
            fill_nic(&t->devs[id], obj);
        return CRUX_OK;
    } else {
        return CRUX_OK; /* OS devices are read with their PCI device */
    }
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) {
        crux_status_t st = walk_io(t, topo, c, below, below_port);
        if (st != CRUX_OK)
            return st;
    }
    if (below != attach && below == t->ndevs - 1)
        drop_last_device(t, obj);
    return CRUX_OK;
}

/* Walks the CPU tree to find where the I/O subtrees hang. */
static crux_status_t walk(struct crux_topo *t, hwloc_topology_t topo, hwloc_obj_t obj)
{
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) {
        crux_status_t st = walk_io(t, topo, c, package_of(topo, obj), NULL);
        if (st != CRUX_OK)
            return st;
    }
    for (hwloc_obj_t c = obj->first_child; c; c = c->next_sibling) {
        crux_status_t st = walk(t, topo, c);
        if (st != CRUX_OK)
            return st;
    }
    return CRUX_OK;
}

crux_status_t crux_topo_hwloc_discover(struct crux_topo *t, hwloc_topology_t topo)
{
    crux_status_t st = add_packages_and_numa(t, topo);
    if (st == CRUX_OK)
        st = walk(t, topo, hwloc_get_root_obj(topo));
    if (st == CRUX_OK)
        st = crux_topo_index_devices(t);
    return st;
}

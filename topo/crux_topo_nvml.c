/* NVLink, PCIe peer-to-peer status and GPU names from NVML, loaded at run
 * time (Debian's hwloc has no NVML backend, so on a real Debian GPU node
 * hwloc shows the GPUs only as PCI devices).
 *
 * The few NVML types and prototypes used are declared here, as NVML's
 * nvml.h defines them (API version 11 and later), so that nvml.h is not
 * needed at build time. */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo_internal.h"

#define NVML_SUCCESS                   0
#define NVML_FEATURE_ENABLED           1
#define NVML_NVLINK_DEVICE_TYPE_GPU    0
#define NVML_NVLINK_DEVICE_TYPE_IBMNPU 1
#define NVML_NVLINK_DEVICE_TYPE_SWITCH 2
#define NVML_P2P_CAPS_INDEX_READ       0
#define NVML_P2P_STATUS_OK             0
#define NVML_NAME_BUFFER               96
#define PCI_VENDOR_IBM                 0x1014
/* Link numbers are tried upwards until NVML refuses one; NVML_NVLINK_MAX_LINKS
 * is 18 today, this bounds the loop should a driver never refuse. */
#define NVLINK_LINKS_BOUND 64

typedef int nvml_return_t;
typedef struct nvml_device *nvml_device_t;
typedef struct { /* nvmlPciInfo_t */
    char bus_id_legacy[16];
    unsigned domain, bus, device;
    unsigned pci_device_id; /* device id << 16 | vendor id */
    unsigned pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info_t;

struct nvml {
    void *lib;
    nvml_return_t (*init)(void);
    nvml_return_t (*shutdown)(void);
    nvml_return_t (*device_count)(unsigned *count);
    nvml_return_t (*device_handle)(unsigned index, nvml_device_t *dev);
    nvml_return_t (*pci_info)(nvml_device_t dev, nvml_pci_info_t *pci);
    nvml_return_t (*name)(nvml_device_t dev, char *name, unsigned len);
    nvml_return_t (*uuid)(nvml_device_t dev, char *uuid, unsigned len);
    nvml_return_t (*link_state)(nvml_device_t dev, unsigned link, int *active);
    nvml_return_t (*link_version)(nvml_device_t dev, unsigned link, unsigned *version);
    nvml_return_t (*link_remote_pci)(nvml_device_t dev, unsigned link, nvml_pci_info_t *pci);
    nvml_return_t (*p2p_status)(nvml_device_t a, nvml_device_t b, int caps, int *status);
    /* optional: absent from older drivers */
    nvml_return_t (*architecture)(nvml_device_t dev, unsigned *arch);
    nvml_return_t (*link_remote_type)(nvml_device_t dev, unsigned link, int *type);
};

static int nvml_open(struct nvml *n, const char *library)
{
    memset(n, 0, sizeof(*n));
    n->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        return -1;
#define SYM(field, name) (*(void **)&n->field = dlsym(n->lib, name))
    SYM(architecture, "nvmlDeviceGetArchitecture");
    SYM(link_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");
    if (!SYM(init, "nvmlInit_v2") || !SYM(shutdown, "nvmlShutdown") ||
        !SYM(device_count, "nvmlDeviceGetCount_v2") ||
        !SYM(device_handle, "nvmlDeviceGetHandleByIndex_v2") ||
        !SYM(pci_info, "nvmlDeviceGetPciInfo_v3") || !SYM(name, "nvmlDeviceGetName") ||
        !SYM(uuid, "nvmlDeviceGetUUID") || !SYM(link_state, "nvmlDeviceGetNvLinkState") ||
        !SYM(link_version, "nvmlDeviceGetNvLinkVersion") ||
        !SYM(link_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2") ||
        !SYM(p2p_status, "nvmlDeviceGetP2PStatus")) {
        dlclose(n->lib);
        return -1;
    }
#undef SYM
    if (n->init() != NVML_SUCCESS) { /* e.g. no driver loaded: no GPU to see */
        dlclose(n->lib);
        return -1;
    }
    return 0;
}

static void nvml_close(struct nvml *n)
{
    n->shutdown();
    dlclose(n->lib);
}

/* NVLink generation from nvmlDeviceGetArchitecture (Pascal 4 ... Blackwell
 * 10), which is preferred: some drivers report NVLink version 5.0 for H100
 * links. */
static int gen_of_architecture(unsigned arch)
{
    switch (arch) {
    case 4: return 1;
    case 5: return 2;
    case 7: return 3;
    case 9: return 4;
    case 10: return 5;
    default: return 0;
    }
}

/* NVLink generation from the version NVML reports for a link:
 * 1 = 1.0, 2 = 2.0, 3 = 2.2, 4 = 3.0, 5 = 3.1, 6 = 4.0, 7 = 5.0. */
static int gen_of_link_version(unsigned version)
{
    static const int gen[] = { 0, 1, 2, 2, 3, 3, 4, 5 };
    return version < sizeof(gen) / sizeof(gen[0]) ? gen[version] : 0;
}

/* The model's device at the far end of a link, adding an NVSwitch the PCI
 * discovery did not keep (hwloc filters out the PCI class NVSwitches show
 * as); -1 if it cannot be placed. */
static int remote_device(struct crux_topo *t, int gpu, const nvml_pci_info_t *pci, int type)
{
    int id = crux_topo_find_pci(t, pci->domain, pci->bus, pci->device, 0);
    if (type == NVML_NVLINK_DEVICE_TYPE_IBMNPU || (pci->pci_device_id & 0xffff) == PCI_VENDOR_IBM)
        return t->devs[gpu].package; /* POWER: NVLink to the CPU */
    if (id >= 0 &&
        (t->devs[id].type == CRUX_TOPO_DEV_GPU || t->devs[id].type == CRUX_TOPO_DEV_NVSWITCH))
        return id;
    if (type == NVML_NVLINK_DEVICE_TYPE_GPU)
        return -1; /* a GPU hwloc does not show */
    id = crux_topo_add_device(t, CRUX_TOPO_DEV_NVSWITCH);
    if (id < 0)
        return -1;
    crux_topo_device_t *d = &t->devs[id];
    struct crux_topo_pcie_raw *raw = &t->pcie_raw[id];
    snprintf(d->pci, sizeof(d->pci), "%04x:%02x:%02x.0", pci->domain, pci->bus, pci->device);
    d->vendor_id = pci->pci_device_id & 0xffff;
    d->device_id = pci->pci_device_id >> 16;
    raw->is_pci = 1;
    raw->domain = pci->domain;
    raw->bus = pci->bus;
    raw->dev = pci->device;
    return id;
}

static crux_status_t read_links(struct crux_topo *t, struct nvml *n, nvml_device_t dev, int gpu)
{
    crux_topo_device_t *d = &t->devs[gpu];
    for (unsigned l = 0; l < NVLINK_LINKS_BOUND; l++) {
        int active = 0, type = -1;
        unsigned version = 0;
        nvml_pci_info_t pci;
        if (n->link_state(dev, l, &active) != NVML_SUCCESS)
            break; /* past the last link, or no NVLink at all */
        if (active != NVML_FEATURE_ENABLED)
            continue;
        if (n->link_remote_pci(dev, l, &pci) != NVML_SUCCESS)
            continue;
        if (n->link_remote_type && n->link_remote_type(dev, l, &type) != NVML_SUCCESS)
            type = -1;
        if (!d->nvlink_gen && n->link_version(dev, l, &version) == NVML_SUCCESS)
            d->nvlink_gen = gen_of_link_version(version);
        int remote = remote_device(t, gpu, &pci, type);
        if (remote < 0) {
            crux_topo_warnf(
                t,
                "live machine: NVML: %s NVLink %u leads to %04x:%02x:%02x, which is not "
                "in the topology; link ignored",
                d->name, l, pci.domain, pci.bus, pci.device);
            continue;
        }
        /* a GPU-GPU link is seen from both ends: count it from the lower one */
        if (t->devs[remote].type == CRUX_TOPO_DEV_GPU && remote < gpu)
            continue;
        crux_status_t st = crux_topo_add_nvlink_report(
            t, gpu, remote, crux_topo_nvlink_gbps_per_link(d->nvlink_gen), 1);
        if (st != CRUX_OK)
            return st;
    }
    return CRUX_OK;
}

crux_status_t crux_topo_nvml_discover(struct crux_topo *t, const char *library)
{
    struct nvml n;
    unsigned count = 0;
    crux_status_t st = CRUX_OK;

    if (nvml_open(&n, library))
        return CRUX_ERR_UNSUPPORTED;
    if (n.device_count(&count) != NVML_SUCCESS || count == 0) {
        nvml_close(&n);
        return CRUX_ERR_UNSUPPORTED;
    }
    nvml_device_t *devs = calloc(count, sizeof(*devs));
    int *gpu_of = calloc(count, sizeof(*gpu_of));
    if (!devs || !gpu_of) {
        st = CRUX_ERR_NO_MEMORY;
        goto out;
    }

    for (unsigned i = 0; i < count; i++) {
        nvml_pci_info_t pci;
        unsigned arch = 0;
        gpu_of[i] = -1;
        if (n.device_handle(i, &devs[i]) != NVML_SUCCESS ||
            n.pci_info(devs[i], &pci) != NVML_SUCCESS)
            continue;
        int id = crux_topo_find_pci(t, pci.domain, pci.bus, pci.device, 0);
        if (id < 0 || t->devs[id].type != CRUX_TOPO_DEV_GPU) {
            crux_topo_warnf(t,
                            "live machine: NVML GPU %u at %s is not in hwloc's topology; ignored",
                            i, pci.bus_id);
            continue;
        }
        gpu_of[i] = id;
        crux_topo_device_t *d = &t->devs[id];
        char name[NVML_NAME_BUFFER];
        if (n.name(devs[i], name, sizeof(name)) == NVML_SUCCESS)
            snprintf(d->model, sizeof(d->model), "%.*s", (int)sizeof(d->model) - 1, name);
        if (n.uuid(devs[i], name, sizeof(name)) == NVML_SUCCESS)
            snprintf(d->uuid, sizeof(d->uuid), "%.*s", (int)sizeof(d->uuid) - 1, name);
        if (n.architecture && n.architecture(devs[i], &arch) == NVML_SUCCESS &&
            gen_of_architecture(arch))
            d->nvlink_gen = gen_of_architecture(arch);
        else
            d->nvlink_gen = crux_topo_nvlink_gen_of_model(d->model);
    }
    for (unsigned i = 0; i < count && st == CRUX_OK; i++)
        if (gpu_of[i] >= 0)
            st = read_links(t, &n, devs[i], gpu_of[i]);
    if (st == CRUX_OK)
        st = crux_topo_index_devices(t); /* NVSwitches may have been added */

    int ngpus = t->ntype[CRUX_TOPO_DEV_GPU];
    if (st == CRUX_OK && !(t->p2p_refused = calloc((size_t)ngpus * ngpus + 1, 1)))
        st = CRUX_ERR_NO_MEMORY;
    for (unsigned i = 0; i < count && st == CRUX_OK; i++) {
        for (unsigned j = 0; j < count; j++) {
            int status;
            if (i == j || gpu_of[i] < 0 || gpu_of[j] < 0 ||
                n.p2p_status(devs[i], devs[j], NVML_P2P_CAPS_INDEX_READ, &status) != NVML_SUCCESS)
                continue;
            if (status != NVML_P2P_STATUS_OK)
                t->p2p_refused[t->devs[gpu_of[i]].index * ngpus + t->devs[gpu_of[j]].index] = 1;
        }
    }
    if (st == CRUX_OK && t->nreports)
        t->nvlink_source = CRUX_TOPO_NVLINK_FROM_NVML;
out:
    free(devs);
    free(gpu_of);
    nvml_close(&n);
    return st;
}

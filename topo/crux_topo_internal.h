/* The model's storage and the steps that fill it.  Private to libcrux_topo:
 * users see crux_topo.h only. */
#ifndef CRUX_TOPO_INTERNAL_H
#define CRUX_TOPO_INTERNAL_H

#include <hwloc.h>

#include "topo/crux_topo.h"

/* What discovery knows about a device's PCIe link to its parent, before the
 * links step turns it into a bandwidth. */
struct crux_topo_pcie_raw {
    int is_pci; /* the device is a PCI function at domain:bus:dev.func */
    unsigned domain, bus, dev, func;
    double own_gbps;   /* hwloc's speed of the device itself (current, or a GPU's maximum) */
    double port_gbps;  /* hwloc's speed of the root or downstream port above it, 0 if none */
    double cap_gbps;   /* capability from sysfs (lower of both ends' maximum), 0 if unknown */
    char port_pci[16]; /* PCI address of that port, "" if none */
};

/* One NVLink connection found by discovery: nvlinks bonded links carrying
 * gbps in all, per direction.  The links step merges reports of the same
 * pair. */
struct crux_topo_nvlink_report {
    int a, b; /* device ids */
    double gbps;
    int nvlinks; /* 0 if unknown */
};

struct crux_topo {
    char *xml_path; /* NULL: live machine; names the text when xml_text is set */
    char *xml_text; /* the XML given in memory (crux_topo_options_t.xml_text), else NULL */
    size_t xml_len;
    int smp_assumed; /* smp_gbps is CRUX_TOPO_SMP_GBPS_DEFAULT, not given */
    crux_topo_nvlink_source_t nvlink_source;
    int nvlink_corrected;
    double smp_gbps;
    crux_topo_warn_fn warn;
    void *warn_arg;

    int ndevs, devs_cap;
    crux_topo_device_t *devs;
    struct crux_topo_pcie_raw *pcie_raw; /* parallel to devs */
    int ntype[CRUX_TOPO_DEV_TYPE_COUNT];
    int *type_ids[CRUX_TOPO_DEV_TYPE_COUNT]; /* device ids of each type, by index */

    int nreports, reports_cap;
    struct crux_topo_nvlink_report *reports;
    /* GPU pairs (by index) whose PCIe peer-to-peer NVML refuses; NULL: unknown */
    unsigned char *p2p_refused;

    int nlinks, links_cap;
    crux_topo_link_t *links;

    int npaths;
    crux_topo_path_t *paths;
    int *best;                 /* [gpu index * ndevs + dst id]: index in paths, or -1 */
    crux_topo_pathset_t *sets; /* [src gpu * ngpus + dst gpu] */

    int nislands;
    crux_topo_island_t *islands;
    int *island_gpus; /* the islands' GPU lists, back to back */
    int *island_of;   /* [gpu index] */

    int ngroups;
    crux_topo_host_group_t *groups;
    int *group_ids; /* the groups' NUMA, GPU and NIC lists, back to back */
};

/* crux_topo_model.c: growing the model */
/* Devices that have no CPU set point here, so that the field is never NULL;
 * other CPU sets are allocated and freed with the model. */
extern const char crux_topo_no_cpuset[];
int crux_topo_add_device(struct crux_topo *t, crux_topo_dev_type_t type); /* id, or -1 */
int crux_topo_add_link(struct crux_topo *t, int a, int b, crux_topo_link_type_t type, double gbps,
                       int nvlinks); /* id, or -1 */
crux_status_t crux_topo_add_nvlink_report(struct crux_topo *t, int a, int b, double gbps,
                                          int nvlinks);
/* Number each type's devices (PCI devices in bus order) and fill type_ids
 * and the device names. */
crux_status_t crux_topo_index_devices(struct crux_topo *t);
void crux_topo_warnf(const struct crux_topo *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int crux_topo_find_pci(const struct crux_topo *t, unsigned domain, unsigned bus, unsigned dev,
                       unsigned func); /* id, or -1 */

/* crux_topo_xmlcheck.c: what must be true of an XML file before hwloc
 * reads it, and what hwloc does not tell afterwards. */
#define CRUX_TOPO_XML_MAX_MATRICES 8
struct crux_topo_xml_facts {
    int nmatrices; /* NVLinkBandwidth matrices declared, in file order */
    unsigned matrix_nbobjs[CRUX_TOPO_XML_MAX_MATRICES];
};
/* The file at path, or when text is not NULL the len bytes of XML text at
 * text (then path only names it in messages). */
crux_status_t crux_topo_xml_check(const char *path, const char *text, size_t len,
                                  struct crux_topo_xml_facts *facts, char *err, size_t errlen);
/* crux_topo_xmltrial.c: CRUX_ERR_INVALID when hwloc crashes (or hangs)
 * importing the file (or text, as for crux_topo_xml_check) in a child
 * process; CRUX_OK when it loads or rejects it there. */
crux_status_t crux_topo_xml_trial(const char *path, const char *text, size_t len, char *err,
                                  size_t errlen);

/* crux_topo_hwloc.c: discovery of packages, NUMA nodes and the PCIe tree */
/* xml_path NULL: the live machine; text not NULL: the len bytes of XML
 * there, which xml_path names in messages. */
crux_status_t crux_topo_hwloc_open(const char *xml_path, const char *text, size_t len,
                                   hwloc_topology_t *topology, char *err, size_t errlen);
crux_status_t crux_topo_hwloc_discover(struct crux_topo *t, hwloc_topology_t topology);
/* The device an hwloc object stands for (an OS device stands for its PCI
 * device), -1 if none. */
int crux_topo_hwloc_device_of(hwloc_obj_t obj);

/* crux_topo_hwloc_nvlink.c: NVLink reports from the NVLinkBandwidth matrix */
crux_status_t crux_topo_hwloc_nvlink(struct crux_topo *t, hwloc_topology_t topology,
                                     const struct crux_topo_xml_facts *facts);

/* crux_topo_nvml.c: NVLink reports, P2P status and GPU names from NVML on
 * the live machine, loaded from library (CRUX_TOPO_NVML_LIBRARY but in
 * tests).  CRUX_ERR_UNSUPPORTED when NVML is absent or sees no GPU, which
 * is normal. */
#define CRUX_TOPO_NVML_LIBRARY "libnvidia-ml.so.1"
crux_status_t crux_topo_nvml_discover(struct crux_topo *t, const char *library);

/* crux_topo_sysfs.c: PCIe generation and width, NIC port rates, from the
 * sysfs mounted at root ("/sys" on the live machine) */
void crux_topo_sysfs_discover(struct crux_topo *t, const char *root);

/* crux_topo_gpu_arch.c: what a GPU's model says about its NVLink */
/* 1-5; 0 if unknown, and for the PCIe cards of the generations that had
 * no NVLink bridge (P100 and V100 PCIe) */
int crux_topo_nvlink_gen_of_model(const char *model);  /* 1-5, 0 if unknown */
double crux_topo_nvlink_gbps_per_link(int nvlink_gen); /* 0 if gen unknown */
double crux_topo_pcie_gbps(int gen, int width);        /* 0 if unknown */

/* The steps after discovery */
crux_status_t crux_topo_build_links(struct crux_topo *t);     /* crux_topo_links.c */
crux_status_t crux_topo_build_paths(struct crux_topo *t);     /* crux_topo_paths.c */
crux_status_t crux_topo_build_multipath(struct crux_topo *t); /* crux_topo_multipath.c */
crux_status_t crux_topo_build_groups(struct crux_topo *t);    /* crux_topo_groups.c */

/* crux_topo_route.c: the single paths that the paths and multipath steps
 * choose from.  Each returns 1 and fills *p when the path exists, else 0. */
int crux_topo_route_nvlink(const struct crux_topo *t, int a, int b, crux_topo_path_t *p);
int crux_topo_route_nvswitch(const struct crux_topo *t, int a, int b, crux_topo_path_t *p);
int crux_topo_route_pcie_p2p(const struct crux_topo *t, int a, int b, crux_topo_path_t *p);
int crux_topo_route_host(const struct crux_topo *t, int a, int b, crux_topo_path_t *p);
/* Calls fn for every NVLink path from GPU a to GPU b relayed through 1 to
 * CRUX_TOPO_MAX_RELAYS other GPUs over direct GPU-GPU NVLinks. */
void crux_topo_route_multihop(const struct crux_topo *t, int a, int b,
                              void (*fn)(void *arg, const crux_topo_path_t *p), void *arg);
/* Whether two GPUs have a direct or NVSwitch NVLink path. */
int crux_topo_nvlink_connected(const struct crux_topo *t, int a, int b);

#endif

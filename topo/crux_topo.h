/* libcrux_topo: a model of one node's interconnect, for the multipath
 * transport and the hierarchical collectives.
 *
 * The model is built in four steps, each from the plain data of the one
 * before (as NCCL's src/graph does):
 *   discovery  devices from hwloc (an XML export or the live machine), NVLink
 *              from hwloc's NVLinkBandwidth matrix or, on a live machine,
 *              from NVML loaded at run time;
 *   links      NVLink, PCIe and inter-socket (SMP) links with bandwidths;
 *   paths      the best path between every pair of GPUs, from every GPU to
 *              every NIC and to the memory of every NUMA node, and for every
 *              ordered GPU pair the set of disjoint paths a multipath transfer
 *              can use at once;
 *   groups     fully NVLink-connected GPU islands and host-memory groups.
 *
 * All bandwidths are in GB/s (10^9 bytes per second) per direction.  A
 * machine with no GPU, no NVML or no NVLink is a normal case: the model then
 * has packages, NUMA nodes, host bridges, PCIe switches and NICs only.
 *
 * Everything a model holds is owned by it and freed by crux_topo_free();
 * there is no global state, so several models may live side by side and
 * the library can be linked into a shared object.  A model is immutable
 * once loaded and may be read from several threads. */
#ifndef CRUX_TOPO_H
#define CRUX_TOPO_H

#include <stddef.h>
#include <stdio.h>

#include "common/crux_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The inter-socket link (Intel UPI/QPI, AMD xGMI/Infinity Fabric, IBM
 * X-bus) is not reported by hwloc.  Its bandwidth per direction is this
 * default (about one UPI link), unless crux_topo_options_t.smp_gbps or the
 * environment variable CRUX_TOPO_SMP_GBPS says otherwise. */
#define CRUX_TOPO_SMP_GBPS_DEFAULT 20.0
#define CRUX_TOPO_SMP_GBPS_ENV     "CRUX_TOPO_SMP_GBPS"

/* The largest hwloc XML export read (a 16-GPU DGX-2's is 41 KB); a larger
 * file, or one that is not a regular file (a FIFO, /dev/zero), is refused
 * before it is read. */
#define CRUX_TOPO_MAX_XML_BYTES (64 << 20)

/* Multi-hop NVLink paths relay through at most this many peer GPUs. */
#define CRUX_TOPO_MAX_RELAYS 2

/* The most directed links one path may use (an NVSwitch path uses every
 * link between its GPUs and the switches: 2 x 18 on an HGX H100). */
#define CRUX_TOPO_PATH_MAX_LINKS 64

/* ------------------------------------------------------------------ */
/* Devices */

typedef enum {
    CRUX_TOPO_DEV_PACKAGE,     /* a CPU package (socket); holds its NUMA nodes' memory */
    CRUX_TOPO_DEV_NUMA,        /* a NUMA node */
    CRUX_TOPO_DEV_HOST_BRIDGE, /* a PCIe root complex with its root ports */
    CRUX_TOPO_DEV_PCI_SWITCH,  /* a PCIe switch: its upstream port with its downstream ports */
    CRUX_TOPO_DEV_GPU,
    CRUX_TOPO_DEV_NVSWITCH,
    CRUX_TOPO_DEV_NIC,
    CRUX_TOPO_DEV_TYPE_COUNT
} crux_topo_dev_type_t;

typedef struct {
    int id; /* this device's place in the model: crux_topo_device(topo, id) */
    crux_topo_dev_type_t type;
    int index;     /* rank among the devices of its type; GPUs, NICs and NVSwitches
                                 * in PCI bus order, which is the NVML and CUDA (with
                                 * CUDA_DEVICE_ORDER=PCI_BUS_ID) order of GPUs */
    char name[24]; /* unique short name: "gpu0", "nic1", "numa8", "pkg0",
                                 * "hostbridge2", "pcisw3", "nvswitch4" */
    int os_index;  /* packages and NUMA nodes: the OS number (numactl's), else -1 */
    int package;   /* device id of the package it is in or local to, -1 if none */
    int numa;      /* device id of its local NUMA node, -1 if unknown */
    int parent;    /* PCIe tree: device id of the switch, host bridge or package
                                 * it hangs from; -1 for packages and NUMA nodes */
    int uplink;    /* link id to parent, -1 if none */
    char pci[16];  /* PCI address "dddd:bb:dd.f", "" if not a PCI device */
    unsigned vendor_id, device_id;
    int pcie_gen, pcie_width; /* of the link to parent when known (live machine), else 0 */
    char model[64];           /* GPU model, or PCI device name of a switch or NIC */
    char uuid[48];            /* GPU UUID ("GPU-...") when known, else "" */
    int nvlink_gen;           /* GPU: NVLink generation 1-5 when known; 0 when unknown or
                               * when it has none (a P100 or V100 PCIe card, or a GPU
                               * with no NVLink where hwloc's matrix or NVML tells) */
    char netdev[32];          /* NIC: network interface ("eth0"), "" if none */
    char rdmadev[32];         /* NIC: RDMA device ("mlx5_0"), "" if none */
    double port_gbit;         /* NIC: port rate in Gbit/s when known (live machine), else 0 */
    const char *cpuset;       /* packages and NUMA nodes: CPU list "0-23,48-71"; "" else */
} crux_topo_device_t;

/* ------------------------------------------------------------------ */
/* Links */

typedef enum {
    CRUX_TOPO_LINK_NVLINK, /* GPU-GPU, GPU-NVSwitch or GPU-package (POWER) */
    CRUX_TOPO_LINK_PCIE,   /* device or switch to switch or host bridge; host bridge to package */
    CRUX_TOPO_LINK_SMP,    /* package to package */
} crux_topo_link_type_t;

typedef struct {
    int id;
    int a, b; /* device ids */
    crux_topo_link_type_t type;
    double gbps; /* per direction; 0 when hwloc reports no PCIe speed for either end */
    int nvlinks; /* NVLINK: bonded links between a and b, 0 if unknown */
} crux_topo_link_t;

/* ------------------------------------------------------------------ */
/* Paths */

typedef enum {                                 /* in order of preference */
               CRUX_TOPO_PATH_NVLINK,          /* a direct NVLink between two GPUs */
               CRUX_TOPO_PATH_NVSWITCH,        /* NVLink through the NVSwitch fabric */
               CRUX_TOPO_PATH_NVLINK_MULTIHOP, /* NVLink through 1 or 2 peer GPUs' memory */
               CRUX_TOPO_PATH_PCIE_P2P,        /* PCIe peer-to-peer below a common PCIe switch */
               CRUX_TOPO_PATH_HOST, /* through host memory (same socket or across sockets) */
               CRUX_TOPO_PATH_KIND_COUNT
} crux_topo_path_kind_t;

/* One directed use of a link: from a to b, or from b to a when reverse. */
typedef struct {
    int link;
    int reverse;
} crux_topo_hop_t;

typedef struct {
    int src, dst; /* device ids */
    crux_topo_path_kind_t kind;
    int hops;                         /* links crossed one after the other (GPU-NVSwitch-GPU: 2) */
    double gbps;                      /* bottleneck: the lowest bandwidth of its links */
    int cross_socket;                 /* HOST: the path crosses the inter-socket link */
    int nrelays;                      /* NVLINK_MULTIHOP: */
    int relays[CRUX_TOPO_MAX_RELAYS]; /* device ids of the relay GPUs, in order */
    int staging_numa;                 /* HOST: device id of the NUMA node whose memory stages the
                                 * data (the destination's), -1 otherwise */
    int nlinks;                       /* the directed links it uses */
    crux_topo_hop_t links[CRUX_TOPO_PATH_MAX_LINKS];
} crux_topo_path_t;

/* Two paths are *disjoint* when they use no directed link in common: a link
 * used from a to b by one path may be used from b to a by the other, since
 * NVLink, PCIe and SMP links carry both directions at full rate at once.
 * An NVSwitch path uses every link between its source GPU and the switches
 * and between the switches and its destination GPU.
 *
 * The multipath set of an ordered GPU pair is a set of pairwise disjoint
 * paths with the largest aggregate bandwidth (the sum of their bottlenecks),
 * chosen among: the direct NVLink, the NVSwitch path, the NVLink paths
 * relayed through up to CRUX_TOPO_MAX_RELAYS peer GPUs, PCIe peer-to-peer
 * (only for a pair with no direct or NVSwitch NVLink, since CUDA then sends
 * peer traffic over NVLink) and the host-staged path.  A GPU with an NVLink
 * to its CPU (POWER) reaches host memory over it, not over PCIe.  Relay
 * GPUs and host memory are assumed not to be bottlenecks themselves. */
typedef struct {
    int src, dst; /* device ids of the two GPUs */
    int npaths;
    const crux_topo_path_t *paths; /* widest first */
    double gbps;                   /* aggregate: the sum of the paths' bandwidths */
} crux_topo_pathset_t;

/* ------------------------------------------------------------------ */
/* Groups */

/* A fully NVLink-connected island: every two of its GPUs have a direct or
 * NVSwitch NVLink path, so a flat two-stage Allreduce can run in it.  The
 * islands partition the GPUs; they are built first-fit in GPU order (a GPU
 * joins the first island all of whose members it reaches, else starts its
 * own).  A GPU without NVLink is an island of one. */
typedef struct {
    int ngpus;
    const int *gpus; /* GPU indices, increasing */
    double min_gbps; /* the slowest best path between two of its GPUs; 0 for one GPU */
} crux_topo_island_t;

/* The host memory of one package, for placing host buffers: its NUMA nodes
 * and CPUs, and the GPUs and NICs attached to it. */
typedef struct {
    int package; /* device id of the package */
    int nnuma;
    const int *numa;    /* device ids of its NUMA nodes */
    const char *cpuset; /* its CPUs, as a list "0-23,48-71" */
    int ngpus;
    const int *gpus; /* GPU indices */
    int nnics;
    const int *nics; /* device ids */
} crux_topo_host_group_t;

/* ------------------------------------------------------------------ */
/* Loading */

typedef void (*crux_topo_warn_fn)(void *arg, const char *message);

typedef struct {
    /* hwloc XML export to read.  NULL: the file named by HWLOC_XMLFILE if
     * set, otherwise the live machine (then NVML is used for NVLink). */
    const char *xml_path;
    /* An hwloc XML export already in memory (e.g. read from standard
     * input), xml_len bytes of it, at most CRUX_TOPO_MAX_XML_BYTES; it is
     * copied.  xml_path then only names it in messages and
     * crux_topo_xml_path() ("XML text" when NULL). */
    const char *xml_text;
    size_t xml_len;
    /* Inter-socket bandwidth; <= 0: CRUX_TOPO_SMP_GBPS from the
     * environment, else CRUX_TOPO_SMP_GBPS_DEFAULT. */
    double smp_gbps;
    /* Receives each warning (one line, no newline), e.g. an NVLink matrix
     * that names unknown objects and is ignored.  NULL: printed on stderr
     * as "crux_topo: warning: ...". */
    crux_topo_warn_fn warn;
    void *warn_arg;
    /* Multipath sets cost memory and time quadratic in the GPUs (every
     * ordered pair, about 0.5 KB a path).  0: always built (the default);
     * > 0: built only for at most this many GPUs, else skipped
     * (crux_topo_multipath returns NULL, crux_topo_has_multipath 0). */
    int multipath_max_gpus;
} crux_topo_options_t;

typedef struct crux_topo crux_topo_t;

void crux_topo_options_init(crux_topo_options_t *opts);

/* Build the model.  On failure *topo is NULL and err (when errlen > 0)
 * holds one line naming the file and the reason.  Status:
 *   CRUX_ERR_NOT_FOUND     the XML file does not exist
 *   CRUX_ERR_IO            it cannot be read; or the live discovery failed
 *   CRUX_ERR_INVALID       it is not a well-formed hwloc XML topology, or
 *                          smp_gbps/CRUX_TOPO_SMP_GBPS is not a number > 0
 *   CRUX_ERR_UNSUPPORTED   it comes from a newer hwloc than this one can import
 *   CRUX_ERR_NO_MEMORY */
crux_status_t crux_topo_load(const crux_topo_options_t *opts, crux_topo_t **topo, char *err,
                             size_t errlen);
void crux_topo_free(crux_topo_t *topo);

/* ------------------------------------------------------------------ */
/* Reading the model */

typedef enum {
    CRUX_TOPO_NVLINK_NONE,       /* no NVLink information */
    CRUX_TOPO_NVLINK_FROM_HWLOC, /* hwloc's NVLinkBandwidth matrix */
    CRUX_TOPO_NVLINK_FROM_NVML,  /* NVML on the live machine */
} crux_topo_nvlink_source_t;

/* The XML file read, or NULL for the live machine. */
const char *crux_topo_xml_path(const crux_topo_t *topo);
crux_topo_nvlink_source_t crux_topo_nvlink_source(const crux_topo_t *topo);
/* hwloc before 2.12 counts 50000 MB/s per NVLink 3.0 link (A100) where the
 * link carries 25 GB/s per direction; the model halves such figures (see
 * crux_topo_hwloc_nvlink.c).  This is how many GPU-GPU, GPU-NVSwitch or
 * GPU-CPU matrix entries were halved. */
int crux_topo_nvlink_corrected(const crux_topo_t *topo);
double crux_topo_smp_gbps(const crux_topo_t *topo);
/* 1 when the inter-socket bandwidth is CRUX_TOPO_SMP_GBPS_DEFAULT, an
 * assumption, rather than given by smp_gbps or CRUX_TOPO_SMP_GBPS. */
int crux_topo_smp_assumed(const crux_topo_t *topo);

int crux_topo_num_devices(const crux_topo_t *topo);
const crux_topo_device_t *crux_topo_device(const crux_topo_t *topo, int id);
int crux_topo_count(const crux_topo_t *topo, crux_topo_dev_type_t type);
/* The device of a type by its index, NULL if out of range. */
const crux_topo_device_t *crux_topo_find(const crux_topo_t *topo, crux_topo_dev_type_t type,
                                         int index);
/* Shorthand for crux_topo_find(topo, CRUX_TOPO_DEV_GPU, index). */
const crux_topo_device_t *crux_topo_gpu(const crux_topo_t *topo, int index);

int crux_topo_num_links(const crux_topo_t *topo);
const crux_topo_link_t *crux_topo_link(const crux_topo_t *topo, int id);
/* The link between two devices, NULL if they are not linked. */
const crux_topo_link_t *crux_topo_link_between(const crux_topo_t *topo, int a, int b);

/* The best path from a GPU to another GPU, a NIC or a NUMA node (device
 * ids): the first kind in the order of crux_topo_path_kind_t, and within a
 * kind the widest, then the shortest.  NULL if none (different devices
 * always have a host path unless the PCIe tree is missing). */
const crux_topo_path_t *crux_topo_path(const crux_topo_t *topo, int src, int dst);
/* All best paths, for iteration: GPU-GPU (ordered pairs), GPU-NIC, GPU-NUMA. */
int crux_topo_num_paths(const crux_topo_t *topo);
const crux_topo_path_t *crux_topo_path_at(const crux_topo_t *topo, int i);

/* The multipath set of two different GPUs (GPU indices), NULL otherwise. */
/* 1 when the multipath sets were built (see multipath_max_gpus). */
int crux_topo_has_multipath(const crux_topo_t *topo);
const crux_topo_pathset_t *crux_topo_multipath(const crux_topo_t *topo, int src_gpu, int dst_gpu);

int crux_topo_num_islands(const crux_topo_t *topo);
const crux_topo_island_t *crux_topo_island(const crux_topo_t *topo, int i);
/* The island a GPU belongs to, -1 if no such GPU. */
int crux_topo_island_of(const crux_topo_t *topo, int gpu);

int crux_topo_num_host_groups(const crux_topo_t *topo);
const crux_topo_host_group_t *crux_topo_host_group(const crux_topo_t *topo, int i);
/* The host group whose CPUs include all of 'cpus' (a list such as "0-3,8"),
 * e.g. a process's binding; -1 when none does or the list is malformed. */
int crux_topo_host_group_of_cpus(const crux_topo_t *topo, const char *cpus);
/* The host group this process is bound inside (its CPU affinity), -1 when
 * its binding spans host groups or cannot be read. */
int crux_topo_host_group_of_self(const crux_topo_t *topo);

/* ------------------------------------------------------------------ */
/* Connection classes, as nvidia-smi topo -m names them */

typedef enum {                        /* from the closest to the farthest */
               CRUX_TOPO_CONN_SELF,   /* X: the same device */
               CRUX_TOPO_CONN_NVLINK, /* NV#: a direct NVLink, or both GPUs on the NVSwitch fabric */
               CRUX_TOPO_CONN_PIX,    /* both right below one PCIe switch */
               CRUX_TOPO_CONN_PXB,    /* below a tree of PCIe switches, not through a host bridge */
               CRUX_TOPO_CONN_PHB,    /* through one PCIe host bridge */
               CRUX_TOPO_CONN_NODE,   /* between host bridges of one NUMA node */
               CRUX_TOPO_CONN_SYS,    /* between NUMA nodes (the inter-socket link) */
               CRUX_TOPO_CONN_COUNT
} crux_topo_conn_t;

/* How two GPUs or NICs (device ids) are connected, from the PCIe tree and
 * the NVLinks alone (the best path may be another, e.g. an NVLink relay
 * between two GPUs the PCIe tree puts on two sockets).  For
 * CRUX_TOPO_CONN_NVLINK, *nvlinks (when nvlinks is not NULL) receives the
 * bonded links: of the direct link, or the fewer of the two GPUs' links to
 * the NVSwitches; 0 if unknown.  CRUX_TOPO_CONN_COUNT for other devices. */
crux_topo_conn_t crux_topo_connection(const crux_topo_t *topo, int a, int b, int *nvlinks);
const char *crux_topo_conn_name(crux_topo_conn_t conn); /* "X", "NV", "PIX", ... "SYS" */

/* ------------------------------------------------------------------ */
/* Names and exports */

const char *crux_topo_dev_type_name(crux_topo_dev_type_t type);   /* "gpu", "pcie-switch", ... */
const char *crux_topo_link_type_name(crux_topo_link_type_t type); /* "nvlink", "pcie", "smp" */
const char *crux_topo_path_kind_name(crux_topo_path_kind_t kind); /* "nvlink", "nvswitch",
                                                                     * "nvlink-multihop",
                                                                     * "pcie-p2p", "host" */
const char *
crux_topo_nvlink_source_name(crux_topo_nvlink_source_t source); /* "none", "hwloc", "nvml" */

/* The whole model as JSON text (see docs/usage/crux-topo.md for its fields), to be freed
 * with free(); NULL when out of memory. */
char *crux_topo_to_json(const crux_topo_t *topo);
/* A Graphviz (dot) picture of the devices and links; CRUX_ERR_IO if writing fails. */
crux_status_t crux_topo_write_dot(const crux_topo_t *topo, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

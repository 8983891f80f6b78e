/* A stand-in for NVML (libnvidia-ml.so.1) that reports the GPUs and NVLinks
 * a test describes, so that libcrux_topo's NVML discovery can be tested on
 * machines without a GPU.  The test loads the same shared object and calls
 * mock_nvml_configure() through dlsym before the discovery runs. */
#ifndef CRUX_TESTS_MOCK_NVML_H
#define CRUX_TESTS_MOCK_NVML_H

#define MOCK_NVML_MAX_LINKS 18 /* NVML_NVLINK_MAX_LINKS */
#define MOCK_NVML_MAX_GPUS  16

struct mock_nvml_link {
    unsigned domain, bus, device; /* the PCI address of the far end */
    unsigned pci_device_id;       /* its device id << 16 | vendor id */
    int remote_type;              /* nvmlIntNvLinkDeviceType_t: 0 GPU, 1 IBM NPU, 2 switch */
    unsigned version;             /* nvmlDeviceGetNvLinkVersion's answer */
};

struct mock_nvml_gpu {
    unsigned domain, bus, device;
    const char *name, *uuid;
    unsigned architecture; /* nvmlDeviceArchitecture_t, 0: call fails */
    int nlinks;            /* active links; 0: NVLink not supported */
    struct mock_nvml_link links[MOCK_NVML_MAX_LINKS];
};

/* gpus: ngpus GPUs in NVML order; p2p_refused: ngpus x ngpus flags of
 * pairs whose P2P status is "not supported" (NULL: all OK). */
typedef void (*mock_nvml_configure_fn)(int ngpus, const struct mock_nvml_gpu *gpus,
                                       const unsigned char *p2p_refused);

#endif

/* The NVML functions libcrux_topo calls, answering from the description
 * given to mock_nvml_configure().  Types as NVML's nvml.h defines them. */
#include <stdio.h>
#include <string.h>

#include "tests/mock/mock_nvml.h"

#define NVML_SUCCESS                0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED    3

typedef struct {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info_t;

static int ngpus;
static struct mock_nvml_gpu gpus[MOCK_NVML_MAX_GPUS];
static unsigned char refused[MOCK_NVML_MAX_GPUS * MOCK_NVML_MAX_GPUS];

void mock_nvml_configure(int n, const struct mock_nvml_gpu *g, const unsigned char *p2p_refused)
{
    ngpus = n;
    if (n)
        memcpy(gpus, g, sizeof(*g) * (size_t)n);
    memset(refused, 0, sizeof(refused));
    if (p2p_refused)
        memcpy(refused, p2p_refused, (size_t)n * (size_t)n);
}

static void fill_pci(nvml_pci_info_t *pci, unsigned domain, unsigned bus, unsigned device,
                     unsigned id)
{
    memset(pci, 0, sizeof(*pci));
    pci->domain = domain;
    pci->bus = bus;
    pci->device = device;
    pci->pci_device_id = id;
    snprintf(pci->bus_id, sizeof(pci->bus_id), "%08x:%02x:%02x.0", domain, bus, device);
}

int nvmlInit_v2(void)
{
    return NVML_SUCCESS;
}
int nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned *count)
{
    *count = (unsigned)ngpus;
    return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, struct mock_nvml_gpu **dev)
{
    if (index >= (unsigned)ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &gpus[index];
    return NVML_SUCCESS;
}

int nvmlDeviceGetPciInfo_v3(struct mock_nvml_gpu *dev, nvml_pci_info_t *pci)
{
    fill_pci(pci, dev->domain, dev->bus, dev->device, 0x1db110de);
    return NVML_SUCCESS;
}

int nvmlDeviceGetName(struct mock_nvml_gpu *dev, char *name, unsigned len)
{
    snprintf(name, len, "%s", dev->name);
    return NVML_SUCCESS;
}

int nvmlDeviceGetUUID(struct mock_nvml_gpu *dev, char *uuid, unsigned len)
{
    snprintf(uuid, len, "%s", dev->uuid);
    return NVML_SUCCESS;
}

int nvmlDeviceGetArchitecture(struct mock_nvml_gpu *dev, unsigned *arch)
{
    *arch = dev->architecture;
    return dev->architecture ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

int nvmlDeviceGetNvLinkState(struct mock_nvml_gpu *dev, unsigned link, int *active)
{
    if (dev->nlinks == 0)
        return NVML_ERROR_NOT_SUPPORTED;
    if (link >= MOCK_NVML_MAX_LINKS)
        return NVML_ERROR_INVALID_ARGUMENT;
    *active = link < (unsigned)dev->nlinks;
    return NVML_SUCCESS;
}

int nvmlDeviceGetNvLinkVersion(struct mock_nvml_gpu *dev, unsigned link, unsigned *version)
{
    if (link >= (unsigned)dev->nlinks)
        return NVML_ERROR_INVALID_ARGUMENT;
    *version = dev->links[link].version;
    return NVML_SUCCESS;
}

int nvmlDeviceGetNvLinkRemotePciInfo_v2(struct mock_nvml_gpu *dev, unsigned link,
                                        nvml_pci_info_t *pci)
{
    if (link >= (unsigned)dev->nlinks)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct mock_nvml_link *l = &dev->links[link];
    fill_pci(pci, l->domain, l->bus, l->device, l->pci_device_id);
    return NVML_SUCCESS;
}

int nvmlDeviceGetNvLinkRemoteDeviceType(struct mock_nvml_gpu *dev, unsigned link, int *type)
{
    if (link >= (unsigned)dev->nlinks)
        return NVML_ERROR_INVALID_ARGUMENT;
    *type = dev->links[link].remote_type;
    return NVML_SUCCESS;
}

int nvmlDeviceGetP2PStatus(struct mock_nvml_gpu *a, struct mock_nvml_gpu *b, int caps, int *status)
{
    (void)caps;
    *status = refused[(a - gpus) * ngpus + (b - gpus)] ? 5 /* NOT_SUPPORTED */ : 0;
    return NVML_SUCCESS;
}

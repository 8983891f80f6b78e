/* Link rates by generation: NVLink per GPU model, PCIe per generation and
 * width. */
#include "config.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "topo/crux_topo_internal.h"

/* Whether tok appears in s as a word of its own: not preceded by a letter or
 * digit, not followed by a digit ("A30" is not in "A3000", "H100" is not in
 * "GH100", "V100" is in "V100S"). */
static int has_token(const char *s, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = strstr(s, tok); p; p = strstr(p + 1, tok))
        if ((p == s || !isalnum((unsigned char)p[-1])) && !isdigit((unsigned char)p[n]))
            return 1;
    return 0;
}

/* Marketing names and chip names of the NVLink-capable data-centre GPUs. */
static const struct {
    int gen;
    const char *token;
} nvlink_models[] = {
    { 1, "P100" }, { 1, "GP100" }, { 2, "V100" },  { 2, "GV100" }, { 3, "A100" },
    { 3, "A800" }, { 3, "A30" },   { 3, "GA100" }, { 4, "H100" },  { 4, "H800" },
    { 4, "H200" }, { 4, "H20" },   { 4, "GH100" }, { 4, "GH200" }, { 5, "B100" },
    { 5, "B200" }, { 5, "B300" },  { 5, "GB100" }, { 5, "GB200" }, { 5, "GB300" },
};

/* Whether s holds "PCIe" in any case ("P100-PCIE-16GB", "P100 PCIe 16GB"). */
static int says_pcie(const char *s)
{
    for (; *s; s++)
        if (!strncasecmp(s, "pcie", 4))
            return 1;
    return 0;
}

int crux_topo_nvlink_gen_of_model(const char *model)
{
    if (!model)
        return 0;
    for (size_t i = 0; i < sizeof(nvlink_models) / sizeof(nvlink_models[0]); i++)
        if (has_token(model, nvlink_models[i].token)) {
            /* the P100 and V100 PCIe cards have no NVLink connector; from the
             * A100 on, PCIe cards take an NVLink bridge */
            if (nvlink_models[i].gen <= 2 && says_pcie(model))
                return 0;
            return nvlink_models[i].gen;
        }
    return 0;
}

/* Per link and direction: NVLink 1.0 (P100) 20 GB/s; 2.0 (V100), 3.0 (A100,
 * 12 links of half the lanes) and 4.0 (H100) 25 GB/s; 5.0 (B200) 50 GB/s. */
double crux_topo_nvlink_gbps_per_link(int nvlink_gen)
{
    switch (nvlink_gen) {
    case 1: return 20.0;
    case 2:
    case 3:
    case 4: return 25.0;
    case 5: return 50.0;
    default: return 0.0;
    }
}

/* Data rate per direction of a PCIe link: transfer rate x line-code
 * efficiency x lanes / 8 bits (gen 3 x16: 8 GT/s x 128/130 x 16 / 8 =
 * 15.75 GB/s, the figure hwloc reports). */
double crux_topo_pcie_gbps(int gen, int width)
{
    static const double gtps[] = { 0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
    if (gen < 1 || gen > 6 || width < 1)
        return 0.0;
    double efficiency = gen <= 2 ? 8.0 / 10.0 : gen <= 5 ? 128.0 / 130.0 : 242.0 / 256.0;
    return gtps[gen] * efficiency * width / 8.0;
}

/* Small helpers of the simulator: GPU masks. */

#include "sim/crux_sim_internal.h"

uint64_t sim_all_gpus(int gpus)
{
    return gpus >= 64 ? ~0ULL : (1ULL << gpus) - 1;
}

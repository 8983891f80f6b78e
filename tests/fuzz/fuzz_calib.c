/* The multipath engine's calibration cache
 * ($XDG_CACHE_HOME/crux/calibration-<host>), read when channels are made. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/plan/crux_tl_plan_internal.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(data, size, "");
    static const char *const signatures[] = { "cma-get", "shm:posix:262144x8", "cuda-ipc:a>b" };
    for (size_t s = 0; s < sizeof(signatures) / sizeof(signatures[0]); s++) {
        crux_tl_chan_attr_t attr = { 0 };
        if (crux_tl_calib_read(path, signatures[s], &attr) &&
            (!(attr.bandwidth > 0) || !isfinite(attr.bandwidth) || !(attr.latency >= 0) ||
             !isfinite(attr.latency) || !(attr.chunk_cost >= 0) || !isfinite(attr.chunk_cost))) {
            abort(); /* the planner divides by these */
        }
    }
    return 0;
}

/* The multipath engine's calibration cache
 * ($XDG_CACHE_HOME/crux/calibration-<host>), read when channels are made. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ucx_tl/core/core_internal.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static crux_tl_engine_t *e;
    static crux_tl_chan_t *chan;
    if (e == NULL) {
        e = calloc(1, sizeof(*e));
        chan = calloc(1, sizeof(*chan));
    }
    crux_tl_calib_path(e, fuzz_input_file(data, size, ""));
    static const char *const signatures[] = { "cma-get", "shm:posix:262144x8", "cuda-ipc:a>b" };
    for (size_t s = 0; s < sizeof(signatures) / sizeof(signatures[0]); s++) {
        memset(&chan->attr, 0, sizeof(chan->attr));
        snprintf(chan->signature, sizeof(chan->signature), "%s", signatures[s]);
        if (crux_tl_calib_lookup(e, chan) &&
            (!(chan->attr.bandwidth > 0) || !isfinite(chan->attr.bandwidth) ||
             !(chan->attr.latency >= 0) || !isfinite(chan->attr.latency) ||
             !(chan->attr.chunk_cost >= 0) || !isfinite(chan->attr.chunk_cost))) {
            abort(); /* the planner divides by these */
        }
    }
    return 0;
}

/* Job profiles (crux_profile_parse), as crux-sched daemon reads them from
 * its spool, and the per-iteration figures it derives from them. */
#include <math.h>
#include <stdlib.h>

#include "sched/crux_profile.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    crux_profile_t p;
    char err[512] = "";
    if (crux_profile_parse((const char *)data, size, "fuzz.profile", &p, err, sizeof(err)) !=
        CRUX_OK) {
        if (err[0] == '\0') {
            abort();
        }
        return 0;
    }
    int ranks = 0;
    for (int h = 0; h < p.nhosts; h++) {
        if (p.hosts[h] == NULL || p.host_ranks[h] <= 0) {
            abort();
        }
        ranks += p.host_ranks[h];
    }
    (void)ranks;
    crux_profile_iter_t it;
    if (crux_profile_per_iteration(&p, &it) == CRUX_OK &&
        (!isfinite(it.iterations) || !isfinite(it.bytes) || !isfinite(it.compute_s) ||
         it.overlap < 0 || it.overlap > 1)) {
        abort(); /* the daemon plans from these */
    }
    crux_profile_clear(&p);
    return 0;
}

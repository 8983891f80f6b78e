/* The Lingjun topology CSV (ip,DSW,PSW,ASW per host), which a cluster file
 * of type lingjun names. */
#include <stdlib.h>

#include "sched/crux_sched.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_input_file(data, size, ".csv");
    crux_sched_lingjun_t p;
    crux_sched_lingjun_defaults(&p);
    crux_sched_cluster_t *c = NULL;
    char err[768] = "";
    if (crux_sched_build_lingjun(path, &p, &c, err, sizeof(err)) == CRUX_OK) {
        if (c == NULL) {
            abort();
        }
        crux_sched_cluster_free(c);
    } else if (err[0] == '\0') {
        abort();
    }
    return 0;
}

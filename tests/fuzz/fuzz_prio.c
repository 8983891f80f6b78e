/* The priority file (crux_prio_parse), as every job reads it: a parsed file
 * must be consistent, a rejected one must say why. */
#include <stdlib.h>
#include <string.h>

#include "sched/crux_prio.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    crux_prio_file_t *f = NULL;
    char err[512] = "";
    if (crux_prio_parse((const char *)data, size, "fuzz.prio", &f, err, sizeof(err)) != CRUX_OK) {
        if (f != NULL || err[0] == '\0') {
            abort(); /* a failure leaves nothing behind and says why */
        }
        return 0;
    }
    if (f->levels < 1 || f->levels > CRUX_PRIO_MAX_LEVELS) {
        abort();
    }
    for (int i = 0; i < f->njobs; i++) {
        const crux_prio_entry_t *e = &f->jobs[i];
        if (crux_prio_find(f, e->job) != e || !crux_prio_token_ok(e->job) || e->level < 0 ||
            e->level >= f->levels) {
            abort();
        }
        for (int k = 0; k < e->nkv; k++) {
            if (crux_prio_get(e, e->kv[k].key) == NULL) {
                abort();
            }
        }
    }
    crux_prio_file_free(f);
    return 0;
}

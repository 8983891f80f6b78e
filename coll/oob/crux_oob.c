/* Agreement over the out-of-band allgather (crux_oob_internal.h). */
#include <stdint.h>
#include <stdlib.h>

#include "coll/oob/crux_oob_internal.h"

crux_status_t crux_oob_agree(const crux_coll_oob_t *oob, crux_status_t mine, int flag,
                             int *all_flags)
{
    int32_t me[2] = { mine, flag };
    int32_t *all = malloc(sizeof(me) * (size_t)oob->size);
    crux_status_t result = CRUX_ERR_NO_MEMORY;
    int flags = 0;
    if (all != NULL) {
        result = CRUX_ERR_PEER;
        if (oob->allgather(me, all, sizeof(me), oob->arg) == 0) {
            result = CRUX_OK;
            flags = 1;
            for (int i = 0; i < oob->size; i++) {
                result = result != CRUX_OK ? result : (crux_status_t)all[2 * i];
                flags = flags && all[2 * i + 1];
            }
        }
        free(all);
    }
    if (all_flags != NULL) {
        *all_flags = flags;
    }
    return result;
}

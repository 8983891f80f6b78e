/* Internal to libcrux_coll: agreement over the caller's out-of-band
 * allgather, how every member of a group being built ends each step with
 * the same outcome. */
#ifndef CRUX_OOB_INTERNAL_H
#define CRUX_OOB_INTERNAL_H

#include "coll/crux_coll.h"

/* Allgather each member's status and a yes/no flag: returns the first
 * failure in rank order (CRUX_ERR_PEER when the allgather itself fails,
 * CRUX_ERR_NO_MEMORY without room for the answers), else CRUX_OK, and sets
 * *all_flags (when not NULL) to whether every member said yes.  Every
 * member gets the same result. */
crux_status_t crux_oob_agree(const crux_coll_oob_t *oob, crux_status_t mine, int flag,
                             int *all_flags);

#endif

/* Helpers shared by libcrux_prio's files (not installed). */
#ifndef CRUX_PRIO_UTIL_H
#define CRUX_PRIO_UTIL_H

#include <stddef.h>
#include <sys/stat.h>

#include "common/crux_err.h"
#include "common/crux_status.h"

/* The most prio_read_all reads: more is refused, not read (a huge or
 * sparse file in place of a spec must not cost the reader its memory). */
#define PRIO_READ_MAX_BYTES ((size_t)64 << 20)

/* prio_read_max's flags */
#define PRIO_READ_NOFOLLOW 1 /* a symbolic link (a file in a place others write) is refused */

/* Read a whole regular file (NUL-terminated copy in *text); st (may be NULL)
 * gets the fstat of the file read.  CRUX_ERR_NOT_FOUND when it does not
 * exist; CRUX_ERR_INVALID when it is not a regular file (a directory, a
 * FIFO, a device: opened without blocking, never read), is larger than
 * max_bytes, or (PRIO_READ_NOFOLLOW) is a symbolic link. */
crux_status_t prio_read_max(const char *path, size_t max_bytes, int flags, char **text, size_t *len,
                            struct stat *st, char *err, size_t errlen);
/* prio_read_max with PRIO_READ_MAX_BYTES */
crux_status_t prio_read_all(const char *path, int flags, char **text, size_t *len, struct stat *st,
                            char *err, size_t errlen);

#endif

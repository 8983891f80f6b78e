/* Helpers shared by libcrux_prio's files (not installed). */
#ifndef CRUX_PRIO_UTIL_H
#define CRUX_PRIO_UTIL_H

#include <stddef.h>
#include <sys/stat.h>

#include "common/crux_status.h"

void prio_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Read a whole file (NUL-terminated copy in *text); st (may be NULL) gets
 * the fstat of the file read.  CRUX_ERR_NOT_FOUND when it does not exist. */
crux_status_t prio_read_all(const char *path, char **text, size_t *len, struct stat *st,
                            char *err, size_t errlen);

#endif

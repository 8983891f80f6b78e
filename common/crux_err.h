/* Error messages into a caller's buffer: every crux parser and loader takes
 * (char *err, size_t errlen) and fills it when it fails. */
#ifndef CRUX_ERR_H
#define CRUX_ERR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* printf into err; nothing when err is NULL or errlen 0. */
static inline __attribute__((format(printf, 3, 4))) void crux_errf(char *err, size_t errlen,
                                                                   const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#endif

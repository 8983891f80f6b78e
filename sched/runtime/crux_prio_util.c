/* Small helpers for libcrux_prio: reading a whole file. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/runtime/crux_prio_util.h"

crux_status_t prio_read_all(const char *path, int flags, char **text, size_t *len, struct stat *st,
                            char *err, size_t errlen)
{
    return prio_read_max(path, PRIO_READ_MAX_BYTES, flags, text, len, st, err, errlen);
}

crux_status_t prio_read_max(const char *path, size_t max_bytes, int flags, char **text, size_t *len,
                            struct stat *st, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO put in the file's place must not block the reader
     * (in a job, inside a collective) until someone writes to it */
    int nofollow = flags & PRIO_READ_NOFOLLOW ? O_NOFOLLOW : 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | nofollow);
    if (fd < 0) {
        int e = errno;
        if (nofollow && e == ELOOP) {
            crux_errf(err, errlen, "%s: a symbolic link: refused", path);
            return CRUX_ERR_INVALID;
        }
        crux_errf(err, errlen, "%s: %s", path, strerror(e));
        return e == ENOENT ? CRUX_ERR_NOT_FOUND : CRUX_ERR_IO;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return CRUX_ERR_IO;
    }
    if (!S_ISREG(sb.st_mode)) {
        crux_errf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return CRUX_ERR_INVALID;
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > max_bytes) {
        crux_errf(err, errlen, "%s: %lld bytes, more than the %zu read at most", path,
                  (long long)sb.st_size, max_bytes);
        close(fd);
        return CRUX_ERR_INVALID;
    }
    size_t cap = sb.st_size > 0 ? (size_t)sb.st_size + 1 : 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf != NULL) {
        if (n == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (b == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            crux_errf(err, errlen, "%s: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return CRUX_ERR_IO;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max_bytes) { /* grew while being read */
            crux_errf(err, errlen, "%s: more than the %zu bytes read at most", path, max_bytes);
            free(buf);
            close(fd);
            return CRUX_ERR_INVALID;
        }
    }
    close(fd);
    if (buf == NULL) {
        crux_errf(err, errlen, "%s: out of memory", path);
        return CRUX_ERR_NO_MEMORY;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    if (st)
        *st = sb;
    return CRUX_OK;
}

/* The priority file: loading, writing and atomic replacement. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched/crux_prio.h"
#include "sched/runtime/crux_prio_util.h"

crux_status_t crux_prio_load(const char *path, crux_prio_file_t **out, char *err, size_t errlen)
{
    char *text;
    size_t len;
    crux_status_t st =
        prio_read_max(path, CRUX_PRIO_MAX_FILE_BYTES, 0, &text, &len, NULL, err, errlen);
    if (st != CRUX_OK)
        return st;
    st = crux_prio_parse(text, len, path, out, err, errlen);
    free(text);
    return st;
}

crux_status_t crux_prio_write(const char *path, const crux_prio_file_t *f, const char *comment,
                              char *err, size_t errlen)
{
    if (f == NULL || f->levels < 1 || f->levels > CRUX_PRIO_MAX_LEVELS || f->njobs < 0) {
        crux_errf(err, errlen, "%s: invalid priority table", path);
        return CRUX_ERR_INVALID;
    }
    for (int i = 0; i < f->njobs; i++) {
        const crux_prio_entry_t *e = &f->jobs[i];
        int ok = crux_prio_token_ok(e->job) && e->level >= 0 && e->level < f->levels;
        for (int k = 0; ok && k < e->nkv; k++)
            ok = crux_prio_token_ok(e->kv[k].key) && crux_prio_token_ok(e->kv[k].value);
        if (!ok) {
            crux_errf(err, errlen, "%s: job entry %d: bad id, level or key/value token", path, i);
            return CRUX_ERR_INVALID;
        }
    }
    char *data = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&data, &len);
    if (m == NULL) {
        crux_errf(err, errlen, "%s: out of memory", path);
        return CRUX_ERR_NO_MEMORY;
    }
    fputs("crux-priorities 1\n", m);
    for (const char *c = comment; c && *c;) { /* every comment line gets its '#' */
        size_t n = strcspn(c, "\n");
        fprintf(m, "# %.*s\n", (int)n, c);
        c += n + (c[n] == '\n');
    }
    fprintf(m, "levels %d\n", f->levels);
    for (int i = 0; i < f->njobs; i++) {
        const crux_prio_entry_t *e = &f->jobs[i];
        fprintf(m, "job %s level %d", e->job, e->level);
        for (int k = 0; k < e->nkv; k++)
            fprintf(m, " %s %s", e->kv[k].key, e->kv[k].value);
        fputc('\n', m);
    }
    if (fclose(m) != 0) {
        free(data);
        crux_errf(err, errlen, "%s: out of memory", path);
        return CRUX_ERR_NO_MEMORY;
    }
    if (len > CRUX_PRIO_MAX_FILE_BYTES) { /* every reader would refuse it */
        free(data);
        crux_errf(err, errlen, "%s: %zu bytes, more than the %zu a job reads at most: not written",
                  path, len, CRUX_PRIO_MAX_FILE_BYTES);
        return CRUX_ERR_INVALID;
    }
    crux_status_t st = crux_prio_atomic_write(path, data, len, 0644, err, errlen);
    free(data);
    return st;
}

crux_status_t crux_prio_atomic_write(const char *path, const void *data, size_t len, mode_t mode,
                                     char *err, size_t errlen)
{
    /* rename() replaces whatever the name holds: a device, FIFO or socket
     * there (an output sent to /dev/null) must stay what it is. A planted
     * link is replaced, never followed. */
    struct stat sb;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode)) {
        crux_errf(err, errlen, "%s: exists and is not a regular file: not replaced", path);
        return CRUX_ERR_INVALID;
    }
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", (int)dirlen, path, slash ? slash + 1 : path) >=
        (int)sizeof(tmp)) {
        crux_errf(err, errlen, "%s: path too long", path);
        return CRUX_ERR_INVALID;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        crux_errf(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(errno));
        return CRUX_ERR_IO;
    }
    const char *p = data;
    size_t left = len;
    int ok = 1;
    while (ok && left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        ok = n > 0;
        if (ok) {
            p += n;
            left -= (size_t)n;
        }
    }
    ok = ok && fchmod(fd, mode) == 0 && fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0) {
        saved = errno;
        ok = 0;
    }
    if (!ok) {
        unlink(tmp);
        crux_errf(err, errlen, "%s: cannot write: %s", path, strerror(saved ? saved : EIO));
        return CRUX_ERR_IO;
    }
    return CRUX_OK;
}

/* The priority file: parser, writer and atomic replacement. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sched/crux_prio.h"
#include "sched/prio_util.h"

int crux_prio_token_ok(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) > CRUX_PRIO_MAX_TOKEN)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '#' || (unsigned char)*s == 0x7f)
            return 0;
    return 1;
}

/* Storage of a parsed file: one copy of the text, cut into tokens in
 * place, and the arrays pointing into it. */
typedef struct {
    char *text;
    crux_prio_entry_t *jobs;
    crux_prio_kv_t *kv;
} storage_t;

void crux_prio_file_free(crux_prio_file_t *f)
{
    if (f == NULL)
        return;
    storage_t *s = f->storage;
    if (s) {
        free(s->text);
        free(s->jobs);
        free(s->kv);
        free(s);
    }
    free(f);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

#define FAIL(...)                            \
    do {                                     \
        crux_errf(err, errlen, __VA_ARGS__); \
        goto fail;                           \
    } while (0)

crux_status_t crux_prio_parse(const char *text, size_t len, const char *name,
                              crux_prio_file_t **out, char *err, size_t errlen)
{
    crux_prio_file_t *f = calloc(1, sizeof(*f));
    storage_t *s = calloc(1, sizeof(*s));
    char *buf = malloc(len + 1);
    char **tok = NULL;
    if (f == NULL || s == NULL || buf == NULL) {
        free(f);
        free(s);
        free(buf);
        crux_errf(err, errlen, "%s: out of memory", name);
        return CRUX_ERR_NO_MEMORY;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    s->text = buf;
    f->storage = s;
    if (memchr(buf, '\0', len) != NULL)
        FAIL("%s: NUL byte in the file", name);
    /* Upper bounds: a job per line, a key-value pair per two tokens. */
    size_t lines = 1, words = 1;
    for (size_t i = 0; i < len; i++) {
        lines += buf[i] == '\n';
        words += buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r';
    }
    s->jobs = calloc(lines, sizeof(*s->jobs));
    s->kv = calloc(words / 2 + 1, sizeof(*s->kv));
    tok = malloc((words + 2) * sizeof(*tok));
    if (s->jobs == NULL || s->kv == NULL || tok == NULL)
        FAIL("%s: out of memory", name);
    if (len == 0)
        FAIL("%s:1: empty file (expected 'crux-priorities 1')", name);
    if (buf[len - 1] != '\n')
        FAIL("%s:%zu: last line has no newline: truncated file", name, lines);
    int lineno = 0, seen_header = 0, nkv = 0;
    f->levels = 0;
    for (char *line = buf, *next; line < buf + len; line = next) {
        next = strchr(line, '\n');
        *next++ = '\0';
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        int n = 0;
        for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t;
             t = strtok_r(NULL, " \t\r", &save))
            tok[n++] = t;
        if (n == 0)
            continue;
        if (!seen_header) {
            if (n != 2 || strcmp(tok[0], "crux-priorities") != 0)
                FAIL("%s:%d: expected 'crux-priorities 1'", name, lineno);
            if (strcmp(tok[1], "1") != 0)
                FAIL("%s:%d: unsupported version %s (this reader knows 1)", name, lineno, tok[1]);
            seen_header = 1;
        } else if (f->levels == 0) {
            if (n != 2 || strcmp(tok[0], "levels") != 0 ||
                parse_int(tok[1], 1, CRUX_PRIO_MAX_LEVELS, &f->levels) != 0)
                FAIL("%s:%d: expected 'levels K' with 1 <= K <= %d", name, lineno,
                     CRUX_PRIO_MAX_LEVELS);
        } else {
            crux_prio_entry_t *e = &s->jobs[f->njobs];
            if (strcmp(tok[0], "job") != 0)
                FAIL("%s:%d: unknown line '%s' (expected 'job')", name, lineno, tok[0]);
            if (n < 4 || n % 2 != 0 || strcmp(tok[2], "level") != 0)
                FAIL("%s:%d: expected 'job ID level L [key value]...'", name, lineno);
            if (parse_int(tok[3], 0, f->levels - 1, &e->level) != 0)
                FAIL("%s:%d: level '%s' not in 0..%d", name, lineno, tok[3], f->levels - 1);
            for (int t = 1; t < n; t++)
                if (!crux_prio_token_ok(tok[t])) /* what the writer refuses too */
                    FAIL("%s:%d: token %d has a control character or is longer than %d bytes", name,
                         lineno, t + 1, CRUX_PRIO_MAX_TOKEN);
            e->job = tok[1];
            e->kv = &s->kv[nkv];
            e->nkv = (n - 4) / 2;
            for (int t = 4; t < n; t += 2)
                s->kv[nkv++] = (crux_prio_kv_t){ tok[t], tok[t + 1] };
            f->njobs++;
        }
    }
    if (!seen_header)
        FAIL("%s:%d: no 'crux-priorities 1' line", name, lineno);
    if (f->levels == 0)
        FAIL("%s:%d: no 'levels K' line", name, lineno);
    for (int i = 0; i < f->njobs; i++) /* ids are unique */
        for (int k = 0; k < i; k++)
            if (strcmp(s->jobs[i].job, s->jobs[k].job) == 0)
                FAIL("%s: job %s listed twice", name, s->jobs[i].job);
    f->jobs = s->jobs;
    free(tok);
    *out = f;
    return CRUX_OK;
fail:
    free(tok);
    crux_prio_file_free(f);
    return CRUX_ERR_INVALID;
}

crux_status_t crux_prio_load(const char *path, crux_prio_file_t **out, char *err, size_t errlen)
{
    char *text;
    size_t len;
    crux_status_t st =
        prio_read_max(path, CRUX_PRIO_MAX_FILE_BYTES, &text, &len, NULL, err, errlen);
    if (st != CRUX_OK)
        return st;
    st = crux_prio_parse(text, len, path, out, err, errlen);
    free(text);
    return st;
}

const crux_prio_entry_t *crux_prio_find(const crux_prio_file_t *f, const char *job)
{
    for (int i = 0; f && job && i < f->njobs; i++)
        if (strcmp(f->jobs[i].job, job) == 0)
            return &f->jobs[i];
    return NULL;
}

const char *crux_prio_get(const crux_prio_entry_t *e, const char *key)
{
    for (int i = 0; e && key && i < e->nkv; i++)
        if (strcmp(e->kv[i].key, key) == 0)
            return e->kv[i].value;
    return NULL;
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
    crux_status_t st = crux_prio_atomic_write(path, data, len, err, errlen);
    free(data);
    return st;
}

crux_status_t crux_prio_atomic_write(const char *path, const void *data, size_t len, char *err,
                                     size_t errlen)
{
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
    ok = ok && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
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

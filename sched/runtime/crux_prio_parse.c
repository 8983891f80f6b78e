/* The priority file's parser.  Every job on the cluster reads the whole
 * file from inside its collectives, so the cost is linear in its size plus
 * one sort of the ids (O(n log n) comparisons, counted) to find duplicates.
 *
 * What is wrong with the file as a whole (header, levels, a NUL byte, a
 * missing last newline) refuses it.  A malformed job line only costs that
 * line: it is skipped and counted, and the id it names (when it names one)
 * is remembered, so that the job it belongs to keeps its last good level
 * while every other job takes the new file. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sched/crux_prio.h"
#include "sched/runtime/crux_prio_util.h"

int crux_prio_token_ok(const char *s)
{
    if (s == NULL || *s == '\0' || strlen(s) > CRUX_PRIO_MAX_TOKEN)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '#' || (unsigned char)*s == 0x7f)
            return 0;
    return 1;
}

typedef struct id_ref {
    const char *id;
    int job;  /* index into the jobs, -1 for a skipped line's id */
    int line; /* of a skipped line */
} id_ref_t;

/* Storage of a parsed file: one copy of the text, cut into tokens in
 * place, and the arrays pointing into it. */
typedef struct {
    char *text;
    crux_prio_entry_t *jobs;
    crux_prio_kv_t *kv;
    id_ref_t *skipped_ids; /* ids named by skipped lines (sorted) */
    int nskipped_ids;
    char skipped_why[256]; /* the first skipped line, "name:LINE: why" */
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
        free(s->skipped_ids);
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

/* The keys whose values crux acts on, and their ranges. */
static const struct {
    const char *key;
    int lo, hi;
} ranged[] = {
    { "sl", 0, 15 },       /* InfiniBand service level */
    { "tc", 0, 255 },      /* traffic class (DSCP << 2 on RoCE) */
    { "dscp", 0, 63 },     /* DiffServ code point */
    { "uid", 0, INT_MAX }, /* the job's owner: only its processes apply the line */
};

/* NULL when the pair is fine, else why not (in `why`). */
static const char *kv_bad(const char *key, const char *value, char *why, size_t len)
{
    for (size_t i = 0; i < sizeof(ranged) / sizeof(ranged[0]); i++) {
        int v;
        if (strcmp(key, ranged[i].key) == 0 &&
            parse_int(value, ranged[i].lo, ranged[i].hi, &v) != 0) {
            crux_errf(why, len, "%s '%.32s' not an integer in %d..%d", key, value, ranged[i].lo,
                      ranged[i].hi);
            return why;
        }
    }
    return NULL;
}

/* Bottom-up merge sort by id, counting comparisons: n log n at most
 * whatever the input, unlike a quicksort. */
static int sort_ids(id_ref_t *a, size_t n, uint64_t *compares)
{
    id_ref_t *tmp = malloc((n ? n : 1) * sizeof(*tmp));
    if (tmp == NULL)
        return -1;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                (*compares)++;
                tmp[k++] = strcmp(a[i].id, a[j].id) <= 0 ? a[i++] : a[j++];
            }
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof(*a));
    }
    free(tmp);
    return 0;
}

static int by_id(const void *key, const void *elem)
{
    return strcmp(key, ((const id_ref_t *)elem)->id);
}

#define FAIL(...)                            \
    do {                                     \
        crux_errf(err, errlen, __VA_ARGS__); \
        goto fail;                           \
    } while (0)

/* A job line that is skipped: counted, its id (if it has one) kept. */
static void skip_line(crux_prio_file_t *f, storage_t *s, const char *id, int line, const char *why)
{
    if (f->skipped++ == 0)
        snprintf(s->skipped_why, sizeof(s->skipped_why), "%s", why);
    if (id != NULL)
        s->skipped_ids[s->nskipped_ids++] = (id_ref_t){ id, -1, line };
}

/* Skips every job whose id is listed more than once; `ids` are the jobs'
 * ids, sorted, so equal ones are neighbours. */
static void drop_duplicates(crux_prio_file_t *f, storage_t *s, const id_ref_t *ids,
                            const char *name)
{
    int n = f->njobs, dropped = 0;
    for (int i = 0; i < n;) {
        int end = i + 1;
        while (end < n && strcmp(ids[i].id, ids[end].id) == 0)
            end++;
        for (int k = i; end - i > 1 && k < end; k++) {
            char why[160];
            snprintf(why, sizeof(why), "%s: job %.64s listed %d times", name, ids[k].id, end - i);
            skip_line(f, s, ids[k].id, ids[k].line, why);
            s->jobs[ids[k].job].level = -1;
            dropped = 1;
        }
        i = end;
    }
    if (!dropped)
        return;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (s->jobs[i].level >= 0)
            s->jobs[k++] = s->jobs[i];
    f->njobs = k;
}

crux_status_t crux_prio_parse(const char *text, size_t len, const char *name,
                              crux_prio_file_t **out, char *err, size_t errlen)
{
    crux_prio_file_t *f = calloc(1, sizeof(*f));
    storage_t *s = calloc(1, sizeof(*s));
    char *buf = malloc(len + 1);
    char **tok = NULL;
    id_ref_t *ids = NULL;
    int *lines_of = NULL; /* the line of each job */
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
    s->skipped_ids = calloc(2 * lines, sizeof(*s->skipped_ids));
    tok = malloc((words + 2) * sizeof(*tok));
    lines_of = malloc(lines * sizeof(*lines_of));
    if (s->jobs == NULL || s->kv == NULL || s->skipped_ids == NULL || tok == NULL ||
        lines_of == NULL)
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
                FAIL("%s:%d: unsupported version %.32s (this reader knows 1)", name, lineno,
                     tok[1]);
            seen_header = 1;
            continue;
        }
        if (f->levels == 0) {
            if (n != 2 || strcmp(tok[0], "levels") != 0 ||
                parse_int(tok[1], 1, CRUX_PRIO_MAX_LEVELS, &f->levels) != 0)
                FAIL("%s:%d: expected 'levels K' with 1 <= K <= %d", name, lineno,
                     CRUX_PRIO_MAX_LEVELS);
            continue;
        }
        /* a job line: whatever is wrong with it costs only this line */
        char why[320];
        const char *id =
            n >= 2 && strcmp(tok[0], "job") == 0 && crux_prio_token_ok(tok[1]) ? tok[1] : NULL;
        crux_prio_entry_t *e = &s->jobs[f->njobs];
        why[0] = '\0';
        if (strcmp(tok[0], "job") != 0)
            crux_errf(why, sizeof(why), "%s:%d: unknown line '%.32s' (expected 'job')", name,
                      lineno, tok[0]);
        else if (n < 4 || n % 2 != 0 || strcmp(tok[2], "level") != 0)
            crux_errf(why, sizeof(why), "%s:%d: expected 'job ID level L [key value]...'", name,
                      lineno);
        else if (parse_int(tok[3], 0, f->levels - 1, &e->level) != 0)
            crux_errf(why, sizeof(why), "%s:%d: level '%.32s' not in 0..%d", name, lineno, tok[3],
                      f->levels - 1);
        for (int t = 1; !why[0] && t < n; t++)
            if (!crux_prio_token_ok(tok[t])) /* what the writer refuses too */
                crux_errf(why, sizeof(why),
                          "%s:%d: token %d has a control character or is longer than %d bytes",
                          name, lineno, t + 1, CRUX_PRIO_MAX_TOKEN);
        for (int t = 4; !why[0] && t < n; t += 2) {
            char kvwhy[128];
            if (kv_bad(tok[t], tok[t + 1], kvwhy, sizeof(kvwhy)))
                crux_errf(why, sizeof(why), "%s:%d: %s", name, lineno, kvwhy);
        }
        if (why[0]) {
            skip_line(f, s, id, lineno, why);
            continue;
        }
        e->job = tok[1];
        e->kv = &s->kv[nkv];
        e->nkv = (n - 4) / 2;
        for (int t = 4; t < n; t += 2)
            s->kv[nkv++] = (crux_prio_kv_t){ tok[t], tok[t + 1] };
        lines_of[f->njobs++] = lineno;
    }
    if (!seen_header)
        FAIL("%s:%d: no 'crux-priorities 1' line", name, lineno);
    if (f->levels == 0)
        FAIL("%s:%d: no 'levels K' line", name, lineno);
    ids = malloc((size_t)(f->njobs ? f->njobs : 1) * sizeof(*ids));
    if (ids == NULL)
        FAIL("%s: out of memory", name);
    for (int i = 0; i < f->njobs; i++)
        ids[i] = (id_ref_t){ s->jobs[i].job, i, lines_of[i] };
    if (sort_ids(ids, (size_t)f->njobs, &f->compares) != 0)
        FAIL("%s: out of memory", name);
    drop_duplicates(f, s, ids, name);
    if (sort_ids(s->skipped_ids, (size_t)s->nskipped_ids, &f->compares) != 0)
        FAIL("%s: out of memory", name);
    f->jobs = s->jobs;
    f->skipped_why = f->skipped ? s->skipped_why : NULL;
    free(ids);
    free(lines_of);
    free(tok);
    *out = f;
    return CRUX_OK;
fail:
    free(ids);
    free(lines_of);
    free(tok);
    crux_prio_file_free(f);
    return CRUX_ERR_INVALID;
}

int crux_prio_skipped(const crux_prio_file_t *f, const char *job)
{
    const storage_t *s = f ? f->storage : NULL;
    if (s == NULL || job == NULL || s->nskipped_ids == 0)
        return 0;
    const id_ref_t *hit =
        bsearch(job, s->skipped_ids, (size_t)s->nskipped_ids, sizeof(*s->skipped_ids), by_id);
    return hit ? hit->line : 0;
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

/* The job side of the priority file: a handle that keeps this job's last
 * good entry and notices a new file cheaply.  Between checks a poll is one
 * read of the coarse monotonic clock; a check is one stat(), and the file
 * is only read when its identity (device, inode, size, mtime) changed,
 * which every atomic replacement (rename of a new inode) does.  A line
 * bound to a user (key "uid") is this job's only in that user's processes:
 * a job that claims another user's job id gets the default level. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sched/crux_prio.h"
#include "sched/runtime/crux_prio_util.h"

#ifdef CLOCK_MONOTONIC_COARSE
#define READER_CLOCK CLOCK_MONOTONIC_COARSE
#else
#define READER_CLOCK CLOCK_MONOTONIC
#endif

typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} ident_t;

struct crux_prio_reader {
    char *path, *job;
    int default_level;
    uint64_t interval_ns, next_check_ns;
    crux_prio_log_fn log;
    void *log_arg;
    int have_seen;     /* seen: the identity last looked at */
    ident_t seen, bad; /* bad: the last malformed version reported */
    int have_bad;
    /* effective state */
    crux_prio_state_t state;
    int levels, level, stale;
    crux_prio_file_t *file; /* the last good file (for the job's keys) */
    const crux_prio_entry_t *entry;
    int changed;
    uint64_t loads;
    int stat_errno; /* the last error of stat() other than ENOENT, said once */
    int skipped;    /* other jobs' malformed lines in the file in use */
    int opening;    /* in crux_prio_reader_open: messages wait in pending */
    char *pending;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(READER_CLOCK, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static ident_t ident_of(const struct stat *st)
{
    return (ident_t){ st->st_dev, st->st_ino, st->st_size, st->st_mtim };
}

static int ident_eq(const ident_t *a, const ident_t *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void log_stderr(void *arg, const char *msg)
{
    (void)arg;
    fprintf(stderr, "crux: %s\n", msg);
}

/* Entries equal: same level and the same keys and values in order. */
static int entry_eq(const crux_prio_entry_t *a, const crux_prio_entry_t *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    if (a->level != b->level || a->nkv != b->nkv)
        return 0;
    for (int i = 0; i < a->nkv; i++)
        if (strcmp(a->kv[i].key, b->kv[i].key) || strcmp(a->kv[i].value, b->kv[i].value))
            return 0;
    return 1;
}

static void set_default(crux_prio_reader_t *r, crux_prio_state_t state)
{
    if (r->state != state || r->entry != NULL)
        r->changed = 1;
    crux_prio_file_free(r->file);
    r->file = NULL;
    r->entry = NULL;
    r->state = state;
    r->level = r->default_level;
    r->levels = 0;
    r->stale = 0;
}

/* Delivers a message to the log; one said while opening waits for the
 * log the caller sets next (or the first poll), so it reaches the same
 * place as every later one. */
static void emit(crux_prio_reader_t *r, const char *msg)
{
    if (r->opening) {
        free(r->pending);
        r->pending = strdup(msg);
        return;
    }
    r->log(r->log_arg, msg);
}

static void flush_pending(crux_prio_reader_t *r)
{
    if (r->pending != NULL) {
        r->log(r->log_arg, r->pending);
        free(r->pending);
        r->pending = NULL;
    }
}

/* Says msg once per bad version of the file (the identity last seen). */
static void say_once(crux_prio_reader_t *r, const char *msg)
{
    if (!r->have_bad || !ident_eq(&r->bad, &r->seen)) {
        emit(r, msg);
        r->bad = r->seen;
        r->have_bad = 1;
    }
}

static void check(crux_prio_reader_t *r)
{
    struct stat sb;
    if (stat(r->path, &sb) != 0) {
        int e = errno;
        if (e == ENOENT) {
            if (r->state != CRUX_PRIO_NO_FILE)
                set_default(r, CRUX_PRIO_NO_FILE);
            r->stat_errno = 0;
        } else if (e != r->stat_errno) { /* a symbolic link loop, no permission */
            char msg[PATH_MAX + 160];
            snprintf(msg, sizeof(msg), "%s: %s%s; keeping the %s", r->path, strerror(e),
                     e == ELOOP ? " (a symbolic link loop)" : "",
                     r->state == CRUX_PRIO_NO_FILE ? "default level" : "last good priorities");
            emit(r, msg);
            r->stat_errno = e;
        }
        r->have_seen = 0;
        return;
    }
    r->stat_errno = 0;
    ident_t id = ident_of(&sb);
    if (r->have_seen && ident_eq(&id, &r->seen))
        return;
    char *text, err[512];
    size_t len;
    crux_status_t st =
        prio_read_max(r->path, CRUX_PRIO_MAX_FILE_BYTES, 0, &text, &len, &sb, err, sizeof(err));
    if (st == CRUX_ERR_NOT_FOUND) { /* removed between stat and open */
        set_default(r, CRUX_PRIO_NO_FILE);
        r->have_seen = 0;
        return;
    }
    if (st != CRUX_OK && st != CRUX_ERR_INVALID)
        return; /* try again at the next check */
    /* the version actually read, or (too large, not a regular file: never
     * read, not read again until it changes) the one stat saw */
    r->seen = ident_of(&sb);
    r->have_seen = 1;
    r->loads++;
    crux_prio_file_t *f = NULL;
    if (st == CRUX_OK) {
        st = crux_prio_parse(text, len, r->path, &f, err, sizeof(err));
        free(text);
    }
    if (st != CRUX_OK) {
        char msg[640];
        snprintf(msg, sizeof(msg), "%s; keeping the last good priorities", err);
        say_once(r, msg);
        r->stale = 1;
        return;
    }
    int own = crux_prio_skipped(f, r->job);
    if (own > 0) { /* this job's own line is bad: its last good state stays */
        char msg[PATH_MAX + 320];
        snprintf(msg, sizeof(msg), "%s:%d: the line of job %.64s is malformed; keeping level %d",
                 r->path, own, r->job, r->level);
        say_once(r, msg);
        crux_prio_file_free(f);
        r->stale = 1;
        return;
    }
    if (f->skipped > 0) { /* other jobs' lines: ignored, counted, said once */
        char msg[PATH_MAX + 320];
        snprintf(msg, sizeof(msg), "%d malformed line%s of other jobs ignored (the first: %s)",
                 f->skipped, f->skipped > 1 ? "s" : "", f->skipped_why);
        say_once(r, msg);
    }
    r->skipped = f->skipped;
    const crux_prio_entry_t *e = crux_prio_find(f, r->job);
    const char *uid = crux_prio_get(e, "uid");
    if (uid != NULL && strtoul(uid, NULL, 10) != (unsigned long)getuid()) {
        /* another user's job of this id: its level is not this job's */
        char msg[PATH_MAX + 320];
        snprintf(msg, sizeof(msg),
                 "%s: the line of job %.64s belongs to uid %s, not to this process's uid %u: "
                 "not applied",
                 r->path, r->job, uid, (unsigned)getuid());
        say_once(r, msg);
        e = NULL;
    }
    crux_prio_state_t state = e ? CRUX_PRIO_LISTED : CRUX_PRIO_NOT_LISTED;
    if (state != r->state || !entry_eq(e, r->entry) || f->levels != r->levels)
        r->changed = 1;
    crux_prio_file_free(r->file);
    r->file = f;
    r->entry = e;
    r->state = state;
    r->levels = f->levels;
    r->level = e ? e->level : r->default_level;
    r->stale = 0;
}

crux_status_t crux_prio_reader_open(const char *path, const char *job, int default_level,
                                    unsigned interval_ms, crux_prio_reader_t **out)
{
    if (path == NULL || *path == '\0' || out == NULL || default_level < 0)
        return CRUX_ERR_INVALID;
    crux_prio_reader_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return CRUX_ERR_NO_MEMORY;
    r->path = strdup(path);
    r->job = strdup(job ? job : "");
    if (r->path == NULL || r->job == NULL) {
        crux_prio_reader_close(r);
        return CRUX_ERR_NO_MEMORY;
    }
    r->default_level = default_level;
    r->interval_ns = (uint64_t)interval_ms * 1000000ULL;
    r->log = log_stderr;
    r->opening = 1;
    r->state = CRUX_PRIO_NO_FILE;
    r->level = default_level;
    check(r);
    r->opening = 0;
    r->changed = 0;
    r->next_check_ns = now_ns() + r->interval_ns;
    *out = r;
    return CRUX_OK;
}

void crux_prio_reader_close(crux_prio_reader_t *r)
{
    if (r == NULL)
        return;
    crux_prio_file_free(r->file);
    free(r->pending);
    free(r->path);
    free(r->job);
    free(r);
}

void crux_prio_reader_set_log(crux_prio_reader_t *r, crux_prio_log_fn fn, void *arg)
{
    r->log = fn ? fn : log_stderr;
    r->log_arg = arg;
    flush_pending(r);
}

int crux_prio_reader_poll(crux_prio_reader_t *r)
{
    flush_pending(r);
    if (r->interval_ns > 0) {
        uint64_t now = now_ns();
        if (now < r->next_check_ns)
            return 0;
        r->next_check_ns = now + r->interval_ns;
    }
    check(r);
    int changed = r->changed;
    r->changed = 0;
    return changed;
}

int crux_prio_reader_level(const crux_prio_reader_t *r)
{
    return r->level;
}

int crux_prio_reader_levels(const crux_prio_reader_t *r)
{
    return r->levels;
}

const char *crux_prio_reader_get(const crux_prio_reader_t *r, const char *key)
{
    return crux_prio_get(r->entry, key);
}

crux_prio_state_t crux_prio_reader_state(const crux_prio_reader_t *r)
{
    return r->state;
}

int crux_prio_reader_stale(const crux_prio_reader_t *r)
{
    return r->stale;
}

uint64_t crux_prio_reader_loads(const crux_prio_reader_t *r)
{
    return r->loads;
}

int crux_prio_reader_skipped(const crux_prio_reader_t *r)
{
    return r->skipped;
}

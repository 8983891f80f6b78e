/* The ranges of the values a caller gives libcrux_coll (crux_coll_check):
 * what each size and count may be, and whether the staging areas fit in
 * shared memory. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "coll/crux_coll.h"

#define MIN_STAGE ((size_t)64 << 10)
#define MAX_STAGE ((size_t)1 << 40) /* far below where sizes overflow */
#define MIN_CHUNK ((size_t)64)

typedef struct {
    crux_refuse_fn refuse;
    void *arg;
} refusal_t;

static int size_ok(const refusal_t *r, const char *name, size_t value, size_t min, size_t max,
                   const char *why)
{
    if (value >= min && value <= max) {
        return 1;
    }
    char text[32];
    snprintf(text, sizeof(text), "%zu", value);
    r->refuse(r->arg, name, text, why);
    return 0;
}

static int int_ok(const refusal_t *r, const char *name, int value, int min, int max,
                  const char *why)
{
    if (value >= min && value <= max) {
        return 1;
    }
    char text[16];
    snprintf(text, sizeof(text), "%d", value);
    r->refuse(r->arg, name, text, why);
    return 0;
}

/* Whether every process of the node can map a stage in the free space of
 * 'dir' (without it the stage comes from System V shared memory, which the
 * group set-up checks). */
static int stage_fits(const refusal_t *r, size_t stage, int local_procs, const char *dir)
{
    struct statvfs fs;
    if (dir == NULL || statvfs(dir, &fs) != 0) {
        return 1;
    }
    uint64_t free_bytes = (uint64_t)fs.f_bavail * (uint64_t)fs.f_frsize;
    uint64_t procs = local_procs > 0 ? (uint64_t)local_procs : 1;
    if ((uint64_t)stage <= free_bytes / procs) {
        return 1;
    }
    char text[32], why[160];
    snprintf(text, sizeof(text), "%zu", stage);
    snprintf(why, sizeof(why),
             "%" PRIu64 " processes on this node need that much each, and %s has %" PRIu64
             " bytes free",
             procs, dir, free_bytes);
    r->refuse(r->arg, "stage_size", text, why);
    return 0;
}

int crux_coll_check(const crux_coll_config_t *c, const crux_select_sizes_t *sizes, int hier_depth,
                    int group_size, const char *shm_dir, crux_refuse_fn refuse, void *arg)
{
    const refusal_t r = { refuse, arg };
    int ok = 1;
    int stage_ok = size_ok(&r, "stage_size", c->stage_size, MIN_STAGE, MAX_STAGE,
                           "must be between 65536 and 2^40");
    ok &= stage_ok;
    /* against a refused stage size, the chunk size is judged on its own:
     * the fault is the stage's, said once */
    ok &= size_ok(&r, "chunk_size", c->chunk_size, MIN_CHUNK, stage_ok ? c->stage_size : MAX_STAGE,
                  "must be at least 64 and at most coll_crux_stage_size");
    ok &= size_ok(&r, "small_max_bytes", c->small_max_bytes, 0, CRUX_SMALL_MAX_BYTES,
                  "must be between 0 and 1048576");
    ok &= size_ok(&r, "hier_small_max_bytes", sizes->hier_small_max_bytes, 0, CRUX_SMALL_MAX_BYTES,
                  "must be between 0 and 1048576");
    ok &= size_ok(&r, "small_whole_max_bytes", c->small_whole_max_bytes, 0, CRUX_SMALL_MAX_BYTES,
                  "must be between 0 and 1048576");
    ok &= int_ok(&r, "group_size", group_size, 0, INT_MAX, "must not be negative");
    _Static_assert(CRUX_HIER_MAX_DEPTH == 64, "the message names the limit");
    ok &= int_ok(&r, "hier_depth", hier_depth, 0, CRUX_HIER_MAX_DEPTH, "must be between 0 and 64");
    /* the space check only for a stage that is sane on its own */
    return ok && stage_fits(&r, c->stage_size, c->local_procs, shm_dir);
}

/* Range checks of the MCA parameters, once, at the component's open.  A
 * value crux refuses is said once per node through the help file
 * (naming the parameter, the value and the accepted range) and turns
 * crux's own algorithms off for the run: the communicators still get every
 * collective from the stock components (coll_crux_fill.c), so MPI_Init and
 * the job go on.  Sizes are checked against overflow (a hard upper bound)
 * and the staging area against the free space of /dev/shm, where every
 * process of the node maps one per communicator. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <sys/statvfs.h>

#include "ompi_config.h"

#include "orte/util/proc_info.h"

#include "ompi_coll/coll_crux.h"

#define COLL_CRUX_MIN_STAGE      (64u << 10)
#define COLL_CRUX_MAX_STAGE      ((size_t)1 << 40) /* far below where sizes overflow */
#define COLL_CRUX_MIN_CHUNK      64u
#define COLL_CRUX_MAX_HIER_DEPTH 64
#define COLL_CRUX_SHM_DIR        "/dev/shm"

static void refuse(const char *name, const char *value, const char *why)
{
    coll_crux_say(true, "invalid-param", name, value, why);
}

static bool size_ok(const char *name, size_t value, size_t min, size_t max, const char *why)
{
    if (value >= min && value <= max) {
        return true;
    }
    char text[32];
    snprintf(text, sizeof(text), "%zu", value);
    refuse(name, text, why);
    return false;
}

static bool int_ok(const char *name, int value, int min, int max, const char *why)
{
    if (value >= min && value <= max) {
        return true;
    }
    char text[16];
    snprintf(text, sizeof(text), "%d", value);
    refuse(name, text, why);
    return false;
}

/* Whether every process of this node can map a stage in /dev/shm's free
 * space (a node without /dev/shm is not checked: the stage then comes
 * from System V shared memory, which the group set-up checks). */
static bool stage_fits(size_t stage)
{
    struct statvfs fs;
    if (statvfs(COLL_CRUX_SHM_DIR, &fs) != 0) {
        return true;
    }
    uint64_t free_bytes = (uint64_t)fs.f_bavail * (uint64_t)fs.f_frsize;
    uint64_t procs = (uint64_t)orte_process_info.num_local_peers + 1;
    if ((uint64_t)stage <= free_bytes / procs) {
        return true;
    }
    char text[32], why[160];
    snprintf(text, sizeof(text), "%zu", stage);
    snprintf(why, sizeof(why),
             "%" PRIu64 " processes on this node need that much each, and %s has %" PRIu64
             " bytes free",
             procs, COLL_CRUX_SHM_DIR, free_bytes);
    refuse("stage_size", text, why);
    return false;
}

bool coll_crux_params_valid(const mca_coll_crux_component_t *c)
{
    bool ok = true;
    /* every check runs, so one run names every refused value */
    bool stage_ok = size_ok("stage_size", c->stage_size, COLL_CRUX_MIN_STAGE, COLL_CRUX_MAX_STAGE,
                            "must be between 65536 and 2^40");
    ok &= stage_ok;
    /* against a refused stage size, the chunk size is judged on its own:
     * the fault is the stage's, said once */
    ok &= size_ok("chunk_size", c->chunk_size, COLL_CRUX_MIN_CHUNK,
                  stage_ok ? c->stage_size : COLL_CRUX_MAX_STAGE,
                  "must be at least 64 and at most coll_crux_stage_size");
    ok &= size_ok("small_max_bytes", c->small_max_bytes, 0, CRUX_SMALL_MAX_BYTES,
                  "must be between 0 and 1048576");
    ok &= size_ok("hier_small_max_bytes", c->hier_small_max_bytes, 0, CRUX_SMALL_MAX_BYTES,
                  "must be between 0 and 1048576");
    ok &= size_ok("small_whole_max_bytes", c->small_whole_max_bytes, 0, CRUX_SMALL_MAX_BYTES,
                  "must be between 0 and 1048576");
    ok &= int_ok("group_size", c->group_size, 0, INT_MAX, "must not be negative");
    ok &= int_ok("far_latency_ns", c->far_latency_ns, 0, INT_MAX, "must not be negative");
    ok &= int_ok("hier_depth", c->hier_depth, 0, COLL_CRUX_MAX_HIER_DEPTH,
                 "must be between 0 and 64");
    ok &= int_ok("priority_poll_ms", c->priority_poll_ms, 0, INT_MAX, "must not be negative");
    ok &= int_ok("arb_max_wait_us", c->arb_max_wait_us, 0, INT_MAX, "must not be negative");
    ok &= int_ok("profile_interval_s", c->profile_interval_s, 1, INT_MAX, "must be at least 1");
    ok &= int_ok("net_setup_timeout_ms", c->net_setup_timeout_ms, 1, 3600000,
                 "must be between 1 and 3600000");
    /* the space check only for a stage that is sane on its own */
    return ok && stage_fits(c->stage_size);
}

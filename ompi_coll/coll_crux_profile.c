/* The job's communication profile, for crux-sched: with
 * coll_crux_profile_dir (or CRUX_PROFILE_DIR) set, the job's leader (rank 0
 * of MPI_COMM_WORLD) times every MPI_Allreduce that reaches crux and, every
 * coll_crux_profile_interval_s, writes <dir>/<job>.profile (libcrux_prio's
 * format): calls, bytes, time inside and between them, the ranks per host,
 * and the iteration period.  The window still open when crux closes (in
 * MPI_Finalize) is written then, so a job shorter than the interval leaves
 * a profile too.
 *
 * The windows and the iteration period are libcrux_prio's recorder
 * (crux_recorder_t, sched/crux_profile.h); this file keeps it under a
 * lock, knows the leader and the job's hosts, and writes. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi_config.h"

#include "ompi/proc/proc.h"
#include "opal/util/proc.h"
#include "sched/crux_profile.h"

#include "ompi_coll/coll_crux.h"

static struct {
    pthread_mutex_t lock;
    int leader; /* -1: not known yet */
    crux_recorder_t rec;
    bool warned; /* a failed write was said */
    /* MPI_COMM_WORLD's size and hosts, taken at the first call: world is
     * gone when crux closes and writes the last window */
    int ranks, nhosts;
    char **hosts;
    int *host_ranks;
} prof = { .lock = PTHREAD_MUTEX_INITIALIZER, .leader = -1 };

double coll_crux_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

bool coll_crux_profiling(void)
{
    if (!coll_crux_profile_configured()) {
        return false;
    }
    /* threads may ask at once: the same answer, written atomically */
    int leader = __atomic_load_n(&prof.leader, __ATOMIC_RELAXED);
    if (leader < 0) {
        leader = ompi_comm_rank((ompi_communicator_t *)MPI_COMM_WORLD) == 0;
        __atomic_store_n(&prof.leader, leader, __ATOMIC_RELAXED);
    }
    return leader == 1;
}

/* The name of the leader's node: the one the launcher gives its other
 * ranks there, else its own.  (The leader's own name is the machine's host
 * name, its peers' the launcher's node name, e.g. Slurm's: the node would
 * be named twice.) */
static const char *leader_node(ompi_communicator_t *world, int size)
{
    int me = ompi_comm_rank(world);
    for (int r = 0; r < size; r++) {
        opal_proc_t *proc = &ompi_comm_peer_lookup(world, r)->super;
        const char *name = opal_get_proc_hostname(proc);
        if (r != me && OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags) && name != NULL) {
            return name;
        }
    }
    return opal_get_proc_hostname(&ompi_comm_peer_lookup(world, me)->super);
}

/* "host:ranks,..." in rank order of first appearance, as a ring visits
 * them, into prof (no hosts when memory ran out: the write then fails,
 * said once). */
static void take_world(void)
{
    ompi_communicator_t *world = (ompi_communicator_t *)MPI_COMM_WORLD;
    int size = ompi_comm_size(world), n = 0, me = ompi_comm_rank(world);
    bool ok = true;
    char **hosts = calloc((size_t)size, sizeof(char *));
    int *ranks = calloc((size_t)size, sizeof(int));
    const char *here = leader_node(world, size);
    for (int r = 0; r < size && hosts != NULL && ranks != NULL && ok; r++) {
        opal_proc_t *proc = &ompi_comm_peer_lookup(world, r)->super;
        const char *name = r == me || OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)
                               ? here
                               : opal_get_proc_hostname(proc);
        name = name != NULL ? name : "?";
        int h;
        for (h = 0; h < n && strcmp(hosts[h], name); h++) {
        }
        if (h == n) {
            ok = (hosts[n++] = strdup(name)) != NULL;
        }
        ranks[h]++;
    }
    if (hosts == NULL || ranks == NULL || !ok) {
        for (int h = 0; hosts != NULL && h < n; h++) {
            free(hosts[h]);
        }
        free(hosts);
        free(ranks);
        hosts = NULL;
        ranks = NULL;
        n = 0;
    }
    prof.ranks = size;
    prof.nhosts = n;
    prof.hosts = hosts;
    prof.host_ranks = ranks;
}

/* The open window, as of 'now', written; the next call opens another. */
static void write_profile(double now)
{
    const char *job = coll_crux_job_id();
    char path[4096], err[256];
    snprintf(path, sizeof(path), "%s/%s.profile", coll_crux_profile_dir(),
             job != NULL ? job : "unknown-job");
    crux_profile_t p = {
        .job = (char *)(job != NULL ? job : "unknown-job"),
        .ranks = prof.ranks,
        .hosts = prof.hosts,
        .host_ranks = prof.host_ranks,
        .nhosts = prof.nhosts,
    };
    crux_recorder_close(&prof.rec, now, &p);
    if (crux_profile_write(path, &p, err, sizeof(err)) != CRUX_OK) {
        /* a directory that cannot be written fails every time: said once,
         * visibly, then only at verbosity 1 */
        if (!prof.warned) {
            prof.warned = true;
            coll_crux_say(false, "profile-failed", coll_crux_profile_dir(), err);
        } else {
            COLL_CRUX_VERBOSE(1, "profile not written: %s", err);
        }
    }
}

void coll_crux_profile_record(size_t bytes, double start, double end)
{
    pthread_mutex_lock(&prof.lock);
    if (prof.rec.recorded == 0) {
        take_world();
    }
    if (crux_recorder_add(&prof.rec, bytes, start, end,
                          mca_coll_crux_component.profile_interval_s)) {
        write_profile(end);
    }
    pthread_mutex_unlock(&prof.lock);
}

void coll_crux_profile_finalize(void)
{
    pthread_mutex_lock(&prof.lock);
    if (prof.rec.calls > 0) {
        write_profile(prof.rec.last_exit); /* the window ends with its last call, as every window */
    }
    for (int h = 0; h < prof.nhosts; h++) {
        free(prof.hosts[h]);
    }
    free(prof.hosts);
    free(prof.host_ranks);
    prof.hosts = NULL;
    prof.host_ranks = NULL;
    prof.nhosts = 0;
    pthread_mutex_unlock(&prof.lock);
}

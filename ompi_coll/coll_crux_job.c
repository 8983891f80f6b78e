/* The job's place in the cluster schedule (libcrux_prio, libcrux_arb): its
 * id, its level in the priority file crux-sched publishes, the network
 * settings of that level, and intra-host arbitration.
 *
 * Process-wide and set up on first use.  With no priority file configured
 * nothing here costs more than a branch.  With one, the file is read at
 * once, looked at again at most every coll_crux_priority_poll_ms (a clock
 * read between looks), and a malformed file keeps the last good state and is
 * reported once.  Before crux moves an Allreduce's data it acquires the
 * host's shared "hostmem" resource at the job's level: while a job of a
 * higher level transfers on this host, it waits, at most
 * coll_crux_arb_max_wait_us, so nothing starves; the table's lock is waited
 * for at most as long, so a job of the user's stopped while holding it
 * costs this one that wait once: it then transfers without arbitration
 * (and says so once) until the lock is free again. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"

#include "sched/crux_arb.h"
#include "sched/crux_prio.h"

#include "ompi_coll/coll_crux.h"

static struct {
    pthread_mutex_t lock;
    bool ready;
    char *job; /* a copy: Open MPI frees the parameter's string before crux closes */
    crux_prio_reader_t *reader;
    crux_arb_t *arb;
    int resource;
    int level;
    /* what arbitration cost this process, for the closing summary */
    uint64_t transfers, waits, timeouts, wait_ns, unarbitrated;
} job = { .lock = PTHREAD_MUTEX_INITIALIZER, .level = 0 };

static void ensure_set_up(void);

static void log_line(void *arg, const char *message)
{
    COLL_CRUX_VERBOSE(1, "%s", message);
}

static int key_int(const char *key, int fallback)
{
    const char *v = crux_prio_reader_get(job.reader, key);
    return v != NULL ? atoi(v) : fallback;
}

/* The level and its network settings, after the file changed.  Only the
 * first level goes into the environment, at set-up: setenv while other
 * threads of the application call getenv can free what they read. */
static void take_level(bool first)
{
    mca_coll_crux_component_t *net = &mca_coll_crux_component;
    job.level = crux_prio_reader_level(job.reader);
    /* read by other threads as they set up transports (coll_crux_config) */
    __atomic_store_n(&net->service_level, key_int("sl", -1), __ATOMIC_RELAXED);
    __atomic_store_n(&net->traffic_class, key_int("tc", -1), __ATOMIC_RELAXED);
    __atomic_store_n(&net->dscp, key_int("dscp", -1), __ATOMIC_RELAXED);
    if (first) {
        char text[16];
        snprintf(text, sizeof(text), "%d", job.level);
        setenv("CRUX_PRIORITY_LEVEL", text, 1);
    }
    COLL_CRUX_VERBOSE(1, "job %s: level %d of %d (%s), service level %d, traffic class %d, dscp %d",
                      job.job, job.level, crux_prio_reader_levels(job.reader),
                      crux_prio_reader_state(job.reader) == CRUX_PRIO_LISTED
                          ? "from the priority file"
                          : "default",
                      net->service_level, net->traffic_class, net->dscp);
}

crux_net_level_t coll_crux_job_net_level(void)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    return (crux_net_level_t){
        .sl = __atomic_load_n(&c->service_level, __ATOMIC_RELAXED),
        .tc = __atomic_load_n(&c->traffic_class, __ATOMIC_RELAXED),
        .dscp = __atomic_load_n(&c->dscp, __ATOMIC_RELAXED),
    };
}

bool coll_crux_job_route(char *out, size_t size)
{
    ensure_set_up();
    out[0] = '\0';
    if (job.reader == NULL) {
        return false;
    }
    pthread_mutex_lock(&job.lock);
    const char *v = crux_prio_reader_get(job.reader, "route");
    if (v != NULL && strlen(v) < size) {
        memcpy(out, v, strlen(v) + 1);
    }
    pthread_mutex_unlock(&job.lock);
    return true;
}

static void set_up(void)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    const char *file = c->priority_file != NULL && c->priority_file[0]
                           ? c->priority_file
                           : getenv("CRUX_PRIORITY_FILE");
    const char *source = NULL;
    char skipped[160];
    const char *id = crux_prio_job_id(c->job_id, &source);
    job.job = id != NULL ? strdup(id) : NULL;
    crux_prio_job_id_skipped(c->job_id, skipped, sizeof(skipped));
    if (file == NULL || file[0] == '\0') {
        return;
    }
    if (job.job == NULL) {
        COLL_CRUX_VERBOSE(
            1, "priority file %s but no usable job id (%s): ignored", file,
            skipped[0] ? skipped : "none of coll_crux_job_id, CRUX_JOB_ID, SLURM_JOB_ID, ... set");
        return;
    }
    if (skipped[0]) {
        COLL_CRUX_VERBOSE(1, "%s: skipped; the job id is %s's", skipped, source);
    }
    if (crux_prio_reader_open(file, job.job, 0, (unsigned)c->priority_poll_ms, &job.reader) !=
        CRUX_OK) {
        COLL_CRUX_VERBOSE(1, "cannot read the priority file %s: ignored", file);
        return;
    }
    crux_prio_reader_set_log(job.reader, log_line, NULL);
    take_level(true);
    char err[512] = "";
    if (crux_arb_open(c->arb_path != NULL && c->arb_path[0] ? c->arb_path : NULL, 0, &job.arb, err,
                      sizeof(err)) == CRUX_OK) {
        crux_arb_set_lock_wait(job.arb, (uint64_t)c->arb_max_wait_us * 1000u);
    }
    /* the table's lock held past the wait: registered at a later call */
    crux_status_t st =
        job.arb != NULL ? crux_arb_resource(job.arb, "hostmem", &job.resource) : CRUX_ERR_INVALID;
    if (st == CRUX_ERR_TIMEOUT) {
        job.resource = -1;
    } else if (st != CRUX_OK) {
        COLL_CRUX_VERBOSE(
            1, "no intra-host arbitration table%s%s: levels are not enforced on this host",
            err[0] ? ": " : "", err);
        crux_arb_close(job.arb);
        job.arb = NULL;
    }
}

static void ensure_set_up(void)
{
    if (!__atomic_load_n(&job.ready, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&job.lock);
        if (!job.ready) {
            set_up();
            __atomic_store_n(&job.ready, true, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&job.lock);
    }
}

void coll_crux_job_init(void)
{
    ensure_set_up();
}

const char *coll_crux_job_id(void)
{
    ensure_set_up();
    return job.job;
}

void coll_crux_job_enter(coll_crux_ticket_t *ticket)
{
    ticket->held = false;
    ensure_set_up();
    if (job.reader == NULL) {
        return;
    }
    pthread_mutex_lock(&job.lock);
    if (crux_prio_reader_poll(job.reader)) {
        take_level(false);
    }
    int level = job.level;
    pthread_mutex_unlock(&job.lock);
    if (job.arb == NULL) {
        return;
    }
    crux_arb_ticket_t t;
    int resource = __atomic_load_n(&job.resource, __ATOMIC_RELAXED);
    crux_status_t st = CRUX_OK;
    if (resource < 0 && (st = crux_arb_resource(job.arb, "hostmem", &resource)) == CRUX_OK) {
        __atomic_store_n(&job.resource, resource, __ATOMIC_RELAXED);
    }
    if (st == CRUX_OK) {
        st = crux_arb_acquire(job.arb, resource, level, job.job,
                              (uint64_t)mca_coll_crux_component.arb_max_wait_us * 1000u, &t);
    }
    if (st == CRUX_OK) {
        ticket->held = true;
        ticket->arb = t;
        __atomic_add_fetch(&job.transfers, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&job.waits, (uint64_t)t.waited, __ATOMIC_RELAXED);
        __atomic_add_fetch(&job.timeouts, (uint64_t)t.timed_out, __ATOMIC_RELAXED);
        __atomic_add_fetch(&job.wait_ns, t.waited ? t.wait_ns : 0, __ATOMIC_RELAXED);
    } else if (st == CRUX_ERR_TIMEOUT &&
               __atomic_fetch_add(&job.unarbitrated, 1, __ATOMIC_RELAXED) == 0) {
        int stopped;
        pid_t holder = crux_arb_holder(job.arb, &stopped);
        COLL_CRUX_VERBOSE(1,
                          "job %s: the arbitration table's lock was held past "
                          "coll_crux_arb_max_wait_us (%d us) by pid %d%s: transfers go on without "
                          "arbitration while it is",
                          job.job, mca_coll_crux_component.arb_max_wait_us, (int)holder,
                          stopped ? ", a stopped process" : "");
    }
}

void coll_crux_job_exit(coll_crux_ticket_t *ticket)
{
    if (ticket->held) {
        crux_arb_release(job.arb, &ticket->arb);
        ticket->held = false;
    }
}

void coll_crux_job_finalize(void)
{
    if (job.arb != NULL) {
        COLL_CRUX_VERBOSE(1,
                          "job %s at level %d: %" PRIu64 " transfers, %" PRIu64 " waited for a "
                          "higher level (%.1f ms), %" PRIu64 " gave up waiting, %" PRIu64
                          " without arbitration",
                          job.job, job.level, job.transfers, job.waits, (double)job.wait_ns / 1e6,
                          job.timeouts, job.unarbitrated);
    }
    crux_arb_close(job.arb);
    crux_prio_reader_close(job.reader);
    free(job.job);
    job.arb = NULL;
    job.reader = NULL;
    job.job = NULL;
    job.ready = false;
}

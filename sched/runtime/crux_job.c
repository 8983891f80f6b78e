/* A job's place in the cluster schedule (crux_job.h): its id, the level the
 * priority file gives it and that level's settings, and the host's
 * arbitration at that level. */
#include "sched/crux_job.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/crux_prio.h"

struct crux_job {
    char *id;    /* NULL: none set or usable */
    char *names; /* crux_job_config_t's names */
    uint64_t max_wait_ns;
    crux_job_log_fn log;
    void *log_arg;
    pthread_mutex_t lock;       /* the reader, as transfers of several threads enter */
    crux_prio_reader_t *reader; /* NULL: no priority file read */
    crux_arb_t *arb;            /* NULL: no arbitration */
    /* read without the lock: */
    int resource; /* the "hostmem" resource; -1 until the table's lock let it be registered */
    int level;
    int sl, tc, dscp;
    crux_job_counters_t counters;
};

static void say(const crux_job_t *job, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const crux_job_t *job, const char *format, ...)
{
    char message[8192];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof(message), format, ap);
    va_end(ap);
    if (job->log != NULL) {
        job->log(job->log_arg, message);
    } else {
        fprintf(stderr, "crux: %s\n", message);
    }
}

static int key_int(const crux_job_t *job, const char *key)
{
    const char *v = crux_prio_reader_get(job->reader, key);
    return v != NULL ? atoi(v) : -1; /* the reader took only integers in range */
}

/* The level and its network settings, after the file changed.  Only the
 * first level goes into the environment: setenv while other threads of the
 * application call getenv can free what they read. */
static void take_level(crux_job_t *job, int first, int export_level)
{
    int level = crux_prio_reader_level(job->reader);
    int sl = key_int(job, "sl"), tc = key_int(job, "tc"), dscp = key_int(job, "dscp");
    __atomic_store_n(&job->level, level, __ATOMIC_RELAXED);
    __atomic_store_n(&job->sl, sl, __ATOMIC_RELAXED);
    __atomic_store_n(&job->tc, tc, __ATOMIC_RELAXED);
    __atomic_store_n(&job->dscp, dscp, __ATOMIC_RELAXED);
    if (first && export_level) {
        char text[16];
        snprintf(text, sizeof(text), "%d", level);
        setenv("CRUX_PRIORITY_LEVEL", text, 1);
    }
    say(job, "job %s: level %d of %d (%s), service level %d, traffic class %d, dscp %d", job->id,
        level, crux_prio_reader_levels(job->reader),
        crux_prio_reader_state(job->reader) == CRUX_PRIO_LISTED ? "from the priority file"
                                                                : "default",
        sl, tc, dscp);
}

/* The host's arbitration table and its "hostmem" resource; the table's lock
 * held past the wait: the resource is registered at a later entry. */
static void open_arb(crux_job_t *job, const char *path)
{
    char err[512] = "";
    if (crux_arb_open(path != NULL && path[0] ? path : NULL, 0, &job->arb, err, sizeof(err)) ==
        CRUX_OK) {
        crux_arb_set_lock_wait(job->arb, job->max_wait_ns);
    }
    crux_status_t st = job->arb != NULL ? crux_arb_resource(job->arb, "hostmem", &job->resource)
                                        : CRUX_ERR_INVALID;
    if (st == CRUX_ERR_TIMEOUT) {
        job->resource = -1;
    } else if (st != CRUX_OK) {
        say(job, "no intra-host arbitration table%s%s: levels are not enforced on this host",
            err[0] ? ": " : "", err);
        crux_arb_close(job->arb);
        job->arb = NULL;
    }
}

/* The file and the table, once the id is known (source: where it came
 * from). */
static void open_schedule(crux_job_t *job, const crux_job_config_t *config, const char *source)
{
    const char *file = config->priority_file != NULL && config->priority_file[0]
                           ? config->priority_file
                           : getenv("CRUX_PRIORITY_FILE");
    char skipped[160], none[256];
    crux_prio_job_id_skipped(config->job_id, skipped, sizeof(skipped));
    if (file == NULL || file[0] == '\0') {
        return;
    }
    if (job->id == NULL) {
        snprintf(none, sizeof(none), "none of %sjob_id, CRUX_JOB_ID, SLURM_JOB_ID, ... set",
                 job->names);
        say(job, "priority file %s but no usable job id (%s): ignored", file,
            skipped[0] ? skipped : none);
        return;
    }
    if (skipped[0]) {
        say(job, "%s: skipped; the job id is %s's", skipped, source);
    }
    if (crux_prio_reader_open(file, job->id, 0, config->poll_ms, &job->reader) != CRUX_OK) {
        say(job, "cannot read the priority file %s: ignored", file);
        return;
    }
    crux_prio_reader_set_log(job->reader, job->log, job->log_arg);
    take_level(job, 1, config->export_level);
    open_arb(job, config->arb_path);
}

crux_status_t crux_job_open(const crux_job_config_t *config, crux_job_t **out)
{
    *out = NULL;
    crux_job_t *job = calloc(1, sizeof(*job));
    if (job == NULL) {
        return CRUX_ERR_NO_MEMORY;
    }
    const char *source = NULL;
    const char *id = crux_prio_job_id(config->job_id, &source);
    job->id = id != NULL ? strdup(id) : NULL;
    job->names = strdup(config->names != NULL ? config->names : "");
    if ((id != NULL && job->id == NULL) || job->names == NULL) {
        free(job->id);
        free(job->names);
        free(job);
        return CRUX_ERR_NO_MEMORY;
    }
    job->max_wait_ns = (uint64_t)config->arb_max_wait_us * 1000u;
    job->log = config->log;
    job->log_arg = config->log_arg;
    pthread_mutex_init(&job->lock, NULL);
    job->sl = job->tc = job->dscp = -1;
    open_schedule(job, config, source);
    *out = job;
    return CRUX_OK;
}

void crux_job_close(crux_job_t *job)
{
    if (job == NULL) {
        return;
    }
    if (job->arb != NULL) {
        crux_job_counters_t c;
        crux_job_counters(job, &c);
        say(job,
            "job %s at level %d: %" PRIu64 " transfers, %" PRIu64 " waited for a "
            "higher level (%.1f ms), %" PRIu64 " gave up waiting, %" PRIu64 " without arbitration",
            job->id, crux_job_level(job), c.transfers, c.waits, (double)c.wait_ns / 1e6, c.timeouts,
            c.unarbitrated);
    }
    crux_arb_close(job->arb);
    crux_prio_reader_close(job->reader);
    pthread_mutex_destroy(&job->lock);
    free(job->id);
    free(job->names);
    free(job);
}

const char *crux_job_id(const crux_job_t *job)
{
    return job != NULL ? job->id : NULL;
}

int crux_job_level(const crux_job_t *job)
{
    return job != NULL ? __atomic_load_n(&job->level, __ATOMIC_RELAXED) : 0;
}

void crux_job_net(const crux_job_t *job, int *sl, int *tc, int *dscp)
{
    *sl = job != NULL ? __atomic_load_n(&job->sl, __ATOMIC_RELAXED) : -1;
    *tc = job != NULL ? __atomic_load_n(&job->tc, __ATOMIC_RELAXED) : -1;
    *dscp = job != NULL ? __atomic_load_n(&job->dscp, __ATOMIC_RELAXED) : -1;
}

int crux_job_route(crux_job_t *job, char *out, size_t size)
{
    out[0] = '\0';
    if (job == NULL || job->reader == NULL) {
        return 0;
    }
    pthread_mutex_lock(&job->lock);
    const char *v = crux_prio_reader_get(job->reader, "route");
    if (v != NULL && strlen(v) < size) {
        memcpy(out, v, strlen(v) + 1);
    }
    pthread_mutex_unlock(&job->lock);
    return 1;
}

/* Counted once the resource is held. */
static void count(crux_job_t *job, const crux_arb_ticket_t *t)
{
    crux_job_counters_t *c = &job->counters;
    __atomic_add_fetch(&c->transfers, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->waits, (uint64_t)t->waited, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->timeouts, (uint64_t)t->timed_out, __ATOMIC_RELAXED);
    __atomic_add_fetch(&c->wait_ns, t->waited ? t->wait_ns : 0, __ATOMIC_RELAXED);
}

void crux_job_enter(crux_job_t *job, crux_job_ticket_t *ticket)
{
    ticket->held = 0;
    if (job == NULL || job->reader == NULL) {
        return;
    }
    pthread_mutex_lock(&job->lock);
    if (crux_prio_reader_poll(job->reader)) {
        take_level(job, 0, 0);
    }
    int level = crux_job_level(job);
    pthread_mutex_unlock(&job->lock);
    if (job->arb == NULL) {
        return;
    }
    int resource = __atomic_load_n(&job->resource, __ATOMIC_RELAXED);
    crux_status_t st = CRUX_OK;
    if (resource < 0 && (st = crux_arb_resource(job->arb, "hostmem", &resource)) == CRUX_OK) {
        __atomic_store_n(&job->resource, resource, __ATOMIC_RELAXED);
    }
    if (st == CRUX_OK) {
        st = crux_arb_acquire(job->arb, resource, level, job->id, job->max_wait_ns, &ticket->arb);
    }
    if (st == CRUX_OK) {
        ticket->held = 1;
        count(job, &ticket->arb);
    } else if (st == CRUX_ERR_TIMEOUT &&
               __atomic_fetch_add(&job->counters.unarbitrated, 1, __ATOMIC_RELAXED) == 0) {
        int stopped;
        pid_t holder = crux_arb_holder(job->arb, &stopped);
        say(job,
            "job %s: the arbitration table's lock was held past %sarb_max_wait_us (%" PRIu64
            " us) by pid %d%s: transfers go on without arbitration while it is",
            job->id, job->names, job->max_wait_ns / 1000u, (int)holder,
            stopped ? ", a stopped process" : "");
    }
}

void crux_job_exit(crux_job_t *job, crux_job_ticket_t *ticket)
{
    if (ticket->held) {
        crux_arb_release(job->arb, &ticket->arb);
        ticket->held = 0;
    }
}

void crux_job_counters(const crux_job_t *job, crux_job_counters_t *out)
{
    memset(out, 0, sizeof(*out));
    if (job == NULL) {
        return;
    }
    const crux_job_counters_t *c = &job->counters;
    out->transfers = __atomic_load_n(&c->transfers, __ATOMIC_RELAXED);
    out->waits = __atomic_load_n(&c->waits, __ATOMIC_RELAXED);
    out->timeouts = __atomic_load_n(&c->timeouts, __ATOMIC_RELAXED);
    out->wait_ns = __atomic_load_n(&c->wait_ns, __ATOMIC_RELAXED);
    out->unarbitrated = __atomic_load_n(&c->unarbitrated, __ATOMIC_RELAXED);
}

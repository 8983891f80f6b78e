/* The job's place in the cluster schedule: libcrux_job (sched/crux_job.h)
 * configured from the component's parameters, opened on first use (the
 * first module enable, before any transport opens), its messages at
 * verbosity 1. */
#include <pthread.h>

#include "ompi_config.h"

#include "sched/crux_job.h"

#include "ompi_coll/coll_crux.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static crux_job_t *the_job; /* NULL once opened: out of memory, a job without a priority file */
static bool opened;

static void log_line(void *arg, const char *message)
{
    COLL_CRUX_VERBOSE(1, "%s", message);
}

static crux_job_t *job(void)
{
    if (!__atomic_load_n(&opened, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&lock);
        if (!opened) {
            const mca_coll_crux_component_t *c = &mca_coll_crux_component;
            crux_job_config_t config = {
                .priority_file = c->priority_file,
                .job_id = c->job_id,
                .poll_ms = (unsigned)c->priority_poll_ms,
                .arb_path = c->arb_path,
                .arb_max_wait_us = (unsigned)c->arb_max_wait_us,
                .names = "coll_crux_",
                .export_level = 1,
                .log = log_line,
            };
            crux_job_open(&config, &the_job);
            __atomic_store_n(&opened, true, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&lock);
    }
    return the_job;
}

void coll_crux_job_init(void)
{
    job();
}

const char *coll_crux_job_id(void)
{
    return crux_job_id(job());
}

crux_net_level_t coll_crux_job_net_level(void)
{
    crux_net_level_t level = CRUX_NET_LEVEL_NONE;
    crux_job_net(job(), &level.sl, &level.tc, &level.dscp);
    return level;
}

bool coll_crux_job_route(char *out, size_t size)
{
    return crux_job_route(job(), out, size);
}

void coll_crux_job_enter(crux_job_ticket_t *ticket)
{
    crux_job_enter(job(), ticket);
}

void coll_crux_job_exit(crux_job_ticket_t *ticket)
{
    crux_job_exit(the_job, ticket);
}

void coll_crux_job_finalize(void)
{
    crux_job_close(the_job);
    the_job = NULL;
    opened = false;
}

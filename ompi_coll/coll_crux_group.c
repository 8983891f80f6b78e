/* The libcrux_coll groups behind a communicator, the shared-memory group
 * and the multipath engine's: each had the first time a collective needs
 * it (all ranks reach that point in the same call), shared with the other
 * communicators over the same processes (coll_crux_share.c) or built with
 * the previously selected allgather as the out-of-band exchange, so
 * building it never recurses into crux.  If one cannot be had the
 * communicator does without it for good, and verbosity 1 says why once. */
#include <pthread.h>

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "orte/util/proc_info.h"

#include "ompi_coll/coll_crux.h"
#include "coll/crux_dev.h"

/* UCX's component discovery is process-wide; keep group set-ups of
 * communicators used from different threads apart.  Never across an
 * exchange with the other processes, though: when two processes set up
 * different communicators in different threads in opposite orders, each
 * would hold its lock while waiting for the other's exchange. */
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

static int unlocked_allgather(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    const crux_coll_oob_t *oob = arg;
    pthread_mutex_unlock(&setup_lock);
    int rc = oob->allgather(sbuf, rbuf, length, oob->arg);
    pthread_mutex_lock(&setup_lock);
    return rc;
}

static int oob_allgather(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    mca_coll_crux_module_t *m = arg;
    int rc = m->previous_allgather(sbuf, (int)length, MPI_BYTE, rbuf, (int)length, MPI_BYTE,
                                   m->comm, m->previous_allgather_module);
    return rc == OMPI_SUCCESS ? 0 : -1;
}

crux_coll_config_t coll_crux_config(void)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    crux_coll_config_t config = CRUX_COLL_CONFIG_DEFAULT;
    config.stage_size = c->stage_size;
    config.chunk_size = c->chunk_size;
    config.stream_min_bytes = c->stream_min_bytes;
    config.far_latency = c->far_latency_ns * 1e-9;
    config.local_procs = (int)orte_process_info.num_local_peers + 1;
    config.tl.shm_mds = c->shm_mds;
    config.tl.use_cma = c->use_cma;
    /* the job's level may change meanwhile, in another thread */
    config.tl.service_level = __atomic_load_n(&c->service_level, __ATOMIC_RELAXED);
    config.tl.traffic_class = __atomic_load_n(&c->traffic_class, __ATOMIC_RELAXED);
    return config;
}

crux_status_t coll_crux_group_create(const crux_coll_oob_t *oob, const crux_coll_config_t *config,
                                     crux_coll_group_t **group_p)
{
    crux_coll_oob_t unlocked = *oob;
    unlocked.allgather = unlocked_allgather;
    unlocked.arg = (void *)oob;
    pthread_mutex_lock(&setup_lock);
    crux_status_t status = crux_coll_group_create(&unlocked, config, group_p);
    pthread_mutex_unlock(&setup_lock);
    return status;
}

static crux_coll_oob_t module_oob(mca_coll_crux_module_t *m)
{
    crux_coll_oob_t oob = {
        .allgather = oob_allgather,
        .arg = m,
        .rank = ompi_comm_rank(m->comm),
        .size = ompi_comm_size(m->comm),
    };
    return oob;
}

crux_status_t coll_crux_host_group_build(mca_coll_crux_module_t *m, crux_coll_group_t **group)
{
    crux_coll_oob_t oob = module_oob(m);
    crux_coll_config_t config = coll_crux_config();
    return coll_crux_group_create(&oob, &config, group);
}

crux_coll_group_t *coll_crux_get_group(mca_coll_crux_module_t *m)
{
    if (m->group_state != CRUX_GROUP_UNTRIED) {
        return m->group;
    }
    void *group = NULL;
    crux_status_t status = coll_crux_share_acquire(m, COLL_CRUX_HOST, &group);
    if (status != CRUX_OK) {
        m->group = NULL;
        m->group_state = CRUX_GROUP_FAILED;
        CRUX_VERBOSE(1,
                     "no shared memory for communicator %s (%s; /dev/shm full, no "
                     "shared-memory transport, or crux's limit of groups per process?): "
                     "falling back to the previous module",
                     m->comm->c_name, crux_status_string(status));
        return NULL;
    }
    m->group = group;
    m->group_state = CRUX_GROUP_READY;
    return m->group;
}

crux_status_t coll_crux_engine_group_create(const crux_coll_oob_t *oob, crux_dev_group_t **group)
{
    crux_dev_config_t config = CRUX_DEV_CONFIG_DEFAULT;
    crux_coll_config_t host = coll_crux_config();
    config.tl = host.tl;
    config.stream_min_bytes = host.stream_min_bytes;
    config.engine.far_latency = host.far_latency;
    config.local_procs = host.local_procs;
    return crux_dev_group_create(oob, &config, group);
}

crux_status_t coll_crux_engine_group_build(mca_coll_crux_module_t *m, crux_dev_group_t **group)
{
    crux_coll_oob_t oob = module_oob(m);
    return coll_crux_engine_group_create(&oob, group);
}

crux_dev_group_t *coll_crux_engine_group(mca_coll_crux_module_t *m)
{
    if (m->engine_state == CRUX_GROUP_UNTRIED) {
        void *group = NULL;
        crux_status_t status = coll_crux_share_acquire(m, COLL_CRUX_ENGINE, &group);
        m->engine_state = status == CRUX_OK ? CRUX_GROUP_READY : CRUX_GROUP_FAILED;
        m->engine_group = status == CRUX_OK ? group : NULL;
        if (status != CRUX_OK) {
            CRUX_VERBOSE(1,
                         "communicator %s: no multipath engine (%s): host buffers take "
                         "the staged algorithm, device buffers are staged through host "
                         "memory",
                         m->comm->c_name, crux_status_string(status));
        }
    }
    return m->engine_group;
}

void coll_crux_set_caller(mca_coll_crux_module_t *m)
{
    uint64_t cid = ompi_comm_get_cid(m->comm);
    if (m->group != NULL) {
        crux_coll_group_set_caller(m->group, cid);
    }
    if (m->engine_group != NULL) {
        crux_dev_group_set_caller(m->engine_group, cid);
    }
}

bool coll_crux_engine_lanes(mca_coll_crux_module_t *m)
{
    crux_dev_group_t *g = coll_crux_engine_group(m);
    return g != NULL && crux_dev_group_lanes(g);
}

/* The libcrux_coll groups behind a communicator, the shared-memory group
 * and the multipath engine's: each had the first time a collective needs
 * it (all ranks reach that point in the same call), shared with the other
 * communicators over the same processes (coll_crux_share.c) or built with
 * the previously selected allgather as the out-of-band exchange, so
 * building it never recurses into crux.  A group released to make room is
 * acquired again at the communicator's next call that needs it.  If one
 * cannot be had the communicator does without it for good, and verbosity 1
 * says why once. */
#include <pthread.h>

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "opal/runtime/opal_progress.h"
#include "orte/util/proc_info.h"

#include "ompi_coll/coll_crux.h"

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
    config.small_max_bytes = c->small_max_bytes;
    config.small_whole_max_bytes = c->small_whole_max_bytes;
    config.far_latency = c->far_latency_ns * 1e-9;
    config.local_procs = (int)orte_process_info.num_local_peers + 1;
    /* Open MPI yields when idle where it was told to or found the node
     * oversubscribed; its local peer count does not see processes of other
     * jobs or fake nodes on the same cores */
    config.shared_cores = opal_progress_yield_when_idle;
    static int said;
    if (config.shared_cores && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
        COLL_CRUX_VERBOSE(2,
                          "waits never spin: Open MPI yields when idle (mpi_yield_when_idle, or an "
                          "oversubscribed node)");
    }
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

crux_status_t coll_crux_shm_group_build(void *arg, const crux_coll_oob_t *oob, void **group)
{
    crux_coll_config_t config = coll_crux_config();
    return coll_crux_group_create(oob, &config, (crux_coll_group_t **)group);
}

crux_status_t coll_crux_layout_group_build(void *arg, const crux_coll_oob_t *oob, void **group)
{
    crux_coll_config_t config = coll_crux_config();
    config.small_max_bytes = mca_coll_crux_component.hier_small_max_bytes;
    if (arg != NULL) { /* beside the lanes: the small Allreduce's slots alone */
        config.stage_size = 0;
    }
    return coll_crux_group_create(oob, &config, (crux_coll_group_t **)group);
}

void coll_crux_shm_group_destroy(void *group)
{
    crux_coll_group_destroy(group);
}

void *coll_crux_module_group(mca_coll_crux_module_t *m, const coll_crux_share_request_t *how,
                             mca_coll_crux_group_state_t *state, crux_share_t **share,
                             crux_status_t *status)
{
    *status = CRUX_OK;
    void *group = NULL;
    if (*state == COLL_CRUX_GROUP_READY && (group = crux_share_use(*share)) == NULL) {
        crux_share_release(*share, 0);
        *share = NULL;
        *state = COLL_CRUX_GROUP_UNTRIED;
    }
    if (*state != COLL_CRUX_GROUP_UNTRIED) {
        return group;
    }
    crux_coll_oob_t oob = module_oob(m);
    coll_crux_share_request_t request = *how;
    request.comm = m->comm;
    request.oob = &oob;
    request.arg = m;
    *status = coll_crux_share_acquire(&request, share);
    *state = *status == CRUX_OK ? COLL_CRUX_GROUP_READY : COLL_CRUX_GROUP_FAILED;
    return *status == CRUX_OK ? crux_share_use(*share) : NULL;
}

crux_coll_group_t *coll_crux_get_group(mca_coll_crux_module_t *m)
{
    crux_status_t status;
    const coll_crux_share_request_t how = {
        .kind = COLL_CRUX_SHM,
        .build = coll_crux_shm_group_build,
        .destroy = coll_crux_shm_group_destroy,
    };
    m->group = coll_crux_module_group(m, &how, &m->group_state, &m->group_share, &status);
    if (status != CRUX_OK) {
        COLL_CRUX_VERBOSE(1,
                          "no shared memory for communicator %s (%s; /dev/shm full, no "
                          "shared-memory transport, or crux's limit of groups per process?): "
                          "falling back to the previous module",
                          m->comm->c_name, crux_status_string(status));
    }
    return m->group;
}

crux_status_t coll_crux_engine_group_create(const crux_coll_oob_t *oob, crux_engine_group_t **group)
{
    crux_engine_group_config_t config = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    crux_coll_config_t host = coll_crux_config();
    config.tl = host.tl;
    config.stream_min_bytes = host.stream_min_bytes;
    config.engine.far_latency = host.far_latency;
    config.local_procs = host.local_procs;
    config.shared_cores = host.shared_cores;
    crux_status_t st = crux_engine_group_create(oob, &config, group);
    if (st == CRUX_OK) {
        coll_crux_device_topo(*group);
    }
    return st;
}

crux_status_t coll_crux_engine_group_build(void *arg, const crux_coll_oob_t *oob, void **group)
{
    return coll_crux_engine_group_create(oob, (crux_engine_group_t **)group);
}

void coll_crux_engine_group_destroy(void *group)
{
    crux_engine_group_destroy(group);
}

crux_engine_group_t *coll_crux_engine_group(mca_coll_crux_module_t *m)
{
    crux_status_t status;
    const coll_crux_share_request_t how = {
        .kind = COLL_CRUX_ENGINE,
        .build = coll_crux_engine_group_build,
        .destroy = coll_crux_engine_group_destroy,
    };
    m->engine_group = coll_crux_module_group(m, &how, &m->engine_state, &m->engine_share, &status);
    if (status != CRUX_OK) {
        COLL_CRUX_VERBOSE(1,
                          "communicator %s: no multipath engine (%s): host buffers take "
                          "the staged algorithm, device buffers are staged through host "
                          "memory",
                          m->comm->c_name, crux_status_string(status));
    }
    return m->engine_group;
}

/* Only through the references: a group the call does not use may have
 * been released to make room since the module last looked. */
void coll_crux_set_caller(mca_coll_crux_module_t *m)
{
    uint64_t cid = ompi_comm_get_cid(m->comm);
    crux_coll_group_t *group = m->group_share != NULL ? crux_share_use(m->group_share) : NULL;
    crux_engine_group_t *dev = m->engine_share != NULL ? crux_share_use(m->engine_share) : NULL;
    const mca_coll_crux_layout_t *l =
        m->layout_share != NULL ? crux_share_use(m->layout_share) : NULL;
    if (group != NULL) {
        crux_coll_group_set_caller(group, cid);
    }
    if (dev != NULL) {
        crux_engine_group_set_caller(dev, cid);
    }
    /* a layout's groups may serve other communicators too */
    if (l != NULL && l->super.group != NULL) {
        crux_coll_group_set_caller(l->super.group, cid);
    }
    if (l != NULL && l->super.lanes != NULL) {
        crux_engine_group_set_caller(l->super.lanes, cid);
    }
    if (l != NULL && l->super.small != NULL) {
        crux_coll_group_set_caller(l->super.small, cid);
    }
}

void coll_crux_module_release(mca_coll_crux_module_t *m)
{
    crux_share_release(m->group_share, 0);
    crux_share_release(m->layout_share, 0);
    crux_share_release(m->engine_share, 0);
    m->group_share = m->layout_share = m->engine_share = NULL;
    m->group = NULL;
    m->layout = NULL;
    m->engine_group = NULL;
}

bool coll_crux_engine_lanes(mca_coll_crux_module_t *m)
{
    crux_engine_group_t *g = coll_crux_engine_group(m);
    return g != NULL && crux_engine_group_lanes(g);
}

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

/* UCX's component discovery is process-wide; keep group set-ups (of
 * either kind) of communicators used from different threads apart.  Never across an
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
    crux_net_level_t level = coll_crux_job_net_level();
    config.tl.service_level = level.sl;
    config.tl.traffic_class = level.tc;
    return config;
}

crux_select_sizes_t coll_crux_select_sizes(void)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    return (crux_select_sizes_t){
        .min_bytes = c->allreduce_min_bytes,
        .small_max_bytes = c->small_max_bytes,
        .hier_small_max_bytes = c->hier_small_max_bytes,
        .hier_min_bytes = c->hier_min_bytes,
    };
}

/* 'create' under the set-up lock, its exchanges outside it. */
static crux_status_t locked(crux_status_t (*create)(const crux_coll_oob_t *oob, void *arg),
                            const crux_coll_oob_t *oob, void *arg)
{
    crux_coll_oob_t unlocked = *oob;
    unlocked.allgather = unlocked_allgather;
    unlocked.arg = (void *)oob;
    pthread_mutex_lock(&setup_lock);
    crux_status_t status = create(&unlocked, arg);
    pthread_mutex_unlock(&setup_lock);
    return status;
}

typedef struct {
    const crux_coll_config_t *config;
    crux_coll_group_t **group;
} shm_args_t;

static crux_status_t create_shm(const crux_coll_oob_t *oob, void *argp)
{
    shm_args_t *a = argp;
    return crux_coll_group_create(oob, a->config, a->group);
}

crux_status_t coll_crux_group_create(const crux_coll_oob_t *oob, const crux_coll_config_t *config,
                                     crux_coll_group_t **group_p)
{
    shm_args_t a = { config, group_p };
    return locked(create_shm, oob, &a);
}

crux_coll_oob_t coll_crux_module_oob(mca_coll_crux_module_t *m)
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
    crux_coll_config_t base = coll_crux_config();
    crux_select_sizes_t sizes = coll_crux_select_sizes();
    crux_coll_config_t config = crux_layout_group_config(&base, &sizes, arg != NULL);
    return coll_crux_group_create(oob, &config, (crux_coll_group_t **)group);
}

void coll_crux_shm_group_destroy(void *group)
{
    crux_coll_group_destroy(group);
}

typedef struct {
    mca_coll_crux_module_t *m;
    const coll_crux_share_request_t *how;
} acquire_arg_t;

static crux_status_t acquire(void *argp, crux_share_t **share)
{
    acquire_arg_t *a = argp;
    crux_coll_oob_t oob = coll_crux_module_oob(a->m);
    coll_crux_share_request_t request = *a->how;
    request.comm = a->m->comm;
    request.oob = &oob;
    request.arg = a->m;
    return coll_crux_share_acquire(&request, share);
}

void *coll_crux_module_group(mca_coll_crux_module_t *m, const coll_crux_share_request_t *how,
                             crux_share_slot_t *slot, crux_status_t *status)
{
    acquire_arg_t a = { m, how };
    return crux_share_slot_get(slot, acquire, &a, status);
}

crux_coll_group_t *coll_crux_get_group(mca_coll_crux_module_t *m)
{
    crux_status_t status;
    const coll_crux_share_request_t how = {
        .kind = COLL_CRUX_SHM,
        .variant = CRUX_SHARE_FLAT,
        .build = coll_crux_shm_group_build,
        .destroy = coll_crux_shm_group_destroy,
    };
    crux_coll_group_t *g = coll_crux_module_group(m, &how, &m->group_slot, &status);
    if (status != CRUX_OK) {
        COLL_CRUX_VERBOSE(1,
                          "no shared memory for communicator %s (%s; /dev/shm full, no "
                          "shared-memory transport, or crux's limit of groups per process?): "
                          "falling back to the previous module",
                          m->comm->c_name, crux_status_string(status));
    }
    return g;
}

typedef struct {
    const crux_engine_group_config_t *config;
    crux_engine_group_t **group;
} engine_args_t;

static crux_status_t create_engine(const crux_coll_oob_t *oob, void *argp)
{
    engine_args_t *a = argp;
    return crux_engine_group_create(oob, a->config, a->group);
}

crux_status_t coll_crux_engine_group_create(const crux_coll_oob_t *oob, crux_engine_group_t **group)
{
    crux_coll_config_t host = coll_crux_config();
    crux_engine_group_config_t config = crux_engine_group_config(&host);
    engine_args_t a = { &config, group };
    crux_status_t st = locked(create_engine, oob, &a);
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
    crux_engine_group_t *g = coll_crux_module_group(m, &how, &m->engine_slot, &status);
    if (status != CRUX_OK) {
        COLL_CRUX_VERBOSE(1,
                          "communicator %s: no multipath engine (%s): host buffers take "
                          "the staged algorithm, device buffers are staged through host "
                          "memory",
                          m->comm->c_name, crux_status_string(status));
    }
    return g;
}

void coll_crux_module_release(mca_coll_crux_module_t *m)
{
    crux_share_slot_release(&m->group_slot);
    crux_share_slot_release(&m->layout_slot);
    crux_share_slot_release(&m->engine_slot);
}

bool coll_crux_engine_lanes(mca_coll_crux_module_t *m)
{
    crux_engine_group_t *g = coll_crux_engine_group(m);
    return g != NULL && crux_engine_group_lanes(g);
}

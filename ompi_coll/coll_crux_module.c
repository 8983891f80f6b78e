/* Per-communicator module: which collectives crux takes, and the previously
 * selected functions it falls back to (retained while saved, as coll/han
 * and coll/ucc do). */
#include "ompi_config.h"

#include "ompi/group/group.h"

#include "ompi_coll/coll_crux.h"
#include "coll/crux_dev.h"

static void crux_module_construct(mca_coll_crux_module_t *m)
{
    m->previous_allreduce = NULL;
    m->previous_allreduce_module = NULL;
    m->previous_allgather = NULL;
    m->previous_allgather_module = NULL;
    m->comm = NULL;
    m->request = (crux_request_t)CRUX_REQUEST_AUTO;
    m->all_local = false;
    m->building = false;
    m->group_state = CRUX_GROUP_UNTRIED;
    m->group = NULL;
    m->group_share = NULL;
    m->layout_state = CRUX_GROUP_UNTRIED;
    m->layout = NULL;
    m->layout_share = NULL;
    m->engine_state = CRUX_GROUP_UNTRIED;
    m->engine_group = NULL;
    m->engine_share = NULL;
    m->dev_pinned = NULL;
    m->logged = 0;
    m->small_max = 0;
    m->hier_from = 0;
    m->small_alg = CRUX_ALG_COUNT;
    m->small_dtype = NULL;
    m->small_op = NULL;
    m->small_cdtype = CRUX_DT_COUNT;
    m->small_cop = CRUX_OP_COUNT;
}

static void crux_module_destruct(mca_coll_crux_module_t *m)
{
    coll_crux_module_release(m);
    crux_dev_pinned_destroy(m->dev_pinned);
    if (m->previous_allreduce_module != NULL) {
        OBJ_RELEASE(m->previous_allreduce_module);
    }
    if (m->previous_allgather_module != NULL) {
        OBJ_RELEASE(m->previous_allgather_module);
    }
}

OBJ_CLASS_INSTANCE(mca_coll_crux_module_t, mca_coll_base_module_t, crux_module_construct,
                   crux_module_destruct);

int mca_coll_crux_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    if (!mca_coll_crux_component.selected) {
        return OMPI_ERR_NOT_AVAILABLE; /* not opted in (coll_crux_optin.c) */
    }
    return coll_crux_fill_init_query(enable_progress_threads, enable_mpi_threads);
}

/* Whether crux's own algorithms may apply: an intracommunicator of two or
 * more processes (flat on one node, hierarchical across nodes). */
static bool crux_handles(ompi_communicator_t *comm)
{
    return !OMPI_COMM_IS_INTER(comm) && ompi_comm_size(comm) > 1;
}

/* Below this many bytes every host Allreduce goes to the previous module:
 * auto's size threshold, every size for fallback, none when a topology or
 * hand-off is forced.  Decided here once, so handing a call on costs one
 * comparison. */
static size_t fallback_below(const mca_coll_crux_module_t *m)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    if (m->request.fallback) {
        return SIZE_MAX;
    }
    if (crux_request_forced(&m->request)) {
        return 0;
    }
    return c->allreduce_min_bytes;
}

/* The sizes the small Allreduce may take (none where a topology or a
 * hand-off is forced: that pipeline runs at every size): on one node up to
 * coll_crux_small_max_bytes, across nodes up to
 * coll_crux_hier_small_max_bytes (then the previous module up to the
 * hierarchical pipeline's coll_crux_hier_min_bytes). */
static void small_range(mca_coll_crux_module_t *m)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    bool none = m->request.fallback || crux_request_forced(&m->request);
    m->small_max = none ? 0 : m->all_local ? c->small_max_bytes : c->hier_small_max_bytes;
    m->hier_from = m->all_local || crux_request_forced(&m->request) ? 0 : c->hier_min_bytes;
}

static int crux_module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    mca_coll_crux_module_t *m = (mca_coll_crux_module_t *)module;

    /* Alone, crux must leave no collective slot empty. */
    coll_crux_fill_comm(comm);
    if (mca_coll_crux_component.algorithms_off) {
        return OMPI_SUCCESS; /* a refused parameter: filling is all crux does */
    }
    coll_crux_job_init(); /* the job's level, before any transport opens */
    m->comm = comm;
    m->request = coll_crux_comm_request(comm);
    m->all_local = !OMPI_COMM_IS_INTER(comm) && !ompi_group_have_remote_peers(comm->c_local_group);
    m->fallback_below = fallback_below(m);
    small_range(m);
    coll_crux_device_probe();
    if (!crux_handles(comm)) {
        return OMPI_SUCCESS;
    }
    if (comm->c_coll->coll_allreduce == NULL || comm->c_coll->coll_allgather == NULL) {
        CRUX_VERBOSE(1,
                     "communicator %s has no allreduce/allgather to fall back to; "
                     "crux stays out of it",
                     comm->c_name);
        m->super.coll_allreduce = NULL;
        return OMPI_SUCCESS;
    }
    m->previous_allreduce = comm->c_coll->coll_allreduce;
    m->previous_allreduce_module = comm->c_coll->coll_allreduce_module;
    OBJ_RETAIN(m->previous_allreduce_module);
    m->previous_allgather = comm->c_coll->coll_allgather;
    m->previous_allgather_module = comm->c_coll->coll_allgather_module;
    OBJ_RETAIN(m->previous_allgather_module);
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_crux_comm_query(ompi_communicator_t *comm, int *priority)
{
    if (mca_coll_crux_component.priority < 0) {
        return NULL;
    }
    mca_coll_crux_module_t *m = OBJ_NEW(mca_coll_crux_module_t);
    if (m == NULL) {
        return NULL;
    }
    *priority = mca_coll_crux_component.priority;
    m->super.coll_module_enable = crux_module_enable;
    if (crux_handles(comm) && !mca_coll_crux_component.algorithms_off) {
        m->super.coll_allreduce = mca_coll_crux_allreduce;
    }
    return &m->super;
}

/* Per-communicator module: which collectives crux takes, and the previously
 * selected functions it falls back to (retained while saved, as coll/han
 * and coll/ucc do). */
#include "ompi_config.h"

#include "ompi/group/group.h"

#include "ompi_coll/coll_crux.h"

static void coll_crux_module_construct(mca_coll_crux_module_t *m)
{
    m->previous_allreduce = NULL;
    m->previous_allreduce_module = NULL;
    m->previous_allgather = NULL;
    m->previous_allgather_module = NULL;
    m->comm = NULL;
    m->request = (crux_request_t)CRUX_REQUEST_AUTO;
    m->all_local = false;
    m->building = false;
    m->group_slot = m->layout_slot = m->engine_slot = (crux_share_slot_t)CRUX_SHARE_SLOT_INIT;
    m->dev_pinned = NULL;
    m->logged = 0;
    m->sizes = (crux_select_sizes_t)CRUX_SELECT_SIZES_DEFAULT;
    m->bounds = (crux_select_bounds_t){ 0, 0, 0 };
    m->oob = (crux_coll_oob_t){ NULL, NULL, 0, 0 };
    m->memo = (crux_select_memo_t)CRUX_SELECT_MEMO_INIT;
    m->host_pair = (crux_dev_host_pair_t){ NULL, NULL };
}

static void coll_crux_module_destruct(mca_coll_crux_module_t *m)
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

OBJ_CLASS_INSTANCE(mca_coll_crux_module_t, mca_coll_base_module_t, coll_crux_module_construct,
                   coll_crux_module_destruct);

int mca_coll_crux_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    if (!mca_coll_crux_component.selected) {
        return OMPI_ERR_NOT_AVAILABLE; /* not opted in (coll_crux_optin.c) */
    }
    return coll_crux_fill_init_query(enable_progress_threads, enable_mpi_threads);
}

/* Whether crux's own algorithms may apply: an intracommunicator of two or
 * more processes (flat on one node, hierarchical across nodes). */
static bool coll_crux_handles(ompi_communicator_t *comm)
{
    return !OMPI_COMM_IS_INTER(comm) && ompi_comm_size(comm) > 1;
}

static int coll_crux_module_enable(mca_coll_base_module_t *module, ompi_communicator_t *comm)
{
    mca_coll_crux_module_t *m = (mca_coll_crux_module_t *)module;

    /* Alone, crux must leave no collective slot empty. */
    coll_crux_fill_comm(comm);
    if (mca_coll_crux_component.algorithms_off) {
        return OMPI_SUCCESS; /* a refused parameter: filling is all crux does */
    }
    coll_crux_job_init(); /* the job's level, before any transport opens */
    m->comm = comm;
    m->oob = coll_crux_module_oob(m);
    m->request = coll_crux_comm_request(comm);
    m->all_local = !OMPI_COMM_IS_INTER(comm) && !ompi_group_have_remote_peers(comm->c_local_group);
    /* kept, so that handing a call on by its size costs a comparison */
    m->sizes = coll_crux_select_sizes();
    m->bounds = crux_select_bounds(&m->request, m->all_local, &m->sizes);
    if (!coll_crux_handles(comm)) {
        return OMPI_SUCCESS;
    }
    if (comm->c_coll->coll_allreduce == NULL || comm->c_coll->coll_allgather == NULL) {
        COLL_CRUX_VERBOSE(1,
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
    m->super.coll_module_enable = coll_crux_module_enable;
    if (coll_crux_handles(comm) && !mca_coll_crux_component.algorithms_off) {
        m->super.coll_allreduce = mca_coll_crux_allreduce;
    }
    return &m->super;
}

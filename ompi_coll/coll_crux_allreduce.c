/* MPI_Allreduce: translate the arguments, choose crux's flat algorithm (one
 * node) or its hierarchical one (groups across nodes or packages), or hand
 * the call to the previous module when crux cannot do it (user-defined ops,
 * derived datatypes, MINLOC/MAXLOC, small messages, uneven groups, a
 * communicator without shared memory). */
#include "ompi_config.h"

#include "opal/util/show_help.h"

#include "ompi_coll/coll_crux.h"

static int fallback(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                    struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_crux_module_t *m)
{
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
}

static const char *alg_name(int alg)
{
    static const char *const names[CRUX_ALG_COUNT] = {
        [CRUX_ALG_AUTO] = "auto",
        [CRUX_ALG_STAGED] = "staged",
        [CRUX_ALG_CMA] = "cma",
        [CRUX_ALG_FALLBACK] = "fallback",
        [CRUX_ALG_FLAT] = "flat",
        [CRUX_ALG_HIER] = "hier",
        [CRUX_ALG_HIER_SEQUENTIAL] = "hier-sequential",
        [CRUX_ALG_DEVICE] = "device",
        [CRUX_ALG_DEVICE_STAGED] = "device staged through host",
        [CRUX_ALG_ENGINE] = "engine",
    };
    return alg >= 0 && alg < CRUX_ALG_COUNT ? names[alg] : "?";
}

/* Size classes are powers of two. */
void coll_crux_log_choice(mca_coll_crux_module_t *m, int alg, size_t bytes, const char *why)
{
    unsigned size_class = bytes ? 63u - (unsigned)__builtin_clzll(bytes) : 0;
    if (!(m->logged[alg] & (1ull << size_class))) {
        m->logged[alg] |= 1ull << size_class;
        CRUX_VERBOSE(2, "allreduce on %s: %s from %zu bytes%s%s", m->comm->c_name, alg_name(alg),
                     bytes, why[0] ? ": " : "", why);
    }
}

/* The algorithm for this call: one of ENGINE, STAGED, CMA, HIER,
 * HIER_SEQUENTIAL or FALLBACK.  Every rank decides alike (same arguments, same layout). */
static int choose(mca_coll_crux_module_t *m, size_t bytes, const crux_layout_t **layout,
                  crux_coll_group_t **group, const char **why)
{
    int alg = m->allreduce_algorithm;
    *why = "";
    if (alg == CRUX_ALG_AUTO) {
        /* one node: flat, over the engine's lanes (staged in shared memory
         * when they cannot be had, or cma is asked for); across nodes:
         * three stages (smaller messages, and all with algorithm fallback,
         * were handed on before: module->handoff_below) */
        alg = !m->all_local ? CRUX_ALG_HIER
              : mca_coll_crux_component.cma_min_bytes == 0 && coll_crux_engine_lanes(m)
                  ? CRUX_ALG_ENGINE
                  : CRUX_ALG_FLAT;
    }
    if (alg == CRUX_ALG_HIER || alg == CRUX_ALG_HIER_SEQUENTIAL) {
        *layout = coll_crux_get_layout(m);
        if (*layout == NULL) {
            *why = "no usable groups";
            return CRUX_ALG_FALLBACK;
        }
        return alg;
    }
    if (!m->all_local) {
        *why = "the flat algorithm needs every rank on one node";
        return CRUX_ALG_FALLBACK;
    }
    if (alg == CRUX_ALG_ENGINE) {
        if (coll_crux_engine_group(m) == NULL) {
            *why = "no multipath engine";
            return CRUX_ALG_FALLBACK;
        }
        return alg;
    }
    *group = coll_crux_get_group(m);
    if (*group == NULL) {
        *why = "no shared memory";
        return CRUX_ALG_FALLBACK;
    }
    if (alg == CRUX_ALG_FLAT) {
        return crux_coll_allreduce_choice(*group, bytes) == CRUX_ALLREDUCE_CMA ? CRUX_ALG_CMA
                                                                               : CRUX_ALG_STAGED;
    }
    if (alg == CRUX_ALG_CMA && !crux_coll_group_has_cma(*group)) {
        *why = "cma does not work here";
        return CRUX_ALG_FALLBACK;
    }
    return alg;
}

/* The flat algorithm over the staging group, between the job's enter and
 * exit (the engine enters it itself). */
static crux_status_t run_staged(crux_coll_group_t *group, int alg, const void *sbuf, void *rbuf,
                                int count, crux_dtype_t cdtype, crux_op_t cop)
{
    coll_crux_ticket_t ticket;
    coll_crux_job_enter(&ticket);
    crux_status_t status =
        crux_coll_allreduce(group, sbuf == MPI_IN_PLACE ? NULL : sbuf, rbuf, (size_t)count, cdtype,
                            cop, alg == CRUX_ALG_CMA ? CRUX_ALLREDUCE_CMA : CRUX_ALLREDUCE_STAGED);
    coll_crux_job_exit(&ticket);
    return status;
}

static int run(mca_coll_crux_module_t *m, int alg, const crux_layout_t *layout,
               crux_coll_group_t *group, const void *sbuf, void *rbuf, int count,
               ompi_datatype_t *dtype, struct ompi_op_t *op, crux_dtype_t cdtype, crux_op_t cop)
{
    if (alg == CRUX_ALG_HIER || alg == CRUX_ALG_HIER_SEQUENTIAL) {
        coll_crux_ticket_t ticket;
        coll_crux_job_enter(&ticket);
        int rc = coll_crux_allreduce_hier(
            m, layout, sbuf, rbuf, count, dtype, op, cdtype, cop,
            alg == CRUX_ALG_HIER ? (unsigned)mca_coll_crux_component.hier_depth : 0);
        coll_crux_job_exit(&ticket);
        return rc;
    }
    crux_status_t status = alg == CRUX_ALG_ENGINE
                               ? coll_crux_allreduce_engine(m, sbuf, rbuf, count, cdtype, cop)
                               : run_staged(group, alg, sbuf, rbuf, count, cdtype, cop);
    switch (status) {
    case CRUX_OK: return OMPI_SUCCESS;
    case CRUX_ERR_UNSUPPORTED: /* decided alike on every rank, nothing moved */
        return fallback(sbuf, rbuf, count, dtype, op, m->comm, m);
    default: return coll_crux_allreduce_failed(m, status);
    }
}

int coll_crux_allreduce_failed(mca_coll_crux_module_t *m, crux_status_t status)
{
    opal_show_help("help-mpi-coll-crux.txt", "allreduce-failed", true, ompi_comm_rank(m->comm),
                   m->comm->c_name, crux_status_string(status));
    return status == CRUX_ERR_PEER ? OMPI_ERR_UNREACH : OMPI_ERROR;
}

int coll_crux_allreduce_host(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                             struct ompi_op_t *op, ompi_communicator_t *comm,
                             mca_coll_crux_module_t *m)
{
    crux_dtype_t cdtype;
    crux_op_t cop;

    if (count == 0) {
        return OMPI_SUCCESS;
    }
    /* Small messages first: the fallback must cost next to nothing. */
    size_t bytes = (size_t)count * dtype->super.size;
    if (bytes < m->handoff_below || m->building || coll_crux_dtype(dtype, &cdtype) != 0 ||
        coll_crux_op(op, &cop) != 0 || crux_reduce_lookup(cdtype, cop) == NULL) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    const crux_layout_t *layout = NULL;
    crux_coll_group_t *group = NULL;
    const char *why;
    int alg = choose(m, bytes, &layout, &group, &why);
    coll_crux_log_choice(m, alg, bytes, why);
    if (alg == CRUX_ALG_FALLBACK) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    return run(m, alg, layout, group, sbuf, rbuf, count, dtype, op, cdtype, cop);
}

/* Device memory must never reach a module that is not CUDA-aware. */
static int allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                     struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_crux_module_t *m)
{
    if (count != 0 && coll_crux_is_device(sbuf, rbuf)) {
        return coll_crux_allreduce_device(sbuf, rbuf, count, dtype, op, comm, m);
    }
    return coll_crux_allreduce_host(sbuf, rbuf, count, dtype, op, comm, m);
}

int mca_coll_crux_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_crux_module_t *m = (mca_coll_crux_module_t *)module;
    /* Small host messages go on first, past every other check: crux hands
     * them on, and at a fraction of a microsecond a call, each check showed
     * (10% slower than Open MPI without crux at 4-64 bytes, before). */
    if ((size_t)count * dtype->super.size < m->handoff_below &&
        __atomic_load_n(&coll_crux_no_devices, __ATOMIC_RELAXED) &&
        !coll_crux_profile_configured()) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    if (!coll_crux_profiling()) {
        return allreduce(sbuf, rbuf, count, dtype, op, comm, m);
    }
    double start = coll_crux_now();
    int rc = allreduce(sbuf, rbuf, count, dtype, op, comm, m);
    coll_crux_profile_record((size_t)count * dtype->super.size, start, coll_crux_now());
    return rc;
}

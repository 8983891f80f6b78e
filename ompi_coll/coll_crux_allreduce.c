/* MPI_Allreduce: translate the arguments, run crux's flat Allreduce on the
 * communicator's group, or hand the call to the previous module when crux
 * cannot do it (user-defined ops, derived datatypes, MINLOC/MAXLOC, small
 * messages, a communicator without shared memory). */
#include "ompi_config.h"

#include "opal/util/show_help.h"

#include "ompi_coll/coll_crux.h"

static int fallback(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                    struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_crux_module_t *m)
{
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                 m->previous_allreduce_module);
}

static crux_allreduce_alg_t forced_algorithm(const mca_coll_crux_module_t *m)
{
    switch (m->allreduce_algorithm) {
    case CRUX_ALG_STAGED: return CRUX_ALLREDUCE_STAGED;
    case CRUX_ALG_CMA:    return CRUX_ALLREDUCE_CMA;
    default:              return CRUX_ALLREDUCE_AUTO;
    }
}

static void log_choice(mca_coll_crux_module_t *m, crux_allreduce_alg_t alg, size_t bytes)
{
    if (!(m->logged_choices & (1u << alg))) {
        m->logged_choices |= 1u << alg;
        CRUX_VERBOSE(2, "allreduce on %s: %s from %zu bytes", m->comm->c_name,
                     crux_allreduce_alg_name(alg), bytes);
    }
}

int mca_coll_crux_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_crux_module_t *m = (mca_coll_crux_module_t *)module;
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    crux_dtype_t cdtype;
    crux_op_t cop;

    if (count == 0) {
        return OMPI_SUCCESS;
    }
    /* Small messages first: the fallback must cost next to nothing. */
    crux_allreduce_alg_t alg = forced_algorithm(m);
    size_t bytes = (size_t)count * dtype->super.size;
    if ((alg == CRUX_ALLREDUCE_AUTO && bytes < c->allreduce_min_bytes) ||
        m->allreduce_algorithm == CRUX_ALG_FALLBACK || coll_crux_dtype(dtype, &cdtype) != 0 ||
        coll_crux_op(op, &cop) != 0 || crux_reduce_lookup(cdtype, cop) == NULL) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    crux_coll_group_t *group = coll_crux_get_group(m);
    if (group == NULL || (alg == CRUX_ALLREDUCE_CMA && !crux_coll_group_has_cma(group))) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    log_choice(m, alg == CRUX_ALLREDUCE_AUTO ? crux_coll_allreduce_choice(group, bytes) : alg,
               bytes);

    crux_status_t status = crux_coll_allreduce(group, sbuf == MPI_IN_PLACE ? NULL : sbuf, rbuf,
                                               (size_t)count, cdtype, cop, alg);
    switch (status) {
    case CRUX_OK:
        return OMPI_SUCCESS;
    case CRUX_ERR_UNSUPPORTED:   /* decided alike on every rank, nothing moved */
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    default:
        opal_show_help("help-mpi-coll-crux.txt", "allreduce-failed", true,
                       ompi_comm_rank(comm), comm->c_name, crux_status_string(status));
        return status == CRUX_ERR_PEER ? OMPI_ERR_UNREACH : OMPI_ERROR;
    }
}

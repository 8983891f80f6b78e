/* MPI_Allreduce on CUDA device buffers.  Debian's Open MPI is not CUDA-aware,
 * so no device pointer may reach another module: on one node, with a
 * (dtype, op) the GPU kernels cover, libcrux_dev moves and reduces the data
 * over the multipath engine; anything else (user-defined ops, derived
 * datatypes, pairs without a kernel, several nodes) is staged through pinned
 * host memory and reduced there, by crux's host algorithms where they apply,
 * else by the previous module.  Every rank must pass the same kind of memory
 * (as Horovod does), since the two paths are different collectives. */
#include <string.h>

#include "ompi_config.h"

#include "ompi_coll/coll_crux.h"
#include "coll/crux_dev.h"

bool coll_crux_no_devices;

void coll_crux_device_probe(void)
{
    __atomic_store_n(&coll_crux_no_devices, crux_dev_count() == 0, __ATOMIC_RELAXED);
}

bool coll_crux_is_device(const void *sbuf, const void *rbuf)
{
    if (__atomic_load_n(&coll_crux_no_devices, __ATOMIC_RELAXED)) {
        return false;
    }
    return crux_dev_is_device(rbuf) || (sbuf != MPI_IN_PLACE && crux_dev_is_device(sbuf));
}

static int comm_allgather(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    mca_coll_crux_module_t *m = arg;
    return m->previous_allgather(sbuf, (int)length, MPI_BYTE, rbuf, (int)length, MPI_BYTE, m->comm,
                                 m->previous_allgather_module) == OMPI_SUCCESS
               ? 0
               : -1;
}

/* The engine group, created on first use; NULL when it cannot be had (then
 * host buffers take the staged algorithm, device buffers are staged through
 * the host). */
crux_status_t coll_crux_dev_group_create(const crux_coll_oob_t *oob, crux_dev_group_t **group)
{
    crux_dev_config_t config = CRUX_DEV_CONFIG_DEFAULT;
    crux_coll_config_t host = coll_crux_config();
    config.tl = host.tl;
    config.stream_min_bytes = host.stream_min_bytes;
    config.engine.far_latency = host.far_latency;
    config.local_procs = host.local_procs;
    return crux_dev_group_create(oob, &config, group);
}

crux_dev_group_t *coll_crux_engine_group(mca_coll_crux_module_t *m)
{
    if (m->dev_state == CRUX_GROUP_UNTRIED) {
        crux_coll_oob_t oob = {
            .allgather = comm_allgather,
            .arg = m,
            .rank = ompi_comm_rank(m->comm),
            .size = ompi_comm_size(m->comm),
        };
        crux_status_t status = coll_crux_dev_group_create(&oob, &m->dev_group);
        m->dev_state = status == CRUX_OK ? CRUX_GROUP_READY : CRUX_GROUP_FAILED;
        if (status != CRUX_OK) {
            m->dev_group = NULL;
            CRUX_VERBOSE(1,
                         "communicator %s: no multipath engine (%s): host buffers take "
                         "the staged algorithm, device buffers are staged through host "
                         "memory",
                         m->comm->c_name, crux_status_string(status));
        }
    }
    return m->dev_group;
}

bool coll_crux_engine_lanes(mca_coll_crux_module_t *m)
{
    crux_dev_group_t *g = coll_crux_engine_group(m);
    return g != NULL && crux_dev_group_lanes(g);
}

/* The bytes a buffer of 'count' elements spans, from its true lower bound. */
static void span(ompi_datatype_t *dtype, int count, ptrdiff_t *lb, size_t *bytes)
{
    ptrdiff_t true_lb, true_extent, lb_, extent;
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    ompi_datatype_get_extent(dtype, &lb_, &extent);
    *lb = true_lb;
    *bytes = (size_t)(true_extent + (ptrdiff_t)(count - 1) * extent);
}

/* Copy the buffers to host memory, reduce there, copy the result back. */
static int staged_through_host(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                               struct ompi_op_t *op, ompi_communicator_t *comm,
                               mca_coll_crux_module_t *m)
{
    if (m->dev_stage == NULL && crux_dev_stage_create(&m->dev_stage) != CRUX_OK) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    ptrdiff_t lb;
    size_t bytes;
    span(dtype, count, &lb, &bytes);
    char *in = crux_dev_stage_buffer(m->dev_stage, 0, bytes);
    char *out = crux_dev_stage_buffer(m->dev_stage, 1, bytes);
    if (in == NULL || out == NULL ||
        crux_dev_copy(in, (const char *)(sbuf == MPI_IN_PLACE ? rbuf : sbuf) + lb, bytes) !=
            CRUX_OK) {
        return OMPI_ERROR;
    }
    int rc = coll_crux_allreduce_host(in - lb, out - lb, count, dtype, op, comm, m);
    if (rc == OMPI_SUCCESS && crux_dev_copy((char *)rbuf + lb, out, bytes) != CRUX_OK) {
        rc = OMPI_ERROR;
    }
    return rc;
}

crux_status_t coll_crux_allreduce_engine(mca_coll_crux_module_t *m, const void *sbuf, void *rbuf,
                                         int count, crux_dtype_t cdtype, crux_op_t cop)
{
    coll_crux_ticket_t ticket;
    coll_crux_job_enter(&ticket);
    crux_status_t status = crux_dev_allreduce(m->dev_group, sbuf == MPI_IN_PLACE ? NULL : sbuf,
                                              rbuf, (size_t)count, cdtype, cop);
    coll_crux_job_exit(&ticket);
    return status;
}

int coll_crux_allreduce_device(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                               struct ompi_op_t *op, ompi_communicator_t *comm,
                               mca_coll_crux_module_t *m)
{
    crux_dtype_t cdtype;
    crux_op_t cop;
    size_t bytes = (size_t)count * dtype->super.size;
    if (m->all_local && coll_crux_dtype(dtype, &cdtype) == 0 && coll_crux_op(op, &cop) == 0 &&
        crux_dev_reduce_supported(cdtype, cop) && coll_crux_engine_group(m) != NULL) {
        coll_crux_log_choice(m, CRUX_ALG_DEVICE, bytes, "");
        crux_status_t status = coll_crux_allreduce_engine(m, sbuf, rbuf, count, cdtype, cop);
        if (status != CRUX_ERR_UNSUPPORTED) {
            return status == CRUX_OK ? OMPI_SUCCESS : coll_crux_allreduce_failed(m, status);
        }
    }
    coll_crux_log_choice(m, CRUX_ALG_DEVICE_STAGED, bytes, "");
    return staged_through_host(sbuf, rbuf, count, dtype, op, comm, m);
}

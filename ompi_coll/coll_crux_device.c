/* CUDA device buffers in MPI_Allreduce.  Debian's Open MPI is not
 * CUDA-aware, so no device pointer may reach another module: the buffers
 * are either moved and reduced by libcrux_coll over the multipath engine
 * (crux_dev.h), or staged through pinned host memory here, reduced there by
 * crux's host algorithms or the previous module.  Every rank must pass the
 * same kind of memory (as Horovod does), since the two paths are different
 * collectives. */
#include <string.h>

#include "ompi_config.h"

#include "ompi_coll/coll_crux.h"

/* The topology's figures for the CUDA channels: without them a device pair
 * has only its direct copy (the host-staged path's nominal 12 GB/s took a
 * third of every transfer, even over NVSwitch).  The topology is loaded once
 * per process, by hier too; the paths go to the engine when the driver is
 * there (crux_engine_group_use_topo). */
void coll_crux_device_topo(crux_engine_group_t *group)
{
    const struct crux_topo *topo = coll_crux_topo();
    if (topo != NULL && crux_engine_group_use_topo(group, topo) != CRUX_OK) {
        COLL_CRUX_VERBOSE(1, "the topology's GPU paths were refused: direct copies only");
    }
}

bool coll_crux_device_kernel(crux_dtype_t cdtype, crux_op_t cop)
{
    return crux_dev_reduce_supported(cdtype, cop);
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

int coll_crux_stage_in(mca_coll_crux_module_t *m, const void *sbuf, const void *rbuf, int count,
                       ompi_datatype_t *dtype, coll_crux_staged_t *s)
{
    if (m->dev_pinned == NULL && crux_dev_pinned_create(&m->dev_pinned) != CRUX_OK) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    span(dtype, count, &s->lb, &s->bytes);
    char *in = crux_dev_pinned_buffer(m->dev_pinned, 0, s->bytes);
    char *out = crux_dev_pinned_buffer(m->dev_pinned, 1, s->bytes);
    if (in == NULL || out == NULL ||
        crux_dev_copy(in, (const char *)(sbuf == MPI_IN_PLACE ? rbuf : sbuf) + s->lb, s->bytes) !=
            CRUX_OK) {
        return OMPI_ERROR;
    }
    s->in = in - s->lb;
    s->out = out - s->lb;
    return OMPI_SUCCESS;
}

int coll_crux_stage_out(const coll_crux_staged_t *s, void *rbuf)
{
    return crux_dev_copy((char *)rbuf + s->lb, s->out + s->lb, s->bytes) == CRUX_OK ? OMPI_SUCCESS
                                                                                    : OMPI_ERROR;
}

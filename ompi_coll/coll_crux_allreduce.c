/* MPI_Allreduce: translate the arguments, let libcrux_coll choose the
 * algorithm (crux_allreduce_select: the small Allreduce for small
 * messages, flat on one node, hierarchical across groups, the device paths
 * for CUDA buffers), run it, and hand the call to the previous module when
 * crux cannot do it (user-defined ops, derived datatypes, MINLOC/MAXLOC,
 * uneven groups, a communicator without shared memory).
 *
 * Small host calls after the first take a short path (small_call): the
 * algorithm the first one was given, the last datatype and op's
 * translation, and none of the job's arbitration, which orders bulk
 * transfers (waiting on it would cost a small call more than its few
 * cache lines take from anyone). */
#include "ompi_config.h"

#include "opal/util/show_help.h"

#include "ompi_coll/coll_crux.h"

static int fallback(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                    struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_crux_module_t *m)
{
    return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
}

/* Said once per communicator and algorithm, with the first size it took
 * (the sizes that follow would repeat the line: one per size class was
 * too many to read). */
_Static_assert(CRUX_ALG_COUNT <= 32, "a bit of mca_coll_crux_module_t.logged per algorithm");
static void log_choice(mca_coll_crux_module_t *m, crux_alg_t alg, size_t bytes, const char *why)
{
    if (!(m->logged & (1u << alg))) {
        m->logged |= 1u << alg;
        COLL_CRUX_VERBOSE(2, "allreduce on %s: %s from %zu bytes%s%s", m->comm->c_name,
                          crux_alg_name(alg), bytes, why[0] ? ": " : "", why);
    }
}

/* CRUX_ERR_INVALID: this process found a peer's call of another shape
 * (different counts or datatype sizes); the peers get CRUX_ERR_PEER. */
static int failed(mca_coll_crux_module_t *m, crux_status_t status)
{
    if (status == CRUX_ERR_INVALID) {
        opal_show_help("help-mpi-coll-crux.txt", "allreduce-mismatch", true,
                       ompi_comm_rank(m->comm), m->comm->c_name);
        return OMPI_ERR_BAD_PARAM;
    }
    opal_show_help("help-mpi-coll-crux.txt", "allreduce-failed", true, ompi_comm_rank(m->comm),
                   m->comm->c_name, crux_status_string(status));
    return status == CRUX_ERR_PEER ? OMPI_ERR_UNREACH : OMPI_ERROR;
}

/* One call's arguments, translated, and what crux_allreduce_select asks. */
typedef struct {
    mca_coll_crux_module_t *m;
    crux_dtype_t cdtype;
    crux_op_t cop;
    size_t bytes;
} call_t;

/* The module's small Allreduce groups, when they hold and fit the call. */
static crux_coll_group_t *small_group(mca_coll_crux_module_t *m, size_t bytes)
{
    crux_coll_group_t *g = coll_crux_get_group(m);
    return g != NULL && crux_coll_small_fits(g, bytes) ? g : NULL;
}

static const mca_coll_crux_layout_t *small_layout(mca_coll_crux_module_t *m, size_t bytes)
{
    const mca_coll_crux_layout_t *l = coll_crux_get_layout(m);
    return l != NULL && l->super.small != NULL && crux_coll_small_fits(l->super.small, bytes)
               ? l
               : NULL;
}

static int has(void *arg, crux_select_cap_t cap)
{
    call_t *c = arg;
    switch (cap) {
    case CRUX_CAP_GROUP: return coll_crux_get_group(c->m) != NULL;
    case CRUX_CAP_ENGINE: return coll_crux_engine_group(c->m) != NULL;
    case CRUX_CAP_LANES: return coll_crux_engine_lanes(c->m);
    case CRUX_CAP_LAYOUT: return coll_crux_get_layout(c->m) != NULL;
    case CRUX_CAP_LAYOUT_LANES: {
        const mca_coll_crux_layout_t *l = coll_crux_get_layout(c->m);
        return l != NULL && l->super.lanes != NULL;
    }
    case CRUX_CAP_DEVICE_KERNEL: return coll_crux_device_kernel(c->cdtype, c->cop);
    case CRUX_CAP_SMALL: return small_group(c->m, c->bytes) != NULL;
    case CRUX_CAP_LAYOUT_SMALL: return small_layout(c->m, c->bytes) != NULL;
    case CRUX_CAP_COUNT: break;
    }
    return 0;
}

/* crux's algorithm 'alg' on buffers of one kind, between the job's enter
 * and exit. */
static crux_status_t run(mca_coll_crux_module_t *m, crux_alg_t alg, const void *sbuf, void *rbuf,
                         int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                         crux_dtype_t cdtype, crux_op_t cop)
{
    const void *in = sbuf == MPI_IN_PLACE ? NULL : sbuf;
    coll_crux_ticket_t ticket;
    crux_status_t status;
    coll_crux_set_caller(m);
    if (alg == CRUX_ALG_SMALL) {
        return crux_coll_allreduce_small(m->group, in, rbuf, (size_t)count, cdtype, cop);
    }
    if (alg == CRUX_ALG_HIER_SMALL) {
        return coll_crux_allreduce_small_hier(m->layout, sbuf, rbuf, count, dtype, op, cdtype, cop);
    }
    coll_crux_job_enter(&ticket);
    switch (alg) {
    case CRUX_ALG_HIER:
    case CRUX_ALG_HIER_SEQUENTIAL:
        status = coll_crux_allreduce_hier(
            m->layout, sbuf, rbuf, count, dtype, op, cdtype, cop,
            alg == CRUX_ALG_HIER ? (unsigned)mca_coll_crux_component.hier_depth : 0);
        break;
    case CRUX_ALG_LANES:
    case CRUX_ALG_DEVICE:
        status = crux_engine_allreduce(m->engine_group, in, rbuf, (size_t)count, cdtype, cop);
        break;
    default: status = crux_coll_allreduce(m->group, in, rbuf, (size_t)count, cdtype, cop);
    }
    coll_crux_job_exit(&ticket);
    return status;
}

/* Host buffers: crux's algorithm where one applies, else the previous
 * module. */
static int allreduce_host(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                          struct ompi_op_t *op, ompi_communicator_t *comm,
                          mca_coll_crux_module_t *m)
{
    if (count == 0) {
        return OMPI_SUCCESS;
    }
    size_t bytes = (size_t)count * dtype->super.size;
    call_t c = { .m = m, .bytes = bytes };
    /* by size alone, as crux_allreduce_select would; while building
     * subcommunicators (their splits call this communicator's Allreduce) */
    if (crux_select_size_falls_back(&m->bounds, bytes) || m->building) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    bool translated = coll_crux_dtype(dtype, &c.cdtype) == 0 && coll_crux_op(op, &c.cop) == 0 &&
                      crux_reduce_lookup(c.cdtype, c.cop) != NULL;
    if (bytes <= m->bounds.small_max) { /* for the next small call's short path */
        m->small_dtype = dtype;
        m->small_op = op;
        m->small_cdtype = translated ? c.cdtype : CRUX_DT_COUNT;
        m->small_cop = c.cop;
    }
    if (!translated) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    crux_select_query_t q = {
        .all_local = m->all_local,
        .bytes = bytes,
        .sizes = m->sizes,
        .request = m->request,
        .has = has,
        .arg = &c,
    };
    const char *why;
    crux_alg_t alg = crux_allreduce_select(&q, &why);
    log_choice(m, alg, bytes, why);
    if (bytes <= m->bounds.small_max) {
        m->small_alg = alg;
    }
    if (alg == CRUX_ALG_FALLBACK) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    crux_status_t status = run(m, alg, sbuf, rbuf, count, dtype, op, c.cdtype, c.cop);
    if (status == CRUX_OK) {
        return OMPI_SUCCESS;
    }
    return crux_allreduce_next(alg, status, &why) == CRUX_ALG_FALLBACK
               ? fallback(sbuf, rbuf, count, dtype, op, comm, m)
               : failed(m, status);
}

/* Device buffers: over the engine with the GPU kernels, else staged
 * through host memory (they must never reach a module that is not
 * CUDA-aware) and then as host buffers, axes and all. */
static int allreduce_device(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, ompi_communicator_t *comm,
                            mca_coll_crux_module_t *m)
{
    size_t bytes = (size_t)count * dtype->super.size;
    call_t c = { .m = m };
    int translated = coll_crux_dtype(dtype, &c.cdtype) == 0 && coll_crux_op(op, &c.cop) == 0;
    crux_select_query_t q = {
        .device = 1,
        .all_local = m->all_local,
        .bytes = bytes,
        .sizes = m->sizes,
        .request = m->request,
        .has = translated ? has : NULL, /* no kernel without a translation */
        .arg = &c,
    };
    const char *why;
    crux_alg_t alg = crux_allreduce_select(&q, &why);
    if (alg == CRUX_ALG_DEVICE) {
        log_choice(m, alg, bytes, why);
        crux_status_t status = run(m, alg, sbuf, rbuf, count, dtype, op, c.cdtype, c.cop);
        alg = crux_allreduce_next(alg, status, &why);
        if (alg != CRUX_ALG_HOST_STAGED) {
            return status == CRUX_OK ? OMPI_SUCCESS : failed(m, status);
        }
    }
    log_choice(m, alg, bytes, why);
    coll_crux_staged_t s;
    int rc = coll_crux_stage_in(m, sbuf, rbuf, count, dtype, &s);
    if (rc == OMPI_SUCCESS) {
        rc = allreduce_host(s.in, s.out, count, dtype, op, comm, m);
    }
    return rc == OMPI_SUCCESS ? coll_crux_stage_out(&s, rbuf) : rc;
}

static int allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                     struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_crux_module_t *m)
{
    if (count != 0 && coll_crux_is_device(sbuf, rbuf)) {
        return allreduce_device(sbuf, rbuf, count, dtype, op, comm, m);
    }
    /* managed memory is read in place by the host path */
    int rc = count != 0 ? coll_crux_host_ready(sbuf, rbuf) : OMPI_SUCCESS;
    return rc == OMPI_SUCCESS ? allreduce_host(sbuf, rbuf, count, dtype, op, comm, m) : rc;
}

/* A small host call of the datatype and op the last one had, on the path
 * the first small call was given: 1 with the outcome in *rc, 0 when the
 * call needs the whole path (a group released to make room is acquired
 * there again, on every member in the same call). */
static int small_call(const void *sbuf, void *rbuf, int count, size_t bytes, ompi_datatype_t *dtype,
                      struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_crux_module_t *m,
                      int *rc)
{
    crux_status_t st;
    const void *in = sbuf == MPI_IN_PLACE ? NULL : sbuf;
    if (m->small_alg == CRUX_ALG_FALLBACK || m->small_cdtype == CRUX_DT_COUNT) {
        *rc = fallback(sbuf, rbuf, count, dtype, op, comm, m);
        return 1;
    }
    if (m->small_alg == CRUX_ALG_SMALL) {
        crux_coll_group_t *g = m->group_share != NULL ? crux_share_use(m->group_share) : NULL;
        if (g == NULL || !crux_coll_small_fits(g, bytes)) {
            return 0;
        }
        crux_coll_group_set_caller(g, ompi_comm_get_cid(comm));
        st = crux_coll_allreduce_small(g, in, rbuf, (size_t)count, m->small_cdtype, m->small_cop);
    } else if (m->small_alg == CRUX_ALG_HIER_SMALL) {
        const mca_coll_crux_layout_t *l =
            m->layout_share != NULL ? crux_share_use(m->layout_share) : NULL;
        if (l == NULL || l->super.small == NULL || !crux_coll_small_fits(l->super.small, bytes)) {
            return 0;
        }
        crux_coll_group_set_caller(l->super.small, ompi_comm_get_cid(comm));
        st = coll_crux_allreduce_small_hier(l, sbuf, rbuf, count, dtype, op, m->small_cdtype,
                                            m->small_cop);
    } else {
        return 0;
    }
    const char *why;
    *rc = st == CRUX_OK ? OMPI_SUCCESS /* first: this path is a small call's whole cost */
          : crux_allreduce_next(m->small_alg, st, &why) == CRUX_ALG_FALLBACK
              ? fallback(sbuf, rbuf, count, dtype, op, comm, m)
              : failed(m, st);
    return 1;
}

int mca_coll_crux_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_crux_module_t *m = (mca_coll_crux_module_t *)module;
    size_t bytes = (size_t)count * dtype->super.size;
    int rc;
    if (bytes <= m->bounds.small_max && dtype == m->small_dtype && op == m->small_op && count > 0 &&
        m->small_alg != CRUX_ALG_COUNT && coll_crux_host_buffers(m, sbuf, rbuf) &&
        !coll_crux_profile_configured() &&
        small_call(sbuf, rbuf, count, bytes, dtype, op, comm, m, &rc)) {
        return rc;
    }
    /* Host messages crux hands on go on next, past every other check: at a
     * fraction of a microsecond a call, each check showed (10% slower than
     * Open MPI without crux at 4-64 bytes, before). */
    if (bytes < m->bounds.fallback_below && coll_crux_devices_absent() &&
        !coll_crux_profile_configured()) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    if (!coll_crux_profiling()) {
        return allreduce(sbuf, rbuf, count, dtype, op, comm, m);
    }
    double start = coll_crux_now();
    rc = allreduce(sbuf, rbuf, count, dtype, op, comm, m);
    coll_crux_profile_record(bytes, start, coll_crux_now());
    return rc;
}

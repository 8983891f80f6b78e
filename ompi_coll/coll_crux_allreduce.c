/* MPI_Allreduce: translate the arguments, let libcrux_coll choose the
 * algorithm (crux_allreduce_select: the small Allreduce for small
 * messages, flat on one node, hierarchical across groups, the device paths
 * for CUDA buffers), run it, and hand the call to the previous module when
 * crux cannot do it (user-defined ops, derived datatypes, MINLOC/MAXLOC,
 * uneven groups, a communicator without shared memory).
 *
 * A small host call of the datatype and op of the last one takes a short
 * path: libcrux_coll's memo of the algorithm and the translation
 * (crux_select_memo_t). */
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

/* What the module holds, as libcrux_coll's targets for 'alg': through the
 * references, since a group the call does not use may have been released
 * to make room since the module last looked; 'step' holds the inter-group
 * steps for the call. */
static void targets_for(mca_coll_crux_module_t *m, crux_alg_t alg, ompi_datatype_t *dtype,
                        struct ompi_op_t *op, coll_crux_step_t *step, crux_allreduce_targets_t *t)
{
    unsigned needs = crux_alg_needs(alg);
    *t = (crux_allreduce_targets_t){ .caller = ompi_comm_get_cid(m->comm), .oob = &m->oob };
    if (needs & CRUX_NEEDS_GROUP) {
        t->group = crux_share_slot_peek(&m->group_slot);
    }
    if (needs & CRUX_NEEDS_ENGINE) {
        t->engine = crux_share_slot_peek(&m->engine_slot);
    }
    mca_coll_crux_layout_t *l =
        needs & CRUX_NEEDS_LAYOUT ? crux_share_slot_peek(&m->layout_slot) : NULL;
    if (l != NULL) {
        *step = (coll_crux_step_t){ .layout = l, .dtype = dtype, .op = op };
        coll_crux_hier_targets(step, needs, t);
    }
}

/* crux's algorithm 'alg' on host buffers, or device buffers over the
 * engine; the bulk ones between the job's enter and exit. */
static crux_status_t run(mca_coll_crux_module_t *m, crux_alg_t alg, const void *sbuf, void *rbuf,
                         int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                         crux_dtype_t cdtype, crux_op_t cop)
{
    coll_crux_step_t step;
    crux_allreduce_targets_t t;
    crux_job_ticket_t ticket;
    const void *in = sbuf == MPI_IN_PLACE ? NULL : sbuf;
    if (!crux_alg_arbitrated(alg)) {
        targets_for(m, alg, dtype, op, &step, &t);
        return crux_allreduce_run(&t, alg, in, rbuf, (size_t)count, cdtype, cop);
    }
    /* first: the enter reads the priority file, whose level the channel is
     * marked with as the targets are made */
    coll_crux_job_enter(&ticket);
    targets_for(m, alg, dtype, op, &step, &t);
    crux_status_t status = crux_allreduce_run(&t, alg, in, rbuf, (size_t)count, cdtype, cop);
    coll_crux_job_exit(&ticket);
    return status;
}

/* The outcome of crux's algorithm as an MPI code: the previous module's
 * when crux's could not take the call. */
static int outcome(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                   struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_crux_module_t *m,
                   crux_alg_t alg, crux_status_t status)
{
    const char *why;
    if (status == CRUX_OK) {
        return OMPI_SUCCESS;
    }
    return crux_allreduce_next(alg, status, &why) == CRUX_ALG_FALLBACK
               ? fallback(sbuf, rbuf, count, dtype, op, comm, m)
               : failed(m, status);
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
    if (coll_crux_dtype(dtype, &c.cdtype) != 0 || coll_crux_op(op, &c.cop) != 0 ||
        crux_reduce_lookup(c.cdtype, c.cop) == NULL) {
        crux_select_memo_note(&m->memo, &m->bounds, bytes, dtype, op, CRUX_DT_COUNT, CRUX_OP_COUNT,
                              CRUX_ALG_FALLBACK);
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
    crux_select_memo_note(&m->memo, &m->bounds, bytes, dtype, op, c.cdtype, c.cop, alg);
    if (alg == CRUX_ALG_FALLBACK) {
        return fallback(sbuf, rbuf, count, dtype, op, comm, m);
    }
    crux_status_t status = run(m, alg, sbuf, rbuf, count, dtype, op, c.cdtype, c.cop);
    return outcome(sbuf, rbuf, count, dtype, op, comm, m, alg, status);
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
    const void *in = sbuf == MPI_IN_PLACE ? NULL : sbuf;
    if (count != 0 && crux_dev_call_is_device(in, rbuf)) {
        return allreduce_device(sbuf, rbuf, count, dtype, op, comm, m);
    }
    /* managed memory is read in place by the host path */
    if (count != 0 && crux_dev_call_host_ready(in, rbuf) != CRUX_OK) {
        return OMPI_ERROR;
    }
    return allreduce_host(sbuf, rbuf, count, dtype, op, comm, m);
}

int mca_coll_crux_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_crux_module_t *m = (mca_coll_crux_module_t *)module;
    size_t bytes = (size_t)count * dtype->super.size;
    int rc;
    /* A small host call like the last: the memo's algorithm, none of the
     * translation and selection (unless its group was released meanwhile,
     * CRUX_ERR_NOT_FOUND: then the whole path acquires it again). */
    crux_alg_t alg = crux_select_memo_alg(&m->memo, &m->bounds, bytes, dtype, op);
    if (alg != CRUX_ALG_COUNT && count > 0 && crux_dev_host_pair(&m->host_pair, sbuf, rbuf) &&
        !coll_crux_profile_configured()) {
        if (alg == CRUX_ALG_FALLBACK) {
            return fallback(sbuf, rbuf, count, dtype, op, comm, m);
        }
        crux_status_t st = run(m, alg, sbuf, rbuf, count, dtype, op, m->memo.dtype, m->memo.op);
        if (st == CRUX_OK) { /* first: this path is a small call's whole cost */
            return OMPI_SUCCESS;
        }
        if (st != CRUX_ERR_NOT_FOUND) {
            return outcome(sbuf, rbuf, count, dtype, op, comm, m, alg, st);
        }
    }
    /* Host messages crux hands on by their size go on next, past every
     * other check: at a fraction of a microsecond a call, each check
     * showed (10% slower than Open MPI without crux at 4-64 bytes, before). */
    if (crux_select_size_falls_back(&m->bounds, bytes) && crux_dev_absent() &&
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

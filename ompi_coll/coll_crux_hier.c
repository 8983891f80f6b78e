/* The groups of a communicator for the hierarchical Allreduce, and its
 * inter-group step.
 *
 * Groups: libcrux_coll plans them (crux_layout_plan: with
 * coll_crux_group_size N > 0, ranks r with the same r / N; otherwise the
 * ranks of one node bound inside the same CPU package, ranks not bound
 * inside one package counting as one group per node) from where each rank
 * runs: its node (MPI_COMM_TYPE_SHARED, named by its lowest rank) and its
 * package (libcrux_topo's host groups).  This file makes the plan's
 * subcommunicators, with the previous module's collectives ("building"
 * makes crux's own Allreduce on this communicator fall back meanwhile, so
 * the splits never recurse into it), and the groups within them that
 * crux_layout_handoff asks for (the engine's lanes where every rank group
 * has them, else a shared-memory group).  The layout (subcommunicators, the
 * groups within them, the channel between nodes) is shared by the
 * communicators over the same processes in the same order, counted, and
 * released with the last of them or to make room (coll_crux_share.c); the
 * groups within it are shared and counted too, pinned while a layout holds
 * them.  The hierarchical algorithm needs at least two groups, of the same
 * size, of more than one rank; otherwise the layout is unusable and crux
 * falls back for such calls.
 *
 * The inter-group step runs on the cross communicator (local rank i of
 * every group), the way libcrux_coll chooses (crux_layout_step): over
 * crux's channel between nodes (coll_crux_net.c), else as the cross
 * communicator's own Allreduce, blocking when its ranks share this node
 * (crux's own flat algorithm, through shared memory), nonblocking over the
 * PML otherwise; this file gives it those two Allreduces. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"

#include "ompi/group/group.h"
#include "ompi/request/request.h"
#include "topo/crux_topo.h"

#include "ompi_coll/coll_crux.h"

/* The package this process is bound inside, CRUX_LAYOUT_UNBOUND when
 * that is not one package. */
static int package_of_process(void)
{
    const crux_topo_t *t = coll_crux_topo();
    int group = t != NULL ? crux_topo_host_group_of_self(t) : -1;
    return group < 0 ? CRUX_LAYOUT_UNBOUND : group;
}

static int local_allgather(const void *sbuf, void *rbuf, size_t length, void *arg)
{
    ompi_communicator_t *comm = arg;
    return comm->c_coll->coll_allgather(sbuf, (int)length, MPI_BYTE, rbuf, (int)length, MPI_BYTE,
                                        comm, comm->c_coll->coll_allgather_module) == OMPI_SUCCESS
               ? 0
               : -1;
}

/* Where this rank runs, for the plan: its node, named by the node's
 * lowest rank in the communicator, and its package.  A rank whose node
 * cannot be had stands alone (its own "node"). */
static crux_layout_place_t place_of(ompi_communicator_t *comm)
{
    ompi_communicator_t *node = NULL;
    int rank = ompi_comm_rank(comm), zero = 0, first = -1;
    crux_layout_place_t place = { -1 - rank, 0 };
    if (ompi_comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, NULL, &node) == OMPI_SUCCESS) {
        if (ompi_group_translate_ranks(node->c_local_group, 1, &zero, comm->c_local_group,
                                       &first) == OMPI_SUCCESS &&
            first >= 0) {
            place.node = first;
        }
        ompi_comm_free(&node);
    }
    place.package = package_of_process();
    return place;
}

/* The plan's subcommunicators: the rank group, and the cross communicator
 * (local rank i of every group, ordered by group). */
static int split(ompi_communicator_t *comm, const crux_layout_plan_t *plan,
                 mca_coll_crux_layout_t *l)
{
    int rc = ompi_comm_split(comm, plan->group, ompi_comm_rank(comm), &l->local_comm, false);
    if (rc == OMPI_SUCCESS) {
        rc = ompi_comm_split(comm, plan->group_rank, plan->group, &l->cross_comm, false);
    }
    if (rc != OMPI_SUCCESS) {
        return rc;
    }
    l->super.per_group = plan->per_group;
    l->super.groups = plan->groups;
    l->super.cross_local = !ompi_group_have_remote_peers(l->cross_comm->c_local_group);
    return OMPI_SUCCESS;
}

/* A group within this rank's group of ranks, of 'kind', pinned (released
 * early, it would be gone from one group and not the others), its
 * reference in *share; 'small_only': a shared-memory group for the small
 * Allreduce alone, no stage (beside the lanes). */
static crux_status_t local_group(mca_coll_crux_layout_t *l, const crux_coll_oob_t *oob,
                                 coll_crux_kind_t kind, bool small_only, crux_share_t **share,
                                 void **group)
{
    static const int no_stage;
    coll_crux_share_request_t request = {
        .comm = l->local_comm,
        .oob = oob,
        .kind = kind,
        .variant = kind != COLL_CRUX_SHM ? 0
                   : small_only          ? CRUX_SHARE_RANK_GROUP_SMALL
                                         : CRUX_SHARE_RANK_GROUP,
        .arg = small_only ? (void *)&no_stage : NULL,
        .pin = true,
        .build =
            kind == COLL_CRUX_SHM ? coll_crux_layout_group_build : coll_crux_engine_group_build,
        .destroy =
            kind == COLL_CRUX_SHM ? coll_crux_shm_group_destroy : coll_crux_engine_group_destroy,
    };
    crux_status_t status = coll_crux_share_acquire(&request, share);
    *group = status == CRUX_OK ? crux_share_use(*share) : NULL;
    return *group != NULL ? CRUX_OK : status;
}

/* What a layout holds, released; the layout itself is the caller's. */
static void layout_free(mca_coll_crux_layout_t *l)
{
    crux_net_destroy(l->super.net);
    free(l->hosts);
    crux_share_release(l->share, 1);
    crux_share_release(l->small_share, 1);
    if (l->cross_comm != NULL) {
        ompi_comm_free(&l->cross_comm);
    }
    if (l->local_comm != NULL) {
        ompi_comm_free(&l->local_comm);
    }
    memset(l, 0, sizeof(*l));
}

/* The groups within a layout's rank group that crux_layout_handoff asks
 * for, each over the rank group's communicator. */
typedef struct {
    mca_coll_crux_layout_t *l;
    crux_coll_oob_t oob; /* over the rank group */
    void *lanes;
    void *shared;
} handoff_arg_t;

static int build_lanes(void *argp)
{
    handoff_arg_t *a = argp;
    crux_status_t st = local_group(a->l, &a->oob, COLL_CRUX_ENGINE, false, &a->l->share, &a->lanes);
    return st == CRUX_OK && crux_engine_group_lanes(a->lanes);
}

static void drop_lanes(void *argp)
{
    handoff_arg_t *a = argp;
    crux_share_release(a->l->share, 1);
    a->l->share = NULL;
    a->lanes = NULL;
}

static int build_shared(void *argp, int small_only)
{
    handoff_arg_t *a = argp;
    crux_share_t **share = small_only ? &a->l->small_share : &a->l->share;
    return local_group(a->l, &a->oob, COLL_CRUX_SHM, small_only, share, &a->shared) == CRUX_OK;
}

/* How the layout's inter-group step goes (crux_layout_step), to say. */
static const char *step_said(const crux_layout_t *l)
{
    switch (crux_layout_step(l)) {
    case CRUX_LAYOUT_STEP_NET:
        return crux_net_kind(l->net) == CRUX_NET_UCX ? "over crux's ucx channel"
                                                     : "over crux's tcp channel";
    case CRUX_LAYOUT_STEP_BLOCKING: return "through shared memory";
    case CRUX_LAYOUT_STEP_NONBLOCKING: break;
    }
    return "over the PML";
}

/* The layout of the module's communicator (collective over it, 'oob' its
 * exchange): the plan's subcommunicators, within the rank groups the
 * engine's lanes or a shared-memory group (shared with communicators over
 * the same processes in the same order, counted), the channel between
 * nodes. */
static crux_status_t layout_build(void *module, const crux_coll_oob_t *oob, void **out)
{
    mca_coll_crux_module_t *m = module;
    mca_coll_crux_layout_t *l = calloc(1, sizeof(*l));
    const int k = mca_coll_crux_component.group_size;
    m->building = true;
    crux_layout_place_t place = k > 0 ? (crux_layout_place_t){ 0, 0 } : place_of(m->comm);
    crux_layout_plan_t plan;
    crux_status_t status = crux_layout_plan(oob, k, place, &plan);
    if (status == CRUX_OK && plan.smallest != plan.largest) {
        COLL_CRUX_VERBOSE(1,
                          "communicator %s: groups of %d to %d ranks; the hierarchical Allreduce "
                          "needs equal groups and falls back",
                          m->comm->c_name, plan.smallest, plan.largest);
    }
    if (status != CRUX_OK || !plan.usable) {
        m->building = false;
        free(l);
        return CRUX_ERR_UNSUPPORTED; /* alike on every rank: nothing split */
    }
    mca_coll_crux_layout_t spare = { 0 };
    mca_coll_crux_layout_t *use = l != NULL ? l : &spare; /* the splits take part all the same */
    bool ready = split(m->comm, &plan, use) == OMPI_SUCCESS && l != NULL;
    handoff_arg_t arg = {
        .l = use,
        .oob = { .allgather = local_allgather,
                 .arg = use->local_comm,
                 .rank = ready ? ompi_comm_rank(use->local_comm) : 0,
                 .size = use->super.per_group },
    };
    const crux_layout_build_t build = { build_lanes, drop_lanes, build_shared, &arg };
    int lanes, small;
    status = crux_layout_handoff(oob, ready, m->request.handoff, &build, &lanes, &small);
    if (status == CRUX_OK && lanes) {
        use->super.lanes = arg.lanes;
        use->super.small = small ? arg.shared : NULL;
    } else if (status == CRUX_OK) {
        use->super.group = use->super.small = arg.shared;
    } else if (status == CRUX_ERR_NO_RESOURCE) {
        COLL_CRUX_VERBOSE(1, "communicator %s: no shared memory for its groups: falling back",
                          m->comm->c_name);
    }
    if (status == CRUX_OK) {
        coll_crux_net_open(use, m->comm);
    }
    m->building = false;
    if (status != CRUX_OK) {
        layout_free(use);
        free(l);
        return CRUX_ERR_UNSUPPORTED;
    }
    COLL_CRUX_VERBOSE(2,
                      "communicator %s: %d groups of %d ranks, %s within them, inter-group "
                      "step %s",
                      m->comm->c_name, use->super.groups, use->super.per_group,
                      use->super.lanes != NULL ? "the engine's lanes" : "staging",
                      step_said(&use->super));
    *out = l;
    return CRUX_OK;
}

static void layout_destroy(void *layout)
{
    layout_free(layout);
    free(layout);
}

const mca_coll_crux_layout_t *coll_crux_get_layout(mca_coll_crux_module_t *m)
{
    crux_status_t status;
    const coll_crux_share_request_t how = {
        .kind = COLL_CRUX_LAYOUT,
        .variant = crux_layout_variant(m->request.handoff),
        .build = layout_build,
        .destroy = layout_destroy,
    };
    return coll_crux_module_group(m, &how, &m->layout_slot, &status);
}

/* ---- the inter-group step ------------------------------------------------ */

/* The cross communicator's own Allreduce, in place, for libcrux_coll's
 * inter-group step (crux_layout_cross_t, which way crux_layout_step
 * chooses): blocking, or nonblocking over the module below. */
static crux_status_t cross_reduce(void *argp, void *buf, size_t count)
{
    coll_crux_cross_arg_t *a = argp;
    return a->cross->c_coll->coll_allreduce(MPI_IN_PLACE, buf, (int)count, a->dtype, a->op,
                                            a->cross,
                                            a->cross->c_coll->coll_allreduce_module) == OMPI_SUCCESS
               ? CRUX_OK
               : CRUX_ERR_IO;
}

static crux_status_t cross_start(void *argp, void *buf, size_t count, void **request)
{
    coll_crux_cross_arg_t *a = argp;
    ompi_request_t *req = NULL;
    int rc =
        a->cross->c_coll->coll_iallreduce(MPI_IN_PLACE, buf, (int)count, a->dtype, a->op, a->cross,
                                          &req, a->cross->c_coll->coll_iallreduce_module);
    *request = req;
    return rc == OMPI_SUCCESS ? CRUX_OK : CRUX_ERR_IO;
}

static crux_status_t cross_test(void *argp, void *request, int *done)
{
    (void)argp;
    ompi_request_t *req = request;
    if (req == NULL) {
        *done = 1;
        return CRUX_OK;
    }
    int completed = 0;
    int rc = ompi_request_test(&req, &completed, MPI_STATUS_IGNORE); /* frees it when done */
    *done = completed;
    return rc == OMPI_SUCCESS ? CRUX_OK : CRUX_ERR_IO;
}

/* Across nodes crux's module on the cross communicator has no groups and
 * hands the small Allreduce's blocking step on at once (its first small
 * call found so); on one node it is crux's small one. */
void coll_crux_hier_targets(coll_crux_step_t *step, unsigned needs, crux_allreduce_targets_t *t)
{
    mca_coll_crux_layout_t *l = step->layout;
    if (needs & CRUX_NEEDS_CHANNEL) {
        coll_crux_net_mark(l, l->cross_comm);
    }
    step->cross = (crux_layout_cross_t){ cross_reduce, cross_start, cross_test, &step->arg };
    step->arg = (coll_crux_cross_arg_t){ l->cross_comm, step->dtype, step->op };
    t->layout = &l->super;
    t->cross = &step->cross;
    t->depth = (unsigned)mca_coll_crux_component.hier_depth;
}

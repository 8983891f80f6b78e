/* The layout of the hierarchical Allreduce (crux_coll.h): which rank
 * group each member of a communicator is in, whether the groups allow the
 * algorithm, and how the members of each group hand data to each other.
 * Every answer is agreed: each member computes it from the same exchanged
 * data, or from flags exchanged for the purpose. */
#include <stdint.h>
#include <stdlib.h>

#include "coll/crux_coll.h"
#include "coll/oob/crux_oob_internal.h"

typedef struct {
    int32_t node, package;
} place_t;

typedef struct {
    int32_t node, package, rank;
} entry_t;

static int by_place(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    if (x->node != y->node) {
        return x->node < y->node ? -1 : 1;
    }
    if (x->package != y->package) {
        return x->package < y->package ? -1 : 1;
    }
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

typedef struct {
    int first; /* the group's lowest rank */
    int start; /* its first entry in the sorted order */
    int size;
} run_t;

static int by_first(const void *a, const void *b)
{
    const run_t *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

crux_status_t crux_layout_plan(const crux_coll_oob_t *oob, int group_size,
                               crux_layout_place_t place, crux_layout_plan_t *plan)
{
    int n = oob->size, me = oob->rank;
    place_t mine = { place.node, place.package };
    place_t *all = malloc((size_t)n * sizeof(*all));
    entry_t *e = malloc((size_t)n * sizeof(*e));
    run_t *runs = malloc((size_t)n * sizeof(*runs));
    *plan = (crux_layout_plan_t){ 0 };
    crux_status_t status = CRUX_ERR_NO_MEMORY;
    if (all == NULL || e == NULL || runs == NULL) {
        goto out;
    }
    status = CRUX_ERR_PEER;
    if (oob->allgather(&mine, all, sizeof(mine), oob->arg) != 0) {
        goto out;
    }
    for (int r = 0; r < n; r++) {
        /* by rank / group_size: one "node" per group of consecutive ranks */
        e[r] = group_size > 0 ? (entry_t){ r / group_size, 0, r }
                              : (entry_t){ all[r].node, all[r].package, r };
    }
    qsort(e, (size_t)n, sizeof(*e), by_place);
    int groups = 0;
    for (int i = 0; i < n; i++) {
        if (i == 0 || e[i].node != e[i - 1].node || e[i].package != e[i - 1].package) {
            runs[groups++] = (run_t){ e[i].rank, i, 0 }; /* by rank within a run */
        }
        runs[groups - 1].size++;
    }
    /* groups numbered in order of their first ranks: the same on every member */
    qsort(runs, (size_t)groups, sizeof(*runs), by_first);
    plan->groups = groups;
    plan->smallest = n;
    for (int g = 0; g < groups; g++) {
        int size = runs[g].size;
        plan->smallest = size < plan->smallest ? size : plan->smallest;
        plan->largest = size > plan->largest ? size : plan->largest;
        for (int k = 0; k < size; k++) {
            if (e[runs[g].start + k].rank == me) {
                plan->group = g;
                plan->group_rank = k;
                plan->per_group = size;
            }
        }
    }
    plan->usable = groups > 1 && plan->smallest == plan->largest && plan->smallest > 1;
    status = CRUX_OK;
out:
    free(all);
    free(e);
    free(runs);
    return status;
}

crux_status_t crux_layout_handoff(const crux_coll_oob_t *oob, int ready, crux_handoff_t asked,
                                  const crux_layout_build_t *build, int *lanes, int *small)
{
    int all;
    *lanes = 0;
    *small = 0;
    crux_status_t status = crux_oob_agree(oob, CRUX_OK, ready, &all);
    if (status != CRUX_OK) {
        return status;
    }
    if (!all) {
        return CRUX_ERR_UNSUPPORTED; /* a member's rank groups could not be made */
    }
    if (asked != CRUX_HANDOFF_FLAGS) {
        /* the lanes where every rank group has them: the groups'
         * inter-group steps must cut shards alike */
        int mine = build->lanes(build->arg);
        status = crux_oob_agree(oob, CRUX_OK, mine, &all);
        if (status != CRUX_OK) {
            return status;
        }
        if (!all) {
            build->drop_lanes(build->arg); /* whatever this member built */
        }
        *lanes = all;
    }
    if (!*lanes) {
        /* a shared-memory group in every rank group, or none of the groups */
        status = crux_oob_agree(oob, CRUX_OK, build->shared(build->arg, 0), &all);
        return status != CRUX_OK ? status : all ? CRUX_OK : CRUX_ERR_NO_RESOURCE;
    }
    /* beside the lanes, the small Allreduce's shared-memory group where
     * every rank group has one */
    status = crux_oob_agree(oob, CRUX_OK, build->shared(build->arg, 1), &all);
    *small = status == CRUX_OK && all;
    return status;
}

crux_coll_config_t crux_layout_group_config(const crux_coll_config_t *base,
                                            const crux_select_sizes_t *sizes, int small_only)
{
    crux_coll_config_t config = *base;
    config.small_max_bytes = sizes->hier_small_max_bytes;
    if (small_only) {
        config.stage_size = 0;
    }
    return config;
}

int crux_layout_variant(crux_handoff_t asked)
{
    return asked == CRUX_HANDOFF_FLAGS;
}

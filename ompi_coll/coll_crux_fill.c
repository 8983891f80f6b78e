/* Stock components that fill the collectives crux does not implement when no
 * other component does (`mpirun --mca coll crux`): Open MPI refuses a
 * communicator with an empty collective slot.  A named component the coll
 * framework has not loaded is loaded here from Open MPI's own component
 * directory, registered and opened as the framework would.  Per
 * communicator, every one is queried, and those that take the communicator
 * are enabled lowest priority first, each taking over the slots still empty
 * when crux was enabled, as Open MPI's own selection does: each slot ends
 * with the highest-priority component that has it (coll/inter's on an
 * intercommunicator rather than coll/basic's, coll/self's rather than
 * coll/tuned's on MPI_COMM_SELF).  A component that refuses a kind of
 * communicator simply gives nothing.  The components of the default list
 * that were not named then fill, the same way, whatever slots the named
 * ones left empty: no value of coll_crux_fill_components can leave a
 * communicator without a collective (Open MPI would refuse it). */
#include <ctype.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"

#include "opal/mca/base/base.h"
#include "opal/util/argv.h"
#include "opal/util/show_help.h"

#include "ompi_coll/coll_crux.h"

#define COLL_CRUX_MAX_FILL 16
#define COLL_CRUX_MAX_NAME 32 /* longer than any coll component's name */

typedef struct {
    char *name;
    void *dl;                                         /* loaded here, else NULL */
    const mca_coll_base_component_2_0_0_t *component; /* when loaded here */
    bool refused;                                     /* its init_query refused this process */
    bool spare; /* from the default list, not named: fills what the named leave */
} fill_t;

static fill_t fills[COLL_CRUX_MAX_FILL];
static int num_fills;

/* Every collective slot of a communicator (coll.h, API 2.0.0). */
/* clang-format off */
#define COLL_CRUX_FOR_EACH_SLOT(X)                                                                  \
    X(allgather) X(allgatherv) X(allreduce) X(alltoall) X(alltoallv) X(alltoallw) X(barrier)   \
    X(bcast) X(exscan) X(gather) X(gatherv) X(reduce) X(reduce_scatter)                        \
    X(reduce_scatter_block) X(scan) X(scatter) X(scatterv)                                     \
    X(iallgather) X(iallgatherv) X(iallreduce) X(ialltoall) X(ialltoallv) X(ialltoallw)        \
    X(ibarrier) X(ibcast) X(iexscan) X(igather) X(igatherv) X(ireduce) X(ireduce_scatter)      \
    X(ireduce_scatter_block) X(iscan) X(iscatter) X(iscatterv)                                 \
    X(allgather_init) X(allgatherv_init) X(allreduce_init) X(alltoall_init)                    \
    X(alltoallv_init) X(alltoallw_init) X(barrier_init) X(bcast_init) X(exscan_init)           \
    X(gather_init) X(gatherv_init) X(reduce_init) X(reduce_scatter_init)                       \
    X(reduce_scatter_block_init) X(scan_init) X(scatter_init) X(scatterv_init)                 \
    X(neighbor_allgather) X(neighbor_allgatherv) X(neighbor_alltoall) X(neighbor_alltoallv)    \
    X(neighbor_alltoallw) X(ineighbor_allgather) X(ineighbor_allgatherv)                       \
    X(ineighbor_alltoall) X(ineighbor_alltoallv) X(ineighbor_alltoallw)                        \
    X(neighbor_allgather_init) X(neighbor_allgatherv_init) X(neighbor_alltoall_init)           \
    X(neighbor_alltoallv_init) X(neighbor_alltoallw_init) X(reduce_local)
/* clang-format on */

static const mca_coll_base_component_2_0_0_t *framework_component(const char *name)
{
    mca_base_component_list_item_t *cli;
    OPAL_LIST_FOREACH (cli, &ompi_coll_base_framework.framework_components,
                       mca_base_component_list_item_t) {
        if (strcmp(cli->cli_component->mca_component_name, name) == 0) {
            return (const mca_coll_base_component_2_0_0_t *)cli->cli_component;
        }
    }
    return NULL;
}

/* Load mca_coll_<name>.so from Open MPI's component directory, register and
 * open it. */
static int load(fill_t *fill)
{
    char path[4096], symbol[128];
    snprintf(path, sizeof(path), "%s/mca_coll_%s.so", mca_base_system_default_path, fill->name);
    snprintf(symbol, sizeof(symbol), "mca_coll_%s_component", fill->name);
    fill->dl = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (fill->dl == NULL) {
        COLL_CRUX_VERBOSE(1, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    mca_coll_base_component_2_0_0_t *component = dlsym(fill->dl, symbol);
    mca_base_component_t *base = component != NULL ? &component->collm_version : NULL;
    if (base == NULL ||
        (base->mca_register_component_params != NULL &&
         base->mca_register_component_params() != OMPI_SUCCESS) ||
        (base->mca_open_component != NULL && base->mca_open_component() != OMPI_SUCCESS)) {
        COLL_CRUX_VERBOSE(1, "cannot use %s (%s)", path,
                          base == NULL ? "no component" : "open failed");
        dlclose(fill->dl);
        fill->dl = NULL;
        return -1;
    }
    fill->component = component;
    return 0;
}

static bool valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len >= COLL_CRUX_MAX_NAME) {
        return false;
    }
    for (const char *p = name; *p != '\0'; p++) {
        if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '_') {
            return false; /* also keeps a path out of load()'s file name */
        }
    }
    return true;
}

/* Add a component; false when it cannot be used. */
static bool add(const char *name, bool spare)
{
    if (strcmp(name, "crux") == 0) {
        return true;
    }
    for (int i = 0; i < num_fills; i++) {
        if (strcmp(fills[i].name, name) == 0) {
            return true; /* named twice */
        }
    }
    if (!valid_name(name) || num_fills == COLL_CRUX_MAX_FILL) {
        return false;
    }
    fill_t *fill = &fills[num_fills];
    *fill = (fill_t){ .name = strdup(name), .spare = spare };
    /* The framework's own components are looked up when needed: the
     * framework may still drop some of them before communicators exist. */
    if (fill->name != NULL && (framework_component(fill->name) != NULL || load(fill) == 0)) {
        num_fills++;
        return true;
    }
    free(fill->name);
    fill->name = NULL;
    return false;
}

/* The named components, then the default list's as spares.  Names that
 * cannot be used, or a list with none usable, are said once per node,
 * naming the parameter. */
int coll_crux_fill_open(const char *names)
{
    char **list = opal_argv_split(names != NULL ? names : "", ',');
    char refused[256] = "";
    for (int i = 0; list != NULL && list[i] != NULL; i++) {
        if (!add(list[i], false) || strcmp(list[i], "crux") == 0) {
            size_t at = strlen(refused);
            snprintf(refused + at, sizeof(refused) - at, "%s\"%.*s\"", at > 0 ? ", " : "",
                     COLL_CRUX_MAX_NAME, list[i]);
        }
    }
    opal_argv_free(list);
    if (num_fills == 0 || refused[0] != '\0') {
        char why[320];
        snprintf(why, sizeof(why), "%s%s",
                 num_fills == 0 ? "it names no coll component crux can use"
                                : "not coll components of this Open MPI crux can use: ",
                 num_fills == 0 ? "" : refused);
        coll_crux_say(true, "invalid-fill", names != NULL ? names : "", why,
                      COLL_CRUX_FILL_DEFAULT);
    }
    list = opal_argv_split(COLL_CRUX_FILL_DEFAULT, ',');
    for (int i = 0; list != NULL && list[i] != NULL; i++) {
        if (!add(list[i], true)) {
            COLL_CRUX_VERBOSE(1, "the stock component %s cannot fill collectives", list[i]);
        }
    }
    opal_argv_free(list);
    return OMPI_SUCCESS;
}

int coll_crux_fill_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    for (int i = 0; i < num_fills; i++) {
        const mca_coll_base_component_2_0_0_t *c = fills[i].component;
        if (c != NULL && c->collm_init_query != NULL &&
            c->collm_init_query(enable_progress_threads, enable_mpi_threads) != OMPI_SUCCESS) {
            fills[i].refused = true; /* still closed in coll_crux_fill_close */
        }
    }
    return OMPI_SUCCESS;
}

static const mca_coll_base_component_2_0_0_t *usable(const fill_t *fill)
{
    if (fill->refused) {
        return NULL;
    }
    return fill->dl != NULL ? fill->component : framework_component(fill->name);
}

/* Slot numbers, to remember which slots the fill may write. */
#define COLL_CRUX_SLOT_NUMBER(slot) COLL_CRUX_SLOT_##slot,
enum { COLL_CRUX_FOR_EACH_SLOT(COLL_CRUX_SLOT_NUMBER) COLL_CRUX_NUM_SLOTS };

#define COLL_CRUX_SLOT_EMPTY(slot) own[COLL_CRUX_SLOT_##slot] = comm->c_coll->coll_##slot == NULL;

/* As the framework's own COPY: a later module replaces an earlier one. */
#define COLL_CRUX_FILL_SLOT(slot)                                    \
    if (own[COLL_CRUX_SLOT_##slot] && module->coll_##slot != NULL) { \
        if (comm->c_coll->coll_##slot##_module != NULL) {            \
            OBJ_RELEASE(comm->c_coll->coll_##slot##_module);         \
        }                                                            \
        comm->c_coll->coll_##slot = module->coll_##slot;             \
        comm->c_coll->coll_##slot##_module = module;                 \
        OBJ_RETAIN(module);                                          \
    }

typedef struct {
    mca_coll_base_module_t *module;
    int priority;
    const char *name;
} offer_t;

#define COLL_CRUX_SLOT_FROM(slot) \
    slots += own[COLL_CRUX_SLOT_##slot] && comm->c_coll->coll_##slot##_module == module;

/* Which component each filled slot came from, as "inter 9 (priority 40)". */
static void log_fill(ompi_communicator_t *comm, const offer_t *offers, int n, const bool *own)
{
    char text[512] = "";
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof(text); i++) {
        const mca_coll_base_module_t *module = offers[i].module;
        int slots = 0;
        COLL_CRUX_FOR_EACH_SLOT(COLL_CRUX_SLOT_FROM)
        if (slots > 0) {
            int w = snprintf(text + used, sizeof(text) - used, "%s%s %d (priority %d)",
                             used > 0 ? ", " : "", offers[i].name, slots, offers[i].priority);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    const char *name = comm->c_name[0] != '\0' ? comm->c_name : "(unnamed)";
    if (OMPI_COMM_IS_INTER(comm)) {
        COLL_CRUX_VERBOSE(2, "intercommunicator %s of %d+%d processes: slots filled from %s", name,
                          ompi_comm_size(comm), ompi_comm_remote_size(comm),
                          used > 0 ? text : "nothing");
    } else {
        COLL_CRUX_VERBOSE(2, "communicator %s of %d processes: slots filled from %s", name,
                          ompi_comm_size(comm), used > 0 ? text : "nothing");
    }
}

/* One round: the modules of this round's components (the named ones, or
 * the spares) that take the communicator, enabled lowest priority first as
 * the framework enables them, each into the slots 'own' marks; among equal
 * priorities the one named first comes last, so it wins.  The modules go to
 * 'offers' (their query's reference, released by the caller); their count
 * is returned. */
static int fill_round(ompi_communicator_t *comm, const bool *own, bool spare, offer_t *offers)
{
    int n = 0;
    for (int i = 0; i < num_fills; i++) {
        if (fills[i].spare != spare) {
            continue;
        }
        const mca_coll_base_component_2_0_0_t *component = usable(&fills[i]);
        int priority = -1;
        mca_coll_base_module_t *module =
            component != NULL ? component->collm_comm_query(comm, &priority) : NULL;
        if (module == NULL) {
            continue;
        }
        if (priority < 0) { /* the framework leaves these out too */
            OBJ_RELEASE(module);
            continue;
        }
        priority = priority < 100 ? priority : 100; /* the framework's cap */
        int at = n++;
        for (; at > 0 && offers[at - 1].priority >= priority; at--) {
            offers[at] = offers[at - 1];
        }
        offers[at] = (offer_t){ module, priority, fills[i].name };
    }

    /* Enabled in that order, as the framework does: a module that wraps the
     * functions already there (coll/sync, coll/han) finds the lower ones. */
    for (int i = 0; i < n; i++) {
        mca_coll_base_module_t *module = offers[i].module;
        if (module->coll_module_enable == NULL ||
            module->coll_module_enable(module, comm) == OMPI_SUCCESS) {
            COLL_CRUX_FOR_EACH_SLOT(COLL_CRUX_FILL_SLOT)
        }
    }
    return n;
}

#define COLL_CRUX_SLOT_LEFT(slot) \
    left[COLL_CRUX_SLOT_##slot] = own[COLL_CRUX_SLOT_##slot] && comm->c_coll->coll_##slot == NULL;

int coll_crux_fill_comm(ompi_communicator_t *comm)
{
    /* Only the slots empty now: the ones other components already filled
     * are theirs (crux runs with them, not alone). */
    bool own[COLL_CRUX_NUM_SLOTS];
    COLL_CRUX_FOR_EACH_SLOT(COLL_CRUX_SLOT_EMPTY)
    bool any = false;
    for (int s = 0; s < COLL_CRUX_NUM_SLOTS; s++) {
        any = any || own[s];
    }
    if (!any) {
        return OMPI_SUCCESS;
    }
    offer_t offers[COLL_CRUX_MAX_FILL];
    int n = fill_round(comm, own, false, offers);
    /* the spares, for the slots the named components left empty */
    bool left[COLL_CRUX_NUM_SLOTS];
    COLL_CRUX_FOR_EACH_SLOT(COLL_CRUX_SLOT_LEFT)
    n += fill_round(comm, left, true, offers + n);
    if (mca_coll_crux_component.verbose >= 2) {
        log_fill(comm, offers, n, own);
    }
    for (int i = 0; i < n; i++) {
        OBJ_RELEASE(offers[i].module); /* the query's reference; the slots hold theirs */
    }
    return OMPI_SUCCESS;
}

void coll_crux_fill_close(void)
{
    for (int i = 0; i < num_fills; i++) {
        if (fills[i].dl != NULL) {
            const mca_base_component_t *base = &fills[i].component->collm_version;
            if (base->mca_close_component != NULL) {
                base->mca_close_component();
            }
            /* Not dlclose'd: modules of this component may outlive crux's
             * close in communicators the framework frees later. */
        }
        free(fills[i].name);
    }
    num_fills = 0;
}

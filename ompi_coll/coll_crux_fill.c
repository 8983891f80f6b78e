/* Stock components that fill the collectives crux does not implement when no
 * other component does (`mpirun --mca coll crux`): Open MPI refuses a
 * communicator with an empty collective slot (coll/self first: the general
 * components assume more than one process).  A named component the coll
 * framework has not loaded is loaded here from Open MPI's own component
 * directory, registered and opened as the framework would.  The components
 * of the default list follow those named, so no value of
 * coll_crux_fill_components leaves a slot empty.  Per
 * communicator, each is queried and enabled and gives the slots still
 * empty, retained once per slot as the framework's own selection does. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi_config.h"

#include "opal/mca/base/base.h"
#include "opal/util/argv.h"

#include "ompi_coll/coll_crux.h"

#define CRUX_MAX_FILL 16

typedef struct {
    char *name;
    void *dl;                                         /* loaded here, else NULL */
    const mca_coll_base_component_2_0_0_t *component; /* when loaded here */
} fill_t;

static fill_t fills[CRUX_MAX_FILL];
static int num_fills;

/* Every collective slot of a communicator (coll.h, API 2.0.0). */
/* clang-format off */
#define CRUX_FOR_EACH_SLOT(X)                                                                  \
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
        CRUX_VERBOSE(1, "cannot load %s: %s", path, dlerror());
        return -1;
    }
    mca_coll_base_component_2_0_0_t *component = dlsym(fill->dl, symbol);
    mca_base_component_t *base = component != NULL ? &component->collm_version : NULL;
    if (base == NULL ||
        (base->mca_register_component_params != NULL &&
         base->mca_register_component_params() != OMPI_SUCCESS) ||
        (base->mca_open_component != NULL && base->mca_open_component() != OMPI_SUCCESS)) {
        CRUX_VERBOSE(1, "cannot use %s (%s)", path, base == NULL ? "no component" : "open failed");
        dlclose(fill->dl);
        fill->dl = NULL;
        return -1;
    }
    fill->component = component;
    return 0;
}

/* A component name as Open MPI spells them: it becomes part of a path. */
static bool plausible_name(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= 64 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == n &&
           strcmp(name, "crux") != 0;
}

static bool known(const char *name)
{
    for (int i = 0; i < num_fills; i++) {
        if (strcmp(fills[i].name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* Take the component 'name' (already taken: true). */
static bool add(const char *name)
{
    if (known(name)) {
        return true;
    }
    if (num_fills == CRUX_MAX_FILL || !plausible_name(name)) {
        return false;
    }
    fill_t *fill = &fills[num_fills];
    fill->name = strdup(name);
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

/* The named components first, in order, then those of the default list
 * the names left out, for whatever slot the named ones leave empty (Open
 * MPI refuses a communicator with one): a junk value cannot leave a
 * communicator without collectives.  Names that cannot be used are said
 * once, naming the parameter. */
int coll_crux_fill_open(const char *names)
{
    char **list = opal_argv_split(names != NULL ? names : "", ',');
    char refused[256] = "";
    int count = opal_argv_count(list);
    for (int i = 0; i < count; i++) {
        if (!add(list[i])) {
            size_t at = strlen(refused);
            snprintf(refused + at, sizeof(refused) - at, "%s\"%.64s\"", at > 0 ? ", " : "",
                     list[i]);
        }
    }
    opal_argv_free(list);
    if (count == 0 || refused[0] != '\0') {
        char why[320];
        snprintf(why, sizeof(why), "%s%s",
                 count == 0 ? "it names no component"
                            : "not coll components of this Open MPI crux can use: ",
                 refused);
        coll_crux_say(true, "invalid-fill", names != NULL ? names : "", why, CRUX_FILL_DEFAULT);
    }
    list = opal_argv_split(CRUX_FILL_DEFAULT, ',');
    for (int i = 0; list != NULL && list[i] != NULL; i++) {
        if (!add(list[i])) {
            CRUX_VERBOSE(1, "the stock component %s cannot fill collectives", list[i]);
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
            fills[i].component = NULL; /* it refused this process; skip it */
        }
    }
    return OMPI_SUCCESS;
}

#define CRUX_FILL_SLOT(slot)                                                \
    if (comm->c_coll->coll_##slot == NULL && module->coll_##slot != NULL) { \
        comm->c_coll->coll_##slot = module->coll_##slot;                    \
        comm->c_coll->coll_##slot##_module = module;                        \
        OBJ_RETAIN(module);                                                 \
    }

int coll_crux_fill_comm(ompi_communicator_t *comm)
{
    for (int i = 0; i < num_fills; i++) {
        const mca_coll_base_component_2_0_0_t *component =
            fills[i].dl != NULL ? fills[i].component : framework_component(fills[i].name);
        int priority = 0;
        mca_coll_base_module_t *module =
            component != NULL ? component->collm_comm_query(comm, &priority) : NULL;
        if (module == NULL) {
            continue;
        }
        if (module->coll_module_enable == NULL ||
            module->coll_module_enable(module, comm) == OMPI_SUCCESS) {
            CRUX_FOR_EACH_SLOT(CRUX_FILL_SLOT)
        }
        OBJ_RELEASE(module); /* the query's reference; the slots hold theirs */
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

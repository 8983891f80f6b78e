/* This machine's topology (libcrux_topo), loaded once per process and
 * shared by what reads it: the host groups of the hierarchical algorithm
 * (coll_crux_hier.c) and the GPU paths given to the engine
 * (coll_crux_device.c). */
#include <pthread.h>
#include <stdbool.h>

#include "ompi_config.h"

#include "topo/crux_topo.h"

#include "ompi_coll/coll_crux.h"

static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;
static crux_topo_t *topo;
static bool topo_tried;

static void ignore_warning(void *arg, const char *message)
{
    COLL_CRUX_VERBOSE(1, "topology: %s", message);
}

/* This machine's topology, loaded on first use (NULL when it cannot be). */
const crux_topo_t *coll_crux_topo(void)
{
    pthread_mutex_lock(&topo_lock);
    if (!topo_tried) {
        crux_topo_options_t options;
        crux_topo_options_init(&options);
        options.warn = ignore_warning;
        char error[256];
        if (crux_topo_load(&options, &topo, error, sizeof(error)) != CRUX_OK) {
            COLL_CRUX_VERBOSE(1, "no topology (%s): one group per node", error);
            topo = NULL;
        }
        topo_tried = true;
    }
    pthread_mutex_unlock(&topo_lock);
    return topo;
}

/* Whether crux takes part in this job, decided once at the component's
 * open, and the verbosity-1 line that names the loaded file.
 *
 * Installed into Open MPI's own component directory, crux is loaded by
 * every job on the host; with its priority above coll/tuned's it would
 * take every user's MPI_Allreduce without anyone asking for it.  So crux
 * takes part only when the job asked for it: the job's coll selection (the
 * MCA parameter "coll", e.g. mpirun --mca coll crux, or crux,tuned,...)
 * names crux, or coll_crux_enable is set (an operator's
 * openmpi-mca-params.conf, a user's --mca coll_crux_enable 1).  A list of
 * exclusions ("^han") names nothing to take part and does not count. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

#include "ompi_config.h"

#include "common/crux_version.h"

#include "ompi_coll/coll_crux.h"

/* Whether the comma list 'selection' includes crux ('^': a list of
 * exclusions, which never does). */
static bool names_crux(const char *selection)
{
    if (selection == NULL || selection[0] == '^') {
        return false;
    }
    for (const char *s = selection; *s;) {
        size_t n = strcspn(s, ",");
        if (n == 4 && strncmp(s, "crux", 4) == 0) {
            return true;
        }
        s += n + (s[n] == ',');
    }
    return false;
}

bool coll_crux_opted_in(void)
{
    const mca_coll_crux_component_t *c = &mca_coll_crux_component;
    const char *selection = ompi_coll_base_framework.framework_selection;
    if (names_crux(selection)) {
        COLL_CRUX_VERBOSE(1, "taking part: the coll selection \"%s\" names crux", selection);
        return true;
    }
    if (c->enable) {
        COLL_CRUX_VERBOSE(1, "taking part: coll_crux_enable is 1");
        return true;
    }
    COLL_CRUX_VERBOSE(1,
                      "not taking part: the coll selection %s%s%s does not name crux and "
                      "coll_crux_enable is 0 (see docs/usage/install.md)",
                      selection != NULL ? "\"" : "(none)", selection != NULL ? selection : "",
                      selection != NULL ? "\"" : "");
    return false;
}

void coll_crux_say_loaded(void)
{
    Dl_info info;
    const char *path =
        dladdr((void *)&mca_coll_crux_component, &info) != 0 && info.dli_fname != NULL
            ? info.dli_fname
            : "(path unknown)";
    COLL_CRUX_VERBOSE(1, "loaded %s, crux %s", path, crux_version());
}

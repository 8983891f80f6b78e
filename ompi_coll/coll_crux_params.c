/* Range checks of the MCA parameters, once, at the component's open.  A
 * value crux refuses is said once per node through the help file
 * (naming the parameter, the value and the accepted range) and turns
 * crux's own algorithms off for the run: the communicators still get every
 * collective from the stock components (coll_crux_fill.c), so MPI_Init and
 * the job go on.  The ranges of what libcrux_coll takes are its own
 * (crux_coll_check, which also checks the staging area against the free
 * space of /dev/shm); the others are checked here. */
#include <limits.h>
#include <stdio.h>

#include "ompi_config.h"

#include "ompi_coll/coll_crux.h"

static void refuse(void *arg, const char *name, const char *value, const char *why)
{
    (void)arg;
    coll_crux_say(true, "invalid-param", name, value, why);
}

static bool int_ok(const char *name, int value, int min, int max, const char *why)
{
    if (value >= min && value <= max) {
        return true;
    }
    char text[16];
    snprintf(text, sizeof(text), "%d", value);
    refuse(NULL, name, text, why);
    return false;
}

bool coll_crux_params_valid(const mca_coll_crux_component_t *c)
{
    /* every check runs, so one run names every refused value */
    bool ok = int_ok("far_latency_ns", c->far_latency_ns, 0, INT_MAX, "must not be negative");
    ok &= int_ok("priority_poll_ms", c->priority_poll_ms, 0, INT_MAX, "must not be negative");
    ok &= int_ok("arb_max_wait_us", c->arb_max_wait_us, 0, INT_MAX, "must not be negative");
    ok &= int_ok("profile_interval_s", c->profile_interval_s, 1, INT_MAX, "must be at least 1");
    ok &= int_ok("net_setup_timeout_ms", c->net_setup_timeout_ms, 1, 3600000,
                 "must be between 1 and 3600000");
    crux_coll_config_t config = coll_crux_config();
    crux_select_sizes_t sizes = coll_crux_select_sizes();
    return crux_coll_check(&config, &sizes, c->hier_depth, c->group_size, "/dev/shm", refuse,
                           NULL) &&
           ok;
}

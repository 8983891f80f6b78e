/* The wait loops' policy (crux_idle.h). */
#include <sched.h>

#include "common/crux_cpus.h"
#include "common/crux_futex.h"
#include "common/crux_idle.h"

unsigned crux_idle_spins(unsigned local, int shared_cores)
{
    return shared_cores || local > crux_cpus_online() ? 0 : CRUX_IDLE_SPINS;
}

crux_idle_phase_t crux_idle_poll(crux_idle_t *idle, int may_sleep)
{
    idle->check |= ++idle->polls % CRUX_IDLE_CHECK_POLLS == 0;
    if (idle->polls <= idle->spins) {
        if (idle->polls > CRUX_IDLE_LOOKS) {
            crux_cpu_relax();
        }
        return CRUX_IDLE_SPIN;
    }
    if (!may_sleep || idle->polls <= idle->spins + CRUX_IDLE_YIELDS) {
        sched_yield();
        return CRUX_IDLE_YIELD;
    }
    return CRUX_IDLE_SLEEP;
}

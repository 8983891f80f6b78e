#include <unistd.h>

#include "common/crux_cpus.h"

unsigned crux_cpus_online(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

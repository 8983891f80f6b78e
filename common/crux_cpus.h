/* How many CPUs the node has online, for the libraries' waits: a wait spins
 * only when every process of the node that takes part can have a core. */
#ifndef CRUX_CPUS_H
#define CRUX_CPUS_H

unsigned crux_cpus_online(void);

#endif

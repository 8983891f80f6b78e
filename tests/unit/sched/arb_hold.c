/* For tests/mpi/priority.sh: a job of the same user stopped while it holds
 * the arbitration table's lock.  Opens the table at PATH (creating it),
 * locks its mutex, prints "held" and stops itself (SIGSTOP); the test kills
 * it.  Usage: arb_hold PATH */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "sched/crux_arb.h"
#include "sched/runtime/crux_arb_table.h"

int main(int argc, char **argv)
{
    crux_arb_t *a;
    char err[256];
    if (argc != 2 || crux_arb_open(argv[1], 0, &a, err, sizeof(err)) != CRUX_OK) {
        fprintf(stderr, "usage: arb_hold PATH (%s)\n", argc == 2 ? err : "no path");
        return 2;
    }
    pthread_mutex_lock(&a->t->lock);
    printf("held\n");
    fflush(stdout);
    raise(SIGSTOP);
    return 0;
}

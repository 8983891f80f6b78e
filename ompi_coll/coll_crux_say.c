/* Messages of the help file said once (a refused parameter, a junk fill
 * list, an unwritable profile directory): rendered from
 * help-mpi-coll-crux.txt and written to this process's stderr, for what
 * every process finds by the node's first process (local rank 0) alone.
 * Not through
 * opal_show_help: Open MPI 4.1 relays an application process's help
 * message to mpirun over PMIx, and mpirun lost those sent during MPI_Init
 * ("ORTE_ERROR_LOG: Data unpack would read past end of buffer in file
 * orte/util/show_help.c"), so the message that mattered never appeared. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ompi_config.h"

#include "opal/util/show_help.h"
#include "orte/util/proc_info.h"

#include "ompi_coll/coll_crux.h"

void coll_crux_say(bool node_once, const char *topic, ...)
{
    if (node_once && orte_process_info.my_local_rank != 0) {
        COLL_CRUX_VERBOSE(1, "%s: said by this node's first process", topic);
        return;
    }
    va_list ap;
    va_start(ap, topic);
    char *text = opal_show_help_vstring("help-mpi-coll-crux.txt", topic, true, ap);
    va_end(ap);
    if (text != NULL) {
        fputs(text, stderr);
        fflush(stderr);
        free(text);
    }
}

/* crux-topo's text report. */
#ifndef CRUX_TOPO_REPORT_H
#define CRUX_TOPO_REPORT_H

#include <stdio.h>

#include "topo/crux_topo.h"

/* What the report shows beyond the matrix and the NIC legend. */
typedef struct {
    int paths;   /* the multipath set of every GPU pair */
    int islands; /* the NVLink islands */
    int groups;  /* the host-memory groups */
} crux_topo_report_opts_t;

void crux_topo_print_report(const crux_topo_t *topo, const crux_topo_report_opts_t *opts,
                            FILE *out);

#endif

/* crux-topo's text report. */
#ifndef CRUX_TOPO_REPORT_H
#define CRUX_TOPO_REPORT_H

#include <stdio.h>

#include "topo/crux_topo.h"

void crux_topo_print_report(const crux_topo_t *topo, FILE *out);

#endif

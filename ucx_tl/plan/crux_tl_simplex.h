/* Internal to libcrux_tl: a small dense simplex for the planner's packing
 * problems. */
#ifndef CRUX_TL_SIMPLEX_H
#define CRUX_TL_SIMPLEX_H

/* Maximise sum(x) subject to A x <= b and x >= 0, where A is rows x cols
 * (row-major) and every b[i] >= 0, so x = 0 is feasible; at most 32 rows and
 * 32 columns.  Stores the optimal x and returns the optimum. */
double crux_tl_simplex_pack(unsigned rows, unsigned cols, const double *A, const double *b,
                            double *x);

#endif

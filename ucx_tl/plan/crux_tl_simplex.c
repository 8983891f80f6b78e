/* A dense simplex tableau with Bland's rule (no cycling).  The planner's
 * problems have a handful of paths and resources, so a textbook tableau is
 * both fast enough and easy to check. */
#include <math.h>
#include <string.h>

#include "ucx_tl/plan/crux_tl_simplex.h"

#define LP_MAX 32
#define LP_EPS 1e-12

double crux_tl_simplex_pack(unsigned rows, unsigned cols, const double *A, const double *b,
                            double *x)
{
    /* columns: cols structural, then rows slacks; last column: right-hand side */
    const unsigned width = cols + rows + 1;
    double t[LP_MAX][2 * LP_MAX + 1];
    double cost[2 * LP_MAX + 1]; /* reduced costs of minimising -sum(x) */
    unsigned basis[LP_MAX];

    memset(cost, 0, sizeof(double) * width);
    for (unsigned i = 0; i < rows; i++) {
        memset(t[i], 0, sizeof(double) * width);
        for (unsigned j = 0; j < cols; j++) {
            t[i][j] = A[i * cols + j];
        }
        t[i][cols + i] = 1.0;
        t[i][width - 1] = b[i];
        basis[i] = cols + i;
    }
    for (unsigned j = 0; j < cols; j++) {
        cost[j] = -1.0;
    }
    for (;;) {
        unsigned enter = width;
        for (unsigned j = 0; j + 1 < width; j++) {
            if (cost[j] < -LP_EPS) {
                enter = j;
                break;
            }
        }
        if (enter == width) {
            break;
        }
        unsigned leave = rows;
        double best = INFINITY;
        for (unsigned i = 0; i < rows; i++) {
            if (t[i][enter] > LP_EPS) {
                double ratio = t[i][width - 1] / t[i][enter];
                if (ratio < best - LP_EPS ||
                    (ratio <= best + LP_EPS && leave < rows && basis[i] < basis[leave])) {
                    best = ratio;
                    leave = i;
                }
            }
        }
        if (leave == rows) {
            break; /* unbounded: cannot happen with the upper-bound rows */
        }
        double pivot = t[leave][enter];
        for (unsigned j = 0; j < width; j++) {
            t[leave][j] /= pivot;
        }
        for (unsigned i = 0; i < rows; i++) {
            double f = t[i][enter];
            if (i != leave && f != 0.0) {
                for (unsigned j = 0; j < width; j++) {
                    t[i][j] -= f * t[leave][j];
                }
            }
        }
        double f = cost[enter];
        for (unsigned j = 0; j < width; j++) {
            cost[j] -= f * t[leave][j];
        }
        basis[leave] = enter;
    }
    double sum = 0.0;
    for (unsigned j = 0; j < cols; j++) {
        x[j] = 0.0;
    }
    for (unsigned i = 0; i < rows; i++) {
        if (basis[i] < cols) {
            x[basis[i]] = fmax(0.0, t[i][width - 1]);
        }
    }
    for (unsigned j = 0; j < cols; j++) {
        sum += x[j];
    }
    return sum;
}

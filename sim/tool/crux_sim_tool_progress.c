/* The progress bar of long runs: one stderr line redrawn at most five
 * times a second, in simulated days against the last arrival. */
#include <stdio.h>
#include <time.h>

#include "sim/tool/crux_sim_tool.h"

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void simtool_bar_update(void *arg, double now_s, double last_arrival_s, int done, int total)
{
    simtool_bar_t *bar = arg;
    double t = wall();
    if (bar->drawn && t - bar->last_draw < 0.2)
        return;
    bar->last_draw = t;
    bar->drawn = 1;
    double frac = last_arrival_s > 0 ? now_s / last_arrival_s : 1;
    if (frac > 1)
        frac = 1;
    char fill[31];
    int k = (int)(frac * 30);
    for (int i = 0; i < 30; i++)
        fill[i] = i < k ? '#' : '.';
    fill[30] = '\0';
    fprintf(stderr, "\r%-10s [%s] %3.0f%%  day %.1f  %d/%d jobs done ", bar->label, fill,
            100 * frac, now_s / 86400, done, total);
    fflush(stderr);
}

void simtool_bar_end(simtool_bar_t *bar)
{
    if (bar->drawn)
        fputc('\n', stderr);
    bar->drawn = 0;
}

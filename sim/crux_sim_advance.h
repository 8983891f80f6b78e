/* Bringing a job's state forward in time: what the event steps
 * (crux_sim_step.c), the rates (crux_sim_rates.c) and the components
 * (crux_sim_comp.c) share, inline, as it runs at every event. */
#ifndef CRUX_SIM_ADVANCE_H
#define CRUX_SIM_ADVANCE_H

#include <float.h>
#include <math.h>

#include "sim/crux_sim_internal.h"

/* The resolution of the clock near t, with a margin: times of events
 * computed along different paths (one job's own remaining time, another's
 * t - j->t) agree to within it. */
static inline double sim_clock_eps(double t)
{
    return 64 * DBL_EPSILON * (fabs(t) + 1);
}

/* d of the job's current transfer is delivered. */
static inline void sim_deliver(sim_t *s, sim_job_t *j, double d)
{
    j->comm_left -= d;
    j->units += d;
    if (s->link_check)
        for (int k = 0; k < j->dec.nlinks; k++)
            s->link_check[j->dec.links[k]] += d * j->dec.mbytes[k];
}

/* Moves the job's state dt on, to time t = j->t + dt. */
static inline void sim_advance(sim_t *s, sim_job_t *j, double dt, double t)
{
    if (!(dt > 0) || j->state != JOB_RUNNING)
        return;
    if (j->phase == PH_HOLD) {
        j->hold_left -= dt;
    } else {
        if (j->compute_left > 0) {
            j->compute_left -= dt;
            j->busy += dt;
            if (sim_bins_add(s, j->t, t, dt * j->spec->gpus, 0) != 0)
                s->failed = 1;
        }
        if (j->phase == PH_COMM && j->fixed_left > 0) {
            j->fixed_left -= dt;
        } else if (j->phase == PH_COMM && j->comm_left > 0 && j->x > 0) {
            double d = j->x * dt;
            /* what is left is rounding noise (an amount within EPS, or
             * less than the clock can resolve at t at this rate): the
             * transfer is done now.  Left as it is, a job brought up to
             * date at another job's event would keep 1e-16 of a transfer
             * and, preempted at that instant, wait through a whole higher
             * transfer for it. */
            if (j->comm_left - d <= SIM_EPS || j->comm_left - d <= j->x * sim_clock_eps(t))
                d = j->comm_left;
            sim_deliver(s, j, d);
        }
    }
    j->t = t;
}

/* Its state up to t. */
static inline void sim_job_bring(sim_t *s, sim_job_t *j, double t)
{
    sim_advance(s, j, t - j->t, t);
}

#endif

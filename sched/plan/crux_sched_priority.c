/* Priority assignment's model: two jobs on one shared link under strict
 * priority, and the correction factor k_j it yields (paper section 4.2).
 *
 * A job iterates: compute (1-overlap)*c, then communicate t seconds of
 * exclusive link time while the remaining overlap*c of compute runs; the
 * next iteration starts when both are done.  At time 0 both jobs are ready
 * to communicate, the alignment of the paper's Figures 11 and 12 (each
 * job's comm phase colliding with the other's).  The low job transmits only
 * while the high one has nothing to send. */
#include <math.h>

#include "sched/plan/crux_sched_internal.h"

double crux_sched_period(const crux_sched_timing_t *t)
{
    double hidden = t->overlap * t->compute_s;
    return (1.0 - t->overlap) * t->compute_s + (hidden > t->comm_s ? hidden : t->comm_s);
}

static int timing_ok(const crux_sched_timing_t *t)
{
    return t != NULL && t->compute_s > 0 && isfinite(t->compute_s) && t->comm_s >= 0 &&
           isfinite(t->comm_s) && t->overlap >= 0 && t->overlap <= 1 && t->work >= 0 &&
           isfinite(t->work);
}

typedef struct {
    const crux_sched_timing_t *t;
    int communicating; /* in the comm phase (else: the compute before it) */
    double compute_left, comm_left;
} job_state_t;

static void start_comm(job_state_t *j)
{
    j->communicating = 1;
    j->compute_left = j->t->overlap * j->t->compute_s;
    j->comm_left = j->t->comm_s;
}

/* Iterations that are over start the next; a zero-length pre-comm compute
 * goes straight to the comm phase.  tiny absorbs rounding. */
static void advance_phase(job_state_t *j, double tiny)
{
    if (!j->communicating && j->compute_left <= tiny) {
        start_comm(j);
    } else if (j->communicating && j->compute_left <= tiny && j->comm_left <= tiny) {
        j->communicating = 0;
        j->compute_left = (1.0 - j->t->overlap) * j->t->compute_s;
        if (j->compute_left <= tiny)
            start_comm(j);
    }
}

/* Bounds the work of pathological inputs (iteration times 1e6 apart). */
#define CONTEND_MAX_STEPS 1000000

crux_status_t crux_sched_contend(const crux_sched_timing_t *high, const crux_sched_timing_t *low,
                                 double horizon, crux_sched_contend_t *out)
{
    if (!timing_ok(high) || !timing_ok(low) || !(horizon > 0) || !isfinite(horizon) || !out)
        return CRUX_ERR_INVALID;
    job_state_t j[2] = { { high, 0, 0, 0 }, { low, 0, 0, 0 } };
    start_comm(&j[0]);
    start_comm(&j[1]);
    *out = (crux_sched_contend_t){ { 0, 0 }, { 0, 0 }, { 0, 0 } };
    double now = 0.0, tiny = horizon * 1e-12;
    for (int step = 0; step < CONTEND_MAX_STEPS && now < horizon - tiny; step++) {
        for (int i = 0; i < 2; i++) {
            advance_phase(&j[i], tiny);
            advance_phase(&j[i], tiny); /* with t = 0 a job passes two at once */
        }
        int sender = -1;
        for (int i = 0; i < 2 && sender < 0; i++)
            if (j[i].communicating && j[i].comm_left > tiny)
                sender = i;
        double dt = horizon - now;
        for (int i = 0; i < 2; i++)
            if (j[i].compute_left > tiny && j[i].compute_left < dt)
                dt = j[i].compute_left;
        if (sender >= 0 && j[sender].comm_left < dt)
            dt = j[sender].comm_left;
        for (int i = 0; i < 2; i++)
            if (j[i].compute_left > tiny) {
                j[i].compute_left -= dt;
                out->busy_s[i] += dt;
            }
        if (sender >= 0) {
            j[sender].comm_left -= dt;
            out->sent_s[sender] += dt;
        }
        now += dt;
    }
    for (int i = 0; i < 2; i++)
        out->work[i] = out->busy_s[i] * j[i].t->work / j[i].t->compute_s;
    return CRUX_OK;
}

double crux_sched_correction(const crux_sched_timing_t *ref, const crux_sched_timing_t *job,
                             double horizon_iters)
{
    if (!timing_ok(ref) || !timing_ok(job) || !(horizon_iters > 0) || ref->comm_s <= 0 ||
        job->comm_s <= 0 || !(job->work > 0))
        return 1.0;
    double pr = crux_sched_period(ref), pj = crux_sched_period(job);
    double horizon = horizon_iters * (pr > pj ? pr : pj);
    crux_sched_contend_t ref_first, job_first;
    if (crux_sched_contend(ref, job, horizon, &ref_first) != CRUX_OK ||
        crux_sched_contend(job, ref, horizon, &job_first) != CRUX_OK)
        return 1.0;
    /* computation each gains by being the one prioritized */
    double gain_ref = ref_first.work[0] - job_first.work[1];
    double gain_job = job_first.work[0] - ref_first.work[1];
    /* A gain under 0.1% of what both compute when prioritized counts as
     * that floor: a job whose communication hides behind its computation
     * gains ~0, and the floor keeps the ratio finite while still ordering
     * the others by how much they gain. */
    double floor = 1e-3 * (ref_first.work[0] + job_first.work[0]);
    if (gain_ref <= floor && gain_job <= floor)
        return 1.0; /* neither slows the other down */
    double ratio = (gain_job > floor ? gain_job : floor) / (gain_ref > floor ? gain_ref : floor);
    double i_ref = ref->work / ref->comm_s, i_job = job->work / job->comm_s;
    return ratio * i_ref / i_job;
}

/* DSCP code points in increasing order that leave CS6 (48) and CS7 (56) to
 * network control (routing protocols; RoCE's congestion notification
 * packets are commonly sent on 48 too).  Up to 7 levels: CS0 (best effort),
 * AF11, AF21, AF31, AF41, CS5, EF, one per priority 0..5 of a switch's
 * usual DSCP / 8 map below the top two.  8 levels insert CS4 under AF41.
 * More than 8: 3 l, 0..45. */
static const int dscp_up_to_7[] = { 0, 10, 18, 26, 34, 40, 46 };
static const int dscp_8[] = { 0, 10, 18, 26, 32, 34, 40, 46 };

void crux_sched_nettable_default(crux_sched_nettable_t *t, int levels)
{
    if (levels < 1)
        levels = 1;
    if (levels > CRUX_SCHED_MAX_LEVELS)
        levels = CRUX_SCHED_MAX_LEVELS;
    t->levels = levels;
    for (int l = 0; l < CRUX_SCHED_MAX_LEVELS; l++) {
        t->cls[l].sl = l;
        if (levels <= 7 && l < 7)
            t->cls[l].dscp = dscp_up_to_7[l];
        else if (levels == 8 && l < 8)
            t->cls[l].dscp = dscp_8[l];
        else
            t->cls[l].dscp = 3 * l;
    }
}

crux_status_t crux_sched_nettable_check(const crux_sched_nettable_t *t)
{
    if (t->levels < 1 || t->levels > CRUX_SCHED_MAX_LEVELS)
        return CRUX_ERR_INVALID;
    for (int l = 0; l < t->levels; l++)
        if (t->cls[l].sl < 0 || t->cls[l].sl > 15 || t->cls[l].dscp < 0 || t->cls[l].dscp > 63)
            return CRUX_ERR_INVALID;
    return CRUX_OK;
}

/* What the planning steps (crux_sched_steps.c, crux_sched_select.c,
 * crux_sched_netprio.c) and the plan itself share: a planned job's traffic
 * and timing, and freeing the contention DAG. */
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_plan.h"

void plan_dag_free(sched_dag_t *dag)
{
    free(dag->out_off);
    free(dag->out_to);
    free(dag->in_off);
    free(dag->in_from);
    free(dag->in_w);
    memset(dag, 0, sizeof(*dag));
}

int plan_has_network(const plan_job_t *j)
{
    return j->nflows > 0;
}

crux_sched_timing_t plan_timing(const plan_job_t *j)
{
    return (crux_sched_timing_t){ j->work, j->compute_s, j->comm_s, j->overlap };
}

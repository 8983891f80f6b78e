/* The plan object, shared by crux_sched_plan.c (jobs, flows, results), crux_sched_select.c (path
 * selection) and crux_sched_steps.c (priorities, compression).  Not installed. */
#ifndef CRUX_SCHED_PLAN_H
#define CRUX_SCHED_PLAN_H

#include "sched/plan/crux_sched_internal.h"

typedef struct {
    char *id;
    int nplace;
    int *host;      /* ring order */
    uint64_t *gpus; /* resolved masks, never 0 */
    int gpus_total;
    double compute_s, work, overlap, bytes;
    int flow_off, nflows; /* into plan->flows */
    size_t link_off;      /* into plan->jl_*: M_{j,e} */
    int nlinks;
    double t_edge; /* t from the NICs alone, before paths */
    double comm_s, period, intensity, correction, priority;
    int level;
    double bottleneck;
} plan_job_t;

typedef struct {
    int src, dst; /* global NIC ids */
    double bytes;
    size_t path_off; /* into plan->path_links */
    int path_len;
    uint64_t index, count;
} plan_flow_t;

enum { PLAN_ADDED, PLAN_PATHS, PLAN_PRIORITIES, PLAN_LEVELS };

struct crux_sched_plan {
    const crux_sched_cluster_t *c;
    int njobs, cap_jobs;
    plan_job_t *jobs;
    int nflows, cap_flows;
    plan_flow_t *flows;
    int *path_links;
    size_t npath, cap_path;
    int *jl_link;
    double *jl_bytes;
    size_t njl, cap_jl;
    double *load; /* per link: bytes/s of all flows on it */
    int stage;
    int reference;
    sched_dag_t dag; /* the contention DAG of the last compression */
    double cut, cut_total;
};

int plan_has_network(const plan_job_t *j);
crux_sched_timing_t plan_timing(const plan_job_t *j);
void plan_dag_free(sched_dag_t *dag);

#endif

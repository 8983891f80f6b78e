/* libcrux_sim: a trace-driven, event-driven, flow-level simulator of a GPU
 * cluster shared by training jobs, to measure communication schedulers
 * (Crux and the baselines of the Crux paper) on the same workload and
 * topology.  This header is the whole API; the cluster comes from
 * libcrux_sched (crux_sched.h).
 *
 * Jobs.  A job arrives, waits until GPUs are free (first fit in arrival
 * order), is placed by a placement policy (or where the workload says),
 * runs a number of iterations or a duration, and leaves.  An iteration is
 * the model of the Crux paper: compute (1-overlap)*c, then communicate
 * while the remaining overlap*c of compute runs; it ends when both are
 * done.  Communication is a ring Allreduce of the gradient bytes over the
 * job's hosts (the flows of libcrux_sched): a fixed part (alpha per ring
 * step, and the intra-host transfer of single-host jobs) and a transfer
 * over the network at the rate the network gives it.
 *
 * Network.  Flow level: a job's flows form a ring, so they progress
 * together at one rate x_j (the fraction of its iteration's traffic per
 * second); on link e the job uses x_j * M_{j,e}.  Between priority levels
 * bandwidth goes strictly to the higher level; within a level it is shared
 * max-min fairly between flows (water-filling, every flow of a job counts).
 *
 * Policies decide paths, levels and (CASSINI) time shifts, and run again on
 * every arrival and departure.  Utilisation is computation done over
 * computation possible: GPU-busy seconds over the GPU-seconds held by
 * running jobs (and, separately, over all of the cluster's GPUs). */
#ifndef CRUX_SIM_H
#define CRUX_SIM_H

#include <stdint.h>
#include <stdio.h>

#include "sched/crux_sched.h"

/* ------------------------------------------------------------------ */
/* Policies and placement                                              */
/* ------------------------------------------------------------------ */

typedef enum {
    CRUX_SIM_NONE,       /* ECMP paths, one level: fair sharing */
    CRUX_SIM_SINCRONIA,  /* BSSI order; top job of each group high, rest low */
    CRUX_SIM_TACCL,      /* least congested paths in arrival order; longer
                                    distance (more hops) on a higher level */
    CRUX_SIM_CASSINI,    /* ECMP, one level; time-shifts jobs sharing links */
    CRUX_SIM_CRUX_PA,    /* ECMP paths, Crux priorities, levels by rank */
    CRUX_SIM_CRUX_PS_PA, /* Crux paths and priorities, levels by rank */
    CRUX_SIM_CRUX_FULL,  /* Crux paths, priorities that see the network
                                    (crux_sched_plan_network_priorities),
                                    compression (Alg. 1), levels merged where
                                    sharing loses less (..._merge_levels) */
    CRUX_SIM_FIXED,      /* ECMP paths, each job's level from the workload */
    /* the ablation */
    CRUX_SIM_CRUX_PS,         /* Crux paths, one level */
    CRUX_SIM_CRUX_PA_NET,     /* ECMP, network priorities, levels by rank */
    CRUX_SIM_CRUX_PS_PA_NET,  /* Crux paths, network priorities, by rank */
    CRUX_SIM_CRUX_FULL_PAPER, /* the paper's: Crux paths, P = k I, Alg. 1 */
    CRUX_SIM_POLICIES
} crux_sim_policy_t;

const char *crux_sim_policy_name(crux_sim_policy_t policy);
int crux_sim_policy_from_name(const char *name); /* -1 when unknown */

typedef enum {
    CRUX_SIM_PLACE_PACKED, /* fewest ToRs; best-fit host for small jobs */
    CRUX_SIM_PLACE_RANDOM, /* free hosts at random */
    CRUX_SIM_PLACE_SPREAD, /* one host per ToR in turn; emptiest host */
    /* the first free GPUs in rack order (ToR by ToR): the holes that
     * arrivals and departures leave, as a batch scheduler fills them */
    CRUX_SIM_PLACE_FIRST_FIT,
    CRUX_SIM_PLACEMENTS
} crux_sim_placement_t;

const char *crux_sim_placement_name(crux_sim_placement_t placement);
int crux_sim_placement_from_name(const char *name); /* -1 when unknown */

/* ------------------------------------------------------------------ */
/* Workloads                                                           */
/* ------------------------------------------------------------------ */

typedef struct {
    const char *id;    /* a token: no blanks, no ',' or '#' */
    const char *model; /* informational; may be NULL */
    double arrival_s;  /* >= 0 */
    int gpus;
    double compute_s;  /* compute time of one iteration, > 0 */
    double overlap;    /* 0..1 */
    double bytes;      /* gradient bytes Allreduced per iteration */
    double work;       /* W per iteration; <= 0: gpus * compute_s */
    long iterations;   /* > 0: leaves after them ... */
    double duration_s; /* ... else after this long running (> 0) */
    int level;         /* used by CRUX_SIM_FIXED only */
    /* Where it runs, in ring order (GPU masks as in crux_sched_place_t);
     * NULL: the placement policy decides when it starts.  A policy places
     * up to one host's GPUs on one host, more on whole hosts. */
    const crux_sched_place_t *placement;
    int nplacement;
} crux_sim_job_t;

typedef struct crux_sim_workload crux_sim_workload_t;

crux_sim_workload_t *crux_sim_workload_new(void);
void crux_sim_workload_free(crux_sim_workload_t *w);
/* Checks the job against the cluster (err says why not) and copies it. */
crux_status_t crux_sim_workload_add(crux_sim_workload_t *w, const crux_sched_cluster_t *cluster,
                                    const crux_sim_job_t *job, char *err, size_t errlen);
int crux_sim_workload_jobs(const crux_sim_workload_t *w);
/* The pointers stay valid while the workload lives. */
crux_status_t crux_sim_workload_job(const crux_sim_workload_t *w, int index, crux_sim_job_t *out);

/* The CSV replay format (docs/usage/crux-sim-files.md): a header naming the columns, then
 * one job a line; '#' comments and blank lines are skipped.  On a bad file
 * err is "PATH:LINE: why" and the status CRUX_ERR_INVALID (CRUX_ERR_IO when
 * it cannot be read). */
crux_status_t crux_sim_workload_read(crux_sim_workload_t *w, const crux_sched_cluster_t *cluster,
                                     const char *path, char *err, size_t errlen);
crux_status_t crux_sim_workload_write(const crux_sim_workload_t *w,
                                      const crux_sched_cluster_t *cluster, FILE *out);
/* A placement in the CSV format ("h0;h1:0-3"); the length it needs. */
int crux_sim_placement_format(const crux_sched_cluster_t *cluster,
                              const crux_sched_place_t *placement, int n, char *buf, size_t len);

/* The generator draws jobs from crux_sched_models(), the model mix that
 * crux-sched gen-jobs uses too. */
typedef struct {
    int jobs;            /* (5000) */
    double span_s;       /* arrivals uniform in [0, span) (14 days) */
    double load;         /* offered GPU load, sets the durations (0.85) */
    double sigma;        /* log-normal spread of durations (1.2) */
    double min_s, max_s; /* duration bounds (300 s, 7 days) */
    uint64_t seed;       /* (1) */
} crux_sim_gen_t;
void crux_sim_gen_defaults(crux_sim_gen_t *gen);
/* Appends gen->jobs jobs drawn from the model mix, without placements:
 * arrival times of a Poisson process conditioned on the count, durations
 * log-normal with the mean that offers `load` of the cluster's GPUs,
 * turned into iterations (duration / compute). */
crux_status_t crux_sim_generate(const crux_sim_gen_t *gen, const crux_sched_cluster_t *cluster,
                                crux_sim_workload_t *w, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Running                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
    crux_sim_policy_t policy;       /* (CRUX_SIM_CRUX_FULL) */
    crux_sim_placement_t placement; /* (CRUX_SIM_PLACE_PACKED) */
    int levels;                     /* priority levels K (8) */
    int orders;                     /* Algorithm 1's random orders (10) */
    uint64_t seed;                  /* placement and planning (1) */
    double alpha_s;                 /* latency per ring step (5e-6) */
    double intra_gbps;              /* GPU-to-GPU inside a host (2400: 300 GB/s) */
    double bin_s;                   /* utilisation over time, bin width (600) */
    double until_s;                 /* stop then (<= 0: when every job has left) */
    int fast_forward;               /* skip steady periods analytically (1) */
    int check;                      /* verify invariants as it runs, slower (0) */
    /* Called now and then (about every 2^14 events) with the simulated
     * time, the last arrival and the jobs done; may be NULL. */
    void (*progress)(void *arg, double now_s, double last_arrival_s, int done, int total);
    void *progress_arg;
} crux_sim_config_t;
void crux_sim_config_defaults(crux_sim_config_t *cfg);

typedef struct crux_sim_result crux_sim_result_t;

/* Runs the workload on the cluster.  CRUX_ERR_INVALID with err set for a
 * bad configuration or a job that can never fit; with cfg->check, also
 * when an invariant breaks (err says which). */
crux_status_t crux_sim_run(const crux_sched_cluster_t *cluster, const crux_sim_workload_t *w,
                           const crux_sim_config_t *cfg, crux_sim_result_t **out, char *err,
                           size_t errlen);
void crux_sim_result_free(crux_sim_result_t *r);

typedef struct {
    double end_s; /* when the last job left, or until_s */
    int jobs, jobs_done;
    double busy_gpu_s;          /* computation done, GPU-seconds */
    double held_gpu_s;          /* GPU-seconds held by running jobs */
    double cluster_gpu_s;       /* all GPUs x end_s */
    double utilization;         /* busy / held */
    double cluster_utilization; /* busy / cluster */
    double work;                /* sum of W per iteration x iterations done */
    double bytes_sent;          /* into the network, by the comm phases begun */
    double bytes_delivered;     /* integral of the rates, all jobs */
    double bytes_in_flight;     /* of comm phases not finished at the end */
    uint64_t events;            /* simulated state changes */
    uint64_t replans;           /* policy runs (arrivals and departures) */
    double iterations;          /* done, all jobs */
    double iterations_skipped;  /* of those, advanced analytically */
    uint64_t freezes_exact;     /* components skipped ahead on a recurring state */
    uint64_t freezes_averaged;  /* ... on a window's average (drifting jobs) */
    double wall_s;              /* time the run took */
    double cpu_s;               /* processor time it took (the machine may be shared) */
} crux_sim_summary_t;
void crux_sim_summary(const crux_sim_result_t *r, crux_sim_summary_t *out);

typedef struct {
    const char *id, *model;
    int gpus, hosts;
    double arrival_s, start_s;           /* start < 0: never started */
    double end_s;                        /* < 0: still running at the end */
    double iterations;                   /* completed */
    double busy_s;                       /* GPU-busy seconds per GPU */
    double alone_period_s;               /* iteration time alone on its placement */
    double jct_s;                        /* end - arrival (-1 when not done) */
    double slowdown;                     /* run time over iterations x alone period */
    int level;                           /* at its last replan */
    int shared;                          /* ever contended with another job */
    const crux_sched_place_t *placement; /* where it ran (NULL: never started) */
    int nplacement;
} crux_sim_job_result_t;
/* In workload order; id and model point into the workload: valid while it
 * lives. */
int crux_sim_result_jobs(const crux_sim_result_t *r);
crux_status_t crux_sim_result_job(const crux_sim_result_t *r, int index,
                                  crux_sim_job_result_t *out);

typedef struct {
    double start_s, end_s;
    double busy_gpu_s, held_gpu_s;
} crux_sim_bin_t;
int crux_sim_result_bins(const crux_sim_result_t *r);
crux_status_t crux_sim_result_bin(const crux_sim_result_t *r, int index, crux_sim_bin_t *out);

/* Bytes each link of the cluster carried (index = link id). */
double crux_sim_result_link_bytes(const crux_sim_result_t *r, int link);

/* The policy's decision for the workload's jobs as if all ran at once on
 * their given placements (every job needs one): each job's level, or -1
 * for a job without network traffic.  For tests and inspection. */
crux_status_t crux_sim_decide(const crux_sched_cluster_t *cluster, const crux_sim_workload_t *w,
                              const crux_sim_config_t *cfg, int *level_out, char *err,
                              size_t errlen);

#endif

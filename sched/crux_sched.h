/* libcrux_sched: the Crux inter-job communication scheduler (SIGCOMM 2024)
 * over a model of a GPU cluster and its jobs.  This header is the whole API.
 *
 * Model.  A cluster has hosts (GPUs and NICs), switches in layers and
 * directed links with a bandwidth (bytes/s); a full-duplex cable is two
 * links.  Every NIC is a node of the network graph: NIC `n` of a host serves
 * GPUs n*gpus_per_nic .. (n+1)*gpus_per_nic-1 and has one or more ports, each
 * cabled to a switch (two ports on two ToRs make a dual-homed host).  The
 * candidate (ECMP) paths between two NICs are all shortest paths; they are
 * numbered 0..count-1 in a canonical order (at every hop, next links by
 * ascending link id), so a path index names one path.
 *
 * A job has a placement (GPUs on hosts), a computation per iteration W (any
 * unit, the same for all jobs; by default GPU-seconds), a compute time per
 * iteration, an overlap ratio (the fraction of the compute that its
 * communication can hide behind) and its per-iteration traffic: a ring
 * Allreduce of B bytes over its hosts, or explicit flows.  Each flow takes
 * one candidate path; M_{j,e} is what job j sends over link e per iteration.
 *
 * Planning (crux_sched_plan_run, or its three steps): path selection, GPU
 * intensity I_j = W_j / t_j with t_j = max_e M_{j,e}/B_e, priority
 * P_j = k_j I_j, and compression of the priorities to a few levels
 * (Algorithm 1: random BFS topological orders of the contention DAG, each
 * cut optimally by dynamic programming).  Level L-1 is the highest.
 *
 * Objects are not thread-safe; a sealed cluster may be read by several
 * threads and plans at once. */
#ifndef CRUX_SCHED_H
#define CRUX_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "common/crux_status.h"

#define CRUX_SCHED_MAX_LEVELS 16 /* IB has 16 service levels */
#define CRUX_SCHED_MAX_PORTS  4  /* switch ports of one NIC */
#define CRUX_SCHED_MAX_GPUS   64 /* GPUs of one host (a 64-bit mask) */
#define CRUX_SCHED_MAX_SWITCHES \
    4096 /* switches of a cluster: sealing keeps a ToR x switch
                                        distance table, quadratic in them */

/* Bounds on what a cluster or a job may say, so that every derived number
 * (t_j, I_j, priorities, cut weights, utilisation) stays finite. */
#define CRUX_SCHED_MAX_ID      255  /* bytes of a job id or a name */
#define CRUX_SCHED_MIN_SECONDS 1e-9 /* compute_s of one iteration */
#define CRUX_SCHED_MAX_SECONDS 1e6
#define CRUX_SCHED_MAX_WORK    1e30 /* W per iteration */
#define CRUX_SCHED_MAX_BYTES   1e18 /* per iteration, of a flow or an Allreduce */
#define CRUX_SCHED_MIN_BW      1.0  /* bytes/s of a link */
#define CRUX_SCHED_MAX_BW      1e15

/* ------------------------------------------------------------------ */
/* Cluster                                                             */
/* ------------------------------------------------------------------ */

typedef struct crux_sched_cluster crux_sched_cluster_t;

crux_sched_cluster_t *crux_sched_cluster_new(void);
void crux_sched_cluster_free(crux_sched_cluster_t *cluster);

/* Build a cluster by hand.  Names are unique among hosts and among
 * switches.  Bandwidths are in bytes per second.  Nothing can be added once
 * the cluster is sealed; only a sealed cluster can be planned on. */
crux_status_t crux_sched_cluster_add_host(crux_sched_cluster_t *cluster, const char *name, int gpus,
                                          int nics, int *host_out);
crux_status_t crux_sched_cluster_add_switch(crux_sched_cluster_t *cluster, const char *name,
                                            int layer, int *switch_out);
/* A full-duplex cable from a port of NIC `nic` of `host` to a switch. */
crux_status_t crux_sched_cluster_link_nic(crux_sched_cluster_t *cluster, int host, int nic, int sw,
                                          double bytes_per_s);
/* `count` parallel full-duplex cables between two switches. */
crux_status_t crux_sched_cluster_link_switches(crux_sched_cluster_t *cluster, int sw_a, int sw_b,
                                               double bytes_per_s, int count);
/* Check (every NIC cabled, every pair of NICs connected) and index. */
crux_status_t crux_sched_cluster_seal(crux_sched_cluster_t *cluster, char *err, size_t errlen);

/* Builders (sealed clusters).  *_defaults fills the documented defaults. */
typedef struct {
    int tors, aggs, hosts_per_tor;
    int gpus_per_host, gpus_per_nic;
    int links_per_agg; /* parallel cables from each ToR to each agg */
    double nic_gbps, uplink_gbps;
} crux_sched_clos2_t;
void crux_sched_clos2_defaults(crux_sched_clos2_t *p);
crux_status_t crux_sched_build_clos2(const crux_sched_clos2_t *p, crux_sched_cluster_t **out);

/* The Lingjun three-layer Clos from its topo.csv (`ip,DSW,PSW,ASW`): a ToR
 * is the pair (PSW, ASW); every NIC has one port on its host's ToR; each ToR
 * has tor_uplinks cables to its PSW, each PSW psw_uplinks cables to each
 * DSW.  Host names are the `ip` column. */
typedef struct {
    int gpus_per_host, gpus_per_nic;
    int tor_uplinks, psw_uplinks;
    double nic_gbps, tor_uplink_gbps, psw_uplink_gbps;
} crux_sched_lingjun_t;
void crux_sched_lingjun_defaults(crux_sched_lingjun_t *p);
crux_status_t crux_sched_build_lingjun(const char *topo_csv, const crux_sched_lingjun_t *p,
                                       crux_sched_cluster_t **out, char *err, size_t errlen);

/* The paper's double-sided topology: `pods` pods, each a pair of ToRs, its
 * hosts and aggs_per_pod aggregation switches; every host is dual-homed:
 * each NIC has two ports, one on each ToR of its pod (8 links for 4 NICs).
 * Each ToR has tor_agg_links cables to every agg of its pod; agg number a of
 * every pod has agg_core_links cables to every core of plane a (the cores
 * split evenly into aggs_per_pod planes).  Defaults: 3 pods of 88 hosts,
 * 12 aggs, 32 cores (the paper's 6 ToRs, 12 aggs, 32 cores, 2,112 GPUs). */
typedef struct {
    int pods, hosts_per_pod, aggs_per_pod, cores;
    int gpus_per_host, gpus_per_nic;
    int tor_agg_links, agg_core_links;
    double nic_port_gbps, tor_agg_gbps, agg_core_gbps;
} crux_sched_double_sided_t;
void crux_sched_double_sided_defaults(crux_sched_double_sided_t *p);
crux_status_t crux_sched_build_double_sided(const crux_sched_double_sided_t *p,
                                            crux_sched_cluster_t **out);

int crux_sched_cluster_hosts(const crux_sched_cluster_t *cluster);
int crux_sched_cluster_switches(const crux_sched_cluster_t *cluster);
int crux_sched_cluster_links(const crux_sched_cluster_t *cluster);
/* A host by its name, by an alias, or by its name without the domain
 * ("n7.example.org" finds "n7"); -1 when none. */
int crux_sched_cluster_find_host(const crux_sched_cluster_t *cluster, const char *name);
/* Another name for `host` (e.g. the batch system's node name); refused
 * when the name is empty or already a host's name or alias.  Allowed after
 * sealing. */
crux_status_t crux_sched_cluster_add_alias(crux_sched_cluster_t *cluster, const char *alias,
                                           int host);
int crux_sched_cluster_find_switch(const crux_sched_cluster_t *cluster, const char *name);
/* Symmetric paths: both directions of a connection take one path, because
 * the fabric hashes them alike (Linux's L4 multipath hash, symmetric
 * hashing on switches) and the jobs' connections carry both directions (TCP).
 * Then a job's flow from NIC b to NIC a takes the reverse of the path its
 * flow from a to b took, in every path selection mode.  Off by default;
 * allowed after sealing. */
void crux_sched_cluster_set_symmetric(crux_sched_cluster_t *cluster, int on);
int crux_sched_cluster_symmetric(const crux_sched_cluster_t *cluster);

typedef struct {
    const char *name;
    int gpus, nics, gpus_per_nic;
} crux_sched_host_info_t;
crux_status_t crux_sched_host_info(const crux_sched_cluster_t *cluster, int host,
                                   crux_sched_host_info_t *info);

typedef struct {
    const char *name;
    int layer; /* 0: ToR (hosts attach), 1: aggregation, 2: core */
} crux_sched_switch_info_t;
crux_status_t crux_sched_switch_info(const crux_sched_cluster_t *cluster, int sw,
                                     crux_sched_switch_info_t *info);

/* One end of a link: a NIC (host, nic) or a switch (host = -1). */
typedef struct {
    int host, nic, sw;
} crux_sched_end_t;
typedef struct {
    crux_sched_end_t src, dst;
    double bytes_per_s;
} crux_sched_link_info_t;
crux_status_t crux_sched_link_info(const crux_sched_cluster_t *cluster, int link,
                                   crux_sched_link_info_t *info);
/* "host:nic>switch", "switch>switch" or "switch>host:nic", cut to len. */
const char *crux_sched_link_name(const crux_sched_cluster_t *cluster, int link, char *buf,
                                 size_t len);

/* The candidate paths between two NICs: how many (saturating at
 * UINT64_MAX), and the links of path `index` (returns the hop count, or
 * -1 when index is out of range or max is too small). */
uint64_t crux_sched_path_count(const crux_sched_cluster_t *cluster, int src_host, int src_nic,
                               int dst_host, int dst_nic);
int crux_sched_path_links(const crux_sched_cluster_t *cluster, int src_host, int src_nic,
                          int dst_host, int dst_nic, uint64_t index, int *links, int max);

/* ------------------------------------------------------------------ */
/* Jobs and plans                                                      */
/* ------------------------------------------------------------------ */

typedef struct {
    int host;
    uint64_t gpus; /* bit g: GPU g of the host; 0 = all its GPUs */
} crux_sched_place_t;

typedef struct {
    int src_host, src_nic, dst_host, dst_nic;
    double bytes; /* per iteration */
} crux_sched_flow_spec_t;

typedef struct {
    const char *id;                      /* a token: no blanks, no '#' */
    const crux_sched_place_t *placement; /* in ring order; hosts distinct */
    int nplacement;
    double compute_s; /* compute time of one iteration, > 0 */
    double work;      /* W per iteration; <= 0: GPUs * compute_s */
    double overlap;   /* 0..1 */
    /* Traffic: a ring Allreduce of allreduce_bytes over the placement (each
     * host sends 2(G-1)/G * B to the next host, G the job's GPUs, striped
     * over the NICs of its GPUs), plus any explicit flows. */
    double allreduce_bytes;
    const crux_sched_flow_spec_t *flows;
    int nflows;
} crux_sched_job_t;

typedef struct crux_sched_plan crux_sched_plan_t;

crux_sched_plan_t *crux_sched_plan_new(const crux_sched_cluster_t *cluster);
void crux_sched_plan_free(crux_sched_plan_t *plan);
/* Validates the job against the cluster (err says why not) and copies it. */
crux_status_t crux_sched_plan_add_job(crux_sched_plan_t *plan, const crux_sched_job_t *job,
                                      int *index_out, char *err, size_t errlen);
int crux_sched_plan_jobs(const crux_sched_plan_t *plan);
const crux_sched_cluster_t *crux_sched_plan_cluster(const crux_sched_plan_t *plan);

typedef enum {
    CRUX_SCHED_PATHS_CRUX,  /* most to least intensive, least congested path */
    CRUX_SCHED_PATHS_ECMP,  /* a hash of (job id, flow), as switches would */
    CRUX_SCHED_PATHS_RANDOM /* uniformly random, from the seed */
} crux_sched_path_mode_t;

typedef enum {
    CRUX_SCHED_PRIORITIES_PAPER,  /* P = k I, the paper's two-job model */
    CRUX_SCHED_PRIORITIES_NETWORK /* crux_sched_plan_network_priorities and
                                     crux_sched_plan_carry_priorities, then
                                     compression, crux_sched_plan_merge_levels and
                                     crux_sched_plan_carry_levels */
} crux_sched_priorities_t;

typedef struct {
    int levels;                         /* K, 1..CRUX_SCHED_MAX_LEVELS (8) */
    int reserve;                        /* top levels kept for other traffic (0) */
    int orders;                         /* m random topological orders (10) */
    uint64_t seed;                      /* (1) */
    double horizon_iters;               /* two-job comparison length, in iterations
                                    of the longer job (3, as the paper's figures) */
    crux_sched_path_mode_t paths;       /* (CRUX_SCHED_PATHS_CRUX) */
    crux_sched_priorities_t priorities; /* (CRUX_SCHED_PRIORITIES_PAPER) */
} crux_sched_options_t;
void crux_sched_options_defaults(crux_sched_options_t *opts);

/* The three steps, in this order; run = all three. */
crux_status_t crux_sched_plan_select_paths(crux_sched_plan_t *plan, crux_sched_path_mode_t mode,
                                           uint64_t seed);
crux_status_t crux_sched_plan_assign_priorities(crux_sched_plan_t *plan, double horizon_iters);
crux_status_t crux_sched_plan_compress(crux_sched_plan_t *plan, int levels, int reserve, int orders,
                                       uint64_t seed);
crux_status_t crux_sched_plan_run(crux_sched_plan_t *plan, const crux_sched_options_t *opts);
/* The model's two halves, as run uses them after path selection (and
 * crux-sched and crux-sim too): the jobs' order (assign_priorities, then
 * with CRUX_SCHED_PRIORITIES_NETWORK network_priorities and
 * carry_priorities), and their levels (compress, then with
 * CRUX_SCHED_PRIORITIES_NETWORK merge_levels and carry_levels). */
crux_status_t crux_sched_plan_order(crux_sched_plan_t *plan, const crux_sched_options_t *opts);
crux_status_t crux_sched_plan_levels(crux_sched_plan_t *plan, const crux_sched_options_t *opts);
/* Priorities that see the network, after crux_sched_plan_assign_priorities:
 * replaces each P_j by the job's place in an order built from the bottom,
 * each time the job that loses the least computation when every job left
 * may hold its ring on any hop they could overfill together (crux_sched_netprio.c
 * gives the model); P = k I breaks ties.  Compression then keeps that
 * order. */
crux_status_t crux_sched_plan_network_priorities(crux_sched_plan_t *plan);
/* After crux_sched_plan_compress (meant for network priorities; it works on
 * any order): the levels are a maximum, not a target.  Inside each group of
 * jobs that share links, merges a run of neighbouring levels into its top
 * one while the network model predicts that their jobs lose less
 * computation sharing their links than in strict order (crux_sched_netprio.c), the
 * merge that gains most first.  Levels keep following the priorities. */
crux_status_t crux_sched_plan_merge_levels(crux_sched_plan_t *plan);
/* What the links carry on average (crux_sched_carry.c gives the model): a link is
 * overfilled when its users' bytes per period alone, summed, exceed its
 * bandwidth; the jobs on overfilled links, by GPU intensity on them, are
 * carried while their traffic fits with that of the jobs carried before.
 * carry_priorities (after the priorities): every carried job above every
 * other, the others by that intensity.  carry_levels (after compression,
 * `levels` as compression got them, less the reserve): the carried jobs'
 * levels, in order, on the top ones, the others below, cut by intensity.
 * Both leave a plan in which every job is carried as it was. */
crux_status_t crux_sched_plan_carry_priorities(crux_sched_plan_t *plan);
crux_status_t crux_sched_plan_carry_levels(crux_sched_plan_t *plan, int levels);
/* Path selection with the jobs in a given order instead of by intensity:
 * each flow onto its least congested candidate given the load of the jobs
 * before it (baselines such as TACCL* route in arrival order).  `order`
 * lists every job of the plan exactly once (n = crux_sched_plan_jobs). */
crux_status_t crux_sched_plan_select_paths_ordered(crux_sched_plan_t *plan, const int *order,
                                                   int n);

/* Policies: what decides the paths and the levels, written once for
 * crux-sched daemon and crux-sim (the names are crux-sim's): Crux, its
 * ablation, and the baselines a priority file can carry. */
typedef enum {
    CRUX_SCHED_POLICY_NONE,            /* ECMP paths, one level: fair sharing */
    CRUX_SCHED_POLICY_TACCL,           /* least congested paths in the plan's job order
                                          (arrival order); longer distance on a higher
                                          level (crux_sched_plan_taccl_levels) */
    CRUX_SCHED_POLICY_CRUX_PA,         /* ECMP, P = k I, levels by rank */
    CRUX_SCHED_POLICY_CRUX_PS_PA,      /* Crux paths, P = k I, levels by rank */
    CRUX_SCHED_POLICY_CRUX_FULL,       /* Crux paths, network priorities, compression,
                                          merged levels */
    CRUX_SCHED_POLICY_CRUX_PS,         /* Crux paths, one level */
    CRUX_SCHED_POLICY_CRUX_PA_NET,     /* ECMP, network priorities, levels by rank */
    CRUX_SCHED_POLICY_CRUX_PS_PA_NET,  /* Crux paths, network priorities, by rank */
    CRUX_SCHED_POLICY_CRUX_FULL_PAPER, /* the paper's: Crux paths, P = k I, Alg. 1 */
    CRUX_SCHED_POLICIES
} crux_sched_policy_t;
const char *crux_sched_policy_name(crux_sched_policy_t policy);
int crux_sched_policy_from_name(const char *name); /* -1 when unknown */
/* Paths and levels of every job as the policy decides, with the options'
 * levels, reserve, orders, seed and horizon (the priority model is the
 * policy's: opts->priorities is not read). */
crux_status_t crux_sched_plan_policy(crux_sched_plan_t *plan, crux_sched_policy_t policy,
                                     const crux_sched_options_t *opts);
/* After priorities: the jobs with network traffic sorted by priority and
 * cut into `levels` groups of equal size, the first on the top level (the
 * compression a scheduler without Algorithm 1 would do); the others on the
 * top level. */
crux_status_t crux_sched_plan_rank_levels(crux_sched_plan_t *plan, int levels);
/* After paths: TACCL*'s levels, priority to traffic with the longer
 * transmission distance: a job's distance is the hop count of its longest
 * flow; the distinct distances take the levels from the top down, those
 * past the levels-th share level 0. */
crux_status_t crux_sched_plan_taccl_levels(crux_sched_plan_t *plan, int levels);

typedef struct {
    const char *id;
    int gpus, hosts, nflows, nlinks;
    double work, compute_s, overlap;
    double bytes;           /* sent into the network per iteration */
    double comm_s;          /* t_j; 0 for a job with no network traffic */
    double period_s;        /* iteration time alone */
    double intensity;       /* I_j (0 without network traffic) */
    double correction;      /* k_j */
    double priority;        /* P_j */
    int level;              /* -1 before compression */
    int reference;          /* 1 for the reference job */
    double bottleneck_util; /* utilisation of its most loaded link, all jobs */
} crux_sched_job_result_t;
crux_status_t crux_sched_plan_job(const crux_sched_plan_t *plan, int job,
                                  crux_sched_job_result_t *out);

typedef struct {
    int src_host, src_nic, dst_host, dst_nic;
    double bytes;
    uint64_t path_index, path_count;
    const int *links;
    int nlinks;
} crux_sched_flow_t;
int crux_sched_plan_flows(const crux_sched_plan_t *plan, int job);
crux_status_t crux_sched_plan_flow(const crux_sched_plan_t *plan, int job, int flow,
                                   crux_sched_flow_t *out);
/* M_{j,e}: the links job j crosses and its bytes on each, per iteration. */
int crux_sched_plan_job_links(const crux_sched_plan_t *plan, int job, const int **links,
                              const double **bytes);
/* Load of a link: the sum of the rates of all flows on it over its
 * bandwidth; a flow's rate is its bytes per iteration over the iteration
 * time its job would have with t bound by its NICs alone (independent of
 * paths, so loads depend on the path choice only). */
double crux_sched_plan_link_util(const crux_sched_plan_t *plan, int link);
/* Path selection's objective, lower is better: the sum over jobs of
 * W_j / t_j(NICs) * (utilisation of the most loaded link job j crosses). */
double crux_sched_plan_path_cost(const crux_sched_plan_t *plan);
/* Compression's objective: the weight of the contention-DAG edges whose
 * ends got different levels, and the total weight. */
void crux_sched_plan_cut(const crux_sched_plan_t *plan, double *cut, double *total);
/* CRUX_OK when no two jobs that share a link have levels in the opposite
 * order of their priorities. */
crux_status_t crux_sched_plan_check_levels(const crux_sched_plan_t *plan);
int crux_sched_plan_reference(const crux_sched_plan_t *plan); /* -1: none */

/* ------------------------------------------------------------------ */
/* The pieces, usable on their own                                     */
/* ------------------------------------------------------------------ */

/* One job's timing for the two-job comparison. */
typedef struct {
    double work;      /* W per iteration */
    double compute_s; /* > 0 */
    double comm_s;    /* t, exclusive use of the shared link */
    double overlap;   /* communication starts after (1-overlap) of the compute */
} crux_sched_timing_t;

typedef struct {
    double busy_s[2]; /* GPU-busy seconds of each job */
    double sent_s[2]; /* seconds the link carried each job */
    double work[2];   /* computation completed: busy * W / compute */
} crux_sched_contend_t;

/* Two jobs on one link with strict priority (job 0 high, preemptive), both
 * ready to communicate at time 0, for horizon_s seconds. */
crux_status_t crux_sched_contend(const crux_sched_timing_t *high, const crux_sched_timing_t *low,
                                 double horizon_s, crux_sched_contend_t *out);
/* Iteration time alone: (1-overlap) c + max(overlap c, t). */
double crux_sched_period(const crux_sched_timing_t *t);
/* k_j of `job` relative to the reference job (k = 1): the computation each
 * gains when it is the one prioritized, G_job / G_ref, times I_ref / I_job,
 * so that P_job / P_ref = G_job / G_ref.  The comparison lasts
 * horizon_iters iterations of the longer job.  Gains below 0.1% of the
 * computation both complete when prioritized count as that floor; two jobs
 * that do not slow each other get k = 1. */
double crux_sched_correction(const crux_sched_timing_t *ref, const crux_sched_timing_t *job,
                             double horizon_iters);

typedef struct {
    int from, to;
    double weight;
} crux_sched_edge_t;
/* Algorithm 1 on an explicit DAG of n nodes: each weakly connected
 * component is cut into at most `levels` levels (its first segment at the
 * top, level levels-1), a node without edges gets the top level.  Fails
 * with CRUX_ERR_INVALID on a cycle or a bad edge.  cut_out may be NULL. */
crux_status_t crux_sched_compress_dag(int n, const crux_sched_edge_t *edges, int nedges, int levels,
                                      int orders, uint64_t seed, int *level_out, double *cut_out);

/* ------------------------------------------------------------------ */
/* Generated workloads                                                 */
/* ------------------------------------------------------------------ */

/* The model mix that crux-sched gen-jobs and crux-sim gen draw jobs from
 * (plan/crux_sched_models.c documents each figure). */
typedef struct {
    const char *name;
    double share;       /* of the jobs; the shares sum to 1 */
    int gpus[6], ngpus; /* GPU counts, equally likely */
    double compute_s;   /* per iteration per GPU (+-20% per job) */
    double bytes;       /* gradients Allreduced per iteration */
    double overlap;
} crux_sched_model_t;
int crux_sched_models(const crux_sched_model_t **models);

/* ------------------------------------------------------------------ */
/* Levels to network settings                                          */
/* ------------------------------------------------------------------ */

typedef struct {
    int sl;   /* InfiniBand service level, 0..15 */
    int dscp; /* RoCE DSCP, 0..63; traffic class = dscp << 2 */
} crux_sched_netclass_t;
typedef struct {
    int levels;
    crux_sched_netclass_t cls[CRUX_SCHED_MAX_LEVELS];
} crux_sched_nettable_t;
/* Level l: sl = l; a DSCP below CS6 (48), which networks keep for their
 * own control traffic: up to 7 levels CS0, AF11, AF21, AF31, AF41, CS5,
 * EF (0, 10, 18, 26, 34, 40, 46); 8 levels 0, 10, 18, 26, 32 (CS4), 34,
 * 40, 46; more than 8, dscp = 3 l (0..45). */
void crux_sched_nettable_default(crux_sched_nettable_t *table, int levels);
crux_status_t crux_sched_nettable_check(const crux_sched_nettable_t *table);

#endif

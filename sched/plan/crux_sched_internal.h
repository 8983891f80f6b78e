/* libcrux_sched internals shared by its source files (not installed). */
#ifndef CRUX_SCHED_INTERNAL_H
#define CRUX_SCHED_INTERNAL_H

#include <stdint.h>

#include "common/crux_err.h"
#include "common/crux_rng.h"
#include "sched/crux_sched.h"

/* A link end is a NIC (global NIC id >= 0) or a switch: SCHED_SW(s) < 0. */
#define SCHED_SW(s)    (-(s)-1)
#define SCHED_IS_SW(e) ((e) < 0)
#define SCHED_SW_OF(e) (-(e)-1)

typedef struct {
    char *name;
    int gpus, nics, gpus_per_nic;
    int first_nic; /* global id of its NIC 0 */
} sched_host_t;

typedef struct {
    int host;
    int nports;
    int port_sw[CRUX_SCHED_MAX_PORTS];
    int port_up[CRUX_SCHED_MAX_PORTS];   /* link NIC -> switch */
    int port_down[CRUX_SCHED_MAX_PORTS]; /* link switch -> NIC */
    double bytes_per_s;                  /* all ports together */
} sched_nic_t;

typedef struct {
    char *name;
    int layer;
} sched_switch_t;

typedef struct {
    int src, dst; /* ends: NIC id or SCHED_SW(switch) */
    double bw;    /* bytes per second */
} sched_link_t;

typedef struct sched_names sched_names_t; /* name -> index hash */

struct crux_sched_cluster {
    int sealed;
    int nhosts, nnics, nsw, nlinks;
    int cap_hosts, cap_nics, cap_sw, cap_links;
    sched_host_t *hosts;
    sched_nic_t *nics;
    sched_switch_t *sw;
    sched_link_t *links;
    sched_names_t *host_names, *sw_names;
    /* other names of hosts (a batch system's node names, short names):
     * alias -> host index; the cluster owns the strings */
    sched_names_t *alias_names;
    char **aliases;
    int naliases, cap_aliases;
    int symmetric; /* crux_sched_cluster_set_symmetric */
    /* after seal: switch -> switch links, CSR by source switch, by link id;
     * and the same list cut into runs of consecutive links to one switch
     * (parallel cables), CSR by source switch: run r is sw_out[run_lo[r] ..
     * run_lo[r + 1]) to switch run_to[r], so a hop scan looks at each
     * neighbour's distance once */
    int *sw_out_off, *sw_out;
    int *sw_run_off, *run_lo, *run_to;
    /* ToRs (switches with NIC ports) and hop distances from every switch
     * to each ToR: dist[tor_index[t] * nsw + s] */
    int ntors;
    int *tor_index;
    int16_t *dist;
    /* Hop distances from every switch to each NIC, the one lookup path
     * finding does per hop: NICs cabled to the same set of switches share
     * a row, nic_dist[nic_group[n] * nsw + s] (sched_dist_sw_nic's value) */
    int *nic_group;
    int16_t *nic_dist; /* INT16_MAX: unreachable */
};

/* crux_sched_names.c */
sched_names_t *sched_names_new(void);
void sched_names_free(sched_names_t *names);
int sched_names_get(const sched_names_t *names, const char *name);      /* -1 */
int sched_names_put(sched_names_t *names, const char *name, int index); /* 0, or -1 dup/oom */

/* crux_sched_paths.c: shortest-path machinery between NICs, with caller scratch */
typedef struct {
    int nsw;
    uint32_t stamp;
    uint32_t *seen;  /* per switch: stamp when memo is valid */
    uint64_t *count; /* per switch: paths to the target NIC */
    double *best;    /* per switch: min bottleneck cost to target */
    int *best_link;
} sched_scratch_t;
int sched_scratch_init(sched_scratch_t *s, const crux_sched_cluster_t *c);
void sched_scratch_free(sched_scratch_t *s);
/* Hop distance from switch s to NIC n (INT16_MAX when unreachable). */
int sched_dist_sw_nic(const crux_sched_cluster_t *c, int s, int nic);
uint64_t sched_path_count(const crux_sched_cluster_t *c, sched_scratch_t *s, int src_nic,
                          int dst_nic);
/* Path number `index` of those sched_path_count() just counted on the same
 * scratch (it walks that count's memo); -1 when index is not below the
 * count or the path is longer than max. */
int sched_path_unrank(const crux_sched_cluster_t *c, sched_scratch_t *s, int src_nic, int dst_nic,
                      uint64_t index, int *links, int max);
/* The least congested path: minimises max over its links of
 * (load[l] + rate) / bw, ties to the least loaded hop then the lowest link
 * id.  Writes the links (returns the hop count), its index and the number
 * of candidates. */
int sched_path_best(const crux_sched_cluster_t *c, sched_scratch_t *s, int src_nic, int dst_nic,
                    const double *load, double rate, int *links, int max, uint64_t *index,
                    uint64_t *count);

/* crux_sched_compress.c: Algorithm 1 on a DAG given as CSR (in- and out-edges). */
typedef struct {
    int n;
    int *out_off, *out_to; /* out-edges per node */
    int *in_off, *in_from; /* in-edges per node */
    double *in_w;          /* weight of each in-edge */
} sched_dag_t;
crux_status_t sched_dag_compress(const sched_dag_t *dag, int levels, int orders, uint64_t seed,
                                 int *level_out, double *cut_out);

#define SCHED_MAX_HOPS 32

#endif

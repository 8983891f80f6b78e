/* crux-sim internals: the subcommands, the output files and the progress
 * bar.  Exit codes: 0 success, 1 runtime failure, 2 usage or input error;
 * every error is one stderr line naming the file and line at fault. */
#ifndef CRUX_SIMTOOL_H
#define CRUX_SIMTOOL_H

#include "sim/crux_sim.h"

enum { SIMTOOL_OK = 0, SIMTOOL_RUNTIME = 1, SIMTOOL_INPUT = 2 };

int simtool_run(int argc, char **argv);
int simtool_gen(int argc, char **argv);
int simtool_models(int argc, char **argv);

/* The workload: read from a CSV file, or generated (gen->jobs > 0). */
int simtool_workload(const crux_sched_cluster_t *c, const char *csv, const crux_sim_gen_t *gen,
                     crux_sim_workload_t **out);

/* Output files in dir (created if missing); 0, or -1 with a message. */
int simtool_out_dir(const char *dir);
int simtool_write_summary(const char *dir, int first, const char *policy, const char *placement,
                          const crux_sim_result_t *r);
int simtool_write_jobs(const char *dir, const char *policy, const crux_sched_cluster_t *c,
                       const crux_sim_result_t *r);
int simtool_write_util(const char *dir, const char *policy, const crux_sim_result_t *r,
                       int cluster_gpus);
int simtool_write_links(const char *dir, const char *policy, const crux_sched_cluster_t *c,
                        const crux_sim_result_t *r);

/* Mean slowdown and JCT percentiles (0..1) of the jobs done; the share of
 * the jobs started that ever contended with another. */
double simtool_mean_slowdown(const crux_sim_result_t *r);
double simtool_contended_share(const crux_sim_result_t *r);
double simtool_jct_quantile(const crux_sim_result_t *r, double q);

/* A progress bar on stderr, for crux_sim_config_t.progress. */
typedef struct {
    const char *label;
    double last_draw;
    int drawn;
} simtool_bar_t;
void simtool_bar_update(void *bar, double now_s, double last_arrival_s, int done, int total);
void simtool_bar_end(simtool_bar_t *bar);

#endif

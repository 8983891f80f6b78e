/* crux-sim's output files: summary.csv (one row per policy), and per
 * policy jobs-P.csv, util-P.csv (utilisation over time) and links-P.csv. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/crux_keyed.h"
#include "sim/tool/crux_sim_tool.h"

int simtool_out_dir(const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "%s: cannot create: %s\n", dir, strerror(errno));
        return -1;
    }
    return 0;
}

static FILE *open_out(const char *dir, const char *name, const char *policy, const char *mode,
                      char *path, size_t len)
{
    if (policy)
        snprintf(path, len, "%s/%s-%s.csv", dir, name, policy);
    else
        snprintf(path, len, "%s/%s.csv", dir, name);
    FILE *f = fopen(path, mode);
    if (f == NULL)
        fprintf(stderr, "%s: cannot write: %s\n", path, strerror(errno));
    return f;
}

static int close_out(FILE *f, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "%s: write failed\n", path);
        return -1;
    }
    return 0;
}

double simtool_jct_quantile(const crux_sim_result_t *r, double q)
{
    int n = crux_sim_result_jobs(r), k = 0;
    double *v = malloc((size_t)(n ? n : 1) * sizeof(double)), out = 0;
    if (v == NULL)
        return 0;
    for (int i = 0; i < n; i++) {
        crux_sim_job_result_t j;
        crux_sim_result_job(r, i, &j);
        if (j.jct_s >= 0)
            v[k++] = j.jct_s;
    }
    if (k > 0) {
        qsort(v, (size_t)k, sizeof(double), crux_double_asc);
        int idx = (int)(q * (k - 1) + 0.5);
        out = v[idx];
    }
    free(v);
    return out;
}

double simtool_contended_share(const crux_sim_result_t *r)
{
    int started = 0, shared = 0;
    for (int i = 0; i < crux_sim_result_jobs(r); i++) {
        crux_sim_job_result_t j;
        crux_sim_result_job(r, i, &j);
        started += j.start_s >= 0;
        shared += j.shared;
    }
    return started ? (double)shared / started : 0;
}

double simtool_mean_slowdown(const crux_sim_result_t *r)
{
    double sum = 0;
    int k = 0;
    for (int i = 0; i < crux_sim_result_jobs(r); i++) {
        crux_sim_job_result_t j;
        crux_sim_result_job(r, i, &j);
        if (j.end_s >= 0 && j.slowdown > 0) {
            sum += j.slowdown;
            k++;
        }
    }
    return k ? sum / k : 0;
}

int simtool_write_summary(const char *dir, int first, const char *policy, const char *placement,
                          const crux_sim_result_t *r)
{
    char path[4096];
    FILE *f = open_out(dir, "summary", NULL, first ? "w" : "a", path, sizeof(path));
    if (f == NULL)
        return -1;
    crux_sim_summary_t m;
    crux_sim_summary(r, &m);
    if (first)
        fputs("policy,placement,jobs,jobs_done,end_s,utilization,cluster_utilization,"
              "busy_gpu_s,held_gpu_s,mean_slowdown,jct_p50_s,jct_p90_s,jct_p99_s,bytes_sent,"
              "bytes_delivered,events,replans,iterations,iterations_skipped,wall_s,cpu_s,"
              "events_per_cpu_s,contended_jobs,freezes_exact,freezes_averaged\n",
              f);
    fprintf(f,
            "%s,%s,%d,%d,%.3f,%.6f,%.6f,%.6g,%.6g,%.6f,%.1f,%.1f,%.1f,%.6g,%.6g,%llu,%llu,"
            "%.0f,%.0f,%.3f,%.3f,%.0f,%.4f,%llu,%llu\n",
            policy, placement, m.jobs, m.jobs_done, m.end_s, m.utilization, m.cluster_utilization,
            m.busy_gpu_s, m.held_gpu_s, simtool_mean_slowdown(r), simtool_jct_quantile(r, 0.5),
            simtool_jct_quantile(r, 0.9), simtool_jct_quantile(r, 0.99), m.bytes_sent,
            m.bytes_delivered, (unsigned long long)m.events, (unsigned long long)m.replans,
            m.iterations, m.iterations_skipped, m.wall_s, m.cpu_s,
            m.cpu_s > 0 ? (double)m.events / m.cpu_s : 0, simtool_contended_share(r),
            (unsigned long long)m.freezes_exact, (unsigned long long)m.freezes_averaged);
    return close_out(f, path);
}

int simtool_write_jobs(const char *dir, const char *policy, const crux_sched_cluster_t *c,
                       const crux_sim_result_t *r)
{
    char path[4096];
    FILE *f = open_out(dir, "jobs", policy, "w", path, sizeof(path));
    if (f == NULL)
        return -1;
    fputs("id,model,gpus,hosts,arrival_s,start_s,end_s,iterations,busy_s,alone_period_s,jct_s,"
          "slowdown,level,shared,placement\n",
          f);
    size_t cap = 256;
    char *place = malloc(cap);
    for (int i = 0; i < crux_sim_result_jobs(r) && place != NULL; i++) {
        crux_sim_job_result_t j;
        crux_sim_result_job(r, i, &j);
        size_t need = (size_t)crux_sim_placement_format(c, j.placement, j.nplacement, place, cap);
        if (need >= cap) {
            char *bigger = realloc(place, need + 1);
            if (bigger == NULL)
                break;
            place = bigger;
            cap = need + 1;
            crux_sim_placement_format(c, j.placement, j.nplacement, place, cap);
        }
        fprintf(f, "%s,%s,%d,%d,%.3f,%.3f,%.3f,%.1f,%.3f,%.6f,%.3f,%.6f,%d,%d,%s\n", j.id,
                j.model ? j.model : "", j.gpus, j.hosts, j.arrival_s, j.start_s, j.end_s,
                j.iterations, j.busy_s, j.alone_period_s, j.jct_s, j.slowdown, j.level, j.shared,
                place);
    }
    if (place == NULL)
        fprintf(stderr, "%s: out of memory\n", path);
    free(place);
    return close_out(f, path);
}

int simtool_write_util(const char *dir, const char *policy, const crux_sim_result_t *r,
                       int cluster_gpus)
{
    char path[4096];
    FILE *f = open_out(dir, "util", policy, "w", path, sizeof(path));
    if (f == NULL)
        return -1;
    fputs("start_s,end_s,busy_gpu_s,held_gpu_s,utilization,cluster_utilization\n", f);
    for (int k = 0; k < crux_sim_result_bins(r); k++) {
        crux_sim_bin_t b;
        crux_sim_result_bin(r, k, &b);
        double span = (b.end_s - b.start_s) * cluster_gpus;
        fprintf(f, "%.1f,%.1f,%.6g,%.6g,%.6f,%.6f\n", b.start_s, b.end_s, b.busy_gpu_s,
                b.held_gpu_s, b.held_gpu_s > 0 ? b.busy_gpu_s / b.held_gpu_s : 0,
                span > 0 ? b.busy_gpu_s / span : 0);
    }
    return close_out(f, path);
}

int simtool_write_links(const char *dir, const char *policy, const crux_sched_cluster_t *c,
                        const crux_sim_result_t *r)
{
    char path[4096];
    FILE *f = open_out(dir, "links", policy, "w", path, sizeof(path));
    if (f == NULL)
        return -1;
    crux_sim_summary_t m;
    crux_sim_summary(r, &m);
    fputs("link,name,gbps,bytes,utilization\n", f);
    for (int l = 0; l < crux_sched_cluster_links(c); l++) {
        double bytes = crux_sim_result_link_bytes(r, l);
        if (bytes <= 0)
            continue;
        crux_sched_link_info_t li;
        char name[128];
        crux_sched_link_info(c, l, &li);
        fprintf(f, "%d,%s,%.0f,%.6g,%.6f\n", l, crux_sched_link_name(c, l, name, sizeof(name)),
                li.bytes_per_s * 8 / 1e9, bytes,
                m.end_s > 0 ? bytes / (li.bytes_per_s * m.end_s) : 0);
    }
    return close_out(f, path);
}

/* The workload generator: jobs drawn from crux_sched_models(), the model
 * mix that crux-sched gen-jobs uses too (sched/plan/crux_sched_models.c), arriving
 * over a span, with log-normal durations. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/crux_keyed.h"
#include "sim/crux_sim_internal.h"

void crux_sim_gen_defaults(crux_sim_gen_t *g)
{
    *g = (crux_sim_gen_t){ .jobs = 5000,
                           .span_s = 14 * 86400.0,
                           .load = 0.85,
                           .sigma = 1.2,
                           .min_s = 300,
                           .max_s = 7 * 86400.0,
                           .seed = 1 };
}

typedef struct {
    int host_gpus, hosts, total;
} shape_t;

/* A count a placement policy can place on this cluster. */
static int count_ok(const shape_t *s, int gpus)
{
    if (gpus > s->total)
        return 0;
    return gpus <= s->host_gpus || (gpus % s->host_gpus == 0 && gpus / s->host_gpus <= s->hosts);
}

/* Round to a step so the CSV form is short and reads back exactly. */
static double round_to(double x, double step)
{
    return round(x / step) * step;
}

crux_status_t crux_sim_generate(const crux_sim_gen_t *g, const crux_sched_cluster_t *c,
                                crux_sim_workload_t *w, char *err, size_t len)
{
    if (g == NULL || c == NULL || w == NULL || g->jobs < 1 || !(g->span_s > 0) || !(g->load > 0) ||
        !(g->sigma >= 0) || !(g->min_s > 0) || !(g->max_s >= g->min_s) || !isfinite(g->span_s) ||
        !isfinite(g->max_s)) {
        crux_errf(err, len,
                  "generator: needs jobs >= 1, span > 0, load > 0, sigma >= 0, "
                  "0 < min <= max");
        return CRUX_ERR_INVALID;
    }
    const crux_sched_model_t *models;
    const int nmodels = crux_sched_models(&models);
    shape_t sh = { 0, crux_sched_cluster_hosts(c), 0 };
    for (int h = 0; h < sh.hosts; h++) {
        crux_sched_host_info_t hi;
        crux_sched_host_info(c, h, &hi);
        if (sh.host_gpus == 0 || hi.gpus < sh.host_gpus)
            sh.host_gpus = hi.gpus;
        sh.total += hi.gpus;
    }
    /* the mean GPU count of the mix, over the counts this cluster takes */
    double mean_gpus = 0, share = 0;
    for (int m = 0; m < nmodels; m++) {
        int n = 0;
        double sum = 0;
        for (int k = 0; k < models[m].ngpus; k++)
            if (count_ok(&sh, models[m].gpus[k])) {
                sum += models[m].gpus[k];
                n++;
            }
        if (n > 0) {
            mean_gpus += models[m].share * sum / n;
            share += models[m].share;
        }
    }
    if (share <= 0) {
        crux_errf(err, len, "generator: no model fits this cluster");
        return CRUX_ERR_INVALID;
    }
    mean_gpus /= share;
    /* mean duration that offers `load` of the GPUs; log-normal mean is
     * exp(mu + sigma^2 / 2) (before the bounds cut the tails) */
    double mean_s = g->load * g->span_s * sh.total / (g->jobs * mean_gpus);
    double mu = log(mean_s) - g->sigma * g->sigma / 2;
    crux_rng_t rng;
    crux_rng_seed(&rng, g->seed);
    double *arrival = malloc((size_t)g->jobs * sizeof(double));
    if (arrival == NULL)
        return CRUX_ERR_NO_MEMORY;
    for (int i = 0; i < g->jobs; i++)
        arrival[i] = round_to(crux_rng_uniform(&rng) * g->span_s, 1e-3);
    qsort(arrival, (size_t)g->jobs, sizeof(double), crux_double_asc);
    crux_status_t st = CRUX_OK;
    for (int i = 0; i < g->jobs && st == CRUX_OK; i++) {
        const crux_sched_model_t *md;
        int gpus;
        do { /* a model, then one of its counts that fits */
            double u = crux_rng_uniform(&rng) * share, acc = 0;
            int m = 0;
            while (m < nmodels - 1 && u >= (acc += models[m].share))
                m++;
            md = &models[m];
            gpus = md->gpus[crux_rng_below(&rng, (uint64_t)md->ngpus)];
        } while (!count_ok(&sh, gpus));
        double compute = round_to(md->compute_s * (0.8 + 0.4 * crux_rng_uniform(&rng)), 1e-4);
        /* Box-Muller for the log-normal duration */
        double u1 = 1.0 - crux_rng_uniform(&rng), u2 = crux_rng_uniform(&rng);
        double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
        double dur = exp(mu + g->sigma * z);
        dur = dur < g->min_s ? g->min_s : dur > g->max_s ? g->max_s : dur;
        char id[32];
        snprintf(id, sizeof(id), "job-%05d", i + 1);
        crux_sim_job_t job = { .id = id,
                               .model = md->name,
                               .arrival_s = arrival[i],
                               .gpus = gpus,
                               .compute_s = compute,
                               .overlap = md->overlap,
                               .bytes = md->bytes,
                               .iterations = lround(dur / compute) };
        if (job.iterations < 1)
            job.iterations = 1;
        st = crux_sim_workload_add(w, c, &job, err, len);
    }
    free(arrival);
    return st;
}

/* The generator's model mix and the generator.
 *
 * Eleven models, as the Crux paper's simulation (BERT, GPT, ResNet, NMT,
 * Multi-Interests, variants, in-house CTR and NLP models).  The figures are
 * round values for A100-class GPUs, chosen from the model sizes and the
 * parallelism such jobs use, not measured here:
 *   compute_s  compute time of one iteration on one GPU (its micro-batch),
 *   bytes      the network traffic of one iteration as an Allreduce buffer:
 *              4 B per parameter for data parallelism with fp32 gradients
 *              (mixed precision keeps fp32 gradients), 2 B for fp16
 *              gradients, 1.5 x 2 B for fully sharded data parallelism
 *              (all-gather forward and backward, reduce-scatter), the fp16
 *              gradients of every tensor-parallel shard of a host for
 *              tensor parallelism inside hosts; recommendation models add
 *              their exchanged embedding gradients,
 *   overlap    how much of the compute the communication can hide behind
 *              (bucketed backward overlap, prefetching under FSDP),
 *   gpus       counts a job of that model asks for, equally likely. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched/plan/keyed.h"
#include "sim/sim_internal.h"

static const crux_sim_model_t models[] = {
    /* name            share  gpus                  n  compute bytes    overlap */
    { "resnet50", 0.16, { 1, 2, 4, 8, 16 }, 5, 0.10, 102e6, 0.6 }, /* 25.6M, fp32 */
    { "resnet152", 0.06, { 8, 16, 32 }, 3, 0.20, 241e6, 0.6 },     /* 60.2M, fp32 */
    { "bert-base", 0.10, { 4, 8, 16 }, 3, 0.08, 440e6, 0.5 },      /* 110M, fp32 */
    { "bert-large", 0.12, { 8, 16, 32 }, 3, 0.22, 1.34e9, 0.5 },   /* 335M, fp32 */
    { "nmt", 0.07, { 8, 16 }, 2, 0.18, 852e6, 0.5 },               /* transformer-big */
    { "multi-interests", 0.07, { 8, 16 }, 2, 0.12, 2.0e9, 0.3 },   /* + embeddings */
    { "ctr", 0.08, { 8, 16, 32 }, 3, 0.08, 1.2e9, 0.2 },           /* DLRM-like */
    { "nlp", 0.07, { 16, 32 }, 2, 0.50, 2.0e9, 0.4 },              /* 1B, fp16 */
    { "gpt-1.3b", 0.10, { 16, 32, 64 }, 3, 0.80, 2.6e9, 0.3 },     /* fp16 DP */
    { "llama-7b", 0.09, { 32, 64 }, 2, 1.10, 21e9, 0.7 },          /* FSDP */
    { "gpt-13b", 0.08, { 64, 128 }, 2, 4.00, 26e9, 0.2 },          /* TP 8 + DP */
};
#define NMODELS ((int)(sizeof(models) / sizeof(models[0])))

int crux_sim_models(const crux_sim_model_t **out)
{
    *out = models;
    return NMODELS;
}

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
    for (int m = 0; m < NMODELS; m++) {
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
    sim_rng_t rng = { g->seed };
    double *arrival = malloc((size_t)g->jobs * sizeof(double));
    if (arrival == NULL)
        return CRUX_ERR_NO_MEMORY;
    for (int i = 0; i < g->jobs; i++)
        arrival[i] = round_to(sim_rng_uniform(&rng) * g->span_s, 1e-3);
    qsort(arrival, (size_t)g->jobs, sizeof(double), sched_double_asc);
    crux_status_t st = CRUX_OK;
    for (int i = 0; i < g->jobs && st == CRUX_OK; i++) {
        const crux_sim_model_t *md;
        int gpus;
        do { /* a model, then one of its counts that fits */
            double u = sim_rng_uniform(&rng) * share, acc = 0;
            int m = 0;
            while (m < NMODELS - 1 && u >= (acc += models[m].share))
                m++;
            md = &models[m];
            gpus = md->gpus[sim_rng_below(&rng, (uint64_t)md->ngpus)];
        } while (!count_ok(&sh, gpus));
        double compute = round_to(md->compute_s * (0.8 + 0.4 * sim_rng_uniform(&rng)), 1e-4);
        /* Box-Muller for the log-normal duration */
        double u1 = 1.0 - sim_rng_uniform(&rng), u2 = sim_rng_uniform(&rng);
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

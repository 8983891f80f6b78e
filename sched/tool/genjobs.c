/* crux-sched gen-jobs: a reproducible job list for a cluster, so that the
 * Lingjun end-to-end run and the planning benchmark can be repeated.
 *
 * Models (share of jobs, GPUs, compute per iteration, gradient bytes per
 * iteration, overlap) are round figures for common training jobs, not
 * measurements; compute varies +-20% per job.  Placement is packed (hosts
 * in ToR order from a moving cursor, like a locality-seeking job scheduler)
 * or random (hosts chosen at random).  When the cluster is full, placement
 * starts over on an empty cluster: a long list then describes more jobs
 * than run at once (as a two-week trace does), and the planner treats
 * them all as concurrent, a stress test. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sched/plan/sched_internal.h"
#include "sched/tool/tool.h"

typedef struct {
    const char *name;
    double share;
    int gpus[4], ngpus;
    double compute_s, bytes, overlap;
} model_t;

static const model_t models[] = {
    { "resnet50", 0.35, { 1, 2, 4, 8 }, 4, 0.12, 102e6, 0.6 },  /* 25.6M fp32 params */
    { "ctr", 0.15, { 4, 8, 16 }, 3, 0.08, 400e6, 0.2 },         /* sparse-dense model */
    { "nmt", 0.10, { 8, 16 }, 2, 0.25, 420e6, 0.5 },            /* transformer-big fp16 */
    { "bert-large", 0.25, { 8, 16, 32 }, 3, 0.35, 670e6, 0.5 }, /* 335M fp16 */
    { "gpt-1.3b", 0.10, { 16, 32, 64 }, 3, 0.9, 2.6e9, 0.3 },
    { "gpt-13b", 0.05, { 64, 128 }, 2, 2.5, 3.3e9, 0.2 }, /* tensor-parallel 8 in a host */
};
#define NMODELS ((int)(sizeof(models) / sizeof(models[0])))

static const char gen_usage[] =
    "usage: crux-sched gen-jobs --cluster FILE --count N [--seed S]\n"
    "                           [--placement packed|random] [--out FILE]\n"
    "Writes a job list (JSON) of N jobs drawn from a fixed model mix.\n";

typedef struct {
    const crux_sched_cluster_t *c;
    int nhosts, gpus_per_host;
    int *order;     /* hosts in ToR order */
    uint64_t *free; /* free GPU mask per host */
    int cursor, rounds, packed;
    sched_rng_t rng;
} alloc_t;

static const alloc_t *sort_alloc;

static int by_tor(const void *a, const void *b)
{
    const crux_sched_cluster_t *c = sort_alloc->c;
    int x = *(const int *)a, y = *(const int *)b;
    int tx = c->nics[c->hosts[x].first_nic].port_sw[0];
    int ty = c->nics[c->hosts[y].first_nic].port_sw[0];
    return tx != ty ? tx - ty : x - y;
}

static void reset(alloc_t *a)
{
    for (int h = 0; h < a->nhosts; h++)
        a->free[h] = a->c->hosts[h].gpus >= 64 ? ~0ULL : (1ULL << a->c->hosts[h].gpus) - 1;
}

/* The next host (from the cursor, or at random) with at least `need`
 * free GPUs; -1 after a full pass. */
static int next_host(alloc_t *a, int need)
{
    int start = a->packed ? a->cursor : (int)sched_rng_below(&a->rng, (uint64_t)a->nhosts);
    for (int k = 0; k < a->nhosts; k++) {
        int pos = (start + k) % a->nhosts, h = a->order[pos];
        if (__builtin_popcountll(a->free[h]) >= need) {
            if (a->packed)
                a->cursor = pos;
            return h;
        }
    }
    return -1;
}

/* Place `gpus` GPUs: within one host when they fit, else on whole hosts. */
static int place(alloc_t *a, int gpus, crux_sched_place_t *out)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        int per = gpus < a->gpus_per_host ? gpus : a->gpus_per_host;
        int nh = (gpus + per - 1) / per, k = 0;
        for (; k < nh; k++) {
            int h = next_host(a, per);
            if (h < 0)
                break;
            uint64_t take = 0, f = a->free[h];
            for (int g = 0; g < per; g++) {
                uint64_t low = f & -f;
                take |= low;
                f &= f - 1;
            }
            a->free[h] &= ~take;
            out[k] = (crux_sched_place_t){ h, take };
        }
        if (k == nh)
            return nh;
        reset(a); /* full: start over on an empty cluster */
        a->rounds++;
    }
    return -1;
}

static double uniform(sched_rng_t *r)
{
    return (double)(sched_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

int tool_gen_jobs(int argc, char **argv)
{
    static const struct option opts[] = { { "cluster", required_argument, NULL, 'c' },
                                          { "count", required_argument, NULL, 'n' },
                                          { "seed", required_argument, NULL, 's' },
                                          { "placement", required_argument, NULL, 'p' },
                                          { "out", required_argument, NULL, 'o' },
                                          { "help", no_argument, NULL, 'h' },
                                          { NULL, 0, NULL, 0 } };
    const char *cluster = NULL, *out = "-";
    long count = -1;
    uint64_t seed = 1;
    int packed = 1, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end = NULL;
        switch (opt) {
        case 'c': cluster = optarg; break;
        case 'n':
            count = strtol(optarg, &end, 10);
            if (*end)
                count = -1;
            break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'p':
            if (strcmp(optarg, "packed") == 0 || strcmp(optarg, "random") == 0)
                packed = strcmp(optarg, "packed") == 0;
            else
                count = -2;
            break;
        case 'o': out = optarg; break;
        case 'h': fputs(gen_usage, stdout); return TOOL_OK;
        default: count = -2;
        }
    }
    if (cluster == NULL || count < 1 || count > 10000000 || optind != argc) {
        fprintf(stderr, "crux-sched gen-jobs: needs --cluster and --count N >= 1\n%s", gen_usage);
        return TOOL_INPUT;
    }
    crux_sched_cluster_t *c = NULL;
    int rc = tool_cluster_load(cluster, &c, NULL, 8);
    if (rc != TOOL_OK)
        return rc;
    alloc_t a = { .c = c, .nhosts = c->nhosts, .packed = packed };
    a.order = malloc((size_t)c->nhosts * sizeof(int));
    a.free = malloc((size_t)c->nhosts * sizeof(uint64_t));
    crux_sched_place_t *pl = malloc(sizeof(*pl) * (size_t)(128 + c->nhosts));
    FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
    if (!a.order || !a.free || !pl || !f) {
        fprintf(stderr, "%s:0: cannot write\n", out);
        rc = TOOL_RUNTIME;
        goto done;
    }
    a.gpus_per_host = c->hosts[0].gpus;
    for (int h = 0; h < c->nhosts; h++) {
        a.order[h] = h;
        if (c->hosts[h].gpus < a.gpus_per_host)
            a.gpus_per_host = c->hosts[h].gpus;
    }
    sort_alloc = &a;
    qsort(a.order, (size_t)c->nhosts, sizeof(int), by_tor);
    reset(&a);
    sched_rng_seed(&a.rng, seed);
    fprintf(f,
            "{\n  \"generator\": {\"cluster\": \"%s\", \"count\": %ld, \"seed\": %llu, "
            "\"placement\": \"%s\"},\n  \"jobs\": [\n",
            cluster, count, (unsigned long long)seed, packed ? "packed" : "random");
    for (long i = 0; i < count && rc == TOOL_OK; i++) {
        double u = uniform(&a.rng), acc = 0;
        int m = 0;
        while (m < NMODELS - 1 && u >= (acc += models[m].share))
            m++;
        const model_t *md = &models[m];
        int gpus = md->gpus[sched_rng_below(&a.rng, (uint64_t)md->ngpus)];
        if (gpus > a.gpus_per_host * c->nhosts)
            gpus = a.gpus_per_host * c->nhosts;
        int nh = place(&a, gpus, pl);
        if (nh < 0) {
            fprintf(stderr, "%s:0: cannot place a %d-GPU job\n", cluster, gpus);
            rc = TOOL_INPUT;
            break;
        }
        double compute = md->compute_s * (0.8 + 0.4 * uniform(&a.rng));
        fprintf(f,
                "    {\"id\": \"job-%05ld\", \"model\": \"%s\", \"compute_s\": %.4f, "
                "\"overlap\": %.2f, \"allreduce_bytes\": %.0f, \"placement\": [",
                i + 1, md->name, compute, md->overlap, md->bytes);
        for (int k = 0; k < nh; k++) {
            const sched_host_t *h = &c->hosts[pl[k].host];
            uint64_t all = h->gpus >= 64 ? ~0ULL : (1ULL << h->gpus) - 1;
            fprintf(f, "%s{\"host\": \"%s\"", k ? ", " : "", h->name);
            if (pl[k].gpus != all) {
                fputs(", \"gpus\": [", f);
                int first = 1;
                for (int g = 0; g < h->gpus; g++)
                    if (pl[k].gpus >> g & 1) {
                        fprintf(f, "%s%d", first ? "" : ", ", g);
                        first = 0;
                    }
                fputc(']', f);
            }
            fputc('}', f);
        }
        fprintf(f, "]}%s\n", i + 1 < count ? "," : "");
    }
    fputs("  ]\n}\n", f);
    if (a.rounds > 0)
        fprintf(stderr,
                "crux-sched gen-jobs: the cluster filled up %d time%s; later jobs share "
                "GPUs with earlier ones\n",
                a.rounds, a.rounds > 1 ? "s" : "");
done:
    if (f && f != stdout && fclose(f) != 0 && rc == TOOL_OK) {
        fprintf(stderr, "%s:0: cannot write\n", out);
        rc = TOOL_RUNTIME;
    }
    free(a.order);
    free(a.free);
    free(pl);
    crux_sched_cluster_free(c);
    return rc;
}

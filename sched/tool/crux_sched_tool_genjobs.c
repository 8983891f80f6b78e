/* crux-sched gen-jobs: a reproducible job list for a cluster, so that the
 * Lingjun end-to-end run and the planning benchmark can be repeated.
 *
 * Jobs are drawn from crux_sched_models(), the model mix crux-sim gen
 * uses too (sched/plan/crux_sched_models.c); compute varies +-20% per job.  Placement is packed (hosts
 * in ToR order from a moving cursor, like a locality-seeking job scheduler)
 * or random (hosts chosen at random).  When the cluster is full, placement
 * starts over on an empty cluster: a long list then describes more jobs
 * than run at once (as a two-week trace does), and the planner treats
 * them all as concurrent, a stress test. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_internal.h"
#include "sched/tool/crux_sched_tool.h"

static const char gen_usage[] =
    "usage: crux-sched gen-jobs --cluster FILE --count N [OPTIONS]\n"
    "Writes a job list (JSON) of N jobs, 1-10000000, drawn from the model mix that\n"
    "crux-sim gen uses too (crux-sim models lists it).\n"
    "  --seed S                      (1); the same seed gives the same list\n"
    "  --placement packed|random     hosts in ToR order from a moving cursor, or at\n"
    "                                random (packed)\n"
    "  --out FILE                    (stdout)\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or input error.\n";

typedef struct {
    const crux_sched_cluster_t *c;
    int nhosts, gpus_per_host;
    int *order;     /* hosts in ToR order */
    uint64_t *free; /* free GPU mask per host */
    int cursor, rounds, packed;
    crux_rng_t rng;
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
    int start = a->packed ? a->cursor : (int)crux_rng_below(&a->rng, (uint64_t)a->nhosts);
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

int tool_gen_jobs(int argc, char **argv)
{
    static const struct option opts[] = { { "cluster", required_argument, NULL, 'c' },
                                          { "count", required_argument, NULL, 'n' },
                                          { "seed", required_argument, NULL, 's' },
                                          { "placement", required_argument, NULL, 'p' },
                                          { "out", required_argument, NULL, 'o' },
                                          { "help", no_argument, NULL, 'h' },
                                          { NULL, 0, NULL, 0 } };
    static const char *const placements[] = { "packed", "random", NULL };
    const char *cluster = NULL, *out = "-";
    int count = 0, placement = 0, opt;
    uint64_t seed = 1;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        int bad = 0;
        switch (opt) {
        case 'c': cluster = optarg; break;
        case 'n': bad = tool_int_opt("gen-jobs", "--count", optarg, 1, 10000000, &count); break;
        case 's': bad = tool_seed_opt("gen-jobs", optarg, &seed); break;
        case 'p':
            bad = tool_choice_opt("gen-jobs", "--placement", optarg, placements, &placement);
            break;
        case 'o': out = optarg; break;
        case 'h': fputs(gen_usage, stdout); return TOOL_OK;
        default: return tool_bad_option("gen-jobs", opt, argv);
        }
        if (bad)
            return TOOL_INPUT;
    }
    if (optind != argc) {
        tool_usage_error("gen-jobs", "unexpected argument \"%s\"", argv[optind]);
        return TOOL_INPUT;
    }
    if (cluster == NULL || count == 0) {
        tool_usage_error("gen-jobs", "%s is missing",
                         cluster == NULL ? "--cluster FILE" : "--count N");
        return TOOL_INPUT;
    }
    int packed = placement == 0;
    crux_sched_cluster_t *c = NULL;
    const crux_sched_model_t *models;
    const int nmodels = crux_sched_models(&models);
    int rc = crux_sched_cluster_load(cluster, &c, NULL, 8);
    if (rc != TOOL_OK)
        return rc;
    alloc_t a = { .c = c, .nhosts = c->nhosts, .packed = packed };
    a.order = malloc((size_t)c->nhosts * sizeof(int));
    a.free = malloc((size_t)c->nhosts * sizeof(uint64_t));
    crux_sched_place_t *pl = malloc(sizeof(*pl) * (size_t)(128 + c->nhosts));
    FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
    if (!a.order || !a.free || !pl) {
        tool_error(cluster, 0, "out of memory");
        rc = TOOL_RUNTIME;
        goto done;
    }
    if (f == NULL) {
        tool_error(out, 0, "cannot write: %s", strerror(errno));
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
    crux_rng_seed(&a.rng, seed);
    fprintf(f,
            "{\n  \"generator\": {\"cluster\": \"%s\", \"count\": %d, \"seed\": %llu, "
            "\"placement\": \"%s\"},\n  \"jobs\": [\n",
            cluster, count, (unsigned long long)seed, packed ? "packed" : "random");
    for (int i = 0; i < count && rc == TOOL_OK; i++) {
        double u = crux_rng_uniform(&a.rng), acc = 0;
        int m = 0;
        while (m < nmodels - 1 && u >= (acc += models[m].share))
            m++;
        const crux_sched_model_t *md = &models[m];
        int gpus = md->gpus[crux_rng_below(&a.rng, (uint64_t)md->ngpus)];
        if (gpus > a.gpus_per_host * c->nhosts)
            gpus = a.gpus_per_host * c->nhosts;
        int nh = place(&a, gpus, pl);
        if (nh < 0) {
            tool_error(cluster, 0, "cannot place a %d-GPU job", gpus);
            rc = TOOL_INPUT;
            break;
        }
        double compute = md->compute_s * (0.8 + 0.4 * crux_rng_uniform(&a.rng));
        fprintf(f,
                "    {\"id\": \"job-%05d\", \"model\": \"%s\", \"compute_s\": %.4f, "
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
        tool_error(out, 0, "cannot write");
        rc = TOOL_RUNTIME;
    }
    free(a.order);
    free(a.free);
    free(pl);
    crux_sched_cluster_free(c);
    return rc;
}

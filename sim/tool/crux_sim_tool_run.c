/* crux-sim run, gen and models. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/tool/crux_sim_tool.h"
#include "sched/crux_schedtool.h"

static const char run_usage[] =
    "usage: crux-sim run --cluster FILE (--workload FILE.csv | --jobs N) [OPTIONS]\n"
    "Simulates the workload on the cluster under each policy; prints a table and,\n"
    "with --out, writes summary.csv and per policy jobs-, util- and links-POLICY.csv.\n"
    "  --cluster FILE      cluster JSON (the crux-sched format: lingjun, clos2, ...)\n"
    "  --workload FILE     job list to replay (CSV, docs/usage/crux-sim-files.md)\n"
    "  --jobs N            generate N jobs instead (with --days, --load, --gen-seed)\n"
    "  --days D            arrivals spread over D days (14)\n"
    "  --load L            offered share of the GPUs (0.85)\n"
    "  --gen-seed S        generator seed (default: --seed)\n"
    "  --policy LIST       comma-separated: none sincronia taccl cassini crux-pa\n"
    "                      crux-ps-pa crux-full crux-full-paper fixed crux-ps\n"
    "                      crux-pa-net crux-ps-pa-net; all (the first eight) or\n"
    "                      ablation (the seven crux ones); default crux-full\n"
    "  --placement P       packed, first-fit, random or spread (packed)\n"
    "  --levels K          priority levels (8)\n"
    "  --seed S            placement and planning seed (1)\n"
    "  --alpha-us A        latency per ring step, microseconds (5)\n"
    "  --bin S             utilisation-over-time bin, seconds (600)\n"
    "  --until S           stop after S simulated seconds (default: all jobs done)\n"
    "  --no-fast-forward   step through every iteration (slow; for checking)\n"
    "  --check             verify invariants while running (slower)\n"
    "  --out DIR           write the CSV files there\n"
    "  --progress          progress bar on stderr even when it is not a terminal\n"
    "  --quiet             no table on stdout\n";

static const char gen_usage[] =
    "usage: crux-sim gen --cluster FILE [--jobs N] [--days D] [--load L] [--seed S]\n"
    "                    [--out FILE]\n"
    "Writes a workload (CSV) drawn from the model mix (crux-sim models): N jobs\n"
    "(5000) arriving over D days (14), durations offering L of the GPUs (0.85).\n";

/* One line naming the option, the value and what it accepts. */
static int bad_number(const char *cmd, const char *opt, const char *arg, const char *want)
{
    fprintf(stderr, "crux-sim %s: --%s: \"%s\" is not %s (crux-sim %s --help)\n", cmd, opt, arg,
            want, cmd);
    return SIMTOOL_INPUT;
}

/* After getopt_long (optstring ":") returned '?' or ':'. */
static int bad_option(const char *cmd, int opt, char **argv)
{
    const char *arg = optind > 0 ? argv[optind - 1] : "?";
    if (opt == ':')
        fprintf(stderr, "crux-sim %s: %s needs a value (crux-sim %s --help)\n", cmd, arg, cmd);
    else
        fprintf(stderr, "crux-sim %s: unknown option \"%s\" (crux-sim %s --help)\n", cmd, arg, cmd);
    return SIMTOOL_INPUT;
}

static int num(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int whole(const char *s, long lo, long hi, long *out)
{
    double v;
    if (num(s, &v) != 0 || v != floor(v) || v < lo || v > hi)
        return -1;
    *out = (long)v;
    return 0;
}

int simtool_workload(const crux_sched_cluster_t *c, const char *csv, const crux_sim_gen_t *gen,
                     crux_sim_workload_t **out)
{
    char err[512];
    crux_sim_workload_t *w = crux_sim_workload_new();
    if (w == NULL)
        return SIMTOOL_RUNTIME;
    crux_status_t st = csv ? crux_sim_workload_read(w, c, csv, err, sizeof(err))
                           : crux_sim_generate(gen, c, w, err, sizeof(err));
    if (st != CRUX_OK) {
        fprintf(stderr, "%s%s\n", csv ? "" : "crux-sim: ", err);
        crux_sim_workload_free(w);
        /* a file that cannot be read is a runtime failure, a bad one an
         * input error */
        return st == CRUX_ERR_NO_MEMORY || st == CRUX_ERR_IO ? SIMTOOL_RUNTIME : SIMTOOL_INPUT;
    }
    *out = w;
    return SIMTOOL_OK;
}

/* "a,b,c", "all" (the comparison: every policy but fixed and the three
 * that only the ablation needs) or "ablation" (Crux's pieces alone and
 * together) into policies; the count, or -1. */
static int parse_policies(char *list, crux_sim_policy_t *out)
{
    static const crux_sim_policy_t ablation[] = {
        CRUX_SIM_CRUX_PS,    CRUX_SIM_CRUX_PA,        CRUX_SIM_CRUX_PA_NET,
        CRUX_SIM_CRUX_PS_PA, CRUX_SIM_CRUX_PS_PA_NET, CRUX_SIM_CRUX_FULL_PAPER,
        CRUX_SIM_CRUX_FULL,
    };
    int n = 0;
    if (strcmp(list, "all") == 0) {
        for (int p = 0; p < CRUX_SIM_POLICIES; p++)
            if (p != CRUX_SIM_FIXED && p != CRUX_SIM_CRUX_PS && p != CRUX_SIM_CRUX_PA_NET &&
                p != CRUX_SIM_CRUX_PS_PA_NET)
                out[n++] = (crux_sim_policy_t)p;
        return n;
    }
    if (strcmp(list, "ablation") == 0) {
        for (size_t k = 0; k < sizeof(ablation) / sizeof(ablation[0]); k++)
            out[n++] = ablation[k];
        return n;
    }
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int p = crux_sim_policy_from_name(t);
        if (p < 0 || n == CRUX_SIM_POLICIES)
            return -1;
        out[n++] = (crux_sim_policy_t)p;
    }
    return n > 0 ? n : -1;
}

typedef struct {
    const char *cluster, *workload, *out;
    crux_sim_gen_t gen;
    int gen_seed_given, progress, quiet;
    crux_sim_policy_t policies[CRUX_SIM_POLICIES];
    int npolicies;
    crux_sim_config_t cfg;
} run_opts_t;

static int parse_run(int argc, char **argv, run_opts_t *o)
{
    static const struct option opts[] = {
        { "cluster", required_argument, NULL, 'c' },  { "workload", required_argument, NULL, 'w' },
        { "jobs", required_argument, NULL, 'n' },     { "days", required_argument, NULL, 'd' },
        { "load", required_argument, NULL, 'l' },     { "gen-seed", required_argument, NULL, 'g' },
        { "policy", required_argument, NULL, 'p' },   { "placement", required_argument, NULL, 'P' },
        { "levels", required_argument, NULL, 'K' },   { "seed", required_argument, NULL, 's' },
        { "alpha-us", required_argument, NULL, 'a' }, { "bin", required_argument, NULL, 'b' },
        { "until", required_argument, NULL, 'u' },    { "no-fast-forward", no_argument, NULL, 'F' },
        { "check", no_argument, NULL, 'C' },          { "out", required_argument, NULL, 'o' },
        { "progress", no_argument, NULL, 'R' },       { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },           { NULL, 0, NULL, 0 }
    };
    memset(o, 0, sizeof(*o));
    crux_sim_gen_defaults(&o->gen);
    o->gen.jobs = 0;
    crux_sim_config_defaults(&o->cfg);
    o->policies[0] = CRUX_SIM_CRUX_FULL;
    o->npolicies = 1;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        long v;
        double d;
        int idx = -1;
        for (int k = 0; opts[k].name; k++)
            if (opts[k].val == opt)
                idx = k;
        const char *name = idx >= 0 ? opts[idx].name : "?";
        switch (opt) {
        case 'c': o->cluster = optarg; break;
        case 'w': o->workload = optarg; break;
        case 'o': o->out = optarg; break;
        case 'F': o->cfg.fast_forward = 0; break;
        case 'C': o->cfg.check = 1; break;
        case 'R': o->progress = 1; break;
        case 'q': o->quiet = 1; break;
        case 'n':
            if (whole(optarg, 1, 10000000, &v) != 0)
                return bad_number("run", name, optarg, "an integer 1-10000000");
            o->gen.jobs = (int)v;
            break;
        case 'd':
            if (num(optarg, &d) != 0 || !(d > 0))
                return bad_number("run", name, optarg, "a number of days > 0");
            o->gen.span_s = d * 86400;
            break;
        case 'l':
            if (num(optarg, &d) != 0 || !(d > 0) || d > 10)
                return bad_number("run", name, optarg, "a load in (0, 10]");
            o->gen.load = d;
            break;
        case 'g':
            if (whole(optarg, 0, 1L << 53, &v) != 0)
                return bad_number("run", name, optarg, "an integer 0-2^53");
            o->gen.seed = (uint64_t)v;
            o->gen_seed_given = 1;
            break;
        case 'p':
            if ((o->npolicies = parse_policies(optarg, o->policies)) < 0)
                return bad_number("run", name, optarg, "a list of known policies");
            break;
        case 'P': {
            int p = crux_sim_placement_from_name(optarg);
            if (p < 0)
                return bad_number("run", name, optarg, "packed, first-fit, random or spread");
            o->cfg.placement = (crux_sim_placement_t)p;
            break;
        }
        case 'K':
            if (whole(optarg, 1, CRUX_SCHED_MAX_LEVELS, &v) != 0)
                return bad_number("run", name, optarg, "an integer 1-16");
            o->cfg.levels = (int)v;
            break;
        case 's':
            if (whole(optarg, 0, 1L << 53, &v) != 0)
                return bad_number("run", name, optarg, "an integer 0-2^53");
            o->cfg.seed = (uint64_t)v;
            break;
        case 'a':
            if (num(optarg, &d) != 0 || d < 0)
                return bad_number("run", name, optarg, "a number of microseconds >= 0");
            o->cfg.alpha_s = d * 1e-6;
            break;
        case 'b':
            if (num(optarg, &d) != 0 || !(d > 0))
                return bad_number("run", name, optarg, "a number of seconds > 0");
            o->cfg.bin_s = d;
            break;
        case 'u':
            if (num(optarg, &d) != 0 || !(d > 0))
                return bad_number("run", name, optarg, "a number of seconds > 0");
            o->cfg.until_s = d;
            break;
        case 'h': fputs(run_usage, stdout); return -1;
        default: return bad_option("run", opt, argv);
        }
    }
    if (!o->gen_seed_given)
        o->gen.seed = o->cfg.seed;
    if (o->cluster == NULL || (o->workload == NULL) == (o->gen.jobs == 0) || optind != argc) {
        fprintf(stderr, "crux-sim run: needs --cluster and one of --workload and --jobs\n");
        return SIMTOOL_INPUT;
    }
    return SIMTOOL_OK;
}

static int cluster_gpus(const crux_sched_cluster_t *c)
{
    int total = 0;
    for (int h = 0; h < crux_sched_cluster_hosts(c); h++) {
        crux_sched_host_info_t hi;
        crux_sched_host_info(c, h, &hi);
        total += hi.gpus;
    }
    return total;
}

static void table_row(const char *policy, const crux_sim_result_t *r)
{
    crux_sim_summary_t m;
    crux_sim_summary(r, &m);
    printf("%-11s %8.2f%% %8.2f%% %9.3f %10.0f %10.0f %11llu %9.0f %7.1f %7.1f\n", policy,
           100 * m.utilization, 100 * m.cluster_utilization, simtool_mean_slowdown(r),
           simtool_jct_quantile(r, 0.5), simtool_jct_quantile(r, 0.99),
           (unsigned long long)m.events, m.cpu_s > 0 ? (double)m.events / m.cpu_s : 0, m.wall_s,
           m.cpu_s);
    fflush(stdout);
}

static int run_one(const run_opts_t *o, int k, const crux_sched_cluster_t *c,
                   const crux_sim_workload_t *w)
{
    crux_sim_config_t cfg = o->cfg;
    cfg.policy = o->policies[k];
    const char *name = crux_sim_policy_name(cfg.policy);
    simtool_bar_t bar = { name, 0, 0 };
    if (o->progress || isatty(STDERR_FILENO)) {
        cfg.progress = simtool_bar_update;
        cfg.progress_arg = &bar;
    }
    crux_sim_result_t *r = NULL;
    char err[512];
    crux_status_t st = crux_sim_run(c, w, &cfg, &r, err, sizeof(err));
    simtool_bar_end(&bar);
    if (st != CRUX_OK) {
        fprintf(stderr, "crux-sim: %s: %s\n", name, err);
        return st == CRUX_ERR_INVALID ? SIMTOOL_INPUT : SIMTOOL_RUNTIME;
    }
    if (!o->quiet)
        table_row(name, r);
    int rc = SIMTOOL_OK;
    if (o->out != NULL &&
        (simtool_write_summary(o->out, k == 0, name, crux_sim_placement_name(cfg.placement), r) ||
         simtool_write_jobs(o->out, name, c, r) ||
         simtool_write_util(o->out, name, r, cluster_gpus(c)) ||
         simtool_write_links(o->out, name, c, r)))
        rc = SIMTOOL_RUNTIME;
    crux_sim_result_free(r);
    return rc;
}

int simtool_run(int argc, char **argv)
{
    run_opts_t o;
    int rc = parse_run(argc, argv, &o);
    if (rc != SIMTOOL_OK)
        return rc < 0 ? SIMTOOL_OK : rc;
    crux_sched_cluster_t *c = NULL;
    if ((rc = crux_sched_cluster_load(o.cluster, &c, NULL, o.cfg.levels)) != SIMTOOL_OK)
        return rc;
    crux_sim_workload_t *w = NULL;
    rc = simtool_workload(c, o.workload, &o.gen, &w);
    if (rc == SIMTOOL_OK && o.out != NULL && simtool_out_dir(o.out) != 0)
        rc = SIMTOOL_RUNTIME;
    if (rc == SIMTOOL_OK && !o.quiet) {
        printf("crux-sim: %d jobs on %d hosts (%d GPUs), placement %s, %d levels, seed %llu\n",
               crux_sim_workload_jobs(w), crux_sched_cluster_hosts(c), cluster_gpus(c),
               crux_sim_placement_name(o.cfg.placement), o.cfg.levels,
               (unsigned long long)o.cfg.seed);
        printf("%-11s %9s %9s %9s %10s %10s %11s %9s %7s %7s\n", "policy", "GPU util", "cluster",
               "slowdown", "JCT p50 s", "JCT p99 s", "events", "ev/cpu-s", "wall s", "cpu s");
    }
    for (int k = 0; k < o.npolicies && rc == SIMTOOL_OK; k++)
        rc = run_one(&o, k, c, w);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
    return rc;
}

int simtool_gen(int argc, char **argv)
{
    static const struct option opts[] = {
        { "cluster", required_argument, NULL, 'c' }, { "jobs", required_argument, NULL, 'n' },
        { "days", required_argument, NULL, 'd' },    { "load", required_argument, NULL, 'l' },
        { "seed", required_argument, NULL, 's' },    { "out", required_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 }
    };
    const char *cluster = NULL, *out = "-";
    crux_sim_gen_t gen;
    crux_sim_gen_defaults(&gen);
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        long v;
        double d;
        switch (opt) {
        case 'c': cluster = optarg; break;
        case 'o': out = optarg; break;
        case 'n':
            if (whole(optarg, 1, 10000000, &v) != 0)
                return bad_number("gen", "jobs", optarg, "an integer 1-10000000");
            gen.jobs = (int)v;
            break;
        case 'd':
            if (num(optarg, &d) != 0 || !(d > 0))
                return bad_number("gen", "days", optarg, "a number of days > 0");
            gen.span_s = d * 86400;
            break;
        case 'l':
            if (num(optarg, &d) != 0 || !(d > 0) || d > 10)
                return bad_number("gen", "load", optarg, "a load in (0, 10]");
            gen.load = d;
            break;
        case 's':
            if (whole(optarg, 0, 1L << 53, &v) != 0)
                return bad_number("gen", "seed", optarg, "an integer 0-2^53");
            gen.seed = (uint64_t)v;
            break;
        case 'h': fputs(gen_usage, stdout); return SIMTOOL_OK;
        default: return bad_option("gen", opt, argv);
        }
    }
    if (cluster == NULL || optind != argc) {
        fprintf(stderr, "crux-sim gen: needs --cluster\n");
        return SIMTOOL_INPUT;
    }
    crux_sched_cluster_t *c = NULL;
    int rc = crux_sched_cluster_load(cluster, &c, NULL, 8);
    if (rc != SIMTOOL_OK)
        return rc;
    crux_sim_workload_t *w = NULL;
    rc = simtool_workload(c, NULL, &gen, &w);
    if (rc == SIMTOOL_OK) {
        FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
        if (f == NULL || crux_sim_workload_write(w, c, f) != CRUX_OK ||
            (f != stdout && fclose(f) != 0)) {
            fprintf(stderr, "%s: cannot write\n", out);
            rc = SIMTOOL_RUNTIME;
        }
    }
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
    return rc;
}

int simtool_models(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        puts("usage: crux-sim models\nLists the generators' model mix "
             "(sched/plan/crux_sched_models.c), the "
             "one crux-sched gen-jobs uses too.");
        return SIMTOOL_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "crux-sim models: takes no arguments\n");
        return SIMTOOL_INPUT;
    }
    const crux_sched_model_t *m;
    int n = crux_sched_models(&m);
    printf("%-16s %6s %10s %12s %8s  %s\n", "model", "share", "compute s", "bytes", "overlap",
           "GPUs");
    for (int i = 0; i < n; i++) {
        printf("%-16s %5.0f%% %10.2f %12.3g %8.2f  ", m[i].name, 100 * m[i].share, m[i].compute_s,
               m[i].bytes, m[i].overlap);
        for (int k = 0; k < m[i].ngpus; k++)
            printf("%s%d", k ? "," : "", m[i].gpus[k]);
        putchar('\n');
    }
    return SIMTOOL_OK;
}

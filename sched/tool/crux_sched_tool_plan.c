/* crux-sched plan: a cluster and a job list in, the priority file and a
 * report out. */
#include <getopt.h>
#include <string.h>
#include <time.h>

#include "sched/tool/crux_sched_tool.h"

static const char plan_usage[] =
    "usage: crux-sched plan --cluster FILE --jobs FILE [OPTIONS]\n"
    "Plans the jobs on the cluster (path selection, priorities, compression to\n"
    "levels) and writes the priority file and a report.\n"
    "  --cluster FILE     cluster file (JSON)\n"
    "  --jobs FILE        job list (JSON)\n"
    "  --levels K         priority levels, 1-16 (8)\n"
    "  --reserve R        top levels left to other traffic, 0-(K-1) (0)\n"
    "  --orders M         random topological orders tried by the compression, 1-1000 (10)\n"
    "  --seed S           seed of those orders and of --paths random (1)\n"
    "  --paths MODE       crux (least congested), ecmp or random (crux)\n"
    "  --priorities MODEL paper (P = k I) or network (what each job loses on\n"
    "                     every hop of its ring; levels merged where sharing\n"
    "                     loses less) (paper)\n"
    "  --out PRIOFILE     write the priority file (atomically)\n"
    "  --report FILE|-    write the report (to stdout when neither --out nor --report)\n"
    "  --json             the report in JSON\n"
    "  --timing           each phase's time on stderr\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or input error.\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int load_jobs(const char *path, const crux_sched_cluster_t *c, crux_sched_plan_t *plan)
{
    tool_doc_t d;
    int rc = tool_doc_load(&d, path);
    if (rc == TOOL_OK) {
        rc = tool_jobs_from_doc(&d, c, plan);
    }
    tool_doc_free(&d);
    return rc;
}

int tool_plan(int argc, char **argv)
{
    static const struct option opts[] = {
        { "cluster", required_argument, NULL, 'c' }, { "jobs", required_argument, NULL, 'j' },
        { "levels", required_argument, NULL, 'k' },  { "reserve", required_argument, NULL, 'r' },
        { "orders", required_argument, NULL, 'm' },  { "seed", required_argument, NULL, 's' },
        { "paths", required_argument, NULL, 'p' },   { "priorities", required_argument, NULL, 'P' },
        { "out", required_argument, NULL, 'o' },     { "report", required_argument, NULL, 'R' },
        { "json", no_argument, NULL, 'J' },          { "timing", no_argument, NULL, 'T' },
        { "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 }
    };
    const char *cluster = NULL, *jobs = NULL, *out = NULL, *report = NULL;
    int json = 0, timing = 0, opt;
    crux_sched_options_t o;
    crux_sched_options_defaults(&o);
    static const char *const path_modes[] = { "crux", "ecmp", "random", NULL };
    static const crux_sched_path_mode_t path_value[] = { CRUX_SCHED_PATHS_CRUX,
                                                         CRUX_SCHED_PATHS_ECMP,
                                                         CRUX_SCHED_PATHS_RANDOM };
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        int bad = 0, mode;
        switch (opt) {
        case 'c': cluster = optarg; break;
        case 'j': jobs = optarg; break;
        case 'k':
            bad = tool_int_opt("plan", "--levels", optarg, 1, CRUX_SCHED_MAX_LEVELS, &o.levels);
            break;
        case 'r':
            bad =
                tool_int_opt("plan", "--reserve", optarg, 0, CRUX_SCHED_MAX_LEVELS - 1, &o.reserve);
            break;
        case 'm': bad = tool_int_opt("plan", "--orders", optarg, 1, 1000, &o.orders); break;
        case 's': bad = tool_seed_opt("plan", optarg, &o.seed); break;
        case 'p':
            bad = tool_choice_opt("plan", "--paths", optarg, path_modes, &mode);
            if (!bad)
                o.paths = path_value[mode];
            break;
        case 'P': bad = tool_priorities_opt("plan", optarg, &o.priorities); break;
        case 'o': out = optarg; break;
        case 'R': report = optarg; break;
        case 'J': json = 1; break;
        case 'T': timing = 1; break;
        case 'h': fputs(plan_usage, stdout); return TOOL_OK;
        default: return tool_bad_option("plan", opt, argv);
        }
        if (bad)
            return TOOL_INPUT;
    }
    if (optind != argc) {
        tool_usage_error("plan", "unexpected argument \"%s\"", argv[optind]);
        return TOOL_INPUT;
    }
    if (cluster == NULL || jobs == NULL) {
        tool_usage_error("plan", "%s is missing",
                         cluster == NULL ? "--cluster FILE" : "--jobs FILE");
        return TOOL_INPUT;
    }
    if (o.reserve >= o.levels) {
        tool_usage_error("plan",
                         "--reserve %d leaves no level for jobs with --levels %d (at most %d)",
                         o.reserve, o.levels, o.levels - 1);
        return TOOL_INPUT;
    }
    if (out == NULL && report == NULL)
        report = "-";
    double t0 = now_s();
    crux_sched_cluster_t *c = NULL;
    crux_sched_nettable_t table;
    int rc = crux_sched_cluster_load(cluster, &c, &table, o.levels);
    if (rc != TOOL_OK)
        return rc;
    double t1 = now_s();
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    if (plan == NULL) {
        crux_sched_cluster_free(c);
        return TOOL_RUNTIME;
    }
    rc = load_jobs(jobs, c, plan);
    double t2 = now_s(), t3 = t2, t4 = t2, t5 = t2;
    if (rc == TOOL_OK) {
        crux_status_t st = crux_sched_plan_select_paths(plan, o.paths, o.seed);
        t3 = now_s();
        if (st == CRUX_OK)
            st = crux_sched_plan_order(plan, &o);
        t4 = now_s();
        if (st == CRUX_OK)
            st = crux_sched_plan_levels(plan, &o);
        t5 = now_s();
        if (st != CRUX_OK) {
            tool_error(jobs, 0, "planning failed: %s", crux_status_string(st));
            rc = TOOL_RUNTIME;
        }
    }
    if (rc == TOOL_OK && out) {
        char comment[256];
        snprintf(comment, sizeof(comment), "written by crux-sched plan from %s", jobs);
        rc = tool_write_priorities(plan, &table, o.levels, o.reserve, NULL, out, comment);
    }
    if (rc == TOOL_OK && report)
        rc = tool_write_report(plan, c, &table, o.levels, o.reserve, report, json,
                               "crux-sched plan");
    if (timing && t5 > t2)
        fprintf(stderr,
                "timing: cluster %.3f s, jobs %.3f s, paths %.3f s, priorities %.3f s, "
                "compression %.3f s, planning %.3f s, total %.3f s\n",
                t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t2, now_s() - t0);
    crux_sched_plan_free(plan);
    crux_sched_cluster_free(c);
    return rc;
}

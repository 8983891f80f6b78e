/* crux-sched status: who is transferring and who waits in this host's
 * arbitration table. */
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sched/crux_arb.h"
#include "sched/tool/crux_sched_tool.h"

static const char status_usage[] =
    "usage: crux-sched status [--arb PATH] [--json]\n"
    "Shows the intra-host arbitration table (default $CRUX_ARB_PATH, else\n"
    "/dev/shm/crux-arb-<uid>): per resource, the jobs active and waiting.\n"
    "It only reads: it never creates, sizes or writes the table.  Exit status:\n"
    "0 shown; 1 no table there (no crux job has used it on this host) or it\n"
    "cannot be read; 2 a table refused (a link, not a regular file, another\n"
    "owner, another mode, bad contents) or a usage error.\n";

/* Whether the directory of `path` is missing; its name into dir. */
static int missing_dir(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    struct stat sb;
    if (slash == NULL)
        return 0;
    snprintf(dir, len, "%.*s", (int)(slash - path) + (slash == path), path);
    return stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode);
}

int tool_status(int argc, char **argv)
{
    static const struct option opts[] = { { "arb", required_argument, NULL, 'a' },
                                          { "json", no_argument, NULL, 'J' },
                                          { "help", no_argument, NULL, 'h' },
                                          { NULL, 0, NULL, 0 } };
    const char *path = NULL;
    int json = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        if (opt == 'a')
            path = optarg;
        else if (opt == 'J')
            json = 1;
        else if (opt == 'h') {
            fputs(status_usage, stdout);
            return TOOL_OK;
        } else
            return tool_bad_option("status", opt, argv);
    }
    if (optind != argc) {
        tool_usage_error("status", "unexpected argument \"%s\"", argv[optind]);
        return TOOL_INPUT;
    }
    char def[256];
    if (path == NULL)
        path = crux_arb_default_path(def, sizeof(def));
    crux_arb_t *arb;
    char err[512];
    crux_status_t st = crux_arb_open(path, CRUX_ARB_READ_ONLY, &arb, err, sizeof(err));
    if (st == CRUX_ERR_NOT_FOUND) {
        char dir[4096];
        if (missing_dir(path, dir, sizeof(dir)))
            fprintf(stderr, "%s: no such directory %s\n", path, dir);
        else if (access(path, F_OK) == 0) /* there, but never initialised */
            fprintf(stderr, "%s\n", err);
        else
            fprintf(stderr, "%s: no arbitration table (no crux job has used it on this host)\n",
                    path);
        return TOOL_RUNTIME;
    }
    if (st != CRUX_OK) {
        fprintf(stderr, "crux-sched status: %s\n", err);
        return st == CRUX_ERR_INVALID ? TOOL_INPUT : TOOL_RUNTIME;
    }
    crux_arb_entry_t e[CRUX_ARB_MAX_ENTRIES];
    int n = 0;
    st = crux_arb_snapshot(arb, e, CRUX_ARB_MAX_ENTRIES, &n);
    crux_arb_close(arb);
    if (st != CRUX_OK) {
        fprintf(stderr, "crux-sched status: %s: %s\n", path,
                st == CRUX_ERR_INVALID ? "damaged while being read: refused" : "out of memory");
        return st == CRUX_ERR_INVALID ? TOOL_INPUT : TOOL_RUNTIME;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    if (json) {
        json_object *arr = json_object_new_array();
        for (int i = 0; i < n; i++) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "resource", json_object_new_string(e[i].resource));
            json_object_object_add(
                o, "state",
                json_object_new_string(e[i].state == CRUX_ARB_ACTIVE ? "active" : "waiting"));
            json_object_object_add(o, "level", json_object_new_int(e[i].level));
            json_object_object_add(o, "pid", json_object_new_int(e[i].pid));
            json_object_object_add(o, "job", json_object_new_string(e[i].job));
            json_object_object_add(o, "for_s", json_object_new_double(now - e[i].since_ns * 1e-9));
            json_object_array_add(arr, o);
        }
        printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY));
        json_object_put(arr);
        return TOOL_OK;
    }
    printf("%s: %d entries\n", path, n);
    if (n > 0)
        printf("%-20s %-8s %5s %8s %-20s %8s\n", "resource", "state", "level", "pid", "job",
               "for_s");
    for (int i = 0; i < n; i++)
        printf("%-20s %-8s %5d %8d %-20s %8.3f\n", e[i].resource,
               e[i].state == CRUX_ARB_ACTIVE ? "active" : "waiting", e[i].level, (int)e[i].pid,
               e[i].job[0] ? e[i].job : "-", now - e[i].since_ns * 1e-9);
    return TOOL_OK;
}

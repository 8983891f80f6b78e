/* crux-sched: the Crux inter-job scheduler's command-line tool. */
#include <stdio.h>
#include <string.h>

#include "common/crux_version.h"
#include "sched/tool/crux_sched_tool.h"

static const char usage[] =
    "usage: crux-sched COMMAND [OPTIONS]   (crux-sched COMMAND --help for each)\n"
    "  plan      plan a job list on a cluster; write the priority file and a report\n"
    "  daemon    watch a spool directory of jobs and profiles, replan on every change\n"
    "  status    show the intra-host arbitration table (who transfers, who waits)\n"
    "  gen-jobs  generate a reproducible job list for a cluster\n"
    "  --version print the version\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or input error.\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return TOOL_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return TOOL_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        crux_version_print(stdout, "crux-sched");
        return TOOL_OK;
    }
    if (strcmp(cmd, "plan") == 0)
        return tool_plan(argc - 1, argv + 1);
    if (strcmp(cmd, "daemon") == 0)
        return tool_daemon(argc - 1, argv + 1);
    if (strcmp(cmd, "status") == 0)
        return tool_status(argc - 1, argv + 1);
    if (strcmp(cmd, "gen-jobs") == 0)
        return tool_gen_jobs(argc - 1, argv + 1);
    fprintf(stderr, "crux-sched: unknown command \"%s\" (crux-sched --help)\n", cmd);
    return TOOL_INPUT;
}

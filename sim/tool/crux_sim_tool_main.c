/* crux-sim: the cluster simulator's command-line tool. */
#include <stdio.h>
#include <string.h>

#include "common/crux_version.h"
#include "sim/tool/crux_sim_tool.h"

static const char usage[] =
    "usage: crux-sim COMMAND [OPTIONS]   (crux-sim COMMAND --help for each)\n"
    "  run     simulate a workload on a cluster under one or more policies\n"
    "  gen     generate a workload (CSV) for a cluster\n"
    "  models  list the generator's model mix (the one crux-sched gen-jobs uses)\n"
    "  --version  print the version\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or input error.\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return SIMTOOL_INPUT;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return SIMTOOL_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        crux_version_print(stdout, "crux-sim");
        return SIMTOOL_OK;
    }
    if (strcmp(cmd, "run") == 0)
        return simtool_run(argc - 1, argv + 1);
    if (strcmp(cmd, "gen") == 0)
        return simtool_gen(argc - 1, argv + 1);
    if (strcmp(cmd, "models") == 0)
        return simtool_models(argc - 1, argv + 1);
    fprintf(stderr, "crux-sim: unknown command \"%s\" (crux-sim --help)\n", cmd);
    return SIMTOOL_INPUT;
}

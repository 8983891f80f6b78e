/* crux-topo: what an operator runs first on a new node.  Prints the device
 * matrix and multipath sets, or the whole model as JSON, or a Graphviz
 * picture.  Exit status: 0 success, 1 runtime failure, 2 usage or input
 * error. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/crux_topo.h"
#include "topo/crux_topo_report.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2
/* Beyond this many GPUs the paths and multipath sets are listed only with
 * --paths: they grow with the square of the GPUs (512 GPUs: 2.5 GB and
 * 185 MB of JSON). */
#define CRUX_TOPO_CLI_PATHS_GPUS 64
#define STR_(x)                  #x
#define STR(x)                   STR_(x)

static const char usage[] =
    "Usage: crux-topo [--input FILE.xml] [--json | --dot] [--paths] [--smp-gbps GBPS]\n"
    "\n"
    "Show the node's interconnect: GPUs, NVLink, NVSwitches, PCIe switches, NICs, CPU\n"
    "packages and NUMA nodes; the best path between every two GPUs and from each GPU\n"
    "to each NIC, with its bandwidth; the disjoint paths a multipath transfer uses;\n"
    "the fully NVLink-connected GPU islands and the host-memory groups.\n"
    "\n"
    "  -i, --input FILE   read an hwloc XML export (lstopo FILE.xml) instead of this\n"
    "                     machine; default: $HWLOC_XMLFILE if set\n"
    "  -j, --json         print the whole model as JSON\n"
    "  -d, --dot          print a Graphviz picture (crux-topo --dot | dot -Tpng -o topo.png)\n"
    "      --paths        list every path and multipath set even for more than\n"
    "                     " STR(
        CRUX_TOPO_CLI_PATHS_GPUS) " GPUs (their size grows with the square of the GPUs)\n"
                                  "      --smp-gbps N   inter-socket link bandwidth in GB/s per "
                                  "direction\n"
                                  "                     (default: $" CRUX_TOPO_SMP_GBPS_ENV
                                  ", else 20)\n"
                                  "  -h, --help         show this help\n"
                                  "\n"
                                  "Bandwidths are in GB/s per direction.  Exit status: 0 success, "
                                  "1 runtime failure,\n"
                                  "2 usage or input error.\n";

static void warn(void *arg, const char *message)
{
    (void)arg;
    fprintf(stderr, "crux-topo: warning: %s\n", message);
}

static int usage_error(const char *what, const char *value)
{
    fprintf(stderr, "crux-topo: %s%s%s; see crux-topo --help\n", what, value ? " " : "",
            value ? value : "");
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "input", required_argument, NULL, 'i' },
        { "json", no_argument, NULL, 'j' },
        { "dot", no_argument, NULL, 'd' },
        { "smp-gbps", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { "paths", no_argument, NULL, 'p' },
        { NULL, 0, NULL, 0 },
    };
    crux_topo_options_t opts;
    int json = 0, dot = 0, c;

    crux_topo_options_init(&opts);
    opts.warn = warn;
    opts.multipath_max_gpus = CRUX_TOPO_CLI_PATHS_GPUS;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":i:jdh", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': opts.xml_path = optarg; break;
        case 'j': json = 1; break;
        case 'd': dot = 1; break;
        case 'p': opts.multipath_max_gpus = 0; break;
        case 's': {
            char *end;
            errno = 0;
            opts.smp_gbps = strtod(optarg, &end);
            if (errno || *end || !(opts.smp_gbps > 0) || !isfinite(opts.smp_gbps))
                return usage_error("--smp-gbps wants a bandwidth in GB/s greater than 0, not",
                                   optarg);
            break;
        }
        case 'h': fputs(usage, stdout); return fflush(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS;
        case ':': return usage_error("missing value for", argv[optind - 1]);
        default: return usage_error("unknown option", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    if (json && dot)
        return usage_error("--json and --dot exclude each other", NULL);

    crux_topo_t *topo;
    char err[512];
    crux_status_t st = crux_topo_load(&opts, &topo, err, sizeof(err));
    if (st != CRUX_OK) {
        fprintf(stderr, "crux-topo: %s\n", err);
        /* a bad file or setting is the user's to fix; the live machine
         * failing, or memory running out, is not */
        int input = st != CRUX_ERR_NO_MEMORY &&
                    (opts.xml_path || getenv("HWLOC_XMLFILE") || st == CRUX_ERR_INVALID);
        return input ? EXIT_USAGE : EXIT_RUNTIME;
    }

    int status = EXIT_SUCCESS;
    if (json) {
        char *text = crux_topo_to_json(topo);
        if (!text) {
            fprintf(stderr, "crux-topo: out of memory writing JSON\n");
            status = EXIT_RUNTIME;
        } else {
            puts(text);
            free(text);
        }
    } else if (dot) {
        crux_topo_write_dot(topo, stdout);
    } else {
        crux_topo_print_report(topo, stdout);
    }
    if (status == EXIT_SUCCESS && (fflush(stdout) || ferror(stdout))) {
        fprintf(stderr, "crux-topo: writing the output: %s\n", strerror(errno));
        status = EXIT_RUNTIME;
    }
    crux_topo_free(topo);
    return status;
}

/* crux-topo: what an operator runs first on a new node, as nvidia-smi topo
 * -m: the connection matrix of GPUs and NICs with crux's bandwidths and
 * CPU/NUMA affinity; on request the multipath sets, NVLink islands and
 * host-memory groups; or the whole model as JSON, or a Graphviz picture.
 * Exit status: 0 success, 1 runtime failure (an input that cannot be read
 * or is not a topology, a failed discovery, a failed write), 2 usage error
 * (a bad option or value). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/crux_version.h"
#include "topo/crux_topo.h"
#include "topo/crux_topo_report.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE   2
/* Beyond this many GPUs the paths and multipath sets are built only with
 * --paths: they grow with the square of the GPUs (512 GPUs: 2.5 GB and
 * 185 MB of JSON). */
#define CRUX_TOPO_CLI_PATHS_GPUS 64

/* printf format: the GPUs beyond which --paths is needed, the variable */
static const char usage[] =
    "Usage: crux-topo [-i FILE.xml | -i -] [--paths] [--islands] [--groups] [-a]\n"
    "                 [--json | --dot] [--smp-gbps GBPS]\n"
    "\n"
    "Show how the node's GPUs and NICs are connected, as nvidia-smi topo -m does\n"
    "(X, NV#, PIX, PXB, PHB, NODE, SYS), with the bandwidth of crux's best path\n"
    "between each two (GB/s per direction), NVLink relays, and each device's CPU and\n"
    "NUMA affinity for binding.\n"
    "\n"
    "  -i, --input FILE   read an hwloc XML export (lstopo FILE.xml) instead of this\n"
    "                     machine; - reads it from standard input; default:\n"
    "                     $HWLOC_XMLFILE if set\n"
    "  -p, --paths        also list every GPU pair's multipath set (the disjoint paths\n"
    "                     used at once); beyond %d GPUs they are built only with this\n"
    "      --islands      also list the fully NVLink-connected GPU islands\n"
    "      --groups       also list the host-memory groups (one per CPU package)\n"
    "  -a, --all          --paths --islands --groups\n"
    "  -j, --json         print the whole model as JSON\n"
    "  -d, --dot          print a Graphviz picture (crux-topo --dot | dot -Tpng -o topo.png)\n"
    "      --smp-gbps N   inter-socket link bandwidth in GB/s per direction (default:\n"
    "                     $%s, else an assumed 20)\n"
    "  -V, --version      print the version\n"
    "  -h, --help         show this help\n"
    "\n"
    "Exit status: 0 success, 1 an input that cannot be read or is not a topology (or\n"
    "another runtime failure), 2 a bad option or value.\n";

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

/* The option getopt stopped at: a long one as written (without its value),
 * a short one as -X even inside a bundle such as -jZ. */
static const char *option_name(const char *arg, char *buf)
{
    if (!strncmp(arg, "--", 2)) {
        snprintf(buf, 64, "%.*s", (int)strcspn(arg, "="), arg);
        return buf;
    }
    snprintf(buf, 64, "-%c", optopt ? optopt : '?');
    return buf;
}

/* A bandwidth in GB/s, finite and above 0; -1 if s is not one. */
static double parse_gbps(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    return errno || end == s || *end || !(v > 0) || !isfinite(v) ? -1 : v;
}

/* Standard input, at most CRUX_TOPO_MAX_XML_BYTES, as a file would be: the
 * buffer grows to one byte more than that, and filling it is refused. */
static char *read_stdin(size_t *len)
{
    const size_t most = (size_t)CRUX_TOPO_MAX_XML_BYTES + 1;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        fprintf(stderr, "crux-topo: stdin: out of memory\n");
    while (buf) {
        if (n == cap && cap == most) {
            fprintf(stderr, "crux-topo: stdin: more than the %d bytes read at most\n",
                    CRUX_TOPO_MAX_XML_BYTES);
            break;
        }
        if (n == cap) {
            size_t ncap = cap * 2 < most ? cap * 2 : most;
            char *more = realloc(buf, ncap);
            if (!more) {
                fprintf(stderr, "crux-topo: stdin: out of memory\n");
                break;
            }
            buf = more;
            cap = ncap;
        }
        ssize_t r = read(STDIN_FILENO, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            fprintf(stderr, "crux-topo: stdin: cannot read: %s\n", strerror(errno));
            break;
        }
        if (r == 0) {
            *len = n;
            return buf;
        }
        n += (size_t)r;
    }
    free(buf);
    return NULL;
}

static int print(const crux_topo_t *topo, int json, int dot, const crux_topo_report_opts_t *ropts)
{
    if (json) {
        char *text = crux_topo_to_json(topo);
        if (!text) {
            fprintf(stderr, "crux-topo: out of memory writing JSON\n");
            return EXIT_RUNTIME;
        }
        puts(text);
        free(text);
    } else if (dot) {
        crux_topo_write_dot(topo, stdout);
    } else {
        crux_topo_print_report(topo, ropts, stdout);
    }
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "crux-topo: writing the output: %s\n", strerror(errno));
        return EXIT_RUNTIME;
    }
    return EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
    enum { OPT_SMP = 256, OPT_ISLANDS, OPT_GROUPS };
    static const struct option longopts[] = {
        { "input", required_argument, NULL, 'i' },
        { "json", no_argument, NULL, 'j' },
        { "dot", no_argument, NULL, 'd' },
        { "paths", no_argument, NULL, 'p' },
        { "islands", no_argument, NULL, OPT_ISLANDS },
        { "groups", no_argument, NULL, OPT_GROUPS },
        { "all", no_argument, NULL, 'a' },
        { "smp-gbps", required_argument, NULL, OPT_SMP },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    crux_topo_options_t opts;
    crux_topo_report_opts_t ropts = { 0, 0, 0 };
    char optbuf[64];
    int json = 0, dot = 0, c;

    crux_topo_options_init(&opts);
    opts.warn = warn;
    opts.multipath_max_gpus = CRUX_TOPO_CLI_PATHS_GPUS;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":i:jdpaVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'i': opts.xml_path = optarg; break;
        case 'j': json = 1; break;
        case 'd': dot = 1; break;
        case 'p':
            ropts.paths = 1;
            opts.multipath_max_gpus = 0;
            break;
        case OPT_ISLANDS: ropts.islands = 1; break;
        case OPT_GROUPS: ropts.groups = 1; break;
        case 'a':
            ropts.paths = ropts.islands = ropts.groups = 1;
            opts.multipath_max_gpus = 0;
            break;
        case OPT_SMP:
            if ((opts.smp_gbps = parse_gbps(optarg)) < 0)
                return usage_error("--smp-gbps wants a bandwidth in GB/s greater than 0, not",
                                   optarg);
            break;
        case 'V': crux_version_print(stdout, "crux-topo"); return fflush(stdout) ? EXIT_RUNTIME : 0;
        case 'h':
            printf(usage, CRUX_TOPO_CLI_PATHS_GPUS, CRUX_TOPO_SMP_GBPS_ENV);
            return fflush(stdout) ? EXIT_RUNTIME : EXIT_SUCCESS;
        case ':': return usage_error("missing value for", option_name(argv[optind - 1], optbuf));
        default:
            option_name(argv[optind - 1], optbuf);
            for (const struct option *o = longopts; o->name; o++)
                if (strchr(argv[optind - 1], '=') && !strcmp(optbuf + 2, o->name))
                    return usage_error(optbuf, "takes no value");
            return usage_error("unknown option", optbuf);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument", argv[optind]);
    if (json && dot)
        return usage_error("--json and --dot exclude each other", NULL);
    const char *env = getenv(CRUX_TOPO_SMP_GBPS_ENV);
    if (opts.smp_gbps <= 0 && env && *env && parse_gbps(env) < 0) {
        fprintf(stderr, "crux-topo: %s=%s: not a bandwidth in GB/s greater than 0\n",
                CRUX_TOPO_SMP_GBPS_ENV, env);
        return EXIT_USAGE;
    }

    char *text = NULL;
    if (opts.xml_path && !strcmp(opts.xml_path, "-")) {
        if (!(text = read_stdin(&opts.xml_len)))
            return EXIT_RUNTIME;
        opts.xml_text = text;
        opts.xml_path = "stdin";
    }
    crux_topo_t *topo;
    char err[512];
    crux_status_t st = crux_topo_load(&opts, &topo, err, sizeof(err));
    free(text);
    if (st != CRUX_OK) {
        fprintf(stderr, "crux-topo: %s\n", err);
        /* a file read whole whose contents are wrong is an input error */
        return st == CRUX_ERR_INVALID || st == CRUX_ERR_UNSUPPORTED ? EXIT_USAGE : EXIT_RUNTIME;
    }
    int status = print(topo, json, dot, &ropts);
    crux_topo_free(topo);
    return status;
}

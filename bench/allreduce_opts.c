/* crux-bench-allreduce: options, their checks and the usage text. */
#include "bench/allreduce_opts.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const bench_variant_t bench_variants[] = {
    { "crux", NULL, NULL, "crux", "the job's normal selection, crux included" },
    { "tuned", "ompi_comm_coll_preference", "^crux", "tuned",
      "Open MPI without crux (coll/tuned)" },
    { "han", "ompi_comm_coll_preference", "han,^crux", "han", "coll/han first, without crux" },
    { "adapt", "ompi_comm_coll_preference", "adapt,^crux", "adapt",
      "coll/adapt first, without crux" },
    { "sm", "ompi_comm_coll_preference", "sm,^crux", "sm", "coll/sm first, without crux" },
    { "fallback", "crux_allreduce_algorithm", "fallback", "crux",
      "crux hands every call to the module it falls back to" },
    { "flags", "crux_allreduce_handoff", "flags", "crux",
      "crux's hand-off by flags (flat: the flags algorithm), forced" },
    { "lanes", "crux_allreduce_handoff", "lanes", "crux",
      "crux's hand-off over the engine's lanes, forced" },
    { "hier", "crux_allreduce_topology", "hier", "crux", "crux's hierarchical one, forced" },
    { "hier-seq", "crux_allreduce_topology", "hier-sequential", "crux",
      "the hierarchical one, its steps in sequence" },
};
const int bench_num_variants = (int)(sizeof(bench_variants) / sizeof(bench_variants[0]));

#define MAX_BYTES ((size_t)1 << 40) /* far above any host's memory */

void bench_usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np N crux-bench-allreduce [options]\n"
            "MPI_Allreduce per message size, for several coll selections in turn in the\n"
            "same run (medians over alternating runs), printed as nccl-tests do.\n"
            "  -b, --minbytes SIZE   smallest message (default 4; K, M, G suffixes)\n"
            "  -e, --maxbytes SIZE   largest message (default 64M)\n"
            "  -f, --stepfactor N    multiply the size by N each step, 2-1024 (default 2)\n"
            "  -d, --datatype TYPE   int8, uint8, int32 (int), uint32, int64, uint64,\n"
            "                        float, double, or all (default float)\n"
            "  -o, --op OP           sum, prod, min, max, or all (default sum)\n"
            "  -n, --iters N         Allreduces per timed sample (default: about 64 MiB\n"
            "                        of messages, 5-1000)\n"
            "  -w, --warmup_iters N  untimed Allreduces per size and selection before\n"
            "                        timing (default: a tenth of -n, plus 2)\n"
            "  -r, --reps N          alternations per size, 1-%d: times are medians (default 5)\n"
            "  -c, --check 0|1       check every element of one more Allreduce per size\n"
            "                        against the exact result (default 1)\n"
            "  -m, --memory host|cuda  buffers in host memory (default) or on the GPU\n"
            "                        (rank %% GPUs on each node; needs a CUDA build)\n"
            "      --compare LIST    selections, comma-separated (default crux,tuned);\n"
            "                        ratios are against the first:\n",
            BENCH_MAX_REPS);
    for (int v = 0; v < bench_num_variants; v++) {
        fprintf(out, "                          %-9s %s\n", bench_variants[v].name,
                bench_variants[v].what);
    }
    fprintf(out, "                        those the job cannot run are skipped, with the reason;\n"
                 "                        under --mca coll crux, tuned is measured as crux's\n"
                 "                        fallback (coll/tuned, filled by crux)\n"
                 "      --csv             one CSV line per size instead of the table\n"
                 "  -h, --help            this text\n"
                 "  -V, --version         crux's version\n"
                 "crux takes part in the job: the benchmark sets coll_crux_enable 1 unless\n"
                 "it is set already.\n"
                 "Exit status: 0 success, 1 wrong results or a failed run, 2 a bad option.\n");
}

static int fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* A whole number with an optional K, M or G suffix (powers of 1024). */
static int parse_size(const char *s, size_t *out)
{
    if (!isdigit((unsigned char)s[0])) {
        return -1;
    }
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    case '\0': break;
    default: return -1;
    }
    if (errno != 0 || (shift > 0 && end[1] != '\0') || v == 0 || v > (MAX_BYTES >> shift)) {
        return -1;
    }
    *out = (size_t)(v << shift);
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_variants(bench_options_t *o, const char *list, char *err, size_t len)
{
    char copy[256];
    if (strlen(list) >= sizeof(copy)) {
        return fail(err, len, "--compare: list too long");
    }
    snprintf(copy, sizeof(copy), "%s", list);
    o->nvariants = 0;
    char *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        int k;
        for (k = 0; k < bench_num_variants && strcmp(bench_variants[k].name, t) != 0; k++) {
        }
        if (k == bench_num_variants) {
            return fail(err, len, "--compare: unknown component '%s' (see --help)", t);
        }
        for (int i = 0; i < o->nvariants; i++) {
            if (o->variants[i] == k) {
                return fail(err, len, "--compare: '%s' named twice", t);
            }
        }
        if (o->nvariants == BENCH_MAX_VARIANTS) {
            return fail(err, len, "--compare: more than %d selections", BENCH_MAX_VARIANTS);
        }
        o->variants[o->nvariants++] = k;
    }
    return o->nvariants > 0 ? 0 : fail(err, len, "--compare: no selection named");
}

enum { OPT_COMPARE = 256, OPT_CSV };

int bench_parse(int argc, char **argv, bench_options_t *o, char *err, size_t len)
{
    static const struct option longopts[] = {
        { "minbytes", required_argument, NULL, 'b' },
        { "min", required_argument, NULL, 'b' }, /* the names before nccl-tests' */
        { "maxbytes", required_argument, NULL, 'e' },
        { "max", required_argument, NULL, 'e' },
        { "stepfactor", required_argument, NULL, 'f' },
        { "datatype", required_argument, NULL, 'd' },
        { "op", required_argument, NULL, 'o' },
        { "iters", required_argument, NULL, 'n' },
        { "warmup_iters", required_argument, NULL, 'w' },
        { "reps", required_argument, NULL, 'r' },
        { "check", required_argument, NULL, 'c' },
        { "memory", required_argument, NULL, 'm' },
        { "compare", required_argument, NULL, OPT_COMPARE },
        { "csv", no_argument, NULL, OPT_CSV },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    *o = (bench_options_t){ .min_bytes = 4,
                            .max_bytes = 64u << 20,
                            .factor = 2,
                            .types = { BENCH_FLOAT },
                            .ntypes = 1,
                            .ops = { BENCH_SUM },
                            .nops = 1,
                            .warmup = -1,
                            .reps = 5,
                            .check = 1 };
    parse_variants(o, "crux,tuned", err, len);
    opterr = 0; /* errors are reported here, once, in one line */
    optind = 1;
    int c, factor, t;
    while ((c = getopt_long(argc, argv, ":b:e:f:d:o:n:w:r:c:m:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (parse_size(optarg, &o->min_bytes) != 0) {
                return fail(err, len, "-b: bad size '%s' (a whole number of bytes, K, M, G)",
                            optarg);
            }
            break;
        case 'e':
            if (parse_size(optarg, &o->max_bytes) != 0) {
                return fail(err, len, "-e: bad size '%s' (a whole number of bytes, K, M, G)",
                            optarg);
            }
            break;
        case 'f':
            if (parse_int(optarg, 2, 1024, &factor) != 0) {
                return fail(err, len, "-f: bad factor '%s' (2 to 1024)", optarg);
            }
            o->factor = (unsigned)factor;
            break;
        case 'd':
            o->ntypes = 0;
            if (strcmp(optarg, "all") == 0) {
                for (t = 0; t < BENCH_NUM_TYPES; t++) {
                    o->types[o->ntypes++] = t;
                }
            } else if ((t = bench_type_parse(optarg)) >= 0) {
                o->types[o->ntypes++] = t;
            } else {
                return fail(err, len, "-d: unknown datatype '%s' (see --help)", optarg);
            }
            break;
        case 'o':
            o->nops = 0;
            if (strcmp(optarg, "all") == 0) {
                for (t = 0; t < BENCH_NUM_OPS; t++) {
                    o->ops[o->nops++] = t;
                }
            } else if ((t = bench_op_parse(optarg)) >= 0) {
                o->ops[o->nops++] = t;
            } else {
                return fail(err, len, "-o: unknown op '%s' (sum, prod, min, max, all)", optarg);
            }
            break;
        case 'n':
            if (parse_int(optarg, 1, 1000000, &o->iters) != 0) {
                return fail(err, len, "-n: bad iteration count '%s' (1 to 1000000)", optarg);
            }
            break;
        case 'w':
            if (parse_int(optarg, 0, 1000000, &o->warmup) != 0) {
                return fail(err, len, "-w: bad warm-up count '%s' (0 to 1000000)", optarg);
            }
            break;
        case 'r':
            if (parse_int(optarg, 1, BENCH_MAX_REPS, &o->reps) != 0) {
                return fail(err, len, "-r: bad repetition count '%s' (1 to %d)", optarg,
                            BENCH_MAX_REPS);
            }
            break;
        case 'c':
            if (parse_int(optarg, 0, 1, &o->check) != 0) {
                return fail(err, len, "-c: bad value '%s' (0 or 1)", optarg);
            }
            break;
        case 'm':
            if (strcmp(optarg, "host") != 0 && strcmp(optarg, "cuda") != 0) {
                return fail(err, len, "-m: unknown memory '%s' (host, cuda)", optarg);
            }
            o->cuda = strcmp(optarg, "cuda") == 0;
            break;
        case OPT_COMPARE:
            if (parse_variants(o, optarg, err, len) != 0) {
                return -1;
            }
            break;
        case OPT_CSV: o->csv = 1; break;
        case 'h': o->action = BENCH_HELP; return 0;
        case 'V': o->action = BENCH_VERSION; return 0;
        case ':':
            return optopt != 0 ? fail(err, len, "-%c needs a value", optopt)
                               : fail(err, len, "%s needs a value", argv[optind - 1]);
        default:
            return optopt != 0
                       ? fail(err, len, "unknown option '-%c' (see --help)", optopt)
                       : fail(err, len, "unknown option '%s' (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        return fail(err, len, "unexpected argument '%s' (see --help)", argv[optind]);
    }
    if (o->min_bytes > o->max_bytes) {
        return fail(err, len, "-b %zu is above -e %zu", o->min_bytes, o->max_bytes);
    }
    for (int i = 0; i < o->ntypes; i++) {
        if (o->max_bytes / bench_type_size(o->types[i]) > INT_MAX) {
            return fail(err, len, "-e: %zu bytes of %s are more than %d elements (MPI's count)",
                        o->max_bytes, bench_type_name(o->types[i]), INT_MAX);
        }
    }
    return 0;
}

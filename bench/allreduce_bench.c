/* crux-bench-allreduce: time MPI_Allreduce per message size for several coll
 * selections in the same run, alternating between them, as the OSU
 * micro-benchmarks time a call (warm-up, many iterations, the slowest rank's
 * average), and report medians and ratios.
 *
 * Each selection is a communicator duplicated with an info key:
 *   crux      the normal selection, crux included (crux wins by priority)
 *   tuned     ompi_comm_coll_preference "^crux": what Open MPI picks without
 *             crux (coll/tuned)
 *   han       ompi_comm_coll_preference "han,^crux": coll/han first
 *   fallback  crux_allreduce_algorithm "fallback": crux hands every call to
 *             the module it would fall back to; the baseline under
 *             `mpirun --mca coll crux`, where crux itself loads coll/tuned
 *   flat, hier, hier-seq, engine   crux_allreduce_algorithm "flat", "hier",
 *             "hier-sequential", "engine": one of crux's algorithms, forced
 * so every selection runs in the same processes, on the same memory, in
 * turn, and machine noise hits them alike. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VARIANTS 8
#define MAX_REPS     101

typedef struct {
    const char *name;
    const char *key, *value; /* info key; NULL: default selection */
    MPI_Comm comm;
} variant_t;

static const variant_t known[] = {
    { "crux", NULL, NULL, MPI_COMM_NULL },
    { "tuned", "ompi_comm_coll_preference", "^crux", MPI_COMM_NULL },
    { "han", "ompi_comm_coll_preference", "han,^crux", MPI_COMM_NULL },
    { "fallback", "crux_allreduce_algorithm", "fallback", MPI_COMM_NULL },
    { "flat", "crux_allreduce_algorithm", "flat", MPI_COMM_NULL },
    { "hier", "crux_allreduce_algorithm", "hier", MPI_COMM_NULL },
    { "hier-seq", "crux_allreduce_algorithm", "hier-sequential", MPI_COMM_NULL },
    { "engine", "crux_allreduce_algorithm", "engine", MPI_COMM_NULL },
};

typedef struct {
    size_t min_bytes, max_bytes;
    int reps;
    int csv;
    int in_place;
    double target_bytes; /* bytes moved per sample, to size iteration counts */
    variant_t variants[MAX_VARIANTS];
    int nvariants;
} options_t;

static int rank, nranks;

static void usage(const char *argv0)
{
    if (rank == 0) {
        fprintf(stderr,
                "usage: %s [--min BYTES] [--max BYTES] [--reps N] [--compare LIST] [--in-place] "
                "[--csv]\n"
                "  --min, --max   message sizes in bytes, powers of two (default 4 to 64M;\n"
                "                 K, M, G suffixes accepted)\n"
                "  --reps N       alternations per size; medians are reported (default 7)\n"
                "  --compare LIST comma-separated selections among crux, tuned, han,\n"
                "                 fallback, flat, hier, hier-seq and engine (default\n"
                "                 crux,tuned);\n"
                "                 ratios are against the first; tuned and han need\n"
                "                 those components: not under --mca coll crux alone,\n"
                "                 where Open MPI finds no module for them and crashes\n"
                "  --in-place     use MPI_IN_PLACE\n"
                "  --csv          machine-readable output, with bus bandwidth (GB/s,\n"
                "                 algbw * 2(n-1)/n as nccl-tests define it)\n",
                argv0);
    }
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k':
    case 'K': v *= 1024; break;
    case 'm':
    case 'M': v *= 1024 * 1024; break;
    case 'g':
    case 'G': v *= 1024.0 * 1024 * 1024; break;
    }
    return (size_t)v;
}

static int parse_variants(options_t *o, const char *list)
{
    char *copy = strdup(list), *save = NULL;
    o->nvariants = 0;
    for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        size_t k;
        for (k = 0; k < sizeof(known) / sizeof(known[0]) && strcmp(known[k].name, t); k++) {
        }
        if (k == sizeof(known) / sizeof(known[0]) || o->nvariants == MAX_VARIANTS) {
            free(copy);
            return -1;
        }
        o->variants[o->nvariants++] = known[k];
    }
    free(copy);
    return o->nvariants > 0 ? 0 : -1;
}

static int parse(options_t *o, int argc, char **argv)
{
    static const struct option opts[] = {
        { "min", required_argument, NULL, 'm' },  { "max", required_argument, NULL, 'M' },
        { "reps", required_argument, NULL, 'r' }, { "compare", required_argument, NULL, 'c' },
        { "in-place", no_argument, NULL, 'i' },   { "csv", no_argument, NULL, 'v' },
        { "help", no_argument, NULL, 'h' },       { NULL, 0, NULL, 0 },
    };
    *o = (options_t){
        .min_bytes = 4, .max_bytes = 64u << 20, .reps = 7, .target_bytes = 256.0 * 1024 * 1024
    };
    parse_variants(o, "crux,tuned");
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'm': o->min_bytes = parse_size(optarg); break;
        case 'M': o->max_bytes = parse_size(optarg); break;
        case 'r': o->reps = atoi(optarg); break;
        case 'c':
            if (parse_variants(o, optarg) != 0) {
                return -1;
            }
            break;
        case 'i': o->in_place = 1; break;
        case 'v': o->csv = 1; break;
        default: return -1;
        }
    }
    if (o->min_bytes < 4 || o->max_bytes < o->min_bytes || o->reps < 1 || o->reps > MAX_REPS) {
        return -1;
    }
    return optind == argc ? 0 : -1;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Seconds per call of 'iters' Allreduces, the slowest rank's (on rank 0). */
static double time_calls(MPI_Comm comm, float *sbuf, float *rbuf, int count, int iters,
                         int in_place)
{
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, comm);
    }
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    return slowest;
}

static void print_header(const options_t *o)
{
    if (rank != 0) {
        return;
    }
    if (o->csv) {
        printf("ranks,bytes");
        for (int v = 0; v < o->nvariants; v++) {
            printf(",%s_us", o->variants[v].name);
        }
        for (int v = 0; v < o->nvariants; v++) {
            printf(",%s_busbw", o->variants[v].name);
        }
        for (int v = 1; v < o->nvariants; v++) {
            printf(",%s_over_%s", o->variants[v].name, o->variants[0].name);
        }
        printf("\n");
        return;
    }
    printf("# MPI_Allreduce, float sum, %d ranks%s: median over %d alternating runs of the\n"
           "# slowest rank's time per call; ratio = other / %s (above 1: %s is faster)\n",
           nranks, o->in_place ? ", in place" : "", o->reps, o->variants[0].name,
           o->variants[0].name);
    printf("%12s", "bytes");
    for (int v = 0; v < o->nvariants; v++) {
        printf(" %12s", o->variants[v].name);
    }
    for (int v = 1; v < o->nvariants; v++) {
        printf(" %8s/%s", o->variants[v].name, o->variants[0].name);
    }
    printf("\n");
}

static void print_row(const options_t *o, size_t bytes, const double *us)
{
    if (rank != 0) {
        return;
    }
    if (o->csv) {
        printf("%d,%zu", nranks, bytes);
        for (int v = 0; v < o->nvariants; v++) {
            printf(",%.3f", us[v]);
        }
        for (int v = 0; v < o->nvariants; v++) { /* bytes per us = MB/s; /1000: GB/s */
            printf(",%.4f", (double)bytes / us[v] / 1000.0 * 2.0 * (nranks - 1) / nranks);
        }
        for (int v = 1; v < o->nvariants; v++) {
            printf(",%.3f", us[v] / us[0]);
        }
    } else {
        printf("%12zu", bytes);
        for (int v = 0; v < o->nvariants; v++) {
            printf(" %9.1f us", us[v]);
        }
        for (int v = 1; v < o->nvariants; v++) {
            printf(" %8.2fx%*s", us[v] / us[0], (int)strlen(o->variants[0].name), "");
        }
    }
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    options_t o;
    if (parse(&o, argc, argv) != 0) {
        usage(argv[0]);
        MPI_Finalize();
        return 2;
    }
    for (int v = 0; v < o.nvariants; v++) {
        MPI_Info info = MPI_INFO_NULL;
        if (o.variants[v].key != NULL) {
            MPI_Info_create(&info);
            MPI_Info_set(info, o.variants[v].key, o.variants[v].value);
        }
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &o.variants[v].comm);
        if (info != MPI_INFO_NULL) {
            MPI_Info_free(&info);
        }
    }
    size_t max_count = o.max_bytes / sizeof(float);
    float *sbuf = malloc(max_count * sizeof(float)), *rbuf = malloc(max_count * sizeof(float));
    for (size_t i = 0; i < max_count; i++) {
        sbuf[i] = (float)(i % 13);
        rbuf[i] = 0;
    }
    print_header(&o);
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
        int count = (int)(bytes / sizeof(float));
        int iters = (int)(o.target_bytes / (double)bytes);
        iters = iters < 5 ? 5 : iters > 2000 ? 2000 : iters;
        double samples[MAX_VARIANTS][MAX_REPS], us[MAX_VARIANTS];
        for (int v = 0; v < o.nvariants; v++) { /* warm-up: first touch, set-up */
            time_calls(o.variants[v].comm, sbuf, rbuf, count, iters / 10 + 2, o.in_place);
        }
        for (int r = 0; r < o.reps; r++) {
            for (int k = 0; k < o.nvariants; k++) {
                int v = (k + r) % o.nvariants; /* rotate who goes first */
                samples[v][r] =
                    time_calls(o.variants[v].comm, sbuf, rbuf, count, iters, o.in_place);
            }
        }
        for (int v = 0; v < o.nvariants; v++) {
            us[v] = median(samples[v], o.reps) * 1e6;
        }
        print_row(&o, bytes, us);
    }
    for (int v = 0; v < o.nvariants; v++) {
        MPI_Comm_free(&o.variants[v].comm);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}

/* crux-bench-allreduce: MPI_Allreduce per message size, datatype and
 * operation, out of place and in place, for several coll selections in the
 * same run (bench/allreduce_opts.c lists them), printed as nccl-tests print
 * (size, count, type, redop, time, algbw, busbw, #wrong) with each
 * selection's time against the first's.
 *
 * A sample is the slowest rank's mean time over -n calls (after -w untimed
 * ones), as the OSU micro-benchmarks time a call; the selections take
 * turns, -r times per size, the one that goes first rotating, so machine
 * noise hits them alike; the medians are reported.  With -c 1 one more call
 * per size, selection and place is checked element by element against the
 * exact result (bench/allreduce_check.h). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/allreduce_check.h"
#include "bench/allreduce_comms.h"
#include "bench/allreduce_mem.h"
#include "bench/allreduce_opts.h"
#include "common/crux_version.h"

#define TOOL "crux-bench-allreduce"

enum { OUT_OF_PLACE, IN_PLACE, NUM_PLACES };

typedef struct {
    size_t bytes, count;
    bench_type_t type;
    bench_op_t op;
    double us[NUM_PLACES][BENCH_MAX_VARIANTS];
    long long wrong[NUM_PLACES][BENCH_MAX_VARIANTS]; /* -1: not checked */
} row_t;

typedef struct {
    const bench_options_t *o;
    const bench_comms_t *comms;
    int rank, nranks;
    void *sbuf, *rbuf; /* host or device */
    void *host;        /* host copy of a device buffer, for fills and checks */
    double busbw_sum[BENCH_MAX_VARIANTS];
    int busbw_n[BENCH_MAX_VARIANTS];
    long long wrong_total;
} bench_t;

static MPI_Datatype mpi_type(bench_type_t t)
{
    switch (t) {
    case BENCH_INT8: return MPI_INT8_T;
    case BENCH_UINT8: return MPI_UINT8_T;
    case BENCH_INT32: return MPI_INT32_T;
    case BENCH_UINT32: return MPI_UINT32_T;
    case BENCH_INT64: return MPI_INT64_T;
    case BENCH_UINT64: return MPI_UINT64_T;
    case BENCH_DOUBLE: return MPI_DOUBLE;
    default: return MPI_FLOAT;
    }
}

static MPI_Op mpi_op(bench_op_t op)
{
    switch (op) {
    case BENCH_PROD: return MPI_PROD;
    case BENCH_MIN: return MPI_MIN;
    case BENCH_MAX: return MPI_MAX;
    default: return MPI_SUM;
    }
}

static const char *variant_name(const bench_t *b, int v)
{
    return bench_variants[b->comms->variant[v]].name;
}

/* One Allreduce; a failure ends the job (the other ranks may be inside it). */
static void allreduce(const bench_t *b, int v, const row_t *r, int place)
{
    int rc = MPI_Allreduce(place == IN_PLACE ? MPI_IN_PLACE : b->sbuf, b->rbuf, (int)r->count,
                           mpi_type(r->type), mpi_op(r->op), b->comms->comm[v]);
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, text, &len);
        fprintf(stderr, TOOL ": rank %d: MPI_Allreduce with '%s' (%zu bytes %s %s%s) failed: %s\n",
                b->rank, variant_name(b, v), r->bytes, bench_type_name(r->type),
                bench_op_name(r->op), place == IN_PLACE ? ", in place" : "", text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Seconds per call of ITERS calls, the slowest rank's (on rank 0). */
static double time_calls(const bench_t *b, int v, const row_t *r, int place, int iters)
{
    MPI_Barrier(b->comms->comm[v]);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        allreduce(b, v, r, place);
    }
    double mine = (MPI_Wtime() - t0) / iters, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, b->comms->comm[v]);
    return slowest;
}

static void copy_or_die(const bench_t *b, void *dst, const void *src, size_t bytes)
{
    if (bench_mem_copy(b->o->cuda, dst, src, bytes) != 0) {
        fprintf(stderr, TOOL ": rank %d: copying to or from the GPU failed\n", b->rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* One more call, checked element by element: wrong elements over all
 * ranks (on rank 0). */
static long long check(const bench_t *b, int v, const row_t *r, int place)
{
    size_t bytes = r->count * bench_type_size(r->type);
    if (place == IN_PLACE) {
        copy_or_die(b, b->rbuf, b->sbuf, bytes);
    } else { /* no trace of an earlier result */
        memset(b->host, 0xa5, bytes);
        copy_or_die(b, b->rbuf, b->host, bytes);
    }
    allreduce(b, v, r, place);
    copy_or_die(b, b->host, b->rbuf, bytes);
    long long mine = (long long)bench_count_wrong(r->type, r->op, b->nranks, b->host, r->count);
    long long all = 0;
    MPI_Reduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, 0, b->comms->comm[v]);
    return all;
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

/* Allreduces per timed sample: -n, else about 64 MiB of messages, 5 to 1000. */
static int iters_for(const bench_options_t *o, size_t bytes)
{
    if (o->iters > 0) {
        return o->iters;
    }
    double want = 64.0 * 1024 * 1024 / (double)bytes;
    return want < 5 ? 5 : want > 1000 ? 1000 : (int)want;
}

/* Untimed Allreduces per size, selection and place: -w, else a tenth of the iterations plus 2. */
static int warmup_for(const bench_options_t *o, int iters)
{
    return o->warmup >= 0 ? o->warmup : iters / 10 + 2;
}

static void measure(const bench_t *b, row_t *r)
{
    const bench_options_t *o = b->o;
    int n = b->comms->n;
    int iters = iters_for(o, r->bytes);
    int warmup = warmup_for(o, iters);
    static double samples[NUM_PLACES][BENCH_MAX_VARIANTS][BENCH_MAX_REPS];
    for (int v = 0; v < n; v++) { /* first touch, set-up */
        for (int i = 0; i < warmup; i++) {
            allreduce(b, v, r, OUT_OF_PLACE);
            allreduce(b, v, r, IN_PLACE);
        }
    }
    for (int rep = 0; rep < o->reps; rep++) {
        for (int k = 0; k < n; k++) {
            int v = (k + rep) % n; /* rotate who goes first */
            for (int p = 0; p < NUM_PLACES; p++) {
                samples[p][v][rep] = time_calls(b, v, r, p, iters);
            }
        }
    }
    for (int v = 0; v < n; v++) {
        for (int p = 0; p < NUM_PLACES; p++) {
            r->us[p][v] = median(samples[p][v], o->reps) * 1e6;
            r->wrong[p][v] = o->check ? check(b, v, r, p) : -1;
        }
    }
}

/* --- output ------------------------------------------------------------------------ */

static double algbw(const row_t *r, double us)
{
    return (double)r->bytes / us / 1e3; /* bytes per us = MB/s; / 1e3: GB/s */
}

static double busbw(const bench_t *b, const row_t *r, double us)
{
    return algbw(r, us) * 2.0 * (b->nranks - 1) / b->nranks;
}

/* As nccl-tests' header: the Allreduces timed per sample and the warm-up
 * ones, which by default depend on the size (said at the smallest and the
 * largest). */
static void print_iterations(const bench_options_t *o)
{
    size_t lo = o->min_bytes > 0 ? o->min_bytes : 1, hi = lo;
    while (hi <= o->max_bytes / o->factor) { /* the largest size measured */
        hi *= o->factor;
    }
    int ilo = iters_for(o, lo), ihi = iters_for(o, hi);
    int wlo = warmup_for(o, ilo), whi = warmup_for(o, ihi);
    if (ilo == ihi) {
        printf("# iters: %d per sample%s; warm-up: %d per size, selection and place%s\n", ilo,
               o->iters > 0 ? " (-n)" : "", wlo, o->warmup >= 0 ? " (-w)" : "");
    } else {
        printf("# iters: %d at %zu B to %d at %zu B per sample (about 64 MiB of messages, 5 to "
               "1000; -n sets it)\n"
               "# warm-up: %d to %d per size, selection and place (%s)\n",
               ilo, lo, ihi, hi, wlo, whi,
               o->warmup >= 0 ? "-w" : "a tenth of iters plus 2; -w sets it");
    }
}

static void print_header(const bench_t *b)
{
    const bench_options_t *o = b->o;
    const bench_comms_t *c = b->comms;
    if (o->csv) {
        for (int s = 0; s < c->nskipped; s++) {
            fprintf(stderr, TOOL ": skipped %s: %s\n", bench_variants[c->skipped[s]].name,
                    c->why[s]);
        }
        printf("ranks,bytes");
        const char *const groups[] = { "_us", "_busbw" };
        for (int g = 0; g < 2; g++) {
            for (int v = 0; v < c->n; v++) {
                printf(",%s%s", variant_name(b, v), groups[g]);
            }
        }
        for (int v = 1; v < c->n; v++) {
            printf(",%s_over_%s", variant_name(b, v), variant_name(b, 0));
        }
        printf(",count,type,redop");
        const char *const more[] = { "_us_inplace", "_busbw_inplace", "_wrong", "_wrong_inplace" };
        for (int g = 0; g < 4; g++) {
            for (int v = 0; v < c->n; v++) {
                printf(",%s%s", variant_name(b, v), more[g]);
            }
        }
        printf("\n");
        return;
    }
    printf("# " TOOL " %s: MPI_Allreduce, %d ranks, %s buffers\n", crux_version(), b->nranks,
           o->cuda ? "device" : "host");
    printf("# selections:");
    for (int v = 0; v < c->n; v++) {
        printf(" %s", variant_name(b, v));
    }
    printf("\n");
    for (int v = 0; v < c->n; v++) {
        if (c->how[v][0] != '\0') {
            printf("# %s: %s\n", variant_name(b, v), c->how[v]);
        }
    }
    for (int s = 0; s < c->nskipped; s++) {
        printf("# skipped %s: %s\n", bench_variants[c->skipped[s]].name, c->why[s]);
    }
    print_iterations(o);
    printf("# time: median over %d alternating runs of the slowest rank's mean time per call\n"
           "# algbw = size / time, busbw = algbw * 2(n-1)/n (GB/s = 1e9 B/s); #wrong: elements\n"
           "# of all ranks that differ from the exact result%s; ratio: time / %s's time\n"
           "# (above 1: %s is faster)\n",
           o->reps, o->check ? "" : " (not checked: -c 0)", variant_name(b, 0), variant_name(b, 0));
    printf("#%71s%38s\n", "out-of-place", "in-place");
    printf("#%11s %13s %8s %6s %-9s %9s %7s %7s %6s %9s %7s %7s %6s %6s %6s\n", "size", "count",
           "type", "redop", "coll", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
           "#wrong", "ratio", "ratio");
    printf("#%11s %13s %8s %6s %-9s %9s %7s %7s %6s %9s %7s %7s %6s %6s %6s\n", "(B)", "(elements)",
           "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "oop", "ip");
}

static void print_wrong(long long wrong, int csv)
{
    if (csv) {
        wrong >= 0 ? printf(",%lld", wrong) : printf(",");
    } else {
        wrong >= 0 ? printf(" %6lld", wrong) : printf(" %6s", "N/A");
    }
}

static void print_csv(const bench_t *b, const row_t *r)
{
    int n = b->comms->n;
    printf("%d,%zu", b->nranks, r->bytes);
    for (int v = 0; v < n; v++) {
        printf(",%.3f", r->us[OUT_OF_PLACE][v]);
    }
    for (int v = 0; v < n; v++) {
        printf(",%.4f", busbw(b, r, r->us[OUT_OF_PLACE][v]));
    }
    for (int v = 1; v < n; v++) {
        printf(",%.3f", r->us[OUT_OF_PLACE][v] / r->us[OUT_OF_PLACE][0]);
    }
    printf(",%zu,%s,%s", r->count, bench_type_name(r->type), bench_op_name(r->op));
    for (int v = 0; v < n; v++) {
        printf(",%.3f", r->us[IN_PLACE][v]);
    }
    for (int v = 0; v < n; v++) {
        printf(",%.4f", busbw(b, r, r->us[IN_PLACE][v]));
    }
    for (int p = 0; p < NUM_PLACES; p++) {
        for (int v = 0; v < n; v++) {
            print_wrong(r->wrong[p][v], 1);
        }
    }
    printf("\n");
}

static void print_rows(bench_t *b, const row_t *r)
{
    for (int v = 0; v < b->comms->n; v++) {
        for (int p = 0; p < NUM_PLACES; p++) {
            b->busbw_sum[v] += busbw(b, r, r->us[p][v]);
            b->busbw_n[v]++;
            b->wrong_total += r->wrong[p][v] > 0 ? r->wrong[p][v] : 0;
        }
    }
    if (b->o->csv) {
        print_csv(b, r);
        fflush(stdout);
        return;
    }
    for (int v = 0; v < b->comms->n; v++) {
        printf(" %11zu %13zu %8s %6s %-9s", r->bytes, r->count, bench_type_name(r->type),
               bench_op_name(r->op), variant_name(b, v));
        for (int p = 0; p < NUM_PLACES; p++) {
            double us = r->us[p][v];
            printf(" %9.2f %7.3f %7.3f", us, algbw(r, us), busbw(b, r, us));
            print_wrong(r->wrong[p][v], 0);
        }
        printf(" %6.2f %6.2f\n", r->us[OUT_OF_PLACE][v] / r->us[OUT_OF_PLACE][0],
               r->us[IN_PLACE][v] / r->us[IN_PLACE][0]);
    }
    fflush(stdout);
}

static void print_footer(const bench_t *b)
{
    if (b->o->csv) {
        return;
    }
    if (b->o->check) {
        printf("# Wrong elements       : %lld %s\n", b->wrong_total,
               b->wrong_total == 0 ? "OK" : "FAILED");
    } else {
        printf("# Wrong elements       : not checked (-c 0)\n");
    }
    for (int v = 0; v < b->comms->n; v++) {
        printf("# Avg bus bandwidth    : %.3f (%s)\n",
               b->busbw_n[v] > 0 ? b->busbw_sum[v] / b->busbw_n[v] : 0.0, variant_name(b, v));
    }
}

/* --- the run -------------------------------------------------------------------------- */

static void run_type_op(bench_t *b, bench_type_t type, bench_op_t op)
{
    const bench_options_t *o = b->o;
    size_t size = bench_type_size(type), max_count = o->max_bytes / size;
    bench_fill(type, op, b->rank, max_count, b->host); /* the send buffer stays so */
    copy_or_die(b, b->sbuf, b->host, max_count * size);
    size_t last = 0;
    for (size_t bytes = o->min_bytes; bytes <= o->max_bytes; bytes *= o->factor) {
        row_t r = { .count = bytes / size, .type = type, .op = op };
        r.bytes = r.count * size;
        if (r.count > 0 && r.bytes != last) { /* sizes below one element: no row */
            measure(b, &r);
            if (b->rank == 0) {
                print_rows(b, &r);
            }
            last = r.bytes;
        }
        if (bytes > o->max_bytes / o->factor) {
            break;
        }
    }
}

static int local_rank(void)
{
    MPI_Comm node;
    int rank = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &rank);
    MPI_Comm_free(&node);
    return rank;
}

/* Buffers for the largest message; 0, or 1 after saying why not. */
static int alloc_buffers(bench_t *b)
{
    const bench_options_t *o = b->o;
    char why[160] = "";
    int ok = 1;
    if (o->cuda && bench_mem_use_device(local_rank(), why, sizeof(why)) != 0) {
        ok = 0;
    }
    if (ok) {
        b->sbuf = bench_mem_alloc(o->cuda, o->max_bytes);
        b->rbuf = bench_mem_alloc(o->cuda, o->max_bytes);
        b->host = bench_mem_alloc(0, o->max_bytes);
        ok = b->sbuf != NULL && b->rbuf != NULL && b->host != NULL;
        snprintf(why, sizeof(why), "cannot allocate 3 buffers of %zu bytes", o->max_bytes);
    }
    /* one line, from the first rank that failed */
    int mine = ok ? b->nranks : b->rank, first = 0;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == b->rank) {
        fprintf(stderr, TOOL ": rank %d: %s\n", b->rank, why);
    }
    return first == b->nranks ? 0 : 1;
}

static void free_buffers(bench_t *b)
{
    bench_mem_free(b->o->cuda, b->sbuf);
    bench_mem_free(b->o->cuda, b->rbuf);
    bench_mem_free(0, b->host);
}

static int bench(const bench_options_t *o, int rank, int nranks)
{
    bench_t b = { .o = o, .rank = rank, .nranks = nranks };
    if (alloc_buffers(&b) != 0) {
        free_buffers(&b);
        /* no GPU for -m cuda is a usage error, as a bad option value */
        return o->cuda ? 2 : 1;
    }
    bench_comms_t comms;
    bench_comms_open(o, &comms);
    b.comms = &comms;
    int status = 0;
    if (comms.n == 0) {
        if (rank == 0) {
            for (int s = 0; s < comms.nskipped; s++) {
                fprintf(stderr, TOOL ": skipped %s: %s\n", bench_variants[comms.skipped[s]].name,
                        comms.why[s]);
            }
            fprintf(stderr, TOOL ": none of the selections can run in this job\n");
        }
        status = 1;
    } else {
        if (rank == 0) {
            print_header(&b);
        }
        for (int t = 0; t < o->ntypes; t++) {
            for (int p = 0; p < o->nops; p++) {
                run_type_op(&b, o->types[t], o->ops[p]);
            }
        }
        if (rank == 0) {
            print_footer(&b);
        }
        long long wrong = b.wrong_total;
        MPI_Bcast(&wrong, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        status = wrong > 0 ? 1 : 0;
    }
    bench_comms_close(&comms);
    free_buffers(&b);
    return status;
}

int main(int argc, char **argv)
{
    /* A benchmark of crux opts in to crux for the job (an installed crux
     * takes part only where asked, docs/usage/install.md); a value the user
     * set, 0 included, stands. */
    setenv("OMPI_MCA_coll_crux_enable", "1", 0);
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    bench_options_t o;
    char err[256];
    int status = 0;
    if (bench_parse(argc, argv, &o, err, sizeof(err)) != 0) {
        if (rank == 0) {
            fprintf(stderr, TOOL ": %s\n", err);
        }
        status = 2;
    } else if (o.action == BENCH_HELP) {
        if (rank == 0) {
            bench_usage(stdout);
        }
    } else if (o.action == BENCH_VERSION) {
        if (rank == 0) {
            crux_version_print(stdout, TOOL);
        }
    } else {
        status = bench(&o, rank, nranks);
    }
    MPI_Finalize();
    return status;
}

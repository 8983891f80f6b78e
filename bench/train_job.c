/* crux-bench-train: a training job's stand-in for the testbed
 * (scripts/testbed, bench/testbed.sh): iterations of the Crux paper's model
 * of data-parallel training, on every rank:
 *
 *   compute (1 - overlap) * C      (the GPU's time: a sleep, the CPU stays free)
 *   MPI_Allreduce of the gradients (B bytes of floats, summed), while
 *   the remaining overlap * C of compute runs beside it
 *   the iteration ends when both are done
 *
 * so that overlap is the fraction of the compute the communication can hide
 * behind, as in crux-sim and crux-sched.  Rank 0 decides when to stop (after
 * --seconds of iterations, or --iterations) and says so inside the
 * Allreduce (the first element of its contribution), so every rank runs the
 * same calls; every result is checked.  The first Allreduce, before the
 * timed iterations, sets up the communicator's channels.
 *
 * Rank 0 writes one line per iteration to --log (or stdout):
 *   iter N start S compute C comm X period P
 * S the iteration's start (seconds since the epoch, CLOCK_REALTIME), C the
 * compute it did, X the Allreduce's time, P the iteration's time; and at
 * the end
 *   done iterations N held H busy U utilization F cpu_s P
 * with H from the first iteration's start to the last one's end, U the
 * compute done (N x C): the GPU time the job held and used; and P the
 * processor time all its ranks took (user and system), to show that the
 * machine's cores were not what the job waited for.
 *
 * usage: crux-bench-train [--model gpt|bert|resnet] [--compute-s C] [--bytes B]
 *                         [--overlap O] [--seconds T | --iterations N] [--log FILE] */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* The model classes of the Crux paper's testbed, at the testbed's scale (a
 * 50 Mbit/s spine cable carries a GPT iteration's gradients in about
 * 1.4 s), in decreasing GPU intensity (compute per byte of gradients):
 * GPT, large gradients and long iterations; ResNet, small gradients and
 * short iterations; BERT, gradients nearly as large as GPT's for a quarter
 * of its compute.  As their profiles show them (W from the compute between
 * calls) their intensities differ by 1.4x and 2.8x, so that measured ones
 * keep their order. */
typedef struct {
    const char *name;
    double compute_s, bytes, overlap;
} model_t;
static const model_t models[] = {
    { "gpt", 4.0, 8e6, 0.2 },
    { "resnet", 0.6, 1.5e6, 0.3 },
    { "bert", 1.0, 5e6, 0.5 },
};

static const char usage[] =
    "usage: crux-bench-train [--model gpt|bert|resnet] [--compute-s C] [--bytes B]\n"
    "                        [--overlap O] [--seconds T | --iterations N] [--log FILE]\n"
    "  --model M        the figures of a model class (gpt: 4 s, 8e6 B, 0.2;\n"
    "                   resnet: 0.6 s, 1.5e6 B, 0.3; bert: 1 s, 5e6 B, 0.5); the\n"
    "                   options after it change them\n"
    "  --compute-s C    compute time of one iteration, 0.001-600 s\n"
    "  --bytes B        gradient bytes Allreduced per iteration (floats), 8-1e9\n"
    "  --overlap O      fraction of the compute the Allreduce hides behind, 0-1\n"
    "  --seconds T      run iterations for T seconds (60), or\n"
    "  --iterations N   run N iterations\n"
    "  --log FILE       rank 0's per-iteration lines (default: stdout)\n";

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Sleep until the monotonic clock reads `until` (seconds). */
static void sleep_until(double until)
{
    struct timespec t = { .tv_sec = (time_t)until,
                          .tv_nsec = (long)((until - floor(until)) * 1e9) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
    }
}

static int number(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "crux-bench-train: %s: \"%s\" is not a number in %g-%g\n", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

typedef struct {
    model_t m;
    double seconds;
    long iterations;
    const char *log;
} opts_t;

static int parse(int argc, char **argv, opts_t *o)
{
    static const struct option longs[] = {
        { "model", required_argument, NULL, 'm' },
        { "compute-s", required_argument, NULL, 'c' },
        { "bytes", required_argument, NULL, 'b' },
        { "overlap", required_argument, NULL, 'o' },
        { "seconds", required_argument, NULL, 's' },
        { "iterations", required_argument, NULL, 'n' },
        { "log", required_argument, NULL, 'l' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (opts_t){ .m = models[0], .seconds = 60, .iterations = 0, .log = NULL };
    double v;
    int opt;
    while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (opt) {
        case 'm': {
            size_t i;
            for (i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
                if (strcmp(optarg, models[i].name) == 0) {
                    o->m = models[i];
                    break;
                }
            }
            if (i == sizeof(models) / sizeof(models[0])) {
                fprintf(stderr, "crux-bench-train: --model: \"%s\" is not gpt, bert or resnet\n",
                        optarg);
                return 2;
            }
            break;
        }
        case 'c':
            if (number("--compute-s", optarg, 0.001, 600, &o->m.compute_s) != 0) {
                return 2;
            }
            break;
        case 'b':
            if (number("--bytes", optarg, 8, 1e9, &o->m.bytes) != 0) {
                return 2;
            }
            break;
        case 'o':
            if (number("--overlap", optarg, 0, 1, &o->m.overlap) != 0) {
                return 2;
            }
            break;
        case 's':
            if (number("--seconds", optarg, 0.001, 1e6, &o->seconds) != 0) {
                return 2;
            }
            o->iterations = 0;
            break;
        case 'n':
            if (number("--iterations", optarg, 1, 1e9, &v) != 0) {
                return 2;
            }
            o->iterations = (long)v;
            break;
        case 'l': o->log = optarg; break;
        case 'h': fputs(usage, stdout); return 1;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "crux-bench-train: unexpected argument \"%s\"\n%s", argv[optind], usage);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    opts_t o;
    int rc = parse(argc, argv, &o);
    if (rc != 0) {
        MPI_Finalize();
        return rc == 1 ? 0 : 2;
    }
    FILE *log = stdout;
    if (rank == 0 && o.log != NULL && (log = fopen(o.log, "w")) == NULL) {
        fprintf(stderr, "crux-bench-train: %s: %s\n", o.log, strerror(errno));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size_t count = (size_t)(o.m.bytes / sizeof(float));
    float *in = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
    if (in == NULL || out == NULL) {
        fprintf(stderr, "crux-bench-train: no memory for %zu floats\n", count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < count; i++) {
        in[i] = (float)(rank + 1); /* sums to size (size + 1) / 2 */
    }
    const float expect = (float)size * (float)(size + 1) / 2.0f;
    in[0] = 0;
    MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* sets up */
    double epoch;
    {
        struct timespec r;
        clock_gettime(CLOCK_REALTIME, &r);
        epoch = (double)r.tv_sec + (double)r.tv_nsec * 1e-9 - mono();
    }
    if (rank == 0) {
        fprintf(log, "# crux-bench-train: %d ranks, compute %.3f s, %.0f bytes, overlap %.2f\n",
                size, o.m.compute_s, o.m.bytes, o.m.overlap);
        fflush(log);
    }
    double first = mono(), end = first;
    long n = 0;
    for (;;) {
        double start = mono();
        sleep_until(start + (1 - o.m.overlap) * o.m.compute_s);
        double comm = mono();
        int stop =
            rank == 0 && (o.iterations > 0 ? n + 1 >= o.iterations : comm - first >= o.seconds);
        in[0] = stop ? 1.0f : 0.0f;
        if (MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
            fprintf(stderr, "crux-bench-train: MPI_Allreduce failed\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        double comm_end = mono();
        /* the gradients: every element but the flag, a few a call */
        for (size_t i = 1 + (size_t)n % 7; i < count; i += 1 + count / 8) {
            if (out[i] != expect) {
                fprintf(stderr,
                        "crux-bench-train: rank %d, iteration %ld: element %zu is %g, not %g\n",
                        rank, n, i, (double)out[i], (double)expect);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        sleep_until(comm + o.m.overlap * o.m.compute_s);
        end = mono();
        n++;
        if (rank == 0) {
            fprintf(log, "iter %ld start %.6f compute %.6f comm %.6f period %.6f\n", n,
                    epoch + start, o.m.compute_s, comm_end - comm, end - start);
            fflush(log);
        }
        if (out[0] > 0.5f) {
            break;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6,
           cpu_all = 0;
    MPI_Reduce(&cpu, &cpu_all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double held = end - first, busy = (double)n * o.m.compute_s;
        fprintf(log, "done iterations %ld held %.6f busy %.6f utilization %.6f cpu_s %.3f\n", n,
                held, busy, held > 0 ? busy / held : 0, cpu_all);
        if (log != stdout) {
            fclose(log);
        }
    }
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}

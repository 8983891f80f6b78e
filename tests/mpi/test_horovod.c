/* What Horovod's MPI path does, without Horovod (horovod/common/mpi/
 * mpi_context.cc, ops/mpi_operations.cc):
 *   - MPI_Init_thread(MPI_THREAD_MULTIPLE), a duplicate of MPI_COMM_WORLD,
 *     a local communicator (MPI_COMM_TYPE_SHARED) and a cross communicator
 *     (split by local rank);
 *   - a background thread that owns all of Horovod's MPI traffic: a small
 *     coordination step (bit-vector Allreduce, Bcast), then for each fused
 *     response the tensors copied into a fusion buffer of up to FUSION MiB,
 *     one in-place MPI_Allreduce on it, a scale by 1/size for AVERAGE, and
 *     the tensors copied out; a tensor alone goes out of place;
 *   - float32 with MPI_SUM; float16 as MPI_Type_contiguous(2, MPI_BYTE) with
 *     a user-defined commutative sum op (half-float add in host code);
 *   - meanwhile the main (framework) thread makes MPI calls of its own on
 *     another communicator, as a user's metrics code does.
 * Every element of every tensor is checked exactly.
 * Usage: test_horovod [FUSION_MIB [STEPS]]   (default 128 MiB, 2 steps) */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap_mpi.h"

static int rank, size;
static size_t fusion_bytes;
static int steps;

/* ---- IEEE half precision, as Horovod's half.h: round to nearest even --- */

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) { /* inf, nan */
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) { /* normal */
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) { /* zero */
        bits = sign;
    } else { /* subnormal: normalise */
        exp = 113;
        while (!(man & 0x400)) {
            man <<= 1;
            exp--;
        }
        bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t man = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) {
        return sign | 0x7c00 | (man ? 0x200 : 0);
    }
    if (exp >= 0x1f) {
        return sign | 0x7c00; /* overflow: inf */
    }
    if (exp <= 0) { /* subnormal or zero */
        if (exp < -10) {
            return sign;
        }
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp), half = man >> shift;
        uint32_t rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        half += rest > mid || (rest == mid && (half & 1));
        return sign | (uint16_t)half;
    }
    uint32_t half = ((uint32_t)exp << 10) | (man >> 13), rest = man & 0x1fff;
    half += rest > 0x1000 || (rest == 0x1000 && (half & 1)); /* may carry into exp */
    return sign | (uint16_t)half;
}

/* Horovod's float16_sum: commutative, elementwise through float. */
static void float16_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) {
        b[i] = float_to_half(half_to_float(a[i]) + half_to_float(b[i]));
    }
}

/* ---- tensors ------------------------------------------------------------ */

typedef struct {
    size_t count;
    bool half; /* float16, else float32 */
    void *data;
} tensor_t;

/* Element i of tensor t on rank r: small multiples of 1/4, so every partial
 * sum over up to 64 ranks is exact in float32 and in float16. */
static float value(int t, int r, size_t i)
{
    return (float)((r * 3 + (int)(i % 61) * 7 + t) % 16) * 0.25f;
}

/* value() repeats every 61 elements: the 61 sums of tensor t. */
static void expected_sums(int t, float sums[61])
{
    for (size_t i = 0; i < 61; i++) {
        sums[i] = 0;
        for (int r = 0; r < size; r++) {
            sums[i] += value(t, r, i);
        }
    }
}

static void fill(tensor_t *x, int t)
{
    for (size_t i = 0; i < x->count; i++) {
        if (x->half) {
            ((uint16_t *)x->data)[i] = float_to_half(value(t, rank, i));
        } else {
            ((float *)x->data)[i] = value(t, rank, i);
        }
    }
}

/* AVERAGE as Horovod does it: SUM, then a scale by 1/size in the tensor's
 * own precision; the check computes the same expression. */
static bool check(const tensor_t *x, int t, bool average, float scale)
{
    float sums[61];
    expected_sums(t, sums);
    for (size_t i = 0; i < x->count; i++) {
        float s = sums[i % 61];
        if (x->half) {
            uint16_t want = float_to_half(s);
            if (average) {
                want = float_to_half(half_to_float(want) * scale);
            }
            if (((uint16_t *)x->data)[i] != want) {
                tap_diag("rank %d: float16 tensor %d element %zu: %#x, expected %#x", rank, t, i,
                         ((uint16_t *)x->data)[i], want);
                return false;
            }
        } else {
            float want = average ? s * scale : s;
            if (((float *)x->data)[i] != want) {
                tap_diag("rank %d: float32 tensor %d element %zu: %g, expected %g", rank, t, i,
                         (double)((float *)x->data)[i], (double)want);
                return false;
            }
        }
    }
    return true;
}

static void scale_buffer(void *buf, size_t count, bool half, float scale)
{
    for (size_t i = 0; i < count; i++) {
        if (half) {
            uint16_t *h = (uint16_t *)buf + i;
            *h = float_to_half(half_to_float(*h) * scale);
        } else {
            ((float *)buf)[i] *= scale;
        }
    }
}

/* ---- the background thread --------------------------------------------- */

typedef struct {
    MPI_Comm comm; /* Horovod's duplicate of MPI_COMM_WORLD */
    MPI_Datatype float16;
    MPI_Op float16_sum;
    bool fused_ok, single_ok, half_ok, coord_ok;
} background_t;

/* Horovod's coordination: which tensors are ready everywhere (a bit vector
 * reduced with BAND), then the coordinator's response list broadcast. */
static bool coordinate(MPI_Comm comm, int ntensors)
{
    long long bits[4] = { -1, -1, -1, -1 };
    int responses = rank == 0 ? ntensors : -1;
    bool ok = MPI_Allreduce(MPI_IN_PLACE, bits, 4, MPI_LONG_LONG, MPI_BAND, comm) == MPI_SUCCESS;
    ok = MPI_Bcast(&responses, 1, MPI_INT, 0, comm) == MPI_SUCCESS && ok;
    return ok && bits[0] == -1 && bits[3] == -1 && responses == ntensors;
}

/* Fuse tensors [first, last) into buf, allreduce in place, scale, copy out. */
static bool fused_allreduce(background_t *bg, tensor_t *x, int first, int last, char *buf,
                            bool average)
{
    size_t esize = x[first].half ? 2 : 4, offset = 0;
    for (int t = first; t < last; t++) {
        memcpy(buf + offset, x[t].data, x[t].count * esize);
        offset += x[t].count * esize;
    }
    size_t count = offset / esize;
    int rc =
        x[first].half
            ? MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, bg->float16, bg->float16_sum, bg->comm)
            : MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, bg->comm);
    if (rc != MPI_SUCCESS) {
        tap_diag("rank %d: MPI_Allreduce of the fusion buffer failed (%d)", rank, rc);
        return false;
    }
    if (average) {
        scale_buffer(buf, count, x[first].half, 1.0f / (float)size);
    }
    bool ok = true;
    offset = 0;
    for (int t = first; t < last; t++) {
        memcpy(x[t].data, buf + offset, x[t].count * esize);
        offset += x[t].count * esize;
        ok = check(&x[t], t, average, 1.0f / (float)size) && ok;
    }
    return ok;
}

/* Tensors of mixed sizes filling most of a budget, odd counts so that
 * tensor boundaries fall anywhere; the last four are small. */
static int make_tensors(tensor_t *x, bool half, size_t budget)
{
    size_t esize = half ? 2 : 4, n = budget / esize;
    const size_t counts[] = {
        n / 2 - 3, n / 4 + 5, n / 8 - 7, n / 16 + 1, 65539, 4099, 1000, 3, 1
    };
    int k = 0;
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        if (counts[c] == 0 || counts[c] > n) {
            continue;
        }
        n -= counts[c];
        x[k].count = counts[c];
        x[k].half = half;
        x[k].data = malloc(counts[c] * esize);
        if (x[k].data == NULL) {
            break;
        }
        k++;
    }
    return k;
}

static void *background(void *arg)
{
    background_t *bg = arg;
    tensor_t f32[16], f16[16];
    int nf32 = make_tensors(f32, false, fusion_bytes - (fusion_bytes >> 5));
    int nf16 = make_tensors(f16, true, fusion_bytes / 8);
    char *fusion = malloc(fusion_bytes);
    bg->fused_ok = bg->single_ok = bg->half_ok = bg->coord_ok = fusion != NULL;
    for (int step = 0; step < steps && fusion != NULL; step++) {
        bool average = step % 2 == 0;
        for (int t = 0; t < nf32; t++) {
            fill(&f32[t], t);
        }
        for (int t = 0; t < nf16; t++) {
            fill(&f16[t], t);
        }
        bg->coord_ok = coordinate(bg->comm, nf32 + nf16) && bg->coord_ok;
        /* every float32 tensor in one fusion buffer, then the small ones
         * again in a second response, as a later cycle would */
        bg->fused_ok = fused_allreduce(bg, f32, 0, nf32, fusion, average) && bg->fused_ok;
        for (int t = nf32 - 4; t < nf32; t++) {
            fill(&f32[t], t);
        }
        bg->fused_ok = fused_allreduce(bg, f32, nf32 - 4, nf32, fusion, average) && bg->fused_ok;
        bg->half_ok = fused_allreduce(bg, f16, 0, nf16, fusion, average) && bg->half_ok;
        /* a tensor alone: out of place, from the input to the output tensor */
        tensor_t out = f32[1];
        out.data = fusion;
        fill(&f32[1], 1);
        bg->single_ok = MPI_Allreduce(f32[1].data, out.data, (int)out.count, MPI_FLOAT, MPI_SUM,
                                      bg->comm) == MPI_SUCCESS &&
                        check(&out, 1, false, 1) && bg->single_ok;
    }
    for (int t = 0; t < nf32; t++) {
        free(f32[t].data);
    }
    for (int t = 0; t < nf16; t++) {
        free(f16[t].data);
    }
    free(fusion);
    return NULL;
}

/* ---- the main thread ---------------------------------------------------- */

/* The framework's own MPI calls (a metric averaged every few steps) on a
 * communicator of its own, while the background thread runs. */
static bool user_traffic(MPI_Comm comm)
{
    enum { N = 70001 };
    int *v = malloc(N * sizeof(int));
    bool ok = v != NULL;
    for (int it = 0; ok && it < 20; it++) {
        for (int i = 0; i < N; i++) {
            v[i] = rank + i % 5 + it;
        }
        ok = MPI_Allreduce(MPI_IN_PLACE, v, N, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS;
        for (int i = 0; ok && i < N; i++) {
            ok = v[i] == size * (size - 1) / 2 + size * (i % 5 + it);
        }
    }
    free(v);
    return ok;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    fusion_bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 128) << 20;
    steps = argc > 2 ? atoi(argv[2]) : 2;
    tap_check(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");

    /* mpi_context.cc: dup, local (shared memory) and cross communicators */
    background_t bg;
    MPI_Comm local, cross, user;
    MPI_Comm_dup(MPI_COMM_WORLD, &bg.comm);
    MPI_Comm_set_name(bg.comm, "horovod");
    MPI_Comm_set_errhandler(bg.comm, MPI_ERRORS_RETURN);
    MPI_Comm_split_type(bg.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int local_rank, local_size, cross_rank, cross_size;
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_size);
    MPI_Comm_split(bg.comm, local_rank, rank, &cross);
    MPI_Comm_rank(cross, &cross_rank);
    MPI_Comm_size(cross, &cross_size);
    MPI_Comm_set_name(local, "horovod-local");
    MPI_Comm_set_name(cross, "horovod-cross");
    tap_check(local_size * cross_size == size && cross_rank == rank / local_size,
              "local and cross communicators (%d x %d on rank 0)", local_size, cross_size);

    /* a hierarchical sum through them equals the global one */
    enum { H = 100003 };
    float *h = malloc(H * sizeof(float));
    for (int i = 0; i < H; i++) {
        h[i] = value(0, rank, (size_t)i);
    }
    bool ok = MPI_Allreduce(MPI_IN_PLACE, h, H, MPI_FLOAT, MPI_SUM, local) == MPI_SUCCESS &&
              (local_rank != 0 ||
               MPI_Allreduce(MPI_IN_PLACE, h, H, MPI_FLOAT, MPI_SUM, cross) == MPI_SUCCESS) &&
              MPI_Bcast(h, H, MPI_FLOAT, 0, local) == MPI_SUCCESS;
    float sums[61];
    expected_sums(0, sums);
    for (int i = 0; ok && i < H; i++) {
        ok = h[i] == sums[i % 61];
    }
    tap_check(ok, "Allreduce over the local, then the cross communicator");
    free(h);

    /* half.h / mpi_context.cc: float16 as two bytes, with its own sum */
    MPI_Type_contiguous(2, MPI_BYTE, &bg.float16);
    MPI_Type_commit(&bg.float16);
    MPI_Op_create(float16_sum, 1, &bg.float16_sum);

    MPI_Comm_dup(MPI_COMM_WORLD, &user);
    MPI_Comm_set_name(user, "framework");
    pthread_t thread;
    pthread_create(&thread, NULL, background, &bg);
    bool user_ok = user_traffic(user);
    pthread_join(thread, NULL);

    tap_check(bg.coord_ok, "coordination (bit-vector Allreduce, Bcast) from the background thread");
    tap_check(bg.fused_ok, "float32 fusion buffer of %zu MiB, in place, SUM and AVERAGE, %d steps",
              fusion_bytes >> 20, steps);
    tap_check(bg.half_ok, "float16 fusion buffer (2-byte type, user-defined sum), SUM and AVERAGE");
    tap_check(bg.single_ok, "a tensor alone, out of place");
    tap_check(user_ok, "the main thread's own Allreduces meanwhile, on another communicator");

    MPI_Op_free(&bg.float16_sum);
    MPI_Type_free(&bg.float16);
    MPI_Comm_free(&user);
    MPI_Comm_free(&cross);
    MPI_Comm_free(&local);
    MPI_Comm_free(&bg.comm);
    MPI_Finalize();
    return 0;
}

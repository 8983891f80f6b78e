/* MPI_Allreduce correctness under whatever coll components mpirun selected.
 * Usage: test_allreduce SUITE [SUITE...]; suites:
 *   types   every predefined datatype x every op MPI allows on it, in and
 *           out of place, at counts that do and do not divide by the size
 *   counts  float and int sums from 0 elements to over 16 MiB, primes too
 *   comms   MPI_COMM_SELF, split, reversed-order and duplicated communicators
 *   many    1000 communicators created, used and freed
 *   nonblocking  MPI_Iallreduce and a persistent MPI_Allreduce_init-free mix
 *   fallback     user-defined ops (commutative and not), derived datatypes,
 *                MINLOC/MAXLOC
 *   bits    float sum of random data: every rank holds identical bits
 *   info    communicators that pick crux's algorithm with the info keys
 *           "crux_allreduce_algorithm" (the older single knob) and
 *           "crux_allreduce_<axis>" (topology, handoff, memory_path), junk
 *           among them; each named "info KEY=VALUE[,KEY=VALUE]"
 *   mismatch  ranks passing different counts, or datatypes of different
 *           sizes, to one Allreduce: an error on every rank, and on every
 *           rank again at the communicator's next Allreduce (docs/usage) */
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap_mpi.h"

static int rank, size;

/* ---- values every rank can compute for every rank ------------------------ */

typedef enum { K_SIGNED, K_UNSIGNED, K_FLOAT, K_COMPLEX, K_BOOL, K_LOGICAL } kind_t;

typedef struct {
    MPI_Datatype type;
    const char *name;
    kind_t kind;
} dtype_t;

typedef struct {
    MPI_Op op;
    const char *name;
} op_t;

static const op_t ARITH[] = {
    { MPI_SUM, "sum" }, { MPI_PROD, "prod" }, { MPI_MAX, "max" }, { MPI_MIN, "min" }
};
static const op_t LOGIC[] = { { MPI_LAND, "land" }, { MPI_LOR, "lor" }, { MPI_LXOR, "lxor" } };
static const op_t BITS[] = { { MPI_BAND, "band" }, { MPI_BOR, "bor" }, { MPI_BXOR, "bxor" } };

/* The input element i of rank r for op 'op', as an integer small enough that
 * every type holds every partial result exactly. */
static long long input(MPI_Op op, kind_t kind, int r, size_t i)
{
    if (op == MPI_SUM) {
        return (long long)((r * 7 + i) % 5);
    }
    if (op == MPI_PROD) {
        return (r + i) % 7 == 0 ? 2 : 1;
    }
    if (op == MPI_MAX || op == MPI_MIN) {
        long long v = (long long)((r * 3 + i * 5) % 11);
        return kind == K_UNSIGNED ? v : v - 5;
    }
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) {
        /* non-zero other than 1 checks that any non-zero value is true */
        return (r + i) % 3 == 0 ? 0 : (kind == K_BOOL ? 1 : 2);
    }
    return (long long)((r * 37 + i * 11) & 0x7f); /* bitwise */
}

static long long combine(MPI_Op op, long long a, long long b)
{
    if (op == MPI_SUM)
        return a + b;
    if (op == MPI_PROD)
        return a * b;
    if (op == MPI_MAX)
        return a > b ? a : b;
    if (op == MPI_MIN)
        return a < b ? a : b;
    if (op == MPI_LAND)
        return (a != 0) && (b != 0);
    if (op == MPI_LOR)
        return (a != 0) || (b != 0);
    if (op == MPI_LXOR)
        return (a != 0) != (b != 0);
    if (op == MPI_BAND)
        return a & b;
    if (op == MPI_BOR)
        return a | b;
    return a ^ b;
}

static void store(void *buf, size_t i, int size_bytes, kind_t kind, long long v)
{
    char *p = (char *)buf + i * (size_t)size_bytes;
    switch (kind) {
    case K_FLOAT:
        if (size_bytes == sizeof(float))
            *(float *)p = (float)v;
        else if (size_bytes == sizeof(double))
            *(double *)p = (double)v;
        else
            *(long double *)p = (long double)v;
        return;
    case K_COMPLEX:
        if (size_bytes == sizeof(float _Complex))
            *(float _Complex *)p = (float)v + 0.0f * I;
        else if (size_bytes == sizeof(double _Complex))
            *(double _Complex *)p = (double)v;
        else
            *(long double _Complex *)p = (long double)v;
        return;
    case K_BOOL: *(bool *)p = v != 0; return;
    default: /* integers and logicals: little-endian low bytes */
        switch (size_bytes) {
        case 1: *(int8_t *)p = (int8_t)v; return;
        case 2: *(int16_t *)p = (int16_t)v; return;
        case 4: *(int32_t *)p = (int32_t)v; return;
        default: *(int64_t *)p = (int64_t)v; return;
        }
    }
}

static bool matches(const void *buf, size_t i, int size_bytes, kind_t kind, long long v)
{
    char expect[64] = { 0 }, got[64] = { 0 };
    store(expect, 0, size_bytes, kind, v);
    memcpy(got, (const char *)buf + i * (size_t)size_bytes, (size_t)size_bytes);
    if (kind == K_FLOAT && size_bytes == sizeof(long double)) {
        return *(long double *)got == *(long double *)expect; /* padding bytes differ */
    }
    if (kind == K_COMPLEX && size_bytes == sizeof(long double _Complex)) {
        return *(long double _Complex *)got == *(long double _Complex *)expect;
    }
    if (kind == K_BOOL) {
        return (*(bool *)got) == (v != 0);
    }
    if (kind == K_LOGICAL) {
        return (*(int32_t *)got != 0) == (v != 0);
    }
    return memcmp(got, expect, (size_t)size_bytes) == 0;
}

/* Run one allreduce of 'count' elements on 'comm' and check every element. */
static bool check_allreduce(MPI_Comm comm, MPI_Datatype type, kind_t kind, MPI_Op op, size_t count,
                            bool in_place)
{
    int csize, crank, esize;
    MPI_Comm_size(comm, &csize);
    MPI_Comm_rank(comm, &crank);
    MPI_Type_size(type, &esize);
    size_t bytes = count * (size_t)esize + 1;
    char *sbuf = malloc(bytes), *rbuf = malloc(bytes);
    if (sbuf == NULL || rbuf == NULL) {
        free(sbuf);
        free(rbuf);
        return false;
    }
    memset(rbuf, 0x5a, bytes);
    for (size_t i = 0; i < count; i++) {
        store(in_place ? rbuf : sbuf, i, esize, kind, input(op, kind, crank, i));
    }
    int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : sbuf, rbuf, (int)count, type, op, comm);
    bool ok = rc == MPI_SUCCESS && (unsigned char)rbuf[count * (size_t)esize] == 0x5a;
    for (size_t i = 0; ok && i < count; i++) {
        long long v = input(op, kind, 0, i);
        for (int r = 1; r < csize; r++) {
            v = combine(op, v, input(op, kind, r, i));
        }
        if (!matches(rbuf, i, esize, kind, v)) {
            tap_diag("rank %d: element %zu of %zu wrong (expected %lld)", rank, i, count, v);
            ok = false;
        }
    }
    free(sbuf);
    free(rbuf);
    return ok;
}

/* ---- suites --------------------------------------------------------------- */

static void suite_types(void)
{
    const dtype_t types[] = {
        { MPI_CHAR, "MPI_CHAR", K_SIGNED },
        { MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", K_SIGNED },
        { MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", K_UNSIGNED },
        { MPI_SHORT, "MPI_SHORT", K_SIGNED },
        { MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT", K_UNSIGNED },
        { MPI_INT, "MPI_INT", K_SIGNED },
        { MPI_UNSIGNED, "MPI_UNSIGNED", K_UNSIGNED },
        { MPI_LONG, "MPI_LONG", K_SIGNED },
        { MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", K_UNSIGNED },
        { MPI_LONG_LONG, "MPI_LONG_LONG", K_SIGNED },
        { MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", K_UNSIGNED },
        { MPI_INT8_T, "MPI_INT8_T", K_SIGNED },
        { MPI_UINT8_T, "MPI_UINT8_T", K_UNSIGNED },
        { MPI_INT16_T, "MPI_INT16_T", K_SIGNED },
        { MPI_UINT16_T, "MPI_UINT16_T", K_UNSIGNED },
        { MPI_INT32_T, "MPI_INT32_T", K_SIGNED },
        { MPI_UINT32_T, "MPI_UINT32_T", K_UNSIGNED },
        { MPI_INT64_T, "MPI_INT64_T", K_SIGNED },
        { MPI_UINT64_T, "MPI_UINT64_T", K_UNSIGNED },
        { MPI_AINT, "MPI_AINT", K_SIGNED },
        /* Open MPI reduces MPI_OFFSET as an unsigned 64-bit integer (op.c) */
        { MPI_OFFSET, "MPI_OFFSET", K_UNSIGNED },
        { MPI_COUNT, "MPI_COUNT", K_SIGNED },
        { MPI_INTEGER, "MPI_INTEGER", K_SIGNED },
        { MPI_FLOAT, "MPI_FLOAT", K_FLOAT },
        { MPI_DOUBLE, "MPI_DOUBLE", K_FLOAT },
        { MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", K_FLOAT },
        { MPI_REAL, "MPI_REAL", K_FLOAT },
        { MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", K_FLOAT },
        { MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", K_COMPLEX },
        { MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", K_COMPLEX },
        { MPI_C_LONG_DOUBLE_COMPLEX, "MPI_C_LONG_DOUBLE_COMPLEX", K_COMPLEX },
        { MPI_COMPLEX, "MPI_COMPLEX", K_COMPLEX },
        { MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", K_COMPLEX },
        { MPI_C_BOOL, "MPI_C_BOOL", K_BOOL },
        { MPI_LOGICAL, "MPI_LOGICAL", K_LOGICAL },
        { MPI_BYTE, "MPI_BYTE", K_UNSIGNED },
    };
    const size_t counts[] = { 1, 7, 997, 65537 };
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        const dtype_t *d = &types[t];
        const op_t *ops;
        size_t nops;
        const op_t all_int[] = { ARITH[0], ARITH[1], ARITH[2], ARITH[3], LOGIC[0],
                                 LOGIC[1], LOGIC[2], BITS[0],  BITS[1],  BITS[2] };
        switch (d->kind) {
        case K_SIGNED:
        case K_UNSIGNED:
            ops = d->type == MPI_BYTE ? BITS : all_int;
            nops = d->type == MPI_BYTE ? 3 : 10;
            if (d->type == MPI_CHAR) { /* MPI only defines sum on it via Open MPI */
                nops = 1;
            }
            if (d->type == MPI_INTEGER) { /* Fortran integer: no logical ops */
                static const op_t arith_bits[] = { { MPI_SUM, "sum" },   { MPI_PROD, "prod" },
                                                   { MPI_MAX, "max" },   { MPI_MIN, "min" },
                                                   { MPI_BAND, "band" }, { MPI_BOR, "bor" },
                                                   { MPI_BXOR, "bxor" } };
                ops = arith_bits;
                nops = 7;
            }
            break;
        case K_FLOAT:
            ops = ARITH;
            nops = 4;
            break;
        case K_COMPLEX:
            ops = ARITH;
            nops = 2;
            break;
        default:
            ops = LOGIC;
            nops = 3;
            break;
        }
        for (size_t o = 0; o < nops; o++) {
            for (int in_place = 0; in_place < 2; in_place++) {
                bool ok = true;
                for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                    ok = check_allreduce(MPI_COMM_WORLD, d->type, d->kind, ops[o].op, counts[c],
                                         in_place) &&
                         ok;
                }
                tap_check(ok, "%s %s %s, counts 1 to 65537", d->name, ops[o].name,
                          in_place ? "in place" : "out of place");
            }
        }
    }
}

static void suite_counts(void)
{
    const size_t counts[] = {
        0,    1,    2,     3,     5,      13,      31,      127,    509,
        1021, 4093, 16381, 65521, 262139, 1048573, 4194301, 4194319 /* > 16 MiB of floats */
    };
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            bool ok =
                check_allreduce(MPI_COMM_WORLD, MPI_FLOAT, K_FLOAT, MPI_SUM, counts[c], in_place);
            ok = check_allreduce(MPI_COMM_WORLD, MPI_INT, K_SIGNED, MPI_SUM, counts[c], in_place) &&
                 ok;
            tap_check(ok, "float and int sum of %zu elements %s", counts[c],
                      in_place ? "in place" : "out of place");
        }
    }
}

static void suite_comms(void)
{
    bool ok = check_allreduce(MPI_COMM_SELF, MPI_DOUBLE, K_FLOAT, MPI_SUM, 100000, false) &&
              check_allreduce(MPI_COMM_SELF, MPI_DOUBLE, K_FLOAT, MPI_SUM, 100000, true);
    tap_check(ok, "MPI_COMM_SELF");

    MPI_Comm split, reversed, dup;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
    ok = check_allreduce(split, MPI_FLOAT, K_FLOAT, MPI_SUM, 300007, false) &&
         check_allreduce(split, MPI_INT, K_SIGNED, MPI_MAX, 300007, true);
    tap_check(ok, "split by rank parity");

    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
    int rrank;
    MPI_Comm_rank(reversed, &rrank);
    ok = rrank == size - 1 - rank &&
         check_allreduce(reversed, MPI_FLOAT, K_FLOAT, MPI_SUM, 1000003, false) &&
         check_allreduce(reversed, MPI_DOUBLE, K_FLOAT, MPI_MIN, 1000003, true);
    tap_check(ok, "reversed rank order");

    MPI_Comm_dup(reversed, &dup);
    ok = check_allreduce(dup, MPI_LONG, K_SIGNED, MPI_BXOR, 77777, false);
    tap_check(ok, "duplicate of the reversed communicator");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&reversed);
    MPI_Comm_free(&split);
}

static void suite_many(void)
{
    bool ok = true;
    for (int i = 0; i < 1000 && ok; i++) {
        MPI_Comm comm;
        MPI_Comm_split(MPI_COMM_WORLD, 0, i % 2 ? rank : size - rank, &comm);
        ok = check_allreduce(comm, MPI_FLOAT, K_FLOAT, MPI_SUM, 4099, i % 3 == 0);
        MPI_Comm_free(&comm);
    }
    tap_check(ok, "1000 communicators created, used and freed");
}

static void suite_nonblocking(void)
{
    const size_t count = 200003;
    float *a = malloc(count * sizeof(float)), *b = malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) {
        a[i] = (float)input(MPI_SUM, K_FLOAT, rank, i);
    }
    MPI_Request req;
    int rc = MPI_Iallreduce(a, b, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    bool ok = rc == MPI_SUCCESS && MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS;
    for (size_t i = 0; ok && i < count; i++) {
        long long v = 0;
        for (int r = 0; r < size; r++) {
            v += input(MPI_SUM, K_FLOAT, r, i);
        }
        ok = b[i] == (float)v;
    }
    tap_check(ok, "MPI_Iallreduce float sum");

    /* a blocking Allreduce overlapping an outstanding nonblocking one */
    rc = MPI_Iallreduce(MPI_IN_PLACE, a, (int)count, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD, &req);
    ok = rc == MPI_SUCCESS &&
         check_allreduce(MPI_COMM_WORLD, MPI_INT, K_SIGNED, MPI_SUM, 99991, false);
    ok = MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && ok;
    tap_check(ok, "blocking Allreduce while an Iallreduce is outstanding");
    free(a);
    free(b);
}

/* 2x2 integer matrix product: associative, not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c[4] = { a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                     a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3] };
        memcpy(b, c, sizeof(c));
    }
}

/* Float sum for MPI_FLOAT or a vector of single floats with stride 2. */
static void add_float(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int stride = 1, blocks = *len;
    if (*type != MPI_FLOAT) {
        int ni, na, nd, combiner, ints[3];
        MPI_Aint addrs[1];
        MPI_Datatype types[1];
        MPI_Type_get_envelope(*type, &ni, &na, &nd, &combiner);
        MPI_Type_get_contents(*type, 3, 0, 1, ints, addrs, types);
        stride = ints[2];
        blocks = *len * ints[0];
    }
    for (int i = 0; i < blocks; i++) {
        ((float *)inout)[i * stride] += ((float *)in)[i * stride];
    }
}

static void suite_fallback(void)
{
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_INT, &mat);
    MPI_Type_commit(&mat);
    MPI_Op noncommutative, commutative;
    MPI_Op_create(matmul, 0, &noncommutative);
    MPI_Op_create(add_float, 1, &commutative);

    enum { N = 5000 };
    int *m = malloc(N * 4 * sizeof(int)), *r = malloc(N * 4 * sizeof(int));
    for (int k = 0; k < N; k++) { /* rank i holds [[1, i+k%3], [0, 1]] */
        int *e = m + 4 * k;
        e[0] = 1;
        e[1] = rank + k % 3;
        e[2] = 0;
        e[3] = 1;
    }
    bool ok = MPI_Allreduce(m, r, N, mat, noncommutative, MPI_COMM_WORLD) == MPI_SUCCESS;
    for (int k = 0; ok && k < N; k++) {
        int expect = 0;
        for (int i = 0; i < size; i++) {
            expect += i + k % 3;
        }
        ok = r[4 * k] == 1 && r[4 * k + 1] == expect && r[4 * k + 2] == 0 && r[4 * k + 3] == 1;
    }
    tap_check(ok, "non-commutative user op on a contiguous derived type");

    float *f = malloc(N * sizeof(float)), *g = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++) {
        f[i] = (float)(rank + i % 4);
    }
    ok = MPI_Allreduce(f, g, N, MPI_FLOAT, commutative, MPI_COMM_WORLD) == MPI_SUCCESS;
    for (int i = 0; ok && i < N; i++) {
        ok = g[i] == (float)(size * (size - 1) / 2 + size * (i % 4));
    }
    tap_check(ok, "commutative user op on MPI_FLOAT");

    struct {
        float v;
        int i;
    } in[N], out[N];
    for (int k = 0; k < N; k++) {
        in[k].v = (float)((rank * 5 + k) % size);
        in[k].i = rank;
    }
    ok = MPI_Allreduce(in, out, N, MPI_FLOAT_INT, MPI_MAXLOC, MPI_COMM_WORLD) == MPI_SUCCESS;
    for (int k = 0; ok && k < N; k++) {
        float best = -1;
        int who = -1;
        for (int i = 0; i < size; i++) {
            float v = (float)((i * 5 + k) % size);
            if (v > best) {
                best = v;
                who = i;
            }
        }
        ok = out[k].v == best && out[k].i == who;
    }
    tap_check(ok, "MPI_MAXLOC on MPI_FLOAT_INT");

    /* Open MPI defines predefined ops on predefined types only; a derived,
     * non-contiguous type takes a user op. */
    MPI_Datatype strided;
    MPI_Type_vector(N / 2, 1, 2, MPI_FLOAT, &strided);
    MPI_Type_commit(&strided);
    float *s = calloc(N, sizeof(float)), *t = calloc(N, sizeof(float));
    for (int i = 0; i < N; i++) {
        s[i] = (float)(rank + 1);
    }
    ok = MPI_Allreduce(s, t, 1, strided, commutative, MPI_COMM_WORLD) == MPI_SUCCESS;
    for (int i = 0; ok && i < N - 1; i++) {
        ok = t[i] == (i % 2 == 0 ? (float)(size * (size + 1) / 2) : 0.0f);
    }
    tap_check(ok, "strided vector datatype with a commutative user op");

    MPI_Type_free(&strided);
    MPI_Type_free(&mat);
    MPI_Op_free(&noncommutative);
    MPI_Op_free(&commutative);
    free(m);
    free(r);
    free(f);
    free(g);
    free(s);
    free(t);
}

static uint64_t fnv1a(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

static void suite_bits(void)
{
    const size_t counts[] = { 1000, 262147, 4194319 };
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t n = counts[c];
        float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
        srand48(rank * 7919 + (long)n);
        for (size_t i = 0; i < n; i++) {
            x[i] = (float)(drand48() * 2e3 - 1e3) * (float)(1 << (lrand48() % 20));
        }
        MPI_Allreduce(x, y, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        uint64_t mine = fnv1a(y, n * sizeof(float)), *all = malloc(sizeof(uint64_t) * size);
        MPI_Gather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        bool ok = true;
        for (int r = 1; rank == 0 && r < size; r++) {
            ok = ok && all[r] == all[0];
        }
        tap_check(ok, "identical bits on every rank: float sum of %zu random values", n);
        free(x);
        free(y);
        free(all);
    }
}

static void suite_info(void)
{
    /* MPI_COMM_WORLD first holds its groups (what auto and the parameters
     * ask for), so each duplicate below meets them: it may share them only
     * where they are what its own keys ask for */
    tap_check(check_allreduce(MPI_COMM_WORLD, MPI_FLOAT, K_FLOAT, MPI_SUM, 1000003, false),
              "MPI_COMM_WORLD before the duplicates");
    /* up to two keys (the axis after the older knob), without the prefix */
    static const char *const keys[][4] = {
        { "algorithm", "auto" },
        { "algorithm", "staged" },
        { "algorithm", "cma" },
        { "algorithm", "engine" },
        { "algorithm", "fallback" },
        { "algorithm", "no-such-algorithm" },
        { "topology", "flat" },
        { "handoff", "flags" },
        { "handoff", "lanes" },
        { "handoff", "staged" },
        { "memory_path", "host-staged" },
        { "algorithm", "engine", "handoff", "flags" },
        { "algorithm", "fallback", "topology", "flat" },
    };
    for (size_t v = 0; v < sizeof(keys) / sizeof(keys[0]); v++) {
        MPI_Info info;
        MPI_Comm comm;
        char name[MPI_MAX_OBJECT_NAME] = "info";
        MPI_Info_create(&info);
        for (int k = 0; k < 4 && keys[v][k] != NULL; k += 2) {
            char key[64];
            snprintf(key, sizeof(key), "crux_allreduce_%s", keys[v][k]);
            MPI_Info_set(info, key, keys[v][k + 1]);
            snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s%s=%s", k ? "," : " ",
                     keys[v][k], keys[v][k + 1]);
        }
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm);
        MPI_Info_free(&info);
        MPI_Comm_set_name(comm, name);
        bool ok = check_allreduce(comm, MPI_FLOAT, K_FLOAT, MPI_SUM, 1000003, false) &&
                  check_allreduce(comm, MPI_INT, K_SIGNED, MPI_MAX, 70001, true);
        tap_check(ok, "communicator %s", name);
        MPI_Comm_free(&comm);
    }
}

/* One Allreduce on a fresh duplicate of MPI_COMM_WORLD where rank 'odd'
 * passes 'odd_count' elements of 'odd_type' and the others 'count' floats;
 * then a correct one on the same communicator. */
static void mismatch_case(const char *what, int count, int odd, int odd_count,
                          MPI_Datatype odd_type)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    size_t bytes = 2 * ((size_t)count + 1) * sizeof(double); /* room for any view */
    float *in = calloc(1, bytes), *out = calloc(1, bytes);
    for (int i = 0; i < count; i++) {
        in[i] = (float)(rank + 1);
    }
    int rc = rank == odd ? MPI_Allreduce(in, out, odd_count, odd_type, MPI_SUM, comm)
                         : MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, comm);
    tap_check(rc != MPI_SUCCESS, "%s, %d floats: an error on every rank", what, count);
    rc = MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, comm);
    tap_check(rc != MPI_SUCCESS, "%s, %d floats: the communicator's next Allreduce fails too", what,
              count);
    MPI_Comm_free(&comm);
    free(in);
    free(out);
}

static void suite_mismatch(void)
{
    const int counts[] = { 4096, 262144 }; /* 16 KiB, 1 MiB: above the hand-off */
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        int n = counts[c];
        mismatch_case("rank 0 passes half the count", n, 0, n / 2, MPI_FLOAT);
        mismatch_case("the last rank passes one element more", n, size - 1, n + 1, MPI_FLOAT);
        mismatch_case("rank 0 passes as many bytes of doubles", n, 0, n / 2, MPI_DOUBLE);
    }
    /* a fresh communicator is not affected */
    tap_check(check_allreduce(MPI_COMM_WORLD, MPI_FLOAT, K_FLOAT, MPI_SUM, 262147, false),
              "MPI_COMM_WORLD's Allreduce still exact");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "types"))
            suite_types();
        else if (!strcmp(argv[a], "counts"))
            suite_counts();
        else if (!strcmp(argv[a], "comms"))
            suite_comms();
        else if (!strcmp(argv[a], "many"))
            suite_many();
        else if (!strcmp(argv[a], "nonblocking"))
            suite_nonblocking();
        else if (!strcmp(argv[a], "fallback"))
            suite_fallback();
        else if (!strcmp(argv[a], "bits"))
            suite_bits();
        else if (!strcmp(argv[a], "info"))
            suite_info();
        else if (!strcmp(argv[a], "mismatch"))
            suite_mismatch();
        else
            tap_check(0, "unknown suite %s", argv[a]);
    }
    MPI_Finalize();
    return 0;
}

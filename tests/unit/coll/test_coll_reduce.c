/* Reduction kernels: every (type, op) pair against a scalar reference written
 * independently here, at lengths that exercise vector tails, with the output
 * aliasing either input, and never writing past the count. */
#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/crux_reduce.h"
#include "tests/unit/check_main.h"

#define MAXLEN 1031 /* prime: not a multiple of any vector width */

static long double ref_arith(crux_op_t op, long double a, long double b)
{
    switch (op) {
    case CRUX_OP_SUM: return a + b;
    case CRUX_OP_PROD: return a * b;
    case CRUX_OP_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

static int64_t ref_int(crux_op_t op, int64_t a, int64_t b)
{
    switch (op) {
    case CRUX_OP_LAND: return a && b;
    case CRUX_OP_LOR: return a || b;
    case CRUX_OP_LXOR: return !a != !b;
    case CRUX_OP_BAND: return a & b;
    case CRUX_OP_BOR: return a | b;
    case CRUX_OP_BXOR: return a ^ b;
    case CRUX_OP_SUM: return (int64_t)((uint64_t)a + (uint64_t)b);
    case CRUX_OP_PROD: return (int64_t)((uint64_t)a * (uint64_t)b);
    case CRUX_OP_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* bfloat16 reference: pick the nearer of the two bfloat16 values around x,
 * ties to the even one, by comparing distances in double. */
static uint16_t ref_to_bf16(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, 4);
    uint16_t lo = (uint16_t)(bits >> 16), hi = (uint16_t)(lo + 1);
    uint32_t lb = (uint32_t)lo << 16, hb = (uint32_t)hi << 16;
    float fl, fh;
    memcpy(&fl, &lb, 4);
    memcpy(&fh, &hb, 4);
    double dl = fabs((double)x - fl), dh = fabs((double)fh - x);
    if ((bits & 0xffffu) == 0 || dl < dh) {
        return lo;
    }
    return dh < dl ? hi : ((lo & 1u) ? hi : lo);
}

static float bf16_value(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* Fill 'n' elements of 'type' with values for 'op' from a seeded generator. */
static void fill(crux_dtype_t type, crux_op_t op, void *buf, size_t n, unsigned seed)
{
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        int r = rand();
        long small = op == CRUX_OP_PROD ? r % 5 - 2 : r % 201 - 100;
        bool logic = op == CRUX_OP_LAND || op == CRUX_OP_LOR || op == CRUX_OP_LXOR;
        if (logic) {
            small = r % 3 == 0 ? 0 : r % 7 + 1; /* any non-zero is true */
        }
        switch (type) {
        case CRUX_DT_INT8: ((int8_t *)buf)[i] = (int8_t)r; break;
        case CRUX_DT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)r; break;
        case CRUX_DT_INT16: ((int16_t *)buf)[i] = (int16_t)r; break;
        case CRUX_DT_UINT16: ((uint16_t *)buf)[i] = (uint16_t)r; break;
        case CRUX_DT_INT32: ((int32_t *)buf)[i] = r - RAND_MAX / 2; break;
        case CRUX_DT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)r * 2654435761u; break;
        case CRUX_DT_INT64: ((int64_t *)buf)[i] = ((int64_t)r << 31) - r; break;
        case CRUX_DT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)r * 0x9e3779b97f4a7c15ull; break;
        case CRUX_DT_FLOAT16: {
            _Float16 h = (_Float16)((float)small / 8.0f);
            memcpy((uint16_t *)buf + i, &h, 2);
            break;
        }
        case CRUX_DT_BFLOAT16: ((uint16_t *)buf)[i] = ref_to_bf16((float)small / 3.0f); break;
        case CRUX_DT_FLOAT: ((float *)buf)[i] = (float)small / 3.0f; break;
        case CRUX_DT_DOUBLE: ((double *)buf)[i] = (double)small / 3.0; break;
        case CRUX_DT_LONG_DOUBLE: ((long double *)buf)[i] = (long double)small / 3.0L; break;
        case CRUX_DT_COMPLEX_FLOAT:
            ((float _Complex *)buf)[i] = (float)small / 4 + I * (float)(r % 9);
            break;
        case CRUX_DT_COMPLEX_DOUBLE:
            ((double _Complex *)buf)[i] = (double)small / 4 + I * (double)(r % 9);
            break;
        case CRUX_DT_COMPLEX_LONG_DOUBLE:
            ((long double _Complex *)buf)[i] = (long double)small / 4 + I * (long double)(r % 9);
            break;
        case CRUX_DT_BOOL: ((bool *)buf)[i] = r % 2; break;
        case CRUX_DT_LOGICAL32: ((int32_t *)buf)[i] = (int32_t)small; break;
        default: break;
        }
        if (logic && type <= CRUX_DT_UINT64) { /* integers: zero or not */
            memset((char *)buf + i * crux_dtype_size(type), 0, crux_dtype_size(type));
            if (small != 0) {
                *((char *)buf + i * crux_dtype_size(type)) = (char)small;
            }
        }
    }
}

static int64_t int_at(crux_dtype_t t, const void *p, size_t i)
{
    switch (t) {
    case CRUX_DT_INT8: return ((const int8_t *)p)[i];
    case CRUX_DT_UINT8: return ((const uint8_t *)p)[i];
    case CRUX_DT_INT16: return ((const int16_t *)p)[i];
    case CRUX_DT_UINT16: return ((const uint16_t *)p)[i];
    case CRUX_DT_INT32: return ((const int32_t *)p)[i];
    case CRUX_DT_UINT32: return ((const uint32_t *)p)[i];
    case CRUX_DT_LOGICAL32: return ((const int32_t *)p)[i];
    case CRUX_DT_BOOL: return ((const bool *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

static bool is_unsigned(crux_dtype_t t)
{
    return t == CRUX_DT_UINT8 || t == CRUX_DT_UINT16 || t == CRUX_DT_UINT32 || t == CRUX_DT_UINT64;
}

/* Check element i of out = a op b against the reference. */
static bool element_ok(crux_dtype_t t, crux_op_t op, const void *a, const void *b, const void *out,
                       size_t i)
{
    switch (t) {
    case CRUX_DT_FLOAT:
        return ((const float *)out)[i] ==
               (float)ref_arith(op, ((const float *)a)[i], ((const float *)b)[i]);
    case CRUX_DT_DOUBLE: {
        double x = ((const double *)a)[i], y = ((const double *)b)[i];
        double e = op == CRUX_OP_SUM    ? x + y
                   : op == CRUX_OP_PROD ? x * y
                                        : (double)ref_arith(op, x, y);
        return ((const double *)out)[i] == e;
    }
    case CRUX_DT_LONG_DOUBLE:
        return ((const long double *)out)[i] ==
               ref_arith(op, ((const long double *)a)[i], ((const long double *)b)[i]);
    case CRUX_DT_FLOAT16: {
        _Float16 x, y, o;
        memcpy(&x, (const uint16_t *)a + i, 2);
        memcpy(&y, (const uint16_t *)b + i, 2);
        memcpy(&o, (const uint16_t *)out + i, 2);
        _Float16 e = (_Float16)(float)ref_arith(op, (float)x, (float)y);
        return memcmp(&o, &e, 2) == 0;
    }
    case CRUX_DT_BFLOAT16: {
        float x = bf16_value(((const uint16_t *)a)[i]), y = bf16_value(((const uint16_t *)b)[i]);
        float e = (float)ref_arith(op, x, y);
        return ((const uint16_t *)out)[i] == ref_to_bf16(e);
    }
    case CRUX_DT_COMPLEX_FLOAT: {
        float _Complex x = ((const float _Complex *)a)[i], y = ((const float _Complex *)b)[i];
        return ((const float _Complex *)out)[i] == (op == CRUX_OP_SUM ? x + y : x * y);
    }
    case CRUX_DT_COMPLEX_DOUBLE: {
        double _Complex x = ((const double _Complex *)a)[i], y = ((const double _Complex *)b)[i];
        return ((const double _Complex *)out)[i] == (op == CRUX_OP_SUM ? x + y : x * y);
    }
    case CRUX_DT_COMPLEX_LONG_DOUBLE: {
        long double _Complex x = ((const long double _Complex *)a)[i],
                             y = ((const long double _Complex *)b)[i];
        return ((const long double _Complex *)out)[i] == (op == CRUX_OP_SUM ? x + y : x * y);
    }
    default: {
        int64_t x = int_at(t, a, i), y = int_at(t, b, i), o = int_at(t, out, i);
        if (is_unsigned(t) && (op == CRUX_OP_MAX || op == CRUX_OP_MIN)) {
            uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
            uint64_t e = op == CRUX_OP_MAX ? (ux > uy ? ux : uy) : (ux < uy ? ux : uy);
            return (uint64_t)o == e;
        }
        int64_t e = ref_int(op, x, y);
        size_t bits = 8 * crux_dtype_size(t);
        if (bits < 64) { /* wrap the reference to the type's width */
            e = is_unsigned(t) ? (int64_t)((uint64_t)e & ((1ull << bits) - 1))
                               : (int64_t)((uint64_t)e << (64 - bits)) >> (64 - bits);
        }
        return o == e;
    }
    }
}

/* Equal element values; long double carries padding bytes memcmp would see. */
static bool same_values(crux_dtype_t t, const void *x, const void *y, size_t n)
{
    for (size_t i = 0; t == CRUX_DT_LONG_DOUBLE && i < n; i++) {
        if (((const long double *)x)[i] != ((const long double *)y)[i]) {
            return false;
        }
    }
    for (size_t i = 0; t == CRUX_DT_COMPLEX_LONG_DOUBLE && i < n; i++) {
        if (((const long double _Complex *)x)[i] != ((const long double _Complex *)y)[i]) {
            return false;
        }
    }
    return t == CRUX_DT_LONG_DOUBLE || t == CRUX_DT_COMPLEX_LONG_DOUBLE ||
           memcmp(x, y, n * crux_dtype_size(t)) == 0;
}

static bool expect_kernel(crux_dtype_t t, crux_op_t op)
{
    bool integer = t <= CRUX_DT_UINT64;
    bool logical = t == CRUX_DT_BOOL || t == CRUX_DT_LOGICAL32;
    bool is_complex = t >= CRUX_DT_COMPLEX_FLOAT && t <= CRUX_DT_COMPLEX_LONG_DOUBLE;
    bool arith = op <= CRUX_OP_MIN, logic = op >= CRUX_OP_LAND && op <= CRUX_OP_LXOR;
    if (integer)
        return true;
    if (logical)
        return logic;
    if (is_complex)
        return op == CRUX_OP_SUM || op == CRUX_OP_PROD;
    return arith;
}

/* One test per data type, looping over every op. */
START_TEST(test_kernels_match_reference)
{
    crux_dtype_t t = (crux_dtype_t)_i;
    size_t es = crux_dtype_size(t);
    for (int o = 0; o < CRUX_OP_COUNT; o++) {
        crux_op_t op = (crux_op_t)o;
        crux_reduce_fn_t fn = crux_reduce_lookup(t, op);
        ck_assert_msg((fn != NULL) == expect_kernel(t, op), "%s %s: kernel %s", crux_dtype_name(t),
                      crux_op_name(op), fn ? "present" : "missing");
        if (fn == NULL) {
            continue;
        }
        const size_t lens[] = { 0, 1, 3, 15, 16, 17, 63, 257, MAXLEN };
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
            size_t n = lens[l];
            /* one element of guard after each buffer; offsets make them unaligned */
            char *a = malloc((MAXLEN + 2) * es), *b = malloc((MAXLEN + 2) * es);
            char *out = malloc((MAXLEN + 2) * es), *alias = malloc((MAXLEN + 2) * es);
            char *pa = a + es * (l % 2), *pb = b + es * ((l + 1) % 2), *po = out + es;
            fill(t, op, pa, n + 1, 17u * (unsigned)l + (unsigned)o);
            fill(t, op, pb, n + 1, 91u * (unsigned)l + (unsigned)o + 5u);
            memset(po, 0xa5, (n + 1) * es);
            fn(po, pa, pb, n);
            for (size_t i = 0; i < n; i++) {
                ck_assert_msg(element_ok(t, op, pa, pb, po, i), "%s %s: element %zu of %zu",
                              crux_dtype_name(t), crux_op_name(op), i, n);
            }
            for (size_t k = 0; k < es; k++) {
                ck_assert_msg((unsigned char)po[n * es + k] == 0xa5, "%s %s: wrote past %zu",
                              crux_dtype_name(t), crux_op_name(op), n);
            }
            /* out aliasing a, then b, gives the same bits */
            memcpy(alias, pa, n * es);
            fn(alias, alias, pb, n);
            ck_assert_msg(same_values(t, alias, po, n), "%s %s: out == a differs",
                          crux_dtype_name(t), crux_op_name(op));
            memcpy(alias, pb, n * es);
            fn(alias, pa, alias, n);
            ck_assert_msg(same_values(t, alias, po, n), "%s %s: out == b differs",
                          crux_dtype_name(t), crux_op_name(op));
            free(a);
            free(b);
            free(out);
            free(alias);
        }
    }
}
END_TEST

START_TEST(test_lookup_rejects_out_of_range)
{
    ck_assert_ptr_null(crux_reduce_lookup(CRUX_DT_COUNT, CRUX_OP_SUM));
    ck_assert_ptr_null(crux_reduce_lookup(CRUX_DT_FLOAT, CRUX_OP_COUNT));
    ck_assert_ptr_null(crux_reduce_lookup((crux_dtype_t)-1, CRUX_OP_SUM));
    ck_assert_uint_eq(crux_dtype_size(CRUX_DT_COUNT), 0);
    ck_assert_str_eq(crux_dtype_name(CRUX_DT_BFLOAT16), "bfloat16");
    ck_assert_str_eq(crux_op_name(CRUX_OP_BXOR), "bxor");
}
END_TEST

START_TEST(test_half_rounding_and_specials)
{
    /* 2049 is not representable in binary16: 1024 + 1025 rounds to even 2048 */
    crux_reduce_fn_t sum = crux_reduce_lookup(CRUX_DT_FLOAT16, CRUX_OP_SUM);
    _Float16 x[4] = { 1024, (_Float16)65504.0f, (_Float16)1e-7f, 0 }, y[4], o[4];
    y[0] = 1025;
    y[1] = (_Float16)65504.0f;
    y[2] = (_Float16)1e-7f;
    y[3] = (_Float16)-0.0f;
    sum(o, x, y, 4);
    ck_assert(o[0] == (_Float16)2048);
    ck_assert(__builtin_isinf((float)o[1]));                  /* overflow to infinity */
    ck_assert(o[2] == (_Float16)((float)x[2] + (float)y[2])); /* subnormals */
    ck_assert(!__builtin_signbit((float)o[3]));               /* 0 + -0 = +0 */

    crux_reduce_fn_t bmax = crux_reduce_lookup(CRUX_DT_BFLOAT16, CRUX_OP_SUM);
    uint16_t bx[1] = { ref_to_bf16(1.0f) }, by[1] = { ref_to_bf16(1.0f / 256) }, bo[1];
    bmax(bo, bx, by, 1); /* 1 + 2^-8 is a tie between 1 and 1 + 2^-7: rounds to even (1) */
    ck_assert_uint_eq(bo[0], ref_to_bf16(1.0f));
}
END_TEST

static Suite *reduce_suite(void)
{
    Suite *s = suite_create("reduce");
    TCase *tc = tcase_create("kernels");
    tcase_add_loop_test(tc, test_kernels_match_reference, 0, CRUX_DT_COUNT);
    tcase_add_test(tc, test_lookup_rejects_out_of_range);
    tcase_add_test(tc, test_half_rounding_and_specials);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(reduce_suite)

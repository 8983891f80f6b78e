/* Reduction kernels.  Plain loops that GCC vectorises; each kernel is built
 * for AVX-512, AVX2 and baseline x86-64 and picked at load time (ifunc), so a
 * build runs on any x86-64 machine at its best width. */
#include <complex.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "coll/crux_reduce.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CRUX_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CRUX_VECTOR_CLONES
#endif

#define CRUX_KERNEL(name, type, expr)                                                             \
    CRUX_VECTOR_CLONES static void name(void *out_, const void *a_, const void *b_, size_t count) \
    {                                                                                             \
        type *out = out_;                                                                         \
        const type *pa = a_, *pb = b_;                                                            \
        for (size_t i = 0; i < count; i++) {                                                      \
            const type a = pa[i], b = pb[i];                                                      \
            out[i] = (expr);                                                                      \
        }                                                                                         \
    }

#define CRUX_ARITH(tag, type)                   \
    CRUX_KERNEL(sum_##tag, type, a + b)         \
    CRUX_KERNEL(prod_##tag, type, a *b)         \
    CRUX_KERNEL(max_##tag, type, a > b ? a : b) \
    CRUX_KERNEL(min_##tag, type, a < b ? a : b)

/* Floating-point results that are NaN are the one quiet NaN of the type
 * (sign clear, payload the quiet bit), whatever the inputs' NaNs: C leaves
 * the payload of a + b unspecified (the compiler may swap the operands, x86
 * keeps the first NaN's, a GPU answers its own canonical NaN), and the device
 * kernels (crux_dev_kernels.cu) must give the same bits as these.  One
 * compare and blend per vector: the loops stay vectorised. */
#define CRUX_CANON(type, r) ((r) == (r) ? (r) : (type)__builtin_nan(""))
#define CRUX_FLOAT(tag, type)                                     \
    CRUX_KERNEL(sum_##tag, type, CRUX_CANON(type, a + b))         \
    CRUX_KERNEL(prod_##tag, type, CRUX_CANON(type, a *b))         \
    CRUX_KERNEL(max_##tag, type, CRUX_CANON(type, a > b ? a : b)) \
    CRUX_KERNEL(min_##tag, type, CRUX_CANON(type, a < b ? a : b))

#define CRUX_LOGIC(tag, type)                                   \
    CRUX_KERNEL(land_##tag, type, (type)((a != 0) && (b != 0))) \
    CRUX_KERNEL(lor_##tag, type, (type)((a != 0) || (b != 0)))  \
    CRUX_KERNEL(lxor_##tag, type, (type)((a != 0) != (b != 0)))

#define CRUX_BITS(tag, type)            \
    CRUX_KERNEL(band_##tag, type, a &b) \
    CRUX_KERNEL(bor_##tag, type, a | b) \
    CRUX_KERNEL(bxor_##tag, type, a ^ b)

/* Signed sums and products wrap around (two's complement), as every MPI
 * does in practice, computed in the unsigned type: signed overflow is
 * undefined behaviour in C, and an int SUM of large gradients' counters
 * overflowed in the kernels (found by UndefinedBehaviorSanitizer,
 * tests/unit/coll/test_coll_reduce).  The conversion back is GCC's and clang's
 * modulo one. */
#define CRUX_SIGNED_ARITH(tag, type, utype)                    \
    CRUX_KERNEL(sum_##tag, type, (type)((utype)a + (utype)b))  \
    CRUX_KERNEL(prod_##tag, type, (type)((utype)a * (utype)b)) \
    CRUX_KERNEL(max_##tag, type, a > b ? a : b)                \
    CRUX_KERNEL(min_##tag, type, a < b ? a : b)

#define CRUX_INTEGER(tag, type) CRUX_ARITH(tag, type) CRUX_LOGIC(tag, type) CRUX_BITS(tag, type)
#define CRUX_SIGNED(tag, type, utype) \
    CRUX_SIGNED_ARITH(tag, type, utype) CRUX_LOGIC(tag, type) CRUX_BITS(tag, type)

CRUX_SIGNED(i8, int8_t, uint8_t)
CRUX_INTEGER(u8, uint8_t)
CRUX_SIGNED(i16, int16_t, uint16_t)
CRUX_INTEGER(u16, uint16_t)
CRUX_SIGNED(i32, int32_t, uint32_t)
CRUX_INTEGER(u32, uint32_t)
CRUX_SIGNED(i64, int64_t, uint64_t)
CRUX_INTEGER(u64, uint64_t)
CRUX_FLOAT(f32, float)
CRUX_FLOAT(f64, double)
CRUX_ARITH(f80, long double)
CRUX_KERNEL(sum_c32, float _Complex, a + b)
CRUX_KERNEL(prod_c32, float _Complex, a *b)
CRUX_KERNEL(sum_c64, double _Complex, a + b)
CRUX_KERNEL(prod_c64, double _Complex, a *b)
CRUX_KERNEL(sum_c80, long double _Complex, a + b)
CRUX_KERNEL(prod_c80, long double _Complex, a *b)
CRUX_LOGIC(bool, bool)
CRUX_LOGIC(l32, int32_t)

/* 16-bit floats are reduced in single precision and rounded back to nearest
 * even, one element at a time so the result does not depend on vector width. */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf, nan */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13); /* normal */
    } else if (man == 0) {
        bits = sign; /* zero */
    } else {         /* subnormal */
        int shift = 0;
        while (!(man & 0x400u)) {
            man <<= 1;
            shift++;
        }
        bits = sign | ((uint32_t)(113 - shift) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint16_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) {
        return 0x7e00u; /* the one quiet nan, as for float */
    }
    if (absx == 0x7f800000u) {
        return sign | 0x7c00u;
    }
    if (absx >= 0x477ff000u) { /* rounds to inf */
        return sign | 0x7c00u;
    }
    if (absx < 0x38800000u) { /* subnormal or zero */
        if (absx < 0x33000000u) {
            return sign;
        }
        uint32_t man = (absx & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(absx >> 23); /* 14..24 */
        uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u))) {
            half++;
        }
        return sign | (uint16_t)half;
    }
    uint32_t r = absx - 0x38000000u; /* rebias 127 -> 15 */
    uint32_t half = r >> 13, rest = r & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) {
        half++;
    }
    return sign | (uint16_t)half;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return 0x7fc0u; /* the one quiet nan, as for float */
    }
    x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(x >> 16);
}

#define CRUX_F16_KERNEL(name, to_float, from_float, expr)                      \
    static void name(void *out_, const void *a_, const void *b_, size_t count) \
    {                                                                          \
        uint16_t *out = out_;                                                  \
        const uint16_t *pa = a_, *pb = b_;                                     \
        for (size_t i = 0; i < count; i++) {                                   \
            const float a = to_float(pa[i]), b = to_float(pb[i]);              \
            out[i] = from_float(expr);                                         \
        }                                                                      \
    }
#define CRUX_F16_ARITH(tag, to_float, from_float)                   \
    CRUX_F16_KERNEL(sum_##tag, to_float, from_float, a + b)         \
    CRUX_F16_KERNEL(prod_##tag, to_float, from_float, a *b)         \
    CRUX_F16_KERNEL(max_##tag, to_float, from_float, a > b ? a : b) \
    CRUX_F16_KERNEL(min_##tag, to_float, from_float, a < b ? a : b)
CRUX_F16_ARITH(f16, half_to_float, float_to_half)
CRUX_F16_ARITH(bf16, bf16_to_float, float_to_bf16)

#define ARITH_ROW(tag)                                                                 \
    [CRUX_OP_SUM] = sum_##tag, [CRUX_OP_PROD] = prod_##tag, [CRUX_OP_MAX] = max_##tag, \
    [CRUX_OP_MIN] = min_##tag
#define LOGIC_ROW(tag) \
    [CRUX_OP_LAND] = land_##tag, [CRUX_OP_LOR] = lor_##tag, [CRUX_OP_LXOR] = lxor_##tag
#define BITS_ROW(tag) \
    [CRUX_OP_BAND] = band_##tag, [CRUX_OP_BOR] = bor_##tag, [CRUX_OP_BXOR] = bxor_##tag
#define INTEGER_ROW(tag)                              \
    {                                                 \
        ARITH_ROW(tag), LOGIC_ROW(tag), BITS_ROW(tag) \
    }

static const crux_reduce_fn_t kernels[CRUX_DT_COUNT][CRUX_OP_COUNT] = {
    [CRUX_DT_INT8] = INTEGER_ROW(i8),
    [CRUX_DT_UINT8] = INTEGER_ROW(u8),
    [CRUX_DT_INT16] = INTEGER_ROW(i16),
    [CRUX_DT_UINT16] = INTEGER_ROW(u16),
    [CRUX_DT_INT32] = INTEGER_ROW(i32),
    [CRUX_DT_UINT32] = INTEGER_ROW(u32),
    [CRUX_DT_INT64] = INTEGER_ROW(i64),
    [CRUX_DT_UINT64] = INTEGER_ROW(u64),
    [CRUX_DT_FLOAT16] = { ARITH_ROW(f16) },
    [CRUX_DT_BFLOAT16] = { ARITH_ROW(bf16) },
    [CRUX_DT_FLOAT] = { ARITH_ROW(f32) },
    [CRUX_DT_DOUBLE] = { ARITH_ROW(f64) },
    [CRUX_DT_LONG_DOUBLE] = { ARITH_ROW(f80) },
    [CRUX_DT_COMPLEX_FLOAT] = { [CRUX_OP_SUM] = sum_c32, [CRUX_OP_PROD] = prod_c32 },
    [CRUX_DT_COMPLEX_DOUBLE] = { [CRUX_OP_SUM] = sum_c64, [CRUX_OP_PROD] = prod_c64 },
    [CRUX_DT_COMPLEX_LONG_DOUBLE] = { [CRUX_OP_SUM] = sum_c80, [CRUX_OP_PROD] = prod_c80 },
    [CRUX_DT_BOOL] = { LOGIC_ROW(bool) },
    [CRUX_DT_LOGICAL32] = { LOGIC_ROW(l32) },
};

static const struct {
    const char *name;
    size_t size;
} dtype_info[CRUX_DT_COUNT] = {
    [CRUX_DT_INT8] = { "int8", 1 },
    [CRUX_DT_UINT8] = { "uint8", 1 },
    [CRUX_DT_INT16] = { "int16", 2 },
    [CRUX_DT_UINT16] = { "uint16", 2 },
    [CRUX_DT_INT32] = { "int32", 4 },
    [CRUX_DT_UINT32] = { "uint32", 4 },
    [CRUX_DT_INT64] = { "int64", 8 },
    [CRUX_DT_UINT64] = { "uint64", 8 },
    [CRUX_DT_FLOAT16] = { "float16", 2 },
    [CRUX_DT_BFLOAT16] = { "bfloat16", 2 },
    [CRUX_DT_FLOAT] = { "float", sizeof(float) },
    [CRUX_DT_DOUBLE] = { "double", sizeof(double) },
    [CRUX_DT_LONG_DOUBLE] = { "long double", sizeof(long double) },
    [CRUX_DT_COMPLEX_FLOAT] = { "complex float", sizeof(float _Complex) },
    [CRUX_DT_COMPLEX_DOUBLE] = { "complex double", sizeof(double _Complex) },
    [CRUX_DT_COMPLEX_LONG_DOUBLE] = { "complex long double", sizeof(long double _Complex) },
    [CRUX_DT_BOOL] = { "bool", sizeof(bool) },
    [CRUX_DT_LOGICAL32] = { "logical32", 4 },
};

static const char *const op_names[CRUX_OP_COUNT] = {
    "sum", "prod", "max", "min", "land", "lor", "lxor", "band", "bor", "bxor",
};

crux_reduce_fn_t crux_reduce_lookup(crux_dtype_t dtype, crux_op_t op)
{
    if ((unsigned)dtype >= CRUX_DT_COUNT || (unsigned)op >= CRUX_OP_COUNT) {
        return NULL;
    }
    return kernels[dtype][op];
}

size_t crux_dtype_size(crux_dtype_t dtype)
{
    return (unsigned)dtype < CRUX_DT_COUNT ? dtype_info[dtype].size : 0;
}

const char *crux_dtype_name(crux_dtype_t dtype)
{
    return (unsigned)dtype < CRUX_DT_COUNT ? dtype_info[dtype].name : "unknown";
}

const char *crux_op_name(crux_op_t op)
{
    return (unsigned)op < CRUX_OP_COUNT ? op_names[op] : "unknown";
}

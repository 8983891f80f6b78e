/* crux-bench-allreduce: inputs and exact expected results (see the header). */
#include "bench/allreduce_check.h"

#include <stdint.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} types[BENCH_NUM_TYPES] = {
    [BENCH_INT8] = { "int8", 1 },   [BENCH_UINT8] = { "uint8", 1 },
    [BENCH_INT32] = { "int32", 4 }, [BENCH_UINT32] = { "uint32", 4 },
    [BENCH_INT64] = { "int64", 8 }, [BENCH_UINT64] = { "uint64", 8 },
    [BENCH_FLOAT] = { "float", 4 }, [BENCH_DOUBLE] = { "double", 8 },
};

static const char *const ops[BENCH_NUM_OPS] = { "sum", "prod", "min", "max" };

const char *bench_type_name(bench_type_t type)
{
    return types[type].name;
}

size_t bench_type_size(bench_type_t type)
{
    return types[type].size;
}

int bench_type_parse(const char *name)
{
    if (strcmp(name, "int") == 0) {
        return BENCH_INT32;
    }
    for (int t = 0; t < BENCH_NUM_TYPES; t++) {
        if (strcmp(name, types[t].name) == 0) {
            return t;
        }
    }
    return -1;
}

const char *bench_op_name(bench_op_t op)
{
    return ops[op];
}

int bench_op_parse(const char *name)
{
    for (int o = 0; o < BENCH_NUM_OPS; o++) {
        if (strcmp(name, ops[o]) == 0) {
            return o;
        }
    }
    return -1;
}

/* The input as a small integer: -6..6 (0..12 for unsigned types) for sum,
 * min and max; 1, 2, -1 (1, 2, 3 unsigned) for products, whose magnitudes
 * stay powers of two in floating point. */
static long long input_value(int is_unsigned, bench_op_t op, int rank, size_t i)
{
    if (op == BENCH_PROD) {
        long long p = (long long)((i % 3 + (unsigned)rank % 3) % 3);
        return is_unsigned ? p + 1 : p == 2 ? -1 : p + 1;
    }
    long long b = (long long)((i % 13 * 3 + (unsigned)rank % 13 * 7) % 13);
    return is_unsigned ? b : b - 6;
}

/* Inputs depend on i % 3 and i % 13 only, so results repeat every 39. */
#define PERIOD 39

/* One type: T its C type, U the unsigned type sums and products wrap in
 * (T itself for floating point, whose results here are exact). */
#define BENCH_TYPE_FUNCS(suffix, T, U, is_unsigned)                                        \
    static T input_##suffix(bench_op_t op, int rank, size_t i)                             \
    {                                                                                      \
        return (T)input_value(is_unsigned, op, rank, i);                                   \
    }                                                                                      \
    static T expected_##suffix(bench_op_t op, int nranks, size_t i)                        \
    {                                                                                      \
        T acc = input_##suffix(op, 0, i);                                                  \
        for (int r = 1; r < nranks; r++) {                                                 \
            T v = input_##suffix(op, r, i);                                                \
            switch (op) {                                                                  \
            case BENCH_SUM: acc = (T)((U)acc + (U)v); break;                               \
            case BENCH_PROD: acc = (T)((U)acc * (U)v); break;                              \
            case BENCH_MIN: acc = v < acc ? v : acc; break;                                \
            case BENCH_MAX: acc = v > acc ? v : acc; break;                                \
            default: break;                                                                \
            }                                                                              \
        }                                                                                  \
        return acc;                                                                        \
    }                                                                                      \
    static size_t wrong_##suffix(bench_op_t op, int nranks, const void *buf, size_t count) \
    {                                                                                      \
        T expected[PERIOD];                                                                \
        for (size_t i = 0; i < PERIOD; i++) {                                              \
            expected[i] = expected_##suffix(op, nranks, i);                                \
        }                                                                                  \
        size_t wrong = 0;                                                                  \
        for (size_t i = 0; i < count; i++) {                                               \
            T got;                                                                         \
            memcpy(&got, (const char *)buf + i * sizeof(T), sizeof(T));                    \
            wrong += !(got == expected[i % PERIOD]);                                       \
        }                                                                                  \
        return wrong;                                                                      \
    }                                                                                      \
    static void store_input_##suffix(bench_op_t op, int rank, size_t i, void *out)         \
    {                                                                                      \
        T v = input_##suffix(op, rank, i);                                                 \
        memcpy(out, &v, sizeof(v));                                                        \
    }                                                                                      \
    static void store_expected_##suffix(bench_op_t op, int nranks, size_t i, void *out)    \
    {                                                                                      \
        T v = expected_##suffix(op, nranks, i);                                            \
        memcpy(out, &v, sizeof(v));                                                        \
    }

/* Converting an unsigned result back to a signed type is modular on every
 * compiler crux supports (GCC and Clang define it so). */
BENCH_TYPE_FUNCS(i8, int8_t, uint8_t, 0)
BENCH_TYPE_FUNCS(u8, uint8_t, uint8_t, 1)
BENCH_TYPE_FUNCS(i32, int32_t, uint32_t, 0)
BENCH_TYPE_FUNCS(u32, uint32_t, uint32_t, 1)
BENCH_TYPE_FUNCS(i64, int64_t, uint64_t, 0)
BENCH_TYPE_FUNCS(u64, uint64_t, uint64_t, 1)
BENCH_TYPE_FUNCS(f32, float, float, 0)
BENCH_TYPE_FUNCS(f64, double, double, 0)

#define BENCH_DISPATCH(type, call_prefix, ...)               \
    switch (type) {                                          \
    case BENCH_INT8: call_prefix(i8, __VA_ARGS__); break;    \
    case BENCH_UINT8: call_prefix(u8, __VA_ARGS__); break;   \
    case BENCH_INT32: call_prefix(i32, __VA_ARGS__); break;  \
    case BENCH_UINT32: call_prefix(u32, __VA_ARGS__); break; \
    case BENCH_INT64: call_prefix(i64, __VA_ARGS__); break;  \
    case BENCH_UINT64: call_prefix(u64, __VA_ARGS__); break; \
    case BENCH_FLOAT: call_prefix(f32, __VA_ARGS__); break;  \
    case BENCH_DOUBLE: call_prefix(f64, __VA_ARGS__); break; \
    default: break;                                          \
    }

#define BENCH_STORE_INPUT(s, out, op, rank, i) store_input_##s(op, rank, i, out)

#define BENCH_STORE_EXPECTED(s, out, op, nranks, i) store_expected_##s(op, nranks, i, out)

#define BENCH_COUNT_WRONG(s, result, op, nranks, buf, count) \
    result = wrong_##s(op, nranks, buf, count)

void bench_input(bench_type_t type, bench_op_t op, int rank, size_t i, void *out)
{
    BENCH_DISPATCH(type, BENCH_STORE_INPUT, out, op, rank, i)
}

void bench_fill(bench_type_t type, bench_op_t op, int rank, size_t count, void *buf)
{
    size_t size = bench_type_size(type);
    for (size_t i = 0; i < count; i++) {
        bench_input(type, op, rank, i, (char *)buf + i * size);
    }
}

void bench_expected(bench_type_t type, bench_op_t op, int nranks, size_t i,
                    void *out){ BENCH_DISPATCH(type, BENCH_STORE_EXPECTED, out, op, nranks, i) }

size_t
    bench_count_wrong(bench_type_t type, bench_op_t op, int nranks, const void *buf, size_t count)
{
    size_t wrong = 0;
    BENCH_DISPATCH(type, BENCH_COUNT_WRONG, wrong, op, nranks, buf, count)
    return wrong;
}

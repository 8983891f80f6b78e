/* crux-bench-allreduce without MPI: the exact expected values its -c check
 * compares against (worked out by hand here), the count of wrong elements,
 * and the option checks. */
#include <stdint.h>
#include <string.h>

#include "bench/allreduce_check.h"
#include "bench/allreduce_opts.h"
#include "tests/unit/check_main.h"

static int32_t expected_i32(bench_op_t op, int nranks, size_t i)
{
    int32_t v;
    bench_expected(BENCH_INT32, op, nranks, i, &v);
    return v;
}

/* Element 0 of ranks 0, 1, 2: -6, 1, -5 (sum, min, max); 1, 2, -1 (prod). */
START_TEST(test_expected_three_ranks)
{
    ck_assert_int_eq(expected_i32(BENCH_SUM, 3, 0), -10);
    ck_assert_int_eq(expected_i32(BENCH_MIN, 3, 0), -6);
    ck_assert_int_eq(expected_i32(BENCH_MAX, 3, 0), 1);
    ck_assert_int_eq(expected_i32(BENCH_PROD, 3, 0), -2);
    uint32_t u;
    bench_expected(BENCH_UINT32, BENCH_PROD, 3, 0, &u); /* 1 * 2 * 3 */
    ck_assert_uint_eq(u, 6);
    bench_expected(BENCH_UINT32, BENCH_SUM, 3, 0, &u); /* 0 + 7 + 1 */
    ck_assert_uint_eq(u, 8);
    /* element 1 of one rank is that rank's input: (1 * 3) % 13 - 6 */
    ck_assert_int_eq(expected_i32(BENCH_SUM, 1, 1), -3);
}
END_TEST

/* Products wrap as MPI's do: 24 ranks of 1, 2, -1 give (-2)^8 = 256,
 * which is 0 in 8 bits; 12 ranks of 1, 2, 3 give 36^2 = 1296 = 16 mod 256. */
START_TEST(test_expected_wraps)
{
    int8_t i8;
    bench_expected(BENCH_INT8, BENCH_PROD, 24, 0, &i8);
    ck_assert_int_eq(i8, 0);
    ck_assert_int_eq(expected_i32(BENCH_PROD, 24, 0), 256);
    ck_assert_int_eq(expected_i32(BENCH_PROD, 16, 0), -32); /* (-2)^5 * 1 */
    uint8_t u8;
    bench_expected(BENCH_UINT8, BENCH_PROD, 12, 0, &u8);
    ck_assert_uint_eq(u8, 16);
    float f;
    bench_expected(BENCH_FLOAT, BENCH_PROD, 24, 0, &f);
    ck_assert(f == 256.0f);
}
END_TEST

/* A floating-point sum over many ranks is the exact integer sum. */
START_TEST(test_expected_float_sums_exact)
{
    for (size_t i = 0; i < 40; i++) {
        long long sum = 0;
        for (int r = 0; r < 1000; r++) {
            int32_t v;
            bench_input(BENCH_INT32, BENCH_SUM, r, i, &v);
            sum += v;
        }
        double d;
        float f;
        bench_expected(BENCH_DOUBLE, BENCH_SUM, 1000, i, &d);
        bench_expected(BENCH_FLOAT, BENCH_SUM, 1000, i, &f);
        ck_assert(d == (double)sum);
        ck_assert(f == (float)sum);
    }
}
END_TEST

/* What bench_fill writes is bench_input's, element by element. */
START_TEST(test_fill_is_input)
{
    double buf[50];
    bench_fill(BENCH_DOUBLE, BENCH_MAX, 4, 50, buf);
    for (size_t i = 0; i < 50; i++) {
        double v;
        bench_input(BENCH_DOUBLE, BENCH_MAX, 4, i, &v);
        ck_assert(buf[i] == v);
    }
}
END_TEST

/* Exact results count 0 wrong; each corrupted element counts once, and a
 * result for another number of ranks is wrong. */
START_TEST(test_count_wrong)
{
    enum { N = 101 };
    static unsigned char buf[N * 8];
    for (int t = 0; t < BENCH_NUM_TYPES; t++) {
        size_t size = bench_type_size(t);
        for (int op = 0; op < BENCH_NUM_OPS; op++) {
            for (size_t i = 0; i < N; i++) {
                bench_expected(t, op, 5, i, buf + i * size);
            }
            ck_assert_uint_eq(bench_count_wrong(t, op, 5, buf, N), 0);
            ck_assert_uint_ne(bench_count_wrong(t, op, 4, buf, N), 0);
            for (size_t i = 7; i < N; i += 40) {
                buf[i * size] ^= 0x40; /* 3 elements: 7, 47, 87 */
            }
            ck_assert_uint_eq(bench_count_wrong(t, op, 5, buf, N), 3);
        }
    }
}
END_TEST

START_TEST(test_names)
{
    ck_assert_int_eq(bench_type_parse("int"), BENCH_INT32);
    ck_assert_int_eq(bench_type_parse("uint64"), BENCH_UINT64);
    ck_assert_int_eq(bench_type_parse("half"), -1);
    ck_assert_int_eq(bench_op_parse("prod"), BENCH_PROD);
    ck_assert_int_eq(bench_op_parse("avg"), -1);
    for (int t = 0; t < BENCH_NUM_TYPES; t++) {
        ck_assert_int_eq(bench_type_parse(bench_type_name(t)), t);
    }
}
END_TEST

static int parse(const char *args, bench_options_t *o, char *err)
{
    char copy[256], *argv[32] = { "crux-bench-allreduce" };
    int argc = 1;
    snprintf(copy, sizeof(copy), "%s", args);
    for (char *save, *t = strtok_r(copy, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save)) {
        ck_assert_int_lt(argc, 31);
        argv[argc++] = t;
    }
    return bench_parse(argc, argv, o, err, 256);
}

START_TEST(test_options)
{
    bench_options_t o;
    char err[256];
    ck_assert_int_eq(parse("", &o, err), 0);
    ck_assert_uint_eq(o.min_bytes, 4);
    ck_assert_uint_eq(o.max_bytes, 64u << 20);
    ck_assert_int_eq(o.nvariants, 2);
    ck_assert_int_eq(o.check, 1);
    ck_assert_int_eq(parse("-b 8K -e 1G -f 4 -d all -o min -n 3 -w 0 -c 0 -m cuda", &o, err), 0);
    ck_assert_uint_eq(o.min_bytes, 8192);
    ck_assert_uint_eq(o.max_bytes, 1u << 30);
    ck_assert_int_eq(o.ntypes, BENCH_NUM_TYPES);
    ck_assert_int_eq(o.nops, 1);
    ck_assert_int_eq(o.warmup, 0);
    ck_assert_int_eq(o.cuda, 1);
    ck_assert_int_eq(parse("--min 1M --max 2M --reps 3", &o, err), 0);
    ck_assert_int_eq(o.reps, 3);

    static const struct {
        const char *args, *message;
    } bad[] = {
        { "--compare crux,nccl", "--compare: unknown component 'nccl' (see --help)" },
        { "-d half", "-d: unknown datatype 'half' (see --help)" },
        { "-o avg", "-o: unknown op 'avg' (sum, prod, min, max, all)" },
        { "-b 4X", "-b: bad size '4X' (a whole number of bytes, K, M, G)" },
        { "-e 0", "-e: bad size '0' (a whole number of bytes, K, M, G)" },
        { "-b 8M -e 4M", "-b 8388608 is above -e 4194304" },
        { "-f 1", "-f: bad factor '1' (2 to 1024)" },
        { "-c 2", "-c: bad value '2' (0 or 1)" },
        { "-r 0", "-r: bad repetition count '0' (1 to 101)" },
        { "-m gpu", "-m: unknown memory 'gpu' (host, cuda)" },
        { "--bogus", "unknown option '--bogus' (see --help)" },
        { "-x", "unknown option '-x' (see --help)" },
        { "-n", "-n needs a value" },
        { "extra", "unexpected argument 'extra' (see --help)" },
        { "-d int8 -e 4G", "-e: 4294967296 bytes of int8 are more than 2147483647 elements "
                           "(MPI's count)" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(parse(bad[i].args, &o, err), -1);
        ck_assert_str_eq(err, bad[i].message);
    }
    ck_assert_int_eq(parse("--help", &o, err), 0);
    ck_assert_int_eq(o.action, BENCH_HELP);
    ck_assert_int_eq(parse("-V", &o, err), 0);
    ck_assert_int_eq(o.action, BENCH_VERSION);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bench_allreduce");
    TCase *tc = tcase_create("all");
    tcase_add_test(tc, test_expected_three_ranks);
    tcase_add_test(tc, test_expected_wraps);
    tcase_add_test(tc, test_expected_float_sums_exact);
    tcase_add_test(tc, test_fill_is_input);
    tcase_add_test(tc, test_count_wrong);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_options);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(suite)

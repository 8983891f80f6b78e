/* libcrux_coll's small Allreduce in forked processes (no MPI): every
 * datatype and op with a kernel at every count from 1 element to the
 * group's limit, whole and sliced, in and out of place, on 2 and 3 members,
 * against the reference fold in rank order (bit for bit); several groups
 * over the same processes called back to back; across groups, member 0 of
 * each stepping between them; and the failures: calls of another shape, a
 * member that dies in the middle, a leader that dies. */
#include <complex.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

/* The component's default limits (coll_crux_small_max_bytes,
 * coll_crux_small_whole_max_bytes): every count up to the cut is tried
 * (half a minute on 2 cores), whole up to WHOLE bytes, sliced above. */
#define LIMIT 4096
#define WHOLE 256

static crux_coll_config_t small_config(size_t max, size_t whole)
{
    crux_coll_config_t config = CRUX_COLL_CONFIG_DEFAULT;
    config.stage_size = 64u << 10;
    config.small_max_bytes = max;
    config.small_whole_max_bytes = whole;
    return config;
}

/* Member r's element i of a buffer of 'dtype': small values, so sums and
 * products stay exact and no NaN appears; 0 and 1 where a type is
 * logical. */
static void fill(crux_dtype_t dtype, int r, size_t count, void *buf, int round)
{
    static const uint16_t halves[] = { 0x3c00, 0x4000, 0xbc00, 0x3800 }; /* 1 2 -1 0.5 */
    static const uint16_t brains[] = { 0x3f80, 0x4000, 0xbf80, 0x3f00 }; /* same, bfloat16 */
    for (size_t i = 0; i < count; i++) {
        int v = (int)((r * 31 + (int)i * 7 + round * 3) % 11) - 5;
        int k = (r + (int)i + round) & 3;
        switch (dtype) {
        case CRUX_DT_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
        case CRUX_DT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(v + 5); break;
        case CRUX_DT_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
        case CRUX_DT_UINT16: ((uint16_t *)buf)[i] = (uint16_t)(v + 5); break;
        case CRUX_DT_INT32: ((int32_t *)buf)[i] = v; break;
        case CRUX_DT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(v + 5); break;
        case CRUX_DT_INT64: ((int64_t *)buf)[i] = v; break;
        case CRUX_DT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(v + 5); break;
        case CRUX_DT_FLOAT16: ((uint16_t *)buf)[i] = halves[k]; break;
        case CRUX_DT_BFLOAT16: ((uint16_t *)buf)[i] = brains[k]; break;
        case CRUX_DT_FLOAT: ((float *)buf)[i] = (float)v; break;
        case CRUX_DT_DOUBLE: ((double *)buf)[i] = v; break;
        case CRUX_DT_LONG_DOUBLE: ((long double *)buf)[i] = v; break;
        case CRUX_DT_COMPLEX_FLOAT: ((float complex *)buf)[i] = (float)v + (float)k * I; break;
        case CRUX_DT_COMPLEX_DOUBLE: ((double complex *)buf)[i] = v + k * I; break;
        case CRUX_DT_COMPLEX_LONG_DOUBLE:
            ((long double complex *)buf)[i] = (long double)v + (long double)k * I;
            break;
        case CRUX_DT_BOOL: ((_Bool *)buf)[i] = (v & 1) != 0; break;
        case CRUX_DT_LOGICAL32: ((int32_t *)buf)[i] = k == 0 ? 0 : v; break;
        case CRUX_DT_COUNT: break;
        }
    }
}

/* Equal as values (long doubles have padding bytes that carry nothing). */
static int same(crux_dtype_t dtype, const void *a, const void *b, size_t count)
{
    if (dtype == CRUX_DT_LONG_DOUBLE) {
        for (size_t i = 0; i < count; i++) {
            if (((const long double *)a)[i] != ((const long double *)b)[i]) {
                return 0;
            }
        }
        return 1;
    }
    if (dtype == CRUX_DT_COMPLEX_LONG_DOUBLE) {
        for (size_t i = 0; i < count; i++) {
            if (((const long double complex *)a)[i] != ((const long double complex *)b)[i]) {
                return 0;
            }
        }
        return 1;
    }
    return memcmp(a, b, count * crux_dtype_size(dtype)) == 0;
}

/* The reference: every member's input folded left to right in rank order
 * with the kernel, as the algorithm must (bit for bit). */
static void reference(crux_dtype_t dtype, crux_op_t op, int size, size_t count, void *out,
                      void *scratch, int round)
{
    crux_reduce_fn_t reduce = crux_reduce_lookup(dtype, op);
    fill(dtype, 0, count, out, round);
    for (int q = 1; q < size; q++) {
        fill(dtype, q, count, scratch, round);
        reduce(out, out, scratch, count);
    }
}

#define BUF_BYTES (LIMIT + 64)

/* One call checked: 0, or where it failed. */
static int check_call(crux_coll_group_t *g, fork_group_member_t *m, crux_dtype_t dtype,
                      crux_op_t op, size_t count, int in_place, int round)
{
    _Alignas(64) unsigned char s[BUF_BYTES], r[BUF_BYTES], want[BUF_BYTES], scratch[BUF_BYTES];
    size_t bytes = count * crux_dtype_size(dtype);
    fill(dtype, m->rank, count, s, round);
    memset(r, 0xa5, sizeof(r));
    if (in_place) {
        memcpy(r, s, bytes);
    }
    if (crux_coll_allreduce_small(g, in_place ? NULL : s, r, count, dtype, op) != CRUX_OK) {
        return 3;
    }
    reference(dtype, op, m->size, count, want, scratch, round);
    if (!same(dtype, r, want, count)) {
        return 4;
    }
    for (size_t i = bytes; i < sizeof(r); i++) {
        if (r[i] != 0xa5) {
            return 5; /* wrote past the count */
        }
    }
    return 0;
}

/* Every (dtype, op) with a kernel, every count from 1 to the limit, out
 * of place and in place alternating. */
static int run_every_type(fork_group_member_t *m, void *arg)
{
    (void)arg;
    crux_coll_config_t config = small_config(LIMIT, WHOLE);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, &config, &g) != CRUX_OK) {
        return 2;
    }
    int rc = 0, calls = 0;
    for (int d = 0; d < CRUX_DT_COUNT && rc == 0; d++) {
        for (int o = 0; o < CRUX_OP_COUNT && rc == 0; o++) {
            if (crux_reduce_lookup((crux_dtype_t)d, (crux_op_t)o) == NULL) {
                continue;
            }
            size_t esize = crux_dtype_size((crux_dtype_t)d);
            for (size_t count = 1; count * esize <= LIMIT && rc == 0; count++) {
                rc = check_call(g, m, (crux_dtype_t)d, (crux_op_t)o, count, calls % 2, calls);
                calls++;
            }
        }
    }
    /* past the limit and without a kernel: nothing done, alike everywhere */
    float x[LIMIT / 4 + 1] = { 0 };
    if (rc == 0 && (crux_coll_allreduce_small(g, NULL, x, LIMIT / 4 + 1, CRUX_DT_FLOAT,
                                              CRUX_OP_SUM) != CRUX_ERR_UNSUPPORTED ||
                    crux_coll_allreduce_small(g, NULL, x, 4, CRUX_DT_FLOAT, CRUX_OP_BXOR) !=
                        CRUX_ERR_UNSUPPORTED ||
                    crux_coll_small_fits(g, LIMIT + 1) || !crux_coll_small_fits(g, LIMIT))) {
        rc = 6;
    }
    crux_coll_group_destroy(g);
    return rc;
}

/* _i: the group size, 2 or 3 (odd: slices of different lengths). */
START_TEST(test_every_type_op_and_count_against_the_reference)
{
    ck_assert_msg(fork_group_run(_i, run_every_type, NULL) == 0, "size %d", _i);
}
END_TEST

/* The default limits: counts around the whole/sliced cut and up to the
 * limit, in float. */
static int run_default_limits(fork_group_member_t *m, void *arg)
{
    (void)arg;
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    crux_coll_config_t config = CRUX_COLL_CONFIG_DEFAULT;
    if (crux_coll_group_create(&oob, &config, &g) != CRUX_OK) {
        return 2;
    }
    const size_t whole = config.small_whole_max_bytes / 4, max = config.small_max_bytes / 4;
    const size_t counts[] = { 1, 7, 8, 9, whole - 1, whole, whole + 1, max / 3 + 1, max - 1, max };
    float *s = malloc((max + 1) * 4), *r = malloc((max + 1) * 4), *want = malloc(max * 4);
    float *scratch = malloc(max * 4);
    int rc = 0;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]) && rc == 0; k++) {
        for (int in_place = 0; in_place < 2 && rc == 0; in_place++) {
            size_t n = counts[k];
            fill(CRUX_DT_FLOAT, m->rank, n, s, (int)k);
            r[n] = -99.0f;
            if (in_place) {
                memcpy(r, s, n * 4);
            }
            rc = crux_coll_allreduce_small(g, in_place ? NULL : s, r, n, CRUX_DT_FLOAT,
                                           CRUX_OP_SUM) != CRUX_OK
                     ? 3
                     : 0;
            reference(CRUX_DT_FLOAT, CRUX_OP_SUM, m->size, n, want, scratch, (int)k);
            rc = rc == 0 && (memcmp(r, want, n * 4) != 0 || r[n] != -99.0f) ? 4 : rc;
        }
    }
    free(s);
    free(r);
    free(want);
    free(scratch);
    crux_coll_group_destroy(g);
    return rc;
}

START_TEST(test_default_limits_whole_and_sliced)
{
    ck_assert_int_eq(fork_group_run(3, run_default_limits, NULL), 0);
    ck_assert_int_eq(fork_group_run(2, run_default_limits, NULL), 0);
}
END_TEST

/* Three groups over the same three processes (communicators that do not
 * share one), called back to back in turn with different counts and ops,
 * beside the flags Allreduce on one of them. */
static int run_several_groups(fork_group_member_t *m, void *arg)
{
    (void)arg;
    crux_coll_config_t config = small_config(LIMIT, WHOLE);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g[3];
    for (int k = 0; k < 3; k++) {
        if (crux_coll_group_create(&oob, &config, &g[k]) != CRUX_OK) {
            return 2;
        }
        crux_coll_group_set_caller(g[k], (uint64_t)k + 1);
    }
    int rc = 0;
    for (int call = 0; call < 600 && rc == 0; call++) {
        crux_coll_group_t *x = g[call % 3];
        size_t count = 1 + (size_t)(call * 37) % (LIMIT / 8);
        crux_op_t op = call % 2 ? CRUX_OP_MAX : CRUX_OP_SUM;
        rc = check_call(x, m, CRUX_DT_INT64, op, count, call % 5 == 0, call);
        if (rc == 0 && call % 50 == 0) { /* a large call on the same group between */
            static float big[100000];
            rc = crux_coll_allreduce(x, NULL, big, 100000, CRUX_DT_FLOAT, CRUX_OP_SUM) != CRUX_OK
                     ? 7
                     : 0;
        }
    }
    for (int k = 0; k < 3; k++) {
        crux_coll_group_destroy(g[k]);
    }
    return rc;
}

START_TEST(test_several_groups_back_to_back)
{
    ck_assert_int_eq(fork_group_run(3, run_several_groups, NULL), 0);
}
END_TEST

/* Across groups: four members in two groups of two; member 0 of each
 * steps with the other's over a group of the two (its own small
 * Allreduce, as a blocking inter-group step). */
typedef struct {
    crux_coll_group_t *cross;
    crux_dtype_t dtype;
    crux_op_t op;
    int die; /* the leader of group 1 dies in its step */
} hier_arg_t;

static crux_status_t inter_start(void *argp, void *buf, size_t count, void **request)
{
    hier_arg_t *a = argp;
    *request = NULL;
    if (a->die) {
        raise(SIGKILL);
    }
    return crux_coll_allreduce_small(a->cross, NULL, buf, count, a->dtype, a->op);
}

static crux_status_t inter_test(void *argp, void *request, int *done)
{
    (void)argp;
    (void)request;
    *done = 1;
    return CRUX_OK;
}

static crux_status_t cross_reduce(void *argp, void *buf, size_t count)
{
    void *request;
    return inter_start(argp, buf, count, &request);
}

static int run_hier(fork_group_member_t *m, void *arg)
{
    int die = *(const int *)arg;
    crux_coll_config_t config = small_config(LIMIT, WHOLE);
    fork_subgroup_t local, cross;
    if (fork_subgroup_init(&local, m, m->rank / 2, m->rank) != 0 ||
        fork_subgroup_init(&cross, m, m->rank % 2, m->rank) != 0) {
        return 2;
    }
    crux_coll_oob_t local_oob = fork_subgroup_oob(&local), cross_oob = fork_subgroup_oob(&cross);
    crux_coll_group_t *g, *x;
    if (crux_coll_group_create(&local_oob, &config, &g) != CRUX_OK ||
        crux_coll_group_create(&cross_oob, &config, &x) != CRUX_OK) {
        return 2;
    }
    hier_arg_t a = { .cross = x };
    crux_coll_inter_t inter = { inter_start, inter_test, &a };
    int rc = 0;
    for (int call = 0; call < 400 && rc == 0; call++) {
        a.dtype = call % 2 ? CRUX_DT_DOUBLE : CRUX_DT_INT32;
        a.op = call % 3 ? CRUX_OP_SUM : CRUX_OP_MIN;
        a.die = die && call == 200 && m->rank == 2;
        size_t esize = crux_dtype_size(a.dtype), count = 1 + (size_t)(call * 13) % (LIMIT / esize);
        _Alignas(64) unsigned char s[BUF_BYTES], r[BUF_BYTES], want[BUF_BYTES], scratch[BUF_BYTES];
        fill(a.dtype, m->rank, count, s, call);
        memcpy(r, s, count * esize);
        /* directly, and as a caller runs it: over its targets, the step the
         * cross group's blocking Allreduce */
        const crux_layout_t layout = { .small = g };
        const crux_layout_cross_t cross = { .reduce = cross_reduce, .arg = &a };
        crux_allreduce_targets_t t = { .layout = &layout, .cross = &cross };
        crux_status_t st = call % 4 < 2
                               ? crux_coll_allreduce_small_hier(g, &inter, call % 2 ? s : NULL, r,
                                                                count, a.dtype, a.op)
                               : crux_allreduce_run(&t, CRUX_ALG_HIER_SMALL, call % 2 ? s : NULL, r,
                                                    count, a.dtype, a.op);
        if (die && call >= 200) {
            /* the others fail, none hangs: the ones that waited on the dead
             * leader, and the leader that stepped with it */
            return st == CRUX_ERR_PEER || st == CRUX_ERR_IO ? 0 : 8;
        }
        if (st != CRUX_OK) {
            return 3;
        }
        /* the reference in the order the groups reduce: each group's two
         * members, then the two groups' sums in the cross group's order */
        crux_reduce_fn_t reduce = crux_reduce_lookup(a.dtype, a.op);
        _Alignas(64) unsigned char other[BUF_BYTES];
        fill(a.dtype, 0, count, want, call);
        fill(a.dtype, 1, count, scratch, call);
        reduce(want, want, scratch, count);
        fill(a.dtype, 2, count, other, call);
        fill(a.dtype, 3, count, scratch, call);
        reduce(other, other, scratch, count);
        reduce(want, want, other, count);
        rc = memcmp(r, want, count * esize) != 0 ? 4 : 0;
    }
    crux_coll_group_destroy(x);
    crux_coll_group_destroy(g);
    return rc;
}

START_TEST(test_across_groups_leaders_step)
{
    int die = 0;
    ck_assert_int_eq(fork_group_run(4, run_hier, &die), 0);
}
END_TEST

START_TEST(test_a_leader_that_dies_fails_the_others)
{
    int die = 1;
    /* the dead leader counts as failed; the three others return an error */
    ck_assert_int_eq(fork_group_run(4, run_hier, &die), 1);
}
END_TEST

/* Member 2 dies between calls (before its 51st), whole or sliced: the
 * others fail in that call rather than hang.  (A member that dies inside a
 * call, after raising its flag: test_a_leader_that_dies_fails_the_others.) */
static int run_death(fork_group_member_t *m, void *arg)
{
    size_t count = *(const size_t *)arg;
    crux_coll_config_t config = small_config(LIMIT, WHOLE);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, &config, &g) != CRUX_OK) {
        return 2;
    }
    float x[LIMIT / 4] = { 0 };
    for (int call = 0; call < 100; call++) {
        if (m->rank == 2 && call == 50) {
            raise(SIGKILL);
        }
        crux_status_t st = crux_coll_allreduce_small(g, NULL, x, count, CRUX_DT_FLOAT, CRUX_OP_SUM);
        if (call < 50 && st != CRUX_OK) {
            return 3;
        }
        if (call >= 50) {
            return st == CRUX_ERR_PEER ? 0 : 4;
        }
    }
    return 5;
}

START_TEST(test_peer_death_fails_the_others)
{
    size_t whole = 4, sliced = LIMIT / 4;
    ck_assert_int_eq(fork_group_run(3, run_death, &whole), 1);
    ck_assert_int_eq(fork_group_run(3, run_death, &sliced), 1);
}
END_TEST

/* Member 1 passes another count: every member fails (the one that saw
 * the other shape with CRUX_ERR_INVALID), none hangs, and the group stays
 * given up. */
static int run_mismatch(fork_group_member_t *m, void *arg)
{
    (void)arg;
    crux_coll_config_t config = small_config(LIMIT, WHOLE);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, &config, &g) != CRUX_OK) {
        return 2;
    }
    float x[8] = { 0 };
    crux_status_t st =
        crux_coll_allreduce_small(g, NULL, x, m->rank == 1 ? 5 : 4, CRUX_DT_FLOAT, CRUX_OP_SUM);
    if (st != CRUX_ERR_INVALID && st != CRUX_ERR_PEER) {
        return 3;
    }
    if (crux_coll_allreduce_small(g, NULL, x, 4, CRUX_DT_FLOAT, CRUX_OP_SUM) != CRUX_ERR_PEER ||
        !crux_coll_group_broken(g)) {
        return 4;
    }
    crux_coll_group_destroy(g);
    return 0;
}

START_TEST(test_calls_of_another_shape_fail_everywhere)
{
    ck_assert_int_eq(fork_group_run(3, run_mismatch, NULL), 0);
}
END_TEST

/* A group without a stage (the small Allreduce's alone, beside the
 * lanes): small calls run, the flags and lanes algorithms say so and do nothing. */
static int run_no_stage(fork_group_member_t *m, void *arg)
{
    (void)arg;
    crux_coll_config_t config = small_config(LIMIT, WHOLE);
    config.stage_size = 0;
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, &config, &g) != CRUX_OK) {
        return 2;
    }
    int rc = check_call(g, m, CRUX_DT_FLOAT, CRUX_OP_SUM, LIMIT / 4, 0, 1);
    float x[64] = { 0 };
    if (rc == 0 &&
        (crux_coll_allreduce(g, NULL, x, 64, CRUX_DT_FLOAT, CRUX_OP_SUM) != CRUX_ERR_UNSUPPORTED ||
         crux_coll_group_broken(g))) {
        rc = 6;
    }
    rc = rc == 0 ? check_call(g, m, CRUX_DT_INT32, CRUX_OP_MAX, 3, 1, 2) : rc;
    crux_coll_group_destroy(g);
    return rc;
}

START_TEST(test_a_group_without_a_stage)
{
    ck_assert_int_eq(fork_group_run(2, run_no_stage, NULL), 0);
}
END_TEST

/* crux_allreduce_run over a caller's targets: the small and the flags
 * algorithm on the group the targets name, the caller's word set on it (a
 * member calling under another word is a call of another shape: every
 * member fails, none hangs); targets that lack what an algorithm needs:
 * CRUX_ERR_NOT_FOUND, nothing touched; the caller's own algorithms are not
 * the library's to run. */
static int run_targets(fork_group_member_t *m, void *arg)
{
    (void)arg;
    crux_coll_config_t config = small_config(LIMIT, WHOLE);
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, &config, &g) != CRUX_OK) {
        return 2;
    }
    crux_allreduce_targets_t t = { .caller = 7, .group = g }, none = { .caller = 7 };
    int rc = 0;
    for (int call = 0; call < 200 && rc == 0; call++) {
        crux_alg_t alg = call % 2 ? CRUX_ALG_SMALL : CRUX_ALG_FLAGS;
        size_t count = 1 + (size_t)(call * 13) % (LIMIT / 4);
        _Alignas(64) int32_t s[LIMIT / 4], r[LIMIT / 4], want[LIMIT / 4], scratch[LIMIT / 4];
        fill(CRUX_DT_INT32, m->rank, count, s, call);
        memcpy(r, s, count * 4);
        if (crux_allreduce_run(&t, alg, call % 3 ? s : NULL, r, count, CRUX_DT_INT32,
                               CRUX_OP_SUM) != CRUX_OK) {
            rc = 3;
            break;
        }
        reference(CRUX_DT_INT32, CRUX_OP_SUM, m->size, count, want, scratch, call);
        rc = memcmp(r, want, count * 4) != 0 ? 4 : 0;
    }
    static const crux_alg_t needing[] = { CRUX_ALG_SMALL,     CRUX_ALG_FLAGS,
                                          CRUX_ALG_LANES,     CRUX_ALG_DEVICE,
                                          CRUX_ALG_HIER,      CRUX_ALG_HIER_SEQUENTIAL,
                                          CRUX_ALG_HIER_SMALL };
    float x[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    for (size_t k = 0; k < sizeof(needing) / sizeof(needing[0]) && rc == 0; k++) {
        if (crux_allreduce_run(&none, needing[k], NULL, x, 8, CRUX_DT_FLOAT, CRUX_OP_SUM) !=
                CRUX_ERR_NOT_FOUND ||
            x[7] != 8) {
            rc = 5;
        }
    }
    if (rc == 0 && (crux_allreduce_run(&t, CRUX_ALG_FALLBACK, NULL, x, 8, CRUX_DT_FLOAT,
                                       CRUX_OP_SUM) != CRUX_ERR_INVALID ||
                    crux_allreduce_run(&t, CRUX_ALG_HOST_STAGED, NULL, x, 8, CRUX_DT_FLOAT,
                                       CRUX_OP_SUM) != CRUX_ERR_INVALID ||
                    crux_allreduce_run(&t, CRUX_ALG_COUNT, NULL, x, 8, CRUX_DT_FLOAT,
                                       CRUX_OP_SUM) != CRUX_ERR_INVALID)) {
        rc = 6;
    }
    if (rc == 0) {
        t.caller = m->rank == 1 ? 8 : 7; /* one member under another communicator's word */
        crux_status_t st =
            crux_allreduce_run(&t, CRUX_ALG_SMALL, NULL, x, 8, CRUX_DT_FLOAT, CRUX_OP_SUM);
        rc = st == CRUX_ERR_INVALID || st == CRUX_ERR_PEER ? 0 : 7;
    }
    crux_coll_group_destroy(g);
    return rc;
}

START_TEST(test_run_over_the_targets)
{
    ck_assert_int_eq(fork_group_run(3, run_targets, NULL), 0);
}
END_TEST

static Suite *small_suite(void)
{
    Suite *s = suite_create("coll_small");
    TCase *tc = tcase_create("small");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_every_type_op_and_count_against_the_reference, 2, 4);
    tcase_add_test(tc, test_default_limits_whole_and_sliced);
    tcase_add_test(tc, test_several_groups_back_to_back);
    tcase_add_test(tc, test_across_groups_leaders_step);
    tcase_add_test(tc, test_a_leader_that_dies_fails_the_others);
    tcase_add_test(tc, test_peer_death_fails_the_others);
    tcase_add_test(tc, test_calls_of_another_shape_fail_everywhere);
    tcase_add_test(tc, test_a_group_without_a_stage);
    tcase_add_test(tc, test_run_over_the_targets);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(small_suite)

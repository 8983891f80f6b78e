/* libcrux_coll's flat Allreduce in forked processes (no MPI): group sizes 1
 * to 5, counts that do and do not divide by the size or the chunk, messages
 * larger than the staging area, in and out of place, with identical bits on
 * every member; a stage streamed for far peers, who are judged from every
 * look at their flags; and the failures: a member whose set-up fails, a
 * member that dies in the middle. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/group/crux_group_internal.h" /* crux_far */
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

typedef struct {
    size_t count;
    int in_place;
    crux_coll_config_t config;
} case_t;

static float value(int rank, size_t i)
{
    return (float)((rank * 7 + (int)(i % 1009)) % 13) - 6.0f;
}

static int run_case(fork_group_member_t *m, void *arg)
{
    case_t *c = arg;
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, &c->config, &g) != CRUX_OK) {
        return 2;
    }
    float *s = malloc((c->count + 1) * sizeof(float)), *r = malloc((c->count + 1) * sizeof(float));
    for (int round = 0; round < 3; round++) { /* repeated calls reuse the group */
        for (size_t i = 0; i <= c->count; i++) {
            s[i] = value(m->rank + round, i);
            r[i] = c->in_place ? s[i] : -99.0f;
        }
        crux_status_t st =
            crux_coll_allreduce(g, c->in_place ? NULL : s, r, c->count, CRUX_DT_FLOAT, CRUX_OP_SUM);
        if (st != CRUX_OK) {
            return 3;
        }
        for (size_t i = 0; i < c->count; i++) {
            float e = 0;
            for (int p = 0; p < m->size; p++) {
                e += value(p + round, i);
            }
            if (r[i] != e) {
                return 4;
            }
        }
        if (r[c->count] != (c->in_place ? s[c->count] : -99.0f)) {
            return 5; /* wrote past the count */
        }
    }
    free(s);
    free(r);
    crux_coll_group_destroy(g);
    return 0;
}

static const size_t counts[] = { 0, 1, 2, 3, 7, 1000, 16411, 70001, 300007 };

/* _i selects the group size (1..5); every count and placement. */
START_TEST(test_allreduce_every_count)
{
    int size = _i;
    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            case_t c = { counts[k], in_place, CRUX_COLL_CONFIG_DEFAULT };
            /* small stage and chunks: many chunks, and several rounds */
            c.config.stage_size = 64u << 10;
            c.config.chunk_size = 4000;
            c.config.stream_min_bytes = 50000; /* larger counts stream their results */
            ck_assert_msg(fork_group_run(size, run_case, &c) == 0, "size %d count %zu %s", size,
                          counts[k], in_place ? "in place" : "");
        }
    }
}
END_TEST

typedef struct {
    size_t count;
    uint64_t *hashes; /* shared */
} bits_t;

static int run_bits(fork_group_member_t *m, void *arg)
{
    bits_t *b = arg;
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, NULL, &g) != CRUX_OK) {
        return 2;
    }
    float *s = malloc(b->count * sizeof(float)), *r = malloc(b->count * sizeof(float));
    srand48(m->rank + 1);
    for (size_t i = 0; i < b->count; i++) {
        s[i] = (float)(drand48() - 0.5) * (float)(1 << (lrand48() % 24));
    }
    /* out of place, then in place */
    for (int in_place = 0; in_place < 2; in_place++) {
        if (in_place) {
            memcpy(r, s, b->count * sizeof(float));
        }
        if (crux_coll_allreduce(g, in_place ? NULL : s, r, b->count, CRUX_DT_FLOAT, CRUX_OP_SUM) !=
            CRUX_OK) {
            return 3;
        }
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < b->count * sizeof(float); i++) {
            h = (h ^ ((unsigned char *)r)[i]) * 1099511628211ull;
        }
        b->hashes[2 * m->rank + in_place] = h;
    }
    crux_coll_group_destroy(g);
    return 0;
}

START_TEST(test_identical_bits_everywhere_in_and_out_of_place)
{
    uint64_t *hashes = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    bits_t b = { 1000003, hashes };
    ck_assert_int_eq(fork_group_run(4, run_bits, &b), 0);
    for (int i = 1; i < 8; i++) {
        ck_assert_msg(hashes[i] == hashes[0], "result %d differs", i);
    }
    munmap(hashes, 4096);
}
END_TEST

static int run_types(fork_group_member_t *m, void *arg)
{
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, NULL, &g) != CRUX_OK) {
        return 2;
    }
    int64_t v[777];
    double d[777];
    for (int i = 0; i < 777; i++) {
        v[i] = (int64_t)1 << ((m->rank * 5 + i) % 60);
        d[i] = m->rank == 1 ? -(double)i : (double)(i % 17);
    }
    if (crux_coll_allreduce(g, NULL, v, 777, CRUX_DT_INT64, CRUX_OP_BOR) != CRUX_OK ||
        crux_coll_allreduce(g, NULL, d, 777, CRUX_DT_DOUBLE, CRUX_OP_MIN) != CRUX_OK) {
        return 3;
    }
    for (int i = 0; i < 777; i++) {
        int64_t e = 0;
        double dmin = 1e300;
        for (int p = 0; p < m->size; p++) {
            e |= (int64_t)1 << ((p * 5 + i) % 60);
            double x = p == 1 ? -(double)i : (double)(i % 17);
            dmin = x < dmin ? x : dmin;
        }
        if (v[i] != e || d[i] != dmin) {
            return 4;
        }
    }
    /* no kernel: nothing done, same answer on every member */
    if (crux_coll_allreduce(g, NULL, d, 777, CRUX_DT_DOUBLE, CRUX_OP_BXOR) !=
        CRUX_ERR_UNSUPPORTED) {
        return 5;
    }
    crux_coll_group_destroy(g);
    return 0;
}

START_TEST(test_other_types_and_unsupported_pairs)
{
    ck_assert_int_eq(fork_group_run(3, run_types, NULL), 0);
}
END_TEST

/* Member 1 asks for a shared-memory domain that does not exist: the group
 * fails on every member with the same status. */
static int run_setup_failure(fork_group_member_t *m, void *arg)
{
    crux_coll_config_t config = CRUX_COLL_CONFIG_DEFAULT;
    if (m->rank == 1) {
        config.tl.shm_mds = "no-such-memory-domain";
    }
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g = NULL;
    return crux_coll_group_create(&oob, &config, &g) == CRUX_ERR_NO_RESOURCE && g == NULL ? 0 : 1;
}

START_TEST(test_setup_failure_is_agreed)
{
    ck_assert_int_eq(fork_group_run(3, run_setup_failure, NULL), 0);
}
END_TEST

/* Whether every member judges every peer as expected, agreed by all (a
 * collective: a MAX of who is not there yet); -1 if the call fails.  A
 * peer a member seldom waits for is judged from its polls. */
static int all_judged(fork_group_member_t *m, crux_coll_group_t *g, int want_far)
{
    int32_t missing = 0;
    for (int q = 0; q < m->size; q++) {
        missing |= q != m->rank && crux_far(g, q) != want_far;
    }
    if (crux_coll_allreduce(g, NULL, &missing, 1, CRUX_DT_INT32, CRUX_OP_MAX) != CRUX_OK) {
        return -1;
    }
    return missing == 0;
}

/* Peers found far (a picosecond latency: each one once enough looks at
 * its words were timed) get their pieces, and results, streamed into the stage, flat
 * and in place (past rank 1 the result is formed in the stage as before);
 * never with ten seconds.  Results stay exact either way. */
static int run_far(fork_group_member_t *m, void *arg)
{
    double far_latency = *(const double *)arg;
    int want_far = far_latency < 1e-9;
    crux_coll_config_t config = CRUX_COLL_CONFIG_DEFAULT;
    config.chunk_size = 16384;
    config.far_latency = far_latency;
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, &config, &g) != CRUX_OK) {
        return 2;
    }
    const size_t sizes[] = { 300007, 1000, 70001, 5 }, n_max = 300007;
    float *s = malloc((n_max + 1) * sizeof(float)), *r = malloc((n_max + 1) * sizeof(float));
    int rc = 0;
    /* the warm-up: calls that wait, 100 at a time, at least 1000 and until
     * every member sees what it should (at most 30000) */
    for (size_t i = 0; i < 20000; i++) {
        s[i] = value(m->rank, i);
    }
    for (size_t calls = 100; rc == 0; calls += 100) {
        for (int i = 0; i < 100 && rc == 0; i++) {
            rc = crux_coll_allreduce(g, s, r, 20000, CRUX_DT_FLOAT, CRUX_OP_SUM) != CRUX_OK ? 3 : 0;
        }
        int judged = rc != 0 || calls < 1000 ? 0 : all_judged(m, g, want_far);
        if (judged != 0 || rc != 0) {
            rc = judged < 0 ? 3 : rc;
            break;
        }
        rc = calls >= 30000 ? 6 : 0;
    }
    for (size_t call = 0; call < 8 && rc == 0; call++) {
        size_t n = sizes[call % 4];
        int in_place = (int)(call % 2);
        for (size_t i = 0; i <= n; i++) {
            s[i] = value(m->rank + (int)call, i);
            r[i] = in_place ? s[i] : -99.0f;
        }
        if (crux_coll_allreduce(g, in_place ? NULL : s, r, n, CRUX_DT_FLOAT, CRUX_OP_SUM) !=
            CRUX_OK) {
            rc = 3;
        }
        for (size_t i = 0; i < n && rc == 0; i++) {
            float e = 0;
            for (int p = 0; p < m->size; p++) {
                e += value(p + (int)call, i);
            }
            rc = r[i] != e ? 4 : 0;
        }
    }
    free(s);
    free(r);
    crux_coll_group_destroy(g);
    return rc;
}

START_TEST(test_far_peers_get_a_streamed_stage)
{
    double latencies[] = { 1e-12, 10.0 };
    for (int size = 2; size <= 4; size++) {
        for (int l = 0; l < 2; l++) {
            ck_assert_msg(fork_group_run(size, run_far, &latencies[l]) == 0,
                          "size %d far_latency %g", size, latencies[l]);
        }
    }
}
END_TEST

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One member's looks at a peer's flag, no wait among them (the flag is set
 * here, standing for the peer): a look that finds the flag already set
 * brought nothing from the peer and is never a sample; a flag found short,
 * then set, is, so polls alone judge the peer, and each window anew. */
START_TEST(test_looks_alone_judge_a_peer)
{
    crux_ctrl_t ctrl[2];
    memset(ctrl, 0, sizeof(ctrl));
    crux_ctrl_t *ctrls[2] = { &ctrl[0], &ctrl[1] };
    crux_peer_reach_t reach[2];
    memset(reach, 0, sizeof(reach));
    crux_coll_group_t g = { .rank = 0, .size = 2, .ctrl = ctrls, .reach = reach };
    g.config.far_latency = 1e-12;
    const size_t flag = offsetof(crux_ctrl_t, reduced);

    ctrl[1].reduced = 5;
    int missed = 0; /* one assertion: each passing one costs a write to Check's pipe */
    for (int i = 0; i < 100000; i++) {
        missed += !crux_look(&g, 1, flag, 5);
    }
    ck_assert_int_eq(missed, 0);
    ck_assert_uint_eq(reach[1].reach.n, 0);
    ck_assert(!crux_far(&g, 1));

    double deadline = seconds() + 10;
    uint64_t v = 6;
    for (; !crux_far(&g, 1) && seconds() < deadline; v++) {
        ck_assert(!crux_look(&g, 1, flag, v));
        ctrl[1].reduced = v;
        ck_assert(crux_look(&g, 1, flag, v));
    }
    ck_assert_msg(crux_far(&g, 1), "never judged far from %llu looks", (unsigned long long)(v - 6));
    g.config.far_latency = 10.0; /* no look takes ten seconds */
    for (; crux_far(&g, 1) && seconds() < deadline; v++) {
        ck_assert(!crux_look(&g, 1, flag, v));
        ctrl[1].reduced = v;
        ck_assert(crux_look(&g, 1, flag, v));
    }
    ck_assert(!crux_far(&g, 1));
    ck_assert(!crux_far(&g, 0)); /* no look at ourselves */
}
END_TEST

/* Member 2 dies after set-up; the others must return CRUX_ERR_PEER rather
 * than hang. */
static int run_peer_death(fork_group_member_t *m, void *arg)
{
    (void)arg;
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_coll_group_t *g;
    if (crux_coll_group_create(&oob, NULL, &g) != CRUX_OK) {
        return 2;
    }
    if (m->rank == 2) {
        raise(SIGKILL);
    }
    static float x[3000000];
    crux_status_t st = crux_coll_allreduce(g, NULL, x, 3000000, CRUX_DT_FLOAT, CRUX_OP_SUM);
    return st == CRUX_ERR_PEER ? 0 : 1;
}

START_TEST(test_peer_death_is_an_error_not_a_hang)
{
    /* 3 members: the two survivors report the death, the dead one counts as failed */
    ck_assert_int_eq(fork_group_run(3, run_peer_death, NULL), 1);
}
END_TEST

static Suite *coll_suite(void)
{
    Suite *s = suite_create("coll_allreduce");
    TCase *tc = tcase_create("allreduce");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_allreduce_every_count, 1, 6);
    tcase_add_test(tc, test_identical_bits_everywhere_in_and_out_of_place);
    tcase_add_test(tc, test_other_types_and_unsupported_pairs);
    tcase_add_test(tc, test_setup_failure_is_agreed);
    tcase_add_test(tc, test_looks_alone_judge_a_peer);
    tcase_add_test(tc, test_far_peers_get_a_streamed_stage);
    tcase_add_test(tc, test_peer_death_is_an_error_not_a_hang);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(coll_suite)

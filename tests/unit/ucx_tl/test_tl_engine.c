/* The multipath engine on model channels: every byte lands exactly once at
 * the right place for sizes from 1 B to 256 MiB, from and to unaligned
 * addresses; many transfers in flight at once (more than a ring holds);
 * two processes sending to each other at the same time over buffers they
 * share; size mismatches, empty transfers, and a single channel forced;
 * receives that reduce on landing, alone and chained. */
#include <stdlib.h>
#include <sys/mman.h>

#include "tests/unit/check_main.h"
#include "tests/unit/tl_test_util.h"

/* Fast, so the big sizes stay short; different, so the planner splits. */
static const crux_tl_model_t models[3] = {
    { .bandwidth = 40e9, .latency = 4e-6, .chunk_cost = 1e-6 },
    { .bandwidth = 20e9, .latency = 6e-6, .chunk_cost = 1e-6 },
    { .bandwidth = 10e9,
      .latency = 2e-6,
      .chunk_cost = 0.5e-6,
      .max_depth = 2,
      .max_chunk = 256u << 10 },
};

static crux_status_t move(crux_tl_pair_t *pair, unsigned char *dst, const unsigned char *src,
                          size_t n, const crux_tl_xfer_params_t *params, crux_tl_xfer_t **recv)
{
    crux_tl_xfer_t *s;
    crux_status_t st = crux_tl_recv(pair, dst, n, params, recv);
    if (st == CRUX_OK) {
        st = crux_tl_send(pair, src, n, NULL, &s);
    }
    if (st != CRUX_OK) {
        return st;
    }
    crux_status_t rs = crux_tl_xfer_wait(*recv), ss = crux_tl_xfer_wait(s);
    crux_tl_xfer_release(s);
    return rs != CRUX_OK ? rs : ss;
}

START_TEST(test_sizes_from_one_byte_to_256_mib)
{
    tl_engine_t t;
    ck_assert_int_eq(tl_engine_open(&t, 0, models, 3, ""), 0);
    crux_tl_pair_t *pair;
    ck_assert_int_eq(crux_tl_pair_connect(t.engine, 1, 1, NULL, &pair), CRUX_OK);
    const size_t sizes[] = {
        1, 2, 63, 64, 65, 1000, 4095, 4097, 65537, (1u << 20) + 13, (16u << 20) + 7, 256u << 20
    };
    const size_t largest = 256u << 20;
    unsigned char *src = malloc(largest + 16), *dst = malloc(largest + 16);
    ck_assert(src != NULL && dst != NULL);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s];
        unsigned salt = (unsigned)s * 31 + 7;
        unsigned char *from = src + 3, *to = dst + 5; /* unaligned both */
        tl_fill(from, n, salt);
        tl_prepare_dst(to, n, salt);
        to[-1] = 0xab;
        to[n] = 0xcd;
        crux_tl_xfer_t *recv;
        ck_assert_int_eq(move(pair, to, from, n, NULL, &recv), CRUX_OK);
        ck_assert_int_eq(tl_landed_once(to, n, salt, recv), 0);
        ck_assert_msg(to[-1] == 0xab && to[n] == 0xcd, "wrote outside [%zu bytes]", n);
        const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(recv);
        if (n >= (16u << 20)) {
            ck_assert_uint_eq(st->nstripes, 3); /* large: every channel */
        }
        for (unsigned i = 0; i < st->nstripes; i++) {
            /* chunks never exceed the planned chunk (the third channel's limit) */
            ck_assert_uint_ge(st->stripe[i].chunks * st->stripe[i].chunk, st->stripe[i].bytes);
            ck_assert(st->stripe[i].channel != 2 || st->stripe[i].chunk <= (256u << 10));
        }
        crux_tl_xfer_release(recv);
    }
    free(src);
    free(dst);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
}
END_TEST

/* 150 transfers posted at once (the ring holds 64), sends and receives in
 * shuffled order, small chunks so that channels are shared by many. */
START_TEST(test_many_concurrent_transfers)
{
    crux_tl_model_t small[3];
    for (int i = 0; i < 3; i++) {
        small[i] = models[i];
        small[i].max_chunk = 4096u << i;
        small[i].max_depth = 3;
    }
    tl_engine_t t;
    ck_assert_int_eq(tl_engine_open(&t, 0, small, 3, ""), 0);
    crux_tl_pair_t *pair;
    ck_assert_int_eq(crux_tl_pair_connect(t.engine, 0, 0, NULL, &pair), CRUX_OK);
    enum { N = 150 };
    size_t at[N + 1], total;
    at[0] = 0;
    srand(7);
    for (int i = 0; i < N; i++) {
        at[i + 1] = at[i] + (size_t)(rand() % 200000) + (i % 3 == 0 ? 0 : 1) * 17;
    }
    total = at[N];
    unsigned char *src = malloc(total + 1), *dst = malloc(total + 1);
    tl_fill(src, total, 99);
    tl_prepare_dst(dst, total, 99);
    crux_tl_xfer_t *sends[N], *recvs[N];
    int posted_s = 0, posted_r = 0;
    while (posted_s < N || posted_r < N) {
        if (posted_r < N && (posted_s == N || rand() % 2)) {
            ck_assert_int_eq(crux_tl_recv(pair, dst + at[posted_r], at[posted_r + 1] - at[posted_r],
                                          NULL, &recvs[posted_r]),
                             CRUX_OK);
            posted_r++;
        } else {
            ck_assert_int_eq(crux_tl_send(pair, src + at[posted_s], at[posted_s + 1] - at[posted_s],
                                          NULL, &sends[posted_s]),
                             CRUX_OK);
            posted_s++;
        }
        crux_tl_engine_progress(t.engine);
    }
    for (int done = 0; done < 2 * N;) {
        crux_tl_engine_progress(t.engine);
        done = 0;
        for (int i = 0; i < N; i++) {
            done += crux_tl_xfer_done(sends[i]) + crux_tl_xfer_done(recvs[i]);
        }
    }
    for (int i = 0; i < N; i++) {
        size_t n = at[i + 1] - at[i];
        ck_assert_int_eq(crux_tl_xfer_status(sends[i]), CRUX_OK);
        ck_assert_int_eq(crux_tl_xfer_status(recvs[i]), CRUX_OK);
        size_t sum = 0;
        const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(recvs[i]);
        for (unsigned s = 0; s < st->nstripes; s++) {
            sum += st->stripe[s].bytes;
        }
        ck_assert_uint_eq(sum, n);
        crux_tl_xfer_release(sends[i]);
        crux_tl_xfer_release(recvs[i]);
    }
    size_t wrong = 0;
    while (wrong < total && dst[wrong] == tl_pattern(wrong, 99)) {
        wrong++;
    }
    ck_assert_msg(wrong == total, "byte %zu of %zu wrong", wrong, total);
    free(src);
    free(dst);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
}
END_TEST

START_TEST(test_mismatch_empty_and_forced_channel)
{
    tl_engine_t t;
    ck_assert_int_eq(tl_engine_open(&t, 0, models, 3, ""), 0);
    crux_tl_pair_t *pair;
    ck_assert_int_eq(crux_tl_pair_connect(t.engine, 2, 2, NULL, &pair), CRUX_OK);
    unsigned char src[4096], dst[4096];
    crux_tl_xfer_t *s, *r;
    /* sizes disagree: both sides fail, and the pair goes on */
    ck_assert_int_eq(crux_tl_recv(pair, dst, 100, NULL, &r), CRUX_OK);
    ck_assert_int_eq(crux_tl_send(pair, src, 200, NULL, &s), CRUX_OK);
    ck_assert_int_eq(crux_tl_xfer_wait(r), CRUX_ERR_INVALID);
    ck_assert_int_eq(crux_tl_xfer_wait(s), CRUX_ERR_INVALID);
    crux_tl_xfer_release(s);
    crux_tl_xfer_release(r);
    /* empty */
    ck_assert_int_eq(move(pair, dst, src, 0, NULL, &r), CRUX_OK);
    ck_assert_uint_eq(crux_tl_xfer_stats(r)->nstripes, 0);
    crux_tl_xfer_release(r);
    /* one channel forced, with a forced chunk size */
    tl_fill(src, sizeof(src), 5);
    tl_prepare_dst(dst, sizeof(dst), 5);
    crux_tl_xfer_params_t only_third = { .channels = 1u << 2, .chunk = 512 };
    ck_assert_int_eq(move(pair, dst, src, sizeof(src), &only_third, &r), CRUX_OK);
    ck_assert_int_eq(tl_landed_once(dst, sizeof(dst), 5, r), 0);
    const crux_tl_xfer_stats_t *st = crux_tl_xfer_stats(r);
    ck_assert_uint_eq(st->nstripes, 1);
    ck_assert_uint_eq(st->stripe[0].channel, 2);
    ck_assert_uint_eq(st->stripe[0].chunks, sizeof(src) / 512);
    crux_tl_xfer_release(r);
    /* a mask that names no channel of the pair */
    crux_tl_xfer_params_t none = { .channels = 1u << 9 };
    ck_assert_int_eq(crux_tl_recv(pair, dst, 10, &none, &r), CRUX_OK);
    ck_assert_int_eq(crux_tl_send(pair, src, 10, NULL, &s), CRUX_OK);
    ck_assert_int_eq(crux_tl_xfer_wait(r), CRUX_ERR_UNSUPPORTED);
    ck_assert_int_eq(crux_tl_xfer_wait(s), CRUX_ERR_UNSUPPORTED);
    crux_tl_xfer_release(s);
    crux_tl_xfer_release(r);
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
}
END_TEST

/* Two processes: model channels copy from the sender's buffer, so buffers
 * live in a mapping both inherited from the parent (same addresses). */
typedef struct {
    unsigned char *buf[2]; /* each member's source, then its landing area */
    size_t half;
} shared_t;

static int both_ways(fork_group_member_t *m, void *arg)
{
    shared_t *sh = arg;
    tl_engine_t t;
    if (tl_engine_open(&t, 0, models, 3, "") != 0) {
        return 10;
    }
    crux_tl_pair_t *pair = tl_connect(m, &t);
    if (pair == NULL) {
        return 11;
    }
    int peer = 1 - m->rank;
    unsigned char *mine = sh->buf[m->rank];
    unsigned char *out = mine, *in = mine + sh->half;
    tl_fill(out, sh->half, (unsigned)m->rank);
    tl_prepare_dst(in, sh->half, (unsigned)peer);
    fork_group_barrier(m);
    enum { PIECES = 80 };
    crux_tl_xfer_t *s[PIECES], *r[PIECES];
    size_t piece = sh->half / PIECES;
    for (int i = 0; i < PIECES; i++) {
        size_t len = i == PIECES - 1 ? sh->half - piece * i : piece - (size_t)(i % 5);
        if (crux_tl_send(pair, out + piece * i, len, NULL, &s[i]) != CRUX_OK ||
            crux_tl_recv(pair, in + piece * i, len, NULL, &r[i]) != CRUX_OK) {
            return 12;
        }
    }
    for (int i = 0; i < PIECES; i++) {
        if (crux_tl_xfer_wait(s[i]) != CRUX_OK || crux_tl_xfer_wait(r[i]) != CRUX_OK) {
            return 13;
        }
    }
    for (int i = 0; i < PIECES; i++) {
        size_t len = i == PIECES - 1 ? sh->half - piece * i : piece - (size_t)(i % 5);
        for (size_t b = 0; b < len; b++) {
            if (in[piece * i + b] != tl_pattern(piece * i + b, (unsigned)peer)) {
                return 14;
            }
        }
        crux_tl_xfer_release(s[i]);
        crux_tl_xfer_release(r[i]);
    }
    fork_group_barrier(m); /* the peer may still be reading our source */
    crux_tl_pair_disconnect(pair);
    tl_engine_close(&t);
    return 0;
}

START_TEST(test_two_processes_both_ways)
{
    shared_t sh = { .half = (8u << 20) + 333 };
    for (int i = 0; i < 2; i++) {
        sh.buf[i] =
            mmap(NULL, 2 * sh.half, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        ck_assert(sh.buf[i] != MAP_FAILED);
    }
    ck_assert_int_eq(fork_group_run(2, both_ways, &sh), 0);
    for (int i = 0; i < 2; i++) {
        munmap(sh.buf[i], 2 * sh.half);
    }
}
END_TEST

/* A reduction that tells its operands apart (out = 3a + b, on uint32),
 * through memcpy so unaligned elements are fine. */
static Suite *engine_suite(void)
{
    Suite *s = suite_create("tl_engine");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sizes_from_one_byte_to_256_mib);
    tcase_add_test(tc, test_many_concurrent_transfers);
    tcase_add_test(tc, test_mismatch_empty_and_forced_channel);
    tcase_add_test(tc, test_two_processes_both_ways);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(engine_suite)

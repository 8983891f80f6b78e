/* The reduce-scatter + allgather pipeline (coll/pipeline/crux_pipeline_internal.h) over a
 * hand-off backend written here: member 0 of two, the peer's side held in
 * this process.  What the pipeline does when the backend's liveness check
 * says the peer is gone: a peer that handed everything over and then exited
 * (between the pipeline's last look and its check) must not fail the call;
 * one that never handed its part over must, without a hang. */
#include <stdint.h>
#include <string.h>

#include "coll/pipeline/crux_pipeline_internal.h"
#include "coll/crux_reduce.h"
#include "tests/unit/check_main.h"

#define COUNT 10007 /* several chunks per shard, shards of unequal length */
#define CHUNK 4096  /* bytes */

typedef struct {
    float peer_input[COUNT];  /* the peer's input */
    float peer_result[COUNT]; /* its reduced shard, where it would hand it over */
    float stage[COUNT];       /* our staging places */
    int handed;               /* the peer handed its pieces and results over */
    int hands_over_at_check;  /* ... only then: it exits right after */
    unsigned checks;          /* liveness checks the pipeline made */
} fake_t;

static fake_t fake;

static int always(crux_pipe_t *p, unsigned k)
{
    (void)p;
    (void)k;
    return 1;
}

static uint8_t *place(crux_pipe_t *p, int q, unsigned k)
{
    return (uint8_t *)fake.stage + crux_chunk_offset(&p->cut, q, k);
}

static uint8_t *result(crux_pipe_t *p, unsigned k)
{
    return place(p, p->rank, k);
}

static void nothing(crux_pipe_t *p, unsigned k)
{
    (void)p;
    (void)k;
}

static int pieces(crux_pipe_t *p, unsigned k, const void **inputs)
{
    if (!fake.handed) {
        return 0;
    }
    inputs[1] = (const uint8_t *)fake.peer_input + crux_chunk_offset(&p->cut, 0, k);
    return 1;
}

static unsigned gathered(crux_pipe_t *p, int q, unsigned k, const void **from)
{
    if (!fake.handed) {
        return 0;
    }
    *from = (const uint8_t *)fake.peer_result + crux_chunk_offset(&p->cut, q, k);
    return crux_shard_chunks(&p->cut, q) - k;
}

static void consume_gathered(crux_pipe_t *p, int q, unsigned n)
{
    (void)p;
    (void)q;
    (void)n;
}

static void doze(crux_pipe_t *p)
{
    (void)p;
}

static void sleep_(crux_pipe_t *p, int moved)
{
    (void)p;
    (void)moved;
}

/* The peer is gone; it may have handed everything over just before. */
static crux_status_t check(crux_pipe_t *p)
{
    (void)p;
    fake.checks++;
    fake.handed |= fake.hands_over_at_check;
    return CRUX_ERR_PEER;
}

static const crux_handoff_ops_t fake_ops = {
    .stage_free = always,
    .piece = place,
    .post_pieces = nothing,
    .pieces = pieces,
    .consume_pieces = nothing,
    .result_free = always,
    .result = result,
    .post_result = nothing,
    .gathered = gathered,
    .consume_gathered = consume_gathered,
    .doze = doze,
    .sleep = sleep_,
    .check = check,
};

static crux_status_t run(float *src, float *dst)
{
    const uint8_t far[2] = { 0, 0 };
    unsigned out[2];
    crux_pipe_t p = {
        .ops = &fake_ops,
        .rank = 0,
        .size = 2,
        .cut = crux_cut(COUNT, sizeof(float), CHUNK, 2),
        .src = (const uint8_t *)src,
        .dst = (uint8_t *)dst,
        .reduce = crux_reduce_lookup(CRUX_DT_FLOAT, CRUX_OP_SUM),
        .do_rs = 1,
        .do_ag = 1,
        .far = far,
        .gathered = out,
    };
    crux_pipe_start(&p);
    return crux_pipe_run(&p);
}

static float src[COUNT], dst[COUNT];

static void setup(int hands_over_at_check)
{
    memset(&fake, 0, sizeof(fake));
    fake.hands_over_at_check = hands_over_at_check;
    for (size_t i = 0; i < COUNT; i++) {
        src[i] = (float)(i % 13);
        fake.peer_input[i] = (float)(i % 7);
        fake.peer_result[i] = src[i] + fake.peer_input[i];
        dst[i] = -1.0f;
    }
}

START_TEST(test_handed_over_then_gone_completes)
{
    setup(1);
    ck_assert_int_eq(run(src, dst), CRUX_OK);
    ck_assert_uint_eq(fake.checks, 1);
    for (size_t i = 0; i < COUNT; i++) {
        ck_assert_msg(dst[i] == src[i] + fake.peer_input[i], "element %zu: %g", i, dst[i]);
    }
}
END_TEST

START_TEST(test_gone_before_handing_over_fails)
{
    setup(0);
    ck_assert_int_eq(run(src, dst), CRUX_ERR_PEER);
    ck_assert_uint_eq(fake.checks, 1);
}
END_TEST

static Suite *pipeline_suite(void)
{
    Suite *s = suite_create("coll_pipeline");
    TCase *tc = tcase_create("peer_gone");
    tcase_add_test(tc, test_handed_over_then_gone_completes);
    tcase_add_test(tc, test_gone_before_handing_over_fails);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(pipeline_suite)

/* The engine group's Allreduce data movement in 2 to 4 forked processes, on
 * model channels and on host channels (with shm-direct: the host pipeline
 * over the lanes' shared stage; without it, pieces land in scratch slots and
 * the owner reduces them):
 * reduce-scatter, allgather and the pipelined allreduce give, bit for bit,
 * the rank-order reduction of every member's input, in place or not, for
 * odd counts and counts smaller than the group; and the device-buffer
 * pieces behave as the API says on a machine without a GPU. */
#include <stdlib.h>
#include <sys/mman.h>

#include "coll/crux_coll.h"
#include "coll/crux_dev.h"
#include "coll/engine/crux_engine_group.h" /* the pairs, to see them found far */
#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"

#define MAX_BYTES (6u << 20)

static const crux_tl_model_t models[3] = {
    { .bandwidth = 40e9, .latency = 2e-6, .chunk_cost = 0.5e-6 },
    { .bandwidth = 20e9, .latency = 3e-6, .chunk_cost = 0.5e-6 },
    { .bandwidth = 10e9, .latency = 1e-6, .chunk_cost = 0.5e-6, .max_chunk = 32u << 10 },
};

typedef enum { ALLREDUCE, REDUCE_SCATTER, ALLGATHER } step_t;

typedef struct {
    uint8_t *region; /* shared: per rank, input then result */
    step_t step;
    crux_dtype_t dtype;
    crux_op_t op;
    size_t count;
    int in_place;
    unsigned kinds; /* host channel kinds instead of model channels (0: models) */
} case_t;

static uint8_t *input_of(const case_t *c, int rank)
{
    return c->region + (size_t)rank * 2 * MAX_BYTES;
}

static uint8_t *result_of(const case_t *c, int rank)
{
    return input_of(c, rank) + MAX_BYTES;
}

/* Inputs that differ per rank and element, small enough that products and
 * sums stay finite in every type. */
static void make_input(const case_t *c, int rank, uint8_t *out)
{
    size_t esize = crux_dtype_size(c->dtype);
    for (size_t i = 0; i < c->count; i++) {
        uint32_t v = (uint32_t)(i * 2654435761u + (uint32_t)rank * 40503u) >> 7;
        uint8_t *e = out + i * esize;
        switch (c->dtype) {
        case CRUX_DT_FLOAT: {
            float f = (float)(v % 2001) / 1000.0f - 1.0f;
            memcpy(e, &f, 4);
            break;
        }
        case CRUX_DT_FLOAT16: /* 0x3c00 + small: 1.0 .. 1.5 */
        case CRUX_DT_BFLOAT16: {
            uint16_t h = (uint16_t)((c->dtype == CRUX_DT_FLOAT16 ? 0x3c00 : 0x3f80) + v % 64);
            memcpy(e, &h, 2);
            break;
        }
        default:
            for (size_t b = 0; b < esize; b++) {
                e[b] = (uint8_t)(v >> (b * 3));
            }
            break;
        }
    }
}

static int body(fork_group_member_t *m, void *arg)
{
    const case_t *c = arg;
    crux_engine_group_config_t cfg = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    cfg.chunk_size = 48u << 10; /* many chunks ... */
    cfg.host_chunk_size = 48u << 10;
    cfg.window = 2; /* ... through few scratch slots */
    cfg.calibrate = 0;
    cfg.engine.kinds = c->kinds;
    cfg.engine.models = c->kinds != 0 ? NULL : models;
    cfg.engine.nmodels = c->kinds != 0 ? 0 : 3;
    cfg.engine.calib_path = "";
    cfg.stream_min_bytes = 1u << 20; /* the larger cases land gathered chunks streamed */
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_engine_group_t *g;
    if (crux_engine_group_create(&oob, &cfg, &g) != CRUX_OK) {
        return 10;
    }
    size_t esize = crux_dtype_size(c->dtype), bytes = c->count * esize, first, length;
    uint8_t *in = input_of(c, m->rank), *out = result_of(c, m->rank);
    crux_engine_shard(g, c->count, m->rank, &first, &length);
    make_input(c, m->rank, in);
    memset(out, 0xee, bytes);
    if (c->step == ALLGATHER) {
        memcpy(out + first * esize, in + first * esize, length * esize);
    } else if (c->in_place) {
        memcpy(out, in, bytes);
    }
    fork_group_barrier(m);
    crux_status_t st;
    const void *sbuf = c->in_place ? NULL : in;
    switch (c->step) {
    case ALLREDUCE: st = crux_engine_allreduce(g, sbuf, out, c->count, c->dtype, c->op); break;
    case REDUCE_SCATTER:
        st = crux_engine_reduce_scatter(g, sbuf, out, c->count, c->dtype, c->op);
        break;
    default: st = crux_engine_allgather(g, out, c->count, c->dtype); break;
    }
    fork_group_barrier(m);
    if (st != CRUX_OK) {
        return 11;
    }

    /* the expected result, reduced in rank order like the owners do */
    uint8_t *want = malloc(bytes + 1), *x = malloc(bytes + 1);
    crux_reduce_fn_t fn = crux_reduce_lookup(c->dtype, c->op);
    for (int p = 0; p < m->size; p++) {
        make_input(c, p, p == 0 ? want : x);
        if (p > 0 && c->step != ALLGATHER) {
            fn(want, want, x, c->count);
        }
    }
    if (c->step == ALLGATHER) { /* shard p comes from member p's input */
        for (int p = 0; p < m->size; p++) {
            size_t f, l;
            crux_engine_shard(g, c->count, p, &f, &l);
            make_input(c, p, x);
            memcpy(want + f * esize, x + f * esize, l * esize);
        }
    }
    int rc = 0;
    if (c->step == REDUCE_SCATTER) {
        /* our shard reduced; the rest untouched (in place: still the input) */
        if (memcmp(out + first * esize, want + first * esize, length * esize) != 0) {
            rc = 12;
        }
        for (size_t i = 0; rc == 0 && i < bytes; i++) {
            int own = i >= first * esize && i < (first + length) * esize;
            if (!own && out[i] != (c->in_place ? in[i] : 0xee)) {
                rc = 13;
            }
        }
    } else if (memcmp(out, want, bytes) != 0) {
        rc = 14;
    }
    free(want);
    free(x);
    crux_engine_group_destroy(g);
    return rc;
}

static void run_on(unsigned kinds, int size, step_t step, crux_dtype_t dtype, crux_op_t op,
                   size_t count, int in_place)
{
    size_t region = (size_t)size * 2 * MAX_BYTES;
    case_t c = {
        .step = step, .dtype = dtype, .op = op, .count = count, .in_place = in_place, .kinds = kinds
    };
    c.region = mmap(NULL, region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(c.region != MAP_FAILED);
    ck_assert_uint_le(count * crux_dtype_size(dtype), MAX_BYTES);
    ck_assert_msg(fork_group_run(size, body, &c) == 0, "%d members, step %d, %s %s, count %zu%s%s",
                  size, step, crux_dtype_name(dtype), crux_op_name(op), count,
                  in_place ? ", in place" : "", kinds != 0 ? ", host channels" : "");
    munmap(c.region, region);
}

/* A group over every host channel kind, uncalibrated (0: default chunk,
 * window, latency past which a peer is far). */
static crux_engine_group_t *host_group(fork_group_member_t *m, size_t host_chunk, unsigned window,
                                       double far_latency)
{
    crux_engine_group_config_t cfg = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    cfg.host_chunk_size = host_chunk;
    cfg.window = window;
    cfg.engine.far_latency = far_latency;
    cfg.calibrate = 0;
    cfg.engine.kinds = CRUX_TL_KINDS_HOST;
    cfg.engine.calib_path = "";
    crux_coll_oob_t oob = fork_group_oob(m);
    crux_engine_group_t *g;
    return crux_engine_group_create(&oob, &cfg, &g) == CRUX_OK ? g : NULL;
}

static void run_case(int size, step_t step, crux_dtype_t dtype, crux_op_t op, size_t count,
                     int in_place)
{
    run_on(0, size, step, dtype, op, count, in_place);
}

START_TEST(test_allreduce_two_to_four_members)
{
    for (int size = 2; size <= 4; size++) {
        run_case(size, ALLREDUCE, CRUX_DT_FLOAT, CRUX_OP_SUM, 1000003, 0);
        run_case(size, ALLREDUCE, CRUX_DT_FLOAT, CRUX_OP_SUM, 1000003, 1);
        run_case(size, ALLREDUCE, CRUX_DT_INT32, CRUX_OP_MAX, 77777, 0);
        run_case(size, ALLREDUCE, CRUX_DT_FLOAT16, CRUX_OP_SUM, 300001, 1);
        run_case(size, ALLREDUCE, CRUX_DT_BFLOAT16, CRUX_OP_PROD, 4097, 0);
        run_case(size, ALLREDUCE, CRUX_DT_UINT8, CRUX_OP_BXOR, 5, 1);
        run_case(size, ALLREDUCE, CRUX_DT_INT64, CRUX_OP_MIN, (size_t)size - 1, 0);
        run_case(size, ALLREDUCE, CRUX_DT_DOUBLE, CRUX_OP_SUM, 1, 1);
    }
}
END_TEST

START_TEST(test_reduce_scatter_and_allgather_alone)
{
    for (int size = 2; size <= 3; size++) {
        run_case(size, REDUCE_SCATTER, CRUX_DT_FLOAT, CRUX_OP_SUM, 250007, 0);
        run_case(size, REDUCE_SCATTER, CRUX_DT_INT32, CRUX_OP_SUM, 250007, 1);
        run_case(size, ALLGATHER, CRUX_DT_INT16, CRUX_OP_SUM, 250007, 1);
        run_case(size, ALLGATHER, CRUX_DT_FLOAT, CRUX_OP_SUM, 2, 1);
    }
}
END_TEST

/* Host buffers between processes: the pieces are reduced in rank order,
 * so float sums come out bit for bit as the rank-order chain, whichever
 * member owns a shard (members 0, 1 and past 1 reduce differently in
 * place), and in small calls, where every member reduces every peer's
 * whole input.  With every host kind they go through the shared stage
 * (shm-direct: many 48 KiB rows through a ring of two, so rows are
 * reused while the pipeline runs); without shm-direct over the shm slots
 * into scratch. */
START_TEST(test_host_channels_reduce_in_rank_order)
{
    const unsigned kinds[2] = { CRUX_TL_KINDS_HOST,
                                CRUX_TL_KINDS_HOST & ~CRUX_TL_KIND(CRUX_TL_CHAN_SHM_DIRECT) };
    for (int e = 0; e < 2; e++) {
        for (int size = 2; size <= 4; size++) {
            run_on(kinds[e], size, ALLREDUCE, CRUX_DT_FLOAT, CRUX_OP_SUM, 1000003, 0);
            run_on(kinds[e], size, ALLREDUCE, CRUX_DT_FLOAT, CRUX_OP_SUM, 1000003, 1);
            run_on(kinds[e], size, ALLREDUCE, CRUX_DT_DOUBLE, CRUX_OP_PROD, 3, 1);
            /* small enough for one exchange of whole buffers (whole_max_bytes) */
            run_on(kinds[e], size, ALLREDUCE, CRUX_DT_FLOAT, CRUX_OP_SUM, 3001, 0);
            run_on(kinds[e], size, ALLREDUCE, CRUX_DT_FLOAT, CRUX_OP_SUM, 3001, 1);
            run_on(kinds[e], size, REDUCE_SCATTER, CRUX_DT_BFLOAT16, CRUX_OP_SUM, 250007, 1);
        }
        run_on(kinds[e], 3, ALLREDUCE, CRUX_DT_INT8, CRUX_OP_MIN, 777, 0);
        run_on(kinds[e], 3, ALLGATHER, CRUX_DT_INT16, CRUX_OP_SUM, 250007, 1);
        run_on(kinds[e], 4, REDUCE_SCATTER, CRUX_DT_INT32, CRUX_OP_SUM, 250007, 0);
    }
}
END_TEST

/* One group, successive calls of every size through the stage: it grows,
 * each call starts at the next row of the ring, results stay exact.  The
 * warm-up of whole calls measures the peers: with a far_latency (arg) of a
 * picosecond every one is far after it, and the stage is written with
 * streaming stores from then on; with ten seconds none is. */
static int successive(fork_group_member_t *m, void *arg)
{
    double far_latency = *(const double *)arg;
    crux_engine_group_t *g = host_group(m, 48u << 10, 3, far_latency);
    if (g == NULL) {
        return 10;
    }
    const size_t counts[] = { 1000, 300007, 7, 1000003, 1000, 12288 * 3, 5 };
    const size_t ncounts = sizeof(counts) / sizeof(counts[0]), warm_up = 400;
    int32_t *in = malloc(1000003 * sizeof(int32_t)), *out = malloc(1000003 * sizeof(int32_t));
    int rc = 0;
    for (size_t i = 0; i < warm_up + ncounts && rc == 0; i++) {
        size_t n = i < warm_up ? 2001 : counts[i - warm_up]; /* warm-up: 8 KiB, whole calls */
        for (int q = 0; i == warm_up && q < m->size; q++) {
            rc |= q != m->rank && crux_tl_pair_far(g->rs[q]) != (far_latency < 1e-9) ? 13 : 0;
        }
        int in_place = (int)(i % 2);
        for (size_t j = 0; j < n; j++) {
            in[j] = (int32_t)((size_t)m->rank * 1000 + (j + i) % 97);
            out[j] = in_place ? in[j] : -1;
        }
        if (crux_engine_allreduce(g, in_place ? NULL : in, out, n, CRUX_DT_INT32, CRUX_OP_SUM) !=
            CRUX_OK) {
            rc = 11;
        }
        int32_t ranks = (int32_t)(1000 * m->size * (m->size - 1) / 2);
        for (size_t j = 0; rc == 0 && j < n; j++) {
            rc = out[j] != ranks + (int32_t)(m->size * ((j + i) % 97)) ? 12 : 0;
        }
    }
    free(in);
    free(out);
    crux_engine_group_destroy(g);
    return rc;
}

START_TEST(test_host_stage_across_calls)
{
    double far_latency = 10.0;
    for (int size = 2; size <= 3; size++) {
        ck_assert_int_eq(fork_group_run(size, successive, &far_latency), 0);
    }
}
END_TEST

/* Every peer far (any latency is past a picosecond): pieces, whole inputs
 * and results are streamed into the stage, and the results stay exact. */
START_TEST(test_far_peers_get_a_streamed_stage)
{
    double far_latency = 1e-12;
    for (int size = 2; size <= 3; size++) {
        ck_assert_int_eq(fork_group_run(size, successive, &far_latency), 0);
    }
}
END_TEST

/* A ring of one or two rows of 4 KiB places, many chunks per shard and
 * more members than cores: a member's copy-ins run ahead of its
 * reductions, so a place is about to be rewritten while peers still read
 * it, unless the lanes' bookkeeping holds the write back.  Every result
 * stays exact, in place and not. */
static int rows_reused(fork_group_member_t *m, void *arg)
{
    crux_engine_group_t *g = host_group(m, 4096, *(const unsigned *)arg, 10.0);
    if (g == NULL) {
        return 10;
    }
    const size_t n = 64 * 1024 + 3; /* 13 chunks of 1024 per shard, at 5 members */
    int32_t *in = malloc(n * sizeof(int32_t)), *out = malloc(n * sizeof(int32_t));
    int rc = 0;
    for (int i = 0; i < 60 && rc == 0; i++) {
        int in_place = i % 2;
        for (size_t j = 0; j < n; j++) {
            in[j] = (int32_t)((size_t)m->rank * 7 + (j * 31 + (size_t)i) % 1009);
            out[j] = in_place ? in[j] : -1;
        }
        if (crux_engine_allreduce(g, in_place ? NULL : in, out, n, CRUX_DT_INT32, CRUX_OP_SUM) !=
            CRUX_OK) {
            rc = 11;
        }
        for (size_t j = 0; rc == 0 && j < n; j++) {
            int32_t want = (int32_t)(7 * m->size * (m->size - 1) / 2) +
                           (int32_t)m->size * (int32_t)((j * 31 + (size_t)i) % 1009);
            rc = out[j] != want ? 12 : 0;
        }
    }
    free(in);
    free(out);
    crux_engine_group_destroy(g);
    return rc;
}

START_TEST(test_lanes_rewrite_a_place_only_once_read)
{
    for (unsigned window = 1; window <= 2; window++) {
        ck_assert_int_eq(fork_group_run(5, rows_reused, &window), 0);
    }
}
END_TEST

/* cma alone: pieces land in the owner's scratch and are reduced afterwards
 * by the CPU, still in rank order. */
START_TEST(test_host_channels_without_shm_reduce_from_scratch)
{
    const unsigned cma = CRUX_TL_KIND(CRUX_TL_CHAN_CMA_GET) | CRUX_TL_KIND(CRUX_TL_CHAN_CMA_PUT);
    for (int size = 2; size <= 4; size++) {
        run_on(cma, size, ALLREDUCE, CRUX_DT_FLOAT, CRUX_OP_SUM, 300007, 0);
        run_on(cma, size, ALLREDUCE, CRUX_DT_FLOAT, CRUX_OP_SUM, 300007, 1);
    }
    run_on(cma, 3, REDUCE_SCATTER, CRUX_DT_DOUBLE, CRUX_OP_PROD, 1001, 1);
}
END_TEST

/* Each member refuses the same calls alike, before moving anything. */
static int refusals(fork_group_member_t *m, void *arg)
{
    crux_engine_group_t *g = host_group(m, 0, 0, 0);
    if (g == NULL) {
        return 10;
    }
    double in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8];
    int rc = 0;
    if (crux_engine_allreduce(g, in, out, 8, CRUX_DT_DOUBLE, CRUX_OP_BAND) !=
            CRUX_ERR_UNSUPPORTED ||
        crux_engine_allreduce(g, in, out, 8, CRUX_DT_COUNT, CRUX_OP_SUM) != CRUX_ERR_INVALID ||
        crux_engine_allreduce(g, in, out, 0, CRUX_DT_DOUBLE, CRUX_OP_SUM) != CRUX_OK) {
        rc = 11;
    }
    /* host channels with private buffers: an allreduce through cma and shm */
    if (rc == 0 && (crux_engine_allreduce(g, in, out, 8, CRUX_DT_DOUBLE, CRUX_OP_SUM) != CRUX_OK ||
                    out[7] != 8.0 * m->size)) {
        rc = 12;
    }
    crux_engine_group_destroy(g);
    return rc;
}

START_TEST(test_refusals_and_host_channels)
{
    ck_assert_int_eq(fork_group_run(3, refusals, NULL), 0);
}
END_TEST

START_TEST(test_device_pieces_without_a_gpu)
{
    double host[4] = { 1, 2, 3, 4 }, back[4] = { 0 };
    ck_assert_int_eq(crux_dev_is_device(host), 0);
    ck_assert_int_eq(crux_dev_is_device(NULL), 0);
    if (crux_dev_count() > 0) {
        return; /* a GPU machine: tests/unit/coll/test_coll_dev covers the rest */
    }
    ck_assert_int_eq(crux_dev_reduce(back, host, host, 4, CRUX_DT_DOUBLE, CRUX_OP_SUM),
                     CRUX_ERR_UNSUPPORTED);
    ck_assert_int_eq(crux_dev_copy(back, host, sizeof(host)), CRUX_OK);
    ck_assert(memcmp(back, host, sizeof(host)) == 0);
    /* the staging path a user-defined op takes: into host buffers and back */
    crux_dev_pinned_t *pin;
    ck_assert_int_eq(crux_dev_pinned_create(&pin), CRUX_OK);
    double *a = crux_dev_pinned_buffer(pin, 0, sizeof(host));
    double *b = crux_dev_pinned_buffer(pin, 1, 1 << 20);
    ck_assert(a != NULL && b != NULL && (void *)a != (void *)b);
    ck_assert_ptr_null(crux_dev_pinned_buffer(pin, 2, 8));
    ck_assert_int_eq(crux_dev_copy(a, host, sizeof(host)), CRUX_OK);
    ck_assert(crux_dev_pinned_buffer(pin, 0, 8) == a); /* big enough: kept */
    ck_assert_double_eq(a[3], 4.0);
    crux_dev_pinned_destroy(pin);
}
END_TEST

START_TEST(test_kernel_table_matches_the_cpu_one)
{
    for (int t = 0; t < CRUX_DT_COUNT; t++) {
        for (int o = 0; o < CRUX_OP_COUNT; o++) {
            /* a device kernel only where the CPU has one, so staging is never
             * the only way for a pair the device claims */
            if (crux_dev_reduce_supported((crux_dtype_t)t, (crux_op_t)o)) {
                ck_assert_ptr_nonnull(crux_reduce_lookup((crux_dtype_t)t, (crux_op_t)o));
            }
        }
    }
    ck_assert(crux_dev_reduce_supported(CRUX_DT_FLOAT16, CRUX_OP_SUM));
    ck_assert(crux_dev_reduce_supported(CRUX_DT_BFLOAT16, CRUX_OP_MAX));
    ck_assert(crux_dev_reduce_supported(CRUX_DT_UINT8, CRUX_OP_BXOR));
    ck_assert(!crux_dev_reduce_supported(CRUX_DT_COMPLEX_FLOAT, CRUX_OP_SUM));
    ck_assert(!crux_dev_reduce_supported(CRUX_DT_LONG_DOUBLE, CRUX_OP_SUM));
    ck_assert(!crux_dev_reduce_supported(CRUX_DT_FLOAT, CRUX_OP_BAND));
    ck_assert(!crux_dev_reduce_supported(CRUX_DT_COUNT, CRUX_OP_SUM));
}
END_TEST

/* An engine group's configuration beside shared-memory groups: the host
 * settings it shares, the engine's defaults for the rest. */
START_TEST(test_config_from_the_host_groups)
{
    crux_coll_config_t host = CRUX_COLL_CONFIG_DEFAULT;
    const crux_engine_group_config_t defaults = CRUX_ENGINE_GROUP_CONFIG_DEFAULT;
    host.tl.use_cma = 0;
    host.tl.shm_mds = "sysv";
    host.tl.service_level = 3;
    host.stream_min_bytes = 12345;
    host.far_latency = 2e-7;
    host.local_procs = 5;
    host.shared_cores = 1;
    host.chunk_size = 999; /* the flags algorithm's, not the engine's */
    crux_engine_group_config_t c = crux_engine_group_config(&host);
    ck_assert(c.tl.use_cma == 0 && strcmp(c.tl.shm_mds, "sysv") == 0 && c.tl.service_level == 3);
    ck_assert_uint_eq(c.stream_min_bytes, 12345);
    ck_assert(c.engine.far_latency == 2e-7);
    ck_assert(c.local_procs == 5 && c.shared_cores == 1);
    ck_assert_uint_eq(c.chunk_size, defaults.chunk_size);
    ck_assert_uint_eq(c.host_chunk_size, defaults.host_chunk_size);
    ck_assert_uint_eq(c.whole_max_bytes, defaults.whole_max_bytes);
    ck_assert_int_eq(c.calibrate, defaults.calibrate);
}
END_TEST

static Suite *dev_suite(void)
{
    Suite *s = suite_create("engine_allreduce");
    TCase *tc = tcase_create("model");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_allreduce_two_to_four_members);
    tcase_add_test(tc, test_reduce_scatter_and_allgather_alone);
    tcase_add_test(tc, test_refusals_and_host_channels);
    tcase_add_test(tc, test_host_channels_reduce_in_rank_order);
    tcase_add_test(tc, test_host_channels_without_shm_reduce_from_scratch);
    tcase_add_test(tc, test_host_stage_across_calls);
    tcase_add_test(tc, test_far_peers_get_a_streamed_stage);
    tcase_add_test(tc, test_lanes_rewrite_a_place_only_once_read);
    tcase_add_test(tc, test_device_pieces_without_a_gpu);
    tcase_add_test(tc, test_kernel_table_matches_the_cpu_one);
    tcase_add_test(tc, test_config_from_the_host_groups);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(dev_suite)

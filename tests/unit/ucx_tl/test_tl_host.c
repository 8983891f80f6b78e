/* libcrux_tl host channels between two real processes: cma get and put of
 * unaligned sizes at unaligned offsets, many operations in flight, shared
 * segments mapped both ways and more than once, and the errors: garbage keys,
 * bad remote addresses, a peer that is gone. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/check_main.h"
#include "tests/unit/fork_group.h"
#include "ucx_tl/crux_tl.h"

#define BIG (3u << 20)

/* What each process publishes to the other. */
typedef struct {
    unsigned char address[256];
    unsigned char key[512];
    uint64_t buffer; /* a private (not shared) buffer, for cma */
    uint64_t seg;    /* segment address, for cma into a segment */
} card_t;

static unsigned char pattern(size_t i, int who)
{
    return (unsigned char)(i * 131 + (size_t)who * 7 + (i >> 9));
}

static int exchange_cards(fork_group_member_t *m, crux_tl_context_t *ctx, crux_tl_seg_t *seg,
                          void *buffer, card_t *cards)
{
    card_t mine;
    memset(&mine, 0, sizeof(mine));
    if (crux_tl_address_size(ctx) > sizeof(mine.address) ||
        crux_tl_seg_key_size(ctx) > sizeof(mine.key) ||
        crux_tl_address_pack(ctx, mine.address) != CRUX_OK ||
        crux_tl_seg_key_pack(seg, mine.key) != CRUX_OK) {
        return -1;
    }
    mine.buffer = (uintptr_t)buffer;
    mine.seg = (uintptr_t)crux_tl_seg_ptr(seg);
    return fork_group_allgather(&mine, cards, sizeof(mine), m);
}

static int cma_and_segments(fork_group_member_t *m, void *arg)
{
    crux_tl_context_t *ctx;
    crux_tl_seg_t *seg;
    const crux_tl_config_t config = CRUX_TL_CONFIG_DEFAULT;
    if (crux_tl_context_open(&config, &ctx) != CRUX_OK ||
        crux_tl_seg_alloc(ctx, 1u << 20, &seg) != CRUX_OK) {
        return 10;
    }
    unsigned char *buffer = malloc(BIG + 64), *landing = malloc(BIG + 64);
    for (size_t i = 0; i < BIG + 64; i++) {
        buffer[i] = pattern(i, m->rank);
    }
    memset(crux_tl_seg_ptr(seg), m->rank + 1, 1u << 20);
    card_t cards[2];
    if (exchange_cards(m, ctx, seg, buffer, cards) != 0) {
        return 11;
    }
    int peer = 1 - m->rank;
    crux_tl_ep_t *ep;
    if (crux_tl_ep_create(ctx, cards[peer].address, &ep) != CRUX_OK) {
        return 12;
    }

    /* blocking gets of unaligned sizes from unaligned offsets */
    const size_t sizes[] = { 1, 3, 7, 4095, 4097, 65537, (1u << 20) + 7, BIG - 3 };
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t off = (s * 13) % 61, len = sizes[s];
        memset(landing, 0, len + 2);
        if (crux_tl_get(ep, landing + 1, cards[peer].buffer + off, len) != CRUX_OK) {
            return 20;
        }
        for (size_t i = 0; i < len; i++) {
            if (landing[1 + i] != pattern(off + i, peer)) {
                return 21;
            }
        }
        if (landing[0] != 0 || landing[len + 1] != 0) {
            return 22; /* wrote outside the range */
        }
    }

    /* many nonblocking gets in flight, then one progress loop */
    crux_tl_completion_t comp = { 0, CRUX_OK };
    for (size_t k = 0; k < 64; k++) {
        if (crux_tl_get_nb(ep, landing + k * 4099, cards[peer].buffer + k * 4099 + 5, 4099,
                           &comp) != CRUX_OK) {
            return 30;
        }
    }
    while (comp.pending > 0) {
        crux_tl_progress(ctx);
    }
    for (size_t i = 0; i < 64 * 4099; i++) {
        if (comp.status != CRUX_OK || landing[i] != pattern(i + 5, peer)) {
            return 31;
        }
    }

    /* put into the peer's segment through cma, read it back through the mapping */
    fork_group_barrier(m);
    unsigned char word[9] = "crux-put";
    if (crux_tl_put(ep, word, cards[peer].seg + 12345 + (size_t)m->rank * 16, 9) != CRUX_OK) {
        return 40;
    }
    fork_group_barrier(m);
    if (memcmp((unsigned char *)crux_tl_seg_ptr(seg) + 12345 + (size_t)peer * 16, word, 9) != 0) {
        return 41;
    }

    /* map the peer's segment twice; both mappings see its bytes and ours */
    crux_tl_rseg_t *r1, *r2;
    if (crux_tl_rseg_attach(ctx, cards[peer].key, &r1) != CRUX_OK ||
        crux_tl_rseg_attach(ctx, cards[peer].key, &r2) != CRUX_OK) {
        return 50;
    }
    unsigned char *p1 = crux_tl_rseg_ptr(r1), *p2 = crux_tl_rseg_ptr(r2);
    if (p1[0] != peer + 1 || p2[(1u << 20) - 1] != peer + 1) {
        return 51;
    }
    fork_group_barrier(m);
    p1[100 + m->rank] = 0xc0 + (unsigned char)m->rank; /* write into the peer's segment */
    fork_group_barrier(m);
    if (((unsigned char *)crux_tl_seg_ptr(seg))[100 + peer] != 0xc0 + peer) {
        return 52;
    }
    crux_tl_rseg_detach(r1);
    if (p2[100 + m->rank] != 0xc0 + m->rank) {
        return 53; /* the second mapping outlives the first */
    }
    crux_tl_rseg_detach(r2);

    /* a remote address that is not mapped in the peer fails, without crashing */
    if (crux_tl_get(ep, landing, 8, 64) == CRUX_OK) {
        return 60;
    }
    fork_group_barrier(m);
    crux_tl_ep_destroy(ep);
    crux_tl_seg_free(seg);
    crux_tl_context_close(ctx);
    free(buffer);
    free(landing);
    return 0;
}

START_TEST(test_cma_and_segments_between_two_processes)
{
    ck_assert_int_eq(fork_group_run(2, cma_and_segments, NULL), 0);
}
END_TEST

START_TEST(test_garbage_key_is_refused)
{
    crux_tl_context_t *ctx;
    ck_assert_int_eq(crux_tl_context_open(NULL, &ctx), CRUX_OK);
    unsigned char key[512];
    memset(key, 0xee, sizeof(key));
    crux_tl_rseg_t *rseg = NULL;
    ck_assert_int_ne(crux_tl_rseg_attach(ctx, key, &rseg), CRUX_OK);
    crux_tl_seg_t *seg;
    ck_assert_int_eq(crux_tl_seg_alloc(ctx, 0, &seg), CRUX_ERR_INVALID);
    crux_tl_context_close(ctx);
}
END_TEST

START_TEST(test_unknown_memory_domain_is_no_resource)
{
    crux_tl_config_t config = CRUX_TL_CONFIG_DEFAULT;
    config.shm_mds = "no-such-md";
    crux_tl_context_t *ctx = NULL;
    ck_assert_int_eq(crux_tl_context_open(&config, &ctx), CRUX_ERR_NO_RESOURCE);
    config.shm_mds = "no-such-md,sysv"; /* falls through to the next one */
    ck_assert_int_eq(crux_tl_context_open(&config, &ctx), CRUX_OK);
    ck_assert_str_eq(crux_tl_context_shm_name(ctx), "sysv");
    crux_tl_context_close(ctx);
}
END_TEST

START_TEST(test_get_from_a_dead_peer_fails)
{
    crux_tl_context_t *ctx;
    ck_assert_int_eq(crux_tl_context_open(NULL, &ctx), CRUX_OK);
    int to_parent[2], to_child[2];
    ck_assert_int_eq(pipe(to_parent), 0);
    ck_assert_int_eq(pipe(to_child), 0);
    static char buf[16];
    pid_t child = fork();
    if (child == 0) { /* publish an address, wait until connected to, then die */
        crux_tl_context_t *cctx;
        unsigned char address[256];
        char go;
        if (crux_tl_context_open(NULL, &cctx) != CRUX_OK ||
            crux_tl_address_pack(cctx, address) != CRUX_OK ||
            write(to_parent[1], address, crux_tl_address_size(cctx)) <= 0 ||
            read(to_child[0], &go, 1) != 1) {
            _exit(1);
        }
        _exit(0);
    }
    unsigned char address[256];
    ck_assert_int_eq(read(to_parent[0], address, crux_tl_address_size(ctx)),
                     (ssize_t)crux_tl_address_size(ctx));
    crux_tl_ep_t *ep;
    ck_assert_int_eq(crux_tl_ep_create(ctx, address, &ep), CRUX_OK);
    ck_assert_int_eq(crux_tl_get(ep, buf, (uintptr_t)buf, sizeof(buf)), CRUX_OK);
    ck_assert_int_eq(write(to_child[1], "x", 1), 1);
    int status;
    waitpid(child, &status, 0);
    ck_assert_int_eq(crux_tl_get(ep, buf, (uintptr_t)buf, sizeof(buf)), CRUX_ERR_IO);
    crux_tl_ep_destroy(ep);
    crux_tl_context_close(ctx);
}
END_TEST

static Suite *tl_suite(void)
{
    Suite *s = suite_create("tl_host");
    TCase *tc = tcase_create("host");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cma_and_segments_between_two_processes);
    tcase_add_test(tc, test_garbage_key_is_refused);
    tcase_add_test(tc, test_unknown_memory_domain_is_no_resource);
    tcase_add_test(tc, test_get_from_a_dead_peer_fails);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(tl_suite)

/* Workloads: the CSV replay format (round trip, every kind of malformed
 * line named by its number), the generator (seeded, its load), and the
 * placement policies of the GPU allocator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/crux_sim_internal.h"
#include "tests/unit/check_main.h"

static crux_sched_cluster_t *small_clos(void)
{
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p); /* 4 ToRs x 4 hosts of 8 GPUs */
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    return c;
}

static char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/crux-sim-test-XXXXXX");
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    return path;
}

START_TEST(csv_round_trip)
{
    crux_sched_cluster_t *c = small_clos();
    const char *text =
        "# a comment, then the header in another order\n"
        "\n"
        "id,gpus,arrival_s,compute_s,bytes,iterations,duration_s,placement,model,overlap,work,"
        "level\n"
        "a,16,0,0.25,1e9,100,,h0;h5,bert-large,0.5,,2\n"
        "b,4,10.5,0.1,2e8,,3600,h2:0-1+6-7,,0,7,0\n"
        "c,8,12,1,3e9,50,,,gpt,0.2,,\n";
    char *path = write_tmp(text), err[256];
    crux_sim_workload_t *w = crux_sim_workload_new();
    ck_assert_msg(crux_sim_workload_read(w, c, path, err, sizeof(err)) == CRUX_OK, "%s", err);
    ck_assert_int_eq(crux_sim_workload_jobs(w), 3);
    crux_sim_job_t j;
    crux_sim_workload_job(w, 1, &j);
    ck_assert_str_eq(j.id, "b");
    ck_assert_int_eq(j.nplacement, 1);
    ck_assert_uint_eq(j.placement[0].gpus, 0xC3);
    ck_assert_double_eq(j.duration_s, 3600);
    ck_assert_double_eq(j.work, 7);
    crux_sim_workload_job(w, 0, &j);
    ck_assert_int_eq(j.level, 2);
    ck_assert_int_eq(j.placement[1].host, crux_sched_cluster_find_host(c, "h5"));
    /* written and read again: the same jobs */
    FILE *f = fopen(path, "w");
    ck_assert_int_eq(crux_sim_workload_write(w, c, f), CRUX_OK);
    fclose(f);
    crux_sim_workload_t *w2 = crux_sim_workload_new();
    ck_assert_msg(crux_sim_workload_read(w2, c, path, err, sizeof(err)) == CRUX_OK, "%s", err);
    ck_assert_int_eq(crux_sim_workload_jobs(w2), 3);
    for (int i = 0; i < 3; i++) {
        crux_sim_job_t a, b;
        crux_sim_workload_job(w, i, &a);
        crux_sim_workload_job(w2, i, &b);
        ck_assert_str_eq(a.id, b.id);
        ck_assert(a.arrival_s == b.arrival_s && a.compute_s == b.compute_s && a.bytes == b.bytes &&
                  a.overlap == b.overlap && a.work == b.work && a.iterations == b.iterations &&
                  a.duration_s == b.duration_s && a.level == b.level && a.gpus == b.gpus &&
                  a.nplacement == b.nplacement);
        ck_assert((a.model == NULL) == (b.model == NULL));
        for (int k = 0; k < a.nplacement; k++)
            ck_assert(a.placement[k].host == b.placement[k].host &&
                      a.placement[k].gpus == b.placement[k].gpus);
    }
    unlink(path);
    crux_sim_workload_free(w);
    crux_sim_workload_free(w2);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(csv_errors_name_the_line)
{
    static const struct {
        const char *text;
        int line;
        const char *why;
    } cases[] = {
        { "", 0, "no header" },
        { "# only a comment\n", 1, "no header" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations,colour\n", 1, "unknown column" },
        { "id,arrival_s,gpus,compute_s,bytes\n", 1, "iterations or a duration_s" },
        { "#\nid,arrival_s,gpus,compute_s,iterations\n", 2, "missing column \"bytes\"" },
        { "id,id,arrival_s,gpus,compute_s,bytes,iterations\n", 1, "twice" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\na,0,8,1,1e9\n", 2, "expected 6 fields" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\na,0,8,1,1e9,5,6\n", 2, "expected 6" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\na,zero,8,1,1e9,5\n", 2, "arrival_s" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\na,0,8,1,1e9,5\n\nb,0,8.5,1,1e9,5\n", 4,
          "whole numbers" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\na,0,8,1,1e9,5\na,1,8,1,1e9,5\n", 3,
          "duplicate id" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\na,0,8,0,1e9,5\n", 2, "compute > 0" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations,duration_s\na,0,8,1,1e9,5,60\n", 2,
          "exactly one of" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations,duration_s\na,0,8,1,1e9,,\n", 2,
          "exactly one of" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations,placement\na,0,16,1,1e9,5,h0;h99\n", 2,
          "unknown host \"h99\"" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations,placement\na,0,4,1,1e9,5,h0:0-x\n", 2,
          "bad GPU list" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations,placement\na,0,16,1,1e9,5,h0\n", 2,
          "placement has 8 GPUs" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\na,0,12,1,1e9,5\n", 2, "whole hosts" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\na,0,256,1,1e9,5\n", 2, "do not fit" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations\n,0,8,1,1e9,5\n", 2, "empty id" },
        { "id,arrival_s,gpus,compute_s,bytes,iterations,overlap\na,0,8,1,1e9,5,1.5\n", 2,
          "overlap in" },
    };
    crux_sched_cluster_t *c = small_clos();
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char *path = write_tmp(cases[k].text), err[512], want[128];
        crux_sim_workload_t *w = crux_sim_workload_new();
        ck_assert_int_eq(crux_sim_workload_read(w, c, path, err, sizeof(err)), CRUX_ERR_INVALID);
        snprintf(want, sizeof(want), "%s:%d: ", path, cases[k].line);
        ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "case %zu: \"%s\"", k, err);
        ck_assert_msg(strstr(err, cases[k].why) != NULL, "case %zu: \"%s\"", k, err);
        ck_assert(strchr(err, '\n') == NULL);
        unlink(path);
        crux_sim_workload_free(w);
    }
    char err[256];
    crux_sim_workload_t *w = crux_sim_workload_new();
    ck_assert_int_eq(crux_sim_workload_read(w, c, "/nonexistent/w.csv", err, sizeof(err)),
                     CRUX_ERR_IO);
    ck_assert(strncmp(err, "/nonexistent/w.csv: cannot read", 31) == 0);
    crux_sim_workload_free(w);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(generator)
{
    crux_sched_cluster_t *c = small_clos();
    const crux_sched_model_t *m;
    int nm = crux_sched_models(&m);
    double share = 0;
    for (int i = 0; i < nm; i++)
        share += m[i].share;
    ck_assert_int_eq(nm, 11);
    ck_assert_double_eq_tol(share, 1, 1e-9);
    crux_sim_gen_t g;
    crux_sim_gen_defaults(&g);
    g.jobs = 400;
    g.span_s = 5 * 86400;
    g.seed = 9;
    crux_sim_workload_t *a = crux_sim_workload_new(), *b = crux_sim_workload_new(),
                        *d = crux_sim_workload_new();
    char err[256];
    ck_assert_int_eq(crux_sim_generate(&g, c, a, err, sizeof(err)), CRUX_OK);
    ck_assert_int_eq(crux_sim_generate(&g, c, b, err, sizeof(err)), CRUX_OK);
    g.seed = 10;
    ck_assert_int_eq(crux_sim_generate(&g, c, d, err, sizeof(err)), CRUX_OK);
    double prev = 0, gpu_s = 0;
    int differ = 0;
    for (int i = 0; i < 400; i++) {
        crux_sim_job_t x, y, z;
        crux_sim_workload_job(a, i, &x);
        crux_sim_workload_job(b, i, &y);
        crux_sim_workload_job(d, i, &z);
        ck_assert(x.arrival_s == y.arrival_s && x.gpus == y.gpus && x.iterations == y.iterations &&
                  x.compute_s == y.compute_s);
        ck_assert_str_eq(x.model, y.model);
        differ |= x.arrival_s != z.arrival_s;
        ck_assert(x.arrival_s >= prev && x.arrival_s < g.span_s);
        prev = x.arrival_s;
        ck_assert(x.gpus <= 8 || x.gpus % 8 == 0); /* placeable */
        ck_assert(x.gpus <= 128 && x.iterations >= 1 && x.placement == NULL);
        gpu_s += x.gpus * x.iterations * x.compute_s;
    }
    ck_assert(differ);
    /* the offered load: near the target (the duration bounds cut the
     * log-normal's tails, and 400 draws vary) */
    double load = gpu_s / (g.span_s * 128);
    ck_assert_msg(load > 0.4 * g.load && load < 1.6 * g.load, "offered load %g", load);
    crux_sim_workload_free(a);
    crux_sim_workload_free(b);
    crux_sim_workload_free(d);
    crux_sched_cluster_free(c);
}
END_TEST

static int tor_of(const sim_alloc_t *a, const crux_sched_place_t *p)
{
    return a->tor_of[p->host];
}

START_TEST(placement_policies)
{
    crux_sched_cluster_t *c = small_clos();
    crux_sched_place_t out[20];
    sim_alloc_t a;
    /* packed: a 4-host job fills one ToR; spread: one host per ToR */
    ck_assert_int_eq(sim_alloc_init(&a, c, 1), CRUX_OK);
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_PACKED, 32, out), 4);
    for (int i = 1; i < 4; i++)
        ck_assert_int_eq(tor_of(&a, &out[i]), tor_of(&a, &out[0]));
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_SPREAD, 24, out), 3);
    ck_assert(tor_of(&a, &out[0]) != tor_of(&a, &out[1]) &&
              tor_of(&a, &out[1]) != tor_of(&a, &out[2]));
    for (int i = 0; i < 3; i++)
        ck_assert_uint_eq(out[i].gpus, 0xFF);
    /* small jobs: packed takes the fullest host that fits */
    crux_sched_place_t small;
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_PACKED, 3, &small), 1);
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_PACKED, 2, out), 1);
    ck_assert_int_eq(out[0].host, small.host);
    ck_assert_uint_eq(out[0].gpus, 0x18);
    /* 8 idle hosts left: 9 do not fit now, 8 do */
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_RANDOM, 72, out), 0);
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_RANDOM, 64, out), 8);
    for (int i = 1; i < 8; i++) /* ring order: by ToR, then host */
        ck_assert(
            tor_of(&a, &out[i - 1]) < tor_of(&a, &out[i]) ||
            (tor_of(&a, &out[i - 1]) == tor_of(&a, &out[i]) && out[i - 1].host < out[i].host));
    ck_assert_int_eq(sim_alloc_take(&a, out, 1), 0); /* already taken */
    sim_alloc_release(&a, out, 8);
    ck_assert_int_eq(sim_alloc_take(&a, out, 8), 1);
    ck_assert(sim_alloc_fits_ever(&a, 128) && !sim_alloc_fits_ever(&a, 136) &&
              !sim_alloc_fits_ever(&a, 12));
    sim_alloc_free(&a);
    /* random placement follows its seed */
    crux_sched_place_t r1[4], r2[4];
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(sim_alloc_init(&a, c, 5), CRUX_OK);
        ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_RANDOM, 32, k ? r2 : r1), 4);
        sim_alloc_free(&a);
    }
    for (int i = 0; i < 4; i++)
        ck_assert(r1[i].host == r2[i].host && r1[i].gpus == r2[i].gpus);
    crux_sched_cluster_free(c);
}
END_TEST

START_TEST(first_fit_follows_the_holes)
{
    /* 4 ToRs x 4 hosts.  A takes ToR 0's first two hosts, B the other two
     * and ToR 1's first; A leaves: C (4 hosts) fills A's hole and goes on
     * in ToR 1, across two ToRs as a fragmented cluster makes it */
    crux_sched_cluster_t *c = small_clos();
    sim_alloc_t a;
    ck_assert_int_eq(sim_alloc_init(&a, c, 1), CRUX_OK);
    crux_sched_place_t pa[2], pb[3], pc[4], small[3];
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_FIRST_FIT, 16, pa), 2);
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_FIRST_FIT, 24, pb), 3);
    ck_assert_int_eq(tor_of(&a, &pb[0]), 0);
    ck_assert_int_eq(tor_of(&a, &pb[1]), 0);
    ck_assert_int_eq(tor_of(&a, &pb[2]), 1);
    sim_alloc_release(&a, pa, 2);
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_FIRST_FIT, 32, pc), 4);
    ck_assert(pc[0].host == pa[0].host && pc[1].host == pa[1].host);
    ck_assert_int_eq(tor_of(&a, &pc[2]), 1);
    ck_assert_int_eq(tor_of(&a, &pc[3]), 1);
    ck_assert(pc[2].host != pb[2].host && pc[3].host != pb[2].host);
    /* small jobs: the first host in rack order with room, lowest GPUs */
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_FIRST_FIT, 5, &small[0]), 1);
    ck_assert_int_eq(tor_of(&a, &small[0]), 1);
    ck_assert_uint_eq(small[0].gpus, 0x1F);
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_FIRST_FIT, 3, &small[1]), 1);
    ck_assert_int_eq(small[1].host, small[0].host);
    ck_assert_uint_eq(small[1].gpus, 0xE0);
    ck_assert_int_eq(sim_alloc_place(&a, CRUX_SIM_PLACE_FIRST_FIT, 2, &small[2]), 1);
    ck_assert(small[2].host != small[0].host);
    ck_assert_int_eq(crux_sim_placement_from_name("first-fit"), CRUX_SIM_PLACE_FIRST_FIT);
    sim_alloc_free(&a);
    crux_sched_cluster_free(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("sim_workload");
    TCase *t = tcase_create("workload");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, csv_round_trip);
    tcase_add_test(t, csv_errors_name_the_line);
    tcase_add_test(t, generator);
    tcase_add_test(t, placement_policies);
    tcase_add_test(t, first_fit_follows_the_holes);
    suite_add_tcase(s, t);
    return s;
}

CRUX_CHECK_MAIN(suite)

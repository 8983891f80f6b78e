/* libcrux_topo on bad input: a missing, unreadable, garbage, empty,
 * truncated or malformed file, one from a newer hwloc, one hwloc would crash
 * or leak on, NVLink matrices that name unknown objects, bad inter-socket
 * settings; and the source order (explicit path, then HWLOC_XMLFILE). */
#include "tests/unit/check_main.h"
#include "tests/unit/topo_test_util.h"

#include <signal.h>
#include <sys/stat.h>

/* Loads path, which must fail with status; err must name the file and
 * contain reason. */
static void expect_failure(const char *path, crux_status_t status, const char *reason)
{
    static char sentinel;
    crux_topo_options_t opts;
    crux_topo_t *topo = (crux_topo_t *)&sentinel; /* crux_topo_load must reset it to NULL */
    char err[512];
    crux_topo_options_init(&opts);
    opts.xml_path = path;
    crux_status_t st = crux_topo_load(&opts, &topo, err, sizeof(err));
    ck_assert_msg(st == status, "%s: status %d (%s), expected %d", path, st, err, status);
    ck_assert_ptr_null(topo);
    ck_assert_msg(!strncmp(err, path, strlen(path)), "error does not start with the file: %s", err);
    ck_assert_msg(strstr(err, reason) != NULL, "error lacks \"%s\": %s", reason, err);
    ck_assert_ptr_null(strchr(err, '\n'));
}

static void expect_text_failure(const char *text, size_t len, crux_status_t status,
                                const char *reason)
{
    char path[512];
    topo_write_temp(text, len, path, sizeof(path));
    expect_failure(path, status, reason);
    unlink(path);
}

START_TEST(test_missing_file)
{
    expect_failure("/nonexistent/crux/topology.xml", CRUX_ERR_NOT_FOUND,
                   "No such file or directory");
}
END_TEST

START_TEST(test_unreadable_file)
{
    /* a directory opens but is not a regular file: refused unread */
    char dir[512];
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(dir, sizeof(dir), "%s/crux-topo-dir-XXXXXX", tmp);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    expect_failure(dir, CRUX_ERR_IO, "not a regular file");
    rmdir(dir);
    /* nor are a FIFO (would block) and /dev/zero (would fill the memory) */
    expect_failure("/dev/zero", CRUX_ERR_IO, "not a regular file");
}
END_TEST

START_TEST(test_garbage_and_empty)
{
    static const char garbage[] = "\x7f"
                                  "ELF\x02\x01\x01 this is not a topology\n";
    expect_text_failure(garbage, sizeof(garbage) - 1, CRUX_ERR_INVALID, "not an XML file");
    expect_text_failure("", 0, CRUX_ERR_INVALID, "empty file");
    static const char html[] = "<!DOCTYPE html>\n<html><body>hello</body></html>\n";
    expect_text_failure(html, sizeof(html) - 1, CRUX_ERR_INVALID, "no <topology> element");
}
END_TEST

START_TEST(test_truncated)
{
    size_t len;
    char *text = topo_slurp(topo_data("cts1-p100-pcie.xml"), &len);
    expect_text_failure(text, len / 2, CRUX_ERR_INVALID, "truncated");
    free(text);
}
END_TEST

START_TEST(test_malformed)
{
    /* complete, but the tags do not nest: only hwloc's parser can tell */
    static const char bad[] = "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n"
                              "  <object type=\"Machine\" cpuset=\"0x1\" complete_cpuset=\"0x1\"\n"
                              "          nodeset=\"0x1\" complete_nodeset=\"0x1\">\n</topology>\n";
    expect_text_failure(bad, sizeof(bad) - 1, CRUX_ERR_INVALID, "malformed XML");
}
END_TEST

START_TEST(test_newer_hwloc)
{
    char *text = topo_slurp(topo_data("cts1-p100-pcie.xml"), NULL);
    char *v3 = topo_replace(text, "<topology version=\"2.0\">", "<topology version=\"3.0\">");
    ck_assert_ptr_nonnull(strstr(v3, "version=\"3.0\""));
    expect_text_failure(v3, strlen(v3), CRUX_ERR_UNSUPPORTED, "newer hwloc");
    free(text);
    free(v3);
}
END_TEST

START_TEST(test_object_without_a_set)
{
    /* hwloc 2.9 crashes on these (fuzz_topo_xml): they must be refused first */
    char *text = topo_slurp(topo_data("cts1-p100-pcie.xml"), NULL);
    char *no_complete = topo_replace(text, " complete_cpuset=", " comzlete_cpuset=");
    expect_text_failure(no_complete, strlen(no_complete), CRUX_ERR_INVALID,
                        "line 4: a Machine object without complete_cpuset");
    char *no_nodeset = topo_replace(text, " nodeset=", " n0deset=");
    expect_text_failure(no_nodeset, strlen(no_nodeset), CRUX_ERR_INVALID,
                        "a Machine object without nodeset");
    /* I/O objects have no sets, but never half a pair */
    char *io_cpuset = topo_replace(text, "type=\"PCIDev\"", "type=\"PCIDev\" cpuset=\"0x1\"");
    expect_text_failure(io_cpuset, strlen(io_cpuset), CRUX_ERR_INVALID,
                        "an object with cpuset but no complete_cpuset");
    free(text);
    free(no_complete);
    free(no_nodeset);
    free(io_cpuset);
}
END_TEST

START_TEST(test_hwloc_crash_contained)
{
    /* sets damaged past what crux checks (fuzz_topo_xml): hwloc 2.9 crashes
     * on this file; the trial import in a child process must contain it */
    char path[4096];
    snprintf(path, sizeof(path), "%s/../fuzz/corpus/topo_xml/hwloc-segv-damaged-sets.xml",
             getenv("CRUX_TEST_DATA"));
    expect_failure(path, CRUX_ERR_INVALID, "hwloc crashes importing it");
}
END_TEST

START_TEST(test_trial_with_sigchld_ignored)
{
    /* a caller that ignores SIGCHLD never sees the trial child's status:
     * the load must go on, not fail */
    signal(SIGCHLD, SIG_IGN);
    struct topo_warnings w;
    crux_topo_t *t = topo_load_path(topo_data("cts1-p100-pcie.xml"), 0, &w);
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 2);
    crux_topo_free(t);
    signal(SIGCHLD, SIG_DFL);
}
END_TEST

START_TEST(test_foreign_encoding)
{
    char *text = topo_slurp(topo_data("cts1-p100-pcie.xml"), NULL);
    ck_assert_ptr_nonnull(strstr(text, "encoding=\"UTF-8\""));
    char *utf6 = topo_replace(text, "encoding=\"UTF-8\"", "encoding=\"UTF-6\"");
    expect_text_failure(utf6, strlen(utf6), CRUX_ERR_INVALID, "encoding \"UTF-6\" declared");
    free(text);
    free(utf6);
}
END_TEST

/* Loads text, which must succeed with one warning about the NVLink matrix
 * and no NVLink in the model. */
static void expect_matrix_ignored(const char *text)
{
    char path[512];
    struct topo_warnings w;
    topo_write_temp(text, strlen(text), path, sizeof(path));
    crux_topo_t *t = topo_load_path(path, 0, &w);
    ck_assert_int_eq(w.count, 1);
    ck_assert_ptr_nonnull(strstr(w.last, "NVLinkBandwidth"));
    ck_assert_ptr_nonnull(strstr(w.last, "not in the topology"));
    ck_assert_ptr_nonnull(strstr(w.last, path));
    ck_assert_int_eq(crux_topo_nvlink_source(t), CRUX_TOPO_NVLINK_NONE);
    for (int l = 0; l < crux_topo_num_links(t); l++)
        ck_assert_int_ne(crux_topo_link(t, l)->type, CRUX_TOPO_LINK_NVLINK);
    /* the rest of the model is intact */
    ck_assert_int_gt(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 0);
    ck_assert_ptr_nonnull(crux_topo_multipath(t, 0, 1));
    crux_topo_free(t);
    unlink(path);
}

START_TEST(test_matrix_unknown_objects)
{
    /* the cube-mesh matrix names OS devices by global index: 999 is none */
    char *text = topo_slurp(topo_data("synthetic-dgx1-hybrid-cube-mesh.xml"), NULL);
    char *bad = topo_replace(text, "<indexes length=\"32\">436 ", "<indexes length=\"32\">999 ");
    ck_assert_ptr_nonnull(strstr(bad, ">999 "));
    expect_matrix_ignored(bad);
    free(text);
    free(bad);

    /* the DGX-2 heterogeneous matrix names an NVSwitch that is not there */
    text = topo_slurp(topo_data("dgx2-v100-nvswitch.xml"), NULL);
    bad = topo_replace(text, "PCIDev:449", "PCIDev:999");
    ck_assert_ptr_nonnull(strstr(bad, "PCIDev:999"));
    expect_matrix_ignored(bad);
    free(text);
    free(bad);
}
END_TEST

START_TEST(test_intact_matrix_no_warning)
{
    struct topo_warnings w;
    crux_topo_t *t = topo_load_path(topo_data("dgx2-v100-nvswitch.xml"), 0, &w);
    ck_assert_int_eq(w.count, 0);
    ck_assert_int_eq(crux_topo_nvlink_source(t), CRUX_TOPO_NVLINK_FROM_HWLOC);
    crux_topo_free(t);
}
END_TEST

START_TEST(test_hwloc_xmlfile_env)
{
    crux_topo_t *t;
    char err[512];
    setenv("HWLOC_XMLFILE", topo_data("cts1-p100-pcie.xml"), 1);
    ck_assert_int_eq(crux_topo_load(NULL, &t, err, sizeof(err)), CRUX_OK);
    ck_assert_str_eq(crux_topo_xml_path(t), topo_data("cts1-p100-pcie.xml"));
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 2);
    crux_topo_free(t);

    /* an explicit path comes first */
    t = topo_load("power8-minsky-p100-nvlink.xml");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 4);
    crux_topo_free(t);

    setenv("HWLOC_XMLFILE", "/nonexistent/env.xml", 1);
    ck_assert_int_eq(crux_topo_load(NULL, &t, err, sizeof(err)), CRUX_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/env.xml"));
    unsetenv("HWLOC_XMLFILE");
}
END_TEST

START_TEST(test_smp_setting)
{
    crux_topo_options_t opts;
    crux_topo_t *t;
    char err[512];
    crux_topo_options_init(&opts);
    opts.xml_path = topo_data("aws-g4dn-metal-t4-pcie.xml");

    setenv(CRUX_TOPO_SMP_GBPS_ENV, "12.5", 1);
    ck_assert_int_eq(crux_topo_load(&opts, &t, err, sizeof(err)), CRUX_OK);
    ck_assert_gbps(crux_topo_smp_gbps(t), 12.5);
    ck_assert_gbps(topo_gpu_path(t, 0, 4)->gbps, 12.5);
    crux_topo_free(t);

    opts.smp_gbps = 30; /* the option wins over the environment */
    ck_assert_int_eq(crux_topo_load(&opts, &t, err, sizeof(err)), CRUX_OK);
    ck_assert_gbps(crux_topo_smp_gbps(t), 30);
    crux_topo_free(t);

    opts.smp_gbps = 0;
    setenv(CRUX_TOPO_SMP_GBPS_ENV, "fast", 1);
    ck_assert_int_eq(crux_topo_load(&opts, &t, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, CRUX_TOPO_SMP_GBPS_ENV "=fast"));
    setenv(CRUX_TOPO_SMP_GBPS_ENV, "-3", 1);
    ck_assert_int_eq(crux_topo_load(&opts, &t, err, sizeof(err)), CRUX_ERR_INVALID);
    unsetenv(CRUX_TOPO_SMP_GBPS_ENV);

    ck_assert_int_eq(crux_topo_load(&opts, &t, err, sizeof(err)), CRUX_OK);
    ck_assert_gbps(crux_topo_smp_gbps(t), CRUX_TOPO_SMP_GBPS_DEFAULT);
    crux_topo_free(t);
}
END_TEST

static Suite *topo_errors_suite(void)
{
    Suite *s = suite_create("topo_errors");
    TCase *tc = tcase_create("errors");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_unreadable_file);
    tcase_add_test(tc, test_garbage_and_empty);
    tcase_add_test(tc, test_truncated);
    tcase_add_test(tc, test_malformed);
    tcase_add_test(tc, test_newer_hwloc);
    tcase_add_test(tc, test_object_without_a_set);
    tcase_add_test(tc, test_foreign_encoding);
    tcase_add_test(tc, test_hwloc_crash_contained);
    tcase_add_test(tc, test_trial_with_sigchld_ignored);
    tcase_add_test(tc, test_matrix_unknown_objects);
    tcase_add_test(tc, test_intact_matrix_no_warning);
    tcase_add_test(tc, test_hwloc_xmlfile_env);
    tcase_add_test(tc, test_smp_setting);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(topo_errors_suite)

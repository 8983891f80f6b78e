/* crux_topo_connection: nvidia-smi's connection classes (X, NV#, PIX, PXB,
 * PHB, NODE, SYS) of GPU and NIC pairs in the shared topology files, as
 * their hwloc trees give them; and the GPUs' NVLink generation where a file
 * shows no NVLink. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check_main.h"
#include "tests/unit/topo_test_util.h"

static int gpu(const crux_topo_t *t, int i)
{
    return crux_topo_gpu(t, i)->id;
}

static int nic(const crux_topo_t *t, int i)
{
    return crux_topo_find(t, CRUX_TOPO_DEV_NIC, i)->id;
}

static void ck_conn(const crux_topo_t *t, int a, int b, crux_topo_conn_t want, int want_nvlinks)
{
    int nv = -1;
    crux_topo_conn_t got = crux_topo_connection(t, a, b, &nv);
    ck_assert_msg(got == want && nv == want_nvlinks, "%s-%s: %s %d, want %s %d",
                  crux_topo_device(t, a)->name, crux_topo_device(t, b)->name,
                  crux_topo_conn_name(got), nv, crux_topo_conn_name(want), want_nvlinks);
    ck_assert_int_eq(crux_topo_connection(t, b, a, NULL), want); /* symmetric */
}

/* Two sockets, PLX switches under separate host bridges, dual-port NICs. */
START_TEST(test_ac922)
{
    crux_topo_t *t = topo_load("ac922-lassen-v100.xml");
    ck_conn(t, gpu(t, 0), gpu(t, 0), CRUX_TOPO_CONN_SELF, 0);
    ck_conn(t, gpu(t, 0), gpu(t, 1), CRUX_TOPO_CONN_PIX, 0);  /* one PLX switch */
    ck_conn(t, gpu(t, 1), gpu(t, 2), CRUX_TOPO_CONN_SYS, 0);  /* packages 0 and 8 */
    ck_conn(t, gpu(t, 0), nic(t, 0), CRUX_TOPO_CONN_NODE, 0); /* host bridges 0004, 0003 */
    ck_conn(t, gpu(t, 2), nic(t, 4), CRUX_TOPO_CONN_NODE, 0);
    ck_conn(t, nic(t, 0), nic(t, 1), CRUX_TOPO_CONN_PIX, 0); /* two ports of one card */
    ck_conn(t, nic(t, 0), nic(t, 4), CRUX_TOPO_CONN_SYS, 0);
    /* an SXM2 V100: NVLink-capable, though this export lists no NVLink */
    ck_assert_int_eq(crux_topo_gpu(t, 0)->nvlink_gen, 2);
    crux_topo_free(t);
}
END_TEST

/* Two GPUs per host bridge, each on its own root port; the NICs on a
 * switch of the second socket. */
START_TEST(test_g4dn)
{
    crux_topo_t *t = topo_load("aws-g4dn-metal-t4-pcie.xml");
    ck_conn(t, gpu(t, 0), gpu(t, 1), CRUX_TOPO_CONN_PHB, 0);
    ck_conn(t, gpu(t, 0), gpu(t, 2), CRUX_TOPO_CONN_NODE, 0);
    ck_conn(t, gpu(t, 0), gpu(t, 4), CRUX_TOPO_CONN_SYS, 0);
    ck_conn(t, gpu(t, 4), nic(t, 0), CRUX_TOPO_CONN_NODE, 0);
    ck_conn(t, gpu(t, 0), nic(t, 0), CRUX_TOPO_CONN_SYS, 0);
    ck_conn(t, nic(t, 0), nic(t, 1), CRUX_TOPO_CONN_PIX, 0);
    crux_topo_free(t);
}
END_TEST

/* P100 PCIe cards and a ConnectX-5 below one switch. */
START_TEST(test_cts1)
{
    crux_topo_t *t = topo_load("cts1-p100-pcie.xml");
    ck_conn(t, gpu(t, 0), gpu(t, 1), CRUX_TOPO_CONN_PIX, 0);
    ck_conn(t, gpu(t, 0), nic(t, 0), CRUX_TOPO_CONN_PIX, 0);
    ck_conn(t, gpu(t, 0), nic(t, 1), CRUX_TOPO_CONN_PHB, 0);
    /* a PCIe P100 has no NVLink */
    ck_assert_int_eq(crux_topo_gpu(t, 0)->nvlink_gen, 0);
    ck_assert_int_eq(crux_topo_gpu(t, 1)->nvlink_gen, 0);
    crux_topo_free(t);
}
END_TEST

/* The hybrid cube-mesh: double and single NVLinks; pairs without one are
 * classed by the PCIe tree (the best path may relay over NVLink). */
START_TEST(test_cube_mesh)
{
    crux_topo_t *t = topo_load("synthetic-dgx1-hybrid-cube-mesh.xml");
    ck_conn(t, gpu(t, 0), gpu(t, 1), CRUX_TOPO_CONN_NVLINK, 2);
    ck_conn(t, gpu(t, 0), gpu(t, 2), CRUX_TOPO_CONN_NVLINK, 1);
    ck_conn(t, gpu(t, 0), gpu(t, 5), CRUX_TOPO_CONN_SYS, 0);
    ck_conn(t, gpu(t, 0), nic(t, 0), CRUX_TOPO_CONN_SYS, 0);
    /* the synthetic file puts NVLink on T4s: their generation is unknown */
    ck_assert_int_eq(crux_topo_gpu(t, 0)->nvlink_gen, 0);
    crux_topo_free(t);
}
END_TEST

/* 16 GPUs, each with 6 NVLinks into the NVSwitches; nested PCIe switches. */
START_TEST(test_dgx2)
{
    crux_topo_t *t = topo_load("dgx2-v100-nvswitch.xml");
    ck_conn(t, gpu(t, 0), gpu(t, 1), CRUX_TOPO_CONN_NVLINK, 6);
    ck_conn(t, gpu(t, 0), gpu(t, 15), CRUX_TOPO_CONN_NVLINK, 6);
    /* not a GPU or NIC: no class */
    ck_assert_int_eq(
        crux_topo_connection(t, gpu(t, 0), crux_topo_find(t, CRUX_TOPO_DEV_NVSWITCH, 0)->id, NULL),
        CRUX_TOPO_CONN_COUNT);
    crux_topo_free(t);
}
END_TEST

/* NVLink pairs on POWER8; the other pairs across the sockets. */
START_TEST(test_minsky)
{
    crux_topo_t *t = topo_load("power8-minsky-p100-nvlink.xml");
    ck_conn(t, gpu(t, 0), gpu(t, 1), CRUX_TOPO_CONN_NVLINK, 2);
    ck_conn(t, gpu(t, 0), gpu(t, 2), CRUX_TOPO_CONN_SYS, 0);
    ck_assert_int_eq(crux_topo_gpu(t, 0)->nvlink_gen, 1);
    crux_topo_free(t);
}
END_TEST

/* An export handed over in memory (crux-topo -i -) loads as the file does,
 * named as given; one over the size cap is refused with that name. */
START_TEST(test_xml_text)
{
    FILE *f = fopen(topo_data("cts1-p100-pcie.xml"), "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof(text), f);
    fclose(f);
    ck_assert(len > 0 && len < sizeof(text));

    crux_topo_options_t opts;
    crux_topo_t *t = NULL;
    char err[512];
    crux_topo_options_init(&opts);
    opts.xml_path = "stdin";
    opts.xml_text = text;
    opts.xml_len = len;
    ck_assert_int_eq(crux_topo_load(&opts, &t, err, sizeof(err)), CRUX_OK);
    ck_assert_str_eq(crux_topo_xml_path(t), "stdin");
    ck_assert_int_eq(crux_topo_count(t, CRUX_TOPO_DEV_GPU), 2);
    ck_assert_int_eq(crux_topo_connection(t, gpu(t, 0), gpu(t, 1), NULL), CRUX_TOPO_CONN_PIX);
    crux_topo_free(t);

    opts.xml_len = len / 2; /* cut in the middle */
    ck_assert_int_eq(crux_topo_load(&opts, &t, err, sizeof(err)), CRUX_ERR_INVALID);
    ck_assert_msg(strstr(err, "stdin: truncated") != NULL, "%s", err);
    opts.xml_len = (size_t)CRUX_TOPO_MAX_XML_BYTES + 1; /* refused unread: I/O, not malformed */
    ck_assert_int_eq(crux_topo_load(&opts, &t, err, sizeof(err)), CRUX_ERR_IO);
    ck_assert_msg(strstr(err, "stdin: 67108865 bytes, more than") != NULL, "%s", err);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("topo_conn");
    TCase *tc = tcase_create("conn");
    tcase_add_test(tc, test_ac922);
    tcase_add_test(tc, test_g4dn);
    tcase_add_test(tc, test_cts1);
    tcase_add_test(tc, test_cube_mesh);
    tcase_add_test(tc, test_dgx2);
    tcase_add_test(tc, test_minsky);
    tcase_add_test(tc, test_xml_text);
    suite_add_tcase(s, tc);
    return s;
}

CRUX_CHECK_MAIN(suite)

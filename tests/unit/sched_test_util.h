/* Fixtures of the scheduler and simulator tests: the cluster whose answers
 * are known exactly, and a simulator run that fails the test on error. */
#ifndef CRUX_TESTS_SCHED_TEST_UTIL_H
#define CRUX_TESTS_SCHED_TEST_UTIL_H

#include <check.h>

#include "sim/crux_sim.h"

/* `tors` ToRs under one aggregation switch, 4 hosts each with one NIC for
 * all 8 GPUs, NICs 10x faster than the ToR uplinks (1 GB/s): a job from a
 * host of ToR 0 to a host of another ToR has the uplink tor0 -> agg0 as its
 * bottleneck, shared by every job crossing it. */
static inline crux_sched_cluster_t *sched_test_uplink_cluster(int tors)
{
    crux_sched_clos2_t p;
    crux_sched_clos2_defaults(&p);
    p.tors = tors;
    p.aggs = 1;
    p.hosts_per_tor = 4;
    p.gpus_per_host = 8;
    p.gpus_per_nic = 8;
    p.uplink_gbps = 8; /* 1e9 bytes/s */
    p.nic_gbps = 80;
    crux_sched_cluster_t *c = NULL;
    ck_assert_int_eq(crux_sched_build_clos2(&p, &c), CRUX_OK);
    return c;
}

static inline crux_sim_result_t *sim_test_run(const crux_sched_cluster_t *c,
                                              const crux_sim_workload_t *w,
                                              const crux_sim_config_t *cfg)
{
    crux_sim_result_t *r = NULL;
    char err[512] = "";
    ck_assert_msg(crux_sim_run(c, w, cfg, &r, err, sizeof(err)) == CRUX_OK, "%s", err);
    return r;
}

#endif

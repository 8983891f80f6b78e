/* Builders for the synthetic topologies: a two-layer Clos and the paper's
 * double-sided (dual-homed) three-layer topology. */
#include <stdio.h>

#include "sched/plan/crux_sched_internal.h"

#define GBPS(x) ((x)*1e9 / 8.0)

void crux_sched_clos2_defaults(crux_sched_clos2_t *p)
{
    /* the paper's validation cases: 2-4 ToRs, 2 aggregation switches */
    *p = (crux_sched_clos2_t){ .tors = 4,
                               .aggs = 2,
                               .hosts_per_tor = 4,
                               .gpus_per_host = 8,
                               .gpus_per_nic = 2,
                               .links_per_agg = 1,
                               .nic_gbps = 200,
                               .uplink_gbps = 400 };
}

static int host_shape_ok(int gpus, int per_nic)
{
    return gpus >= 1 && gpus <= CRUX_SCHED_MAX_GPUS && per_nic >= 1 && gpus % per_nic == 0;
}

#define TRY(x)                          \
    do {                                \
        crux_status_t st_ = (x);        \
        if (st_ != CRUX_OK) {           \
            crux_sched_cluster_free(c); \
            return st_;                 \
        }                               \
    } while (0)

crux_status_t crux_sched_build_clos2(const crux_sched_clos2_t *p, crux_sched_cluster_t **out)
{
    if (p->tors < 1 || p->aggs < 1 || p->hosts_per_tor < 1 || p->links_per_agg < 1 ||
        !host_shape_ok(p->gpus_per_host, p->gpus_per_nic) || !(p->nic_gbps > 0) ||
        !(p->uplink_gbps > 0))
        return CRUX_ERR_INVALID;
    crux_sched_cluster_t *c = crux_sched_cluster_new();
    if (c == NULL)
        return CRUX_ERR_NO_MEMORY;
    char name[64];
    int nics = p->gpus_per_host / p->gpus_per_nic;
    for (int a = 0; a < p->aggs; a++) {
        snprintf(name, sizeof(name), "agg%d", a);
        TRY(crux_sched_cluster_add_switch(c, name, 1, NULL));
    }
    for (int t = 0; t < p->tors; t++) {
        int tor;
        snprintf(name, sizeof(name), "tor%d", t);
        TRY(crux_sched_cluster_add_switch(c, name, 0, &tor));
        for (int a = 0; a < p->aggs; a++)
            TRY(crux_sched_cluster_link_switches(c, tor, a, GBPS(p->uplink_gbps),
                                                 p->links_per_agg));
        for (int i = 0; i < p->hosts_per_tor; i++) {
            int h;
            snprintf(name, sizeof(name), "h%d", t * p->hosts_per_tor + i);
            TRY(crux_sched_cluster_add_host(c, name, p->gpus_per_host, nics, &h));
            for (int n = 0; n < nics; n++)
                TRY(crux_sched_cluster_link_nic(c, h, n, tor, GBPS(p->nic_gbps)));
        }
    }
    TRY(crux_sched_cluster_seal(c, NULL, 0));
    *out = c;
    return CRUX_OK;
}

void crux_sched_double_sided_defaults(crux_sched_double_sided_t *p)
{
    *p = (crux_sched_double_sided_t){ .pods = 3,
                                      .hosts_per_pod = 88,
                                      .aggs_per_pod = 4,
                                      .cores = 32,
                                      .gpus_per_host = 8,
                                      .gpus_per_nic = 2,
                                      .tor_agg_links = 8,
                                      .agg_core_links = 1,
                                      .nic_port_gbps = 200,
                                      .tor_agg_gbps = 400,
                                      .agg_core_gbps = 400 };
}

crux_status_t crux_sched_build_double_sided(const crux_sched_double_sided_t *p,
                                            crux_sched_cluster_t **out)
{
    if (p->pods < 1 || p->hosts_per_pod < 1 || p->aggs_per_pod < 1 || p->cores < 1 ||
        p->cores % p->aggs_per_pod != 0 || p->tor_agg_links < 1 || p->agg_core_links < 1 ||
        !host_shape_ok(p->gpus_per_host, p->gpus_per_nic) || !(p->nic_port_gbps > 0) ||
        !(p->tor_agg_gbps > 0) || !(p->agg_core_gbps > 0))
        return CRUX_ERR_INVALID;
    crux_sched_cluster_t *c = crux_sched_cluster_new();
    if (c == NULL)
        return CRUX_ERR_NO_MEMORY;
    char name[64];
    int nics = p->gpus_per_host / p->gpus_per_nic;
    int per_plane = p->cores / p->aggs_per_pod;
    for (int k = 0; k < p->cores; k++) {
        snprintf(name, sizeof(name), "core%d", k);
        TRY(crux_sched_cluster_add_switch(c, name, 2, NULL));
    }
    for (int pod = 0; pod < p->pods; pod++) {
        int tor[2], agg0 = 0;
        for (int a = 0; a < p->aggs_per_pod; a++) {
            int id;
            snprintf(name, sizeof(name), "agg%d", pod * p->aggs_per_pod + a);
            TRY(crux_sched_cluster_add_switch(c, name, 1, &id));
            if (a == 0)
                agg0 = id;
            for (int k = 0; k < per_plane; k++) /* agg a joins core plane a */
                TRY(crux_sched_cluster_link_switches(c, id, a * per_plane + k,
                                                     GBPS(p->agg_core_gbps), p->agg_core_links));
        }
        for (int side = 0; side < 2; side++) {
            snprintf(name, sizeof(name), "tor%d", 2 * pod + side);
            TRY(crux_sched_cluster_add_switch(c, name, 0, &tor[side]));
            for (int a = 0; a < p->aggs_per_pod; a++)
                TRY(crux_sched_cluster_link_switches(c, tor[side], agg0 + a, GBPS(p->tor_agg_gbps),
                                                     p->tor_agg_links));
        }
        for (int i = 0; i < p->hosts_per_pod; i++) {
            int h;
            snprintf(name, sizeof(name), "h%d", pod * p->hosts_per_pod + i);
            TRY(crux_sched_cluster_add_host(c, name, p->gpus_per_host, nics, &h));
            for (int n = 0; n < nics; n++) /* port 0 on ToR A, port 1 on ToR B */
                for (int side = 0; side < 2; side++)
                    TRY(crux_sched_cluster_link_nic(c, h, n, tor[side], GBPS(p->nic_port_gbps)));
        }
    }
    TRY(crux_sched_cluster_seal(c, NULL, 0));
    *out = c;
    return CRUX_OK;
}

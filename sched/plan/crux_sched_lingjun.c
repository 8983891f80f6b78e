/* The Lingjun three-layer Clos from the dataset's topo.csv: one row per
 * host, `ip,DSW,PSW,ASW`.  ASW names repeat under each PSW, so a ToR is the
 * pair (PSW, ASW), named "PSW/ASW". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_internal.h"

#define GBPS(x) ((x)*1e9 / 8.0)

void crux_sched_lingjun_defaults(crux_sched_lingjun_t *p)
{
    /* 8 GPUs and 4 x 200 Gbps NICs per host (one NIC per 2 GPUs, as the
     * paper's testbed); 2:1 oversubscribed ToRs (8 hosts x 800 Gbps down,
     * 8 x 400 Gbps up).  The uplink counts are assumptions: the dataset
     * gives the tree, not the cabling. */
    *p = (crux_sched_lingjun_t){ .gpus_per_host = 8,
                                 .gpus_per_nic = 2,
                                 .tor_uplinks = 8,
                                 .psw_uplinks = 32,
                                 .nic_gbps = 200,
                                 .tor_uplink_gbps = 400,
                                 .psw_uplink_gbps = 400 };
}

/* Split a CSV line into exactly n fields (no quoting in this format). */
static int split(char *line, char **f, int n)
{
    int k = 0;
    f[k++] = line;
    for (char *p = line; *p; p++)
        if (*p == ',') {
            if (k == n)
                return -1;
            *p = '\0';
            f[k++] = p + 1;
        }
    if (k != n)
        return -1;
    for (int i = 0; i < n; i++)
        if (*f[i] == '\0')
            return -1;
    return 0;
}

/* The switch of that name, created in that layer if new (*created, when
 * given, says so); -2 when the name exists in another layer. */
static int switch_id(crux_sched_cluster_t *c, const char *name, int layer, int *created)
{
    int id = crux_sched_cluster_find_switch(c, name);
    if (created)
        *created = id < 0;
    if (id >= 0)
        return c->sw[id].layer == layer ? id : -2;
    if (crux_sched_cluster_add_switch(c, name, layer, &id) != CRUX_OK)
        return -1;
    return id;
}

/* Whether the (psw, dsw) pair was seen; remembers it if not.  Leaves
 * *pairs NULL when out of memory. */
static int pair_seen(int **pairs, int *n, int *cap, int psw, int dsw)
{
    for (int i = 0; i < *n; i++)
        if ((*pairs)[2 * i] == psw && (*pairs)[2 * i + 1] == dsw)
            return 1;
    if (*n == *cap) {
        int ncap = *cap ? 2 * *cap : 8;
        int *p = realloc(*pairs, (size_t)ncap * 2 * sizeof(int));
        if (p == NULL) {
            free(*pairs);
            *pairs = NULL;
            return 0;
        }
        *pairs = p;
        *cap = ncap;
    }
    (*pairs)[2 * *n] = psw;
    (*pairs)[2 * *n + 1] = dsw;
    (*n)++;
    return 0;
}

crux_status_t crux_sched_build_lingjun(const char *path, const crux_sched_lingjun_t *p,
                                       crux_sched_cluster_t **out, char *err, size_t errlen)
{
    if (p->gpus_per_host < 1 || p->gpus_per_host > CRUX_SCHED_MAX_GPUS || p->gpus_per_nic < 1 ||
        p->gpus_per_host % p->gpus_per_nic != 0 || p->tor_uplinks < 1 || p->psw_uplinks < 1 ||
        !(p->nic_gbps > 0) || !(p->tor_uplink_gbps > 0) || !(p->psw_uplink_gbps > 0)) {
        crux_errf(err, errlen, "%s: invalid Lingjun parameters", path);
        return CRUX_ERR_INVALID;
    }
    if (err && errlen)
        err[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        crux_errf(err, errlen, "%s: %s", path, strerror(errno));
        return CRUX_ERR_NOT_FOUND;
    }
    crux_sched_cluster_t *c = crux_sched_cluster_new();
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int *pairs = NULL, npairs = 0, cap_pairs = 0; /* (PSW, DSW) pairs cabled */
    int lineno = 0, nics = p->gpus_per_host / p->gpus_per_nic;
    crux_status_t st = c ? CRUX_OK : CRUX_ERR_NO_MEMORY;
    while (st == CRUX_OK && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        char *fld[4];
        if (len == 0)
            continue;
        if (split(line, fld, 4) != 0) {
            crux_errf(err, errlen, "%s:%d: expected 4 fields ip,DSW,PSW,ASW", path, lineno);
            st = CRUX_ERR_INVALID;
            break;
        }
        if (lineno == 1 && strcmp(fld[0], "ip") == 0)
            continue; /* the header */
        char tor_name[600];
        snprintf(tor_name, sizeof(tor_name), "%s/%s", fld[2], fld[3]);
        int new_tor;
        int dsw = switch_id(c, fld[1], 2, NULL);
        int psw = dsw < 0 ? dsw : switch_id(c, fld[2], 1, NULL);
        int tor = psw < 0 ? psw : switch_id(c, tor_name, 0, &new_tor);
        if (tor < 0) {
            crux_errf(err, errlen, "%s:%d: %s", path, lineno,
                      tor == -2 ? "a switch name is used in two layers" : "bad switch name");
            st = CRUX_ERR_INVALID;
            break;
        }
        if (new_tor)
            st = crux_sched_cluster_link_switches(c, tor, psw, GBPS(p->tor_uplink_gbps),
                                                  p->tor_uplinks);
        if (st == CRUX_OK && !pair_seen(&pairs, &npairs, &cap_pairs, psw, dsw)) {
            if (pairs == NULL)
                st = CRUX_ERR_NO_MEMORY;
            else
                st = crux_sched_cluster_link_switches(c, psw, dsw, GBPS(p->psw_uplink_gbps),
                                                      p->psw_uplinks);
        }
        int h = -1;
        if (st == CRUX_OK &&
            crux_sched_cluster_add_host(c, fld[0], p->gpus_per_host, nics, &h) != CRUX_OK) {
            crux_errf(err, errlen, "%s:%d: host %s: duplicate or invalid name", path, lineno,
                      fld[0]);
            st = CRUX_ERR_INVALID;
        }
        for (int n = 0; st == CRUX_OK && n < nics; n++)
            st = crux_sched_cluster_link_nic(c, h, n, tor, GBPS(p->nic_gbps));
    }
    if (st == CRUX_OK && ferror(f)) {
        crux_errf(err, errlen, "%s: read error", path);
        st = CRUX_ERR_IO;
    }
    free(line);
    free(pairs);
    fclose(f);
    if (st == CRUX_OK) {
        char why[256];
        st = crux_sched_cluster_seal(c, why, sizeof(why));
        if (st != CRUX_OK)
            crux_errf(err, errlen, "%s: %s", path, why);
    } else if (err && *err == '\0') {
        crux_errf(err, errlen, "%s: cannot build the cluster", path);
    }
    if (st != CRUX_OK) {
        crux_sched_cluster_free(c);
        return st;
    }
    *out = c;
    return CRUX_OK;
}

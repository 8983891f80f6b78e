/* The cluster model: hosts, NICs, switches and links; sealing builds the
 * indexes path finding needs (switch adjacency, distances to every ToR). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/plan/crux_sched_internal.h"

crux_sched_cluster_t *crux_sched_cluster_new(void)
{
    crux_sched_cluster_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->host_names = sched_names_new();
    c->sw_names = sched_names_new();
    c->alias_names = sched_names_new();
    if (c->host_names == NULL || c->sw_names == NULL || c->alias_names == NULL) {
        crux_sched_cluster_free(c);
        return NULL;
    }
    return c;
}

void crux_sched_cluster_free(crux_sched_cluster_t *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < c->nhosts; i++)
        free(c->hosts[i].name);
    for (int i = 0; i < c->nsw; i++)
        free(c->sw[i].name);
    free(c->hosts);
    free(c->nics);
    free(c->sw);
    free(c->links);
    sched_names_free(c->host_names);
    sched_names_free(c->sw_names);
    sched_names_free(c->alias_names);
    for (int i = 0; i < c->naliases; i++)
        free(c->aliases[i]);
    free(c->aliases);
    free(c->sw_out_off);
    free(c->sw_out);
    free(c->sw_run_off);
    free(c->run_lo);
    free(c->run_to);
    free(c->tor_index);
    free(c->dist);
    free(c->nic_group);
    free(c->nic_dist);
    free(c);
}

/* Grow *arr (of *cap elements of size sz) to hold need elements. */
static int grow(void **arr, int *cap, int need, size_t sz)
{
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*arr, (size_t)ncap * sz);
    if (p == NULL)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

static int valid_name(const char *name)
{
    if (name == NULL || *name == '\0' || strlen(name) > 255)
        return 0;
    for (const char *p = name; *p; p++)
        if (*p <= ' ' || *p == '#' || *p == ',' || *p == '>' || *p == ':')
            return 0;
    return 1;
}

crux_status_t crux_sched_cluster_add_host(crux_sched_cluster_t *c, const char *name, int gpus,
                                          int nics, int *host_out)
{
    if (c == NULL || c->sealed || !valid_name(name) || gpus < 1 || gpus > CRUX_SCHED_MAX_GPUS ||
        nics < 1 || nics > gpus || gpus % nics != 0)
        return CRUX_ERR_INVALID;
    if (sched_names_get(c->host_names, name) >= 0)
        return CRUX_ERR_INVALID;
    if (grow((void **)&c->hosts, &c->cap_hosts, c->nhosts + 1, sizeof(*c->hosts)) ||
        grow((void **)&c->nics, &c->cap_nics, c->nnics + nics, sizeof(*c->nics)))
        return CRUX_ERR_NO_MEMORY;
    sched_host_t *h = &c->hosts[c->nhosts];
    h->name = strdup(name);
    if (h->name == NULL)
        return CRUX_ERR_NO_MEMORY;
    if (sched_names_put(c->host_names, h->name, c->nhosts) != 0) {
        free(h->name);
        return CRUX_ERR_NO_MEMORY;
    }
    h->gpus = gpus;
    h->nics = nics;
    h->gpus_per_nic = gpus / nics;
    h->first_nic = c->nnics;
    for (int i = 0; i < nics; i++) {
        memset(&c->nics[c->nnics + i], 0, sizeof(sched_nic_t));
        c->nics[c->nnics + i].host = c->nhosts;
    }
    c->nnics += nics;
    if (host_out)
        *host_out = c->nhosts;
    c->nhosts++;
    return CRUX_OK;
}

crux_status_t crux_sched_cluster_add_switch(crux_sched_cluster_t *c, const char *name, int layer,
                                            int *sw_out)
{
    if (c == NULL || c->sealed || !valid_name(name) || layer < 0)
        return CRUX_ERR_INVALID;
    if (sched_names_get(c->sw_names, name) >= 0 || c->nsw >= CRUX_SCHED_MAX_SWITCHES)
        return CRUX_ERR_INVALID;
    if (grow((void **)&c->sw, &c->cap_sw, c->nsw + 1, sizeof(*c->sw)))
        return CRUX_ERR_NO_MEMORY;
    sched_switch_t *s = &c->sw[c->nsw];
    s->name = strdup(name);
    if (s->name == NULL)
        return CRUX_ERR_NO_MEMORY;
    if (sched_names_put(c->sw_names, s->name, c->nsw) != 0) {
        free(s->name);
        return CRUX_ERR_NO_MEMORY;
    }
    s->layer = layer;
    if (sw_out)
        *sw_out = c->nsw;
    c->nsw++;
    return CRUX_OK;
}

static int bw_ok(double bw)
{
    return bw >= CRUX_SCHED_MIN_BW && bw <= CRUX_SCHED_MAX_BW;
}

static int add_link(crux_sched_cluster_t *c, int src, int dst, double bw)
{
    if (grow((void **)&c->links, &c->cap_links, c->nlinks + 1, sizeof(*c->links)))
        return -1;
    c->links[c->nlinks] = (sched_link_t){ src, dst, bw };
    return c->nlinks++;
}

crux_status_t crux_sched_cluster_link_nic(crux_sched_cluster_t *c, int host, int nic, int sw,
                                          double bw)
{
    if (c == NULL || c->sealed || host < 0 || host >= c->nhosts || nic < 0 ||
        nic >= c->hosts[host].nics || sw < 0 || sw >= c->nsw || !bw_ok(bw))
        return CRUX_ERR_INVALID;
    int id = c->hosts[host].first_nic + nic;
    sched_nic_t *n = &c->nics[id];
    if (n->nports == CRUX_SCHED_MAX_PORTS)
        return CRUX_ERR_INVALID;
    int up = add_link(c, id, SCHED_SW(sw), bw);
    int down = up < 0 ? -1 : add_link(c, SCHED_SW(sw), id, bw);
    if (down < 0)
        return CRUX_ERR_NO_MEMORY;
    n = &c->nics[id];
    n->port_sw[n->nports] = sw;
    n->port_up[n->nports] = up;
    n->port_down[n->nports] = down;
    n->nports++;
    n->bytes_per_s += bw;
    return CRUX_OK;
}

crux_status_t crux_sched_cluster_link_switches(crux_sched_cluster_t *c, int a, int b, double bw,
                                               int count)
{
    if (c == NULL || c->sealed || a < 0 || a >= c->nsw || b < 0 || b >= c->nsw || a == b ||
        !bw_ok(bw) || count < 1)
        return CRUX_ERR_INVALID;
    for (int i = 0; i < count; i++)
        if (add_link(c, SCHED_SW(a), SCHED_SW(b), bw) < 0 ||
            add_link(c, SCHED_SW(b), SCHED_SW(a), bw) < 0)
            return CRUX_ERR_NO_MEMORY;
    return CRUX_OK;
}

/* BFS over reversed switch links from ToR t: dist[s] = hops s -> t. */
static void bfs_to(const crux_sched_cluster_t *c, const int *in_off, const int *in_from, int t,
                   int16_t *dist, int *queue)
{
    for (int s = 0; s < c->nsw; s++)
        dist[s] = INT16_MAX;
    int head = 0, tail = 0;
    dist[t] = 0;
    queue[tail++] = t;
    while (head < tail) {
        int v = queue[head++];
        for (int k = in_off[v]; k < in_off[v + 1]; k++) {
            int u = in_from[k];
            if (dist[u] == INT16_MAX) {
                dist[u] = (int16_t)(dist[v] + 1);
                queue[tail++] = u;
            }
        }
    }
}

/* A NIC's switches, sorted: NICs with the same set share distances. */
typedef struct {
    int nports, nic;
    int sw[CRUX_SCHED_MAX_PORTS];
} port_set_t;

static int port_set_cmp(const port_set_t *a, const port_set_t *b)
{
    if (a->nports != b->nports)
        return a->nports < b->nports ? -1 : 1;
    for (int p = 0; p < a->nports; p++)
        if (a->sw[p] != b->sw[p])
            return a->sw[p] < b->sw[p] ? -1 : 1;
    return 0;
}

static int port_set_order(const void *x, const void *y)
{
    const port_set_t *a = x, *b = y;
    int d = port_set_cmp(a, b);
    return d ? d : (a->nic > b->nic) - (a->nic < b->nic);
}

/* nic_group and nic_dist from dist: the distance from switch s to a NIC
 * is one more than the nearest of its ToRs' distances. */
static crux_status_t build_nic_dist(crux_sched_cluster_t *c)
{
    size_t nn = (size_t)(c->nnics ? c->nnics : 1), nsw = (size_t)(c->nsw ? c->nsw : 1);
    port_set_t *ps = malloc(nn * sizeof(*ps));
    int *rep = malloc(nn * sizeof(int)); /* a NIC of each group */
    c->nic_group = malloc(nn * sizeof(int));
    if (ps == NULL || rep == NULL || c->nic_group == NULL) {
        free(ps);
        free(rep);
        return CRUX_ERR_NO_MEMORY;
    }
    for (int n = 0; n < c->nnics; n++) {
        const sched_nic_t *x = &c->nics[n];
        ps[n].nports = x->nports;
        ps[n].nic = n;
        for (int p = 0; p < x->nports; p++) { /* insertion sort: a few ports */
            int k = p;
            while (k > 0 && ps[n].sw[k - 1] > x->port_sw[p]) {
                ps[n].sw[k] = ps[n].sw[k - 1];
                k--;
            }
            ps[n].sw[k] = x->port_sw[p];
        }
    }
    qsort(ps, (size_t)c->nnics, sizeof(*ps), port_set_order);
    int ngroups = 0;
    for (int i = 0; i < c->nnics; i++) {
        if (i == 0 || port_set_cmp(&ps[i - 1], &ps[i]) != 0)
            rep[ngroups++] = ps[i].nic;
        c->nic_group[ps[i].nic] = ngroups - 1;
    }
    free(ps);
    c->nic_dist = malloc((size_t)(ngroups ? ngroups : 1) * nsw * sizeof(int16_t));
    if (c->nic_dist == NULL) {
        free(rep);
        return CRUX_ERR_NO_MEMORY;
    }
    for (int g = 0; g < ngroups; g++) {
        const sched_nic_t *x = &c->nics[rep[g]];
        for (int s = 0; s < c->nsw; s++) {
            int best = INT16_MAX;
            for (int p = 0; p < x->nports; p++) {
                int d = c->dist[(size_t)c->tor_index[x->port_sw[p]] * (size_t)c->nsw + s];
                if (d < best)
                    best = d;
            }
            c->nic_dist[(size_t)g * nsw + s] = (int16_t)(best == INT16_MAX ? INT16_MAX : best + 1);
        }
    }
    free(rep);
    return CRUX_OK;
}

static crux_status_t build_index(crux_sched_cluster_t *c)
{
    int nsw = c->nsw;
    c->sw_out_off = calloc((size_t)nsw + 1, sizeof(int));
    int *in_off = calloc((size_t)nsw + 1, sizeof(int));
    c->tor_index = malloc((size_t)(nsw ? nsw : 1) * sizeof(int));
    if (c->sw_out_off == NULL || in_off == NULL || c->tor_index == NULL) {
        free(in_off);
        return CRUX_ERR_NO_MEMORY;
    }
    int nsl = 0;
    for (int l = 0; l < c->nlinks; l++)
        if (SCHED_IS_SW(c->links[l].src) && SCHED_IS_SW(c->links[l].dst)) {
            c->sw_out_off[SCHED_SW_OF(c->links[l].src) + 1]++;
            in_off[SCHED_SW_OF(c->links[l].dst) + 1]++;
            nsl++;
        }
    for (int s = 0; s < nsw; s++) {
        c->sw_out_off[s + 1] += c->sw_out_off[s];
        in_off[s + 1] += in_off[s];
    }
    c->sw_out = malloc((size_t)(nsl ? nsl : 1) * sizeof(int));
    c->sw_run_off = calloc((size_t)nsw + 1, sizeof(int));
    c->run_lo = malloc(((size_t)nsl + 1) * sizeof(int));
    c->run_to = malloc((size_t)(nsl ? nsl : 1) * sizeof(int));
    int *in_from = malloc((size_t)(nsl ? nsl : 1) * sizeof(int));
    int *fill_out = malloc((size_t)(nsw ? nsw : 1) * sizeof(int));
    int *fill_in = malloc((size_t)(nsw ? nsw : 1) * sizeof(int));
    crux_status_t st = CRUX_ERR_NO_MEMORY;
    if (c->sw_out == NULL || c->sw_run_off == NULL || c->run_lo == NULL || c->run_to == NULL ||
        in_from == NULL || fill_out == NULL || fill_in == NULL)
        goto out;
    memcpy(fill_out, c->sw_out_off, (size_t)nsw * sizeof(int));
    memcpy(fill_in, in_off, (size_t)nsw * sizeof(int));
    for (int l = 0; l < c->nlinks; l++) /* ascending link ids per switch */
        if (SCHED_IS_SW(c->links[l].src) && SCHED_IS_SW(c->links[l].dst)) {
            int s = SCHED_SW_OF(c->links[l].src), d = SCHED_SW_OF(c->links[l].dst);
            c->sw_out[fill_out[s]++] = l;
            in_from[fill_in[d]++] = s;
        }
    int nruns = 0;
    for (int s = 0; s < nsw; s++) {
        c->sw_run_off[s] = nruns;
        for (int k = c->sw_out_off[s]; k < c->sw_out_off[s + 1]; k++) {
            int d = SCHED_SW_OF(c->links[c->sw_out[k]].dst);
            if (k == c->sw_out_off[s] || d != c->run_to[nruns - 1]) {
                c->run_lo[nruns] = k;
                c->run_to[nruns++] = d;
            }
        }
    }
    c->sw_run_off[nsw] = nruns;
    c->run_lo[nruns] = nsl;
    for (int s = 0; s < nsw; s++)
        c->tor_index[s] = -1;
    for (int n = 0; n < c->nnics; n++)
        for (int p = 0; p < c->nics[n].nports; p++) {
            int s = c->nics[n].port_sw[p];
            if (c->tor_index[s] < 0)
                c->tor_index[s] = c->ntors++;
        }
    c->dist = malloc((size_t)(c->ntors ? c->ntors : 1) * (size_t)(nsw ? nsw : 1) * sizeof(int16_t));
    if (c->dist == NULL)
        goto out;
    for (int s = 0; s < nsw; s++)
        if (c->tor_index[s] >= 0)
            bfs_to(c, in_off, in_from, s, c->dist + (size_t)c->tor_index[s] * nsw, fill_out);
    st = build_nic_dist(c);
out:
    free(in_off);
    free(in_from);
    free(fill_out);
    free(fill_in);
    return st;
}

crux_status_t crux_sched_cluster_seal(crux_sched_cluster_t *c, char *err, size_t errlen)
{
    if (c == NULL || c->sealed) {
        crux_errf(err, errlen, "cluster already sealed");
        return CRUX_ERR_INVALID;
    }
    if (c->nhosts == 0) {
        crux_errf(err, errlen, "cluster has no hosts");
        return CRUX_ERR_INVALID;
    }
    for (int n = 0; n < c->nnics; n++)
        if (c->nics[n].nports == 0) {
            const sched_host_t *h = &c->hosts[c->nics[n].host];
            crux_errf(err, errlen, "host %s: NIC %d is not cabled to a switch", h->name,
                      n - h->first_nic);
            return CRUX_ERR_INVALID;
        }
    crux_status_t st = build_index(c);
    if (st != CRUX_OK) {
        crux_errf(err, errlen, "out of memory");
        return st;
    }
    /* Every NIC must reach every other: all ToRs reach NIC 0's ToR and
     * NIC 0's ToR reaches all ToRs. */
    int t0 = c->nics[0].port_sw[0];
    for (int s = 0; s < c->nsw; s++) {
        if (c->tor_index[s] < 0)
            continue;
        if (c->dist[(size_t)c->tor_index[t0] * c->nsw + s] == INT16_MAX ||
            c->dist[(size_t)c->tor_index[s] * c->nsw + t0] == INT16_MAX) {
            crux_errf(err, errlen, "switch %s cannot reach switch %s", c->sw[s].name,
                      c->sw[t0].name);
            return CRUX_ERR_INVALID;
        }
    }
    c->sealed = 1;
    return CRUX_OK;
}

int crux_sched_cluster_hosts(const crux_sched_cluster_t *c)
{
    return c->nhosts;
}

int crux_sched_cluster_switches(const crux_sched_cluster_t *c)
{
    return c->nsw;
}

int crux_sched_cluster_links(const crux_sched_cluster_t *c)
{
    return c->nlinks;
}

void crux_sched_cluster_set_symmetric(crux_sched_cluster_t *c, int on)
{
    if (c != NULL)
        c->symmetric = on != 0;
}

int crux_sched_cluster_symmetric(const crux_sched_cluster_t *c)
{
    return c->symmetric;
}

crux_status_t crux_sched_cluster_add_alias(crux_sched_cluster_t *c, const char *alias, int host)
{
    if (alias == NULL || alias[0] == '\0' || host < 0 || host >= c->nhosts ||
        sched_names_get(c->host_names, alias) >= 0 || sched_names_get(c->alias_names, alias) >= 0)
        return CRUX_ERR_INVALID;
    if (c->naliases == c->cap_aliases) {
        int ncap = c->cap_aliases ? 2 * c->cap_aliases : 16;
        char **p = realloc(c->aliases, (size_t)ncap * sizeof(*p));
        if (p == NULL)
            return CRUX_ERR_NO_MEMORY;
        c->aliases = p;
        c->cap_aliases = ncap;
    }
    char *copy = strdup(alias);
    if (copy == NULL || sched_names_put(c->alias_names, copy, host) != 0) {
        free(copy);
        return CRUX_ERR_NO_MEMORY;
    }
    c->aliases[c->naliases++] = copy;
    return CRUX_OK;
}

static int find_exact(const crux_sched_cluster_t *c, const char *name)
{
    int h = sched_names_get(c->host_names, name);
    return h >= 0 ? h : sched_names_get(c->alias_names, name);
}

int crux_sched_cluster_find_host(const crux_sched_cluster_t *c, const char *name)
{
    if (name == NULL)
        return -1;
    int h = find_exact(c, name);
    const char *dot = strchr(name, '.');
    if (h < 0 && dot != NULL && dot > name && dot - name < 256) {
        /* "node7.cluster.example" as "node7": batch systems and MPI's
         * host names disagree on the domain */
        char shortname[256];
        snprintf(shortname, sizeof(shortname), "%.*s", (int)(dot - name), name);
        h = find_exact(c, shortname);
    }
    return h;
}

int crux_sched_cluster_find_switch(const crux_sched_cluster_t *c, const char *name)
{
    return name ? sched_names_get(c->sw_names, name) : -1;
}

crux_status_t crux_sched_host_info(const crux_sched_cluster_t *c, int host,
                                   crux_sched_host_info_t *info)
{
    if (host < 0 || host >= c->nhosts)
        return CRUX_ERR_INVALID;
    const sched_host_t *h = &c->hosts[host];
    *info = (crux_sched_host_info_t){ h->name, h->gpus, h->nics, h->gpus_per_nic };
    return CRUX_OK;
}

crux_status_t crux_sched_switch_info(const crux_sched_cluster_t *c, int sw,
                                     crux_sched_switch_info_t *info)
{
    if (sw < 0 || sw >= c->nsw)
        return CRUX_ERR_INVALID;
    *info = (crux_sched_switch_info_t){ c->sw[sw].name, c->sw[sw].layer };
    return CRUX_OK;
}

static crux_sched_end_t link_end(const crux_sched_cluster_t *c, int e)
{
    if (SCHED_IS_SW(e))
        return (crux_sched_end_t){ -1, -1, SCHED_SW_OF(e) };
    int h = c->nics[e].host;
    return (crux_sched_end_t){ h, e - c->hosts[h].first_nic, -1 };
}

crux_status_t crux_sched_link_info(const crux_sched_cluster_t *c, int link,
                                   crux_sched_link_info_t *info)
{
    if (link < 0 || link >= c->nlinks)
        return CRUX_ERR_INVALID;
    const sched_link_t *l = &c->links[link];
    *info = (crux_sched_link_info_t){ link_end(c, l->src), link_end(c, l->dst), l->bw };
    return CRUX_OK;
}

static int end_name(const crux_sched_cluster_t *c, int e, char *buf, size_t len)
{
    crux_sched_end_t x = link_end(c, e);
    if (x.host < 0)
        return snprintf(buf, len, "%s", c->sw[x.sw].name);
    return snprintf(buf, len, "%s:%d", c->hosts[x.host].name, x.nic);
}

const char *crux_sched_link_name(const crux_sched_cluster_t *c, int link, char *buf, size_t len)
{
    if (len == 0)
        return buf;
    if (link < 0 || link >= c->nlinks) {
        snprintf(buf, len, "?");
        return buf;
    }
    int n = end_name(c, c->links[link].src, buf, len);
    if (n >= 0 && (size_t)n + 1 < len) {
        buf[n] = '>';
        end_name(c, c->links[link].dst, buf + n + 1, len - (size_t)n - 1);
    }
    return buf;
}

/* The cluster file of crux-sched: a builder with its parameters, or an
 * explicit list of hosts, switches and links; optionally the table from
 * levels to network settings.  The format: docs/usage/crux-sched.md. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sched/tool/crux_sched_tool.h"

#define GBPS(x) ((x)*1e9 / 8.0)

static const char *const common_keys[] = { "type",       "levels",       "comment",
                                           "node_names", "host_pattern", "symmetric_paths",
                                           NULL };

static int build_clos2(const tool_doc_t *d, crux_sched_cluster_t **out)
{
    crux_sched_clos2_t p;
    char err[256];
    crux_sched_clos2_defaults(&p);
    tool_field_t f[] = {
        { "tors", F_INT, &p.tors, NULL },
        { "aggs", F_INT, &p.aggs, NULL },
        { "hosts_per_tor", F_INT, &p.hosts_per_tor, NULL },
        { "gpus_per_host", F_INT, &p.gpus_per_host, NULL },
        { "gpus_per_nic", F_INT, &p.gpus_per_nic, NULL },
        { "links_per_agg", F_INT, &p.links_per_agg, NULL },
        { "nic_gbps", F_DOUBLE, &p.nic_gbps, NULL },
        { "uplink_gbps", F_DOUBLE, &p.uplink_gbps, NULL },
    };
    if (tool_fields(d->root, f, 8, common_keys, err, sizeof(err)) != 0) {
        tool_error(d->path, 1, "%s", err);
        return TOOL_INPUT;
    }
    if (crux_sched_build_clos2(&p, out) != CRUX_OK) {
        tool_error(d->path, 1, "invalid clos2 parameters (at most %d switches)",
                   CRUX_SCHED_MAX_SWITCHES);
        return TOOL_INPUT;
    }
    return TOOL_OK;
}

static int build_double_sided(const tool_doc_t *d, crux_sched_cluster_t **out)
{
    crux_sched_double_sided_t p;
    char err[256];
    crux_sched_double_sided_defaults(&p);
    tool_field_t f[] = {
        { "pods", F_INT, &p.pods, NULL },
        { "hosts_per_pod", F_INT, &p.hosts_per_pod, NULL },
        { "aggs_per_pod", F_INT, &p.aggs_per_pod, NULL },
        { "cores", F_INT, &p.cores, NULL },
        { "gpus_per_host", F_INT, &p.gpus_per_host, NULL },
        { "gpus_per_nic", F_INT, &p.gpus_per_nic, NULL },
        { "tor_agg_links", F_INT, &p.tor_agg_links, NULL },
        { "agg_core_links", F_INT, &p.agg_core_links, NULL },
        { "nic_port_gbps", F_DOUBLE, &p.nic_port_gbps, NULL },
        { "tor_agg_gbps", F_DOUBLE, &p.tor_agg_gbps, NULL },
        { "agg_core_gbps", F_DOUBLE, &p.agg_core_gbps, NULL },
    };
    if (tool_fields(d->root, f, 11, common_keys, err, sizeof(err)) != 0) {
        tool_error(d->path, 1, "%s", err);
        return TOOL_INPUT;
    }
    if (crux_sched_build_double_sided(&p, out) != CRUX_OK) {
        tool_error(d->path, 1, "invalid double-sided parameters (at most %d switches)",
                   CRUX_SCHED_MAX_SWITCHES);
        return TOOL_INPUT;
    }
    return TOOL_OK;
}

static int build_lingjun(const tool_doc_t *d, crux_sched_cluster_t **out)
{
    crux_sched_lingjun_t p;
    const char *csv = NULL;
    char err[768], path[PATH_MAX];
    crux_sched_lingjun_defaults(&p);
    tool_field_t f[] = {
        { "topo_csv", F_STRING, &csv, NULL },
        { "gpus_per_host", F_INT, &p.gpus_per_host, NULL },
        { "gpus_per_nic", F_INT, &p.gpus_per_nic, NULL },
        { "tor_uplinks", F_INT, &p.tor_uplinks, NULL },
        { "psw_uplinks", F_INT, &p.psw_uplinks, NULL },
        { "nic_gbps", F_DOUBLE, &p.nic_gbps, NULL },
        { "tor_uplink_gbps", F_DOUBLE, &p.tor_uplink_gbps, NULL },
        { "psw_uplink_gbps", F_DOUBLE, &p.psw_uplink_gbps, NULL },
    };
    if (tool_fields(d->root, f, 8, common_keys, err, sizeof(err)) != 0) {
        tool_error(d->path, 1, "%s", err);
        return TOOL_INPUT;
    }
    if (csv == NULL) {
        tool_error(d->path, 1, "a lingjun cluster needs \"topo_csv\"");
        return TOOL_INPUT;
    }
    /* a relative topo_csv is relative to the cluster file */
    const char *slash = strrchr(d->path, '/');
    if (csv[0] != '/' && slash)
        snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - d->path), d->path, csv);
    else
        snprintf(path, sizeof(path), "%s", csv);
    if (crux_sched_build_lingjun(path, &p, out, err, sizeof(err)) != CRUX_OK) {
        fprintf(stderr, "%s\n", err); /* already "csv:line: why" */
        return TOOL_INPUT;
    }
    return TOOL_OK;
}

/* "aliases": ["node7", ...] of each host of an explicit cluster: other
 * names its jobs may report (a short name, the batch system's). */
static int host_aliases(const tool_doc_t *d, json_object *hosts, crux_sched_cluster_t *c)
{
    for (size_t i = 0; i < json_object_array_length(hosts); i++) {
        json_object *al;
        if (!json_object_object_get_ex(json_object_array_get_idx(hosts, i), "aliases", &al))
            continue;
        int line = tool_doc_line(d, "hosts", (int)i);
        if (!json_object_is_type(al, json_type_array)) {
            tool_error(d->path, line, "host %zu: \"aliases\" must be an array of names", i);
            return TOOL_INPUT;
        }
        for (size_t k = 0; k < json_object_array_length(al); k++) {
            json_object *v = json_object_array_get_idx(al, k);
            const char *name =
                json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
            if (name == NULL || strlen(name) > CRUX_SCHED_MAX_ID ||
                crux_sched_cluster_add_alias(c, name, (int)i) != CRUX_OK) {
                tool_error(d->path, line,
                           "host %zu: alias %zu must be a name of at most %d bytes that no "
                           "other host or alias has",
                           i, k, CRUX_SCHED_MAX_ID);
                return TOOL_INPUT;
            }
        }
    }
    return TOOL_OK;
}

/* {"hosts":[{"name","gpus","nics"}], "switches":[{"name","layer"}],
 *  "links":[{"host","nic"?,"switch","gbps"} | {"a","b","gbps","count"?}]} */
static int build_explicit(const tool_doc_t *d, crux_sched_cluster_t **out)
{
    static const char *const keys[] = { "hosts", "switches", "links", NULL };
    char err[256];
    json_object_object_foreach(d->root, key, val)
    {
        (void)val;
        int ok = 0;
        for (int i = 0; keys[i] && !ok; i++)
            ok = strcmp(key, keys[i]) == 0;
        for (int i = 0; common_keys[i] && !ok; i++)
            ok = strcmp(key, common_keys[i]) == 0;
        if (!ok) {
            tool_error(d->path, 1, "unknown key \"%s\"", key);
            return TOOL_INPUT;
        }
    }
    json_object *arr[3];
    for (int i = 0; i < 3; i++)
        if (!json_object_object_get_ex(d->root, keys[i], &arr[i]) ||
            !json_object_is_type(arr[i], json_type_array)) {
            tool_error(d->path, 1, "an explicit cluster needs the array \"%s\"", keys[i]);
            return TOOL_INPUT;
        }
    crux_sched_cluster_t *c = crux_sched_cluster_new();
    if (c == NULL)
        return TOOL_RUNTIME;
    int rc = TOOL_INPUT;
    for (size_t i = 0; i < json_object_array_length(arr[0]); i++) {
        const char *name = NULL;
        int gpus = 8, nics = 4;
        tool_field_t f[] = { { "name", F_STRING, &name, NULL },
                             { "gpus", F_INT, &gpus, NULL },
                             { "nics", F_INT, &nics, NULL } };
        static const char *const later[] = { "aliases", NULL }; /* after every host */
        int line = tool_doc_line(d, "hosts", (int)i);
        if (tool_fields(json_object_array_get_idx(arr[0], i), f, 3, later, err, sizeof(err))) {
            tool_error(d->path, line, "host %zu: %s", i, err);
            goto out;
        }
        if (name != NULL && strlen(name) > CRUX_SCHED_MAX_ID) {
            tool_error(d->path, line, "host %zu: name of %zu bytes, longer than %d", i,
                       strlen(name), CRUX_SCHED_MAX_ID);
            goto out;
        }
        if (crux_sched_cluster_add_host(c, name, gpus, nics, NULL) != CRUX_OK) {
            tool_error(d->path, line,
                       "host %zu: needs a new name, 1-64 GPUs, NICs dividing "
                       "the GPUs",
                       i);
            goto out;
        }
    }
    for (size_t i = 0; i < json_object_array_length(arr[1]); i++) {
        const char *name = NULL;
        int layer = 0;
        tool_field_t f[] = { { "name", F_STRING, &name, NULL }, { "layer", F_INT, &layer, NULL } };
        int line = tool_doc_line(d, "switches", (int)i);
        if (tool_fields(json_object_array_get_idx(arr[1], i), f, 2, NULL, err, sizeof(err))) {
            tool_error(d->path, line, "switch %zu: %s", i, err);
            goto out;
        }
        if (name != NULL && strlen(name) > CRUX_SCHED_MAX_ID) {
            tool_error(d->path, line, "switch %zu: name of %zu bytes, longer than %d", i,
                       strlen(name), CRUX_SCHED_MAX_ID);
            goto out;
        }
        if (crux_sched_cluster_add_switch(c, name, layer, NULL) != CRUX_OK) {
            tool_error(d->path, line,
                       "switch %zu: needs a new name and a layer >= 0 (at most %d switches)", i,
                       CRUX_SCHED_MAX_SWITCHES);
            goto out;
        }
    }
    for (size_t i = 0; i < json_object_array_length(arr[2]); i++) {
        const char *host = NULL, *sw = NULL, *a = NULL, *b = NULL;
        int nic = -1, count = 1;
        double gbps = 0;
        tool_field_t f[] = {
            { "host", F_STRING, &host, NULL }, { "nic", F_INT, &nic, NULL },
            { "switch", F_STRING, &sw, NULL }, { "a", F_STRING, &a, NULL },
            { "b", F_STRING, &b, NULL },       { "gbps", F_DOUBLE, &gbps, NULL },
            { "count", F_INT, &count, NULL },
        };
        int line = tool_doc_line(d, "links", (int)i);
        if (tool_fields(json_object_array_get_idx(arr[2], i), f, 7, NULL, err, sizeof(err))) {
            tool_error(d->path, line, "link %zu: %s", i, err);
            goto out;
        }
        crux_status_t st = CRUX_ERR_INVALID;
        if (host && sw && !a && !b) {
            int h = crux_sched_cluster_find_host(c, host);
            int s = crux_sched_cluster_find_switch(c, sw);
            if (h < 0 || s < 0) {
                tool_error(d->path, line, "link %zu: unknown %s \"%s\"", i,
                           h < 0 ? "host" : "switch", h < 0 ? host : sw);
                goto out;
            }
            crux_sched_host_info_t hi;
            crux_sched_host_info(c, h, &hi);
            for (int n = nic < 0 ? 0 : nic; n < (nic < 0 ? hi.nics : nic + 1); n++)
                st = crux_sched_cluster_link_nic(c, h, n, s, GBPS(gbps));
        } else if (a && b && !host && !sw) {
            int sa = crux_sched_cluster_find_switch(c, a),
                sb = crux_sched_cluster_find_switch(c, b);
            if (sa < 0 || sb < 0) {
                tool_error(d->path, line, "link %zu: unknown switch \"%s\"", i, sa < 0 ? a : b);
                goto out;
            }
            st = crux_sched_cluster_link_switches(c, sa, sb, GBPS(gbps), count);
        }
        if (st != CRUX_OK) {
            tool_error(d->path, line,
                       "link %zu: needs {host, nic?, switch, gbps} or "
                       "{a, b, gbps, count?} with gbps in [%g, %g] and an existing NIC",
                       i, CRUX_SCHED_MIN_BW * 8 / 1e9, CRUX_SCHED_MAX_BW * 8 / 1e9);
            goto out;
        }
    }
    if (host_aliases(d, arr[0], c) != TOOL_OK)
        goto out;
    if (crux_sched_cluster_seal(c, err, sizeof(err)) != CRUX_OK) {
        tool_error(d->path, 1, "%s", err);
        goto out;
    }
    *out = c;
    c = NULL;
    rc = TOOL_OK;
out:
    crux_sched_cluster_free(c);
    return rc;
}

static int load_table(const tool_doc_t *d, crux_sched_nettable_t *t, int levels)
{
    json_object *arr;
    crux_sched_nettable_default(t, levels);
    if (!json_object_object_get_ex(d->root, "levels", &arr))
        return TOOL_OK;
    if (!json_object_is_type(arr, json_type_array) || (int)json_object_array_length(arr) < levels) {
        tool_error(d->path, 1, "\"levels\" must list at least %d {sl, dscp} entries", levels);
        return TOOL_INPUT;
    }
    for (int l = 0; l < levels; l++) {
        char err[256];
        tool_field_t f[] = { { "sl", F_INT, &t->cls[l].sl, NULL },
                             { "dscp", F_INT, &t->cls[l].dscp, NULL } };
        if (tool_fields(json_object_array_get_idx(arr, (size_t)l), f, 2, NULL, err, sizeof(err)) !=
            0) {
            tool_error(d->path, tool_doc_line(d, "levels", l), "level %d: %s", l, err);
            return TOOL_INPUT;
        }
    }
    if (crux_sched_nettable_check(t) != CRUX_OK) {
        tool_error(d->path, 1, "\"levels\": sl must be 0..15 and dscp 0..63");
        return TOOL_INPUT;
    }
    return TOOL_OK;
}

/* "node_names": {"<batch system's node name>": "<host>", ...}: the names
 * under which a host is also known (Slurm's node names, profiles' host
 * names). */
static int load_node_names(const tool_doc_t *d, crux_sched_cluster_t *c)
{
    json_object *obj;
    if (!json_object_object_get_ex(d->root, "node_names", &obj))
        return TOOL_OK;
    if (!json_object_is_type(obj, json_type_object)) {
        tool_error(d->path, 1, "\"node_names\" must be an object {\"node\": \"host\", ...}");
        return TOOL_INPUT;
    }
    json_object_object_foreach(obj, node, val)
    {
        const char *host =
            json_object_is_type(val, json_type_string) ? json_object_get_string(val) : NULL;
        int h = crux_sched_cluster_find_host(c, host);
        if (h < 0) {
            tool_error(d->path, 1, "\"node_names\": \"%s\" maps to an unknown host \"%s\"", node,
                       host ? host : "");
            return TOOL_INPUT;
        }
        if (crux_sched_cluster_add_alias(c, node, h) != CRUX_OK) {
            tool_error(d->path, 1,
                       "\"node_names\": \"%s\" is empty or already a host's name or another "
                       "node's",
                       node);
            return TOOL_INPUT;
        }
    }
    return TOOL_OK;
}

/* "host_pattern": "node{001}.example": host i of the cluster (in its
 * order: the builders' h0, h1, ..., an explicit list's order, the Lingjun
 * CSV's) is also known as the pattern with {001} replaced by i + 1, zero
 * padded to 3 digits; the digits give the first number and the width. */
static int load_host_pattern(const tool_doc_t *d, crux_sched_cluster_t *c)
{
    json_object *v;
    if (!json_object_object_get_ex(d->root, "host_pattern", &v))
        return TOOL_OK;
    const char *pat = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
    const char *open = strchr(pat, '{'), *close = open ? strchr(open, '}') : NULL;
    size_t width = open && close ? (size_t)(close - open - 1) : 0;
    int ok = width >= 1 && width <= 9 && strlen(pat) <= 128 && strchr(close + 1, '{') == NULL &&
             strchr(close + 1, '}') == NULL && memchr(pat, '}', (size_t)(open - pat)) == NULL;
    for (size_t k = 0; ok && k < width; k++)
        ok = open[1 + k] >= '0' && open[1 + k] <= '9';
    if (!ok) {
        tool_error(d->path, 1,
                   "\"host_pattern\" must hold one {DIGITS} group (1-9 digits), e.g. "
                   "\"node{001}\", in at most 128 bytes");
        return TOOL_INPUT;
    }
    long first = strtol(open + 1, NULL, 10);
    for (int h = 0; h < crux_sched_cluster_hosts(c); h++) {
        char name[160];
        snprintf(name, sizeof(name), "%.*s%0*ld%s", (int)(open - pat), pat, (int)width, first + h,
                 close + 1);
        if (strlen(name) > CRUX_SCHED_MAX_ID ||
            crux_sched_cluster_add_alias(c, name, h) != CRUX_OK) {
            tool_error(d->path, 1,
                       "\"host_pattern\": \"%s\" (host %d) is too long or already a host's "
                       "name or alias",
                       name, h);
            return TOOL_INPUT;
        }
    }
    return TOOL_OK;
}

/* "symmetric_paths": true: both directions of a connection take one path
 * (crux_sched_cluster_set_symmetric). */
static int load_symmetric(const tool_doc_t *d, crux_sched_cluster_t *c)
{
    json_object *v;
    if (!json_object_object_get_ex(d->root, "symmetric_paths", &v))
        return TOOL_OK;
    if (!json_object_is_type(v, json_type_boolean)) {
        tool_error(d->path, 1, "\"symmetric_paths\" must be true or false");
        return TOOL_INPUT;
    }
    crux_sched_cluster_set_symmetric(c, json_object_get_boolean(v));
    return TOOL_OK;
}

int crux_sched_cluster_load(const char *path, crux_sched_cluster_t **out,
                            crux_sched_nettable_t *table, int levels)
{
    tool_doc_t d;
    int rc = tool_doc_load(&d, path);
    if (rc == TOOL_OK) {
        rc = tool_cluster_from_doc(&d, out, table, levels);
    }
    tool_doc_free(&d);
    return rc;
}

int tool_cluster_from_doc(const tool_doc_t *doc, crux_sched_cluster_t **out,
                          crux_sched_nettable_t *table, int levels)
{
    const tool_doc_t d = *doc;
    const char *path = d.path;
    int rc;
    json_object *type;
    const char *ty = json_object_object_get_ex(d.root, "type", &type) &&
                             json_object_is_type(type, json_type_string)
                         ? json_object_get_string(type)
                         : NULL;
    if (ty == NULL) {
        tool_error(path, 1, "needs \"type\": lingjun, clos2, double-sided or explicit");
        rc = TOOL_INPUT;
    } else if (strcmp(ty, "lingjun") == 0) {
        rc = build_lingjun(&d, out);
    } else if (strcmp(ty, "clos2") == 0) {
        rc = build_clos2(&d, out);
    } else if (strcmp(ty, "double-sided") == 0) {
        rc = build_double_sided(&d, out);
    } else if (strcmp(ty, "explicit") == 0) {
        rc = build_explicit(&d, out);
    } else {
        tool_error(path, 1, "unknown cluster type \"%s\"", ty);
        rc = TOOL_INPUT;
    }
    if (rc != TOOL_OK)
        return rc;
    rc = load_host_pattern(&d, *out);
    if (rc == TOOL_OK)
        rc = load_symmetric(&d, *out);
    if (rc == TOOL_OK)
        rc = load_node_names(&d, *out);
    if (rc == TOOL_OK && table)
        rc = load_table(&d, table, levels);
    if (rc != TOOL_OK) {
        crux_sched_cluster_free(*out);
        *out = NULL;
    }
    return rc;
}

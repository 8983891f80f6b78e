/* What crux-sched plan and daemon write: the priority file (the fixed
 * format of crux_prio.h) and a report for people (text) or programs (JSON). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/crux_prio.h"
#include "sched/tool/crux_sched_tool.h"

/* "3,0,12": the path index of each flow, in the plan's flow order. */
static char *path_list(const crux_sched_plan_t *plan, int job, int max_items)
{
    int n = crux_sched_plan_flows(plan, job);
    size_t cap = (size_t)(n ? n : 1) * 21 + 32, len = 0;
    char *s = malloc(cap);
    if (s == NULL)
        return NULL;
    s[0] = '\0';
    for (int f = 0; f < n; f++) {
        crux_sched_flow_t fl;
        crux_sched_plan_flow(plan, job, f, &fl);
        if (max_items > 0 && f == max_items) {
            snprintf(s + len, cap - len, ",...(%d)", n);
            break;
        }
        len += (size_t)snprintf(s + len, cap - len, "%s%llu", f ? "," : "",
                                (unsigned long long)fl.path_index);
    }
    return s;
}

/* "h0>h4:1/2,h4>h0:1/2": the path of each flow between two hosts that has
 * more than one candidate, as SRC>DST:INDEX/COUNT (host names hold no ',',
 * '>' or ':'); NULL when there is none (or no memory: *oom set). */
static char *route_list(const crux_sched_plan_t *plan, int job, int *oom)
{
    const crux_sched_cluster_t *c = crux_sched_plan_cluster(plan);
    int n = crux_sched_plan_flows(plan, job);
    size_t cap = 64, len = 0;
    char *s = NULL;
    for (int f = 0; f < n; f++) {
        crux_sched_flow_t fl;
        crux_sched_host_info_t a, b;
        if (crux_sched_plan_flow(plan, job, f, &fl) != CRUX_OK || fl.path_count < 2 ||
            crux_sched_host_info(c, fl.src_host, &a) != CRUX_OK ||
            crux_sched_host_info(c, fl.dst_host, &b) != CRUX_OK)
            continue;
        size_t need = len + strlen(a.name) + strlen(b.name) + 48;
        if (s == NULL || need > cap) {
            while (cap < need)
                cap *= 2;
            char *t = realloc(s, cap);
            if (t == NULL) {
                free(s);
                *oom = 1;
                return NULL;
            }
            s = t;
        }
        len += (size_t)snprintf(s + len, cap - len, "%s%s>%s:%llu/%llu", len ? "," : "", a.name,
                                b.name, (unsigned long long)fl.path_index,
                                (unsigned long long)fl.path_count);
    }
    return s;
}

int tool_write_priorities(const crux_sched_plan_t *plan, const crux_sched_nettable_t *table,
                          int levels, int reserve, const int *uids, const char *out,
                          const char *comment)
{
    int n = crux_sched_plan_jobs(plan), rc = TOOL_RUNTIME;
    enum { NKV = 9 }; /* 6 figures, uid, paths, route */
    crux_prio_entry_t *e = calloc((size_t)(n ? n : 1), sizeof(*e));
    crux_prio_kv_t *kv = calloc((size_t)(n ? n : 1) * NKV, sizeof(*kv));
    char(*num)[7][32] = calloc((size_t)(n ? n : 1), sizeof(*num));
    char **paths = calloc((size_t)(n ? n : 1), sizeof(char *));
    char **routes = calloc((size_t)(n ? n : 1), sizeof(char *));
    int oom = 0;
    if (e == NULL || kv == NULL || num == NULL || paths == NULL || routes == NULL)
        goto out;
    for (int i = 0; i < n; i++) {
        crux_sched_job_result_t r;
        crux_sched_plan_job(plan, i, &r);
        const crux_sched_netclass_t *cls = &table->cls[r.level];
        snprintf(num[i][0], 32, "%.6g", r.intensity);
        snprintf(num[i][1], 32, "%.6g", r.priority);
        snprintf(num[i][2], 32, "%.6g", r.correction);
        snprintf(num[i][3], 32, "%d", cls->sl);
        snprintf(num[i][4], 32, "%d", cls->dscp << 2);
        snprintf(num[i][5], 32, "%d", cls->dscp);
        crux_prio_kv_t *k = &kv[(size_t)i * NKV];
        k[0] = (crux_prio_kv_t){ "intensity", num[i][0] };
        k[1] = (crux_prio_kv_t){ "priority", num[i][1] };
        k[2] = (crux_prio_kv_t){ "k", num[i][2] };
        k[3] = (crux_prio_kv_t){ "sl", num[i][3] };
        k[4] = (crux_prio_kv_t){ "tc", num[i][4] };
        k[5] = (crux_prio_kv_t){ "dscp", num[i][5] };
        int nkv = 6;
        if (uids != NULL && uids[i] >= 0) { /* the job's owner: no one else applies the line */
            snprintf(num[i][6], 32, "%d", uids[i]);
            k[nkv++] = (crux_prio_kv_t){ "uid", num[i][6] };
        }
        if (r.nflows > 0) {
            if ((paths[i] = path_list(plan, i, 0)) == NULL)
                goto out;
            k[nkv++] = (crux_prio_kv_t){ "paths", paths[i] };
            if ((routes[i] = route_list(plan, i, &oom)) != NULL)
                k[nkv++] = (crux_prio_kv_t){ "route", routes[i] };
            else if (oom)
                goto out;
        }
        e[i] = (crux_prio_entry_t){ r.id, r.level, nkv, k };
    }
    crux_prio_file_t file = { levels, n, e, NULL };
    char why[512], note[256];
    snprintf(note, sizeof(note), "%s\n%d jobs; levels %d..%d are reserved for other traffic",
             comment, n, levels - reserve, levels - 1);
    if (crux_prio_write(out, &file, reserve ? note : comment, why, sizeof(why)) != CRUX_OK) {
        tool_log("%s", why);
        goto out;
    }
    rc = TOOL_OK;
out:
    for (int i = 0; paths && i < n; i++)
        free(paths[i]);
    for (int i = 0; routes && i < n; i++)
        free(routes[i]);
    free(paths);
    free(routes);
    free(num);
    free(kv);
    free(e);
    return rc;
}

static json_object *report_json(const crux_sched_plan_t *plan, const crux_sched_cluster_t *c,
                                const crux_sched_nettable_t *table, int levels, int reserve)
{
    json_object *root = json_object_new_object(), *jobs = json_object_new_array();
    int n = crux_sched_plan_jobs(plan), ref = crux_sched_plan_reference(plan);
    double cut, total;
    crux_sched_plan_cut(plan, &cut, &total);
    json_object_object_add(root, "jobs_planned", json_object_new_int(n));
    json_object_object_add(root, "hosts", json_object_new_int(crux_sched_cluster_hosts(c)));
    json_object_object_add(root, "levels", json_object_new_int(levels));
    json_object_object_add(root, "reserved", json_object_new_int(reserve));
    json_object_object_add(root, "reference", NULL); /* set in the loop */
    json_object_object_add(root, "cut", json_object_new_double(cut));
    json_object_object_add(root, "contention", json_object_new_double(total));
    json_object_object_add(root, "path_cost",
                           json_object_new_double(crux_sched_plan_path_cost(plan)));
    for (int i = 0; i < n; i++) {
        crux_sched_job_result_t r;
        crux_sched_plan_job(plan, i, &r);
        if (i == ref)
            json_object_object_add(root, "reference", json_object_new_string(r.id));
        json_object *o = json_object_new_object(), *p = json_object_new_array();
        json_object_object_add(o, "id", json_object_new_string(r.id));
        json_object_object_add(o, "gpus", json_object_new_int(r.gpus));
        json_object_object_add(o, "hosts", json_object_new_int(r.hosts));
        json_object_object_add(o, "work", json_object_new_double(r.work));
        json_object_object_add(o, "comm_s", json_object_new_double(r.comm_s));
        json_object_object_add(o, "period_s", json_object_new_double(r.period_s));
        json_object_object_add(o, "intensity", json_object_new_double(r.intensity));
        json_object_object_add(o, "correction", json_object_new_double(r.correction));
        json_object_object_add(o, "priority", json_object_new_double(r.priority));
        json_object_object_add(o, "level", json_object_new_int(r.level));
        json_object_object_add(o, "sl", json_object_new_int(table->cls[r.level].sl));
        json_object_object_add(o, "dscp", json_object_new_int(table->cls[r.level].dscp));
        json_object_object_add(o, "bottleneck_util", json_object_new_double(r.bottleneck_util));
        for (int f = 0; f < r.nflows; f++) {
            crux_sched_flow_t fl;
            crux_sched_plan_flow(plan, i, f, &fl);
            json_object_array_add(p, json_object_new_int64((int64_t)fl.path_index));
        }
        json_object_object_add(o, "paths", p);
        json_object_array_add(jobs, o);
    }
    json_object_object_add(root, "jobs", jobs);
    return root;
}

int tool_write_report(const crux_sched_plan_t *plan, const crux_sched_cluster_t *c,
                      const crux_sched_nettable_t *table, int levels, int reserve, const char *out,
                      int json, const char *who)
{
    FILE *f = strcmp(out, "-") == 0 ? stdout : fopen(out, "w");
    if (f == NULL) {
        tool_error(out, 0, "cannot write the report: %s", strerror(errno));
        return TOOL_RUNTIME;
    }
    if (json) {
        json_object *root = report_json(plan, c, table, levels, reserve);
        fprintf(f, "%s\n",
                json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
    } else {
        int n = crux_sched_plan_jobs(plan), ref = crux_sched_plan_reference(plan);
        double cut, total;
        crux_sched_plan_cut(plan, &cut, &total);
        fprintf(f, "%s: %d jobs on %d hosts, %d levels (%d reserved)\n", who, n,
                crux_sched_cluster_hosts(c), levels, reserve);
        fprintf(f, "contention kept apart by the levels: %.6g of %.6g (%.1f%%)\n", cut, total,
                total > 0 ? 100.0 * cut / total : 100.0);
        fprintf(f, "%-24s %5s %5s %10s %10s %10s %8s %10s %5s %3s %4s %6s  %s\n", "job", "gpus",
                "hosts", "W", "t_s", "intensity", "k", "priority", "level", "sl", "dscp", "util",
                "paths");
        for (int i = 0; i < n; i++) {
            crux_sched_job_result_t r;
            crux_sched_plan_job(plan, i, &r);
            char *paths = path_list(plan, i, 8);
            fprintf(f, "%-24s %5d %5d %10.4g %10.4g %10.4g %8.4g %10.4g %5d %3d %4d %6.3f  %s%s\n",
                    r.id, r.gpus, r.hosts, r.work, r.comm_s, r.intensity, r.correction, r.priority,
                    r.level, table->cls[r.level].sl, table->cls[r.level].dscp, r.bottleneck_util,
                    r.nflows ? (paths ? paths : "?") : "-", i == ref ? "  (reference)" : "");
            free(paths);
        }
    }
    if (f != stdout && fclose(f) != 0) {
        tool_error(out, 0, "cannot write the report");
        return TOOL_RUNTIME;
    }
    if (f == stdout)
        fflush(stdout);
    return TOOL_OK;
}

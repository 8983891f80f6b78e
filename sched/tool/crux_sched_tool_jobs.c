/* Jobs in JSON (one object per job) for crux-sched plan and daemon:
 *   {"id": "j1", "placement": [{"host": "h0", "gpus": [0,1]}, {"host": "h1"}],
 *    "compute_s": 0.3, "work": 2.4, "overlap": 0.5, "allreduce_bytes": 1e9,
 *    "flows": [{"src": "h0", "src_nic": 0, "dst": "h1", "dst_nic": 0, "bytes": 1e8}],
 *    "model": "bert", "name": "train", "account": "a", "user": "u", "uid": 1000}
 * ("model", "name", "account" and "user" are informational; "uid", the
 * job's owner, is who may write the job's profile: crux-sched daemon
 * --profiles) */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sched/crux_prio.h"
#include "sched/runtime/crux_prio_util.h"
#include "sched/tool/crux_sched_tool.h"

void tool_job_free(tool_job_t *j)
{
    free(j->place);
    free(j->flows);
    memset(j, 0, sizeof(*j));
}

static int parse_placement(json_object *arr, const crux_sched_cluster_t *c, tool_job_t *j,
                           char *err, size_t errlen)
{
    if (!json_object_is_type(arr, json_type_array) || json_object_array_length(arr) == 0) {
        crux_errf(err, errlen, "\"placement\" must be a non-empty array");
        return -1;
    }
    int n = (int)json_object_array_length(arr);
    j->place = calloc((size_t)n, sizeof(*j->place));
    if (j->place == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, (size_t)i), *gpus = NULL;
        const char *host = NULL;
        if (json_object_is_type(e, json_type_string)) {
            host = json_object_get_string(e); /* "h0": all of its GPUs */
        } else if (json_object_is_type(e, json_type_object)) {
            json_object_object_foreach(e, key, val)
            {
                if (strcmp(key, "host") == 0 && json_object_is_type(val, json_type_string))
                    host = json_object_get_string(val);
                else if (strcmp(key, "gpus") == 0 && json_object_is_type(val, json_type_array))
                    gpus = val;
                else {
                    crux_errf(err, errlen, "placement %d: unexpected \"%s\"", i, key);
                    return -1;
                }
            }
        }
        int h = crux_sched_cluster_find_host(c, host);
        if (h < 0) {
            crux_errf(err, errlen, "placement %d: unknown host \"%s\"", i, host ? host : "");
            return -1;
        }
        j->place[i].host = h;
        for (size_t g = 0; gpus && g < json_object_array_length(gpus); g++) {
            json_object *v = json_object_array_get_idx(gpus, g);
            int64_t x = json_object_get_int64(v);
            if (!json_object_is_type(v, json_type_int) || x < 0 || x >= CRUX_SCHED_MAX_GPUS ||
                (j->place[i].gpus >> x) & 1) {
                crux_errf(err, errlen, "placement %d: GPUs must be distinct integers 0..63", i);
                return -1;
            }
            j->place[i].gpus |= 1ULL << x;
        }
        if (gpus && j->place[i].gpus == 0) {
            crux_errf(err, errlen, "placement %d: empty GPU list", i);
            return -1;
        }
    }
    j->job.placement = j->place;
    j->job.nplacement = n;
    return 0;
}

static int parse_flows(json_object *arr, const crux_sched_cluster_t *c, tool_job_t *j, char *err,
                       size_t errlen)
{
    if (!json_object_is_type(arr, json_type_array)) {
        crux_errf(err, errlen, "\"flows\" must be an array");
        return -1;
    }
    int n = (int)json_object_array_length(arr);
    j->flows = calloc((size_t)(n ? n : 1), sizeof(*j->flows));
    if (j->flows == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        const char *src = NULL, *dst = NULL;
        crux_sched_flow_spec_t *f = &j->flows[i];
        char why[256];
        tool_field_t fl[] = {
            { "src", F_STRING, &src, NULL },         { "dst", F_STRING, &dst, NULL },
            { "src_nic", F_INT, &f->src_nic, NULL }, { "dst_nic", F_INT, &f->dst_nic, NULL },
            { "bytes", F_DOUBLE, &f->bytes, NULL },
        };
        if (tool_fields(json_object_array_get_idx(arr, (size_t)i), fl, 5, NULL, why, sizeof(why)) !=
            0) {
            crux_errf(err, errlen, "flow %d: %s", i, why);
            return -1;
        }
        f->src_host = crux_sched_cluster_find_host(c, src);
        f->dst_host = crux_sched_cluster_find_host(c, dst);
        if (f->src_host < 0 || f->dst_host < 0) {
            crux_errf(err, errlen, "flow %d: unknown host \"%s\"", i,
                      f->src_host < 0 ? (src ? src : "")
                      : dst           ? dst
                                      : "");
            return -1;
        }
    }
    j->job.flows = j->flows;
    j->job.nflows = n;
    return 0;
}

int tool_job_parse(json_object *obj, const crux_sched_cluster_t *c, int partial, tool_job_t *j,
                   char *err, size_t errlen)
{
    memset(j, 0, sizeof(*j));
    if (!json_object_is_type(obj, json_type_object)) {
        crux_errf(err, errlen, "a job must be an object");
        return -1;
    }
    json_object *place = NULL, *flows = NULL, *id = NULL;
    json_object_object_get_ex(obj, "placement", &place);
    json_object_object_get_ex(obj, "flows", &flows);
    json_object_object_get_ex(obj, "id", &id);
    static const char *const skip[] = { "placement", "flows",   "id",   "model",
                                        "name",      "account", "user", NULL };
    tool_field_t f[] = {
        { "compute_s", F_DOUBLE, &j->job.compute_s, &j->has_compute },
        { "work", F_DOUBLE, &j->job.work, NULL },
        { "overlap", F_DOUBLE, &j->job.overlap, &j->has_overlap },
        { "allreduce_bytes", F_DOUBLE, &j->job.allreduce_bytes, &j->has_bytes },
        { "uid", F_INT, &j->uid, &j->has_uid },
    };
    if (tool_fields(obj, f, 5, skip, err, errlen) != 0)
        return -1;
    if (j->has_uid && j->uid < 0) {
        crux_errf(err, errlen, "\"uid\" must be at least 0");
        return -1;
    }
    if (id && json_object_is_type(id, json_type_int)) {
        /* json-c saturates integers out of range: refuse them, not round */
        errno = 0;
        int64_t v = json_object_get_int64(id);
        if (errno != 0 || v < 0 || v == INT64_MAX) {
            crux_errf(err, errlen, "integer job id out of range 0..%" PRId64 " (use a string)",
                      INT64_MAX - 1);
            return -1;
        }
        snprintf(j->id, sizeof(j->id), "%" PRId64, v);
    } else if (id && json_object_is_type(id, json_type_string)) {
        const char *s = json_object_get_string(id);
        size_t n = (size_t)json_object_get_string_len(id);
        if (strlen(s) != n) {
            crux_errf(err, errlen, "job id has a NUL byte");
            return -1;
        }
        if (n >= sizeof(j->id)) {
            crux_errf(err, errlen, "job id of %zu bytes, longer than %zu", n, sizeof(j->id) - 1);
            return -1;
        }
        memcpy(j->id, s, n + 1);
    } else if (id || !partial) {
        crux_errf(err, errlen, "needs \"id\" (a string or an integer)");
        return -1;
    }
    j->job.id = j->id;
    if (j->id[0] && !crux_prio_token_ok(j->id)) {
        crux_errf(err, errlen, "job id \"%s\" has blanks or '#'", j->id);
        return -1;
    }
    if (place == NULL) {
        if (!partial) {
            crux_errf(err, errlen, "job %s: needs \"placement\"", j->id);
            return -1;
        }
    } else if (parse_placement(place, c, j, err, errlen) != 0) {
        return -1;
    }
    if (flows && parse_flows(flows, c, j, err, errlen) != 0)
        return -1;
    if (!partial && !j->has_compute) {
        crux_errf(err, errlen, "job %s: needs \"compute_s\"", j->id);
        return -1;
    }
    return 0;
}

int tool_jobs_from_doc(const tool_doc_t *d, const crux_sched_cluster_t *c, crux_sched_plan_t *plan)
{
    const char *path = d->path;
    int rc = TOOL_OK;
    json_object *arr = NULL;
    json_object_object_foreach(d->root, key, val)
    {
        (void)val;
        if (rc == TOOL_OK && strcmp(key, "jobs") != 0 && strcmp(key, "generator") != 0) {
            /* the first one only: one line, as for every other error */
            tool_error(path, 1, "unknown key \"%s\" (expected \"jobs\")", key);
            rc = TOOL_INPUT;
        }
    }
    if (rc == TOOL_OK && (!json_object_object_get_ex(d->root, "jobs", &arr) ||
                          !json_object_is_type(arr, json_type_array))) {
        tool_error(path, 1, "needs the array \"jobs\"");
        rc = TOOL_INPUT;
    }
    for (size_t i = 0; rc == TOOL_OK && i < json_object_array_length(arr); i++) {
        tool_job_t j;
        char err[512];
        if (tool_job_parse(json_object_array_get_idx(arr, i), c, 0, &j, err, sizeof(err)) != 0 ||
            crux_sched_plan_add_job(plan, &j.job, NULL, err, sizeof(err)) != CRUX_OK) {
            /* by its place in the array unless the message names the job */
            char named[300];
            snprintf(named, sizeof(named), "job %s: ", j.id);
            int line = tool_doc_line(d, "jobs", (int)i);
            if (j.id[0] && strncmp(err, named, strlen(named)) == 0)
                tool_error(path, line, "%s", err);
            else
                tool_error(path, line, "job %zu: %s", i, err);
            rc = TOOL_INPUT;
        }
        tool_job_free(&j);
    }
    return rc;
}

/* crux-sched's jobs file and spool jobs (JSON), as plan and daemon read
 * them, on a small fixed cluster; the jobs accepted are then planned. */
#include <stdlib.h>
#include <string.h>

#include "sched/tool/crux_sched_tool.h"
#include "tests/fuzz/fuzz.h"

static const char cluster_json[] =
    "{\"type\": \"clos2\", \"tors\": 2, \"aggs\": 2, \"hosts_per_tor\": 2, \"gpus_per_host\": 8,"
    " \"gpus_per_nic\": 2}";

static const crux_sched_cluster_t *cluster(void)
{
    static crux_sched_cluster_t *c;
    if (c == NULL) {
        tool_doc_t d;
        if (tool_doc_parse(&d, "cluster.json", cluster_json, strlen(cluster_json)) != TOOL_OK ||
            tool_cluster_from_doc(&d, &c, NULL, 8) != TOOL_OK) {
            abort();
        }
        tool_doc_free(&d);
    }
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const crux_sched_cluster_t *c = cluster();
    tool_doc_t d;
    if (tool_doc_parse(&d, "fuzz.json", (const char *)data, size) != TOOL_OK) {
        tool_doc_free(&d);
        return 0;
    }
    /* each element as the daemon reads a spool job (figures optional) */
    json_object *arr;
    if (json_object_object_get_ex(d.root, "jobs", &arr) &&
        json_object_is_type(arr, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(arr) && i < 64; i++) {
            tool_job_t j;
            char err[512];
            tool_job_parse(json_object_array_get_idx(arr, i), c, 1, &j, err, sizeof(err));
            tool_job_free(&j);
        }
    }
    /* the whole file as plan reads it, then planned */
    crux_sched_plan_t *plan = crux_sched_plan_new(c);
    if (plan == NULL) {
        abort();
    }
    if (tool_jobs_from_doc(&d, c, plan) == TOOL_OK && crux_sched_plan_jobs(plan) > 0) {
        crux_sched_options_t o;
        crux_sched_options_defaults(&o);
        o.levels = 4;
        o.orders = 2;
        crux_sched_plan_run(plan, &o);
    }
    crux_sched_plan_free(plan);
    tool_doc_free(&d);
    return 0;
}

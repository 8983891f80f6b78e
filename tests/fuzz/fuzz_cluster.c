/* crux-sched's cluster file (JSON: builders, an explicit list, the level
 * table), as crux_sched_cluster_load reads it.  Lingjun clusters name a CSV file
 * to read, which fuzz_lingjun covers; they are skipped here. */
#include <stdlib.h>
#include <string.h>

#include "sched/tool/crux_sched_tool.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tool_doc_t d;
    if (tool_doc_parse(&d, "fuzz.json", (const char *)data, size) == TOOL_OK) {
        json_object *csv;
        if (!json_object_object_get_ex(d.root, "topo_csv", &csv)) {
            crux_sched_cluster_t *c = NULL;
            crux_sched_nettable_t table;
            if (tool_cluster_from_doc(&d, &c, &table, 8) == TOOL_OK) {
                if (c == NULL || crux_sched_nettable_check(&table) != CRUX_OK) {
                    abort();
                }
                crux_sched_cluster_free(c);
            }
        }
    }
    tool_doc_free(&d);
    return 0;
}

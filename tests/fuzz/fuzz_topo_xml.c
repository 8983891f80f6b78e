/* The topology from an hwloc XML export (crux-topo --input, libcrux_topo):
 * crux's own checks, hwloc's parser, the NVLink matrix, then the model's
 * paths, islands, groups and its JSON and dot output. */
#include <stdio.h>
#include <stdlib.h>

#include "topo/crux_topo.h"
#include "tests/fuzz/fuzz.h"

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    crux_topo_options_t o;
    crux_topo_options_init(&o);
    o.xml_path = fuzz_input_file(data, size, ".xml");
    o.smp_gbps = 20;
    o.warn = quiet;
    crux_topo_t *t = NULL;
    char err[512] = "";
    if (crux_topo_load(&o, &t, err, sizeof(err)) != CRUX_OK) {
        if (t != NULL || err[0] == '\0') {
            abort();
        }
        return 0;
    }
    char *json = crux_topo_to_json(t);
    free(json);
    FILE *null = fopen("/dev/null", "w");
    if (null != NULL) {
        crux_topo_write_dot(t, null);
        fclose(null);
    }
    (void)crux_topo_host_group_of_cpus(t, "0-3");
    crux_topo_free(t);
    return 0;
}

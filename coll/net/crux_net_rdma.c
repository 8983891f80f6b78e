/* Whether UCX has an RDMA transport here (crux_net.h): a memory domain of
 * its InfiniBand/RoCE component ("ib", verbs devices) or of its RDMA
 * connection manager ("rdmacm").  The component modules are present in
 * Debian's UCX even on a host without any such device; only a device makes
 * a memory domain resource. */
#include <stdio.h>
#include <string.h>

#include <uct/api/uct.h>

#include "coll/crux_net.h"

int crux_net_rdma_available(char *why, size_t len)
{
    uct_component_h *components;
    unsigned count;
    if (uct_query_components(&components, &count) != UCS_OK) {
        snprintf(why, len, "UCX lists no transport components");
        return 0;
    }
    int found = 0;
    int modules = 0;
    for (unsigned i = 0; i < count && !found; i++) {
        uct_component_attr_t attr = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                                                    UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT };
        if (uct_component_query(components[i], &attr) != UCS_OK ||
            (strcmp(attr.name, "ib") != 0 && strcmp(attr.name, "rdmacm") != 0)) {
            continue;
        }
        modules++;
        if (attr.md_resource_count > 0) {
            found = 1;
            snprintf(why, len, "UCX component %s has %u device(s)", attr.name,
                     attr.md_resource_count);
        }
    }
    uct_release_component_list(components);
    if (!found) {
        snprintf(why, len, modules ? "UCX has no RDMA device" : "UCX has no RDMA transport");
    }
    return found;
}

/* What marking a channel with a level did (crux_net.h): the outcome of
 * crux_net_set_level as plain data, for the caller to say. */
#include "coll/crux_net.h"

crux_net_marking_t crux_net_mark(crux_net_t *net, const crux_net_level_t *level)
{
    crux_net_marking_t m = { .outcome = CRUX_NET_MARK_SAME, .status = CRUX_OK };
    int rc = net != NULL ? crux_net_set_level(net, level) : 0;
    if (rc == 0) {
        return m;
    }
    m.status = rc < 0 ? (crux_status_t)rc : CRUX_OK;
    if (crux_net_kind(net) == CRUX_NET_TCP) {
        /* the TOS is set even when the socket priority is refused */
        m.outcome = CRUX_NET_MARK_TCP;
        m.tos = crux_net_tos(level);
        m.priority = crux_net_socket_priority(level);
    } else if (rc < 0) {
        m.outcome = CRUX_NET_MARK_UCX_KEPT;
    } else if (crux_net_ucx_context(net, &m.context, &m.contexts, &m.sl, &m.traffic_class) ==
               CRUX_OK) {
        m.outcome = CRUX_NET_MARK_UCX;
    }
    return m;
}

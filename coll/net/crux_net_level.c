/* A level's marks on the wire and the choice of channel (crux_net.h). */
#include "coll/crux_net.h"

const char *crux_net_kind_name(crux_net_kind_t kind)
{
    switch (kind) {
    case CRUX_NET_AUTO: return "auto";
    case CRUX_NET_RDMA: return "rdma";
    case CRUX_NET_TCP: return "tcp";
    case CRUX_NET_PML: return "pml";
    case CRUX_NET_UCX: return "ucx";
    case CRUX_NET_NONE: return "none";
    }
    return "?";
}

int crux_net_tos(const crux_net_level_t *level)
{
    if (level == NULL) {
        return 0;
    }
    if (level->dscp >= 0 && level->dscp <= 63) {
        return level->dscp << 2;
    }
    if (level->tc >= 0 && level->tc <= 255) {
        return level->tc & 0xfc; /* the low two bits are ECN's, not ours to set */
    }
    return 0;
}

int crux_net_socket_priority(const crux_net_level_t *level)
{
    return crux_net_tos(level) >> 5;
}

void crux_net_rdma_marks(const crux_net_level_t *level, int *sl, int *traffic_class)
{
    *sl = 0;
    *traffic_class = 0;
    if (level == NULL) {
        return;
    }
    if (level->sl >= 0 && level->sl <= 15) {
        *sl = level->sl;
    } else if (level->dscp >= 0 && level->dscp <= 63) {
        *sl = level->dscp >> 3;
    }
    if (level->tc >= 0 && level->tc <= 255) {
        *traffic_class = level->tc;
    } else if (level->dscp >= 0 && level->dscp <= 63) {
        *traffic_class = level->dscp << 2;
    }
}

crux_net_kind_t crux_net_choose(crux_net_kind_t asked, int rdma, int tcp)
{
    /* what is asked and missing falls back down the same order */
    if (asked == CRUX_NET_PML || asked == CRUX_NET_UCX) {
        return asked;
    }
    if ((asked == CRUX_NET_AUTO || asked == CRUX_NET_RDMA) && rdma) {
        return CRUX_NET_RDMA;
    }
    return tcp ? CRUX_NET_TCP : CRUX_NET_PML;
}

#include "common/crux_status.h"

const char *crux_status_string(crux_status_t status)
{
    switch (status) {
    case CRUX_OK: return "success";
    case CRUX_INPROGRESS: return "in progress";
    case CRUX_ERR_INVALID: return "invalid argument or input";
    case CRUX_ERR_NO_MEMORY: return "out of memory";
    case CRUX_ERR_NO_RESOURCE: return "resource unavailable";
    case CRUX_ERR_IO: return "input/output error";
    case CRUX_ERR_UNSUPPORTED: return "unsupported";
    case CRUX_ERR_NOT_FOUND: return "not found";
    case CRUX_ERR_PEER: return "peer failure";
    case CRUX_ERR_TIMEOUT: return "timed out";
    }
    return "unknown status";
}

/* crux status codes, shared by every crux library (as ucs_status_t is in UCX).
 * Functions that can fail return crux_status_t; CRUX_OK is 0, errors are
 * negative. */
#ifndef CRUX_STATUS_H
#define CRUX_STATUS_H

typedef enum {
    CRUX_OK = 0,
    CRUX_INPROGRESS = 1,   /* not an error: started, not finished */
    CRUX_ERR_INVALID = -1, /* bad argument or malformed input */
    CRUX_ERR_NO_MEMORY = -2,
    CRUX_ERR_NO_RESOURCE = -3, /* a transport, device or segment is unavailable */
    CRUX_ERR_IO = -4,          /* a system call or transport operation failed */
    CRUX_ERR_UNSUPPORTED = -5, /* valid, but not handled here: the caller falls back */
    CRUX_ERR_NOT_FOUND = -6,
    CRUX_ERR_PEER = -7, /* a peer failed or went away */
    CRUX_ERR_TIMEOUT = -8,
} crux_status_t;

/* A short constant description, e.g. "unsupported". */
const char *crux_status_string(crux_status_t status);

#endif

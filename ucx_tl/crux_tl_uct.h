/* libcrux_tl, first half: the UCT wrapper, built on UCX's public UCT API.
 *
 * A context opens, for one process, the UCT pieces crux moves host data with:
 *   - the "cma" transport: single-copy get/put straight into a peer's user
 *     buffer (process_vm_readv/writev underneath); an endpoint per peer,
 *     connected from the peer's packed context address;
 *   - a shared-memory memory domain ("posix", else "sysv"): segments that a
 *     process allocates and its peers map into their own address space
 *     through the packed segment key (UCT's rkey_ptr), for staging and for
 *     the flags collectives synchronise with.
 * Addresses and keys are packed into flat byte strings so the caller can
 * exchange them once (e.g. with an allgather) and cache what it unpacks.
 * Beside them, the memory query: host or CUDA device memory.
 *
 * A context, and everything made from it, is used by one thread at a time.
 * Include "ucx_tl/crux_tl.h", the library's public header, which includes
 * this one and the multipath transport (crux_tl_multipath.h).
 */
#ifndef CRUX_TL_UCT_H
#define CRUX_TL_UCT_H

#include <stddef.h>
#include <stdint.h>

#include "common/crux_status.h"

typedef struct crux_tl_context crux_tl_context_t;
typedef struct crux_tl_ep crux_tl_ep_t;     /* a cma endpoint to one peer */
typedef struct crux_tl_seg crux_tl_seg_t;   /* a segment this process owns */
typedef struct crux_tl_rseg crux_tl_rseg_t; /* a peer's segment, mapped here */

typedef struct {
    /* Comma-separated UCT memory domains tried in order for segments. */
    const char *shm_mds;
    /* Open the cma transport (0: segments only). */
    int use_cma;
    /* The job's network settings from the scheduler's priority level (-1:
     * unset): set on every interface crux opens whose transport has them
     * (UCT's "SL" and "TRAFFIC_CLASS", as on InfiniBand and RoCE); the
     * intranode transports have none. */
    int service_level;
    int traffic_class;
} crux_tl_config_t;

#define CRUX_TL_CONFIG_DEFAULT                                                          \
    {                                                                                   \
        .shm_mds = "posix,sysv", .use_cma = 1, .service_level = -1, .traffic_class = -1 \
    }

/* Open a context.  Fails with CRUX_ERR_NO_RESOURCE when none of the shared
 * memory domains can be opened, or when use_cma is set and cma is missing or
 * not usable (e.g. no ptrace permission between processes). */
crux_status_t crux_tl_context_open(const crux_tl_config_t *config, crux_tl_context_t **context_p);
void crux_tl_context_close(crux_tl_context_t *context);

/* Name of the memory domain segments come from ("posix" or "sysv"). */
const char *crux_tl_context_shm_name(const crux_tl_context_t *context);

/* This process's address: what a peer needs to connect a cma endpoint.
 * Every context opened with the same configuration packs the same size. */
size_t crux_tl_address_size(const crux_tl_context_t *context);
crux_status_t crux_tl_address_pack(const crux_tl_context_t *context, void *buffer);

/* --- cma endpoints: single-copy access to a peer's memory ------------------ */

crux_status_t crux_tl_ep_create(crux_tl_context_t *context, const void *peer_address,
                                crux_tl_ep_t **ep_p);
void crux_tl_ep_destroy(crux_tl_ep_t *ep);

/* Completion of a nonblocking operation: 'pending' counts operations not yet
 * finished, 'status' holds the first error. */
typedef struct {
    unsigned pending;
    crux_status_t status;
} crux_tl_completion_t;

/* Start copying 'length' bytes from address 'remote' in the peer to 'local'
 * (get) or from 'local' to 'remote' in the peer (put).  'completion->pending'
 * is incremented, and decremented when the copy is done; drive it with
 * crux_tl_progress().  A zero length completes at once. */
crux_status_t crux_tl_get_nb(crux_tl_ep_t *ep, void *local, uint64_t remote, size_t length,
                             crux_tl_completion_t *completion);
crux_status_t crux_tl_put_nb(crux_tl_ep_t *ep, const void *local, uint64_t remote, size_t length,
                             crux_tl_completion_t *completion);

/* Make progress on outstanding operations; returns how many advanced. */
unsigned crux_tl_progress(crux_tl_context_t *context);

/* Blocking forms: start, then progress until done. */
crux_status_t crux_tl_get(crux_tl_ep_t *ep, void *local, uint64_t remote, size_t length);
crux_status_t crux_tl_put(crux_tl_ep_t *ep, const void *local, uint64_t remote, size_t length);

/* --- shared segments ------------------------------------------------------- */

crux_status_t crux_tl_seg_alloc(crux_tl_context_t *context, size_t length, crux_tl_seg_t **seg_p);
void crux_tl_seg_free(crux_tl_seg_t *seg);
void *crux_tl_seg_ptr(const crux_tl_seg_t *seg);
size_t crux_tl_seg_length(const crux_tl_seg_t *seg);

/* The key a peer maps the segment with.  Every context opened with the same
 * configuration packs keys of the same size. */
size_t crux_tl_seg_key_size(const crux_tl_context_t *context);
crux_status_t crux_tl_seg_key_pack(const crux_tl_seg_t *seg, void *buffer);

/* Map a peer's segment.  The owner must be alive while this runs; the mapping
 * stays valid until detached, whatever happens to the owner. */
crux_status_t crux_tl_rseg_attach(crux_tl_context_t *context, const void *key,
                                  crux_tl_rseg_t **rseg_p);
void crux_tl_rseg_detach(crux_tl_rseg_t *rseg);
void *crux_tl_rseg_ptr(const crux_tl_rseg_t *rseg);
/* The segment's length, as its owner's key says. */
size_t crux_tl_rseg_length(const crux_tl_rseg_t *rseg);

/* --- memory types ---------------------------------------------------------- */

typedef enum {
    CRUX_TL_MEM_HOST, /* host memory, including CUDA managed and registered memory */
    CRUX_TL_MEM_CUDA, /* CUDA device memory */
} crux_tl_mem_type_t;

typedef struct {
    crux_tl_mem_type_t type;
    int device; /* CUDA device ordinal of device memory, else -1 */
} crux_tl_mem_t;

/* What 'ptr' points to, from the CUDA driver's pointer attributes.  Without
 * a CUDA build, a driver (libcuda.so.1 is loaded at run time) or a GPU, every
 * pointer is host memory. */
crux_tl_mem_t crux_tl_mem_query(const void *ptr);

/* CUDA devices this process can use: 0 without a CUDA build, driver or GPU. */
int crux_tl_cuda_devices(void);

#endif

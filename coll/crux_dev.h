/* libcrux_coll's device memory: what crux does with CUDA device buffers,
 * apart from the algorithms that move them (as UCC keeps its memory and
 * execution components apart from its collectives).  crux_coll.h is the
 * library's API for collectives; this header is its API for device memory,
 * which the Open MPI component needs on its own, since Debian's Open MPI is
 * not CUDA-aware and must never see a device pointer:
 *   - detection: is a pointer device memory (CUDA pointer attributes);
 *   - reduction kernels on device buffers for the (dtype, op) pairs of
 *     crux_reduce.h that a GPU handles (sum, prod, min, max and the logical
 *     and bitwise ops on integers; sum, prod, min, max on float16,
 *     bfloat16, float and double), bit for bit what the CPU kernels give;
 *   - pinned host buffers and copies, for user-defined ops and the pairs
 *     without a kernel.
 * The engine group's Allreduce (crux_coll.h) moves device buffers between
 * processes with these kernels.
 *
 * The CUDA driver is loaded at run time: without it, or without a GPU,
 * every pointer is host memory and the device calls report
 * CRUX_ERR_UNSUPPORTED. */
#ifndef CRUX_DEV_H
#define CRUX_DEV_H

#include <stddef.h>

#include "common/crux_status.h"
#include "coll/crux_reduce.h"

/* --- detection -------------------------------------------------------------- */

/* 1 when 'ptr' is CUDA device memory (not managed memory), else 0. */
int crux_dev_is_device(const void *ptr);
/* Managed (unified) memory takes the host path: its legacy IPC export is
 * refused, and the host reads it in place.  Before the host reads 'ptr',
 * when it is managed memory, wait for the work the application queued on
 * the legacy and per-thread default streams of its device (a kernel still
 * writing it); CRUX_OK at once for other memory. */
crux_status_t crux_dev_host_ready(const void *ptr);
/* CUDA devices usable by this process; 0 without a driver or GPU. */
int crux_dev_count(void);

/* --- a call's buffers ------------------------------------------------------------ */

/* 1 while no buffer of this process can be device memory (no CUDA build,
 * driver or device): then no pointer needs a look.  Asked again on every
 * call while so, since the application may load the driver after crux set
 * up (cuInit inside MPI_Init would pick the visible devices before a
 * script sets CUDA_VISIBLE_DEVICES, so crux never loads it); once a device
 * is seen it stays seen. */
int crux_dev_absent(void);
/* 1 when either buffer of a call ('sbuf' NULL: in place) is device memory:
 * every member must pass the same kind, since the device and host paths
 * are different collectives. */
int crux_dev_call_is_device(const void *sbuf, const void *rbuf);
/* crux_dev_host_ready for a call's host buffers ('sbuf' NULL: in place). */
crux_status_t crux_dev_call_host_ready(const void *sbuf, const void *rbuf);
/* A caller's last pair of buffers found in host memory while no device was
 * there: crux_dev_host_pair answers 1 for the same pair without asking
 * again (asking looks at the dynamic loader under its lock, a tenth of a
 * small call), else as crux_dev_absent, noting the pair when absent.  A
 * pair found in host memory stays there while mapped, and the driver takes
 * no address the process still maps; only a buffer unmapped, then handed
 * out again at the same address by a driver loaded since, would be taken
 * for host memory. */
typedef struct {
    const void *sbuf, *rbuf;
} crux_dev_host_pair_t;
int crux_dev_host_pair(crux_dev_host_pair_t *pair, const void *sbuf, const void *rbuf);

/* --- reduction kernels -------------------------------------------------------- */

/* 1 when (dtype, op) has a device kernel. */
int crux_dev_reduce_supported(crux_dtype_t dtype, crux_op_t op);

/* out[i] = a[i] op b[i] on the device that holds 'out' (out may be a or b);
 * returns once done.  CRUX_ERR_UNSUPPORTED without a kernel or a GPU. */
crux_status_t crux_dev_reduce(void *out, const void *a, const void *b, size_t count,
                              crux_dtype_t dtype, crux_op_t op);

/* --- pinned buffers and copies ------------------------------------------------- */

/* Pinned host buffers kept for reuse (plain host memory without a driver). */
typedef struct crux_dev_pinned crux_dev_pinned_t;

crux_status_t crux_dev_pinned_create(crux_dev_pinned_t **pin_p);
void crux_dev_pinned_destroy(crux_dev_pinned_t *pin);
/* Host buffer number 'slot' (0 or 1) of at least 'bytes', grown as needed;
 * valid until the next call for the same slot or destroy.  NULL when out of
 * memory. */
void *crux_dev_pinned_buffer(crux_dev_pinned_t *pin, unsigned slot, size_t bytes);

/* Copy between any two of host and device memory; returns once done. */
crux_status_t crux_dev_copy(void *dst, const void *src, size_t bytes);

#endif

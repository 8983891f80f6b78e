/* Internal to libcrux_coll: device memory and asynchronous device work for
 * the engine group's Allreduce (a stream and a ring of events on one
 * device). */
#ifndef CRUX_DEV_INTERNAL_H
#define CRUX_DEV_INTERNAL_H

#include "coll/crux_dev.h"

typedef struct crux_dev_queue crux_dev_queue_t;

/* A non-blocking stream on 'device' with 'marks' events to tell its work
 * apart; CRUX_ERR_UNSUPPORTED without CUDA. */
crux_status_t crux_dev_queue_create(int device, unsigned marks, crux_dev_queue_t **queue_p);
void crux_dev_queue_destroy(crux_dev_queue_t *queue);
/* Enqueue out = a op b (device pointers on the queue's device). */
crux_status_t crux_dev_queue_reduce(crux_dev_queue_t *queue, void *out, const void *a,
                                    const void *b, size_t count, crux_dtype_t dtype, crux_op_t op);
/* Enqueue a device to device copy. */
crux_status_t crux_dev_queue_copy(crux_dev_queue_t *queue, void *dst, const void *src,
                                  size_t bytes);
/* Later work of the queue waits for a CUDA event (a CUevent) on the GPU. */
crux_status_t crux_dev_queue_wait(crux_dev_queue_t *queue, void *event);
/* Mark the work enqueued so far with event 'mark'. */
crux_status_t crux_dev_queue_mark(crux_dev_queue_t *queue, unsigned mark);
/* 1 when the work up to 'mark' is done, 0 if not yet, an error status. */
int crux_dev_queue_done(crux_dev_queue_t *queue, unsigned mark);

/* Device memory on 'device' (crux_dev_free to release). */
crux_status_t crux_dev_alloc(int device, size_t bytes, void **ptr_p);
void crux_dev_free(int device, void *ptr);

/* 1 when the driver exports the allocation 'ptr' is in (legacy CUDA IPC;
 * not stream-ordered or VMM memory). */
int crux_dev_exportable(const void *ptr);

#endif

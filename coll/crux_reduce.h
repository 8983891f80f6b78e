/* Reduction kernels of libcrux_coll: element types and operations, kept
 * apart from the algorithms (as UCC keeps its execution components apart) so
 * each algorithm is written once for every type.  Part of crux_coll.h's API. */
#ifndef CRUX_REDUCE_H
#define CRUX_REDUCE_H

#include <stddef.h>

typedef enum {
    CRUX_DT_INT8,
    CRUX_DT_UINT8,
    CRUX_DT_INT16,
    CRUX_DT_UINT16,
    CRUX_DT_INT32,
    CRUX_DT_UINT32,
    CRUX_DT_INT64,
    CRUX_DT_UINT64,
    CRUX_DT_FLOAT16, /* IEEE binary16 */
    CRUX_DT_BFLOAT16,
    CRUX_DT_FLOAT,
    CRUX_DT_DOUBLE,
    CRUX_DT_LONG_DOUBLE,
    CRUX_DT_COMPLEX_FLOAT,
    CRUX_DT_COMPLEX_DOUBLE,
    CRUX_DT_COMPLEX_LONG_DOUBLE,
    CRUX_DT_BOOL,      /* C _Bool */
    CRUX_DT_LOGICAL32, /* a 4-byte logical (Fortran LOGICAL): zero is false */
    CRUX_DT_COUNT
} crux_dtype_t;

typedef enum {
    CRUX_OP_SUM,
    CRUX_OP_PROD,
    CRUX_OP_MAX,
    CRUX_OP_MIN,
    CRUX_OP_LAND,
    CRUX_OP_LOR,
    CRUX_OP_LXOR,
    CRUX_OP_BAND,
    CRUX_OP_BOR,
    CRUX_OP_BXOR,
    CRUX_OP_COUNT
} crux_op_t;

/* out[i] = a[i] op b[i] for i < count; 'out' may be 'a' or 'b'. */
typedef void (*crux_reduce_fn_t)(void *out, const void *a, const void *b, size_t count);

/* The kernel for (dtype, op), or NULL when the pair has none (e.g. bitwise
 * ops on floating point, MAX on complex). */
crux_reduce_fn_t crux_reduce_lookup(crux_dtype_t dtype, crux_op_t op);

size_t crux_dtype_size(crux_dtype_t dtype);
const char *crux_dtype_name(crux_dtype_t dtype);
const char *crux_op_name(crux_op_t op);

#endif

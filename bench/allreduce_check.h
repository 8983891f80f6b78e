/* crux-bench-allreduce's datatypes, operations and result check, without
 * MPI: what each rank puts in its send buffer, the exact result every
 * element must have after the Allreduce, and how many elements differ.
 *
 * Inputs are small integers (signed and floating-point types also get
 * negative ones; products use 1, 2 and -1), so every partial result of a
 * floating-point sum or product is exact whatever order a library reduces
 * in: the expected value is exact, and any difference is a wrong element.
 * Integer sums and products wrap as MPI computes them (in two's
 * complement); they are computed here in the unsigned type of the same
 * width, so the expectation never relies on signed overflow. */
#ifndef CRUX_BENCH_ALLREDUCE_CHECK_H
#define CRUX_BENCH_ALLREDUCE_CHECK_H

#include <stddef.h>

typedef enum {
    BENCH_INT8,
    BENCH_UINT8,
    BENCH_INT32,
    BENCH_UINT32,
    BENCH_INT64,
    BENCH_UINT64,
    BENCH_FLOAT,
    BENCH_DOUBLE,
    BENCH_NUM_TYPES
} bench_type_t;

typedef enum { BENCH_SUM, BENCH_PROD, BENCH_MIN, BENCH_MAX, BENCH_NUM_OPS } bench_op_t;

const char *bench_type_name(bench_type_t type);
size_t bench_type_size(bench_type_t type);
/* The type named NAME ("int" is int32), or -1. */
int bench_type_parse(const char *name);

const char *bench_op_name(bench_op_t op);
/* The operation named NAME, or -1. */
int bench_op_parse(const char *name);

/* Rank RANK's input for element I. */
void bench_input(bench_type_t type, bench_op_t op, int rank, size_t i, void *out);
/* Fill COUNT elements of BUF with rank RANK's input. */
void bench_fill(bench_type_t type, bench_op_t op, int rank, size_t count, void *buf);
/* The exact result of element I over NRANKS ranks (ranks 0 .. NRANKS-1). */
void bench_expected(bench_type_t type, bench_op_t op, int nranks, size_t i, void *out);
/* How many of COUNT elements of BUF differ from the exact result. */
size_t bench_count_wrong(bench_type_t type, bench_op_t op, int nranks, const void *buf,
                         size_t count);

#endif

/* The CPU reduction kernels, built into the mock CUDA driver, which runs
 * them in place of the GPU's. */
#include "coll/reduce/crux_reduce.c"

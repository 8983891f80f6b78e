// The device reduction kernels' own source (coll/dev/crux_dev_kernels.cu),
// compiled for the host and run by the stand-in driver in place of the GPU:
// a launch calls the kernel once as a single thread of a single block, which
// the grid-stride loop turns into a pass over every element.  So tests
// without a GPU check the kernels' code (their NaN handling, their 16-bit
// conversions, the names and arguments), on the CPU's arithmetic: IEEE
// rounding is the same on both, the payload of a NaN an operation makes is
// not, which is why the kernels make every NaN result the one quiet NaN.
#include <stddef.h>

struct mock_dim {
    unsigned x, y, z;
};
static const mock_dim gridDim = { 1, 1, 1 }, blockDim = { 1, 1, 1 }, blockIdx = { 0, 0, 0 },
                      threadIdx = { 0, 0, 0 };

#include "coll/dev/crux_dev_kernels.cu"

#!/bin/sh
# test_coll_dev with the stand-in driver: kernel names and launches (the CPU
# kernels standing in for the GPU's), the device Allreduce between processes.
exec "$(dirname "$0")/../mock_cuda.sh" ./unit/coll/test_coll_dev

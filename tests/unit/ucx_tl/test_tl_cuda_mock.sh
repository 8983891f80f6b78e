#!/bin/sh
# test_tl_cuda with the stand-in driver: IPC handles between processes,
# staging through host memory and a relay device, calibration, MIG.
exec "$(dirname "$0")/../mock_cuda.sh" ./unit/ucx_tl/test_tl_cuda

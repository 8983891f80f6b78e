#!/usr/bin/env bash
# MPI_Allreduce on device buffers through crux, on one node (GPU kernels over
# the multipath engine) and on fake nodes (staged through host memory), with
# the stand-in CUDA driver when no real one is present.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_device
fakenodes=$(cd "$(dirname "$0")/../.." && pwd)/scripts/fakenodes
mock=$builddir/tests/mock/.libs/libmock_cuda.so
if ! ldconfig -p 2>/dev/null | grep -q libcuda.so.1; then
  if [ ! -f "$mock" ]; then
    echo "1..0 # SKIP no CUDA driver and no stand-in (no CUDA toolkit)"
    exit 0
  fi
  export CRUX_CUDA_LIBRARY=$mock MOCK_CUDA_DEVICES=2
fi
env_args=(-x CRUX_CUDA_LIBRARY -x MOCK_CUDA_DEVICES)
verbose=(--mca coll_crux_verbose 2)
for np in 2 3; do
  run_mpi $np "device, crux alone" --mca coll crux "${env_args[@]}" "${verbose[@]}" -- $prog
  expect_stderr "MPI_COMM_WORLD: device from" "[np=$np] predefined ops ran on the device path"
  expect_stderr "MPI_COMM_WORLD: device staged through host from" \
    "[np=$np] the user-defined op was staged through host memory"
  run_mpi $np "device, default mix" "${env_args[@]}" -- $prog
done
MPI_LAUNCHER="$fakenodes 2x2" run_mpi 2x2 "device, fake nodes" "${env_args[@]}" "${verbose[@]}" -- $prog
expect_stderr "MPI_COMM_WORLD: device staged through host from" \
  "[2x2] across nodes, device buffers are staged through host memory"
expect_stderr "MPI_COMM_WORLD: hier from" "[2x2] ... and reduced hierarchically there"
finish

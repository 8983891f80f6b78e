#!/bin/sh
# Usage: mock_cuda.sh PROGRAM
# A CUDA test program (tests/unit/cuda_test_util.h) once more, with
# tests/mock/mock_cuda.c standing in for the CUDA driver (two devices), so
# that crux's CUDA code paths run without a GPU.
lib="$CRUX_BUILDDIR/tests/mock/.libs/libmock_cuda.so"
if [ ! -f "$lib" ]; then
  echo "1..0 # SKIP mock driver not built (no CUDA toolkit)"
  exit 0
fi
CRUX_CUDA_LIBRARY="$lib" MOCK_CUDA_DEVICES=2 exec "$@"

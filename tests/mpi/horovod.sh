#!/usr/bin/env bash
# Horovod's MPI pattern (tests/mpi/test_horovod.c): a background thread
# allreducing a 128 MiB fusion buffer of mixed tensors in place, float32 SUM
# and AVERAGE, float16 with a user-defined op, while the main thread makes
# MPI calls of its own; with crux alone, in the default mix and on fake
# nodes.  Verbose output proves crux's own Allreduce took the fusion buffer.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_horovod
fakenodes=$(cd "$(dirname "$0")/../.." && pwd)/scripts/fakenodes
verbose=(--mca coll_crux_verbose 2)
mib=${CRUX_HOROVOD_MIB:-128}

run_mpi 2 "crux alone" --mca coll crux "${verbose[@]}" -- $prog "$mib" 2
expect_stderr "allreduce on horovod: lanes from" "[np=2 crux alone] crux's flat Allreduce took the fusion buffer"
expect_stderr "allreduce on framework: lanes from" "[np=2 crux alone] ... and the main thread's Allreduces"
run_mpi 3 "default mix" "${verbose[@]}" -- $prog "$mib" 2
expect_stderr "allreduce on horovod: lanes from" "[np=3 default mix] crux chosen by priority"
MPI_LAUNCHER="$fakenodes 2x2" run_mpi 2x2 "fake nodes" "${verbose[@]}" -- $prog "$mib" 2
expect_stderr "allreduce on horovod: hier from" "[2x2 fake nodes] the hierarchical Allreduce took the fusion buffer"
expect_stderr "allreduce on horovod-local: lanes from" "[2x2 fake nodes] the local communicator runs crux's flat Allreduce"
finish

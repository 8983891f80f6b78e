#!/usr/bin/env bash
# A representative, quick subset of the MPI tests for the sanitizer builds
# (scripts/hardening), where the full sweeps of allreduce.sh and hier.sh
# take ~9 minutes on 2 cores: every crux Allreduce algorithm once (flags,
# cma, engine, hierarchical on rank groups and on fake nodes), the other
# collectives crux fills in, counts / communicators / nonblocking / fallback
# / bit-exactness suites.  Not in TESTS: run as
#   make check TESTS=mpi/smoke.sh
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_allreduce
fakenodes=$(cd "$(dirname "$0")/../.." && pwd)/scripts/fakenodes
verbose=(--mca coll_crux_verbose 2)

run_mpi 3 "crux alone" --mca coll crux "${verbose[@]}" -- $prog counts comms nonblocking fallback bits
expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD: lanes" "[np=3 crux alone] crux's Allreduce over the lanes ran"
run_mpi 2 "types" --mca coll crux -- $prog types
run_mpi 3 "flags" --mca coll_crux_allreduce_handoff flags "${verbose[@]}" -- $prog counts bits
expect_stderr "coll:crux: allreduce on MPI_COMM_WORLD: flags" "[np=3 flags] the flags algorithm ran"
run_mpi 4 "k=2 hier" --mca coll_crux_group_size 2 --mca coll_crux_allreduce_algorithm hier \
  "${verbose[@]}" -- $prog counts comms bits
expect_stderr "allreduce on MPI_COMM_WORLD: hier" "[np=4 k=2 hier] the hierarchical Allreduce ran"
MPI_LAUNCHER="$fakenodes 2x2" run_mpi 2x2 "fake nodes" "${verbose[@]}" -- $prog counts bits
expect_stderr "allreduce on MPI_COMM_WORLD: hier" "[2x2 fake nodes] the hierarchical Allreduce ran"
run_mpi 3 "collectives" --mca coll crux -- $builddir/tests/mpi/test_collectives
finish

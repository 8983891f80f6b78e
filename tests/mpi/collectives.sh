#!/usr/bin/env bash
# Every MPI collective (blocking, nonblocking, persistent) on every kind of
# communicator, with crux alone and in the default component mix.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_collectives
for np in 1 2 3 4 7; do
  run_mpi $np "crux alone" --mca coll crux -- $prog
  run_mpi $np "default mix" -- $prog
done
finish

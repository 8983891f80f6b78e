#!/usr/bin/env bash
# mpi4py (tests/mpi/test_mpi4py.py): Allreduce on NumPy arrays of several
# dtypes from Python, through crux; with crux alone, in the default mix and
# on fake nodes.  Verbose output proves crux's own Allreduce took each dtype.
. "$(dirname "$0")/mpi-common.sh"
prog=$(cd "$(dirname "$0")" && pwd)/test_mpi4py.py
fakenodes=$(cd "$(dirname "$0")/../.." && pwd)/scripts/fakenodes
verbose=(--mca coll_crux_verbose 2)
dtypes="float32 float64 int32 int64 uint8 int16 uint64"
# Debian's python3-mpi4py is for Debian's interpreter, not one earlier in
# PATH (pyenv and the like)
python=${CRUX_PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=python3

if ! "$python" -c 'import mpi4py.MPI, numpy' 2>/dev/null; then
  echo "1..0 # SKIP python3-mpi4py or python3-numpy not installed"
  exit 0
fi
run_mpi 2 "crux alone" --mca coll crux "${verbose[@]}" -- "$python" "$prog"
for t in $dtypes; do
  expect_stderr "allreduce on mpi4py-$t: lanes from" "[np=2 crux alone] crux's flat Allreduce took $t"
done
run_mpi 3 "default mix" "${verbose[@]}" -- "$python" "$prog"
expect_stderr "allreduce on mpi4py-float32: lanes from" "[np=3 default mix] crux chosen by priority"
MPI_LAUNCHER="$fakenodes 2x2" run_mpi 2x2 "fake nodes" "${verbose[@]}" -- "$python" "$prog"
for t in float32 int64; do
  expect_stderr "allreduce on mpi4py-$t: hier from" "[2x2 fake nodes] the hierarchical Allreduce took $t"
done
finish

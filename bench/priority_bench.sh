#!/usr/bin/env bash
# Two Allreduce-heavy jobs on this host at once (2 ranks each), first with no
# priority file, then with job "high" at level 7 and job "low" at level 0:
# the Allreduce throughput of each, and how much the low job waited.
#
#   bench/priority_bench.sh [SECONDS] [BUILDDIR]    (defaults: 10, ./build)
set -u -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-10}
build=${2:-$src/build}
prog=$build/tests/mpi/test_job
[ -x "$prog" ] || { echo "$0: build the tests first ($prog missing: make check TESTS=)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMPI_MCA_mca_base_component_path="$build/stage:SYS_DEFAULT"
# crux beside the other components, as an operator who opted in runs it
export OMPI_MCA_coll_crux_enable=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
printf 'crux-priorities 1\nlevels 8\njob high level 7\njob low level 0\n' >"$dir/crux.prio"

# pair FILE-OR-EMPTY: both jobs at once; prints calls/s of each and low's waits
pair() {
  local file=$1 opts=(--mca coll_crux_arb_path "$dir/arb" --mca coll_crux_verbose 1 --bind-to none -x CRUX_JOB_ID)
  [ -n "$file" ] && opts+=(--mca coll_crux_priority_file "$file")
  CRUX_JOB_ID=high mpirun -np 2 "${opts[@]}" "$prog" "$seconds" >"$dir/high.out" 2>"$dir/high.err" </dev/null &
  CRUX_JOB_ID=low mpirun -np 2 "${opts[@]}" "$prog" "$seconds" >"$dir/low.out" 2>"$dir/low.err" </dev/null
  wait
  for j in high low; do
    calls=$(sed -n 's/^ok - \([0-9]*\) Allreduces over.*/\1/p' "$dir/$j.out")
    waited=$(sed -n "s/.*job $j at level [0-9]*: \([0-9]*\) transfers, \([0-9]*\) waited.*(\([0-9.]*\) ms).*/\2 of \1 transfers waited, \3 ms/p" "$dir/$j.err" | head -1)
    printf '  %-5s %8.1f Allreduces/s   %s\n' "$j" "$(echo "$calls / $seconds" | bc -l)" "${waited:-no levels}"
  done
}
echo "# two jobs x 2 ranks on this host, ${seconds} s, Allreduces of 4, 1 and 2 MiB per iteration"
echo "no priority file:"
pair ""
echo "high at level 7, low at level 0:"
pair "$dir/crux.prio"

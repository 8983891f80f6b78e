#!/usr/bin/env bash
# The hierarchical Allreduce against crux's flat one, coll/tuned and coll/han,
# alternating in one run per layout:
#   2x2, 4x2   fake nodes of 2 ranks (scripts/fakenodes: TCP between nodes)
#   1x4 k=2    4 ranks on this node grouped by rank / 2
# Writes OUTDIR/<layout>.csv (time in us and bus bandwidth in GB/s per size
# and variant) and, with gnuplot, OUTDIR/<layout>-time.png and
# OUTDIR/<layout>-busbw.png; prints the tables.
#
#   bench/hier_bench.sh [OUTDIR] [BUILDDIR]    (defaults: bench/out/hier, ./build)
set -u -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/bench/out/hier}
build=${2:-$src/build}
reps=${CRUX_BENCH_REPS:-5}
bench=$build/bench/crux-bench-allreduce
[ -x "$bench" ] || { echo "$0: build crux first ($bench missing)" >&2; exit 2; }
mkdir -p "$out"
export OMPI_MCA_mca_base_component_path="$build/stage:SYS_DEFAULT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# run LAYOUT LAUNCHER... : the benchmark as CSV into OUTDIR/LAYOUT.csv, the table on stdout
run() {
  local layout=$1 variants=$2
  shift 2
  echo "== $layout: $variants"
  "$@" "$bench" --compare "$variants" --min 4K --max 64M --reps "$reps" --csv >"$out/$layout.csv" || return 1
  column -s, -t <"$out/$layout.csv"
}

plot() {
  local layout=$1
  command -v gnuplot >/dev/null || return 0
  local header n
  header=$(head -1 "$out/$layout.csv")
  n=$(awk -F, '{ for (i = 1; i <= NF; i++) if ($i ~ /_us$/) n++; print n; exit }' <<<"$header")
  for what in time busbw; do
    {
      echo "set datafile separator ','; set key autotitle columnhead left top"
      echo "set terminal pngcairo size 900,560 noenhanced; set output '$out/$layout-$what.png'"
      echo "set logscale x 2; set format x '%.0s%cB'; set xlabel 'message size'; set grid"
      if [ $what = time ]; then
        echo "set logscale y 10; set ylabel 'time per call (us)'"
        echo "set title 'MPI_Allreduce, float sum, $layout: time'"
        printf "plot "
        for ((i = 0; i < n; i++)); do printf "'%s' using 2:%d with linespoints%s" "$out/$layout.csv" $((3 + i)) $([ $i -lt $((n - 1)) ] && echo ", "); done
      else
        echo "set ylabel 'bus bandwidth (GB/s)'"
        echo "set title 'MPI_Allreduce, float sum, $layout: bus bandwidth'"
        printf "plot "
        for ((i = 0; i < n; i++)); do printf "'%s' using 2:%d with linespoints%s" "$out/$layout.csv" $((3 + n + i)) $([ $i -lt $((n - 1)) ] && echo ", "); done
      fi
      echo
    } | gnuplot
  done
}

# Fake nodes put more ranks on this machine than it has cores while telling
# Open MPI each node has a core per rank, so its waits would spin through
# whole time slices (4 ms for a 4 KiB Allreduce); yielding when idle is what
# Open MPI does itself when it knows a node is oversubscribed.
fake=(--mca mpi_yield_when_idle 1)
run 2x2 crux,hier,hier-seq,tuned,han "$src/scripts/fakenodes" 2x2 "${fake[@]}" -- && plot 2x2
run 1x4-k2 crux,flat,hier,hier-seq,tuned,han mpirun -np 4 --mca coll_crux_group_size 2 && plot 1x4-k2
run 4x2 crux,hier,hier-seq,tuned,han "$src/scripts/fakenodes" 4x2 "${fake[@]}" -- && plot 4x2

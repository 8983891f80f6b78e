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
#   bench/hier_bench.sh --plot OUTDIR          (the plots again, from OUTDIR's CSVs)
set -u -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
plot_only=0
if [ "${1:-}" = --plot ]; then
  plot_only=1
  shift
  [ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: $0 --plot OUTDIR (a directory of <layout>.csv)" >&2; exit 2; }
fi
out=${1:-$src/bench/out/hier}
build=${2:-$src/build}
reps=${CRUX_BENCH_REPS:-5}
bench=$build/bench/crux-bench-allreduce
[ $plot_only = 1 ] || [ -x "$bench" ] || { echo "$0: build crux first ($bench missing)" >&2; exit 2; }
mkdir -p "$out"
export OMPI_MCA_mca_base_component_path="$build/stage:SYS_DEFAULT"
# crux in every communicator's selection, beside tuned and han (the
# variants are chosen per communicator: crux-bench-allreduce --compare)
export OMPI_MCA_coll_crux_enable=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# run LAYOUT LAUNCHER... : the benchmark as CSV into OUTDIR/LAYOUT.csv, the table on stdout
run() {
  local layout=$1 variants=$2
  shift 2
  echo "== $layout: $variants"
  "$@" "$bench" --compare "$variants" --min 4K --max 64M --reps "$reps" --csv >"$out/$layout.csv" || return 1
  column -s, -t <"$out/$layout.csv"
}

# plot LAYOUT: time and bus bandwidth against message size, one line per
# variant; the columns are found by name (bytes, <variant>_us,
# <variant>_busbw), the sizes labelled in binary units at every power of 4.
plot() {
  local layout=$1 csv=$out/$1.csv
  command -v gnuplot >/dev/null || return 0
  local xtics
  # (and the x range a little wider than the sizes: a tic on the border
  # loses its label)
  xtics=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "bytes") c = i; next }
                   c && $c > 0 { k = int(log($c) / log(2) + 0.5); if (k % 2 == 0) seen[k] = 1
                                 lo = lo == "" || $c < lo ? $c : lo; hi = $c > hi ? $c : hi }
                   END { printf "[%.0f:%.0f] ", lo / 1.25, hi * 1.25
                         for (k in seen) {
                           v = 2 ^ k; u = v >= 2^30 ? "GiB" : v >= 2^20 ? "MiB" : v >= 2^10 ? "KiB" : "B"
                           d = u == "GiB" ? 2^30 : u == "MiB" ? 2^20 : u == "KiB" ? 2^10 : 1
                           printf "%s\"%d %s\" %.0f", n++ ? ", " : "", v / d, u, v } }' "$csv")
  local what suffix
  for what in time busbw; do
    suffix=$([ $what = time ] && echo _us || echo _busbw)
    {
      echo "load '$src/bench/plot_style.gp'"
      echo "set datafile separator ','; set key left top"
      echo "set terminal pngcairo size 900,560 noenhanced; set output '$out/$layout-$what.png'"
      echo "set logscale x 2; set xrange ${xtics%% *}; set xtics (${xtics#* }); set xlabel 'message size'"
      if [ $what = time ]; then
        echo "set logscale y 10; set ylabel 'time per call (us)'"
        echo "set title 'MPI_Allreduce, float sum, $layout: time'"
      else
        echo "set ylabel 'bus bandwidth (GB/s)'"
        echo "set title 'MPI_Allreduce, float sum, $layout: bus bandwidth'"
      fi
      awk -F, -v csv="$csv" -v suffix="$suffix" 'NR == 1 {
          for (i = 1; i <= NF; i++) if ($i == "bytes") x = i
          for (i = 1; i <= NF; i++) if (substr($i, length($i) - length(suffix) + 1) == suffix) {
            name = substr($i, 1, length($i) - length(suffix))
            printf "%s\x27%s\x27 using %d:%d with linespoints title \x27%s\x27", n++ ? ", " : "plot ", csv, x, i, name
          }
          print ""; exit }' "$csv"
    } | gnuplot
  done
}

if [ $plot_only = 1 ]; then
  for csv in "$out"/*.csv; do
    [ -f "$csv" ] && plot "$(basename "$csv" .csv)"
  done
  exit 0
fi

# (scripts/fakenodes tells Open MPI, and so crux, that the fake nodes'
# processes share cores: without it their waits would spin through whole
# time slices, 4 ms for a 4 KiB Allreduce)
run 2x2 crux,hier,hier-seq,tuned,han "$src/scripts/fakenodes" 2x2 -- && plot 2x2
run 1x4-k2 crux,flat,hier,hier-seq,tuned,han mpirun -np 4 --mca coll_crux_group_size 2 && plot 1x4-k2
run 4x2 crux,hier,hier-seq,tuned,han "$src/scripts/fakenodes" 4x2 -- && plot 4x2

#!/usr/bin/env bash
# crux-bench-allreduce in K separate launches, summarised per message size:
# the median over launches of each variant's time, and of each ratio with
# its range.  On a shared 2-core machine the ratio moves more between
# launches (where the processes and their buffers land) than within one, so
# a single launch can show a size 20% off either way; the median of several
# is what the README reports.
#
#   bench/allreduce_launches.sh NP K [crux-bench-allreduce options...]
#
# NP > 2 runs oversubscribed and unbound; CRUX_BUILD (default ./build) is the
# build directory.  Rows are grouped by size: give one -d and one -o (the
# defaults, float sum, are fine).  Example:
#   bench/allreduce_launches.sh 2 9 --min 512K --max 4M --reps 11
set -u -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${CRUX_BUILD:-$src/build}
bench=$build/bench/crux-bench-allreduce
[ $# -ge 2 ] || { sed -n '2,14s/^# \{0,1\}//p' "$0" >&2; exit 2; }
[ -x "$bench" ] || { echo "$0: build crux first ($bench missing)" >&2; exit 2; }
np=$1 launches=$2
shift 2
export OMPI_MCA_mca_base_component_path="$build/stage:SYS_DEFAULT"
# crux beside the other components, as an operator who opted in runs it
export OMPI_MCA_coll_crux_enable=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bind=(--bind-to core)
[ "$np" -gt 2 ] && bind=(--bind-to none --oversubscribe)

csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
for i in $(seq "$launches"); do
  mpirun -np "$np" "${bind[@]}" "$bench" --csv "$@" >"$csv.$i" || { echo "$0: launch $i failed" >&2; exit 1; }
  [ "$i" = 1 ] && head -1 "$csv.$i" >"$csv"
  tail -n +2 "$csv.$i" >>"$csv"
  rm -f "$csv.$i"
done

echo "# MPI_Allreduce, $np ranks, $launches launches ($*): medians over launches of each"
echo "# launch's median; ratio = other / crux (above 1: crux is faster), [min - max] over launches"
awk -F, '
function median(list,    v, n, i, j, t) {
  n = split(list, v, " ")
  for (i = 2; i <= n; i++)          # insertion sort: a handful of launches
    for (j = i; j > 1 && v[j] + 0 < v[j - 1] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
  lo = v[1]; hi = v[n]
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
NR == 1 { for (c = 1; c <= NF; c++) name[c] = $c; cols = NF; next }
{ if (!($2 in seen)) { seen[$2] = 1; order[++sizes] = $2 }
  for (c = 3; c <= cols; c++) if (name[c] ~ /_us$|_over_/) vals[$2, c] = vals[$2, c] " " $c }
END {
  printf "%12s", "bytes"
  for (c = 3; c <= cols; c++) if (name[c] ~ /_us$/) printf "%12s", name[c]
  for (c = 3; c <= cols; c++) if (name[c] ~ /_over_/) printf "%28s", name[c]
  printf "\n"
  for (s = 1; s <= sizes; s++) {
    b = order[s]; printf "%12d", b
    for (c = 3; c <= cols; c++) if (name[c] ~ /_us$/) printf "%12.1f", median(vals[b, c])
    for (c = 3; c <= cols; c++) if (name[c] ~ /_over_/) { m = median(vals[b, c]); printf "%10.2fx [%.2f - %.2f]", m, lo, hi }
    printf "\n"
  }
}' "$csv"

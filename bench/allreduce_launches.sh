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
# build directory.  CRUX_LAYOUT=NODESxRANKS (e.g. 2x2, NP their product)
# launches over fake nodes (scripts/fakenodes) instead, for the
# hierarchical Allreduce.  Rows are grouped by size: give one -d and one -o (the
# defaults, float sum, are fine).  Example:
#   bench/allreduce_launches.sh 2 9 --min 512K --max 4M --reps 11
# CRUX_BUSY=CPU runs a busy loop pinned to that CPU through every launch, as
# a training framework's compute threads share the cores with its MPI
# thread.
# With CRUX_BUILD_B=DIR every launch runs both builds, one after the other,
# the first alternating; columns a_* are CRUX_BUILD's times, b_* DIR's, and
# b_over_a_* their ratio (above 1: CRUX_BUILD is faster), in place (_ip) too:
#   CRUX_BUILD_B=../main/build bench/allreduce_launches.sh 2 5 --compare crux
set -u -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${CRUX_BUILD:-$src/build}
bench=$build/bench/crux-bench-allreduce
build_b=${CRUX_BUILD_B:-}
[ $# -ge 2 ] || { sed -n '2,20s/^# \{0,1\}//p' "$0" >&2; exit 2; }
[ -x "$bench" ] || { echo "$0: build crux first ($bench missing)" >&2; exit 2; }
[ -z "$build_b" ] || [ -x "$build_b/bench/crux-bench-allreduce" ] ||
  { echo "$0: CRUX_BUILD_B: $build_b/bench/crux-bench-allreduce missing" >&2; exit 2; }
np=$1 launches=$2
shift 2
# crux beside the other components, as an operator who opted in runs it
export OMPI_MCA_coll_crux_enable=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bind=(--bind-to core)
[ "$np" -gt 2 ] && bind=(--bind-to none --oversubscribe)
launcher=(mpirun -np "$np")
layout=${CRUX_LAYOUT:-}
if [ -n "$layout" ]; then
  [[ $layout =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] && [ $((BASH_REMATCH[1] * BASH_REMATCH[2])) = "$np" ] ||
    { echo "$0: CRUX_LAYOUT=$layout is not NODESxRANKS with $np ranks in all" >&2; exit 2; }
  launcher=("$src/scripts/fakenodes" "$layout")
  bind=(--)
fi

csv=$(mktemp)
busy_pid=
trap 'rm -f "$csv" "$csv".*; [ -z "$busy_pid" ] || kill "$busy_pid" 2>/dev/null' EXIT
if [ -n "${CRUX_BUSY:-}" ]; then
  [[ $CRUX_BUSY =~ ^[0-9]+$ ]] || { echo "$0: CRUX_BUSY=$CRUX_BUSY is not a CPU number" >&2; exit 2; }
  taskset -c "$CRUX_BUSY" bash -c 'while :; do :; done' &
  busy_pid=$!
fi
# launch BUILD OUT ARGS...: one launch of BUILD's benchmark, its CSV in OUT
launch() {
  local dir=$1 out=$2
  shift 2
  OMPI_MCA_mca_base_component_path="$dir/stage:SYS_DEFAULT" \
    "${launcher[@]}" "${bind[@]}" "$dir/bench/crux-bench-allreduce" --csv "$@" >"$out"
}

# The two builds' CSVs of one launch as one: sizes, then per time column
# a_ (CRUX_BUILD), b_ (CRUX_BUILD_B) and their ratio b_over_a_.
pair() {
  awk -F, -v OFS=, '
  NR == FNR { a[FNR] = $0; next }
  # the two builds must have run the same variants, sizes in the same order
  FNR == 1 && $0 != a[1] { print "the two builds ran different variants: " a[1] " / " $0 > "/dev/stderr"; bad = 1; exit 1 }
  FNR > 1 && split(a[FNR], y, ",") && (y[1] != $1 || y[2] != $2) { print "the two builds ran different sizes" > "/dev/stderr"; bad = 1; exit 1 }
  FNR == 1 {
    n = split(a[1], h, ",")
    for (c = 3; c <= n; c++) if (h[c] ~ /_us(_inplace)?$/) { t = h[c]; sub(/_us_inplace$/, "_ip", t); sub(/_us$/, "", t); col[++k] = c; nm[k] = t }
    line = "ranks,bytes"
    for (i = 1; i <= k; i++) line = line ",a_" nm[i] "_us,b_" nm[i] "_us"
    for (i = 1; i <= k; i++) line = line ",b_over_a_" nm[i]
    print line; next
  }
  { split(a[FNR], x, ","); line = x[1] "," x[2]
    for (i = 1; i <= k; i++) line = line "," x[col[i]] "," $(col[i])
    for (i = 1; i <= k; i++) line = line "," (x[col[i]] > 0 ? sprintf("%.4f", $(col[i]) / x[col[i]]) : "nan")
    print line }' "$1" "$2"
}

for i in $(seq "$launches"); do
  if [ -z "$build_b" ]; then
    launch "$build" "$csv.$i" "$@" || { echo "$0: launch $i failed" >&2; exit 1; }
  else
    first=$build second=$build_b
    [ $((i % 2)) = 0 ] && first=$build_b second=$build
    launch "$first" "$csv.$i.1" "$@" && launch "$second" "$csv.$i.2" "$@" ||
      { echo "$0: launch $i failed" >&2; exit 1; }
    if [ "$first" = "$build" ]; then pair "$csv.$i.1" "$csv.$i.2"; else pair "$csv.$i.2" "$csv.$i.1"; fi >"$csv.$i" ||
      { echo "$0: launch $i: the builds' results do not pair" >&2; exit 1; }
    rm -f "$csv.$i.1" "$csv.$i.2"
  fi
  [ "$i" = 1 ] && head -1 "$csv.$i" >"$csv"
  tail -n +2 "$csv.$i" >>"$csv"
  rm -f "$csv.$i"
done

echo "# MPI_Allreduce, $np ranks${layout:+ on fake nodes $layout}${CRUX_BUSY:+, a busy loop on CPU $CRUX_BUSY}, $launches launches ($*): medians over launches of each"
if [ -n "$build_b" ]; then
  echo "# launch's median; a = $build, b = $build_b; ratio = b / a (above 1: a is faster), [min - max] over launches"
else
  echo "# launch's median; ratio = other / crux (above 1: crux is faster), [min - max] over launches"
fi
awk -F, '
function median(list,    v, n, i, j, t) {
  n = split(list, v, " ")
  for (i = 2; i <= n; i++)          # insertion sort: a handful of launches
    for (j = i; j > 1 && v[j] + 0 < v[j - 1] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
  lo = v[1]; hi = v[n]
  return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
NR == 1 { for (c = 1; c <= NF; c++) { name[c] = $c; w[c] = length($c) < 11 ? 12 : length($c) + 1 } cols = NF; next }
{ if (!($2 in seen)) { seen[$2] = 1; order[++sizes] = $2 }
  for (c = 3; c <= cols; c++) if (name[c] ~ /_us$|_over_/) vals[$2, c] = vals[$2, c] " " $c }
END {
  printf "%12s", "bytes"
  for (c = 3; c <= cols; c++) if (name[c] ~ /_us$/) printf "%*s", w[c], name[c]
  for (c = 3; c <= cols; c++) if (name[c] ~ /_over_/) printf "%28s", name[c]
  printf "\n"
  for (s = 1; s <= sizes; s++) {
    b = order[s]; printf "%12d", b
    for (c = 3; c <= cols; c++) if (name[c] ~ /_us$/) { m = median(vals[b, c]); printf (m < 10 ? "%*.2f" : "%*.1f"), w[c], m }
    for (c = 3; c <= cols; c++) if (name[c] ~ /_over_/) { m = median(vals[b, c]); printf "%10.2fx [%.2f - %.2f]", m, lo, hi }
    printf "\n"
  }
}' "$csv"

#!/bin/bash
# Crux against Sincronia, TACCL* and CASSINI on crux-sim: the Lingjun
# three-layer Clos, a two-layer Clos and the double-sided topology, each
# with a generated two-week workload of 5,000 jobs, placed packed (fewest
# ToRs), first fit (the holes arrivals and departures leave, rack order)
# and at random.  Writes into OUT (default bench/out/sim):
#   table.csv, table.md            average GPU utilisation per topology,
#                                  placement and policy; Crux-full's gain
#   table-wide.md                  the same, a row per topology and placement
#   <topo>-<placement>/            crux-sim's CSV files of each run
#   util-time-<topo>-<placement>.png, util-bars.png, jct-cdf-<topo>-<placement>.png
# Usage: bench/sim_compare.sh [OUT] [BUILD_DIR]     (default bench/out/sim, ./build)
# Environment: JOBS (5000), DAYS (14), LOAD (0.85), SEED (1), PLACEMENTS
# ("packed first-fit random"), TOPOLOGIES ("lingjun clos2 double-sided"), SHORT: runs
# cut to their first days, "topology-placement:days ..." (none: every run goes
# on until its last job leaves; the whole comparison takes 25-30 minutes
# with two processes on a 2-core VM, 41 CPU-minutes, Lingjun random 23 of
# them and Crux-PA there 7; "lingjun-random:1 lingjun-first-fit:1" cuts Lingjun
# to its first day), REUSE=1:
# keep the runs whose summary.csv already has every policy (to redo only
# the table and plots, or to finish a comparison run in several pieces),
# PARALLEL: runs simulated at once, each its own crux-sim process, from one
# queue of every topology, placement and policy, Lingjun's first
# (default: the number of processors; the runs are independent and
# single-threaded, so the outputs are the same for any PARALLEL).
# Every run is niced: the build machine is shared.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/bench/out/sim}
build=${2:-$src/build}
sim=$build/sim/crux-sim
[ -x "$sim" ] || { echo "build crux first: $sim is missing" >&2; exit 1; }
JOBS=${JOBS:-5000} DAYS=${DAYS:-14} LOAD=${LOAD:-0.85} SEED=${SEED:-1}
PLACEMENTS=${PLACEMENTS:-packed first-fit random}
SHORT=${SHORT-}
TOPOLOGIES=${TOPOLOGIES:-lingjun clos2 double-sided}
POLICIES="none sincronia taccl cassini crux-pa crux-ps-pa crux-full crux-full-paper"
PARALLEL=${PARALLEL:-$(nproc 2>/dev/null || echo 1)}
case $PARALLEL in
  [1-9] | [1-9][0-9]) ;;
  *) echo "PARALLEL must be 1-99, not '$PARALLEL'" >&2; exit 1 ;;
esac
mkdir -p "$out"

# One queue for every run of every topology and placement, at most
# PARALLEL at once: the policies' costs differ by up to a hundred times, so
# waiting for one topology and placement to finish before starting the next
# would leave processors idle.  start_run DIR P ARGS...: crux-sim run ARGS
# for policy P into DIR/parts/P, once a processor is free.
running=0 failed=0
start_run() {
  local dir=$1 p=$2
  shift 2
  if [ "$running" -ge "$PARALLEL" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
  nice -n 19 "$sim" run "$@" --policy "$p" --quiet --out "$dir/parts/$p" >"$dir/parts/$p.log" 2>&1 &
  running=$((running + 1))
}
# join_runs DIR: moves each policy's files into DIR and joins their summary
# rows in POLICIES' order, as one `--policy all` run would have written
# them; 1 when a run failed (every failed one named, with its log).
join_runs() {
  local dir=$1 p bad=0
  for p in $POLICIES; do
    [ -f "$dir/parts/$p/summary.csv" ] || { echo "crux-sim failed for $p:" >&2; cat "$dir/parts/$p.log" >&2; bad=1; }
  done
  [ "$bad" -eq 0 ] || return 1
  for p in $POLICIES; do
    mv "$dir/parts/$p"/*-"$p".csv "$dir/"
    if [ "$p" = "${POLICIES%% *}" ]; then
      cp "$dir/parts/$p/summary.csv" "$dir/summary.csv"
    else
      tail -n +2 "$dir/parts/$p/summary.csv" >>"$dir/summary.csv"
    fi
  done
  rm -rf "$dir/parts"
  awk -F, 'NR > 1 { printf "   %-16s GPU util %6.2f%%  events %10s  CPU %7.1f s\n", $1, 100 * $6, $16, $21 }' \
    "$dir/summary.csv"
}

# The clusters (the crux-sched cluster format).  Lingjun: its topo.csv,
# 847 hosts, ToRs 2:1 oversubscribed.  Two-layer Clos at the size of the
# paper's simulation (2,048 GPUs), ToRs 2:1 oversubscribed.  Double-sided:
# the builder's defaults, the paper's 6 ToRs, 12 aggregation switches and
# 32 cores (2,112 GPUs).
cluster() {
  case $1 in
    lingjun) printf '{"type": "lingjun", "topo_csv": "%s/tests/data/traces/lingjun-2023-topo.csv"}\n' "$src" ;;
    clos2) echo '{"type": "clos2", "tors": 16, "aggs": 8, "hosts_per_tor": 16, "links_per_agg": 2}' ;;
    double-sided) echo '{"type": "double-sided"}' ;;
  esac
}

for topo in $TOPOLOGIES; do
  cluster "$topo" >"$out/$topo.json"
  "$sim" gen --cluster "$out/$topo.json" --jobs "$JOBS" --days "$DAYS" --load "$LOAD" \
    --seed "$SEED" --out "$out/$topo-workload.csv"
done
# Lingjun's runs first: they are the longest, and the shorter ones then fill
# the processors while the last of them finish.
pending=""
for topo in $TOPOLOGIES; do
  for place in $PLACEMENTS; do
    [ "$topo" = lingjun ] && pending="$topo:$place $pending" || pending="$pending $topo:$place"
  done
done
todo=""
for tp in $pending; do
  topo=${tp%%:*} place=${tp#*:} run=${tp%%:*}-${tp#*:}
  until=""
  for cut in $SHORT; do
    if [ "${cut%:*}" = "$run" ]; then
      until="--until $(awk -v d="${cut#*:}" 'BEGIN { print d * 86400 }')"
    fi
  done
  if [ "${REUSE:-0}" = 1 ] && [ -f "$out/$run/summary.csv" ] &&
     [ "$(awk -F, 'NR > 1 { n++ } END { print n + 0 }' "$out/$run/summary.csv")" -eq 8 ]; then
    echo "== $topo, $place placement: kept $out/$run"
    continue
  fi
  echo "== $topo, $place placement: $JOBS jobs over $DAYS days ${until:+(first ${until#--until } s)}: started"
  rm -rf "$out/$run"
  mkdir -p "$out/$run/parts"
  todo="$todo $run"
  for p in $POLICIES; do
    start_run "$out/$run" "$p" --cluster "$out/$topo.json" --workload "$out/$topo-workload.csv" \
      --placement "$place" --seed "$SEED" --bin 3600 $until
  done
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
for run in $todo; do
  echo "== $run"
  join_runs "$out/$run" || failed=1
done
[ "$failed" -eq 0 ] || { echo "some crux-sim runs failed" >&2; exit 1; }

# The table: average utilisation (and on the first day), Crux-full's gain
# over each policy in points and relative.
first_day() {   # utilisation over [0, 86400) from a util CSV
  awk -F, 'NR > 1 && $2 <= 86400 { b += $3; h += $4 } END { printf "%.4f", (h > 0 ? b / h : 0) }' "$1"
}
echo "topology,placement,policy,utilization,cluster_utilization,first_day,mean_slowdown,jct_p50_s,crux_full_gain_points,crux_full_gain_rel,events,cpu_s,contended_jobs,simulated_days" >"$out/table.csv"
for topo in $TOPOLOGIES; do
  for place in $PLACEMENTS; do
    dir=$out/$topo-$place
    full=$(awk -F, '$1 == "crux-full" { print $6 }' "$dir/summary.csv")
    for p in $POLICIES; do
      awk -F, -v t="$topo" -v pl="$place" -v p="$p" -v full="$full" -v day="$(first_day "$dir/util-$p.csv")" \
        '$1 == p { printf "%s,%s,%s,%.4f,%.4f,%s,%.3f,%.0f,%.2f,%.2f%%,%s,%s,%.3f,%.1f\n", t, pl, p, $6, $7,
                   day, $10, $11, 100 * (full - $6), 100 * (full / $6 - 1), $16, $21, $23, $5 / 86400 }' \
        "$dir/summary.csv"
    done
  done
done >>"$out/table.csv"
{
  echo "| topology | placement | days | jobs contending | policy | GPU util | first day | mean slowdown | Crux-full gain |"
  echo "|---|---|---|---|---|---|---|---|---|"
  awk -F, 'NR > 1 { printf "| %s | %s | %.0f | %.0f%% | %s | %.2f%% | %.2f%% | %.3f | %s |\n", $1, $2, $14,
                    100 * $13, $3, 100 * $4, 100 * $6, $7,
                    $3 == "crux-full" ? "" : sprintf("%+.2f pt (%s)", $9, $10) }' "$out/table.csv"
} >"$out/table.md"
# The same, one row per topology and placement (the README's table).
{
  echo "| topology | placement | days | none | Sincronia | TACCL* | CASSINI | Crux-PA | Crux-PS-PA | Crux-full | Crux-full (paper) | Crux-full vs best baseline |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  awk -F, 'NR > 1 { key = $1 " | " $2; if (!(key in seen)) { seen[key] = ++n; name[n] = key; days[key] = $14 }
                    u[key, $3] = 100 * $4 }
           END { split("none sincronia taccl cassini crux-pa crux-ps-pa crux-full crux-full-paper", P, " ")
                 for (i = 1; i <= n; i++) { k = name[i]; best = ""; bu = -1
                   for (q = 1; q <= 4; q++) if (u[k, P[q]] > bu) { bu = u[k, P[q]]; best = P[q] }
                   printf "| %s | %.0f |", k, days[k]
                   for (q = 1; q <= 8; q++) printf " %.2f%% |", u[k, P[q]]
                   printf " %+.2f pt (%s) |\n", u[k, "crux-full"] - bu, best } }' "$out/table.csv"
} >"$out/table-wide.md"
cat "$out/table.md" "$out/table-wide.md"

# Plots (gnuplot): utilisation over time per policy, average utilisation
# per policy and topology, JCT CDFs; line and bar styles told apart in
# colour and in grey (bench/plot_style.gp).
command -v gnuplot >/dev/null || { echo "gnuplot not found: no plots" >&2; exit 0; }
style=$src/bench/plot_style.gp
# series FILE USING LT TITLE EVERY: a line with a marker every EVERY points,
# each policy's markers shifted along it (markers of lines that coincide
# would hide one another), and the key's sample.
series() {
  local shift=$(( ($3 - 1) * $5 / 8 ))
  printf "%s'%s' using %s with lines lt %d notitle, '%s' using %s every %d::%d with points lt %d notitle, NaN with linespoints lt %d title '%s'" \
    "${plots:+, }" "$1" "$2" "$3" "$1" "$2" "$5" "$shift" "$3" "$3" "$4"
}
for topo in $TOPOLOGIES; do
  for place in $PLACEMENTS; do
    dir=$out/$topo-$place
    files=""
    for p in $POLICIES; do
      files="$files $dir/util-$p.csv"
      awk -F, 'NR > 1 && $11 >= 0 { print $11 / 3600 }' "$dir/jobs-$p.csv" | sort -g |
        awk '{ v[NR] = $1 } END { for (i = 1; i <= NR; i++) print v[i], i / NR }' >"$dir/jct-cdf-$p.dat"
    done
    # The utilisation axis from just below the lowest hour (to a 0.05 step,
    # at most 0.9) to 1: the policies differ near 1, which 0-1 squashes.
    ymin=$(awk -F, 'FNR > 1 && $4 > 0 && ($5 < m || m == "") { m = $5 }
                    END { y = int((m == "" ? 0 : m) * 20) / 20; print (y > 0.9 ? 0.9 : y) }' $files)
    # JCTs: a log axis spanning the shortest and longest job, not whole decades
    xrange=$(cat "$dir"/jct-cdf-*.dat | awk '$1 > 0 { lo = lo == "" || $1 < lo ? $1 : lo; hi = $1 > hi ? $1 : hi }
                    END { printf "[%g:%g]", (lo == "" ? 0.01 : lo / 1.2), (hi == "" ? 1 : hi * 1.2) }')
    # about 12 markers a line, whatever the run's length
    hours=$(awk 'END { n = int(NR / 12); print (n > 1 ? n : 2) }' "$dir/util-none.csv")
    jobs=$(awk 'END { n = int(NR / 12); print (n > 1 ? n : 2) }' "$dir/jct-cdf-none.dat")
    plot="" cdf="" lt=0
    for p in $POLICIES; do
      lt=$((lt + 1))
      plot="$plot$(plots=$plot series "$dir/util-$p.csv" '($1/86400):5' $lt "$p" "$hours")"
      cdf="$cdf$(plots=$cdf series "$dir/jct-cdf-$p.dat" 1:2 $lt "$p" "$jobs")"
    done
    gnuplot <<EOF
load '$style'
set terminal pngcairo size 1000,440 font ',10' noenhanced
set datafile separator ','
set output '$out/util-time-$topo-$place.png'
set title 'GPU utilisation over time (hourly): $topo, $place placement'
set xlabel 'day'; set ylabel 'busy / held GPU time'; set key outside right top
set yrange [$ymin:1.005]
plot $plot
set datafile separator whitespace
set output '$out/jct-cdf-$topo-$place.png'
set title 'JCT CDF: $topo, $place placement'
set xlabel 'job completion time (hours, log scale)'; set ylabel 'fraction of jobs'
set logscale x; set xrange $xrange
set yrange [0:1]
plot $cdf
EOF
  done
done
# bars: one group per topology and placement, one bar per policy
awk -F, 'NR > 1 { key = $1 " " $2; if (!(key in seen)) { seen[key] = ++n; name[n] = key }
                  u[key, $3] = $4 }
         END { printf "case"; split("none sincronia taccl cassini crux-pa crux-ps-pa crux-full crux-full-paper", P, " ")
               for (k = 1; k <= 8; k++) printf ",%s", P[k]; print ""
               for (i = 1; i <= n; i++) { printf "%s", name[i]
                 for (k = 1; k <= 8; k++) printf ",%s", u[name[i], P[k]]; print "" } }' \
  "$out/table.csv" >"$out/util-bars.dat"
# Solid bars in the policies' colours (bench/plot_style.gp), so that the
# key's samples are the bars; the axis from 0, so that bar heights compare.
gnuplot <<EOF
load '$style'
set terminal pngcairo size 1000,420 font ',10' noenhanced
set output '$out/util-bars.png'
set datafile separator ','
set title 'Average GPU utilisation per policy'
set ylabel 'busy / held GPU time (%)'; set yrange [0:100]; set ytics 10; set key outside right
set xtics rotate by -20; set boxwidth 0.1; set offsets 0.6, 0.6, 0, 0
set style fill solid 0.9 noborder; set key autotitle columnheader
plot '$out/util-bars.dat' using 0:(NaN):xtic(1) notitle, \\
     for [k=2:9] '' using (\$0 + (k - 5.5) * 0.1):(column(k) * 100) with boxes lt k-1 title columnheader(k)
EOF
echo "plots in $out"

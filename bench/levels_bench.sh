#!/usr/bin/env bash
# Levels on the wire, end to end: two jobs of 2 fake nodes x 2 ranks, each
# node in its own network namespace (scripts/fakenet), both jobs' rings
# crossing one shared cable of RATE with strict-priority DSCP bands; crux's
# tcp channel carries each job's step between nodes marked with its level.
#   1. job A alone (its alone time), no priority file;
#   2. both jobs, no priority file (fair sharing, the reference);
#   3. both jobs with crux-sched daemon planning them from their
#      registrations (A registered with more compute per byte, so more GPU
#      intensive); half way the registrations swap their figures, the
#      daemon replans, the priority file swaps the jobs' levels and the
#      jobs follow at their next poll of the file.
# Prints, per phase: mean Allreduce time of each job, its ratio to the alone
# time, the bytes in each band of the cable; and when each job changed pace
# after the swap.  Needs root.
#
#   bench/levels_bench.sh [SECONDS] [RATE] [MIB] [BUILDDIR]   (defaults: 20 200mbit 4 ./build)
#
# With CRUX_LEVELS_OUT=DIR, the crux phase's per-call times go to
# DIR/levels-series.txt ("JOB SECONDS MS") and, with gnuplot, a plot to
# DIR/levels-on-the-wire.png.
set -u -o pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-20} rate=${2:-200mbit} mib=${3:-4}
build=${4:-$src/build}
prog=$build/tests/mpi/test_levels sched=$build/sched/crux-sched
[ -x "$prog" ] && [ -x "$sched" ] || { echo "$0: build crux and its tests first ($prog)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: needs root (network namespaces, tc)" >&2; exit 2; }
dir=$(mktemp -d)
net= daemon=
cleanup() {
  [ -z "$daemon" ] || kill "$daemon" 2>/dev/null
  [ -z "$net" ] || "$src/scripts/fakenet" down "$net"
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
net=$("$src/scripts/fakenet" up auto 4 "$rate") || { net=; exit 1; }
export OMPI_MCA_mca_base_component_path="$build/stage:SYS_DEFAULT"
poll_ms=1000

# job NAME FIRST-NODE [PRIOFILE]: runs until $dir/NAME/stop0 exists
job() {
  local name=$1 first=$2 prio=${3:-} opts=()
  mkdir -p "$dir/$name"
  rm -f "$dir/$name/stop0"
  [ -z "$prio" ] || opts=(--mca coll_crux_priority_file "$prio" --mca coll_crux_priority_poll_ms $poll_ms)
  "$src/scripts/fakenodes" --net "$net:$first" 2x2 --mca coll_crux_net tcp \
    --mca coll_crux_allreduce_algorithm hier --mca coll_crux_job_id "$name" \
    --mca coll_crux_arb_path "$dir/arb" --mca coll_crux_verbose 1 "${opts[@]}" \
    -- "$prog" "$mib" 0 0 "$dir/$name" >"$dir/$name.out" 2>"$dir/$name.err" &
  pids[$name]=$!
}
declare -A pids
# the jobs' own pids: a bare wait would wait for the daemon too
stop() { local j; for j in "$@"; do touch "$dir/$j/stop0"; done; for j in "$@"; do wait "${pids[$j]}"; done; }
# mean time of calls of job J starting in [FROM, TO), skipping the first
mean() {
  awk -v f="$2" -v t="$3" '$1 == "#" && $2 == "call" && $3 > 0 && $4 >= f && $4 < t {s += $5; n++}
    END {if (n) printf "%.1f", 1e3 * s / n; else printf "nan"}' "$dir/$1.out"
}
now() { date +%s.%N; }
bands() { "$src/scripts/fakenet" bands "$net"; }
delta() { local a=($1) b=($2); echo "$((b[0] - a[0])) $((b[1] - a[1])) $((b[2] - a[2]))"; }

echo "# $(date -u +%Y-%m-%dT%H:%MZ), cable $rate, Allreduce of $mib MiB floats, jobs of 2 fake nodes x 2 ranks"
echo "# bands: 1 = DSCP 32..63, 2 = DSCP 8..31, 3 = DSCP 0..7 (strict priority, 1 first)"

# 1. alone
b0=$(bands); job A 0; sleep "$seconds"; t1=$(now); stop A; b1=$(bands)
alone=$(mean A 0 "$t1")
echo "alone: A $alone ms; bands $(delta "$b0" "$b1")"

# 2. both, no priority file
b0=$(bands); job A 0; job B 2; sleep 3; t0=$(now); sleep "$seconds"; t1=$(now); stop A B; b1=$(bands)
a=$(mean A "$t0" "$t1") b=$(mean B "$t0" "$t1")
echo "fair (no priority file): A $a ms ($(echo "$a / $alone" | bc -l | cut -c1-4)x alone), B $b ms ($(echo "$b / $alone" | bc -l | cut -c1-4)x); bands $(delta "$b0" "$b1")"

# 3. crux-sched daemon plans both from their registrations
cat >"$dir/cluster.json" <<EOF
{"type": "explicit",
 "hosts": [{"name": "n0", "gpus": 2, "nics": 1}, {"name": "n1", "gpus": 2, "nics": 1},
           {"name": "n2", "gpus": 2, "nics": 1}, {"name": "n3", "gpus": 2, "nics": 1}],
 "switches": [{"name": "torA", "layer": 0}, {"name": "torB", "layer": 0}],
 "links": [{"host": "n0", "switch": "torA", "gbps": 10}, {"host": "n2", "switch": "torA", "gbps": 10},
           {"host": "n1", "switch": "torB", "gbps": 10}, {"host": "n3", "switch": "torB", "gbps": 10},
           {"a": "torA", "b": "torB", "gbps": 0.2}],
 "levels": [{"sl": 0, "dscp": 0}, {"sl": 4, "dscp": 32}]}
EOF
register() {   # register NAME HOST HOST COMPUTE_S
  printf '{"id": "%s", "placement": ["%s", "%s"], "compute_s": %s, "allreduce_bytes": %d}\n' \
    "$1" "$2" "$3" "$4" $((mib * 1048576)) >"$dir/spool/.$1.tmp" && mv "$dir/spool/.$1.tmp" "$dir/spool/$1.job"
}
level_of() { awk -v j="$1" '$1 == "job" && $2 == j {print $4}' "$dir/crux.prio" 2>/dev/null; }
mkdir -p "$dir/spool"
"$sched" daemon --spool "$dir/spool" --cluster "$dir/cluster.json" --out "$dir/crux.prio" --levels 2 \
  --report "$dir/report.txt" 2>"$dir/daemon.err" &
daemon=$!
register A n0 n1 0.5
register B n2 n3 0.1
for ((i = 0; i < 100; i++)); do [ "$(level_of A)$(level_of B)" = 10 ] && break; sleep 0.1; done
echo "# daemon's plan: A level $(level_of A), B level $(level_of B)"
b0=$(bands); job A 0 "$dir/crux.prio"; job B 2 "$dir/crux.prio"; sleep 3
t0=$(now); sleep "$seconds"; t1=$(now); b1=$(bands)
register A n0 n1 0.1
register B n2 n3 0.5
for ((i = 0; i < 100; i++)); do [ "$(level_of A)$(level_of B)" = 01 ] && break; sleep 0.05; done
ts=$(now)
echo "# swapped registrations; the daemon's new plan at +$(echo "$ts - $t1" | bc -l | cut -c1-5) s: A level $(level_of A), B level $(level_of B)"
sleep 3; t2=$(now); b2=$(bands); sleep "$seconds"; t3=$(now); stop A B; b3=$(bands)
a=$(mean A "$t0" "$t1") b=$(mean B "$t0" "$t1")
echo "crux, A high: A $a ms ($(echo "$a / $alone" | bc -l | cut -c1-4)x alone), B $b ms ($(echo "$b / $alone" | bc -l | cut -c1-4)x); bands $(delta "$b0" "$b1")"
a=$(mean A "$t2" "$t3") b=$(mean B "$t2" "$t3")
echo "crux, swapped, B high: A $a ms ($(echo "$a / $alone" | bc -l | cut -c1-4)x alone), B $b ms ($(echo "$b / $alone" | bc -l | cut -c1-4)x); bands $(delta "$b2" "$b3")"
# when each job followed: its first call after the file swap whose time is
# on the side of its new pace (midway between the two phases' means)
for j in A B; do
  before=$(mean $j "$t0" "$t1") after=$(mean $j "$t2" "$t3")
  awk -v ts="$ts" -v mid="$(echo "($before + $after) / 2000" | bc -l)" -v up="$([ "${after%.*}" -gt "${before%.*}" ] && echo 1 || echo 0)" -v j=$j \
    '$1 == "#" && $2 == "call" && $4 >= ts - 0.5 && ((up && $5 > mid) || (!up && $5 < mid)) {
       printf "# %s changed pace with the call starting %+.2f s after the file swap (poll interval %.1f s)\n", j, $4 - ts, '"$poll_ms"' / 1000; exit}' "$dir/$j.out"
done
# the per-call series of the crux phase, and its plot (with gnuplot)
out=${CRUX_LEVELS_OUT:-}
[ -n "$out" ] || exit 0
mkdir -p "$out"
for j in A B; do
  awk -v j=$j -v base="$t0" '$1 == "#" && $2 == "call" && $3 > 0 {printf "%s %.3f %.1f\n", j, $4 - base, 1e3 * $5}' "$dir/$j.out"
done >"$out/levels-series.txt"
command -v gnuplot >/dev/null || exit 0
swap=$(echo "$ts - $t0" | bc -l)
gnuplot <<EOF
set terminal png size 900,420
set output "$out/levels-on-the-wire.png"
set xlabel "seconds"
set ylabel "Allreduce time (ms)"
set title "Two jobs across one $rate cable, crux-sched levels, swapped at the dashed line"
set arrow from $swap, graph 0 to $swap, graph 1 nohead dashtype 2
set key top left
plot "< grep '^A' $out/levels-series.txt" using 2:3 with linespoints title "job A", \\
     "< grep '^B' $out/levels-series.txt" using 2:3 with linespoints title "job B", \\
     $alone title "A alone (mean)" dashtype 3
EOF

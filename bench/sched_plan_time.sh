#!/bin/sh
# Planning time of crux-sched for 5,000 jobs on the 847-host Lingjun cluster
# with 8 levels (the target: under 1 s on the 2-core build machine).
# Usage: bench/sched_plan_time.sh [BUILD_DIR] [RUNS]   (default ./build, 5)
# Generates the job list (gen-jobs, seed 1), then runs `crux-sched plan
# --timing` RUNS times and prints each run's phases and the median.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
runs=${2:-5}
tool=$build/sched/crux-sched
[ -x "$tool" ] || { echo "build crux first: $tool is missing" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/crux-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
printf '{"type": "lingjun", "topo_csv": "%s/tests/data/traces/lingjun-2023-topo.csv"}\n' \
  "$src" >"$work/lingjun.json"
"$tool" gen-jobs --cluster "$work/lingjun.json" --count 5000 --seed 1 --out "$work/jobs.json"
echo "crux-sched plan --cluster lingjun.json --jobs jobs.json (5000 jobs) --levels 8 --out prio"
i=0
while [ "$i" -lt "$runs" ]; do
  "$tool" plan --cluster "$work/lingjun.json" --jobs "$work/jobs.json" --levels 8 \
    --out "$work/prio" --timing 2>&1 | grep '^timing:' | tee -a "$work/times"
  i=$((i + 1))
done
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
plan=$(sed 's/.*planning \([0-9.]*\) s.*/\1/' "$work/times" | median)
total=$(sed 's/.*total \([0-9.]*\) s.*/\1/' "$work/times" | median)
echo "median of $runs: planning $plan s (paths + priorities + compression), whole command $total s"

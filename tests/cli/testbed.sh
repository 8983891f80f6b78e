#!/usr/bin/env bash
# The testbed, short (bench/testbed.sh run, bench/testbed_report.py check):
# three training jobs for about a minute on an emulated two-layer Clos of 3+3
# hosts (scripts/testbed), submitted with sbatch to a Slurm whose nodes are
# those hosts, planned by crux-sched daemon --policy crux-full from their
# registrations and their profiles.  Fails when a job does not complete,
# when a job's gradients cross the spines on a path or in a band other than
# the plan in force (0.99 of its bytes), when the plan's W is not what the
# job's profile measured, or when crux-sim on the same jobs gives a
# utilisation further than the tolerance from the measured one (see
# docs/results/testbed.md for the spread it was chosen from).  Then that
# the path check catches traffic on the other spine (the same run, its
# spines swapped), and that nothing of the testbed is left (namespaces,
# daemons, its directory).  Needs root; fails when Slurm, munge or
# nftables are missing.
set -u
builddir=${CRUX_BUILDDIR:?CRUX_BUILDDIR not set (run through make check)}
src=$(cd "$(dirname "$0")/../.." && pwd)
# Per job and in total: |simulated - measured| utilisation, in points
TOLERANCE=${CRUX_TESTBED_TOLERANCE:-10}

if [ "$(id -u)" != 0 ]; then
  echo "1..0 # SKIP needs root (network namespaces, Slurm's daemons)"
  exit 0
fi
out=$(mktemp -d /tmp/crux-testbed-check-XXXXXX)
trap 'rm -rf "$out"' EXIT
cat >"$out/jobs.txt" <<'EOF'
# NAME    MODEL   ARRIVAL_S  SECONDS  HOSTS
gpt-1     gpt     0          65       h0 h3
resnet-1  resnet  2          60       h1 h4
bert-1    bert    4          60       h2 h5
EOF
n=0 failed=0
tap() { # tap OK DESC
  n=$((n + 1))
  if [ "$1" = 1 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}
"$src/bench/testbed.sh" run "$out/run" --policies crux-full --workload "$out/jobs.txt" --hosts 3 \
  --build "$builddir" >"$out/run.log" 2>&1
rc=$?
sed 's/^/# /' "$out/run.log"
tap $([ $rc = 0 ] && echo 1 || echo 0) "bench/testbed.sh run: three jobs under crux-full (status $rc)"
if [ $rc = 0 ]; then
  python3 "$src/bench/testbed_report.py" check "$out/run" --tolerance "$TOLERANCE" \
    --sim "$builddir/sim/crux-sim" >"$out/check.tap"
  rc=$?
  # renumbered into this test's plan
  while read -r line; do
    case $line in
      "ok "*) tap 1 "${line#ok * - }" ;;
      "not ok "*) tap 0 "${line#not ok * - }" ;;
    esac
  done <"$out/check.tap"
  tap $([ $rc = 0 ] && echo 1 || echo 0) "testbed_report.py check: every check passed"
  # the same traffic with the spines swapped must fail the path check
  cp -r "$out/run" "$out/swapped"
  sed -i 's/^sp0 /spX /; s/^sp1 /sp0 /; s/^spX /sp1 /' "$out/swapped/crux-full/flows.txt"
  python3 "$src/bench/testbed_report.py" check "$out/swapped" --tolerance 100 \
    --sim "$builddir/sim/crux-sim" >"$out/swapped.tap"
  wrong=$(grep -c "^not ok .*between its hosts on the planned spine" "$out/swapped.tap")
  tap $([ "$wrong" = 3 ] && echo 1 || echo 0) \
    "with the spines' counters swapped, the path check fails for every job ($wrong of 3)"
fi
# nothing left behind: the testbed's namespaces, its directory, its daemons
k=$(sed -n 's/^# [0-9:]* testbed \([0-9]*\):.*/\1/p' "$out/run.log" | head -1)
tmp=$(sed -n 's/^# [0-9:]* testbed [0-9]*: .*, in \(\/tmp\/crux-testbed-[A-Za-z0-9]*\)$/\1/p' "$out/run.log" | head -1)
left=
[ -n "$k" ] && ip netns list 2>/dev/null | grep -q "^cxtb$k-" && left="$left namespaces cxtb$k-*"
[ -n "$tmp" ] && [ -e "$tmp" ] && left="$left $tmp"
[ -n "$tmp" ] && pgrep -f "$tmp" >/dev/null && left="$left processes using $tmp"
tap $([ -n "$k" ] && [ -n "$tmp" ] && [ -z "$left" ] && echo 1 || echo 0) \
  "nothing of testbed ${k:-?} is left (${left:-none})"
echo "1..$n"
exit $failed

#!/usr/bin/env bash
# Levels on the wire: fake nodes in network namespaces behind two racks
# joined by one shaped cable with strict-priority bands by DSCP
# (scripts/fakenet, made here and removed at the end, also on failure),
# crux's tcp channel carrying the hierarchical Allreduce's step between
# nodes:
#  1. results exact over the channel (2x2 pipelined, 3x2 sequential, in and
#     out of place, counts that divide by nothing, every type/op of the flat
#     algorithm on 2x2), and the PML when asked for;
#  2. a rank SIGKILLed inside a large hierarchical Allreduce ends the job
#     non-zero within 60 s;
#  3. the cable's per-band byte counters: the job's bytes between nodes all
#     in its level's band (DSCP from the priority file) and none in the
#     other job band; after the priority file swaps the level, all in the
#     new band.
# Needs root (network namespaces, tc): skipped without.
. "$(dirname "$0")/mpi-common.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
fakenet=$src/scripts/fakenet
dir=$(mktemp -d)
net=
cleanup() { [ -z "$net" ] || "$fakenet" down "$net"; rm -rf "$dir" "$last_stderr"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ "$(id -u)" != 0 ] || ! command -v tc >/dev/null || ! net=$("$fakenet" up auto 6 2gbit); then
  net=
  echo "1..0 # SKIP needs root, ip netns and tc"
  exit 0
fi
echo "# network cx$net: 10.231.$net.0/24 management, 10.232.$net.0/24 fabric"

run_net() {   # run_net LAYOUT FIRST LABEL [MPIRUN-OPTIONS...] -- PROGRAM [ARGS...]
  local layout=$1 first=$2 label=$3
  shift 3
  MPI_LAUNCHER="$src/scripts/fakenodes --net $net:$first $layout" run_mpi "$layout" "netns $label" "$@"
}

# 1. exact over the channel
prog=$builddir/tests/mpi/test_allreduce
run_net 2x2 0 "hier tcp" --mca coll_crux_net tcp --mca coll_crux_allreduce_algorithm hier \
  --mca coll_crux_verbose 2 -- $prog counts comms bits
expect_stderr "inter-group step over crux's tcp channel" \
  "[2x2 hier] the step between nodes ran over crux's tcp channel"
run_net 3x2 0 "hier-sequential tcp" --mca coll_crux_net tcp \
  --mca coll_crux_allreduce_algorithm hier-sequential --mca coll_crux_verbose 2 -- $prog counts bits
expect_stderr "inter-group step over crux's tcp channel" \
  "[3x2 hier-sequential] the step between nodes ran over crux's tcp channel"
run_net 2x2 0 "types tcp" --mca coll_crux_net tcp --mca coll_crux_allreduce_algorithm hier -- $prog types
# rails: local rank i of each node on the i-th of the listed NICs
run_net 2x2 0 "rails" --mca coll_crux_net tcp --mca coll_crux_allreduce_algorithm hier \
  --mca coll_crux_net_if "10.232.$net.0/24,10.233.$net.0/24" --mca coll_crux_verbose 2 -- $prog bits
expect_stderr "listening on 10.232.$net.1:" "[2x2 rails] local rank 0 of node 0 on its first NIC"
expect_stderr "listening on 10.233.$net.1:" "[2x2 rails] local rank 1 of node 0 on its second NIC"
expect_stderr "listening on 10.233.$net.2:" "[2x2 rails] local rank 1 of node 1 on its second NIC"
# the PML stays the fallback when asked for
run_net 2x2 0 "pml" --mca coll_crux_net pml --mca coll_crux_allreduce_algorithm hier \
  --mca coll_crux_verbose 2 -- $prog bits
expect_stderr "inter-group step over the PML" "[2x2 pml] coll_crux_net pml keeps the PML"

# 2. a rank killed inside a large Allreduce over the channel
start=$(date +%s)
timeout -k 5 90 "$src/scripts/fakenodes" --net $net 2x2 --mca coll_crux_verbose 2 \
  --mca coll_crux_allreduce_algorithm hier --mca coll_crux_net tcp --mca coll_crux_arb_path "$dir/arb" \
  -- "$builddir/tests/mpi/test_faults" kill 16 >"$dir/kill.out" 2>"$last_stderr"
rc=$? elapsed=$(($(date +%s) - start))
expect_stderr "allreduce on faults-kill: hier from" "[2x2 kill] crux's hierarchical Allreduce was running"
expect_stderr "SIGKILL inside Allreduce 3" "[2x2 kill] a rank was killed inside a large Allreduce"
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $elapsed -le 60 ] &&
  tap_line ok "[2x2 kill] the job ended with status $rc in $elapsed s (limit 60)" ||
  tap_line "not ok" "[2x2 kill] the job ended non-zero within 60 s (status $rc after $elapsed s)"

# 3. the bands
prio=$dir/priorities
level_file() { printf 'crux-priorities 1\nlevels 8\njob levels-test level %d sl %d dscp %d\n' "$1" "$1" "$2"; }
wait_file() {   # wait_file PATH: at most 120 s
  local i
  for ((i = 0; i < 1200; i++)); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}
mib=4 calls=4
# a 2x2 job moves MIB MiB each way across the cable per call, in 2 cross
# groups of a half each: at least this many bytes per phase, headers aside
least=$((2 * calls * mib * 1048576))
level_file 6 40 >"$dir/p.tmp" && mv "$dir/p.tmp" "$prio" # band 1 (DSCP 32..63)
before=($("$fakenet" bands $net))
# between the phases: the counters, then the swap
# (a second first: the last delayed ACKs of the phase leave with its marking)
( wait_file "$dir/phase0.done" && sleep 1 && "$fakenet" bands $net >"$dir/mid" &&
    level_file 2 16 >"$dir/p.tmp" && mv "$dir/p.tmp" "$prio" && touch "$dir/go0" ) &
watcher=$!
MPI_LAUNCHER="$src/scripts/fakenodes --net $net:2 2x2" run_mpi 2x2 "netns levels" \
  --mca coll_crux_net tcp --mca coll_crux_allreduce_algorithm hier --mca coll_crux_verbose 2 \
  --mca coll_crux_job_id levels-test --mca coll_crux_priority_file "$prio" \
  --mca coll_crux_priority_poll_ms 0 --mca coll_crux_arb_path "$dir/arb" \
  -- "$builddir/tests/mpi/test_levels" $mib $calls 2 "$dir"
kill $watcher 2>/dev/null
wait $watcher 2>/dev/null
mid=($(cat "$dir/mid" 2>/dev/null))
after=($("$fakenet" bands $net))
echo "# bands before ${before[*]}, after phase 0 ${mid[*]:-?}, at the end ${after[*]}"
expect_stderr "marked TOS 160, socket priority 5" "[2x2 levels] the channel marked DSCP 40 first"
expect_stderr "re-marked TOS 64, socket priority 2" "[2x2 levels] ... and DSCP 16 after the swap"
if [ -n "${mid[*]:-}" ]; then
  b1=$((mid[0] - before[0])) b2=$((mid[1] - before[1]))
  [ $b1 -ge $least ] && tap_line ok "[2x2 levels] level 6 (DSCP 40): $b1 bytes in band 1 (at least $least)" ||
    tap_line "not ok" "[2x2 levels] level 6 (DSCP 40): $b1 bytes in band 1, fewer than $least"
  [ $b2 -eq 0 ] && tap_line ok "[2x2 levels] level 6: nothing in band 2" ||
    tap_line "not ok" "[2x2 levels] level 6: $b2 bytes in band 2"
  b1=$((after[0] - mid[0])) b2=$((after[1] - mid[1]))
  [ $b2 -ge $least ] && tap_line ok "[2x2 levels] swapped to level 2 (DSCP 16): $b2 bytes in band 2 (at least $least)" ||
    tap_line "not ok" "[2x2 levels] swapped to level 2 (DSCP 16): $b2 bytes in band 2, fewer than $least"
  # Phase 0's last delayed ACKs (66 bytes each, no data) may leave with its
  # marking after the counters were read, however long the pause; no data
  # segment (1,514 bytes) of the new phase may.
  [ $b1 -lt 1514 ] && tap_line ok "[2x2 levels] after the swap: no data in band 1 ($b1 bytes of ACKs)" ||
    tap_line "not ok" "[2x2 levels] after the swap: $b1 bytes in band 1"
else
  tap_line "not ok" "[2x2 levels] the job reached the end of its first phase"
fi
finish

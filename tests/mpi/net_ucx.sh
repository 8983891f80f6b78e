#!/usr/bin/env bash
# crux's UCX channel between nodes (coll_crux_net ucx), on fake nodes
# (scripts/fakenodes) with UCX restricted to its tcp transport, as this
# machine has no RDMA device:
#  1. the hierarchical Allreduce exact over it (2x2 pipelined, 3x2
#     sequential; in and out of place, counts that divide by nothing, every
#     type/op of the flat algorithm on 2x2);
#  2. the priority file's level change moves the job to a second UCX context
#     carrying the new level's SL and traffic class, at a call boundary;
#  3. a rank SIGKILLed inside a large hierarchical Allreduce ends the job
#     non-zero within 60 s;
#  4. auto takes tcp where UCX has no RDMA device.
. "$(dirname "$0")/mpi-common.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
fakenodes=$src/scripts/fakenodes
prog=$builddir/tests/mpi/test_allreduce
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$last_stderr"' EXIT
ucx=(--mca coll_crux_net ucx -x UCX_TLS=tcp --mca coll_crux_verbose 2)

run_fake() {   # run_fake LAYOUT LABEL [MPIRUN-OPTIONS...] -- PROGRAM [ARGS...]
  local layout=$1 label=$2
  shift 2
  MPI_LAUNCHER="$fakenodes $layout" run_mpi "$layout" "$label" "$@"
}

# 1. exact
run_fake 2x2 "hier ucx" "${ucx[@]}" --mca coll_crux_allreduce_algorithm hier -- $prog counts comms bits
expect_stderr "inter-group step over crux's ucx channel" \
  "[2x2 hier] the step between nodes ran over crux's ucx channel"
expect_stderr "step between nodes over ucx (coll_crux_net ucx;" "[2x2 hier] ucx as asked, and said"
run_fake 3x2 "hier-sequential ucx" "${ucx[@]}" --mca coll_crux_allreduce_algorithm hier-sequential \
  -- $prog counts bits
expect_stderr "inter-group step over crux's ucx channel" \
  "[3x2 hier-sequential] the step between nodes ran over crux's ucx channel"
run_fake 2x2 "types ucx" "${ucx[@]}" --mca coll_crux_allreduce_algorithm hier -- $prog types

# 2. a level change: a second context, with the new level's marks
prio=$dir/priorities
level_file() { printf 'crux-priorities 1\nlevels 8\njob net-ucx-test level %d sl %d dscp %d\n' "$1" "$2" "$3"; }
level_file 6 6 40 >"$dir/p.tmp" && mv "$dir/p.tmp" "$prio"
( for ((i = 0; i < 1200; i++)); do [ -e "$dir/phase0.done" ] && break; sleep 0.1; done
  level_file 2 2 16 >"$dir/p.tmp" && mv "$dir/p.tmp" "$prio" && touch "$dir/go0" ) &
watcher=$!
run_fake 2x2 "levels ucx" "${ucx[@]}" --mca coll_crux_allreduce_algorithm hier \
  --mca coll_crux_job_id net-ucx-test --mca coll_crux_priority_file "$prio" \
  --mca coll_crux_priority_poll_ms 0 --mca coll_crux_arb_path "$dir/arb" \
  -- "$builddir/tests/mpi/test_levels" 1 2 2 "$dir"
kill $watcher 2>/dev/null
wait $watcher 2>/dev/null
expect_stderr "over ucx (coll_crux_net ucx; .*), context of SL 6, traffic class 160" \
  "[2x2 levels] the first context carries level 6's SL 6 and traffic class 160 (DSCP 40 << 2)"
expect_stderr "ucx channel on context 1 of 2 (SL 2, traffic class 64)" \
  "[2x2 levels] after the swap: a second context, SL 2 and traffic class 64 read back from its configuration"

# 3. a rank killed inside a large Allreduce over the channel
start=$(date +%s)
timeout -k 5 90 "$fakenodes" 2x2 "${ucx[@]}" --mca coll_crux_allreduce_algorithm hier \
  --mca coll_crux_arb_path "$dir/arb" -- "$builddir/tests/mpi/test_faults" kill 16 \
  >"$dir/kill.out" 2>"$last_stderr" </dev/null
rc=$? elapsed=$(($(date +%s) - start))
expect_stderr "inter-group step over crux's ucx channel" "[2x2 kill] over crux's ucx channel"
expect_stderr "SIGKILL inside Allreduce 3" "[2x2 kill] a rank was killed inside a large Allreduce"
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $elapsed -le 60 ] &&
  tap_line ok "[2x2 kill] the job ended with status $rc in $elapsed s (limit 60)" ||
  tap_line "not ok" "[2x2 kill] the job ended non-zero within 60 s (status $rc after $elapsed s)"

# 4. auto without an RDMA device
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
  run_fake 2x2 "auto" --mca coll_crux_allreduce_algorithm hier --mca coll_crux_verbose 2 -- $prog bits
  expect_stderr "step between nodes over tcp (coll_crux_net auto; UCX has no RDMA" \
    "[2x2 auto] no RDMA device: auto takes tcp, and says why"
fi
finish

#!/usr/bin/env bash
# The hierarchical Allreduce: on fake nodes (scripts/fakenodes: 2 and 3 nodes
# of 2 ranks, 2 nodes of 3 + 1) and with rank/k grouping on this node (4 and
# 6 ranks), every algorithm forced in turn, in and out of place, counts that
# divide by neither groups nor chunks; verbose output shows what ran.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_allreduce
fakenodes=$(cd "$(dirname "$0")/../.." && pwd)/scripts/fakenodes
verbose=(--mca coll_crux_verbose 2)

# run_fake LAYOUT LABEL [MPIRUN-OPTIONS...] -- PROGRAM [ARGS...]: run_mpi over fake nodes
run_fake() {
  local layout=$1 label=$2
  shift 2
  MPI_LAUNCHER="$fakenodes $layout" run_mpi "$layout" "$label" "$@"
}

for layout in 2x2 3x2; do
  for alg in auto hier hier-sequential flat fallback; do
    run_fake $layout "$alg" --mca coll_crux_allreduce_algorithm $alg "${verbose[@]}" -- \
      $prog counts comms bits
    case $alg in
      auto|hier*) expect_stderr "allreduce on MPI_COMM_WORLD: ${alg/auto/hier} from" \
                    "[$layout $alg] the three-stage algorithm ran"
                  # fake nodes share the machine's cores: crux's waits must not spin
                  expect_stderr "waits never spin: Open MPI yields when idle" \
                    "[$layout $alg] fake nodes' waits do not spin" ;;
      flat) expect_stderr "flat algorithm needs every rank on one node" \
              "[$layout flat] flat across nodes falls back, and says why" ;;
    esac
  done
done
run_fake 2x2 "types" --mca coll_crux_allreduce_algorithm hier -- $prog types
run_fake 3,1 "uneven, hier" --mca coll_crux_allreduce_algorithm hier --mca coll_crux_verbose 1 -- \
  $prog counts comms bits
expect_stderr "groups of 1 to 3 ranks" "[3,1 uneven] unequal groups fall back, and say why"

for np in 4 6; do
  for k in 2 3; do
    [ $((np % k)) -eq 0 ] || continue
    for alg in hier hier-sequential; do
      run_mpi $np "k=$k $alg" --mca coll_crux_group_size $k --mca coll_crux_allreduce_algorithm $alg \
        "${verbose[@]}" -- $prog counts comms bits
      expect_stderr "groups of $k ranks, the engine's lanes within them, inter-group step through shared memory" \
        "[np=$np k=$k $alg] groups by rank / k, the engine's lanes within, inter-group step through crux"
    done
  done
done
# the hand-off within the rank groups, asked for on its axis
run_mpi 4 "k=2 hier flags" --mca coll_crux_group_size 2 --mca coll_crux_allreduce_topology hier \
  --mca coll_crux_allreduce_handoff flags "${verbose[@]}" -- $prog counts bits
expect_stderr "groups of 2 ranks, staging within them" "[np=4 k=2 hier flags] flags within the rank groups"
expect_stderr "allreduce on MPI_COMM_WORLD: hier from 4 bytes" "[np=4 k=2 hier flags] the three-step algorithm ran"
run_mpi 4 "k=2 hier lanes" --mca coll_crux_group_size 2 --mca coll_crux_allreduce_topology hier \
  --mca coll_crux_allreduce_handoff lanes "${verbose[@]}" -- $prog counts bits
expect_stderr "groups of 2 ranks, the engine's lanes within them" "[np=4 k=2 hier lanes] lanes within the rank groups"
# a duplicate asking for flags does not take MPI_COMM_WORLD's layout, whose
# rank groups have the engine's lanes: it gets one of its own
run_mpi 4 "k=2 hier info" --mca coll_crux_group_size 2 --mca coll_crux_allreduce_topology hier \
  "${verbose[@]}" -- $prog info
expect_stderr "communicator MPI_COMM_WORLD: 2 groups of 2 ranks, the engine's lanes within them" \
  "[np=4 k=2 hier info] MPI_COMM_WORLD's layout has the engine's lanes"
expect_stderr "communicator info handoff=flags: 2 groups of 2 ranks, staging within them" \
  "[np=4 k=2 hier info] the flags duplicate built a layout of its own, staging"
finish

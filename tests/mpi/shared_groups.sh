#!/usr/bin/env bash
# Groups shared between communicators, counted, and released when idle
# (docs/design/resources.md), each run inside a private /dev/shm
# (tests/mpi/with-private-shm):
#  - the hierarchical algorithm on fake nodes (scripts/fakenodes 2x2):
#    many live communicators over the same ranks (tests/mpi/test_many_comms.c:
#    duplicates and reversed splits) build two layouts per process, one per
#    order of the ranks; every Allreduce exact, shared memory bounded;
#  - more communicators than crux's limit of groups, each over the ranks in
#    another order, used in turns (flat flags on one node, hierarchical on
#    fake nodes): the least recently used group is released to make room,
#    crux runs every call, every result exact, shared memory bounded;
#  - members that disagree on which group to release ('skew'): the
#    communicator falls back, says so, gets an exact result, nothing hangs.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_many_comms
private_shm=$(cd "$(dirname "$0")" && pwd)/with-private-shm
fakenodes=$(cd "$(dirname "$0")/../.." && pwd)/scripts/fakenodes
count=${CRUX_SHARED_COMMS:-100}
crux=(--mca coll crux --mca coll_crux_verbose 2)
hier=("${crux[@]}" --mca coll_crux_allreduce_algorithm hier)
flags=("${crux[@]}" --mca coll_crux_allreduce_algorithm flat --mca coll_crux_stage_size 1048576)

expect_no_stderr() {
  if grep -q -- "$1" "$last_stderr"; then tap_line "not ok" "$2"; else tap_line ok "$2"; fi
}
# expect_count PATTERN N DESCRIPTION: the last run's stderr has N lines with PATTERN
expect_count() {
  local n
  n=$(grep -c -- "$1" "$last_stderr")
  if [ "$n" -eq "$2" ]; then tap_line ok "$3"; else tap_line "not ok" "$3 (found $n)"; fi
}

if ! "$private_shm" 1m true; then
  echo "1..0 # SKIP no private /dev/shm here (needs root and unshare)"
  exit 0
fi
# on fake nodes the launcher's own "--" is the one with-private-shm drops
on_fake="$private_shm 256m $fakenodes 2x2 --"
on_node="$private_shm 256m mpirun -np 4"
# a layout's groups: two processes each, the engine's lanes, (5 x 2 + 1)
# MiB per process; two orders of the ranks; 16 MiB for Open MPI's own
hier_bound=$((4 * 2 * 11 + 16))
# 16 flags groups per process of 4, a 1 MiB stage and its control block
flags_bound=$((4 * 16 * 17 / 16 + 16))

MPI_LAUNCHER=$on_fake run_mpi 4 "hier, $count communicators" "${hier[@]}" -- \
  $prog "$count" $hier_bound
expect_stderr "allreduce on .*: hier from 1048576 bytes" "[2x2 hier] the hierarchical algorithm ran"
expect_no_stderr "fallback from 1048576" "[2x2 hier] ... on every communicator"
expect_count ": 2 groups of 2 ranks" 8 "[2x2 hier] two layouts per process, shared by $count communicators"

MPI_LAUNCHER=$on_node run_mpi 4 "flags, 24 in turns" "${flags[@]}" -- $prog turns 24 3 $flags_bound
expect_stderr "least recently used shared-memory group over its processes released" \
  "[np=4 flags turns] idle groups released to make room"
expect_no_stderr "fallback from 1048576" "[np=4 flags turns] crux ran every call"

MPI_LAUNCHER=$on_node run_mpi 4 "flags, disagreeing" "${flags[@]}" -- $prog turns 17 1 $flags_bound skew
expect_stderr "holds 16 shared-memory groups already" "[np=4 flags skew] no agreement: the limit said"
expect_no_stderr "released to make room" "[np=4 flags skew] ... and nothing released"

MPI_LAUNCHER=$on_fake run_mpi 4 "hier, 24 in turns" "${hier[@]}" -- $prog turns 24 2 $hier_bound
expect_stderr "least recently used hierarchical group over its processes released" \
  "[2x2 hier turns] idle layouts released to make room"
expect_no_stderr "fallback from 1048576" "[2x2 hier turns] crux ran every call"

MPI_LAUNCHER=$on_fake run_mpi 4 "hier, disagreeing" "${hier[@]}" -- $prog turns 17 1 $hier_bound skew
expect_stderr "holds 16 hierarchical groups already" "[2x2 hier skew] no agreement: the limit said"
finish

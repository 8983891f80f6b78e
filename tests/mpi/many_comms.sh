#!/usr/bin/env bash
# 2,000 live communicators, each running a crux Allreduce of 1 MiB, under a
# descriptor limit of 1024 (tests/mpi/test_many_comms.c), inside a private
# /dev/shm of 256 MiB (tests/mpi/with-private-shm) so nothing can fill the
# machine's: exact results, files still open, and the job's shared memory
# under the bound of docs/design/resources.md.  Over the engine's lanes
# (crux's default on one node) and the flags algorithm.
. "$(dirname "$0")/mpi-common.sh"
prog=$builddir/tests/mpi/test_many_comms
private_shm=$(cd "$(dirname "$0")" && pwd)/with-private-shm
count=${CRUX_MANY_COMMS:-2000}
crux=(--mca coll crux --mca coll_crux_verbose 2)

# expect_no_stderr PATTERN DESCRIPTION: the last run's stderr lacks PATTERN
expect_no_stderr() {
  if grep -q -- "$1" "$last_stderr"; then tap_line "not ok" "$2"; else tap_line ok "$2"; fi
}

if ! "$private_shm" 1m true; then
  echo "1..0 # SKIP no private /dev/shm here (needs root and unshare)"
  exit 0
fi
# the hand-off asked for, and the algorithm the component then names
handoff() { [ "$1" = lanes ] && echo lanes || echo flags; }
for alg in lanes flags; do
  for np in 2 4; do
    [ $alg = flags ] && [ $np = 4 ] && continue # the same groups as np=2 (time)
    # resources.md: each process holds two groups here (the duplicates'
    # order of ranks and the splits' reversed one); an engine group costs
    # 5 MiB per process of the group and 1 more, a flags one 5 (4 and its
    # control block, rounded up); plus 16 MiB for Open MPI's own
    per_group=$([ $alg = lanes ] && echo $((5 * np + 1)) || echo 5)
    bound=$((np * 2 * per_group + 16))
    MPI_LAUNCHER="$private_shm 256m mpirun -np $np" run_mpi $np "$alg" "${crux[@]}" \
      --mca coll_crux_allreduce_handoff "$(handoff $alg)" -- $prog "$count" $bound
    expect_stderr "allreduce on .*: $alg from 1048576 bytes" "[np=$np $alg] crux's $alg algorithm ran"
    expect_no_stderr "fallback from 1048576 bytes" "[np=$np $alg] ... on every communicator"
  done
done
# MPI_THREAD_MULTIPLE: no sharing, so 16 shared-memory groups per process
# at most (resources.md; the flags algorithm's, as 16 engine groups of two
# processes would not fit in 256 MiB), the communicators past them on the
# previous module's Allreduce, all exact
MPI_LAUNCHER="$private_shm 256m mpirun -np 2" run_mpi 2 "thread multiple" "${crux[@]}" \
  --mca coll_crux_allreduce_algorithm flat -- $prog multiple 40 $((2 * 16 * 5 + 16))
expect_stderr "holds 16 shared-memory groups already (crux's limit" "[np=2 thread multiple] the limit said"
expect_stderr "allreduce on .*: flags from 1048576 bytes" "[np=2 thread multiple] crux's flags algorithm ran below it"

# crossed calls on two communicators that share a group (erroneous in MPI):
# errors, never mixed data (a hang would be the test's timeout)
for alg in lanes flags; do
  MPI_LAUNCHER="$private_shm 256m mpirun -np 2" run_mpi 2 "crossed $alg" \
    --mca coll crux --mca coll_crux_allreduce_handoff "$(handoff $alg)" -- $prog cross
done
finish
